/* test_collect_hwmetrics.c: hardware metrics (PM sampling, the range profiler)
 * through the collector against the fake CUPTI (fake_cupti.h), no GPU.
 *
 * What must hold, read from the spool the collector writes (the items of
 * events/spool.h, scanned as the importer scans them):
 *   - decoded samples reach the spool while the program runs (a crash loses
 *     at most a tick), every one, with its timestamp and each metric's
 *     value, under ids whose definitions name our metric and CUPTI's;
 *   - a metric the chip lacks (NVLink here) is left out, the rest sampled;
 *   - a hardware-buffer overflow is counted (the samples lost, from the
 *     gap) in the status item; a context being destroyed stops and drains
 *     sampling on its device before it goes;
 *   - no counter permission, a subscriber already taken, a CUPTI without
 *     the API: a status item and a note per kind, one message line per
 *     kind, and the activity records collected as without metrics;
 *   - the range profiler measures the first N launches of each kernel name
 *     and writes the mean of each metric over them, once per kernel;
 *   - end to end, the spool converted as `tbexport import` converts it
 *     gives the fake's values in the outputs: the summary JSON's
 *     gpu_metrics and kernel figures with a verdict, the Chrome JSON's "C"
 *     counters and tbexportKernelMetrics, the events' gpu_metrics/<metric>
 *     and summary/gpu_metrics/<metric>; an overflow and a permission
 *     refusal are one warning line each. */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tbexport.h"
#include "tbexport/profiler.h"
#include "testutil.h"

#include "collect/collector.h"
#include "common/alloc.h"
#include "collect/hwmetrics.h"
#include "collect/options.h"
#include "events/spool.h"
#include "fake_cupti.h"
#include "import/spool.h"
#include "tbexport/analysis.h"
#include "tbexport/reader.h"

#define T0 1700000000000000000ull

/* ---- the fake's activity side ---- */

static CUptiResult f_ok_kind(CUpti_ActivityKind k) {
  (void)k;
  return CUPTI_SUCCESS;
}
static CUptiResult f_attr(CUpti_ActivityAttribute a, size_t *size, void *v) {
  (void)a;
  (void)size;
  (void)v;
  return CUPTI_SUCCESS;
}
static CUptiResult f_cbname(CUpti_CallbackDomain d, uint32_t cbid, const char **name) {
  (void)d;
  (void)cbid;
  *name = "cudaLaunchKernel_v7000";
  return CUPTI_SUCCESS;
}
static CUptiResult f_ts(uint64_t *ts) {
  *ts = T0 + 5000000000ull;
  return CUPTI_SUCCESS;
}

static tbe__cupti_api fake_api(void) {
  tbe__cupti_api a;
  memset(&a, 0, sizeof a);
  a.activity_enable = f_ok_kind;
  a.activity_disable = f_ok_kind;
  a.register_callbacks = tf_register;
  a.get_next_record = tf_next_record;
  a.get_num_dropped = tf_get_num_dropped;
  a.flush_all = tf_flush;
  a.set_attribute = f_attr;
  a.get_callback_name = f_cbname;
  a.get_timestamp = f_ts;
  tfm_fill(&a.m);
  return a;
}

static void kernel_record(uint32_t corr, const char *name) {
  CUpti_ActivityKernel10 k;
  memset(&k, 0, sizeof k);
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = T0 + corr * 1000;
  k.end = k.start + 500;
  k.contextId = 1;
  k.streamId = 7;
  k.correlationId = corr;
  k.name = name;
  tf_emit(&k, sizeof k);
}

/* ---- messages ---- */

static struct {
  pthread_mutex_t mu;
  char lines[16][512];
  int n;
} M = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void on_message(void *ctx, tbe_message_level level, const char *line) {
  (void)ctx;
  (void)level;
  pthread_mutex_lock(&M.mu);
  if (M.n < 16) snprintf(M.lines[M.n++], sizeof M.lines[0], "%s", line);
  pthread_mutex_unlock(&M.mu);
}

static int lines_with(const char *needle) {
  int c = 0;
  pthread_mutex_lock(&M.mu);
  for (int i = 0; i < M.n; i++) c += strstr(M.lines[i], needle) != NULL;
  pthread_mutex_unlock(&M.mu);
  return c;
}

/* ---- the spool, scanned ---- */

typedef struct scan {
  char *strs[256];
  struct {
    uint32_t name, source, unit;
  } def[64];
  uint64_t samples[64];  /* per metric id */
  double sum[64];
  int64_t first_ts, last_ts;
  int ts_ordered;
  uint64_t nsamples;
  tbe__sp_metric_status status[16];
  char reason[16][300];
  int nstatus;
  int notes_metrics;
  int kernels;           /* TBE__SP_KERNEL records */
  struct {
    uint32_t name, device, launches, nvalues;
    uint32_t id[8];
    double v[8];
  } km[16];
  int nkm;
  tbe__sp_replayed rep[16]; /* TBE__SP_REPLAYED items */
  int nrep;
} scan;

static const char *str_of(const scan *s, uint32_t id) {
  return id < 256 && s->strs[id] ? s->strs[id] : "";
}

static int on_item(void *ctx, unsigned type, const uint8_t *b, size_t len) {
  scan *s = ctx;
  if (type == TBE__SP_STR) {
    uint32_t id;
    memcpy(&id, b, 4);
    if (id < 256) {
      free(s->strs[id]);
      s->strs[id] = strndup((const char *)b + 4, len - 4);
    }
  } else if (type == TBE__SP_NOTE) {
    if (memmem(b, len, "metrics", 7)) s->notes_metrics++;
  } else if (type == TBE__SP_KERNEL) {
    s->kernels++;
  } else if (type == TBE__SP_METRIC_DEF) {
    tbe__sp_metric_def d;
    assert_int_equal(len, sizeof d);
    memcpy(&d, b, sizeof d);
    assert_true(d.id > 0 && d.id < 64);
    s->def[d.id].name = d.name;
    s->def[d.id].source = d.source;
    s->def[d.id].unit = d.unit;
  } else if (type == TBE__SP_METRIC_SAMPLES) {
    tbe__sp_metric_samples h;
    memcpy(&h, b, sizeof h);
    assert_true(h.nmetrics > 0 && h.nmetrics < 32);
    assert_int_equal(len, sizeof h + 4 * h.nmetrics + h.nsamples * (8 + 8 * (size_t)h.nmetrics));
    uint32_t ids[32];
    memcpy(ids, b + sizeof h, 4 * h.nmetrics);
    const uint8_t *p = b + sizeof h + 4 * h.nmetrics;
    for (uint32_t i = 0; i < h.nsamples; i++) {
      int64_t ts;
      memcpy(&ts, p, 8);
      if (s->nsamples == 0) s->first_ts = ts;
      else if (ts <= s->last_ts) s->ts_ordered = 0;
      s->last_ts = ts;
      s->nsamples++;
      for (uint32_t j = 0; j < h.nmetrics; j++) {
        double v;
        memcpy(&v, p + 8 + 8 * j, 8);
        assert_true(ids[j] > 0 && ids[j] < 64 && s->def[ids[j]].name); /* defined before use */
        s->samples[ids[j]]++;
        s->sum[ids[j]] += v;
      }
      p += 8 + 8 * h.nmetrics;
    }
  } else if (type == TBE__SP_KERNEL_METRICS && s->nkm < 16) {
    tbe__sp_kernel_metrics h;
    memcpy(&h, b, sizeof h);
    assert_int_equal(len, sizeof h + 16 * (size_t)h.nvalues);
    assert_true(h.nvalues <= 8);
    s->km[s->nkm].name = h.name;
    s->km[s->nkm].device = h.device;
    s->km[s->nkm].launches = h.launches;
    s->km[s->nkm].nvalues = h.nvalues;
    for (uint32_t i = 0; i < h.nvalues; i++) {
      memcpy(&s->km[s->nkm].id[i], b + sizeof h + 16 * i, 4);
      memcpy(&s->km[s->nkm].v[i], b + sizeof h + 16 * i + 8, 8);
      assert_true(s->def[s->km[s->nkm].id[i]].name); /* defined before use */
    }
    s->nkm++;
  } else if (type == TBE__SP_REPLAYED && s->nrep < 16) {
    assert_int_equal(len, sizeof(tbe__sp_replayed));
    memcpy(&s->rep[s->nrep++], b, sizeof(tbe__sp_replayed));
  } else if (type == TBE__SP_METRIC_STATUS && s->nstatus < 16) {
    memcpy(&s->status[s->nstatus], b, sizeof(tbe__sp_metric_status));
    size_t rl = len - sizeof(tbe__sp_metric_status);
    if (rl > 299) rl = 299;
    memcpy(s->reason[s->nstatus], b + sizeof(tbe__sp_metric_status), rl);
    s->reason[s->nstatus][rl] = '\0';
    s->nstatus++;
  }
  return 0;
}

