/* test_roundtrip.c: one truth whatever the path.
 *
 * Property: for a trace M (finished), the summary a user reads is the same
 * whether it is computed from M itself, from M written as XSpace and read
 * back, or from M written as Chrome JSON and read back; and writing a
 * re-imported trace again gives the same bytes as the first write (the
 * files are a fixed point of export ∘ import).  The summary compared is
 * the whole JSON report (tbe_report_summary, every table, every row):
 * devices, kernel/copy/memset/sync counts and times, wall, host busy time,
 * API and sync calls, steps, dropped and out-of-range records, ended-early,
 * CUPTI overhead, advice and warnings.  Only the report's label (the title
 * the caller passes in) is not compared; the test passes none.
 *
 * The traces: every real file under test/data (three Kineto traces, JAX's
 * XSpace and Chrome trace, two Nsight Systems exports), and traces the
 * collector's converter makes from spool images built here: kernels on two
 * GPUs and several streams, copies of several directions, memsets, the four
 * kinds of synchronization (a context sync with no stream among them), NVTX
 * ranges (nested, asynchronous, with domain, color and payload) and marks,
 * CUPTI overhead on a thread and on the process, memory events, records
 * dropped by CUPTI and by the spool writer, records with zero or inverted
 * timestamps, notes, a clean end and an end that never came, a GPU with
 * every limit known (its kernels' occupancy computed); and the same
 * with steps given by tbe_trace_add_step from NVTX ranges whose names carry
 * no step number.
 *
 * The same property for the memory a user reads (mem_facts): per device and
 * name ("[memory]", the curve, and "[cuda memory]"), the count of
 * allocations and frees, their bytes, the peak totals, who reported them
 * and their kinds, and the points of the "memory allocated" / "memory
 * reserved" counter tracks: the model's, the XSpace's and the Chrome
 * JSON's are one.
 *
 * Nothing here may pass by skipping: an import that fails fails the test,
 * and a mismatch prints the first differing lines of the two summaries. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "import/spool.h"
#include "events/spool.h"
#include "common/alloc.h"
#include "common/buf.h"
#include "tbexport.h"
#include "tbexport/analysis.h"
#include "tbexport/import.h"
#include "testutil.h"

#define T0 1790000000000000000LL

/* ---- summaries ---- */

static char *summary_of(tbe_trace *t) {
  tbe_analysis *an = NULL;
  assert_int_equal(tbe_analysis_create(&an, t, NULL), 0);
  tbe_report_options o;
  tbe_report_options_init(&o);
  o.format = TBE_REPORT_JSON;
  o.top = 0; /* every row */
  o.wide = 1;
  char *s = NULL;
  size_t n = 0;
  assert_int_equal(tbe_report_summary(an, &o, &s, &n), 0);
  /* One line per value: a break after every ',' and '[' outside strings,
   * so that a mismatch names the field. */
  size_t cap = 2 * n + 1, k = 0;
  char *out = malloc(cap);
  assert_non_null(out);
  int in_str = 0, esc = 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    out[k++] = c;
    if (in_str) {
      if (esc) esc = 0;
      else if (c == '\\') esc = 1;
      else if (c == '"') in_str = 0;
    } else if (c == '"') {
      in_str = 1;
    } else if (c == ',' || c == '[') {
      out[k++] = '\n';
    }
  }
  out[k] = 0;
  tbe_report_free(s, n, NULL);
  tbe_analysis_free(an);
  return out;
}

/* Prints the first differing lines of `a` and `b` (with the two lines
 * before for context) and returns 1, or returns 0 when they are equal. */
static int report_diff(const char *what, const char *path, const char *a, const char *b) {
  if (strcmp(a, b) == 0) return 0;
  const char *pa = a, *pb = b;
  const char *ctx[2] = {NULL, NULL};
  size_t lctx[2] = {0, 0};
  unsigned line = 1;
  for (;;) {
    const char *ea = strchr(pa, '\n'), *eb = strchr(pb, '\n');
    size_t la = ea ? (size_t)(ea - pa) : strlen(pa), lb = eb ? (size_t)(eb - pb) : strlen(pb);
    if (la != lb || memcmp(pa, pb, la) != 0) {
      print_message("%s: the summary through %s differs from the model's, first at line %u:\n",
                    what, path, line);
      for (int i = 0; i < 2; i++)
        if (ctx[i]) print_message("    %.*s\n", (int)lctx[i], ctx[i]);
      print_message("  - model: %.*s\n", (int)la, pa);
      print_message("  + %s: %.*s\n", path, (int)lb, pb);
      for (int i = 0; i < 4 && ea && eb; i++) { /* a few more lines of each */
        pa = ea + 1;
        pb = eb + 1;
        ea = strchr(pa, '\n');
        eb = strchr(pb, '\n');
        la = ea ? (size_t)(ea - pa) : strlen(pa);
        lb = eb ? (size_t)(eb - pb) : strlen(pb);
        if (la != lb || memcmp(pa, pb, la) != 0)
          print_message("  - %.*s\n  + %.*s\n", (int)la, pa, (int)lb, pb);
      }
      return 1;
    }
    if (!ea || !eb) break;
    ctx[0] = ctx[1];
    lctx[0] = lctx[1];
    ctx[1] = pa;
    lctx[1] = la;
    pa = ea + 1;
    pb = eb + 1;
    line++;
  }
  return 1;
}

