/* histo.c: default histogram bucketing.
 *
 * Equivalent to torch.utils.tensorboard's add_histogram(bins="tensorflow"):
 * edges e = [-v_k..-v_0, 0, v_0..v_k] with v_0 = 1e-12, v_{i+1} = v_i * 1.1
 * while v < 1e20; numpy.histogram semantics (bin j holds e[j] <= x <
 * e[j+1], the last bin also holds x == e[last]); then only the span from
 * the first to the last non-empty bin is kept, preceded by one empty bucket
 * whose right edge is the left edge of the first non-empty bin (TensorBoard
 * stores right edges only).  Unlike torch, values beyond +-1e20 are not
 * dropped: they fall into an extra bin reaching +-DBL_MAX. */
#include "events/histo.h"

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "common/alloc.h"
#include "tbexport/error.h"

#define MAX_EDGES 1600
static double edges[MAX_EDGES + 2]; /* [-DBL_MAX, e..., DBL_MAX] */
static size_t nedges;              /* count of e (without the two ends) */
static pthread_once_t edges_once = PTHREAD_ONCE_INIT;

static void edges_init(void) {
  double pos[MAX_EDGES / 2];
  size_t k = 0;
  for (double v = 1e-12; v < 1e20 && k < MAX_EDGES / 2; v *= 1.1) pos[k++] = v;
  size_t i = 0;
  edges[i++] = -DBL_MAX;
  for (size_t j = k; j-- > 0;) edges[i++] = -pos[j];
  edges[i++] = 0.0;
  for (size_t j = 0; j < k; j++) edges[i++] = pos[j];
  edges[i++] = DBL_MAX;
  nedges = 2 * k + 1;
}

const double *tbe__histo_default_edges(size_t *n) {
  pthread_once(&edges_once, edges_init);
  *n = nedges;
  return edges + 1;
}

/* Bin of x among the extended edges E[0..m] (m = nedges + 1): E[0] =
 * -DBL_MAX, E[1..nedges] = e, E[m] = DBL_MAX.  Bins 0..m-1. */
static size_t bin_of(double x) {
  size_t m = nedges + 1;
  const double *e = edges + 1; /* e[0..nedges-1] */
  if (x < e[0]) return 0;
  if (x > e[nedges - 1]) return m - 1;
  if (x == e[nedges - 1]) return nedges - 1; /* numpy: last bin is closed */
  /* largest j with e[j] <= x, j in [0, nedges-2]; bin = j + 1 */
  size_t lo = 0, hi = nedges - 1; /* e[lo] <= x < e[hi] */
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    if (e[mid] <= x)
      lo = mid;
    else
      hi = mid;
  }
  return lo + 1;
}

int tbe__histo_default(const tbe_allocator *a, const double *v, size_t n, tbe__histo *out) {
  memset(out, 0, sizeof *out);
  if (!v || n == 0) return TBE_EINVAL;
  pthread_once(&edges_once, edges_init);
  size_t nbins = nedges + 1;
  double *cnt = tbe__calloc(a, nbins, sizeof *cnt);
  if (!cnt) return TBE_ENOMEM;
  double mn = v[0], mx = v[0], sum = 0, sq = 0;
  for (size_t i = 0; i < n; i++) {
    double x = v[i];
    if (!isfinite(x)) {
      tbe__free(a, cnt);
      return TBE_EINVAL;
    }
    if (x < mn) mn = x;
    if (x > mx) mx = x;
    sum += x;
    sq += x * x;
    cnt[bin_of(x)] += 1.0;
  }
  size_t start = 0, end = nbins;
  while (cnt[start] == 0) start++;
  while (cnt[end - 1] == 0) end--;
  /* output: limits E[start..end], counts [0, cnt[start..end-1]] */
  size_t k = end - start + 1;
  out->limits = tbe__alloc(a, k * sizeof(double));
  out->counts = tbe__alloc(a, k * sizeof(double));
  if (!out->limits || !out->counts) {
    tbe__free(a, cnt);
    tbe__histo_free(a, out);
    return TBE_ENOMEM;
  }
  for (size_t j = 0; j < k; j++) {
    out->limits[j] = edges[start + j];
    out->counts[j] = j ? cnt[start + j - 1] : 0.0;
  }
  out->n = k;
  out->min = mn;
  out->max = mx;
  out->num = (double)n;
  out->sum = sum;
  out->sum_squares = sq;
  tbe__free(a, cnt);
  return 0;
}

void tbe__histo_free(const tbe_allocator *a, tbe__histo *h) {
  tbe__free(a, h->limits);
  tbe__free(a, h->counts);
  h->limits = h->counts = NULL;
  h->n = 0;
}
