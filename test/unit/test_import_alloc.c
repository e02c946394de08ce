/* test_import_alloc.c: every allocation an import makes goes through the
 * caller's tbe_allocator.
 *
 * This executable interposes malloc, calloc, realloc, free and friends:
 * while an import runs ("watching"), every call that reaches them from
 * any thread is counted and its caller recorded.  An import whose trace
 * and options carry a counting tbe_allocator must make no such call, so
 * an importer that calls malloc directly (or hands a library its default
 * allocator: yajl, zlib, protobuf-c) fails here, naming the call site.
 * Over: Kineto JSON plain and gzip, read on one thread and on the
 * threaded pipeline (tiny chunks, so every path of it runs), JAX's
 * trace.json.gz, XSpace, the collector's spool, and the same under the
 * allocation-failure sweep
 * of testutil.c (each allocation failing in turn, no leak), which then
 * reaches every allocation site of the import.  The inputs hold no
 * mangled kernel names: libiberty's demangler, which the model calls when
 * it finishes a trace, allocates with malloc (it has no allocator hook).
 * SQLite (nsys) keeps process-wide memory of its own and is not covered.
 */
#include <dlfcn.h>
#include <execinfo.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <unistd.h>
#include <zlib.h>

#include "tbexport.h"
#include "testutil.h"

/* ---- the interposer ----
 * Not under the sanitizers, which interpose these functions themselves:
 * the plain build checks the call sites, the sanitizer builds the sweep's
 * leaks and faults. */
static int g_watch;
static long g_calls;
#define MAX_SITES 16
static void *g_sites[MAX_SITES];

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define WATCH 1

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void __libc_free(void *p);
extern void *__libc_memalign(size_t align, size_t n);

static void note(void *caller) {
  if (!__atomic_load_n(&g_watch, __ATOMIC_RELAXED)) return;
  long k = __atomic_fetch_add(&g_calls, 1, __ATOMIC_RELAXED);
  if (k < MAX_SITES) g_sites[k] = caller;
}

void *malloc(size_t n) {
  note(__builtin_return_address(0));
  return __libc_malloc(n);
}
void *calloc(size_t n, size_t size) {
  note(__builtin_return_address(0));
  return __libc_calloc(n, size);
}
void *realloc(void *p, size_t n) {
  note(__builtin_return_address(0));
  return __libc_realloc(p, n);
}
void free(void *p) {
  if (p) note(__builtin_return_address(0));
  __libc_free(p);
}
void *memalign(size_t align, size_t n) {
  note(__builtin_return_address(0));
  return __libc_memalign(align, n);
}
int posix_memalign(void **out, size_t align, size_t n) {
  note(__builtin_return_address(0));
  void *p = __libc_memalign(align, n);
  if (!p) return 12; /* ENOMEM */
  *out = p;
  return 0;
}
void *aligned_alloc(size_t align, size_t n) {
  note(__builtin_return_address(0));
  return __libc_memalign(align, n);
}
#else
#define __libc_malloc malloc
#define __libc_realloc realloc
#define __libc_free free
#endif

/* ---- a counting allocator (the caller's) ---- */

static long g_mine;

static void *c_alloc(void *o, size_t n) {
  (void)o;
  __atomic_fetch_add(&g_mine, 1, __ATOMIC_RELAXED);
  return __libc_malloc(n ? n : 1);
}
static void *c_realloc(void *o, void *p, size_t old, size_t n) {
  (void)o;
  (void)old;
  __atomic_fetch_add(&g_mine, 1, __ATOMIC_RELAXED);
  return __libc_realloc(p, n ? n : 1);
}
static void c_free(void *o, void *p) {
  (void)o;
  __libc_free(p);
}

extern int tbe__chrome_json_threads;
extern int tbe__chrome_json_workers;
extern size_t tbe__chrome_json_chunk;

/* Imports `path` with the counting allocator given to the trace (and so,
 * by default, to the import) or, with `in_opts`, to the options only. */
static void import_watched(const char *path, int in_opts) {
  tbe_allocator mine = {c_alloc, c_realloc, c_free, NULL};
  tbe_trace *t = NULL;
  assert_int_equal(tbe_trace_create(&t, in_opts ? NULL : &mine), 0);
  tbe_import_options o;
  tbe_import_options_init(&o);
  o.allocator = in_opts ? &mine : NULL;
  tbe_import_error err;
  g_calls = 0;
  g_mine = 0;
  __atomic_store_n(&g_watch, in_opts ? 0 : 1, __ATOMIC_SEQ_CST);
  int rc = tbe_import_file(t, path, &o, &err);
  __atomic_store_n(&g_watch, 0, __ATOMIC_SEQ_CST);
  if (rc) fprintf(stderr, "%s: %s\n", path, err.message);
  assert_int_equal(rc, 0);
  long calls = g_calls;
  if (calls) {
    fprintf(stderr, "%s: %ld allocations outside the allocator; the first from:\n", path, calls);
    long k = calls < MAX_SITES ? calls : MAX_SITES;
    backtrace_symbols_fd(g_sites, (int)k, 2);
  }
  assert_int_equal(calls, 0);
  assert_true(g_mine > 10); /* the import did allocate, through `mine` */
  tbe_trace_free(t);
}

