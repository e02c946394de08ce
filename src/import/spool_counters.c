/* spool_counters.c: the collector's sampled values (spool.h,
 * TBE__SP_COUNTER: NVML's device memory in use, collect/nvml.h) into
 * counter tracks of the trace (trace.h, "hardware metrics": one track per
 * name per GPU of the spool's process, tbe_trace_metric_track).
 *
 * - The GPU: the item's CUDA ordinal, or (UINT32_MAX) the ordinal whose
 *   GPU UUID a TBE__SP_DEVICE_UUID item gave (the last one of a UUID
 *   counts).  A sample of a GPU the process's CUDA does not see (another
 *   GPU of the machine, hidden by CUDA_VISIBLE_DEVICES) is not this
 *   process's and is left out; when no sample at all could be placed,
 *   one warning says so.
 * - A sample is an instantaneous value: its counter event starts at the
 *   sample's time and holds until the next one (a Chrome "C" event).
 *   Samples outside the kept windows are left out (not counted as records
 *   left out: they are not CUPTI's), as are those with a zero or negative
 *   time or a value that is not finite (counted in one warning); of two
 *   samples of one time, one is kept.
 *
 * Bounded by the input (spool_int.h): one map entry per UUID item, one
 * array entry per counter item; lookups by key, never by scanning. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "import/spool_build.h"

typedef struct placed {
  int64_t ts;
  double v;
  int32_t device;
  tbe_str name;
} placed;

static uint64_t uuid_key(const uint8_t u[16]) {
  uint64_t a, b;
  memcpy(&a, u, 8);
  memcpy(&b, u + 8, 8);
  return a ^ (b << 1 | b >> 63);
}

static int uuid_zero(const uint8_t u[16]) {
  static const uint8_t z[16];
  return memcmp(u, z, 16) == 0;
}

static int cmp_placed(const void *x, const void *y) {
  const placed *a = x, *b = y;
  if (a->device != b->device) return a->device < b->device ? -1 : 1;
  if (a->name != b->name) return a->name < b->name ? -1 : 1;
  if (a->ts != b->ts) return a->ts < b->ts ? -1 : 1;
  return 0;
}

/* The CUDA ordinal of counter `c`, or -1 when it names none the process
 * sees. */
static int32_t ordinal_of(const scan *s, const tbe__map *by_uuid, const tbe__sp_counter *c) {
  if (c->device != UINT32_MAX) return c->device <= INT32_MAX ? (int32_t)c->device : -1;
  if (uuid_zero(c->uuid)) return -1;
  const uint32_t *i = tbe__map_get(by_uuid, uuid_key(c->uuid));
  if (!i) return -1;
  const tbe__sp_device_uuid *d = &TBE__VEC_AT(&s->dev_uuids, tbe__sp_device_uuid, *i);
  if (memcmp(d->uuid, c->uuid, 16) != 0 || d->device > INT32_MAX) return -1;
  return (int32_t)d->device;
}

static int add_sample(tbe_trace *t, uint32_t track, const placed *p) {
  tbe_event e;
  memset(&e, 0, sizeof e);
  e.start_ns = p->ts;
  e.name = p->name;
  e.track = track;
  e.detail = TBE_NONE;
  e.link = TBE_NONE;
  e.kind = TBE_EV_COUNTER;
  tbe_counter c = {p->v};
  return tbe_trace_add_event(t, &e, &c, NULL, 0, NULL);
}

/* The sorted samples as events, one track per (device, name). */
static int add_series(build *b, const placed *v, size_t n) {
  int64_t pid = spool_pid(b->s);
  uint32_t tr = 0;
  int rc = 0;
  for (size_t i = 0; i < n && !rc; i++) {
    int first = i == 0 || v[i].device != v[i - 1].device || v[i].name != v[i - 1].name;
    if (!first && v[i].ts == v[i - 1].ts) continue; /* one of a time */
    if (first) rc = tbe_trace_metric_track(b->t, pid, v[i].device, v[i].name, &tr);
    if (!rc) rc = add_sample(b->t, tr, &v[i]);
  }
  return rc;
}

int tbe__spool_counters(build *b) {
  scan *s = b->s;
  size_t n = s->counters.n;
  if (!n) return 0;
  tbe__map by_uuid;
  tbe__map_init(&by_uuid, s->a, 0);
  int rc = 0;
  for (size_t i = 0; i < s->dev_uuids.n && !rc; i++) {
    const tbe__sp_device_uuid *d = &TBE__VEC_AT(&s->dev_uuids, tbe__sp_device_uuid, i);
    if (uuid_zero(d->uuid)) continue;
    uint32_t *slot = tbe__map_put(&by_uuid, uuid_key(d->uuid), NULL);
    if (!slot)
      rc = TBE_ENOMEM;
    else
      *slot = (uint32_t)i; /* the last one counts */
  }
  placed *v = rc ? NULL : tbe__alloc(s->a, n * sizeof *v);
  if (!rc && !v) rc = TBE_ENOMEM;
  size_t m = 0;
  uint64_t unplaced = 0, bad = 0;
  for (size_t i = 0; i < n && !rc; i++) {
    const tbe__sp_counter *c = &TBE__VEC_AT(&s->counters, tbe__sp_counter, i);
    if (c->ts <= 0 || !isfinite(c->value)) {
      bad++;
      continue;
    }
    seen(s, c->ts);
    if (!in_window(b, c->ts)) continue;
    int32_t dev = ordinal_of(s, &by_uuid, c);
    tbe_str name = S(s, c->name);
    if (dev < 0 || !name) {
      unplaced++;
      continue;
    }
    v[m++] = (placed){c->ts, c->value, dev, name};
  }
  if (!rc && m > 1) qsort(v, m, sizeof *v, cmp_placed);
  if (!rc) rc = add_series(b, v, m);
  if (!rc && !m && unplaced)
    rc = tbe_trace_warn(b->t,
                        "%llu samples of device memory in use (NVML) name no GPU of this "
                        "process's CUDA devices and were left out",
                        (unsigned long long)unplaced);
  if (!rc && bad)
    rc = tbe_trace_warn(b->t,
                        "%llu sampled values (NVML) had a zero or negative time or a value that "
                        "is not a number and were left out",
                        (unsigned long long)bad);
  if (v) tbe__free(s->a, v);
  tbe__map_deinit(&by_uuid);
  return rc;
}