static int same_file(const char *what, const char *p1, const char *p2) {
  size_t n1 = 0, n2 = 0;
  uint8_t *a = tu_read_file(p1, &n1), *b = tu_read_file(p2, &n2);
  assert_non_null(a);
  assert_non_null(b);
  int same = n1 == n2 && memcmp(a, b, n1) == 0;
  if (!same) {
    size_t i = 0;
    while (i < n1 && i < n2 && a[i] == b[i]) i++;
    print_message("%s: a second export of the re-imported trace differs from the first at byte "
                  "%zu (%zu and %zu bytes)\n",
                  what, i, n1, n2);
  }
  free(a);
  free(b);
  return same;
}

static tbe_trace *import(const char *path) {
  tbe_trace *t = NULL;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  tbe_import_error err;
  memset(&err, 0, sizeof err);
  int rc = tbe_import_file(t, path, NULL, &err);
  if (rc) print_message("import of %s failed: %s\n", path, err.message);
  assert_int_equal(rc, 0);
  return t;
}

/* ---- memory facts ---- */

#define MF_DEVS 66 /* devices -1 .. 63, and one for any other */

typedef struct mem_fact {
  uint64_t allocs, frees, src[3], kinds[8], counters[2];
  int64_t bytes_in, bytes_out, peak_alloc, peak_resv;
} mem_fact;

/* The memory facts of `t` as text (malloc'd): one line per device and
 * name that has any. */
static char *mem_facts(const tbe_trace *t) {
  static const char *const names[2] = {"[memory]", "[cuda memory]"};
  mem_fact *f = calloc(2 * MF_DEVS, sizeof *f);
  assert_non_null(f);
  tbe_str nm[2] = {tbe_trace_find_str(t, names[0], 8), tbe_trace_find_str(t, names[1], 13)};
  tbe_str cn[2] = {tbe_trace_find_str(t, "memory allocated", 16),
                   tbe_trace_find_str(t, "memory reserved", 15)};
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_event *e = &t->events[i];
    const tbe_track *tr = &t->tracks[e->track];
    if (e->kind == TBE_EV_COUNTER && tbe_track_is_metric(tr)) {
      int d = tr->device + 1 < MF_DEVS - 1 ? tr->device + 1 : MF_DEVS - 1;
      for (int k = 0; k < 2; k++) f[d].counters[k] += e->name == cn[k] && cn[k] != TBE_NONE;
      continue;
    }
    const tbe_memory *m = tbe_trace_memory(t, e);
    if (!m) continue;
    int n = e->name == nm[0] ? 0 : e->name == nm[1] ? 1 : -1;
    assert_true(n >= 0); /* every memory event is one of the two */
    int d = m->device + 1 >= 0 && m->device + 1 < MF_DEVS - 1 ? m->device + 1 : MF_DEVS - 1;
    mem_fact *x = &f[n * MF_DEVS + d];
    if (m->bytes > 0) x->allocs++, x->bytes_in += m->bytes;
    else x->frees++, x->bytes_out -= m->bytes;
    if (m->total_allocated > x->peak_alloc) x->peak_alloc = m->total_allocated;
    if (m->total_reserved > x->peak_resv) x->peak_resv = m->total_reserved;
    x->src[m->source < 3 ? m->source : 0]++;
    x->kinds[m->mem_kind & 7]++;
  }
  size_t cap = 64 + 2 * MF_DEVS * 256, len = 0;
  char *out = malloc(cap);
  assert_non_null(out);
  out[0] = 0;
  for (int n = 0; n < 2; n++)
    for (int d = 0; d < MF_DEVS; d++) {
      const mem_fact *x = &f[n * MF_DEVS + d];
      if (!x->allocs && !x->frees && !x->counters[0] && !x->counters[1]) continue;
      len += (size_t)snprintf(out + len, cap - len,
                              "%s device %d: %llu allocations (%lld B), %llu frees (%lld B), peak %lld "
                              "allocated %lld reserved, sources %llu/%llu/%llu, kinds",
                              names[n], d - 1, (unsigned long long)x->allocs, (long long)x->bytes_in,
                              (unsigned long long)x->frees, (long long)x->bytes_out,
                              (long long)x->peak_alloc, (long long)x->peak_resv,
                              (unsigned long long)x->src[0], (unsigned long long)x->src[1],
                              (unsigned long long)x->src[2]);
      for (int k = 0; k < 8; k++)
        len += (size_t)snprintf(out + len, cap - len, " %llu", (unsigned long long)x->kinds[k]);
      len += (size_t)snprintf(out + len, cap - len, "; counters %llu/%llu\n",
                              (unsigned long long)x->counters[0], (unsigned long long)x->counters[1]);
    }
  free(f);
  return out;
}

