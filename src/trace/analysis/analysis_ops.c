/* analysis_ops.c: the operator figures of an analysis (tbexport/analysis.h,
 * tbe_name_stats: self_cuda_ns, cuda_total_ns, kernels, cuda_step_ns,
 * launched; the table TBE_GROUP_CPU_OP_SHAPE), the counterpart of
 * torch.profiler's key_averages() over any trace we read.
 *
 * The model has already said who launched what (tbe_trace_finish,
 * trace/model/ops.h): every kernel, copy and memset carries the external id
 * of the innermost operator or user annotation open on the thread of the
 * call that launched it.  So, in linear time:
 *   1. index: one walk over the host tracks' events numbers the operators
 *      (TBE_EV_CPU_OP) in event order ("ordinals": an operator's figures
 *      per call live in arrays indexed by it), maps each external id to
 *      its operator (a tbe__map; the first event with an id keeps it;
 *      annotations map to "no operator", so their work counts for none),
 *      and, when any operator records its input shapes ("Input Dims"),
 *      gives each one its entry of the by-shape table, keyed by (name,
 *      shapes in their common spelling: tbe__shapes_canon) in a tbe__map
 *      over the interned shapes;
 *   2. the GPU work: one walk over the GPU tracks adds each activity to
 *      its operator's call (self CUDA of the call), to the call's entries
 *      (self CUDA, kernels) and to an accumulator per (entry, activity
 *      name) found through a tbe__map;
 *   3. the tree: the operators of each thread in order (by start, the
 *      longer first: each comes before what it encloses) with a stack of
 *      the open ones, as the self times of analysis.c nest; a call that
 *      closes adds its CUDA total (its own plus what its children added)
 *      to its parent and to its entries, so every call is touched twice
 *      and nothing walks its ancestors; the by-shape table's CPU figures
 *      (calls, total, self by the same nesting) come from the same walk;
 *   4. the launched lists: the accumulators sorted by (table, entry, time
 *      descending, name), each entry keeping its first TBE_OP_KERNELS_TOP
 *      and the sum of the rest;
 *   5. per step (analysis.c's per_step_names calls tbe__ops_step for each
 *      operator event in event order): the call's CUDA total, and for the
 *      by-shape table its CPU time, in the step where the call starts.
 * Scratch is a few arrays per operator and one accumulator per distinct
 * (entry, activity name), never more than the GPU activities; what the
 * analysis keeps (the launched lists, the per-step CUDA cells, the shapes'
 * text) is three blocks it frees (tbe__analysis_ops_block).
 *
 * The rule for nesting is the one torch.profiler and test/gpu/ops_check.py
 * apply: operators nest by time on their own thread; a call that starts
 * inside another but outlives it (bad input) is still its child, and the
 * CUDA total of an operator nested in one of its own name counts in both
 * (key_averages sums each call's total). */
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/checked.h"
#include "common/intern.h"
#include "common/map.h"
#include "common/torchnvtx.h"
#include "common/vec.h"
#include "tbexport/error.h"
#include "trace/analysis/analysis_int.h"

/* The ext map's value for an annotation: its work belongs to no operator. */
#define NOT_OP (UINT32_MAX - 1)
/* Activity names (tbe_str) for copies and memsets, which every source
 * names its own way ("Memcpy HtoD (Pinned -> Device)", "MemcpyH2D"), so
 * that a trace read back from our outputs lists the same: "Memcpy <kind>"
 * by direction and "Memset"; and for a kernel without a name.  They lie
 * beyond any string id a trace can have. */
#define PSEUDO_BASE ((tbe_str)(UINT32_MAX - 32))
#define PSEUDO_MEMSET (PSEUDO_BASE + 16)
#define PSEUDO_UNNAMED (PSEUDO_BASE + 17)
static const char *const COPY_NAME[TBE_NCOPY_KINDS] = {
    "Memcpy",      "Memcpy HtoD", "Memcpy DtoH", "Memcpy HtoA", "Memcpy AtoH", "Memcpy AtoA",
    "Memcpy AtoD", "Memcpy DtoA", "Memcpy DtoD", "Memcpy HtoH", "Memcpy PtoP"};

typedef struct acc {
  uint32_t table; /* 0: TBE_GROUP_CPU_OP, 1: TBE_GROUP_CPU_OP_SHAPE */
  uint32_t row;
  tbe_str name;
  uint32_t pad;
  uint64_t calls;
  int64_t ns;
} acc;

