/* seed_spool.c: writes the seed spools of corpus/spool/ with the spool
 * writer's own encoders (src/events/spool.h), so the seeds follow the
 * format of this build.  Usage: seed_spool DIR.  Writes DIR/full.spool (one
 * process: info, host, command, strings, a device and context, kernels, a
 * copy, a memset, API calls, a sync, an NVTX range "step" and a mark,
 * memory events, an overhead, a window, stats and a clean end, in three
 * frames) and DIR/noend.spool (the same without its last frame's end
 * item, as after a crash), and DIR/steps.spool (a training loop of three
 * steps marked with tbe_profiler_step, each inside an NVTX range
 * "train_step" with an int64 payload 10, 11, 12 and launching one kernel;
 * test/cli/test_import.sh reads it), and the seeds of the paths whose
 * counts used to multiply (test_hostile_input has them at full size):
 * DIR/replayed.spool (kernels the range profiler replayed, placed by
 * their launch call or the collector's timing, with the profiler's
 * figures and durations), DIR/metric_items.spool (metric definitions,
 * one redefined; PM samples with a gap, an unknown id, a NaN and a bad
 * time; figures of kernels on several GPUs; status items repeated per
 * kind and GPU, with reasons, overflow and stale counts; the collector's
 * notes that repeat them), DIR/strids.spool (string ids out of order,
 * redefined, 0, 2^26, 2^26 + 1 and 2^32 - 1, each used by a record) and
 * DIR/strid26.spool (97 bytes: one string of id 2^26).  Each of these
 * ends with an unknown item whose one byte, the file's last, is 3:
 * fuzz_spool then also converts it with a capture range and imports it
 * through the importer table.  Not a test; run by hand when the format
 * changes. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "events/spool.h"
#include "common/alloc.h"
#include "common/buf.h"

#define T0 1790000000000000000LL

static void frame(tbe__buf *img, tbe__buf *p) {
  uint8_t head[8];
  uint32_t len = (uint32_t)p->len;
  memcpy(head, &len, 4);
  uint32_t c = tbe__spool_checksum(head, 4, 0);
  c = tbe__spool_checksum(p->data, p->len, c);
  memcpy(head + 4, &c, 4);
  tbe__buf_append(img, head, 8);
  tbe__buf_append(img, p->data, p->len);
  tbe__buf_clear(p);
}

static tbe_allocator al; /* malloc */

/* Writes the image to `path`; 0 or -1. */
static int save(tbe__buf *img, const char *path) {
  int rc = tbe__buf_error(img);
  FILE *f = rc ? NULL : fopen(path, "wb");
  if (!f || fwrite(img->data, 1, img->len, f) != img->len || fclose(f) != 0) rc = -1;
  tbe__buf_deinit(img);
  return rc;
}

/* Starts an image: the header, then info of process `pid` in `p`. */
static void begin(tbe__buf *img, tbe__buf *p, uint32_t pid) {
  tbe__allocator_init(&al, NULL);
  tbe__buf_init(img, &al);
  tbe__buf_init(p, &al);
  uint8_t head[TBE__SPOOL_HEADER];
  tbe__spool_header(head, T0);
  tbe__buf_append(img, head, sizeof head);
  tbe__sp_info info;
  memset(&info, 0, sizeof info);
  info.start_ns = T0;
  info.pid = pid;
  info.trace = 3;
  tbe__spool_item(p, TBE__SP_INFO, &info, sizeof info);
}

/* Ends an image: END, then an unknown item (type 99) whose one byte, 3,
 * is the file's last (fuzz_spool's key), the frame; frees `p`. */
static void finish(tbe__buf *img, tbe__buf *p) {
  tbe__sp_end e = {T0 + 100000};
  tbe__spool_item(p, TBE__SP_END, &e, sizeof e);
  tbe__spool_item(p, 99, "\3", 1);
  frame(img, p);
  tbe__buf_deinit(p);
}

static void kernel_at(tbe__buf *p, uint32_t corr, uint32_t name, uint32_t dev, int64_t s,
                      int64_t e) {
  tbe__sp_kernel k;
  memset(&k, 0, sizeof k);
  k.start = s;
  k.end = e;
  k.corr = corr;
  k.device = dev;
  k.context = 1;
  k.stream = 7;
  k.name = name;
  k.grid[0] = k.block[0] = 1;
  tbe__spool_item(p, TBE__SP_KERNEL, &k, sizeof k);
}

