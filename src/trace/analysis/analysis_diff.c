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

/* ---- kernels that replaced each other ----
 *
 * A kernel only in base and one only in new replaced each other when they
 * do the same work at the same place of the program: the same kernel
 * class, the same launching operator where both sides know it
 * (tbe_name_stats.launch_op), and the same place in the launch sequence
 * (tbe_analysis.launch_seq) of the two sides.  The places come from an
 * alignment of the two sequences (a longest common subsequence where the
 * same kernel scores 2 and a replacement candidate 1, so that the kernels
 * both sides share anchor it and the candidates between two anchors pair
 * in order); each aligned candidate pair is a vote, and pairs are taken
 * one to one by votes (then by base time, new time, names).  So fp32's
 * sm80_xmma_gemm_... and bf16's nvjet_... at the same place of a step
 * pair, and a cast kernel bf16 adds between them does not disturb it.
 * Cost: the sequences hold at most TBE_LAUNCH_SEQ_MAX launches, so the
 * alignment is at most 2048 x 2048 cells of one byte (its path) and two
 * rows of scores. */

/* The entry (index into out) of each launch of a sequence, UINT32_MAX for
 * a label the table lacks; `ix` indexes `tab`'s entries by label and
 * `where` maps an entry of `tab` to its entry in out. */
static void seq_entries(const char *const *seq, size_t n, const tbe__index *ix,
                        const tbe_name_stats *tab, const uint32_t *where, uint32_t *to) {
  for (size_t i = 0; i < n; i++) {
    tbe__iprobe pr;
    uint32_t hit = tbe__index_first(ix, tbe__hash_bytes(seq[i], strlen(seq[i]), ix->seed), &pr);
    while (hit != TBE__NOIDX && strcmp(tab[hit].label, seq[i]) != 0) hit = tbe__index_next(ix, &pr);
    to[i] = hit == TBE__NOIDX ? UINT32_MAX : where[hit];
  }
}

/* Whether out[x] (only in base) and out[y] (only in new) may have
 * replaced each other. */
static int candidates(const tbe_diff_entry *out, const tbe_name_stats **srcb,
                      const tbe_name_stats **srcn, uint32_t x, uint32_t y) {
  if (x == UINT32_MAX || y == UINT32_MAX || out[x].present != 1 || out[y].present != 2) return 0;
  const tbe_name_stats *b = srcb[x], *n = srcn[y];
  if (b->kclass != n->kclass) return 0;
  return !b->launch_op || !n->launch_op || strcmp(b->launch_op, n->launch_op) == 0;
}

typedef struct vote {
  uint32_t x, y; /* out entries: only in base, only in new */
  uint64_t n;
} vote;

typedef struct vote_ctx {
  const tbe_diff_entry *out;
} vote_ctx;

static int cmp_vote(const void *p, const void *q, void *ctx) {
  const tbe_diff_entry *out = ((const vote_ctx *)ctx)->out;
  const vote *a = p, *b = q;
  if (a->n != b->n) return a->n > b->n ? -1 : 1;
  const tbe_diff_entry *ax = &out[a->x], *bx = &out[b->x], *ay = &out[a->y], *by = &out[b->y];
  if (ax->total_ns[0] != bx->total_ns[0]) return ax->total_ns[0] > bx->total_ns[0] ? -1 : 1;
  if (ay->total_ns[1] != by->total_ns[1]) return ay->total_ns[1] > by->total_ns[1] ? -1 : 1;
  int c = strcmp(ax->name, bx->name);
  return c ? c : strcmp(ay->name, by->name);
}

enum { AL_UP = 1, AL_LEFT = 2, AL_DIAG = 3 };

/* The alignment of sequences A (n launches) and B (m) as out entries;
 * each candidate pair on its path votes, into `votes` through `at`. */
