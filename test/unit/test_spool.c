/* test_spool.c: the collector's spool file: framing, round trip into the
 * trace model, a spool cut at every byte of its last frame (what is
 * complete converts, the rest is reported and the capture marked as ended
 * early), corrupt frames, and files that are not spools; what conversion
 * keeps (collection windows, capture ranges: nothing outside them, the
 * trace spans them) and the steps it makes (tbe_profiler_step marks,
 * --steps nvtx:NAME); string and metric ids as keys (any order, any value,
 * the last definition counting).  Needs no CUDA. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "import/spool.h"
#include "collect/options.h"
#include "events/spool.h"
#include "common/alloc.h"
#include "common/buf.h"
#include "tbexport.h"
#include "tbexport/import.h"
#include "tbexport/profiler.h"
#include "testutil.h"

#define T0 1700000000000000000ll

static tbe_allocator al; /* malloc, for the test's buffers */

/* tbe_session_convert, its totals into *r and its process count into *np
 * (either may be NULL), the collector's cost into *cost (may be NULL). */
static int session_run(const tbe_session_options *s, tbe_profiler_result *r, size_t *np,
                       tbe_session_result *cost) {
  tbe_session_result res;
  int rc = tbe_session_convert(s, &res);
  if (r) *r = res.total;
  if (np) *np = res.processes;
  if (cost) *cost = res;
  return rc;
}

typedef struct img {
  tbe__buf b;        /* the whole file image */
  size_t last_frame; /* offset of the last frame */
} img;

static void frame(img *m, tbe__buf *payload) {
  m->last_frame = m->b.len;
  uint8_t head[8];
  uint32_t len = (uint32_t)payload->len;
  memcpy(head, &len, 4);
  uint32_t c = tbe__spool_checksum(head, 4, 0);
  c = tbe__spool_checksum(payload->data, payload->len, c);
  memcpy(head + 4, &c, 4);
  tbe__buf_append(&m->b, head, 8);
  tbe__buf_append(&m->b, payload->data, payload->len);
  tbe__buf_clear(payload);
}

/* Starts an image: the 32-byte header, created at T0. */
static void img_start(img *m) {
  tbe__buf_init(&m->b, &al);
  uint8_t head[TBE__SPOOL_HEADER];
  tbe__spool_header(head, T0);
  tbe__buf_append(&m->b, head, sizeof head);
}

static void kern(tbe__buf *p, uint32_t corr, uint32_t name, int64_t s, int64_t e) {
  tbe__sp_kernel k;
  memset(&k, 0, sizeof k);
  k.start = s;
  k.end = e;
  k.corr = corr;
  k.stream = 7;
  k.name = name;
  k.grid[0] = k.block[0] = 1;
  tbe__spool_item(p, TBE__SP_KERNEL, &k, sizeof k);
}

/* A spool of three frames: info + strings + 2 kernels + API; 3 kernels;
 * 2 kernels + stats + end.  Returns the image. */
static void build(img *m, int with_end) {
  img_start(m);
  tbe__buf p;
  tbe__buf_init(&p, &al);
  tbe__sp_info info;
  memset(&info, 0, sizeof info);
  info.start_ns = T0;
  info.pid = 321;
  info.trace = 3;
  tbe__spool_item(&p, TBE__SP_INFO, &info, sizeof info);
  tbe__spool_item(&p, TBE__SP_HOST, "gpuhost", 7);
  tbe__spool_item(&p, TBE__SP_CMD, "./app --x", 9);
  tbe__spool_str(&p, 1, "kernel_a", 8);
  tbe__spool_str(&p, 2, "cudaLaunchKernel", 16);
  kern(&p, 1, 1, T0 + 100, T0 + 200);
  kern(&p, 2, 1, T0 + 200, T0 + 300);
  tbe__sp_api a;
  memset(&a, 0, sizeof a);
  a.start = T0 + 50;
  a.end = T0 + 60;
  a.corr = 1;
  a.pid = 321;
  a.tid = 322;
  a.name = 2;
  tbe__spool_item(&p, TBE__SP_API, &a, sizeof a);
  frame(m, &p);
  tbe__spool_str(&p, 3, "kernel_b", 8);
  for (int i = 0; i < 3; i++) kern(&p, 10 + (uint32_t)i, 3, T0 + 1000 + i * 100, T0 + 1050 + i * 100);
  frame(m, &p);
  kern(&p, 20, 1, T0 + 5000, T0 + 5100);
  kern(&p, 21, 3, T0 + 5100, T0 + 5200);
  tbe__sp_stats st;
  memset(&st, 0, sizeof st);
  st.records = 8;
  st.cupti_dropped = 3;
  st.buffer_bytes = 8u << 20;
  st.decode_cpu_ns = 1234567;
  tbe__spool_item(&p, TBE__SP_STATS, &st, sizeof st);
  if (with_end) {
    tbe__sp_end e = {T0 + 6000};
    tbe__spool_item(&p, TBE__SP_END, &e, sizeof e);
  }
  frame(m, &p);
  tbe__buf_deinit(&p);
  assert_int_equal(tbe__buf_error(&m->b), 0);
}

static void api_at(tbe__buf *p, uint32_t corr, uint32_t name, int64_t s, int64_t e) {
  tbe__sp_api a;
  memset(&a, 0, sizeof a);
  a.start = s;
  a.end = e;
  a.corr = corr;
  a.pid = 321;
  a.tid = 322;
  a.name = name;
  tbe__spool_item(p, TBE__SP_API, &a, sizeof a);
}

/* An NVTX push/pop range [s, e] with marker id ID on thread TID. */
static void range_at(tbe__buf *p, uint32_t id, uint32_t name, uint32_t tid, int64_t s, int64_t e) {
  tbe__sp_marker m;
  memset(&m, 0, sizeof m);
  m.ts = s;
  m.id = id;
  m.flags = TBE__MK_START;
  m.obj_kind = TBE__OBJ_THREAD;
  m.obj[0] = 321;
  m.obj[1] = tid;
  m.name = name;
  tbe__spool_item(p, TBE__SP_MARKER, &m, sizeof m);
  m.ts = e;
  m.flags = TBE__MK_END;
  m.name = 0;
  tbe__spool_item(p, TBE__SP_MARKER, &m, sizeof m);
}

static void overhead_at(tbe__buf *p, int64_t s, int64_t e) {
  tbe__sp_overhead o;
  memset(&o, 0, sizeof o);
  o.start = s;
  o.end = e;
  o.kind = 7u << 16; /* Activity buffer request */
  o.obj_kind = TBE__OBJ_THREAD;
  o.obj[0] = 321;
  o.obj[1] = 322;
  tbe__spool_item(p, TBE__SP_OVERHEAD, &o, sizeof o);
}

static void window_at(tbe__buf *p, int64_t ts, int on) {
  tbe__sp_window w = {ts, (uint32_t)on, 0};
  tbe__spool_item(p, TBE__SP_WINDOW, &w, sizeof w);
}

static void step_at(tbe__buf *p, int64_t ts, uint32_t tid) {
  tbe__sp_step st = {ts, 321, tid};
  tbe__spool_item(p, TBE__SP_STEP, &st, sizeof st);
}

/* Starts a one-frame image of pid 321: header, info (collection began at
 * T0) and the strings "k" (1), "cudaLaunchKernel" (2), "profile" (3),
 * "train_step" (4), "other" (5). */
static void img_begin(img *m, tbe__buf *p) {
  img_start(m);
  tbe__buf_init(p, &al);
  tbe__sp_info info;
  memset(&info, 0, sizeof info);
  info.start_ns = T0;
  info.pid = 321;
  info.trace = 3;
  tbe__spool_item(p, TBE__SP_INFO, &info, sizeof info);
  tbe__spool_str(p, 1, "k", 1);
  tbe__spool_str(p, 2, "cudaLaunchKernel", 16);
  tbe__spool_str(p, 3, "profile", 7);
  tbe__spool_str(p, 4, "train_step", 10);
  tbe__spool_str(p, 5, "other", 5);
}