static char *gzip_copy(const char *src) {
  static char dst[256];
  snprintf(dst, sizeof dst, "/tmp/tbe_import_alloc_%d.json.gz", (int)getpid());
  FILE *f = fopen(src, "rb");
  assert_non_null(f);
  gzFile g = gzopen(dst, "wb");
  assert_non_null(g);
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) assert_int_equal(gzwrite(g, buf, (unsigned)n), (int)n);
  fclose(f);
  assert_int_equal(gzclose(g), Z_OK);
  return dst;
}

static void test_json_one_thread(void **state) {
  (void)state;
  tbe__chrome_json_threads = 0;
  import_watched(tu_data("kineto/h200_add_loop.trace.json"), 0);
  import_watched(tu_data("kineto/h200_cnn_fp32.pt.trace.json"), 0);
  import_watched(tu_data("cli/small.trace.json"), 0);
  char *gz = gzip_copy(tu_data("kineto/h200_add_loop.trace.json"));
  import_watched(gz, 0);
  unlink(gz);
  tbe__chrome_json_threads = -1;
}

static void test_json_threaded(void **state) {
  (void)state;
  tbe__chrome_json_threads = 1;
  tbe__chrome_json_workers = 3;
  tbe__chrome_json_chunk = 4096;
  import_watched(tu_data("kineto/h200_cnn_bf16.pt.trace.json"), 0);
  import_watched(tu_data("jax/h200_matmul.trace.json.gz"), 0);
  tbe__chrome_json_threads = -1;
  tbe__chrome_json_workers = 0;
  tbe__chrome_json_chunk = 0;
}

static void test_xspace(void **state) {
  (void)state;
  import_watched(tu_data("jax/h200_matmul.xplane.pb"), 0);
}

/* Our own outputs read back: the JSON's tbexport* keys (read into trees
 * of their own) and the XSpace's tbexport_* stats. */
static void test_our_outputs(void **state) {
  (void)state;
  tbe_trace *t = NULL;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  assert_int_equal(tbe_import_file(t, tu_data("kineto/h200_add_loop.trace.json"), NULL, NULL), 0);
  assert_int_equal(tbe_trace_warn(t, "a warning of the trace's own"), 0);
  char json[128], xs[128];
  snprintf(json, sizeof json, "/tmp/tbe_import_alloc_%d.trace.json", (int)getpid());
  snprintf(xs, sizeof xs, "/tmp/tbe_import_alloc_%d.xplane.pb", (int)getpid());
  assert_int_equal(tbe_export_chrome_json(t, json, 0, 1), 0);
  assert_int_equal(tbe_export_xplane(t, xs, 1), 0);
  tbe_trace_free(t);
  import_watched(json, 0);
  import_watched(xs, 0);
  unlink(json);
  unlink(xs);
}

/* The allocator of the options alone carries the import's memory: the
 * trace's (the default one) then sees only the model's. */
static void test_options_allocator(void **state) {
  (void)state;
  import_watched(tu_data("kineto/h200_add_loop.trace.json"), 1);
  import_watched(tu_data("jax/h200_matmul.xplane.pb"), 1);
}

/* Under the sweep every allocation of the import fails in turn (the
 * importer's scratch included, now that it draws on the trace's
 * allocator): each failure is TBE_ENOMEM, named, and leaks nothing. */
static void test_sweep_threaded(void **state) {
  (void)state;
  tbe__chrome_json_threads = 1;
  tbe__chrome_json_workers = 2;
  tbe__chrome_json_chunk = 2048;
  long failed = tu_import_alloc_sweep(tu_data("cli/small2.trace.json"), 100000);
  print_message("alloc sweep threaded json: %ld failing runs\n", failed);
  tbe__chrome_json_threads = -1;
  tbe__chrome_json_workers = 0;
  tbe__chrome_json_chunk = 0;
}

/* The collector's spool: the conversion's arrays and maps are on the
 * import's allocator too (tbe__convert_opts.allocator), and every
 * allocation of it may fail.  Seeds of the spool fuzz corpus, without
 * mangled kernel names. */
static void test_spool(void **state) {
  (void)state;
  import_watched(tu_data("../fuzz/corpus/spool/full.spool"), 0);
  import_watched(tu_data("../fuzz/corpus/spool/metric_items.spool"), 0);
  import_watched(tu_data("../fuzz/corpus/spool/strids.spool"), 0);
  import_watched(tu_data("../fuzz/corpus/spool/metric_items.spool"), 1);
  long failed = tu_import_alloc_sweep(tu_data("../fuzz/corpus/spool/metric_items.spool"), 100000);
  print_message("alloc sweep spool: %ld failing runs\n", failed);
  failed = tu_import_alloc_sweep(tu_data("../fuzz/corpus/spool/strids.spool"), 100000);
  print_message("alloc sweep spool (string ids): %ld failing runs\n", failed);
}

/* The check itself: a malloc while watching is counted. */
static void test_interposer_counts(void **state) {
  (void)state;
#ifdef WATCH
  void *(*volatile m)(size_t) = malloc;
  g_calls = 0;
  __atomic_store_n(&g_watch, 1, __ATOMIC_SEQ_CST);
  free(m(16));
  __atomic_store_n(&g_watch, 0, __ATOMIC_SEQ_CST);
  assert_int_equal(g_calls, 2);
#endif
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_interposer_counts),
      cmocka_unit_test(test_json_one_thread),   cmocka_unit_test(test_json_threaded),
      cmocka_unit_test(test_xspace),            cmocka_unit_test(test_our_outputs),
      cmocka_unit_test(test_options_allocator),
      cmocka_unit_test(test_sweep_threaded),
      cmocka_unit_test(test_spool),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
