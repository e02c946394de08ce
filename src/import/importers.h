/* importers.h: the per-format importers behind tbe_import_file.
 *
 * tbe_import_file opens the input once (input.h decides what an input may
 * be), detects the format from peeked bytes and hands the open source to
 * the importer, with the options' limits resolved (no zeros: every limit
 * is its value, its default, or UINT64_MAX / UINT32_MAX for none).  Each
 * importer reads into `t` (not finished) and, on bad input, fills `err`
 * via tbe__import_fail and returns TBE_EPARSE, TBE_ECORRUPT or
 * TBE_ETOOBIG.  A limit refused names itself with tbe__import_limit. */
#ifndef TBE_IMPORT_IMPORTERS_H
#define TBE_IMPORT_IMPORTERS_H

#include <stdint.h>

#include "import/input.h"
#include "tbexport/import.h"
#include "tbexport/trace.h"

int tbe__import_chrome_json(tbe_trace *t, tbe__input *in, const char *path,
                            const tbe_import_options *o, tbe_import_error *err);
int tbe__import_xspace(tbe_trace *t, tbe__input *in, const char *path,
                       const tbe_import_options *o, tbe_import_error *err);
/* SQLite reads the file by its path: `path` is a regular file (checked). */
int tbe__import_nsys(tbe_trace *t, const char *path, const tbe_import_options *o,
                     tbe_import_error *err);

/* Fills `err` (if not NULL) with "<path>: byte <offset>[ (line L, column
 * C)]: <message>" (line 0 omits the line/column part; offset UINT64_MAX
 * omits the byte part, for errors that name a table/row instead) and
 * returns `code`. */
int tbe__import_fail(tbe_import_error *err, int code, const char *path, uint64_t offset,
                     uint64_t line, uint64_t column, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));

/* The limits, for messages: which option, its flag, its unit. */
typedef enum tbe__limit {
  TBE__LIM_TOKEN,   /* max_token_bytes, --max-token */
  TBE__LIM_EVENT,   /* max_event_bytes, --max-event-size */
  TBE__LIM_DEPTH,   /* max_depth, --max-depth */
  TBE__LIM_EVENTS,  /* max_events, --max-events */
  TBE__LIM_INPUT    /* max_input_bytes, --max-input */
} tbe__limit;

/* Writes "<what> (the limit is <value>; raise it with <flag>)". */
void tbe__import_limit_msg(char *buf, size_t size, tbe__limit which, const tbe_import_options *o,
                           const char *what);
/* Fills `err` with "<path>: byte <offset>: " and that message; returns
 * TBE_ETOOBIG. */
int tbe__import_limit(tbe_import_error *err, const char *path, uint64_t offset, tbe__limit which,
                      const tbe_import_options *o, const char *what);

/* The message of an error from the input layer (`in` may be NULL): names
 * a corrupt gzip stream, the --max-input limit, or the system error.
 * Returns `rc`. */
int tbe__import_input_fail(tbe_import_error *err, int rc, const char *path, const tbe__input *in,
                           const tbe_import_options *o);

/* Formats `bytes` for people ("64 MiB", "1.5 GiB", "800 bytes"). */
void tbe__import_size_str(uint64_t bytes, char *buf, size_t size);

#endif
