/* export_json.h: internal entry points of the Chrome JSON output
 * (export_json.c) for tests and benchmarks. */
#ifndef TBE_TRACE_EXPORT_JSON_H
#define TBE_TRACE_EXPORT_JSON_H

#include <stdint.h>

#include "tbexport/trace.h"
#include "trace/export/export_json_pipe.h" /* the knobs */

/* Writes the Chrome JSON of finished trace `t` to `fd` (plain, or gzip when
 * `gzip`), formatting the events on `threads` threads (0: the default,
 * the online CPUs; 1: the calling thread only).
 * `trace_name` is used when the trace has none.  The bytes written do not
 * depend on `threads`.  Returns 0 or a negative TBE_E* code. */
int tbe__json_write_fd(const tbe_trace *t, int fd, int gzip, int threads, const char *trace_name);

#endif