/* The property, for a finished trace `m` (freed here).  `fixed` asks for
 * the fixed point of each format as well. */
static void check_paths(const char *what, tbe_trace *m, int fixed) {
  char *dir = tu_mkdtemp();
  char *x1 = tu_join(dir, "a.xplane.pb"), *x2 = tu_join(dir, "b.xplane.pb");
  char *d1 = tu_join(dir, "1"), *d2 = tu_join(dir, "2");
  char *j1 = tu_join(d1, "t.trace.json.gz"), *j2 = tu_join(d2, "t.trace.json.gz");
  assert_int_equal(mkdir(d1, 0755), 0);
  assert_int_equal(mkdir(d2, 0755), 0);
  char *s0 = summary_of(m), *f0 = mem_facts(m);
  int bad = 0;

  assert_int_equal(tbe_export_xplane(m, x1, 1), 0);
  tbe_trace *rx = import(x1);
  char *sx = summary_of(rx);
  bad |= report_diff(what, "XSpace", s0, sx);
  char *fx = mem_facts(rx);
  bad |= report_diff(what, "XSpace's memory", f0, fx);

  assert_int_equal(tbe_export_chrome_json(m, j1, 1, 1), 0);
  tbe_trace *rj = import(j1);
  char *sj = summary_of(rj);
  bad |= report_diff(what, "Chrome JSON", s0, sj);
  char *fj = mem_facts(rj);
  bad |= report_diff(what, "Chrome JSON's memory", f0, fj);

  if (fixed) {
    assert_int_equal(tbe_export_xplane(rx, x2, 1), 0);
    if (!same_file(what, x1, x2)) bad |= 2;
    assert_int_equal(tbe_export_chrome_json(rj, j2, 1, 1), 0);
    if (!same_file(what, j1, j2)) bad |= 4;
  }
  free(s0);
  free(sx);
  free(sj);
  free(f0);
  free(fx);
  free(fj);
  tbe_trace_free(rx);
  tbe_trace_free(rj);
  tbe_trace_free(m);
  if (bad && getenv("TBE_ROUNDTRIP_KEEP")) print_message("%s: files kept in %s\n", what, dir);
  else tu_rmrf(dir);
  free(x1);
  free(x2);
  free(j1);
  free(j2);
  free(d1);
  free(d2);
  free(dir);
  if (bad) fail_msg("%s: the paths disagree (bits: 1 summary, 2 XSpace bytes, 4 JSON bytes: %d)",
                    what, bad);
}

/* ---- the real files ---- */

static void golden(const char *rel) { check_paths(rel, import(tu_data(rel)), 1); }

/* JAX's files: the summaries agree, but a second export is not yet the
 * same bytes (the Chrome JSON of the XSpace differs in its head, the XSpace
 * of the Chrome JSON in its events); an open item, not a property. */
static void golden_summary_only(const char *rel) { check_paths(rel, import(tu_data(rel)), 0); }

static void test_kineto_fp32(void **state) {
  (void)state;
  golden("kineto/h200_cnn_fp32.pt.trace.json");
}
static void test_kineto_bf16(void **state) {
  (void)state;
  golden("kineto/h200_cnn_bf16.pt.trace.json");
}
static void test_kineto_add_loop(void **state) {
  (void)state;
  golden("kineto/h200_add_loop.trace.json");
}
static void test_jax_xplane(void **state) {
  (void)state;
  golden_summary_only("jax/h200_matmul.xplane.pb");
}
static void test_jax_json(void **state) {
  (void)state;
  golden_summary_only("jax/h200_matmul.trace.json.gz");
}
static void test_nsys_2gpu(void **state) {
  (void)state;
  golden("nsys/h100_2gpu_1s.sqlite");
}
static void test_nsys_saxpy(void **state) {
  (void)state;
  golden("nsys/saxpy_mpi_cuda_perlmutter.sqlite");
}

/* ---- collected runs: spool images ---- */

static tbe_allocator al;

typedef struct img {
  tbe__buf b; /* the file */
  tbe__buf p; /* the frame being filled */
} img;

