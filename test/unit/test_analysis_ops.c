/* test_analysis_ops.c: the operator figures of an analysis
 * (analysis_ops.c; tbe_name_stats' self_cuda_ns, cuda_total_ns, kernels,
 * launched, cuda_step_ns; the by-shape table), their order, their diff,
 * their merge over a run's hosts and the advice that names operators.
 *
 * The trace of most tests is built here with the model API, launches
 * linked by tbe_trace_finish as for any source, and its figures are
 * worked out by hand below (see `build`): operators nested three deep,
 * an operator without GPU work, work launched inside a user annotation
 * but no operator and outside both (counted for none), an operator nested
 * in one of its own name (its CUDA total counted twice, as
 * torch.profiler's key_averages counts it), a second thread whose
 * operator overlaps the first's in time but never nests in it, a copy,
 * an operator launching seven kernel names (five listed, the rest summed),
 * input shapes in a spacing the canonical form rewrites, two steps.
 * The golden Kineto traces are checked against a scan of their JSON
 * (yajl tree): the GPU work whose External id names a cpu_op is exactly
 * what the operators launched; every launched list adds up. */
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

/* ---- building traces ---- */

typedef struct tb {
  tbe_trace *t;
  uint32_t host, host2, stream;
  uint64_t corr;
} tb;

static void tb_init(tb *b) {
  memset(b, 0, sizeof *b);
  assert_int_equal(tbe_trace_create(&b->t, NULL), 0);
  assert_int_equal(tbe_trace_track(b->t, TBE_TRACK_THREAD, 1, 1, -1, &b->host), 0);
  assert_int_equal(tbe_trace_track(b->t, TBE_TRACK_THREAD, 1, 2, -1, &b->host2), 0);
  assert_int_equal(tbe_trace_track(b->t, TBE_TRACK_STREAM, 1, 7, 0, &b->stream), 0);
  b->corr = 100;
}

static void ev(tb *b, uint32_t track, tbe_event_kind k, const char *name, int64_t start,
               int64_t dur, uint64_t corr, const void *detail, const char *shapes) {
  tbe_event e;
  memset(&e, 0, sizeof e);
  e.start_ns = T0 + start;
  e.dur_ns = dur;
  e.correlation = corr;
  e.name = tbe_trace_str_id(b->t, name);
  e.track = track;
  e.kind = (uint8_t)k;
  e.link = TBE_NONE;
  e.detail = TBE_NONE;
  tbe_arg arg;
  memset(&arg, 0, sizeof arg);
  if (shapes) {
    arg.key = tbe_trace_str_id(b->t, "Input Dims");
    arg.type = TBE_ARG_JSON;
    arg.v.s = tbe_trace_str_id(b->t, shapes);
  }
  assert_int_equal(
      tbe_trace_add_event(b->t, &e, detail, shapes ? &arg : NULL, shapes ? 1 : 0, NULL), 0);
}

/* An operator on `track`. */
static void op(tb *b, uint32_t track, const char *name, int64_t start, int64_t dur,
               const char *shapes) {
  ev(b, track, TBE_EV_CPU_OP, name, start, dur, 0, NULL, shapes);
}

/* A launch at `at` on `track` (a runtime call of 10 ns) of a kernel named
 * `kernel` (or, with kernel NULL, a device-to-device copy; with kernel
 * "memset", a memset) lasting `dur`, 20 ns later. */
static void launch(tb *b, uint32_t track, int64_t at, const char *kernel, int64_t dur) {
  uint64_t c = ++b->corr;
  ev(b, track, TBE_EV_RUNTIME, kernel ? "cudaLaunchKernel" : "cudaMemcpyAsync", at, 10, c, NULL,
     NULL);
  if (!kernel) {
    tbe_memcpy m;
    memset(&m, 0, sizeof m);
    m.bytes = 64;
    m.copy_kind = TBE_COPY_DTOD;
    m.src_device = m.dst_device = 0;
    ev(b, b->stream, TBE_EV_MEMCPY, "Memcpy DtoD (Device -> Device)", at + 20, dur, c, &m, NULL);
    return;
  }
  tbe_kernel k;
  memset(&k, 0, sizeof k);
  k.occupancy_pct = k.blocks_per_sm = k.warps_per_sm = -1;
  k.queued_ns = -1;
  ev(b, b->stream, TBE_EV_KERNEL, kernel, at + 20, dur, c, &k, NULL);
}

static tbe_trace *tb_finish(tb *b) {
  assert_int_equal(tbe_trace_finish(b->t), 0);
  return b->t;
}

/* The trace of the essay (ns from T0):
 *   thread 1:
 *     aten::linear [0, 1000) "[[4,8],[16,8],[16]]"
 *       launch k_direct (100)
 *       aten::addmm [100, 600) "[[16], [4, 8], [8, 16]]"
 *         launch gemm (gemm_ns)
 *         aten::copy_ [200, 400): a DtoD copy (40), launch cast (20)
 *       aten::view [700, 750): nothing
 *     user annotation my_region [1000, 2000)
 *       launch in_annotation (500): no operator's
 *       aten::addmm [1200, 1500) "[[16], [2, 8], [8, 16]]": launch gemm (200)
 *     launch outside (1000) at 2100: no operator's
 *     aten::to [3000, 3500) > aten::to [3100, 3400): launch cast (60)
 *     aten::many [5000, 6000): k1..k7 of 70, 60, 50, 40, 30, 20, 10 ns
 *       (k1 of many_k1 when given)
 *   thread 2: aten::mm [0, 100): launch gemm (50)
 *   steps 1 [0, 2500) and 2 [2500, 7000).
 * Hence (self CUDA / CUDA total / kernels), gemm_ns = 300, many_k1 = 70:
 *   aten::linear 100 / 460 / 1;  aten::addmm 500 / 560 / 2;
 *   aten::copy_ 60 / 60 / 2;  aten::view 0 / 0 / 0;  aten::to 60 / 120 / 1;
 *   aten::many 280 / 280 / 7;  aten::mm 50 / 50 / 1;
 *   op_gpu_count 14 of 16 activities, op_gpu_ns 1050. */