/* Ends it: END at END_NS, the frame, the payload buffer freed. */
static void img_end(img *m, tbe__buf *p, int64_t end_ns) {
  tbe__sp_end e = {end_ns};
  tbe__spool_item(p, TBE__SP_END, &e, sizeof e);
  frame(m, p);
  tbe__buf_deinit(p);
  assert_int_equal(tbe__buf_error(&m->b), 0);
}

static size_t kernels(const tbe_trace *t) {
  size_t n = 0;
  for (size_t i = 0; i < t->nevents; i++) n += t->events[i].kind == TBE_EV_KERNEL;
  return n;
}

static int convert(const uint8_t *d, size_t n, tbe_trace **t, tbe__convert_info *info) {
  assert_int_equal(tbe_trace_create(t, NULL), 0);
  return tbe__spool_to_trace(d, n, "test.spool", NULL, *t, info);
}

static void test_round_trip(void **state) {
  (void)state;
  img m;
  build(&m, 1);
  /* Through a real file, as tbexport reads it. */
  char *dir = tu_mkdtemp();
  char *path = tu_join(dir, "321.spool");
  assert_int_equal(tu_write_file(path, m.b.data, m.b.len), 0);
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  tbe__convert_info info;
  assert_int_equal(tbe__spool_file_to_trace(path, NULL, t, &info), 0);
  assert_int_equal(kernels(t), 7);
  assert_int_equal(t->nevents, 8);
  assert_false(t->ended_early);
  assert_false(info.ended_early);
  assert_int_equal(info.tail_bytes, 0);
  assert_int_equal(info.pid, 321);
  assert_string_equal(info.cmd, "./app --x");
  assert_int_equal(t->dropped_records, 3);
  assert_string_equal(tbe_trace_str(t, t->host), "gpuhost");
  assert_int_equal(t->nprocesses, 1);
  assert_int_equal(t->processes[0].pid, 321);
  assert_string_equal(tbe_trace_str(t, t->processes[0].name), "./app --x");
  assert_int_equal(t->start_ns, T0);
  assert_int_equal(t->stop_ns, T0 + 6000);
  /* The kernel with correlation 1 is linked to its launch. */
  int linked = 0;
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_event *e = &t->events[i];
    if (e->kind == TBE_EV_KERNEL && e->correlation == 1) {
      assert_int_not_equal(e->link, TBE_NONE);
      assert_int_equal(t->events[e->link].kind, TBE_EV_RUNTIME);
      assert_string_equal(tbe_trace_str(t, e->name), "kernel_a");
      linked = 1;
    }
    if (e->kind == TBE_EV_KERNEL && e->correlation == 21)
      assert_string_equal(tbe_trace_str(t, e->name), "kernel_b");
  }
  assert_true(linked);
  /* busy: 7 kernels of 100+100+50*3+100+100 = 550 ns over 6000 ns */
  assert_true(info.r.gpu_busy_pct > 9.16 && info.r.gpu_busy_pct < 9.17);
  tbe_trace_free(t);
  tu_rmrf(dir);
  free(dir);
  free(path);
  tbe__buf_deinit(&m.b);
}

/* The fourth importer: tbe_import_file and tbe_import_detect take a spool
 * through the table, and read it as the session's conversion does (with
 * no options); one of another build fails naming the byte and why. */
static void test_import_table(void **state) {
  (void)state;
  img m;
  build(&m, 1);
  char *dir = tu_mkdtemp();
  char *path = tu_join(dir, "321.spool");
  assert_int_equal(tu_write_file(path, m.b.data, m.b.len), 0);
  tbe_import_format f = TBE_FORMAT_UNKNOWN;
  assert_int_equal(tbe_import_detect(path, &f), 0);
  assert_int_equal(f, TBE_FORMAT_SPOOL);
  assert_string_equal(tbe_import_format_name(f), "spool");
  tbe_trace *a, *b;
  tbe_import_error err;
  assert_int_equal(tbe_trace_create(&a, NULL), 0);
  assert_int_equal(tbe_import_file(a, path, NULL, &err), 0);
  assert_int_equal(convert(m.b.data, m.b.len, &b, NULL), 0);
  assert_int_equal(a->nevents, b->nevents);
  assert_int_equal(kernels(a), 7);
  for (size_t i = 0; i < a->nevents; i++) {
    assert_int_equal(a->events[i].kind, b->events[i].kind);
    assert_int_equal(a->events[i].start_ns, b->events[i].start_ns);
    assert_int_equal(a->events[i].dur_ns, b->events[i].dur_ns);
    assert_string_equal(tbe_trace_str(a, a->events[i].name), tbe_trace_str(b, b->events[i].name));
  }
  assert_int_equal(a->start_ns, b->start_ns);
  assert_int_equal(a->stop_ns, b->stop_ns);
  assert_int_equal(a->dropped_records, b->dropped_records);
  assert_string_equal(tbe_trace_str(a, a->host), "gpuhost");
  tbe_trace_free(a);
  tbe_trace_free(b);
  /* Another byte order: the importer names byte 12. */
  uint32_t bom = 0x04030201u;
  memcpy(m.b.data + 12, &bom, 4);
  assert_int_equal(tu_write_file(path, m.b.data, m.b.len), 0);
  assert_int_equal(tbe_trace_create(&a, NULL), 0);
  assert_int_equal(tbe_import_file(a, path, NULL, &err), TBE_ECORRUPT);
  assert_int_equal(err.offset, 12);
  assert_non_null(strstr(err.message, "321.spool: byte 12: other byte order"));
  tbe_trace_free(a);
  tu_rmrf(dir);
  free(dir);
  free(path);
  tbe__buf_deinit(&m.b);
}

static void test_cut_at_every_byte_of_last_frame(void **state) {
  (void)state;
  img m;
  build(&m, 1);
  for (size_t n = m.last_frame; n < m.b.len; n++) {
    tbe_trace *t;
    tbe__convert_info info;
    assert_int_equal(convert(m.b.data, n, &t, &info), 0);
    assert_int_equal(kernels(t), 5); /* the first two frames, exactly */
    assert_true(t->ended_early);
    assert_true(info.ended_early);
    assert_int_equal(info.tail_offset, m.last_frame);
    assert_int_equal(info.tail_bytes, n - m.last_frame);
    assert_int_equal(t->dropped_records, 0); /* the stats were in the lost frame */
    int warned = 0;
    for (size_t w = 0; w < t->nwarnings; w++)
      warned |= strstr(tbe_trace_str(t, t->warnings[w]), "ended early") != NULL;
    assert_true(warned);
    tbe_trace_free(t);
  }
  tbe__buf_deinit(&m.b);
}

static void test_corrupt_last_frame(void **state) {
  (void)state;
  img m;
  build(&m, 1);
  for (size_t off = m.last_frame; off < m.b.len; off += 7) {
    m.b.data[off] ^= 0x5a;
    tbe_trace *t;
    tbe__convert_info info;
    assert_int_equal(convert(m.b.data, m.b.len, &t, &info), 0);
    assert_int_equal(kernels(t), 5);
    assert_true(t->ended_early);
    assert_int_equal(info.tail_offset, m.last_frame);
    assert_non_null(info.tail_why);
    tbe_trace_free(t);
    m.b.data[off] ^= 0x5a;
  }
  tbe__buf_deinit(&m.b);
}