static int align(const tbe_diff *d, const tbe_diff_entry *out, const tbe_name_stats **srcb,
                 const tbe_name_stats **srcn, const uint32_t *A, size_t n, const uint32_t *B,
                 size_t m, tbe__map *at, tbe__vec *votes) {
  const tbe_allocator *a = &d->alloc_;
  uint8_t *dir = tbe__alloc(a, n * m);
  int32_t *prev = tbe__calloc(a, m + 1, sizeof *prev), *cur = tbe__calloc(a, m + 1, sizeof *cur);
  int rc = dir && prev && cur ? 0 : TBE_ENOMEM;
  for (size_t i = 1; i <= n && !rc; i++) {
    cur[0] = 0;
    for (size_t j = 1; j <= m; j++) {
      uint32_t x = A[i - 1], y = B[j - 1];
      int diag = x != UINT32_MAX && x == y && out[x].present == 3 ? 2
                 : candidates(out, srcb, srcn, x, y)              ? 1
                                                                  : -1;
      int32_t best = prev[j];
      uint8_t how = AL_UP;
      if (cur[j - 1] > best) best = cur[j - 1], how = AL_LEFT;
      if (diag > 0 && prev[j - 1] + diag >= best) best = prev[j - 1] + diag, how = AL_DIAG;
      cur[j] = best;
      dir[(i - 1) * m + (j - 1)] = how;
    }
    int32_t *t = prev;
    prev = cur;
    cur = t;
  }
  for (size_t i = n, j = m; i > 0 && j > 0 && !rc;) {
    uint8_t how = dir[(i - 1) * m + (j - 1)];
    if (how == AL_DIAG) {
      uint32_t x = A[i - 1], y = B[j - 1];
      if (out[x].present == 1) {
        int added;
        uint32_t *v = tbe__map_put(at, (uint64_t)x << 32 | y, &added);
        if (!v) {
          rc = TBE_ENOMEM;
          break;
        }
        if (added) {
          vote *nv = TBE__VEC_PUSH(votes, vote);
          if (!nv) {
            rc = TBE_ENOMEM;
            break;
          }
          *nv = (vote){x, y, 0};
          *v = (uint32_t)(votes->n - 1);
        }
        TBE__VEC_AT(votes, vote, *v).n++;
      }
      i--, j--;
    } else if (how == AL_UP) {
      i--;
    } else {
      j--;
    }
  }
  tbe__free(a, dir);
  tbe__free(a, prev);
  tbe__free(a, cur);
  return rc;
}

/* Pairs the kernels that replaced each other (above) and makes each pair
 * one entry: the base name's, with the new name in replaced_by and the new
 * side's figures; the new name's entry goes.  `bix` indexes the base
 * entries by label; bout/nout map base and new entries to entries of out.
 * *k shrinks by the pairs. */