static tbe_trace *build(int64_t gemm_ns, int64_t many_k1) {
  tb b;
  tb_init(&b);
  uint32_t h = b.host;
  op(&b, h, "aten::linear", 0, 1000, "[[4,8],[16,8],[16]]");
  launch(&b, h, 50, "k_direct", 100);
  op(&b, h, "aten::addmm", 100, 500, "[[16],[4, 8],  [8,16]]");
  launch(&b, h, 150, "gemm", gemm_ns);
  op(&b, h, "aten::copy_", 200, 200, "[[4, 16], [4, 16], []]");
  launch(&b, h, 250, NULL, 40);
  launch(&b, h, 300, "cast", 20);
  op(&b, h, "aten::view", 700, 50, "[[4, 16], []]");
  ev(&b, h, TBE_EV_USER_ANNOTATION, "my_region", 1000, 1000, 0, NULL, NULL);
  launch(&b, h, 1100, "in_annotation", 500);
  op(&b, h, "aten::addmm", 1200, 300, "[[16], [2, 8], [8, 16]]");
  launch(&b, h, 1250, "gemm", 200);
  launch(&b, h, 2100, "outside", 1000);
  op(&b, h, "aten::to", 3000, 500, NULL);
  op(&b, h, "aten::to", 3100, 300, NULL);
  launch(&b, h, 3150, "cast", 60);
  op(&b, h, "aten::many", 5000, 1000, NULL);
  static const char *const kn[7] = {"k1", "k2", "k3", "k4", "k5", "k6", "k7"};
  for (int i = 0; i < 7; i++) launch(&b, h, 5010 + 100 * i, kn[i], i ? 70 - 10 * i : many_k1);
  op(&b, b.host2, "aten::mm", 0, 100, NULL);
  launch(&b, b.host2, 10, "gemm", 50);
  assert_int_equal(
      tbe_trace_add_step(b.t, 1, T0, T0 + 2500, tbe_trace_str_id(b.t, "ProfilerStep#1")), 0);
  assert_int_equal(
      tbe_trace_add_step(b.t, 2, T0 + 2500, T0 + 7000, tbe_trace_str_id(b.t, "ProfilerStep#2")), 0);
  return tb_finish(&b);
}

static const tbe_name_stats *row(const tbe_analysis *an, tbe_group_kind g, const char *label,
                                 const char *shapes) {
  for (size_t i = 0; i < an->ngroups[g]; i++) {
    const tbe_name_stats *e = &an->groups[g][i];
    if (strcmp(e->label, label) == 0 && (!shapes || (e->shapes && strcmp(e->shapes, shapes) == 0)))
      return e;
  }
  return NULL;
}

static void check_op(const tbe_analysis *an, tbe_group_kind g, const char *label,
                     const char *shapes, uint64_t calls, int64_t self, int64_t total,
                     uint64_t kernels) {
  const tbe_name_stats *e = row(an, g, label, shapes);
  if (!e) print_message("no entry %s %s\n", label, shapes ? shapes : "");
  assert_non_null(e);
  if (e->calls != calls || e->self_cuda_ns != self || e->cuda_total_ns != total ||
      e->kernels != kernels)
    print_message("%s %s: calls %llu self %lld total %lld kernels %llu\n", label,
                  shapes ? shapes : "", (unsigned long long)e->calls, (long long)e->self_cuda_ns,
                  (long long)e->cuda_total_ns, (unsigned long long)e->kernels);
  assert_int_equal(e->calls, calls);
  assert_int_equal(e->self_cuda_ns, self);
  assert_int_equal(e->cuda_total_ns, total);
  assert_int_equal(e->kernels, kernels);
}

/* Every entry's launched list adds up to its kernels and self CUDA, is in
 * time order (ties by name) and holds at most TBE_OP_KERNELS_TOP. */
static void check_lists(const tbe_analysis *an, tbe_group_kind g) {
  for (size_t i = 0; i < an->ngroups[g]; i++) {
    const tbe_name_stats *e = &an->groups[g][i];
    assert_true(e->nlaunched <= TBE_OP_KERNELS_TOP);
    uint64_t calls = e->launched_other_calls;
    int64_t ns = e->launched_other_ns;
    for (size_t k = 0; k < e->nlaunched; k++) {
      calls += e->launched[k].calls;
      ns += e->launched[k].total_ns;
      if (k)
        assert_true(e->launched[k - 1].total_ns > e->launched[k].total_ns ||
                    (e->launched[k - 1].total_ns == e->launched[k].total_ns &&
                     strcmp(e->launched[k - 1].name, e->launched[k].name) < 0));
    }
    assert_int_equal(calls, e->kernels);
    assert_int_equal(ns, e->self_cuda_ns);
    assert_true(e->cuda_total_ns >= e->self_cuda_ns);
    if (e->nlaunched < TBE_OP_KERNELS_TOP) assert_int_equal(e->launched_other_calls, 0);
  }
}

/* ---- the figures ---- */