static void img_frame(img *m) {
  uint8_t head[8];
  uint32_t len = (uint32_t)m->p.len;
  memcpy(head, &len, 4);
  uint32_t c = tbe__spool_checksum(head, 4, 0);
  c = tbe__spool_checksum(m->p.data, m->p.len, c);
  memcpy(head + 4, &c, 4);
  tbe__buf_append(&m->b, head, 8);
  tbe__buf_append(&m->b, m->p.data, m->p.len);
  tbe__buf_clear(&m->p);
}

enum { PID = 4242, MAIN = 4243, WORKER = 4250 };

/* String ids of the image. */
enum {
  S_GEMM = 1, S_RELU, S_LAUNCH, S_CULAUNCH, S_MEMCPY, S_MEMSET, S_SSYNC, S_DSYNC, S_ESYNC,
  S_WAIT, S_ITER, S_FORWARD, S_LOADER, S_CHECK, S_DOMAIN, S_H200, S_H100, S_THREAD, S_NCCL,
  S__COUNT
};
static const char *const STRS[S__COUNT] = {
    "", "void gemm_kernel<float>(float*, int)", "relu_kernel", "cudaLaunchKernel",
    "cuLaunchKernel", "cudaMemcpyAsync", "cudaMemsetAsync", "cudaStreamSynchronize",
    "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaStreamWaitEvent", "iteration",
    "forward", "data loader", "checkpoint", "app", "NVIDIA H200", "NVIDIA H100", "trainer",
    "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE"};

static void api(img *m, uint32_t corr, uint32_t tid, uint32_t name, int64_t s, int64_t e, int drv) {
  tbe__sp_api a;
  memset(&a, 0, sizeof a);
  a.start = s;
  a.end = e;
  a.corr = corr;
  a.pid = PID;
  a.tid = tid;
  a.name = name;
  a.domain = drv ? TBE__API_DRIVER : TBE__API_RUNTIME;
  tbe__spool_item(&m->p, TBE__SP_API, &a, sizeof a);
}

static void kern(img *m, uint32_t corr, uint32_t dev, uint32_t stream, uint32_t name, int64_t s,
                 int64_t e) {
  tbe__sp_kernel k;
  memset(&k, 0, sizeof k);
  k.start = s;
  k.end = e;
  k.corr = corr;
  k.device = dev;
  k.context = dev + 1;
  k.stream = stream;
  k.name = name;
  k.grid[0] = 132;
  k.grid[1] = k.grid[2] = 1;
  k.block[0] = 256;
  k.block[1] = k.block[2] = 1;
  k.registers = 32;
  k.static_shared = 1024;
  k.dynamic_shared = dev ? 2048 : 0;
  tbe__spool_item(&m->p, TBE__SP_KERNEL, &k, sizeof k);
}

static void copy(img *m, uint32_t corr, uint32_t dev, uint32_t stream, uint8_t kind, uint8_t src,
                 uint8_t dst, int64_t s, int64_t e) {
  tbe__sp_memcpy c;
  memset(&c, 0, sizeof c);
  c.start = s;
  c.end = e;
  c.bytes = 1u << 20;
  c.corr = corr;
  c.device = dev;
  c.context = dev + 1;
  c.stream = stream;
  c.copy_kind = kind;
  c.src_kind = src;
  c.dst_kind = dst;
  c.src_device = kind == TBE_COPY_PTOP ? 0 : -1;
  c.dst_device = kind == TBE_COPY_PTOP ? 1 : -1;
  c.flags = 1;
  tbe__spool_item(&m->p, TBE__SP_MEMCPY, &c, sizeof c);
}

static void mset(img *m, uint32_t corr, uint32_t dev, uint32_t stream, int64_t s, int64_t e) {
  tbe__sp_memset x;
  memset(&x, 0, sizeof x);
  x.start = s;
  x.end = e;
  x.bytes = 4096;
  x.corr = corr;
  x.device = dev;
  x.context = dev + 1;
  x.stream = stream;
  x.mem_kind = TBE_MEM_DEVICE;
  tbe__spool_item(&m->p, TBE__SP_MEMSET, &x, sizeof x);
}

static void sync_rec(img *m, uint32_t corr, uint32_t dev, uint32_t stream, uint32_t type,
                     uint32_t event, int64_t s, int64_t e) {
  tbe__sp_sync y;
  memset(&y, 0, sizeof y);
  y.start = s;
  y.end = e;
  y.corr = corr;
  y.context = dev + 1;
  y.stream = stream;
  y.type = type;
  y.event = event;
  tbe__spool_item(&m->p, TBE__SP_SYNC, &y, sizeof y);
}

static void marker(img *m, uint32_t id, uint32_t flags, uint32_t tid, uint32_t name,
                   uint32_t domain, int64_t ts) {
  tbe__sp_marker k;
  memset(&k, 0, sizeof k);
  k.ts = ts;
  k.id = id;
  k.flags = flags;
  k.obj_kind = TBE__OBJ_THREAD;
  k.obj[0] = PID;
  k.obj[1] = tid;
  k.name = name;
  k.domain = domain;
  tbe__spool_item(&m->p, TBE__SP_MARKER, &k, sizeof k);
}

