/* test_hwmetrics.c: hardware metrics from the collector's spool to every
 * output, without a GPU: spool images with metric items (definitions, PM
 * samples, range-profiler kernel figures, status) are converted, and the
 * test checks the model (one counter track per metric per GPU, the kernel
 * figures under the demangled name, one warning per status: permission,
 * another profiler, unsupported, overflow; malformed items, NaN values and
 * unknown ids counted), the analysis (time-weighted means per GPU and per
 * step, bound-by verdicts by the rule, advice lines with their figures),
 * the summary JSON, the Chrome JSON "C" events in the GPU's pid, that
 * the summary is the same from the model, from the XSpace and from the
 * Chrome JSON read back, and the TensorBoard events read back with our
 * reader (gpu_metrics/<metric> per step, the HParams metrics, the
 * custom-scalars category). */
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

#include "common/alloc.h"
#include "common/buf.h"
#include "events/spool.h"
#include "import/spool.h"
#include "tbexport.h"
#include "tbexport/analysis.h"
#include "tbexport/import.h"
#include "tbexport/reader.h"
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
 * and 500 us.  `idle` 1: the kernels run 10x shorter (GPU mostly idle)
 * and sm_active reads 30 more (40, 50, 70: time-weighted 57.5); 2: as 0,
 * sampled on to the end (600-1000 us), so both steps have means (the
 * checker's run, test/data/metrics/metrics_full.spool). */
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
  int64_t len = idle == 1 ? 9 * US : 90 * US;
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
  for (int i = 0; i < 3; i++) v[4 * i] += 30 * (idle == 1); /* idle: sm_active 57.5 */
  samples(&p, 0, ids, 4, ts, v, 3, 0);
  samples(&p, 0, ids, 4, ts, v, 3, 3);          /* counts do not fit the length */
  double bad[4] = {NAN, 1, INFINITY, 7};
  int64_t ts2[1] = {T0 + 450 * US};
  uint32_t unk[4] = {1, 2, 3, 99};            /* 99: never defined */
  samples(&p, 0, unk, 4, ts2, bad, 1, 0);
  if (idle == 2) { /* sampled to the end: every step has the metrics */
    int64_t ts3[3] = {T0 + 600 * US, T0 + 800 * US, T0 + 1000 * US};
    samples(&p, 0, ids, 4, ts3, v, 3, 0);
  }
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
  /* HW_SPOOL=DIR writes the image (the fuzz corpus' metrics.spool; the
   * idle one for the CLI tests' diff) */
  if (getenv("HW_SPOOL")) {
    static const char *const file[3] = {"metrics.spool", "metrics_idle.spool", "metrics_full.spool"};
    char *path = tu_join(getenv("HW_SPOOL"), file[idle]);
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
  a = advice(an, TBE_ADVICE_COMPUTE_BOUND); /* the range profiler's verdict and figures */
  assert_non_null(strstr(text_of(a), "SM throughput 85%, tensor pipe 0% during "
                                  "ampere_sgemm_128x64_nn ("));
  assert_non_null(strstr(text_of(a), "compute-bound, near the GPU's peak"));
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


/* PM sampling alone (no range profiler): each kernel name gets the PM
 * means of the time its launches ran, and the advice names the bound from
 * them.  Samples every 50 us over 1 ms: tensor active 90% over
 * [100, 600) us (a GEMM runs there), DRAM read 45% + write 44% over
 * [700, 900) (a copy runs there), 0 elsewhere; a 2 us kernel at 950 us
 * sits inside one interval: its means are the interval's, too coarse to
 * advise on. */
static tbe_trace *pm_only(void) {
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
  static const char *const strs[] = {"", "gemm_like", "stream_copy", "tiny",
                                     "tensor_active_pct", "dram_read_pct", "dram_write_pct"};
  for (uint32_t i = 1; i < sizeof strs / sizeof *strs; i++)
    tbe__spool_str(&p, i, strs[i], strlen(strs[i]));
  tbe__sp_device d;
  memset(&d, 0, sizeof d);
  d.sm_count = 132;
  tbe__spool_item(&p, TBE__SP_DEVICE, &d, sizeof d);
  kern(&p, 1, T0 + 100 * US, T0 + 600 * US);
  kern(&p, 2, T0 + 700 * US, T0 + 900 * US);
  kern(&p, 3, T0 + 950 * US, T0 + 952 * US);
  for (uint32_t i = 1; i <= 3; i++) mdef(&p, i, 3 + i);
  uint32_t ids[3] = {1, 2, 3};
  int64_t ts[20];
  double v[60];
  for (int i = 0; i < 20; i++) {
    int64_t end = (i + 1) * 50 * US, start = end - 50 * US; /* the interval (start, end] */
    ts[i] = T0 + end;
    int gemm = start >= 100 * US && end <= 600 * US, copy = start >= 700 * US && end <= 900 * US;
    v[3 * i] = gemm ? 90 : 0;
    v[3 * i + 1] = copy ? 45 : 0;
    v[3 * i + 2] = copy ? 44 : 0;
  }
  samples(&p, 0, ids, 3, ts, v, 20, 0);
  tbe__sp_end e = {T0 + 1000 * US};
  tbe__spool_item(&p, TBE__SP_END, &e, sizeof e);
  frame(&img, &p);
  assert_int_equal(tbe__buf_error(&img), 0);
  tbe_trace *tr;
  assert_int_equal(tbe_trace_create(&tr, NULL), 0);
  assert_int_equal(tbe__spool_to_trace(img.data, img.len, "321.spool", NULL, tr, NULL), 0);
  tbe__buf_deinit(&p);
  tbe__buf_deinit(&img);
  return tr;
}

static void test_pm_during_kernels(void **state) {
  (void)state;
  tbe_trace *t = pm_only();
  tbe_analysis *an;
  assert_int_equal(tbe_analysis_create(&an, t, NULL), 0);
  const tbe_name_stats *g = kernel(an, "gemm_like"), *c = kernel(an, "stream_copy"),
                       *k = kernel(an, "tiny");
  assert_non_null(g);
  assert_non_null(c);
  assert_non_null(k);
  assert_null(g->metrics); /* no range profiler */
  assert_non_null(g->pm_metrics);
  assert_true(fabs(gpu_mean(an, g->pm_metrics, "tensor_active_pct") - 90) < 1e-9);
  assert_true(fabs(gpu_mean(an, g->pm_metrics, "dram_read_pct")) < 1e-9);
  assert_int_equal(g->pm_metrics[0].samples, 10); /* 500 us of 50 us intervals */
  assert_true(fabs(gpu_mean(an, c->pm_metrics, "dram_read_pct") - 45) < 1e-9);
  assert_true(fabs(gpu_mean(an, c->pm_metrics, "dram_write_pct") - 44) < 1e-9);
  assert_true(fabs(gpu_mean(an, c->pm_metrics, "tensor_active_pct")) < 1e-9);
  assert_non_null(k->pm_metrics);
  assert_int_equal(k->pm_metrics[0].samples, 1);
  /* over the whole window the means are far lower: tensor 45, DRAM 8.9 */
  assert_true(fabs(gpu_mean(an, an->devices[0].metrics, "tensor_active_pct") - 45) < 1e-9);
  const tbe_advice *a = advice(an, TBE_ADVICE_COMPUTE_BOUND);
  assert_non_null(strstr(text_of(a), "tensor pipes active 90% during gemm_like (71.2% of kernel "
                                      "time): compute-bound"));
  a = advice(an, TBE_ADVICE_MEMORY_BOUND);
  assert_non_null(strstr(text_of(a), "DRAM at 89% of peak during stream_copy (28.5% of kernel "
                                      "time): memory-bound"));
  /* the summary shows them, the same from a persisted analysis */
  tbe_report_options o;
  tbe_report_options_init(&o);
  char *s = NULL, *s2 = NULL;
  assert_int_equal(tbe_report_summary(an, &o, &s, NULL), 0);
  assert_non_null(strstr(s, "GPU metrics while each kernel ran (PM sampling; 3 of the kernels above)"));
  assert_non_null(strstr(s, "under 2 samples per call"));
  void *buf = NULL;
  size_t len = 0;
  assert_int_equal(tbe_analysis_save(an, NULL, 0, &buf, &len, NULL), 0);
  tbe_analysis *back;
  tbe_analysis_load_error err;
  memset(&err, 0, sizeof err);
  assert_int_equal(tbe_analysis_load(&back, NULL, buf, len, NULL, &err), 0);
  assert_int_equal(tbe_report_summary(back, &o, &s2, NULL), 0);
  assert_string_equal(s2, s);
  free(s);
  free(s2);
  o.format = TBE_REPORT_JSON;
  assert_int_equal(tbe_report_summary(back, &o, &s, NULL), 0);
  assert_non_null(strstr(s, "\"gpu_metrics\":{\"tensor_active_pct\":90,\"dram_read_pct\":0,"
                            "\"dram_write_pct\":0},\"gpu_metric_samples\":10"));
  free(s);
  tbe_analysis_save_free(buf, len, NULL);
  tbe_analysis_free(back);
  tbe_analysis_free(an);
  tbe_trace_free(t);
}

/* Kernels the range profiler replayed arrive from CUPTI with start = end
 * = 0 (seen on the H200): each is placed at the end of its launch call
 * with the profiler's duration for its name, and said once; the launch
 * call is its API record, else the collector's own timing of the
 * measured launch (TBE__SP_REPLAYED: driver-API launches have no API
 * record by default); one with neither is still left out as out of
 * range. */
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
  a.corr = 7; /* an inverted span from CUPTI, taken the same way */
  a.start = T0 + 920 * US;
  a.end = T0 + 990 * US;
  tbe__spool_item(&p, TBE__SP_API, &a, sizeof a);
  k.corr = 7;
  k.start = T0 + 5;
  k.end = 0;
  tbe__spool_item(&p, TBE__SP_KERNEL, &k, sizeof k);
  /* a driver-API launch (cuBLAS's): no API record, the collector's own
   * timing of the measured launch */
  tbe__sp_replayed rp = {8, 0, T0 + 700 * US, T0 + 800 * US};
  tbe__spool_item(&p, TBE__SP_REPLAYED, &rp, sizeof rp);
  k.corr = 8;
  k.start = k.end = 0;
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
    assert_string_equal(tbe_trace_str(tr, ev->name), "big_gemm");
    /* each at the end of its launch call (in time order) */
    static const int64_t at[] = {T0 + 770 * US, T0 + 870 * US, T0 + 960 * US};
    assert_true(nk < 3 && ev->start_ns == at[nk]);
    assert_true(ev->dur_ns == 30 * US);
    nk++;
  }
  assert_int_equal(nk, 3);
  assert_int_equal(tr->dropped_out_of_range, 1);
  assert_true(has_warning(tr, "3 kernel launches replayed by the range profiler"));
  tbe_trace_free(tr);
  tbe__buf_deinit(&p);
  tbe__buf_deinit(&img);
}