static void test_no_end_marker(void **state) {
  (void)state;
  img m;
  build(&m, 0); /* killed after the last frame was written */
  tbe_trace *t;
  tbe__convert_info info;
  assert_int_equal(convert(m.b.data, m.b.len, &t, &info), 0);
  assert_int_equal(kernels(t), 7);
  assert_true(t->ended_early);
  assert_int_equal(info.tail_bytes, 0);
  assert_int_equal(t->stop_ns, T0 + 5200); /* the last activity seen */
  tbe_trace_free(t);
  tbe__buf_deinit(&m.b);
}

static void test_duration_window(void **state) {
  (void)state;
  /* --duration: collection on at T0+100, off at T0+3000; the program runs
   * on until T0+100000.  The trace spans the window (and the kernel that
   * completed after it was closed), and GPU busy % is over that span. */
  img m;
  img_start(&m);
  tbe__buf p;
  tbe__buf_init(&p, &al);
  tbe__sp_info info;
  memset(&info, 0, sizeof info);
  info.start_ns = T0;
  info.pid = 77;
  info.trace = 3;
  tbe__spool_item(&p, TBE__SP_INFO, &info, sizeof info);
  tbe__spool_str(&p, 1, "k", 1);
  tbe__sp_window on = {T0 + 100, 1, 0}, off = {T0 + 3000, 0, 0}, stop = {T0 + 99000, 0, 0};
  tbe__spool_item(&p, TBE__SP_WINDOW, &on, sizeof on);
  kern(&p, 1, 1, T0 + 1000, T0 + 2000);
  kern(&p, 2, 1, T0 + 2900, T0 + 3400); /* launched inside, done after */
  tbe__spool_item(&p, TBE__SP_WINDOW, &off, sizeof off);
  tbe__spool_item(&p, TBE__SP_WINDOW, &stop, sizeof stop);
  tbe__sp_end e = {T0 + 100000};
  tbe__spool_item(&p, TBE__SP_END, &e, sizeof e);
  frame(&m, &p);
  tbe__buf_deinit(&p);
  tbe_trace *t;
  tbe__convert_info ci;
  assert_int_equal(convert(m.b.data, m.b.len, &t, &ci), 0);
  assert_int_equal(kernels(t), 2);
  assert_int_equal(t->start_ns, T0 + 100);
  assert_int_equal(t->stop_ns, T0 + 3400);
  /* busy: 1000 + 500 ns of 3300 */
  assert_true(ci.r.gpu_busy_pct > 45.4 && ci.r.gpu_busy_pct < 45.5);
  tbe_trace_free(t);
  tbe__buf_deinit(&m.b);
}

#define MS 1000000ll
#define SEC 1000000000ll

/* The end of an event. */
static int64_t end_of(const tbe_event *e) { return e->start_ns + e->dur_ns; }

static int warned(const tbe_trace *t, const char *needle) {
  for (size_t w = 0; w < t->nwarnings; w++)
    if (strstr(tbe_trace_str(t, t->warnings[w]), needle)) return 1;
  return 0;
}

/* A capture range around the middle of a long capture (10 s collected, the
 * range 200 ms from 4 s), with CUPTI overhead records, API calls, kernels,
 * NVTX, syncs and memory before, inside and after it: the trace spans the
 * range and the GPU work launched in it, nothing else is kept, overhead is
 * counted only inside (cut to the range), and GPU busy % is over the
 * range.  (A real run cut to 200 ms once reported wall 5.8 s, busy 1.1%.) */
static void test_capture_range_bounds_everything(void **state) {
  (void)state;
  img m;
  tbe__buf p;
  img_begin(&m, &p);
  window_at(&p, T0 + 1000, 1);
  overhead_at(&p, T0 + 1 * MS, T0 + 6 * MS);               /* before */
  overhead_at(&p, T0 + 4 * SEC - 1 * MS, T0 + 4 * SEC + 1 * MS); /* across the start: 1 ms in */
  overhead_at(&p, T0 + 4 * SEC + 100 * MS, T0 + 4 * SEC + 102 * MS); /* inside: 2 ms */
  overhead_at(&p, T0 + 8 * SEC, T0 + 8 * SEC + 50 * MS);   /* after */
  api_at(&p, 1, 2, T0 + 1 * SEC, T0 + 1 * SEC + 10);
  kern(&p, 1, 1, T0 + 1 * SEC + 100, T0 + 2 * SEC);
  range_at(&p, 1, 5, 322, T0 + 2 * SEC, T0 + 3 * SEC);      /* "other", before */
  range_at(&p, 2, 3, 322, T0 + 4 * SEC, T0 + 4 * SEC + 200 * MS); /* "profile": the range */
  range_at(&p, 3, 5, 322, T0 + 4 * SEC + 10 * MS, T0 + 4 * SEC + 20 * MS); /* inside */
  api_at(&p, 2, 2, T0 + 4 * SEC + 50 * MS, T0 + 4 * SEC + 51 * MS);
  kern(&p, 2, 1, T0 + 4 * SEC + 60 * MS, T0 + 4 * SEC + 124 * MS); /* 64 ms */
  api_at(&p, 3, 2, T0 + 4 * SEC + 190 * MS, T0 + 4 * SEC + 191 * MS);
  kern(&p, 3, 1, T0 + 4 * SEC + 191 * MS, T0 + 4 * SEC + 250 * MS); /* 59 ms, past the end */
  api_at(&p, 4, 2, T0 + 5 * SEC, T0 + 5 * SEC + 10);
  kern(&p, 4, 1, T0 + 5 * SEC + 100, T0 + 5 * SEC + 100 * MS);
  tbe__sp_sync y;
  memset(&y, 0, sizeof y);
  y.start = T0 + 3 * SEC;
  y.end = T0 + 3 * SEC + 5 * MS;
  y.type = 3;
  y.event = UINT32_MAX;
  tbe__spool_item(&p, TBE__SP_SYNC, &y, sizeof y);
  y.start = T0 + 4 * SEC + 150 * MS;
  y.end = T0 + 4 * SEC + 160 * MS;
  tbe__spool_item(&p, TBE__SP_SYNC, &y, sizeof y);
  tbe__sp_memory mem;
  memset(&mem, 0, sizeof mem);
  mem.ts = T0 + 9 * SEC;
  mem.bytes = 4096;
  mem.op = 1;
  tbe__spool_item(&p, TBE__SP_MEMORY, &mem, sizeof mem);
  window_at(&p, T0 + 10 * SEC, 0); /* stop */
  img_end(&m, &p, T0 + 10 * SEC + 100);

  tbe__convert_opts o = {.capture = TBE_CAPTURE_NVTX, .capture_name = "profile"};
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  tbe__convert_info info;
  assert_int_equal(tbe__spool_to_trace(m.b.data, m.b.len, "321.spool", &o, t, &info), 0);
  assert_int_equal(t->start_ns, T0 + 4 * SEC);
  assert_int_equal(t->stop_ns, T0 + 4 * SEC + 250 * MS); /* the range and the kernel it launched */
  assert_int_equal(info.r.start_ns, t->start_ns);
  assert_int_equal(info.r.stop_ns, t->stop_ns);
  /* busy: 64 + 59 ms of 250 */
  assert_true(info.r.gpu_busy_pct > 49.19 && info.r.gpu_busy_pct < 49.21);
  assert_int_equal(t->overhead_ns, 3 * MS);
  assert_int_equal(info.r.overhead_ns, 3 * MS);
  assert_int_equal(kernels(t), 2);
  assert_int_equal(info.r.kernels, 2);
  assert_int_equal(info.r.api_calls, 2);
  assert_int_equal(info.r.nvtx_ranges, 2);
  size_t overheads = 0;
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_event *e = &t->events[i];
    assert_true(e->start_ns >= t->start_ns); /* nothing before */
    if (e->kind == TBE_EV_KERNEL) continue; /* launched inside, may end after */
    assert_true(e->start_ns <= T0 + 4 * SEC + 200 * MS);
    assert_true(end_of(e) <= T0 + 4 * SEC + 200 * MS);
    if (e->kind == TBE_EV_OVERHEAD) overheads++;
  }
  assert_int_equal(overheads, 2);
  /* before: 1 API, 1 kernel, "other", 1 sync, 2 overheads; after: 1 API,
   * 1 kernel, 1 memory */
  assert_int_equal(info.outside_capture, 9);
  assert_int_equal(info.outside_window, 0);
  assert_true(warned(t, "9 records outside the capture range were left out"));
  /* What the user reads: wall and GPU busy in the summary. */
  tbe_analysis *an;
  assert_int_equal(tbe_analysis_create(&an, t, NULL), 0);
  assert_int_equal(an->wall_ns, 250 * MS);
  assert_int_equal(an->overhead_ns, 3 * MS);
  tbe_analysis_free(an);
  tbe_trace_free(t);
  tbe__buf_deinit(&m.b);
}

