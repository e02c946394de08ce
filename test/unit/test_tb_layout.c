/* test_tb_layout.c: what tbe_export_run gives TensorBoard to show, read
 * back from the files (test/cli/test_tensorboard.sh checks the same
 * through a real TensorBoard's HTTP API).
 *
 * What must never happen:
 *   - two hosts' summaries in one folder, where TensorBoard merges them
 *     and shows one host's values (a multi-host run: a folder per host,
 *     the job in the run's own; a lone host's files moved, byte for byte,
 *     when a second joins);
 *   - ranks out of rank order in TensorBoard's string order (rank10
 *     before rank2);
 *   - a job whose series forget a host exported earlier (the job is
 *     rewritten from every host's persisted analysis), or take a stale
 *     analysis for a current one (left out, and named);
 *   - a scalar tag without a description where TensorBoard reads it (the
 *     tag's first record, with the scalars plugin and DATA_CLASS_SCALAR);
 *   - HParams columns that depend on which session TensorBoard reads
 *     (the experiment of two sessions without labels is the same bytes),
 *     metrics without display names, or not the key ones first;
 *   - a trace's GPU metrics without steps as one point (a time series of
 *     buckets whose time-weighted mean is the window's). */
#include <dirent.h>
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

#include "testutil.h"

#include "tbexport.h"
#include "tbexport/analysis.h"
#include "tensorboard/hparams.pb-c.h"

#define T0 1700000000000000000LL
#define MS 1000000LL

/* A trace of `nsteps` steps (step k takes step_ms(k)), a kernel in each,
 * of host `host` with rank `rank` of `world` (-1: none). */
static tbe_trace *stepped(const char *host, int32_t rank, int32_t world, int nsteps,
                          const double *step_ms) {
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  uint32_t h, s;
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_THREAD, 1, 2, -1, &h), 0);
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_STREAM, 1, 7, 0, &s), 0);
  int64_t at = T0;
  for (int k = 0; k < nsteps; k++) {
    int64_t d = (int64_t)(step_ms[k] * (double)MS);
    tbe_event e;
    memset(&e, 0, sizeof e);
    e.kind = TBE_EV_RUNTIME;
    e.track = h;
    e.name = tbe_trace_str_id(t, "cudaLaunchKernel");
    e.start_ns = at + 1000;
    e.dur_ns = 5000;
    e.correlation = (uint64_t)k + 1;
    assert_int_equal(tbe_trace_add_event(t, &e, NULL, NULL, 0, NULL), 0);
    e.kind = TBE_EV_KERNEL;
    e.track = s;
    e.name = tbe_trace_str_id(t, "k");
    e.start_ns = at + 10000;
    e.dur_ns = d / 2;
    tbe_kernel kd;
    memset(&kd, 0, sizeof kd);
    kd.occupancy_pct = -1;
    assert_int_equal(tbe_trace_add_event(t, &e, &kd, NULL, 0, NULL), 0);
    char name[32];
    snprintf(name, sizeof name, "ProfilerStep#%d", k);
    assert_int_equal(tbe_trace_add_step(t, k, at, at + d, tbe_trace_str_id(t, name)), 0);
    at += d;
  }
  t->host = tbe_trace_str_id(t, host);
  t->rank = rank;
  t->world_size = world;
  assert_int_equal(tbe_trace_finish(t), 0);
  return t;
}

static int export_as(const tbe_trace *t, const char *logdir, const char *run, const char *host,
                     int force) {
  tbe_export_options o;
  tbe_export_options_init(&o);
  o.logdir = logdir;
  o.run = run;
  o.host = host;
  o.force = force;
  return tbe_export_run(t, &o);
}

/* The one file of dir/rel whose name ends in `suffix` (NULL: none), a
 * new string. */