/* ---- diff ---- */

static char *diff_report(tbe_diff *d, tbe_report_format f) {
  tbe_report_options o;
  tbe_report_options_init(&o);
  o.format = f;
  o.top = 0;
  o.wide = 1;
  char *s = NULL;
  assert_int_equal(tbe_report_diff(d, &o, &s, NULL), 0);
  return s;
}

/* diff compares the PM means per GPU (27.5 -> 57.5 for sm_active) and,
 * for kernels on both sides, the figures and the verdict (the tiny kernel
 * goes from latency- to launch-bound when its GPU idles), in all four
 * formats; a diff of traces without metrics says nothing about them. */
static void test_diff(void **state) {
  (void)state;
  tbe_trace *t0 = collected(0), *t1 = collected(1);
  tbe_analysis *a0, *a1;
  assert_int_equal(tbe_analysis_create(&a0, t0, NULL), 0);
  assert_int_equal(tbe_analysis_create(&a1, t1, NULL), 0);
  tbe_diff *d;
  assert_int_equal(tbe_diff_create(&d, a0, a1, NULL), 0);
  char *j = diff_report(d, TBE_REPORT_JSON);
  char err[256];
  yajl_val doc = yajl_tree_parse(j, err, sizeof err);
  if (!doc) print_message("%s\n%s\n", err, j);
  assert_non_null(doc);
  yajl_tree_free(doc);
  assert_non_null(strstr(j, "\"gpu_metrics\":[{\"device\":0,\"metric\":\"sm_active_pct\","
                            "\"base\":27.5,\"new\":57.5}"));
  assert_non_null(strstr(j, "{\"name\":\"tiny_kernel\",\"bound_by\":[\"latency\",\"launch\"],"
                            "\"metrics\":{\"sm_throughput_pct\":[5,5]"));
  assert_non_null(strstr(j, "{\"name\":\"copy_kernel(float*, float*, int)\",\"bound_by\":"
                            "[\"memory\",\"memory\"]"));
  free(j);
  char *c = diff_report(d, TBE_REPORT_CSV);
  assert_non_null(strstr(c, "\nsection,device,metric,base,new,delta\n"
                            "gpu_metric,0,sm_active_pct,27.5,57.5,30\n"));
  assert_non_null(strstr(c, "kernel_metric,tiny_kernel,bound_by,latency,launch,changed\n"));
  assert_non_null(strstr(c, "kernel_metric,tiny_kernel,duration_ns,2000,2000,0\n"));
  free(c);
  char *m = diff_report(d, TBE_REPORT_MARKDOWN);
  assert_non_null(strstr(m, "## GPU metrics (means over the window)"));
  assert_non_null(strstr(m, "| 0 | sm\\_active\\_pct | 27.5% | 57.5% | +30.0% |"));
  assert_non_null(strstr(m, "| tiny\\_kernel | bound by | latency | launch | changed |"));
  free(m);
  char *tab = diff_report(d, TBE_REPORT_TABLE);
  assert_non_null(strstr(tab, "GPU metrics (means over the window)"));
  assert_non_null(strstr(tab, "sm_active_pct"));
  assert_non_null(strstr(tab, "+30.0%"));
  assert_non_null(strstr(tab, "Kernel metrics (range profiler, kernels on both sides)"));
  assert_non_null(strstr(tab, "changed"));
  free(tab);
  tbe_diff_free(d);
  /* one side without metrics: its column is "-" / null */
  tbe_trace *plain;
  assert_int_equal(tbe_trace_create(&plain, NULL), 0);
  tbe_analysis *ap;
  assert_int_equal(tbe_analysis_create(&ap, plain, NULL), 0);
  assert_int_equal(tbe_diff_create(&d, ap, a0, NULL), 0);
  j = diff_report(d, TBE_REPORT_JSON);
  assert_non_null(strstr(j, "{\"device\":0,\"metric\":\"sm_active_pct\",\"base\":null,\"new\":27.5}"));
  assert_non_null(strstr(j, "\"kernel_metrics\":[]"));
  free(j);
  tbe_diff_free(d);
  /* neither side: no metric words at all */
  assert_int_equal(tbe_diff_create(&d, ap, ap, NULL), 0);
  for (int f = 0; f < 4; f++) {
    char *r = diff_report(d, (tbe_report_format)f);
    assert_null(strstr(r, "gpu_metric"));
    assert_null(strstr(r, "kernel_metric"));
    assert_null(strstr(r, "GPU metrics"));
    assert_null(strstr(r, "Kernel metrics"));
    free(r);
  }
  tbe_diff_free(d);
  tbe_analysis_free(ap);
  tbe_trace_free(plain);
  tbe_analysis_free(a0);
  tbe_analysis_free(a1);
  tbe_trace_free(t0);
  tbe_trace_free(t1);
}

