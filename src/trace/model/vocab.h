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

/* Counter tracks of memory, in bytes, on a GPU (tbe_trace_metric_track):
 * the curve's (model/memory_counters.c), NVML's samples (collect/nvml.h,
 * through the spool), torch's own peaks at exit and JAX's samples
 * (import/spool_pymem.c).  The analysis keeps them out of the GPU
 * metrics' means and reads the sampled ones for its memory figures
 * (analysis_memory.c). */
#define TBE__CTR_MEM_ALLOCATED "memory allocated"
#define TBE__CTR_MEM_RESERVED "memory reserved"
#define TBE__CTR_NVML_PROC "device memory used (NVML)"
#define TBE__CTR_NVML_DEVICE "device memory used, all processes (NVML)"
#define TBE__CTR_TORCH_MAX_ALLOCATED "torch max_memory_allocated"
#define TBE__CTR_TORCH_MAX_RESERVED "torch max_memory_reserved"
#define TBE__CTR_JAX_IN_USE "JAX bytes in use"
#define TBE__CTR_JAX_PEAK "JAX peak bytes in use"
#define TBE__CTR_JAX_RESERVED "JAX bytes reserved"
#define TBE__CTR_JAX_LIMIT "JAX bytes limit"

typedef enum tbe__mem_ctr {
  TBE__MCTR_NONE = 0, /* not a memory counter */
  TBE__MCTR_ALLOCATED,
  TBE__MCTR_RESERVED,
  TBE__MCTR_NVML_PROC,
  TBE__MCTR_NVML_DEVICE,
  TBE__MCTR_TORCH_MAX_ALLOCATED,
  TBE__MCTR_TORCH_MAX_RESERVED,
  TBE__MCTR_JAX_IN_USE,
  TBE__MCTR_JAX_PEAK,
  TBE__MCTR_JAX_RESERVED,
  TBE__MCTR_JAX_LIMIT
} tbe__mem_ctr;

/* Which memory counter a track's name (NUL-terminated) names. */
tbe__mem_ctr tbe__memory_counter_of(const char *name);

/* The allocator `t` was created with (defined by the model, model.c, and
 * declared in model/model_int.h too): the importers' scratch memory comes
 * from it, so that the import allocator covers everything. */
const tbe_allocator *tbe__trace_allocator(const tbe_trace *t);

#endif
