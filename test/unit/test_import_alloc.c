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
 * reaches every allocation site of the import.  The spool is swept as
 * tbe_import_file reads it (the fuzz seeds, the hardware-metric spools of
 * test/data/metrics, a collected-like spool built here with an item of
 * every kind) and as the session converts it, with a capture range, --steps
 * and a launcher rank (the windows, NVTX pairing, operators and replayed
 * kernels allocate only then), the scratch on the trace's allocator or on
 * the options' alone.  The inputs hold no
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

#include "common/alloc.h"
#include "common/buf.h"
#include "events/spool.h"
#include "import/spool.h"
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

/* ---- a collected-like spool ----
 * What the collector writes for one process, small: two frames holding an
 * item of every kind the conversion reads (strings, device, context,
 * thread name, collection windows, API calls with cudaProfilerStart/Stop,
 * kernels and one the range profiler replayed, a copy, a memset, a sync,
 * overhead, memory, NVTX ranges paired, nested, asynchronous, unclosed,
 * orphaned, with data, a mark, step marks, operators, hardware metrics and
 * their status, a note, the rank, stats, the end).  No mangled names: the
 * demangler allocates with malloc (see above). */

#define T0 1700000000000000000ll

enum {
  S_GEMM = 1,
  S_LAUNCH,
  S_CAPTURE,
  S_TRAIN,
  S_INNER,
  S_MM,
  S_SHAPES,
  S_PSTART,
  S_PSTOP,
  S_DUR,
  S_SM,
  S_WORKER,
  S_GPU,
  S_REPLAYED
};

static void sp_api(tbe__buf *p, uint32_t corr, uint32_t name, int64_t s, int64_t e) {
  tbe__sp_api a = {
      .start = T0 + s, .end = T0 + e, .corr = corr, .pid = 321, .tid = 322, .name = name};
  tbe__spool_item(p, TBE__SP_API, &a, sizeof a);
}

static void sp_kernel(tbe__buf *p, uint32_t corr, uint32_t name, int64_t s, int64_t e) {
  tbe__sp_kernel k = {.start = s ? T0 + s : 0,
                      .end = e ? T0 + e : 0,
                      .corr = corr,
                      .context = 1,
                      .stream = 7,
                      .name = name,
                      .grid = {4, 1, 1},
                      .block = {128, 1, 1},
                      .registers = 32};
  tbe__spool_item(p, TBE__SP_KERNEL, &k, sizeof k);
}

static void sp_marker(tbe__buf *p, uint32_t id, uint32_t flags, uint32_t name, uint32_t tid,
                      int64_t ts) {
  tbe__sp_marker m = {.ts = T0 + ts,
                      .id = id,
                      .flags = flags,
                      .obj_kind = TBE__OBJ_THREAD,
                      .obj = {321, tid, 0},
                      .name = name};
  tbe__spool_item(p, TBE__SP_MARKER, &m, sizeof m);
}

static void sp_op(tbe__buf *p, uint64_t id, uint32_t flags, int64_t ts) {
  tbe__sp_op o = {.ts = T0 + ts,
                  .id = id,
                  .pid = 321,
                  .tid = 322,
                  .name = flags & TBE__OPF_BEGIN ? S_MM : 0,
                  .shapes = flags & TBE__OPF_BEGIN ? S_SHAPES : 0,
                  .seq = (int64_t)id,
                  .flags = flags};
  tbe__spool_item(p, TBE__SP_OP, &o, sizeof o);
}

static void sp_frame(int fd, tbe__buf *p) {
  assert_int_equal(tbe__buf_error(p), 0);
  assert_int_equal(tbe__spool_write_frame(fd, p->data, p->len), 0);
  tbe__buf_clear(p);
}