static void api_at(tbe__buf *p, uint32_t corr, uint32_t name, int64_t s, int64_t e) {
  tbe__sp_api a;
  memset(&a, 0, sizeof a);
  a.start = s;
  a.end = e;
  a.corr = corr;
  a.pid = 4242;
  a.tid = 4243;
  a.name = name;
  tbe__spool_item(p, TBE__SP_API, &a, sizeof a);
}

static void def(tbe__buf *p, uint32_t id, uint32_t name) {
  tbe__sp_metric_def d = {id, name, 0, TBE__MU_COUNT};
  tbe__spool_item(p, TBE__SP_METRIC_DEF, &d, sizeof d);
}

/* Kernel figures: `n` (metric id, value) pairs of kernel `name` on `dev`. */
static void figures(tbe__buf *p, uint32_t name, uint32_t dev, const uint32_t *ids, const double *v,
                    uint32_t n) {
  uint8_t body[sizeof(tbe__sp_kernel_metrics) + 8 * 16];
  tbe__sp_kernel_metrics h = {name, dev, 3, n};
  memcpy(body, &h, sizeof h);
  for (uint32_t j = 0; j < n && j < 8; j++) {
    uint32_t zero = 0;
    memcpy(body + sizeof h + 16 * j, &ids[j], 4);
    memcpy(body + sizeof h + 16 * j + 4, &zero, 4);
    memcpy(body + sizeof h + 16 * j + 8, &v[j], 8);
  }
  tbe__spool_item(p, TBE__SP_KERNEL_METRICS, body, sizeof h + 16 * (size_t)n);
}

static void status(tbe__buf *p, uint32_t kind, uint32_t dev, uint32_t st, uint64_t samples,
                   uint64_t overflow, uint32_t stale, const char *reason) {
  uint8_t body[sizeof(tbe__sp_metric_status) + 64];
  tbe__sp_metric_status m = {kind, dev, st, stale, samples, overflow};
  size_t rl = reason ? strlen(reason) : 0;
  memcpy(body, &m, sizeof m);
  if (rl) memcpy(body + sizeof m, reason, rl);
  tbe__spool_item(p, TBE__SP_METRIC_STATUS, body, sizeof m + rl);
}

/* DIR/replayed.spool: kernel "gemm" replayed on GPU 0 three times: placed
 * by its cudaLaunchKernel call, by the collector's timing (no API record),
 * and not at all (a replay of another GPU); the mangled "_Z4gemmi" on GPU
 * 1 by its timing; figures with durations for both, a third kernel
 * measured without one; the range profiler's status per GPU. */
static int build_replayed(const char *path) {
  tbe__buf img, p;
  begin(&img, &p, 4242);
  tbe__spool_str(&p, 1, "gemm", 4);
  tbe__spool_str(&p, 2, "cudaLaunchKernel", 16);
  tbe__spool_str(&p, 3, "duration_ns", 11);
  tbe__spool_str(&p, 4, "sm_active_pct", 13);
  tbe__spool_str(&p, 5, "_Z4gemmi", 8);
  tbe__spool_str(&p, 6, "relu", 4);
  def(&p, 1, 4);
  def(&p, 2, 3);
  uint32_t ids[3] = {1, 2, 9};
  double v[3] = {61.5, 400.0, 1.0};
  figures(&p, 1, 0, ids, v, 3);
  v[1] = 250.0;
  figures(&p, 5, 1, ids, v, 2);
  figures(&p, 6, 0, ids, v, 1);
  frame(&img, &p);
  api_at(&p, 1, 2, T0 + 100, T0 + 900);
  kernel_at(&p, 1, 1, 0, 0, 0);
  tbe__sp_replayed r = {2, 0, T0 + 1000, T0 + 1600};
  tbe__spool_item(&p, TBE__SP_REPLAYED, &r, sizeof r);
  kernel_at(&p, 2, 1, 0, 0, 0);
  r.corr = 3;
  r.device = 1;
  tbe__spool_item(&p, TBE__SP_REPLAYED, &r, sizeof r);
  kernel_at(&p, 3, 1, 0, 0, 0);
  r.corr = 4;
  r.start = T0 + 2000;
  r.end = T0 + 2100;
  tbe__spool_item(&p, TBE__SP_REPLAYED, &r, sizeof r);
  kernel_at(&p, 4, 5, 1, 0, 0);
  kernel_at(&p, 5, 6, 0, T0 + 3000, T0 + 3100);
  status(&p, TBE__MKIND_RANGE_PROFILER, 0, TBE__MS_OK, 2, 0, 0, NULL);
  status(&p, TBE__MKIND_RANGE_PROFILER, 1, TBE__MS_OK, 1, 1, 0, NULL);
  finish(&img, &p);
  return save(&img, path);
}

