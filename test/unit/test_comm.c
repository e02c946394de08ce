/* test_comm.c: the collectives of a distributed run as PyTorch's clients
 * read them (src/trace/model/comm.h), and the range profiler's figures on
 * the kernels of the Chrome JSON.
 *
 * What must never happen:
 *   - an NCCL kernel whose launching call is in no nccl:* operator stays
 *     without one (the PyTorch Profiler plugin then shows no Distributed
 *     view), or its call and it name different operators;
 *   - a launch already inside an nccl:* operator (PyTorch's own traces, or
 *     ours read back) gets a second one: every re-import would add one;
 *   - a call that launched other GPU work too (a graph) names an nccl:*
 *     operator for work it did not run;
 *   - a distributed trace without any NCCL kernel says nothing (HTA's
 *     comm/compute overlap is NaN then, its straggler check raises), or a
 *     single-process trace says it;
 *   - a backend is invented for a trace without a rank, or overrides the
 *     source's;
 *   - the outputs read back differ, or a second export differs by a byte
 *     (the wrappers, the note, the backend, the kernels' "range profiler"
 *     arg, the stream rows' names). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tbexport.h"
#include "tbexport/analysis.h"
#include "tbexport/import.h"
#include "testutil.h"
#include "trace/model/comm.h"

#define T0 1790000000000000000LL
#define PID 4242

#define AR "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
#define GEMM "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64"

/* ---- building ---- */

static tbe_trace *new_trace(void) {
  tbe_trace *t = NULL;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  uint32_t d;
  assert_int_equal(tbe_trace_device(t, 0, &d), 0);
  t->devices[d].name = tbe_trace_str_id(t, "NVIDIA H200");
  t->devices[d].sm_count = 132;
  t->devices[d].cc_major = 9;
  return t;
}

static uint32_t thread(tbe_trace *t, int64_t tid) {
  uint32_t k;
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_THREAD, PID, tid, -1, &k), 0);
  return k;
}

static uint32_t stream(tbe_trace *t, int64_t s) {
  uint32_t k;
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_STREAM, PID, s, 0, &k), 0);
  return k;
}

static void add(tbe_trace *t, uint8_t kind, uint32_t track, const char *name, int64_t start,
                int64_t dur, uint64_t corr, uint64_t ext) {
  tbe_event e;
  memset(&e, 0, sizeof e);
  e.kind = kind;
  e.track = track;
  e.name = tbe_trace_str_id(t, name);
  e.start_ns = T0 + start;
  e.dur_ns = dur;
  e.correlation = corr;
  e.external_id = ext;
  tbe_kernel k;
  memset(&k, 0, sizeof k);
  k.grid[0] = 24, k.grid[1] = k.grid[2] = 1;
  k.block[0] = 640, k.block[1] = k.block[2] = 1;
  k.queued_ns = -1;
  k.occupancy_pct = k.blocks_per_sm = k.warps_per_sm = -1;
  assert_int_equal(tbe_trace_add_event(t, &e, kind == TBE_EV_KERNEL ? &k : NULL, NULL, 0, NULL), 0);
}

/* A launch by cudaLaunchKernel on `thr` at `at` (10 us) of `kernel` on
 * stream `s` from `kat` for `kdur`. */
static void launch(tbe_trace *t, uint32_t thr, int64_t at, uint64_t corr, const char *kernel,
                   uint32_t s, int64_t kat, int64_t kdur) {
  add(t, TBE_EV_RUNTIME, thr, "cudaLaunchKernel", at, 10000, corr, 0);
  add(t, TBE_EV_KERNEL, s, kernel, kat, kdur, corr, 0);
}

static void finish(tbe_trace *t) { assert_int_equal(tbe_trace_finish(t), 0); }

/* ---- reading ---- */

static size_t count_named(const tbe_trace *t, const char *name) {
  size_t n = 0;
  for (size_t i = 0; i < t->nevents; i++)
    n += strcmp(tbe_trace_str(t, t->events[i].name), name) == 0;
  return n;
}

/* The index of the k-th event named `name` (in the finished order). */
static uint32_t find(const tbe_trace *t, const char *name, int k) {
  for (size_t i = 0; i < t->nevents; i++)
    if (strcmp(tbe_trace_str(t, t->events[i].name), name) == 0 && k-- == 0) return (uint32_t)i;
  fail_msg("no event %s", name);
  return 0;
}

