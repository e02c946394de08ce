/* model_int.h: what the model (model.c) tells the rest of src/trace
 * beyond include/tbexport/trace.h. */
#ifndef TBE_TRACE_MODEL_INT_H
#define TBE_TRACE_MODEL_INT_H

#include "tbexport/trace.h"

/* Whether tbe_trace_finish ran on `t` (and nothing was added since).
 * Outputs read the finished model's order and links: export_run.c refuses
 * any other trace with TBE_ESTATE before anything is written. */
int tbe__trace_finished(const tbe_trace *t);

/* The allocator the trace was created with: the caller's, for work on the
 * trace whose entry point takes none (tbe_export_chrome_json,
 * tbe_export_xplane). */
const tbe_allocator *tbe__trace_allocator(const tbe_trace *t);

#endif
