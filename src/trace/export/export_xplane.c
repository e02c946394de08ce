/* export_xplane.c: the XSpace output (<host>.xplane.pb) read by the
 * TensorBoard profile plugin (xprof) and jax.profiler.ProfileData.
 *
 * Layout, following what XLA's own GPU tracer writes after its post-processing
 * (see the profile-plugin reference, sections 2-3):
 * - one merged "/host:CPU" plane: a line per host thread (id = OS tid), NVTX
 *   events on a companion line "<thread>/NVTX" (id 1<<32 + tid; 4<<32 +
 *   track index for tracks that are no thread), other tracks on lines with
 *   ids from 2<<32, and a "Step markers" line for steps of no known thread;
 *   API calls carry correlation_id and device_id as uint64; a step is
 *   marked by the host event that defines it (step_num, int64, and _r = 1)
 *   or, when that is an NVTX range or there is none, by a marker event of
 *   its own on its thread's line (xprof groups what a root encloses on its
 *   line); host events whose kind XLA's conventions would not give back
 *   carry tbexport_kind (and tbexport_cat, a source category), asynchronous
 *   ranges _a = 1; framework operators, and the GPU work they launched,
 *   tf_op (export_xplane_event.c says how xprof reads it);
 * - one "/device:GPU:<n>" plane per device (XPlane.id = n) with the device
 *   capability stats, a line per stream named "Stream #<id>(<kinds>)", and
 *   kernels/memcpys/memsets carrying kernel_details/memcpy_details/
 *   Memset_details (interned through ref_value) and correlation_id (uint64);
 *   the GPU's hardware-metric counter tracks as lines named "_counters_"
 *   (xprof's counter lines: a counter per event name, its "value" stat),
 *   and the range profiler's kernel figures in the plane stat
 *   tbexport_kernel_metrics;
 * - a "Task Environment" plane with profile_start_time/profile_stop_time
 *   (uint64 epoch ns), and ours, which xprof does not read: tbexport_source
 *   and the collection counters (tbexport_dropped_records, ..._ended_early),
 *   the distributed rank and world size (tbexport_rank, _world_size);
 *   XSpace.hostnames; XSpace.warnings for everything the model dropped,
 *   clamped or cut short (the generic status lines, then the trace's own
 *   warnings).  src/import/xspace.c reads all of it back.
 * Line timestamp_ns is relative to the session start (readers compute
 * ns*1000 + offset_ps in int64, which overflows for epoch values); event
 * offsets are picoseconds from the line start.
 *
 * Encoding is hand-written protobuf wire format streamed through a 1 MiB
 * buffer: no per-event allocation.  XEvents get exact lengths (each is
 * encoded into a scratch area first); the enclosing XLine and XPlane
 * messages get a 5-byte padded varint length that is patched once the line
 * or plane is complete (in the buffer, or through the sink's patch once
 * flushed).  A
 * padded varint is valid protobuf: every parser reads varints of up to 10
 * bytes, and 5 bytes hold any length below 2^35 (messages are < 2 GiB).
 * Metadata ids are assigned from 1 per plane; names are interned per plane
 * (common/intern.h, cleared for each plane: id = interner id + 1) so each
 * distinct event name and stat name appears once.  proto3 strings must be
 * valid UTF-8 (C++ and Python protobuf refuse the file otherwise), so
 * trace text that is not gets each maximal invalid subpart replaced by
 * U+FFFD (common/utf8.h, tbe__utf8_repair) before it is interned or
 * written.
 *
 * The parts of the output and what they share: export_xplane_int.h (one
 * XEvent is export_xplane_event.c).
 *
 * Position: an output of src/trace (exporter table entry "xplane"); reads
 * only the model. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "common/checked.h"
#include "common/intern.h"
#include "common/map.h"
#include "common/utf8.h"
#include "tbexport/error.h"
#include "tbexport/export.h"
#include "trace/export/export_xplane_int.h"
#include "trace/export/step_keys.h"
#include "trace/exporter.h"

/* ---- output ---- */

static void xw_bytes(xw *w, const void *p, size_t n) {
  uint8_t *d = xw_room(w, n);
  if (!d || !n) return; /* (NULL, 0) is an empty name: memcpy must not see NULL */
  memcpy(d, p, n);
  w->len += n;
}

static void xw_varint_field(xw *w, unsigned f, uint64_t v) {
  uint8_t *d = xw_room(w, 11);
  if (!d) return;
  d[0] = TAG(f, WT_VARINT);
  w->len += 1 + tbe__pb_put_varint(d + 1, v);
}

static void xw_len_field(xw *w, unsigned f, const void *p, size_t n) {
  uint8_t *d = xw_room(w, 11);
  if (!d) return;
  d[0] = TAG(f, WT_LEN);
  w->len += 1 + tbe__pb_put_varint(d + 1, n);
  xw_bytes(w, p, n);
}

/* A string field: like xw_len_field, with invalid UTF-8 replaced. */
static void xw_str_field(xw *w, unsigned f, const char *s, size_t n) {
  if (tbe__utf8_valid(s, n)) {
    xw_len_field(w, f, s, n);
    return;
  }
  tbe__buf_clear(&w->fix);
  tbe__utf8_repair(&w->fix, s, n, 0);
  if (tbe__buf_error(&w->fix)) {
    if (!w->err) w->err = tbe__buf_error(&w->fix);
    return;
  }
  xw_len_field(w, f, w->fix.data, w->fix.len);
}

/* Opens a length-delimited field whose length is patched later; returns the
 * absolute offset of the 5-byte length. */
static uint64_t xw_open(xw *w, unsigned f) {
  uint8_t *d = xw_room(w, 6);
  if (!d) return 0;
  d[0] = TAG(f, WT_LEN);
  memset(d + 1, 0, 5);
  uint64_t at = w->flushed + w->len + 1;
  w->len += 6;
  return at;
}