/* ---- runs of several hosts ---- */

__attribute__((noinline)) static char *run_report(tbe_run_analysis *r, tbe_report_format f) {
  tbe_report_options o;
  tbe_report_options_init(&o);
  o.format = f;
  o.top = 0;
  o.wide = 1;
  char *s = NULL;
  assert_int_equal(tbe_report_run(r, &o, &s, NULL), 0);
  return s;
}

/* Two hosts, sm_active 27.5 and 57.5 over GPU windows of equal length: the
 * run reads 42.5; a merged step weighs the hosts' step means by their step
 * times; kernel figures are launch-weighted (the same figures on both
 * hosts stay, the launches add); the reports show the run's means with
 * the lowest and highest host, and the run diff compares the totals. */
static void test_run(void **state) {
  (void)state;
  tbe_trace *t[2] = {collected(0), collected(1)};
  tbe_analysis *an[2];
  for (int i = 0; i < 2; i++) assert_int_equal(tbe_analysis_create(&an[i], t[i], NULL), 0);
  const char *labels[2] = {"busy", "idle"};
  tbe_run_analysis *r;
  assert_int_equal(tbe_run_analysis_create(&r, an, labels, 2, NULL), 0);
  const tbe_analysis *tot = r->total;
  assert_int_equal(tot->ngpu_metrics, 4);
  assert_true(fabs(gpu_mean(tot, tot->all.metrics, "sm_active_pct") - 42.5) < 1e-9);
  assert_true(fabs(gpu_mean(tot, tot->all.metrics, "dram_read_pct") - 40) < 1e-9);
  assert_int_equal(tot->nsteps, 2);
  double d0 = (double)an[0]->steps[0].dur_ns, d1 = (double)an[1]->steps[0].dur_ns;
  assert_true(fabs(gpu_mean(tot, tot->steps[0].metrics, "sm_active_pct") -
                   (27.5 * d0 + 57.5 * d1) / (d0 + d1)) < 1e-9);
  const tbe_name_stats *c = kernel(tot, "copy_kernel(float*, float*, int)");
  assert_non_null(c);
  assert_non_null(c->metrics);
  assert_int_equal(c->bound_by, TBE_BOUND_MEMORY);
  for (size_t k = 0; k < tot->nkernel_metrics; k++)
    if (strcmp(tot->kernel_metrics[k], "dram_throughput_pct") == 0) {
      assert_true(c->metrics[k].mean == 92);
      assert_int_equal(c->metrics[k].samples, 8);
    }
  char *tab = run_report(r, TBE_REPORT_TABLE);
  assert_non_null(strstr(tab, "GPU metrics (all hosts: means weighted by GPU time; lowest and "
                              "highest host)"));
  char row[256] = "";
  const char *at = strstr(tab, "\nsm_active_pct");
  assert_non_null(at);
  if (at) sscanf(at + 1, "%255[^\n]", row);
  assert_non_null(strstr(row, "42.5%"));
  assert_true(strstr(row, "27.5%") && strstr(row, "busy") && strstr(row, "57.5%") && strstr(row, "idle"));
  assert_non_null(strstr(tab, "Kernel metrics (range profiler;"));
  free(tab);
  char *md = run_report(r, TBE_REPORT_MARKDOWN);
  assert_non_null(strstr(md, "| sm\\_active\\_pct | 42.5% | 27.5% | busy | 57.5% | idle |"));
  free(md);
  char *j = run_report(r, TBE_REPORT_JSON);
  char err[256];
  yajl_val doc = yajl_tree_parse(j, err, sizeof err);
  assert_non_null(doc);
  yajl_tree_free(doc);
  assert_non_null(strstr(j, "\"gpu_metrics\":{\"sm_active_pct\":42.5,"));
  assert_non_null(strstr(j, "\"metric_launches\":8,\"bound_by\":\"memory\""));
  free(j);
  char *csv = run_report(r, TBE_REPORT_CSV);
  assert_non_null(strstr(csv, "gpu_metric,all,sm_active_pct,42.5,"));
  free(csv);
  /* the run against its first host alone */
  tbe_run_analysis *r1;
  assert_int_equal(tbe_run_analysis_create(&r1, an, labels, 1, NULL), 0);
  tbe_run_diff *d;
  assert_int_equal(tbe_run_diff_create(&d, r1, r, NULL), 0);
  tbe_report_options o;
  tbe_report_options_init(&o);
  o.format = TBE_REPORT_JSON;
  char *dj = NULL;
  assert_int_equal(tbe_report_run_diff(d, &o, &dj, NULL), 0);
  doc = yajl_tree_parse(dj, err, sizeof err);
  assert_non_null(doc);
  yajl_tree_free(doc);
  assert_non_null(strstr(dj, "{\"device\":0,\"metric\":\"sm_active_pct\",\"base\":27.5,"
                             "\"new\":null}"));
  assert_non_null(strstr(dj, "{\"device\":\"all\",\"metric\":\"sm_active_pct\",\"base\":27.5,"
                             "\"new\":42.5}"));
  free(dj);
  tbe_run_diff_free(d);
  tbe_run_analysis_free(r1);
  tbe_run_analysis_free(r);
  for (int i = 0; i < 2; i++) {
    tbe_analysis_free(an[i]);
    tbe_trace_free(t[i]);
  }
}

