/* test_analysis.c: trace analysis and diff (tbexport/analysis.h).
 *
 * A small synthetic trace built with the model API, whose figures are
 * worked out by hand in the comments (overlapping streams, two GPUs,
 * correlated launches, nested operators and ranges, two steps); the
 * golden Kineto CNN traces, whose per-kernel totals are checked against
 * an independent scan of the JSON (yajl tree); the diff of two synthetic
 * traces and of the golden fp32/bf16 pair; allocation failures. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <yajl/yajl_tree.h>

#include "tbexport.h"
#include "tbexport/analysis.h"
#include "testutil.h"

#define T0 1000000000LL

static void add(tbe_trace *t, uint32_t track, tbe_event_kind k, const char *name, int64_t start,
                int64_t dur, uint64_t corr, const void *detail) {
  tbe_event e;
  memset(&e, 0, sizeof e);
  e.start_ns = T0 + start;
  e.dur_ns = dur;
  e.correlation = corr;
  e.name = tbe_trace_str_id(t, name);
  e.track = track;
  e.kind = (uint8_t)k;
  e.link = TBE_NONE;
  e.detail = TBE_NONE;
  assert_int_equal(tbe_trace_add_event(t, &e, detail, NULL, 0, NULL), 0);
}

/* The synthetic trace.  `f` scales kA; `variant` 1 replaces kB by kD (a
 * kernel of the same class at the same place: "replaced by"), 2 by
 * sgemm_kD (a GEMM: another class, so not). */
static tbe_trace *build(int64_t ka, int variant) {
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  uint32_t host, s7, s8, s9, dev;
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_THREAD, 1, 1, -1, &host), 0);
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_STREAM, 1, 7, 0, &s7), 0);
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_STREAM, 1, 8, 0, &s8), 0);
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_STREAM, 1, 9, 1, &s9), 0);
  assert_int_equal(tbe_trace_device(t, 0, &dev), 0);
  t->devices[dev].name = tbe_trace_str_id(t, "NVIDIA H200");
  /* Host. */
  add(t, host, TBE_EV_CPU_OP, "aten::add", 0, 50000, 0, NULL);
  add(t, host, TBE_EV_CPU_OP, "aten::empty", 1000, 2000, 0, NULL);
  add(t, host, TBE_EV_RUNTIME, "cudaLaunchKernel", 5000, 2000, 1, NULL);
  add(t, host, TBE_EV_RUNTIME, "cudaLaunchKernel", 10000, 2000, 2, NULL);
  add(t, host, TBE_EV_RUNTIME, "cudaMemcpyAsync", 20000, 1000, 4, NULL);
  add(t, host, TBE_EV_RUNTIME, "cudaLaunchKernel", 60000, 1000, 3, NULL);
  add(t, host, TBE_EV_RUNTIME, "cudaDeviceSynchronize", 70000, 20000, 0, NULL);
  tbe_nvtx nv;
  memset(&nv, 0, sizeof nv);
  add(t, host, TBE_EV_NVTX_RANGE, "fwd", 0, 55000, 0, &nv);
  add(t, host, TBE_EV_NVTX_RANGE, "inner", 1000, 1000, 0, &nv);
  /* GPU 0, stream 7: kA, a pageable HtoD copy, kA again. */
  tbe_kernel k;
  memset(&k, 0, sizeof k);
  k.occupancy_pct = -1;
  k.blocks_per_sm = -1;
  k.warps_per_sm = -1;
  k.queued_ns = -1;
  add(t, s7, TBE_EV_KERNEL, "kA", 8000, ka, 1, &k);
  tbe_memcpy m;
  memset(&m, 0, sizeof m);
  m.bytes = 4096;
  m.copy_kind = TBE_COPY_HTOD;
  m.src_kind = TBE_MEM_PAGEABLE;
  m.dst_kind = TBE_MEM_DEVICE;
  m.src_device = m.dst_device = -1;
  add(t, s7, TBE_EV_MEMCPY, "Memcpy HtoD (Pageable -> Device)", 22000, 5000, 4, &m);
  add(t, s7, TBE_EV_KERNEL, "kA", 62000, ka, 3, &k);
  /* Stream 8: kC inside kA (no extra busy time), a memset. */
  add(t, s8, TBE_EV_KERNEL, "kC", 15000, 2000, 2, &k);
  tbe_memset ms;
  memset(&ms, 0, sizeof ms);
  ms.bytes = 128;
  add(t, s8, TBE_EV_MEMSET, "Memset (Device)", 30000, 1000, 0, &ms);
  /* GPU 1: kB (or kD), not correlated. */
  add(t, s9, TBE_EV_KERNEL, variant == 2 ? "sgemm_kD" : variant ? "kD" : "kB", 40000, 3000, 0, &k);
  assert_int_equal(tbe_trace_add_step(t, 1, T0, T0 + 50000, tbe_trace_str_id(t, "ProfilerStep#1")), 0);
  assert_int_equal(tbe_trace_add_step(t, 2, T0 + 50000, T0 + 100000, tbe_trace_str_id(t, "ProfilerStep#2")), 0);
  assert_int_equal(tbe_trace_finish(t), 0);
  return t;
}

static const tbe_name_stats *find(const tbe_analysis *an, tbe_group_kind g, const char *name) {
  for (size_t i = 0; i < an->ngroups[g]; i++)
    if (strcmp(tbe_trace_str(an->trace, an->groups[g][i].name), name) == 0)
      return &an->groups[g][i];
  return NULL;
}

static int has_advice(const tbe_analysis *an, tbe_advice_kind k) {
  for (size_t i = 0; i < an->nadvice; i++)
    if (an->advice[i].kind == (uint32_t)k) return 1;
  return 0;
}

static void test_synthetic(void **state) {
  (void)state;
  tbe_trace *t = build(10000, 0);
  tbe_analysis *an;
  assert_int_equal(tbe_analysis_create(&an, t, NULL), 0);
  /* Window: first host event at 0, sync ends at 90000. */
  assert_int_equal(an->wall_ns, 90000);
  assert_int_equal(an->ndevices, 2);
  const tbe_device_stats *d0 = &an->devices[0], *d1 = &an->devices[1];
  assert_int_equal(d0->device, 0);
  assert_string_equal(tbe_trace_str(t, d0->name), "NVIDIA H200");
  /* GPU 0 busy: kA 10000 + copy 5000 + memset 1000 + kA 10000 (kC inside kA). */
  assert_int_equal(d0->busy_ns, 26000);
  assert_int_equal(d0->idle_ns, 90000 - 26000);
  assert_int_equal(d0->kernel_ns, 22000);
  assert_int_equal(d0->kernel_count, 3);
  assert_int_equal(d0->short_kernels, 1);
  assert_int_equal(d0->memcpy_ns[TBE_COPY_HTOD], 5000);
  assert_int_equal(d0->memcpy_count[TBE_COPY_HTOD], 1);
  assert_int_equal(d0->memcpy_bytes[TBE_COPY_HTOD], 4096);
  assert_int_equal(d0->pageable_count, 1);
  assert_int_equal(d0->memset_ns, 1000);
  /* Latencies 3000, 5000, 2000, 2000: median (2000 + 3000) / 2. */
  assert_int_equal(d0->launch_samples, 4);
  assert_int_equal(d0->launch_median_ns, 2500);
  /* Split: the calls took 2000, 2000, 1000, 1000 (overhead median 1500)
   * and the work started 1000, 3000, 1000, 1000 after they returned
   * (queue delay median 1000). */
  assert_int_equal(d0->launch_overhead_median_ns, 1500);
  assert_int_equal(d0->queue_delay_median_ns, 1000);
  assert_int_equal(an->all.launch_overhead_median_ns, 1500);
  assert_int_equal(an->all.queue_delay_median_ns, 1000);
  /* Per step: step 1 has the first three launches, step 2 the last. */
  assert_int_equal(an->steps[0].launch_overhead_median_ns, 2000);
  assert_int_equal(an->steps[0].queue_delay_median_ns, 1000);
  assert_int_equal(an->steps[1].launch_overhead_median_ns, 1000);
  assert_int_equal(an->steps[1].queue_delay_median_ns, 1000);
  assert_int_equal(d1->device, 1);
  assert_int_equal(d1->busy_ns, 3000);
  assert_int_equal(d1->launch_median_ns, -1);
  assert_int_equal(d1->launch_overhead_median_ns, -1);
  assert_int_equal(d1->queue_delay_median_ns, -1);
  assert_int_equal(an->all.busy_ns, 29000);
  assert_int_equal(an->all.kernel_ns, 25000);
  assert_int_equal(an->all.kernel_count, 4);
  assert_int_equal(an->all.launch_median_ns, 2500);
  /* Host: [0,50000) + [60000,61000); the synchronize [70000,90000) waits
   * for the GPU and is not busy. */
  assert_int_equal(an->host_busy_ns, 51000);
  assert_int_equal(an->api_calls, 5);
  assert_int_equal(an->sync_calls, 1);
  assert_int_equal(an->sync_call_ns, 20000);
  /* Kernels, sorted by total. */
  assert_int_equal(an->ngroups[TBE_GROUP_KERNEL], 3);
  const tbe_name_stats *ka = &an->groups[TBE_GROUP_KERNEL][0];
  assert_string_equal(tbe_trace_str(t, ka->name), "kA");
  assert_int_equal(ka->calls, 2);
  assert_int_equal(ka->total_ns, 20000);
  assert_int_equal(ka->min_ns, 10000);
  assert_int_equal(ka->max_ns, 10000);
  assert_int_equal(an->group_total_ns[TBE_GROUP_KERNEL], 25000);
  assert_non_null(ka->step_ns);
  assert_int_equal(ka->step_ns[0], 10000);
  assert_int_equal(ka->step_ns[1], 10000);
  const tbe_name_stats *kb = find(an, TBE_GROUP_KERNEL, "kB");
  assert_non_null(kb);
  assert_int_equal(kb->step_ns[0], 3000);
  assert_int_equal(kb->step_ns[1], 0);
  /* CPU operators: self time of aten::add excludes aten::empty. */
  const tbe_name_stats *op = find(an, TBE_GROUP_CPU_OP, "aten::add");
  assert_non_null(op);
  assert_int_equal(op->total_ns, 50000);
  assert_int_equal(op->self_ns, 48000);
  assert_int_equal(an->group_total_ns[TBE_GROUP_CPU_OP], 50000);
  const tbe_name_stats *fwd = find(an, TBE_GROUP_RANGE, "fwd");
  assert_non_null(fwd);
  assert_int_equal(fwd->self_ns, 54000);
  assert_int_equal(an->ngroups[TBE_GROUP_RANGE], 2);
  /* Steps. */
  assert_int_equal(an->nsteps, 2);
  assert_int_equal(an->steps[0].dur_ns, 50000);
  assert_int_equal(an->steps[0].gpu_busy_ns, 19000);
  assert_int_equal(an->steps[0].kernel_ns, 15000);
  assert_int_equal(an->steps[0].kernel_count, 3);
  assert_int_equal(an->steps[1].gpu_busy_ns, 10000);
  assert_int_equal(an->steps[1].kernel_ns, 10000);
  /* Advice: pageable copy, sync (22% of wall time); not launch-bound (the
   * host busy 57%, its wait in cudaDeviceSynchronize left out, is not
   * twice the GPU's 32%), not short kernels (fewer than 10). */
  assert_true(has_advice(an, TBE_ADVICE_PAGEABLE));
  assert_false(has_advice(an, TBE_ADVICE_LAUNCH_BOUND));
  assert_true(has_advice(an, TBE_ADVICE_SYNC));
  assert_false(has_advice(an, TBE_ADVICE_SHORT_KERNELS));
  assert_false(has_advice(an, TBE_ADVICE_DROPPED));
  /* Sorting. */
  tbe_analysis_sort(an, TBE_GROUP_KERNEL, TBE_SORT_AVG);
  assert_string_equal(tbe_trace_str(t, an->groups[TBE_GROUP_KERNEL][0].name), "kA");
  assert_string_equal(tbe_trace_str(t, an->groups[TBE_GROUP_KERNEL][1].name), "kB");
  tbe_analysis_sort(an, TBE_GROUP_KERNEL, TBE_SORT_CALLS);
  assert_string_equal(tbe_trace_str(t, an->groups[TBE_GROUP_KERNEL][0].name), "kA");
  tbe_analysis_free(an);
  tbe_trace_free(t);
}

/* A GEMM loop that queues ahead: 9 launches of 5 us each, back to back,
 * of kernels of 1 ms that run one after the other on one stream.  The old
 * single figure (call start to kernel start) reads milliseconds; the split
 * says the calls took 5 us and the work waited in the queue.  One kernel
 * starts before its call returns: its queue delay is 0, not negative. */
static void test_launch_split(void **state) {
  (void)state;
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  uint32_t host, s7;
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_THREAD, 1, 1, -1, &host), 0);
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_STREAM, 1, 7, 0, &s7), 0);
  tbe_kernel k;
  memset(&k, 0, sizeof k);
  k.occupancy_pct = k.blocks_per_sm = k.warps_per_sm = -1;
  k.queued_ns = -1;
  for (int i = 0; i < 9; i++) {
    add(t, host, TBE_EV_RUNTIME, "cudaLaunchKernel", 5000 * i, 5000, (uint64_t)i + 1, NULL);
    /* the first kernel starts 2 us into its call; each next when the one
     * before ends */
    add(t, s7, TBE_EV_KERNEL, "gemm", 3000 + 1000000LL * i, 1000000, (uint64_t)i + 1, &k);
  }
  assert_int_equal(tbe_trace_finish(t), 0);
  tbe_analysis *an;
  assert_int_equal(tbe_analysis_create(&an, t, NULL), 0);
  const tbe_device_stats *d = &an->devices[0];
  assert_int_equal(d->launch_samples, 9);
  assert_int_equal(d->launch_overhead_median_ns, 5000);
  /* launch i ends at 5000 (i + 1), its kernel starts at 3000 + 1e6 i:
   * queue delays 0 (i = 0, clamped), then 1e6 i - 5000 i - 2000; the
   * median is i = 4's. */
  assert_int_equal(d->queue_delay_median_ns, 4 * 1000000 - 4 * 5000 - 2000);
  assert_int_equal(d->launch_median_ns, 3000 + 4 * 1000000 - 4 * 5000);
  tbe_analysis_free(an);
  tbe_trace_free(t);
  /* An idle GPU: each kernel starts 2 us into its 10 us call; it did not
   * wait at all (0), it did not start "8 us early". */
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_THREAD, 1, 1, -1, &host), 0);
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_STREAM, 1, 7, 0, &s7), 0);
  for (int i = 0; i < 3; i++) {
    add(t, host, TBE_EV_RUNTIME, "cudaLaunchKernel", 100000 * i, 10000, (uint64_t)i + 1, NULL);
    add(t, s7, TBE_EV_KERNEL, "k", 100000 * i + 2000, 1000, (uint64_t)i + 1, &k);
  }
  assert_int_equal(tbe_trace_finish(t), 0);
  assert_int_equal(tbe_analysis_create(&an, t, NULL), 0);
  assert_int_equal(an->all.launch_overhead_median_ns, 10000);
  assert_int_equal(an->all.queue_delay_median_ns, 0);
  assert_int_equal(an->all.launch_median_ns, 2000);
  tbe_analysis_free(an);
  tbe_trace_free(t);
}