static void scan_free(scan *s) {
  for (int i = 0; i < 256; i++) free(s->strs[i]);
}

static void scan_file(const char *path, scan *s) {
  memset(s, 0, sizeof *s);
  s->ts_ordered = 1;
  size_t n;
  uint8_t *data = tu_read_file(path, &n);
  assert_non_null(data);
  tbe__spool_tail tail;
  assert_int_equal(tbe__spool_scan(data, n, on_item, s, &tail), 0);
  free(data);
}

/* The metric id whose definition names `name`, or 0. */
static uint32_t metric(const scan *s, const char *name) {
  for (uint32_t i = 1; i < 64; i++)
    if (s->def[i].name && strcmp(str_of(s, s->def[i].name), name) == 0) return i;
  return 0;
}

/* The last status item of kind on device, or NULL. */
static const tbe__sp_metric_status *status_of(const scan *s, unsigned kind, uint32_t device,
                                              const char **reason) {
  const tbe__sp_metric_status *r = NULL;
  for (int i = 0; i < s->nstatus; i++)
    if (s->status[i].kind == kind && s->status[i].device == device) {
      r = &s->status[i];
      if (reason) *reason = s->reason[i];
    }
  return r;
}

/* ---- harness ---- */

typedef struct fixture {
  char *dir, *spool;
  tbe__cupti_api api;
} fixture;

static int setup(void **state) {
  tf_reset();
  tfm_reset();
  /* The tests that read the spool's sample items evaluate live; the end to
   * end ones (e2e_start) the default way, deferred to the conversion. */
  setenv("TBEXPORT_PM_EVAL", "live", 1);
  pthread_mutex_lock(&M.mu);
  M.n = 0;
  pthread_mutex_unlock(&M.mu);
  fixture *f = calloc(1, sizeof *f);
  f->dir = tu_mkdtemp();
  f->spool = tu_join(f->dir, "1.spool");
  f->api = fake_api();
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  tu_rmrf(f->dir);
  free(f->dir);
  free(f->spool);
  free(f);
  return 0;
}

static void start_capture(fixture *f, unsigned kset, unsigned launches, unsigned capture,
                          const char *name, const char *domain) {
  tbe__collect_config c;
  memset(&c, 0, sizeof c);
  c.trace = TBE_TRACE_CUDA | TBE_TRACE_NVTX;
  c.spool_path = f->spool;
  c.kernel_metrics = kset;
  c.kernel_launches = launches;
  c.capture = capture;
  c.capture_name = name;
  c.capture_domain = domain;
  c.on_message = on_message;
  assert_int_equal(tbe__collector_start(&f->api, &c), 0);
}

static void start(fixture *f, unsigned hz, unsigned kset, unsigned launches) {
  tbe__collect_config c;
  memset(&c, 0, sizeof c);
  c.trace = TBE_TRACE_CUDA;
  c.spool_path = f->spool;
  c.gpu_metrics_hz = hz;
  c.kernel_metrics = kset;
  c.kernel_launches = launches;
  c.on_message = on_message;
  assert_int_equal(tbe__collector_start(&f->api, &c), 0);
}

static void stop(void) {
  assert_int_equal(tbe__collector_stop(NULL), 0);
  assert_int_equal(tfm.host_objects, 0); /* every host object freed */
  /* no host object outlived its availability image; sampling disabled
   * at most once, and nothing called on it after */
  assert_int_equal(tfm.avail_bad, 0);
  assert_true(tfm.pm_disable_calls <= 1);
  assert_int_equal(tfm.pm_calls_after_disable, 0);
}

static void nap_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000};
  nanosleep(&t, NULL);
}

/* ---- tests ---- */

/* 3000 samples at 10 kHz: in the spool before stop (the background
 * thread's ticks), every one after, in order, with our names and CUPTI's. */
static void test_pm_samples_to_spool(void **state) {
  fixture *f = *state;
  start(f, 10000, 0, 0);
  assert_true(tfm.subscribed && tfm.cb_resource);
  assert_false(tfm.cb_launch); /* PM alone costs launches nothing */
  tfm_context_created(0);
  /* Set up on the thread creating the context, before its first kernel,
   * not at the next tick. */
  assert_true(tfm.pm_enabled && tfm.pm_started);
  kernel_record(1, "k_during_sampling");
  tfm_pm_produce(T0, 3000, 100000);
  scan s;
  int seen = 0;
  for (int i = 0; i < 100 && !seen; i++) {
    nap_ms(50);
    scan_file(f->spool, &s);
    seen = s.nsamples == 3000;
    scan_free(&s);
  }
  assert_true(seen);
  assert_int_equal(tfm.pm_interval, 100000); /* 1e9 / 10 kHz, in ns */
  stop();
  assert_true(tfm.pm_stopped);
  assert_false(tfm.pm_enabled);
  scan_file(f->spool, &s);
  assert_int_equal(s.nsamples, 3000);
  assert_true(s.ts_ordered);
  assert_int_equal(s.first_ts, (int64_t)(T0 + 100000)); /* a sample's end */
  assert_int_equal(s.last_ts, (int64_t)(T0 + 3000 * 100000ull));
  static const char *const names[] = {"sm_active_pct",  "occupancy_pct",      "tensor_active_pct",
                                      "dram_read_pct",  "dram_write_pct",     "pcie_rx_bytes_per_s",
                                      "pcie_tx_bytes_per_s", "sm_clock_hz", "dram_clock_hz"};
  for (size_t j = 0; j < sizeof names / sizeof names[0]; j++) {
    uint32_t id = metric(&s, names[j]);
    assert_true(id > 0);
    assert_int_equal(s.samples[id], 3000);
    /* the fake's value of the j-th metric sampled */
    assert_true(fabs(s.sum[id] / 3000 - (double)(j + 1) * 1.5) < 1e-9);
  }
  assert_string_equal(str_of(&s, s.def[metric(&s, "sm_active_pct")].source),
                      "sm__cycles_active.avg.pct_of_peak_sustained_elapsed");
  assert_int_equal(s.def[metric(&s, "sm_clock_hz")].unit, TBE__MU_HZ);
  assert_int_equal(metric(&s, "nvlink_rx_bytes_per_s"), 0); /* the chip has no NVLink */
  const tbe__sp_metric_status *st = status_of(&s, TBE__MKIND_PM_SAMPLING, 0, NULL);
  assert_non_null(st);
  assert_int_equal(st->status, TBE__MS_OK);
  assert_int_equal(st->samples, 3000);
  assert_int_equal(st->overflow, 0);
  assert_int_equal(s.kernels, 1);
  assert_int_equal(M.n, 0);
  scan_free(&s);
}