typedef struct open_op {
  int64_t end;
  uint32_t ord;
} open_op;

struct tbe__ops {
  tbe_analysis *an;
  const tbe_allocator *a;
  size_t nops;
  uint32_t *ev;     /* ordinal -> event index */
  uint32_t *row;    /* ordinal -> entry of groups[TBE_GROUP_CPU_OP] */
  uint32_t *srow;   /* ordinal -> entry of groups[TBE_GROUP_CPU_OP_SHAPE] (NULL: none) */
  int64_t *cuda;    /* ordinal -> the call's self CUDA, after the tree its CUDA total */
  tbe__map ext;     /* external id -> ordinal, or NOT_OP */
  tbe__vec acc;     /* acc */
  tbe__map pair[2]; /* (row << 32 | name) -> index in acc, per table */
  size_t cursor;    /* tbe__ops_step's */
};

static const tbe_group_kind TABLE[2] = {TBE_GROUP_CPU_OP, TBE_GROUP_CPU_OP_SHAPE};

static int is_gpu_work(uint8_t k) {
  return k == TBE_EV_KERNEL || k == TBE_EV_MEMCPY || k == TBE_EV_MEMSET;
}

/* ---- 1. index ---- */

/* The "Input Dims" argument of `e` (JSON or string), NULL without one. */
static const char *input_dims(const tbe_trace *t, const tbe_event *e, tbe_str key, size_t *len) {
  if (key == TBE_NONE || !e->nargs || (size_t)e->args + e->nargs > t->nargs) return NULL;
  for (uint16_t i = 0; i < e->nargs; i++) {
    const tbe_arg *g = &t->args[e->args + i];
    if (g->key != key || (g->type != TBE_ARG_JSON && g->type != TBE_ARG_STR)) continue;
    *len = tbe_trace_strlen(t, g->v.s);
    return tbe_trace_str(t, g->v.s);
  }
  return NULL;
}

/* The entries of the by-shape table, one per (name, shapes); shape[o] is
 * the interned shapes of ordinal o.  Their text goes into an owned block. */
static int shape_rows(tbe__ops *x, const uint32_t *shape, tbe__intern *shp) {
  tbe_analysis *an = x->an;
  const tbe_trace *t = an->trace;
  x->srow = tbe__alloc(x->a, x->nops * sizeof *x->srow);
  if (!x->srow) return TBE_ENOMEM;
  tbe__map key;
  tbe__map_init(&key, x->a, TBE__SEED_PROCESS);
  tbe__vec rows, row_shape; /* tbe_name_stats; uint32_t: an entry's shapes */
  tbe__vec_init(&rows, x->a, sizeof(tbe_name_stats));
  tbe__vec_init(&row_shape, x->a, sizeof(uint32_t));
  int rc = 0;
  for (size_t o = 0; o < x->nops && !rc; o++) {
    const tbe_event *e = &t->events[x->ev[o]];
    int added;
    uint32_t *v = tbe__map_put(&key, (uint64_t)e->name << 32 | shape[o], &added);
    if (v && added) {
      tbe_name_stats *r = TBE__VEC_PUSH(&rows, tbe_name_stats);
      uint32_t *rs = TBE__VEC_PUSH(&row_shape, uint32_t);
      if (r && rs) {
        r->name = e->name;
        r->min_ns = INT64_MAX;
        *rs = shape[o];
        *v = (uint32_t)(rows.n - 1);
      } else {
        v = NULL;
      }
    }
    if (!v)
      rc = TBE_ENOMEM;
    else
      x->srow[o] = *v;
  }
  tbe__map_deinit(&key);
  /* The shapes' text, in one block the analysis keeps. */
  size_t ns = tbe__intern_count(shp), bytes = 1;
  for (size_t i = 0; i < ns; i++) bytes += tbe__intern_len(shp, (uint32_t)i) + 1;
  char *text = rc ? NULL : tbe__alloc(x->a, bytes);
  const char **at = rc ? NULL : tbe__alloc(x->a, (ns + 1) * sizeof *at);
  if (!rc && (!text || !at)) rc = TBE_ENOMEM;
  if (!rc) {
    *tbe__analysis_ops_block(an, TBE__OPS_SHAPES) = text;
    for (size_t i = 0, off = 0; i < ns; i++) {
      size_t n = tbe__intern_len(shp, (uint32_t)i);
      memcpy(text + off, tbe__intern_str(shp, (uint32_t)i), n);
      text[off + n] = '\0';
      at[i] = text + off;
      off += n + 1;
    }
    size_t n = 0;
    tbe_name_stats *r = tbe__vec_take(&rows, &n);
    for (size_t i = 0; i < n; i++) r[i].shapes = at[TBE__VEC_AT(&row_shape, uint32_t, i)];
    an->groups[TBE_GROUP_CPU_OP_SHAPE] = r;
    an->ngroups[TBE_GROUP_CPU_OP_SHAPE] = n;
  } else {
    tbe__free(x->a, text);
  }
  tbe__vec_deinit(&rows);
  tbe__vec_deinit(&row_shape);
  tbe__free(x->a, at);
  return rc;
}

