/* test_memory.c: the memory curve of a trace (src/trace/model/memory.c)
 * and its figures and advice (src/trace/analysis/analysis_memory.c,
 * analysis_advice.c), on traces built through the experimental API.
 *
 * What must never happen:
 *   - a CUDA curve whose totals differ from the live bytes of the
 *     allocations made (known malloc/free sizes, to the byte), or a total
 *     below 0 (a free of memory allocated before the profile);
 *   - a process with an allocator curve for a GPU read as two curves: its
 *     CUDA events there keep the name "[memory]"; or a process without one
 *     losing its CUDA curve;
 *   - pinned host memory counted on a GPU;
 *   - a planted leak (64 MiB kept per step over 20 steps) not named with
 *     its bytes per step and its steps, or fragmentation not named;
 *   - a trace without memory events showing a memory figure (a wrong 0);
 *   - a second pass, or an export to Chrome JSON read back, changing the
 *     totals. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "tbexport.h"
#include "tbexport/analysis.h"
#include "tbexport/export.h"
#include "tbexport/import.h"
#include "testutil.h"
#include "trace/analysis/figures.h"
#include "trace/model/model_int.h"

#define T0 1790000000000000000LL
#define MIB ((int64_t)1 << 20)
#define GIB ((int64_t)1 << 30)

/* ---- building traces ---- */

static tbe_trace *mk(void) {
  tbe_trace *t = NULL;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  return t;
}

/* A memory event at T0 + ts ns: the driver's on a stream of `dev`, an
 * allocator's on the process's thread (totals -1: unknown). */
static void mem(tbe_trace *t, int64_t pid, int64_t ts, int32_t dev, int src, int kind,
                uint64_t addr, int64_t bytes, int64_t ta, int64_t tr) {
  uint32_t track;
  if (src == TBE_MEMSRC_ALLOCATOR)
    assert_int_equal(tbe_trace_track(t, TBE_TRACK_THREAD, pid, pid + 1, -1, &track), 0);
  else
    assert_int_equal(tbe_trace_track(t, TBE_TRACK_STREAM, pid, 7, dev < 0 ? 0 : dev, &track), 0);
  tbe_event e;
  memset(&e, 0, sizeof e);
  e.kind = TBE_EV_MEMORY;
  e.start_ns = T0 + ts;
  e.track = track;
  e.name = tbe_trace_str_id(t, "[memory]");
  tbe_memory m;
  memset(&m, 0, sizeof m);
  m.addr = addr;
  m.bytes = bytes;
  m.total_allocated = ta;
  m.total_reserved = tr;
  m.device = dev;
  m.device_type = dev >= 0 ? 1 : 0;
  m.source = (uint8_t)src;
  m.mem_kind = (uint8_t)kind;
  assert_int_equal(tbe_trace_add_event(t, &e, &m, NULL, 0, NULL), 0);
}

static void kernel(tbe_trace *t, int64_t ts, int64_t dur) {
  uint32_t track;
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_STREAM, 1, 7, 0, &track), 0);
  tbe_event e;
  memset(&e, 0, sizeof e);
  e.kind = TBE_EV_KERNEL;
  e.start_ns = T0 + ts;
  e.dur_ns = dur;
  e.track = track;
  e.name = tbe_trace_str_id(t, "k");
  tbe_kernel k;
  memset(&k, 0, sizeof k);
  k.queued_ns = -1;
  k.occupancy_pct = k.blocks_per_sm = k.warps_per_sm = -1;
  assert_int_equal(tbe_trace_add_event(t, &e, &k, NULL, 0, NULL), 0);
}

/* The memory events of the finished trace in time order (ties: event
 * order), their details in out[] (at most n); returns how many. */
static size_t curve(const tbe_trace *t, const tbe_memory **out, const tbe_event **ev, size_t n) {
  size_t k = 0;
  for (size_t i = 0; i < t->nevents; i++)
    if (t->events[i].kind == TBE_EV_MEMORY && k < n) {
      ev[k] = &t->events[i];
      out[k++] = tbe_trace_memory(t, &t->events[i]);
    }
  for (size_t i = 1; i < k; i++) /* insertion sort by start */
    for (size_t j = i; j > 0 && ev[j]->start_ns < ev[j - 1]->start_ns; j--) {
      const tbe_event *x = ev[j];
      const tbe_memory *y = out[j];
      ev[j] = ev[j - 1], out[j] = out[j - 1];
      ev[j - 1] = x, out[j - 1] = y;
    }
  return k;
}

