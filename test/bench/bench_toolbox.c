/* bench_toolbox.c: the common toolbox (src/common: map, intern, vec,
 * utf8, pool) against the private twins it replaces, measured in the
 * same run on the same work.
 *
 * The twins are copied here as they were in the tree when the toolbox
 * was written (the model's interner from trace/model/model.c, the int64 map of
 * import/nsys.c, the JSON escaping of trace/export/export_json.c, the UTF-8
 * check of common/fsutil.c, the grow-by-one of the model's arrays, the
 * export's formatting pool), so the ratio stays measurable after the
 * rooms move onto the toolbox.
 *
 * Work, per row:
 *  - intern, trace names: the strings an importer interns for EVENTS
 *    events of bench_import's synthetic PyTorch trace (per launch: a CPU
 *    operator with its arg keys and shape values, the runtime call, the
 *    kernel or copy, flows and memory instants; ~3.6 lookups per event,
 *    ~70 distinct strings): the hottest lookup of an import;
 *  - intern, distinct: EVENTS/5 distinct names added, then found again
 *    (a table far bigger than the caches, growing);
 *  - map, correlations: one insertion and two lookups per launch (API call
 *    to GPU work by correlation id, as the importers link them);
 *  - map, hostile ids: 20,000 ids chosen to collide under the twin's
 *    unkeyed mixer (they are its inverse of i << 24): the twin is
 *    quadratic, the keyed map is not;
 *  - json: escaping and checking kernel names (some with quotes and
 *    invalid UTF-8), as the exporter's string cache does;
 *  - utf8: validating the same names;
 *  - vec: pushing 16-byte elements one at a time;
 *  - pool: EVENTS/512 items of 512 multiply-adds through 2 threads,
 *    consumed in order by the calling thread, which also works on items
 *    no thread took (the exporter's protocol): short items, so that the
 *    cost of handing them over shows.
 * Each figure is the best of 3 runs.  Both sides must agree (same ids,
 * same bytes, same sums) and every row must have measured something, or
 * the program fails (exit 1).
 *
 * usage: bench_toolbox [EVENTS]   (default 5000000; a first argument that
 * is a directory is skipped: scripts/bench passes the repository root) */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/alloc.h"
#include "common/intern.h"
#include "common/map.h"
#include "common/pool.h"
#include "common/utf8.h"
#include "common/vec.h"
#include "tbexport/error.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int g_failed;
static tbe_allocator g_a;

static void check(int ok, const char *what) {
  if (!ok) {
    fprintf(stderr, "bench_toolbox: %s\n", what);
    g_failed = 1;
  }
}

/* ---- the twins, as they were ---- */

/* trace/model/model.c's interner: FNV-1a + a final mix, a table of id + 1,
 * pointer and length arrays, an arena of 64 KB blocks. */
typedef struct old_block {
  struct old_block *next;
  size_t used, cap;
  char data[];
} old_block;

typedef struct old_intern {
  old_block *blocks;
  const char **sptr;
  uint32_t *slen;
  size_t nstr, capstr;
  uint32_t *shash;
  size_t shash_cap;
} old_intern;

static uint64_t old_hash_bytes(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < n; i++) {
    h ^= (unsigned char)s[i];
    h *= 1099511628211ULL;
  }
  h ^= h >> 29;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 32;
  return h;
}

static char *old_arena_copy(old_intern *p, const char *s, size_t n) {
  old_block *b = p->blocks;
  if (!b || b->cap - b->used < n + 1) {
    size_t cap = n + 1 > 65536 ? n + 1 : 65536;
    old_block *nb = malloc(sizeof(old_block) + cap);
    if (!nb) return NULL;
    nb->next = b;
    nb->used = 0;
    nb->cap = cap;
    p->blocks = b = nb;
  }
  char *d = b->data + b->used;
  memcpy(d, s, n);
  d[n] = 0;
  b->used += n + 1;
  return d;
}

static int old_rebuild(old_intern *p, size_t cap) {
  uint32_t *h = calloc(cap, sizeof *h);
  if (!h) return -1;
  for (size_t id = 0; id < p->nstr; id++) {
    size_t i = (size_t)old_hash_bytes(p->sptr[id], p->slen[id]) & (cap - 1);
    while (h[i]) i = (i + 1) & (cap - 1);
    h[i] = (uint32_t)id + 1;
  }
  free(p->shash);
  p->shash = h;
  p->shash_cap = cap;
  return 0;
}