/* DIR/metric_items.spool: see the file's essay. */
static int build_metric_items(const char *path) {
  tbe__buf img, p;
  begin(&img, &p, 4242);
  tbe__spool_str(&p, 1, "sm_active_pct", 13);
  tbe__spool_str(&p, 2, "dram_pct", 8);
  tbe__spool_str(&p, 3, "gemm", 4);
  def(&p, 1, 1);
  def(&p, 2, 1);
  def(&p, 2, 2); /* redefined: the last counts */
  for (uint32_t d = 0; d < 2; d++) {
    uint8_t body[sizeof(tbe__sp_metric_samples) + 3 * 4 + 6 * (8 + 3 * 8)];
    tbe__sp_metric_samples h = {d, 3, 6, 0};
    uint32_t ids[3] = {1, 2, 7}; /* 7: never defined */
    memcpy(body, &h, sizeof h);
    memcpy(body + sizeof h, ids, sizeof ids);
    uint8_t *q = body + sizeof h + sizeof ids;
    for (int k = 0; k < 6; k++) {
      int64_t ts = k == 5 && d == 1 ? -5 : T0 + 1000 * (k + 1) + (k >= 3 ? 8000 : 0);
      double x[3] = {10.0 + k, k == 2 ? NAN : 20.0, 1.0};
      memcpy(q, &ts, 8);
      memcpy(q + 8, x, sizeof x);
      q += 8 + sizeof x;
    }
    tbe__spool_item(&p, TBE__SP_METRIC_SAMPLES, body, sizeof body);
  }
  uint32_t ids[2] = {1, 2};
  double v[2] = {55.0, 30.0};
  for (uint32_t d = 0; d < 3; d++) figures(&p, 3, d, ids, v, 2);
  v[0] = 65.0;
  figures(&p, 3, 0, ids, v, 2); /* GPU 0 again: the last counts */
  status(&p, TBE__MKIND_PM_SAMPLING, 0, TBE__MS_OK, 6, 2, 1, NULL);
  status(&p, TBE__MKIND_PM_SAMPLING, 1, TBE__MS_NO_PERMISSION, 0, 0, 0, "not allowed");
  status(&p, TBE__MKIND_RANGE_PROFILER, 0, TBE__MS_BUSY, 0, 0, 0, "Nsight");
  status(&p, TBE__MKIND_PM_SAMPLING, 2, TBE__MS_UNSUPPORTED, 0, 0, 0, NULL);
  status(&p, TBE__MKIND_PM_SAMPLING, 1, TBE__MS_FAILED, 0, 0, 0, "later\nline");
  status(&p, TBE__MKIND_RANGE_PROFILER, UINT32_MAX, TBE__MS_FAILED, 0, 0, 0, "any GPU");
  tbe__spool_item(&p, TBE__SP_NOTE, "GPU metrics (PM sampling) off on device 1: no", 46);
  tbe__spool_item(&p, TBE__SP_NOTE, "another note", 12);
  finish(&img, &p);
  return save(&img, path);
}

/* DIR/strids.spool: see the file's essay. */
static int build_strids(const char *path) {
  tbe__buf img, p;
  begin(&img, &p, 4242);
  static const struct {
    uint32_t id;
    const char *s;
  } strs[] = {{1, "k1"},
              {3, "k3"},
              {2, "k2"},
              {3, "k3b"},
              {0, "zero"},
              {1u << 26, "k26"},
              {(1u << 26) + 1, "k26+1"},
              {UINT32_MAX, "kmax"},
              {4, "cudaLaunchKernel"}};
  for (size_t i = 0; i < sizeof strs / sizeof *strs; i++)
    tbe__spool_str(&p, strs[i].id, strs[i].s, strlen(strs[i].s));
  for (size_t i = 0; i < sizeof strs / sizeof *strs; i++) {
    int64_t at = T0 + 1000 * (int64_t)(i + 1);
    api_at(&p, (uint32_t)i + 1, 4, at, at + 10);
    kernel_at(&p, (uint32_t)i + 1, strs[i].id, 0, at + 20, at + 90);
  }
  tbe__sp_thread_name tn = {4242, 4243, 1u << 26};
  tbe__spool_item(&p, TBE__SP_THREAD_NAME, &tn, sizeof tn);
  tbe__sp_device dev;
  memset(&dev, 0, sizeof dev);
  dev.name = UINT32_MAX;
  tbe__spool_item(&p, TBE__SP_DEVICE, &dev, sizeof dev);
  finish(&img, &p);
  return save(&img, path);
}

