/* spool_pymem.c: the Python hook's memory file -> trace model (see
 * spool_pymem.h for the format).
 *
 * Two passes.  Parsing checks every line and keeps the devices, their
 * blocks at exit, their history entries and JAX's samples in vectors;
 * a bad line leaves the whole file out (one warning naming the byte).
 * Building then, per device:
 *   - block sizes.  torch's history gives each entry the size the program
 *     asked for; its allocated figure (memory_allocated,
 *     max_memory_allocated) counts the block, which the caching allocator
 *     rounds up to 512 bytes.  A block still allocated at exit has its
 *     size in the file (`b`); any other block is taken as the request
 *     rounded to 512 (exact unless the allocator handed out a larger cached
 *     block whole: at most 1 MiB more in its large pool).  A free uses the
 *     size of the allocation it pairs with by address.
 *   - totals backward.  The end state is exact (allocated: the blocks
 *     allocated at exit; reserved: the segments' sizes), and the history
 *     is a ring that drops its oldest entries when full, so the totals
 *     after each entry are the end state minus what the later entries
 *     did.  They stay right when the ring lost its beginning, and the curve
 *     then starts at its first entry.
 *   - allocated changes at `alloc` and `free_requested` (torch lowers its
 *     allocated figure when the program frees a block, before the block's
 *     stream work is done: `free_completed`), reserved at `segment_alloc`,
 *     `segment_map` (+) and `segment_free`, `segment_unmap` (-).
 * Invariant: with the blocks' sizes right, the totals after the last entry
 * are torch's at exit and the highest allocated total over a history that
 * lost nothing is torch's max_memory_allocated (the cross-check warning
 * says when not, by more than 1%). */
#include "import/spool_pymem.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/checked.h"
#include "common/fsutil.h"
#include "common/map.h"
#include "common/vec.h"
#include "tbexport/error.h"
#include "trace/model/vocab.h"

#define PM_VERSION 1
#define PM_LINE_MAX 4096                /* no line of ours is longer */
#define PM_FILE_MAX (1ull << 32)        /* 4 GiB: far above max_entries' files */
#define PM_BYTES_MAX (INT64_C(1) << 56) /* any size, total or address offset read */

/* ---- the parsed file ---- */

enum { A_ALLOC, A_FREE_REQ, A_FREE_DONE, A_SEG_ALLOC, A_SEG_FREE, A_SEG_MAP, A_SEG_UNMAP, A_OOM };

typedef struct pm_entry {
  int64_t time_us;
  uint64_t addr;
  int64_t size;
  int64_t block; /* the block's size (alloc, free_requested) */
  uint8_t action;
} pm_entry;

typedef struct pm_block {
  uint64_t addr;
  int64_t size;
} pm_block;

typedef struct pm_device {
  int64_t id, allocated, reserved, max_allocated, max_reserved, max_entries;
  size_t e0, ne; /* entries [e0, e0 + ne) */
  int64_t ring;  /* the history's entries, those of actions not read here too */
  size_t b0, nb; /* blocks */
} pm_device;

typedef struct pm_sample {
  int64_t device, time_ns, v[4]; /* in use, peak, reserved, limit; -1 absent */
} pm_sample;

typedef struct pm {
  tbe__vec dev, ent, blk, jax;
  int64_t wall_ns, coll_ns;
  int have_clock, peak_reset;
} pm;

/* ---- parsing ---- */

/* The next field of [*p, end) (cut by one space) into *f, *n; 0 or -1. */
static int field(const char **p, const char *end, const char **f, size_t *n) {
  const char *s = *p;
  if (s >= end) return -1;
  const char *q = memchr(s, ' ', (size_t)(end - s));
  if (!q) q = end;
  *f = s;
  *n = (size_t)(q - s);
  *p = q < end ? q + 1 : end;
  return *n ? 0 : -1;
}

/* A decimal int64 of at most 4e18 either side of 0 (times in ns since 1970
 * fit), "-1" included; checked before each digit, so nothing overflows. */
static int num(const char **p, const char *end, int64_t *v) {
  const char *f;
  size_t n;
  if (field(p, end, &f, &n) || n > 19) return -1;
  int neg = f[0] == '-';
  if (neg && n == 1) return -1;
  int64_t x = 0;
  for (size_t i = neg; i < n; i++) {
    if (f[i] < '0' || f[i] > '9') return -1;
    if (x > (INT64_C(4000000000000000000) - (f[i] - '0')) / 10) return -1;
    x = x * 10 + (f[i] - '0');
  }
  *v = neg ? -x : x;
  return 0;
}

