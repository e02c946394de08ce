/* comm.c: nccl:<op> operators around the launches of NCCL kernels, the
 * backend and the one-line note of a run without GPU communication
 * (comm.h).
 *
 * The pass, on the finished order (by track, start, longer first; an
 * operator before a call of the same span):
 *   1. one pass over the events: the NCCL kernels, each one's launching
 *      call (event.link) and its collective; the external ids of the
 *      nccl:* operators already there; whether a gloo:* operator is;
 *   2. one pass over the GPU work: a call that launched anything but NCCL
 *      kernels of one collective is no candidate;
 *   3. one pass per host thread with a stack of the nccl:* operators
 *      still open: a candidate call inside one is left alone;
 *   4. the operators added (after the passes: adding may move the events
 *      array), each with the next free external id, given to its call and
 *      the call's kernels.
 * Work and memory grow with the events (one map entry per candidate call),
 * and a trace without an NCCL kernel stops after pass 1. */
#include "trace/model/comm.h"

#include <stdio.h>
#include <string.h>

#include "common/checked.h"
#include "common/map.h"
#include "common/vec.h"
#include "tbexport/error.h"
#include "trace/model/model_int.h"

/* ---- NCCL kernels ---- */

/* The collectives by the CamelCase word NCCL's kernel names carry, a word
 * before any word it begins (ReduceScatter before Reduce, SendRecv before
 * Send). */
static const struct {
  const char *camel, *op;
} COLLECTIVES[] = {
    {"AllReduce", "all_reduce"},
    {"AllGather", "all_gather"},
    {"ReduceScatter", "reduce_scatter"},
    {"AllToAll", "all_to_all"},
    {"Broadcast", "broadcast"},
    {"Reduce", "reduce"},
    {"SendRecv", "send_recv"},
    {"Send", "send"},
    {"Recv", "recv"},
};