/* An overflow: the 40 samples the gap shows are counted, the rest kept. */
static void test_pm_overflow_counted(void **state) {
  fixture *f = *state;
  start(f, 10000, 0, 0);
  tfm_context_created(0);
  tfm_pm_produce(T0, 100, 100000);
  nap_ms(200);
  pthread_mutex_lock(&tfm.mu);
  tfm.pm_overflow_next = 1;
  pthread_mutex_unlock(&tfm.mu);
  tfm_pm_produce(T0 + 140 * 100000ull, 100, 100000); /* samples 100..139 lost */
  /* The program's exit destroys the context before the collector stops:
   * sampling is stopped and drained then, while CUPTI's state is whole. */
  tfm_context_destroyed(0);
  assert_true(tfm.pm_stopped);
  assert_false(tfm.pm_enabled);
  stop();
  scan s;
  scan_file(f->spool, &s);
  assert_int_equal(s.nsamples, 200);
  const tbe__sp_metric_status *st = status_of(&s, TBE__MKIND_PM_SAMPLING, 0, NULL);
  assert_non_null(st);
  assert_int_equal(st->status, TBE__MS_OK);
  assert_int_equal(st->samples, 200);
  assert_int_equal(st->overflow, 40);
  scan_free(&s);
}

/* The process exits while sampling: the exit hook (registered after
 * CUPTI's first profiler calls, so run before CUPTI's exit handlers) has
 * the background thread stop and drain, and frees the host object; no
 * disable at exit (CUPTI's teardown takes the object); a second run of
 * it, the context's destruction and the collector's stop after it call
 * nothing of CUPTI's for PM sampling. */
static void test_exit_hook_stops_before_cupti(void **state) {
  fixture *f = *state;
  start(f, 10000, 0, 0);
  tfm_context_created(0);
  tfm_pm_produce(T0, 500, 100000);
  scan s;
  int seen = 0;
  for (int i = 0; i < 100 && !seen; i++) {
    nap_ms(50);
    scan_file(f->spool, &s);
    seen = s.nsamples == 500;
    scan_free(&s);
  }
  assert_true(seen);
  tfm_pm_produce(T0 + 500 * 100000ull, 20, 100000); /* decoded by the hook's stop */
  tbe__hwm_at_exit();
  assert_true(tfm.pm_stopped);
  assert_int_equal(tfm.pm_disable_calls, 0);
  assert_int_equal(tfm.host_objects, 0);
  tfm.pm_stopped = 0;
  tbe__hwm_at_exit();
  tfm_context_destroyed(0); /* the driver's teardown after it */
  stop();
  assert_false(tfm.pm_stopped);
  assert_int_equal(tfm.pm_disable_calls, 0);
  scan_file(f->spool, &s);
  assert_int_equal(s.nsamples, 520);
  assert_true(s.ts_ordered);
  const tbe__sp_metric_status *st = status_of(&s, TBE__MKIND_PM_SAMPLING, 0, NULL);
  assert_non_null(st);
  assert_int_equal(st->status, TBE__MS_OK);
  assert_int_equal(st->samples, 520);
  scan_free(&s);
}

/* Samples a decode stamps with a time not after the last one's (the
 * H200's stale stamps after an image was started again) are not written:
 * counted as stale, apart from overflows; the timeline stays in order. */
static void test_pm_stale_stamps_dropped(void **state) {
  fixture *f = *state;
  start(f, 10000, 0, 0);
  tfm_context_created(0);
  tfm_pm_produce(T0, 300, 100000);
  tfm_pm_produce(T0 - 5000000, 10, 0); /* ten samples, one old stamp */
  tfm_pm_produce(T0 + 300 * 100000ull, 300, 100000);
  nap_ms(150);
  stop();
  scan s;
  scan_file(f->spool, &s);
  assert_int_equal(s.nsamples, 600);
  assert_true(s.ts_ordered);
  assert_int_equal(s.last_ts, (int64_t)(T0 + 600 * 100000ull));
  const tbe__sp_metric_status *st = status_of(&s, TBE__MKIND_PM_SAMPLING, 0, NULL);
  assert_non_null(st);
  assert_int_equal(st->samples, 600);
  assert_int_equal(st->overflow, 0); /* not an overflow: counted apart */
  assert_int_equal(st->stale, 10);
  scan_free(&s);
}

/* NVreg_RestrictProfilingToAdminUsers: both kinds refused, one line each,
 * statuses and notes, and the activity trace whole. */
static void test_permission_refused_trace_kept(void **state) {
  fixture *f = *state;
  tfm.pm_enable_rc = CUPTI_ERROR_INSUFFICIENT_PRIVILEGES;
  tfm.rp_enable_rc = CUPTI_ERROR_INSUFFICIENT_PRIVILEGES;
  start(f, 10000, TBE_KMETRICS_DEFAULT, 3);
  tfm_context_created(0);
  tfm_context_created(1);
  for (uint32_t i = 0; i < 5; i++) {
    tfm_launch(0, "gemm");
    tfm_launch(1, "gemm");
    kernel_record(i + 1, "gemm");
  }
  nap_ms(150);
  stop();
  scan s;
  scan_file(f->spool, &s);
  assert_int_equal(s.kernels, 5);
  assert_int_equal(s.nsamples, 0);
  assert_int_equal(s.nkm, 0);
  for (uint32_t d = 0; d < 2; d++) {
    const char *why = NULL;
    const tbe__sp_metric_status *st = status_of(&s, TBE__MKIND_PM_SAMPLING, d, &why);
    assert_non_null(st);
    assert_int_equal(st->status, TBE__MS_NO_PERMISSION);
    assert_non_null(strstr(why, "NVreg_RestrictProfilingToAdminUsers"));
    st = status_of(&s, TBE__MKIND_RANGE_PROFILER, d, NULL);
    assert_non_null(st);
    assert_int_equal(st->status, TBE__MS_NO_PERMISSION);
  }
  assert_int_equal(s.notes_metrics, 4);
  /* one line per kind, whatever the number of devices */
  assert_int_equal(M.n, 2);
  assert_int_equal(lines_with("GPU metrics (PM sampling) off on device 0: no permission"), 1);
  assert_int_equal(lines_with("kernel metrics (range profiler) off on device 0: no permission"), 1);
  assert_int_equal(lines_with("the activity trace is still collected"), 2);
  scan_free(&s);
}

/* The first N launches of each name, per device; the mean of each metric
 * over them; one item per kernel. */