static uint32_t old_find(const old_intern *p, const char *s, size_t len) {
  if (!p->shash_cap) return UINT32_MAX;
  size_t i = (size_t)old_hash_bytes(s, len) & (p->shash_cap - 1);
  while (p->shash[i]) {
    uint32_t id = p->shash[i] - 1;
    if (p->slen[id] == len && memcmp(p->sptr[id], s, len) == 0) return id;
    i = (i + 1) & (p->shash_cap - 1);
  }
  return UINT32_MAX;
}

static uint32_t old_add(old_intern *p, const char *s, size_t len) {
  uint32_t f = old_find(p, s, len);
  if (f != UINT32_MAX) return f;
  if ((p->nstr + 1) * 2 > p->shash_cap && old_rebuild(p, p->shash_cap ? p->shash_cap * 2 : 1024))
    return UINT32_MAX;
  if (p->nstr + 1 > p->capstr) {
    size_t c = p->capstr ? 2 * p->capstr : 16;
    const char **a1 = realloc(p->sptr, c * sizeof *a1);
    if (!a1) return UINT32_MAX;
    p->sptr = a1;
    uint32_t *a2 = realloc(p->slen, c * sizeof *a2);
    if (!a2) return UINT32_MAX;
    p->slen = a2;
    p->capstr = c;
  }
  char *d = old_arena_copy(p, s, len);
  if (!d) return UINT32_MAX;
  uint32_t id = (uint32_t)p->nstr++;
  p->sptr[id] = d;
  p->slen[id] = (uint32_t)len;
  size_t i = (size_t)old_hash_bytes(s, len) & (p->shash_cap - 1);
  while (p->shash[i]) i = (i + 1) & (p->shash_cap - 1);
  p->shash[i] = id + 1;
  return id;
}

static void old_free(old_intern *p) {
  for (old_block *b = p->blocks; b;) {
    old_block *n = b->next;
    free(b);
    b = n;
  }
  free(p->sptr);
  free(p->slen);
  free(p->shash);
}

/* import/nsys.c's int64 -> uint32 map (and import/xspace.c's, the same). */
typedef struct nmap {
  int64_t *keys;
  uint32_t *vals;
  size_t cap, n;
} nmap;

static uint64_t nmix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

static uint32_t nmap_get(const nmap *m, int64_t k) {
  if (!m->cap) return UINT32_MAX;
  size_t i = (size_t)nmix((uint64_t)k) & (m->cap - 1);
  while (m->vals[i] != UINT32_MAX) {
    if (m->keys[i] == k) return m->vals[i];
    i = (i + 1) & (m->cap - 1);
  }
  return UINT32_MAX;
}

static int nmap_rehash(nmap *m, size_t ncap) {
  int64_t *nk = malloc(ncap * sizeof *nk);
  uint32_t *nv = malloc(ncap * sizeof *nv);
  if (!nk || !nv) {
    free(nk);
    free(nv);
    return -1;
  }
  memset(nv, 0xff, ncap * sizeof *nv);
  for (size_t i = 0; i < m->cap; i++) {
    if (m->vals[i] == UINT32_MAX) continue;
    size_t j = (size_t)nmix((uint64_t)m->keys[i]) & (ncap - 1);
    while (nv[j] != UINT32_MAX) j = (j + 1) & (ncap - 1);
    nk[j] = m->keys[i];
    nv[j] = m->vals[i];
  }
  free(m->keys);
  free(m->vals);
  m->keys = nk;
  m->vals = nv;
  m->cap = ncap;
  return 0;
}

static int nmap_put(nmap *m, int64_t k, uint32_t v) {
  if ((m->n + 1) * 2 > m->cap && nmap_rehash(m, m->cap ? m->cap * 2 : 256)) return -1;
  size_t i = (size_t)nmix((uint64_t)k) & (m->cap - 1);
  while (m->vals[i] != UINT32_MAX) {
    if (m->keys[i] == k) {
      m->vals[i] = v;
      return 0;
    }
    i = (i + 1) & (m->cap - 1);
  }
  m->keys[i] = k;
  m->vals[i] = v;
  m->n++;
  return 0;
}