static void xw_close(xw *w, uint64_t at) {
  if (w->err) return;
  uint64_t n = w->flushed + w->len - (at + 5);
  if (n >= (1ull << 31)) {
    w->err = TBE_ETOOBIG; /* protobuf messages are limited to 2 GiB */
    return;
  }
  uint8_t p[5];
  for (int i = 0; i < 4; i++) {
    p[i] = (uint8_t)((n & 0x7F) | 0x80);
    n >>= 7;
  }
  p[4] = (uint8_t)n;
  if (at >= w->flushed) {
    memcpy(w->buf + (at - w->flushed), p, 5);
  } else if (at + 5 <= w->flushed) {
    tbe__sink_patch(w->out, at, p, 5);
    w->err = tbe__sink_error(w->out);
  } else {
    size_t k = (size_t)(w->flushed - at);
    tbe__sink_patch(w->out, at, p, k);
    w->err = tbe__sink_error(w->out);
    memcpy(w->buf, p + k, 5 - k);
  }
}

/* ---- planes ---- */

static void plane_reset(xctx *c) {
  tbe__ntab_reset(&c->ev);
  tbe__ntab_reset(&c->st);
  memset(c->fixed, 0, sizeof c->fixed);
  c->gen++;
}

/* ---- lines and planes ---- */

typedef int (*ev_filter)(uint8_t kind);
static int is_nvtx(uint8_t k) { return k == TBE_EV_NVTX_RANGE || k == TBE_EV_NVTX_MARK; }
static int not_nvtx(uint8_t k) { return !is_nvtx(k); }
static int any_kind(uint8_t k) {
  (void)k;
  return 1;
}

/* The event name of step `s`'s marker: the step's name, else
 * "ProfilerStep#<num>" (into `buf`). */
static const char *step_marker_name(const tbe_trace *t, const tbe_step *st, char *buf, size_t size,
                                    size_t *len) {
  if (st->name) {
    *len = tbe_trace_strlen(t, st->name);
    return tbe_trace_str(t, st->name);
  }
  int n = snprintf(buf, size, "ProfilerStep#%lld", (long long)st->num);
  *len = (size_t)n;
  return buf;
}

/* Appends the marker event of step `s` to the current line: the step's
 * span, step_num and _r = 1 (a root for xprof's grouping), and the kind a
 * user annotation, so that it reads back as one and marks the step. */
static void write_step_marker(xctx *c, uint32_t s, int64_t line_start_ns) {
  const tbe_step *st = &c->t->steps[s];
  char nb[48];
  size_t nl;
  const char *nm = step_marker_name(c->t, st, nb, sizeof nb, &nl);
  uint32_t mid = tbe__ntab_get(&c->ev, nm, nl);
  uint8_t body[96];
  enc en = {body};
  uint8_t *p = body;
  *p++ = TAG(1, WT_VARINT);
  p += tbe__pb_put_varint(p, mid);
  int64_t off = tbe__sat_sub(st->start_ns, line_start_ns), dur = tbe__sat_sub(st->end_ns, st->start_ns);
  if (off > PS_MAX_NS) off = PS_MAX_NS;
  if (dur > PS_MAX_NS) dur = PS_MAX_NS;
  if (off > 0) {
    *p++ = TAG(2, WT_VARINT);
    p += tbe__pb_put_varint(p, (uint64_t)off * 1000);
  }
  if (dur > 0) {
    *p++ = TAG(3, WT_VARINT);
    p += tbe__pb_put_varint(p, (uint64_t)dur * 1000);
  }
  en.p = p;
  enc_stat_i64(&en, fixed_stat(c, S_STEP_NUM), st->num);
  enc_stat_i64(&en, fixed_stat(c, S_R), 1);
  enc_stat_ref(&en, fixed_stat(c, S_TBE_KIND), tbe__xp_kind_ref(c, TBE_EV_USER_ANNOTATION));
  size_t n = (size_t)(en.p - body);
  uint8_t *d = xw_room(&c->w, n + 11);
  if (!d) return;
  d[0] = TAG(4, WT_LEN);
  size_t h = 1 + tbe__pb_put_varint(d + 1, n);
  memcpy(d + h, body, n);
  c->w.len += h + n;
}

/* Whether the marker of step `s` goes before event `e` on a line: events
 * are ordered by start, longer first, and a marker goes before an event of
 * the same span (it encloses what the step holds). */
static int marker_first(const tbe_step *st, const tbe_event *e) {
  if (st->start_ns != e->start_ns) return st->start_ns < e->start_ns;
  return tbe__sat_sub(st->end_ns, st->start_ns) >= e->dur_ns;
}

/* Writes one XLine holding the events of `track` that pass `keep` and,
 * when `synth` is set, the markers of the steps [*synth_lo, synth_hi) of
 * c->synth.  Writes nothing when there are none. */
static void write_line(xctx *c, const tbe_track *tr, ev_filter keep, int64_t line_id,
                       const char *name, size_t name_len, size_t synth_lo, size_t synth_hi) {
  const tbe_trace *t = c->t;
  uint32_t first = UINT32_MAX;
  int64_t start = INT64_MAX, end = INT64_MIN;
  for (uint32_t i = tr->first; i < tr->first + tr->count; i++) {
    const tbe_event *e = &t->events[i];
    if (!keep(e->kind)) continue;
    if (first == UINT32_MAX) {
      first = i;
      start = e->start_ns;
    }
    int64_t en = tbe__end_ns(e->start_ns, e->dur_ns > 0 ? e->dur_ns : 0);
    if (en > end) end = en;
  }
  for (size_t k = synth_lo; k < synth_hi; k++) {
    const tbe_step *st = &t->steps[c->synth[k].step];
    if (st->start_ns < start) start = st->start_ns;
    if (st->end_ns > end) end = st->end_ns;
  }
  if (first == UINT32_MAX && synth_lo == synth_hi) return;
  uint64_t at = xw_open(&c->w, 3);
  xw_varint_field(&c->w, 1, (uint64_t)line_id);
  xw_str_field(&c->w, 2, name, name_len);
  int64_t rel = tbe__sat_sub(start, t->start_ns);
  if (rel) xw_varint_field(&c->w, 3, (uint64_t)rel);
  int64_t span = tbe__sat_sub(end, start);
  if (span > PS_MAX_NS) span = PS_MAX_NS;
  if (span > 0) xw_varint_field(&c->w, 9, (uint64_t)(span * 1000));
  size_t k = synth_lo;
  if (first != UINT32_MAX)
    for (uint32_t i = first; i < tr->first + tr->count && !c->w.err; i++) {
      if (!keep(t->events[i].kind)) continue;
      while (k < synth_hi && marker_first(&t->steps[c->synth[k].step], &t->events[i]))
        write_step_marker(c, c->synth[k++].step, start);
      tbe__xp_write_event(c, i, start);
    }
  while (k < synth_hi && !c->w.err) write_step_marker(c, c->synth[k++].step, start);
  xw_close(&c->w, at);
}

