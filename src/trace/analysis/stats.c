/* stats.c: quartiles, the Mann-Whitney rank test and the Benjamini-Hochberg
 * threshold behind diff's noise verdicts (stats.h, tbe_noise).
 *
 * Why a rank test: step times are skewed (a slow first step, a straggler
 * now and then), so a test on means or a rule on the spread (max - min) is
 * driven by the outliers; ranks are not, and the test assumes nothing
 * about the distribution beyond the steps being exchangeable.
 *
 * The statistic: U = the number of (base, new) pairs with base > new, a tie
 * counting one half.  Under "no change", every way of splitting the m + n
 * values into the two sides is equally likely.
 *  - Exact (no repeated value, m < 50, n < 50): the number of splits with
 *    U = u is the coefficient of q^u in the Gaussian binomial
 *    [m + n choose m]_q = prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i), built
 *    factor by factor (a multiplication is a shifted subtraction, a
 *    division a strided running sum), O(m * m * n) additions in doubles.
 *    The distribution is symmetric, so the two-sided p is twice the lower
 *    tail at min(u, m n - u), which sums small counts, never a difference
 *    of large ones.
 *  - Otherwise: the normal approximation with the tie correction of the
 *    variance and a continuity correction of 1/2.
 * These are the textbook choices (they are also what R's wilcox.test does
 * by default); tests check the exact path against brute-force enumeration.
 *
 * Invariant: a context's cdf always matches its (m, n), or m = 0. */
#include "trace/analysis/stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "tbexport/error.h"

/* The exact distribution is used below these sample sizes (and without
 * ties); beyond them the normal approximation is within 0.001 of it. */
#define EXACT_MAX 50

/* ---- order statistics ---- */

static int cmp_i64(const void *x, const void *y) {
  int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
  return (a > b) - (a < b);
}

/* The p = k/4 quantile of sorted v[0..n), n > 0, by linear interpolation. */
static int64_t quartile(const int64_t *v, size_t n, unsigned k) {
  size_t pos = (n - 1) * k;
  size_t i = pos / 4, r = pos % 4;
  if (r == 0 || i + 1 >= n) return v[i];
  uint64_t d = (uint64_t)v[i + 1] - (uint64_t)v[i];
  return v[i] + (int64_t)((d / 4) * r + (d % 4) * r / 4);
}

void tbe__dist_sort(int64_t *v, size_t n, tbe_step_dist *d) {
  d->n = n;
  if (n == 0) {
    d->median_ns = d->q1_ns = d->q3_ns = d->min_ns = d->max_ns = -1;
    return;
  }
  qsort(v, n, sizeof *v, cmp_i64);
  d->min_ns = v[0];
  d->max_ns = v[n - 1];
  d->q1_ns = quartile(v, n, 1);
  d->median_ns = quartile(v, n, 2);
  d->q3_ns = quartile(v, n, 3);
}

/* ---- the rank test ---- */

void tbe__mw_init(tbe__mw *c, const tbe_allocator *a) {
  memset(c, 0, sizeof *c);
  c->a = a;
  tbe__vec_init(&c->cdf, a, sizeof(double));
  tbe__vec_init(&c->x, a, sizeof(int64_t));
  tbe__vec_init(&c->y, a, sizeof(int64_t));
}

void tbe__mw_free(tbe__mw *c) {
  tbe__vec_deinit(&c->cdf);
  tbe__vec_deinit(&c->x);
  tbe__vec_deinit(&c->y);
  memset(c, 0, sizeof *c);
}

/* Fills c->cdf for sizes (m, n): cdf[u] = splits with U <= u. */
static int exact_cdf(tbe__mw *c, size_t m, size_t n) {
  if (c->m == m && c->n == n) return 0;
  size_t top = m * n;
  c->m = c->n = 0;
  /* A multiplication reaches degree deg + n + i before its division. */
  if (tbe__vec_resize(&c->cdf, top + m + 1) != 0) return TBE_ENOMEM;
  double *f = c->cdf.data;
  memset(f, 0, (top + m + 1) * sizeof *f);
  f[0] = 1.0;
  size_t deg = 0;
  for (size_t i = 1; i <= m; i++) {
    size_t k = n + i, hi = deg + k;  /* times (1 - q^k): degree deg + k */
    for (size_t d = hi; d >= k; d--) f[d] -= f[d - k];
    size_t nd = deg + n;               /* over (1 - q^i): degree deg + n */
    for (size_t d = i; d <= nd; d++) f[d] += f[d - i];
    for (size_t d = nd + 1; d <= hi; d++) f[d] = 0.0; /* the exact remainder is 0 */
    deg = nd;
  }
  for (size_t u = 1; u <= top; u++) f[u] += f[u - 1];
  c->m = m;
  c->n = n;
  return 0;
}