static char *only_file(const char *dir, const char *rel, const char *suffix) {
  char p[4096];
  snprintf(p, sizeof p, "%s/%s", dir, rel);
  DIR *d = opendir(p);
  if (!d) return NULL;
  char *found = NULL;
  int n = 0;
  struct dirent *e;
  size_t sl = strlen(suffix);
  while ((e = readdir(d)) != NULL) {
    size_t l = strlen(e->d_name);
    if (l > sl && strcmp(e->d_name + l - sl, suffix) == 0) {
      n++;
      free(found);
      found = tu_join(p, e->d_name);
    }
  }
  closedir(d);
  if (n != 1) {
    free(found);
    return NULL;
  }
  return found;
}

/* The points of `tag` in the event files directly in `dir` (steps and
 * values, at most max), and how many of them carried metadata. */
static int points(const char *dir, const char *tag, int64_t *steps, double *vals, int max,
                  int *with_meta) {
  tbe_reader *r;
  assert_int_equal(tbe_reader_open(&r, dir, 0, NULL), 0);
  const tbe_tb_event *ev;
  int n = 0, rc;
  if (with_meta) *with_meta = 0;
  while ((rc = tbe_reader_next(r, &ev)) == 1) {
    if (ev->kind != TBE_TB_SUMMARY) continue;
    for (size_t i = 0; i < ev->nvalues; i++) {
      const tbe_summary_value *v = &ev->values[i];
      if (strcmp(v->tag, tag) != 0 || v->type != TBE_VALUE_SIMPLE) continue;
      if (with_meta && v->has_metadata) {
        assert_string_equal(v->plugin_name, "scalars");
        assert_int_equal(v->data_class, 1);
        (*with_meta)++;
      }
      if (n < max) {
        if (steps) steps[n] = ev->step;
        if (vals) vals[n] = v->simple_value;
      }
      n++;
    }
  }
  assert_int_equal(rc, 0);
  tbe_reader_close(r);
  return n;
}

static int file_bytes_equal(const char *a, const char *b) {
  size_t na, nb;
  uint8_t *x = tu_read_file(a, &na), *y = tu_read_file(b, &nb);
  int eq = x && y && na == nb && memcmp(x, y, na) == 0;
  free(x);
  free(y);
  return eq;
}

/* ---- the layout ---- */

/* A run of one host without a rank is one TensorBoard run; a second host
 * makes each host a run of its own, the lone host's files moved there
 * unchanged, and the run's folder the job's. */
static void test_second_host_moves_the_first(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  static const double ms[] = {5, 5, 5, 5};
  tbe_trace *h = stepped("h", -1, 0, 4, ms), *g = stepped("g", -1, 0, 4, ms);
  assert_int_equal(export_as(h, dir, "r", "h", 0), 0);
  char *sum = only_file(dir, "r", ".h.tbexport-summary");
  char *ses = only_file(dir, "r", ".h.tbexport-hparams");
  assert_non_null(sum);
  assert_non_null(ses);
  char *keep_sum = tu_join(dir, "saved_sum"), *keep_ses = tu_join(dir, "saved_ses");
  char cmd[16384];
  snprintf(cmd, sizeof cmd, "cp '%s' '%s' && cp '%s' '%s'", sum, keep_sum, ses, keep_ses);
  assert_int_equal(system(cmd), 0);
  assert_null(only_file(dir, "r", ".r.tbexport-job"));
  assert_int_equal(export_as(g, dir, "r", "g", 0), 0);
  assert_null(only_file(dir, "r", ".h.tbexport-summary"));
  char *moved = only_file(dir, "r/h", ".h.tbexport-summary");
  char *moved_ses = only_file(dir, "r/h", ".h.tbexport-hparams");
  assert_non_null(moved);
  assert_non_null(moved_ses);
  assert_true(file_bytes_equal(moved, keep_sum));
  assert_true(file_bytes_equal(moved_ses, keep_ses));
  assert_true(strcmp(strrchr(moved, '/'), strrchr(sum, '/')) == 0); /* its name kept */
  char *gsum = only_file(dir, "r/g", ".g.tbexport-summary");
  assert_non_null(gsum);
  char *job = only_file(dir, "r", ".r.tbexport-job");
  assert_non_null(job);
  /* Without force, h again is refused where it now is. */
  assert_int_equal(export_as(h, dir, "r", "h", 0), TBE_EEXIST);
  free(sum);
  free(ses);
  free(moved);
  free(moved_ses);
  free(gsum);
  free(job);
  free(keep_sum);
  free(keep_ses);
  tbe_trace_free(h);
  tbe_trace_free(g);
  tu_rmrf(dir);
  free(dir);
}

