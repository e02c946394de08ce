/* analysis_diff.c: two analyses compared (tbe_diff_create,
 * tbexport/analysis.h).
 *
 * A diff borrows its two analyses and reads only their tables: the names
 * of each group matched by label (a tbe__index over the base entries, one
 * keyed hash and one comparison per name of the new side), calls and
 * totals side by side, then the per-step figures of each name compared by
 * the rank test of stats.c with a false discovery rate over the names of
 * one table; the step times of the two sides likewise.  Entries are sorted
 * by the size of their change.  Nothing here walks a trace: analysis.c
 * computes, this file compares, report_diff.c renders.
 *
 * Position: beside analysis.c in src/trace; the run-level diff
 * (run_analysis.c) calls tbe_diff_create once for the totals and once per
 * matched pair of hosts. */
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/map.h"
#include "tbexport/analysis.h"
#include "tbexport/error.h"
#include "trace/analysis/stats.h"

/* ---- one group ---- */

static int cmp_delta(const void *x, const void *y) {
  const tbe_diff_entry *a = x, *b = y;
  int64_t da = a->delta_ns < 0 ? -a->delta_ns : a->delta_ns;
  int64_t db = b->delta_ns < 0 ? -b->delta_ns : b->delta_ns;
  if (da != db) return da > db ? -1 : 1;
  return strcmp(a->name, b->name);
}

/* The per-step figures of one name on each side, then the table's
 * verdicts at a false discovery rate of TBE_NOISE_ALPHA. */
static int diff_noise(tbe_diff *d, tbe_diff_entry *out, size_t k, const tbe_name_stats **eb,
                      const tbe_name_stats **en, tbe__mw *mw) {
  const tbe_analysis *b = d->side[0], *n = d->side[1];
  double *p = tbe__alloc(&d->alloc_, (k ? k : 1) * sizeof *p);
  if (!p) return TBE_ENOMEM;
  size_t np = 0;
  for (size_t i = 0; i < k; i++) {
    const int64_t *vb = eb[i] && b->nsteps ? eb[i]->step_ns : NULL;
    const int64_t *vn = en[i] && n->nsteps ? en[i]->step_ns : NULL;
    int rc = tbe__step_compare(mw, vb, vb ? b->nsteps : 0, vn, vn ? n->nsteps : 0, &out[i].steps);
    if (rc) {
      tbe__free(&d->alloc_, p);
      return rc;
    }
    if (!vb || !vn) out[i].steps.verdict = TBE_NOISE_NONE;
    if (out[i].steps.p_value >= 0) p[np++] = out[i].steps.p_value;
  }
  double thr = tbe__fdr_threshold(p, np, TBE_NOISE_ALPHA);
  for (size_t i = 0; i < k; i++)
    if (out[i].steps.p_value >= 0)
      out[i].steps.verdict = out[i].steps.p_value <= thr ? TBE_NOISE_BEYOND : TBE_NOISE_WITHIN;
  tbe__free(&d->alloc_, p);
  return 0;
}

