/* importers.h: the per-format importers behind tbe_import_file.
 *
 * Each reads `path` into `t` (not finished) and, on bad input, fills `err`
 * via tbe__import_fail and returns TBE_EPARSE or TBE_ECORRUPT. */
#ifndef TBE_IMPORT_IMPORTERS_H
#define TBE_IMPORT_IMPORTERS_H

#include <stdint.h>

#include "tbexport/import.h"
#include "tbexport/trace.h"

int tbe__import_chrome_json(tbe_trace *t, const char *path, const tbe_import_options *o,
                            tbe_import_error *err);
int tbe__import_xspace(tbe_trace *t, const char *path, const tbe_import_options *o,
                       tbe_import_error *err);
int tbe__import_nsys(tbe_trace *t, const char *path, const tbe_import_options *o,
                     tbe_import_error *err);

/* Fills `err` (if not NULL) with "<path>: byte <offset>[ (line L, column
 * C)]: <message>" (line 0 omits the line/column part; offset UINT64_MAX
 * omits the byte part, for errors that name a table/row instead) and
 * returns `code`. */
int tbe__import_fail(tbe_import_error *err, int code, const char *path, uint64_t offset,
                     uint64_t line, uint64_t column, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));

#endif
