/* test_hwmetrics.c: hardware metrics from the collector's spool to every
 * output, without a GPU: spool images with metric items (definitions, PM
 * samples, range-profiler kernel figures, status) are converted, and the
 * test checks the model (one counter track per metric per GPU, the kernel
 * figures under the demangled name, one warning per status: permission,
 * another profiler, unsupported, overflow; malformed items, NaN values and
 * unknown ids counted), the analysis (time-weighted means per GPU and per
 * step, bound-by verdicts by the rule, advice lines with their figures),
 * the summary JSON, the Chrome JSON "C" events in the GPU's pid, and that
 * the summary is the same from the model, from the XSpace and from the
 * Chrome JSON read back. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "events/spool.h"
#include "import/spool.h"
#include "tbexport.h"
#include "tbexport/analysis.h"
#include "tbexport/import.h"
#include "testutil.h"

#define T0 1700000000000000000ll
#define US 1000ll

static tbe_allocator al;

/* ---- spool images ---- */

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

enum { S_GEMM = 1, S_COPY, S_TINY, S_SM, S_TENSOR, S_DRAM, S_SMT, S_MEMT, S_OCC, S_TP, S_DRT,
       S_DUR, S_CUSTOM, S_STEP_UNUSED };

static void kern(tbe__buf *p, uint32_t name, int64_t s, int64_t e) {
  tbe__sp_kernel k;
  memset(&k, 0, sizeof k);
  k.start = s;
  k.end = e;
  k.stream = 7;
  k.name = name;
  k.grid[0] = k.block[0] = 1;
  tbe__spool_item(p, TBE__SP_KERNEL, &k, sizeof k);
}

static void mdef(tbe__buf *p, uint32_t id, uint32_t name) {
  tbe__sp_metric_def d = {id, name, 0, TBE__MU_PCT};
  tbe__spool_item(p, TBE__SP_METRIC_DEF, &d, sizeof d);
}

/* PM samples of device `dev`: n samples of metrics ids[0..m). */
static void samples(tbe__buf *p, uint32_t dev, const uint32_t *ids, uint32_t m, const int64_t *ts,
                    const double *v, uint32_t n, int cut) {
  uint8_t body[4096];
  tbe__sp_metric_samples h = {dev, m, n, 0};
  size_t at = 0;
  memcpy(body, &h, sizeof h);
  at += sizeof h;
  memcpy(body + at, ids, 4 * m);
  at += 4 * m;
  for (uint32_t i = 0; i < n; i++) {
    memcpy(body + at, &ts[i], 8);
    at += 8;
    memcpy(body + at, &v[i * m], 8 * m);
    at += 8 * m;
  }
  tbe__spool_item(p, TBE__SP_METRIC_SAMPLES, body, at - (size_t)cut);
}

static void kfig(tbe__buf *p, uint32_t name, uint32_t dev, uint32_t launches, const uint32_t *ids,
                 const double *v, uint32_t n) {
  uint8_t body[1024];
  tbe__sp_kernel_metrics h = {name, dev, launches, n};
  memcpy(body, &h, sizeof h);
  size_t at = sizeof h;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t z = 0;
    memcpy(body + at, &ids[i], 4);
    memcpy(body + at + 4, &z, 4);
    memcpy(body + at + 8, &v[i], 8);
    at += 16;
  }
  tbe__spool_item(p, TBE__SP_KERNEL_METRICS, body, at);
}

static void status(tbe__buf *p, uint32_t kind, uint32_t dev, uint32_t st, uint64_t samples,
                   uint64_t overflow, const char *reason) {
  uint8_t body[512];
  tbe__sp_metric_status s = {kind, dev, st, 0, samples, overflow};
  memcpy(body, &s, sizeof s);
  size_t n = strlen(reason);
  memcpy(body + sizeof s, reason, n);
  tbe__spool_item(p, TBE__SP_METRIC_STATUS, body, sizeof s + n);
}

/* The image: GPU 0 (132 SMs) busy ~81% of 1 ms with GEMMs and copies, a
 * tiny kernel; PM samples of sm_active (10 over (0,100us], 20 over
 * (100,200], 40 over (200,400]: time-weighted 27.5, plain 23.3), tensor
 * active 1%, DRAM read 40%, a custom metric; kernel figures; steps at 0
 * and 500 us.  `idle`: the kernels run 10x shorter (GPU mostly idle). */