static void overhead(img *m, int on_thread, int64_t s, int64_t e) {
  tbe__sp_overhead o;
  memset(&o, 0, sizeof o);
  o.start = s;
  o.end = e;
  o.kind = on_thread ? 1 : 2;
  o.obj_kind = on_thread ? TBE__OBJ_THREAD : TBE__OBJ_PROCESS;
  o.obj[0] = PID;
  o.obj[1] = on_thread ? MAIN : 0;
  tbe__spool_item(&m->p, TBE__SP_OVERHEAD, &o, sizeof o);
}

/* What to put in a spool image. */
typedef struct spec {
  int steps;       /* iterations (each an NVTX "iteration" range on the main thread) */
  int with_end;    /* a clean end; 0: the capture ended early */
  int bad_records; /* records with zero or inverted timestamps */
  uint64_t dropped;
  int notes;
  int ranked;          /* a launcher's rank (TBE__SP_RANK) of ... */
  int32_t rank, world; /* ... this rank in a world of this size (0: unknown) */
  int nccl;            /* an NCCL all-reduce (mangled name) per step, GPU 0 stream 20 */
} spec;

/* Builds the image of one collected process. */
static void build_image(img *m, const spec *sp) {
  tbe__allocator_init(&al, NULL);
  tbe__buf_init(&m->b, &al);
  tbe__buf_init(&m->p, &al);
  uint8_t head[TBE__SPOOL_HEADER];
  tbe__spool_header(head, T0);
  tbe__buf_append(&m->b, head, sizeof head);

  tbe__sp_info info;
  memset(&info, 0, sizeof info);
  info.start_ns = T0;
  info.pid = PID;
  info.trace = 0xffff;
  tbe__spool_item(&m->p, TBE__SP_INFO, &info, sizeof info);
  if (sp->ranked) {
    uint8_t body[sizeof(tbe__sp_rank) + 3];
    tbe__sp_rank r = {sp->rank, sp->world, 0, TBE__LAUNCHER_TORCH};
    memcpy(body, &r, sizeof r);
    memcpy(body + sizeof r, "abc", 3);
    tbe__spool_item(&m->p, TBE__SP_RANK, body, sizeof body);
  }
  tbe__spool_item(&m->p, TBE__SP_HOST, "gpuhost", 7);
  tbe__spool_item(&m->p, TBE__SP_CMD, "./train --steps 3", 17);
  for (uint32_t i = 1; i < S__COUNT; i++) tbe__spool_str(&m->p, i, STRS[i], strlen(STRS[i]));
  for (uint32_t d = 0; d < 2; d++) {
    tbe__sp_device dev;
    memset(&dev, 0, sizeof dev);
    dev.id = d;
    dev.memory_bytes = d ? 85899345920LL : 150109880320LL;
    dev.bandwidth_kbps = 4701468750LL;
    dev.name = d ? S_H100 : S_H200;
    dev.sm_count = 132;
    dev.clock_khz = 1980000;
    dev.cc_major = 9;
    dev.warp_size = 32;
    if (d == 0) { /* every limit: the kernels' occupancy is computed (occupancy.h) */
      dev.max_threads_per_block = 1024;
      dev.max_warps_per_sm = 64;
      dev.regs_per_block = dev.regs_per_sm = 65536;
      dev.shared_per_block = 49152;
      dev.shared_per_sm = 233472;
    }
    tbe__spool_item(&m->p, TBE__SP_DEVICE, &dev, sizeof dev);
    tbe__sp_context ctx = {d + 1, d};
    tbe__spool_item(&m->p, TBE__SP_CONTEXT, &ctx, sizeof ctx);
  }
  tbe__sp_thread_name tn = {PID, WORKER, S_THREAD};
  tbe__spool_item(&m->p, TBE__SP_THREAD_NAME, &tn, sizeof tn);
  img_frame(m);

  uint32_t corr = 1, mid = 1;
  for (int i = 0; i < sp->steps; i++) {
    int64_t b = T0 + 1000 + (int64_t)i * 1000000;
    uint32_t iter_id = mid++, fwd_id = mid++;
    marker(m, iter_id, TBE__MK_START, MAIN, S_ITER, 0, b);
    marker(m, fwd_id, TBE__MK_START, MAIN, S_FORWARD, i == 0 ? S_DOMAIN : 0, b + 100);
    if (i == 0) {
      tbe__sp_marker_data md;
      memset(&md, 0, sizeof md);
      md.id = fwd_id;
      md.flags = TBE__MK_COLOR_ARGB;
      md.color = 0xff00ff00u;
      md.category = 3;
      md.payload_kind = 4; /* int64 */
      md.payload = 42;
      tbe__spool_item(&m->p, TBE__SP_MARKER_DATA, &md, sizeof md);
    }
    /* A kernel on GPU 0 stream 7 and one on GPU 1 stream 13 (driver launch
     * from the worker thread). */
    api(m, corr, MAIN, S_LAUNCH, b + 200, b + 2200, 0);
    kern(m, corr++, 0, 7, S_GEMM, b + 5000, b + 95000);
    api(m, corr, WORKER, S_CULAUNCH, b + 300, b + 1300, 1);
    kern(m, corr++, 1, 13, S_RELU, b + 6000, b + 9000);
    if (sp->nccl) { /* its own stream, overlapping the GEMM */
      api(m, corr, MAIN, S_LAUNCH, b + 4600, b + 4900, 0);
      kern(m, corr++, 0, 20, S_NCCL, b + 20000, b + 120000);
    }
    /* Short kernels on GPU 0 stream 14. */
    for (int k = 0; k < 4; k++) {
      api(m, corr, MAIN, S_LAUNCH, b + 2300 + k * 600, b + 2800 + k * 600, 0);
      kern(m, corr++, 0, 14, S_RELU, b + 96000 + k * 3000, b + 98000 + k * 3000);
    }
    /* Copies: HtoD pageable, DtoH pinned, peer to peer; a memset. */
    api(m, corr, MAIN, S_MEMCPY, b + 5000, b + 5800, 0);
    copy(m, corr++, 0, 14, TBE_COPY_HTOD, TBE_MEM_PAGEABLE, TBE_MEM_DEVICE, b + 110000, b + 150000);
    api(m, corr, MAIN, S_MEMCPY, b + 6000, b + 6800, 0);
    copy(m, corr++, 1, 13, TBE_COPY_DTOH, TBE_MEM_DEVICE, TBE_MEM_PINNED, b + 160000, b + 170000);
    api(m, corr, MAIN, S_MEMCPY, b + 7000, b + 7800, 0);
    copy(m, corr++, 0, 7, TBE_COPY_PTOP, TBE_MEM_DEVICE, TBE_MEM_DEVICE, b + 171000, b + 172000);
    api(m, corr, WORKER, S_MEMSET, b + 8000, b + 8500, 0);
    mset(m, corr++, 1, 14, b + 173000, b + 174000);
    /* The four kinds of synchronization. */
    api(m, corr, MAIN, S_SSYNC, b + 9000, b + 180000, 0);
    sync_rec(m, corr++, 0, 7, TBE_SYNC_STREAM, UINT32_MAX, b + 9100, b + 179000);
    api(m, corr, MAIN, S_ESYNC, b + 181000, b + 182000, 0);
    sync_rec(m, corr++, 0, 14, TBE_SYNC_EVENT, 5, b + 181100, b + 181900);
    api(m, corr, WORKER, S_WAIT, b + 183000, b + 183500, 0);
    sync_rec(m, corr++, 1, 13, TBE_SYNC_STREAM_WAIT, 6, b + 183100, b + 183400);
    api(m, corr, MAIN, S_DSYNC, b + 184000, b + 190000, 0);
    sync_rec(m, corr++, 1, UINT32_MAX, TBE_SYNC_CONTEXT, UINT32_MAX, b + 184100, b + 189900);
    marker(m, fwd_id, TBE__MK_END, MAIN, 0, 0, b + 100000);
    marker(m, mid++, TBE__MK_INSTANT, MAIN, S_CHECK, 0, b + 100500);
    /* An asynchronous range: started on the worker, ended on the main thread. */
    uint32_t ld = mid++;
    marker(m, ld, TBE__MK_START, WORKER, S_LOADER, 0, b + 400);
    marker(m, ld, TBE__MK_END, MAIN, 0, 0, b + 191000);
    overhead(m, 1, b + 192000, b + 192500);
    overhead(m, 0, b + 193000, b + 193700);
    tbe__sp_memory mem;
    memset(&mem, 0, sizeof mem);
    mem.ts = b + 194000;
    mem.addr = 0x7f0000000000ULL + (uint64_t)i * 4096;
    mem.bytes = 1 << 20;
    mem.op = 1;
    mem.pid = PID;
    mem.context = 1;
    tbe__spool_item(&m->p, TBE__SP_MEMORY, &mem, sizeof mem);
    marker(m, iter_id, TBE__MK_END, MAIN, 0, 0, b + 200000);
    img_frame(m);
  }
  for (int i = 0; i < sp->bad_records; i++) {
    int64_t b = T0 + 5000000 + i * 1000;
    api(m, corr, MAIN, S_LAUNCH, 0, b, 0);                         /* zero start */
    kern(m, corr++, 0, 7, S_GEMM, b + 500, b + 100);               /* inverted */
    sync_rec(m, corr++, 0, 7, TBE_SYNC_STREAM, UINT32_MAX, b, b - 1); /* inverted */
  }
  if (sp->notes) {
    const char *note = "the collector could not read the GPU's clock rate";
    tbe__spool_item(&m->p, TBE__SP_NOTE, note, strlen(note));
  }
  tbe__sp_stats st;
  memset(&st, 0, sizeof st);
  st.records = 1000;
  st.cupti_dropped = sp->dropped;
  st.spool_dropped = sp->dropped ? 2 : 0;
  st.buffers = 3;
  tbe__spool_item(&m->p, TBE__SP_STATS, &st, sizeof st);
  if (sp->with_end) {
    tbe__sp_end e = {T0 + 6000000};
    tbe__spool_item(&m->p, TBE__SP_END, &e, sizeof e);
  }
  img_frame(m);
  tbe__buf_deinit(&m->p);
  assert_int_equal(tbe__buf_error(&m->b), 0);
}