/* PyTorch's NVTX ranges carry per-call details; they group by operation. */
static void test_range_labels(void **state) {
  (void)state;
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  uint32_t host;
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_THREAD, 1, 1, -1, &host), 0);
  tbe_nvtx nv;
  memset(&nv, 0, sizeof nv);
  add(t, host, TBE_EV_NVTX_RANGE, "aten::mm, seq = 1, op_id = 5, sizes = [[2, 2]]", 0, 100, 0, &nv);
  add(t, host, TBE_EV_NVTX_RANGE, "aten::mm, op_id = 9", 200, 300, 0, &nv);
  add(t, host, TBE_EV_NVTX_RANGE, "aten::add, op_id = 10", 600, 50, 0, &nv);
  add(t, host, TBE_EV_NVTX_RANGE, "aten::add, op_id = 10", 700, 50, 0, &nv);
  add(t, host, TBE_EV_NVTX_RANGE, "my range, with a comma", 800, 10, 0, &nv);
  add(t, host, TBE_EV_NVTX_RANGE, ", op_id = 3", 900, 10, 0, &nv);
  for (int i = 0; i < 200; i++) { /* enough labels to grow the label table */
    char n[64];
    snprintf(n, sizeof n, "op%d, op_id = %d", i % 100, i);
    add(t, host, TBE_EV_NVTX_RANGE, n, 1000 + 10 * i, 5, 0, &nv);
  }
  assert_int_equal(tbe_trace_finish(t), 0);
  tbe_analysis *an;
  assert_int_equal(tbe_analysis_create(&an, t, NULL), 0);
  assert_int_equal(an->ngroups[TBE_GROUP_RANGE], 4 + 100);
  const tbe_name_stats *mm = NULL, *addop = NULL, *plain = NULL, *odd = NULL, *op7 = NULL;
  for (size_t i = 0; i < an->ngroups[TBE_GROUP_RANGE]; i++) {
    const tbe_name_stats *e = &an->groups[TBE_GROUP_RANGE][i];
    if (strcmp(e->label, "aten::mm") == 0) mm = e;
    if (strcmp(e->label, "aten::add") == 0) addop = e;
    if (strcmp(e->label, "my range, with a comma") == 0) plain = e;
    if (strcmp(e->label, ", op_id = 3") == 0) odd = e;
    if (strcmp(e->label, "op7") == 0) op7 = e;
  }
  assert_non_null(mm);
  assert_int_equal(mm->calls, 2);
  assert_int_equal(mm->total_ns, 400);
  assert_non_null(addop);
  assert_int_equal(addop->calls, 2);
  assert_non_null(plain);
  assert_non_null(odd);
  assert_non_null(op7);
  assert_int_equal(op7->calls, 2);
  tbe_analysis_free(an);
  tbe_trace_free(t);
}

/* Odd but legal input: zero-length events, overlapping and empty steps,
 * GPU work on a non-stream track, a kernel correlated to another kernel,
 * a step window outside the events. */
static void test_odd_inputs(void **state) {
  (void)state;
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  uint32_t host, other, s1;
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_THREAD, 1, 1, -1, &host), 0);
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_OTHER, 5, 5, -1, &other), 0);
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_STREAM, 1, 3, 0, &s1), 0);
  tbe_kernel k;
  memset(&k, 0, sizeof k);
  add(t, s1, TBE_EV_KERNEL, "k0", 0, 0, 0, &k);
  add(t, s1, TBE_EV_KERNEL, "k1", 0, 100, 7, &k);
  add(t, s1, TBE_EV_KERNEL, "k2", 50, 100, 7, &k);      /* same correlation as k1 */
  add(t, other, TBE_EV_KERNEL, "k3", 1000, 10, 0, &k);  /* GPU work off a stream track */
  add(t, host, TBE_EV_CPU_OP, "op", 0, 0, 0, NULL);
  add(t, host, TBE_EV_CPU_OP, "op", 0, 0, 0, NULL);
  assert_int_equal(tbe_trace_add_step(t, 1, T0 + 0, T0 + 100, 0), 0);
  assert_int_equal(tbe_trace_add_step(t, 2, T0 + 50, T0 + 60, 0), 0);  /* overlaps step 1 */
  assert_int_equal(tbe_trace_add_step(t, 3, T0 + 70, T0 + 70, 0), 0);  /* empty */
  assert_int_equal(tbe_trace_add_step(t, 4, T0 + 5000, T0 + 6000, 0), 0);
  assert_int_equal(tbe_trace_finish(t), 0);
  tbe_analysis *an;
  assert_int_equal(tbe_analysis_create(&an, t, NULL), 0);
  assert_int_equal(an->all.kernel_count, 4);
  assert_int_equal(an->ngroups[TBE_GROUP_KERNEL], 4);
  assert_true(an->all.busy_ns <= an->all.kernel_ns);
  assert_int_equal(an->all.busy_ns, 150 + 10);
  const tbe_name_stats *op = find(an, TBE_GROUP_CPU_OP, "op");
  assert_non_null(op);
  assert_int_equal(op->calls, 2);
  assert_int_equal(op->self_ns, 0);
  assert_int_equal(an->nsteps, 4);
  assert_int_equal(an->steps[3].gpu_busy_ns, 0);
  assert_int_equal(an->steps[2].dur_ns, 0);
  for (int f = 0; f < 4; f++) {
    tbe_report_options o;
    tbe_report_options_init(&o);
    o.format = f;
    char *str;
    size_t n;
    assert_int_equal(tbe_report_summary(an, &o, &str, &n), 0);
    tbe_report_free(str, n, NULL);
  }
  tbe_diff *d;
  assert_int_equal(tbe_diff_create(&d, an, an, NULL), 0);
  tbe_diff_free(d);
  tbe_analysis_free(an);
  tbe_trace_free(t);
}

/* Step windows on the device: a GPU-bound loop whose host queues each
 * step in 1 ms while its kernel runs 3 ms; then a host-bound step whose
 * kernel ends inside it; then a step that launches nothing. */
static void test_device_steps(void **state) {
  (void)state;
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  uint32_t host, s7;
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_THREAD, 1, 1, -1, &host), 0);
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_STREAM, 1, 7, 0, &s7), 0);
  tbe_kernel k;
  memset(&k, 0, sizeof k);
  const int64_t ms = 1000000;
  for (int i = 0; i < 3; i++) {
    add(t, host, TBE_EV_RUNTIME, "cudaLaunchKernel", i * ms + 100000, 1000, (uint64_t)i + 1, NULL);
    add(t, s7, TBE_EV_KERNEL, "k", 200000 + i * 3 * ms, 3 * ms, (uint64_t)i + 1, &k);
    assert_int_equal(tbe_trace_add_step(t, i, T0 + i * ms, T0 + (i + 1) * ms, 0), 0);
  }
  /* step 3: host [20, 25] ms, its kernel [21, 22] ms; step 4: host [25, 26] ms, nothing */
  add(t, host, TBE_EV_RUNTIME, "cudaLaunchKernel", 20 * ms + 500000, 1000, 9, NULL);
  add(t, s7, TBE_EV_KERNEL, "k", 21 * ms, ms, 9, &k);
  assert_int_equal(tbe_trace_add_step(t, 3, T0 + 20 * ms, T0 + 25 * ms, 0), 0);
  assert_int_equal(tbe_trace_add_step(t, 4, T0 + 25 * ms, T0 + 26 * ms, 0), 0);
  assert_int_equal(tbe_trace_finish(t), 0);
  tbe_analysis *an;
  assert_int_equal(tbe_analysis_create(&an, t, NULL), 0);
  assert_int_equal(an->nsteps, 5);
  /* step 0 ends with its kernel at 3.2 ms; each later one starts where the
   * previous ended and lasts its kernel's 3 ms */
  assert_int_equal(an->steps[0].start_ns, T0);
  assert_int_equal(an->steps[0].dur_ns, 3200000);
  assert_int_equal(an->steps[1].start_ns, T0 + 3200000);
  assert_int_equal(an->steps[1].dur_ns, 3 * ms);
  assert_int_equal(an->steps[2].start_ns, T0 + 6200000);
  assert_int_equal(an->steps[2].dur_ns, 3 * ms);
  for (int i = 0; i < 3; i++) {
    assert_int_equal(an->steps[i].host_ns, ms);
    assert_int_equal(an->steps[i].gpu_busy_ns, an->steps[i].dur_ns - (i == 0 ? 200000 : 0));
    assert_int_equal(an->steps[i].gpu_end_ns, 0);
  }
  /* host-bound: the host range */
  assert_int_equal(an->steps[3].start_ns, T0 + 20 * ms);
  assert_int_equal(an->steps[3].dur_ns, 5 * ms);
  assert_int_equal(an->steps[3].gpu_busy_ns, ms);
  assert_int_equal(an->steps[4].start_ns, T0 + 25 * ms);
  assert_int_equal(an->steps[4].dur_ns, ms);
  assert_int_equal(an->step_dist.median_ns, 3 * ms);
  tbe_analysis_free(an);
  tbe_trace_free(t);
}

static void test_empty_and_dropped(void **state) {
  (void)state;
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  t->dropped_records = 7;
  t->dropped_out_of_range = 2;
  assert_int_equal(tbe_trace_finish(t), 0);
  tbe_analysis *an;
  assert_int_equal(tbe_analysis_create(&an, t, NULL), 0);
  assert_int_equal(an->ndevices, 0);
  assert_int_equal(an->all.busy_ns, 0);
  assert_int_equal(an->dropped_records, 9);
  assert_int_equal(an->out_of_range_records, 2);
  assert_true(has_advice(an, TBE_ADVICE_DROPPED));
  /* the advice tells the two causes apart: only one is about buffers */
  for (size_t i = 0; i < an->nadvice; i++)
    if (an->advice[i].kind == TBE_ADVICE_DROPPED) {
      assert_non_null(strstr(an->advice[i].text, "7 records were dropped for lack of buffer space"));
      assert_non_null(strstr(an->advice[i].text, "2 records had zero or inverted timestamps"));
    }
  char *s;
  size_t n;
  for (int f = 0; f < 4; f++) {
    tbe_report_options o;
    tbe_report_options_init(&o);
    o.format = f;
    assert_int_equal(tbe_report_summary(an, &o, &s, &n), 0);
    assert_true(n > 0);
    assert_int_equal(strlen(s), n);
    /* the table's profiler line names what each count is (the records a
     * capture range leaves out are the warnings', not these) */
    if (f == TBE_REPORT_TABLE)
      assert_non_null(strstr(s,
                             "records lost: 7 for lack of buffer space, 2 with zero or "
                             "inverted timestamps"));
    tbe_report_free(s, n, NULL);
  }
  tbe_analysis_free(an);
  tbe_trace_free(t);
  /* Synchronizations without steps: no "per step" (it read "0.0 per
   * step"). */
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  uint32_t thr;
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_THREAD, 1, 1, -1, &thr), 0);
  for (int i = 0; i < 25; i++)
    add(t, thr, TBE_EV_RUNTIME, "cudaDeviceSynchronize", 10000 * i, 5000, 0, NULL);
  assert_int_equal(tbe_trace_finish(t), 0);
  assert_int_equal(tbe_analysis_create(&an, t, NULL), 0);
  int said = 0;
  for (size_t i = 0; i < an->nadvice; i++)
    if (an->advice[i].kind == TBE_ADVICE_SYNC) {
      said = 1;
      assert_null(strstr(an->advice[i].text, "per step"));
      assert_non_null(strstr(an->advice[i].text, "25 synchronizations ("));
    }
  assert_true(said);
  tbe_analysis_free(an);
  tbe_trace_free(t);
  assert_int_equal(tbe_analysis_create(NULL, t, NULL), TBE_EINVAL);
  assert_int_equal(tbe_analysis_create(&an, NULL, NULL), TBE_EINVAL);
  assert_null(an);
  tbe_analysis_free(NULL);
  tbe_diff_free(NULL);
}

