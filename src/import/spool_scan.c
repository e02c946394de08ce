/* spool_scan.c: the scanning phase of spool -> trace (spool_int.h):
 * each spool item copied into the scan's array of its type, string and
 * note items interned into the trace as they come; the metric items
 * (samples, kernel figures) flattened into one entry per value, their
 * counts checked against the item's length and NaN or infinite values
 * left out (counted in scan.mbad for one warning each).  The lookups the
 * build makes by id (strings, metric definitions, the last status of a
 * kind and device) are filled here, as maps: see spool_int.h, "Bounded
 * by the input". */
#include "import/spool_int.h"

#include <math.h>
#include <string.h>

/* Appends the item's body to `vec` (of T); a shorter body is skipped. */
#define TAKE(vec, T)                        \
  do {                                      \
    if (len < sizeof(T)) return 0;          \
    T *x_ = TBE__VEC_PUSH(&(vec), T);       \
    if (!x_) return tbe__vec_error(&(vec)); \
    memcpy(x_, body, sizeof *x_);           \
  } while (0)

/* ---- hardware metrics ---- */

/* TBE__SP_METRIC_SAMPLES: the header, nmetrics ids, then nsamples of
 * (int64 ts, nmetrics doubles); counts must fit the body exactly. */
static int metric_samples(scan *s, const uint8_t *body, size_t len) {
  tbe__sp_metric_samples h;
  if (len < sizeof h) return s->mbad.short_items++, 0;
  memcpy(&h, body, sizeof h);
  uint64_t need = sizeof h + 4ull * h.nmetrics + (uint64_t)h.nsamples * (8ull + 8ull * h.nmetrics);
  if (h.nmetrics == 0 || h.nmetrics > SP_METRIC_ID_MAX || h.nsamples > len || need != len)
    return s->mbad.short_items++, 0;
  const uint8_t *ids = body + sizeof h, *p = ids + 4ull * h.nmetrics;
  for (uint32_t k = 0; k < h.nsamples; k++) {
    sp_msample m;
    memcpy(&m.ts, p, 8);
    p += 8;
    for (uint32_t j = 0; j < h.nmetrics; j++, p += 8) {
      memcpy(&m.v, p, 8);
      memcpy(&m.metric, ids + 4ull * j, 4);
      m.device = h.device;
      if (!isfinite(m.v)) {
        s->mbad.bad_values++;
        continue;
      }
      if (m.ts <= 0) {
        s->mbad.bad_ts++;
        continue;
      }
      sp_msample *x = TBE__VEC_PUSH(&s->msamples, sp_msample);
      if (!x) return tbe__vec_error(&s->msamples);
      *x = m;
    }
  }
  return 0;
}

/* TBE__SP_KERNEL_METRICS: the header, then nvalues of (u32 id, u32 0,
 * double). */
static int kernel_metrics(scan *s, const uint8_t *body, size_t len) {
  tbe__sp_kernel_metrics h;
  if (len < sizeof h) return s->mbad.short_items++, 0;
  memcpy(&h, body, sizeof h);
  if ((uint64_t)sizeof h + 16ull * h.nvalues != len) return s->mbad.short_items++, 0;
  const uint8_t *p = body + sizeof h;
  uint32_t item = s->nkm_items++;
  for (uint32_t j = 0; j < h.nvalues; j++, p += 16) {
    sp_kmval x = {.item = item, .name = h.name, .device = h.device, .launches = h.launches};
    memcpy(&x.metric, p, 4);
    memcpy(&x.v, p + 8, 8);
    if (!isfinite(x.v)) {
      s->mbad.bad_values++;
      continue;
    }
    sp_kmval *y = TBE__VEC_PUSH(&s->kmvals, sp_kmval);
    if (!y) return tbe__vec_error(&s->kmvals);
    *y = x;
  }
  return 0;
}

/* TBE__SP_METRIC_STATUS: the struct, then the reason's bytes (cut at a
 * NUL or a newline: one line). */
static int metric_status(scan *s, const uint8_t *body, size_t len) {
  sp_mstatus m;
  memset(&m, 0, sizeof m);
  if (len < sizeof m.st) return s->mbad.short_items++, 0;
  memcpy(&m.st, body, sizeof m.st);
  const char *r = (const char *)body + sizeof m.st;
  size_t n = len - sizeof m.st;
  for (size_t i = 0; i < n; i++)
    if (r[i] == '\0' || r[i] == '\n' || r[i] == '\r') n = i;
  if (n > 200) n = 200;
  int rc = n ? tbe_trace_intern(s->t, r, n, &m.reason) : 0;
  if (rc) return rc;
  if (s->mstatus.n >= UINT32_MAX) return TBE_ETOOBIG;
  sp_mstatus *x = TBE__VEC_PUSH(&s->mstatus, sp_mstatus);
  if (!x) return tbe__vec_error(&s->mstatus);
  *x = m;
  return tbe__map_set(&s->mstatus_last, SP_STATUS_KEY(m.st.kind, m.st.device),
                      (uint32_t)(s->mstatus.n - 1));
}