/* Writes the spool to `path`. */
static void collected_spool(const char *path) {
  static const char *const strs[] = {"",
                                     "k_gemm",
                                     "cudaLaunchKernel",
                                     "capture",
                                     "train",
                                     "inner",
                                     "aten::mm",
                                     "[[4, 8], [8]]",
                                     "cudaProfilerStart",
                                     "cudaProfilerStop",
                                     "duration_ns",
                                     "sm_active_pct",
                                     "worker",
                                     "NVIDIA H200",
                                     "k_replayed"};
  tbe_allocator al;
  tbe__allocator_init(&al, NULL);
  tbe__buf p;
  tbe__buf_init(&p, &al);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  uint8_t head[TBE__SPOOL_HEADER];
  tbe__spool_header(head, T0);
  assert_int_equal(fwrite(head, 1, sizeof head, f), sizeof head);
  fflush(f);
  int fd = fileno(f);
  tbe__sp_info info = {.start_ns = T0, .pid = 321, .trace = 3};
  tbe__spool_item(&p, TBE__SP_INFO, &info, sizeof info);
  tbe__spool_item(&p, TBE__SP_HOST, "node1", 5);
  tbe__spool_item(&p, TBE__SP_CMD, "./train --x", 11);
  unsigned char rank[sizeof(tbe__sp_rank) + 4];
  tbe__sp_rank r = {1, 2, 1, 0};
  memcpy(rank, &r, sizeof r);
  memcpy(rank + sizeof r, "job7", 4);
  tbe__spool_item(&p, TBE__SP_RANK, rank, sizeof rank);
  for (uint32_t i = 1; i < sizeof strs / sizeof *strs; i++)
    tbe__spool_str(&p, i, strs[i], strlen(strs[i]));
  tbe__sp_device d = {.memory_bytes = 1ll << 37,
                      .bandwidth_kbps = 4800000000ll,
                      .name = S_GPU,
                      .sm_count = 132,
                      .clock_khz = 1980000,
                      .cc_major = 9,
                      .warp_size = 32,
                      .max_warps_per_sm = 64};
  tbe__spool_item(&p, TBE__SP_DEVICE, &d, sizeof d);
  tbe__sp_context c = {1, 0};
  tbe__spool_item(&p, TBE__SP_CONTEXT, &c, sizeof c);
  tbe__sp_thread_name tn = {321, 322, S_WORKER};
  tbe__spool_item(&p, TBE__SP_THREAD_NAME, &tn, sizeof tn);
  tbe__sp_window w = {T0, 1, 0};
  tbe__spool_item(&p, TBE__SP_WINDOW, &w, sizeof w);
  w.ts = T0 + 9000, w.on = 0;
  tbe__spool_item(&p, TBE__SP_WINDOW, &w, sizeof w);
  w.ts = T0 + 10000, w.on = 1;
  tbe__spool_item(&p, TBE__SP_WINDOW, &w, sizeof w);
  sp_api(&p, 100, S_PSTART, 50, 60);
  for (uint32_t i = 0; i < 4; i++) {
    sp_api(&p, 1 + i, S_LAUNCH, 100 + i * 1000, 150 + i * 1000);
    if (i < 3) sp_kernel(&p, 1 + i, S_GEMM, 200 + i * 1000, 500 + i * 1000);
  }
  sp_kernel(&p, 4, S_REPLAYED, 0, 0); /* replayed: no times of its own */
  tbe__sp_replayed rp = {4, 0, T0 + 3100, T0 + 3150};
  tbe__spool_item(&p, TBE__SP_REPLAYED, &rp, sizeof rp);
  tbe__sp_memcpy mc = {.start = T0 + 600,
                       .end = T0 + 700,
                       .bytes = 4096,
                       .corr = 2,
                       .context = 1,
                       .stream = 7,
                       .src_device = -1,
                       .dst_device = -1,
                       .copy_kind = 1,
                       .src_kind = 2,
                       .dst_kind = 3};
  tbe__spool_item(&p, TBE__SP_MEMCPY, &mc, sizeof mc);
  tbe__sp_memset ms = {.start = T0 + 800,
                       .end = T0 + 850,
                       .bytes = 512,
                       .corr = 3,
                       .context = 1,
                       .stream = 7,
                       .mem_kind = 3};
  tbe__spool_item(&p, TBE__SP_MEMSET, &ms, sizeof ms);
  tbe__sp_sync y = {.start = T0 + 2600,
                    .end = T0 + 2700,
                    .corr = 3,
                    .context = 1,
                    .stream = 7,
                    .type = 3,
                    .event = UINT32_MAX};
  tbe__spool_item(&p, TBE__SP_SYNC, &y, sizeof y);
  tbe__sp_overhead ov = {.start = T0 + 20,
                         .end = T0 + 40,
                         .kind = 1u << 16,
                         .obj_kind = TBE__OBJ_THREAD,
                         .obj = {321, 322, 0}};
  tbe__spool_item(&p, TBE__SP_OVERHEAD, &ov, sizeof ov);
  tbe__sp_memory mem = {.ts = T0 + 120,
                        .addr = 0x7000,
                        .bytes = 1 << 20,
                        .op = 1,
                        .pid = 321,
                        .context = 1,
                        .stream = 7};
  tbe__spool_item(&p, TBE__SP_MEMORY, &mem, sizeof mem);
  mem.ts = T0 + 2900, mem.op = 2;
  tbe__spool_item(&p, TBE__SP_MEMORY, &mem, sizeof mem);
  sp_frame(fd, &p);
  sp_marker(&p, 1, TBE__MK_START, S_CAPTURE, 322, 80);
  sp_marker(&p, 2, TBE__MK_START, S_TRAIN, 322, 90);
  tbe__sp_marker_data md = {.payload = 7,
                            .id = 2,
                            .flags = TBE__MK_COLOR_ARGB,
                            .payload_kind = 1,
                            .color = 0xff00ff00u,
                            .category = 3};
  tbe__spool_item(&p, TBE__SP_MARKER_DATA, &md, sizeof md);
  sp_marker(&p, 3, TBE__MK_START, S_INNER, 322, 95);
  sp_marker(&p, 3, TBE__MK_END, 0, 323, 130); /* ends on another thread */
  sp_marker(&p, 4, TBE__MK_INSTANT, S_INNER, 322, 140);
  sp_marker(&p, 5, TBE__MK_START, S_INNER, 322, 2000); /* never ends */
  sp_marker(&p, 6, TBE__MK_END, 0, 322, 2100);         /* no start */
  sp_marker(&p, 2, TBE__MK_END, 0, 322, 5000);
  sp_marker(&p, 7, TBE__MK_START, S_TRAIN, 322, 5000);
  sp_marker(&p, 7, TBE__MK_END, 0, 322, 8000);
  sp_marker(&p, 1, TBE__MK_END, 0, 322, 15000);
  tbe__sp_step st = {T0 + 100, 321, 322};
  tbe__spool_item(&p, TBE__SP_STEP, &st, sizeof st);
  st.ts = T0 + 3000;
  tbe__spool_item(&p, TBE__SP_STEP, &st, sizeof st);
  sp_op(&p, 1, TBE__OPF_BEGIN, 110);
  sp_op(&p, 1, TBE__OPF_END, 400);
  sp_op(&p, 2, TBE__OPF_BEGIN, 1100); /* still running at the end */
  tbe__sp_metric_def md1 = {1, S_SM, 0, TBE__MU_PCT}, md2 = {2, S_DUR, 0, TBE__MU_COUNT};
  tbe__spool_item(&p, TBE__SP_METRIC_DEF, &md1, sizeof md1);
  tbe__spool_item(&p, TBE__SP_METRIC_DEF, &md2, sizeof md2);
  unsigned char ms_body[sizeof(tbe__sp_metric_samples) + 4 + 3 * 16];
  tbe__sp_metric_samples mh = {0, 1, 3, 0};
  uint32_t mid = 1;
  unsigned char *q = ms_body;
  memcpy(q, &mh, sizeof mh), q += sizeof mh;
  memcpy(q, &mid, 4), q += 4;
  for (int i = 0; i < 3; i++) {
    int64_t ts = T0 + 1000 * (i + 1);
    double v = 10.0 * (i + 1);
    memcpy(q, &ts, 8), q += 8;
    memcpy(q, &v, 8), q += 8;
  }
  tbe__spool_item(&p, TBE__SP_METRIC_SAMPLES, ms_body, sizeof ms_body);
  unsigned char km_body[sizeof(tbe__sp_kernel_metrics) + 16];
  tbe__sp_kernel_metrics kh = {S_REPLAYED, 0, 1, 1};
  uint32_t kid[2] = {2, 0};
  double dur = 40;
  memcpy(km_body, &kh, sizeof kh);
  memcpy(km_body + sizeof kh, kid, 8);
  memcpy(km_body + sizeof kh + 8, &dur, 8);
  tbe__spool_item(&p, TBE__SP_KERNEL_METRICS, km_body, sizeof km_body);
  unsigned char mst[sizeof(tbe__sp_metric_status) + 6];
  tbe__sp_metric_status ms1 = {
      .kind = TBE__MKIND_PM_SAMPLING, .status = TBE__MS_OK, .samples = 3, .overflow = 1};
  memcpy(mst, &ms1, sizeof ms1);
  memcpy(mst + sizeof ms1, "reason", 6);
  tbe__spool_item(&p, TBE__SP_METRIC_STATUS, mst, sizeof mst);
  tbe__spool_item(&p, TBE__SP_NOTE, "a note of the collector", 23);
  tbe__sp_nvtx_stats ns = {.records = 20, .dropped = 1};
  tbe__spool_item(&p, TBE__SP_NVTX_STATS, &ns, sizeof ns);
  tbe__sp_stats sst = {.records = 30, .cupti_dropped = 2, .buffer_bytes = 1 << 20};
  tbe__spool_item(&p, TBE__SP_STATS, &sst, sizeof sst);
  tbe__sp_end e = {T0 + 30000};
  tbe__spool_item(&p, TBE__SP_END, &e, sizeof e);
  sp_frame(fd, &p);
  tbe__buf_deinit(&p);
  assert_int_equal(fclose(f), 0);
}