/* Ranks are folders rank<R>.<host>, R zero-padded to the world size's
 * digits: string order is rank order (rank02 before rank10), even with
 * a single rank exported so far. */
static void test_rank_folders_sort(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  static const double ms[] = {5, 5, 5};
  static const int ranks[] = {10, 2, 0};
  for (int i = 0; i < 3; i++) {
    char host[32];
    snprintf(host, sizeof host, "node%d.rank%d", i, ranks[i]);
    tbe_trace *t = stepped(host, ranks[i], 16, 3, ms);
    assert_int_equal(export_as(t, dir, "job", host, 0), 0);
    tbe_trace_free(t);
  }
  char *a = only_file(dir, "job/rank10.node0", ".node0.rank10.tbexport-summary");
  char *b = only_file(dir, "job/rank02.node1", ".node1.rank2.tbexport-summary");
  char *c = only_file(dir, "job/rank00.node2", ".node2.rank0.tbexport-summary");
  assert_non_null(a);
  assert_non_null(b);
  assert_non_null(c);
  assert_true(strcmp("rank00.node2", "rank02.node1") < 0 &&
              strcmp("rank02.node1", "rank10.node0") < 0);
  /* a rank of two processes keeps its _pid part after the host */
  tbe_trace *t = stepped("n.rank3_pid77", 3, 4, 3, ms);
  assert_int_equal(export_as(t, dir, "pids", "n.rank3_pid77", 0), 0);
  char *d = only_file(dir, "pids/rank3.n_pid77", ".n.rank3_pid77.tbexport-summary");
  assert_non_null(d);
  tbe_trace_free(t);
  free(a);
  free(b);
  free(c);
  free(d);
  tu_rmrf(dir);
  free(dir);
}

/* ---- the job ---- */

/* The job's series are every host's: rank 1 exported again alone still
 * finds rank 0 in its persisted analysis; per step the slowest, median
 * and fastest host and the slowest's rank; a stale analysis is left out
 * and named. */