static int nums(const char **p, const char *end, int64_t *v, size_t k) {
  for (size_t i = 0; i < k; i++)
    if (num(p, end, &v[i])) return -1;
  return *p == end ? 0 : -1;
}

static int action_of(const char *f, size_t n) {
  static const char *names[] = {"alloc",        "free_requested", "free_completed", "segment_alloc",
                                "segment_free", "segment_map",    "segment_unmap",  "oom"};
  for (int i = 0; i < (int)(sizeof names / sizeof *names); i++)
    if (strlen(names[i]) == n && memcmp(names[i], f, n) == 0) return i;
  return -1;
}

static int is(const char *f, size_t n, const char *kw) {
  return strlen(kw) == n && memcmp(f, kw, n) == 0;
}

/* One line [s, end) after the first.  Returns 0, 1 at `end`, or -1 with
 * *why set. */
static int parse_line(pm *m, const char *s, const char *end, const char **why) {
  const char *p = s, *f;
  size_t n;
  int64_t v[7];
  if (field(&p, end, &f, &n)) return (*why = "an empty line"), -1;
  if (is(f, n, "end")) return p == end ? 1 : ((*why = "text after end"), -1);
  if (is(f, n, "clock")) {
    if (nums(&p, end, v, 2)) return (*why = "a bad clock line"), -1;
    m->wall_ns = v[0], m->coll_ns = v[1], m->have_clock = 1;
  } else if (is(f, n, "peak-reset")) {
    if (nums(&p, end, v, 1)) return (*why = "a bad peak-reset line"), -1;
    m->peak_reset = v[0] != 0;
  } else if (is(f, n, "device")) {
    if (nums(&p, end, v, 6) || v[0] < 0 || v[0] > INT32_MAX)
      return (*why = "a bad device line"), -1;
    for (int i = 1; i < 6; i++)
      if (v[i] < 0 || v[i] > PM_BYTES_MAX) return (*why = "a device figure out of range"), -1;
    pm_device *d = tbe__vec_push(&m->dev);
    if (!d) return 0; /* the vector's sticky error */
    *d = (pm_device){v[0], v[1], v[2], v[3], v[4], v[5], m->ent.n, 0, 0, m->blk.n, 0};
  } else if (is(f, n, "b") || is(f, n, "e")) {
    pm_device *d = m->dev.n ? tbe__vec_at(&m->dev, m->dev.n - 1) : NULL;
    if (!d) return (*why = "a block or entry before its device line"), -1;
    if (f[0] == 'b') {
      if (nums(&p, end, v, 2) || v[0] < 0 || v[1] <= 0 || v[1] > PM_BYTES_MAX)
        return (*why = "a bad block line"), -1;
      pm_block *b = tbe__vec_push(&m->blk);
      if (b) *b = (pm_block){(uint64_t)v[0], v[1]}, d->nb++;
      return 0;
    }
    if (field(&p, end, &f, &n)) return (*why = "an entry without its action"), -1;
    int act = action_of(f, n);
    if (nums(&p, end, v, 4) || v[0] < 0 || v[1] < 0 || v[2] < 0 || v[2] > PM_BYTES_MAX)
      return (*why = "a bad entry line"), -1;
    d->ring++;
    if (act < 0) return 0; /* "snapshot" and later ones */
    pm_entry *e = tbe__vec_push(&m->ent);
    if (e) *e = (pm_entry){v[0], (uint64_t)v[1], v[2], 0, (uint8_t)act}, d->ne++;
  } else if (is(f, n, "jax")) {
    if (nums(&p, end, v, 6) || v[0] < 0 || v[0] > INT32_MAX || v[1] <= 0)
      return (*why = "a bad jax line"), -1;
    pm_sample *x = tbe__vec_push(&m->jax);
    if (x) *x = (pm_sample){v[0], v[1], {v[2], v[3], v[4], v[5]}};
  }
  /* other keywords (torch, pid, later ones): skipped */
  return 0;
}

