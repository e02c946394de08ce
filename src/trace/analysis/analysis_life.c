/* analysis_life.c: an analysis's life outside its computation: its
 * private part (analysis_int.h, tbe__analysis_priv) with the blocks the
 * figures' files allocate into it, a blank analysis for the merged and
 * the loaded ones, and tbe_analysis_free.
 *
 * Position: the bottom of src/trace/analysis.  analysis.c (the
 * computation), analysis_metrics.c, analysis_ops.c, run_analysis.c and
 * analysis_store.c hand their allocations down to it; it calls nothing of
 * theirs, so no file of the folder calls back up into the one that calls
 * it.  Invariant: every block an analysis holds is freed here, once. */
#include <stddef.h>
#include <stdint.h>

#include "common/alloc.h"
#include "common/intern.h"
#include "common/map.h"
#include "tbexport/analysis.h"
#include "tbexport/error.h"
#include "tbexport/trace.h"
#include "trace/analysis/analysis_int.h"

typedef tbe__analysis_priv priv;

tbe__analysis_priv *tbe__analysis_priv_new(const tbe_allocator *a) {
  priv *p = tbe__calloc(a, 1, sizeof *p);
  if (p) tbe__intern_init(&p->labels, a, TBE__SEED_PROCESS);
  return p;
}

int tbe__analysis_blank(tbe_analysis **out, const tbe_allocator *a) {
  tbe_allocator al;
  tbe__allocator_init(&al, a);
  tbe_analysis *an = tbe__calloc(&al, 1, sizeof *an);
  if (!an) return TBE_ENOMEM;
  an->alloc_ = al;
  if (!(an->priv_ = tbe__analysis_priv_new(&an->alloc_))) {
    tbe__free(&al, an);
    return TBE_ENOMEM;
  }
  an->all.device = -1;
  an->all.launch_median_ns = -1;
  an->all.launch_overhead_median_ns = -1;
  an->all.queue_delay_median_ns = -1;
  an->all.mem_peak_allocated = an->all.mem_peak_reserved = an->all.mem_unfreed = -1;
  an->all.mem_growth_per_step = INT64_MIN;
  an->host = "";
  an->pid = -1;
  an->rank = -1;
  an->step_dist.median_ns = an->step_dist.q1_ns = an->step_dist.q3_ns = -1;
  an->step_dist.min_ns = an->step_dist.max_ns = -1;
  *out = an;
  return 0;
}

void **tbe__analysis_metric_block(tbe_analysis *an, int i) {
  return &((priv *)an->priv_)->metric_block[i & 1];
}

void **tbe__analysis_ops_block(tbe_analysis *an, int i) {
  return &((priv *)an->priv_)->ops_block[(unsigned)i < TBE__OPS_BLOCKS ? i : 0];
}

int64_t *tbe__analysis_pool(tbe_analysis *an, size_t n) {
  priv *p = an->priv_;
  if (p->step_pool || n == 0) return NULL;
  p->step_pool = tbe__calloc(&an->alloc_, n, sizeof(int64_t));
  return p->step_pool;
}

void tbe__analysis_adopt(tbe_analysis *an, tbe_trace *t, void *mem) {
  priv *p = an->priv_;
  p->owned_trace = t;
  p->owned_mem = mem;
  an->trace = t;
}

void tbe_analysis_free(tbe_analysis *an) {
  if (!an) return;
  tbe_allocator al = an->alloc_;
  for (int g = 0; g < TBE_GROUP__COUNT; g++) tbe__free(&al, an->groups[g]);
  tbe__free(&al, an->devices);
  tbe__free(&al, an->steps);
  tbe__free(&al, an->advice);
  tbe__free(&al, an->launch_seq);
  if (an->priv_) {
    tbe__free(&al, ((priv *)an->priv_)->step_pool);
    tbe__free(&al, ((priv *)an->priv_)->metric_block[0]);
    tbe__free(&al, ((priv *)an->priv_)->metric_block[1]);
    tbe__free(&al, ((priv *)an->priv_)->mem_trend);
    for (int i = 0; i < TBE__OPS_BLOCKS; i++) tbe__free(&al, ((priv *)an->priv_)->ops_block[i]);
    tbe__intern_deinit(&((priv *)an->priv_)->labels);
    tbe_trace_free(((priv *)an->priv_)->owned_trace);
    tbe__free(&al, ((priv *)an->priv_)->owned_mem);
  }
  tbe__free(&al, an->priv_);
  tbe__free(&al, an);
}