/* Writes the event_metadata and stat_metadata maps of the current plane. */
static void write_metadata(xctx *c) {
  xw *w = &c->w;
  for (int which = 0; which < 2; which++) {
    ntab *nt = which ? &c->st : &c->ev;
    unsigned field = which ? 5 : 4;
    for (size_t id = 1; id <= ntab_count(nt) && !w->err; id++) {
      size_t nl = tbe__intern_len(&nt->in, (uint32_t)id - 1);
      /* value message: id (1), name (2) */
      size_t vlen = 1 + tbe__pb_varint_len(id) + 1 + tbe__pb_varint_len(nl) + nl;
      /* entry message: key (1), value (2) */
      size_t elen = 1 + tbe__pb_varint_len(id) + 1 + tbe__pb_varint_len(vlen) + vlen;
      uint8_t *d = xw_room(w, 40);
      if (!d) return;
      size_t n = 0;
      d[n++] = TAG(field, WT_LEN);
      n += tbe__pb_put_varint(d + n, elen);
      d[n++] = TAG(1, WT_VARINT);
      n += tbe__pb_put_varint(d + n, id);
      d[n++] = TAG(2, WT_LEN);
      n += tbe__pb_put_varint(d + n, vlen);
      d[n++] = TAG(1, WT_VARINT);
      n += tbe__pb_put_varint(d + n, id);
      d[n++] = TAG(2, WT_LEN);
      n += tbe__pb_put_varint(d + n, nl);
      w->len += n;
      xw_bytes(w, tbe__intern_str(&nt->in, (uint32_t)id - 1), nl);
    }
  }
}

/* A plane-level XStat (field 6 of XPlane). */
static void plane_stat(xctx *c, const char *name, int type, uint64_t u, const char *s) {
  uint32_t mid = tbe__ntab_get(&c->st, name, strlen(name));
  uint8_t body[32];
  size_t n = 0;
  body[n++] = TAG(1, WT_VARINT);
  n += tbe__pb_put_varint(body + n, mid);
  if (type == 's') {
    size_t sl = strlen(s);
    uint8_t *d = xw_room(&c->w, 32);
    if (!d) return;
    size_t h = 0;
    d[h++] = TAG(6, WT_LEN);
    h += tbe__pb_put_varint(d + h, n + 1 + tbe__pb_varint_len(sl) + sl);
    memcpy(d + h, body, n);
    h += n;
    d[h++] = TAG(5, WT_LEN);
    h += tbe__pb_put_varint(d + h, sl);
    c->w.len += h;
    xw_bytes(&c->w, s, sl);
    return;
  }
  body[n++] = type == 'u' ? TAG(3, WT_VARINT) : TAG(4, WT_VARINT);
  n += tbe__pb_put_varint(body + n, u);
  uint8_t *d = xw_room(&c->w, 40);
  if (!d) return;
  d[0] = TAG(6, WT_LEN);
  size_t h = 1 + tbe__pb_put_varint(d + 1, n);
  memcpy(d + h, body, n);
  c->w.len += h + n;
}

static int cmp_mark(const void *a, const void *b) {
  const step_mark *x = a, *y = b;
  return x->event < y->event ? -1 : x->event > y->event;
}

static int cmp_synth(const void *a, const void *b, void *ctx) {
  const tbe_trace *t = ctx;
  const synth_step *x = a, *y = b;
  if (x->track != y->track) return x->track < y->track ? -1 : 1;
  const tbe_step *p = &t->steps[x->step], *q = &t->steps[y->step];
  if (p->start_ns != q->start_ns) return p->start_ns < q->start_ns ? -1 : 1;
  int64_t dp = tbe__sat_sub(p->end_ns, p->start_ns), dq = tbe__sat_sub(q->end_ns, q->start_ns);
  if (dp != dq) return dp > dq ? -1 : 1;
  return x->step < y->step ? -1 : x->step > y->step;
}

/* The host event on track `k` that carries step `st` (named `name`, same
 * span, on the thread's own line: not NVTX, not GPU work), or UINT32_MAX. */
static uint32_t step_carrier(const tbe_trace *t, size_t k, const tbe_step *st, tbe_str name) {
  const tbe_track *tr = &t->tracks[k];
  if (tr->type == TBE_TRACK_STREAM || !tr->count) return UINT32_MAX;
  /* first event starting at or after the step start */
  uint32_t lo = tr->first, hi = tr->first + tr->count;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (t->events[mid].start_ns < st->start_ns) lo = mid + 1;
    else hi = mid;
  }
  for (uint32_t i = lo; i < tr->first + tr->count && t->events[i].start_ns == st->start_ns; i++) {
    const tbe_event *e = &t->events[i];
    if (e->name == name && tbe__end_ns(e->start_ns, e->dur_ns) == st->end_ns &&
        !tbe_event_kind_is_gpu((tbe_event_kind)e->kind) && e->kind != TBE_EV_NVTX_RANGE &&
        e->kind != TBE_EV_NVTX_MARK)
      return i;
  }
  return UINT32_MAX;
}