/* The inverse of nmix: how a hostile input picks ids for that table. */
static uint64_t inv_mul(uint64_t a) { /* Newton's iteration mod 2^64 */
  uint64_t x = a;
  for (int i = 0; i < 6; i++) x *= 2 - a * x;
  return x;
}
static uint64_t nunmix(uint64_t x) {
  x ^= x >> 33;
  x *= inv_mul(0xc4ceb9fe1a85ec53ULL);
  x ^= x >> 33;
  x *= inv_mul(0xff51afd7ed558ccdULL);
  x ^= x >> 33;
  return x;
}

/* trace/export/export_json.c's escaping and check (utf8_seq, utf8_bad_len,
 * escape_into, json_clean). */
static inline size_t old_utf8_seq(const unsigned char *p, size_t n) {
  unsigned c = p[0];
  if (c < 0x80) return 1;
  if (c < 0xC2 || c > 0xF4) return 0;
  size_t len = c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
  unsigned lo = 0x80, hi = 0xBF;
  if (c == 0xE0) lo = 0xA0;
  else if (c == 0xED) hi = 0x9F;
  else if (c == 0xF0) lo = 0x90;
  else if (c == 0xF4) hi = 0x8F;
  if (n < 2 || p[1] < lo || p[1] > hi) return 0;
  for (size_t i = 2; i < len; i++)
    if (i >= n || (p[i] & 0xC0) != 0x80) return 0;
  return len;
}

static inline size_t old_utf8_bad_len(const unsigned char *p, size_t n) {
  unsigned c = p[0];
  if (c < 0xC2 || c > 0xF4) return 1;
  size_t len = c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
  unsigned lo = 0x80, hi = 0xBF;
  if (c == 0xE0) lo = 0xA0;
  else if (c == 0xED) hi = 0x9F;
  else if (c == 0xF0) lo = 0x90;
  else if (c == 0xF4) hi = 0x8F;
  size_t i = 1;
  if (i < n && p[1] >= lo && p[1] <= hi) {
    i = 2;
    while (i < len && i < n && (p[i] & 0xC0) == 0x80) i++;
  }
  return i;
}

static size_t old_escape_into(char *d, const char *s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char *p = (const unsigned char *)s, *e = p + n;
  char *o = d;
  while (p < e) {
    unsigned c = *p;
    if (c >= 0x20 && c < 0x80) {
      if (c == '"' || c == '\\') *o++ = '\\';
      *o++ = (char)c;
      p++;
    } else if (c < 0x20) {
      memcpy(o, "\\u00", 4);
      o[4] = hex[c >> 4];
      o[5] = hex[c & 15];
      o += 6;
      p++;
    } else {
      size_t l = old_utf8_seq(p, (size_t)(e - p));
      if (l) {
        memcpy(o, p, l);
        o += l;
        p += l;
      } else {
        memcpy(o, "\xEF\xBF\xBD", 3);
        o += 3;
        p += old_utf8_bad_len(p, (size_t)(e - p));
      }
    }
  }
  return (size_t)(o - d);
}

static int old_json_clean(const char *s, size_t n) {
  const unsigned char *p = (const unsigned char *)s, *e = p + n;
  while (p < e) {
    unsigned c = *p;
    if (c >= 0x80) {
      size_t l = old_utf8_seq(p, (size_t)(e - p));
      if (!l) return 0;
      p += l;
      continue;
    }
    if (c < 0x20 || c == '"' || c == '\\') return 0;
    p++;
  }
  return 1;
}

/* common/fsutil.c's tbe__utf8_valid. */
static int old_utf8_valid(const char *s, size_t n) {
  const unsigned char *p = (const unsigned char *)s, *e = p + n;
  while (p < e) {
    unsigned c = *p;
    if (c < 0x80) {
      p++;
      continue;
    }
    int len;
    unsigned cp;
    if (c >= 0xC2 && c <= 0xDF) len = 2, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, cp = c & 0x07;
    else return 0;
    if (e - p < len) return 0;
    for (int i = 1; i < len; i++) {
      if ((p[i] & 0xC0) != 0x80) return 0;
      cp = (cp << 6) | (p[i] & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF))) return 0;
    if (cp >= 0xD800 && cp <= 0xDFFF) return 0;
    p += len;
  }
  return 1;
}