/* DIR/strid26.spool: 97 bytes, the header and a frame of one string
 * definition of id 2^26 (49 bytes of name). */
static int build_strid26(const char *path) {
  tbe__buf img, p;
  tbe__allocator_init(&al, NULL);
  tbe__buf_init(&img, &al);
  tbe__buf_init(&p, &al);
  uint8_t head[TBE__SPOOL_HEADER];
  tbe__spool_header(head, T0);
  tbe__buf_append(&img, head, sizeof head);
  tbe__spool_str(&p, 1u << 26, "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk", 49);
  frame(&img, &p);
  tbe__buf_deinit(&p);
  return save(&img, path);
}

static int build(const char *path, int with_end) {
  tbe__buf img, p;
  tbe__allocator_init(&al, NULL);
  tbe__buf_init(&img, &al);
  tbe__buf_init(&p, &al);
  uint8_t head[TBE__SPOOL_HEADER];
  tbe__spool_header(head, T0);
  tbe__buf_append(&img, head, sizeof head);

  tbe__sp_info info;
  memset(&info, 0, sizeof info);
  info.start_ns = T0;
  info.pid = 4242;
  info.trace = 3;
  tbe__spool_item(&p, TBE__SP_INFO, &info, sizeof info);
  tbe__spool_item(&p, TBE__SP_HOST, "gpuhost", 7);
  tbe__spool_item(&p, TBE__SP_CMD, "./train --steps 2", 17);
  tbe__spool_str(&p, 1, "gemm_kernel", 11);
  tbe__spool_str(&p, 2, "cudaLaunchKernel", 16);
  tbe__spool_str(&p, 3, "NVIDIA H200", 11);
  tbe__spool_str(&p, 4, "step", 4);
  tbe__spool_str(&p, 5, "cudaMemcpyAsync", 15);
  tbe__spool_str(&p, 6, "checkpoint", 10);
  tbe__sp_device dev;
  memset(&dev, 0, sizeof dev);
  dev.memory_bytes = 150109880320LL;
  dev.bandwidth_kbps = 4701468750LL;
  dev.name = 3;
  dev.sm_count = 132;
  dev.clock_khz = 1980000;
  dev.cc_major = 9;
  dev.warp_size = 32;
  tbe__spool_item(&p, TBE__SP_DEVICE, &dev, sizeof dev);
  tbe__sp_context ctx = {1, 0};
  tbe__spool_item(&p, TBE__SP_CONTEXT, &ctx, sizeof ctx);
  tbe__sp_window win = {T0 + 10, 1, 0};
  tbe__spool_item(&p, TBE__SP_WINDOW, &win, sizeof win);
  tbe__sp_marker m;
  memset(&m, 0, sizeof m);
  m.ts = T0 + 20;
  m.id = 1;
  m.flags = 2; /* start */
  m.obj_kind = 1;
  m.obj[0] = 4242;
  m.obj[1] = 4243;
  m.name = 4;
  tbe__spool_item(&p, TBE__SP_MARKER, &m, sizeof m);
  tbe__sp_api a;
  memset(&a, 0, sizeof a);
  a.start = T0 + 50;
  a.end = T0 + 60;
  a.corr = 1;
  a.pid = 4242;
  a.tid = 4243;
  a.name = 2;
  tbe__spool_item(&p, TBE__SP_API, &a, sizeof a);
  tbe__sp_kernel k;
  memset(&k, 0, sizeof k);
  k.start = T0 + 100;
  k.end = T0 + 400;
  k.corr = 1;
  k.context = 1;
  k.stream = 7;
  k.name = 1;
  k.grid[0] = 132;
  k.block[0] = 256;
  tbe__spool_item(&p, TBE__SP_KERNEL, &k, sizeof k);
  frame(&img, &p);

  a.start = T0 + 410;
  a.end = T0 + 420;
  a.corr = 2;
  a.name = 5;
  tbe__spool_item(&p, TBE__SP_API, &a, sizeof a);
  tbe__sp_memcpy c;
  memset(&c, 0, sizeof c);
  c.start = T0 + 430;
  c.end = T0 + 480;
  c.bytes = 1 << 20;
  c.corr = 2;
  c.context = 1;
  c.stream = 7;
  c.src_device = c.dst_device = -1;
  c.copy_kind = 1;
  c.src_kind = 2;
  c.dst_kind = 3;
  tbe__spool_item(&p, TBE__SP_MEMCPY, &c, sizeof c);
  tbe__sp_memset ms;
  memset(&ms, 0, sizeof ms);
  ms.start = T0 + 490;
  ms.end = T0 + 495;
  ms.bytes = 4096;
  ms.context = 1;
  ms.stream = 7;
  tbe__spool_item(&p, TBE__SP_MEMSET, &ms, sizeof ms);
  tbe__sp_sync sy;
  memset(&sy, 0, sizeof sy);
  sy.start = T0 + 500;
  sy.end = T0 + 520;
  sy.context = 1;
  sy.stream = 7;
  sy.type = 3;
  sy.event = UINT32_MAX;
  tbe__spool_item(&p, TBE__SP_SYNC, &sy, sizeof sy);
  tbe__sp_memory mem;
  memset(&mem, 0, sizeof mem);
  mem.ts = T0 + 530;
  mem.addr = 0x7f0000000000ULL;
  mem.bytes = 1 << 20;
  mem.op = 1;
  mem.pid = 4242;
  mem.context = 1;
  tbe__spool_item(&p, TBE__SP_MEMORY, &mem, sizeof mem);
  mem.ts = T0 + 560;
  mem.op = 2;
  tbe__spool_item(&p, TBE__SP_MEMORY, &mem, sizeof mem);
  tbe__sp_overhead ov;
  memset(&ov, 0, sizeof ov);
  ov.start = T0 + 570;
  ov.end = T0 + 575;
  ov.kind = 1;
  ov.obj_kind = 1;
  ov.obj[0] = 4242;
  ov.obj[1] = 4243;
  tbe__spool_item(&p, TBE__SP_OVERHEAD, &ov, sizeof ov);
  m.ts = T0 + 580;
  m.flags = 1; /* instant */
  m.id = 2;
  m.name = 6;
  tbe__spool_item(&p, TBE__SP_MARKER, &m, sizeof m);
  tbe__spool_item(&p, TBE__SP_NOTE, "seed note", 9);
  frame(&img, &p);

  m.ts = T0 + 600;
  m.flags = 4; /* end */
  m.id = 1;
  m.name = 0;
  tbe__spool_item(&p, TBE__SP_MARKER, &m, sizeof m);
  tbe__sp_stats st;
  memset(&st, 0, sizeof st);
  st.records = 12;
  st.buffers = 1;
  tbe__spool_item(&p, TBE__SP_STATS, &st, sizeof st);
  if (with_end) {
    tbe__sp_end e = {T0 + 700};
    tbe__spool_item(&p, TBE__SP_END, &e, sizeof e);
  }
  frame(&img, &p);
  tbe__buf_deinit(&p);
  int rc = tbe__buf_error(&img);
  FILE *f = rc ? NULL : fopen(path, "wb");
  if (!f || fwrite(img.data, 1, img.len, f) != img.len || fclose(f) != 0) rc = -1;
  tbe__buf_deinit(&img);
  return rc;
}