/* --delay and --duration: collection on at T0+1000, off at T0+5000 (the
 * stop's own "off" later changes nothing).  What CUPTI delivers outside
 * that (its overhead while enabling, a call already running, a kernel it
 * launched) is left out; overhead across the end is cut; a range open at
 * the end closes there, not at the process's end. */
static void test_collection_window_bounds_everything(void **state) {
  (void)state;
  img m;
  tbe__buf p;
  img_begin(&m, &p);
  window_at(&p, T0 + 1000, 1);
  overhead_at(&p, T0 + 500, T0 + 900);    /* enabling: before */
  overhead_at(&p, T0 + 4900, T0 + 5200);  /* 100 ns inside */
  overhead_at(&p, T0 + 6000, T0 + 6100);  /* after */
  api_at(&p, 1, 2, T0 + 800, T0 + 1100);  /* began before */
  kern(&p, 1, 1, T0 + 1200, T0 + 1300);   /* launched by it */
  api_at(&p, 2, 2, T0 + 2000, T0 + 2010);
  kern(&p, 2, 1, T0 + 4950, T0 + 5400);   /* launched inside, ends after */
  tbe__sp_marker mk;
  memset(&mk, 0, sizeof mk);
  mk.ts = T0 + 3000;
  mk.id = 9;
  mk.flags = TBE__MK_START; /* never ends */
  mk.obj_kind = TBE__OBJ_THREAD;
  mk.obj[0] = 321;
  mk.obj[1] = 322;
  mk.name = 5;
  tbe__spool_item(&p, TBE__SP_MARKER, &mk, sizeof mk);
  tbe__sp_memory mem;
  memset(&mem, 0, sizeof mem);
  mem.ts = T0 + 7000;
  mem.bytes = 64;
  mem.op = 1;
  tbe__spool_item(&p, TBE__SP_MEMORY, &mem, sizeof mem);
  window_at(&p, T0 + 5000, 0);
  window_at(&p, T0 + 9000, 0); /* the stop */
  img_end(&m, &p, T0 + 10000);
  tbe_trace *t;
  tbe__convert_info info;
  assert_int_equal(convert(m.b.data, m.b.len, &t, &info), 0);
  assert_int_equal(t->start_ns, T0 + 1000);
  assert_int_equal(t->stop_ns, T0 + 5400);
  assert_int_equal(t->overhead_ns, 100);
  assert_int_equal(kernels(t), 1);
  assert_int_equal(info.r.api_calls, 1);
  /* overhead x2, API, kernel, memory */
  assert_int_equal(info.outside_window, 5);
  assert_int_equal(info.outside_capture, 0);
  assert_false(warned(t, "capture range"));
  const tbe_event *open = NULL;
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_event *e = &t->events[i];
    assert_true(e->start_ns >= T0 + 1000 && e->start_ns <= T0 + 5000);
    if (e->kind == TBE_EV_NVTX_RANGE) open = e;
  }
  assert_non_null(open);
  assert_int_equal(end_of(open), T0 + 5000);
  /* busy: the kernel's 450 ns of 4400 */
  assert_true(info.r.gpu_busy_pct > 10.22 && info.r.gpu_busy_pct < 10.23);
  tbe_trace_free(t);
  tbe__buf_deinit(&m.b);
}

/* Steps marked by the program (TBE__SP_STEP, tbe_profiler_step): numbered
 * by time over the whole spool (the one before the window is left out but
 * counts), each until the next, the last until collection stops, on the
 * thread that marked it.  --steps wins; with no match it warns, names the
 * top-level ranges, and the marks stay.  Through the run's XSpace, the
 * steps come back. */
static void step_image(img *m) {
  tbe__buf p;
  img_begin(m, &p);
  step_at(&p, T0 + 50, 322); /* step 0, before collection began */
  window_at(&p, T0 + 100, 1);
  step_at(&p, T0 + 200, 322);
  range_at(&p, 1, 4, 322, T0 + 210, T0 + 390);
  step_at(&p, T0 + 700, 322); /* (items need not come in time order) */
  step_at(&p, T0 + 400, 323);
  range_at(&p, 2, 4, 322, T0 + 410, T0 + 690);
  range_at(&p, 3, 5, 322, T0 + 800, T0 + 810);
  range_at(&p, 4, 5, 323, T0 + 820, T0 + 830);
  range_at(&p, 5, 5, 323, T0 + 840, T0 + 850);
  overhead_at(&p, T0 + 900, T0 + 950);
  window_at(&p, T0 + 1000, 0); /* tbe_profiler_stop */
  img_end(m, &p, T0 + 1100);
}

static void test_marked_steps(void **state) {
  (void)state;
  img m;
  step_image(&m);
  tbe_trace *t;
  tbe__convert_info info;
  assert_int_equal(convert(m.b.data, m.b.len, &t, &info), 0);
  assert_int_equal(info.steps_marked, 4);
  assert_int_equal(t->nsteps, 3);
  assert_int_equal(info.r.steps, 3);
  static const int64_t s0[3] = {200, 400, 700}, s1[3] = {400, 700, 1000};
  static const int64_t tid[3] = {322, 323, 322};
  for (size_t i = 0; i < 3; i++) {
    const tbe_step *st = &t->steps[i];
    char name[32];
    snprintf(name, sizeof name, "ProfilerStep#%zu", i + 1);
    assert_int_equal(st->num, (int64_t)i + 1);
    assert_int_equal(st->start_ns, T0 + s0[i]);
    assert_int_equal(st->end_ns, T0 + s1[i]);
    assert_string_equal(tbe_trace_str(t, st->name), name);
    assert_int_not_equal(st->track, TBE_NONE);
    assert_int_equal(t->tracks[st->track].tid, tid[i]);
  }
  tbe_trace_free(t);

  /* --steps wins. */
  tbe__convert_opts o = {.steps_name = "train_step"};
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  assert_int_equal(tbe__spool_to_trace(m.b.data, m.b.len, "321.spool", &o, t, &info), 0);
  assert_int_equal(t->nsteps, 2);
  assert_int_equal(info.r.steps, 2);
  assert_int_equal(t->steps[0].num, 0);
  assert_int_equal(t->steps[0].start_ns, T0 + 210);
  assert_int_equal(t->steps[1].end_ns, T0 + 690);
  assert_string_equal(tbe_trace_str(t, t->steps[1].name), "train_step");
  assert_int_equal(t->nwarnings, 0);
  tbe_trace_free(t);

  /* No match: one warning with the name and the top-level ranges; the
   * marked steps stay. */
  o.steps_name = "train";
  o.steps_domain = "loop";
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  assert_int_equal(tbe__spool_to_trace(m.b.data, m.b.len, "321.spool", &o, t, &info), 0);
  assert_int_equal(t->nsteps, 3);
  assert_int_equal(t->nwarnings, 1);
  assert_string_equal(tbe_trace_str(t, t->warnings[0]),
                      "--steps nvtx:train@loop: no NVTX range or user annotation has that name in "
                      "that domain; the most frequent top-level ranges are 'other' (3), "
                      "'train_step' (2); the 3 steps found otherwise are kept");
  tbe_trace_free(t);
  tbe__buf_deinit(&m.b);

  /* A spool without step items (older writers): no steps. */
  build(&m, 1);
  assert_int_equal(convert(m.b.data, m.b.len, &t, &info), 0);
  assert_int_equal(t->nsteps, 0);
  assert_int_equal(info.steps_marked, 0);
  char line[600];
  assert_int_equal(tbe_trace_steps_apply(t, "x", NULL, line, sizeof line), 0);
  assert_string_equal(line, "--steps nvtx:x: no NVTX range or user annotation has that name; the "
                            "trace has no NVTX ranges or user annotations; the run has no steps");
  tbe_trace_free(t);
  tbe__buf_deinit(&m.b);
}