static void test_figures(void **state) {
  (void)state;
  tbe_trace *t = build(300, 70);
  tbe_analysis *an = NULL;
  assert_int_equal(tbe_analysis_create(&an, t, NULL), 0);
  tbe_group_kind G = TBE_GROUP_CPU_OP;
  check_op(an, G, "aten::linear", NULL, 1, 100, 460, 1);
  check_op(an, G, "aten::addmm", NULL, 2, 500, 560, 2);
  check_op(an, G, "aten::copy_", NULL, 1, 60, 60, 2);
  check_op(an, G, "aten::view", NULL, 1, 0, 0, 0);
  check_op(an, G, "aten::to", NULL, 2, 60, 120, 1);
  check_op(an, G, "aten::many", NULL, 1, 280, 280, 7);
  check_op(an, G, "aten::mm", NULL, 1, 50, 50, 1);
  assert_int_equal(an->op_gpu_count, 14);
  assert_int_equal(an->op_gpu_ns, 1050);
  /* 15 kernels and one copy in all */
  assert_int_equal(an->all.kernel_count, 15);
  assert_int_equal(an->all.memcpy_count[TBE_COPY_DTOD], 1);
  /* CPU figures as before: linear's self is what its children leave */
  assert_int_equal(row(an, G, "aten::linear", NULL)->self_ns, 450);
  /* what each launched */
  const tbe_name_stats *c = row(an, G, "aten::copy_", NULL);
  assert_int_equal(c->nlaunched, 2);
  assert_string_equal(c->launched[0].name, "Memcpy DtoD");
  assert_int_equal(c->launched[0].total_ns, 40);
  assert_string_equal(c->launched[1].name, "cast");
  const tbe_name_stats *m = row(an, G, "aten::many", NULL);
  assert_int_equal(m->nlaunched, TBE_OP_KERNELS_TOP);
  assert_string_equal(m->launched[0].name, "k1");
  assert_string_equal(m->launched[4].name, "k5");
  assert_int_equal(m->launched_other_calls, 2);
  assert_int_equal(m->launched_other_ns, 30);
  const tbe_name_stats *a = row(an, G, "aten::addmm", NULL);
  assert_int_equal(a->nlaunched, 1);
  assert_int_equal(a->launched[0].calls, 2);
  assert_int_equal(a->launched[0].total_ns, 500);
  check_lists(an, G);
  /* per step: each call's CUDA total in the step where it starts */
  assert_int_equal(an->nsteps, 2);
  assert_non_null(a->cuda_step_ns);
  assert_int_equal(a->cuda_step_ns[0], 560);
  assert_int_equal(a->cuda_step_ns[1], 0);
  const tbe_name_stats *to = row(an, G, "aten::to", NULL);
  assert_int_equal(to->cuda_step_ns[0], 0);
  assert_int_equal(to->cuda_step_ns[1], 120);
  /* the other tables carry none */
  for (size_t i = 0; i < an->ngroups[TBE_GROUP_KERNEL]; i++) {
    const tbe_name_stats *k = &an->groups[TBE_GROUP_KERNEL][i];
    assert_true(!k->kernels && !k->cuda_total_ns && !k->launched && !k->cuda_step_ns && !k->shapes);
  }
  tbe_analysis_free(an);
  tbe_trace_free(t);
}

static void test_shapes(void **state) {
  (void)state;
  tbe_trace *t = build(300, 70);
  tbe_analysis *an = NULL;
  assert_int_equal(tbe_analysis_create(&an, t, NULL), 0);
  tbe_group_kind S = TBE_GROUP_CPU_OP_SHAPE;
  /* one entry per (name, shapes); shapes in the canonical spelling */
  assert_int_equal(an->ngroups[S], 8);
  check_op(an, S, "aten::linear", "[[4, 8], [16, 8], [16]]", 1, 100, 460, 1);
  check_op(an, S, "aten::addmm", "[[16], [4, 8], [8, 16]]", 1, 300, 360, 1);
  check_op(an, S, "aten::addmm", "[[16], [2, 8], [8, 16]]", 1, 200, 200, 1);
  check_op(an, S, "aten::copy_", "[[4, 16], [4, 16], []]", 1, 60, 60, 2);
  check_op(an, S, "aten::view", "[[4, 16], []]", 1, 0, 0, 0);
  check_op(an, S, "aten::to", "", 2, 60, 120, 1);
  check_op(an, S, "aten::many", "", 1, 280, 280, 7);
  check_op(an, S, "aten::mm", "", 1, 50, 50, 1);
  /* their CPU figures nest as the name table's */
  const tbe_name_stats *l = row(an, S, "aten::linear", NULL);
  assert_int_equal(l->total_ns, 1000);
  assert_int_equal(l->self_ns, 450);
  const tbe_name_stats *b = row(an, S, "aten::addmm", "[[16], [4, 8], [8, 16]]");
  assert_int_equal(b->self_ns, 300);
  assert_int_equal(b->min_ns, 500);
  assert_int_equal(b->max_ns, 500);
  assert_non_null(b->step_ns);
  assert_int_equal(b->step_ns[0], 500);
  assert_int_equal(b->cuda_step_ns[0], 360);
  const tbe_name_stats *to = row(an, S, "aten::to", "");
  assert_int_equal(to->self_ns, 500 - 300 + 300);
  check_lists(an, S);
  /* the by-shape table sums to the by-name one */
  for (size_t i = 0; i < an->ngroups[TBE_GROUP_CPU_OP]; i++) {
    const tbe_name_stats *e = &an->groups[TBE_GROUP_CPU_OP][i];
    uint64_t calls = 0, kernels = 0;
    int64_t total = 0, self = 0, cuda = 0, scuda = 0;
    for (size_t j = 0; j < an->ngroups[S]; j++) {
      const tbe_name_stats *s = &an->groups[S][j];
      if (strcmp(s->label, e->label)) continue;
      calls += s->calls;
      kernels += s->kernels;
      total += s->total_ns;
      self += s->self_ns;
      cuda += s->cuda_total_ns;
      scuda += s->self_cuda_ns;
    }
    assert_int_equal(calls, e->calls);
    assert_int_equal(kernels, e->kernels);
    assert_int_equal(total, e->total_ns);
    assert_int_equal(self, e->self_ns);
    assert_int_equal(cuda, e->cuda_total_ns);
    assert_int_equal(scuda, e->self_cuda_ns);
  }
  tbe_analysis_free(an);
  tbe_trace_free(t);
  /* Without any "Input Dims", no by-shape table. */
  tb x;
  tb_init(&x);
  op(&x, x.host, "aten::mm", 0, 100, NULL);
  launch(&x, x.host, 10, "gemm", 50);
  t = tb_finish(&x);
  assert_int_equal(tbe_analysis_create(&an, t, NULL), 0);
  assert_int_equal(an->ngroups[S], 0);
  check_op(an, TBE_GROUP_CPU_OP, "aten::mm", NULL, 1, 50, 50, 1);
  assert_null(an->groups[TBE_GROUP_CPU_OP][0].cuda_step_ns); /* no steps */
  tbe_analysis_free(an);
  tbe_trace_free(t);
}