static tbe_analysis *analyse(const tbe_trace *t) {
  tbe_analysis *an = NULL;
  assert_int_equal(tbe_analysis_create(&an, t, NULL), 0);
  return an;
}

static const tbe_device_stats *gpu(const tbe_analysis *an, int32_t id) {
  for (size_t i = 0; i < an->ndevices; i++)
    if (an->devices[i].device == id) return &an->devices[i];
  fail_msg("no GPU %d in the analysis", (int)id);
  return NULL;
}

static const char *advice_of(const tbe_analysis *an, uint32_t kind) {
  for (size_t i = 0; i < an->nadvice; i++)
    if (an->advice[i].kind == kind) return an->advice[i].text;
  return NULL;
}

static char *summary(tbe_analysis *an, int format) {
  tbe_report_options o;
  tbe_report_options_init(&o);
  o.format = format;
  o.width = 200;
  char *s = NULL;
  size_t n = 0;
  assert_int_equal(tbe_report_summary(an, &o, &s, &n), 0);
  return s;
}

/* ---- the CUDA curve ---- */

/* Known cudaMalloc/cudaFree sizes: the totals are the live bytes to the
 * byte, reserved equal to allocated; an unknown source counts as CUDA. */
static void test_cuda_curve_exact(void **state) {
  (void)state;
  tbe_trace *t = mk();
  mem(t, 1, 10, 0, TBE_MEMSRC_CUDA, TBE_MEM_DEVICE, 0xa1, 1000003, -1, -1);
  mem(t, 1, 20, 0, TBE_MEMSRC_CUDA, TBE_MEM_DEVICE, 0xa2, 2 * MIB, -1, -1);
  mem(t, 1, 30, 0, TBE_MEMSRC_UNKNOWN, TBE_MEM_DEVICE, 0xa1, -1000003, -1, -1);
  mem(t, 1, 40, 0, TBE_MEMSRC_CUDA, TBE_MEM_MANAGED, 0xa3, 4096, -1, -1);
  mem(t, 1, 50, 0, TBE_MEMSRC_CUDA, TBE_MEM_DEVICE, 0xa2, -2 * MIB, -1, -1);
  mem(t, 1, 60, 0, TBE_MEMSRC_CUDA, TBE_MEM_MANAGED, 0xa3, -4096, -1, -1);
  assert_int_equal(tbe_trace_finish(t), 0);
  const int64_t want[6] = {1000003, 1000003 + 2 * MIB, 2 * MIB, 2 * MIB + 4096, 4096, 0};
  const tbe_memory *m[8];
  const tbe_event *e[8];
  assert_int_equal(curve(t, m, e, 8), 6);
  for (int i = 0; i < 6; i++) {
    assert_int_equal(m[i]->total_allocated, want[i]);
    assert_int_equal(m[i]->total_reserved, want[i]);
    assert_string_equal(tbe_trace_str(t, e[i]->name), "[memory]");
  }
  assert_int_equal(t->nwarnings, 0);
  tbe_analysis *an = analyse(t);
  assert_int_equal(gpu(an, 0)->mem_peak_allocated, 1000003 + 2 * MIB);
  assert_int_equal(gpu(an, 0)->mem_peak_reserved, 1000003 + 2 * MIB);
  assert_int_equal(an->all.mem_peak_allocated, 1000003 + 2 * MIB);
  tbe_analysis_free(an);
  tbe_trace_free(t);
}

/* A free whose allocation came before the profile: nothing subtracted,
 * never below 0, counted in one warning. */