/* DIR/steps.spool: pid 4343, collection on at T0+10 and off at T0+800;
 * steps marked at T0+100, +300 (by another thread), +500; "train_step"
 * ranges [110, 290], [310, 490], [510, 690] on thread 4344 with payloads
 * 10, 11, 12, each with a launch and a 100 ns kernel. */
static int build_steps(const char *path) {
  tbe__buf img, p;
  tbe__allocator_init(&al, NULL);
  tbe__buf_init(&img, &al);
  tbe__buf_init(&p, &al);
  uint8_t head[TBE__SPOOL_HEADER];
  tbe__spool_header(head, T0);
  tbe__buf_append(&img, head, sizeof head);
  tbe__sp_info info;
  memset(&info, 0, sizeof info);
  info.start_ns = T0;
  info.pid = 4343;
  info.trace = 3;
  tbe__spool_item(&p, TBE__SP_INFO, &info, sizeof info);
  tbe__spool_item(&p, TBE__SP_HOST, "gpuhost", 7);
  tbe__spool_item(&p, TBE__SP_CMD, "./train", 8);
  tbe__spool_str(&p, 1, "train_step", 10);
  tbe__spool_str(&p, 2, "cudaLaunchKernel", 16);
  tbe__spool_str(&p, 3, "sgd_kernel", 10);
  tbe__sp_window on = {T0 + 10, 1, 0}, off = {T0 + 800, 0, 0};
  tbe__spool_item(&p, TBE__SP_WINDOW, &on, sizeof on);
  for (int i = 0; i < 3; i++) {
    int64_t at = T0 + 100 + 200 * i;
    tbe__sp_step st = {at, 4343, i == 1 ? 4345u : 4344u};
    tbe__spool_item(&p, TBE__SP_STEP, &st, sizeof st);
    tbe__sp_marker m;
    memset(&m, 0, sizeof m);
    m.ts = at + 10;
    m.id = (uint32_t)i + 1;
    m.flags = 2; /* start */
    m.obj_kind = 2;
    m.obj[0] = 4343;
    m.obj[1] = 4344;
    m.name = 1;
    tbe__spool_item(&p, TBE__SP_MARKER, &m, sizeof m);
    tbe__sp_marker_data d;
    memset(&d, 0, sizeof d);
    int64_t pay = 10 + i;
    memcpy(&d.payload, &pay, sizeof pay);
    d.id = m.id;
    d.payload_kind = 4; /* int64 */
    tbe__spool_item(&p, TBE__SP_MARKER_DATA, &d, sizeof d);
    tbe__sp_api a;
    memset(&a, 0, sizeof a);
    a.start = at + 20;
    a.end = at + 30;
    a.corr = (uint32_t)i + 1;
    a.pid = 4343;
    a.tid = 4344;
    a.name = 2;
    tbe__spool_item(&p, TBE__SP_API, &a, sizeof a);
    tbe__sp_kernel k;
    memset(&k, 0, sizeof k);
    k.start = at + 40;
    k.end = at + 140;
    k.corr = a.corr;
    k.context = 1;
    k.stream = 7;
    k.name = 3;
    k.grid[0] = k.block[0] = 1;
    tbe__spool_item(&p, TBE__SP_KERNEL, &k, sizeof k);
    m.ts = at + 190;
    m.flags = 4; /* end */
    m.name = 0;
    tbe__spool_item(&p, TBE__SP_MARKER, &m, sizeof m);
  }
  tbe__spool_item(&p, TBE__SP_WINDOW, &off, sizeof off);
  tbe__sp_end e = {T0 + 900};
  tbe__spool_item(&p, TBE__SP_END, &e, sizeof e);
  frame(&img, &p);
  tbe__buf_deinit(&p);
  int rc = tbe__buf_error(&img);
  FILE *f = rc ? NULL : fopen(path, "wb");
  if (!f || fwrite(img.data, 1, img.len, f) != img.len || fclose(f) != 0) rc = -1;
  tbe__buf_deinit(&img);
  return rc;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/full.spool", argv[1]);
  if (build(path, 1) != 0) return 1;
  snprintf(path, sizeof path, "%s/noend.spool", argv[1]);
  if (build(path, 0) != 0) return 1;
  snprintf(path, sizeof path, "%s/steps.spool", argv[1]);
  if (build_steps(path) != 0) return 1;
  snprintf(path, sizeof path, "%s/replayed.spool", argv[1]);
  if (build_replayed(path) != 0) return 1;
  snprintf(path, sizeof path, "%s/metric_items.spool", argv[1]);
  if (build_metric_items(path) != 0) return 1;
  snprintf(path, sizeof path, "%s/strids.spool", argv[1]);
  if (build_strids(path) != 0) return 1;
  snprintf(path, sizeof path, "%s/strid26.spool", argv[1]);
  if (build_strid26(path) != 0) return 1;
  return 0;
}