/* The marked steps in the run: the XSpace carries them (step markers) and
 * they come back on import; so does CUPTI's overhead, as overhead (the
 * profiler's cost), not as the program's CPU ops. */
static void test_marked_steps_in_run(void **state) {
  (void)state;
  img m;
  step_image(&m);
  char *dir = tu_mkdtemp();
  char *spools = tu_join(dir, ".tbexport-spool-9");
  assert_int_equal(mkdir(spools, 0700), 0);
  char *sp = tu_join(spools, "321.spool");
  assert_int_equal(tu_write_file(sp, m.b.data, m.b.len), 0);
  tbe_export_options eo;
  tbe_export_options_init(&eo);
  eo.logdir = dir;
  eo.run = "steps";
  eo.host = "node";
  tbe_session_options s;
  tbe_session_options_init(&s);
  s.spool_dir = spools;
  s.export_options = &eo;
  tbe_profiler_result r;
  assert_int_equal(session_run(&s, &r, NULL, NULL), 0);
  assert_int_equal(r.steps, 3);
  char *x = tu_join(dir, "plugins/profile/steps/node.xplane.pb");
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  assert_int_equal(tbe_import_file(t, x, NULL, NULL), 0);
  assert_int_equal(t->nsteps, 3);
  for (size_t i = 0; i < 3; i++) assert_int_equal(t->steps[i].num, (int64_t)i + 1);
  assert_int_equal(t->steps[2].end_ns - t->steps[2].start_ns, 300);
  size_t over = 0, ops = 0;
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_event *e = &t->events[i];
    over += e->kind == TBE_EV_OVERHEAD;
    ops += e->kind == TBE_EV_CPU_OP;
    if (e->kind == TBE_EV_OVERHEAD) {
      assert_string_equal(tbe_trace_str(t, e->name), "Activity buffer request");
      assert_int_equal(e->dur_ns, 50);
      assert_int_equal(t->tracks[e->track].type, TBE_TRACK_THREAD);
      assert_int_equal(t->tracks[e->track].tid, 322); /* on its thread */
    }
  }
  assert_int_equal(over, 1);
  assert_int_equal(ops, 0);
  assert_int_equal(t->overhead_ns, 50); /* the run's count comes back too */
  tbe_trace_free(t);
  free(x);
  free(sp);
  free(spools);
  tu_rmrf(dir);
  free(dir);
  tbe__buf_deinit(&m.b);
}

static void test_not_a_spool(void **state) {
  (void)state;
  tbe_trace *t;
  const char *junk = "this is not a spool file at all, really not";
  assert_int_equal(convert((const uint8_t *)junk, strlen(junk), &t, NULL), TBE_EFORMAT);
  tbe_trace_free(t);
  img m;
  build(&m, 1);
  uint32_t bom = 0x04030201u; /* other byte order */
  memcpy(m.b.data + 12, &bom, 4);
  assert_int_equal(convert(m.b.data, m.b.len, &t, NULL), TBE_ECORRUPT);
  tbe_trace_free(t);
  tbe__buf_deinit(&m.b);
  /* A header cut short: an empty capture that ended early. */
  build(&m, 1);
  tbe__convert_info info;
  assert_int_equal(convert(m.b.data, 12, &t, &info), 0);
  assert_true(t->ended_early);
  assert_int_equal(t->nevents, 0);
  tbe_trace_free(t);
  tbe__buf_deinit(&m.b);
}

/* String ids are keys (spool_int.h): out of order, redefined (the last
 * definition counts, wherever it was stored), 2^26 and above, 2^32 - 1;
 * 0 and an id never defined name "". */
static void test_string_ids(void **state) {
  (void)state;
  img m;
  img_start(&m);
  tbe__buf p;
  tbe__buf_init(&p, &al);
  static const struct {
    uint32_t id;
    const char *s;
  } defs[] = {{1, "a0"},
              {1, "a"},
              {3, "c"},
              {2, "b"},
              {3, "c2"},
              {0, "zero"},
              {1u << 26, "big0"},
              {1u << 26, "big"},
              {4, "d"},
              {(1u << 26) + 1, "bigger"},
              {UINT32_MAX, "max"},
              {6, "f"},
              {5, "e"},
              {6, "f2"}};
  for (size_t i = 0; i < sizeof defs / sizeof *defs; i++)
    tbe__spool_str(&p, defs[i].id, defs[i].s, strlen(defs[i].s));
  frame(&m, &p);
  static const struct {
    uint32_t id;
    const char *name;
  } want[] = {{1, "a"},
              {2, "b"},
              {3, "c2"},
              {4, "d"},
              {5, "e"},
              {6, "f2"},
              {1u << 26, "big"},
              {(1u << 26) + 1, "bigger"},
              {UINT32_MAX, "max"},
              {0, ""},
              {7, ""},
              {1u << 27, ""}};
  size_t nw = sizeof want / sizeof *want;
  for (size_t i = 0; i < nw; i++)
    kern(&p, (uint32_t)i + 1, want[i].id, T0 + 100 * (int64_t)(i + 1),
         T0 + 100 * (int64_t)(i + 1) + 50);
  frame(&m, &p);
  tbe__buf_deinit(&p);
  tbe_trace *t;
  tbe__convert_info info;
  assert_int_equal(convert(m.b.data, m.b.len, &t, &info), 0);
  assert_int_equal(kernels(t), nw);
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_event *e = &t->events[i];
    assert_int_equal(e->kind, TBE_EV_KERNEL);
    assert_string_equal(tbe_trace_str(t, e->name), want[e->correlation - 1].name);
  }
  tbe_trace_free(t);
  tbe__buf_deinit(&m.b);
}

/* Device ids beyond the GPU ordinals (int32) are never narrowed into
 * another GPU: the kernel, the device record, the allocation and the PM
 * samples naming one are left out, counted and said in one warning. */