/* Steps of no known thread: the first host event (not GPU work, not NVTX)
 * that carries each, found in one pass over the host tracks (step_keys.h),
 * as step_carrier on each track in turn would find it. */
static int carrier_kind(uint8_t kind) {
  return !tbe_event_kind_is_gpu((tbe_event_kind)kind) && kind != TBE_EV_NVTX_RANGE &&
         kind != TBE_EV_NVTX_MARK;
}

static void first_carrier(void *ctx, uint32_t step, uint32_t event) {
  uint32_t *ev = ctx;
  if (ev[step] == UINT32_MAX) ev[step] = event;
}

/* Finds, for each step, the host event that carries it: one on the step's
 * own thread line named like the step's marker, with the step's span; it
 * gets step_num/_r.  A step without one gets a marker event of its own on
 * its track's line (c->synth), or, when its track is unknown, on the "Step
 * markers" line (unmarked[s]).  xprof groups what a root event encloses on
 * its line, so a marker belongs on the thread's line, not on its NVTX
 * line.  Returns the number of steps for the "Step markers" line. */
static size_t mark_steps(xctx *c, uint8_t *unmarked) {
  const tbe_trace *t = c->t;
  size_t left = 0, nk = 0;
  uint32_t *carrier = tbe__calloc(c->w.a, t->nsteps + 1, sizeof *carrier);
  tbe__step_key *k = tbe__calloc(c->w.a, t->nsteps + 1, sizeof *k);
  if (!carrier || !k) {
    c->w.err = TBE_ENOMEM;
    tbe__free(c->w.a, carrier);
    tbe__free(c->w.a, k);
    return 0;
  }
  for (size_t s = 0; s < t->nsteps; s++) {
    const tbe_step *st = &t->steps[s];
    char nb[48];
    size_t nl;
    const char *nm = step_marker_name(t, st, nb, sizeof nb, &nl);
    tbe_str name = st->name ? st->name : tbe_trace_find_str(t, nm, nl);
    int own = st->track < t->ntracks && t->tracks[st->track].type != TBE_TRACK_STREAM;
    carrier[s] = UINT32_MAX;
    if (name != TBE_NONE && own) carrier[s] = step_carrier(t, st->track, st, name);
    else if (name != TBE_NONE)
      k[nk++] = (tbe__step_key){st->start_ns, st->end_ns, name, (uint32_t)s};
  }
  if (nk) tbe__step_keys_match(t, k, nk, carrier_kind, first_carrier, carrier);
  for (size_t s = 0; s < t->nsteps; s++) {
    const tbe_step *st = &t->steps[s];
    int own = st->track < t->ntracks && t->tracks[st->track].type != TBE_TRACK_STREAM;
    uint32_t ev = carrier[s];
    unmarked[s] = 0;
    if (ev != UINT32_MAX) {
      c->marks[c->nmarks].event = ev;
      c->marks[c->nmarks].step = (uint32_t)s;
      c->nmarks++;
    } else if (own) {
      c->synth[c->nsynth].track = st->track;
      c->synth[c->nsynth].step = (uint32_t)s;
      c->nsynth++;
    } else {
      unmarked[s] = 1;
      left++;
    }
  }
  tbe__free(c->w.a, carrier);
  tbe__free(c->w.a, k);
  if (c->nmarks > 1) qsort(c->marks, c->nmarks, sizeof *c->marks, cmp_mark);
  if (c->nsynth > 1) qsort_r(c->synth, c->nsynth, sizeof *c->synth, cmp_synth, (void *)t);
  return left;
}

static void write_step_line(xctx *c, const uint8_t *unmarked) {
  const tbe_trace *t = c->t;
  int64_t start = INT64_MAX, end = INT64_MIN;
  for (size_t s = 0; s < t->nsteps; s++) {
    if (!unmarked[s]) continue;
    if (t->steps[s].start_ns < start) start = t->steps[s].start_ns;
    if (t->steps[s].end_ns > end) end = t->steps[s].end_ns;
  }
  uint64_t at = xw_open(&c->w, 3);
  xw_varint_field(&c->w, 1, 3ull << 32);
  xw_len_field(&c->w, 2, "Step markers", 12);
  if (start != t->start_ns) xw_varint_field(&c->w, 3, (uint64_t)tbe__sat_sub(start, t->start_ns));
  for (size_t s = 0; s < t->nsteps && !c->w.err; s++) {
    if (!unmarked[s]) continue;
    const tbe_step *st = &t->steps[s];
    uint32_t mid;
    if (st->name) {
      mid = ntab_str(&c->ev, t, st->name);
    } else {
      char nb[48];
      int n = snprintf(nb, sizeof nb, "Step %lld", (long long)st->num);
      mid = tbe__ntab_get(&c->ev, nb, (size_t)n);
    }
    uint8_t body[96];
    enc en = {body};
    uint8_t *p = body;
    *p++ = TAG(1, WT_VARINT);
    p += tbe__pb_put_varint(p, mid);
    int64_t off = tbe__sat_sub(st->start_ns, start), dur = tbe__sat_sub(st->end_ns, st->start_ns);
    if (off > PS_MAX_NS) off = PS_MAX_NS;
    if (dur > PS_MAX_NS) dur = PS_MAX_NS;
    if (off > 0) {
      *p++ = TAG(2, WT_VARINT);
      p += tbe__pb_put_varint(p, (uint64_t)off * 1000);
    }
    if (dur > 0) {
      *p++ = TAG(3, WT_VARINT);
      p += tbe__pb_put_varint(p, (uint64_t)dur * 1000);
    }
    en.p = p;
    enc_stat_i64(&en, fixed_stat(c, S_STEP_NUM), st->num);
    enc_stat_i64(&en, fixed_stat(c, S_R), 1);
    size_t n = (size_t)(en.p - body);
    uint8_t *d = xw_room(&c->w, n + 11);
    if (!d) return;
    d[0] = TAG(4, WT_LEN);
    size_t h = 1 + tbe__pb_put_varint(d + 1, n);
    memcpy(d + h, body, n);
    c->w.len += h + n;
  }
  xw_close(&c->w, at);
}

