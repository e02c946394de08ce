/* test_analysis_version.c: the analysis version moves with the figures.
 *
 * A persisted analysis is used in place of its trace while its analysis
 * version is the library's (src/trace/analysis/analysis_version.h), so a
 * change that alters any figure must raise the version, or summaries read
 * yesterday's figures as today's.  This test is what makes that happen:
 * it computes a digest (CRC32C) of the complete JSON summary (every row,
 * full names) of every real trace in test/data that the other tests use,
 * the collector's spools with hardware metrics included, and compares it
 * with the digest recorded for TBE__ANALYSIS_VERSION.  When they differ it
 * fails with one line saying which row to add.  It also checks the table
 * itself: versions 1, 2, ... in order, the last one the current, no digest
 * recorded twice.
 *
 * Computed figures (the C rows of src/trace/analysis/figures.h) are left
 * out of the digest: they are never loaded from a persisted analysis but
 * computed again from the figures that are, so a file written before such
 * a row reads it right, and adding one needs no new version (a new figure
 * stays one row plus its computation).
 *
 * Nothing here skips: an import that fails fails the test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/crc32c.h"
#include "tbexport.h"
#include "tbexport/analysis.h"
#include "testutil.h"
#include "trace/analysis/analysis_version.h"
#include "trace/analysis/figures.h"

static const char *const FILES[] = {
    "kineto/h200_cnn_fp32.pt.trace.json",    "kineto/h200_cnn_bf16.pt.trace.json",
    "kineto/h200_add_loop.trace.json",       "jax/h200_matmul.xplane.pb",
    "jax/h200_matmul.trace.json.gz",         "nsys/h100_2gpu_1s.sqlite",
    "nsys/saxpy_mpi_cuda_perlmutter.sqlite", "collected/gpt_bf16.xplane.pb",
    "collected/gpt_fp32.xplane.pb",          "cli/small.trace.json",
    "cli/small2.trace.json",                 "cli/empty.trace.json",
    "metrics/metrics.spool",                 "metrics/metrics_full.spool",
    "metrics/metrics_idle.spool"};
#define NFILES (sizeof FILES / sizeof FILES[0])

typedef struct row {
  unsigned version;
  uint32_t digest;
} row;

#define ROW(v, d) {v, d},
static const row ROWS[] = {TBE__ANALYSIS_DIGESTS(ROW)};
#undef ROW
#define NROWS (sizeof ROWS / sizeof ROWS[0])

/* Removes from JSON text s[0, *n) every member `"key":NUMBER` of a
 * computed figure, with the comma that joins it to its neighbour. */
static void drop_computed(char *s, size_t *n) {
  for (size_t r = 0; r < TBE__FIG__COUNT; r++) {
    const tbe__figure *f = &tbe__figures[r];
    if (!f->calc) continue;
    char pat[96];
    int pl = snprintf(pat, sizeof pat, "\"%s\":", f->key);
    assert_true(pl > 0 && (size_t)pl < sizeof pat);
    for (size_t i = 0; i + (size_t)pl <= *n;) {
      if (memcmp(s + i, pat, (size_t)pl) != 0) {
        i++;
        continue;
      }
      size_t a = i, b = i + (size_t)pl;
      while (b < *n && strchr("0123456789+-.eE", s[b]) && s[b]) b++;
      if (b < *n && s[b] == 'n' && *n - b >= 4 && memcmp(s + b, "null", 4) == 0) b += 4;
      if (a > 0 && s[a - 1] == ',') a--;
      else if (b < *n && s[b] == ',') b++;
      memmove(s + a, s + b, *n - b);
      *n -= b - a;
      i = a;
    }
  }
}

/* The complete JSON summary of one file, computed figures left out
 * (above), folded into `crc` with its name. */
static uint32_t fold(uint32_t crc, const char *rel) {
  tbe_trace *t = NULL;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  tbe_import_error err;
  memset(&err, 0, sizeof err);
  int rc = tbe_import_file(t, tu_data(rel), NULL, &err);
  if (rc) print_message("import of %s failed: %s\n", rel, err.message);
  assert_int_equal(rc, 0);
  tbe_analysis *an = NULL;
  assert_int_equal(tbe_analysis_create(&an, t, NULL), 0);
  tbe_report_options o;
  tbe_report_options_init(&o);
  o.format = TBE_REPORT_JSON;
  o.top = 0;
  o.wide = 1;
  o.label[0] = rel;
  char *s = NULL;
  size_t n = 0;
  assert_int_equal(tbe_report_summary(an, &o, &s, &n), 0);
  assert_true(n > 100);
  size_t size = n; /* what tbe_report_free is given back */
  drop_computed(s, &n);
  crc = tbe__crc32c_extend(crc, rel, strlen(rel) + 1);
  crc = tbe__crc32c_extend(crc, s, n);
  tbe_report_free(s, size, NULL);
  tbe_analysis_free(an);
  tbe_trace_free(t);
  return crc;
}

static void test_digest(void **state) {
  (void)state;
  uint32_t d = 0;
  for (size_t i = 0; i < NFILES; i++) d = fold(d, FILES[i]);
  const row *last = &ROWS[NROWS - 1];
  if (last->version == TBE__ANALYSIS_VERSION && last->digest == d) return;
  if (last->version == TBE__ANALYSIS_VERSION)
    fail_msg(
        "the analysis figures of test/data changed (digest 0x%08x, version %u recorded "
        "0x%08x): raise TBE__ANALYSIS_VERSION to %u and add the row X(%u, 0x%08xu) to "
        "TBE__ANALYSIS_DIGESTS in src/trace/analysis/analysis_version.h",
        d, last->version, last->digest, last->version + 1, last->version + 1, d);
  fail_msg(
      "TBE__ANALYSIS_VERSION is %u but the last row of TBE__ANALYSIS_DIGESTS is version %u: "
      "the row for version %u is X(%u, 0x%08xu) (src/trace/analysis/analysis_version.h)",
      TBE__ANALYSIS_VERSION, last->version, TBE__ANALYSIS_VERSION, TBE__ANALYSIS_VERSION, d);
}

/* The table: versions 1, 2, ... oldest first, no digest twice; the
 * library stamps the current one. */
static void test_table(void **state) {
  (void)state;
  for (size_t i = 0; i < NROWS; i++) {
    assert_int_equal(ROWS[i].version, i + 1);
    for (size_t j = 0; j < i; j++)
      if (ROWS[j].digest == ROWS[i].digest)
        fail_msg("versions %u and %u record the same digest 0x%08x: a version is never reused",
                 ROWS[j].version, ROWS[i].version, ROWS[i].digest);
  }
  assert_int_equal(tbe_analysis_version(), TBE__ANALYSIS_VERSION);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_table),
      cmocka_unit_test(test_digest),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