static void test_job_from_every_host(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  static const double r0[] = {40, 4, 4, 4, 4}, r1[] = {40, 6, 5, 7, 6}, r2[] = {40, 5, 5, 5, 8};
  const double *ms[] = {r0, r1, r2};
  tbe_trace *t[3];
  for (int i = 0; i < 3; i++) {
    char host[32];
    snprintf(host, sizeof host, "n.rank%d", i);
    t[i] = stepped(host, i, 3, 5, ms[i]);
    assert_int_equal(export_as(t[i], dir, "j", host, 0), 0);
  }
  /* rank 1 again, alone */
  assert_int_equal(export_as(t[1], dir, "j", "n.rank1", 1), 0);
  char *job = only_file(dir, "j", ".j.tbexport-job");
  assert_non_null(job);
  char *run = tu_join(dir, "j");
  double v[8];
  int64_t st[8];
  int meta;
  assert_int_equal(points(run, "summary/hosts", NULL, v, 8, NULL), 1);
  assert_true(v[0] == 3);
  /* the first step is warm-up (40 ms against 4-7): left out */
  assert_int_equal(points(run, "job/step_time_slowest_ms", st, v, 8, &meta), 4);
  assert_int_equal(meta, 1);
  static const double slow[] = {6, 5, 7, 8}, med[] = {5, 5, 5, 6}, fast[] = {4, 4, 4, 4};
  static const double slowest[] = {1, 1, 1, 2}; /* ties: the first in rank order */
  for (int k = 0; k < 4; k++) {
    assert_int_equal(st[k], k + 1);
    assert_true(fabs(v[k] - slow[k]) < 1e-4);
  }
  assert_int_equal(points(run, "steps/step_time_ms", NULL, v, 8, NULL), 4);
  for (int k = 0; k < 4; k++) assert_true(fabs(v[k] - slow[k]) < 1e-4);
  assert_int_equal(points(run, "job/step_time_median_ms", NULL, v, 8, NULL), 4);
  for (int k = 0; k < 4; k++) assert_true(fabs(v[k] - med[k]) < 1e-4);
  assert_int_equal(points(run, "job/step_time_fastest_ms", NULL, v, 8, NULL), 4);
  for (int k = 0; k < 4; k++) assert_true(fabs(v[k] - fast[k]) < 1e-4);
  assert_int_equal(points(run, "job/slowest_rank", NULL, v, 8, NULL), 4);
  for (int k = 0; k < 4; k++) assert_true(v[k] == slowest[k]);
  assert_int_equal(points(run, "summary/warmup_step_ms", NULL, v, 8, NULL), 1);
  assert_true(fabs(v[0] - 40) < 1e-4);
  free(job);
  /* Rank 2's analysis goes stale (another analysis version: here, bytes
   * that do not load): rank 0's export leaves it out and names it. */
  char *a2 = tu_join(dir, "plugins/profile/j/n.rank2.analysis.pb");
  FILE *f = fopen(a2, "wb");
  assert_non_null(f);
  fputs("not an analysis", f);
  fclose(f);
  assert_int_equal(export_as(t[0], dir, "j", "n.rank0", 1), 0);
  assert_int_equal(points(run, "summary/hosts", NULL, v, 8, NULL), 1);
  assert_true(v[0] == 2);
  tbe_reader *r;
  assert_int_equal(tbe_reader_open(&r, run, 0, NULL), 0);
  const tbe_tb_event *ev;
  int named = 0;
  while (tbe_reader_next(r, &ev) == 1)
    for (size_t i = 0; i < ev->nvalues; i++)
      if (strcmp(ev->values[i].tag, "job/ranks/text_summary") == 0 &&
          ev->values[i].tensor.nstrings == 1)
        named =
            strstr((const char *)ev->values[i].tensor.strings[0].data, "n.rank2") != NULL &&
            strstr((const char *)ev->values[i].tensor.strings[0].data, "Not in the job") != NULL;
  tbe_reader_close(r);
  assert_true(named);
  free(a2);
  free(run);
  for (int i = 0; i < 3; i++) tbe_trace_free(t[i]);
  tu_rmrf(dir);
  free(dir);
}

/* ---- descriptions and HParams ---- */

/* Every scalar tag's first record carries the metadata TensorBoard keeps
 * a description with, and only the first. */
static void test_every_tag_described(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  static const double ms[] = {5, 6, 5, 6};
  tbe_trace *t = stepped("h", -1, 0, 4, ms);
  assert_int_equal(export_as(t, dir, "r", "h", 0), 0);
  char *run = tu_join(dir, "r");
  tbe_reader *r;
  assert_int_equal(tbe_reader_open(&r, run, 0, NULL), 0);
  const tbe_tb_event *ev;
  int tags = 0, described = 0, later_meta = 0;
  char seen[256][128];
  while (tbe_reader_next(r, &ev) == 1) {
    if (ev->kind != TBE_TB_SUMMARY) continue;
    for (size_t i = 0; i < ev->nvalues; i++) {
      const tbe_summary_value *v = &ev->values[i];
      if (v->type != TBE_VALUE_SIMPLE) continue;
      int known = 0;
      for (int k = 0; k < tags && !known; k++) known = strcmp(seen[k], v->tag) == 0;
      if (known) {
        later_meta += v->has_metadata;
        continue;
      }
      assert_true(tags < 256);
      snprintf(seen[tags++], sizeof seen[0], "%s", v->tag);
      described += v->has_metadata && strcmp(v->plugin_name, "scalars") == 0 && v->data_class == 1;
    }
  }
  tbe_reader_close(r);
  assert_true(tags > 30);
  assert_int_equal(described, tags);
  assert_int_equal(later_meta, 0);
  free(run);
  tbe_trace_free(t);
  tu_rmrf(dir);
  free(dir);
}

