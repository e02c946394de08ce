/* run_analysis.c: a run of several hosts (or processes) in total and host by
 * host, and the comparison of two such runs (tbexport/analysis.h).
 *
 * Each host file of a run is its own trace with its own analysis: pids,
 * thread ids, stream ids and device ordinals of different hosts mean
 * different things and are never merged.  What is merged is what means the
 * same everywhere:
 *  - names: one tbe__index (common/map.h) over the merged entries, keyed by
 *    label (and, in the by-shape operator table, shapes) and reserved for
 *    the sum of the hosts' names, so each name is hashed once per host that
 *    has it and the merge is linear in the names (calls, total, self and
 *    the operators' GPU figures add; min and max are taken over hosts); an
 *    operator's launched list is the hosts' lists summed by name, the
 *    first TBE_OP_KERNELS_TOP by time kept and the rest summed with the
 *    hosts' remainders (a sort of the listed entries);
 *  - steps: by step number, the numbers every host has (data-parallel
 *    ranks run the same iterations); a merged step lasts as long as its
 *    slowest host, since a synchronous iteration waits for it, and its
 *    per-name times are the sums over hosts;
 *  - counts and durations that add (kernels, copies, API calls, ...);
 *  - hardware metrics (analysis_metrics.c, tbe__analysis_metrics_merge):
 *    PM means weighted by the hosts' GPU windows (a step's by the hosts'
 *    step times), kernel figures by launches.
 * Medians do not add: the merged launch medians (of the run and of each
 * merged step) are unknown (-1; the reports say so, the JSON writes null),
 * and the hosts' own stay in their rows.
 *
 * Hosts are ordered by rank when every host has a distinct one, else by
 * host name, pid (the one the label names, else the trace's) and label,
 * where a host name is a label without the "_pid<N>[_<k>]" that tbexport
 * appends for the processes of one machine;
 * two runs are matched host by host in the same terms (processes of one
 * machine pair in order of pid, which is the order they were started in on
 * most systems).
 *
 * Across hosts (what a report of hundreds of ranks prints instead of a row
 * per rank): the distribution of each host's figure (median step time, else
 * wall time) and of its communication time, by nearest rank so that every
 * percentile is some host's own figure; the hosts from slowest to fastest;
 * the outliers by the median absolute deviation (the rule is at
 * TBE_RUN_OUTLIER_MADS).  A comparison of two runs adds per pair the change
 * of the median step time and orders the pairs by how much they changed.
 * All of it costs a few sorts of the hosts.
 *
 * Invariant: a run's merged analysis borrows the label strings of its host
 * analyses, so the hosts (and their traces) outlive it, as the header
 * says. */
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/checked.h"
#include "common/map.h"
#include "common/vec.h"
#include "tbexport/error.h"
#include "trace/analysis/analysis_int.h"
#include "trace/analysis/figures.h"
#include "trace/analysis/stats.h"

typedef struct run_priv {
  int owns_total;  /* total is the merge (else hosts[0]'s analysis) */
} run_priv;

/* ---- host order ---- */

/* Length of `label` without a trailing "_pid<digits>" or
 * "_pid<digits>_<digits>". */
size_t tbe__host_base_len(const char *label) {
  size_t n = strlen(label), i = n;
  while (i > 0 && label[i - 1] >= '0' && label[i - 1] <= '9') i--;
  if (i < n && i > 0 && label[i - 1] == '_') { /* "_<k>" after the pid */
    size_t j = i - 1;
    while (j > 0 && label[j - 1] >= '0' && label[j - 1] <= '9') j--;
    if (j < i - 1 && j >= 4 && strncmp(label + j - 4, "_pid", 4) == 0) return j - 4;
  }
  if (i < n && i >= 4 && strncmp(label + i - 4, "_pid", 4) == 0) return i - 4;
  return n;
}

size_t tbe__host_machine_len(const char *label) {
  size_t n = tbe__host_base_len(label), i = n;
  while (i > 0 && label[i - 1] >= '0' && label[i - 1] <= '9') i--;
  if (i < n && i >= 5 && strncmp(label + i - 5, ".rank", 5) == 0) return i - 5;
  return n;
}

/* The pid a label names ("_pid<N>" after the host name), else the
 * analysis's. */
static int64_t host_pid(const tbe_run_host *h) {
  size_t base = tbe__host_base_len(h->label);
  if (h->label[base] == '\0') return h->an->pid;
  int64_t v = 0;
  for (const char *p = h->label + base + 4; *p >= '0' && *p <= '9' && v < INT64_MAX / 10; p++)
    v = v * 10 + (*p - '0');
  return v;
}

static int cmp_by_name(const tbe_run_host *a, const tbe_run_host *b) {
  size_t la = tbe__host_base_len(a->label), lb = tbe__host_base_len(b->label);
  int c = strncmp(a->label, b->label, la < lb ? la : lb);
  if (c) return c;
  if (la != lb) return la < lb ? -1 : 1;
  int64_t pa = host_pid(a), pb = host_pid(b);
  if (pa != pb) return pa < pb ? -1 : 1;
  c = strcmp(a->label, b->label);
  if (c) return c;
  return (a->index > b->index) - (a->index < b->index);
}

static int cmp_host_name(const void *x, const void *y) { return cmp_by_name(x, y); }

static int cmp_host_rank(const void *x, const void *y) {
  const tbe_run_host *a = x, *b = y;
  return (a->an->rank > b->an->rank) - (a->an->rank < b->an->rank);
}

static int cmp_i32(const void *x, const void *y) {
  int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
  return (a > b) - (a < b);
}

/* 1 when every host has a known rank and no two share one. */
static int ranks_distinct(const tbe_run_analysis *r) {
  int32_t *v = tbe__alloc(&r->alloc_, r->nhosts * sizeof *v);
  if (!v) return -1;
  int ok = 1;
  for (size_t i = 0; i < r->nhosts && ok; i++) {
    v[i] = r->hosts[i].an->rank;
    if (v[i] < 0) ok = 0;
  }
  if (ok) {
    qsort(v, r->nhosts, sizeof *v, cmp_i32);
    for (size_t i = 1; i < r->nhosts && ok; i++) ok = v[i] != v[i - 1];
  }
  tbe__free(&r->alloc_, v);
  return ok;
}