/* ---- the work ---- */

/* bench_import's strings. */
static const char *const kernels[] = {
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
    "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)",
    "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::"
    "CUDAFunctor_add<float> >(at::TensorIteratorBase&, at::native::CUDAFunctor_add<float> const&)"
    "::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<at::native::CUDAFunctor_add<float> "
    ">(at::TensorIteratorBase&, at::native::CUDAFunctor_add<float> const&)::{lambda(int)#1})",
    "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_segment_k_"
    "off_kernel__5x_cublas",
    "void cudnn::engines_precompiled::nchwToNhwcKernel<float, float, float, false, true, "
    "(cudnnKernelDataType_t)2>(cudnn::engines_precompiled::nchw2nhwc_params_t<float>, float const*, "
    "float*)",
    "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::"
    "(anonymous namespace)::LogSoftMaxForwardEpilogue>(float*, float const*, int)",
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, "
    "float, float, float>, unsigned int, float, 4, 4> >(at::native::ReduceOp<float, at::native::"
    "MeanOps<float, float, float, float>, unsigned int, float, 4, 4>)",
};
static const char *const ops[] = {"aten::add_", "aten::mm", "aten::convolution", "aten::fill_",
                                  "aten::_log_softmax", "aten::mean"};
static const char *const cpu_keys[] = {"Record function id", "Concrete Inputs", "Input type",
                                       "Input Strides", "Input Dims", "Ev Idx"};

typedef struct sref {
  const char *s;
  size_t n;
} sref;

/* The interned strings of one launch `op` (bench_import's five or six
 * events); returns the count. */
static size_t launch_strings(uint64_t op, sref *out, char (*vals)[64]) {
  size_t n = 0, k = op % 6;
#define S(x) (out[n].s = (x), out[n].n = strlen(x), n++)
  S(ops[k]);
  S("cpu_op");
  for (size_t i = 0; i < 6; i++) S(cpu_keys[i]);
  snprintf(vals[0], 64, "[[%d, 1], [%d, 1], []]", 10 + (int)k, 10 + (int)k);
  snprintf(vals[1], 64, "[[32, %d], [32, %d], []]", 10 + (int)k, 10 + (int)k);
  S(vals[0]);
  S(vals[1]);
  S("[\"float\", \"float\", \"Scalar\"]");
  S("[\"\", \"\", \"1\"]");
  S("cudaLaunchKernel");
  S("cuda_runtime");
  S("cbid");
  S("ac2g");
  if (op % 8 == 3) S("Memcpy HtoD (Pageable -> Device)"), S("gpu_memcpy");
  else if (op % 8 == 6) S("Memset (Device)"), S("gpu_memset");
  else S(kernels[k]), S("kernel");
  S("ac2g");
  if (op % 4 == 1) S("[memory]"), S("cpu_instant_event");
  if (op % 20 == 10) S("fwdbwd"), S("fwdbwd");
#undef S
  return n;
}

typedef struct row {
  const char *name, *unit;
  double twin, tool; /* seconds, best of runs */
  double work;       /* units of work per run */
} row;

static void best(double *b, double t) {
  if (*b == 0 || t < *b) *b = t;
}

/* intern, trace names */
static void bench_intern_names(row *r, uint64_t events) {
  uint64_t launches = events / 5;
  sref s[32];
  char vals[2][64];
  uint64_t sum_old = 0, sum_new = 0, lookups = 0;
  for (int rep = 0; rep < 3; rep++) {
    old_intern o;
    memset(&o, 0, sizeof o);
    uint64_t sum = 0;
    lookups = 0;
    double t0 = now();
    for (uint64_t op = 0; op < launches; op++) {
      size_t n = launch_strings(op, s, vals);
      for (size_t i = 0; i < n; i++) sum += old_add(&o, s[i].s, s[i].n);
      lookups += n;
    }
    best(&r->twin, now() - t0);
    sum_old = sum;
    old_free(&o);

    tbe__intern in;
    tbe__intern_init(&in, &g_a, TBE__SEED_PROCESS);
    sum = 0;
    t0 = now();
    for (uint64_t op = 0; op < launches; op++) {
      size_t n = launch_strings(op, s, vals);
      for (size_t i = 0; i < n; i++) {
        uint32_t id;
        tbe__intern_add(&in, s[i].s, s[i].n, &id, NULL);
        sum += id;
      }
    }
    best(&r->tool, now() - t0);
    sum_new = sum;
    check(tbe__intern_error(&in) == 0, "intern: error");
    tbe__intern_deinit(&in);
  }
  check(sum_old == sum_new, "intern names: the ids differ from the twin's");
  r->work = (double)lookups;
}