static void test_free_before_window(void **state) {
  (void)state;
  tbe_trace *t = mk();
  mem(t, 1, 10, 0, TBE_MEMSRC_CUDA, TBE_MEM_DEVICE, 0xb0, -512, -1, -1);
  mem(t, 1, 20, 0, TBE_MEMSRC_CUDA, TBE_MEM_DEVICE, 0xb1, 100, -1, -1);
  mem(t, 1, 30, 0, TBE_MEMSRC_CUDA, TBE_MEM_DEVICE, 0xb2, -7, -1, -1);
  mem(t, 1, 40, 0, TBE_MEMSRC_CUDA, TBE_MEM_DEVICE, 0xb1, -100, -1, -1);
  assert_int_equal(tbe_trace_finish(t), 0);
  const tbe_memory *m[4];
  const tbe_event *e[4];
  assert_int_equal(curve(t, m, e, 4), 4);
  const int64_t want[4] = {0, 100, 100, 0};
  for (int i = 0; i < 4; i++) assert_int_equal(m[i]->total_allocated, want[i]);
  assert_int_equal(t->nwarnings, 1);
  const char *w = tbe_trace_str(t, t->warnings[0]);
  assert_non_null(strstr(w, "2 frees of memory allocated before the profile began"));
  tbe_trace_free(t);
}

/* Pinned and pageable host memory counts on the host, not on the GPU. */
static void test_host_pinned(void **state) {
  (void)state;
  tbe_trace *t = mk();
  kernel(t, 0, 100);
  mem(t, 1, 10, 0, TBE_MEMSRC_CUDA, TBE_MEM_PINNED, 0xc1, 64 * MIB, -1, -1);
  mem(t, 1, 20, 0, TBE_MEMSRC_CUDA, TBE_MEM_DEVICE, 0xc2, 8 * MIB, -1, -1);
  mem(t, 1, 30, 0, TBE_MEMSRC_CUDA, TBE_MEM_PAGEABLE, 0xc3, MIB, -1, -1);
  assert_int_equal(tbe_trace_finish(t), 0);
  const tbe_memory *m[4];
  const tbe_event *e[4];
  assert_int_equal(curve(t, m, e, 4), 3);
  assert_int_equal(m[0]->device, -1);
  assert_int_equal(m[0]->device_type, 0);
  assert_int_equal(m[0]->total_allocated, 64 * MIB);
  assert_int_equal(m[1]->device, 0);
  assert_int_equal(m[1]->total_allocated, 8 * MIB);
  assert_int_equal(m[2]->device, -1);
  assert_int_equal(m[2]->total_allocated, 65 * MIB);
  tbe_analysis *an = analyse(t);
  assert_int_equal(an->ndevices, 1);
  assert_int_equal(gpu(an, 0)->mem_peak_allocated, 8 * MIB);
  tbe_analysis_free(an);
  tbe_trace_free(t);
}

/* ---- which source is the curve ---- */

/* Process 1 has allocator events on GPU 0: its CUDA events there are
 * "[cuda memory]", its allocator's totals the curve.  Its CUDA events on
 * GPU 1 (no allocator there) and process 2's on GPU 0 stay the curve.  An
 * allocator's missing totals are running sums. */