/* ---- steps matched by number ---- */

typedef struct numidx {
  int64_t num;
  size_t idx;
} numidx;

static int cmp_numidx(const void *x, const void *y) {
  const numidx *a = x, *b = y;
  if (a->num != b->num) return a->num < b->num ? -1 : 1;
  return (a->idx > b->idx) - (a->idx < b->idx);
}

/* Fills total->steps with the step numbers every host has and map[h] (one
 * array per host, nsteps entries: merged index or -1; the first step of a
 * repeated number only).  Returns 0 or TBE_ENOMEM. */
static int merge_steps(tbe_run_analysis *r, long **map) {
  tbe_analysis *tot = r->total;
  const tbe_allocator *a = &tot->alloc_;
  size_t most = 0;
  for (size_t h = 0; h < r->nhosts; h++)
    if (r->hosts[h].an->nsteps > most) most = r->hosts[h].an->nsteps;
  numidx *v = tbe__alloc(a, (most ? most : 1) * sizeof *v);
  int64_t *common = tbe__alloc(a, (most ? most : 1) * sizeof *common);
  if (!v || !common) {
    tbe__free(a, v);
    tbe__free(a, common);
    return TBE_ENOMEM;
  }
  /* The common numbers: host 0's, intersected with each other host's. */
  size_t nc = 0;
  for (size_t h = 0; h < r->nhosts; h++) {
    const tbe_analysis *an = r->hosts[h].an;
    for (size_t i = 0; i < an->nsteps; i++) v[i] = (numidx){an->steps[i].num, i};
    qsort(v, an->nsteps, sizeof *v, cmp_numidx);
    size_t k = 0;
    if (h == 0) {
      for (size_t i = 0; i < an->nsteps; i++)
        if (k == 0 || common[k - 1] != v[i].num) common[k++] = v[i].num;
    } else {
      size_t i = 0;
      for (size_t c = 0; c < nc; c++) {
        while (i < an->nsteps && v[i].num < common[c]) i++;
        if (i < an->nsteps && v[i].num == common[c]) common[k++] = common[c];
      }
    }
    nc = k;
  }
  int rc = 0;
  if (nc) {
    tot->steps = tbe__calloc(a, nc, sizeof *tot->steps);
    r->step_fastest_ns = tbe__alloc(&r->alloc_, nc * sizeof *r->step_fastest_ns);
    if (!tot->steps || !r->step_fastest_ns) rc = TBE_ENOMEM;
  }
  for (size_t c = 0; c < nc && !rc; c++) {
    tot->steps[c].num = common[c];
    tbe__figs_merge_init(TBE__FS_STEP, &tot->steps[c]);
    r->step_fastest_ns[c] = INT64_MAX;
  }
  if (!rc) tot->nsteps = nc;
  for (size_t h = 0; h < r->nhosts && !rc; h++) {
    const tbe_analysis *an = r->hosts[h].an;
    map[h] = tbe__alloc(a, (an->nsteps ? an->nsteps : 1) * sizeof **map);
    if (!map[h]) {
      rc = TBE_ENOMEM;
      break;
    }
    for (size_t i = 0; i < an->nsteps; i++) {
      map[h][i] = -1;
      v[i] = (numidx){an->steps[i].num, i};
    }
    qsort(v, an->nsteps, sizeof *v, cmp_numidx);
    size_t c = 0;
    for (size_t i = 0; i < an->nsteps && c < nc; i++) {
      while (c < nc && common[c] < v[i].num) c++;
      if (c == nc || common[c] != v[i].num || (i > 0 && v[i - 1].num == v[i].num)) continue;
      const tbe_step_stats *s = &an->steps[v[i].idx];
      tbe_step_stats *m = &tot->steps[c];
      map[h][v[i].idx] = (long)c;
      if (s->dur_ns < r->step_fastest_ns[c]) r->step_fastest_ns[c] = s->dur_ns;
      tbe__figs_merge(TBE__FS_STEP, m, s); /* by each figure's merge rule */
    }
  }
  tbe__free(a, v);
  tbe__free(a, common);
  return rc;
}

/* ---- names merged by label ---- */

/* The merged entries of one table (tot->groups[g]) and their index by
 * label. */
typedef struct ltab {
  tbe__vec ent;    /* tbe_name_stats: tot->groups[g] (the analysis frees it) */
  tbe__index ix;
} ltab;

/* The key of an entry: its label, and in the by-shape table its shapes. */
static uint64_t entry_hash(const char *label, const char *shapes, uint64_t seed) {
  uint64_t h = tbe__hash_bytes(label, strlen(label), seed);
  if (shapes) h = tbe__hash_u64(h ^ tbe__hash_bytes(shapes, strlen(shapes), seed), seed);
  return h;
}

/* The merged entry of `e` (its label, and shapes) in table g, added when
 * `add` and absent; -1 when absent and not added, or on allocation
 * failure. */
static long find_or_add(tbe_analysis *tot, tbe_group_kind g, ltab *t, const tbe_name_stats *src,
                        int add) {
  const char *label = src->label, *shapes = src->shapes;
  uint64_t h = entry_hash(label, shapes, t->ix.seed);
  tbe__iprobe pr;
  for (uint32_t i = tbe__index_first(&t->ix, h, &pr); i != TBE__NOIDX;
       i = tbe__index_next(&t->ix, &pr)) {
    const tbe_name_stats *m = &tot->groups[g][i];
    if (strcmp(m->label, label) == 0 && (!shapes || !m->shapes || strcmp(m->shapes, shapes) == 0))
      return (long)i;
  }
  if (!add) return -1;
  size_t n = tot->ngroups[g];
  tbe_name_stats *e = TBE__VEC_PUSH(&t->ent, tbe_name_stats);
  if (!e) return -1;
  tot->groups[g] = t->ent.data; /* the analysis's from here, freed with it */
  e->label = label;
  e->shapes = shapes;
  e->min_ns = INT64_MAX;
  tot->ngroups[g] = n + 1;
  return tbe__index_add(&t->ix, h, (uint32_t)n) ? -1 : (long)n;
}