static void test_diff_synthetic(void **state) {
  (void)state;
  tbe_trace *a = build(10000, 0), *b = build(15000, 1);
  tbe_analysis *aa, *ab;
  assert_int_equal(tbe_analysis_create(&aa, a, NULL), 0);
  assert_int_equal(tbe_analysis_create(&ab, b, NULL), 0);
  tbe_diff *d;
  /* kB (class other) gave way to kD (other) at its place in step 1's
   * launches: one entry, kB replaced by kD. */
  assert_int_equal(aa->nlaunch_seq, 3); /* step 1 (the lower middle of two): kA, kC, kB */
  assert_string_equal(aa->launch_seq[2], "kB");
  assert_int_equal(tbe_diff_create(&d, aa, ab, NULL), 0);
  assert_int_equal(d->nentries[TBE_GROUP_KERNEL], 3);
  assert_int_equal(d->added[TBE_GROUP_KERNEL], 0);
  assert_int_equal(d->removed[TBE_GROUP_KERNEL], 0);
  assert_int_equal(d->replaced[TBE_GROUP_KERNEL], 1);
  const tbe_diff_entry *rb = NULL;
  for (size_t i = 0; i < d->nentries[TBE_GROUP_KERNEL]; i++)
    if (d->entries[TBE_GROUP_KERNEL][i].replaced_by) rb = &d->entries[TBE_GROUP_KERNEL][i];
  assert_non_null(rb);
  assert_string_equal(rb->name, "kB");
  assert_string_equal(rb->replaced_by, "kD");
  assert_int_equal(rb->present, 3);
  assert_int_equal(rb->total_ns[0], 3000);
  assert_int_equal(rb->total_ns[1], 3000);
  assert_int_equal(rb->delta_ns, 0);
  tbe_diff_free(d);
  /* A kernel of another class at that place is added, and kB removed. */
  tbe_trace *c = build(15000, 2);
  tbe_analysis *ac;
  assert_int_equal(tbe_analysis_create(&ac, c, NULL), 0);
  assert_int_equal(tbe_diff_create(&d, aa, ac, NULL), 0);
  assert_int_equal(d->replaced[TBE_GROUP_KERNEL], 0);
  assert_int_equal(d->added[TBE_GROUP_KERNEL], 1);
  assert_int_equal(d->removed[TBE_GROUP_KERNEL], 1);
  assert_int_equal(d->nentries[TBE_GROUP_KERNEL], 4);
  const tbe_diff_entry *e = &d->entries[TBE_GROUP_KERNEL][0];
  assert_string_equal(e->name, "kA"); /* largest |delta| */
  assert_int_equal(e->present, 3);
  assert_int_equal(e->delta_ns, 10000);
  assert_true(fabs(e->ratio - 1.5) < 1e-9);
  /* Per-step medians 10000 -> 15000; two steps a side are too few to
   * judge (tested with more steps in test_noise_verdicts). */
  assert_int_equal(e->steps.dist[0].n, 2);
  assert_int_equal(e->steps.dist[0].median_ns, 10000);
  assert_int_equal(e->steps.dist[1].median_ns, 15000);
  assert_int_equal(e->steps.verdict, TBE_NOISE_TOO_FEW);
  assert_true(e->steps.p_value < 0);
  int seen_added = 0, seen_removed = 0;
  int64_t sum0 = 0, sum1 = 0;
  for (size_t i = 0; i < d->nentries[TBE_GROUP_KERNEL]; i++) {
    const tbe_diff_entry *x = &d->entries[TBE_GROUP_KERNEL][i];
    if (strcmp(x->name, "sgemm_kD") == 0) seen_added = x->present == 2;
    if (strcmp(x->name, "kB") == 0) seen_removed = x->present == 1;
    sum0 += x->total_ns[0];
    sum1 += x->total_ns[1];
  }
  assert_true(seen_added);
  assert_true(seen_removed);
  assert_int_equal(sum0, aa->all.kernel_ns);
  assert_int_equal(sum1, ac->all.kernel_ns);
  assert_int_equal(d->steps.verdict, TBE_NOISE_TOO_FEW);
  assert_int_equal(d->step_median_ns[0], 50000);
  assert_int_equal(d->steps.dist[0].q1_ns, 50000);
  assert_int_equal(d->steps.dist[1].max_ns, 50000);
  /* Reports in every format. */
  for (int f = 0; f < 4; f++) {
    tbe_report_options o;
    tbe_report_options_init(&o);
    o.format = f;
    o.label[0] = "fp32";
    o.label[1] = "bf16";
    char *s;
    size_t n;
    assert_int_equal(tbe_report_diff(d, &o, &s, &n), 0);
    assert_non_null(strstr(s, "kD")); /* Markdown escapes the _ */
    if (f == TBE_REPORT_JSON) {
      char err[256];
      yajl_val v = yajl_tree_parse(s, err, sizeof err);
      assert_non_null(v);
      yajl_tree_free(v);
    }
    tbe_report_free(s, n, NULL);
  }
  tbe_diff_free(d);
  /* A trace against itself: nothing added or removed, no deltas. */
  assert_int_equal(tbe_diff_create(&d, aa, aa, NULL), 0);
  assert_int_equal(d->added[TBE_GROUP_KERNEL], 0);
  assert_int_equal(d->removed[TBE_GROUP_KERNEL], 0);
  for (size_t i = 0; i < d->nentries[TBE_GROUP_KERNEL]; i++) {
    assert_int_equal(d->entries[TBE_GROUP_KERNEL][i].delta_ns, 0);
    assert_int_equal(d->entries[TBE_GROUP_KERNEL][i].steps.verdict, TBE_NOISE_TOO_FEW);
  }
  tbe_diff_free(d);
  /* "replaced by" in every format. */
  static const char *const says[4] = {
      "    replaced by kD\n", ",replaced,",
      "\"name\":\"kB\",\"replaced_by\":\"kD\",\"status\":\"replaced\"", "| kB, replaced by kD |"};
  assert_int_equal(tbe_diff_create(&d, aa, ab, NULL), 0);
  for (int f = 0; f < 4; f++) {
    tbe_report_options o;
    tbe_report_options_init(&o);
    o.format = f;
    char *s;
    size_t n;
    assert_int_equal(tbe_report_diff(d, &o, &s, &n), 0);
    if (!strstr(s, says[f])) fail_msg("format %d lacks '%s':\n%s", f, says[f], s);
    static const char *const count[4] = {"1 replaced by another name", "", "\"replaced\":1,",
                                         "1 replaced by another name"};
    assert_non_null(strstr(s, count[f]));
    tbe_report_free(s, n, NULL);
  }
  tbe_diff_free(d);
  tbe_analysis_free(aa);
  tbe_analysis_free(ab);
  tbe_analysis_free(ac);
  tbe_trace_free(a);
  tbe_trace_free(b);
  tbe_trace_free(c);
}

/* ---- per-step distributions and the noise verdict ---- */

static void test_step_dist(void **state) {
  (void)state;
  tbe_step_compare c;
  int64_t v[8] = {40, 10, 30, 20, 80, 60, 70, 50};
  /* Sorted 10..80: h = 7/4 -> 20 + 3/4 * 10; median 45; q3 at 5.25 -> 60 + 2.5. */
  assert_int_equal(tbe_step_compare_values(&c, v, 8, v, 1, NULL), 0);
  assert_int_equal(c.dist[0].n, 8);
  assert_int_equal(c.dist[0].min_ns, 10);
  assert_int_equal(c.dist[0].q1_ns, 27);
  assert_int_equal(c.dist[0].median_ns, 45);
  assert_int_equal(c.dist[0].q3_ns, 62);
  assert_int_equal(c.dist[0].max_ns, 80);
  assert_int_equal(v[0], 40); /* the caller's values are not touched */
  assert_int_equal(c.dist[1].n, 1);
  assert_int_equal(c.dist[1].q1_ns, 40);
  assert_int_equal(c.dist[1].q3_ns, 40);
  assert_int_equal(c.verdict, TBE_NOISE_TOO_FEW);
  /* Empty side: nothing compared, all -1. */
  assert_int_equal(tbe_step_compare_values(&c, v, 8, NULL, 0, NULL), 0);
  assert_int_equal(c.verdict, TBE_NOISE_NONE);
  assert_int_equal(c.dist[1].median_ns, -1);
  assert_true(c.p_value < 0);
  assert_int_equal(tbe_step_compare_values(NULL, v, 1, v, 1, NULL), TBE_EINVAL);
  assert_int_equal(tbe_step_compare_values(&c, NULL, 1, v, 1, NULL), TBE_EINVAL);
  assert_string_equal(tbe_noise_name(TBE_NOISE_WITHIN), "within noise");
  assert_string_equal(tbe_noise_name(TBE_NOISE_NONE), "");
}

/* Brute force: the two-sided p of the rank test by enumerating every split
 * of the pooled values (U counts base > new pairs, ties one half). */
static double brute_p(const int64_t *x, size_t m, const int64_t *y, size_t n) {
  int64_t all[32];
  size_t N = m + n;
  memcpy(all, x, m * sizeof *x);
  memcpy(all + m, y, n * sizeof *y);
  double u0 = 0;
  for (size_t i = 0; i < m; i++)
    for (size_t j = 0; j < n; j++) u0 += x[i] > y[j] ? 1.0 : x[i] == y[j] ? 0.5 : 0.0;
  double le = 0, ge = 0, tot = 0;
  for (uint32_t mask = 0; mask < (1u << N); mask++) {
    if ((size_t)__builtin_popcount(mask) != m) continue;
    double u = 0;
    for (size_t i = 0; i < N; i++) {
      if (!(mask >> i & 1)) continue;
      for (size_t j = 0; j < N; j++)
        if (!(mask >> j & 1)) u += all[i] > all[j] ? 1.0 : all[i] == all[j] ? 0.5 : 0.0;
    }
    tot++;
    le += u <= u0 + 1e-9;
    ge += u >= u0 - 1e-9;
  }
  double p = 2 * (le < ge ? le : ge) / tot;
  return p > 1 ? 1 : p;
}

static void test_rank_test(void **state) {
  (void)state;
  tbe_step_compare c;
  /* Exact path against enumeration, sizes 4..7, distinct values. */
  unsigned seed = 12345;
  for (size_t m = 4; m <= 7; m++)
    for (size_t n = 4; n <= 7; n++)
      for (int rep = 0; rep < 3; rep++) {
        int64_t pool[14], x[7], y[7];
        for (size_t i = 0; i < m + n; i++) pool[i] = (int64_t)(i * 1000 + 17);
        for (size_t i = m + n; i-- > 1;) { /* shuffle */
          seed = seed * 1103515245u + 12345u;
          size_t j = (seed >> 16) % (i + 1);
          int64_t t = pool[i];
          pool[i] = pool[j];
          pool[j] = t;
        }
        if (rep == 2) /* a clear shift: new above base */
          for (size_t i = 0; i < m + n; i++) pool[i] = (int64_t)(i < m ? i : 100 + i);
        memcpy(x, pool, m * sizeof *x);
        memcpy(y, pool + m, n * sizeof *y);
        assert_int_equal(tbe_step_compare_values(&c, x, m, y, n, NULL), 0);
        double want = brute_p(x, m, y, n);
        assert_true(fabs(c.p_value - want) < 1e-9);
        assert_int_equal(c.verdict, want < TBE_NOISE_ALPHA ? TBE_NOISE_BEYOND : TBE_NOISE_WITHIN);
      }
  /* The threshold: 4 and 4 fully separated is significant (2/70); 3 and 3
   * are too few, however separated. */
  int64_t a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8};
  assert_int_equal(tbe_step_compare_values(&c, a, 4, b, 4, NULL), 0);
  assert_true(fabs(c.p_value - 2.0 / 70.0) < 1e-12);
  assert_int_equal(c.verdict, TBE_NOISE_BEYOND);
  assert_int_equal(tbe_step_compare_values(&c, a, 3, b, 3, NULL), 0);
  assert_int_equal(c.verdict, TBE_NOISE_TOO_FEW);
  /* Identical samples: nothing moved. */
  assert_int_equal(tbe_step_compare_values(&c, a, 4, a, 4, NULL), 0);
  assert_int_equal(c.verdict, TBE_NOISE_WITHIN);
  assert_true(c.p_value > 0.99);
  /* Ties: the normal approximation with the tie correction, against the
   * textbook formula computed here. */
  int64_t tx[6] = {5, 5, 6, 7, 7, 9}, ty[6] = {7, 8, 8, 9, 10, 10};
  assert_int_equal(tbe_step_compare_values(&c, tx, 6, ty, 6, NULL), 0);
  {
    double u = 0;
    for (int i = 0; i < 6; i++)
      for (int j = 0; j < 6; j++) u += tx[i] > ty[j] ? 1 : tx[i] == ty[j] ? 0.5 : 0;
    /* tie groups of the pooled values: 5 x2, 7 x3, 8 x2, 9 x2, 10 x2 */
    double ties = (8 - 2) + (27 - 3) + 3 * (8 - 2), N = 12;
    double var = 36.0 / 12.0 * ((N + 1) - ties / (N * (N - 1)));
    double z = (fabs(u - 18.0) - 0.5) / sqrt(var);
    assert_true(fabs(c.p_value - erfc(z / sqrt(2.0))) < 1e-12);
    /* and it is close to the exact permutation p */
    assert_true(fabs(c.p_value - brute_p(tx, 6, ty, 6)) < 0.02);
  }
  /* Large samples: the normal approximation; a 1% shift in noise of 10%
   * is within noise, a 30% shift beyond. */
  int64_t big0[200], big1[200];
  for (int i = 0; i < 200; i++) {
    seed = seed * 1103515245u + 12345u;
    big0[i] = 1000000 + (int64_t)((seed >> 8) % 100000);
    seed = seed * 1103515245u + 12345u;
    big1[i] = 1010000 + (int64_t)((seed >> 8) % 100000);
  }
  assert_int_equal(tbe_step_compare_values(&c, big0, 200, big1, 200, NULL), 0);
  assert_true(c.p_value > 0 && c.p_value <= 1);
  for (int i = 0; i < 200; i++) big1[i] = big0[i] * 13 / 10;
  assert_int_equal(tbe_step_compare_values(&c, big0, 200, big1, 200, NULL), 0);
  assert_int_equal(c.verdict, TBE_NOISE_BEYOND);
  assert_true(c.p_value < 1e-6);
  for (int i = 0; i < 200; i++) big1[i] = big0[199 - i];
  assert_int_equal(tbe_step_compare_values(&c, big0, 200, big1, 200, NULL), 0);
  assert_int_equal(c.verdict, TBE_NOISE_WITHIN);
}

/* A host trace for the noise and run tests: `nsteps` steps back to back
 * from `t0` with the given durations, and per step a CPU operator at its
 * start (so the host thread, of process `pid`, is the busiest) and each
 * kernel of `kn` (nk of them, kd[k][step] long) on its own stream of GPU
 * 0, starting at the step's start. */