static tbe_trace *collected(int idle) {
  tbe__buf img, p;
  tbe__buf_init(&img, &al);
  tbe__buf_init(&p, &al);
  uint8_t head[TBE__SPOOL_HEADER];
  tbe__spool_header(head, T0);
  tbe__buf_append(&img, head, sizeof head);
  tbe__sp_info info;
  memset(&info, 0, sizeof info);
  info.start_ns = T0;
  info.pid = 321;
  info.trace = 3;
  tbe__spool_item(&p, TBE__SP_INFO, &info, sizeof info);
  static const char *const strs[] = {"",
                                     "ampere_sgemm_128x64_nn",
                                     "_Z11copy_kernelPfS_i",
                                     "tiny_kernel",
                                     "sm_active_pct",
                                     "tensor_active_pct",
                                     "dram_read_pct",
                                     "sm_throughput_pct",
                                     "mem_throughput_pct",
                                     "achieved_occupancy_pct",
                                     "tensor_pipe_pct",
                                     "dram_throughput_pct",
                                     "duration_ns",
                                     "my_custom_metric"};
  for (uint32_t i = 1; i < sizeof strs / sizeof *strs; i++)
    tbe__spool_str(&p, i, strs[i], strlen(strs[i]));
  tbe__sp_device d;
  memset(&d, 0, sizeof d);
  d.id = 0;
  d.sm_count = 132;
  tbe__spool_item(&p, TBE__SP_DEVICE, &d, sizeof d);
  int64_t len = idle ? 9 * US : 90 * US;
  for (int k = 0; k < 9; k++)
    kern(&p, k % 2 ? S_COPY : S_GEMM, T0 + 10 * US + k * 100 * US, T0 + 10 * US + k * 100 * US + len);
  kern(&p, S_TINY, T0 + 905 * US, T0 + 907 * US);
  tbe__sp_step st = {T0, 321, 321};
  tbe__spool_item(&p, TBE__SP_STEP, &st, sizeof st);
  st.ts = T0 + 500 * US;
  tbe__spool_item(&p, TBE__SP_STEP, &st, sizeof st);
  frame(&img, &p);
  /* metrics, in a frame of their own */
  for (uint32_t i = 1; i <= 9; i++) mdef(&p, i, S_SM + i - 1);
  mdef(&p, 10, S_CUSTOM);
  uint32_t ids[4] = {1, 2, 3, 10};
  int64_t ts[3] = {T0 + 100 * US, T0 + 200 * US, T0 + 400 * US};
  double v[12] = {10, 1, 40, 7, 20, 1, 40, 7, 40, 1, 40, 7};
  samples(&p, 0, ids, 4, ts, v, 3, 0);
  samples(&p, 0, ids, 4, ts, v, 3, 3);          /* counts do not fit the length */
  double bad[4] = {NAN, 1, INFINITY, 7};
  int64_t ts2[1] = {T0 + 450 * US};
  uint32_t unk[4] = {1, 2, 3, 99};            /* 99: never defined */
  samples(&p, 0, unk, 4, ts2, bad, 1, 0);
  /* GEMM: compute-bound, tensor pipes idle; copy: DRAM at 92%; tiny: both low */
  uint32_t kid[6] = {4, 5, 6, 7, 8, 9};
  double g[6] = {85, 30, 50, 0.5, 20, 95000};
  double c[6] = {10, 50, 60, 0, 92, 90000};
  double t[6] = {5, 5, 20, 0, 3, 2000};
  kfig(&p, S_GEMM, 0, 3, kid, g, 6);
  kfig(&p, S_COPY, 0, 4, kid, c, 6);
  kfig(&p, S_TINY, 0, 1, kid, t, 6);
  status(&p, TBE__MKIND_PM_SAMPLING, 0, TBE__MS_OK, 3, 5, "");
  status(&p, TBE__MKIND_RANGE_PROFILER, 1, TBE__MS_NO_PERMISSION, 0, 0,
         "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES\nsecond line dropped");
  status(&p, TBE__MKIND_PM_SAMPLING, 2, TBE__MS_BUSY, 0, 0, "cuptiPmSamplingEnable");
  status(&p, TBE__MKIND_PM_SAMPLING, 3, TBE__MS_UNSUPPORTED, 0, 0, "");
  tbe__sp_end e = {T0 + 1000 * US};
  tbe__spool_item(&p, TBE__SP_END, &e, sizeof e);
  frame(&img, &p);
  assert_int_equal(tbe__buf_error(&img), 0);
  /* HW_SPOOL=DIR writes the image (the fuzz corpus' metrics.spool) */
  if (getenv("HW_SPOOL") && !idle) {
    char *path = tu_join(getenv("HW_SPOOL"), "metrics.spool");
    assert_int_equal(tu_write_file(path, img.data, img.len), 0);
    free(path);
  }
  tbe_trace *tr;
  assert_int_equal(tbe_trace_create(&tr, NULL), 0);
  assert_int_equal(tbe__spool_to_trace(img.data, img.len, "321.spool", NULL, tr, NULL), 0);
  tbe__buf_deinit(&p);
  tbe__buf_deinit(&img);
  return tr;
}