/* ---- what the operators launched, merged ---- */

typedef struct lrow {
  uint32_t table;  /* 0: TBE_GROUP_CPU_OP, 1: TBE_GROUP_CPU_OP_SHAPE */
  uint32_t row;    /* merged entry */
  const char *name;
  uint64_t calls;
  int64_t ns;
} lrow;

static int cmp_lrow_name(const void *x, const void *y) {
  const lrow *a = x, *b = y;
  if (a->table != b->table) return a->table < b->table ? -1 : 1;
  if (a->row != b->row) return a->row < b->row ? -1 : 1;
  return strcmp(a->name, b->name);
}

static int cmp_lrow_time(const void *x, const void *y) {
  const lrow *a = x, *b = y;
  if (a->table != b->table) return a->table < b->table ? -1 : 1;
  if (a->row != b->row) return a->row < b->row ? -1 : 1;
  if (a->ns != b->ns) return a->ns > b->ns ? -1 : 1;
  return strcmp(a->name, b->name);
}

/* The merged entries' launched lists: the hosts' listed activities summed
 * by name, the first TBE_OP_KERNELS_TOP by time kept, the rest and the
 * hosts' own remainders summed (so listed plus remainder still make each
 * entry's kernels and self CUDA).  rows[t][h][i]: host h's entry i of
 * table t -> merged entry. */
static int merge_launched(tbe_run_analysis *r, long **rows[2], int tables) {
  static const tbe_group_kind TB[2] = {TBE_GROUP_CPU_OP, TBE_GROUP_CPU_OP_SHAPE};
  tbe_analysis *tot = r->total;
  const tbe_allocator *a = &tot->alloc_;
  size_t n = 0;
  for (int t = 0; t < tables; t++)
    for (size_t h = 0; h < r->nhosts; h++) {
      const tbe_analysis *an = r->hosts[h].an;
      for (size_t i = 0; i < an->ngroups[TB[t]]; i++) n += an->groups[TB[t]][i].nlaunched;
    }
  if (!n) return 0;
  lrow *v = tbe__alloc(a, n * sizeof *v);
  if (!v) return TBE_ENOMEM;
  size_t k = 0;
  for (int t = 0; t < tables; t++)
    for (size_t h = 0; h < r->nhosts; h++) {
      const tbe_analysis *an = r->hosts[h].an;
      for (size_t i = 0; i < an->ngroups[TB[t]]; i++) {
        const tbe_name_stats *e = &an->groups[TB[t]][i];
        tbe_name_stats *m = &tot->groups[TB[t]][rows[t][h][i]];
        m->launched_other_calls += e->launched_other_calls;
        m->launched_other_ns = tbe__sat_add(m->launched_other_ns, e->launched_other_ns);
        for (size_t j = 0; j < e->nlaunched; j++)
          v[k++] = (lrow){(uint32_t)t, (uint32_t)rows[t][h][i], e->launched[j].name,
                          e->launched[j].calls, e->launched[j].total_ns};
      }
    }
  qsort(v, n, sizeof *v, cmp_lrow_name);
  size_t u = 0;
  for (size_t i = 0; i < n; i++) {
    if (u && cmp_lrow_name(&v[u - 1], &v[i]) == 0) {
      v[u - 1].calls += v[i].calls;
      v[u - 1].ns = tbe__sat_add(v[u - 1].ns, v[i].ns);
    } else {
      v[u++] = v[i];
    }
  }
  qsort(v, u, sizeof *v, cmp_lrow_time);
  tbe_op_kernel *out = tbe__alloc(a, u * sizeof *out);
  if (!out) {
    tbe__free(a, v);
    return TBE_ENOMEM;
  }
  *tbe__analysis_ops_block(tot, TBE__OPS_LAUNCHED) = out;
  for (size_t i = 0, run = 0; i < u; i++) {
    run = i && v[i].table == v[i - 1].table && v[i].row == v[i - 1].row ? run + 1 : 0;
    tbe_name_stats *m = &tot->groups[TB[v[i].table]][v[i].row];
    if (run < TBE_OP_KERNELS_TOP) {
      if (!run) m->launched = out;
      *out++ = (tbe_op_kernel){v[i].name, v[i].calls, v[i].ns};
      m->nlaunched++;
    } else {
      m->launched_other_calls += v[i].calls;
      m->launched_other_ns = tbe__sat_add(m->launched_other_ns, v[i].ns);
    }
  }
  tbe__free(a, v);
  return 0;
}

static int is_op_group(int g) { return g == TBE_GROUP_CPU_OP || g == TBE_GROUP_CPU_OP_SHAPE; }

/* Whether every host gives its operators' CUDA time per step (a host
 * without GPU work attributed to operators adds zeros). */
static int cuda_per_step(const tbe_run_analysis *r) {
  if (!r->total->op_gpu_count) return 0;
  for (size_t h = 0; h < r->nhosts; h++) {
    const tbe_analysis *an = r->hosts[h].an;
    if (!an->op_gpu_count) continue;
    for (int g = 0; g < TBE_GROUP__COUNT; g++)
      for (size_t i = 0; is_op_group(g) && i < an->ngroups[g]; i++)
        if (!an->groups[g][i].cuda_step_ns) return 0;
  }
  return 1;
}

/* Whether the run has a by-shape table: every host with operators has one
 * (a host without shapes would leave it short of that host's operators). */
