/* xspace.c: the XSpace (.xplane.pb) importer behind tbe_import_file.
 *
 * Reads the protobuf written by JAX, TensorFlow, XLA and our own exporter
 * (schema: proto/profiler/xplane.proto) into the trace model.
 *
 * How: the whole input is read into memory (a regular file at its size;
 * through gzip or standard input with its top-level framing followed as
 * it comes, so a stream of anything else stops at its first bad header and
 * no field may claim more than max_input_bytes); the top-level XSpace fields are
 * walked by hand (so every plane's byte offset is known and a corrupt length
 * is reported, never allocated), then each plane is decoded on its own with
 * protobuf-c and released before the next, so the peak is the file plus one
 * decoded plane.  When protobuf-c refuses a plane, a schema-aware wire walk
 * finds the first malformed field and the error names its byte offset.
 *
 * Mapping (reference: profile-plugin-xspace-chrome-trace.md §2-§3):
 *   - times: event start = line.timestamp_ns + offset_ps/1000; line times
 *     below 1e17 ns are relative to the session and get the `Task
 *     Environment` plane's profile_start_time added (a warning says so when
 *     there is none);
 *   - `/host:CPU`, `/host:CUPTI`, `/host:NVTX-CUPTI`, `/host:python-tracer`:
 *     one host process (pid = the plane's process_id stat, else a synthetic
 *     pid), lines are TBE_TRACK_THREAD tracks (tid = line id), so the capture
 *     planes of a raw XSpace merge into the host threads.  Events carrying a
 *     correlation_id are CUDA API calls: names starting "cuda" are runtime
 *     calls, the rest (cu*, and XLA's launch events named after the kernel,
 *     which come from driver callbacks) driver calls.  NVTX-CUPTI events are
 *     NVTX ranges/marks, python-tracer events Python functions, other host
 *     events CPU operators (instants when they have no duration);
 *   - `/device:GPU:<n>`: device n (plane stats fill tbe_device), lines are
 *     TBE_TRACK_STREAM tracks (stream = line id); kernel_details, memcpy_details
 *     and Memset_details make kernels, copies and memsets, other ranges GPU
 *     annotations;
 *   - what our exporter (src/trace/export_xplane.c) writes beyond XLA's
 *     conventions is read back: "<thread>/NVTX" lines (NVTX of that thread,
 *     "NVTX:<domain>:<message>" names split), nvtx_* / sync_* / cuda_event /
 *     external_id / memory (addr, num_bytes, device_ordinal, total_*) /
 *     counter ("value") stats, and the "Step markers" line (steps only);
 *   - any other plane with lines (TPU, custom, unknown): TBE_TRACK_OTHER
 *     tracks of a synthetic process named after the plane, generic events;
 *   - stats not consumed above become event args (ref_value resolved to the
 *     referenced name; bytes values are skipped); event-metadata stats come
 *     first, then the event's own;
 *   - steps: host events with a step_num stat; failing that, the span of
 *     each group_id;
 *   - XSpace.warnings/errors become trace warnings, hostnames[0] the host;
 *   - our own files (Task Environment stat tbexport_source) give back the
 *     source, the collection counters (tbexport_* stats), the kinds of host
 *     events (tbexport_kind, tbexport_cat), asynchronous ranges (_a), NVTX
 *     lines by thread id, and their warnings without the generic status
 *     lines the exporter put first.
 *
 * Times outside the model's range (common/checked.h) are refused naming the
 * field (line timestamp_ns, offset_ps, duration_ps, profile_start_time) and
 * the plane's byte; so are device ordinals out of 0..2^31-1 (importer.h):
 * a plane "/device:GPU:<n>" whose n is such an integer, a copy's
 * memcpy_details dest and an allocation's device_ordinal (-1 there is
 * none); max_events is counted per event.  Lookups keyed by the
 * file's values are sorted or hashed: NVTX lines find their thread's line
 * by a binary search over the plane's names, tbexport_track_pids is sorted.
 *
 * Errors: TBE_ECORRUPT with "<path>: byte N: ..." naming the offending
 * field; nothing is kept from a plane that did not decode. */

