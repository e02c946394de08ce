/* importer.h: the table of importers behind tbe_import_file, and the
 * errors they report.
 *
 * Inputs are a table, as outputs are (trace/exporter.h): each format is
 * one tbe__importer, defined in its importer's file and listed in
 * import.c in the order detection asks them.  tbe_import_file opens the
 * input once (input.h decides what an input may be), asks each entry's
 * sniff test about the peeked bytes and hands the open source to the
 * importer that claims them, with the options' limits resolved (no zeros: every limit
 * is its value, its default, or UINT64_MAX / UINT32_MAX for none).  Each
 * importer reads into `t` (not finished) and, on bad input, fills `err`
 * via tbe__import_fail and returns TBE_EPARSE, TBE_ECORRUPT or
 * TBE_ETOOBIG.  A limit refused names itself with tbe__import_limit. */
#ifndef TBE_IMPORT_IMPORTER_H
#define TBE_IMPORT_IMPORTER_H

#include <stdint.h>

#include "import/input.h"
#include "tbexport/import.h"
#include "tbexport/trace.h"

/* ---- the table ---- */

/* What a sniff test sees: the open input (not to be read: its head is
 * peeked already) and its first `n` bytes; `whole` when they are all of it. */
typedef struct tbe__sniff {
  tbe__input *in;
  const uint8_t *head;
  size_t n;
  int whole;
} tbe__sniff;

/* A sniff test's answer.  The first entry that is SURE takes the input;
 * when none is, the first that finds it LIKELY (a cut or corrupt file of
 * its format, whose importer then names the byte). */
enum { TBE__SNIFF_NO = 0, TBE__SNIFF_LIKELY = 1, TBE__SNIFF_SURE = 2 };

typedef struct tbe__importer {
  tbe_import_format format;
  const char *name;  /* tbe_import_format_name */
  int (*sniff)(const tbe__sniff *s);
  /* Reads into `t` (not finished) from `in`, or, with `by_path`, from
   * `path` itself (`in` is then closed first: SQLite opens the file). */
  int (*import)(tbe_trace *t, tbe__input *in, const char *path, const tbe_import_options *o,
                tbe_import_error *err);
  int by_path;
  const char *no_stream; /* by_path: why standard input will not do */
} tbe__importer;

extern const tbe__importer tbe__importer_chrome_json; /* chrome_json.c */
extern const tbe__importer tbe__importer_xspace;      /* xspace.c */
extern const tbe__importer tbe__importer_nsys;        /* nsys.c */
extern const tbe__importer tbe__importer_spool;       /* spool.c */

/* ---- errors (import_error.c) ---- */

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

/* What passing --max-input on `in` is, for tbe__import_limit_msg: "more
 * input than the limit", after decompression, and when the limit is the
 * default of an input of unknown size, that it comes from the memory. */
const char *tbe__import_input_limit_what(const tbe__input *in);

/* The default --max-input of an input whose size is not known before it is
 * read (standard input, a gzip stream): half the memory this process may
 * use (the least of the machine's physical memory, its cgroup's
 * memory.max and RLIMIT_AS), at most TBE_IMPORT_DEFAULT_MAX_INPUT_BYTES
 * (import.c). */
uint64_t tbe__import_stream_default(void);
/* Test knob: the memory to assume instead of measuring it (0: measure). */
extern uint64_t tbe__import_memory_bytes;

/* The message of an error from the input layer (`in` may be NULL): names
 * a corrupt gzip stream, the --max-input limit, or the system error.
 * Returns `rc`. */
int tbe__import_input_fail(tbe_import_error *err, int rc, const char *path, const tbe__input *in,
                           const tbe_import_options *o);

/* Formats `bytes` for people ("64 MiB", "1.5 GiB", "800 bytes"). */
void tbe__import_size_str(uint64_t bytes, char *buf, size_t size);

/* ---- device ordinals ----
 *
 * A GPU's ordinal in the model is an int32_t >= 0 (tbe_device.id, a
 * stream track's device); -1 means "none" (a host allocation's device, a
 * copy's unknown end).  Every ordinal an importer reads is checked before
 * it is narrowed: a cast let -1 make a GPU of its own and 2^32 become
 * GPU 0.  An importer refuses an ordinal outside 0..TBE__DEVICE_MAX with
 * one line naming the field (tbe__import_device_msg); where its source
 * writes -1 for "none", -1 (and only -1) maps to none explicitly. */
#define TBE__DEVICE_MAX INT32_MAX

static inline int tbe__device_ok(int64_t v) { return v >= 0 && v <= TBE__DEVICE_MAX; }

/* Writes "<field> is not a GPU ordinal (0 to 2147483647[, or -1 for
 * none]): <value>" (value: the input's text, cut at 40 bytes). */
void tbe__import_device_msg(char *buf, size_t size, const char *field, int none_ok,
                            const char *value, size_t vlen);

#endif