static int shapes_merge(const tbe_run_analysis *r) {
  int any = 0;
  for (size_t h = 0; h < r->nhosts; h++) {
    const tbe_analysis *an = r->hosts[h].an;
    if (an->ngroups[TBE_GROUP_CPU_OP] && !an->ngroups[TBE_GROUP_CPU_OP_SHAPE]) return 0;
    any |= an->ngroups[TBE_GROUP_CPU_OP_SHAPE] > 0;
  }
  return any;
}

static int merge_names(tbe_run_analysis *r, long **map) {
  tbe_analysis *tot = r->total;
  const tbe_allocator *a = &tot->alloc_;
  size_t nsteps = tot->nsteps;
  int per_step = nsteps > 0, shapes = shapes_merge(r);
  ltab t[TBE_GROUP__COUNT];
  for (int g = 0; g < TBE_GROUP__COUNT; g++) {
    tbe__vec_init(&t[g].ent, a, sizeof(tbe_name_stats));
    tbe__index_init(&t[g].ix, a, TBE__SEED_PROCESS);
  }
  /* Per operator table and host: each entry's merged entry. */
  long **rows[2];
  rows[0] = tbe__calloc(a, r->nhosts, sizeof *rows[0]);
  rows[1] = tbe__calloc(a, r->nhosts, sizeof *rows[1]);
  int rc = rows[0] && rows[1] ? 0 : TBE_ENOMEM;
  for (size_t h = 0; h < r->nhosts && !rc; h++) {
    const tbe_analysis *an = r->hosts[h].an;
    for (int k = 0; k < 2 && !rc; k++) {
      size_t ne = an->ngroups[k ? TBE_GROUP_CPU_OP_SHAPE : TBE_GROUP_CPU_OP];
      rows[k][h] = tbe__alloc(a, (ne ? ne : 1) * sizeof **rows);
      if (!rows[k][h]) rc = TBE_ENOMEM;
    }
  }
  for (int g = 0; g < TBE_GROUP__COUNT && !rc; g++) {
    if (g == TBE_GROUP_CPU_OP_SHAPE && !shapes) continue;
    size_t sum = 0;
    for (size_t h = 0; h < r->nhosts; h++) sum += r->hosts[h].an->ngroups[g];
    /* Reserved: no rehash, so of two entries of one host with one label
     * (analysis.c: a range name and a cut one) the first is always found. */
    rc = tbe__index_reserve(&t[g].ix, sum);
    for (size_t h = 0; h < r->nhosts && !rc; h++) {
      const tbe_analysis *an = r->hosts[h].an;
      for (size_t i = 0; i < an->ngroups[g]; i++) {
        const tbe_name_stats *e = &an->groups[g][i];
        long k = find_or_add(tot, (tbe_group_kind)g, &t[g], e, 1);
        if (k < 0) {
          rc = TBE_ENOMEM;
          break;
        }
        if (is_op_group(g)) rows[g == TBE_GROUP_CPU_OP_SHAPE][h][i] = k;
        tbe_name_stats *m = &tot->groups[g][k];
        m->kclass = e->kclass;
        m->calls += e->calls;
        m->total_ns = tbe__sat_add(m->total_ns, e->total_ns);
        m->self_ns = tbe__sat_add(m->self_ns, e->self_ns);
        if (e->min_ns < m->min_ns) m->min_ns = e->min_ns;
        if (e->max_ns > m->max_ns) m->max_ns = e->max_ns;
        m->self_cuda_ns = tbe__sat_add(m->self_cuda_ns, e->self_cuda_ns);
        m->cuda_total_ns = tbe__sat_add(m->cuda_total_ns, e->cuda_total_ns);
        m->kernels += e->kernels;
        if (!m->launch_op) m->launch_op = e->launch_op; /* the first host's that knows it */
        if (!e->step_ns) per_step = 0;
      }
    }
    for (size_t i = 0; i < tot->ngroups[g]; i++) {
      if (tot->groups[g][i].min_ns == INT64_MAX) tot->groups[g][i].min_ns = 0;
      tot->group_total_ns[g] = tbe__sat_add(tot->group_total_ns[g], tot->groups[g][i].self_ns);
    }
  }
  if (!rc) rc = merge_launched(r, rows, shapes ? 2 : 1);
  /* Per step: the sums of the hosts' times in each common step. */
  size_t cells = 0, ocells = 0;
  for (int g = 0; g < TBE_GROUP__COUNT; g++) {
    cells += tot->ngroups[g];
    if (is_op_group(g)) ocells += tot->ngroups[g];
  }
  int cuda_steps = !rc && per_step && ocells && cells <= TBE__STEP_CELLS_MAX / nsteps &&
                   cuda_per_step(r);
  if (cuda_steps) {
    int64_t *q = tbe__calloc(a, ocells * nsteps, sizeof *q);
    *tbe__analysis_ops_block(tot, TBE__OPS_STEP_CELLS) = q;
    if (!q) rc = TBE_ENOMEM;
    for (int g = 0; g < TBE_GROUP__COUNT && !rc; g++)
      for (size_t i = 0; is_op_group(g) && i < tot->ngroups[g]; i++, q += nsteps)
        tot->groups[g][i].cuda_step_ns = q;
  }
  if (!rc && per_step && cells && cells <= TBE__STEP_CELLS_MAX / nsteps) {
    int64_t *q = tbe__analysis_pool(tot, cells * nsteps);
    if (!q) rc = TBE_ENOMEM;
    for (int g = 0; g < TBE_GROUP__COUNT && !rc; g++)
      for (size_t i = 0; i < tot->ngroups[g]; i++, q += nsteps) tot->groups[g][i].step_ns = q;
    for (int g = 0; g < TBE_GROUP__COUNT && !rc; g++)
      for (size_t h = 0; h < r->nhosts && (g != TBE_GROUP_CPU_OP_SHAPE || shapes); h++) {
        const tbe_analysis *an = r->hosts[h].an;
        for (size_t i = 0; i < an->ngroups[g]; i++) {
          const tbe_name_stats *e = &an->groups[g][i];
          long k = find_or_add(tot, (tbe_group_kind)g, &t[g], e, 0);
          int64_t *dst = tot->groups[g][k].step_ns, *cdst = tot->groups[g][k].cuda_step_ns;
          for (size_t s = 0; s < an->nsteps; s++) {
            if (map[h][s] < 0) continue;
            dst[map[h][s]] = tbe__sat_add(dst[map[h][s]], e->step_ns[s]);
            if (cdst && e->cuda_step_ns)
              cdst[map[h][s]] = tbe__sat_add(cdst[map[h][s]], e->cuda_step_ns[s]);
          }
        }
      }
  }
  for (int g = 0; g < TBE_GROUP__COUNT; g++) tbe__index_deinit(&t[g].ix);
  for (int k = 0; k < 2; k++) {
    for (size_t h = 0; rows[k] && h < r->nhosts; h++) tbe__free(a, rows[k][h]);
    tbe__free(a, rows[k]);
  }
  if (!rc)
    for (int g = 0; g < TBE_GROUP__COUNT; g++)
      tbe_analysis_sort(tot, (tbe_group_kind)g, TBE_SORT_TOTAL);
  return rc;
}

