/* ops.c: framework operators in the model (ops.h).
 *
 * The links are made in one pass per host thread over the finished order
 * (by start, the longer first, so an operator comes before what it
 * encloses), with a stack of the operators still open; then one pass over
 * the GPU work, which takes its launching call's id through the
 * correlation link; then the forward-backward links, by sorting the
 * operators that carry a sequence number by (process, number, end). */
#include "trace/model/ops.h"

#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/checked.h"
#include "common/map.h"
#include "common/torchnvtx.h"
#include "tbexport/error.h"
#include "trace/model/model_int.h"

/* ---- classification ---- */

static int has_ns(const char *s, size_t n) {
  for (size_t i = 0; i + 1 < n; i++)
    if (s[i] == ':' && s[i + 1] == ':') return 1;
  return 0;
}

/* "...Backward" with optional digits at the end, after an identifier. */
static int backward_node(const char *s, size_t n) {
  size_t e = n;
  while (e > 0 && s[e - 1] >= '0' && s[e - 1] <= '9') e--;
  static const char bw[] = "Backward";
  const size_t bl = sizeof bw - 1;
  if (e <= bl || memcmp(s + e - bl, bw, bl) != 0) return 0;
  for (size_t i = 0; i < e - bl; i++) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
      return 0;
  }
  return 1;
}

/* PyTorch's operators whose record has no namespace (autograd's own). */
static int bare_op(const char *s, size_t n) {
  return (n == 6 && memcmp(s, "detach", 6) == 0) || (n == 7 && memcmp(s, "detach_", 7) == 0);
}

#define EVAL_FN "autograd::engine::evaluate_function: "

int tbe__op_is_backward(const char *name) {
  size_t n = strlen(name), el = sizeof EVAL_FN - 1;
  if (n > el && memcmp(name, EVAL_FN, el) == 0) return 1;
  return backward_node(name, n);
}

int tbe__trace_add_torch_op(tbe_trace *t, uint32_t track, int64_t start, int64_t dur,
                            const char *name, size_t nlen, const char *shapes, size_t slen,
                            int64_t seq, uint8_t flags, uint32_t *index) {
  tbe_event ev;
  memset(&ev, 0, sizeof ev);
  ev.start_ns = start;
  ev.dur_ns = dur < 0 ? 0 : dur;
  ev.track = track;
  ev.link = TBE_NONE;
  ev.flags = flags;
  ev.kind = has_ns(name, nlen) || backward_node(name, nlen) || bare_op(name, nlen)
                ? TBE_EV_CPU_OP
                : TBE_EV_USER_ANNOTATION;
  int rc = tbe_trace_intern(t, name, nlen, &ev.name);
  tbe_arg args[2];
  size_t na = 0;
  if (!rc && shapes) {
    char buf[512], *canon = buf;
    size_t cl = tbe__shapes_canon(shapes, slen, buf, sizeof buf);
    if (cl > sizeof buf) {
      canon = malloc(cl);
      if (!canon) return TBE_ENOMEM;
      tbe__shapes_canon(shapes, slen, canon, cl);
    }
    args[na].key = tbe_trace_str_id(t, "Input Dims");
    args[na].type = TBE_ARG_JSON;
    rc = tbe_trace_intern(t, canon, cl, &args[na].v.s);
    na++;
    if (canon != buf) free(canon);
  }
  if (!rc && seq >= 0) {
    args[na].key = tbe_trace_str_id(t, "Sequence number");
    args[na].type = TBE_ARG_INT;
    args[na].v.i = seq;
    na++;
  }
  if (!rc) rc = tbe_trace_error(t);
  if (!rc) rc = tbe_trace_add_event(t, &ev, NULL, na ? args : NULL, na, index);
  return rc;
}

/* ---- the links ---- */

/* Operators and annotations on a host thread; not what marks a step
 * (ProfilerStep#N, or the event a step was read from): our outputs add and
 * reshape those for the clients, so a trace read back would otherwise link
 * to what its first reading did not have.  `steps` maps a step's start to
 * its index (NULL: no steps). */