#include "common/pbwire.h"
#include "import/xspace_int.h"

/* ---- wire walking ---- */

/* Reads one field header and skips/locates its payload.  On success sets
 * field, wire type, and for wire type 2 the payload [*data, *data+*len).
 * Returns 0, or -1 with *bad at the offending byte. */
static int next_field(const uint8_t *b, size_t n, size_t *pos, uint32_t *field, uint32_t *wt,
                      size_t *data, size_t *len, size_t *bad) {
  size_t start = *pos;
  if (!tbe__pb_next_field(b, n, pos, field, wt, data, len)) return 0;
  *bad = start;
  return -1;
}

/* Message types of the schema, for the validating walk. */
enum { M_NONE = -1, M_PLANE, M_LINE, M_EVENT, M_STAT, M_EMD_ENTRY, M_SMD_ENTRY, M_EMD, M_SMD };

/* The message type of field `f` of message type `m`, M_NONE for scalars. */
static int child_type(int m, uint32_t f) {
  switch (m) {
    case M_PLANE:
      return f == 3 ? M_LINE : f == 4 ? M_EMD_ENTRY : f == 5 ? M_SMD_ENTRY : f == 6 ? M_STAT : M_NONE;
    case M_LINE: return f == 4 ? M_EVENT : M_NONE;
    case M_EVENT: return f == 4 ? M_STAT : M_NONE;
    case M_EMD_ENTRY: return f == 2 ? M_EMD : M_NONE;
    case M_SMD_ENTRY: return f == 2 ? M_SMD : M_NONE;
    case M_EMD: return f == 5 ? M_STAT : M_NONE;
    default: return M_NONE;
  }
}

/* Walks a message of type `m` at b[0..n) (at file offset `base`) and its
 * sub-messages.  Returns the file offset of the first malformed field, or
 * UINT64_MAX when the wire structure is sound. */
static uint64_t find_bad(const uint8_t *b, size_t n, uint64_t base, int m, int depth) {
  size_t pos = 0;
  while (pos < n) {
    uint32_t f, wt;
    size_t data, len, bad;
    size_t fstart = pos;
    if (next_field(b, n, &pos, &f, &wt, &data, &len, &bad)) return base + bad;
    int c = child_type(m, f);
    if (c != M_NONE) {
      if (wt != 2) return base + fstart;
      if (depth < 8) {
        uint64_t r = find_bad(b + data, len, base + data, c, depth + 1);
        if (r != UINT64_MAX) return r;
      }
    }
  }
  return UINT64_MAX;
}

/* ---- driver ---- */

/* The process_id stat of a plane, read from its stat_metadata (5) and
 * stats (6) fields without decoding the lines.  Returns 1 and *pid. */
static int scan_process_id(ProtobufCAllocator *pa, const uint8_t *b, size_t n, int64_t *pid) {
  int64_t md_id = 0;
  int have_md = 0;
  for (int pass = 0; pass < 2; pass++) {
    size_t pos = 0;
    while (pos < n) {
      uint32_t f, wt;
      size_t data, len, bad;
      if (next_field(b, n, &pos, &f, &wt, &data, &len, &bad)) return 0;
      if (wt != 2) continue;
      if (pass == 0 && f == 5) {
        Tensorflow__Profiler__XPlane__StatMetadataEntry *e =
            (Tensorflow__Profiler__XPlane__StatMetadataEntry *)protobuf_c_message_unpack(
                &tensorflow__profiler__xplane__stat_metadata_entry__descriptor, pa, len, b + data);
        if (!e) return 0;
        if (e->value && strcmp(e->value->name, "process_id") == 0) {
          md_id = e->key;
          have_md = 1;
        }
        protobuf_c_message_free_unpacked(&e->base, pa);
      } else if (pass == 1 && f == 6 && have_md) {
        XStat *st = tensorflow__profiler__xstat__unpack(pa, len, b + data);
        if (!st) return 0;
        int64_t v;
        int ok = st->metadata_id == md_id && tbe__xs_stat_int(st, &v);
        tensorflow__profiler__xstat__free_unpacked(st, pa);
        if (ok) {
          *pid = v;
          return 1;
        }
      }
    }
    if (!have_md) return 0;
  }
  return 0;
}