static void test_device_beyond_ordinals(void **state) {
  (void)state;
  img m;
  img_start(&m);
  tbe__buf p;
  tbe__buf_init(&p, &al);
  tbe__spool_str(&p, 1, "k", 1);
  tbe__sp_device d;
  memset(&d, 0, sizeof d);
  d.id = 0x80000000u;
  tbe__spool_item(&p, TBE__SP_DEVICE, &d, sizeof d);
  kern(&p, 1, 1, T0 + 100, T0 + 200); /* device 0 */
  tbe__sp_kernel k;
  memset(&k, 0, sizeof k);
  k.start = T0 + 300, k.end = T0 + 400, k.corr = 2, k.stream = 7, k.name = 1;
  k.device = UINT32_MAX; /* -1 once narrowed: no such GPU */
  tbe__spool_item(&p, TBE__SP_KERNEL, &k, sizeof k);
  k.device = 0x80000000u, k.corr = 3; /* INT32_MIN once narrowed */
  tbe__spool_item(&p, TBE__SP_KERNEL, &k, sizeof k);
  tbe__sp_memory mem;
  memset(&mem, 0, sizeof mem);
  mem.ts = T0 + 150, mem.bytes = 64, mem.op = 1, mem.device = UINT32_MAX;
  tbe__spool_item(&p, TBE__SP_MEMORY, &mem, sizeof mem);
  frame(&m, &p);
  tbe__buf_deinit(&p);
  tbe_trace *t;
  tbe__convert_info info;
  assert_int_equal(convert(m.b.data, m.b.len, &t, &info), 0);
  assert_int_equal(kernels(t), 1);
  assert_int_equal(info.bad_devices, 4);
  for (size_t i = 0; i < t->ndevices; i++) assert_true(t->devices[i].id >= 0);
  for (size_t i = 0; i < t->ntracks; i++) assert_true(t->tracks[i].device >= -1);
  int said = 0;
  for (size_t i = 0; i < t->nwarnings; i++)
    said += strstr(tbe_trace_str(t, t->warnings[i]), "4 records named a device id beyond") != NULL;
  assert_int_equal(said, 1);
  tbe_trace_free(t);
  tbe__buf_deinit(&m.b);
}

/* A metric id's last definition names it, for the kernel figures and for
 * the duration a replayed kernel is placed with alike. */
static void test_metric_redefined(void **state) {
  (void)state;
  img m;
  tbe__buf p;
  img_begin(&m, &p);
  tbe__spool_str(&p, 6, "duration_ns", 11);
  tbe__spool_str(&p, 7, "sm_pct", 6);
  tbe__sp_metric_def d1 = {1, 6, 0, TBE__MU_COUNT}, d1b = {1, 7, 0, TBE__MU_PCT},
                     d2 = {2, 6, 0, TBE__MU_COUNT};
  tbe__spool_item(&p, TBE__SP_METRIC_DEF, &d1, sizeof d1);
  tbe__spool_item(&p, TBE__SP_METRIC_DEF, &d1b, sizeof d1b);
  tbe__spool_item(&p, TBE__SP_METRIC_DEF, &d2, sizeof d2);
  uint8_t body[sizeof(tbe__sp_kernel_metrics) + 2 * 16];
  tbe__sp_kernel_metrics h = {1, 0, 1, 2};
  memcpy(body, &h, sizeof h);
  uint32_t ids[2] = {1, 2}, zero = 0;
  double v[2] = {500.0, 600.0};
  for (int j = 0; j < 2; j++) {
    memcpy(body + sizeof h + 16 * j, &ids[j], 4);
    memcpy(body + sizeof h + 16 * j + 4, &zero, 4);
    memcpy(body + sizeof h + 16 * j + 8, &v[j], 8);
  }
  tbe__spool_item(&p, TBE__SP_KERNEL_METRICS, body, sizeof body);
  tbe__sp_replayed r = {1, 0, T0 + 100, T0 + 2000};
  tbe__spool_item(&p, TBE__SP_REPLAYED, &r, sizeof r);
  kern(&p, 1, 1, 0, 0); /* kernel "k", replayed: no times */
  img_end(&m, &p, T0 + 5000);
  tbe_trace *t;
  tbe__convert_info info;
  assert_int_equal(convert(m.b.data, m.b.len, &t, &info), 0);
  assert_int_equal(kernels(t), 1);
  assert_int_equal(t->events[0].dur_ns, 600);
  assert_int_equal(t->events[0].start_ns, T0 + 2000 - 600);
  assert_int_equal(t->nkernel_metrics, 1);
  double x;
  assert_int_equal(tbe_kernel_metrics_get(t, &t->kernel_metrics[0], "sm_pct", &x), 0);
  assert_true(x == 500.0);
  assert_int_equal(tbe_kernel_metrics_get(t, &t->kernel_metrics[0], "duration_ns", &x), 0);
  assert_true(x == 600.0);
  tbe_trace_free(t);
  tbe__buf_deinit(&m.b);
}

static void test_items_out_of_bounds(void **state) {
  (void)state;
  /* A frame whose item claims more bytes than the frame holds, with a
   * valid checksum: rejected as a whole, nothing from it is used. */
  img m;
  img_start(&m);
  tbe__buf p;
  tbe__buf_init(&p, &al);
  tbe__spool_str(&p, 1, "k", 1);
  kern(&p, 1, 1, T0 + 1, T0 + 2);
  frame(&m, &p);
  size_t good = m.b.len;
  uint8_t bad[12] = {TBE__SP_KERNEL, 0, 200, 0, 1, 2, 3, 4, 5, 6, 7, 8};
  tbe__buf_append(&p, bad, sizeof bad);
  frame(&m, &p);
  /* Unknown item types and string ids out of range are skipped. */
  tbe_trace *t;
  tbe__convert_info info;
  assert_int_equal(convert(m.b.data, m.b.len, &t, &info), 0);
  assert_int_equal(kernels(t), 1);
  assert_int_equal(info.tail_offset, good);
  assert_string_equal(info.tail_why, "item past frame end");
  tbe_trace_free(t);
  tbe__buf_deinit(&m.b);
  img_start(&m);
  tbe__spool_item(&p, 999, "xyz", 3);
  tbe__spool_str(&p, 5000000, "big id", 6);
  kern(&p, 1, 77, T0 + 1, T0 + 2); /* undefined string id: empty name */
  frame(&m, &p);
  assert_int_equal(convert(m.b.data, m.b.len, &t, &info), 0);
  assert_int_equal(kernels(t), 1);
  assert_string_equal(tbe_trace_str(t, t->events[0].name), "");
  tbe_trace_free(t);
  tbe__buf_deinit(&p);
  tbe__buf_deinit(&m.b);
}

static void test_write_frame_to_file(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  char *path = tu_join(dir, "w.spool");
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
  assert_true(fd >= 0);
  uint8_t head[TBE__SPOOL_HEADER];
  tbe__spool_header(head, T0);
  assert_int_equal(write(fd, head, sizeof head), (ssize_t)sizeof head);
  tbe__buf p;
  tbe__buf_init(&p, &al);
  tbe__spool_str(&p, 1, "k", 1);
  for (int i = 0; i < 1000; i++) kern(&p, (uint32_t)i + 1, 1, T0 + i * 10 + 1, T0 + i * 10 + 5);
  assert_int_equal(tbe__spool_write_frame(fd, p.data, p.len), 0);
  tbe__buf_clear(&p);
  tbe__sp_end e = {T0 + 100000};
  tbe__spool_item(&p, TBE__SP_END, &e, sizeof e);
  assert_int_equal(tbe__spool_write_frame(fd, p.data, p.len), 0);
  close(fd);
  tbe__buf_deinit(&p);
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  assert_int_equal(tbe__spool_file_to_trace(path, NULL, t, NULL), 0);
  assert_int_equal(kernels(t), 1000);
  assert_false(t->ended_early);
  tbe_trace_free(t);
  tu_rmrf(dir);
  free(dir);
  free(path);
}

static int exists(const char *dir, const char *rel) {
  char *p = tu_join(dir, rel);
  int r = access(p, F_OK) == 0;
  free(p);
  return r;
}

/* How many times NEEDLE occurs in the gzip file DIR/REL. */
static int count_in_gz(const char *dir, const char *rel, const char *needle) {
  char *p = tu_join(dir, rel);
  gzFile g = gzopen(p, "rb");
  free(p);
  assert_non_null(g);
  size_t cap = 1 << 16, n = 0;
  char *s = malloc(cap);
  int got;
  while ((got = gzread(g, s + n, (unsigned)(cap - n - 1))) > 0) {
    n += (size_t)got;
    if (cap - n < 4096) s = realloc(s, cap *= 2);
  }
  gzclose(g);
  s[n] = 0;
  int c = 0;
  for (const char *q = s; (q = strstr(q, needle)) != NULL; q++) c++;
  free(s);
  return c;
}

