/* analysis_int.h: what run_analysis.c needs from analysis.c to build a
 * merged analysis that tbe_analysis_free frees like any other. */
#ifndef TBE_TRACE_ANALYSIS_INT_H
#define TBE_TRACE_ANALYSIS_INT_H

#include <stddef.h>
#include <stdint.h>

#include "common/intern.h"
#include "tbexport/analysis.h"

/* Caps per-step per-name storage of one analysis (cells of int64). */
#define TBE__STEP_CELLS_MAX ((size_t)64 << 20)

/* A blank analysis without a trace (host "", pid, rank and medians -1).
 * Its groups and steps must be allocated with its own alloc_.  Returns 0
 * or TBE_ENOMEM. */
int tbe__analysis_blank(tbe_analysis **out, const tbe_allocator *a);
/* Gives `an` one pool of `n` zeroed int64 cells, freed with it (for the
 * per-step name times); NULL on failure or when it has one already. */
int64_t *tbe__analysis_pool(tbe_analysis *an, size_t n);

/* Makes a blank analysis own `t` (its an->trace from now on) and `mem`
 * (a block of an->alloc_), both freed with it (analysis_store.c: a
 * loaded analysis's strings and stamp).  Either may be NULL. */
void tbe__analysis_adopt(tbe_analysis *an, tbe_trace *t, void *mem);

/* The blocks the operator figures keep (analysis_ops.c; a loaded or a
 * merged analysis fills them too), freed with the analysis. */
enum {
  TBE__OPS_LAUNCHED = 0,   /* tbe_op_kernel: every entry's launched list */
  TBE__OPS_STEP_CELLS = 1, /* int64_t: the per-step CUDA cells */
  TBE__OPS_SHAPES = 2,     /* char: the by-shape entries' shapes */
  TBE__OPS_BLOCKS = 3
};
void **tbe__analysis_ops_block(tbe_analysis *an, int i);

/* The private part of every analysis (an->priv_), made by
 * tbe__analysis_priv_new and freed with the analysis (analysis_life.c,
 * the folder's bottom: it calls nothing above it). */
typedef struct tbe__analysis_priv {
  int64_t *step_pool;
  tbe__intern labels; /* labels of grouped ranges (the entries' label points here) */
  /* A loaded analysis (analysis_store.c): the trace holding its strings,
   * and one block of its own (the stamp's sources); freed with it. */
  tbe_trace *owned_trace;
  void *owned_mem;
  void *metric_block[2];            /* analysis_metrics.c's allocations */
  struct tbe__mem_trend *mem_trend; /* analysis_memory.c's, per device; NULL without */
  void *ops_block[TBE__OPS_BLOCKS]; /* the operator figures' */
} tbe__analysis_priv;
/* A zeroed private part with its label table, NULL without memory. */
tbe__analysis_priv *tbe__analysis_priv_new(const tbe_allocator *a);

/* The operator figures (analysis_ops.c): self CUDA, CUDA total, kernels
 * and the launched lists of groups[TBE_GROUP_CPU_OP], the table
 * TBE_GROUP_CPU_OP_SHAPE, an->op_gpu_count and op_gpu_ns, and the
 * kernels' launch_op.  Runs after the main pass (oslot maps an operator's
 * name id to its entry of groups[TBE_GROUP_CPU_OP], kslot a kernel's to
 * its entry of groups[TBE_GROUP_KERNEL], track_dev a track to its device
 * or -1) and
 * before the name tables are finished (name_totals); *out (freed with
 * tbe__ops_free, also on failure) keeps what the steps need.  Returns 0 or
 * TBE_ENOMEM. */
typedef struct tbe__ops tbe__ops;
int tbe__ops_create(tbe__ops **out, tbe_analysis *an, const uint32_t *oslot, const uint32_t *kslot,
                    const int32_t *track_dev);
/* Gives the operator entries their per-step CUDA cells (nothing without
 * GPU work attributed, or past TBE__STEP_CELLS_MAX).  0 or TBE_ENOMEM. */
int tbe__ops_step_cells(tbe__ops *x, size_t nsteps);
/* Operator event `event` (called for each in event order) starts in step
 * si (-1: none) and lasts `dur`: its CUDA total and, in the by-shape
 * table, its time go to that step. */
void tbe__ops_step(tbe__ops *x, size_t event, long si, int64_t dur);
void tbe__ops_free(tbe__ops *x);

/* Fills an->advice from an's figures (analysis_advice.c).  Returns 0 or
 * TBE_ENOMEM. */
int tbe__analysis_advise(tbe_analysis *an);

/* The hardware-metric figures (analysis_metrics.c): names, PM means per
 * device, for all, per step and per kernel name, kernel figures and
 * bound-by verdicts.  Runs after the steps' windows and the name tables
 * are final, before they are sorted: kslot maps a kernel event's name id
 * to its entry in groups[TBE_GROUP_KERNEL] (UINT32_MAX: none), track_dev
 * a track to its index in an->devices (-1: a host track); with either
 * NULL no per-kernel PM means are made.  Returns 0 or TBE_ENOMEM. */
int tbe__analysis_metrics(tbe_analysis *an, const uint32_t *kslot, const int32_t *track_dev);
/* Slot `i` (0 or 1) of the blocks analysis_metrics.c allocates, freed with
 * the analysis. */
void **tbe__analysis_metric_block(tbe_analysis *an, int i);
/* The hardware metrics of a run's merged analysis `tot` (names, steps and
 * figures already merged) from its n hosts (analysis_metrics.c): the
 * union of the hosts' names; all GPUs' PM means weighted by the windows
 * of the GPUs that measured them; a merged step's by the hosts' step
 * times (map[h][s]: host h's step s -> merged step, or -1); kernel
 * figures by launches, with the verdict from the merged figures and the
 * run's GPU busy share.  Nothing without metrics.  0 or TBE_ENOMEM. */
int tbe__analysis_metrics_merge(tbe_analysis *tot, const tbe_run_host *hosts, size_t n,
                                long *const *map);

/* What the memory advice reads of a GPU's curve beside its figures
 * (analysis_memory.c makes it, one per an->devices entry; a loaded or
 * merged analysis, whose advice is made, has none): the reserved bytes
 * at the allocated peak, the steps with an allocated value at their end,
 * how many of those ended higher than the step before, and the last one's
 * value less the first one's. */
typedef struct tbe__mem_trend {
  int64_t reserved_at_peak;
  uint64_t steps;
  uint64_t grow_steps;
  int64_t step_growth;
} tbe__mem_trend;

/* The memory figures (analysis_memory.c): peaks, growth and what was
 * never freed per GPU and for all, the peaks per step, from the trace's
 * memory curve; unknown (-1, growth INT64_MIN) where there is none.  Runs
 * once the steps' windows are final; order[] holds the step indexes in
 * start order.  Returns 0 or TBE_ENOMEM. */
int tbe__analysis_memory(tbe_analysis *an, const size_t *order);

/* Length of a run host's label without the "_pid<N>[_<k>]" that tbexport
 * appends for the processes of one machine: the machine's name
 * (run_analysis.c). */
size_t tbe__host_base_len(const char *label);
/* Length of the machine's name in `label`: tbe__host_base_len without a
 * trailing ".rank<digits>" (a launcher's rank; tbexport/session.h), so
 * the ranks of one machine share its GPUs. */
size_t tbe__host_machine_len(const char *label);

#endif