/* The experiment record of the session file in dir/rel, unpacked (free
 * with tensorboard__hparams__hparams_plugin_data__free_unpacked). */
static Tensorboard__Hparams__HParamsPluginData *experiment_of(const char *dir, const char *rel) {
  char *p = tu_join(dir, rel);
  tbe_reader *r;
  assert_int_equal(tbe_reader_open(&r, p, 0, NULL), 0);
  const tbe_tb_event *ev;
  Tensorboard__Hparams__HParamsPluginData *x = NULL;
  while (tbe_reader_next(r, &ev) == 1)
    for (size_t i = 0; i < ev->nvalues; i++)
      if (strcmp(ev->values[i].tag, "_hparams_/experiment") == 0 && !x)
        x = tensorboard__hparams__hparams_plugin_data__unpack(
            NULL, ev->values[i].plugin_content.size, ev->values[i].plugin_content.data);
  tbe_reader_close(r);
  free(p);
  assert_non_null(x);
  assert_int_equal(x->data_case, TENSORBOARD__HPARAMS__HPARAMS_PLUGIN_DATA__DATA_EXPERIMENT);
  return x;
}

static void test_hparams_experiment(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  static const double ms[] = {5, 6, 5, 6};
  tbe_trace *t = stepped("h", -1, 0, 4, ms);
  assert_int_equal(export_as(t, dir, "a", "h", 0), 0);
  assert_int_equal(export_as(t, dir, "b", "other", 0), 0);
  Tensorboard__Hparams__HParamsPluginData *x = experiment_of(dir, "a"),
                                          *y = experiment_of(dir, "b");
  /* The same columns whichever session TensorBoard reads. */
  size_t nx = tensorboard__hparams__hparams_plugin_data__get_packed_size(x);
  uint8_t *bx = malloc(nx), *by = malloc(nx);
  assert_int_equal(tensorboard__hparams__hparams_plugin_data__get_packed_size(y), nx);
  tensorboard__hparams__hparams_plugin_data__pack(x, bx);
  tensorboard__hparams__hparams_plugin_data__pack(y, by);
  assert_memory_equal(bx, by, nx);
  const Tensorboard__Hparams__Experiment *e = x->experiment;
  static const char *const key[] = {"summary/step_time_median_ms", "summary/step_time_p90_ms",
                                    "summary/gpu_busy_pct", "summary/kernel_time_ms"};
  assert_true(e->n_metric_infos >= 4 && e->n_metric_infos <= 20);
  int peak = 0; /* the run's memory peak is a metric (issue 30) */
  for (size_t i = 0; i < e->n_metric_infos; i++) {
    if (i < 4) assert_string_equal(e->metric_infos[i]->name->tag, key[i]);
    peak |= strcmp(e->metric_infos[i]->name->tag, "summary/peak_allocated_bytes") == 0;
    assert_true(strlen(e->metric_infos[i]->display_name) > 0);
    assert_true(strlen(e->metric_infos[i]->description) > 0);
  }
  assert_true(peak);
  int run = 0, labels = 0;
  for (size_t i = 0; i < e->n_hparam_infos; i++) {
    run |= strcmp(e->hparam_infos[i]->name, "run") == 0;
    labels |= strcmp(e->hparam_infos[i]->name, "labels") == 0;
  }
  assert_true(run && labels);
  tensorboard__hparams__hparams_plugin_data__free_unpacked(x, NULL);
  tensorboard__hparams__hparams_plugin_data__free_unpacked(y, NULL);
  free(bx);
  free(by);
  /* "labels" is ours: a --label of that key is refused. */
  tbe_export_options o;
  tbe_export_options_init(&o);
  o.logdir = dir;
  o.run = "c";
  const char *bad[] = {"labels=x"};
  o.labels = bad;
  o.nlabels = 1;
  assert_int_equal(tbe_export_run(t, &o), TBE_EINVAL);
  tbe_trace_free(t);
  tu_rmrf(dir);
  free(dir);
}