/* How many of the XSpace file DIR/REL's warnings contain NEEDLE. */
static int xspace_warnings_with(const char *dir, const char *rel, const char *needle) {
  char *p = tu_join(dir, rel);
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  assert_int_equal(tbe_import_file(t, p, NULL, NULL), 0);
  free(p);
  int c = 0;
  for (size_t i = 0; i < t->nwarnings; i++) c += strstr(tbe_trace_str(t, t->warnings[i]), needle) != NULL;
  tbe_trace_free(t);
  return c;
}

/* A session folder DIR/<name> holding 321.spool (the whole image of
 * build()) and 654.spool (the same with pid 654, so that its first frame
 * fails its checksum, cut EXTRA bytes into the last frame), with export
 * options for host "node" and a session over the folder. */
typedef struct two_procs {
  char *dir, *spools, *p1, *p2;
  img m;
  tbe_export_options eo;
  tbe_session_options s;
} two_procs;

static void two_setup(two_procs *w, const char *name, size_t extra) {
  w->dir = tu_mkdtemp();
  w->spools = tu_join(w->dir, name);
  assert_int_equal(mkdir(w->spools, 0700), 0);
  build(&w->m, 1);
  w->p1 = tu_join(w->spools, "321.spool");
  assert_int_equal(tu_write_file(w->p1, w->m.b.data, w->m.b.len), 0);
  uint32_t pid = 654;
  memcpy(w->m.b.data + TBE__SPOOL_HEADER + 8 + 4 + offsetof(tbe__sp_info, pid), &pid, 4);
  w->p2 = tu_join(w->spools, "654.spool");
  assert_int_equal(tu_write_file(w->p2, w->m.b.data, w->m.last_frame + extra), 0);
  tbe_export_options_init(&w->eo);
  w->eo.logdir = w->dir;
  w->eo.host = "node";
  tbe_session_options_init(&w->s);
  w->s.spool_dir = w->spools;
  w->s.export_options = &w->eo;
}

static void two_free(two_procs *w) {
  tbe__buf_deinit(&w->m.b);
  tu_rmrf(w->dir);
  free(w->dir);
  free(w->spools);
  free(w->p1);
  free(w->p2);
}

static void test_session_two_processes(void **state) {
  (void)state;
  /* Two processes' spools (one cut short) become one run, one host each. */
  two_procs w;
  two_setup(&w, ".tbexport-spool-1", 5);
  const char *dir = w.dir;
  w.eo.run = "r";
  tbe_session_result cost;
  tbe_profiler_result r;
  size_t np = 0;
  assert_int_equal(session_run(&w.s, &r, &np, &cost), 0);
  assert_int_equal(np, 2);
  /* the collector's cost: from the one stats item that survived */
  assert_int_equal(cost.collector_cpu_ns, 1234567);
  assert_int_equal(cost.buffer_bytes, 8u << 20);
  assert_int_equal(cost.spool_bytes, w.m.b.len + w.m.last_frame + 5);
  assert_int_equal(r.kernels, 7);
  assert_int_equal(r.dropped_records, 3);
  assert_true(exists(dir, "plugins/profile/r/node_pid321.xplane.pb"));
  assert_true(exists(dir, "plugins/profile/r/node_pid321.trace.json.gz"));
  /* no info frame survived: the pid comes from the file name */
  assert_true(exists(dir, "plugins/profile/r/node_pid654.xplane.pb"));
  assert_false(exists(dir, ".tbexport-spool-1")); /* converted spools are removed */
  /* Each status is said once per output, in its most detailed words: the
   * cut spool's "ended early" (with the byte offset of the cut), the other
   * spool's dropped records (with where they were lost). */
  assert_int_equal(xspace_warnings_with(dir, "plugins/profile/r/node_pid654.xplane.pb", "ended early"), 1);
  assert_int_equal(xspace_warnings_with(dir, "plugins/profile/r/node_pid654.xplane.pb", "bytes at offset"), 1);
  assert_int_equal(xspace_warnings_with(dir, "plugins/profile/r/node_pid321.xplane.pb", "ended early"), 0);
  assert_int_equal(xspace_warnings_with(dir, "plugins/profile/r/node_pid321.xplane.pb", "were dropped"), 1);
  assert_int_equal(count_in_gz(dir, "plugins/profile/r/node_pid654.trace.json.gz", "ended early"), 1);
  assert_int_equal(count_in_gz(dir, "plugins/profile/r/node_pid321.trace.json.gz", "were dropped"), 1);
  two_free(&w);
}

static void test_session_spool_in_use(void **state) {
  (void)state;
  /* A spool still locked by its (living) writer is left alone and kept;
   * the others convert. */
  two_procs w;
  two_setup(&w, ".tbexport-spool-4", 0);
  const char *dir = w.dir;
  w.eo.run = "live";
  int held = open(w.p2, O_WRONLY | O_APPEND);
  assert_true(held >= 0);
  assert_int_equal(flock(held, LOCK_EX | LOCK_NB), 0); /* as collector.c does */
  tbe_profiler_result r;
  size_t np = 0;
  assert_int_equal(session_run(&w.s, &r, &np, NULL), 0);
  assert_int_equal(r.kernels, 7); /* 321's */
  assert_true(exists(dir, "plugins/profile/live/node_pid321.xplane.pb"));
  assert_false(exists(dir, "plugins/profile/live/node_pid654.xplane.pb"));
  assert_true(exists(dir, ".tbexport-spool-4/654.spool"));
  assert_false(exists(dir, ".tbexport-spool-4/321.spool"));
  close(held);
  two_free(&w);
}

static void test_session_note_only(void **state) {
  (void)state;
  /* The injected library could not collect and left a note: the run says
   * why instead of "the program never initialized CUDA". */
  char *dir = tu_mkdtemp();
  char *spools = tu_join(dir, ".tbexport-spool-3");
  assert_int_equal(mkdir(spools, 0700), 0);
  char *note = tu_join(spools, "77.note");
  const char *why = "libcupti.so.13: cannot open shared object file\n";
  assert_int_equal(tu_write_file(note, why, strlen(why)), 0);
  tbe_export_options eo;
  tbe_export_options_init(&eo);
  eo.logdir = dir;
  eo.run = "n";
  eo.host = "node";
  tbe_session_options s;
  tbe_session_options_init(&s);
  s.spool_dir = spools;
  s.export_options = &eo;
  s.program_pid = 77;
  s.start_ns = T0;
  s.stop_ns = T0 + 1000;
  size_t np = 1;
  assert_int_equal(session_run(&s, NULL, &np, NULL), 0);
  assert_int_equal(np, 0);
  assert_int_equal(xspace_warnings_with(dir, "plugins/profile/n/node.xplane.pb",
                                        "the collector could not start (pid 77: libcupti.so.13: "
                                        "cannot open shared object file)"),
                   1);
  assert_int_equal(xspace_warnings_with(dir, "plugins/profile/n/node.xplane.pb", "never initialized"), 0);
  assert_false(exists(dir, ".tbexport-spool-3")); /* the note and the folder are gone */
  tu_rmrf(dir);
  free(dir);
  free(spools);
  free(note);
}

