/* chrome_json_text.c: text and numbers of the Chrome JSON importer.
 *
 * Error helpers of both sides (the producer's cj_fail_at family, whose
 * return value stops yajl; the consumer's cfail, which also stops the
 * producer), interning with UTF-8 repair behind the front cache of
 * chrome_json_int.h, and numbers parsed from their text: microseconds to
 * integer nanoseconds exactly, integers, doubles, args read as either,
 * dim3 lists.  Pure functions apart from the interning. */
#include "import/chrome_json_text.h"

#include "common/pool.h"

/* ---- small helpers ---- */

int tbe__cj_fail_at(cj *c, uint64_t off, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int tbe__cj_fail_at(cj *c, uint64_t off, int code, const char *fmt, ...) {
  if (c->rc) return 0;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->emsg, sizeof c->emsg, fmt, ap);
  va_end(ap);
  c->rc = code;
  c->err_off = off;
  return 0; /* the callback's return value: stop the parse */
}

uint64_t tbe__cj_pos(cj *c) { return c->chunk_start + yajl_get_bytes_consumed(c->h); }

/* A limit passed at `off`: the producer's error, like tbe__cj_fail_at. */
int tbe__cj_limit(cj *c, uint64_t off, tbe__limit which, const char *what) {
  if (c->rc) return 0;
  char msg[256];
  tbe__import_limit_msg(msg, sizeof msg, which, c->o, what);
  return tbe__cj_fail_at(c, off, TBE_ETOOBIG, "%s", msg);
}

int tbe__cj_nomem(cj *c) { return tbe__cj_fail_at(c, tbe__cj_pos(c), TBE_ENOMEM, "out of memory"); }

/* The consumer's failure (model side); `off` is the event's offset or
 * UINT64_MAX.  Returns 0 like tbe__cj_fail_at. */
int tbe__cj_cfail(cj *c, uint64_t off, int code) {
  if (!c->crc) {
    c->crc = code;
    c->cerr_off = off;
    __atomic_store_n(&c->stop, 1, __ATOMIC_RELAXED);
    if (c->pool) tbe__pool_stop(c->pool); /* wake a driver waiting for a slot */
  }
  return 0;
}

/* tbe__cj_cfail with a message of its own (kept when it is the first failure). */
int tbe__cj_cfail_msg(cj *c, uint64_t off, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int tbe__cj_cfail_msg(cj *c, uint64_t off, int code, const char *fmt, ...) {
  if (c->crc) return 0;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->cmsg, sizeof c->cmsg, fmt, ap);
  va_end(ap);
  return tbe__cj_cfail(c, off, code);
}

/* The names of the event fields (E_*). */
const char *tbe__cj_ev_key_name(int k) {
  static const char *const names[] = {"", "name", "cat", "ph", "ts", "dur", "pid", "tid", "id",
                                      "bp", "s", "args"};
  return k >= 0 && k <= E_ARGS ? names[k] : "";
}

/* Counts a duplicate key on the model side (see "duplicate keys" in
 * chrome_json_parse.c): keeps the first in the file. */
void tbe__cj_note_dup(cj *c, uint64_t n, uint64_t off, const char *prefix, const char *name,
                      size_t len) {
  if (!c->dup_n || off < c->dup_off) {
    c->dup_off = off;
    snprintf(c->dup_name, sizeof c->dup_name, "%s%.*s", prefix, (int)(len > 60 ? 60 : len), name);
  }
  c->dup_n += n;
}

/* Interns `n` bytes, replacing NUL and each maximal invalid subpart of
 * UTF-8 by U+FFFD, so every output can carry the text. */
int tbe__cj_intern_text(cj *c, const char *s, size_t n, tbe_str *out) {
  if (n == 0) {
    *out = 0;
    return 0;
  }
  int plain;
  uint64_t h = hash_check(s, n, &plain);
  if (plain && n < UINT32_MAX) return intern_cached(c, s, n, h, out);
  /* Not plain ASCII: NUL and each maximal invalid subpart become U+FFFD
   * (common/utf8.h, the rule of every output). */
  tbe__buf *b = &c->tmp;
  tbe__buf_clear(b);
  tbe__utf8_repair(b, s, n, TBE__UTF8_NUL);
  if (tbe__buf_error(b)) return TBE_ENOMEM;
  return intern_cached(c, (const char *)b->data, b->len,
                       hash_check((const char *)b->data, b->len, &plain), out);
}



int tbe__cj_parse_double(const char *s, size_t n, double *out) {
  char tmp[64];
  if (n == 0 || n >= sizeof tmp) return -1;
  memcpy(tmp, s, n);
  tmp[n] = 0;
  char *end;
  *out = strtod(tmp, &end);
  return *end ? -1 : 0;
}

/* An integer from an arg: numbers, and numeric strings (XLA writes its
 * stats as strings). */
int tbe__cj_arg_int(const scratch *e, const sarg *a, int64_t *v) {
  if (a->type == V_NUM && a->num != NUM_NONE) { /* parsed by prepass */
    if (a->num == NUM_INT) {
      *v = a->is_u ? (int64_t)a->nv.u : a->nv.i;
      return 1;
    }
    if (a->num == NUM_DBL && a->nv.d > -9.2e18 && a->nv.d < 9.2e18) {
      *v = (int64_t)a->nv.d;
      return 1;
    }
    return 0;
  }
  if (a->type != V_NUM && a->type != V_STR) return 0;
  uint64_t u;
  int is_u;
  if (tbe__cj_parse_int(sp(e, a->val), a->val.len, v, &u, &is_u) == 0) {
    if (is_u) *v = (int64_t)u;
    return 1;
  }
  double d;
  if (tbe__cj_parse_double(sp(e, a->val), a->val.len, &d) == 0 && d > -9.2e18 && d < 9.2e18) {
    *v = (int64_t)d;
    return 1;
  }
  return 0;
}