/* intern, many distinct names */
static void bench_intern_distinct(row *r, uint64_t events) {
  size_t n = (size_t)(events / 5);
  char *text = malloc(n * 24);
  uint32_t *len = malloc(n * sizeof *len);
  if (!text || !len) {
    check(0, "out of memory");
    return;
  }
  for (size_t i = 0; i < n; i++)
    len[i] = (uint32_t)snprintf(text + 24 * i, 24, "kernel_%zu_x%zu", i * 2654435761u % 1000003, i);
  uint64_t sum_old = 0, sum_new = 0;
  for (int rep = 0; rep < 3; rep++) {
    old_intern o;
    memset(&o, 0, sizeof o);
    uint64_t sum = 0;
    double t0 = now();
    for (int pass = 0; pass < 2; pass++)
      for (size_t i = 0; i < n; i++) sum += old_add(&o, text + 24 * i, len[i]);
    best(&r->twin, now() - t0);
    sum_old = sum;
    old_free(&o);
    tbe__intern in;
    tbe__intern_init(&in, &g_a, TBE__SEED_PROCESS);
    sum = 0;
    t0 = now();
    for (int pass = 0; pass < 2; pass++)
      for (size_t i = 0; i < n; i++) {
        uint32_t id;
        tbe__intern_add(&in, text + 24 * i, len[i], &id, NULL);
        sum += id;
      }
    best(&r->tool, now() - t0);
    sum_new = sum;
    check(tbe__intern_count(&in) == n, "intern distinct: wrong count");
    tbe__intern_deinit(&in);
  }
  check(sum_old == sum_new, "intern distinct: the ids differ from the twin's");
  r->work = 2.0 * (double)n;
  free(text);
  free(len);
}

/* map, correlations: insert at the launch, look up at the GPU work and
 * again at the flow's end */
static void bench_map_corr(row *r, uint64_t events) {
  uint64_t launches = events / 5, base = 600;
  uint64_t sum_old = 0, sum_new = 0;
  for (int rep = 0; rep < 3; rep++) {
    nmap m = {0};
    uint64_t sum = 0;
    double t0 = now();
    for (uint64_t i = 0; i < launches; i++) {
      nmap_put(&m, (int64_t)(base + i), (uint32_t)(5 * i));
      sum += nmap_get(&m, (int64_t)(base + i));
      sum += nmap_get(&m, (int64_t)(base + i / 2));
    }
    best(&r->twin, now() - t0);
    sum_old = sum;
    free(m.keys);
    free(m.vals);
    tbe__map tm;
    tbe__map_init(&tm, &g_a, TBE__SEED_PROCESS);
    sum = 0;
    t0 = now();
    for (uint64_t i = 0; i < launches; i++) {
      tbe__map_set(&tm, base + i, (uint32_t)(5 * i));
      sum += *tbe__map_get(&tm, base + i);
      sum += *tbe__map_get(&tm, base + i / 2);
    }
    best(&r->tool, now() - t0);
    sum_new = sum;
    tbe__map_deinit(&tm);
  }
  check(sum_old == sum_new, "map: the values differ from the twin's");
  r->work = 3.0 * (double)launches;
}