static void test_range_profiler_first_n(void **state) {
  fixture *f = *state;
  start(f, 0, TBE_KMETRICS_DEFAULT, 2);
  assert_true(tfm.cb_launch);
  tfm_launch(0, "kA"); /* seq 1 */
  tfm_launch(0, "kB"); /* seq 2 */
  tfm_launch(0, "kA"); /* seq 3: kA done */
  tfm_launch(0, "kA"); /* not measured */
  tfm_launch(0, "kA");
  assert_false(tfm.rp_started);
  scan s;
  int seen = 0; /* kA is written as soon as its launches are measured */
  for (int i = 0; i < 100 && !seen; i++) {
    nap_ms(50);
    scan_file(f->spool, &s);
    seen = s.nkm == 1;
    scan_free(&s);
  }
  assert_true(seen);
  stop();
  assert_false(tfm.rp_enabled);
  scan_file(f->spool, &s);
  assert_int_equal(s.nkm, 2);
  for (int i = 0; i < 2; i++) {
    const char *name = str_of(&s, s.km[i].name);
    int is_a = strcmp(name, "kA") == 0;
    assert_true(is_a || strcmp(name, "kB") == 0);
    assert_int_equal(s.km[i].launches, is_a ? 2 : 1);
    assert_int_equal(s.km[i].device, 0);
    assert_int_equal(s.km[i].nvalues, 7);
    double seq = is_a ? 2.0 : 2.0; /* kA: (1 + 3) / 2; kB: 2 */
    for (uint32_t j = 0; j < 7; j++) assert_true(fabs(s.km[i].v[j] - ((j + 1) * 100.0 + seq)) < 1e-9);
  }
  uint32_t sm = metric(&s, "sm_throughput_pct"), l2 = metric(&s, "l2_hit_pct");
  assert_true(sm && l2);
  assert_string_equal(str_of(&s, s.def[sm].source), "sm__throughput.avg.pct_of_peak_sustained_elapsed");
  assert_string_equal(str_of(&s, s.def[l2].source), "lts__t_sector_hit_rate.pct");
  assert_true(metric(&s, "achieved_occupancy_pct") && metric(&s, "tensor_pipe_pct") &&
              metric(&s, "mem_throughput_pct") && metric(&s, "dram_throughput_pct") &&
              metric(&s, "duration_ns"));
  const tbe__sp_metric_status *st = status_of(&s, TBE__MKIND_RANGE_PROFILER, 0, NULL);
  assert_non_null(st);
  assert_int_equal(st->status, TBE__MS_OK);
  assert_int_equal(st->samples, 3);
  scan_free(&s);
}

/* The figures of (name) in the scan, its launches measured; -1 if none. */
static int km_launches(const scan *s, const char *name) {
  for (int i = 0; i < s->nkm; i++)
    if (strcmp(str_of(s, s->km[i].name), name) == 0) return (int)s->km[i].launches;
  return -1;
}

/* Whether a REPLAYED item times launch `corr`, with a span. */
static int replayed(const scan *s, uint32_t corr) {
  for (int i = 0; i < s->nrep; i++)
    if (s->rep[i].corr == corr) return s->rep[i].start > 0 && s->rep[i].end >= s->rep[i].start;
  return 0;
}

/* With --capture-range cudaProfilerApi, only the launches between
 * cudaProfilerStart and cudaProfilerStop are measured (a warm-up before
 * and the launches after are not), each timed by a REPLAYED item. */
static void test_range_profiler_capture_profiler_api(void **state) {
  fixture *f = *state;
  start_capture(f, TBE_KMETRICS_BRIEF, 2, TBE_CAPTURE_PROFILER_API, NULL, NULL);
  assert_true(tfm.cb_profiler);
  assert_false(tfm.cb_nvtx);
  tfm_launch(0, "kA"); /* corr 1: warm-up, outside */
  tfm_launch(0, "kB"); /* corr 2: outside */
  assert_false(tfm.rp_enabled); /* nothing set up before the range */
  tfm_profiler_call(1);
  tfm_launch(0, "kA"); /* corr 3: measured, seq 1 */
  tfm_launch(0, "kA"); /* corr 4: measured, seq 2 */
  tfm_launch(0, "kB"); /* corr 5: measured, seq 3 */
  tfm_profiler_call(0);
  tfm_launch(0, "kB"); /* corr 6: outside again */
  tfm_launch(0, "kC"); /* corr 7: never inside */
  stop();
  scan s;
  scan_file(f->spool, &s);
  assert_int_equal(s.nkm, 2);
  assert_int_equal(km_launches(&s, "kA"), 2);
  assert_int_equal(km_launches(&s, "kB"), 1);
  assert_int_equal(km_launches(&s, "kC"), -1);
  for (int i = 0; i < s.nkm; i++) {
    int a = strcmp(str_of(&s, s.km[i].name), "kA") == 0;
    /* sm_throughput_pct: 100 + the mean sequence number of the launches */
    assert_true(fabs(s.km[i].v[0] - (100.0 + (a ? 1.5 : 3.0))) < 1e-9);
  }
  assert_int_equal(s.nrep, 3);
  assert_true(replayed(&s, 3) && replayed(&s, 4) && replayed(&s, 5));
  const tbe__sp_metric_status *st = status_of(&s, TBE__MKIND_RANGE_PROFILER, 0, NULL);
  assert_non_null(st);
  assert_int_equal(st->samples, 3);
  scan_free(&s);
}

/* With --capture-range nvtx:step, launches inside an open "step" range,
 * on any thread's stack level or as a start/end range, are measured;
 * those in other ranges, outside, or after the range closed are not. */
static void test_range_profiler_capture_nvtx(void **state) {
  fixture *f = *state;
  start_capture(f, TBE_KMETRICS_BRIEF, 10, TBE_CAPTURE_NVTX, "step", NULL);
  assert_true(tfm.cb_nvtx);
  tfm_nvtx_push(NULL, "warmup");
  tfm_launch(0, "kA"); /* corr 1: not measured */
  tfm_nvtx_pop(NULL);
  tfm_nvtx_push(NULL, "step");
  tfm_nvtx_push(NULL, "inner");
  tfm_launch(0, "kA"); /* corr 2: inside (nested) */
  tfm_nvtx_pop(NULL);
  tfm_launch(0, "kA"); /* corr 3: inside */
  tfm_nvtx_pop(NULL);
  tfm_launch(0, "kA"); /* corr 4: not */
  uint64_t id = tfm_nvtx_start("step");
  tfm_launch(0, "kB"); /* corr 5: inside a start/end range */
  tfm_nvtx_end(id);
  tfm_launch(0, "kB"); /* corr 6: not */
  nvtxDomainHandle_t other = tfm_nvtx_domain(7, "other");
  tfm_nvtx_push(other, "step"); /* any domain matches without @DOMAIN */
  tfm_launch(0, "kC");          /* corr 7: inside */
  tfm_nvtx_pop(other);
  tfm_nvtx_pop(NULL); /* a pop without its push changes nothing */
  tfm_launch(0, "kC"); /* corr 8: not */
  stop();
  scan s;
  scan_file(f->spool, &s);
  assert_int_equal(km_launches(&s, "kA"), 2);
  assert_int_equal(km_launches(&s, "kB"), 1);
  assert_int_equal(km_launches(&s, "kC"), 1);
  assert_int_equal(s.nrep, 4);
  assert_true(replayed(&s, 2) && replayed(&s, 3) && replayed(&s, 5) && replayed(&s, 7));
  scan_free(&s);
}

/* nvtx:step@app: only "step" ranges of the domain named "app" open it. */
static void test_range_profiler_capture_nvtx_domain(void **state) {
  fixture *f = *state;
  start_capture(f, TBE_KMETRICS_BRIEF, 10, TBE_CAPTURE_NVTX, "step", "app");
  nvtxDomainHandle_t app = tfm_nvtx_domain(1, "app"), other = tfm_nvtx_domain(2, "other");
  tfm_nvtx_push(NULL, "step");
  tfm_launch(0, "kA"); /* corr 1: the default domain: not */
  tfm_nvtx_pop(NULL);
  tfm_nvtx_push(other, "step");
  tfm_launch(0, "kA"); /* corr 2: another domain: not */
  tfm_nvtx_push(app, "step");
  tfm_launch(0, "kA"); /* corr 3: inside */
  tfm_nvtx_pop(other); /* pops "other"'s level, not "app"'s: still inside */
  tfm_launch(0, "kB"); /* corr 4: inside */
  tfm_nvtx_pop(app);
  tfm_launch(0, "kB"); /* corr 5: not */
  stop();
  scan s;
  scan_file(f->spool, &s);
  assert_int_equal(km_launches(&s, "kA"), 1);
  assert_int_equal(km_launches(&s, "kB"), 1);
  assert_int_equal(s.nrep, 2);
  assert_true(replayed(&s, 3) && replayed(&s, 4));
  scan_free(&s);
}