static int xerr(xctx *c) {
  if (c->w.err) return c->w.err;
  if (c->ev.err) return c->ev.err;
  return c->st.err;
}

/* The pid of the first host thread: the host plane's process_id. */
static int64_t host_pid(const tbe_trace *t) {
  for (size_t k = 0; k < t->ntracks; k++)
    if (t->tracks[k].type == TBE_TRACK_THREAD && t->tracks[k].pid >= 0) return t->tracks[k].pid;
  return -1;
}

/* ---- the devices' planes ----
 *
 * A device plane gathers what belongs to its GPU from the whole trace:
 * its stream and metric tracks, its tbe_device, its range-profiler
 * figures, its process.  All of it is found through one table sorted once
 * (O(n log n) in tracks, devices and figures), never by a scan per plane:
 * 80,000 GPUs took over 100 s when every plane scanned every track. */

/* What belongs to one GPU, sorted by (dev, group, idx). */
enum { DG_STREAM, DG_METRIC, DG_DEVICE, DG_KMETRICS };
typedef struct dent {
  int32_t dev;
  uint32_t group; /* DG_*: a stream track, a metric track, a tbe_device, a tbe_kernel_metrics */
  uint32_t idx;   /* its index in the trace's array */
} dent;

typedef struct dplan {
  dent *e;
  size_t n;
  int64_t host_pid;   /* host_pid(t) */
  int64_t *plane_pid; /* per track: the process_id of a stream track's device plane */
} dplan;

