/* stats.h: the order statistics and the rank test behind the noise verdicts
 * of diff (the rule is stated once, at tbe_noise in tbexport/analysis.h).
 *
 * Everything works on int64 nanoseconds; the only floats are p-values.
 * Scratch memory comes from the caller's allocator through a tbe__mw
 * context, which also keeps the exact null distribution of the last pair of
 * sample sizes: the per-name tests of one diff all share the two traces'
 * step counts, so that distribution is computed once per diff. */
#ifndef TBE_TRACE_STATS_H
#define TBE_TRACE_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "common/vec.h"
#include "tbexport/analysis.h"

/* The median of v[0..n), n > 0, in O(n) (quickselect; permutes v): the
 * middle element, or for even n the mean of the two middle ones (rounded
 * toward zero, without overflow). */
int64_t tbe__median_i64(int64_t *v, size_t n);
/* Sorts v[0..n) ascending and describes it (all -1 when n is 0). */
void tbe__dist_sort(int64_t *v, size_t n, tbe_step_dist *d);

typedef struct tbe__mw {
  const tbe_allocator *a;
  size_t m, n;       /* sizes of the cached distribution; 0 = none */
  tbe__vec cdf;      /* double: cdf[u] = arrangements with U <= u, u = 0..m*n */
  tbe__vec x, y;     /* int64_t: sorted copies of the samples */
} tbe__mw;

void tbe__mw_init(tbe__mw *c, const tbe_allocator *a);
void tbe__mw_free(tbe__mw *c);

/* Compares base[0..m) with newer[0..n) (unsorted, not changed): fills
 * out->dist and out->p_value and the verdict of one test (NONE, TOO_FEW,
 * WITHIN or BEYOND at TBE_NOISE_ALPHA).  Returns 0 or TBE_ENOMEM. */
int tbe__step_compare(tbe__mw *c, const int64_t *base, size_t m, const int64_t *newer, size_t n,
                      tbe_step_compare *out);

/* Benjamini-Hochberg: sorts p[0..k) and returns the largest p(i) with
 * p(i) <= alpha * i / k (1-based i), or -1 when there is none; the
 * hypotheses with p at or below it are rejected. */
double tbe__fdr_threshold(double *p, size_t k, double alpha);

#endif