/* At exit the hook frees the range profiler's host objects first and
 * disables nothing; a launch after it is not measured, and the figures
 * and status still come. */
static void test_range_profiler_exit_hook(void **state) {
  fixture *f = *state;
  start(f, 0, TBE_KMETRICS_BRIEF, 3);
  tfm_launch(0, "kA");
  assert_true(tfm.rp_enabled);
  tbe__hwm_at_exit();
  assert_int_equal(tfm.host_objects, 0);
  tfm_launch(0, "kA"); /* not measured: nothing started */
  assert_false(tfm.rp_started);
  stop();
  assert_true(tfm.rp_enabled); /* not disabled at exit: CUPTI's teardown takes it */
  scan s;
  scan_file(f->spool, &s);
  assert_int_equal(s.nkm, 1);
  assert_int_equal(s.km[0].launches, 1);
  assert_int_equal(s.km[0].nvalues, 3);
  const tbe__sp_metric_status *st = status_of(&s, TBE__MKIND_RANGE_PROFILER, 0, NULL);
  assert_non_null(st);
  assert_int_equal(st->status, TBE__MS_OK);
  assert_int_equal(st->samples, 1);
  scan_free(&s);
}

/* Another tool holds CUPTI's one subscriber slot: both kinds busy on every
 * device; a CUPTI without the PM sampling API: unsupported. */
static void test_busy_and_missing_api(void **state) {
  fixture *f = *state;
  tfm.subscribe_rc = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  start(f, 10000, TBE_KMETRICS_BRIEF, 3);
  kernel_record(1, "k");
  stop();
  scan s;
  scan_file(f->spool, &s);
  assert_int_equal(s.kernels, 1);
  const tbe__sp_metric_status *st = status_of(&s, TBE__MKIND_PM_SAMPLING, UINT32_MAX, NULL);
  assert_non_null(st);
  assert_int_equal(st->status, TBE__MS_BUSY);
  st = status_of(&s, TBE__MKIND_RANGE_PROFILER, UINT32_MAX, NULL);
  assert_non_null(st);
  assert_int_equal(st->status, TBE__MS_BUSY);
  assert_int_equal(lines_with("another profiler holds"), 2);
  scan_free(&s);

  tf_reset();
  tfm_reset();
  unlink(f->spool);
  f->api.m.pm_enable = NULL;
  start(f, 10000, 0, 0);
  tfm_context_created(0);
  nap_ms(120);
  stop();
  scan_file(f->spool, &s);
  const char *why = NULL;
  st = status_of(&s, TBE__MKIND_PM_SAMPLING, 0, &why);
  assert_non_null(st);
  assert_int_equal(st->status, TBE__MS_UNSUPPORTED);
  assert_non_null(strstr(why, "no PM sampling API"));
  scan_free(&s);
}

/* The options reach the injection library through the environment. */
static void test_options_roundtrip(void **state) {
  (void)state;
  tbe__collect_opts o, back;
  tbe__opts_default(&o);
  o.gpu_metrics_hz = 20000;
  o.kernel_metrics = TBE_KMETRICS_BRIEF;
  o.kernel_launches = 5;
  char buf[256];
  assert_int_equal(tbe__opts_encode(&o, buf, sizeof buf), 0);
  tbe__opts_default(&back);
  assert_int_equal(tbe__opts_decode(buf, &back), 0);
  assert_int_equal(back.gpu_metrics_hz, 20000);
  assert_int_equal(back.kernel_metrics, TBE_KMETRICS_BRIEF);
  assert_int_equal(back.kernel_launches, 5);
  assert_int_equal(tbe__opts_decode("kmetrics=9", &back), TBE_EINVAL);
  /* The capture range's name and domain, any bytes but NUL. */
  snprintf(o.capture_name, sizeof o.capture_name, "%s", "step;1=a %b\xc3\xa9");
  snprintf(o.capture_domain, sizeof o.capture_domain, "%s", "my app");
  assert_int_equal(tbe__opts_encode(&o, buf, sizeof buf), 0);
  assert_null(strstr(buf, "step;"));
  tbe__opts_default(&back);
  assert_int_equal(tbe__opts_decode(buf, &back), 0);
  assert_string_equal(back.capture_name, "step;1=a %b\xc3\xa9");
  assert_string_equal(back.capture_domain, "my app");
  assert_int_equal(back.kernel_launches, 5);
  assert_int_equal(tbe__opts_decode("cname=a%2", &back), TBE_EINVAL);
  assert_int_equal(tbe__opts_decode("cname=a%00b", &back), TBE_EINVAL);
  assert_int_equal(tbe__opts_encode(&o, buf, 40), TBE_ETOOBIG);
  unsigned set = 0;
  assert_int_equal(tbe_profiler_parse_kernel_metrics("default", &set), 0);
  assert_int_equal(set, TBE_KMETRICS_DEFAULT);
  assert_int_equal(tbe_profiler_parse_kernel_metrics("all", &set), TBE_EINVAL);
}

/* ---- end to end: the fake's metrics through the spool to the outputs ---- */

/* The collection starts at the fake's clock (f_ts): the records and
 * samples of these tests come after it. */
#define E2E (T0 + 5000000000ull + 1000000ull)

/* The fake's clock for these tests: T0 + 5 s while the collection starts
 * (as f_ts), a minute later when it stops (e2e_stop), so the collection
 * window holds what they emit. */
static _Atomic uint64_t e2e_now;
static CUptiResult e2e_clock(uint64_t *ts) {
  *ts = e2e_now;
  return CUPTI_SUCCESS;
}

static void e2e_start(fixture *f, unsigned hz, unsigned kset, unsigned launches) {
  unsetenv("TBEXPORT_PM_EVAL"); /* the default: deferred */
  e2e_now = T0 + 5000000000ull;
  f->api.get_timestamp = e2e_clock;
  start(f, hz, kset, launches);
}

static void e2e_stop(void) {
  e2e_now = T0 + 65000000000ull;
  stop();
}

static void e2e_kernel(uint32_t corr, const char *name) {
  CUpti_ActivityKernel10 k;
  memset(&k, 0, sizeof k);
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = E2E + corr * 20000;
  k.end = k.start + 15000;
  k.contextId = 1;
  k.streamId = 7;
  k.correlationId = corr;
  k.name = name;
  tf_emit(&k, sizeof k);
}

/* The spool converted as `tbexport import` converts it (session.c): the
 * raw PM images evaluated first, with the fake's host API. */
static tbe_trace *converted(const fixture *f) {
  char why[300];
  assert_int_equal(tbe__pm_eval_spool(f->spool, &f->api.m.host, why, sizeof why), 0);
  assert_string_equal(why, "");
  tbe_trace *t = NULL;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  tbe__convert_info info;
  memset(&info, 0, sizeof info);
  assert_int_equal(tbe__spool_file_to_trace(f->spool, NULL, t, &info), 0);
  return t;
}

