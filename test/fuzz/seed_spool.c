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
 * test/cli/test_import.sh reads it).  Not a test; run by hand when the
 * format changes. */
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
  return 0;
}