/* Without operators, or without GPU work under them: zeros, and the
 * default order is by total. */
static void test_no_gpu_work(void **state) {
  (void)state;
  tb x;
  tb_init(&x);
  op(&x, x.host, "aten::big", 0, 1000, NULL);
  op(&x, x.host, "aten::small", 2000, 10, NULL);
  launch(&x, x.host, 3000, "outside", 50);
  tbe_trace *t = tb_finish(&x);
  tbe_analysis *an = NULL;
  assert_int_equal(tbe_analysis_create(&an, t, NULL), 0);
  assert_int_equal(an->op_gpu_count, 0);
  assert_int_equal(an->op_gpu_ns, 0);
  assert_int_equal(tbe_analysis_sort_key(an, TBE_GROUP_CPU_OP, TBE_SORT_DEFAULT), TBE_SORT_TOTAL);
  tbe_analysis_sort(an, TBE_GROUP_CPU_OP, TBE_SORT_DEFAULT);
  assert_string_equal(an->groups[TBE_GROUP_CPU_OP][0].label, "aten::big");
  for (size_t i = 0; i < an->ngroups[TBE_GROUP_CPU_OP]; i++)
    assert_true(!an->groups[TBE_GROUP_CPU_OP][i].cuda_total_ns &&
                !an->groups[TBE_GROUP_CPU_OP][i].nlaunched);
  /* the table report keeps its layout without GPU figures */
  tbe_report_options o;
  tbe_report_options_init(&o);
  char *s = NULL;
  size_t n = 0;
  assert_int_equal(tbe_report_summary(an, &o, &s, &n), 0);
  assert_non_null(strstr(s, "CPU operators (2 of 2, by total)"));
  assert_null(strstr(s, "CUDA total"));
  assert_null(strstr(s, "operators:"));
  tbe_report_free(s, n, NULL);
  tbe_analysis_free(an);
  tbe_trace_free(t);
}

/* ---- order ---- */

static void order_is(tbe_analysis *an, tbe_group_kind g, tbe_sort_key key, const char *const *want,
                     size_t n) {
  tbe_analysis_sort(an, g, key);
  for (size_t i = 0; i < n; i++) {
    if (strcmp(an->groups[g][i].label, want[i]) != 0)
      print_message("key %d, row %zu: %s, want %s\n", (int)key, i, an->groups[g][i].label, want[i]);
    assert_string_equal(an->groups[g][i].label, want[i]);
  }
}

static void test_sort(void **state) {
  (void)state;
  tbe_trace *t = build(300, 70);
  tbe_analysis *an = NULL;
  assert_int_equal(tbe_analysis_create(&an, t, NULL), 0);
  tbe_group_kind G = TBE_GROUP_CPU_OP;
  /* CUDA total: addmm 560, linear 460, many 280, to 120, copy_ 60, mm 50, view 0 */
  static const char *const cuda[] = {"aten::addmm", "aten::linear", "aten::many", "aten::to",
                                     "aten::copy_", "aten::mm",     "aten::view"};
  order_is(an, G, TBE_SORT_CUDA_TOTAL, cuda, 7);
  assert_int_equal(tbe_analysis_sort_key(an, G, TBE_SORT_DEFAULT), TBE_SORT_CUDA_TOTAL);
  order_is(an, G, TBE_SORT_DEFAULT, cuda, 7);
  /* self CUDA: addmm 500, many 280, linear 100, then to and copy_ at 60
   * (ties by CPU total: to 800 > copy_ 200), mm 50, view */
  static const char *const scuda[] = {"aten::addmm", "aten::many", "aten::linear", "aten::to",
                                      "aten::copy_", "aten::mm",   "aten::view"};
  order_is(an, G, TBE_SORT_SELF_CUDA, scuda, 7);
  /* self CPU: addmm 300 + 300, many 1000 ... */
  tbe_analysis_sort(an, G, TBE_SORT_SELF);
  for (size_t i = 1; i < an->ngroups[G]; i++)
    assert_true(an->groups[G][i - 1].self_ns >= an->groups[G][i].self_ns);
  /* CPU total */
  tbe_analysis_sort(an, G, TBE_SORT_TOTAL);
  for (size_t i = 1; i < an->ngroups[G]; i++)
    assert_true(an->groups[G][i - 1].total_ns >= an->groups[G][i].total_ns);
  /* the other tables: the CUDA keys and the default are by total */
  assert_int_equal(tbe_analysis_sort_key(an, TBE_GROUP_KERNEL, TBE_SORT_DEFAULT), TBE_SORT_TOTAL);
  assert_int_equal(tbe_analysis_sort_key(an, TBE_GROUP_KERNEL, TBE_SORT_CUDA_TOTAL),
                   TBE_SORT_TOTAL);
  assert_int_equal(tbe_analysis_sort_key(an, TBE_GROUP_RANGE, TBE_SORT_SELF_CUDA), TBE_SORT_TOTAL);
  assert_int_equal(tbe_analysis_sort_key(an, TBE_GROUP_RANGE, TBE_SORT_SELF), TBE_SORT_SELF);
  assert_int_equal(tbe_analysis_sort_key(an, G, (tbe_sort_key)99), TBE_SORT_TOTAL);
  tbe_analysis_sort(an, TBE_GROUP_KERNEL, TBE_SORT_CUDA_TOTAL);
  for (size_t i = 1; i < an->ngroups[TBE_GROUP_KERNEL]; i++)
    assert_true(an->groups[TBE_GROUP_KERNEL][i - 1].total_ns >=
                an->groups[TBE_GROUP_KERNEL][i].total_ns);
  /* the by-shape table: entries of one name with equal figures keep a total order (by shapes) */
  tbe_analysis_sort(an, TBE_GROUP_CPU_OP_SHAPE, TBE_SORT_CALLS);
  tbe_analysis_sort(an, TBE_GROUP_CPU_OP_SHAPE, TBE_SORT_CUDA_TOTAL);
  assert_string_equal(an->groups[TBE_GROUP_CPU_OP_SHAPE][0].label, "aten::linear");
  /* reports say the order */
  tbe_report_options o;
  tbe_report_options_init(&o);
  char *s = NULL;
  size_t n = 0;
  assert_int_equal(tbe_report_summary(an, &o, &s, &n), 0);
  assert_non_null(strstr(s, "CPU operators (7 of 7, by CUDA total)"));
  assert_non_null(strstr(s, "Kernels (10 of 12, by total)"));
  tbe_report_free(s, n, NULL);
  o.sort = TBE_SORT_SELF;
  o.group_by = TBE_GROUP_BY_SHAPE;
  assert_int_equal(tbe_report_summary(an, &o, &s, &n), 0);
  assert_non_null(strstr(s, "CPU operators by input shape (8 of 8, by self CPU)"));
  assert_non_null(strstr(s, "\n    [[16], [2, 8], [8, 16]]\n"));
  tbe_report_free(s, n, NULL);
  o.sort = TBE_SORT_DEFAULT + 1;
  assert_int_equal(tbe_report_summary(an, &o, &s, &n), TBE_EINVAL);
  o.sort = TBE_SORT_DEFAULT;
  o.group_by = 2;
  assert_int_equal(tbe_report_summary(an, &o, &s, &n), TBE_EINVAL);
  tbe_analysis_free(an);
  tbe_trace_free(t);
}