static int cmp_dent(const void *a, const void *b) {
  const dent *x = a, *y = b;
  if (x->dev != y->dev) return x->dev < y->dev ? -1 : 1;
  if (x->group != y->group) return x->group < y->group ? -1 : 1;
  return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* The process_id of the plane of the GPU whose entries are e[lo, hi): its
 * first stream with events and a pid (the importer falls back to the host
 * plane's). */
static int64_t device_pid(const tbe_trace *t, const dplan *dp, size_t lo, size_t hi) {
  for (size_t i = lo; i < hi && dp->e[i].group == DG_STREAM; i++) {
    const tbe_track *tr = &t->tracks[dp->e[i].idx];
    if (tr->count && tr->pid >= 0) return tr->pid;
  }
  return dp->host_pid;
}

/* Builds the table; 0 or TBE_ENOMEM. */
static int plan_devices(const tbe_trace *t, const tbe_allocator *a, dplan *dp) {
  memset(dp, 0, sizeof *dp);
  dp->host_pid = host_pid(t);
  size_t cap = t->ntracks + t->ndevices + t->nkernel_metrics + 1;
  dp->e = tbe__calloc(a, cap, sizeof *dp->e);
  dp->plane_pid = tbe__calloc(a, t->ntracks + 1, sizeof *dp->plane_pid);
  if (!dp->e || !dp->plane_pid) return TBE_ENOMEM;
  for (size_t k = 0; k < t->ntracks; k++) {
    const tbe_track *tr = &t->tracks[k];
    if (tr->type == TBE_TRACK_STREAM || tbe_track_is_metric(tr))
      dp->e[dp->n++] = (dent){tr->device, tr->type == TBE_TRACK_STREAM ? DG_STREAM : DG_METRIC, (uint32_t)k};
  }
  for (size_t i = 0; i < t->ndevices; i++) dp->e[dp->n++] = (dent){t->devices[i].id, DG_DEVICE, (uint32_t)i};
  for (size_t i = 0; i < t->nkernel_metrics; i++)
    dp->e[dp->n++] = (dent){t->kernel_metrics[i].device, DG_KMETRICS, (uint32_t)i};
  qsort(dp->e, dp->n, sizeof *dp->e, cmp_dent);
  for (size_t lo = 0, hi; lo < dp->n; lo = hi) {
    for (hi = lo; hi < dp->n && dp->e[hi].dev == dp->e[lo].dev;) hi++;
    int64_t pid = device_pid(t, dp, lo, hi);
    for (size_t i = lo; i < hi && dp->e[i].group == DG_STREAM; i++) dp->plane_pid[dp->e[i].idx] = pid;
  }
  return 0;
}

static void plan_free(dplan *dp, const tbe_allocator *a) {
  tbe__free(a, dp->e);
  tbe__free(a, dp->plane_pid);
}

static void write_host_plane(xctx *c, const uint8_t *unmarked, size_t nunmarked) {
  const tbe_trace *t = c->t;
  plane_reset(c);
  uint64_t at = xw_open(&c->w, 1);
  xw_len_field(&c->w, 2, "/host:CPU", 9);
  char name[600];
  for (size_t k = 0; k < t->ntracks && !xerr(c); k++) {
    const tbe_track *tr = &t->tracks[k];
    int has_synth = c->synth_at < c->nsynth && c->synth[c->synth_at].track == k;
    if (tr->type == TBE_TRACK_STREAM || tbe_track_is_metric(tr) || (!tr->count && !has_synth))
      continue;
    const char *tn = tbe_trace_str(t, tr->name);
    size_t tl = tbe_trace_strlen(t, tr->name);
    int n;
    if (tl && tl < 500) n = snprintf(name, sizeof name, "%s", tn);
    else if (tr->type == TBE_TRACK_THREAD) n = snprintf(name, sizeof name, "Host Threads/%lld", (long long)tr->tid);
    else n = snprintf(name, sizeof name, "Track %lld/%lld", (long long)tr->pid, (long long)tr->tid);
    int64_t id = tr->type == TBE_TRACK_THREAD ? tr->tid : (int64_t)((2ull << 32) + k);
    size_t lo = c->synth_at;
    while (c->synth_at < c->nsynth && c->synth[c->synth_at].track == k) c->synth_at++;
    write_line(c, tr, not_nvtx, id, name, (size_t)n, lo, c->synth_at);
    n += snprintf(name + n, sizeof name - (size_t)n, "/NVTX");
    /* The NVTX line names its thread by id: 1<<32 + tid (thread names
     * repeat), 4<<32 + track index for other tracks. */
    int64_t nid = tr->type == TBE_TRACK_THREAD && tr->tid >= 0 && tr->tid <= UINT32_MAX
                      ? (int64_t)((1ull << 32) + (uint64_t)tr->tid)
                      : (int64_t)((4ull << 32) + k);
    write_line(c, tr, is_nvtx, nid, name, (size_t)n, 0, 0);
  }
  if (nunmarked && !xerr(c)) write_step_line(c, unmarked);
  /* The process of the host threads, which our importer gives the
   * plane's lines back (threads of other processes: task_env_plane). */
  int64_t pid = host_pid(t);
  if (pid >= 0) plane_stat(c, "process_id", 'i', (uint64_t)pid, NULL);
  write_metadata(c);
  xw_close(&c->w, at);
}

/* "tbexport_kernel_metrics" on a GPU's plane: the range profiler's
 * figures of its kernels (tbe_kernel_metrics), one line per kernel name,
 * "<launches> <n> <metric>=<value> ... <name>\n" (values as %.17g, so
 * they read back exactly; the name to the end of the line, any newline
 * in it a space, its text made valid UTF-8).  Ours; xprof does not read
 * it, src/import/xspace_meta.c does. */
static void kernel_metrics_stat(xctx *c, const dent *e, size_t n) {
  const tbe_trace *t = c->t;
  tbe__buf b;
  tbe__buf_init(&b, c->w.a);
  for (size_t y = 0; y < n; y++) {
    if (e[y].group != DG_KMETRICS) continue;
    const tbe_kernel_metrics *k = &t->kernel_metrics[e[y].idx];
    tbe__buf_printf(&b, "%llu %u", (unsigned long long)k->launches, k->count);
    for (uint32_t j = 0; j < k->count; j++) {
      const tbe_metric_value *v = &t->metric_values[k->first + j];
      const char *m = tbe_trace_str(t, v->metric);
      tbe__buf_putc(&b, ' ');
      for (; *m; m++) tbe__buf_putc(&b, *m == ' ' || *m == '=' || *m == '\n' ? '_' : *m);
      tbe__buf_printf(&b, "=%.17g", v->value);
    }
    tbe__buf_putc(&b, ' ');
    size_t at = b.len;
    tbe__utf8_repair(&b, tbe_trace_str(t, k->name), tbe_trace_strlen(t, k->name), 0);
    for (size_t x = at; x < b.len; x++)
      if (b.data[x] == '\n' || b.data[x] == '\0') b.data[x] = ' ';
    tbe__buf_putc(&b, '\n');
  }
  tbe__buf_putc(&b, '\0');
  if (tbe__buf_error(&b)) c->w.err = TBE_ENOMEM;
  else if (b.len > 1) plane_stat(c, "tbexport_kernel_metrics", 's', 0, (const char *)b.data);
  tbe__buf_deinit(&b);
}

static const char *const STREAM_KINDS[] = {"Compute",   "MemcpyH2D", "MemcpyD2H", "MemcpyD2D",
                                           "MemcpyP2P", "MemcpyOther", "Memset"};

/* The plane of the GPU whose entries are dp->e[lo, hi). */
static void write_device_plane(xctx *c, const dplan *dp, size_t lo, size_t hi) {
  const tbe_trace *t = c->t;
  const dent *de = dp->e;
  int32_t dev = de[lo].dev;
  plane_reset(c);
  uint64_t at = xw_open(&c->w, 1);
  if (dev) xw_varint_field(&c->w, 1, (uint64_t)(int64_t)dev);
  char name[512];
  int n = snprintf(name, sizeof name, "/device:GPU:%d", (int)dev);
  xw_len_field(&c->w, 2, name, (size_t)n);
  for (size_t x = lo; x < hi && de[x].group == DG_STREAM && !xerr(c); x++) {
    const tbe_track *tr = &t->tracks[de[x].idx];
    if (!tr->count) continue;
    unsigned kinds = 0;
    for (uint32_t i = tr->first; i < tr->first + tr->count; i++) {
      const tbe_event *e = &t->events[i];
      if (e->kind == TBE_EV_KERNEL) kinds |= 1u << 0;
      else if (e->kind == TBE_EV_MEMSET) kinds |= 1u << 6;
      else if (e->kind == TBE_EV_MEMCPY) {
        const tbe_memcpy *m = tbe_trace_memcpy(t, e);
        switch (m ? m->copy_kind : 0) {
          case TBE_COPY_HTOD: kinds |= 1u << 1; break;
          case TBE_COPY_DTOH: kinds |= 1u << 2; break;
          case TBE_COPY_DTOD: kinds |= 1u << 3; break;
          case TBE_COPY_PTOP: kinds |= 1u << 4; break;
          default: kinds |= 1u << 5; break;
        }
      }
    }
    n = snprintf(name, sizeof name, "Stream #%lld", (long long)tr->tid);
    if (kinds) {
      name[n++] = '(';
      int firstk = 1;
      for (int b = 0; b < 7; b++) {
        if (!(kinds & (1u << b))) continue;
        n += snprintf(name + n, sizeof name - (size_t)n, "%s%s", firstk ? "" : ",", STREAM_KINDS[b]);
        firstk = 0;
      }
      name[n++] = ')';
      name[n] = 0;
    }
    write_line(c, tr, any_kind, tr->tid, name, (size_t)n, 0, 0);
  }
  /* The GPU's counters (hardware metrics, the memory curve): a line
   * "_counters_" per metric (xprof makes each event of such a line a
   * counter named by the event), ids 5<<32 on in the order of the tracks:
   * not the track's index, which a trace read back numbers otherwise. */
  const tbe_device *d = NULL;
  int64_t nctr = 0;
  for (size_t x = lo; x < hi && !xerr(c); x++) {
    if (de[x].group == DG_DEVICE) d = &t->devices[de[x].idx]; /* the last of its id, as ever */
    if (de[x].group != DG_METRIC) continue;
    const tbe_track *tr = &t->tracks[de[x].idx];
    if (!tr->count) continue;
    write_line(c, tr, any_kind, (int64_t)(5ll << 32) + nctr++, "_counters_", 10, 0, 0);
  }
  plane_stat(c, "device_vendor", 's', 0, "Nvidia");
  kernel_metrics_stat(c, de + lo, hi - lo);
  if (d) {
    if (d->name) plane_stat(c, "gpu_device_name", 's', 0, tbe_trace_str(t, d->name));
    if (d->clock_khz) plane_stat(c, "clock_rate", 'i', (uint64_t)(int64_t)d->clock_khz, NULL);
    if (d->sm_count) plane_stat(c, "core_count", 'i', (uint64_t)(int64_t)d->sm_count, NULL);
    if (d->memory_bandwidth) plane_stat(c, "memory_bandwidth", 'u', (uint64_t)d->memory_bandwidth, NULL);
    if (d->memory_bytes) plane_stat(c, "memory_size", 'u', (uint64_t)d->memory_bytes, NULL);
    if (d->cc_major || d->cc_minor) {
      plane_stat(c, "compute_cap_major", 'i', (uint64_t)(int64_t)d->cc_major, NULL);
      plane_stat(c, "compute_cap_minor", 'i', (uint64_t)(int64_t)d->cc_minor, NULL);
    }
  }
  int64_t pid = device_pid(t, dp, lo, hi);
  if (pid >= 0) plane_stat(c, "process_id", 'i', (uint64_t)pid, NULL);
  /* After the plane stats, which add stat metadata of their own. */
  write_metadata(c);
  xw_close(&c->w, at);
}

static void task_env_plane(xctx *c, const dplan *dp) {
  plane_reset(c);
  uint64_t at = xw_open(&c->w, 1);
  xw_len_field(&c->w, 2, "Task Environment", 16);
  plane_stat(c, "profile_start_time", 'u', (uint64_t)c->t->start_ns, NULL);
  plane_stat(c, "profile_stop_time", 'u', (uint64_t)c->t->stop_ns, NULL);
  /* Ours, for our importer (xprof reads only the two above from this
   * plane): where the trace came from, and what collecting it lost and
   * cost.  Their presence also says the warnings start with the generic
   * status lines (tbe__status_lines), which the importer leaves out. */
  const tbe_trace *t = c->t;
  plane_stat(c, "tbexport_source", 's', 0, tbe__source_name(t->source));
  /* Tracks of other processes than their plane's process_id (an nsys
   * export of several processes): "TID:PID" for host threads,
   * "DEV/STREAM:PID" for GPU streams, space-separated. */
  int64_t hp = dp->host_pid;
  tbe__buf pids;
  tbe__buf_init(&pids, c->w.a);
  for (size_t k = 0; k < t->ntracks; k++) {
    const tbe_track *tr = &t->tracks[k];
    if (tr->pid < 0) continue;
    if (tr->type == TBE_TRACK_THREAD && tr->pid != hp)
      tbe__buf_printf(&pids, "%s%lld:%lld", pids.len ? " " : "", (long long)tr->tid,
                      (long long)tr->pid);
    else if (tr->type == TBE_TRACK_STREAM && tr->count && tr->pid != dp->plane_pid[k])
      tbe__buf_printf(&pids, "%s%d/%lld:%lld", pids.len ? " " : "", (int)tr->device,
                      (long long)tr->tid, (long long)tr->pid);
  }
  if (pids.err) c->w.err = pids.err;
  else if (pids.len) {
    tbe__buf_putc(&pids, 0);
    if (!pids.err) plane_stat(c, "tbexport_track_pids", 's', 0, (const char *)pids.data);
  }
  tbe__buf_deinit(&pids);
  if (t->dropped_records) plane_stat(c, "tbexport_dropped_records", 'u', t->dropped_records, NULL);
  if (t->dropped_out_of_range)
    plane_stat(c, "tbexport_out_of_range_records", 'u', t->dropped_out_of_range, NULL);
  if (t->overhead_ns) plane_stat(c, "tbexport_cupti_overhead_ns", 'u', t->overhead_ns, NULL);
  if (t->ended_early) plane_stat(c, "tbexport_ended_early", 'i', 1, NULL);
  /* The distributed rank (the Chrome JSON's distributedInfo). */
  if (t->rank >= 0) plane_stat(c, "tbexport_rank", 'i', (uint64_t)t->rank, NULL);
  if (t->rank >= 0 && t->world_size > 0)
    plane_stat(c, "tbexport_world_size", 'i', (uint64_t)t->world_size, NULL);
  write_metadata(c);
  xw_close(&c->w, at);
}

/* tbe__status_lines' EMIT: one XSpace.warnings (3) entry. */
static void warning_line(void *ctx, const char *line, size_t len) {
  xw_len_field(ctx, 3, line, len);
}

/* The name of the CPU operator of each external id (the first), for the
 * tf_op of the GPU work it launched: an array by id when the largest id is
 * at most 4 per operator (plus 4096), else a map.  A trace read from an
 * XSpace of XLA's gets none: its host events are CPU operators by default
 * (TraceMes), and those that are ops carry XLA's own tf_op.  0 or
 * TBE_ENOMEM. */
static int plan_operators(xctx *c, const tbe_allocator *a) {
  const tbe_trace *t = c->t;
  tbe__map_init(&c->ext_map, a, 0);
  c->k_tf_op = tbe_trace_find_str(t, "tf_op", 5);
  c->tf_ops = t->source != TBE_SRC_XSPACE;
  if (!c->tf_ops) return 0;
  c->tf_cache = tbe__calloc(a, c->st.ncache + 1, sizeof *c->tf_cache);
  if (!c->tf_cache) return TBE_ENOMEM;
  uint64_t nops = 0, maxid = 0;
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_event *e = &t->events[i];
    if (e->kind != TBE_EV_CPU_OP || !e->external_id) continue;
    nops++;
    if (e->external_id > maxid) maxid = e->external_id;
  }
  if (!nops) return 0;
  if (maxid <= 4 * nops + 4096) {
    c->ext_n = (size_t)maxid + 1;
    if (!(c->ext_name = tbe__calloc(a, c->ext_n, sizeof *c->ext_name))) return TBE_ENOMEM;
  } else if (tbe__map_reserve(&c->ext_map, (size_t)nops)) {
    return TBE_ENOMEM;
  }
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_event *e = &t->events[i];
    if (e->kind != TBE_EV_CPU_OP || !e->external_id) continue;
    if (c->ext_name) {
      if (!c->ext_name[e->external_id]) c->ext_name[e->external_id] = e->name + 1;
      continue;
    }
    int added;
    uint32_t *v = tbe__map_put(&c->ext_map, e->external_id, &added);
    if (!v) return TBE_ENOMEM;
    if (added) *v = e->name;
  }
  return 0;
}