/* The operators of the host tracks, the external-id map, and the by-shape
 * entries when shapes are recorded.  oslot: name id -> entry of
 * groups[TBE_GROUP_CPU_OP] (analysis.c made one for every operator of a
 * host track). */
static int index_ops(tbe__ops *x, const uint32_t *oslot, const int32_t *track_dev) {
  const tbe_trace *t = x->an->trace;
  size_t nops = 0;
  for (size_t k = 0; k < t->nevents; k++)
    nops += t->events[k].kind == TBE_EV_CPU_OP && track_dev[t->events[k].track] < 0;
  x->nops = nops;
  if (!nops) return 0;
  x->ev = tbe__alloc(x->a, nops * sizeof *x->ev);
  x->row = tbe__alloc(x->a, nops * sizeof *x->row);
  x->cuda = tbe__calloc(x->a, nops, sizeof *x->cuda);
  uint32_t *shape = tbe__alloc(x->a, nops * sizeof *shape);
  tbe__intern shp;
  tbe__intern_init(&shp, x->a, TBE__SEED_PROCESS);
  char small[512], *buf = small;
  size_t bufsize = sizeof small;
  int rc = x->ev && x->row && x->cuda && shape ? 0 : TBE_ENOMEM;
  tbe_str dims = tbe_trace_find_str(t, "Input Dims", 10);
  int any_shapes = 0;
  size_t o = 0;
  for (size_t k = 0; k < t->nevents && !rc; k++) {
    const tbe_event *e = &t->events[k];
    int op = e->kind == TBE_EV_CPU_OP, ann = e->kind == TBE_EV_USER_ANNOTATION;
    if ((!op && !ann) || track_dev[e->track] >= 0) continue;
    if (e->external_id) {
      int added;
      uint32_t *v = tbe__map_put(&x->ext, e->external_id, &added);
      if (!v)
        rc = TBE_ENOMEM;
      else if (added)
        *v = op ? (uint32_t)o : NOT_OP;
    }
    if (!op || rc) continue;
    x->ev[o] = (uint32_t)k;
    x->row[o] = oslot[e->name];
    size_t len = 0;
    const char *sh = input_dims(t, e, dims, &len);
    size_t cl = 0;
    if (sh) {
      any_shapes = 1;
      cl = tbe__shapes_canon(sh, len, buf, bufsize);
      if (cl > bufsize) {
        char *nb = tbe__alloc(x->a, cl);
        if (!nb) {
          rc = TBE_ENOMEM;
          break;
        }
        if (buf != small) tbe__free(x->a, buf);
        buf = nb;
        bufsize = cl;
        tbe__shapes_canon(sh, len, buf, bufsize);
      }
    }
    int added;
    rc = tbe__intern_add(&shp, buf, cl, &shape[o], &added);
    o++;
  }
  if (!rc && any_shapes) rc = shape_rows(x, shape, &shp);
  if (buf != small) tbe__free(x->a, buf);
  tbe__intern_deinit(&shp);
  tbe__free(x->a, shape);
  return rc;
}

/* ---- 2. the GPU work ---- */

static int add_acc(tbe__ops *x, int table, uint32_t row, tbe_str name, int64_t dur) {
  int added;
  uint32_t *v = tbe__map_put(&x->pair[table], (uint64_t)row << 32 | name, &added);
  if (!v) return TBE_ENOMEM;
  if (added) {
    acc *a = TBE__VEC_PUSH(&x->acc, acc);
    if (!a) return TBE_ENOMEM;
    a->table = (uint32_t)table;
    a->row = row;
    a->name = name;
    *v = (uint32_t)(x->acc.n - 1);
  }
  acc *a = &TBE__VEC_AT(&x->acc, acc, *v);
  a->calls++;
  a->ns = tbe__sat_add(a->ns, dur);
  return 0;
}

