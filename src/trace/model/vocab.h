/* vocab.h: the model's vocabulary that every room speaks: the names of a
 * trace's sources, the generic status lines a trace states before its own
 * warnings, and the allocator a trace was created with.
 *
 * Importers record these (a source name read back from one of our files,
 * the status lines they recognise and skip) and outputs write them; both
 * include this header, so that an importer never includes an exporter's
 * header (scripts/check_layers import-no-export).  Everything here is a
 * pure function of the trace: no file, no allocation, no state. */
#ifndef TBE_TRACE_MODEL_VOCAB_H
#define TBE_TRACE_MODEL_VOCAB_H

#include <stddef.h>
#include <stdint.h>

#include "tbexport/trace.h"

/* The name of a tbe_source as the outputs record it ("cupti", "kineto",
 * "chrome", "xspace", "nsys", "unknown"), and back (TBE_SRC_UNKNOWN for
 * a name it does not know). */
const char *tbe__source_name(uint32_t source);
uint32_t tbe__source_of(const char *name, size_t len);

/* The generic status lines an output states before the trace's own
 * warnings: records dropped, records with bad timestamps, (WITH_OVERHEAD:
 * CUPTI's overhead of a collected trace,) the capture ended early.  A
 * status that one of the trace's warnings already states in more detail is
 * left out, so that no list repeats itself.  Calls EMIT for each line. */
void tbe__status_lines(const tbe_trace *t, int with_overhead,
                       void (*emit)(void *ctx, const char *line, size_t len), void *ctx);

/* The number of leading entries of `lines` (n strings, the warnings list
 * of one of our files) that are generic status lines: the largest k (at
 * most 4) such that tbe__status_lines of `t`'s counters and the trace
 * warnings lines[k..n) is exactly lines[0..k).  `t` gives the counters and
 * the source; its own warnings are not used. */
size_t tbe__status_prefix(const tbe_trace *t, int with_overhead, const tbe_str *lines, size_t n);

/* The allocator `t` was created with (defined by the model, model.c, and
 * declared in model/model_int.h too): the importers' scratch memory comes
 * from it, so that the import allocator covers everything. */
const tbe_allocator *tbe__trace_allocator(const tbe_trace *t);

#endif
