/* test_faults_alloc.c: allocation-failure sweeps over the whole library.
 *
 * A test allocator (tu_failalloc) lets n allocations through and fails
 * every later one, for n = 0, 1, 2, ... until the operation succeeds
 * (every n while n < 256, then with a stride of n/64 so that the large
 * operations stay fast; the count printed per sweep says how many runs
 * failed).  Over: opening a writer and writing every summary kind, each
 * golden import format, importer scratch included (it draws on the
 * trace's allocator unless the options give one: Kineto JSON plain and gzip, JAX trace.json.gz,
 * XSpace, both nsys databases), each exporter into a run directory, and
 * the spool reader.  Every failed run must return TBE_ENOMEM, leave no
 * block allocated, and leave files that read back cleanly (event files)
 * or no file at all (exports). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "import/spool.h"
#include "tbexport.h"
#include "testutil.h"

static long g_runs;   /* failing runs, summed over the sweeps */
static int g_sweeps;  /* sweeps that completed with their failures checked */

static long next_n(long n) { return n < 256 ? n + 1 : n + n / 64; }

/* ---- file-tree helpers ---- */

static long count_files(const char *dir) { return tu_count_files(dir); }

/* Reads every event file below `dir`: all records whole and valid.
 * Returns the number of events. */
static long read_all(const char *dir) {
  tbe_reader *r = NULL;
  assert_int_equal(tbe_reader_open(&r, dir, TBE_READER_RECURSIVE, NULL), 0);
  const tbe_tb_event *ev;
  long n = 0;
  int rc;
  while ((rc = tbe_reader_next(r, &ev)) == 1) n++;
  if (rc) {
    tbe_reader_error_info info;
    tbe_reader_error(r, &info);
    fprintf(stderr, "%s: %s\n", info.path, info.message);
  }
  assert_int_equal(rc, 0);
  tbe_reader_close(r);
  return n;
}

/* ---- the writer, every summary kind ---- */

/* Writes one record of each kind; returns the first error (each call must
 * give 0 or TBE_ENOMEM, and only the failing call fails). */
static int write_all_kinds(const char *dir, const tbe_allocator *a) {
  tbe_writer_options o;
  tbe_writer_options_init(&o);
  o.allocator = a;
  o.host = "h";
  tbe_writer *w = NULL;
  int rc = tbe_writer_open(&w, dir, &o);
  if (rc) return rc;
  double v[64], lim[3] = {0, 1, 2}, cnt[3] = {1, 2, 3};
  for (int i = 0; i < 64; i++) v[i] = i * 0.5 - 7;
  uint8_t px[4 * 3 * 3], lab[12];
  float pred[12];
  for (size_t i = 0; i < sizeof px; i++) px[i] = (uint8_t)(i * 7);
  for (int i = 0; i < 12; i++) {
    lab[i] = (uint8_t)(i & 1);
    pred[i] = (float)i / 12.0f;
  }
  const char *tags1[] = {"loss", "acc"}, *tags2[] = {"v", "lo", "hi"};
  tbe_chart charts[2] = {{"multi", 0, tags1, 2}, {"margin", 1, tags2, 3}};
  tbe_category cat = {"cat", charts, 2, 0};
  tbe_hparam hp[2] = {{"lr", TBE_HPARAM_NUMBER, 0.1, NULL, 0},
                      {"opt", TBE_HPARAM_STRING, 0, "adam", 0}};
  tbe_metric m = {"acc", 0.9};
  /* A raw Event: wall_time 1.5, step 3, file_version "x". */
  uint8_t raw[] = {0x09, 0, 0, 0, 0, 0, 0, 0xF8, 0x3F, 0x10, 0x03, 0x1A, 0x01, 'x'};
  int r[10];
  r[0] = tbe_writer_add_scalar(w, "loss", 0.5, 1, 1.0);
  r[1] = tbe_writer_add_histogram(w, "w", v, 64, 1, 1.0);
  r[2] = tbe_writer_add_histogram_raw(w, "wr", 0, 2, 6, 8, 14, lim, cnt, 3, 1, 1.0);
  r[3] = tbe_writer_add_text(w, "notes", "**bold** text", 1, 1.0);
  r[4] = tbe_writer_add_image(w, "img", px, sizeof px, 4, 3, 3, 1, 1.0);
  r[5] = tbe_writer_add_hparams(w, hp, 2, &m, 1, "hp", 1, 1.0);
  r[6] = tbe_writer_add_pr_curve(w, "pr", lab, pred, 12, 11, 1, 1.0);
  r[7] = tbe_writer_set_custom_scalars_layout(w, &cat, 1);
  r[8] = tbe_writer_write_event(w, raw, sizeof raw);
  r[9] = tbe_writer_close(w);
  int first = 0;
  for (int i = 0; i < 10; i++) {
    if (r[i] != 0 && r[i] != TBE_ENOMEM) fprintf(stderr, "call %d: %s\n", i, tbe_strerror(r[i]));
    if (r[i] != 0) assert_int_equal(r[i], TBE_ENOMEM);
    if (!first) first = r[i];
  }
  return first;
}