typedef struct plane_ref {
  size_t off;   /* of the field header */
  size_t data;  /* of the message */
  size_t len;
} plane_ref;

/* Reads the whole input (XSpace needs it all: planes refer to metadata
 * anywhere in them).  A regular file is read at its size.  Through gzip
 * or a pipe the top-level framing is followed as the bytes come, so a
 * stream of something else stops at its first bad header (pass 1 then
 * names it) and a field claiming more than max_input_bytes is refused
 * before it is read; the input layer stops at the limit in any case. */
static int read_input(tbe__input *in, const tbe_import_options *o, const char *path,
                      tbe_import_error *err, uint8_t **out, size_t *n) {
  size_t cap = !in->stream && !in->gzip && in->file_size ? (size_t)in->file_size + 1 : 1 << 20;
  uint8_t *b = tbe__alloc(in->a, cap);
  if (!b) return TBE_ENOMEM;
  size_t len = 0, next = 0; /* next: the first field header not yet walked */
  int stop = 0, rc = 0, walk = in->stream || in->gzip;
  while (!stop) {
    if (len == cap) {
      size_t nc = cap * 2;
      uint8_t *q = tbe__realloc(in->a, b, cap, nc);
      if (!q) {
        rc = TBE_ENOMEM;
        break;
      }
      b = q;
      cap = nc;
    }
    size_t got;
    if ((rc = tbe__input_read(in, b + len, cap - len, &got))) {
      tbe__import_input_fail(err, rc, path, in, o);
      break;
    }
    if (!got) break;
    len += got;
    while (walk && next < len) { /* walk the headers that are here */
      size_t hp = next;
      uint64_t tag, v, span;
      if (tbe__pb_get_varint(b, len, &hp, &tag)) {
        stop = len - next >= 10; /* else cut: more to come */
        break;
      }
      uint64_t wt = tag & 7;
      if ((tag >> 3) == 0 || wt == 3 || wt == 4 || wt > 5) {
        stop = 1; /* not protobuf: pass 1 names the byte */
        break;
      }
      if (wt == 1 || wt == 5) {
        span = hp - next + (wt == 1 ? 8 : 4);
      } else {
        if (tbe__pb_get_varint(b, len, &hp, &v)) {
          stop = len - hp >= 10;
          break;
        }
        if (wt == 2 && (v > o->max_input_bytes || hp + v > o->max_input_bytes)) {
          rc = tbe__import_limit(err, path, next, TBE__LIM_INPUT, o,
                                 "an XSpace field longer than the input limit");
          break;
        }
        span = hp - next + (wt == 2 ? v : 0);
      }
      if (span > len - next) break; /* its payload is still coming */
      next += (size_t)span;
    }
    if (rc) break;
  }
  if (rc) {
    tbe__free(in->a, b);
    return rc;
  }
  *out = b;
  *n = len;
  return 0;
}

/* Copies the `name` field (2) of the plane message for messages, or "". */
static void plane_name(const uint8_t *b, size_t n, char *out, size_t outsz) {
  size_t pos = 0;
  out[0] = 0;
  while (pos < n) {
    uint32_t f, wt;
    size_t data, len, bad;
    if (next_field(b, n, &pos, &f, &wt, &data, &len, &bad)) return;
    if (f == 2 && wt == 2) {
      size_t k = len < outsz - 1 ? len : outsz - 1;
      memcpy(out, b + data, k);
      out[k] = 0;
      return;
    }
  }
}