static int has_warning(const tbe_trace *t, const char *part) {
  for (size_t i = 0; i < t->nwarnings; i++)
    if (strstr(tbe_trace_str(t, t->warnings[i]), part)) return 1;
  return 0;
}

static size_t note_count(const tbe_trace *t) {
  size_t n = 0;
  for (size_t i = 0; i < t->nwarnings; i++)
    n += strstr(tbe_trace_str(t, t->warnings[i]), "no NCCL kernel in this rank's trace") != NULL;
  return n;
}

/* ---- the collective of a kernel name ---- */

static void test_kernel_op(void **state) {
  (void)state;
  static const char *const cases[][2] = {
      /* NCCL 2.19 on */
      {AR, "all_reduce"},
      {"ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "all_gather"},
      {"ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
       "reduce_scatter"},
      {"ncclDevKernel_Reduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "reduce"},
      {"ncclDevKernel_Broadcast_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "broadcast"},
      {"ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", "send_recv"},
      {"ncclDevKernel_Generic_1(ncclDevKernelArgsStorage<4096ul>)", "generic"},
      /* 2.7 to 2.18 */
      {"ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
       "all_reduce"},
      {"ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)",
       "send_recv"},
      {"void ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclWorkElem)", "all_gather"},
      /* before */
      {"ncclAllReduceRingLLKernel_sum_f32(CollectiveArgs)", "all_reduce"},
      {"ncclReduceScatterRingLLKernel_sum_f32", "reduce_scatter"},
      {"ncclBroadcastRingLLKernel_copy_i8", "broadcast"},
      {"ncclReduceRingLLKernel_sum_f32", "reduce"},
      {"ncclAllToAllKernel", "all_to_all"},
      /* a word of no collective, and none */
      {"ncclDevKernel_MyNewThing_x", "my_new_thing"},
      {"ncclDevKernel_(x)", "kernel"},
  };
  char op[64];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    size_t n = tbe__nccl_kernel_op(cases[i][0], op, sizeof op);
    if (n == 0 || strcmp(op, cases[i][1]) != 0)
      fail_msg("%s: got '%s', want '%s'", cases[i][0], n ? op : "(none)", cases[i][1]);
    assert_int_equal(n, strlen(cases[i][1]));
  }
  static const char *const none[] = {GEMM, "at::native::ncclFoo", "NCCLKernel", "", "ncc"};
  for (size_t i = 0; i < sizeof none / sizeof none[0]; i++)
    assert_int_equal(tbe__nccl_kernel_op(none[i], op, sizeof op), 0);
  /* a word too long is cut, never written past the buffer */
  char small[16];
  memset(small, 'z', sizeof small);
  size_t n = tbe__nccl_kernel_op("ncclDevKernel_Abcdefghijklmnopqrstuvwxyz", small, sizeof small);
  assert_true(n > 0 && n < sizeof small);
  assert_int_equal(small[n], 0);
}

/* ---- the wrappers ---- */

/* A bare launch: the operator around it, its id on the call and the
 * kernel, and on nothing else; before the call in the order. */
static void test_bare_launch(void **state) {
  (void)state;
  tbe_trace *t = new_trace();
  uint32_t main = thread(t, PID), s7 = stream(t, 7), s23 = stream(t, 23);
  launch(t, main, 1000, 5, GEMM, s7, 30000, 2000000);
  launch(t, main, 20000, 6, AR, s23, 2100000, 5000000);
  size_t n0 = t->nevents;
  finish(t);
  assert_int_equal(t->nevents, n0 + 1);
  uint32_t op = find(t, "nccl:all_reduce", 0);
  const tbe_event *o = &t->events[op];
  assert_int_equal(o->kind, TBE_EV_USER_ANNOTATION);
  assert_int_equal(o->track, main);
  assert_int_equal(o->start_ns, T0 + 20000);
  assert_int_equal(o->dur_ns, 10000);
  assert_true(o->external_id != 0);
  uint32_t call = find(t, "cudaLaunchKernel", 1), kern = find(t, AR, 0);
  assert_true(op < call); /* an operator before a call of its span */
  assert_int_equal(t->events[call].external_id, o->external_id);
  assert_int_equal(t->events[kern].external_id, o->external_id);
  assert_int_equal(t->events[kern].link, call); /* the links made again */
  assert_int_equal(t->events[call].link, kern);
  assert_int_equal(t->events[find(t, GEMM, 0)].external_id, 0);
  assert_int_equal(t->events[find(t, "cudaLaunchKernel", 0)].external_id, 0);
  /* finishing again (after a change) adds nothing */
  add(t, TBE_EV_RUNTIME, main, "cudaDeviceSynchronize", 9000000, 1000, 0, 0);
  finish(t);
  assert_int_equal(count_named(t, "nccl:all_reduce"), 1);
  tbe_trace_free(t);
}

/* Inside c10d's operator (emit_nvtx): the nccl:* operator nests in it,
 * and the call and kernel name it, not c10d's. */
static void test_inside_c10d(void **state) {
  (void)state;
  tbe_trace *t = new_trace();
  uint32_t main = thread(t, PID), s23 = stream(t, 23);
  add(t, TBE_EV_CPU_OP, main, "c10d::allreduce_", 500, 50000, 0, 0);
  launch(t, main, 20000, 6,
         "ncclKernel_ReduceScatter_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", s23,
         2100000, 5000000);
  finish(t);
  uint32_t c10d = find(t, "c10d::allreduce_", 0), op = find(t, "nccl:reduce_scatter", 0);
  uint32_t call = find(t, "cudaLaunchKernel", 0);
  assert_true(c10d < op && op < call);
  assert_true(t->events[c10d].external_id != 0);
  assert_true(t->events[op].external_id != t->events[c10d].external_id);
  assert_int_equal(t->events[call].external_id, t->events[op].external_id);
  assert_int_equal(t->events[t->events[call].link].external_id, t->events[op].external_id);
  tbe_trace_free(t);
}

/* PyTorch's own: the launch inside nccl:all_reduce (a cpu_op, a
 * record_function annotation, an asynchronous one), or its kernel naming
 * one on another thread: nothing added, nothing renamed. */
static void test_already_named(void **state) {
  (void)state;
  for (int how = 0; how < 4; how++) {
    tbe_trace *t = new_trace();
    uint32_t main = thread(t, PID), other = thread(t, PID + 1), s23 = stream(t, 23);
    if (how != 2) {
      add(t, how ? TBE_EV_USER_ANNOTATION : TBE_EV_CPU_OP, main, "nccl:all_reduce", 500, 50000, 0,
          0);
      /* 3: an asynchronous range (a record that ends with its work) */
      if (how == 3) t->events[t->nevents - 1].flags |= TBE_EVF_ASYNC;
      add(t, TBE_EV_CPU_OP, main, "record_param_comms", 600, 40000, 0, 0);
      launch(t, main, 20000, 6, AR, s23, 2100000, 5000000);
    } else {
      add(t, TBE_EV_CPU_OP, other, "nccl:all_reduce", 500, 50000, 0, 77);
      add(t, TBE_EV_RUNTIME, main, "cudaLaunchKernel", 20000, 10000, 6, 77);
      add(t, TBE_EV_KERNEL, s23, AR, 2100000, 5000000, 6, 77);
    }
    size_t n0 = t->nevents;
    finish(t);
    assert_int_equal(t->nevents, n0);
    assert_int_equal(count_named(t, "nccl:all_reduce"), 1);
    uint64_t ext = t->events[find(t, AR, 0)].external_id;
    if (how == 2)
      assert_int_equal(ext, 77);
    else
      assert_int_equal(ext, t->events[find(t, "record_param_comms", 0)].external_id);
    tbe_trace_free(t);
  }
}

/* A graph launch that ran an NCCL kernel and a GEMM: left alone; two
 * launches of one collective each get their own operator. */
static void test_mixed_and_many(void **state) {
  (void)state;
  tbe_trace *t = new_trace();
  uint32_t main = thread(t, PID), s7 = stream(t, 7), s23 = stream(t, 23);
  add(t, TBE_EV_RUNTIME, main, "cudaGraphLaunch", 1000, 10000, 9, 0);
  add(t, TBE_EV_KERNEL, s23, AR, 100000, 1000000, 9, 0);
  add(t, TBE_EV_KERNEL, s7, GEMM, 100000, 1000000, 9, 0);
  launch(t, main, 3000000, 10, AR, s23, 3100000, 1000000);
  launch(t, main, 5000000, 11, AR, s23, 5100000, 1000000);
  finish(t);
  assert_int_equal(count_named(t, "nccl:all_reduce"), 2);
  assert_int_equal(t->events[find(t, "cudaGraphLaunch", 0)].external_id, 0);
  uint64_t a = t->events[find(t, "nccl:all_reduce", 0)].external_id;
  uint64_t b = t->events[find(t, "nccl:all_reduce", 1)].external_id;
  assert_true(a && b && a != b);
  assert_int_equal(t->events[find(t, AR, 1)].external_id, a);
  assert_int_equal(t->events[find(t, AR, 2)].external_id, b);
  tbe_trace_free(t);
}

/* An operator and a call of one span: the operator first, whichever came
 * first. */
static void test_order_of_equal_spans(void **state) {
  (void)state;
  tbe_trace *t = new_trace();
  uint32_t main = thread(t, PID);
  add(t, TBE_EV_RUNTIME, main, "cudaMemcpyAsync", 1000, 500, 3, 0);
  add(t, TBE_EV_CPU_OP, main, "aten::copy_", 1000, 500, 0, 0);
  finish(t);
  assert_true(find(t, "aten::copy_", 0) < find(t, "cudaMemcpyAsync", 0));
  assert_int_equal(t->events[find(t, "cudaMemcpyAsync", 0)].external_id,
                   t->events[find(t, "aten::copy_", 0)].external_id);
  tbe_trace_free(t);
}

/* ---- backend and note ---- */

static tbe_trace *ranked(int32_t rank, int32_t world, int nccl, const char *op) {
  tbe_trace *t = new_trace();
  uint32_t main = thread(t, PID), s7 = stream(t, 7), s23 = stream(t, 23);
  t->rank = rank;
  t->world_size = world;
  launch(t, main, 1000, 5, GEMM, s7, 30000, 2000000);
  if (nccl) launch(t, main, 20000, 6, AR, s23, 2100000, 5000000);
  if (op) add(t, TBE_EV_CPU_OP, main, op, 40000, 30000, 0, 0);
  finish(t);
  return t;
}

static void test_backend_and_note(void **state) {
  (void)state;
  tbe_trace *t = ranked(0, 2, 1, NULL);
  assert_string_equal(tbe_trace_str(t, t->dist_backend), "nccl");
  assert_int_equal(note_count(t), 0);
  tbe_trace_free(t);

  t = ranked(1, 2, 0, NULL);
  assert_int_equal(t->dist_backend, 0); /* nothing tells */
  assert_int_equal(t->nwarnings, 1);
  assert_string_equal(
      tbe_trace_str(t, t->warnings[0]),
      "no NCCL kernel in this rank's trace (one of 2 ranks): its communication is on "
      "the CPU (gloo) or absent, so there is no GPU communication to analyse");
  tbe_trace_free(t);

  t = ranked(0, 2, 0, "gloo:all_reduce"); /* PyTorch's record of a gloo collective */
  assert_string_equal(tbe_trace_str(t, t->dist_backend), "gloo");
  assert_true(has_warning(t, "on the CPU (gloo) or absent"));
  tbe_trace_free(t);

  t = ranked(3, 0, 0, NULL); /* a rank of an unknown world */
  assert_true(has_warning(t, "(one of several ranks)"));
  tbe_trace_free(t);

  t = ranked(0, 1, 0, NULL); /* one rank: nothing to communicate */
  assert_int_equal(t->nwarnings, 0);
  tbe_trace_free(t);
  t = ranked(0, 0, 0, NULL); /* rank 0 of an unknown world: may be alone */
  assert_int_equal(t->nwarnings, 0);
  tbe_trace_free(t);

  t = ranked(-1, 0, 1, NULL); /* no rank: no backend, but the operator */
  assert_int_equal(t->dist_backend, 0);
  assert_int_equal(count_named(t, "nccl:all_reduce"), 1);
  tbe_trace_free(t);

  /* the source's backend stays; nccl without a kernel says so */
  t = new_trace();
  t->rank = 1;
  t->world_size = 4;
  t->dist_backend = tbe_trace_str_id(t, "nccl");
  launch(t, thread(t, PID), 1000, 5, GEMM, stream(t, 7), 30000, 2000000);
  finish(t);
  assert_string_equal(tbe_trace_str(t, t->dist_backend), "nccl");
  assert_true(
      has_warning(t, "(one of 4 ranks, backend nccl): no communication in the profiled window"));
  tbe_trace_free(t);
  t = new_trace();
  t->rank = 0;
  t->world_size = 2;
  t->dist_backend = tbe_trace_str_id(t, "mpi");
  launch(t, thread(t, PID), 1000, 6, AR, stream(t, 23), 30000, 2000000);
  finish(t);
  assert_string_equal(tbe_trace_str(t, t->dist_backend), "mpi");
  assert_int_equal(t->nwarnings, 0);
  tbe_trace_free(t);
}

/* ---- outputs ---- */

static char *summary_json(tbe_trace *t) {
  tbe_analysis *an = NULL;
  assert_int_equal(tbe_analysis_create(&an, t, NULL), 0);
  tbe_report_options o;
  tbe_report_options_init(&o);
  o.format = TBE_REPORT_JSON;
  o.top = 0;
  char *s = NULL;
  assert_int_equal(tbe_report_summary(an, &o, &s, NULL), 0);
  tbe_analysis_free(an);
  return s;
}

static tbe_trace *import(const char *path) {
  tbe_trace *t = NULL;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  tbe_import_error err;
  memset(&err, 0, sizeof err);
  int rc = tbe_import_file(t, path, NULL, &err);
  if (rc) print_message("import of %s: %s\n", path, err.message);
  assert_int_equal(rc, 0);
  return t;
}

static int same_file(const char *a, const char *b) {
  size_t na = 0, nb = 0;
  uint8_t *x = tu_read_file(a, &na), *y = tu_read_file(b, &nb);
  int same = x && y && na == nb && memcmp(x, y, na) == 0;
  free(x);
  free(y);
  return same;
}

/* Rank 0 of 2: c10d's operator around an NCCL launch, a GEMM the range
 * profiler measured, a step. */
static tbe_trace *distributed_trace(int with_note) {
  tbe_trace *t = new_trace();
  uint32_t main = thread(t, PID), s7 = stream(t, 7);
  t->rank = with_note ? 1 : 0;
  t->world_size = 2;
  add(t, TBE_EV_USER_ANNOTATION, main, "ProfilerStep#1", 0, 9000000, 0, 0);
  launch(t, main, 1000, 5, GEMM, s7, 30000, 2000000);
  if (!with_note) {
    add(t, TBE_EV_CPU_OP, main, "c10d::allreduce_", 15000, 20000, 0, 0);
    launch(t, main, 20000, 6, AR, stream(t, 23), 2100000, 5000000);
  }
  tbe_metric_value v[4] = {{tbe_trace_str_id(t, "sm_throughput_pct"), 0, 87.456},
                           {tbe_trace_str_id(t, "tensor_pipe_pct"), 0, 91.0},
                           {tbe_trace_str_id(t, "dram_throughput_pct"), 0, 20.25},
                           {tbe_trace_str_id(t, "my\"odd\"metric"), 0, -0.001}};
  assert_int_equal(tbe_trace_add_kernel_metrics(t, tbe_trace_str_id(t, GEMM), 0, 3, v, 4), 0);
  finish(t);
  return t;
}

static void check_outputs(tbe_trace *t, int with_note) {
  char *dir = tu_mkdtemp();
  char *j1 = tu_join(dir, "a.trace.json"), *j2 = tu_join(dir, "b.trace.json");
  char *x1 = tu_join(dir, "a.xplane.pb"), *x2 = tu_join(dir, "b.xplane.pb");
  assert_int_equal(tbe_export_chrome_json(t, j1, 0, 1), 0);
  assert_int_equal(tbe_export_xplane(t, x1, 1), 0);
  size_t n = 0;
  char *doc = (char *)tu_read_file(j1, &n);
  assert_non_null(doc);
  if (!with_note) {
    /* Kineto's distributedInfo, with the spacing HTA's rank pattern needs */
    assert_non_null(strstr(
        doc, "\"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 0, \"world_size\": 2},"));
    assert_non_null(strstr(doc, "\"cat\":\"user_annotation\",\"name\":\"nccl:all_reduce\""));
  } else {
    assert_non_null(strstr(doc, "\"distributedInfo\": {\"rank\": 1, \"world_size\": 2},"));
    assert_non_null(strstr(
        doc, "\"tbexportWarnings\": [\"no NCCL kernel in this rank's trace (one of 2 ranks)"));
  }
  /* the rows without the trailing space of Kineto's empty postfix */
  assert_non_null(strstr(doc, "\"args\":{\"name\":\"stream 7\"}"));
  assert_null(strstr(doc, "\"stream 7 \""));
  /* the range profiler's figures on the GEMM, the summary's headings, two
   * decimals at most, the verdict; none on the other kernels */
  assert_non_null(strstr(doc,
                         "\"range profiler\":{\"launches\":3,\"SM %\":87.46,\"tensor %\":91,"
                         "\"DRAM %\":20.25,\"my\\\"odd\\\"metric\":0,\"bound by\":\"compute\"}"));
  assert_int_equal(strstr(strstr(doc, "\"range profiler\"") + 1, "\"range profiler\""), NULL);
  free(doc);

  char *s0 = summary_json(t);
  tbe_trace *rj = import(j1), *rx = import(x1);
  char *sj = summary_json(rj), *sx = summary_json(rx);
  assert_string_equal(sj, s0);
  assert_string_equal(sx, s0);
  for (int k = 0; k < 2; k++) {
    const tbe_trace *r = k ? rx : rj;
    assert_int_equal(count_named(r, "nccl:all_reduce"), with_note ? 0 : 1);
    assert_int_equal(note_count(r), with_note ? 1 : 0);
    assert_int_equal(r->rank, t->rank);
    assert_int_equal(r->world_size, 2);
    /* the arg is made again, never kept */
    tbe_str key = tbe_trace_find_str(r, "range profiler", 14);
    for (size_t a = 0; key != TBE_NONE && a < r->nargs; a++)
      assert_int_not_equal(r->args[a].key, key);
  }
  if (!with_note) assert_string_equal(tbe_trace_str(rx, rx->dist_backend), "nccl");
  assert_int_equal(tbe_export_chrome_json(rj, j2, 0, 1), 0);
  assert_int_equal(tbe_export_xplane(rx, x2, 1), 0);
  assert_true(same_file(j1, j2));
  assert_true(same_file(x1, x2));
  free(s0);
  free(sj);
  free(sx);
  tbe_trace_free(rj);
  tbe_trace_free(rx);
  tu_rmrf(dir);
  free(j1);
  free(j2);
  free(x1);
  free(x2);
  free(dir);
}

static void test_outputs(void **state) {
  (void)state;
  for (int note = 0; note < 2; note++) {
    tbe_trace *t = distributed_trace(note);
    check_outputs(t, note);
    tbe_trace_free(t);
  }
}

/* ---- allocation failures ---- */

static int build_and_finish(const tbe_allocator *a, void *ctx) {
  (void)ctx;
  tbe_trace *t = NULL;
  int rc = tbe_trace_create(&t, a);
  if (rc) return rc;
  uint32_t main = 0, s23 = 0;
  if (!rc) rc = tbe_trace_track(t, TBE_TRACK_THREAD, PID, PID, -1, &main);
  if (!rc) rc = tbe_trace_track(t, TBE_TRACK_STREAM, PID, 23, 0, &s23);
  t->rank = 1;
  t->world_size = 2;
  for (int i = 0; i < 40 && !rc; i++) {
    tbe_event e;
    memset(&e, 0, sizeof e);
    e.kind = TBE_EV_RUNTIME;
    e.track = main;
    e.start_ns = T0 + i * 100000;
    e.dur_ns = 10000;
    e.correlation = (uint64_t)i + 1;
    if (!rc) rc = tbe_trace_intern(t, "cudaLaunchKernel", 16, &e.name);
    if (!rc) rc = tbe_trace_add_event(t, &e, NULL, NULL, 0, NULL);
    e.kind = TBE_EV_KERNEL;
    e.track = s23;
    e.start_ns += 50000;
    if (!rc)
      rc = tbe_trace_intern(t, i % 2 ? AR : "ncclDevKernel_Broadcast_RING_LL(x)",
                            strlen(i % 2 ? AR : "ncclDevKernel_Broadcast_RING_LL(x)"), &e.name);
    if (!rc) rc = tbe_trace_add_event(t, &e, NULL, NULL, 0, NULL);
  }
  if (!rc) rc = tbe_trace_finish(t);
  if (!rc && count_named(t, "nccl:all_reduce") != 20) rc = TBE_EINVAL;
  tbe_trace_free(t);
  return rc;
}

static void test_alloc_failures(void **state) {
  (void)state;
  assert_int_equal(build_and_finish(NULL, NULL), 0);
  assert_true(tu_alloc_sweep(build_and_finish, NULL, 400) > 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kernel_op),        cmocka_unit_test(test_bare_launch),
      cmocka_unit_test(test_inside_c10d),      cmocka_unit_test(test_already_named),
      cmocka_unit_test(test_mixed_and_many),   cmocka_unit_test(test_order_of_equal_spans),
      cmocka_unit_test(test_backend_and_note), cmocka_unit_test(test_outputs),
      cmocka_unit_test(test_alloc_failures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