/* ---- the figures ----
 * Every figure of the hosts' all-GPU totals and of the hosts' analyses by
 * its row's merge rule (figures.h: sums saturate, the busiest host thread
 * is the busiest host's, medians do not add); the window, from the first
 * start to the last end, by its own rule. */

static void merge_figures(tbe_run_analysis *r) {
  tbe_analysis *tot = r->total;
  int64_t hi = INT64_MIN;
  tbe__figs_merge_init(TBE__FS_DEVICE, &tot->all);
  tbe__figs_merge_init(TBE__FS_ANALYSIS, tot);
  for (size_t h = 0; h < r->nhosts; h++) {
    const tbe_analysis *an = r->hosts[h].an;
    int64_t end = tbe__sat_add(an->start_ns, an->wall_ns);
    if (end > hi) hi = end;
    tbe__figs_merge(TBE__FS_DEVICE, &tot->all, &an->all);
    tbe__figs_merge(TBE__FS_ANALYSIS, tot, an);
    tot->ended_early |= an->ended_early;
  }
  tot->wall_ns = hi > tot->start_ns ? tbe__sat_sub(hi, tot->start_ns) : 0;
}

/* The step hint most hosts share (only when the run has no common steps). */
static int cmp_hint(const void *x, const void *y) {
  const tbe_run_host *a = *(const tbe_run_host *const *)x, *b = *(const tbe_run_host *const *)y;
  int c = strcmp(a->an->step_hint, b->an->step_hint);
  return c ? c : (a->index > b->index) - (a->index < b->index);
}

static int merge_hint(tbe_run_analysis *r) {
  tbe_analysis *tot = r->total;
  if (tot->nsteps) return 0;
  const tbe_run_host **v = tbe__alloc(&r->alloc_, r->nhosts * sizeof *v);
  if (!v) return TBE_ENOMEM;
  size_t n = 0;
  for (size_t h = 0; h < r->nhosts; h++)
    if (r->hosts[h].an->step_hint) v[n++] = &r->hosts[h];
  qsort(v, n, sizeof *v, cmp_hint);
  size_t best = 0, best_n = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && strcmp(v[j]->an->step_hint, v[i]->an->step_hint) == 0) j++;
    if (j - i > best_n) best = i, best_n = j - i;
    i = j;
  }
  if (best_n) {
    /* The figures of the first host (in run order) with that hint. */
    const tbe_analysis *an = NULL;
    for (size_t h = 0; h < r->nhosts && !an; h++)
      if (r->hosts[h].an->step_hint && strcmp(r->hosts[h].an->step_hint, v[best]->an->step_hint) == 0)
        an = r->hosts[h].an;
    tot->step_hint = an->step_hint;
    tot->step_hint_kind = an->step_hint_kind;
    tot->step_hint_count = an->step_hint_count;
    tot->step_hint_ns = an->step_hint_ns;
    r->hint_hosts = best_n;
  }
  tbe__free(&r->alloc_, v);
  return 0;
}

static void rank_hosts(tbe_run_analysis *r) {
  r->slowest = r->fastest = -1;
  if (r->nhosts < 2) return;
  int steps = 1;
  for (size_t h = 0; h < r->nhosts; h++) steps &= r->hosts[h].an->step_dist.n > 0;
  r->figure = steps ? TBE_RUN_BY_STEP_MEDIAN : TBE_RUN_BY_WALL;
  /* slowest: the first with the largest figure; fastest: the last with the
   * smallest, so that they differ even when all are equal. */
  for (size_t h = 0; h < r->nhosts; h++) {
    const tbe_analysis *an = r->hosts[h].an;
    int64_t v = steps ? an->step_dist.median_ns : an->wall_ns, tie = an->all.busy_ns;
    if (r->slowest < 0 || v > r->slowest_ns ||
        (v == r->slowest_ns && !steps && tie > r->hosts[r->slowest].an->all.busy_ns)) {
      r->slowest = (long)h;
      r->slowest_ns = v;
    }
    if (r->fastest < 0 || v < r->fastest_ns ||
        (v == r->fastest_ns && (steps || tie <= r->hosts[r->fastest].an->all.busy_ns))) {
      r->fastest = (long)h;
      r->fastest_ns = v;
    }
  }
  r->spread_ns = tbe__sat_sub(r->slowest_ns, r->fastest_ns);
}

/* ---- across hosts: distributions, order, outliers ---- */

/* The host's value of the run's figure. */
static int64_t figure_of(const tbe_run_analysis *r, size_t h) {
  const tbe_analysis *an = r->hosts[h].an;
  return r->figure == TBE_RUN_BY_STEP_MEDIAN ? an->step_dist.median_ns : an->wall_ns;
}

/* Nearest rank: the ceil(p n / 100)-th of n sorted values. */
static int64_t nearest_rank(const int64_t *v, size_t n, unsigned p) {
  size_t k = (n * p + 99) / 100;
  return v[k ? k - 1 : 0];
}

