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

/* The synthetic trace.  `f` scales kA; `variant` replaces kB by kD. */
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
  add(t, s9, TBE_EV_KERNEL, variant ? "kD" : "kB", 40000, 3000, 0, &k);
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
  assert_int_equal(d1->device, 1);
  assert_int_equal(d1->busy_ns, 3000);
  assert_int_equal(d1->launch_median_ns, -1);
  assert_int_equal(an->all.busy_ns, 29000);
  assert_int_equal(an->all.kernel_ns, 25000);
  assert_int_equal(an->all.kernel_count, 4);
  assert_int_equal(an->all.launch_median_ns, 2500);
  /* Host: [0,50000) + [60000,61000) + [70000,90000). */
  assert_int_equal(an->host_busy_ns, 71000);
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
  /* Advice: pageable copy, launch-bound (32% GPU vs 79% host), sync
   * (22% of wall time); not short kernels (fewer than 10). */
  assert_true(has_advice(an, TBE_ADVICE_PAGEABLE));
  assert_true(has_advice(an, TBE_ADVICE_LAUNCH_BOUND));
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
    tbe_report_free(s, n, NULL);
  }
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
  assert_int_equal(tbe_diff_create(&d, aa, ab, NULL), 0);
  assert_int_equal(d->nentries[TBE_GROUP_KERNEL], 4);
  assert_int_equal(d->added[TBE_GROUP_KERNEL], 1);
  assert_int_equal(d->removed[TBE_GROUP_KERNEL], 1);
  const tbe_diff_entry *e = &d->entries[TBE_GROUP_KERNEL][0];
  assert_string_equal(e->name, "kA"); /* largest |delta| */
  assert_int_equal(e->present, 3);
  assert_int_equal(e->delta_ns, 10000);
  assert_true(fabs(e->ratio - 1.5) < 1e-9);
  assert_true(e->noise_checked);
  /* Per-step medians 10000 -> 15000, spreads 0: beyond noise. */
  assert_int_equal(e->step_median_ns[0], 10000);
  assert_int_equal(e->step_median_ns[1], 15000);
  assert_false(e->within_noise);
  int seen_added = 0, seen_removed = 0;
  int64_t sum0 = 0, sum1 = 0;
  for (size_t i = 0; i < d->nentries[TBE_GROUP_KERNEL]; i++) {
    const tbe_diff_entry *x = &d->entries[TBE_GROUP_KERNEL][i];
    if (strcmp(x->name, "kD") == 0) seen_added = x->present == 2;
    if (strcmp(x->name, "kB") == 0) seen_removed = x->present == 1;
    sum0 += x->total_ns[0];
    sum1 += x->total_ns[1];
  }
  assert_true(seen_added);
  assert_true(seen_removed);
  assert_int_equal(sum0, aa->all.kernel_ns);
  assert_int_equal(sum1, ab->all.kernel_ns);
  assert_int_equal(d->steps_noise_checked, 1);
  /* Step windows are equal (50 us each): no change at all counts as
   * within noise. */
  assert_int_equal(d->step_median_ns[0], 50000);
  assert_true(d->steps_within_noise);
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
    assert_non_null(strstr(s, "kD"));
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
    assert_true(d->entries[TBE_GROUP_KERNEL][i].within_noise);
  }
  tbe_diff_free(d);
  tbe_analysis_free(aa);
  tbe_analysis_free(ab);
  tbe_trace_free(a);
  tbe_trace_free(b);
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
  scan_free(&ks);
  tbe_analysis_free(an);
  tbe_trace_free(t);
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
  assert_int_equal(d->removed[TBE_GROUP_KERNEL], only_a);
  assert_int_equal(d->added[TBE_GROUP_KERNEL], only_b);
  int64_t s0 = 0, s1 = 0, sd = 0;
  for (size_t i = 0; i < d->nentries[TBE_GROUP_KERNEL]; i++) {
    const tbe_diff_entry *e = &d->entries[TBE_GROUP_KERNEL][i];
    int in_a = scan_find(&sa, e->name) != NULL, in_b = scan_find(&sb, e->name) != NULL;
    assert_int_equal(e->present, (in_a ? 1 : 0) | (in_b ? 2 : 0));
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
  assert_true(d->steps_noise_checked);
  tbe_diff_free(d);
  tbe_analysis_free(aa);
  tbe_analysis_free(ab);
  scan_free(&sa);
  scan_free(&sb);
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
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_synthetic),     cmocka_unit_test(test_range_labels),
      cmocka_unit_test(test_odd_inputs),    cmocka_unit_test(test_empty_and_dropped),
      cmocka_unit_test(test_diff_synthetic), cmocka_unit_test(test_golden_fp32),
      cmocka_unit_test(test_golden_bf16),   cmocka_unit_test(test_golden_add_loop),
      cmocka_unit_test(test_golden_diff),
      cmocka_unit_test(test_alloc_failures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