static int pair_replaced(tbe_diff *d, tbe_diff_entry *out, size_t *k, const tbe_name_stats **srcb,
                         const tbe_name_stats **srcn, const tbe__index *bix, const uint32_t *bout,
                         const uint32_t *nout) {
  const tbe_analysis *b = d->side[0], *n = d->side[1];
  tbe_group_kind g = TBE_GROUP_KERNEL;
  if (!b->nlaunch_seq || !n->nlaunch_seq || !d->removed[g] || !d->added[g]) return 0;
  const tbe_allocator *a = &d->alloc_;
  size_t nn = n->ngroups[g];
  tbe__index nix;
  tbe__index_init(&nix, a, TBE__SEED_PROCESS);
  tbe__map at;
  tbe__map_init(&at, a, TBE__SEED_PROCESS);
  tbe__vec votes;
  tbe__vec_init(&votes, a, sizeof(vote));
  uint32_t *A = tbe__alloc(a, b->nlaunch_seq * sizeof *A);
  uint32_t *B = tbe__alloc(a, n->nlaunch_seq * sizeof *B);
  uint8_t *taken = tbe__calloc(a, *k ? *k : 1, 1);
  int rc = A && B && taken ? tbe__index_reserve(&nix, nn) : TBE_ENOMEM;
  for (size_t j = 0; j < nn && !rc; j++) {
    const char *l = n->groups[g][j].label;
    rc = tbe__index_add(&nix, tbe__hash_bytes(l, strlen(l), nix.seed), (uint32_t)j);
  }
  if (!rc) {
    seq_entries(b->launch_seq, b->nlaunch_seq, bix, b->groups[g], bout, A);
    seq_entries(n->launch_seq, n->nlaunch_seq, &nix, n->groups[g], nout, B);
    rc = align(d, out, srcb, srcn, A, b->nlaunch_seq, B, n->nlaunch_seq, &at, &votes);
  }
  if (!rc && votes.n) {
    vote_ctx c = {out};
    qsort_r(votes.data, votes.n, sizeof(vote), cmp_vote, &c);
    for (size_t i = 0; i < votes.n; i++) {
      const vote *v = &TBE__VEC_AT(&votes, vote, i);
      if (taken[v->x] || taken[v->y]) continue;
      taken[v->x] = taken[v->y] = 1;
      tbe_diff_entry *o = &out[v->x];
      o->replaced_by = out[v->y].name;
      o->present = 3;
      entry_side(o, 1, srcn[v->y]);
      srcn[v->x] = srcn[v->y];
      out[v->y].present = 0; /* gone: compacted below */
      d->removed[g]--;
      d->added[g]--;
      d->replaced[g]++;
    }
    size_t w = 0;
    for (size_t i = 0; i < *k; i++) {
      if (!out[i].present) continue;
      out[w] = out[i];
      srcb[w] = srcb[i];
      srcn[w] = srcn[i];
      w++;
    }
    *k = w;
  }
  tbe__index_deinit(&nix);
  tbe__map_deinit(&at);
  tbe__vec_deinit(&votes);
  tbe__free(a, A);
  tbe__free(a, B);
  tbe__free(a, taken);
  return rc;
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
  /* each base and new entry's entry in out */
  uint32_t *bout = tbe__alloc(&d->alloc_, (nb + nn + 1) * sizeof *bout), *nout = bout + nb;
  const tbe_name_stats **src = tbe__calloc(&d->alloc_, 2 * (nb + nn) + 1, sizeof *src);
  int rc = out && match && src && bout ? tbe__index_reserve(&tab, nb) : TBE_ENOMEM;
  for (size_t i = 0; i < nb && !rc; i++) {
    rc = tbe__index_add(&tab, entry_hash(&b->groups[g][i], tab.seed), (uint32_t)i);
    match[i] = UINT32_MAX;
  }
  if (rc) {
    tbe__index_deinit(&tab);
    tbe__free(&d->alloc_, out);
    tbe__free(&d->alloc_, match);
    tbe__free(&d->alloc_, bout);
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
    nout[j] = (uint32_t)k;
    tbe_diff_entry *o = &out[k++];
    o->name = en->label;
    o->shapes = en->shapes;
    o->present = 2;
    entry_side(o, 1, en);
    const tbe_name_stats *eb = NULL;
    if (hit != TBE__NOIDX) {
      match[hit] = (uint32_t)j;
      bout[hit] = (uint32_t)(k - 1);
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
    bout[i] = (uint32_t)k;
    tbe_diff_entry *o = &out[k++];
    o->name = eb->label;
    o->shapes = eb->shapes;
    o->present = 1;
    entry_side(o, 0, eb);
    d->removed[g]++;
  }
  if (g == TBE_GROUP_KERNEL) rc = pair_replaced(d, out, &k, srcb, srcn, &tab, bout, nout);
  for (size_t i = 0; i < k && !rc; i++) {
    out[i].delta_ns = out[i].total_ns[1] - out[i].total_ns[0];
    out[i].ratio = out[i].total_ns[0] > 0 ? (double)out[i].total_ns[1] / (double)out[i].total_ns[0]
                                          : 0.0;
    out[i].cuda_delta_ns = tbe__sat_sub(out[i].cuda_ns[1], out[i].cuda_ns[0]);
  }
  int op = g == TBE_GROUP_CPU_OP || g == TBE_GROUP_CPU_OP_SHAPE;
  if (!rc) rc = diff_noise(d, out, k, srcb, srcn, mw, 0);
  if (!rc) rc = diff_noise(d, out, k, srcb, srcn, mw, 1);
  tbe__index_deinit(&tab);
  tbe__free(&d->alloc_, match);
  tbe__free(&d->alloc_, bout);
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