/* The whole file; 0, TBE_ENOMEM, or -1 with *why and *at (byte offset). */
static int parse(pm *m, const char *data, size_t n, const char **why, size_t *at) {
  static const char magic[] = "tbexport-pymem ";
  size_t off = 0;
  int done = 0;
  *at = 0;
  if (n < sizeof magic - 1 || memcmp(data, magic, sizeof magic - 1) != 0)
    return (*why = "not a tbexport-pymem file"), -1;
  for (int line = 0; off < n && !done; line++) {
    size_t room = n - off < PM_LINE_MAX ? n - off : PM_LINE_MAX;
    const char *s = data + off, *nl = memchr(s, '\n', room);
    *at = off;
    if (!nl)
      return (*why = room == PM_LINE_MAX ? "a line too long" : "the file ends inside a line"), -1;
    if (line == 0) {
      const char *p = s + sizeof magic - 1;
      int64_t v;
      if (num(&p, nl, &v) || p != nl) return (*why = "a bad version"), -1;
      if (v != PM_VERSION) return (*why = "a version this build does not read"), -1;
    } else {
      int r = parse_line(m, s, nl, why);
      if (r < 0) return -1;
      done = r == 1;
    }
    off = (size_t)(nl - data) + 1;
    int rc = tbe__vec_error(&m->dev);
    if (!rc) rc = tbe__vec_error(&m->ent);
    if (!rc) rc = tbe__vec_error(&m->blk);
    if (!rc) rc = tbe__vec_error(&m->jax);
    if (rc) return rc;
  }
  *at = off;
  if (!done) return (*why = "no end line (the file was cut)"), -1;
  if (off != n) return (*why = "text after end"), -1;
  return 0;
}

/* ---- building ---- */

typedef struct bctx {
  const pm *m;
  tbe_trace *t;
  const tbe_allocator *a;
  const char *label;
  int64_t pid;
  uint32_t track;
  tbe_str name;
} bctx;

static int64_t rounded(int64_t s) { return s < 512 ? 512 : (s + 511) / 512 * 512; }

/* The trace time of torch's microseconds since 1970; 0 when it does not map. */
static int64_t trace_ns(const bctx *c, int64_t us) {
  int64_t ns, r;
  if (tbe__mul_i64(us, 1000, &ns)) return 0;
  if (c->m->have_clock) {
    if (tbe__sub_i64(ns, c->m->wall_ns, &r) || tbe__add_i64(r, c->m->coll_ns, &ns)) return 0;
  }
  return tbe__time_ok(ns) && ns > 0 ? ns : 0;
}

static int in_span(const tbe_trace *t, int64_t ts) {
  return ts > 0 && (t->stop_ns <= t->start_ns || (ts >= t->start_ns && ts <= t->stop_ns));
}

/* Each alloc and free_requested entry of d gets its block's size (above). */
static int block_sizes(const bctx *c, const pm_device *d, pm_entry *e) {
  tbe__map live, open;
  tbe__map_init(&live, c->a, TBE__SEED_PROCESS);
  tbe__map_init(&open, c->a, TBE__SEED_PROCESS);
  const pm_block *bl = tbe__vec_at(&c->m->blk, 0);
  for (size_t i = 0; i < d->nb; i++) tbe__map_set(&live, bl[d->b0 + i].addr, (uint32_t)(d->b0 + i));
  for (size_t i = 0; i < d->ne; i++) {
    if (e[i].action == A_ALLOC) {
      e[i].block = rounded(e[i].size);
      tbe__map_set(&open, e[i].addr, (uint32_t)i);
    } else if (e[i].action == A_FREE_REQ) {
      uint32_t *k = tbe__map_get(&open, e[i].addr);
      e[i].block = k ? e[*k].block : rounded(e[i].size);
      if (k) tbe__map_del(&open, e[i].addr);
    }
  }
  size_t it = 0;
  uint64_t addr;
  uint32_t k;
  while (tbe__map_next(&open, &it, &addr, &k)) {
    uint32_t *b = tbe__map_get(&live, addr);
    if (b) e[k].block = bl[*b].size;
  }
  int rc = tbe__map_error(&live);
  if (!rc) rc = tbe__map_error(&open);
  tbe__map_deinit(&live);
  tbe__map_deinit(&open);
  return rc;
}

static int add_memory(bctx *c, const pm_device *d, const pm_entry *e, int64_t ta, int64_t tr) {
  int64_t ts = trace_ns(c, e->time_us);
  if (!in_span(c->t, ts)) return 0;
  tbe_memory x;
  memset(&x, 0, sizeof x);
  x.addr = e->addr;
  x.bytes = e->action == A_ALLOC ? e->block : -e->block;
  x.total_allocated = ta;
  x.total_reserved = tr;
  x.device = (int32_t)d->id;
  x.device_type = 1;
  x.source = TBE_MEMSRC_ALLOCATOR;
  tbe_event ev;
  memset(&ev, 0, sizeof ev);
  ev.start_ns = ts;
  ev.name = c->name;
  ev.track = c->track;
  ev.detail = TBE_NONE;
  ev.link = TBE_NONE;
  ev.kind = TBE_EV_MEMORY;
  return tbe_trace_add_event(c->t, &ev, &x, NULL, 0, NULL);
}