/* TBE__SP_METRIC_DEF: kept in order; the last definition of an id counts. */
static int metric_def(scan *s, const uint8_t *body, size_t len) {
  tbe__sp_metric_def *d;
  if (len < sizeof *d) return 0;
  if (s->mdefs.n >= UINT32_MAX) return TBE_ETOOBIG;
  if (!(d = TBE__VEC_PUSH(&s->mdefs, tbe__sp_metric_def))) return tbe__vec_error(&s->mdefs);
  memcpy(d, body, sizeof *d);
  return tbe__map_set(&s->mdef_of, d->id, (uint32_t)(s->mdefs.n - 1));
}

/* TBE__SP_STR: id -> the trace's string.  The id the collector writes
 * next (one past the array) extends the array, an id it already holds is
 * replaced there; any other goes to the map, so the array never has more
 * entries than string items were read.  The last definition of an id
 * counts: an id in the map is looked up only while the array is shorter
 * than it, and the array reaches it only by that id's own definition. */
static int string_def(scan *s, const uint8_t *body, size_t len) {
  uint32_t id;
  if (len < 4) return 0;
  memcpy(&id, body, 4);
  if (id == 0) return 0; /* ids count from 1; 0 is "" */
  const char *p = (const char *)body + 4;
  size_t n = len - 4;
  /* The model rejects embedded NULs: cut there. */
  const char *nul = memchr(p, '\0', n);
  if (nul) n = (size_t)(nul - p);
  tbe_str st;
  int rc = tbe_trace_intern(s->t, p, n, &st);
  if (rc) return rc;
  if (s->strs.n == 0 && !TBE__VEC_PUSH(&s->strs, tbe_str)) /* [0]: "" */
    return tbe__vec_error(&s->strs);
  if (id < s->strs.n) {
    ((tbe_str *)s->strs.data)[id] = st;
    return 0;
  }
  if (id == s->strs.n) {
    tbe_str *x = TBE__VEC_PUSH(&s->strs, tbe_str);
    if (!x) return tbe__vec_error(&s->strs);
    *x = st;
    return 0;
  }
  return tbe__map_set(&s->strmap, id, st);
}