static int diff_group(tbe_diff *d, tbe_group_kind g, tbe__mw *mw) {
  const tbe_analysis *b = d->side[0], *n = d->side[1];
  size_t nb = b->ngroups[g], nn = n->ngroups[g];
  /* The base entries by label; reserved, so that of two entries with one
   * label (a range name and a cut one, analysis.c) the first is found. */
  tbe__index tab;
  tbe__index_init(&tab, &d->alloc_, TBE__SEED_PROCESS);
  tbe_diff_entry *out = tbe__calloc(&d->alloc_, nb + nn + 1, sizeof *out);
  uint32_t *match = tbe__alloc(&d->alloc_, (nb + 1) * sizeof *match);
  const tbe_name_stats **src = tbe__calloc(&d->alloc_, 2 * (nb + nn) + 1, sizeof *src);
  int rc = out && match && src ? tbe__index_reserve(&tab, nb) : TBE_ENOMEM;
  for (size_t i = 0; i < nb && !rc; i++) {
    const char *s = b->groups[g][i].label;
    rc = tbe__index_add(&tab, tbe__hash_bytes(s, strlen(s), tab.seed), (uint32_t)i);
    match[i] = UINT32_MAX;
  }
  if (rc) {
    tbe__index_deinit(&tab);
    tbe__free(&d->alloc_, out);
    tbe__free(&d->alloc_, match);
    tbe__free(&d->alloc_, src);
    return rc;
  }
  /* src[i] and src[nb + nn + i]: entry i's base and new names. */
  const tbe_name_stats **srcb = src, **srcn = src + nb + nn;
  size_t k = 0;
  for (size_t j = 0; j < nn; j++) {
    const tbe_name_stats *en = &n->groups[g][j];
    const char *s = en->label;
    tbe__iprobe pr;
    uint32_t hit = tbe__index_first(&tab, tbe__hash_bytes(s, strlen(s), tab.seed), &pr);
    while (hit != TBE__NOIDX && strcmp(b->groups[g][hit].label, s) != 0)
      hit = tbe__index_next(&tab, &pr);
    srcn[k] = en;
    tbe_diff_entry *o = &out[k++];
    o->name = s;
    o->present = 2;
    o->calls[1] = en->calls;
    o->total_ns[1] = en->total_ns;
    const tbe_name_stats *eb = NULL;
    if (hit != TBE__NOIDX) {
      match[hit] = (uint32_t)j;
      eb = &b->groups[g][hit];
      o->present |= 1;
      o->calls[0] = eb->calls;
      o->total_ns[0] = eb->total_ns;
      srcb[k - 1] = eb;
    } else {
      d->added[g]++;
    }
  }
  for (size_t i = 0; i < nb; i++) {
    if (match[i] != UINT32_MAX) continue;
    const tbe_name_stats *eb = &b->groups[g][i];
    srcb[k] = eb;
    tbe_diff_entry *o = &out[k++];
    o->name = eb->label;
    o->present = 1;
    o->calls[0] = eb->calls;
    o->total_ns[0] = eb->total_ns;
    d->removed[g]++;
  }
  for (size_t i = 0; i < k; i++) {
    out[i].delta_ns = out[i].total_ns[1] - out[i].total_ns[0];
    out[i].ratio = out[i].total_ns[0] > 0 ? (double)out[i].total_ns[1] / (double)out[i].total_ns[0]
                                          : 0.0;
  }
  rc = diff_noise(d, out, k, srcb, srcn, mw);
  tbe__index_deinit(&tab);
  tbe__free(&d->alloc_, match);
  tbe__free(&d->alloc_, src);
  if (rc) {
    tbe__free(&d->alloc_, out);
    return rc;
  }
  qsort(out, k, sizeof *out, cmp_delta);
  d->entries[g] = out;
  d->nentries[g] = k;
  return 0;
}

/* ---- the diff ---- */

int tbe_diff_create(tbe_diff **out, const tbe_analysis *base, const tbe_analysis *newer,
                    const tbe_allocator *a) {
  if (!out) return TBE_EINVAL;
  *out = NULL;
  if (!base || !newer) return TBE_EINVAL;
  tbe_allocator al;
  tbe__allocator_init(&al, a);
  tbe_diff *d = tbe__calloc(&al, 1, sizeof *d);
  if (!d) return TBE_ENOMEM;
  d->alloc_ = al;
  d->side[0] = base;
  d->side[1] = newer;
  for (int s = 0; s < 2; s++) {
    const tbe_analysis *an = d->side[s];
    d->wall_ns[s] = an->wall_ns;
    d->kernel_ns[s] = an->all.kernel_ns;
    d->busy_ns[s] = an->all.busy_ns;
    d->nsteps[s] = an->nsteps;
  }
  size_t ns = base->nsteps + newer->nsteps;
  int64_t *dur = tbe__alloc(&d->alloc_, (ns ? ns : 1) * sizeof *dur);
  tbe__mw mw;
  tbe__mw_init(&mw, &d->alloc_);
  int rc = dur ? 0 : TBE_ENOMEM;
  if (!rc) {
    for (size_t i = 0; i < base->nsteps; i++) dur[i] = base->steps[i].dur_ns;
    for (size_t i = 0; i < newer->nsteps; i++) dur[base->nsteps + i] = newer->steps[i].dur_ns;
    rc = tbe__step_compare(&mw, dur, base->nsteps, dur + base->nsteps, newer->nsteps, &d->steps);
    d->step_median_ns[0] = d->steps.dist[0].median_ns;
    d->step_median_ns[1] = d->steps.dist[1].median_ns;
  }
  for (int g = 0; g < TBE_GROUP__COUNT && !rc; g++) rc = diff_group(d, (tbe_group_kind)g, &mw);
  tbe__free(&d->alloc_, dur);
  tbe__mw_free(&mw);
  if (rc) {
    tbe_diff_free(d);
    return rc;
  }
  *out = d;
  return 0;
}

void tbe_diff_free(tbe_diff *d) {
  if (!d) return;
  tbe_allocator al = d->alloc_;
  for (int g = 0; g < TBE_GROUP__COUNT; g++) tbe__free(&al, d->entries[g]);
  tbe__free(&al, d);
}