/* One sample of counter `metric` of GPU `device` at ts. */
static int add_counter(bctx *c, int64_t device, const char *metric, int64_t ts, double v) {
  if (!in_span(c->t, ts)) return 0;
  uint32_t tr;
  tbe_str name = tbe_trace_str_id(c->t, metric);
  int rc = tbe_trace_metric_track(c->t, c->pid, (int32_t)device, name, &tr);
  if (rc) return rc;
  tbe_counter x = {v};
  tbe_event ev;
  memset(&ev, 0, sizeof ev);
  ev.start_ns = ts;
  ev.name = name;
  ev.track = tr;
  ev.detail = TBE_NONE;
  ev.link = TBE_NONE;
  ev.kind = TBE_EV_COUNTER;
  return tbe_trace_add_event(c->t, &ev, &x, NULL, 0, NULL);
}

/* The totals after each entry of d, backward from its end state, into
 * ta/tr (n each); *peak the highest allocated total, the state before the
 * first entry included.  Returns 1 when they do not add up (a total below
 * 0 on the way back: the history is not this allocator's whole tail). */
static int totals(const pm_device *d, const pm_entry *e, int64_t *ta, int64_t *tr, int64_t *peak) {
  int64_t A = d->allocated, R = d->reserved;
  *peak = A;
  for (size_t i = d->ne; i-- > 0;) {
    ta[i] = A, tr[i] = R;
    if (A > *peak) *peak = A;
    switch (e[i].action) {
      case A_ALLOC: A -= e[i].block; break;
      case A_FREE_REQ: A += e[i].block; break;
      case A_SEG_ALLOC:
      case A_SEG_MAP: R -= e[i].size; break;
      case A_SEG_FREE:
      case A_SEG_UNMAP: R += e[i].size; break;
      default: break;
    }
    if (A < 0 || R < 0 || A > PM_BYTES_MAX || R > PM_BYTES_MAX) return 1;
  }
  if (A > *peak) *peak = A;
  return 0;
}

static void say_device(bctx *c, const pm_device *d, int bad, int64_t peak) {
  if (bad) {
    tbe_trace_warn(c->t,
                   "%s: device %" PRId64
                   ": PyTorch's allocator history does not add up to its "
                   "state at exit (the program changed its recording?): allocated and reserved "
                   "totals left to the running sums",
                   c->label, d->id);
  } else if (!d->ring && (d->allocated || d->reserved)) {
    tbe_trace_warn(c->t,
                   "%s: device %" PRId64
                   ": PyTorch's allocator history was empty at exit (the "
                   "program turned it off?): no allocator curve",
                   c->label, d->id);
  } else if (d->max_entries > 0 && d->ring >= d->max_entries) {
    tbe_trace_warn(c->t,
                   "%s: device %" PRId64 ": PyTorch's allocator history kept its last %" PRId64
                   " events (max_entries): the memory curve starts at the first of them",
                   c->label, d->id, d->max_entries);
  } else if (!c->m->peak_reset && d->max_allocated > 0 &&
             (peak - d->max_allocated > d->max_allocated / 100 ||
              d->max_allocated - peak > d->max_allocated / 100)) {
    tbe_trace_warn(c->t,
                   "%s: device %" PRId64
                   ": the peak allocated from PyTorch's allocator history, "
                   "%" PRId64 " bytes, differs from torch.cuda.max_memory_allocated(), %" PRId64
                   " bytes, by more than 1%%",
                   c->label, d->id, peak, d->max_allocated);
  }
}