static int warnings_with(const tbe_trace *t, const char *needle) {
  int c = 0;
  for (size_t i = 0; i < t->nwarnings; i++) c += strstr(tbe_trace_str(t, t->warnings[i]), needle) != NULL;
  return c;
}

static char *summary_json(tbe_trace *t) {
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

/* The scalars tagged `tag` in the events files under `dir` (recursive). */
static int scalars_of(const char *dir, const char *tag, double *v, int max) {
  tbe_reader *r;
  assert_int_equal(tbe_reader_open(&r, dir, TBE_READER_RECURSIVE, NULL), 0);
  const tbe_tb_event *ev;
  int n = 0, rc;
  while ((rc = tbe_reader_next(r, &ev)) == 1)
    for (size_t i = 0; ev->kind == TBE_TB_SUMMARY && i < ev->nvalues; i++)
      if (strcmp(ev->values[i].tag, tag) == 0 && n < max)
        v[n++] = ev->values[i].type == TBE_VALUE_SIMPLE ? ev->values[i].simple_value : NAN;
  assert_int_equal(rc, 0);
  tbe_reader_close(r);
  return n;
}

/* PM sampling with an overflow: the collector's spool, converted, gives the
 * fake's values as GPU 0's means in the summary JSON, a "C" counter per
 * metric in the Chrome JSON, the gpu_metrics/<metric> series in the events
 * file, and the lost samples as one warning line, the stale ones as
 * another. */
static void test_e2e_pm_sampling(void **state) {
  fixture *f = *state;
  e2e_start(f, 10000, 0, 0);
  tfm_context_created(0);
  for (uint32_t i = 1; i <= 20; i++) e2e_kernel(i, "k_sampled");
  tfm_pm_produce(E2E, 100, 100000);
  nap_ms(150);
  pthread_mutex_lock(&tfm.mu);
  tfm.pm_overflow_next = 1;
  pthread_mutex_unlock(&tfm.mu);
  tfm_pm_produce(E2E + 140 * 100000ull, 100, 100000); /* 40 lost */
  tfm_pm_produce(E2E, 5, 0); /* five stale stamps: left out, said apart */
  tfm_context_destroyed(0);
  e2e_stop();
  tbe_trace *t = converted(f);
  assert_int_equal(warnings_with(t, "PM sampling lost 40 samples on GPU 0"), 1);
  assert_int_equal(warnings_with(t, "PM sampling left out 5 samples on GPU 0 whose time"), 1);
  /* the overflow's gap is said once, in its own line */
  assert_int_equal(warnings_with(t, "has no samples in"), 0);
  char *s = summary_json(t);
  /* the fake's j-th metric reads (j + 1) * 1.5 */
  assert_non_null(strstr(s, "\"gpu_metrics\":{\"sm_active_pct\":1.5,\"occupancy_pct\":3,"
                            "\"tensor_active_pct\":4.5,\"dram_read_pct\":6,"));
  free(s);
  char *logdir = tu_join(f->dir, "log");
  tbe_export_options o;
  tbe_export_options_init(&o);
  o.logdir = logdir;
  o.run = "pm";
  o.host = "h";
  o.outputs = TBE_OUT_EVENTS;
  assert_int_equal(tbe_export_run(t, &o), 0);
  char *json = tu_join(f->dir, "pm.trace.json");
  assert_int_equal(tbe_export_chrome_json(t, json, 0, 1), 0);
  size_t n = 0;
  char *doc = (char *)tu_read_file(json, &n);
  assert_non_null(doc);
  assert_non_null(strstr(doc, "{\"ph\":\"C\",\"cat\":\"counter\",\"name\":\"sm_active_pct\",\"pid\":0,"));
  assert_non_null(strstr(doc, "\"name\":\"dram_clock_hz\",\"pid\":0,"));
  free(doc);
  char *run = tu_join(logdir, "pm");
  double v[8];
  assert_int_equal(scalars_of(run, "gpu_metrics/sm_active_pct", v, 8), 1);
  assert_true(fabs(v[0] - 1.5) < 1e-6);
  assert_int_equal(scalars_of(run, "summary/gpu_metrics/occupancy_pct", v, 8), 1);
  assert_true(fabs(v[0] - 3) < 1e-6);
  free(run);
  free(json);
  free(logdir);
  tbe_trace_free(t);
}

/* Samples missing without an overflow (the H200 lost some so when drained
 * too seldom): one warning with the gap's length, the means over the rest. */
static void test_e2e_pm_gap(void **state) {
  fixture *f = *state;
  e2e_start(f, 10000, 0, 0);
  tfm_context_created(0);
  e2e_kernel(1, "k");
  tfm_pm_produce(E2E, 100, 100000);
  tfm_pm_produce(E2E + 300 * 100000ull, 100, 100000); /* 200 missing: 20 ms */
  nap_ms(120);
  tfm_context_destroyed(0);
  e2e_stop();
  tbe_trace *t = converted(f);
  assert_int_equal(warnings_with(t, "PM sampling on GPU 0 has no samples in 1 gap, 0.020 s in all "
                                    "(50.1% of the 0.040 s sampled; the longest 20.1 ms)"),
                   1);
  assert_int_equal(warnings_with(t, "lost"), 0);
  tbe_trace_free(t);
}

/* ---- deferred evaluation (TBEXPORT_PM_EVAL) ---- */

/* Items of `type` in the spool, and the smallest TBE__SP_PM_IMAGE total. */
typedef struct count_ctx {
  unsigned type;
  size_t n;
  uint32_t total_min;
} count_ctx;
static int count_item(void *ctx, unsigned type, const uint8_t *body, size_t len) {
  count_ctx *c = ctx;
  if (type != c->type) return 0;
  c->n++;
  tbe__sp_pm_image h;
  if (type == TBE__SP_PM_IMAGE && len >= sizeof h) {
    memcpy(&h, body, sizeof h);
    if (!c->total_min || h.total < c->total_min) c->total_min = h.total;
  }
  return 0;
}
static count_ctx count_items(const char *path, unsigned type) {
  size_t n = 0;
  uint8_t *d = tu_read_file(path, &n);
  assert_non_null(d);
  count_ctx c = {type, 0, 0};
  tbe__spool_tail tail;
  assert_int_equal(tbe__spool_scan(d, n, count_item, &c, &tail), 0);
  assert_int_equal(tail.bytes, 0);
  free(d);
  return c;
}

/* One PM sample as the trace holds it. */
typedef struct pm_ev {
  int64_t ts;
  double v;
  char name[32];
} pm_ev;

/* The fake's samples (varying values; an overflow and stale stamps), and
 * the trace's counter events, in order, into ev (n returned); `mode` is
 * TBEXPORT_PM_EVAL's. */
static size_t pm_run(fixture *f, const char *mode, int soa, pm_ev *ev, size_t max) {
  tf_reset();
  tfm_reset();
  unlink(f->spool);
  setenv("TBEXPORT_PM_EVAL", mode, 1);
  e2e_now = T0 + 5000000000ull;
  f->api.get_timestamp = e2e_clock;
  start(f, 10000, 0, 0);
  tfm.pm_vary = 1;
  tfm.pm_soa = soa;
  tfm_context_created(0);
  for (uint32_t i = 1; i <= 5; i++) e2e_kernel(i, "k");
  tfm_pm_produce(E2E + 37, 700, 100003); /* several images of 256 */
  nap_ms(120);
  pthread_mutex_lock(&tfm.mu);
  tfm.pm_overflow_next = 1;
  pthread_mutex_unlock(&tfm.mu);
  tfm_pm_produce(E2E + 37 + 740 * 100003ull, 300, 100003);
  tfm_pm_produce(E2E, 3, 0); /* stale */
  tfm_context_destroyed(0);
  e2e_stop();
  count_ctx raw = count_items(f->spool, TBE__SP_PM_IMAGE);
  count_ctx live = count_items(f->spool, TBE__SP_METRIC_SAMPLES);
  if (strcmp(mode, "live") == 0) {
    assert_int_equal(raw.n, 0);
    assert_true(live.n > 0);
  } else {
    /* nothing evaluated in the program; images cut after their samples
     * (16 + 16 n bytes of the fake's 16 + 16 * 256) unless laid out so
     * that the cut would lose them */
    assert_int_equal(live.n, 0);
    assert_true(raw.n >= 4);
    if (soa) assert_int_equal(raw.total_min, 16 + 16 * 256);
    else assert_true(raw.total_min < 16 + 16 * 256);
  }
  tbe_trace *t = converted(f);
  size_t n = 0;
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_event *e = &t->events[i];
    if (e->kind != TBE_EV_COUNTER) continue;
    assert_true(n < max);
    ev[n].ts = e->start_ns;
    ev[n].v = tbe_trace_counter(t, e)->value;
    snprintf(ev[n].name, sizeof ev[n].name, "%s", tbe_trace_str(t, e->name));
    n++;
  }
  assert_int_equal(warnings_with(t, "PM sampling lost 40 samples on GPU 0"), 1);
  assert_int_equal(warnings_with(t, "PM sampling left out 3 samples on GPU 0"), 1);
  tbe_trace_free(t);
  return n;
}