/* map, hostile ids: keys the twin's mixer sends to one slot */
static void bench_map_hostile(row *r) {
  enum { N = 20000 };
  uint64_t sum_old = 0, sum_new = 0;
  for (int rep = 0; rep < 3; rep++) {
    nmap m = {0};
    uint64_t sum = 0;
    double t0 = now();
    for (uint64_t i = 0; i < N; i++) nmap_put(&m, (int64_t)nunmix(i << 24), (uint32_t)i);
    for (uint64_t i = 0; i < N; i += 7) sum += nmap_get(&m, (int64_t)nunmix(i << 24));
    best(&r->twin, now() - t0);
    sum_old = sum;
    free(m.keys);
    free(m.vals);
    tbe__map tm;
    tbe__map_init(&tm, &g_a, TBE__SEED_PROCESS);
    sum = 0;
    t0 = now();
    for (uint64_t i = 0; i < N; i++) tbe__map_set(&tm, nunmix(i << 24), (uint32_t)i);
    for (uint64_t i = 0; i < N; i += 7) sum += *tbe__map_get(&tm, nunmix(i << 24));
    best(&r->tool, now() - t0);
    sum_new = sum;
    tbe__map_deinit(&tm);
  }
  check(sum_old == sum_new, "map hostile: the values differ from the twin's");
  r->work = N + N / 7.0;
}

/* the names the JSON and UTF-8 rows work on: kernel names, some with a
 * quote and a bad byte */
static size_t json_names(char (*names)[400], size_t *len) {
  size_t n = 0;
  for (size_t i = 0; i < 6; i++)
    for (int v = 0; v < 4; v++) {
      const char *tail = v == 1 ? " \"q\"" : v == 2 ? " caf\xc3\xa9" : v == 3 ? " \xff" : "";
      len[n] = (size_t)snprintf(names[n], 400, "%s%s", kernels[i], tail);
      n++;
    }
  return n;
}

static void bench_json(row *r, row *rv, uint64_t events) {
  char names[24][400], out[2400];
  size_t len[24], nn = json_names(names, len);
  uint64_t iters = events / 10, bytes = 0;
  uint64_t sum_old = 0, sum_new = 0, vold = 0, vnew = 0;
  for (int rep = 0; rep < 3; rep++) {
    uint64_t sum = 0;
    bytes = 0;
    double t0 = now();
    for (uint64_t i = 0; i < iters; i++) {
      size_t k = i % nn;
      if (!old_json_clean(names[k], len[k]))
        sum += old_escape_into(out, names[k], len[k]) + (uint8_t)out[len[k] / 2];
      else sum += len[k];
      bytes += len[k];
    }
    best(&r->twin, now() - t0);
    sum_old = sum;
    sum = 0;
    t0 = now();
    for (uint64_t i = 0; i < iters; i++) {
      size_t k = i % nn;
      if (!tbe__json_plain(names[k], len[k]))
        sum += tbe__json_escape(out, names[k], len[k], 0) + (uint8_t)out[len[k] / 2];
      else sum += len[k];
    }
    best(&r->tool, now() - t0);
    sum_new = sum;
    /* UTF-8 validation of the same names */
    sum = 0;
    t0 = now();
    for (uint64_t i = 0; i < iters; i++)
      sum += (uint64_t)old_utf8_valid(names[i % nn], len[i % nn]) * (i & 15);
    best(&rv->twin, now() - t0);
    vold = sum;
    sum = 0;
    t0 = now();
    for (uint64_t i = 0; i < iters; i++)
      sum += (uint64_t)tbe__utf8_valid(names[i % nn], len[i % nn]) * (i & 15);
    best(&rv->tool, now() - t0);
    vnew = sum;
  }
  check(sum_old == sum_new, "json: the bytes differ from the twin's");
  check(vold == vnew, "utf8: the answers differ from the twin's");
  r->work = rv->work = (double)bytes / 1e6;
}

/* vec: model.c's grow-by-one (tbe__grow on every push) against a push */
typedef struct elem16 {
  uint64_t a, b;
} elem16;