static void test_writer_alloc(void **state) {
  (void)state;
  char *base = tu_mkdtemp();
  char *dir = tu_join(base, "run");
  long n, failed = 0;
  int ok = 0;
  for (n = 0; n < 100000 && !ok; n = next_n(n)) {
    tu_rmrf(dir);
    tu_failalloc fa;
    tbe_allocator a = tu_failalloc_init(&fa, n);
    int rc = write_all_kinds(dir, &a);
    assert_int_equal(fa.live, 0);
    if (rc == 0) {
      ok = 1;
      /* main file: version + 8 records; sub-run hp: version, experiment,
       * session start and end, metric */
      assert_int_equal(read_all(dir), 9 + 5);
    } else {
      assert_int_equal(rc, TBE_ENOMEM);
      failed++;
      struct stat st;
      if (stat(dir, &st) == 0) read_all(dir); /* whatever was written reads back whole */
    }
  }
  assert_true(ok);
  assert_true(failed > 20);
  print_message("alloc sweep writer (every summary kind): %ld failing runs, all TBE_ENOMEM, no leak\n",
                failed);
  g_runs += failed;
  g_sweeps++;
  tu_rmrf(base);
  free(dir);
  free(base);
}

/* ---- imports ---- */

static void import_sweep(const char *label, const char *path) {
  long failed = tu_import_alloc_sweep(path, 256);
  assert_true(failed > 5);
  print_message("alloc sweep import %s: %ld failing runs, all TBE_ENOMEM, no leak\n", label, failed);
  g_runs += failed;
  g_sweeps++;
}

static void test_import_kineto_alloc(void **state) {
  (void)state;
  import_sweep("kineto json", tu_data("kineto/h200_add_loop.trace.json"));
}

static void test_import_kineto_gz_alloc(void **state) {
  (void)state;
  /* Kineto's own gzip form: the golden trace, gzipped here. */
  char *base = tu_mkdtemp();
  char *gz = tu_join(base, "h200_add_loop.pt.trace.json.gz");
  size_t n;
  uint8_t *d = tu_read_file(tu_data("kineto/h200_add_loop.trace.json"), &n);
  assert_non_null(d);
  gzFile f = gzopen(gz, "wb");
  assert_non_null(f);
  assert_int_equal(gzwrite(f, d, (unsigned)n), (int)n);
  assert_int_equal(gzclose(f), Z_OK);
  free(d);
  import_sweep("kineto json.gz", gz);
  tu_rmrf(base);
  free(gz);
  free(base);
}

static void test_import_jax_gz_alloc(void **state) {
  (void)state;
  import_sweep("jax trace.json.gz", tu_data("jax/h200_matmul.trace.json.gz"));
}

static void test_import_xplane_alloc(void **state) {
  (void)state;
  import_sweep("xplane.pb", tu_data("jax/h200_matmul.xplane.pb"));
}

static void test_import_nsys_alloc(void **state) {
  (void)state;
  import_sweep("nsys h100_2gpu", tu_data("nsys/h100_2gpu_1s.sqlite"));
}

/* ---- exporters ---- */