/* ---- diff ---- */

static const tbe_diff_entry *dentry(const tbe_diff *d, tbe_group_kind g, const char *name) {
  for (size_t i = 0; i < d->nentries[g]; i++)
    if (strcmp(d->entries[g][i].name, name) == 0) return &d->entries[g][i];
  return NULL;
}

static void test_diff(void **state) {
  (void)state;
  /* new: the first gemm 300 -> 100, many's k1 70 -> 370 */
  tbe_trace *tb0 = build(300, 70), *tb1 = build(100, 370);
  tbe_analysis *a0 = NULL, *a1 = NULL;
  assert_int_equal(tbe_analysis_create(&a0, tb0, NULL), 0);
  assert_int_equal(tbe_analysis_create(&a1, tb1, NULL), 0);
  tbe_diff *d = NULL;
  assert_int_equal(tbe_diff_create(&d, a0, a1, NULL), 0);
  assert_true(d->op_cuda);
  tbe_group_kind G = TBE_GROUP_CPU_OP;
  /* by |CUDA delta|: many +300, then addmm and linear at -200 (by name), ... */
  assert_string_equal(d->entries[G][0].name, "aten::many");
  assert_string_equal(d->entries[G][1].name, "aten::addmm");
  assert_string_equal(d->entries[G][2].name, "aten::linear");
  const tbe_diff_entry *e = dentry(d, G, "aten::addmm");
  assert_int_equal(e->cuda_ns[0], 560);
  assert_int_equal(e->cuda_ns[1], 360);
  assert_int_equal(e->cuda_delta_ns, -200);
  assert_int_equal(e->calls[0], 2);
  assert_int_equal(e->calls[1], 2);
  assert_int_equal(e->delta_ns, 0); /* the CPU time did not change */
  /* two steps a side: too few to judge, for both figures */
  assert_int_equal(e->cuda_steps.verdict, TBE_NOISE_TOO_FEW);
  assert_int_equal(e->cuda_steps.dist[0].n, 2);
  assert_int_equal(e->cuda_steps.dist[0].max_ns, 560);
  assert_int_equal(e->cuda_steps.dist[1].max_ns, 360);
  /* the by-shape table: matched on name and shapes */
  tbe_group_kind S = TBE_GROUP_CPU_OP_SHAPE;
  assert_int_equal(d->nentries[S], 8);
  assert_int_equal(d->added[S], 0);
  size_t hits = 0;
  for (size_t i = 0; i < d->nentries[S]; i++) {
    const tbe_diff_entry *x = &d->entries[S][i];
    assert_non_null(x->shapes);
    assert_int_equal(x->present, 3);
    if (strcmp(x->name, "aten::addmm") == 0 && strcmp(x->shapes, "[[16], [4, 8], [8, 16]]") == 0) {
      assert_int_equal(x->cuda_delta_ns, -200);
      hits++;
    }
    if (strcmp(x->name, "aten::addmm") == 0 && strcmp(x->shapes, "[[16], [2, 8], [8, 16]]") == 0) {
      assert_int_equal(x->cuda_delta_ns, 0);
      hits++;
    }
  }
  assert_int_equal(hits, 2);
  /* the reports: CUDA columns and by shape */
  tbe_report_options o;
  tbe_report_options_init(&o);
  char *s = NULL;
  size_t n = 0;
  assert_int_equal(tbe_report_diff(d, &o, &s, &n), 0);
  assert_non_null(strstr(s, "CPU operators (CUDA total): 7 matched"));
  tbe_report_free(s, n, NULL);
  o.group_by = TBE_GROUP_BY_SHAPE;
  o.format = TBE_REPORT_JSON;
  assert_int_equal(tbe_report_diff(d, &o, &s, &n), 0);
  assert_non_null(strstr(s, "\"cpu_ops_by\":\"shape\""));
  assert_non_null(strstr(s,
                         "\"shapes\":\"[[16], [4, 8], [8, 16]]\",\"cuda_total_ns\":[360,160],"
                         "\"cuda_delta_ns\":-200"));
  tbe_report_free(s, n, NULL);
  tbe_diff_free(d);
  tbe_analysis_free(a0);
  tbe_analysis_free(a1);
  tbe_trace_free(tb0);
  tbe_trace_free(tb1);
}

/* ---- a run's hosts merged ---- */