static void test_allocator_precedence(void **state) {
  (void)state;
  tbe_trace *t = mk();
  mem(t, 1, 10, 0, TBE_MEMSRC_CUDA, TBE_MEM_DEVICE, 0xd0, 20 * MIB, -1, -1);
  mem(t, 1, 11, 0, TBE_MEMSRC_ALLOCATOR, 0, 0x100, 2 * MIB, 2 * MIB, 20 * MIB);
  mem(t, 1, 12, 0, TBE_MEMSRC_ALLOCATOR, 0, 0x200, 3 * MIB, -1, -1);
  mem(t, 1, 13, 0, TBE_MEMSRC_ALLOCATOR, 0, 0x100, -2 * MIB, -1, -1);
  mem(t, 1, 14, 1, TBE_MEMSRC_CUDA, TBE_MEM_DEVICE, 0xd1, 6 * MIB, -1, -1);
  mem(t, 2, 15, 0, TBE_MEMSRC_CUDA, TBE_MEM_DEVICE, 0xd2, 10 * MIB, -1, -1);
  assert_int_equal(tbe_trace_finish(t), 0);
  const tbe_memory *m[8];
  const tbe_event *e[8];
  assert_int_equal(curve(t, m, e, 8), 6);
  assert_string_equal(tbe_trace_str(t, e[0]->name), "[cuda memory]");
  assert_int_equal(m[0]->total_allocated, 20 * MIB); /* its own source's totals */
  for (int i = 1; i < 6; i++) assert_string_equal(tbe_trace_str(t, e[i]->name), "[memory]");
  assert_int_equal(m[1]->total_allocated, 2 * MIB);
  assert_int_equal(m[2]->total_allocated, 5 * MIB);
  assert_int_equal(m[2]->total_reserved, 20 * MIB);
  assert_int_equal(m[3]->total_allocated, 3 * MIB);
  assert_int_equal(m[3]->total_reserved, 20 * MIB);
  assert_int_equal(m[4]->total_allocated, 6 * MIB);
  assert_int_equal(m[5]->total_allocated, 10 * MIB);
  tbe_analysis *an = analyse(t);
  /* GPU 0: process 1's allocator (5 MiB at its peak) and process 2's
   * driver curve (10 MiB, after) add up: 3 + 10 at the end */
  assert_int_equal(gpu(an, 0)->mem_peak_allocated, 13 * MIB);
  assert_int_equal(gpu(an, 0)->mem_peak_reserved, 30 * MIB);
  assert_int_equal(gpu(an, 1)->mem_peak_allocated, 6 * MIB);
  assert_int_equal(an->all.mem_peak_allocated, 13 * MIB);
  tbe_analysis_free(an);
  tbe_trace_free(t);
}

/* ---- figures and advice ---- */

#define NSTEPS 20
#define STEP_NS 1000000

/* 20 steps; in each a transient 32 MiB (allocated, freed) and `kept`
 * bytes allocated and never freed, Kineto-style (the allocator's totals);
 * 100 MiB allocated before the steps.  Reserved: `res` when >= 0, else
 * allocated. */
static tbe_trace *loop_trace(int64_t kept, int64_t res) {
  tbe_trace *t = mk();
  int64_t alloc = 100 * MIB;
  mem(t, 1, 1, 0, TBE_MEMSRC_ALLOCATOR, 0, 0x1000, alloc, alloc, res >= 0 ? res : alloc);
  for (int s = 0; s < NSTEPS; s++) {
    int64_t at = (int64_t)(s + 1) * STEP_NS;
    char name[32];
    snprintf(name, sizeof name, "ProfilerStep#%d", s);
    assert_int_equal(
        tbe_trace_add_step(t, s, T0 + at, T0 + at + STEP_NS, tbe_trace_str_id(t, name)), 0);
    kernel(t, at + 10, 1000);
    alloc += 32 * MIB;
    mem(t, 1, at + 100, 0, TBE_MEMSRC_ALLOCATOR, 0, 0x2000, 32 * MIB, alloc,
        res >= 0 ? res : alloc);
    alloc += kept;
    mem(t, 1, at + 200, 0, TBE_MEMSRC_ALLOCATOR, 0, 0x10000 + (uint64_t)s * 0x1000, kept, alloc,
        res >= 0 ? res : alloc);
    alloc -= 32 * MIB;
    mem(t, 1, at + 300, 0, TBE_MEMSRC_ALLOCATOR, 0, 0x2000, -32 * MIB, alloc,
        res >= 0 ? res : alloc);
  }
  assert_int_equal(tbe_trace_finish(t), 0);
  return t;
}