static tbe_trace *collected(const spec *sp) {
  img m;
  build_image(&m, sp);
  tbe_trace *t = NULL;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  tbe__convert_info info;
  memset(&info, 0, sizeof info);
  assert_int_equal(tbe__spool_to_trace(m.b.data, m.b.len, "4242.spool", NULL, t, &info), 0);
  tbe__buf_deinit(&m.b);
  return t;
}

/* Steps from the "iteration" NVTX ranges, as `--steps nvtx:iteration`
 * makes them: numbered from 0, named after the range, on its thread. */
static void add_nvtx_steps(tbe_trace *t, const char *range, int named) {
  tbe_str nm = tbe_trace_find_str(t, range, strlen(range));
  assert_int_not_equal(nm, TBE_NONE);
  int64_t num = 0;
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_event *e = &t->events[i];
    if (e->kind != TBE_EV_NVTX_RANGE || e->name != nm) continue;
    assert_int_equal(tbe_trace_add_step(t, num++, e->start_ns, e->start_ns + e->dur_ns,
                                        named ? nm : 0),
                     0);
    t->steps[t->nsteps - 1].track = e->track;
  }
  assert_int_equal(t->nsteps, 3);
}

static void test_collected_clean(void **state) {
  (void)state;
  spec sp = {3, 1, 0, 0, 0, 0, 0, 0, 0};
  check_paths("collected, clean end", collected(&sp), 1);
}