static int op_like_in(const tbe_trace *t, const tbe_event *e, const tbe__map *steps) {
  if (e->kind != TBE_EV_CPU_OP && e->kind != TBE_EV_USER_ANNOTATION) return 0;
  if (t->tracks[e->track].type == TBE_TRACK_STREAM) return 0;
  if (e->kind == TBE_EV_CPU_OP) return 1;
  if (strncmp(tbe_trace_str(t, e->name), "ProfilerStep#", 13) == 0) return 0;
  const uint32_t *s = steps ? tbe__map_get(steps, (uint64_t)e->start_ns) : NULL;
  if (s) {
    const tbe_step *st = &t->steps[*s];
    if ((st->track == TBE_NONE || st->track == e->track) &&
        st->end_ns == tbe__end_ns(e->start_ns, e->dur_ns))
      return 0;
  }
  return 1;
}

static int op_like(const tbe_trace *t, const tbe_event *e) { return op_like_in(t, e, NULL); }

static int is_api(uint8_t k) { return k == TBE_EV_RUNTIME || k == TBE_EV_DRIVER; }

static int link_calls(tbe_trace *t, const tbe__map *steps);

/* Ids for the operators without one, and the calls made inside them. */
static int attribute_calls(tbe_trace *t) {
  const tbe_allocator *a = tbe__trace_allocator(t);
  tbe__map steps;
  tbe__map_init(&steps, a, TBE__SEED_PROCESS);
  for (size_t s = 0; s < t->nsteps; s++) {
    int added;
    uint32_t *v = tbe__map_put(&steps, (uint64_t)t->steps[s].start_ns, &added);
    if (!v) {
      tbe__map_deinit(&steps);
      return TBE_ENOMEM;
    }
    if (added) *v = (uint32_t)s;
  }
  int rc = link_calls(t, &steps);
  tbe__map_deinit(&steps);
  return rc;
}

static int link_calls(tbe_trace *t, const tbe__map *steps) {
  uint64_t top = 0;
  size_t nops = 0;
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_event *e = &t->events[i];
    if (e->external_id > top) top = e->external_id;
    nops += op_like_in(t, e, steps);
  }
  if (!nops) return 0;
  const tbe_allocator *a = tbe__trace_allocator(t);
  uint32_t *stack = NULL;
  size_t cap = 0;
  for (size_t k = 0; k < t->ntracks; k++) {
    const tbe_track *tr = &t->tracks[k];
    if (tr->type == TBE_TRACK_STREAM) continue;
    size_t sp = 0;
    for (uint32_t j = 0; j < tr->count; j++) {
      uint32_t i = tr->first + j;
      tbe_event *e = &t->events[i];
      while (sp > 0) {
        const tbe_event *o = &t->events[stack[sp - 1]];
        if (tbe__end_ns(o->start_ns, o->dur_ns) > e->start_ns) break;
        sp--;
      }
      if (op_like_in(t, e, steps)) {
        if (!e->external_id) e->external_id = ++top;
        if (e->flags & TBE_EVF_ASYNC) continue;
        if (sp == cap) {
          size_t nc = cap ? cap * 2 : 64;
          uint32_t *x = tbe__realloc(a, stack, cap * sizeof *x, nc * sizeof *x);
          if (!x) {
            tbe__free(a, stack);
            return TBE_ENOMEM;
          }
          stack = x, cap = nc;
        }
        stack[sp++] = i;
      } else if (is_api(e->kind) && !e->external_id && sp > 0) {
        e->external_id = t->events[stack[sp - 1]].external_id;
      }
    }
  }
  tbe__free(a, stack);
  /* GPU work: its launching call's id. */
  for (size_t i = 0; i < t->nevents; i++) {
    tbe_event *e = &t->events[i];
    if (e->external_id || e->link == TBE_NONE || !tbe_event_kind_is_gpu(e->kind)) continue;
    const tbe_event *call = &t->events[e->link];
    if (is_api(call->kind)) e->external_id = call->external_id;
  }
  return 0;
}