static int fail_plane(xs_state *s, const uint8_t *buf, const plane_ref *pr, size_t idx) {
  if (s->pb_nomem) return TBE_ENOMEM; /* not the plane's fault */
  char pname[96];
  plane_name(buf + pr->data, pr->len, pname, sizeof pname);
  uint64_t bad = find_bad(buf + pr->data, pr->len, pr->data, M_PLANE, 0);
  if (bad != UINT64_MAX)
    return tbe__import_fail(s->err, TBE_ECORRUPT, s->path, bad, 0, 0,
                            "malformed protobuf field in XSpace plane %zu (\"%s\", starting at byte "
                            "%zu)",
                            idx, pname, pr->off);
  return tbe__import_fail(s->err, TBE_ECORRUPT, s->path, pr->off, 0, 0,
                          "XSpace plane %zu (\"%s\") does not decode as an XPlane message", idx,
                          pname);
}

/* Whether `w` is one of the lines our exporter adds on clamped times. */
static int is_clamp_line(const char *w) {
  static const char *const tails[] = {
      " events had a negative duration in the source (clamped to 0)",
      " event offsets or durations exceeded the int64 picosecond range (clamped)"};
  const char *p = w;
  while (*p >= '0' && *p <= '9') p++;
  if (p == w) return 0;
  for (size_t i = 0; i < 2; i++)
    if (strcmp(p, tails[i]) == 0) return 1;
  return 0;
}

static char *dup_span(const tbe_allocator *a, const uint8_t *b, size_t n) {
  char *r = tbe__alloc(a, n + 1);
  if (!r) return NULL;
  memcpy(r, b, n);
  r[n] = 0;
  for (size_t i = 0; i < n; i++)
    if (!r[i]) r[i] = ' ';
  return r;
}

/* The top level of the file: what the passes below share. */
typedef struct xs_top {
  const uint8_t *buf;
  size_t n;
  plane_ref *planes, *notes; /* notes: off = field (2 error, 3 warning) */
  size_t nplanes, cap_planes, nnotes, cap_notes;
  tbe_str *lines;
} xs_top;

/* Pass 1: the top-level fields (planes and notes by reference, the first
 * hostname into the trace). */
static int read_top(xs_state *s, xs_top *x) {
  const uint8_t *buf = x->buf;
  size_t n = x->n, pos = 0;
  tbe_str host = 0;
  int rc;
  while (pos < n) {
    uint32_t f, wt;
    size_t data, len, bad, fstart = pos;
    if (next_field(buf, n, &pos, &f, &wt, &data, &len, &bad))
      return tbe__import_fail(s->err, TBE_ECORRUPT, s->path, bad, 0, 0,
                              "malformed XSpace field (bad tag or wire type, or a length past the "
                              "end of the %zu-byte file)",
                              n);
    if (f >= 1 && f <= 4 && wt != 2)
      return tbe__import_fail(s->err, TBE_ECORRUPT, s->path, fstart, 0, 0,
                              "XSpace field %u has wire type %u, expected a length-delimited value",
                              f, wt);
    if (f == 1) {
      if (tbe__grow(s->a, (void **)&x->planes, &x->cap_planes, x->nplanes + 1, sizeof *x->planes))
        return TBE_ENOMEM;
      x->planes[x->nplanes++] = (plane_ref){fstart, data, len};
    } else if (f == 2 || f == 3) {
      /* Kept until the Task Environment plane says whose file this is. */
      if (tbe__grow(s->a, (void **)&x->notes, &x->cap_notes, x->nnotes + 1, sizeof *x->notes))
        return TBE_ENOMEM;
      x->notes[x->nnotes++] = (plane_ref){f, data, len};
    } else if (f == 4 && !host && len) {
      const uint8_t *nul = memchr(buf + data, 0, len);
      if ((rc = tbe_trace_intern(s->t, (const char *)buf + data,
                                 nul ? (size_t)(nul - buf - data) : len, &host)))
        return rc;
    }
  }
  if (host) s->t->host = host;
  s->t->source = TBE_SRC_XSPACE;
  return 0;
}

