/* model_int.h: what the model's storage (model.c) tells the rest of
 * src/trace beyond include/tbexport/trace.h.
 *
 * The second half is for finish.c alone: what its passes need of the
 * storage's private state, so that the state stays in model.c and the
 * calls go one way, down (finish.c -> ops.c, comm.c -> model.c). */
#ifndef TBE_TRACE_MODEL_INT_H
#define TBE_TRACE_MODEL_INT_H

#include <stddef.h>
#include <stdint.h>

#include "tbexport/trace.h"

/* Whether tbe_trace_finish ran on `t` (and nothing was added since).
 * Outputs read the finished model's order and links: export_run.c refuses
 * any other trace with TBE_ESTATE before anything is written. */
int tbe__trace_finished(const tbe_trace *t);

/* The allocator the trace was created with: the caller's, for work on the
 * trace whose entry point takes none (tbe_export_chrome_json,
 * tbe_export_xplane). */
const tbe_allocator *tbe__trace_allocator(const tbe_trace *t);

/* ---- for finish.c ---- */

/* Records `err` as the trace's error when it has none yet (the first one
 * stays: tbe_trace_error) and returns `err`. */
int tbe__trace_fail(tbe_trace *t, int err);

/* The trace is finished: tbe__trace_finished is 1 until something is
 * added. */
void tbe__trace_set_finished(tbe_trace *t);

/* Appends `n` uninitialised entries to t->args; returns the index of the
 * first, or TBE_NONE (nothing appended) when the allocation fails or the
 * count would not fit a uint32_t.  The trace's error is left alone. */
uint32_t tbe__trace_args_room(tbe_trace *t, size_t n);

/* Room for at least `n` entries in t->steps (t->nsteps unchanged).
 * Returns 0 or TBE_ENOMEM; the trace's error is left alone. */
int tbe__trace_steps_room(tbe_trace *t, size_t n);

/* The index in t->devices of device `id` in *out, TBE_NONE when the trace
 * has no such device: one keyed lookup (the map is rebuilt first when the
 * public array changed behind the model's back).  Returns 0 or an error,
 * recorded as the trace's. */
int tbe__trace_device_find(tbe_trace *t, int32_t id, uint32_t *out);

/* Entries of t->kernel_metrics were renamed in place: the lookup by
 * (name, device) is rebuilt at its next use. */
void tbe__trace_kernel_metrics_renamed(tbe_trace *t);

/* The memory curve (memory.c): per (process, device) the allocator's
 * events, else the CUDA driver's, their unknown totals filled by running
 * sums in time order, the other source's events renamed "[cuda memory]".
 * Idempotent.  Returns 0 or an error, recorded as the trace's. */
int tbe__trace_memory_curve(tbe_trace *t);

#endif