static tbe_trace *steps_trace(int64_t pid, const char *host, int64_t t0, size_t nsteps,
                              const int64_t *sdur, size_t nk, const char *const *kn,
                              const int64_t *const *kd) {
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  uint32_t thr, pi;
  assert_int_equal(tbe_trace_process(t, pid, &pi), 0);
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_THREAD, pid, pid, -1, &thr), 0);
  if (host) t->host = tbe_trace_str_id(t, host);
  int64_t at = t0;
  tbe_kernel k;
  memset(&k, 0, sizeof k);
  for (size_t i = 0; i < nsteps; i++) {
    add(t, thr, TBE_EV_CPU_OP, "step_op", at - T0, sdur[i] / 2, 0, NULL);
    for (size_t j = 0; j < nk; j++) {
      uint32_t st;
      assert_int_equal(tbe_trace_track(t, TBE_TRACK_STREAM, pid, 7 + (int64_t)j, 0, &st), 0);
      if (kd[j][i] > 0) add(t, st, TBE_EV_KERNEL, kn[j], at - T0, kd[j][i], 0, &k);
    }
    char nm[32];
    snprintf(nm, sizeof nm, "ProfilerStep#%zu", i + 1);
    assert_int_equal(tbe_trace_add_step(t, (int64_t)i + 1, at, at + sdur[i], tbe_trace_str_id(t, nm)), 0);
    at += sdur[i];
  }
  assert_int_equal(tbe_trace_finish(t), 0);
  return t;
}

static const tbe_diff_entry *find_entry(const tbe_diff *d, tbe_group_kind g, const char *name) {
  for (size_t i = 0; i < d->nentries[g]; i++)
    if (strcmp(d->entries[g][i].name, name) == 0) return &d->entries[g][i];
  return NULL;
}

/* Eight steps a side: the step time moves 20% (beyond noise), kernel kS
 * with it, kernel kU does not move at all, kernel kN is reshuffled
 * (within noise); then a table of 20 names where one has p = 0.02 on its
 * own, which the false discovery rate over the table does not call a
 * change (while alone in its table it is). */
static void test_noise_verdicts(void **state) {
  (void)state;
  static const int64_t s0[8] = {100000, 102000, 98000, 101000, 99000, 103000, 97000, 100500};
  int64_t s1[8], ks0[8], ks1[8], ku[8], kn0[8], kn1[8];
  for (int i = 0; i < 8; i++) {
    s1[i] = s0[i] * 12 / 10;
    ks0[i] = s0[i] / 4;
    ks1[i] = s1[i] / 4;
    ku[i] = 5000 + 10 * i;
    kn0[i] = 8000 + 100 * i;
    kn1[i] = 8000 + 100 * (7 - i);
  }
  const char *names[3] = {"kS", "kU", "kN"};
  const int64_t *k0[3] = {ks0, ku, kn0}, *k1[3] = {ks1, ku, kn1};
  tbe_trace *a = steps_trace(1, "h", T0, 8, s0, 3, names, k0);
  tbe_trace *b = steps_trace(1, "h", T0, 8, s1, 3, names, k1);
  tbe_analysis *aa, *ab;
  assert_int_equal(tbe_analysis_create(&aa, a, NULL), 0);
  assert_int_equal(tbe_analysis_create(&ab, b, NULL), 0);
  assert_int_equal(aa->step_dist.n, 8);
  assert_int_equal(aa->step_dist.median_ns, 100250);
  tbe_diff *d;
  assert_int_equal(tbe_diff_create(&d, aa, ab, NULL), 0);
  assert_int_equal(d->steps.verdict, TBE_NOISE_BEYOND);
  assert_true(fabs(d->steps.p_value - 2.0 / 12870.0) < 1e-12);
  const tbe_diff_entry *e = find_entry(d, TBE_GROUP_KERNEL, "kS");
  assert_non_null(e);
  assert_int_equal(e->steps.verdict, TBE_NOISE_BEYOND);
  e = find_entry(d, TBE_GROUP_KERNEL, "kU");
  assert_int_equal(e->steps.verdict, TBE_NOISE_WITHIN);
  assert_true(e->steps.p_value > 0.99);
  e = find_entry(d, TBE_GROUP_KERNEL, "kN");
  assert_int_equal(e->steps.verdict, TBE_NOISE_WITHIN);
  assert_int_equal(e->steps.dist[0].median_ns, e->steps.dist[1].median_ns);
  /* The words, in every format. */
  for (int f = 0; f < 4; f++) {
    tbe_report_options o;
    tbe_report_options_init(&o);
    o.format = f;
    o.width = 1000; /* one line per sentence */
    char *txt;
    size_t n;
    assert_int_equal(tbe_report_diff(d, &o, &txt, &n), 0);
    if (f == TBE_REPORT_TABLE || f == TBE_REPORT_MARKDOWN) {
      assert_non_null(strstr(txt, f == TBE_REPORT_TABLE
                                      ? "beyond the steps' own noise (Mann-Whitney p < 0.001 over 8 and 8"
                                      : "beyond the steps' own noise (Mann-Whitney p &lt; 0.001 over 8 and 8"));
      assert_non_null(strstr(txt, "within"));
    } else {
      assert_non_null(strstr(txt, "beyond"));
      assert_non_null(strstr(txt, "within"));
    }
    if (f == TBE_REPORT_JSON) {
      char err[256];
      yajl_val v = yajl_tree_parse(txt, err, sizeof err);
      assert_non_null(v);
      const char *pn[] = {"overall", "steps", "noise", NULL};
      yajl_val nv = yajl_tree_get(v, pn, yajl_t_string);
      assert_non_null(nv);
      assert_string_equal(YAJL_GET_STRING(nv), "beyond");
      const char *pq[] = {"overall", "steps", "base", "q1_ns", NULL};
      yajl_val qv = yajl_tree_get(v, pq, yajl_t_number);
      assert_non_null(qv);
      assert_int_equal(YAJL_GET_INTEGER(qv), 98750); /* 98000 + 3/4 of 1000 */
      yajl_tree_free(v);
    }
    tbe_report_free(txt, n, NULL);
  }
  tbe_diff_free(d);
  tbe_analysis_free(aa);
  tbe_analysis_free(ab);
  tbe_trace_free(a);
  tbe_trace_free(b);

  /* The false discovery rate over one table. */
  static const int64_t flat[8] = {100000, 100000, 100000, 100000, 100000, 100000, 100000, 100000};
  static const int64_t m0[8] = {10000, 11000, 12000, 13000, 14000, 15000, 16000, 17000};
  static const int64_t m1[8] = {13500, 14500, 15500, 16500, 17500, 18500, 19500, 20500};
  for (int many = 0; many < 2; many++) {
    const char *kn[20];
    const int64_t *kb[20], *kw[20];
    char nm[20][8];
    size_t nk = many ? 20 : 1;
    for (size_t j = 0; j < nk; j++) {
      snprintf(nm[j], sizeof nm[j], "k%02zu", j);
      kn[j] = nm[j];
      kb[j] = j == 0 ? m0 : ku;
      kw[j] = j == 0 ? m1 : ku;
    }
    a = steps_trace(1, "h", T0, 8, flat, nk, kn, kb);
    b = steps_trace(1, "h", T0, 8, flat, nk, kn, kw);
    assert_int_equal(tbe_analysis_create(&aa, a, NULL), 0);
    assert_int_equal(tbe_analysis_create(&ab, b, NULL), 0);
    assert_int_equal(tbe_diff_create(&d, aa, ab, NULL), 0);
    e = find_entry(d, TBE_GROUP_KERNEL, "k00");
    assert_non_null(e);
    assert_true(fabs(e->steps.p_value - 266.0 / 12870.0) < 1e-9); /* 0.0207 */
    assert_int_equal(e->steps.verdict, many ? TBE_NOISE_WITHIN : TBE_NOISE_BEYOND);
    assert_int_equal(d->steps.verdict, TBE_NOISE_WITHIN); /* equal step times */
    tbe_diff_free(d);
    tbe_analysis_free(aa);
    tbe_analysis_free(ab);
    tbe_trace_free(a);
    tbe_trace_free(b);
  }
}

/* ---- the step hint ---- */

static tbe_analysis *analyse(tbe_trace *t) {
  assert_int_equal(tbe_trace_finish(t), 0);
  tbe_analysis *an;
  assert_int_equal(tbe_analysis_create(&an, t, NULL), 0);
  return an;
}

static void test_step_hint(void **state) {
  (void)state;
  tbe_nvtx nv;
  memset(&nv, 0, sizeof nv);
  /* Thread 1: five "train_step" at the top (80% of the time), a nested
   * "fwd" in each, and ten top-level "data" (5%: too little time).
   * Thread 2: three top-level "eval". */
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  uint32_t h1, h2;
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_THREAD, 1, 1, -1, &h1), 0);
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_THREAD, 1, 2, -1, &h2), 0);
  for (int i = 0; i < 5; i++) {
    add(t, h1, TBE_EV_NVTX_RANGE, "train_step", i * 20000, 16000, 0, &nv);
    add(t, h1, TBE_EV_NVTX_RANGE, "fwd", i * 20000 + 1000, 5000, 0, &nv);
    add(t, h1, TBE_EV_NVTX_RANGE, "data", i * 20000 + 16500, 500, 0, &nv);
    add(t, h1, TBE_EV_NVTX_RANGE, "data", i * 20000 + 17500, 500, 0, &nv);
    /* PyTorch's per-operator ranges: never the iteration */
    add(t, h1, TBE_EV_NVTX_RANGE, "aten::add, seq = 1", i * 20000 + 18000, 1500, 0, &nv);
    add(t, h1, TBE_EV_NVTX_RANGE, "aten::add, seq = 2", i * 20000 + 19600, 300, 0, &nv);
  }
  for (int i = 0; i < 3; i++) add(t, h2, TBE_EV_USER_ANNOTATION, "eval", i * 30000, 25000, 0, NULL);
  tbe_analysis *an = analyse(t);
  assert_int_equal(an->nsteps, 0);
  assert_non_null(an->step_hint);
  assert_string_equal(an->step_hint, "train_step");
  assert_int_equal(an->step_hint_count, 5);
  assert_int_equal(an->step_hint_ns, 80000);
  assert_int_equal(an->step_hint_kind, TBE_EV_NVTX_RANGE);
  /* The sentence and the flag, in every format. */
  for (int f = 0; f < 4; f++) {
    tbe_report_options o;
    tbe_report_options_init(&o);
    o.format = f;
    o.width = 1000;
    char *txt;
    size_t n;
    assert_int_equal(tbe_report_summary(an, &o, &txt, &n), 0);
    assert_non_null(strstr(txt, "--steps nvtx:train_step"));
    if (f == TBE_REPORT_TABLE)
      assert_non_null(strstr(txt, "The NVTX range \"train_step\" looks like the iteration (5 times "
                                  "at the top of one host thread"));
    if (f == TBE_REPORT_JSON) {
      char err[256];
      yajl_val v = yajl_tree_parse(txt, err, sizeof err);
      assert_non_null(v);
      const char *pc[] = {"step_hint", "count", NULL};
      yajl_val c = yajl_tree_get(v, pc, yajl_t_number);
      assert_non_null(c);
      assert_int_equal(YAJL_GET_INTEGER(c), 5);
      yajl_tree_free(v);
    }
    tbe_report_free(txt, n, NULL);
  }
  tbe_analysis_free(an);
  tbe_trace_free(t);

  /* Equal counts: the longer total wins; a name that needs quoting is
   * quoted in the flag. */
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_THREAD, 1, 1, -1, &h1), 0);
  for (int i = 0; i < 4; i++) {
    add(t, h1, TBE_EV_USER_ANNOTATION, "opt step", i * 10000, 2000, 0, NULL);
    add(t, h1, TBE_EV_USER_ANNOTATION, "a", i * 10000 + 3000, 1500, 0, NULL);
  }
  an = analyse(t);
  assert_string_equal(an->step_hint, "opt step");
  assert_int_equal(an->step_hint_kind, TBE_EV_USER_ANNOTATION);
  {
    tbe_report_options o;
    tbe_report_options_init(&o);
    o.width = 1000;
    char *txt;
    size_t n;
    assert_int_equal(tbe_report_summary(an, &o, &txt, &n), 0);
    assert_non_null(strstr(txt, "--steps 'nvtx:opt step'"));
    assert_non_null(strstr(txt, "The user annotation \"opt step\""));
    tbe_report_free(txt, n, NULL);
  }
  tbe_analysis_free(an);
  tbe_trace_free(t);

  /* No hint: a range seen once; too little time; a trace with steps. */
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_THREAD, 1, 1, -1, &h1), 0);
  add(t, h1, TBE_EV_NVTX_RANGE, "main", 0, 100000, 0, &nv);
  add(t, h1, TBE_EV_NVTX_RANGE, "tick", 200000, 100, 0, &nv);
  add(t, h1, TBE_EV_NVTX_RANGE, "tick", 300000, 100, 0, &nv);
  an = analyse(t);
  assert_null(an->step_hint);
  tbe_analysis_free(an);
  tbe_trace_free(t);
  t = build(10000, 0);
  an = analyse(t);
  assert_null(an->step_hint);
  tbe_analysis_free(an);
  tbe_trace_free(t);
}

/* ---- runs of several hosts ---- */

static const tbe_name_stats *find_label(const tbe_analysis *an, tbe_group_kind g, const char *l) {
  for (size_t i = 0; i < an->ngroups[g]; i++)
    if (strcmp(an->groups[g][i].label, l) == 0) return &an->groups[g][i];
  return NULL;
}

/* Two hosts: names merged (calls, totals, min, max), steps matched by
 * number (the slowest host's time, sums per name), sums of the device
 * figures, the slowest and fastest by median step time; the order of the
 * hosts given does not matter. */