/* Pass 2a: the host process id, from any host plane.  0 or TBE_ENOMEM. */
static int find_host_pid(xs_state *s, const xs_top *x) {
  s->host_pid = XS_SYNTH_PID;
  for (size_t i = 0; i < x->nplanes && !s->have_host_pid; i++) {
    char pname[64];
    int32_t g;
    plane_name(x->buf + x->planes[i].data, x->planes[i].len, pname, sizeof pname);
    plane_class c = tbe__xs_classify_plane(pname, &g);
    if (c == P_HOST || c == P_HOST_NVTX || c == P_HOST_PYTHON)
      s->have_host_pid = scan_process_id(&s->pa, x->buf + x->planes[i].data, x->planes[i].len, &s->host_pid);
  }
  if (!s->have_host_pid) s->host_pid = XS_SYNTH_PID;
  return s->pb_nomem ? TBE_ENOMEM : 0;
}

/* The Task Environment plane's stats: the session's times, our exporter's
 * counters, source and track pids. */
static int task_env_stats(xs_state *s, const XPlane *p) {
  tbe_trace *t = s->t;
  for (size_t k = 0; k < p->n_stats; k++) {
    const smd_cache *c = tbe__xs_stat_md(s, p->stats[k]->metadata_id);
    int64_t v;
    if (!c || !tbe__xs_stat_int(p->stats[k], &v)) continue;
    if (strcmp(c->md->name, "profile_start_time") == 0) s->start_ns = v;
    else if (strcmp(c->md->name, "profile_stop_time") == 0) s->stop_ns = v;
    else if (strcmp(c->md->name, "tbexport_dropped_records") == 0) t->dropped_records = (uint64_t)v;
    else if (strcmp(c->md->name, "tbexport_out_of_range_records") == 0)
      t->dropped_out_of_range = (uint64_t)v;
    else if (strcmp(c->md->name, "tbexport_cupti_overhead_ns") == 0) t->overhead_ns = (uint64_t)v;
    else if (strcmp(c->md->name, "tbexport_ended_early") == 0) t->ended_early = v != 0;
    else if (strcmp(c->md->name, "tbexport_rank") == 0 && v >= 0 && v < INT32_MAX)
      t->rank = (int32_t)v;
    else if (strcmp(c->md->name, "tbexport_world_size") == 0 && v > 0 && v <= INT32_MAX)
      t->world_size = (int32_t)v;
  }
  /* A rank that contradicts its world size is none. */
  if (t->rank >= 0 && t->world_size > 0 && t->rank >= t->world_size) t->rank = -1;
  if (t->rank < 0) t->world_size = 0;
  for (size_t k = 0; k < p->n_stats; k++) {
    const smd_cache *c = tbe__xs_stat_md(s, p->stats[k]->metadata_id);
    const char *src = c && strcmp(c->md->name, "tbexport_source") == 0
                          ? tbe__xs_stat_str(s, p->stats[k])
                          : NULL;
    if (src) {
      t->source = tbe__source_of(src, strlen(src));
      s->ours = 1;
    }
    const char *tp = c && strcmp(c->md->name, "tbexport_track_pids") == 0
                         ? tbe__xs_stat_str(s, p->stats[k])
                         : NULL;
    int rc;
    if (tp && (rc = tbe__xs_parse_track_pids(s, tp))) return rc;
  }
  return 0;
}