static int build_device(bctx *c, const pm_device *d) {
  pm_entry *e = d->ne ? tbe__vec_at(&c->m->ent, d->e0) : NULL;
  int rc = e ? block_sizes(c, d, e) : 0;
  int64_t *ta = NULL, peak = d->allocated;
  size_t bytes;
  if (!rc && d->ne) {
    if (__builtin_mul_overflow(d->ne, 2 * sizeof(int64_t), &bytes)) return TBE_ENOMEM;
    if (!(ta = tbe__alloc(c->a, bytes))) return TBE_ENOMEM;
  }
  int bad = !rc && d->ne ? totals(d, e, ta, ta + d->ne, &peak) : 0;
  say_device(c, d, bad, peak);
  for (size_t i = 0; i < d->ne && !rc; i++)
    if (e[i].action == A_ALLOC || e[i].action == A_FREE_REQ)
      rc = add_memory(c, d, &e[i], bad ? -1 : ta[i], bad ? -1 : ta[d->ne + i]);
  if (ta) tbe__free(c->a, ta);
  int64_t at = c->m->have_clock ? c->m->coll_ns : 0;
  if (!rc && at > 0)
    rc = add_counter(c, d->id, TBE__CTR_TORCH_MAX_ALLOCATED, at, (double)d->max_allocated);
  if (!rc && at > 0)
    rc = add_counter(c, d->id, TBE__CTR_TORCH_MAX_RESERVED, at, (double)d->max_reserved);
  return rc;
}

static int build(bctx *c) {
  const pm *m = c->m;
  int rc = tbe_trace_track(c->t, TBE_TRACK_THREAD, c->pid, c->pid, -1, &c->track);
  c->name = tbe_trace_str_id(c->t, "[memory]");
  for (size_t i = 0; i < m->dev.n && !rc; i++) rc = build_device(c, tbe__vec_at(&m->dev, i));
  static const char *jax_names[4] = {TBE__CTR_JAX_IN_USE, TBE__CTR_JAX_PEAK, TBE__CTR_JAX_RESERVED,
                                     TBE__CTR_JAX_LIMIT};
  for (size_t i = 0; i < m->jax.n && !rc; i++) {
    const pm_sample *x = tbe__vec_at(&m->jax, i);
    int64_t ts = x->time_ns, r;
    if (m->have_clock && (tbe__sub_i64(ts, m->wall_ns, &r) || tbe__add_i64(r, m->coll_ns, &ts)))
      continue;
    for (int k = 0; k < 4 && !rc; k++)
      if (x->v[k] >= 0) rc = add_counter(c, x->device, jax_names[k], ts, (double)x->v[k]);
  }
  return rc ? rc : tbe_trace_error(c->t);
}

int tbe__pymem_to_trace(const char *data, size_t n, const char *label, int64_t pid, tbe_trace *t,
                        const tbe_allocator *a) {
  if (!a) a = tbe__trace_allocator(t);
  pm m;
  memset(&m, 0, sizeof m);
  tbe__vec_init(&m.dev, a, sizeof(pm_device));
  tbe__vec_init(&m.ent, a, sizeof(pm_entry));
  tbe__vec_init(&m.blk, a, sizeof(pm_block));
  tbe__vec_init(&m.jax, a, sizeof(pm_sample));
  const char *why = NULL;
  size_t at = 0;
  int rc = parse(&m, data, n, &why, &at);
  if (rc < 0 && why) {
    tbe_trace_warn(t, "%s: byte %zu: %s; the program's allocator memory in it is left out", label,
                   at, why);
    rc = 0;
  } else if (!rc) {
    bctx c = {&m, t, a, label, pid, 0, 0};
    rc = build(&c);
  }
  tbe__vec_deinit(&m.dev);
  tbe__vec_deinit(&m.ent);
  tbe__vec_deinit(&m.blk);
  tbe__vec_deinit(&m.jax);
  return rc;
}

int tbe__pymem_file_to_trace(const char *dir, int64_t pid, tbe_trace *t, const tbe_allocator *a) {
  if (!a) a = tbe__trace_allocator(t);
  char name[64], where[4200] = "";
  snprintf(name, sizeof name, "%" PRId64 ".pymem", pid);
  void *buf = NULL;
  size_t len = 0;
  int rc = tbe__read_file(a, dir, name, PM_FILE_MAX, &buf, &len, NULL, where, sizeof where);
  if (rc == -ENOENT) return 0;
  if (rc == TBE_ENOMEM) return rc;
  if (rc) {
    tbe_trace_warn(t, "%s/%s: cannot read: %s; the program's allocator memory is left out", dir,
                   name, tbe_strerror(rc));
    return 0;
  }
  char label[4200];
  snprintf(label, sizeof label, "%s/%s", dir, name);
  rc = tbe__pymem_to_trace(buf, len, label, pid, t, a);
  tbe__free(a, buf);
  return rc;
}