static void test_run_two_hosts(void **state) {
  (void)state;
  static const int64_t sa[4] = {100000, 110000, 120000, 130000}, sb[3] = {90000, 140000, 80000};
  static const int64_t ka[4] = {10000, 20000, 30000, 40000}, kb[3] = {5000, 6000, 7000};
  static const int64_t only[4] = {1000, 1000, 1000, 1000};
  const char *na[2] = {"gemm", "only_a"}, *nb[1] = {"gemm"};
  const int64_t *da[2] = {ka, only}, *db[1] = {kb};
  tbe_trace *ta = steps_trace(100, "a", T0, 4, sa, 2, na, da);
  tbe_trace *tb = steps_trace(200, "b", T0 + 5000, 3, sb, 1, nb, db);
  tbe_analysis *an[2];
  assert_int_equal(tbe_analysis_create(&an[0], ta, NULL), 0);
  assert_int_equal(tbe_analysis_create(&an[1], tb, NULL), 0);
  assert_int_equal(an[0]->pid, 100);
  assert_string_equal(an[1]->host, "b");
  for (int order = 0; order < 2; order++) {
    tbe_analysis *given[2] = {an[order], an[1 - order]};
    const char *labels[2] = {order ? "b" : "a", order ? "a" : "b"};
    tbe_run_analysis *r;
    assert_int_equal(tbe_run_analysis_create(&r, given, labels, 2, NULL), 0);
    assert_int_equal(r->nhosts, 2);
    assert_false(r->by_rank);
    assert_string_equal(r->hosts[0].label, "a");
    assert_true(r->hosts[0].an == an[0]);
    assert_int_equal(r->hosts[0].index, (size_t)order);
    const tbe_analysis *t = r->total;
    assert_null(t->trace);
    const tbe_name_stats *g = find_label(t, TBE_GROUP_KERNEL, "gemm");
    assert_non_null(g);
    assert_int_equal(g->calls, 7);
    assert_int_equal(g->total_ns, 100000 + 18000);
    assert_int_equal(g->min_ns, 5000);
    assert_int_equal(g->max_ns, 40000);
    const tbe_name_stats *oa = find_label(t, TBE_GROUP_KERNEL, "only_a");
    assert_non_null(oa);
    assert_int_equal(oa->calls, 4);
    assert_int_equal(t->ngroups[TBE_GROUP_KERNEL], 2);
    assert_int_equal(t->all.kernel_count, 4 + 4 + 3);
    assert_int_equal(t->all.kernel_ns, an[0]->all.kernel_ns + an[1]->all.kernel_ns);
    assert_int_equal(t->all.busy_ns, an[0]->all.busy_ns + an[1]->all.busy_ns);
    assert_int_equal(t->all.wall_ns, an[0]->wall_ns + an[1]->wall_ns);
    assert_int_equal(t->all.launch_median_ns, -1);
    assert_int_equal(t->ndevices, 0);
    /* Window: a from T0, b from 5 us to 275 us. */
    assert_int_equal(t->start_ns, T0);
    assert_int_equal(t->wall_ns, 395000); /* a's last operator ends at 330 + 65 us */
    /* Steps 1..3 are common: max and min of the two hosts. */
    assert_int_equal(t->nsteps, 3);
    assert_int_equal(t->steps[0].dur_ns, 100000);
    assert_int_equal(r->step_fastest_ns[0], 90000);
    assert_int_equal(t->steps[1].dur_ns, 140000);
    assert_int_equal(t->steps[2].dur_ns, 120000);
    assert_int_equal(r->step_fastest_ns[2], 80000);
    assert_int_equal(t->steps[1].kernel_ns, 20000 + 1000 + 6000);
    assert_int_equal(t->steps[1].kernel_count, 3);
    assert_non_null(g->step_ns);
    assert_int_equal(g->step_ns[0], 15000);
    assert_int_equal(g->step_ns[2], 37000);
    assert_int_equal(oa->step_ns[1], 1000);
    assert_int_equal(t->step_dist.median_ns, 120000);
    /* Medians: a 115 us, b 90 us. */
    assert_int_equal(r->figure, TBE_RUN_BY_STEP_MEDIAN);
    assert_string_equal(r->hosts[r->slowest].label, "a");
    assert_string_equal(r->hosts[r->fastest].label, "b");
    assert_int_equal(r->slowest_ns, 115000);
    assert_int_equal(r->fastest_ns, 90000);
    assert_int_equal(r->spread_ns, 25000);
    tbe_run_analysis_free(r);
  }
  /* One host: the run is that host. */
  tbe_run_analysis *r1;
  assert_int_equal(tbe_run_analysis_create(&r1, &an[1], NULL, 1, NULL), 0);
  assert_true(r1->total == an[1]);
  assert_string_equal(r1->hosts[0].label, "b"); /* the trace's host */
  assert_int_equal(r1->slowest, -1);
  assert_int_equal(r1->figure, TBE_RUN_BY_NONE);
  tbe_run_analysis_free(r1);
  assert_int_equal(tbe_run_analysis_create(&r1, an, NULL, 0, NULL), TBE_EINVAL);
  assert_int_equal(tbe_run_analysis_create(NULL, an, NULL, 1, NULL), TBE_EINVAL);
  tbe_run_analysis_free(NULL);
  for (int i = 0; i < 2; i++) tbe_analysis_free(an[i]);
  tbe_trace_free(ta);
  tbe_trace_free(tb);
}

/* Several hosts: processes of one host ordered by pid (the _pid suffix is
 * not part of the host name), ranks when every host has a distinct one;
 * without steps on every host the wall time decides; no common step
 * numbers; the step hint most hosts share. */
static void test_run_several_hosts(void **state) {
  (void)state;
  static const int64_t s3[3] = {10000, 10000, 10000}, s2[2] = {50000, 50000}, k3[3] = {1000, 1000, 1000};
  const char *kn[1] = {"k"};
  const int64_t *kd[1] = {k3};
  tbe_trace *tr[5];
  tbe_analysis *an[5];
  tr[0] = steps_trace(10, "n", T0, 3, s3, 1, kn, kd);
  tr[1] = steps_trace(9, "n", T0, 3, s3, 1, kn, kd);
  tr[2] = steps_trace(3, "m", T0, 2, s2, 1, kn, kd);
  tr[3] = steps_trace(10, "n", T0, 3, s3, 1, kn, kd);
  tr[4] = steps_trace(4, "z", T0, 0, NULL, 0, NULL, NULL); /* no steps, 0 wall */
  for (int i = 0; i < 5; i++) assert_int_equal(tbe_analysis_create(&an[i], tr[i], NULL), 0);
  const char *labels[5] = {"n_pid10", "n_pid9", "m_pid3", "n_pid10_2", "z"};
  tbe_run_analysis *r;
  assert_int_equal(tbe_run_analysis_create(&r, an, labels, 5, NULL), 0);
  const char *want[5] = {"m_pid3", "n_pid9", "n_pid10", "n_pid10_2", "z"};
  for (int i = 0; i < 5; i++) assert_string_equal(r->hosts[i].label, want[i]);
  assert_int_equal(r->total->nsteps, 0); /* z has none */
  assert_null(r->total->groups[TBE_GROUP_KERNEL][0].step_ns);
  assert_int_equal(r->total->groups[TBE_GROUP_KERNEL][0].calls, 11);
  assert_int_equal(r->figure, TBE_RUN_BY_WALL);
  assert_string_equal(r->hosts[r->slowest].label, "m_pid3"); /* 100 us */
  assert_string_equal(r->hosts[r->fastest].label, "z");
  /* Reports of a run in every format: JSON parses, tables fit. */
  for (int f = 0; f < 4; f++) {
    tbe_report_options o;
    tbe_report_options_init(&o);
    o.format = f;
    o.label[0] = "several";
    char *txt;
    size_t n;
    o.width = 1000;
    assert_int_equal(tbe_report_run(r, &o, &txt, &n), 0);
    assert_int_equal(strlen(txt), n);
    assert_non_null(strstr(txt, f == TBE_REPORT_MARKDOWN ? "n\\_pid10\\_2" : "n_pid10_2"));
    if (f == TBE_REPORT_TABLE) {
      assert_non_null(strstr(txt, "slowest m_pid3, fastest z by wall time"));
      assert_non_null(strstr(txt, "4 of 5 hosts have steps, but no step number is common to all"));
    }
    if (f == TBE_REPORT_JSON) {
      char err[256];
      yajl_val v = yajl_tree_parse(txt, err, sizeof err);
      assert_non_null(v);
      const char *ph[] = {"hosts", NULL}, *pf[] = {"figure", NULL};
      yajl_val hv = yajl_tree_get(v, ph, yajl_t_array);
      assert_non_null(hv);
      assert_int_equal(YAJL_GET_ARRAY(hv)->len, 5);
      assert_string_equal(YAJL_GET_STRING(yajl_tree_get(v, pf, yajl_t_string)), "wall");
      yajl_tree_free(v);
    }
    tbe_report_free(txt, n, NULL);
  }
  tbe_run_analysis_free(r);
  /* Distinct ranks order the hosts; a shared rank does not. */
  for (int i = 0; i < 4; i++) {
    tr[i]->rank = 3 - i;
    tr[i]->world_size = 4;
    tbe_analysis_free(an[i]);
    assert_int_equal(tbe_analysis_create(&an[i], tr[i], NULL), 0);
  }
  assert_int_equal(tbe_run_analysis_create(&r, an, labels, 4, NULL), 0);
  assert_true(r->by_rank);
  for (int i = 0; i < 4; i++) assert_int_equal(r->hosts[i].an->rank, i);
  assert_int_equal(r->total->nsteps, 2); /* m_pid3 has steps 1 and 2 */
  assert_int_equal(r->figure, TBE_RUN_BY_STEP_MEDIAN);
  tbe_run_analysis_free(r);
  tr[1]->rank = 3;
  tbe_analysis_free(an[1]);
  assert_int_equal(tbe_analysis_create(&an[1], tr[1], NULL), 0);
  assert_int_equal(tbe_run_analysis_create(&r, an, labels, 4, NULL), 0);
  assert_false(r->by_rank);
  tbe_run_analysis_free(r);
  /* The step hint most hosts share. */
  tbe_trace *ht[3];
  tbe_analysis *ha[3];
  tbe_nvtx nv;
  memset(&nv, 0, sizeof nv);
  for (int h = 0; h < 3; h++) {
    assert_int_equal(tbe_trace_create(&ht[h], NULL), 0);
    uint32_t th;
    assert_int_equal(tbe_trace_track(ht[h], TBE_TRACK_THREAD, h, h, -1, &th), 0);
    for (int i = 0; i < 4 + h; i++)
      add(ht[h], th, TBE_EV_NVTX_RANGE, h == 2 ? "other" : "iter", i * 1000, 900, 0, &nv);
    ha[h] = analyse(ht[h]);
  }
  const char *hl[3] = {"h0", "h1", "h2"};
  assert_int_equal(tbe_run_analysis_create(&r, ha, hl, 3, NULL), 0);
  assert_string_equal(r->total->step_hint, "iter");
  assert_int_equal(r->hint_hosts, 2);
  assert_int_equal(r->total->step_hint_count, 4); /* h0's figures */
  {
    tbe_report_options o;
    tbe_report_options_init(&o);
    o.width = 1000;
    char *txt;
    size_t n;
    assert_int_equal(tbe_report_run(r, &o, &txt, &n), 0);
    assert_non_null(strstr(txt, "(on 2 of 3 hosts; h0: 4 times at the top of one host thread"));
    assert_non_null(strstr(txt, "--steps nvtx:iter"));
    tbe_report_free(txt, n, NULL);
  }
  tbe_run_analysis_free(r);
  for (int h = 0; h < 3; h++) {
    tbe_analysis_free(ha[h]);
    tbe_trace_free(ht[h]);
  }
  for (int i = 0; i < 5; i++) {
    tbe_analysis_free(an[i]);
    tbe_trace_free(tr[i]);
  }
}

/* Two runs compared: totals as two traces are, hosts matched by name (the
 * processes of one host in pid order, whatever their pids), by rank when
 * both runs have distinct ranks, and hosts on one side only. */