static void test_leak(void **state) {
  (void)state;
  tbe_trace *t = loop_trace(64 * MIB, -1);
  tbe_analysis *an = analyse(t);
  const tbe_device_stats *d = gpu(an, 0);
  assert_int_equal(d->mem_growth_per_step, 64 * MIB);
  assert_int_equal(d->mem_unfreed, NSTEPS * 64 * MIB);
  assert_int_equal(d->mem_peak_allocated, 100 * MIB + NSTEPS * 64 * MIB + 32 * MIB);
  assert_int_equal(an->nsteps, NSTEPS);
  for (size_t s = 0; s < an->nsteps; s++) /* before the transient is freed */
    assert_int_equal(an->steps[s].mem_peak_allocated,
                     100 * MIB + (int64_t)(s + 1) * 64 * MIB + 32 * MIB);
  const char *a = advice_of(an, TBE_ADVICE_MEM_LEAK);
  assert_non_null(a);
  assert_string_equal(a,
                      "GPU 0: allocated grows 64 MiB per step over 20 steps, never freed (1.25 GiB "
                      "by the end): a tensor kept each step (a list, a history of losses with "
                      "their graphs)");
  assert_null(advice_of(an, TBE_ADVICE_MEM_FRAGMENTED));
  /* what the user reads: the table and the JSON */
  char *tab = summary(an, TBE_REPORT_TABLE), *js = summary(an, TBE_REPORT_JSON);
  assert_non_null(strstr(tab, "peak allocated"));
  assert_non_null(strstr(tab, "+64 MiB"));
  assert_non_null(strstr(tab, "allocated grows 64 MiB per step over 20 steps"));
  char want[96];
  snprintf(want, sizeof want, "\"memory_growth_bytes_per_step\":%lld", (long long)(64 * MIB));
  assert_non_null(strstr(js, want));
  tbe_report_free(tab, strlen(tab), NULL);
  tbe_report_free(js, strlen(js), NULL);
  tbe_analysis_free(an);
  tbe_trace_free(t);

  /* the same loop keeping nothing: flat, no advice */
  t = loop_trace(0, -1);
  an = analyse(t);
  assert_int_equal(gpu(an, 0)->mem_growth_per_step, 0);
  assert_int_equal(gpu(an, 0)->mem_unfreed, 0);
  assert_null(advice_of(an, TBE_ADVICE_MEM_LEAK));
  tbe_analysis_free(an);
  tbe_trace_free(t);
}

static void test_fragmentation(void **state) {
  (void)state;
  tbe_trace *t = loop_trace(0, 4 * GIB);
  tbe_analysis *an = analyse(t);
  const tbe_device_stats *d = gpu(an, 0);
  assert_int_equal(d->mem_peak_allocated, 132 * MIB);
  assert_int_equal(d->mem_peak_reserved, 4 * GIB);
  const char *a = advice_of(an, TBE_ADVICE_MEM_FRAGMENTED);
  assert_non_null(a);
  assert_string_equal(a,
                      "GPU 0: reserved 4 GiB at the peak while allocated 132 MiB: the caching "
                      "allocator holds 3.87 GiB it cannot reuse; try "
                      "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True");
  assert_null(advice_of(an, TBE_ADVICE_MEM_LEAK));
  tbe_analysis_free(an);
  tbe_trace_free(t);
}

/* No memory events: every memory figure unknown, no row in the table, null
 * in the JSON; never a 0. */
static void test_no_memory(void **state) {
  (void)state;
  tbe_trace *t = mk();
  kernel(t, 0, 1000);
  assert_int_equal(tbe_trace_add_step(t, 1, T0, T0 + 2000, tbe_trace_str_id(t, "ProfilerStep#1")),
                   0);
  assert_int_equal(tbe_trace_finish(t), 0);
  tbe_analysis *an = analyse(t);
  for (size_t i = 0; i < TBE__FIG__COUNT; i++) {
    const tbe__figure *f = &tbe__figures[i];
    if (!tbe__fig_is_mem(f)) continue;
    const void *obj = f->scope == TBE__FS_DEVICE ? (const void *)&an->devices[0]
                      : f->scope == TBE__FS_STEP ? (const void *)&an->steps[0]
                                                 : (const void *)an;
    assert_true(isnan(tbe__fig_real(f, obj, 0)));
    if (f->scope == TBE__FS_DEVICE) assert_true(isnan(tbe__fig_real(f, &an->all, 0)));
  }
  char *tab = summary(an, TBE_REPORT_TABLE), *js = summary(an, TBE_REPORT_JSON);
  char *md = summary(an, TBE_REPORT_MARKDOWN);
  assert_null(strstr(tab, "peak allocated"));
  assert_null(strstr(md, "peak allocated"));
  assert_non_null(strstr(js, "\"peak_allocated_bytes\":null"));
  assert_null(strstr(js, "\"peak_allocated_bytes\":0"));
  tbe_report_free(tab, strlen(tab), NULL);
  tbe_report_free(js, strlen(js), NULL);
  tbe_report_free(md, strlen(md), NULL);
  tbe_analysis_free(an);
  tbe_trace_free(t);
}

