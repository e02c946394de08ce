/* tbexport/import.h: reading existing traces into the trace model.
 *
 * The format is detected from the file's content, never its name:
 *   - Chrome trace JSON (PyTorch/Kineto, JAX, any producer), plain or gzip
 *   - XSpace protobuf (.xplane.pb from JAX, TensorFlow, XLA, tbexport)
 *   - Nsight Systems SQLite export (nsys export --type sqlite)
 * Importing adds to a trace created with tbe_trace_create; call
 * tbe_trace_finish afterwards (tbe_import_file does so itself).
 *
 * Errors: a negative TBE_E* code, and in `err` a one-line message that
 * names the input and the byte offset (and line/column for JSON, table and
 * row for SQLite).  On error the trace may hold part of the input: free
 * it, do not export it. */
#ifndef TBEXPORT_IMPORT_H
#define TBEXPORT_IMPORT_H

#include <stdint.h>

#include "tbexport/common.h"
#include "tbexport/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tbe_import_format {
  TBE_FORMAT_UNKNOWN = 0,
  TBE_FORMAT_CHROME_JSON = 1,
  TBE_FORMAT_XSPACE = 2,
  TBE_FORMAT_NSYS_SQLITE = 3
} tbe_import_format;

typedef struct tbe_import_error {
  /* "<path>: byte <offset> (line L, column C): <what>", NUL-terminated. */
  char message[512];
  uint64_t offset;  /* byte offset in the (decompressed) input; 0 if n/a */
  uint64_t line;    /* 1-based, 0 if n/a */
  uint64_t column;  /* 1-based, 0 if n/a */
} tbe_import_error;

typedef struct tbe_import_options {
  /* Called now and then with bytes (or rows) done and the total (0 if
   * unknown).  May be NULL. */
  void (*progress)(void *ctx, uint64_t done, uint64_t total);
  void *progress_ctx;
} tbe_import_options;

/* Returns a static name: "chrome-json", "xspace", "nsys-sqlite", "unknown". */
TBE_API const char *tbe_import_format_name(tbe_import_format f);

/* Detects the format of `path` from its first bytes.  Returns 0 and sets
 * *fmt (TBE_FORMAT_UNKNOWN if not recognized), or -errno. */
TBE_API int tbe_import_detect(const char *path, tbe_import_format *fmt);

/* Imports `path` into `t` and finishes the trace.  `opts` and `err` may be
 * NULL.  Returns 0, TBE_EFORMAT (not a format we read), TBE_EPARSE or
 * TBE_ECORRUPT (bad input; see err), or another negative code. */
TBE_API int tbe_import_file(tbe_trace *t, const char *path, const tbe_import_options *opts,
                            tbe_import_error *err);

#ifdef __cplusplus
}
#endif

#endif