static int is_upper(char c) { return c >= 'A' && c <= 'Z'; }
static int is_lower_or_digit(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

size_t tbe__nccl_kernel_op(const char *name, char *out, size_t size) {
  if (!name || !out || size < 16) return 0;
  if (strncmp(name, "void ", 5) == 0) name += 5;
  if (strncmp(name, "nccl", 4) != 0) return 0;
  const char *p = name + 4;
  if (strncmp(p, "DevKernel_", 10) == 0)
    p += 10; /* NCCL 2.19 on */
  else if (strncmp(p, "Kernel_", 7) == 0)
    p += 7; /* 2.7 to 2.18 */
  for (size_t i = 0; i < sizeof COLLECTIVES / sizeof COLLECTIVES[0]; i++) {
    size_t n = strlen(COLLECTIVES[i].camel);
    if (strncmp(p, COLLECTIVES[i].camel, n) == 0) {
      size_t l = strlen(COLLECTIVES[i].op);
      memcpy(out, COLLECTIVES[i].op, l + 1);
      return l;
    }
  }
  /* Another word ("Generic"): in snake case, up to the first character
   * that is neither a letter nor a digit. */
  size_t l = 0;
  for (size_t i = 0; (is_upper(p[i]) || is_lower_or_digit(p[i])) && l + 2 < size && i < 40; i++) {
    if (is_upper(p[i]) && i > 0 && is_lower_or_digit(p[i - 1])) out[l++] = '_';
    out[l++] = is_upper(p[i]) ? (char)(p[i] - 'A' + 'a') : p[i];
  }
  if (!l) {
    memcpy(out, "kernel", 7);
    return 6;
  }
  out[l] = 0;
  return l;
}

/* ---- the note and the backend ---- */

static int op_like(uint8_t kind) { return kind == TBE_EV_CPU_OP || kind == TBE_EV_USER_ANNOTATION; }
static int is_api(uint8_t kind) { return kind == TBE_EV_RUNTIME || kind == TBE_EV_DRIVER; }

static int named(const tbe_trace *t, const tbe_event *e, const char *prefix, size_t n) {
  return strncmp(tbe_trace_str(t, e->name), prefix, n) == 0;
}

/* A run of several ranks: its world holds more than one, or the rank is
 * above 0 in a world of unknown size. */
static int distributed(const tbe_trace *t) {
  return t->rank >= 0 && (t->world_size > 1 || (t->world_size == 0 && t->rank > 0));
}

/* The note's words do not name the rank, so that a run's ranks say the
 * same line (a report may group them). */
static int settle_dist(tbe_trace *t, int nccl, int gloo) {
  if (!t->dist_backend && t->rank >= 0 && (nccl || gloo))
    t->dist_backend = tbe_trace_str_id(t, nccl ? "nccl" : "gloo");
  int rc = tbe_trace_error(t);
  if (rc || nccl || !distributed(t)) return rc;
  char world[48];
  if (t->world_size > 0)
    snprintf(world, sizeof world, "one of %d ranks", (int)t->world_size);
  else
    snprintf(world, sizeof world, "one of several ranks");
  const char *be = t->dist_backend ? tbe_trace_str(t, t->dist_backend) : "";
  if (strcmp(be, "nccl") == 0)
    return tbe_trace_warn(
        t,
        "no NCCL kernel in this rank's trace (%s, backend nccl): no "
        "communication in the profiled window, so no GPU communication to analyse",
        world);
  return tbe_trace_warn(t,
                        "no NCCL kernel in this rank's trace (%s): its communication is on the "
                        "CPU (%s) or absent, so there is no GPU communication to analyse",
                        world, *be ? be : "gloo");
}

/* ---- the wrappers ---- */

/* A launching call of NCCL kernels. */
typedef struct cand {
  uint32_t call; /* event index */
  tbe_str op;    /* "nccl:<op>" */
  uint8_t skip;  /* not wrapped: inside one already, or other GPU work */
  uint64_t id;   /* the new external id */
} cand;

int tbe__trace_comm(tbe_trace *t, size_t *added) {
  *added = 0;
  const tbe_allocator *a = tbe__trace_allocator(t);
  /* 1. NCCL kernels, their calls, the nccl:* operators' ids, gloo. */
  int gloo = 0;
  uint64_t top = 0;
  size_t nnccl = 0;
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_event *e = &t->events[i];
    if (e->external_id > top) top = e->external_id;
    char op[64];
    if (e->kind == TBE_EV_KERNEL && tbe__nccl_kernel_op(tbe_trace_str(t, e->name), op, sizeof op))
      nnccl++;
    else if (op_like(e->kind) && !gloo)
      gloo = named(t, e, "gloo:", 5);
  }
  int rc = settle_dist(t, nnccl > 0, gloo);
  if (rc || !nnccl) return rc;

  tbe__map wrapped_ids, calls; /* external ids of nccl:* ops; call -> index in `cands` */
  tbe__map_init(&wrapped_ids, a, TBE__SEED_PROCESS);
  tbe__map_init(&calls, a, TBE__SEED_PROCESS);
  tbe__vec cands;
  tbe__vec_init(&cands, a, sizeof(cand));
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_event *e = &t->events[i];
    if (op_like(e->kind) && e->external_id && named(t, e, "nccl:", 5))
      tbe__map_put(&wrapped_ids, e->external_id, NULL);
  }
  for (size_t i = 0; i < t->nevents && !rc; i++) {
    const tbe_event *e = &t->events[i];
    char op[70] = "nccl:";
    if (e->kind != TBE_EV_KERNEL || e->link == TBE_NONE || !is_api(t->events[e->link].kind))
      continue;
    size_t ol = tbe__nccl_kernel_op(tbe_trace_str(t, e->name), op + 5, sizeof op - 5);
    if (!ol) continue;
    tbe_str opid;
    if ((rc = tbe_trace_intern(t, op, 5 + ol, &opid))) break;
    int fresh;
    uint32_t *v = tbe__map_put(&calls, e->link, &fresh);
    if (!v) break;
    if (fresh) {
      cand *c = TBE__VEC_PUSH(&cands, cand);
      if (!c) break;
      c->call = e->link;
      c->op = opid;
      *v = (uint32_t)(cands.n - 1);
    }
    cand *c = &TBE__VEC_AT(&cands, cand, *v);
    if (c->op != opid || (e->external_id && tbe__map_get(&wrapped_ids, e->external_id)))
      c->skip = 1; /* two collectives under one call; or named already */
  }
  if (!rc) rc = tbe__map_error(&wrapped_ids);
  if (!rc) rc = tbe__map_error(&calls);
  if (!rc) rc = tbe__vec_error(&cands);

  /* 2. Calls that launched other GPU work too. */
  for (size_t i = 0; i < t->nevents && !rc; i++) {
    const tbe_event *e = &t->events[i];
    if (e->link == TBE_NONE || !tbe_event_kind_is_gpu((tbe_event_kind)e->kind)) continue;
    const uint32_t *v = tbe__map_get(&calls, e->link);
    if (!v) continue;
    char op[64];
    if (e->kind != TBE_EV_KERNEL || !tbe__nccl_kernel_op(tbe_trace_str(t, e->name), op, sizeof op))
      TBE__VEC_AT(&cands, cand, *v).skip = 1;
  }

  /* 3. Calls inside an nccl:* operator on their thread. */
  tbe__vec open;
  tbe__vec_init(&open, a, sizeof(uint32_t));
  for (size_t k = 0; k < t->ntracks && !rc; k++) {
    const tbe_track *tr = &t->tracks[k];
    if (tr->type == TBE_TRACK_STREAM) continue;
    open.n = 0;
    for (uint32_t j = 0; j < tr->count; j++) {
      uint32_t i = tr->first + j;
      const tbe_event *e = &t->events[i];
      int64_t end = tbe__end_ns(e->start_ns, e->dur_ns);
      while (open.n) {
        const tbe_event *o = &t->events[TBE__VEC_AT(&open, uint32_t, open.n - 1)];
        if (tbe__end_ns(o->start_ns, o->dur_ns) >= e->start_ns) break;
        open.n--;
      }
      /* asynchronous ones too (a collective's record may end when its work
       * does): containment is tested on the times, so an entry left under
       * the top after it ended contains nothing */
      if (op_like(e->kind) && named(t, e, "nccl:", 5)) {
        uint32_t *x = TBE__VEC_PUSH(&open, uint32_t);
        if (!x) break;
        *x = i;
        continue;
      }
      const uint32_t *v = is_api(e->kind) ? tbe__map_get(&calls, i) : NULL;
      if (!v) continue;
      for (size_t s = 0; s < open.n; s++) {
        const tbe_event *o = &t->events[TBE__VEC_AT(&open, uint32_t, s)];
        if (o->start_ns <= e->start_ns && end <= tbe__end_ns(o->start_ns, o->dur_ns))
          TBE__VEC_AT(&cands, cand, *v).skip = 1;
      }
    }
    rc = tbe__vec_error(&open);
  }
  tbe__vec_deinit(&open);

  /* 4. The operators, their ids on the calls and the kernels. */
  for (size_t c = 0; c < cands.n && !rc; c++) {
    cand *w = &TBE__VEC_AT(&cands, cand, c);
    if (w->skip) continue;
    const tbe_event *call = &t->events[w->call];
    tbe_event ev;
    memset(&ev, 0, sizeof ev);
    ev.start_ns = call->start_ns;
    ev.dur_ns = call->dur_ns;
    ev.track = call->track;
    ev.kind = TBE_EV_USER_ANNOTATION; /* PyTorch's is a user-scope record_function */
    ev.name = w->op;
    ev.link = TBE_NONE;
    ev.external_id = w->id = ++top;
    if ((rc = tbe_trace_add_event(t, &ev, NULL, NULL, 0, NULL))) break;
    t->events[w->call].external_id = w->id;
    (*added)++;
  }
  for (size_t i = 0; i < t->nevents && !rc && *added; i++) {
    tbe_event *e = &t->events[i];
    if (e->kind != TBE_EV_KERNEL || e->link == TBE_NONE) continue;
    const uint32_t *v = tbe__map_get(&calls, e->link);
    if (v && !TBE__VEC_AT(&cands, cand, *v).skip) e->external_id = TBE__VEC_AT(&cands, cand, *v).id;
  }
  tbe__vec_deinit(&cands);
  tbe__map_deinit(&calls);
  tbe__map_deinit(&wrapped_ids);
  return rc;
}