static void test_run_merge(void **state) {
  (void)state;
  tbe_trace *tb0 = build(300, 70), *tb1 = build(100, 370);
  tbe_analysis *an[2];
  assert_int_equal(tbe_analysis_create(&an[0], tb0, NULL), 0);
  assert_int_equal(tbe_analysis_create(&an[1], tb1, NULL), 0);
  const char *labels[2] = {"h_pid1", "h_pid2"};
  tbe_run_analysis *r = NULL;
  assert_int_equal(tbe_run_analysis_create(&r, an, labels, 2, NULL), 0);
  const tbe_analysis *tot = r->total;
  assert_int_equal(tot->op_gpu_count, 28);
  assert_int_equal(tot->op_gpu_ns, 1050 + 1150);
  tbe_group_kind G = TBE_GROUP_CPU_OP, S = TBE_GROUP_CPU_OP_SHAPE;
  check_op(tot, G, "aten::addmm", NULL, 4, 500 + 300, 560 + 360, 4);
  check_op(tot, G, "aten::many", NULL, 2, 280 + 580, 280 + 580, 14);
  check_op(tot, S, "aten::addmm", "[[16], [4, 8], [8, 16]]", 2, 400, 360 + 160, 2);
  check_op(tot, S, "aten::addmm", "[[16], [2, 8], [8, 16]]", 2, 400, 400, 2);
  assert_int_equal(tot->ngroups[S], 8);
  check_lists(tot, G);
  check_lists(tot, S);
  const tbe_name_stats *m = row(tot, G, "aten::many", NULL);
  assert_string_equal(m->launched[0].name, "k1");
  assert_int_equal(m->launched[0].total_ns, 440);
  assert_int_equal(m->launched_other_calls, 4);
  assert_int_equal(m->launched_other_ns, 60);
  /* per step: the hosts' sums */
  const tbe_name_stats *a = row(tot, G, "aten::addmm", NULL);
  assert_non_null(a->cuda_step_ns);
  assert_int_equal(a->cuda_step_ns[0], 560 + 360);
  /* the run report renders the merged table, by shape too */
  tbe_report_options o;
  tbe_report_options_init(&o);
  o.group_by = TBE_GROUP_BY_SHAPE;
  char *s = NULL;
  size_t n = 0;
  assert_int_equal(tbe_report_run(r, &o, &s, &n), 0);
  assert_non_null(strstr(s, "CPU operators by input shape (8 of 8, by CUDA total)"));
  tbe_report_free(s, n, NULL);
  tbe_run_analysis_free(r);
  /* A host without shapes: the run has no by-shape table (it would lack
   * that host's operators), and the report says so. */
  tb x;
  tb_init(&x);
  op(&x, x.host, "aten::mm", 0, 100, NULL);
  launch(&x, x.host, 10, "gemm", 50);
  tbe_trace *tb2 = tb_finish(&x);
  tbe_analysis_free(an[1]);
  assert_int_equal(tbe_analysis_create(&an[1], tb2, NULL), 0);
  assert_int_equal(an[1]->ngroups[S], 0);
  assert_int_equal(tbe_run_analysis_create(&r, an, labels, 2, NULL), 0);
  assert_int_equal(r->total->ngroups[S], 0);
  check_op(r->total, G, "aten::mm", NULL, 2, 100, 100, 2);
  check_lists(r->total, G);
  assert_int_equal(tbe_report_run(r, &o, &s, &n), 0);
  assert_non_null(strstr(s, "CPU operators (7 of 7, by CUDA total; no input shapes recorded)"));
  tbe_report_free(s, n, NULL);
  tbe_run_analysis_free(r);
  tbe_analysis_free(an[0]);
  tbe_analysis_free(an[1]);
  tbe_trace_free(tb0);
  tbe_trace_free(tb1);
  tbe_trace_free(tb2);
}

/* ---- advice ---- */

static int has_advice(const tbe_analysis *an, tbe_advice_kind k, const char *text) {
  for (size_t i = 0; i < an->nadvice; i++)
    if (an->advice[i].kind == (uint32_t)k) {
      if (text && !strstr(an->advice[i].text, text))
        print_message("advice: %s\n", an->advice[i].text);
      return !text || strstr(an->advice[i].text, text) != NULL;
    }
  return 0;
}

/* A trace of `ncast` cast kernels (1 us) launched under aten::copy_ (or,
 * with `htod`, host-to-device copies under it), `nother` kernels of
 * `other_ns` under aten::mm, and `nbare` kernels outside any operator. */
static tbe_analysis *advice_of(int ncast, int htod, int nother, int64_t other_ns, int nbare,
                               tbe_trace **t) {
  tb b;
  tb_init(&b);
  int64_t at = 0;
  for (int i = 0; i < ncast; i++, at += 2000) {
    op(&b, b.host, "aten::copy_", at, 1000, NULL);
    if (!htod) {
      launch(&b, b.host, at + 10, "cast_kernel", 1000);
      continue;
    }
    uint64_t c = ++b.corr;
    ev(&b, b.host, TBE_EV_RUNTIME, "cudaMemcpyAsync", at + 10, 10, c, NULL, NULL);
    tbe_memcpy m;
    memset(&m, 0, sizeof m);
    m.copy_kind = TBE_COPY_HTOD;
    m.src_device = -1;
    ev(&b, b.stream, TBE_EV_MEMCPY, "Memcpy HtoD (Pinned -> Device)", at + 30, 1000, c, &m, NULL);
  }
  for (int i = 0; i < nother; i++, at += other_ns + 2000) {
    op(&b, b.host, "aten::mm", at, other_ns + 1000, NULL);
    launch(&b, b.host, at + 10, "gemm", other_ns);
  }
  for (int i = 0; i < nbare; i++, at += 2000) launch(&b, b.host, at, "bare", 1000);
  *t = tb_finish(&b);
  tbe_analysis *an = NULL;
  assert_int_equal(tbe_analysis_create(&an, *t, NULL), 0);
  return an;
}