/* ---- sampled memory (counter tracks) ---- */

/* A counter sample of GPU 0's `metric` at T0 + ts. */
static void sample(tbe_trace *t, const char *metric, int64_t ts, double v) {
  uint32_t track;
  tbe_str name = tbe_trace_str_id(t, metric);
  assert_int_equal(tbe_trace_metric_track(t, 1, 0, name, &track), 0);
  tbe_event e;
  memset(&e, 0, sizeof e);
  e.kind = TBE_EV_COUNTER;
  e.start_ns = T0 + ts;
  e.track = track;
  e.name = name;
  e.detail = TBE_NONE;
  e.link = TBE_NONE;
  tbe_counter c = {v};
  assert_int_equal(tbe_trace_add_event(t, &e, &c, NULL, 0, NULL), 0);
}

/* A JAX program (no memory events): its allocator's samples make GPU 0's
 * curve, which grows 64 MiB a step; NVML's samples give the sampled
 * peak; neither is a GPU metric. */
static void test_sampled(void **state) {
  (void)state;
  tbe_trace *t = mk();
  int64_t use = 200 * MIB;
  for (int s = 0; s < NSTEPS; s++) {
    int64_t at = (int64_t)(s + 1) * STEP_NS;
    char name[32];
    snprintf(name, sizeof name, "step %d", s);
    assert_int_equal(
        tbe_trace_add_step(t, s, T0 + at, T0 + at + STEP_NS, tbe_trace_str_id(t, name)), 0);
    kernel(t, at + 10, 1000);
    sample(t, "JAX bytes in use", at + 100, (double)(use + 32 * MIB)); /* a temporary */
    use += 64 * MIB;
    sample(t, "JAX bytes in use", at + 500, (double)use);
    sample(t, "JAX bytes reserved", at + 100, (double)(4 * GIB));
    sample(t, "JAX peak bytes in use", at + 500, (double)(use + 40 * MIB));
    sample(t, "device memory used (NVML)", at + 600, (double)(use + 500 * MIB));
  }
  assert_int_equal(tbe_trace_finish(t), 0);
  tbe_analysis *an = analyse(t);
  const tbe_device_stats *d = gpu(an, 0);
  assert_int_equal(d->mem_peak_allocated, use + 40 * MIB); /* JAX's own peak, above the samples */
  assert_int_equal(d->mem_peak_reserved, 4 * GIB);
  assert_int_equal(d->mem_growth_per_step, 64 * MIB);
  assert_int_equal(d->mem_unfreed, -1); /* samples have no addresses */
  assert_int_equal(d->mem_sampled_peak, use + 500 * MIB);
  assert_int_equal(an->all.mem_sampled_peak, use + 500 * MIB);
  assert_int_equal(an->steps[1].mem_peak_allocated, 200 * MIB + 2 * 64 * MIB); /* its end */
  const char *leak = advice_of(an, TBE_ADVICE_MEM_LEAK);
  assert_non_null(leak);
  assert_non_null(strstr(leak, "64 MiB per step"));
  char *tab = summary(an, TBE_REPORT_TABLE);
  assert_non_null(strstr(tab, "peak used (NVML)"));
  assert_null(strstr(tab, "JAX bytes in use")); /* not averaged as a GPU metric */
  assert_null(strstr(tab, "device memory used (NVML)"));
  tbe_report_free(tab, strlen(tab), NULL);
  tbe_analysis_free(an);
  tbe_trace_free(t);
}

/* ---- idempotence ---- */