static void add_cuda(tbe_name_stats *r, int64_t dur) {
  r->self_cuda_ns = tbe__sat_add(r->self_cuda_ns, dur);
  r->kernels++;
}

static int gpu_work(tbe__ops *x, const int32_t *track_dev) {
  tbe_analysis *an = x->an;
  const tbe_trace *t = an->trace;
  for (size_t i = 0; i < t->ntracks; i++) {
    if (track_dev[i] < 0) continue;
    const tbe_track *tr = &t->tracks[i];
    for (uint32_t j = 0; j < tr->count; j++) {
      const tbe_event *e = &t->events[tr->first + j];
      if (!is_gpu_work(e->kind) || !e->external_id) continue;
      const uint32_t *v = tbe__map_get(&x->ext, e->external_id);
      if (!v || *v == NOT_OP) continue;
      uint32_t o = *v;
      int64_t dur = e->dur_ns;
      tbe_str name = e->name ? e->name : PSEUDO_UNNAMED;
      if (e->kind == TBE_EV_MEMSET) {
        name = PSEUDO_MEMSET;
      } else if (e->kind == TBE_EV_MEMCPY) {
        const tbe_memcpy *m = tbe_trace_memcpy(t, e);
        name = PSEUDO_BASE + (m && m->copy_kind < TBE_NCOPY_KINDS ? m->copy_kind : 0);
      }
      x->cuda[o] = tbe__sat_add(x->cuda[o], dur);
      an->op_gpu_count++;
      an->op_gpu_ns = tbe__sat_add(an->op_gpu_ns, dur);
      add_cuda(&an->groups[TBE_GROUP_CPU_OP][x->row[o]], dur);
      int rc = add_acc(x, 0, x->row[o], name, dur);
      if (!rc && x->srow) {
        add_cuda(&an->groups[TBE_GROUP_CPU_OP_SHAPE][x->srow[o]], dur);
        rc = add_acc(x, 1, x->srow[o], name, dur);
      }
      if (rc) return rc;
    }
  }
  return 0;
}

/* ---- 3. the tree ---- */

/* Ordinal `o` closes: its CUDA total goes to its entries and its parent
 * (the stack's new top). */
static void close_op(tbe__ops *x, tbe__vec *stack, uint32_t o) {
  tbe_analysis *an = x->an;
  int64_t tot = x->cuda[o];
  tbe_name_stats *r = &an->groups[TBE_GROUP_CPU_OP][x->row[o]];
  r->cuda_total_ns = tbe__sat_add(r->cuda_total_ns, tot);
  if (x->srow) {
    r = &an->groups[TBE_GROUP_CPU_OP_SHAPE][x->srow[o]];
    r->cuda_total_ns = tbe__sat_add(r->cuda_total_ns, tot);
  }
  if (stack->n) {
    uint32_t p = TBE__VEC_AT(stack, open_op, stack->n - 1).ord;
    x->cuda[p] = tbe__sat_add(x->cuda[p], tot);
  }
}

static void pop_until(tbe__ops *x, tbe__vec *stack, int64_t start) {
  while (stack->n && TBE__VEC_AT(stack, open_op, stack->n - 1).end <= start) {
    uint32_t o = TBE__VEC_AT(stack, open_op, stack->n - 1).ord;
    stack->n--;
    close_op(x, stack, o);
  }
}

static int tree(tbe__ops *x) {
  tbe_analysis *an = x->an;
  const tbe_trace *t = an->trace;
  tbe__vec stack;
  tbe__vec_init(&stack, x->a, sizeof(open_op));
  uint32_t track = UINT32_MAX;
  int rc = 0;
  for (size_t o = 0; o < x->nops; o++) {
    const tbe_event *e = &t->events[x->ev[o]];
    if (e->track != track) {
      pop_until(x, &stack, INT64_MAX);
      track = e->track;
    }
    int64_t st = e->start_ns, en = tbe__end_ns(e->start_ns, e->dur_ns);
    pop_until(x, &stack, st);
    if (x->srow) { /* the by-shape table's CPU figures, nested as analysis.c's */
      tbe_name_stats *r = &an->groups[TBE_GROUP_CPU_OP_SHAPE][x->srow[o]];
      r->calls++;
      r->total_ns = tbe__sat_add(r->total_ns, e->dur_ns);
      r->self_ns = tbe__sat_add(r->self_ns, e->dur_ns);
      if (e->dur_ns < r->min_ns) r->min_ns = e->dur_ns;
      if (e->dur_ns > r->max_ns) r->max_ns = e->dur_ns;
      if (stack.n) {
        const open_op *top = &TBE__VEC_AT(&stack, open_op, stack.n - 1);
        int64_t ov = tbe__sat_sub(en < top->end ? en : top->end, st);
        tbe_name_stats *p = &an->groups[TBE_GROUP_CPU_OP_SHAPE][x->srow[top->ord]];
        if (ov > 0) p->self_ns = tbe__sat_sub(p->self_ns, ov);
      }
    }
    open_op *n = TBE__VEC_PUSH(&stack, open_op);
    if (!n) {
      rc = TBE_ENOMEM;
      break;
    }
    n->end = en;
    n->ord = (uint32_t)o;
  }
  if (!rc) pop_until(x, &stack, INT64_MAX);
  tbe__vec_deinit(&stack);
  return rc;
}