/* ---- TensorBoard ---- */

typedef struct tb_scalar {
  char run[64], tag[128];
  int64_t step;
  double value;
} tb_scalar;

/* Every scalar under `dir` (recursive), and whether the custom-scalars
 * layout holds `want` (its bytes: a serialized Layout). */
static size_t tb_read(const char *dir, tb_scalar *out, size_t max, const char *want, int *has) {
  tbe_reader *r;
  assert_int_equal(tbe_reader_open(&r, dir, TBE_READER_RECURSIVE, NULL), 0);
  const tbe_tb_event *ev;
  size_t n = 0;
  int rc;
  *has = 0;
  while ((rc = tbe_reader_next(r, &ev)) == 1) {
    if (ev->kind != TBE_TB_SUMMARY) continue;
    for (size_t i = 0; i < ev->nvalues; i++) {
      const tbe_summary_value *v = &ev->values[i];
      if (strcmp(v->tag, "custom_scalars__config__") == 0 && v->type == TBE_VALUE_TENSOR &&
          v->tensor.nstrings == 1) {
        const tbe_bytes *b = &v->tensor.strings[0];
        size_t wl = strlen(want);
        for (size_t k = 0; k + wl <= b->size && !*has; k++)
          *has = memcmp((const char *)b->data + k, want, wl) == 0;
      }
      if (v->type != TBE_VALUE_SIMPLE && v->type != TBE_VALUE_TENSOR) continue;
      if (n >= max) continue;
      tb_scalar *s = &out[n++];
      snprintf(s->run, sizeof s->run, "%s", ev->run);
      snprintf(s->tag, sizeof s->tag, "%s", v->tag);
      s->step = ev->step;
      s->value = v->type == TBE_VALUE_SIMPLE ? v->simple_value
                 : v->tensor.nfloats  ? v->tensor.floats[0]
                 : v->tensor.ndoubles ? v->tensor.doubles[0]
                                      : NAN;
    }
  }
  assert_int_equal(rc, 0);
  tbe_reader_close(r);
  return n;
}