static void test_collected_lossy(void **state) {
  (void)state;
  spec sp = {3, 1, 2, 4323, 1, 0, 0, 0, 0};
  tbe_trace *t = collected(&sp);
  assert_int_equal(t->dropped_records, 4325);
  assert_true(t->dropped_out_of_range >= 6);
  assert_true(t->nwarnings >= 3);
  check_paths("collected, dropped and bad records", t, 1);
}

static void test_collected_ended_early(void **state) {
  (void)state;
  spec sp = {3, 0, 1, 17, 1, 0, 0, 0, 0};
  tbe_trace *t = collected(&sp);
  assert_true(t->ended_early);
  check_paths("collected, ended early", t, 1);
}

/* A rank and its world size go through XSpace and Chrome JSON (where HTA
 * reads distributedInfo.rank), and an unknown world size stays unknown. */
static void check_rank_paths(const spec *sp) {
  char *dir = tu_mkdtemp();
  char *x = tu_join(dir, "r.xplane.pb"), *j = tu_join(dir, "r.trace.json.gz");
  tbe_trace *m = collected(sp);
  assert_int_equal(m->rank, sp->rank);
  assert_int_equal(m->world_size, sp->world);
  assert_int_equal(tbe_export_xplane(m, x, 1), 0);
  assert_int_equal(tbe_export_chrome_json(m, j, 1, 1), 0);
  tbe_trace *rx = import(x), *rj = import(j);
  assert_int_equal(rx->rank, sp->rank);
  assert_int_equal(rx->world_size, sp->world);
  assert_int_equal(rj->rank, sp->rank);
  assert_int_equal(rj->world_size, sp->world);
  tbe_trace_free(rx);
  tbe_trace_free(rj);
  tu_rmrf(dir);
  free(x);
  free(j);
  free(dir);
  check_paths("collected, ranked", m, 1);
}

static void test_collected_rank(void **state) {
  (void)state;
  spec sp = {3, 1, 0, 0, 0, 1, 1, 2, 0};
  check_rank_paths(&sp);
  spec unknown_world = {3, 1, 0, 0, 0, 1, 3, 0, 0};
  check_rank_paths(&unknown_world);
}


/* Events of `kind` named `prefix`... on a host thread of tid `tid`. */
static size_t count_marks(const tbe_trace *t, uint8_t kind, const char *prefix, int64_t tid) {
  size_t n = 0;
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_event *e = &t->events[i];
    n += e->kind == kind && t->tracks[e->track].tid == tid &&
         strncmp(tbe_trace_str(t, e->name), prefix, strlen(prefix)) == 0;
  }
  return n;
}