/* Describes v[0..n) (sorted in place, n > 0). */
static void run_spread_of(int64_t *v, size_t n, tbe_run_spread *out) {
  out->n = n;
  if (n == 0) {
    out->min_ns = out->p50_ns = out->p90_ns = out->max_ns = -1;
    return;
  }
  tbe_step_dist d;
  tbe__dist_sort(v, n, &d); /* only to sort: its quartiles interpolate */
  out->min_ns = v[0];
  out->max_ns = v[n - 1];
  out->p50_ns = nearest_rank(v, n, 50);
  out->p90_ns = nearest_rank(v, n, 90);
}

typedef struct validx {
  int64_t v;
  long i;
} validx;

/* Larger value first; ties in index order. */
static int cmp_validx_desc(const void *x, const void *y) {
  const validx *a = x, *b = y;
  if (a->v != b->v) return a->v > b->v ? -1 : 1;
  return (a->i > b->i) - (a->i < b->i);
}

/* figure_dist, comm_dist, order and the outliers (rank_hosts done, two
 * hosts or more).  Linear in the hosts but for three sorts. */
static int spread_hosts(tbe_run_analysis *r) {
  size_t n = r->nhosts;
  int64_t *v = tbe__alloc(&r->alloc_, n * sizeof *v);
  validx *o = tbe__alloc(&r->alloc_, n * sizeof *o);
  r->order = tbe__alloc(&r->alloc_, n * sizeof *r->order);
  if (!v || !o || !r->order) {
    tbe__free(&r->alloc_, v);
    tbe__free(&r->alloc_, o);
    return TBE_ENOMEM;
  }
  for (size_t h = 0; h < n; h++) v[h] = r->hosts[h].an->all.class_ns[TBE_KCLASS_COMM];
  run_spread_of(v, n, &r->comm_dist);
  for (size_t h = 0; h < n; h++) {
    v[h] = figure_of(r, h);
    o[h] = (validx){v[h], (long)h};
  }
  qsort(o, n, sizeof *o, cmp_validx_desc);
  for (size_t h = 0; h < n; h++) r->order[h] = o[h].i;
  run_spread_of(v, n, &r->figure_dist);
  if (n >= TBE_RUN_OUTLIER_MIN_HOSTS) {
    int64_t med = r->figure_dist.p50_ns;
    for (size_t h = 0; h < n; h++) {
      int64_t x = figure_of(r, h);
      v[h] = x > med ? tbe__sat_sub(x, med) : tbe__sat_sub(med, x);
    }
    tbe_run_spread dev;
    run_spread_of(v, n, &dev);
    double lim = TBE_RUN_OUTLIER_MADS * 1.4826 * (double)dev.p50_ns;
    double floor_ = TBE_RUN_OUTLIER_MIN_PCT / 100.0 * (double)(med > 0 ? med : 0);
    if (floor_ > lim) lim = floor_;
    for (size_t h = 0; h < n; h++) {
      int64_t x = figure_of(r, h);
      double d = x > med ? (double)x - (double)med : (double)med - (double)x;
      r->hosts[h].outlier = d > lim;
      r->noutliers += r->hosts[h].outlier;
    }
  }
  tbe__free(&r->alloc_, v);
  tbe__free(&r->alloc_, o);
  return 0;
}

/* ---- create ---- */

static int step_dist_of(tbe_analysis *an) {
  int64_t *v = tbe__alloc(&an->alloc_, (an->nsteps ? an->nsteps : 1) * sizeof *v);
  if (!v) return TBE_ENOMEM;
  for (size_t i = 0; i < an->nsteps; i++) v[i] = an->steps[i].dur_ns;
  tbe__dist_sort(v, an->nsteps, &an->step_dist);
  tbe__free(&an->alloc_, v);
  return 0;
}

/* The launch sequence of the first host (in run order) that has one: the
 * hosts of a data-parallel run launch the same kernels in the same order,
 * and a sequence is about where kernels sit, not how long they take. */
static int merge_launch_seq(tbe_run_analysis *r) {
  tbe_analysis *tot = r->total;
  for (size_t h = 0; h < r->nhosts; h++) {
    const tbe_analysis *an = r->hosts[h].an;
    if (!an->nlaunch_seq) continue;
    tot->launch_seq = tbe__alloc(&tot->alloc_, an->nlaunch_seq * sizeof *tot->launch_seq);
    if (!tot->launch_seq) return TBE_ENOMEM;
    memcpy(tot->launch_seq, an->launch_seq, an->nlaunch_seq * sizeof *tot->launch_seq);
    tot->nlaunch_seq = an->nlaunch_seq;
    return 0;
  }
  return 0;
}

static int merge(tbe_run_analysis *r) {
  int rc = tbe__analysis_blank(&r->total, &r->alloc_);
  if (rc) return rc;
  ((run_priv *)r->priv_)->owns_total = 1;
  long **map = tbe__calloc(&r->alloc_, r->nhosts, sizeof *map);
  if (!map) return TBE_ENOMEM;
  rc = merge_steps(r, map);
  if (!rc) merge_figures(r); /* before the names: the operator merge reads op_gpu_count */
  if (!rc) rc = merge_names(r, map);
  if (!rc) rc = tbe__analysis_metrics_merge(r->total, r->hosts, r->nhosts, map);
  for (size_t h = 0; h < r->nhosts; h++) tbe__free(&r->total->alloc_, map[h]);
  tbe__free(&r->alloc_, map);
  if (rc) return rc;
  rc = step_dist_of(r->total);
  if (!rc) rc = merge_hint(r);
  if (!rc) rc = merge_launch_seq(r);
  return rc;
}