/* Pass 2b: the Task Environment plane, and the profiled window. */
static int read_task_env(xs_state *s, const xs_top *x) {
  tbe_trace *t = s->t;
  int rc = 0;
  for (size_t i = 0; i < x->nplanes; i++) {
    char pname[64];
    const plane_ref *pr = &x->planes[i];
    plane_name(x->buf + pr->data, pr->len, pname, sizeof pname);
    if (strcmp(pname, "Task Environment") != 0) continue;
    XPlane *p = tensorflow__profiler__xplane__unpack(&s->pa, pr->len, x->buf + pr->data);
    if (!p) return fail_plane(s, x->buf, pr, i);
    if ((rc = tbe__xs_load_metadata(s, p)) == 0) rc = task_env_stats(s, p);
    tbe__xs_free_metadata(s);
    tensorflow__profiler__xplane__free_unpacked(p, &s->pa);
    if (rc) return rc;
    break;
  }
  if (!tbe__time_ok(s->start_ns) || !tbe__time_ok(s->stop_ns))
    return tbe__import_fail(s->err, TBE_ECORRUPT, s->path, UINT64_MAX, 0, 0,
                            "Task Environment plane: profile_%s_time is out of range (more than "
                            "146 years from 1970)",
                            tbe__time_ok(s->start_ns) ? "stop" : "start");
  if (s->start_ns > 0 && !t->start_ns) {
    t->start_ns = s->start_ns;
    if (s->stop_ns > s->start_ns) t->stop_ns = s->stop_ns;
  }
  return 0;
}

/* XSpace.errors and warnings.  Ours (export_xplane.c) start with the
 * generic status lines and the lines on clamped times, which the counters
 * and the events say again: the trace's own warnings are what follows,
 * read back as they were. */
static int read_notes(xs_state *s, xs_top *x) {
  tbe_trace *t = s->t;
  int rc = 0;
  if (x->nnotes && !(x->lines = tbe__calloc(s->a, x->nnotes, sizeof *x->lines))) return TBE_ENOMEM;
  size_t nlines = 0;
  for (size_t i = 0; i < x->nnotes; i++) {
    char *msg = dup_span(s->a, x->buf + x->notes[i].data, x->notes[i].len);
    if (!msg) return TBE_ENOMEM;
    if (s->ours && x->notes[i].off == 3) rc = tbe_trace_intern(t, msg, strlen(msg), &x->lines[nlines++]);
    else tbe_trace_warn(t, "XSpace %s: %s", x->notes[i].off == 2 ? "error" : "warning", msg);
    tbe__free(s->a, msg);
    if (rc) return rc;
  }
  if (nlines) {
    size_t k = tbe__status_prefix(t, 1, x->lines, nlines);
    while (k < nlines && is_clamp_line(tbe_trace_str(t, x->lines[k]))) k++;
    for (; k < nlines; k++) tbe_trace_warn(t, "%s", tbe_trace_str(t, x->lines[k]));
  }
  return 0;
}

/* Pass 3: every plane, decoded one at a time. */
static int read_planes(xs_state *s, const xs_top *x) {
  for (size_t i = 0; i < x->nplanes; i++) {
    const plane_ref *pr = &x->planes[i];
    XPlane *p = tensorflow__profiler__xplane__unpack(&s->pa, pr->len, x->buf + pr->data);
    if (!p) return fail_plane(s, x->buf, pr, i);
    s->plane_off = pr->off;
    s->plane_idx = i;
    int rc = tbe__xs_import_plane(s, p, i);
    tbe__xs_free_metadata(s);
    tensorflow__profiler__xplane__free_unpacked(p, &s->pa);
    if (rc) return rc;
    if (s->o && s->o->progress) s->o->progress(s->o->progress_ctx, pr->data + pr->len, x->n);
  }
  return 0;
}

/* Steps: by step_num where events carry one, else the groups' spans. */
static int add_steps(xs_state *s) {
  tbe_trace *t = s->t;
  int rc = 0;
  if (s->nsteps) {
    for (size_t i = 0; i < s->nsteps && !rc; i++)
      if (!(rc = tbe_trace_add_step(t, s->steps[i].num, s->steps[i].start, s->steps[i].end,
                                    s->steps[i].name)))
        t->steps[t->nsteps - 1].track = s->steps[i].track;
  } else {
    for (size_t i = 0; i < s->ngroups && !rc; i++)
      rc = tbe_trace_add_step(t, s->groups[i].num, s->groups[i].start, s->groups[i].end, 0);
  }
  if (!rc && s->unknown_md)
    tbe_trace_warn(t, "XSpace: %" PRIu64 " events name event metadata the plane does not define",
                   s->unknown_md);
  return rc ? rc : tbe_trace_error(t);
}