static int xplane_write(const tbe_trace *t, tbe__sink *out, const char *host,
                        const tbe_allocator *a, void (*progress)(void *, uint64_t, uint64_t),
                        void *progress_ctx) {
  xctx *c = tbe__calloc(a, 1, sizeof *c);
  if (!c) return TBE_ENOMEM;
  c->t = t;
  c->w.out = out;
  c->w.a = a;
  c->w.cap = XW_CAP;
  c->w.buf = tbe__alloc(a, XW_CAP);
  tbe__buf_init(&c->w.fix, a);
  tbe__ntab_init(&c->ev, a);
  tbe__ntab_init(&c->st, a);
  c->ev.ncache = c->st.ncache = tbe_trace_nstrings(t);
  c->ev.cache = tbe__calloc(a, c->ev.ncache + 1, sizeof(uint32_t));
  c->st.cache = tbe__calloc(a, c->st.ncache + 1, sizeof(uint32_t));
  c->dc = tbe__calloc(a, DC_SIZE, sizeof *c->dc);
  c->seed = tbe__hash_seed();
  c->scap = 1024;
  c->scratch = tbe__alloc(a, c->scap);
  c->marks = tbe__calloc(a, t->nsteps + 1, sizeof *c->marks);
  c->synth = tbe__calloc(a, t->nsteps + 1, sizeof *c->synth);
  c->ev.touched = tbe__calloc(a, c->ev.ncache + 1, sizeof(uint32_t));
  c->st.touched = tbe__calloc(a, c->st.ncache + 1, sizeof(uint32_t));
  uint8_t *unmarked = tbe__calloc(a, t->nsteps + 1, 1);
  dplan dp;
  int rc = plan_devices(t, a, &dp);
  if (!rc) rc = plan_operators(c, a);
  c->progress = progress;
  c->progress_ctx = progress_ctx;
  if (!c->w.buf || !c->ev.cache || !c->st.cache || !c->ev.touched || !c->st.touched || !c->dc ||
      !c->scratch || !c->marks || !c->synth || !unmarked || rc) {
    rc = TBE_ENOMEM;
    goto done;
  }

  size_t nunmarked = mark_steps(c, unmarked);
  write_host_plane(c, unmarked, nunmarked);

  /* A plane per GPU that has a track or a tbe_device, in ascending order
   * (range-profiler figures of no such GPU have no plane to go to). */
  for (size_t lo = 0, hi; lo < dp.n && !xerr(c); lo = hi) {
    for (hi = lo; hi < dp.n && dp.e[hi].dev == dp.e[lo].dev;) hi++;
    if (dp.e[lo].group != DG_KMETRICS) write_device_plane(c, &dp, lo, hi);
  }
  if (!xerr(c)) task_env_plane(c, &dp);

  /* XSpace.warnings (3) and hostnames (4). */
  uint64_t clamped_src = 0;
  for (size_t i = 0; i < t->nevents; i++) clamped_src += (t->events[i].flags & TBE_EVF_CLAMPED) != 0;
  char msg[200];
  int n;
  tbe__status_lines(t, 1, warning_line, &c->w);
  if (clamped_src) {
    n = snprintf(msg, sizeof msg, "%llu events had a negative duration in the source (clamped to 0)",
                 (unsigned long long)clamped_src);
    xw_len_field(&c->w, 3, msg, (size_t)n);
  }
  if (c->clamped) {
    n = snprintf(msg, sizeof msg,
                 "%llu event offsets or durations exceeded the int64 picosecond range (clamped)",
                 (unsigned long long)c->clamped);
    xw_len_field(&c->w, 3, msg, (size_t)n);
  }
  for (size_t i = 0; i < t->nwarnings; i++)
    xw_str_field(&c->w, 3, tbe_trace_str(t, t->warnings[i]), tbe_trace_strlen(t, t->warnings[i]));
  if (host && *host) xw_str_field(&c->w, 4, host, strlen(host));
  tbe__xw_flush(&c->w);
  rc = xerr(c);
  if (!rc && progress) progress(progress_ctx, t->nevents, t->nevents);

done:
  tbe__free(a, c->ext_name);
  tbe__free(a, c->tf_cache);
  tbe__map_deinit(&c->ext_map);
  tbe__ntab_free(&c->ev);
  tbe__ntab_free(&c->st);
  tbe__free(a, c->dc);
  tbe__free(a, c->scratch);
  tbe__free(a, c->marks);
  tbe__free(a, c->synth);
  tbe__free(a, unmarked);
  plan_free(&dp, a);
  tbe__free(a, c->w.buf);
  tbe__buf_deinit(&c->w.fix);
  tbe__free(a, c);
  return rc;
}

/* The exporter table's entry. */
static int xplane_export(const tbe__export_ctx *x, tbe__sink *out) {
  tbe_allocator a;
  tbe__allocator_init(&a, x->a);
  return xplane_write(x->trace, out, x->host, &a, x->progress, x->progress_ctx);
}

const tbe__exporter tbe__exporter_xplane = {"xplane", TBE_OUT_XPLANE, xplane_export};