static void test_run_diff(void **state) {
  (void)state;
  static const int64_t s0[6] = {100000, 101000, 99000, 100500, 100200, 99800};
  int64_t s1[6], k0[6], k1[6];
  for (int i = 0; i < 6; i++) {
    s1[i] = s0[i] * 3 / 2;
    k0[i] = 20000;
    k1[i] = 30000;
  }
  const char *kn[1] = {"k"};
  const int64_t *d0[1] = {k0}, *d1[1] = {k1};
  /* base: x_pid5, x_pid7, y; new: x_pid20 (slower), x_pid30 (same), w */
  tbe_trace *tb[3] = {steps_trace(5, "x", T0, 6, s0, 1, kn, d0), steps_trace(7, "x", T0, 6, s0, 1, kn, d0),
                      steps_trace(8, "y", T0, 6, s0, 1, kn, d0)};
  tbe_trace *tn[3] = {steps_trace(20, "x", T0, 6, s1, 1, kn, d1), steps_trace(30, "x", T0, 6, s0, 1, kn, d0),
                      steps_trace(9, "w", T0, 6, s0, 1, kn, d0)};
  tbe_analysis *ab[3], *an[3];
  for (int i = 0; i < 3; i++) {
    assert_int_equal(tbe_analysis_create(&ab[i], tb[i], NULL), 0);
    assert_int_equal(tbe_analysis_create(&an[i], tn[i], NULL), 0);
  }
  const char *lb[3] = {"x_pid5", "x_pid7", "y"}, *ln[3] = {"x_pid30", "x_pid20", "w"};
  tbe_analysis *an_given[3] = {an[1], an[0], an[2]};
  tbe_run_analysis *rb, *rn;
  assert_int_equal(tbe_run_analysis_create(&rb, ab, lb, 3, NULL), 0);
  assert_int_equal(tbe_run_analysis_create(&rn, an_given, ln, 3, NULL), 0);
  tbe_run_diff *d;
  assert_int_equal(tbe_run_diff_create(&d, rb, rn, NULL), 0);
  assert_false(d->by_rank);
  assert_int_equal(d->matched, 2);
  assert_int_equal(d->only[0], 1);
  assert_int_equal(d->only[1], 1);
  assert_int_equal(d->nhosts, 4);
  /* x_pid5 pairs with x_pid20 (lower pids first), and its steps slowed. */
  const tbe_host_diff *p = &d->hosts[0];
  assert_string_equal(rb->hosts[p->host[0]].label, "x_pid5");
  assert_string_equal(rn->hosts[p->host[1]].label, "x_pid20");
  assert_int_equal(p->steps.verdict, TBE_NOISE_BEYOND);
  assert_int_equal(p->kernel_ns[1] - p->kernel_ns[0], 6 * 10000);
  p = &d->hosts[1];
  assert_string_equal(rn->hosts[p->host[1]].label, "x_pid30");
  assert_int_equal(p->steps.verdict, TBE_NOISE_WITHIN);
  assert_string_equal(rb->hosts[d->hosts[2].host[0]].label, "y");
  assert_int_equal(d->hosts[2].host[1], -1);
  assert_string_equal(rn->hosts[d->hosts[3].host[1]].label, "w");
  assert_int_equal(d->hosts[3].host[0], -1);
  /* Totals: kernel time 18 x 20 us -> 12 x 20 + 6 x 30 us. */
  assert_int_equal(d->total->kernel_ns[0], 18 * 20000);
  assert_int_equal(d->total->kernel_ns[1], 12 * 20000 + 6 * 30000);
  assert_int_equal(d->total->steps.verdict, TBE_NOISE_BEYOND); /* slowest host per step */
  for (int f = 0; f < 4; f++) {
    tbe_report_options o;
    tbe_report_options_init(&o);
    o.format = f;
    char *txt;
    size_t n;
    assert_int_equal(tbe_report_run_diff(d, &o, &txt, &n), 0);
    assert_non_null(strstr(txt, f == TBE_REPORT_MARKDOWN ? "x\\_pid20" : "x_pid20"));
    if (f == TBE_REPORT_TABLE) {
      assert_non_null(strstr(txt, "Hosts: 2 matched by host name, 1 only in base (-), 1 only in new (+)"));
      assert_non_null(strstr(txt, "x_pid5 -> x_pid20"));
      size_t col = 0;
      for (size_t i = 0; i < n; i++) {
        col = txt[i] == '\n' ? 0 : col + 1;
        assert_true(col <= 100);
      }
    }
    if (f == TBE_REPORT_JSON) {
      char err[256];
      yajl_val v = yajl_tree_parse(txt, err, sizeof err);
      assert_non_null(v);
      const char *ph[] = {"hosts", NULL};
      assert_int_equal(YAJL_GET_ARRAY(yajl_tree_get(v, ph, yajl_t_array))->len, 4);
      yajl_tree_free(v);
    }
    tbe_report_free(txt, n, NULL);
  }
  tbe_run_diff_free(d);
  tbe_run_analysis_free(rb);
  tbe_run_analysis_free(rn);
  /* By rank: the ranks decide, not the names. */
  for (int i = 0; i < 3; i++) {
    tb[i]->rank = i;
    tn[i]->rank = 2 - i;
    tb[i]->world_size = tn[i]->world_size = 3;
    tbe_analysis_free(ab[i]);
    tbe_analysis_free(an[i]);
    assert_int_equal(tbe_analysis_create(&ab[i], tb[i], NULL), 0);
    assert_int_equal(tbe_analysis_create(&an[i], tn[i], NULL), 0);
  }
  const char *ln2[3] = {"x_pid20", "x_pid30", "w"};
  assert_int_equal(tbe_run_analysis_create(&rb, ab, lb, 3, NULL), 0);
  assert_int_equal(tbe_run_analysis_create(&rn, an, ln2, 3, NULL), 0);
  assert_int_equal(tbe_run_diff_create(&d, rb, rn, NULL), 0);
  assert_true(d->by_rank);
  assert_int_equal(d->matched, 3);
  for (size_t i = 0; i < 3; i++)
    assert_int_equal(rb->hosts[d->hosts[i].host[0]].an->rank, rn->hosts[d->hosts[i].host[1]].an->rank);
  /* rank 2: base y, new x_pid20 (the slow one) */
  assert_string_equal(rn->hosts[d->hosts[2].host[1]].label, "x_pid20");
  tbe_run_diff_free(d);
  /* One host on each side: the plain diff, to the byte. */
  tbe_run_analysis *o1, *o2;
  assert_int_equal(tbe_run_analysis_create(&o1, &ab[0], NULL, 1, NULL), 0);
  assert_int_equal(tbe_run_analysis_create(&o2, &an[0], NULL, 1, NULL), 0);
  assert_int_equal(tbe_run_diff_create(&d, o1, o2, NULL), 0);
  tbe_diff *plain;
  assert_int_equal(tbe_diff_create(&plain, ab[0], an[0], NULL), 0);
  for (int f = 0; f < 4; f++) {
    tbe_report_options o;
    tbe_report_options_init(&o);
    o.format = f;
    char *x, *y;
    size_t nx, ny;
    assert_int_equal(tbe_report_run_diff(d, &o, &x, &nx), 0);
    assert_int_equal(tbe_report_diff(plain, &o, &y, &ny), 0);
    assert_int_equal(nx, ny);
    assert_memory_equal(x, y, nx);
    tbe_report_free(x, nx, NULL);
    tbe_report_free(y, ny, NULL);
    assert_int_equal(tbe_report_run(o1, &o, &x, &nx), 0);
    assert_int_equal(tbe_report_summary(ab[0], &o, &y, &ny), 0);
    assert_int_equal(nx, ny);
    assert_memory_equal(x, y, nx);
    tbe_report_free(x, nx, NULL);
    tbe_report_free(y, ny, NULL);
  }
  tbe_diff_free(plain);
  tbe_run_diff_free(d);
  tbe_run_analysis_free(o1);
  tbe_run_analysis_free(o2);
  tbe_run_analysis_free(rb);
  tbe_run_analysis_free(rn);
  for (int i = 0; i < 3; i++) {
    tbe_analysis_free(ab[i]);
    tbe_analysis_free(an[i]);
    tbe_trace_free(tb[i]);
    tbe_trace_free(tn[i]);
  }
}

/* ---- golden Kineto traces, against an independent scan of the JSON ---- */

typedef struct kname {
  char *name;
  int64_t total_ns;
  uint64_t calls;
} kname;

typedef struct kscan {
  kname *v;
  size_t n;
  int64_t total;
  uint64_t calls;
} kscan;

static const char *jstr(yajl_val v) {
  const char *s = v && YAJL_IS_STRING(v) ? v->u.string : NULL;
  return s ? s : "";
}

static void scan_kernels(const char *path, kscan *out) {
  memset(out, 0, sizeof *out);
  size_t len;
  char *text = (char *)tu_read_file(path, &len);
  assert_non_null(text);
  char err[256];
  yajl_val root = yajl_tree_parse(text, err, sizeof err);
  assert_non_null(root);
  const char *p_events[] = {"traceEvents", NULL};
  yajl_val evs = yajl_tree_get(root, p_events, yajl_t_array);
  assert_non_null(evs);
  out->v = calloc(YAJL_GET_ARRAY(evs)->len + 1, sizeof *out->v);
  for (size_t i = 0; i < YAJL_GET_ARRAY(evs)->len; i++) {
    yajl_val e = YAJL_GET_ARRAY(evs)->values[i];
    const char *pc[] = {"cat", NULL}, *pn[] = {"name", NULL}, *pd[] = {"dur", NULL},
               *pp[] = {"ph", NULL};
    yajl_val cat = yajl_tree_get(e, pc, yajl_t_string), ph = yajl_tree_get(e, pp, yajl_t_string);
    if (strcmp(jstr(cat), "kernel") != 0 || strcmp(jstr(ph), "X") != 0) continue;
    yajl_val nv = yajl_tree_get(e, pn, yajl_t_string);
    assert_non_null(nv);
    const char *name = jstr(nv);
    yajl_val dv = yajl_tree_get(e, pd, yajl_t_number);
    assert_non_null(dv);
    int64_t ns = llround(YAJL_GET_DOUBLE(dv) * 1000.0);
    size_t j = 0;
    while (j < out->n && strcmp(out->v[j].name, name) != 0) j++;
    if (j == out->n) out->v[out->n++].name = strdup(name);
    out->v[j].total_ns += ns;
    out->v[j].calls++;
    out->total += ns;
    out->calls++;
  }
  yajl_tree_free(root);
  free(text);
}

static void scan_free(kscan *s) {
  for (size_t i = 0; i < s->n; i++) free(s->v[i].name);
  free(s->v);
}

static const kname *scan_find(const kscan *s, const char *name) {
  for (size_t i = 0; i < s->n; i++)
    if (strcmp(s->v[i].name, name) == 0) return &s->v[i];
  return NULL;
}

static tbe_trace *import_golden(const char *rel) {
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  tbe_import_error err;
  int rc = tbe_import_file(t, tu_data(rel), NULL, &err);
  if (rc) fprintf(stderr, "%s\n", err.message);
  assert_int_equal(rc, 0);
  return t;
}

static void check_golden(const char *rel) {
  tbe_trace *t = import_golden(rel);
  kscan ks;
  scan_kernels(tu_data(rel), &ks);
  tbe_analysis *an;
  assert_int_equal(tbe_analysis_create(&an, t, NULL), 0);
  assert_int_equal(an->all.kernel_count, ks.calls);
  assert_int_equal(an->ngroups[TBE_GROUP_KERNEL], ks.n);
  /* Each event's duration is rounded to 1 ns at most once on each side. */
  assert_true(llabs(an->all.kernel_ns - ks.total) <= (long long)ks.calls);
  for (size_t i = 0; i < an->ngroups[TBE_GROUP_KERNEL]; i++) {
    const tbe_name_stats *e = &an->groups[TBE_GROUP_KERNEL][i];
    const kname *k = scan_find(&ks, tbe_trace_str(t, e->name));
    assert_non_null(k);
    assert_int_equal(e->calls, k->calls);
    assert_true(llabs(e->total_ns - k->total_ns) <= (long long)k->calls);
  }
  /* Busy time is at most the kernel + copy + memset sum and at least the
   * longest single kernel; steps ProfilerStep#2..#4. */
  assert_true(an->all.busy_ns <= an->all.kernel_ns + an->all.memset_ns + an->all.memcpy_ns[1] +
                                     an->all.memcpy_ns[2] + an->all.memcpy_ns[8]);
  assert_true(an->all.busy_ns >= an->groups[TBE_GROUP_KERNEL][0].max_ns);
  assert_int_equal(an->nsteps, 3);
  assert_true(an->all.launch_samples > 0);
  scan_free(&ks);
  tbe_analysis_free(an);
  tbe_trace_free(t);
}

static void test_golden_fp32(void **state) {
  (void)state;
  check_golden("kineto/h200_cnn_fp32.pt.trace.json");
}

static void test_golden_bf16(void **state) {
  (void)state;
  check_golden("kineto/h200_cnn_bf16.pt.trace.json");
}

/* 200 launches of a 1024-float add: the textbook launch-bound loop. */
static void test_golden_add_loop(void **state) {
  (void)state;
  const char *rel = "kineto/h200_add_loop.trace.json";
  tbe_trace *t = import_golden(rel);
  kscan ks;
  scan_kernels(tu_data(rel), &ks);
  tbe_analysis *an;
  assert_int_equal(tbe_analysis_create(&an, t, NULL), 0);
  assert_int_equal(an->all.kernel_count, 200);
  assert_int_equal(ks.calls, 200);
  assert_true(llabs(an->all.kernel_ns - ks.total) <= 200);
  assert_int_equal(an->all.short_kernels, 200);
  assert_true(has_advice(an, TBE_ADVICE_LAUNCH_BOUND));
  assert_true(has_advice(an, TBE_ADVICE_SHORT_KERNELS));
  assert_int_equal(an->all.launch_samples, 200);
  /* Every kernel runs after its launch: the median latency is positive
   * and below the profiled window. */
  assert_true(an->all.launch_median_ns > 0 && an->all.launch_median_ns < an->wall_ns);
  tbe_analysis_free(an);
  /* The same run with the range profiler's figures: its host time is the
   * profiler's replays, so no launch-bound verdict; the short kernels
   * still. */
  tbe_str kn, metric;
  assert_int_equal(tbe_trace_intern(t, "k", 1, &kn), 0);
  assert_int_equal(tbe_trace_intern(t, "sm_throughput_pct", 17, &metric), 0);
  tbe_metric_value mv = {.metric = metric, .value = 1.0};
  assert_int_equal(tbe_trace_add_kernel_metrics(t, kn, 0, 3, &mv, 1), 0);
  assert_int_equal(tbe_analysis_create(&an, t, NULL), 0);
  assert_false(has_advice(an, TBE_ADVICE_LAUNCH_BOUND));
  assert_true(has_advice(an, TBE_ADVICE_SHORT_KERNELS));
  scan_free(&ks);
  tbe_analysis_free(an);
  tbe_trace_free(t);
}

/* GPU idle most of the wall, the traced host work under a fifth of it:
 * the collected bf16 GPT loop (GPU 20%, its busiest thread's CUDA calls
 * and operators 10%: Python between them).  Not the launch-bound add loop
 * (its host is busy), nor the fp32 loop (its GPU is busy), nor a trace
 * whose host side has no CUDA calls. */
static void test_golden_untraced(void **state) {
  (void)state;
  static const struct {
    const char *rel;
    int want;
  } cases[] = {{"collected/gpt_bf16.xplane.pb", 1},
               {"collected/gpt_fp32.xplane.pb", 0},
               {"kineto/h200_add_loop.trace.json", 0},
               {"kineto/h200_cnn_bf16.pt.trace.json", 0}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tbe_trace *t = import_golden(cases[i].rel);
    tbe_analysis *an;
    assert_int_equal(tbe_analysis_create(&an, t, NULL), 0);
    double gpu = 100.0 * (double)an->all.busy_ns / (double)an->wall_ns;
    double host = 100.0 * (double)an->host_busy_ns / (double)an->wall_ns;
    int has = has_advice(an, TBE_ADVICE_UNTRACED);
    if (has != cases[i].want)
      print_message("%s: GPU %.1f%%, host %.1f%%, advice %d\n", cases[i].rel, gpu, host, has);
    assert_int_equal(has, cases[i].want);
    for (size_t k = 0; k < an->nadvice; k++)
      if (an->advice[k].kind == TBE_ADVICE_UNTRACED) {
        assert_true(fabs(an->advice[k].figure - (100.0 - gpu)) < 1e-9);
        assert_non_null(strstr(an->advice[k].text, "outside what was traced"));
      }
    tbe_analysis_free(an);
    tbe_trace_free(t);
  }
}