/* Ranks without and with NCCL kernels: the first says in one warning
 * that there is no GPU communication, the second's launches get their
 * nccl:all_reduce operators and its distributedInfo the backend; both
 * read back the same and write the same bytes again. */
static void test_collected_comm(void **state) {
  (void)state;
  spec gloo = {3, 1, 0, 0, 0, 1, 1, 2, 0};
  tbe_trace *t = collected(&gloo);
  size_t notes = 0;
  for (size_t i = 0; i < t->nwarnings; i++)
    notes += strstr(tbe_trace_str(t, t->warnings[i]), "no NCCL kernel in this rank's trace (one of 2 "
                                                       "ranks): its communication is on the CPU") != NULL;
  assert_int_equal(notes, 1);
  assert_int_equal(t->dist_backend, 0);
  tbe_trace_free(t);
  spec nccl = {3, 1, 0, 0, 0, 1, 0, 2, 1};
  t = collected(&nccl);
  assert_string_equal(tbe_trace_str(t, t->dist_backend), "nccl");
  assert_int_equal(count_marks(t, TBE_EV_USER_ANNOTATION, "nccl:all_reduce", MAIN), 3);
  for (size_t i = 0; i < t->nwarnings; i++)
    assert_null(strstr(tbe_trace_str(t, t->warnings[i]), "NCCL"));
  check_paths("collected, rank with NCCL kernels", t, 1);
}

static void test_collected_steps_named(void **state) {
  (void)state;
  spec sp = {3, 1, 0, 0, 0, 0, 0, 0, 0};
  tbe_trace *t = collected(&sp);
  assert_int_equal(t->nsteps, 0);
  add_nvtx_steps(t, "iteration", 1);
  /* The steps are marked the way the clients read them: ProfilerStep#N
   * user annotations on the range's thread in the JSON (HTA), step_num/_r
   * roots on that thread's own line in the XSpace (xprof). */
  char *dir = tu_mkdtemp();
  char *j = tu_join(dir, "s.trace.json"), *x = tu_join(dir, "s.xplane.pb");
  assert_int_equal(tbe_export_chrome_json(t, j, 0, 1), 0);
  assert_int_equal(tbe_export_xplane(t, x, 1), 0);
  tbe_trace *rj = import(j), *rx = import(x);
  assert_int_equal(count_marks(rj, TBE_EV_USER_ANNOTATION, "ProfilerStep#", MAIN), 3);
  assert_int_equal(count_marks(rx, TBE_EV_USER_ANNOTATION, "iteration", MAIN), 3);
  for (int i = 0; i < 2; i++) {
    const tbe_trace *r = i ? rx : rj;
    assert_int_equal(r->nsteps, 3);
    for (size_t k = 0; k < 3; k++) {
      assert_int_equal(r->steps[k].num, t->steps[k].num);
      assert_int_equal(r->steps[k].start_ns, t->steps[k].start_ns);
      assert_int_equal(r->steps[k].end_ns, t->steps[k].end_ns);
      assert_string_equal(tbe_trace_str(r, r->steps[k].name), "iteration");
      assert_int_equal(r->tracks[r->steps[k].track].tid, MAIN);
    }
  }
  size_t n = 0;
  char *doc = (char *)tu_read_file(j, &n);
  assert_non_null(strstr(doc, "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#1\",\"pid\":4242,\"tid\":4243,"));
  free(doc);
  tbe_trace_free(rj);
  tbe_trace_free(rx);
  tu_rmrf(dir);
  free(j);
  free(x);
  free(dir);
  check_paths("collected, steps from NVTX ranges", t, 1);
}

static void test_collected_steps_unnamed(void **state) {
  (void)state;
  spec sp = {3, 0, 1, 5, 1, 0, 0, 0, 0};
  tbe_trace *t = collected(&sp);
  add_nvtx_steps(t, "iteration", 0);
  check_paths("collected, unnamed steps, ended early", t, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_collected_clean),
      cmocka_unit_test(test_collected_lossy),
      cmocka_unit_test(test_collected_ended_early),
      cmocka_unit_test(test_collected_steps_named),
      cmocka_unit_test(test_collected_steps_unnamed),
      cmocka_unit_test(test_collected_comm),
      cmocka_unit_test(test_kineto_fp32),
      cmocka_unit_test(test_kineto_bf16),
      cmocka_unit_test(test_kineto_add_loop),
      cmocka_unit_test(test_jax_xplane),
      cmocka_unit_test(test_jax_json),
      cmocka_unit_test(test_nsys_2gpu),
      cmocka_unit_test(test_nsys_saxpy),
      cmocka_unit_test(test_collected_rank),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
