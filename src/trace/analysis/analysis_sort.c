/* analysis_sort.c: the order of an analysis's name tables
 * (tbe_analysis_sort, tbe_analysis_sort_key) and their names
 * (tbe_group_name).
 *
 * Every key sorts descending; ties break by total, then by name (the
 * label, in byte order), then by input shapes, so a table's order is the
 * same on every machine and for a loaded analysis as for the computed
 * one.  Calls nothing else of the folder. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tbexport/analysis.h"
#include "tbexport/trace.h"

const char *tbe_group_name(tbe_group_kind g) {
  switch (g) {
    case TBE_GROUP_KERNEL: return "kernels";
    case TBE_GROUP_CPU_OP: return "cpu_ops";
    case TBE_GROUP_RANGE: return "ranges";
    case TBE_GROUP_CPU_OP_SHAPE: return "cpu_ops_by_shape";
    default: return "unknown";
  }
}

typedef struct sort_ctx {
  const tbe_trace *t;
  tbe_sort_key key;
} sort_ctx;

static int64_t sort_value(const tbe_name_stats *e, tbe_sort_key key) {
  switch (key) {
    case TBE_SORT_AVG: return e->calls ? e->total_ns / (int64_t)e->calls : 0;
    case TBE_SORT_CALLS: return e->calls > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)e->calls;
    case TBE_SORT_MAX: return e->max_ns;
    case TBE_SORT_CUDA_TOTAL: return e->cuda_total_ns;
    case TBE_SORT_SELF_CUDA: return e->self_cuda_ns;
    case TBE_SORT_SELF: return e->self_ns;
    default: return e->total_ns;
  }
}

static int cmp_stats(const void *x, const void *y, void *ctx) {
  const sort_ctx *c = ctx;
  const tbe_name_stats *a = x, *b = y;
  int64_t ka = sort_value(a, c->key), kb = sort_value(b, c->key);
  if (ka != kb) return ka > kb ? -1 : 1;
  if (a->total_ns != b->total_ns) return a->total_ns > b->total_ns ? -1 : 1;
  int r = strcmp(a->label, b->label);
  if (r || !a->shapes || !b->shapes) return r;
  return strcmp(a->shapes, b->shapes);
}

tbe_sort_key tbe_analysis_sort_key(const tbe_analysis *an, tbe_group_kind g, tbe_sort_key key) {
  int op = g == TBE_GROUP_CPU_OP || g == TBE_GROUP_CPU_OP_SHAPE;
  if (key == TBE_SORT_DEFAULT)
    return op && an && an->op_gpu_count ? TBE_SORT_CUDA_TOTAL : TBE_SORT_TOTAL;
  if (!op && (key == TBE_SORT_CUDA_TOTAL || key == TBE_SORT_SELF_CUDA)) return TBE_SORT_TOTAL;
  return (unsigned)key <= TBE_SORT_SELF ? key : TBE_SORT_TOTAL;
}

void tbe_analysis_sort(tbe_analysis *an, tbe_group_kind g, tbe_sort_key key) {
  if (!an || (unsigned)g >= TBE_GROUP__COUNT || an->ngroups[g] < 2) return;
  sort_ctx c = {an->trace, tbe_analysis_sort_key(an, g, key)};
  qsort_r(an->groups[g], an->ngroups[g], sizeof(tbe_name_stats), cmp_stats, &c);
}