/* Two-sided p of sorted x[0..m) against sorted y[0..n), both non-empty. */
static int mann_whitney(tbe__mw *c, const int64_t *x, size_t m, const int64_t *y, size_t n,
                        double *p) {
  /* One merge over the two sorted samples: U (doubled, so ties stay
   * integral) and the tie groups. */
  uint64_t u2 = 0;
  double tie_sum = 0;
  size_t i = 0, j = 0;
  while (i < m || j < n) {
    int64_t v = i < m && (j >= n || x[i] <= y[j]) ? x[i] : y[j];
    size_t cx = 0, cy = 0;
    while (i < m && x[i] == v) cx++, i++;
    size_t below = j;
    while (j < n && y[j] == v) cy++, j++;
    u2 += (uint64_t)cx * (2 * below + cy);
    double t = (double)(cx + cy);
    if (cx + cy > 1) tie_sum += t * t * t - t;
  }
  double mn = (double)m * (double)n, u = (double)u2 / 2.0;
  if (tie_sum == 0 && m < EXACT_MAX && n < EXACT_MAX) {
    if (exact_cdf(c, m, n) != 0) return TBE_ENOMEM;
    size_t uu = (size_t)(u2 / 2), top = m * n;
    size_t lo = uu < top - uu ? uu : top - uu;
    const double *f = c->cdf.data;
    double q = 2.0 * f[lo] / f[top];
    *p = q > 1.0 ? 1.0 : (q < 0.0 ? 0.0 : q);
    return 0;
  }
  double N = (double)(m + n);
  double var = mn / 12.0 * ((N + 1.0) - tie_sum / (N * (N - 1.0)));
  if (!(var > 0)) {
    *p = 1.0; /* every value equal: nothing moved */
    return 0;
  }
  double z = (fabs(u - mn / 2.0) - 0.5) / sqrt(var);
  if (z < 0) z = 0;
  double q = erfc(z / sqrt(2.0));
  *p = q > 1.0 ? 1.0 : q;
  return 0;
}

int tbe__step_compare(tbe__mw *c, const int64_t *base, size_t m, const int64_t *newer, size_t n,
                      tbe_step_compare *out) {
  if (tbe__vec_resize(&c->x, m ? m : 1) != 0 || tbe__vec_resize(&c->y, n ? n : 1) != 0)
    return TBE_ENOMEM;
  int64_t *x = c->x.data, *y = c->y.data;
  if (m) memcpy(x, base, m * sizeof *base);
  if (n) memcpy(y, newer, n * sizeof *newer);
  tbe__dist_sort(x, m, &out->dist[0]);
  tbe__dist_sort(y, n, &out->dist[1]);
  out->p_value = -1;
  if (m == 0 || n == 0) {
    out->verdict = TBE_NOISE_NONE;
    return 0;
  }
  if (m < TBE_NOISE_MIN_STEPS || n < TBE_NOISE_MIN_STEPS) {
    out->verdict = TBE_NOISE_TOO_FEW;
    return 0;
  }
  int rc = mann_whitney(c, x, m, y, n, &out->p_value);
  if (rc) return rc;
  out->verdict = out->p_value < TBE_NOISE_ALPHA ? TBE_NOISE_BEYOND : TBE_NOISE_WITHIN;
  return 0;
}

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

double tbe__fdr_threshold(double *p, size_t k, double alpha) {
  if (k == 0) return -1;
  qsort(p, k, sizeof *p, cmp_double);
  for (size_t i = k; i-- > 0;)
    if (p[i] <= alpha * (double)(i + 1) / (double)k) return p[i];
  return -1;
}

/* ---- public ---- */

int tbe_step_compare_values(tbe_step_compare *out, const int64_t *base, size_t nbase,
                            const int64_t *newer, size_t nnew, const tbe_allocator *a) {
  if (!out || (!base && nbase) || (!newer && nnew)) return TBE_EINVAL;
  tbe_allocator al;
  tbe__allocator_init(&al, a);
  tbe__mw c;
  tbe__mw_init(&c, &al);
  int rc = tbe__step_compare(&c, base, nbase, newer, nnew, out);
  tbe__mw_free(&c);
  return rc;
}

const char *tbe_noise_name(tbe_noise v) {
  switch (v) {
    case TBE_NOISE_TOO_FEW: return "too few steps";
    case TBE_NOISE_WITHIN: return "within noise";
    case TBE_NOISE_BEYOND: return "beyond noise";
    default: return "";
  }
}

/* ---- the median ---- */

/* The k-th smallest of v[0..n) by quickselect with a three-way partition
 * (permutes v so that v[0..k) <= v[k] <= v[k+1..n)).  k < n. */
static int64_t select_kth(int64_t *v, size_t n, size_t k) {
  size_t lo = 0, hi = n;
  while (hi - lo > 1) {
    int64_t a = v[lo], b = v[lo + (hi - lo) / 2], c = v[hi - 1];
    int64_t pivot = (a < b) ? ((b < c) ? b : (a < c ? c : a)) : ((a < c) ? a : (b < c ? c : b));
    size_t lt = lo, i = lo, gt = hi;
    while (i < gt) {
      int64_t x = v[i];
      if (x < pivot) {
        v[i++] = v[lt];
        v[lt++] = x;
      } else if (x > pivot) {
        v[i] = v[--gt];
        v[gt] = x;
      } else {
        i++;
      }
    }
    if (k < lt)
      hi = lt;
    else if (k >= gt)
      lo = gt;
    else
      return pivot;
  }
  return v[k];
}

/* Median of v[0..n) (permutes v), n > 0: the middle element, or for even
 * n the mean of the two middle ones (rounded toward zero). */
int64_t tbe__median_i64(int64_t *v, size_t n) {
  size_t k = (n - 1) / 2;
  int64_t a = select_kth(v, n, k);
  if (n % 2) return a;
  /* The upper middle is the smallest element after position k. */
  int64_t b = v[k + 1];
  for (size_t i = k + 2; i < n; i++)
    if (v[i] < b) b = v[i];
  return (int64_t)(((__int128)a + b) / 2); /* a + b may pass int64 */
}