static void test_golden_diff(void **state) {
  (void)state;
  const char *fa = "kineto/h200_cnn_fp32.pt.trace.json", *fb = "kineto/h200_cnn_bf16.pt.trace.json";
  tbe_trace *a = import_golden(fa);
  tbe_trace *b = import_golden(fb);
  kscan sa, sb;
  scan_kernels(tu_data(fa), &sa);
  scan_kernels(tu_data(fb), &sb);
  size_t only_a = 0, only_b = 0;
  for (size_t i = 0; i < sa.n; i++) only_a += scan_find(&sb, sa.v[i].name) == NULL;
  for (size_t i = 0; i < sb.n; i++) only_b += scan_find(&sa, sb.v[i].name) == NULL;
  assert_true(only_a > 0 && only_b > 0); /* bf16 runs other kernels */
  tbe_analysis *aa, *ab;
  assert_int_equal(tbe_analysis_create(&aa, a, NULL), 0);
  assert_int_equal(tbe_analysis_create(&ab, b, NULL), 0);
  tbe_diff *d;
  assert_int_equal(tbe_diff_create(&d, aa, ab, NULL), 0);
  /* bf16 replaced most of fp32's kernels (conv, GEMM, elementwise in
   * another precision): each pair one entry, the rest added or removed. */
  size_t rep = d->replaced[TBE_GROUP_KERNEL];
  assert_true(rep >= 10);
  assert_int_equal(d->removed[TBE_GROUP_KERNEL] + rep, only_a);
  assert_int_equal(d->added[TBE_GROUP_KERNEL] + rep, only_b);
  int64_t s0 = 0, s1 = 0, sd = 0;
  for (size_t i = 0; i < d->nentries[TBE_GROUP_KERNEL]; i++) {
    const tbe_diff_entry *e = &d->entries[TBE_GROUP_KERNEL][i];
    int in_a = scan_find(&sa, e->name) != NULL, in_b = scan_find(&sb, e->name) != NULL;
    if (e->replaced_by) {
      /* a name only in fp32 and one only in bf16, of one class, launched
       * by one operator */
      assert_true(in_a && !in_b);
      assert_true(scan_find(&sb, e->replaced_by) && !scan_find(&sa, e->replaced_by));
      assert_int_equal(tbe_kernel_class_of(e->name), tbe_kernel_class_of(e->replaced_by));
      const tbe_name_stats *ka = find(aa, TBE_GROUP_KERNEL, e->name);
      const tbe_name_stats *kb = find(ab, TBE_GROUP_KERNEL, e->replaced_by);
      assert_non_null(ka);
      assert_non_null(kb);
      assert_non_null(ka->launch_op);
      assert_string_equal(ka->launch_op, kb->launch_op);
      assert_int_equal(e->total_ns[0], ka->total_ns);
      assert_int_equal(e->total_ns[1], kb->total_ns);
      assert_int_equal(e->present, 3);
    } else {
      assert_int_equal(e->present, (in_a ? 1 : 0) | (in_b ? 2 : 0));
    }
    s0 += e->total_ns[0];
    s1 += e->total_ns[1];
    sd += e->delta_ns;
    if (i > 0) {
      int64_t p = d->entries[TBE_GROUP_KERNEL][i - 1].delta_ns;
      assert_true(llabs(p) >= llabs(e->delta_ns));
    }
  }
  assert_int_equal(s0, aa->all.kernel_ns);
  assert_int_equal(s1, ab->all.kernel_ns);
  assert_int_equal(sd, s1 - s0);
  assert_int_equal(d->nsteps[0], 3);
  assert_int_equal(d->nsteps[1], 3);
  /* Three profiled steps a side: too few to judge, and the report says so. */
  assert_int_equal(d->steps.verdict, TBE_NOISE_TOO_FEW);
  tbe_report_options o;
  tbe_report_options_init(&o);
  char *txt;
  size_t tl;
  assert_int_equal(tbe_report_diff(d, &o, &txt, &tl), 0);
  assert_non_null(strstr(txt, "3 and 3 steps are too few to judge"));
  tbe_report_free(txt, tl, NULL);
  tbe_diff_free(d);
  tbe_analysis_free(aa);
  tbe_analysis_free(ab);
  scan_free(&sa);
  scan_free(&sb);
  tbe_trace_free(a);
  tbe_trace_free(b);
}

/* ---- the gate (tbe_gate_parse, tbe_gate_eval, tbe_gate_describe) ---- */

static void expect_parse_error(const char *text, const char *why) {
  tbe_gate g;
  char err[512];
  int rc = tbe_gate_parse(&g, text, err, sizeof err);
  if (rc != TBE_EPARSE || !strstr(err, why))
    fail_msg("'%s': rc %d, '%s', want '%s'", text, rc, err, why);
}

static void test_gate_parse(void **state) {
  (void)state;
  tbe_gate g;
  char err[512];
  assert_int_equal(tbe_gate_parse(&g, "step_median > +5%", err, sizeof err), 0);
  assert_int_equal(g.figure, TBE_GATE_STEP_MEDIAN);
  assert_true(g.above && !g.or_equal && g.unit == TBE_GATE_PCT && g.threshold == 5.0);
  assert_string_equal(g.text, "step_median > +5%");
  assert_int_equal(tbe_gate_parse(&g, "  gpu_busy<=-3.5pp ", err, sizeof err), 0);
  assert_true(g.figure == TBE_GATE_GPU_BUSY && !g.above && g.or_equal);
  assert_true(g.unit == TBE_GATE_POINTS && g.threshold == -3.5);
  assert_string_equal(g.text, "gpu_busy<=-3.5pp");
  assert_int_equal(tbe_gate_parse(&g, "kernel:gemm<float> > +2ms", err, sizeof err), 0);
  assert_true(g.figure == TBE_GATE_KERNEL && g.unit == TBE_GATE_NS && g.threshold == 2e6);
  assert_string_equal(g.name, "gemm<float>");
  assert_int_equal(tbe_gate_parse(&g, "class:gemm > 5%", err, sizeof err), 0); /* no sign: + */
  assert_true(g.figure == TBE_GATE_CLASS && g.kclass == TBE_KCLASS_GEMM && g.threshold == 5.0);
  assert_int_equal(tbe_gate_parse(&g, "op:aten::mm >= -10%", err, sizeof err), 0);
  assert_true(g.figure == TBE_GATE_OP && g.above && g.or_equal && g.threshold == -10.0);
  assert_string_equal(g.name, "aten::mm");
  assert_int_equal(tbe_gate_parse(&g, "range:fwd < -250us", err, sizeof err), 0);
  assert_true(g.figure == TBE_GATE_RANGE && g.threshold == -250e3);
  assert_int_equal(tbe_gate_parse(&g, "kernel_time > 1s", err, sizeof err), 0);
  assert_true(g.figure == TBE_GATE_KERNEL_TIME && g.threshold == 1e9);
  expect_parse_error("", "expected a change at the end");
  expect_parse_error("step_median", "expected a change at the end");
  expect_parse_error("step_median > 5", "expected a change at the end");
  expect_parse_error("step_median > +5x", "expected a change at the end");
  expect_parse_error("step_median > +.%", "expected a change at the end");
  expect_parse_error("step_median 5%", "expected > , >= , < or <=");
  expect_parse_error("step_median = 5%", "expected > , >= , < or <=");
  expect_parse_error("> 5%", "no figure");
  expect_parse_error("stepmedian > 5%", "unknown figure 'stepmedian'");
  expect_parse_error("kernel: > 5%", "unknown figure 'kernel:'");
  expect_parse_error("class:gem > 5%", "unknown kernel class 'gem'");
  expect_parse_error("kernel:k > +1pp", "pp (percentage points) is for gpu_busy");
  expect_parse_error("gpu_busy > +1ms", "gpu_busy is a share");
  expect_parse_error("step_median > +5%\nx", "a control character");
  assert_int_equal(tbe_gate_parse(NULL, "x", NULL, 0), TBE_EINVAL);
}

/* Evaluates `text` on `d`: the outcome, and that the line says `says`. */
static tbe_gate_result gate(const tbe_diff *d, const char *text, uint32_t outcome,
                            const char *says) {
  tbe_gate g;
  char err[512], line[1024];
  assert_int_equal(tbe_gate_parse(&g, text, err, sizeof err), 0);
  tbe_gate_result r;
  assert_int_equal(tbe_gate_eval(&g, d, &r, NULL), 0);
  size_t n = tbe_gate_describe(&g, &r, line, sizeof line);
  assert_int_equal(n, strlen(line));
  if (r.outcome != outcome || !strstr(line, says))
    fail_msg("'%s': outcome %u, want %u; line '%s' lacks '%s'", text, r.outcome, outcome, line,
             says);
  return r;
}

/* Pairs built from steps of controlled durations: one that changed beyond
 * the steps' noise, one that changed within it, one that did not change,
 * one with too few steps, one without steps. */
static void test_gate(void **state) {
  (void)state;
  static const int64_t s0[8] = {100000, 102000, 98000, 101000, 99000, 103000, 97000, 100500};
  /* kW: two clusters; new moves one step from the low to the high one: its
   * median jumps +49% while the two samples overlap (within noise) */
  static const int64_t kw0[8] = {10000, 10100, 10200, 10300, 30000, 30100, 30200, 30300};
  static const int64_t kw1[8] = {10000, 10100, 10200, 30000, 30100, 30200, 30300, 30400};
  int64_t s1[8], ks0[8], ks1[8], ku[8];
  for (int i = 0; i < 8; i++) {
    s1[i] = s0[i] * 12 / 10;
    ks0[i] = s0[i] / 4;
    ks1[i] = s1[i] / 4;
    ku[i] = 5000 + 10 * i;
  }
  const char *names[3] = {"kS", "kU", "kW"};
  const int64_t *k0[3] = {ks0, ku, kw0}, *k1[3] = {ks1, ku, kw1};
  tbe_trace *a = steps_trace(1, "h", T0, 8, s0, 3, names, k0);
  tbe_trace *b = steps_trace(1, "h", T0, 8, s1, 3, names, k1);
  tbe_analysis *aa, *ab;
  assert_int_equal(tbe_analysis_create(&aa, a, NULL), 0);
  assert_int_equal(tbe_analysis_create(&ab, b, NULL), 0);
  tbe_diff *d;
  assert_int_equal(tbe_diff_create(&d, aa, ab, NULL), 0);
  /* Changed beyond noise: the step time +20%. */
  tbe_gate_result r = gate(d, "step_median > +5%", TBE_GATE_FIRE,
                           "step time (median) 100.250us -> 120.300us (+20.0%), > +5.0% and "
                           "beyond the steps' own noise (Mann-Whitney p < 0.001 over 8 and 8 "
                           "steps): FAILS");
  assert_true(r.per_step && r.value[0] == 100250 && r.value[1] == 120300);
  assert_int_equal(r.steps.verdict, TBE_NOISE_BEYOND);
  gate(d, "step_median >= +20%", TBE_GATE_FIRE, "FAILS");
  gate(d, "step_median > +25%", TBE_GATE_PASS, "(+20.0%), not > +25.0%: passes");
  gate(d, "step_median < -5%", TBE_GATE_PASS, "not < -5.0%: passes");
  gate(d, "step_median > +10us", TBE_GATE_FIRE, "(+20.050us), > +10.000us and beyond");
  gate(d, "step_median > +30us", TBE_GATE_PASS, "not > +30.000us");
  gate(d, "kernel:kS > +10%", TBE_GATE_FIRE, "kernel kS (1 in base, 1 in new)");
  gate(d, "kernel_time > +1us", TBE_GATE_FIRE, "kernel time per step (median)");
  gate(d, "class:other > +5%", TBE_GATE_FIRE, "other time per step (median)");
  gate(d, "class:gemm > +1%", TBE_GATE_PASS, "0ns -> 0ns (+0.0%), not > +1.0%");
  gate(d, "gpu_busy < -50pp", TBE_GATE_PASS, "GPU busy share per step (median)");
  /* Unchanged: kU's per-step times are the same on both sides. */
  gate(d, "kernel:kU > +1%", TBE_GATE_PASS, "(+0.0%), not > +1.0%: passes");
  gate(d, "kernel:kU >= +0%", TBE_GATE_NOISE,
       "within the steps' own noise (Mann-Whitney p = 1.000");
  /* Changed within noise: kW's median +49%, the samples overlap. */
  r = gate(d, "kernel:kW > +10%", TBE_GATE_NOISE, "> +10.0% but within the steps' own noise");
  assert_true(r.change > 40 && r.steps.p_value > 0.05);
  /* Patterns add their names step by step. */
  r = gate(d, "kernel:k? > +1000%", TBE_GATE_PASS, "kernels k? (3 in base, 3 in new)");
  assert_true(r.value[0] > 0);
  /* An unknown name. */
  tbe_gate g;
  tbe_gate_result rr;
  assert_int_equal(tbe_gate_parse(&g, "kernel:nope* > 1%", NULL, 0), 0);
  assert_int_equal(tbe_gate_eval(&g, d, &rr, NULL), TBE_ENAME);
  assert_int_equal(tbe_gate_parse(&g, "op:aten::mm > 1%", NULL, 0), 0);
  assert_int_equal(tbe_gate_eval(&g, d, &rr, NULL), TBE_ENAME);
  assert_int_equal(tbe_gate_eval(&g, NULL, &rr, NULL), TBE_EINVAL);
  tbe_diff_free(d);
  /* A pair that did not change: every figure passes (a trace against itself). */
  assert_int_equal(tbe_diff_create(&d, aa, aa, NULL), 0);
  gate(d, "step_median > +5%", TBE_GATE_PASS, "100.250us -> 100.250us (+0.0%), not > +5.0%");
  gate(d, "kernel:kS < -1%", TBE_GATE_PASS, "not < -1.0%");
  tbe_diff_free(d);
  tbe_analysis_free(aa);
  tbe_analysis_free(ab);
  tbe_trace_free(a);
  tbe_trace_free(b);
  /* Three steps a side: a change past the threshold cannot be judged. */
  a = steps_trace(1, "h", T0, 3, s0, 3, names, k0);
  b = steps_trace(1, "h", T0, 3, s1, 3, names, k1);
  assert_int_equal(tbe_analysis_create(&aa, a, NULL), 0);
  assert_int_equal(tbe_analysis_create(&ab, b, NULL), 0);
  assert_int_equal(tbe_diff_create(&d, aa, ab, NULL), 0);
  gate(d, "step_median > +5%", TBE_GATE_UNJUDGED,
       "> +5.0%, but 3 and 3 steps are too few to tell it from the steps' own noise (4 per side "
       "needed): cannot judge");
  gate(d, "step_median > +50%", TBE_GATE_PASS, "passes"); /* no test needed to pass */
  tbe_diff_free(d);
  tbe_analysis_free(aa);
  tbe_analysis_free(ab);
  tbe_trace_free(a);
  tbe_trace_free(b);
  /* Without steps: the totals can pass, never fire; a step time cannot. */
  a = build(10000, 0);
  b = build(15000, 1);
  a->nsteps = b->nsteps = 0; /* the same traces without their steps */
  assert_int_equal(tbe_analysis_create(&aa, a, NULL), 0);
  assert_int_equal(tbe_analysis_create(&ab, b, NULL), 0);
  assert_int_equal(tbe_diff_create(&d, aa, ab, NULL), 0);
  gate(d, "step_median > +5%", TBE_GATE_UNJUDGED,
       "neither side has steps, so there is no step time to compare: cannot judge");
  r = gate(d, "kernel:kA > +10%", TBE_GATE_UNJUDGED,
           "time in total (a side has no steps) 20.000us -> 30.000us (+50.0%), > +10.0%, but "
           "neither side has steps to tell it from noise: cannot judge");
  assert_true(!r.per_step && r.value[0] == 20000 && r.value[1] == 30000 && r.change == 50.0);
  gate(d, "kernel:kA > +60%", TBE_GATE_PASS, "not > +60.0%: passes");
  /* kB was replaced by kD: the condition follows it under either name */
  r = gate(d, "kernel:kB > +1%", TBE_GATE_PASS, "kernel kB (1 in base, 1 in new)");
  assert_true(r.value[0] == 3000 && r.value[1] == 3000);
  gate(d, "kernel:kD > +1%", TBE_GATE_PASS, "kernel kD (1 in base, 1 in new)");
  tbe_diff_free(d);
  tbe_analysis_free(aa);
  tbe_analysis_free(ab);
  tbe_trace_free(a);
  tbe_trace_free(b);
}