/* ---- 4. the launched lists ---- */

static const char *acc_name(const tbe_trace *t, tbe_str n) {
  if (n == PSEUDO_MEMSET) return "Memset";
  if (n == PSEUDO_UNNAMED) return "";
  if (n >= PSEUDO_BASE && n < PSEUDO_BASE + TBE_NCOPY_KINDS) return COPY_NAME[n - PSEUDO_BASE];
  return tbe_trace_str(t, n);
}

static int cmp_acc(const void *p, const void *q, void *ctx) {
  const tbe_trace *t = ctx;
  const acc *a = p, *b = q;
  if (a->table != b->table) return a->table < b->table ? -1 : 1;
  if (a->row != b->row) return a->row < b->row ? -1 : 1;
  if (a->ns != b->ns) return a->ns > b->ns ? -1 : 1;
  return strcmp(acc_name(t, a->name), acc_name(t, b->name));
}

static int launched(tbe__ops *x) {
  tbe_analysis *an = x->an;
  const tbe_trace *t = an->trace;
  size_t n = x->acc.n;
  if (!n) return 0;
  acc *v = x->acc.data;
  qsort_r(v, n, sizeof *v, cmp_acc, (void *)t);
  size_t keep = 0;
  for (size_t i = 0, run = 0; i < n; i++) {
    run = i && v[i].table == v[i - 1].table && v[i].row == v[i - 1].row ? run + 1 : 0;
    keep += run < TBE_OP_KERNELS_TOP;
  }
  tbe_op_kernel *out = tbe__alloc(x->a, keep * sizeof *out);
  if (!out) return TBE_ENOMEM;
  *tbe__analysis_ops_block(an, TBE__OPS_LAUNCHED) = out;
  for (size_t i = 0, run = 0; i < n; i++) {
    run = i && v[i].table == v[i - 1].table && v[i].row == v[i - 1].row ? run + 1 : 0;
    tbe_name_stats *r = &an->groups[TABLE[v[i].table]][v[i].row];
    if (run < TBE_OP_KERNELS_TOP) {
      if (!run) r->launched = out;
      out->name = acc_name(t, v[i].name);
      out->calls = v[i].calls;
      out->total_ns = v[i].ns;
      out++;
      r->nlaunched++;
    } else {
      r->launched_other_calls += v[i].calls;
      r->launched_other_ns = tbe__sat_add(r->launched_other_ns, v[i].ns);
    }
  }
  return 0;
}

/* ---- 4b. each kernel's operator ---- */

/* tbe_name_stats.launch_op of the kernels: of the operators (by name)
 * that launched a kernel, the one with the most of its GPU time (ties: the
 * name first in byte order); one pass over the accumulators of the table
 * by name, whose kernel entries kslot finds (copies and memsets have
 * pseudo names beyond any string id). */