static void export_sweep(const char *label, unsigned outputs) {
  tbe_trace *t = NULL;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  tbe_import_error err;
  assert_int_equal(tbe_import_file(t, tu_data("kineto/h200_add_loop.trace.json"), NULL, &err), 0);
  char *base = tu_mkdtemp();
  char *logdir = tu_join(base, "logdir");
  long failed = 0, n;
  int ok = 0;
  for (n = 0; n < 10000000 && !ok; n = next_n(n)) {
    tu_rmrf(logdir);
    tu_failalloc fa;
    tbe_allocator a = tu_failalloc_init(&fa, n);
    tbe_export_options o;
    tbe_export_options_init(&o);
    o.logdir = logdir;
    o.run = "r";
    o.host = "h";
    o.outputs = outputs;
    o.allocator = &a;
    int rc = tbe_export_run(t, &o);
    assert_int_equal(fa.live, 0);
    long files = count_files(logdir);
    if (rc == 0) {
      ok = 1;
      assert_true(files >= 1);
      if (outputs & TBE_OUT_EVENTS) assert_true(read_all(logdir) > 1);
    } else {
      if (rc != TBE_ENOMEM) fprintf(stderr, "%s n=%ld: %s\n", label, n, tbe_strerror(rc));
      assert_int_equal(rc, TBE_ENOMEM);
      if (files) fprintf(stderr, "%s n=%ld: %ld files left\n", label, n, files);
      assert_int_equal(files, 0); /* nothing half-done, no temporary file */
      failed++;
    }
  }
  assert_true(ok);
  assert_true(failed > 5);
  print_message("alloc sweep export %s: %ld failing runs, all TBE_ENOMEM, no leak, no file left\n",
                label, failed);
  g_runs += failed;
  g_sweeps++;
  tbe_trace_free(t);
  tu_rmrf(base);
  free(logdir);
  free(base);
}

static void test_export_xplane_alloc(void **state) {
  (void)state;
  export_sweep("xplane", TBE_OUT_XPLANE);
}
static void test_export_json_alloc(void **state) {
  (void)state;
  export_sweep("chrome json.gz", TBE_OUT_JSON);
}
static void test_export_events_alloc(void **state) {
  (void)state;
  export_sweep("run-summary events", TBE_OUT_EVENTS);
}

static void test_export_all_alloc(void **state) {
  (void)state;
  export_sweep("all outputs", TBE_OUT_ALL);
}

/* ---- the spool reader ---- */

static void spool_sweep(const char *rel) {
  char path[4096];
  snprintf(path, sizeof path, "%s", tu_data(rel));
  size_t len;
  uint8_t *d = tu_read_file(path, &len);
  assert_non_null(d);
  long failed = 0, n;
  int ok = 0;
  for (n = 0; n < 1000000 && !ok; n = next_n(n)) {
    tu_failalloc fa;
    tbe_allocator a = tu_failalloc_init(&fa, n);
    tbe_trace *t = NULL;
    int rc = tbe_trace_create(&t, &a);
    if (rc == 0) {
      tbe__convert_info info;
      memset(&info, 0, sizeof info);
      rc = tbe__spool_to_trace(d, len, "test.spool", NULL, t, &info);
      if (rc == 0) assert_true(t->nevents > 0);
      tbe_trace_free(t);
    }
    assert_int_equal(fa.live, 0);
    if (rc == 0) ok = 1;
    else {
      assert_int_equal(rc, TBE_ENOMEM);
      failed++;
    }
  }
  free(d);
  assert_true(ok);
  assert_true(failed > 5);
  print_message("alloc sweep spool reader %s: %ld failing runs, all TBE_ENOMEM, no leak\n", rel,
                failed);
  g_runs += failed;
  g_sweeps++;
}

static void test_spool_alloc(void **state) {
  (void)state;
  spool_sweep("../fuzz/corpus/spool/full.spool");
  spool_sweep("../fuzz/corpus/spool/noend.spool");
}

/* Every sweep above ran to its end and injected more than its minimum:
 * 12 sweeps (the writer; five imports: Kineto JSON plain and gzip, JAX,
 * XSpace, nsys; four exports; the spool reader over two spools), the
 * writer's more than 20 failing runs and each other's more than 5.  A
 * sweep that stopped early, or a test left out of the list, fails here. */
static void test_total(void **state) {
  (void)state;
  assert_int_equal(g_sweeps, 12);
  assert_true(g_runs > 20 + 11 * 5);
  print_message("alloc sweeps: %ld allocation failures injected in total, all handled\n", g_runs);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_writer_alloc),        cmocka_unit_test(test_import_kineto_alloc),
      cmocka_unit_test(test_import_kineto_gz_alloc), cmocka_unit_test(test_import_jax_gz_alloc),
      cmocka_unit_test(test_import_xplane_alloc), cmocka_unit_test(test_import_nsys_alloc),
      cmocka_unit_test(test_export_xplane_alloc), cmocka_unit_test(test_export_json_alloc),
      cmocka_unit_test(test_export_events_alloc), cmocka_unit_test(test_export_all_alloc),
      cmocka_unit_test(test_spool_alloc),
      cmocka_unit_test(test_total),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