static const tb_scalar *tb_find(const tb_scalar *s, size_t n, const char *run, const char *tag,
                                int64_t step) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(s[i].tag, tag) == 0 && s[i].step == step && strcmp(s[i].run, run) == 0)
      return &s[i];
  return NULL;
}

static size_t tb_count_prefix(const tb_scalar *s, size_t n, const char *prefix) {
  size_t c = 0;
  for (size_t i = 0; i < n; i++) c += strncmp(s[i].tag, prefix, strlen(prefix)) == 0;
  return c;
}

/* The events output: gpu_metrics/<metric> per step (step 0 holds every
 * interval: 27.5 for sm_active; step 1 starts after the last sample, so
 * it has no point), summary/gpu_metrics/<metric> (the window's means:
 * the HParams session's columns read them), and the layout's "GPU
 * metrics" category with one chart per metric. */
static void test_tensorboard(void **state) {
  (void)state;
  tbe_trace *t = collected(0);
  char *dir = tu_mkdtemp();
  tbe_export_options o;
  tbe_export_options_init(&o);
  o.logdir = dir;
  o.run = "r";
  o.host = "h";
  o.outputs = TBE_OUT_EVENTS;
  assert_int_equal(tbe_export_run(t, &o), 0);
  char *run = tu_join(dir, "r");
  static tb_scalar s[1024];
  int has = 0;
  size_t n = tb_read(run, s, 1024, "tbexport: GPU metrics", &has);
  assert_true(has);
  int chart = 0;
  tb_read(run, s, 1024, "^gpu_metrics/sm_active_pct$", &chart);
  assert_true(chart);
  const tb_scalar *x = tb_find(s, n, ".", "gpu_metrics/sm_active_pct", 0);
  assert_non_null(x);
  assert_true(fabs(x->value - 27.5) < 1e-5);
  x = tb_find(s, n, ".", "gpu_metrics/dram_read_pct", 0);
  assert_non_null(x);
  assert_true(fabs(x->value - 40) < 1e-5);
  assert_non_null(tb_find(s, n, ".", "gpu_metrics/my_custom_metric", 0));
  assert_null(tb_find(s, n, ".", "gpu_metrics/sm_active_pct", 1));
  assert_int_equal(tb_count_prefix(s, n, "gpu_metrics/"), 4); /* 4 metrics, step 0 */
  /* the window's means, which the HParams session's metric columns read */
  x = tb_find(s, n, ".", "summary/gpu_metrics/sm_active_pct", 0);
  assert_non_null(x);
  assert_true(fabs(x->value - 27.5) < 1e-5);
  assert_int_equal(tb_count_prefix(s, n, "summary/gpu_metrics/"), 4);
  assert_int_equal(tb_count_prefix(s, n, "hparams/"), 0);
  free(run);
  tbe_trace_free(t);
  /* sampled to the end: a point for each step, the step's mean */
  t = collected(2);
  tbe_analysis *an;
  assert_int_equal(tbe_analysis_create(&an, t, NULL), 0);
  o.run = "full";
  assert_int_equal(tbe_export_run(t, &o), 0);
  run = tu_join(dir, "full");
  n = tb_read(run, s, 1024, "tbexport: GPU metrics", &has);
  for (size_t k = 0; k < 2; k++) {
    x = tb_find(s, n, ".", "gpu_metrics/sm_active_pct", (int64_t)k);
    assert_non_null(x);
    assert_true(fabs(x->value - gpu_mean(an, an->steps[k].metrics, "sm_active_pct")) < 1e-4);
  }
  assert_int_equal(tb_count_prefix(s, n, "gpu_metrics/"), 8);
  tbe_analysis_free(an);
  free(run);
  tu_rmrf(dir);
  free(dir);
  tbe_trace_free(t);
}

int main(void) {
  tbe__allocator_init(&al, NULL);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_model),
      cmocka_unit_test(test_analysis),
      cmocka_unit_test(test_summary_json),
      cmocka_unit_test(test_outputs_round_trip),
      cmocka_unit_test(test_persisted),
      cmocka_unit_test(test_pm_during_kernels),
      cmocka_unit_test(test_replayed_kernels),
      cmocka_unit_test(test_tensorboard),
      cmocka_unit_test(test_diff),
      cmocka_unit_test(test_run),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