/* ---- helpers ---- */

static int has_warning(const tbe_trace *t, const char *part) {
  for (size_t i = 0; i < t->nwarnings; i++)
    if (strstr(tbe_trace_str(t, t->warnings[i]), part)) return 1;
  return 0;
}

static const tbe_track *metric_track(const tbe_trace *t, int32_t dev, const char *name) {
  for (size_t i = 0; i < t->ntracks; i++)
    if (tbe_track_is_metric(&t->tracks[i]) && t->tracks[i].device == dev &&
        strcmp(tbe_trace_str(t, t->tracks[i].name), name) == 0)
      return &t->tracks[i];
  return NULL;
}

static double gpu_mean(const tbe_analysis *an, const tbe_metric_mean *m, const char *name) {
  for (size_t i = 0; i < an->ngpu_metrics; i++)
    if (strcmp(an->gpu_metrics[i], name) == 0) return m[i].samples ? m[i].mean : NAN;
  return NAN;
}

static const tbe_name_stats *kernel(const tbe_analysis *an, const char *name) {
  for (size_t i = 0; i < an->ngroups[TBE_GROUP_KERNEL]; i++)
    if (strcmp(an->groups[TBE_GROUP_KERNEL][i].label, name) == 0)
      return &an->groups[TBE_GROUP_KERNEL][i];
  return NULL;
}

static const tbe_advice *advice(const tbe_analysis *an, tbe_advice_kind k) {
  for (size_t i = 0; i < an->nadvice; i++)
    if (an->advice[i].kind == (uint32_t)k) return &an->advice[i];
  return NULL;
}

/* The text of an advice line that must be there. */
static const char *text_of(const tbe_advice *a) {
  assert_non_null(a);
  return a ? a->text : "";
}