static void test_advice_copies(void **state) {
  (void)state;
  tbe_trace *t;
  /* 20 of 25 activities: fires, named, with its figure */
  tbe_analysis *an = advice_of(20, 0, 5, 10000, 0, &t);
  assert_true(
      has_advice(an, TBE_ADVICE_OP_COPIES,
                 "aten::copy_ launches 80.0% of the GPU work with the other copy and cast "
                 "operators (20 of 25 kernels, copies and memsets; 0.020 ms): dtype casts"));
  tbe_analysis_free(an);
  tbe_trace_free(t);
  /* 19: under the minimum */
  an = advice_of(19, 0, 1, 10000, 0, &t);
  assert_false(has_advice(an, TBE_ADVICE_OP_COPIES, NULL));
  tbe_analysis_free(an);
  tbe_trace_free(t);
  /* 20 of 101: under 20% */
  an = advice_of(20, 0, 1, 10000, 80, &t);
  assert_false(has_advice(an, TBE_ADVICE_OP_COPIES, NULL));
  tbe_analysis_free(an);
  tbe_trace_free(t);
  /* 20 of 100: at 20% */
  an = advice_of(20, 0, 1, 10000, 79, &t);
  assert_true(has_advice(an, TBE_ADVICE_OP_COPIES, "20.0%"));
  tbe_analysis_free(an);
  tbe_trace_free(t);
  /* copies to the device are transfers, not casts */
  an = advice_of(30, 1, 5, 10000, 0, &t);
  assert_int_equal(an->op_gpu_count, 35);
  assert_false(has_advice(an, TBE_ADVICE_OP_COPIES, NULL));
  tbe_analysis_free(an);
  tbe_trace_free(t);
}

static void test_advice_dominant(void **state) {
  (void)state;
  tbe_trace *t;
  /* aten::mm: 5 x 10 us = 50 us of 55 us (copy_: 5 x 1 us) */
  tbe_analysis *an = advice_of(5, 0, 5, 10000, 0, &t);
  assert_true(has_advice(an, TBE_ADVICE_OP_DOMINANT,
                         "aten::mm owns 90.9% of the GPU time (0.050 of 0.055 ms, 5 launches in 5 "
                         "calls)"));
  tbe_analysis_free(an);
  tbe_trace_free(t);
  /* the only operator with GPU work: nothing to compare it with */
  an = advice_of(0, 0, 5, 10000, 0, &t);
  assert_false(has_advice(an, TBE_ADVICE_OP_DOMINANT, NULL));
  tbe_analysis_free(an);
  tbe_trace_free(t);
  /* the boundary: 24.5 us of 48.5 (50.5%) fires, of 49.5 (49.5%) does not */
  an = advice_of(5, 0, 5, 4900, 19, &t);
  assert_true(has_advice(an, TBE_ADVICE_OP_DOMINANT, "aten::mm owns 50.5% of the GPU time"));
  tbe_analysis_free(an);
  tbe_trace_free(t);
  an = advice_of(5, 0, 5, 4900, 20, &t);
  assert_false(has_advice(an, TBE_ADVICE_OP_DOMINANT, NULL));
  tbe_analysis_free(an);
  tbe_trace_free(t);
}

/* `calls` calls of aten::_foreach_add_, each launching `per` kernels of
 * `ns`, and `nbig` kernels of 100 us under aten::mm. */
static tbe_analysis *tiny_of(int calls, int per, int64_t ns, int nbig, tbe_trace **t) {
  tb b;
  tb_init(&b);
  int64_t at = 0;
  for (int i = 0; i < calls; i++) {
    int64_t len = per * (ns + 100) + 100;
    op(&b, b.host, "aten::_foreach_add_", at, len, NULL);
    for (int k = 0; k < per; k++)
      launch(&b, b.host, at + 10 + k * (ns + 100), "multi_tensor_apply", ns);
    at += len + 100;
  }
  for (int i = 0; i < nbig; i++, at += 200000) {
    op(&b, b.host, "aten::mm", at, 101000, NULL);
    launch(&b, b.host, at + 10, "gemm", 100000);
  }
  *t = tb_finish(&b);
  tbe_analysis *an = NULL;
  assert_int_equal(tbe_analysis_create(&an, *t, NULL), 0);
  return an;
}

static void test_advice_tiny(void **state) {
  (void)state;
  tbe_trace *t;
  /* 60 launches of 2 us, 4 per call, of 61 */
  tbe_analysis *an = tiny_of(15, 4, 2000, 1, &t);
  assert_true(
      has_advice(an, TBE_ADVICE_OP_TINY,
                 "aten::_foreach_add_ launches 98.4% of the GPU work as 60 kernels of 2.0 us "
                 "on average (4.0 per call): a fusion candidate"));
  tbe_analysis_free(an);
  tbe_trace_free(t);
  /* 3 per call: not */
  an = tiny_of(20, 3, 2000, 1, &t);
  assert_false(has_advice(an, TBE_ADVICE_OP_TINY, NULL));
  tbe_analysis_free(an);
  tbe_trace_free(t);
  /* kernels of 5 us (TBE_SHORT_KERNEL_NS): not tiny */
  an = tiny_of(15, 4, 5000, 1, &t);
  assert_false(has_advice(an, TBE_ADVICE_OP_TINY, NULL));
  tbe_analysis_free(an);
  tbe_trace_free(t);
  /* 48 launches: under the minimum */
  an = tiny_of(12, 4, 2000, 1, &t);
  assert_false(has_advice(an, TBE_ADVICE_OP_TINY, NULL));
  tbe_analysis_free(an);
  tbe_trace_free(t);
  /* 60 of 601 (9.98%): under 10% */
  an = tiny_of(15, 4, 2000, 541, &t);
  assert_false(has_advice(an, TBE_ADVICE_OP_TINY, NULL));
  tbe_analysis_free(an);
  tbe_trace_free(t);
  /* 60 of 600: at 10% */
  an = tiny_of(15, 4, 2000, 540, &t);
  assert_true(has_advice(an, TBE_ADVICE_OP_TINY, "10.0%"));
  tbe_analysis_free(an);
  tbe_trace_free(t);
}