static int kernel_ops(tbe__ops *x, const uint32_t *kslot) {
  tbe_analysis *an = x->an;
  const tbe_trace *t = an->trace;
  size_t nk = an->ngroups[TBE_GROUP_KERNEL], nstr = tbe_trace_nstrings(t);
  if (!nk || !x->acc.n) return 0;
  int64_t *best = tbe__alloc(x->a, nk * sizeof *best);
  if (!best) return TBE_ENOMEM;
  for (size_t i = 0; i < nk; i++) best[i] = -1;
  for (size_t i = 0; i < x->acc.n; i++) {
    const acc *v = &TBE__VEC_AT(&x->acc, acc, i);
    if (v->table != 0 || v->name >= nstr || kslot[v->name] == UINT32_MAX) continue;
    uint32_t k = kslot[v->name];
    tbe_name_stats *ke = &an->groups[TBE_GROUP_KERNEL][k];
    const char *op = tbe_trace_str(t, an->groups[TBE_GROUP_CPU_OP][v->row].name);
    if (!ke->launch_op || v->ns > best[k] || (v->ns == best[k] && strcmp(op, ke->launch_op) < 0)) {
      best[k] = v->ns;
      ke->launch_op = op;
    }
  }
  tbe__free(x->a, best);
  return 0;
}

/* ---- the steps and the entry points ---- */

int tbe__ops_create(tbe__ops **out, tbe_analysis *an, const uint32_t *oslot, const uint32_t *kslot,
                    const int32_t *track_dev) {
  *out = NULL;
  tbe__ops *x = tbe__calloc(&an->alloc_, 1, sizeof *x);
  if (!x) return TBE_ENOMEM;
  x->an = an;
  x->a = &an->alloc_;
  tbe__map_init(&x->ext, x->a, TBE__SEED_PROCESS);
  tbe__map_init(&x->pair[0], x->a, TBE__SEED_PROCESS);
  tbe__map_init(&x->pair[1], x->a, TBE__SEED_PROCESS);
  tbe__vec_init(&x->acc, x->a, sizeof(acc));
  *out = x;
  int rc = index_ops(x, oslot, track_dev);
  if (!rc && x->nops) rc = gpu_work(x, track_dev);
  if (!rc && x->nops) rc = tree(x);
  if (!rc) rc = kernel_ops(x, kslot);
  if (!rc) rc = launched(x);
  /* What only the steps still need: the ordinals' events and totals. */
  tbe__map_deinit(&x->ext);
  tbe__map_deinit(&x->pair[0]);
  tbe__map_deinit(&x->pair[1]);
  tbe__vec_deinit(&x->acc);
  return rc;
}

int tbe__ops_step_cells(tbe__ops *x, size_t nsteps) {
  if (!x) return 0;
  tbe_analysis *an = x->an;
  size_t rows = an->ngroups[TBE_GROUP_CPU_OP] + an->ngroups[TBE_GROUP_CPU_OP_SHAPE];
  if (!an->op_gpu_count || !nsteps || !rows || rows > TBE__STEP_CELLS_MAX / nsteps) return 0;
  int64_t *q = tbe__calloc(x->a, rows * nsteps, sizeof *q);
  if (!q) return TBE_ENOMEM;
  *tbe__analysis_ops_block(an, TBE__OPS_STEP_CELLS) = q;
  for (int k = 0; k < 2; k++)
    for (size_t i = 0; i < an->ngroups[TABLE[k]]; i++, q += nsteps)
      an->groups[TABLE[k]][i].cuda_step_ns = q;
  return 0;
}

void tbe__ops_step(tbe__ops *x, size_t event, long si, int64_t dur) {
  if (!x) return;
  while (x->cursor < x->nops && x->ev[x->cursor] < event) x->cursor++;
  if (x->cursor >= x->nops || x->ev[x->cursor] != event || si < 0) return;
  size_t o = x->cursor;
  tbe_analysis *an = x->an;
  tbe_name_stats *r = &an->groups[TBE_GROUP_CPU_OP][x->row[o]];
  if (r->cuda_step_ns) r->cuda_step_ns[si] = tbe__sat_add(r->cuda_step_ns[si], x->cuda[o]);
  if (!x->srow) return;
  r = &an->groups[TBE_GROUP_CPU_OP_SHAPE][x->srow[o]];
  if (r->step_ns) r->step_ns[si] = tbe__sat_add(r->step_ns[si], dur);
  if (r->cuda_step_ns) r->cuda_step_ns[si] = tbe__sat_add(r->cuda_step_ns[si], x->cuda[o]);
}

void tbe__ops_free(tbe__ops *x) {
  if (!x) return;
  const tbe_allocator *a = x->a;
  tbe__free(a, x->ev);
  tbe__free(a, x->row);
  tbe__free(a, x->srow);
  tbe__free(a, x->cuda);
  tbe__map_deinit(&x->ext);
  tbe__map_deinit(&x->pair[0]);
  tbe__map_deinit(&x->pair[1]);
  tbe__vec_deinit(&x->acc);
  tbe__free(a, x);
}