int tbe_run_analysis_create(tbe_run_analysis **out, tbe_analysis *const *an,
                            const char *const *labels, size_t n, const tbe_allocator *a) {
  if (!out) return TBE_EINVAL;
  *out = NULL;
  if (!an || n == 0) return TBE_EINVAL;
  for (size_t i = 0; i < n; i++)
    if (!an[i]) return TBE_EINVAL;
  tbe_allocator al;
  tbe__allocator_init(&al, a);
  tbe_run_analysis *r = tbe__calloc(&al, 1, sizeof *r);
  if (!r) return TBE_ENOMEM;
  r->alloc_ = al;
  r->slowest = r->fastest = -1;
  r->priv_ = tbe__calloc(&r->alloc_, 1, sizeof(run_priv));
  r->hosts = tbe__calloc(&r->alloc_, n, sizeof *r->hosts);
  if (!r->priv_ || !r->hosts) {
    tbe_run_analysis_free(r);
    return TBE_ENOMEM;
  }
  r->nhosts = n;
  for (size_t i = 0; i < n; i++) {
    r->hosts[i].an = an[i];
    r->hosts[i].label = labels && labels[i] ? labels[i] : an[i]->host ? an[i]->host : "";
    r->hosts[i].index = i;
  }
  int rc = 0, distinct = ranks_distinct(r);
  if (distinct < 0) rc = TBE_ENOMEM;
  r->by_rank = distinct > 0;
  qsort(r->hosts, n, sizeof *r->hosts, r->by_rank ? cmp_host_rank : cmp_host_name);
  if (!rc && n == 1) {
    r->total = r->hosts[0].an;
    r->hint_hosts = r->total->step_hint ? 1 : 0;
  } else if (!rc) {
    rc = merge(r);
  }
  if (rc) {
    tbe_run_analysis_free(r);
    return rc;
  }
  rank_hosts(r);
  r->figure_dist.min_ns = r->figure_dist.p50_ns = r->figure_dist.p90_ns = r->figure_dist.max_ns = -1;
  r->comm_dist = r->figure_dist;
  if (n > 1 && (rc = spread_hosts(r))) {
    tbe_run_analysis_free(r);
    return rc;
  }
  *out = r;
  return 0;
}

void tbe_run_analysis_free(tbe_run_analysis *r) {
  if (!r) return;
  tbe_allocator al = r->alloc_;
  if (r->priv_ && ((run_priv *)r->priv_)->owns_total) tbe_analysis_free(r->total);
  tbe__free(&al, r->step_fastest_ns);
  tbe__free(&al, r->order);
  tbe__free(&al, r->hosts);
  tbe__free(&al, r->priv_);
  tbe__free(&al, r);
}

/* ---- comparing two runs ---- */

static double pct_of(int64_t part, int64_t whole) {
  return whole > 0 ? 100.0 * (double)part / (double)whole : 0.0;
}

static int host_pair(tbe_run_diff *d, tbe__mw *mw, long b, long n) {
  tbe_host_diff *p = &d->hosts[d->nhosts++];
  p->host[0] = b;
  p->host[1] = n;
  const tbe_analysis *an[2] = {b >= 0 ? d->side[0]->hosts[b].an : NULL,
                               n >= 0 ? d->side[1]->hosts[n].an : NULL};
  int64_t *v[2] = {NULL, NULL};
  size_t nv[2] = {0, 0};
  int rc = 0;
  for (int s = 0; s < 2; s++) {
    if (!an[s]) continue;
    p->wall_ns[s] = an[s]->wall_ns;
    p->busy_ns[s] = an[s]->all.busy_ns;
    p->kernel_ns[s] = an[s]->all.kernel_ns;
    p->comm_ns[s] = an[s]->all.class_ns[TBE_KCLASS_COMM];
    nv[s] = an[s]->nsteps;
    v[s] = tbe__alloc(&d->alloc_, (nv[s] ? nv[s] : 1) * sizeof *v[s]);
    if (!v[s]) rc = TBE_ENOMEM;
    for (size_t i = 0; v[s] && i < nv[s]; i++) v[s][i] = an[s]->steps[i].dur_ns;
  }
  if (!rc) rc = tbe__step_compare(mw, v[0], nv[0], v[1], nv[1], &p->steps);
  if (!rc && p->steps.dist[0].n && p->steps.dist[1].n) {
    p->has_change = 1;
    p->step_change_ns = tbe__sat_sub(p->steps.dist[1].median_ns, p->steps.dist[0].median_ns);
    p->step_change_pct = pct_of(p->step_change_ns, p->steps.dist[0].median_ns);
  }
  tbe__free(&d->alloc_, v[0]);
  tbe__free(&d->alloc_, v[1]);
  return rc;
}

static int64_t abs_sat(int64_t x) { return x < 0 ? (x == INT64_MIN ? INT64_MAX : -x) : x; }

/* change_dist and order (the pairs made). */
static int order_pairs(tbe_run_diff *d) {
  size_t n = d->nhosts;
  d->change_dist.min_ns = d->change_dist.p50_ns = d->change_dist.p90_ns = d->change_dist.max_ns = -1;
  if (!n) return 0;
  int64_t *v = tbe__alloc(&d->alloc_, n * sizeof *v);
  validx *o = tbe__alloc(&d->alloc_, n * sizeof *o);
  d->order = tbe__alloc(&d->alloc_, n * sizeof *d->order);
  if (!v || !o || !d->order) {
    tbe__free(&d->alloc_, v);
    tbe__free(&d->alloc_, o);
    return TBE_ENOMEM;
  }
  size_t k = 0, m = 0;
  for (size_t i = 0; i < n; i++)
    if (d->hosts[i].has_change) v[k++] = d->hosts[i].step_change_ns;
  run_spread_of(v, k, &d->change_dist);
  /* Three bands, each ordered by its own measure, largest first. */
  for (int band = 0; band < 3; band++) {
    size_t first = m;
    for (size_t i = 0; i < n; i++) {
      const tbe_host_diff *p = &d->hosts[i];
      int matched = p->host[0] >= 0 && p->host[1] >= 0;
      int b = p->has_change ? 0 : matched ? 1 : 2;
      if (b != band) continue;
      int64_t key = band == 0 ? abs_sat(p->step_change_ns)
                  : band == 1 ? abs_sat(tbe__sat_sub(p->wall_ns[1], p->wall_ns[0]))
                              : -(int64_t)i;
      o[m++] = (validx){key, (long)i};
    }
    qsort(o + first, m - first, sizeof *o, cmp_validx_desc);
  }
  for (size_t i = 0; i < n; i++) d->order[i] = o[i].i;
  tbe__free(&d->alloc_, v);
  tbe__free(&d->alloc_, o);
  return 0;
}