/* Deferred evaluation gives the trace live evaluation gives: every
 * counter event's time, value and metric, on the same fake samples (whose
 * values vary per sample), whether the images were cut or copied whole;
 * evaluating a spool twice adds nothing. */
static void test_pm_deferred_same_as_live(void **state) {
  fixture *f = *state;
  enum { MAX = 12 * 1100 };
  pm_ev *a = calloc(MAX, sizeof *a), *b = calloc(MAX, sizeof *b), *c = calloc(MAX, sizeof *c);
  size_t na = pm_run(f, "live", 0, a, MAX);
  size_t nb = pm_run(f, "deferred", 0, b, MAX);
  /* 9 metrics x (1000 samples + the closing event) */
  assert_int_equal(na, 9 * 1001);
  assert_int_equal(nb, na);
  assert_memory_equal(a, b, na * sizeof *a);
  /* values vary: a sample read from the wrong index would show */
  assert_true(a[0].v != a[1].v);
  size_t nc = pm_run(f, "deferred", 1, c, MAX);
  assert_int_equal(nc, na);
  assert_memory_equal(a, c, na * sizeof *a);
  size_t items = count_items(f->spool, TBE__SP_METRIC_SAMPLES).n;
  char why[300];
  assert_int_equal(tbe__pm_eval_spool(f->spool, &f->api.m.host, why, sizeof why), 0);
  assert_int_equal(count_items(f->spool, TBE__SP_METRIC_SAMPLES).n, items);
  assert_int_equal(count_items(f->spool, TBE__SP_PM_EVALUATED).n, 1);
  free(a);
  free(b);
  free(c);
  unsetenv("TBEXPORT_PM_EVAL");
}

/* Deferred samples converted where no libcupti loads: one warning line
 * naming the reason, the activity trace kept. */
static void test_pm_deferred_no_cupti(void **state) {
  fixture *f = *state;
  e2e_start(f, 1000, 0, 0);
  tfm_context_created(0);
  e2e_kernel(1, "k_kept");
  tfm_pm_produce(E2E, 50, 1000000);
  tfm_context_destroyed(0);
  e2e_stop();
  /* read before any evaluation (a build without the collector): said */
  tbe_trace *raw = NULL;
  assert_int_equal(tbe_trace_create(&raw, NULL), 0);
  tbe__convert_info ri;
  memset(&ri, 0, sizeof ri);
  assert_int_equal(tbe__spool_file_to_trace(f->spool, NULL, raw, &ri), 0);
  assert_int_equal(warnings_with(raw, "50 PM samples are raw counter images that were not "
                                      "evaluated"),
                   1);
  tbe_trace_free(raw);
  if (getenv("HW_SPOOL")) {
    /* test/data/metrics/metrics_deferred.spool (test_metrics_outputs.sh) */
    char *path = tu_join(getenv("HW_SPOOL"), "metrics_deferred.spool");
    size_t n = 0;
    uint8_t *d = tu_read_file(f->spool, &n);
    FILE *o = fopen(path, "wb");
    assert_non_null(o);
    assert_int_equal(fwrite(d, 1, n, o), n);
    fclose(o);
    free(d);
    free(path);
  }
  setenv("TBEXPORT_CUPTI_LIB", "/nonexistent/libcupti.so", 1);
  char why[300];
  assert_int_equal(tbe__pm_eval_spool(f->spool, NULL, why, sizeof why), 0);
  unsetenv("TBEXPORT_CUPTI_LIB");
  assert_non_null(strstr(why, "cannot load TBEXPORT_CUPTI_LIB"));
  tbe_trace *t = NULL;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  tbe__convert_info info;
  memset(&info, 0, sizeof info);
  assert_int_equal(tbe__spool_file_to_trace(f->spool, NULL, t, &info), 0);
  assert_int_equal(warnings_with(t, "GPU metrics (PM sampling) not collected on GPU 0: "
                                    "collection failed: evaluating the samples at conversion: "
                                    "cannot load TBEXPORT_CUPTI_LIB"),
                   1);
  assert_int_equal(warnings_with(t, "GPU metrics"), 1);
  assert_int_equal(warnings_with(t, "not evaluated"), 0);
  size_t kernels = 0, counters = 0;
  for (size_t i = 0; i < t->nevents; i++) {
    kernels += t->events[i].kind == TBE_EV_KERNEL;
    counters += t->events[i].kind == TBE_EV_COUNTER;
  }
  assert_int_equal(kernels, 1);
  assert_int_equal(counters, 0);
  tbe_trace_free(t);
}

/* Deferred samples whose images CUPTI refuses at conversion: one line
 * (the status), the rest of the run kept. */
static void test_pm_deferred_bad_image(void **state) {
  fixture *f = *state;
  e2e_start(f, 1000, 0, 0);
  tfm_context_created(0);
  e2e_kernel(1, "k_kept");
  tfm_pm_produce(E2E, 20, 1000000);
  tfm_context_destroyed(0);
  e2e_stop();
  tfm.pm_eval_bad = 1;
  char why[300];
  assert_int_equal(tbe__pm_eval_spool(f->spool, &f->api.m.host, why, sizeof why), 0);
  assert_non_null(strstr(why, "CUPTI evaluated none of the 20 samples"));
  tbe_trace *t = NULL;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  tbe__convert_info info;
  memset(&info, 0, sizeof info);
  assert_int_equal(tbe__spool_file_to_trace(f->spool, NULL, t, &info), 0);
  assert_int_equal(warnings_with(t, "GPU metrics (PM sampling) not collected on GPU 0: collection "
                                    "failed: evaluating the samples at conversion: CUPTI "
                                    "evaluated none of the 20 samples"),
                   1);
  assert_int_equal(warnings_with(t, "GPU metrics"), 1);
  size_t kernels = 0;
  for (size_t i = 0; i < t->nevents; i++) kernels += t->events[i].kind == TBE_EV_KERNEL;
  assert_int_equal(kernels, 1);
  tbe_trace_free(t);
}