static void bench_vec(row *r, uint64_t events) {
  uint64_t n = events * 4, sum_old = 0, sum_new = 0;
  for (int rep = 0; rep < 3; rep++) {
    elem16 *arr = NULL;
    size_t cnt = 0, cap = 0;
    double t0 = now();
    for (uint64_t i = 0; i < n; i++) {
      void *p = arr;
      if (tbe__grow(&g_a, &p, &cap, cnt + 1, sizeof *arr)) break;
      arr = p;
      arr[cnt].a = i;
      arr[cnt++].b = i ^ 5;
    }
    best(&r->twin, now() - t0);
    sum_old = cnt ? arr[cnt / 3].a + arr[cnt - 1].b + cnt : 0;
    tbe__free(&g_a, arr);
    tbe__vec v;
    tbe__vec_init(&v, &g_a, sizeof(elem16));
    t0 = now();
    for (uint64_t i = 0; i < n; i++) {
      elem16 *e = TBE__VEC_PUSH(&v, elem16);
      if (!e) break;
      e->a = i;
      e->b = i ^ 5;
    }
    best(&r->tool, now() - t0);
    size_t vn = tbe__vec_len(&v);
    sum_new = vn ? TBE__VEC_AT(&v, elem16, vn / 3).a + TBE__VEC_AT(&v, elem16, vn - 1).b + vn : 0;
    tbe__vec_deinit(&v);
  }
  check(sum_old == sum_new && sum_old != 0, "vec: the arrays differ");
  r->work = (double)n;
}

/* pool: the export's protocol (a counter of chunks taken, one condition
 * variable, the caller formatting chunks nobody took) against tbe__pool */
enum { UNIT = 512 }; /* steps of work per item: short, so the hand-overs show */

static uint64_t do_chunk(uint64_t k) {
  uint64_t h = k;
  for (int i = 0; i < UNIT; i++) h = h * 6364136223846793005ull + (uint64_t)i;
  return h;
}

typedef struct jp {
  uint64_t *res;
  int *ready;
  uint32_t nslots, nchunks, next, written;
  int stop;
  pthread_mutex_t mu;
  pthread_cond_t cv;
} jp;