static int cmp_idx_name(const void *x, const void *y, void *ctx) {
  const tbe_run_analysis *r = ctx;
  return cmp_by_name(&r->hosts[*(const long *)x], &r->hosts[*(const long *)y]);
}

static int same_host(const tbe_run_host *a, const tbe_run_host *b) {
  size_t la = tbe__host_base_len(a->label), lb = tbe__host_base_len(b->label);
  return la == lb && strncmp(a->label, b->label, la) == 0;
}

/* Pairs hosts; partner[s][i] = index of host i of side s on the other
 * side, or -1. */
static int match_hosts(tbe_run_diff *d, long *partner[2]) {
  const tbe_run_analysis *r0 = d->side[0], *r1 = d->side[1];
  for (int s = 0; s < 2; s++)
    for (size_t i = 0; i < d->side[s]->nhosts; i++) partner[s][i] = -1;
  if (d->by_rank) { /* both sorted by rank */
    size_t j = 0;
    for (size_t i = 0; i < r0->nhosts; i++) {
      int32_t k = r0->hosts[i].an->rank;
      while (j < r1->nhosts && r1->hosts[j].an->rank < k) j++;
      if (j < r1->nhosts && r1->hosts[j].an->rank == k) {
        partner[0][i] = (long)j;
        partner[1][j] = (long)i;
      }
    }
    return 0;
  }
  /* By host name: walk both sides in name order, pairing the processes of
   * one host name in order. */
  long *ord[2];
  for (int s = 0; s < 2; s++) {
    ord[s] = tbe__alloc(&d->alloc_, (d->side[s]->nhosts + 1) * sizeof *ord[s]);
    if (!ord[s]) {
      if (s) tbe__free(&d->alloc_, ord[0]);
      return TBE_ENOMEM;
    }
    for (size_t i = 0; i < d->side[s]->nhosts; i++) ord[s][i] = (long)i;
    qsort_r(ord[s], d->side[s]->nhosts, sizeof *ord[s], cmp_idx_name, (void *)d->side[s]);
  }
  size_t i = 0, j = 0;
  while (i < r0->nhosts && j < r1->nhosts) {
    const tbe_run_host *a = &r0->hosts[ord[0][i]], *b = &r1->hosts[ord[1][j]];
    if (same_host(a, b)) {
      partner[0][ord[0][i]] = ord[1][j];
      partner[1][ord[1][j]] = ord[0][i];
      i++, j++;
      continue;
    }
    size_t la = tbe__host_base_len(a->label), lb = tbe__host_base_len(b->label);
    int c = strncmp(a->label, b->label, la < lb ? la : lb);
    if (c < 0 || (c == 0 && la < lb)) i++;
    else j++;
  }
  tbe__free(&d->alloc_, ord[0]);
  tbe__free(&d->alloc_, ord[1]);
  return 0;
}

int tbe_run_diff_create(tbe_run_diff **out, const tbe_run_analysis *base,
                        const tbe_run_analysis *newer, const tbe_allocator *a) {
  if (!out) return TBE_EINVAL;
  *out = NULL;
  if (!base || !newer) return TBE_EINVAL;
  tbe_allocator al;
  tbe__allocator_init(&al, a);
  tbe_run_diff *d = tbe__calloc(&al, 1, sizeof *d);
  if (!d) return TBE_ENOMEM;
  d->alloc_ = al;
  d->side[0] = base;
  d->side[1] = newer;
  d->by_rank = base->by_rank && newer->by_rank;
  long *partner[2] = {tbe__alloc(&d->alloc_, (base->nhosts + 1) * sizeof(long)),
                      tbe__alloc(&d->alloc_, (newer->nhosts + 1) * sizeof(long))};
  d->hosts = tbe__calloc(&d->alloc_, base->nhosts + newer->nhosts, sizeof *d->hosts);
  tbe__mw mw;
  tbe__mw_init(&mw, &d->alloc_);
  int rc = partner[0] && partner[1] && d->hosts ? 0 : TBE_ENOMEM;
  if (!rc) rc = tbe_diff_create(&d->total, base->total, newer->total, &d->alloc_);
  if (!rc) rc = match_hosts(d, partner);
  for (size_t i = 0; !rc && i < base->nhosts; i++)
    if (partner[0][i] >= 0) {
      rc = host_pair(d, &mw, (long)i, partner[0][i]);
      d->matched++;
    }
  for (size_t i = 0; !rc && i < base->nhosts; i++)
    if (partner[0][i] < 0) {
      rc = host_pair(d, &mw, (long)i, -1);
      d->only[0]++;
    }
  for (size_t j = 0; !rc && j < newer->nhosts; j++)
    if (partner[1][j] < 0) {
      rc = host_pair(d, &mw, -1, (long)j);
      d->only[1]++;
    }
  if (!rc) rc = order_pairs(d);
  tbe__mw_free(&mw);
  tbe__free(&d->alloc_, partner[0]);
  tbe__free(&d->alloc_, partner[1]);
  if (rc) {
    tbe_run_diff_free(d);
    return rc;
  }
  *out = d;
  return 0;
}

void tbe_run_diff_free(tbe_run_diff *d) {
  if (!d) return;
  tbe_allocator al = d->alloc_;
  tbe_diff_free(d->total);
  tbe__free(&al, d->order);
  tbe__free(&al, d->hosts);
  tbe__free(&al, d);
}