static char *summary(tbe_trace *t) {
  tbe_analysis *an;
  assert_int_equal(tbe_analysis_create(&an, t, NULL), 0);
  tbe_report_options o;
  tbe_report_options_init(&o);
  o.format = TBE_REPORT_JSON;
  o.top = 0;
  o.wide = 1;
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

/* ---- tests ---- */

static void test_model(void **state) {
  (void)state;
  tbe_trace *t = collected(0);
  /* one track per metric of GPU 0; the samples at the start of their
   * intervals, a closing event at the last timestamp */
  const tbe_track *sm = metric_track(t, 0, "sm_active_pct");
  assert_non_null(sm);
  assert_non_null(metric_track(t, 0, "tensor_active_pct"));
  assert_non_null(metric_track(t, 0, "my_custom_metric")); /* unknown names pass */
  assert_int_equal(sm->count, 4);
  const tbe_event *e = &t->events[sm->first];
  assert_int_equal(e[0].kind, TBE_EV_COUNTER);
  assert_int_equal(e[0].start_ns, T0);
  assert_int_equal(e[1].start_ns, T0 + 100 * US);
  assert_int_equal(e[3].start_ns, T0 + 400 * US);
  assert_true(tbe_trace_counter(t, &e[2])->value == 40);
  assert_true(tbe_trace_counter(t, &e[3])->value == 40);
  /* kernel figures, the mangled name demangled like the kernels' */
  assert_int_equal(t->nkernel_metrics, 3);
  int found = 0;
  for (size_t i = 0; i < t->nkernel_metrics; i++) {
    const tbe_kernel_metrics *k = &t->kernel_metrics[i];
    if (strcmp(tbe_trace_str(t, k->name), "copy_kernel(float*, float*, int)") != 0) continue;
    double v;
    assert_int_equal(tbe_kernel_metrics_get(t, k, "dram_throughput_pct", &v), 0);
    assert_true(v == 92);
    assert_int_equal(k->launches, 4);
    assert_int_equal(tbe_kernel_metrics_get(t, k, "nope", &v), 1);
    found = 1;
  }
  assert_true(found);
  /* one warning per status, naming the GPU and the cause */
  assert_true(has_warning(t, "PM sampling lost 5 samples on GPU 0"));
  assert_true(has_warning(t, "per-kernel GPU metrics (range profiler) not collected on GPU 1: no "
                             "permission to read the GPU's counters"));
  assert_true(has_warning(t, "NVreg_RestrictProfilingToAdminUsers=1"));
  assert_true(has_warning(t, "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES; the activity trace is complete"));
  assert_false(has_warning(t, "second line"));
  assert_true(has_warning(t, "GPU metrics (PM sampling) not collected on GPU 2: another profiler "
                             "holds the counters"));
  assert_true(has_warning(t, "not collected on GPU 3: not supported by this GPU or CUPTI"));
  /* hostile items: each kind counted once */
  assert_true(has_warning(t, "1 GPU metric items had counts that do not fit their length"));
  assert_true(has_warning(t, "2 GPU metric values were NaN or infinite"));
  assert_true(has_warning(t, "1 GPU metric values named a metric id never defined"));
  /* the activity trace is all there */
  size_t nk = 0;
  for (size_t i = 0; i < t->nevents; i++) nk += t->events[i].kind == TBE_EV_KERNEL;
  assert_int_equal(nk, 10);
  tbe_trace_free(t);
}

static void test_analysis(void **state) {
  (void)state;
  tbe_trace *t = collected(0);
  tbe_analysis *an;
  assert_int_equal(tbe_analysis_create(&an, t, NULL), 0);
  assert_int_equal(an->ndevices, 1);
  /* time-weighted: (10*100 + 20*100 + 40*200) / 400 */
  assert_true(fabs(gpu_mean(an, an->devices[0].metrics, "sm_active_pct") - 27.5) < 1e-9);
  assert_true(fabs(gpu_mean(an, an->all.metrics, "sm_active_pct") - 27.5) < 1e-9);
  assert_string_equal(an->gpu_metrics[0], "sm_active_pct"); /* the order first */
  assert_string_equal(an->gpu_metrics[an->ngpu_metrics - 1], "my_custom_metric");
  /* per step: step 0 holds all three intervals */
  assert_true(an->nsteps == 2);
  assert_non_null(an->steps[0].metrics);
  assert_true(fabs(gpu_mean(an, an->steps[0].metrics, "sm_active_pct") - 27.5) < 1e-9);
  /* bound by, by the rule */
  const tbe_name_stats *g = kernel(an, "ampere_sgemm_128x64_nn");
  const tbe_name_stats *c = kernel(an, "copy_kernel(float*, float*, int)");
  const tbe_name_stats *k = kernel(an, "tiny_kernel");
  assert_non_null(g);
  assert_non_null(c);
  assert_non_null(k);
  assert_int_equal(g->bound_by, TBE_BOUND_COMPUTE);
  assert_int_equal(c->bound_by, TBE_BOUND_MEMORY);
  assert_int_equal(k->bound_by, TBE_BOUND_LATENCY); /* short, but the GPU is busy */
  /* advice with the figures behind it */
  const tbe_advice *a = advice(an, TBE_ADVICE_SM_UNDERFILLED);
  assert_non_null(strstr(text_of(a), "GPU 0 busy 81% but SM active 28%: kernels too small or too "
                                  "short to fill its 132 SMs"));
  a = advice(an, TBE_ADVICE_TENSOR_IDLE);
  assert_non_null(strstr(text_of(a), "GEMMs run with tensor pipes idle (0.5% tensor pipe"));
  assert_non_null(strstr(text_of(a), "use bf16/TF32"));
  a = advice(an, TBE_ADVICE_MEMORY_BOUND);
  assert_non_null(strstr(text_of(a), "DRAM at 92% of peak during copy_kernel(float*, float*, int)"));
  assert_true(a && a->figure == 92);
  tbe_analysis_free(an);
  tbe_trace_free(t);
  /* mostly idle: the tiny kernel is launch-bound, the SMs are not
   * "underfilled" (the GPU is not busy) */
  t = collected(1);
  assert_int_equal(tbe_analysis_create(&an, t, NULL), 0);
  assert_int_equal(kernel(an, "tiny_kernel")->bound_by, TBE_BOUND_LAUNCH);
  assert_null(advice(an, TBE_ADVICE_SM_UNDERFILLED));
  tbe_analysis_free(an);
  tbe_trace_free(t);
}

static void test_summary_json(void **state) {
  (void)state;
  tbe_trace *t = collected(0);
  char *s = summary(t);
  assert_non_null(strstr(s, "\"gpu_metrics\":{\"sm_active_pct\":27.5,\"tensor_active_pct\":1,"
                            "\"dram_read_pct\":40,\"my_custom_metric\":7}"));
  assert_non_null(strstr(s, "\"metrics\":{\"sm_throughput_pct\":10,\"mem_throughput_pct\":50,"
                            "\"achieved_occupancy_pct\":60,\"tensor_pipe_pct\":0,"
                            "\"dram_throughput_pct\":92,\"duration_ns\":90000},"
                            "\"metric_launches\":4,\"bound_by\":\"memory\""));
  free(s);
  /* the table has the metric rows and the bound-by column */
  tbe_analysis *an;
  assert_int_equal(tbe_analysis_create(&an, t, NULL), 0);
  tbe_report_options o;
  tbe_report_options_init(&o);
  char *tab = NULL;
  assert_int_equal(tbe_report_summary(an, &o, &tab, NULL), 0);
  assert_non_null(strstr(tab, "GPU metrics (means over the window)"));
  assert_non_null(strstr(tab, "sm_active_pct"));
  assert_non_null(strstr(tab, "27.5%"));
  assert_non_null(strstr(tab, "bound by"));
  assert_non_null(strstr(tab, "memory"));
  free(tab);
  tbe_analysis_free(an);
  tbe_trace_free(t);
}

/* The summary is the same from the model, the XSpace and the Chrome JSON;
 * the JSON holds one "C" counter per metric in the GPU's pid. */
static void test_outputs_round_trip(void **state) {
  (void)state;
  tbe_trace *t = collected(0);
  char *dir = tu_mkdtemp();
  char *x = tu_join(dir, "m.xplane.pb"), *j = tu_join(dir, "m.trace.json");
  assert_int_equal(tbe_export_xplane(t, x, 1), 0);
  assert_int_equal(tbe_export_chrome_json(t, j, 0, 1), 0);
  char *s0 = summary(t);
  tbe_trace *rx = import(x), *rj = import(j);
  char *sx = summary(rx), *sj = summary(rj);
  assert_string_equal(sx, s0);
  assert_string_equal(sj, s0);
  assert_int_equal(rx->nkernel_metrics, 3);
  assert_int_equal(rj->nkernel_metrics, 3);
  size_t n = 0;
  char *doc = (char *)tu_read_file(j, &n);
  assert_non_null(strstr(doc, "{\"ph\":\"C\",\"cat\":\"counter\",\"name\":\"sm_active_pct\",\"pid\":0,"
                              "\"tid\":0,\"ts\":"));
  /* the second sample, at the start of its interval (100 us), relative
   * to Kineto's floored base time */
  assert_non_null(strstr(doc, "\"name\":\"sm_active_pct\",\"pid\":0,\"tid\":0,"
                              "\"ts\":3813830000100.000,\"args\":{\"value\":20.0}}"));
  assert_non_null(strstr(doc, "\"tbexportKernelMetrics\": ["));
  free(doc);
  free(s0);
  free(sx);
  free(sj);
  tbe_trace_free(rx);
  tbe_trace_free(rj);
  tbe_trace_free(t);
  tu_rmrf(dir);
  free(x);
  free(j);
  free(dir);
}

/* The persisted analysis (analysis.proto) keeps the metrics: the reports
 * from the file are the reports from the trace, in every format. */
static void test_persisted(void **state) {
  (void)state;
  tbe_trace *t = collected(0);
  tbe_analysis *an, *back;
  assert_int_equal(tbe_analysis_create(&an, t, NULL), 0);
  void *buf = NULL;
  size_t len = 0;
  assert_int_equal(tbe_analysis_save(an, NULL, 0, &buf, &len, NULL), 0);
  tbe_analysis_load_error err;
  memset(&err, 0, sizeof err);
  assert_int_equal(tbe_analysis_load(&back, NULL, buf, len, NULL, &err), 0);
  assert_int_equal(back->ngpu_metrics, an->ngpu_metrics);
  assert_int_equal(back->nkernel_metrics, an->nkernel_metrics);
  static const tbe_report_format fmt[] = {TBE_REPORT_JSON, TBE_REPORT_TABLE, TBE_REPORT_CSV,
                                          TBE_REPORT_MARKDOWN};
  for (size_t f = 0; f < sizeof fmt / sizeof *fmt; f++) {
    tbe_report_options o;
    tbe_report_options_init(&o);
    o.format = fmt[f];
    char *a = NULL, *b = NULL;
    assert_int_equal(tbe_report_summary(an, &o, &a, NULL), 0);
    assert_int_equal(tbe_report_summary(back, &o, &b, NULL), 0);
    assert_string_equal(b, a);
    assert_non_null(strstr(a, "sm_active_pct"));
    free(a);
    free(b);
  }
  tbe_analysis_save_free(buf, len, NULL);
  tbe_analysis_free(back);
  tbe_analysis_free(an);
  tbe_trace_free(t);
}


/* Kernels the range profiler replayed arrive from CUPTI with start = end
 * = 0 (seen on the H200): each is placed at the end of its launch call
 * with the profiler's duration for its name, and said once; one without
 * a launch call is still left out as out of range. */
static void test_replayed_kernels(void **state) {
  (void)state;
  tbe__buf img, p;
  tbe__buf_init(&img, &al);
  tbe__buf_init(&p, &al);
  uint8_t head[TBE__SPOOL_HEADER];
  tbe__spool_header(head, T0);
  tbe__buf_append(&img, head, sizeof head);
  tbe__sp_info info;
  memset(&info, 0, sizeof info);
  info.start_ns = T0;
  info.pid = 321;
  info.trace = 3;
  tbe__spool_item(&p, TBE__SP_INFO, &info, sizeof info);
  static const char *const strs[] = {"", "cudaLaunchKernel", "big_gemm", "duration_ns"};
  for (uint32_t i = 1; i < 4; i++) tbe__spool_str(&p, i, strs[i], strlen(strs[i]));
  tbe__sp_api a;
  memset(&a, 0, sizeof a);
  a.start = T0 + 100 * US;
  a.end = T0 + 900 * US; /* the replay passes run inside the call */
  a.corr = 5;
  a.pid = a.tid = 321;
  a.name = 1;
  tbe__spool_item(&p, TBE__SP_API, &a, sizeof a);
  tbe__sp_kernel k;
  memset(&k, 0, sizeof k);
  k.corr = 5;
  k.stream = 7;
  k.name = 2;
  tbe__spool_item(&p, TBE__SP_KERNEL, &k, sizeof k);
  k.corr = 6; /* no launch call recorded */
  tbe__spool_item(&p, TBE__SP_KERNEL, &k, sizeof k);
  mdef(&p, 1, 3);
  uint32_t id = 1;
  double dur = 30 * US;
  kfig(&p, 2, 0, 1, &id, &dur, 1);
  tbe__sp_end e = {T0 + 1000 * US};
  tbe__spool_item(&p, TBE__SP_END, &e, sizeof e);
  frame(&img, &p);
  tbe_trace *tr;
  assert_int_equal(tbe_trace_create(&tr, NULL), 0);
  assert_int_equal(tbe__spool_to_trace(img.data, img.len, "321.spool", NULL, tr, NULL), 0);
  size_t nk = 0;
  for (size_t i = 0; i < tr->nevents; i++) {
    const tbe_event *ev = &tr->events[i];
    if (ev->kind != TBE_EV_KERNEL) continue;
    nk++;
    assert_string_equal(tbe_trace_str(tr, ev->name), "big_gemm");
    assert_true(ev->start_ns == T0 + 870 * US);
    assert_true(ev->dur_ns == 30 * US);
  }
  assert_int_equal(nk, 1);
  assert_int_equal(tr->dropped_out_of_range, 1);
  assert_true(has_warning(tr, "1 kernel launches replayed by the range profiler"));
  tbe_trace_free(tr);
  tbe__buf_deinit(&p);
  tbe__buf_deinit(&img);
}

int main(void) {
  tbe__allocator_init(&al, NULL);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_model),
      cmocka_unit_test(test_analysis),
      cmocka_unit_test(test_summary_json),
      cmocka_unit_test(test_outputs_round_trip),
      cmocka_unit_test(test_persisted),
      cmocka_unit_test(test_replayed_kernels),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