/* ---- forward -> backward ---- */

typedef struct seqop {
  int64_t pid, seq, start, end;
  uint32_t index;
  uint8_t backward;
} seqop;

static int cmp_seqop(const void *pa, const void *pb) {
  const seqop *x = pa, *y = pb;
  if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
  if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
  if (x->end != y->end) return x->end < y->end ? -1 : 1;
  return (x->index > y->index) - (x->index < y->index);
}

static int has_flows_of(const tbe_trace *t, tbe_str cat) {
  for (size_t i = 0; i < t->nflows; i++)
    if (t->flows[i].cat == cat) return 1;
  return 0;
}

static int seq_of(const tbe_trace *t, const tbe_event *e, tbe_str key, int64_t *seq) {
  for (uint16_t k = 0; k < e->nargs; k++) {
    const tbe_arg *g = &t->args[e->args + k];
    if (g->key == key && (g->type == TBE_ARG_INT || g->type == TBE_ARG_UINT) && g->v.i >= 0) {
      *seq = g->v.i;
      return 1;
    }
  }
  return 0;
}

static int link_fwd_bwd(tbe_trace *t) {
  tbe_str fb = tbe_trace_find_str(t, "fwdbwd", 6);
  if (fb != TBE_NONE && has_flows_of(t, fb)) return 0;
  tbe_str key = tbe_trace_find_str(t, "Sequence number", 15);
  if (key == TBE_NONE) return 0;
  const tbe_allocator *a = tbe__trace_allocator(t);
  size_t n = 0, cap = 0;
  seqop *v = NULL;
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_event *e = &t->events[i];
    int64_t seq;
    if (e->kind != TBE_EV_CPU_OP || !e->nargs || !op_like(t, e) || !seq_of(t, e, key, &seq))
      continue;
    if (n == cap) {
      size_t nc = cap ? cap * 2 : 256;
      seqop *x = tbe__realloc(a, v, cap * sizeof *x, nc * sizeof *x);
      if (!x) {
        tbe__free(a, v);
        return TBE_ENOMEM;
      }
      v = x, cap = nc;
    }
    v[n++] = (seqop){t->tracks[e->track].pid, seq, e->start_ns,
                     tbe__end_ns(e->start_ns, e->dur_ns), (uint32_t)i,
                     (uint8_t)tbe__op_is_backward(tbe_trace_str(t, e->name))};
  }
  int rc = 0;
  if (n) {
    qsort(v, n, sizeof *v, cmp_seqop);
    tbe_str cat = tbe_trace_str_id(t, "fwdbwd");
    uint64_t id = 0;
    for (size_t g = 0; g < n && !rc;) {
      size_t h = g;
      long fwd = -1; /* the candidate forward operator of this (pid, seq) */
      for (; h < n && v[h].pid == v[g].pid && v[h].seq == v[g].seq && !rc; h++) {
        if (!v[h].backward) {
          if (fwd < 0 || v[h].start >= v[fwd].start) fwd = (long)h;
          continue;
        }
        if (fwd < 0) continue;
        const tbe_event *f = &t->events[v[fwd].index], *b = &t->events[v[h].index];
        tbe_flow fl = {++id, cat, cat, f->track, b->track, f->start_ns, b->start_ns, 1};
        rc = tbe_trace_add_flow(t, &fl);
        fwd = -1; /* each forward operator gives one link */
      }
      g = h;
    }
    if (!rc) rc = tbe_trace_error(t);
  }
  tbe__free(a, v);
  return rc;
}

int tbe__trace_link_ops(tbe_trace *t) {
  int rc = attribute_calls(t);
  if (!rc) rc = link_fwd_bwd(t);
  return rc;
}