static void *jp_worker(void *arg) {
  jp *p = arg;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    if (p->stop || p->next >= p->nchunks) break;
    if (p->next >= p->written + p->nslots) {
      pthread_cond_wait(&p->cv, &p->mu);
      continue;
    }
    uint32_t k = p->next++;
    pthread_mutex_unlock(&p->mu);
    uint64_t v = do_chunk(k);
    pthread_mutex_lock(&p->mu);
    p->res[k % p->nslots] = v;
    p->ready[k % p->nslots] = 1;
    pthread_cond_broadcast(&p->cv);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

static uint64_t twin_pool(uint32_t nchunks, int nth) {
  jp p;
  memset(&p, 0, sizeof p);
  p.nslots = 2 * (uint32_t)nth;
  p.nchunks = nchunks;
  p.res = calloc(p.nslots, sizeof *p.res);
  p.ready = calloc(p.nslots, sizeof *p.ready);
  pthread_mutex_init(&p.mu, NULL);
  pthread_cond_init(&p.cv, NULL);
  pthread_t th[8];
  for (int i = 0; i < nth; i++) pthread_create(&th[i], NULL, jp_worker, &p);
  uint64_t sum = 0;
  for (uint32_t k = 0; k < nchunks; k++) {
    uint32_t s = k % p.nslots;
    pthread_mutex_lock(&p.mu);
    while (!p.ready[s] && p.next > k) pthread_cond_wait(&p.cv, &p.mu);
    int mine = !p.ready[s];
    if (mine) p.next = k + 1;
    pthread_mutex_unlock(&p.mu);
    uint64_t v = mine ? do_chunk(k) : p.res[s];
    sum = sum * 31 + v;
    pthread_mutex_lock(&p.mu);
    p.ready[s] = 0;
    p.written = k + 1;
    pthread_cond_broadcast(&p.cv);
    pthread_mutex_unlock(&p.mu);
  }
  pthread_mutex_lock(&p.mu);
  p.stop = 1;
  pthread_cond_broadcast(&p.cv);
  pthread_mutex_unlock(&p.mu);
  for (int i = 0; i < nth; i++) pthread_join(th[i], NULL);
  pthread_cond_destroy(&p.cv);
  pthread_mutex_destroy(&p.mu);
  free(p.res);
  free(p.ready);
  return sum;
}

typedef struct pslot {
  uint64_t v;
} pslot;

static int pool_work(void *ctx, void *w, void *slot, uint64_t seq) {
  (void)ctx;
  (void)w;
  ((pslot *)slot)->v = do_chunk(seq);
  return 0;
}

static uint64_t tool_pool(uint32_t nchunks, int nth) {
  tbe__pool_config cfg = {.threads = nth, .slots = 2 * (uint32_t)nth, .slot_size = sizeof(pslot),
                          .work = pool_work, .allocator = &g_a};
  tbe__pool *p;
  if (tbe__pool_create(&p, &cfg)) return 0;
  uint64_t sum = 0, sub = 0, seq;
  for (uint32_t k = 0; k < nchunks; k++) {
    while (sub < nchunks && tbe__pool_try_claim(p, &seq)) tbe__pool_submit(p, seq, 1), sub++;
    void *slot;
    if (tbe__pool_next(p, &slot, &seq) || seq != k) {
      sum = 0;
      break;
    }
    sum = sum * 31 + ((pslot *)slot)->v;
    tbe__pool_release(p);
  }
  tbe__pool_destroy(p);
  return sum;
}

static void bench_pool(row *r, uint64_t events) {
  uint32_t nchunks = (uint32_t)(events / UNIT);
  uint64_t a = 0, b = 0;
  for (int rep = 0; rep < 3; rep++) {
    double t0 = now();
    a = twin_pool(nchunks, 2);
    best(&r->twin, now() - t0);
    t0 = now();
    b = tool_pool(nchunks, 2);
    best(&r->tool, now() - t0);
  }
  check(a == b && a != 0, "pool: the results differ from the twin's");
  r->work = nchunks;
}

int main(int argc, char **argv) {
  int i = 1;
  uint64_t events = 5000000;
  if (i < argc) {
    char *end;
    events = strtoull(argv[i], &end, 10);
    if (argc > 2 || *end || events < 10000) {
      fprintf(stderr, "usage: bench_toolbox [EVENTS >= 10000]\n");
      return 2;
    }
  }
  tbe__allocator_init(&g_a, NULL);
  row rows[8];
  memset(rows, 0, sizeof rows);
  rows[0].name = "intern: trace names (per event)", rows[0].unit = "lookups";
  rows[1].name = "intern: distinct names, add + find", rows[1].unit = "lookups";
  rows[2].name = "map: correlation ids", rows[2].unit = "ops";
  rows[3].name = "map: 20k hostile ids", rows[3].unit = "ops";
  rows[4].name = "json: escape kernel names", rows[4].unit = "MB";
  rows[5].name = "utf8: validate kernel names", rows[5].unit = "MB";
  rows[6].name = "vec: push 16-byte elements", rows[6].unit = "pushes";
  rows[7].name = "pool: 512-step items, 2 threads", rows[7].unit = "items";
  bench_intern_names(&rows[0], events);
  bench_intern_distinct(&rows[1], events);
  bench_map_corr(&rows[2], events);
  bench_map_hostile(&rows[3]);
  bench_json(&rows[4], &rows[5], events);
  bench_vec(&rows[6], events);
  bench_pool(&rows[7], events);

  printf("Toolbox against its twins, %" PRIu64 " events' worth of work, best of 3\n", events);
  printf("%-36s %17s %11s %11s %12s %12s %7s\n", "", "work per run", "twin", "toolbox",
         "twin", "toolbox", "ratio");
  for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
    row *r = &rows[k];
    check(r->work > 0 && r->twin > 0 && r->tool > 0, "a row measured nothing");
    int mb = strcmp(r->unit, "MB") == 0;
    /* per unit: ns per lookup/op/push/chunk, or MB/s */
    const char *u = mb ? "MB/s" : "ns";
    double ut = mb ? r->work / r->twin : r->twin / r->work * 1e9;
    double uo = mb ? r->work / r->tool : r->tool / r->work * 1e9;
    printf("%-36s %9.4g %-7s %8.1f ms %8.1f ms %7.1f %-4s %7.1f %-4s %6.2fx\n", r->name, r->work,
           r->unit, r->twin * 1e3, r->tool * 1e3, ut, u, uo, u, r->twin / r->tool);
  }
  printf("ratio = twin time / toolbox time (above 1: the toolbox is faster)\n");
  if (g_failed) {
    fprintf(stderr, "bench_toolbox: failed\n");
    return 1;
  }
  return 0;
}