/* ---- GPU metrics without steps ---- */

/* PM samples of one metric every ms for 1.5 s, no steps: a point per
 * 10 ms bucket (at step = its start in ms), each bucket's time-weighted
 * mean, whose mean over the equal buckets is the window's. */
static void test_metric_buckets(void **state) {
  (void)state;
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  uint32_t s, m;
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_STREAM, 1, 7, 0, &s), 0);
  tbe_str name = tbe_trace_str_id(t, "sm_active_pct");
  assert_int_equal(tbe_trace_metric_track(t, 1, 0, name, &m), 0);
  tbe_event e;
  memset(&e, 0, sizeof e);
  e.kind = TBE_EV_KERNEL;
  e.track = s;
  e.name = tbe_trace_str_id(t, "k");
  e.start_ns = T0;
  e.dur_ns = 1500 * MS;
  tbe_kernel kd;
  memset(&kd, 0, sizeof kd);
  kd.occupancy_pct = -1;
  assert_int_equal(tbe_trace_add_event(t, &e, &kd, NULL, 0, NULL), 0);
  for (int j = 0; j <= 1500; j++) {
    memset(&e, 0, sizeof e);
    e.kind = TBE_EV_COUNTER;
    e.track = m;
    e.name = name;
    e.start_ns = T0 + j * MS;
    e.detail = TBE_NONE;
    e.link = TBE_NONE;
    tbe_counter c = {(double)(j % 7) * 10.0};
    assert_int_equal(tbe_trace_add_event(t, &e, &c, NULL, 0, NULL), 0);
  }
  assert_int_equal(tbe_trace_finish(t), 0);
  tbe_analysis *an;
  assert_int_equal(tbe_analysis_create(&an, t, NULL), 0);
  assert_int_equal(an->nsteps, 0);
  assert_int_equal(an->ngpu_metrics, 1);
  double window = an->all.metrics[0].mean;
  char *dir = tu_mkdtemp();
  tbe_export_options o;
  tbe_export_options_init(&o);
  o.logdir = dir;
  o.run = "pm";
  o.host = "h";
  o.outputs = TBE_OUT_EVENTS;
  assert_int_equal(tbe_export_run(t, &o), 0);
  char *run = tu_join(dir, "pm");
  static int64_t st[512];
  static double v[512];
  int n = points(run, "gpu_metrics/sm_active_pct", st, v, 512, NULL);
  assert_int_equal(n, 150);
  double sum = 0;
  for (int k = 0; k < n; k++) {
    assert_int_equal(st[k], 10 * k);
    double want = 0; /* the samples j = 10k .. 10k+9, each holding 1 ms */
    for (int j = 10 * k; j < 10 * k + 10; j++) want += (double)(j % 7) * 10.0 / 10.0;
    assert_true(fabs(v[k] - want) < 1e-4);
    sum += v[k];
  }
  assert_true(fabs(sum / n - window) < 1e-3 * window);
  assert_int_equal(points(run, "summary/gpu_metrics/sm_active_pct", NULL, v, 1, NULL), 1);
  assert_true(fabs(v[0] - window) < 1e-3);
  free(run);
  tbe_analysis_free(an);
  tbe_trace_free(t);
  tu_rmrf(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_second_host_moves_the_first),
      cmocka_unit_test(test_rank_folders_sort),
      cmocka_unit_test(test_job_from_every_host),
      cmocka_unit_test(test_every_tag_described),
      cmocka_unit_test(test_hparams_experiment),
      cmocka_unit_test(test_metric_buckets),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