int tbe__convert_on_item(void *ctx, unsigned type, const uint8_t *body, size_t len) {
  scan *s = ctx;
  int rc = 0;
  switch (type) {
    case TBE__SP_INFO:
      if (len >= sizeof s->info) {
        memcpy(&s->info, body, sizeof s->info);
        s->have_info = 1;
      }
      break;
    case TBE__SP_HOST:
      if (len >= sizeof s->host) len = sizeof s->host - 1;
      memcpy(s->host, body, len);
      s->host[len] = '\0';
      break;
    case TBE__SP_CMD:
      if (len >= sizeof s->cmd) len = sizeof s->cmd - 1;
      memcpy(s->cmd, body, len);
      s->cmd[len] = '\0';
      break;
    case TBE__SP_STR: rc = string_def(s, body, len); break;
    case TBE__SP_NOTE: {
      const char *p = (const char *)body;
      size_t n = len;
      const char *nul = memchr(p, '\0', n);
      if (nul) n = (size_t)(nul - p);
      tbe_str st;
      if ((rc = tbe_trace_intern(s->t, p, n, &st))) return rc;
      tbe_str *x = TBE__VEC_PUSH(&s->notes, tbe_str);
      if (!x) return tbe__vec_error(&s->notes);
      *x = st;
      break;
    }
    case TBE__SP_KERNEL: TAKE(s->kernels, tbe__sp_kernel); break;
    case TBE__SP_MEMCPY: TAKE(s->memcpys, tbe__sp_memcpy); break;
    case TBE__SP_MEMSET: TAKE(s->memsets, tbe__sp_memset); break;
    case TBE__SP_API: TAKE(s->apis, tbe__sp_api); break;
    case TBE__SP_REPLAYED: TAKE(s->replays, tbe__sp_replayed); break;
    case TBE__SP_SYNC: TAKE(s->syncs, tbe__sp_sync); break;
    case TBE__SP_MARKER: TAKE(s->markers, tbe__sp_marker); break;
    case TBE__SP_MARKER_DATA: TAKE(s->mdata, tbe__sp_marker_data); break;
    case TBE__SP_OVERHEAD: TAKE(s->overheads, tbe__sp_overhead); break;
    case TBE__SP_DEVICE: TAKE(s->devices, tbe__sp_device); break;
    case TBE__SP_CONTEXT: TAKE(s->contexts, tbe__sp_context); break;
    case TBE__SP_MEMORY: TAKE(s->memory, tbe__sp_memory); break;
    case TBE__SP_THREAD_NAME: TAKE(s->tnames, tbe__sp_thread_name); break;
    case TBE__SP_WINDOW: TAKE(s->windows, tbe__sp_window); break;
    case TBE__SP_STEP: TAKE(s->steps, tbe__sp_step); break;
    case TBE__SP_OP: TAKE(s->ops, tbe__sp_op); break;
    case TBE__SP_COUNTER: TAKE(s->counters, tbe__sp_counter); break;
    case TBE__SP_DEVICE_UUID: TAKE(s->dev_uuids, tbe__sp_device_uuid); break;
    case TBE__SP_NVTX_STATS:
      if (len >= sizeof s->nvtx) memcpy(&s->nvtx, body, sizeof s->nvtx), s->have_nvtx = 1;
      break;
    case TBE__SP_RANK: {
      /* The first valid one counts (the collector writes one); a rank that
       * contradicts its world size is no rank. */
      tbe__sp_rank r;
      if (len < sizeof r || s->have_rank) break;
      memcpy(&r, body, sizeof r);
      if (r.rank < 0 || r.world_size < 0 || (r.world_size > 0 && r.rank >= r.world_size)) break;
      if (r.local_rank < -1 || (r.world_size > 0 && r.local_rank >= r.world_size))
        r.local_rank = -1;
      s->rank = r;
      s->have_rank = 1;
      size_t jl = len - sizeof r;
      if (jl >= sizeof s->job) jl = sizeof s->job - 1;
      memcpy(s->job, body + sizeof r, jl);
      s->job[jl] = '\0';
      break;
    }
    case TBE__SP_METRIC_DEF: rc = metric_def(s, body, len); break;
    case TBE__SP_METRIC_SAMPLES: rc = metric_samples(s, body, len); break;
    case TBE__SP_KERNEL_METRICS: rc = kernel_metrics(s, body, len); break;
    case TBE__SP_METRIC_STATUS: rc = metric_status(s, body, len); break;
    case TBE__SP_PM_TIMES: { /* raw samples: pmeval.c evaluates them before the import */
      tbe__sp_pm_times h;
      if (len >= sizeof h) {
        memcpy(&h, body, sizeof h);
        s->mbad.pm_raw += (len - sizeof h) / sizeof(tbe__sp_pm_time);
      }
      break;
    }
    case TBE__SP_PM_EVALUATED: s->mbad.pm_evaluated = 1; break;
    case TBE__SP_SIGNAL:
      if (len >= sizeof s->signal && !s->have_signal) {
        memcpy(&s->signal, body, sizeof s->signal);
        s->have_signal = 1;
      }
      break;
    case TBE__SP_STATS:
      if (len >= sizeof s->stats) memcpy(&s->stats, body, sizeof s->stats);
      break;
    case TBE__SP_END:
      if (len >= sizeof s->end) {
        memcpy(&s->end, body, sizeof s->end);
        s->have_end = 1;
      }
      break;
    default: break; /* unknown item: skipped */
  }
  return rc;
}

void tbe__convert_scan_init(scan *s, tbe_trace *t, const tbe_allocator *a) {
  memset(s, 0, sizeof *s);
  s->t = t;
  s->a = a;
#define SP_INIT(name, T) tbe__vec_init(&s->name, a, sizeof(T));
  SP_ARRAYS(SP_INIT)
#undef SP_INIT
  tbe__map_init(&s->strmap, a, TBE__SEED_PROCESS);
  tbe__map_init(&s->mdef_of, a, TBE__SEED_PROCESS);
  tbe__map_init(&s->mstatus_last, a, TBE__SEED_PROCESS);
}

void tbe__convert_scan_free(scan *s) {
#define SP_FREE(name, T) tbe__vec_deinit(&s->name);
  SP_ARRAYS(SP_FREE)
#undef SP_FREE
  tbe__map_deinit(&s->strmap);
  tbe__map_deinit(&s->mdef_of);
  tbe__map_deinit(&s->mstatus_last);
}