/* The session's conversion of the spool under the sweep: the image,
 * options, and whether the failing allocator is the options' alone (the
 * trace then on the default one). */
typedef struct conv_case {
  const uint8_t *data;
  size_t n;
  tbe__convert_opts o;
  int in_opts;
} conv_case;

static int convert_run(const tbe_allocator *a, void *ctx) {
  conv_case *c = ctx;
  tbe__convert_opts o = c->o;
  o.allocator = c->in_opts ? a : NULL;
  tbe_trace *t = NULL;
  int rc = tbe_trace_create(&t, c->in_opts ? NULL : a);
  if (rc) return rc;
  tbe__convert_info info;
  rc = tbe__spool_to_trace(c->data, c->n, "321.spool", &o, t, &info);
  if (rc == 0) {
    /* what only the options reach was made */
    size_t kernels = 0;
    for (size_t i = 0; i < t->nevents; i++) kernels += t->events[i].kind == TBE_EV_KERNEL;
    assert_int_equal(kernels, 4); /* the replayed one placed in its launch */
    assert_true(t->nevents > 10);
    assert_true(info.ops >= 1);
    assert_true(info.nvtx_unclosed >= 1 && info.nvtx_orphan_ends >= 1);
    if (o.steps_name) assert_int_equal(t->nsteps, 2);
  }
  tbe_trace_free(t);
  return rc;
}

