/* analysis_diff.c: two analyses compared (tbe_diff_create,
 * tbexport/analysis.h).
 *
 * A diff borrows its two analyses and reads only their tables: the names
 * of each group matched by label, and in the by-shape operator table by
 * label and shapes (a tbe__index over the base entries, one keyed hash and
 * one comparison per name of the new side), calls, totals and the
 * operators' CUDA totals side by side, then the per-step figures of each
 * name compared by the rank test of stats.c with a false discovery rate
 * over the names of one table (for the operators also their CUDA time per
 * step, with a false discovery rate of its own); the step times of the two
 * sides likewise.  Entries are sorted by the size of their change (the
 * operators', when a side attributes GPU work to operators, by their CUDA
 * total's).  Nothing here walks a trace: analysis.c computes, this file
 * compares, report_diff.c renders.
 *
 * Position: beside analysis.c in src/trace; the run-level diff
 * (run_analysis.c) calls tbe_diff_create once for the totals and once per
 * matched pair of hosts. */
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/checked.h"
#include "common/map.h"
#include "tbexport/analysis.h"
#include "tbexport/error.h"
#include "trace/analysis/stats.h"

/* ---- one group ---- */

static int64_t abs64(int64_t v) { return v < 0 ? (v == INT64_MIN ? INT64_MAX : -v) : v; }

/* Ties: by name, then by shapes. */
static int cmp_names(const tbe_diff_entry *a, const tbe_diff_entry *b) {
  int c = strcmp(a->name, b->name);
  if (c || !a->shapes || !b->shapes) return c;
  return strcmp(a->shapes, b->shapes);
}

static int cmp_delta(const void *x, const void *y) {
  const tbe_diff_entry *a = x, *b = y;
  int64_t da = abs64(a->delta_ns), db = abs64(b->delta_ns);
  if (da != db) return da > db ? -1 : 1;
  return cmp_names(a, b);
}

/* The operator tables of a diff with GPU work attributed: by the change
 * of CUDA total, then as cmp_delta. */
static int cmp_cuda_delta(const void *x, const void *y) {
  const tbe_diff_entry *a = x, *b = y;
  int64_t da = abs64(a->cuda_delta_ns), db = abs64(b->cuda_delta_ns);
  if (da != db) return da > db ? -1 : 1;
  return cmp_delta(x, y);
}

/* The key of an entry: its label, and in the by-shape table its shapes. */
static uint64_t entry_hash(const tbe_name_stats *e, uint64_t seed) {
  uint64_t h = tbe__hash_bytes(e->label, strlen(e->label), seed);
  if (e->shapes) h = tbe__hash_u64(h ^ tbe__hash_bytes(e->shapes, strlen(e->shapes), seed), seed);
  return h;
}

static int same_entry(const tbe_name_stats *a, const tbe_name_stats *b) {
  if (strcmp(a->label, b->label) != 0) return 0;
  return !a->shapes || !b->shapes || strcmp(a->shapes, b->shapes) == 0;
}

/* The per-step figures of one name on each side (`cuda`: its CUDA time
 * per step, into cuda_steps; else its time, into steps), then the
 * table's verdicts at a false discovery rate of TBE_NOISE_ALPHA. */
static int diff_noise(tbe_diff *d, tbe_diff_entry *out, size_t k, const tbe_name_stats **eb,
                      const tbe_name_stats **en, tbe__mw *mw, int cuda) {
  const tbe_analysis *b = d->side[0], *n = d->side[1];
  double *p = tbe__alloc(&d->alloc_, (k ? k : 1) * sizeof *p);
  if (!p) return TBE_ENOMEM;
  size_t np = 0;
  for (size_t i = 0; i < k; i++) {
    const int64_t *vb = eb[i] && b->nsteps ? (cuda ? eb[i]->cuda_step_ns : eb[i]->step_ns) : NULL;
    const int64_t *vn = en[i] && n->nsteps ? (cuda ? en[i]->cuda_step_ns : en[i]->step_ns) : NULL;
    tbe_step_compare *c = cuda ? &out[i].cuda_steps : &out[i].steps;
    int rc = tbe__step_compare(mw, vb, vb ? b->nsteps : 0, vn, vn ? n->nsteps : 0, c);
    if (rc) {
      tbe__free(&d->alloc_, p);
      return rc;
    }
    if (!vb || !vn) c->verdict = TBE_NOISE_NONE;
    if (c->p_value >= 0) p[np++] = c->p_value;
  }
  double thr = tbe__fdr_threshold(p, np, TBE_NOISE_ALPHA);
  for (size_t i = 0; i < k; i++) {
    tbe_step_compare *c = cuda ? &out[i].cuda_steps : &out[i].steps;
    if (c->p_value >= 0) c->verdict = c->p_value <= thr ? TBE_NOISE_BEYOND : TBE_NOISE_WITHIN;
  }
  tbe__free(&d->alloc_, p);
  return 0;
}

static void entry_side(tbe_diff_entry *o, int s, const tbe_name_stats *e) {
  o->calls[s] = e->calls;
  o->total_ns[s] = e->total_ns;
  o->cuda_ns[s] = e->cuda_total_ns;
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
    rc = tbe__index_add(&tab, entry_hash(&b->groups[g][i], tab.seed), (uint32_t)i);
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
    tbe__iprobe pr;
    uint32_t hit = tbe__index_first(&tab, entry_hash(en, tab.seed), &pr);
    while (hit != TBE__NOIDX && !same_entry(&b->groups[g][hit], en))
      hit = tbe__index_next(&tab, &pr);
    srcn[k] = en;
    tbe_diff_entry *o = &out[k++];
    o->name = en->label;
    o->shapes = en->shapes;
    o->present = 2;
    entry_side(o, 1, en);
    const tbe_name_stats *eb = NULL;
    if (hit != TBE__NOIDX) {
      match[hit] = (uint32_t)j;
      eb = &b->groups[g][hit];
      o->present |= 1;
      entry_side(o, 0, eb);
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
    o->shapes = eb->shapes;
    o->present = 1;
    entry_side(o, 0, eb);
    d->removed[g]++;
  }
  for (size_t i = 0; i < k; i++) {
    out[i].delta_ns = out[i].total_ns[1] - out[i].total_ns[0];
    out[i].ratio = out[i].total_ns[0] > 0 ? (double)out[i].total_ns[1] / (double)out[i].total_ns[0]
                                          : 0.0;
    out[i].cuda_delta_ns = tbe__sat_sub(out[i].cuda_ns[1], out[i].cuda_ns[0]);
  }
  int op = g == TBE_GROUP_CPU_OP || g == TBE_GROUP_CPU_OP_SHAPE;
  rc = diff_noise(d, out, k, srcb, srcn, mw, 0);
  if (!rc) rc = diff_noise(d, out, k, srcb, srcn, mw, 1);
  tbe__index_deinit(&tab);
  tbe__free(&d->alloc_, match);
  tbe__free(&d->alloc_, src);
  if (rc) {
    tbe__free(&d->alloc_, out);
    return rc;
  }
  qsort(out, k, sizeof *out, op && d->op_cuda ? cmp_cuda_delta : cmp_delta);
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
  d->op_cuda = base->op_gpu_count > 0 || newer->op_gpu_count > 0;
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