static int import_xspace(tbe_trace *t, tbe__input *in, const char *path,
                         const tbe_import_options *o, tbe_import_error *err) {
  uint8_t *buf = NULL;
  size_t n = 0;
  int rc = read_input(in, o, path, err, &buf, &n);
  if (rc) {
    if (err && !err->message[0]) tbe__import_fail(err, rc, path, UINT64_MAX, 0, 0, "%s", tbe_strerror(rc));
    return rc;
  }
  xs_state s;
  memset(&s, 0, sizeof s);
  tbe__xs_state_init(&s, o->allocator);
  s.t = t;
  s.path = path;
  s.err = err;
  s.o = o;
  s.ev_first = t->nevents;
  xs_top x;
  memset(&x, 0, sizeof x);
  x.buf = buf;
  x.n = n;
  if (!(rc = read_top(&s, &x))) {
    if (!(rc = find_host_pid(&s, &x))) rc = read_task_env(&s, &x);
  }
  if (!rc) rc = read_notes(&s, &x);
  if (!rc) rc = read_planes(&s, &x);
  if (!rc) rc = add_steps(&s);
  if (rc && err && !err->message[0])
    tbe__import_fail(err, rc, path, UINT64_MAX, 0, 0, "%s", tbe_strerror(rc));
  tbe__xs_free_metadata(&s);
  tbe__map_deinit(&s.smap);
  tbe__map_deinit(&s.emap);
  tbe__map_deinit(&s.gmap);
  tbe__free(s.a, s.args);
  tbe__free(s.a, s.akind);
  tbe__free(s.a, s.steps);
  tbe__free(s.a, s.groups);
  tbe__free(s.a, s.track_pids);
  tbe__free(s.a, s.lorder);
  tbe__free(s.a, x.planes);
  tbe__free(s.a, x.notes);
  tbe__free(s.a, x.lines);
  tbe__free(s.a, buf);
  return rc;
}

/* ---- detection (the table's sniff test) ---- */

/* One top-level XSpace field header at b[0..n): its tag and the bytes it
 * spans from its first byte (header + payload).  Returns 1, 0 when it is
 * not a valid header, -1 when `n` is too short to tell. */
static int xs_field(const uint8_t *b, size_t n, int first, uint64_t *span) {
  size_t pos = 0;
  uint64_t tag, v;
  if (tbe__pb_get_varint(b, n, &pos, &tag)) return n >= 10 ? 0 : -1;
  uint64_t f = tag >> 3, wt = tag & 7;
  if (f == 0 || f > 0x1fffffff) return 0;
  /* XSpace: planes (1), errors (2), warnings (3), hostnames (4): all
   * length-delimited; the first field is one of them.  Other field numbers
   * are skipped by readers (newer schemas), with any valid wire type. */
  if (f <= 4 ? wt != 2 : first) return 0;
  switch (wt) {
    case 0:
      if (tbe__pb_get_varint(b, n, &pos, &v)) return n - pos >= 10 ? 0 : -1;
      *span = pos;
      return 1;
    case 1: *span = pos + 8; return 1;
    case 5: *span = pos + 4; return 1;
    case 2:
      if (tbe__pb_get_varint(b, n, &pos, &v)) return n - pos >= 10 ? 0 : -1;
      if (v > UINT64_MAX - pos) return 0;
      *span = pos + v;
      return 1;
    default: return 0;
  }
}

/* Whether the whole regular file `fd` of `size` bytes is a sequence of
 * valid top-level XSpace fields ending exactly at its end.  Headers are
 * read through a window, so small fields cost one sequential read of the
 * file and big ones a seek each. */