static void totals_of(const tbe_trace *t, int64_t *v, size_t *n, size_t cap) {
  const tbe_memory *m[64];
  const tbe_event *e[64];
  size_t k = curve(t, m, e, 64);
  *n = 0;
  for (size_t i = 0; i < k && *n + 2 <= cap; i++) {
    if (strcmp(tbe_trace_str(t, e[i]->name), "[memory]") != 0) continue;
    v[(*n)++] = m[i]->total_allocated;
    v[(*n)++] = m[i]->total_reserved;
  }
}

static void test_idempotent(void **state) {
  (void)state;
  tbe_trace *t = mk();
  kernel(t, 0, 1000);
  mem(t, 1, 5, 0, TBE_MEMSRC_CUDA, TBE_MEM_DEVICE, 0xe0, 40 * MIB, -1, -1);
  mem(t, 1, 6, 0, TBE_MEMSRC_ALLOCATOR, 0, 0x100, 2 * MIB, -1, -1);
  mem(t, 1, 7, 0, TBE_MEMSRC_ALLOCATOR, 0, 0x200, 3 * MIB, -1, 40 * MIB);
  mem(t, 1, 8, 0, TBE_MEMSRC_ALLOCATOR, 0, 0x100, -2 * MIB, -1, -1);
  /* (one process: Chrome JSON's GPU rows do not say which process their
   * events are of; a reader gives them the file's one process) */
  mem(t, 1, 9, 1, TBE_MEMSRC_CUDA, TBE_MEM_DEVICE, 0xe1, 1000, -1, -1);
  mem(t, 1, 10, 1, TBE_MEMSRC_CUDA, TBE_MEM_PINNED, 0xe2, 4096, -1, -1);
  mem(t, 1, 11, 1, TBE_MEMSRC_CUDA, TBE_MEM_DEVICE, 0xe1, -1000, -1, -1);
  assert_int_equal(tbe_trace_finish(t), 0);
  int64_t a[64], b[64];
  size_t na, nb;
  totals_of(t, a, &na, 64);
  assert_int_equal(na, 12);
  size_t nev = t->nevents;
  /* a second pass changes nothing */
  assert_int_equal(tbe__trace_memory_curve(t), 0);
  totals_of(t, b, &nb, 64);
  assert_int_equal(nb, na);
  assert_memory_equal(a, b, na * sizeof *a);
  assert_int_equal(t->nevents, nev);
  tbe_analysis *an = analyse(t);
  int64_t peak = gpu(an, 0)->mem_peak_allocated, res = gpu(an, 0)->mem_peak_reserved;
  int64_t peak1 = gpu(an, 1)->mem_peak_allocated;
  assert_int_equal(peak1, 1000);
  tbe_analysis_free(an);
  /* Chrome JSON and back */
  char *dir = tu_mkdtemp();
  char *j = tu_join(dir, "t.trace.json");
  assert_int_equal(tbe_export_chrome_json(t, j, 0, 1), 0);
  tbe_trace *r = mk();
  tbe_import_error err;
  memset(&err, 0, sizeof err);
  int rc = tbe_import_file(r, j, NULL, &err);
  if (rc) print_message("import failed: %s\n", err.message);
  assert_int_equal(rc, 0);
  assert_int_equal(tbe_trace_finish(r), 0);
  totals_of(r, b, &nb, 64);
  assert_int_equal(nb, na);
  assert_memory_equal(a, b, na * sizeof *a);
  an = analyse(r);
  assert_int_equal(gpu(an, 0)->mem_peak_allocated, peak);
  assert_int_equal(gpu(an, 0)->mem_peak_reserved, res);
  assert_int_equal(gpu(an, 1)->mem_peak_allocated, peak1);
  tbe_analysis_free(an);
  tbe_trace_free(r);
  tu_rmrf(dir);
  free(j);
  free(dir);
  tbe_trace_free(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cuda_curve_exact),
      cmocka_unit_test(test_free_before_window),
      cmocka_unit_test(test_host_pinned),
      cmocka_unit_test(test_allocator_precedence),
      cmocka_unit_test(test_leak),
      cmocka_unit_test(test_fragmentation),
      cmocka_unit_test(test_no_memory),
      cmocka_unit_test(test_idempotent),
      cmocka_unit_test(test_sampled),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