static void test_session_bad_spool_default_run(void **state) {
  (void)state;
  /* A junk spool beside two good ones: both good ones convert (the error is
   * still returned), the junk one is kept; without a run name all land in
   * one run. */
  two_procs w;
  two_setup(&w, ".tbexport-spool-2", 0);
  const char *dir = w.dir;
  char *junk = tu_join(w.spools, "100.spool");
  assert_int_equal(tu_write_file(junk, "TBESPL01 but nothing else of a spool, really", 44), 0);
  tbe_profiler_result r;
  size_t np = 0;
  assert_int_not_equal(session_run(&w.s, &r, &np, NULL), 0);
  assert_int_equal(np, 3);
  assert_int_equal(r.kernels, 7);
  char *prof = tu_join(dir, "plugins/profile");
  DIR *d = opendir(prof);
  assert_non_null(d);
  int runs = 0;
  char run[256] = "";
  struct dirent *e;
  while ((e = readdir(d)))
    if (e->d_name[0] != '.') {
      runs++;
      snprintf(run, sizeof run, "%s", e->d_name);
    }
  closedir(d);
  assert_int_equal(runs, 1);
  char rel[600];
  snprintf(rel, sizeof rel, "plugins/profile/%s/node_pid321.xplane.pb", run);
  assert_true(exists(dir, rel));
  snprintf(rel, sizeof rel, "plugins/profile/%s/node_pid654.xplane.pb", run);
  assert_true(exists(dir, rel));
  assert_true(exists(dir, ".tbexport-spool-2/100.spool")); /* kept */
  assert_false(exists(dir, ".tbexport-spool-2/321.spool"));

  /* One spool given twice as a file (the same pid twice): distinct hosts. */
  assert_int_equal(tu_write_file(w.p2, w.m.b.data, w.m.last_frame), 0);
  const char *files[] = {w.p2, w.p2};
  tbe_session_options_init(&w.s);
  w.s.files = files;
  w.s.nfiles = 2;
  w.s.export_options = &w.eo;
  w.s.keep = 1;
  w.eo.run = "again";
  assert_int_equal(session_run(&w.s, &r, &np, NULL), 0);
  assert_true(exists(dir, "plugins/profile/again/node_pid654.xplane.pb"));
  assert_true(exists(dir, "plugins/profile/again/node_pid654_2.xplane.pb"));
  assert_true(exists(dir, ".tbexport-spool-2/654.spool")); /* kept */
  free(junk);
  free(prof);
  two_free(&w);
}

static void test_session_no_process(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  tbe_export_options eo;
  tbe_export_options_init(&eo);
  eo.logdir = dir;
  eo.run = "empty";
  eo.host = "node";
  tbe_session_options s;
  tbe_session_options_init(&s);
  s.export_options = &eo;
  s.program_pid = 99;
  s.program_cmd = "/bin/true";
  s.start_ns = T0;
  s.stop_ns = T0 + 1000000;
  size_t np = 1;
  assert_int_equal(session_run(&s, NULL, &np, NULL), 0);
  assert_int_equal(np, 0);
  assert_true(exists(dir, "plugins/profile/empty/node.xplane.pb"));
  size_t n;
  char *j = tu_join(dir, "plugins/profile/empty/node.trace.json.gz");
  uint8_t *gz = tu_read_file(j, &n);
  assert_non_null(gz);
  free(gz);
  free(j);
  tu_rmrf(dir);
  free(dir);
}

static void test_options(void **state) {
  (void)state;
  tbe__collect_opts o, d;
  tbe__opts_default(&o);
  o.trace = 0xf;
  o.delay_s = 1.25;
  o.duration_s = 3;
  o.capture = 2;
  o.buffer_mb = 128;
  o.flush_ms = 250;
  o.keep_noisy = 1;
  char buf[256];
  assert_int_equal(tbe__opts_encode(&o, buf, sizeof buf), 0);
  tbe__opts_default(&d);
  assert_int_equal(tbe__opts_decode(buf, &d), 0);
  assert_memory_equal(&o, &d, sizeof o);
  assert_int_equal(tbe__opts_encode(&o, buf, 10), TBE_ETOOBIG);
  assert_int_equal(tbe__opts_decode("trace=x", &d), TBE_EINVAL);
  assert_int_equal(tbe__opts_decode("delay=-1", &d), TBE_EINVAL);
  assert_int_equal(tbe__opts_decode("unknown=5;;noisy=0", &d), 0);
  assert_int_equal(d.keep_noisy, 0);
  int mode;
  const char *name, *dom;
  char rb[32];
  assert_int_equal(tbe_profiler_parse_range("nvtx:step@train", &mode, rb, sizeof rb, &name, &dom),
                   0);
  assert_int_equal(mode, TBE_CAPTURE_NVTX);
  assert_string_equal(name, "step");
  assert_string_equal(dom, "train");
  assert_int_equal(tbe_profiler_parse_range("nvtx:a@b@c", &mode, rb, sizeof rb, &name, &dom), 0);
  assert_string_equal(name, "a@b"); /* the last '@' separates the domain */
  assert_string_equal(dom, "c");
  /* strlen(arg) + 1 bytes suffice; one less is refused */
  assert_int_equal(tbe_profiler_parse_range("nvtx:a@b@c", &mode, rb, 11, &name, &dom), 0);
  assert_int_equal(tbe_profiler_parse_range("nvtx:abc", &mode, rb, 3, &name, &dom), TBE_ETOOBIG);
  assert_int_equal(tbe_profiler_parse_range("cudaProfilerApi", &mode, rb, sizeof rb, &name, &dom),
                   0);
  assert_int_equal(mode, TBE_CAPTURE_PROFILER_API);
  assert_null(name);
  assert_null(dom);
  assert_int_equal(tbe_profiler_parse_range("nvtx:", &mode, rb, sizeof rb, &name, &dom),
                   TBE_EINVAL);
  assert_int_equal(tbe_profiler_parse_range("nvtx:x@", &mode, rb, sizeof rb, &name, &dom),
                   TBE_EINVAL);
  assert_int_equal(tbe_profiler_parse_range("range", &mode, rb, sizeof rb, &name, &dom),
                   TBE_EINVAL);
  double sec;
  assert_int_equal(tbe_profiler_parse_seconds("2", &sec), 0);
  assert_true(sec == 2.0);
  assert_int_equal(tbe_profiler_parse_seconds("250ms", &sec), 0);
  assert_true(sec == 0.25);
  assert_int_equal(tbe_profiler_parse_seconds("1.5s", &sec), 0);
  assert_true(sec == 1.5);
  assert_int_equal(tbe_profiler_parse_seconds("-1", &sec), TBE_EINVAL);
  assert_int_equal(tbe_profiler_parse_seconds("2h", &sec), TBE_EINVAL);
}

int main(void) {
  tbe__allocator_init(&al, NULL);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trip),
      cmocka_unit_test(test_import_table),
      cmocka_unit_test(test_cut_at_every_byte_of_last_frame),
      cmocka_unit_test(test_corrupt_last_frame),
      cmocka_unit_test(test_no_end_marker),
      cmocka_unit_test(test_not_a_spool),
      cmocka_unit_test(test_duration_window),
      cmocka_unit_test(test_capture_range_bounds_everything),
      cmocka_unit_test(test_collection_window_bounds_everything),
      cmocka_unit_test(test_marked_steps),
      cmocka_unit_test(test_marked_steps_in_run),
      cmocka_unit_test(test_items_out_of_bounds),
      cmocka_unit_test(test_string_ids),
      cmocka_unit_test(test_device_beyond_ordinals),
      cmocka_unit_test(test_metric_redefined),
      cmocka_unit_test(test_write_frame_to_file),
      cmocka_unit_test(test_options),
      cmocka_unit_test(test_session_two_processes),
      cmocka_unit_test(test_session_no_process),
      cmocka_unit_test(test_session_bad_spool_default_run),
      cmocka_unit_test(test_session_note_only),
      cmocka_unit_test(test_session_spool_in_use),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