/* ---- allocation failures ---- */

typedef struct failing {
  long left;
} failing;

static void *f_alloc(void *o, size_t n) {
  failing *f = o;
  if (f->left-- <= 0) return NULL;
  return malloc(n ? n : 1);
}
static void *f_realloc(void *o, void *p, size_t old, size_t n) {
  (void)old;
  failing *f = o;
  if (f->left-- <= 0) return NULL;
  return realloc(p, n ? n : 1);
}
static void f_free(void *o, void *p) {
  (void)o;
  free(p);
}

static void test_alloc_failures(void **state) {
  (void)state;
  tbe_trace *t = build(10000, 0);
  int ok = 0;
  for (long n = 0; n < 400 && !ok; n++) {
    failing f = {n};
    tbe_allocator a = {f_alloc, f_realloc, f_free, &f};
    tbe_analysis *an = NULL;
    int rc = tbe_analysis_create(&an, t, &a);
    if (rc == 0) {
      ok = 1;
      assert_int_equal(an->all.busy_ns, 29000);
      /* Reports and diffs under the same failing budget. */
      tbe_report_options o;
      tbe_report_options_init(&o);
      for (long m = 0; m < 200; m++) {
        failing g = {m};
        tbe_allocator b = {f_alloc, f_realloc, f_free, &g};
        o.allocator = &b;
        char *s;
        size_t len;
        int r2 = tbe_report_summary(an, &o, &s, &len);
        if (r2 == 0) {
          tbe_report_free(s, len, &b);
          break;
        }
        assert_int_equal(r2, TBE_ENOMEM);
        assert_null(s);
      }
      for (long m = 0; m < 200; m++) {
        failing g = {m};
        tbe_allocator b = {f_alloc, f_realloc, f_free, &g};
        tbe_diff *d = NULL;
        int r3 = tbe_diff_create(&d, an, an, &b);
        if (r3 == 0) {
          tbe_diff_free(d);
          break;
        }
        assert_int_equal(r3, TBE_ENOMEM);
        assert_null(d);
      }
      tbe_analysis_free(an);
    } else {
      assert_int_equal(rc, TBE_ENOMEM);
      assert_null(an);
    }
  }
  assert_true(ok);
  tbe_trace_free(t);
  /* A diff that pairs a replaced kernel, and a gate on it, with each
   * allocation failing in turn: TBE_ENOMEM and nothing left allocated. */
  tbe_trace *ta = build(10000, 0), *tb = build(15000, 1);
  tbe_analysis *aa, *ab;
  assert_int_equal(tbe_analysis_create(&aa, ta, NULL), 0);
  assert_int_equal(tbe_analysis_create(&ab, tb, NULL), 0);
  tu_failalloc fa;
  long m = 0;
  for (;; m++) {
    tbe_allocator b = tu_failalloc_init(&fa, m);
    tbe_diff *d = NULL;
    int rc = tbe_diff_create(&d, aa, ab, &b);
    if (rc == 0) {
      assert_int_equal(d->replaced[TBE_GROUP_KERNEL], 1);
      tbe_gate g;
      assert_int_equal(tbe_gate_parse(&g, "kernel:k? > +5%", NULL, 0), 0);
      for (long k = 0;; k++) {
        tu_failalloc fg;
        tbe_allocator c = tu_failalloc_init(&fg, k);
        tbe_gate_result r;
        int rg = tbe_gate_eval(&g, d, &r, &c);
        assert_int_equal(fg.live, 0);
        if (rg == 0) break;
        assert_int_equal(rg, TBE_ENOMEM);
      }
      tbe_diff_free(d);
      assert_int_equal(fa.live, 0);
      break;
    }
    assert_int_equal(rc, TBE_ENOMEM);
    assert_null(d);
    assert_int_equal(fa.live, 0);
  }
  assert_true(m > 5);
  tbe_analysis_free(aa);
  tbe_analysis_free(ab);
  tbe_trace_free(ta);
  tbe_trace_free(tb);
}

/* Runs, their diffs and reports under every failing allocation: each
 * failure is TBE_ENOMEM with nothing left allocated and *out NULL. */
static void test_run_alloc_failures(void **state) {
  (void)state;
  static const int64_t s0[5] = {100000, 101000, 99000, 100500, 100200}, k0[5] = {1, 2, 3, 4, 5};
  const char *kn[1] = {"k"};
  const int64_t *kd[1] = {k0};
  tbe_trace *tr[3] = {steps_trace(1, "a", T0, 5, s0, 1, kn, kd), steps_trace(2, "b", T0, 5, s0, 1, kn, kd),
                      build(10000, 0)};
  tbe_analysis *an[3];
  for (int i = 0; i < 3; i++) assert_int_equal(tbe_analysis_create(&an[i], tr[i], NULL), 0);
  const char *labels[3] = {"a", "b", "c"};
  tu_failalloc f;
  int ok = 0;
  for (long n = 0; n < 500 && !ok; n++) {
    tbe_allocator al = tu_failalloc_init(&f, n);
    tbe_run_analysis *r = (tbe_run_analysis *)1;
    int rc = tbe_run_analysis_create(&r, an, labels, 3, &al);
    if (rc) {
      assert_int_equal(rc, TBE_ENOMEM);
      assert_null(r);
      assert_int_equal(f.live, 0);
      continue;
    }
    ok = 1;
    /* A diff of the run against itself, then every report. */
    int dok = 0;
    for (long m = 0; m < 500 && !dok; m++) {
      tu_failalloc g;
      tbe_allocator bl = tu_failalloc_init(&g, m);
      tbe_run_diff *d = (tbe_run_diff *)1;
      int r2 = tbe_run_diff_create(&d, r, r, &bl);
      if (r2) {
        assert_int_equal(r2, TBE_ENOMEM);
        assert_null(d);
        assert_int_equal(g.live, 0);
        continue;
      }
      dok = 1;
      assert_int_equal(d->matched, 3);
      for (int fmt = 0; fmt < 4; fmt++) {
        int rok = 0;
        for (long q = 0; q < 200 && !rok; q++) {
          tu_failalloc h;
          tbe_allocator cl = tu_failalloc_init(&h, q);
          tbe_report_options o;
          tbe_report_options_init(&o);
          o.format = fmt;
          o.allocator = &cl;
          char *txt = (char *)1, *txt2 = (char *)1;
          size_t len, len2;
          int r3 = tbe_report_run_diff(d, &o, &txt, &len);
          if (r3) {
            assert_int_equal(r3, TBE_ENOMEM);
            assert_null(txt);
            assert_int_equal(h.live, 0);
            continue;
          }
          int r4 = tbe_report_run(r, &o, &txt2, &len2);
          if (r4) {
            assert_int_equal(r4, TBE_ENOMEM);
            assert_null(txt2);
            tbe_report_free(txt, len, &cl);
            assert_int_equal(h.live, 0);
            continue;
          }
          rok = 1;
          tbe_report_free(txt, len, &cl);
          tbe_report_free(txt2, len2, &cl);
          assert_int_equal(h.live, 0);
        }
        assert_true(rok);
      }
      tbe_run_diff_free(d);
      assert_int_equal(g.live, 0);
    }
    assert_true(dok);
    tbe_run_analysis_free(r);
    assert_int_equal(f.live, 0);
  }
  assert_true(ok);
  for (int i = 0; i < 3; i++) {
    tbe_analysis_free(an[i]);
    tbe_trace_free(tr[i]);
  }
}

/* Times at the edges of the model's range (+-(2^62 - 1) ns, where the
 * model saturates what it is given): sums of durations pass int64 and
 * saturate at INT64_MAX; windows, unions and differences stay exact where
 * they fit; a window set by hand from INT64_MIN to INT64_MAX (public
 * fields) saturates instead of wrapping to a negative wall time.  Under
 * UBSan any overflow left would abort here. */
static void add_raw(tbe_trace *t, uint32_t track, tbe_event_kind k, const char *name, int64_t start,
                    int64_t dur) {
  tbe_event e;
  memset(&e, 0, sizeof e);
  e.start_ns = start;
  e.dur_ns = dur;
  e.name = tbe_trace_str_id(t, name);
  e.track = track;
  e.kind = (uint8_t)k;
  e.link = e.detail = TBE_NONE;
  assert_int_equal(tbe_trace_add_event(t, &e, NULL, NULL, 0, NULL), 0);
}

static void test_time_extremes(void **state) {
  (void)state;
  const int64_t lo = -(((int64_t)1 << 62) - 1), hi = ((int64_t)1 << 62) - 1;
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  uint32_t st, th;
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_STREAM, -1, 7, 0, &st), 0);
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_THREAD, 1, 1, -1, &th), 0);
  for (int i = 0; i < 4; i++) add_raw(t, st, TBE_EV_KERNEL, "k", lo, INT64_MAX); /* cut to end at hi */
  add_raw(t, th, TBE_EV_CPU_OP, "op", lo, INT64_MAX);
  add_raw(t, th, TBE_EV_CPU_OP, "op", INT64_MIN, 1);
  add_raw(t, th, TBE_EV_RUNTIME, "cudaDeviceSynchronize", 0, hi);
  assert_int_equal(tbe_trace_add_step(t, 1, INT64_MIN, INT64_MAX, 0), 0);
  assert_int_equal(tbe_trace_finish(t), 0);
  tbe_analysis *an;
  assert_int_equal(tbe_analysis_create(&an, t, NULL), 0);
  assert_int_equal(an->wall_ns, hi - lo); /* 2^63 - 2: the widest window, exact */
  assert_int_equal(an->all.kernel_count, 4);
  assert_int_equal(an->all.kernel_ns, INT64_MAX); /* 4 * (2^63 - 1) saturated */
  assert_int_equal(an->devices[0].kernel_ns, INT64_MAX);
  assert_int_equal(an->all.busy_ns, hi - lo); /* the union of the four: exact */
  assert_int_equal(an->all.idle_ns, 0);
  const tbe_name_stats *k = find(an, TBE_GROUP_KERNEL, "k");
  assert_non_null(k);
  assert_int_equal(k->total_ns, INT64_MAX);
  assert_int_equal(k->max_ns, hi - lo);
  assert_true(an->host_busy_ns > 0 && an->host_busy_ns <= an->wall_ns);
  assert_int_equal(an->nsteps, 1);
  assert_int_equal(an->steps[0].dur_ns, hi - lo);
  tbe_report_options o;
  tbe_report_options_init(&o);
  for (int f = 0; f < 4; f++) {
    char *r;
    size_t n;
    o.format = f;
    assert_int_equal(tbe_report_summary(an, &o, &r, &n), 0);
    assert_null(strstr(r, "-446")); /* no wrapped wall time */
    tbe_report_free(r, n, NULL);
  }
  tbe_analysis_free(an);
  /* public fields set by hand */
  t->start_ns = INT64_MIN;
  t->stop_ns = INT64_MAX;
  assert_int_equal(tbe_analysis_create(&an, t, NULL), 0);
  assert_int_equal(an->wall_ns, INT64_MAX);
  tbe_analysis *an2;
  assert_int_equal(tbe_analysis_create(&an2, t, NULL), 0);
  tbe_analysis *hosts[2] = {an, an2};
  tbe_run_analysis *run;
  assert_int_equal(tbe_run_analysis_create(&run, hosts, NULL, 2, NULL), 0);
  assert_int_equal(run->total->all.kernel_ns, INT64_MAX);
  assert_true(run->total->wall_ns >= 0);
  tbe_run_analysis_free(run);
  tbe_diff *d;
  assert_int_equal(tbe_diff_create(&d, an, an2, NULL), 0);
  tbe_diff_free(d);
  tbe_analysis_free(an);
  tbe_analysis_free(an2);
  tbe_trace_free(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_synthetic),
      cmocka_unit_test(test_range_labels),
      cmocka_unit_test(test_launch_split),
      cmocka_unit_test(test_gate_parse),
      cmocka_unit_test(test_gate),
      cmocka_unit_test(test_odd_inputs),
      cmocka_unit_test(test_device_steps),
      cmocka_unit_test(test_empty_and_dropped),
      cmocka_unit_test(test_diff_synthetic),
      cmocka_unit_test(test_golden_fp32),
      cmocka_unit_test(test_golden_bf16),
      cmocka_unit_test(test_golden_add_loop),
      cmocka_unit_test(test_golden_untraced),
      cmocka_unit_test(test_golden_diff),
      cmocka_unit_test(test_step_dist),
      cmocka_unit_test(test_rank_test),
      cmocka_unit_test(test_noise_verdicts),
      cmocka_unit_test(test_step_hint),
      cmocka_unit_test(test_run_two_hosts),
      cmocka_unit_test(test_run_several_hosts),
      cmocka_unit_test(test_run_diff),
      cmocka_unit_test(test_run_alloc_failures),
      cmocka_unit_test(test_alloc_failures),
      cmocka_unit_test(test_time_extremes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