static void test_spool_collected(void **state) {
  (void)state;
  char path[128];
  snprintf(path, sizeof path, "/tmp/tbe_import_alloc_%d.spool", (int)getpid());
  collected_spool(path);
  import_watched(path, 0);
  import_watched(path, 1);
  long failed = tu_import_alloc_sweep(path, 100000);
  print_message("alloc sweep spool (collected-like, import): %ld failing runs\n", failed);
  size_t n;
  uint8_t *d = tu_read_file(path, &n);
  assert_non_null(d);
  conv_case c = {d, n, {0}, 0};
  c.o.capture = TBE_CAPTURE_NVTX;
  c.o.capture_name = "capture";
  c.o.steps_name = "train";
  c.o.has_rank = 1;
  c.o.rank = 1;
  c.o.world_size = 2;
  failed = tu_alloc_sweep(convert_run, &c, 100000);
  print_message("alloc sweep spool (session: capture range, steps): %ld failing runs\n", failed);
  memset(&c.o, 0, sizeof c.o);
  c.o.capture = TBE_CAPTURE_PROFILER_API;
  c.in_opts = 1;
  failed = tu_alloc_sweep(convert_run, &c, 100000);
  print_message("alloc sweep spool (session: profiler API, scratch alone): %ld failing runs\n",
                failed);
  free(d);
  unlink(path);
}

/* The hardware-metric spools (test/data/metrics: the collector's PM
 * samples, kernel figures and status items; they hold a mangled name, so
 * they are swept, not watched). */
static void test_spool_metrics(void **state) {
  (void)state;
  static const char *const files[] = {"metrics/metrics.spool", "metrics/metrics_idle.spool",
                                      "metrics/metrics_full.spool"};
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    long failed = tu_import_alloc_sweep(tu_data(files[i]), 100000);
    print_message("alloc sweep %s: %ld failing runs\n", files[i], failed);
  }
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
      cmocka_unit_test(test_interposer_counts), cmocka_unit_test(test_json_one_thread),
      cmocka_unit_test(test_json_threaded),     cmocka_unit_test(test_xspace),
      cmocka_unit_test(test_our_outputs),       cmocka_unit_test(test_options_allocator),
      cmocka_unit_test(test_sweep_threaded),    cmocka_unit_test(test_spool),
      cmocka_unit_test(test_spool_collected),   cmocka_unit_test(test_spool_metrics),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