/* Raw items that lie (a spool is input): a configuration claiming a 1 GiB
 * image, one whose names do not fill their length, an image part out of
 * order.  Each device's samples fail with one status; nothing is
 * allocated for the claims, nothing read past an item. */
static void test_pm_deferred_hostile(void **state) {
  fixture *f = *state;
  tbe__buf b;
  tbe_allocator al;
  tbe__allocator_init(&al, NULL);
  tbe__buf_init(&b, &al);
  uint8_t body[512];
  for (uint32_t d = 0; d < 3; d++) {
    const char *chip = "GH100", names[] = "a.sum\0b.avg\0";
    tbe__sp_pm_config c = {d, 2, 5, (uint32_t)sizeof names - 1, 0, 4112, 16, 16};
    if (d == 0) c.full = 1u << 30;  /* too large */
    if (d == 1) c.names_len -= 1;   /* the last name not ended */
    uint32_t ids[2] = {1, 2};
    size_t at = 0;
    memcpy(body, &c, sizeof c), at += sizeof c;
    memcpy(body + at, ids, sizeof ids), at += sizeof ids;
    memcpy(body + at, chip, 5), at += 5;
    memcpy(body + at, names, c.names_len), at += c.names_len;
    tbe__spool_item(&b, TBE__SP_PM_CONFIG, body, at);
    tbe__sp_pm_image im = {d, 0, d == 2 ? 32u : 0u, 48}; /* device 2: a part out of order */
    memcpy(body, &im, sizeof im);
    memset(body + sizeof im, 0, 16);
    tbe__spool_item(&b, TBE__SP_PM_IMAGE, body, sizeof im + 16);
    tbe__sp_pm_times tm = {d, 0, 1, 0};
    tbe__sp_pm_time t1 = {0, 0, (int64_t)E2E};
    memcpy(body, &tm, sizeof tm);
    memcpy(body + sizeof tm, &t1, sizeof t1);
    tbe__spool_item(&b, TBE__SP_PM_TIMES, body, sizeof tm + sizeof t1);
  }
  uint8_t hdr[TBE__SPOOL_HEADER];
  tbe__spool_header(hdr, (int64_t)T0);
  FILE *o = fopen(f->spool, "wb");
  assert_non_null(o);
  assert_int_equal(fwrite(hdr, 1, sizeof hdr, o), sizeof hdr);
  fclose(o);
  int fd = open(f->spool, O_WRONLY | O_APPEND);
  assert_true(fd >= 0);
  assert_int_equal(tbe__spool_write_frame(fd, b.data, b.len), 0);
  close(fd);
  tbe__buf_deinit(&b);
  char why[300];
  assert_int_equal(tbe__pm_eval_spool(f->spool, &f->api.m.host, why, sizeof why), 0);
  assert_non_null(strstr(why, "GPU 0: evaluating the samples at conversion: a malformed PM "
                              "configuration item"));
  assert_int_equal(count_items(f->spool, TBE__SP_METRIC_SAMPLES).n, 0);
  assert_int_equal(count_items(f->spool, TBE__SP_PM_EVALUATED).n, 3);
  assert_int_equal(count_items(f->spool, TBE__SP_METRIC_STATUS).n, 3);
  assert_int_equal(tfm.host_objects, 0); /* the one made (device 2) was freed */
}

/* The range profiler where PM sampling has no permission: the kernels'
 * figures on their summary rows with a verdict, in the Chrome JSON's
 * tbexportKernelMetrics, and the refusal as one warning line naming the
 * driver setting; the activity trace whole. */
static void test_e2e_range_profiler(void **state) {
  fixture *f = *state;
  tfm.pm_enable_rc = CUPTI_ERROR_INSUFFICIENT_PRIVILEGES;
  e2e_start(f, 10000, TBE_KMETRICS_DEFAULT, 2);
  tfm_context_created(0);
  for (uint32_t i = 1; i <= 4; i++) {
    tfm_launch(0, "kA");
    e2e_kernel(i, "kA");
  }
  nap_ms(150);
  e2e_stop();
  tbe_trace *t = converted(f);
  assert_int_equal(warnings_with(t, "not collected on GPU 0: no permission"), 1);
  assert_int_equal(warnings_with(t, "NVreg_RestrictProfilingToAdminUsers"), 1);
  assert_int_equal(t->nkernel_metrics, 1);
  /* the slowdown of the launches it did not replay is said once */
  assert_int_equal(warnings_with(t, "the range profiler replayed 2 launches on GPU 0 and stays "
                                    "enabled there"),
                   1);
  char *s = summary_json(t);
  assert_non_null(strstr(s, "\"name\":\"kA\""));
  /* the fake's j-th figure of launch n reads (j + 1) * 100 + n: launches
   * 1 and 2 average to +1.5; DRAM (701.5) above SM throughput: memory */
  assert_non_null(strstr(s, "\"metrics\":{\"sm_throughput_pct\":101.5,\"mem_throughput_pct\":201.5,"));
  assert_non_null(strstr(s, "\"metric_launches\":2,\"bound_by\":\"memory\""));
  assert_null(strstr(s, "\"gpu_metrics\""));
  free(s);
  char *json = tu_join(f->dir, "rp.trace.json");
  assert_int_equal(tbe_export_chrome_json(t, json, 0, 1), 0);
  size_t n = 0;
  char *doc = (char *)tu_read_file(json, &n);
  assert_non_null(doc);
  assert_non_null(strstr(doc, "\"tbexportKernelMetrics\": [\n    {\"name\": \"kA\", \"device\": 0, "
                              "\"launches\": 2, \"metrics\": {\"sm_throughput_pct\": 101.5,"));
  free(doc);
  free(json);
  tbe_trace_free(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_pm_samples_to_spool, setup, teardown),
      cmocka_unit_test_setup_teardown(test_pm_overflow_counted, setup, teardown),
      cmocka_unit_test_setup_teardown(test_permission_refused_trace_kept, setup, teardown),
      cmocka_unit_test_setup_teardown(test_range_profiler_first_n, setup, teardown),
      cmocka_unit_test_setup_teardown(test_range_profiler_exit_hook, setup, teardown),
      cmocka_unit_test_setup_teardown(test_range_profiler_capture_profiler_api, setup, teardown),
      cmocka_unit_test_setup_teardown(test_range_profiler_capture_nvtx, setup, teardown),
      cmocka_unit_test_setup_teardown(test_range_profiler_capture_nvtx_domain, setup, teardown),
      cmocka_unit_test_setup_teardown(test_exit_hook_stops_before_cupti, setup, teardown),
      cmocka_unit_test_setup_teardown(test_pm_stale_stamps_dropped, setup, teardown),
      cmocka_unit_test_setup_teardown(test_busy_and_missing_api, setup, teardown),
      cmocka_unit_test_setup_teardown(test_options_roundtrip, setup, teardown),
      cmocka_unit_test_setup_teardown(test_e2e_pm_sampling, setup, teardown),
      cmocka_unit_test_setup_teardown(test_e2e_pm_gap, setup, teardown),
      cmocka_unit_test_setup_teardown(test_pm_deferred_same_as_live, setup, teardown),
      cmocka_unit_test_setup_teardown(test_pm_deferred_no_cupti, setup, teardown),
      cmocka_unit_test_setup_teardown(test_pm_deferred_bad_image, setup, teardown),
      cmocka_unit_test_setup_teardown(test_pm_deferred_hostile, setup, teardown),
      cmocka_unit_test_setup_teardown(test_e2e_range_profiler, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