/* Arg `a` as a whole number: 1 with *v; 0 when it is no number (text or
 * an object: the caller keeps it as a generic arg); -1 when it is a number
 * no ordinal can be (beyond the int64 range, or not whole). */
int tbe__cj_arg_whole(const scratch *e, const sarg *a, int64_t *v) {
  int64_t i;
  uint64_t u;
  int is_u = 0;
  double d;
  if (a->type == V_NUM && a->num == NUM_INT) {
    *v = a->nv.i;
    return a->is_u ? -1 : 1;
  }
  if (a->type == V_NUM && a->num == NUM_DBL) {
    d = a->nv.d;
  } else if (a->type == V_NUM || a->type == V_STR) {
    if (tbe__cj_parse_int(sp(e, a->val), a->val.len, &i, &u, &is_u) == 0) {
      *v = i;
      return is_u ? -1 : 1;
    }
    if (tbe__cj_parse_double(sp(e, a->val), a->val.len, &d) != 0) return a->type == V_NUM ? -1 : 0;
  } else {
    return 0;
  }
  if (!(d > -9.2e18 && d < 9.2e18) || d != (double)(int64_t)d) return -1;
  *v = (int64_t)d;
  return 1;
}

int tbe__cj_arg_double(const scratch *e, const sarg *a, double *v) {
  if (a->type != V_NUM && a->type != V_STR) return 0;
  return tbe__cj_parse_double(sp(e, a->val), a->val.len, v) == 0;
}

/* The first up-to-3 unsigned integers of a JSON array text "[x, y, z]" or
 * of "x,y,z". */
void tbe__cj_parse_dim3(const char *s, size_t n, uint32_t out[3]) {
  int k = 0;
  size_t i = 0;
  while (i < n && k < 3) {
    while (i < n && (s[i] < '0' || s[i] > '9')) i++;
    if (i == n) break;
    uint64_t v = 0;
    while (i < n && s[i] >= '0' && s[i] <= '9') {
      if (v < UINT32_MAX) v = v * 10 + (uint64_t)(s[i] - '0');
      i++;
    }
    out[k++] = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
  }
}

/* ---- yajl's memory ----
 *
 * yajl's allocations go through the import's allocator.  yajl cannot take
 * a refused one (yajl 2.1's yajl_alloc, its byte stack and its buffers use
 * the result unchecked), so when the allocator refuses, the block comes
 * from malloc instead, the handle's owner is marked out of memory
 * (c->ynomem) and the import stops with TBE_ENOMEM at the next return from
 * yajl (yajl_feed in chrome_json_guard.c; a worker's chunk fails and is
 * replayed by the main handle).  A header before each block keeps its
 * size (yajl's realloc does not pass the old one) and where it came from.
 *
 * This is the importer's only memory outside the import allocator (every
 * other block, the pool's ring and workers' states included, comes from
 * c->a): it exists only after the allocator has refused, it is what yajl
 * asks for until control comes back to us (our callbacks allocate too and
 * stop the parse when the allocator keeps refusing), and it is freed with
 * the handle, before the import returns.  Removing it takes a parser that
 * accepts a refusal (yajl's buffers do not). */

typedef union yj_hdr {
  struct {
    size_t size;
    int from_malloc;
  } h;
  max_align_t align;
} yj_hdr;

static void *yj_malloc(void *ctx, size_t n) {
  cj *c = ctx;
  if (n > SIZE_MAX - sizeof(yj_hdr)) return NULL;
  yj_hdr *h = tbe__alloc(c->a, sizeof *h + n);
  int from_malloc = !h;
  if (!h && !(h = malloc(sizeof *h + n))) return NULL;
  c->ynomem |= from_malloc;
  h->h.size = n;
  h->h.from_malloc = from_malloc;
  return h + 1;
}

static void yj_free(void *ctx, void *p) {
  cj *c = ctx;
  if (!p) return;
  yj_hdr *h = (yj_hdr *)p - 1;
  if (h->h.from_malloc) free(h);
  else tbe__free(c->a, h);
}

static void *yj_realloc(void *ctx, void *p, size_t n) {
  cj *c = ctx;
  if (!p) return yj_malloc(ctx, n);
  if (n > SIZE_MAX - sizeof(yj_hdr)) return NULL;
  yj_hdr *h = (yj_hdr *)p - 1, *q = NULL;
  if (!h->h.from_malloc) q = tbe__realloc(c->a, h, sizeof *h + h->h.size, sizeof *h + n);
  if (q) {
    q->h.size = n;
    return q + 1;
  }
  void *r = yj_malloc(ctx, n); /* from the allocator, else malloc */
  if (!r) return NULL;
  memcpy(r, p, h->h.size < n ? h->h.size : n);
  yj_free(ctx, p);
  return r;
}

void tbe__cj_yajl_funcs(cj *c) {
  c->yfuncs.malloc = yj_malloc;
  c->yfuncs.realloc = yj_realloc;
  c->yfuncs.free = yj_free;
  c->yfuncs.ctx = c;
}