/* ---- the golden Kineto traces against their JSON ---- */

/* The GPU work of the JSON whose "External id" names a cpu_op event: how
 * much and how long (ns, from the JSON's microseconds). */
static void scan_json(const char *rel, uint64_t *count, int64_t *ns, uint64_t *total) {
  size_t n;
  uint8_t *text = tu_read_file(tu_data(rel), &n);
  assert_non_null(text);
  char err[256];
  yajl_val doc = yajl_tree_parse((const char *)text, err, sizeof err);
  assert_non_null(doc);
  const char *pe[] = {"traceEvents", NULL};
  yajl_val evs = yajl_tree_get(doc, pe, yajl_t_array);
  assert_non_null(evs);
  /* cpu_op external ids: sorted, then searched */
  size_t nev = evs->u.array.len, nops = 0;
  int64_t *ops = malloc((nev + 1) * sizeof *ops);
  assert_non_null(ops);
  const char *pc[] = {"cat", NULL}, *pa[] = {"args", "External id", NULL}, *pd[] = {"dur", NULL};
  for (size_t i = 0; i < nev; i++) {
    yajl_val e = evs->u.array.values[i], c = yajl_tree_get(e, pc, yajl_t_string);
    yajl_val x = yajl_tree_get(e, pa, yajl_t_number);
    const char *cat = c ? YAJL_GET_STRING(c) : NULL;
    if (cat && x && strcmp(cat, "cpu_op") == 0) ops[nops++] = YAJL_GET_INTEGER(x);
  }
  *count = *total = 0;
  *ns = 0;
  for (size_t i = 0; i < nev; i++) {
    yajl_val e = evs->u.array.values[i], c = yajl_tree_get(e, pc, yajl_t_string);
    const char *cat = c ? YAJL_GET_STRING(c) : NULL;
    if (!cat) continue;
    if (strcmp(cat, "kernel") && strcmp(cat, "gpu_memcpy") && strcmp(cat, "gpu_memset")) continue;
    (*total)++;
    yajl_val x = yajl_tree_get(e, pa, yajl_t_number), d = yajl_tree_get(e, pd, yajl_t_number);
    int found = 0;
    for (size_t k = 0; x && k < nops && !found; k++) found = ops[k] == YAJL_GET_INTEGER(x);
    if (!found) continue;
    (*count)++;
    *ns += (int64_t)llround(YAJL_GET_DOUBLE(d) * 1000.0);
  }
  free(ops);
  yajl_tree_free(doc);
  free(text);
}

static void test_golden(void **state) {
  (void)state;
  static const char *const files[] = {"kineto/h200_cnn_fp32.pt.trace.json",
                                      "kineto/h200_cnn_bf16.pt.trace.json"};
  for (size_t f = 0; f < 2; f++) {
    tbe_trace *t;
    assert_int_equal(tbe_trace_create(&t, NULL), 0);
    tbe_import_error err;
    assert_int_equal(tbe_import_file(t, tu_data(files[f]), NULL, &err), 0);
    tbe_analysis *an = NULL;
    assert_int_equal(tbe_analysis_create(&an, t, NULL), 0);
    uint64_t count, total;
    int64_t ns;
    scan_json(files[f], &count, &ns, &total);
    assert_true(count > 100 && count == total); /* every launch of these is an operator's */
    assert_int_equal(an->op_gpu_count, count);
    /* the model keeps ns from the JSON's microseconds: within 1 ns each */
    assert_true(llabs(an->op_gpu_ns - ns) <= (long long)count);
    check_lists(an, TBE_GROUP_CPU_OP);
    check_lists(an, TBE_GROUP_CPU_OP_SHAPE);
    uint64_t sum = 0;
    for (size_t i = 0; i < an->ngroups[TBE_GROUP_CPU_OP]; i++)
      sum += an->groups[TBE_GROUP_CPU_OP][i].kernels;
    assert_int_equal(sum, count);
    assert_true(an->ngroups[TBE_GROUP_CPU_OP_SHAPE] > an->ngroups[TBE_GROUP_CPU_OP]);
    tbe_analysis_free(an);
    tbe_trace_free(t);
  }
}

/* ---- allocation failures ---- */

static tbe_trace *sweep_trace;

static int analyse_run(const tbe_allocator *a, void *ctx) {
  (void)ctx;
  tbe_analysis *an = NULL;
  int rc = tbe_analysis_create(&an, sweep_trace, a);
  if (rc) {
    assert_null(an);
    return rc;
  }
  tbe_diff *d = NULL;
  rc = tbe_diff_create(&d, an, an, a);
  tbe_analysis *two[2] = {an, an};
  tbe_run_analysis *r = NULL;
  if (!rc) rc = tbe_run_analysis_create(&r, two, NULL, 2, a);
  if (!rc) {
    tbe_report_options o;
    tbe_report_options_init(&o);
    o.allocator = a;
    o.group_by = TBE_GROUP_BY_SHAPE;
    char *s = NULL;
    size_t n = 0;
    for (int f = 0; f < 4 && !rc; f++) {
      o.format = f;
      rc = tbe_report_run(r, &o, &s, &n);
      if (!rc) tbe_report_free(s, n, a);
    }
  }
  tbe_run_analysis_free(r);
  tbe_diff_free(d);
  tbe_analysis_free(an);
  return rc;
}

static void test_alloc_sweep(void **state) {
  (void)state;
  sweep_trace = build(300, 70);
  assert_true(tu_alloc_sweep(analyse_run, NULL, 400) > 10);
  tbe_trace_free(sweep_trace);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_figures),       cmocka_unit_test(test_shapes),
      cmocka_unit_test(test_no_gpu_work),   cmocka_unit_test(test_sort),
      cmocka_unit_test(test_diff),          cmocka_unit_test(test_run_merge),
      cmocka_unit_test(test_advice_copies), cmocka_unit_test(test_advice_dominant),
      cmocka_unit_test(test_advice_tiny),   cmocka_unit_test(test_golden),
      cmocka_unit_test(test_alloc_sweep),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