static int xs_framing_file(int fd, uint64_t size) {
  uint8_t win[4096];
  uint64_t pos = 0, wstart = 0;
  size_t wlen = 0;
  int first = 1;
  while (pos < size) {
    if (pos < wstart || pos + 20 > wstart + wlen) {
      ssize_t r;
      do r = pread(fd, win, sizeof win, (off_t)pos);
      while (r < 0 && errno == EINTR);
      if (r <= 0) return 0;
      wstart = pos;
      wlen = (size_t)r;
    }
    uint64_t span;
    int ok = xs_field(win + (pos - wstart), wlen - (size_t)(pos - wstart), first, &span);
    if (ok != 1 || span > size - pos) return 0;
    pos += span;
    first = 0;
  }
  return size > 0;
}

/* The same over the first bytes of a stream: every field that starts in
 * the window is valid (one that ends past it cannot be checked here; the
 * importer checks it). */
static int xs_framing_head(const uint8_t *b, size_t n, int at_end) {
  size_t pos = 0;
  int first = 1;
  while (pos < n) {
    uint64_t span;
    int ok = xs_field(b + pos, n - pos, first, &span);
    if (ok == 0) return 0;
    if (ok < 0) return !at_end;
    if (span > n - pos) return !at_end;
    pos += (size_t)span;
    first = 0;
  }
  return n > 0;
}

/* Whether the first plane (when the input starts with one) begins like an
 * XPlane message, as far as the window shows: fields id (1, varint), name,
 * lines, event and stat metadata, stats (2..6, length-delimited), or later
 * fields of a plain wire type.  Text that happens to frame as a field
 * (JSON after a newline) fails here. */
static int xs_first_plane_ok(const uint8_t *b, size_t n) {
  size_t pos = 0;
  uint64_t tag, len;
  if (tbe__pb_get_varint(b, n, &pos, &tag) || tag != ((1u << 3) | 2)) return 1; /* not a plane first */
  if (tbe__pb_get_varint(b, n, &pos, &len)) return 1;
  size_t end = len < n - pos ? pos + (size_t)len : n;
  while (pos < end) {
    uint64_t v;
    if (tbe__pb_get_varint(b, end, &pos, &tag)) return 1; /* cut by the window */
    uint64_t f = tag >> 3, wt = tag & 7;
    if (f == 0 || (f == 1 && wt != 0) || (f >= 2 && f <= 6 && wt != 2)) return 0;
    switch (wt) {
      case 0:
        if (tbe__pb_get_varint(b, end, &pos, &v)) return 1;
        break;
      case 1: pos += 8; break;
      case 5: pos += 4; break;
      case 2:
        if (tbe__pb_get_varint(b, end, &pos, &v)) return 1;
        if (v > end - pos) return 1; /* runs past the window */
        pos += (size_t)v;
        break;
      default: return 0;
    }
  }
  return 1;
}

/* Sure when the framing holds and a first plane begins like an XPlane;
 * likely when the input starts with an XSpace field's tag (cut or corrupt:
 * the importer names the byte). */
static int xspace_sniff(const tbe__sniff *s) {
  const tbe__input *in = s->in;
  const uint8_t *b = s->head;
  int xs = !in->gzip && !in->stream ? xs_framing_file(in->fd, in->file_size)
                                    : xs_framing_head(b, s->n, s->whole);
  if (xs && xs_first_plane_ok(b, s->n)) return TBE__SNIFF_SURE;
  if (s->n >= 2 && (b[0] == 0x0a || b[0] == 0x12 || b[0] == 0x1a || b[0] == 0x22))
    return TBE__SNIFF_LIKELY;
  return TBE__SNIFF_NO;
}

const tbe__importer tbe__importer_xspace = {TBE_FORMAT_XSPACE, "xspace", xspace_sniff,
                                            import_xspace, 0, NULL};
