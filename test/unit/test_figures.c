/* test_figures.c: the table of an analysis's figures
 * (src/trace/analysis/figures.h) says what the structs and the analysis
 * file say.
 *
 * Properties:
 *   - ids are dense and every row is of a known scope, unit, merge and
 *     diff rule;
 *   - keys are unique within a scope; a key that names a field of the
 *     scope's message in proto/tbexport/analysis.proto (Device, Step,
 *     Analysis) names one of the unit's wire type, repeated exactly when
 *     the row has several entries (the field today's files hold); a row
 *     without one (stored in the message's `figures` list) is of a unit
 *     that can say unknown, which a file without it reads as;
 *   - each row's member lies inside its struct, holds n entries of the
 *     unit's C type, and no two rows share a byte;
 *   - the accessors read the member the row names (a value written into
 *     the named field comes back through the row, signed and unsigned
 *     alike, with the documented clamps);
 *   - each row merges by its rule;
 *   - the property over the whole table (test_every_row): a distinct value
 *     forged into every figure of a real analysis comes back from the
 *     analysis file, entry by entry, for every row of every scope, and is
 *     the value every output prints: the JSON summary holds "key":value
 *     for every single-entry row of the devices and of the analysis
 *     (under its key); the rows the reports print from the table
 *     (tbe__fig_listed) show the same value in the CSV device section
 *     under their key, in the Markdown device table and in the terminal
 *     overview under their label, and, with a diff rule, in the overall
 *     comparison of a diff in all four formats.
 * What must never happen: a row stored where a file without it would
 * read as a wrong 0, or two rows reading the same field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/alloc.h"
#include "tbexport.h"
#include "tbexport/analysis.pb-c.h"
#include "testutil.h"
#include "trace/analysis/figures.h"
#include "trace/export/export_events_tags.h"
#include "trace/report/report.h"

static const ProtobufCMessageDescriptor *message_of(uint32_t scope) {
  switch (scope) {
    case TBE__FS_DEVICE: return &tbexport__device__descriptor;
    case TBE__FS_STEP: return &tbexport__step__descriptor;
    case TBE__FS_ANALYSIS: return &tbexport__analysis__descriptor;
    default: return NULL;
  }
}

static size_t struct_size(uint32_t scope) {
  switch (scope) {
    case TBE__FS_DEVICE: return sizeof(tbe_device_stats);
    case TBE__FS_STEP: return sizeof(tbe_step_stats);
    case TBE__FS_ANALYSIS: return sizeof(tbe_analysis);
    default: return 0;
  }
}

static void test_rows(void **state) {
  (void)state;
  for (size_t i = 0; i < TBE__FIG__COUNT; i++) {
    const tbe__figure *f = &tbe__figures[i];
    assert_int_equal(f->id, i);
    assert_true(f->scope < TBE__FS__COUNT);
    assert_true(f->unit < TBE__FU__COUNT);
    assert_true(f->merge < TBE__FM__COUNT);
    assert_true(f->diff < TBE__FD__COUNT);
    assert_non_null(f->key);
    assert_non_null(f->label);
    assert_true(f->key[0] && f->label[0]);
    assert_true(f->n >= 1);
    assert_string_not_equal(tbe__fig_unit_name(f->unit), "?");
    assert_ptr_equal(tbe__figure_by_key(f->scope, f->key), f);
    /* medians alone may be unknown, and only they merge to unknown */
    assert_int_equal(f->merge == TBE__FM_UNKNOWN, f->unit == TBE__FU_NS_OPT);
  }
  assert_null(tbe__figure_by_key(TBE__FS_DEVICE, "no_such_figure"));
  assert_null(tbe__figure_by_key(TBE__FS_DEVICE, NULL));
  assert_string_equal(tbe__fig_merge_name(TBE__FM__COUNT), "?");
}

static void test_keys_are_file_fields(void **state) {
  (void)state;
  for (size_t i = 0; i < TBE__FIG__COUNT; i++) {
    const tbe__figure *f = &tbe__figures[i];
    const ProtobufCMessageDescriptor *m = message_of(f->scope);
    assert_non_null(m);
    const ProtobufCFieldDescriptor *fd = protobuf_c_message_descriptor_get_field_by_name(m, f->key);
    if (f->calc) {
      /* computed: saved in the `figures` list, a share in percent */
      if (fd) fail_msg("computed figure %s has a field %s.%s", f->key, m->name, f->key);
      assert_int_equal(f->unit, TBE__FU_PCT);
      continue;
    }
    assert_true(f->unit != TBE__FU_PCT);
    if (!fd) {
      /* kept in the message's `figures` list: a file without it must read
       * as unknown, so only a unit with an unknown value (-1) may be */
      if (!tbe__fig_unknown(f->unit, NULL))
        fail_msg("figure %s: no field %s.%s in analysis.proto, and a %s cannot be unknown", f->key,
                 m->name, f->key, tbe__fig_unit_name(f->unit));
      continue;
    }
    assert_int_equal(fd->type,
                     tbe__fig_unsigned(f) ? PROTOBUF_C_TYPE_UINT64 : PROTOBUF_C_TYPE_INT64);
    assert_int_equal(fd->label == PROTOBUF_C_LABEL_REPEATED, f->n > 1);
  }
}

static void test_members(void **state) {
  (void)state;
  for (size_t i = 0; i < TBE__FIG__COUNT; i++) {
    const tbe__figure *f = &tbe__figures[i];
    if (f->calc) continue; /* no member */
    assert_int_equal(f->size, f->n * sizeof(int64_t));
    assert_true(f->offset + f->size <= struct_size(f->scope));
    for (size_t j = 0; j < i; j++) {
      const tbe__figure *g = &tbe__figures[j];
      if (g->scope != f->scope || g->calc) continue;
      assert_string_not_equal(g->key, f->key);
      assert_true(g->offset + g->size <= f->offset || f->offset + f->size <= g->offset);
    }
  }
}

static void test_accessors(void **state) {
  (void)state;
  tbe_device_stats d;
  memset(&d, 0, sizeof d);
  d.queue_delay_median_ns = -1;
  d.memcpy_bytes[3] = UINT64_MAX;
  d.class_count[TBE_KCLASS__COUNT - 1] = 77;
  d.busy_ns = 12345;
  const tbe__figure *q = &tbe__figures[TBE__FIG_DEV_QUEUE_DELAY];
  assert_int_equal(tbe__fig_i64(q, &d, 0), -1);
  assert_int_equal(tbe__fig_u64(q, &d, 0), 0);
  const tbe__figure *b = &tbe__figures[TBE__FIG_DEV_MEMCPY_BYTES];
  assert_true(tbe__fig_u64(b, &d, 3) == UINT64_MAX);
  assert_int_equal(tbe__fig_i64(b, &d, 3), INT64_MAX);
  assert_int_equal(tbe__fig_u64(b, &d, 2), 0);
  const tbe__figure *c = tbe__figure_by_key(TBE__FS_DEVICE, "class_count");
  assert_int_equal(tbe__fig_u64(c, &d, TBE_KCLASS__COUNT - 1), 77);
  assert_int_equal(tbe__fig_i64(tbe__figure_by_key(TBE__FS_DEVICE, "busy_ns"), &d, 0), 12345);
  tbe_step_stats s;
  memset(&s, 0, sizeof s);
  s.host_ns = 99;
  assert_int_equal(tbe__fig_i64(&tbe__figures[TBE__FIG_STEP_HOST], &s, 0), 99);
  tbe_analysis an;
  memset(&an, 0, sizeof an);
  an.op_gpu_ns = 5;
  an.out_of_range_records = 6;
  assert_int_equal(tbe__fig_i64(&tbe__figures[TBE__FIG_AN_OP_GPU], &an, 0), 5);
  assert_int_equal(tbe__fig_u64(&tbe__figures[TBE__FIG_AN_OUT_OF_RANGE], &an, 0), 6);
}

/* Each row merges by its rule: sums saturate, medians become unknown,
 * starts take the earliest, step times the longest. */
static void test_merge(void **state) {
  (void)state;
  tbe_device_stats a, b, m;
  memset(&a, 0, sizeof a);
  memset(&b, 0, sizeof b);
  a.busy_ns = 10, b.busy_ns = 5;
  a.kernel_ns = INT64_MAX - 1, b.kernel_ns = 7;
  a.memcpy_bytes[2] = UINT64_MAX - 1, b.memcpy_bytes[2] = 9;
  a.class_count[1] = 3, b.class_count[1] = 4;
  a.launch_overhead_median_ns = 100, b.launch_overhead_median_ns = 200;
  a.launch_samples = 2, b.launch_samples = 3;
  memset(&m, 0x55, sizeof m);
  tbe__figs_merge_init(TBE__FS_DEVICE, &m);
  tbe__figs_merge(TBE__FS_DEVICE, &m, &a);
  tbe__figs_merge(TBE__FS_DEVICE, &m, &b);
  assert_int_equal(m.busy_ns, 15);
  assert_int_equal(m.kernel_ns, INT64_MAX);
  assert_true(m.memcpy_bytes[2] == UINT64_MAX);
  assert_int_equal(m.class_count[1], 7);
  assert_int_equal(m.launch_samples, 5);
  assert_int_equal(m.launch_overhead_median_ns, -1);
  assert_int_equal(m.queue_delay_median_ns, -1);
  assert_int_equal(m.memset_count, 0);
  tbe_step_stats s1, s2, sm;
  memset(&s1, 0, sizeof s1);
  memset(&s2, 0, sizeof s2);
  s1.num = s2.num = 4;
  s1.start_ns = 50, s2.start_ns = 40;
  s1.dur_ns = 8, s2.dur_ns = 9;
  s1.kernel_ns = 1, s2.kernel_ns = 2;
  memset(&sm, 0, sizeof sm);
  sm.num = 4;
  tbe__figs_merge_init(TBE__FS_STEP, &sm);
  assert_int_equal(sm.start_ns, INT64_MAX);
  tbe__figs_merge(TBE__FS_STEP, &sm, &s1);
  tbe__figs_merge(TBE__FS_STEP, &sm, &s2);
  assert_int_equal(sm.num, 4); /* its own rule: the merge matched it */
  assert_int_equal(sm.start_ns, 40);
  assert_int_equal(sm.dur_ns, 9);
  assert_int_equal(sm.kernel_ns, 3);
  assert_int_equal(sm.launch_median_ns, -1);
}

/* ---- every row, through the store and the reports ---- */

static tbe_trace *import(const char *rel) {
  tbe_trace *t = NULL;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  tbe_import_error err;
  memset(&err, 0, sizeof err);
  int rc = tbe_import_file(t, tu_data(rel), NULL, &err);
  if (rc) print_message("import of %s failed: %s\n", rel, err.message);
  assert_int_equal(rc, 0);
  return t;
}

/* The object of `an` that row f of scope lives in: the all-GPU totals, the
 * first step, the analysis. */
static void *object_of(tbe_analysis *an, const tbe__figure *f) {
  if (f->scope == TBE__FS_DEVICE) return &an->all;
  if (f->scope == TBE__FS_STEP) return an->nsteps ? &an->steps[0] : NULL;
  return an;
}

static char *render(tbe_analysis *an, int format) {
  tbe_report_options o;
  tbe_report_options_init(&o);
  o.format = format;
  o.width = 400; /* every column of the overview on one line */
  char *s = NULL;
  size_t n = 0;
  assert_int_equal(tbe_report_summary(an, &o, &s, &n), 0);
  return s;
}

static void must_hold(const char *out, const char *what, const char *text, const char *fmt) {
  if (!strstr(out, text)) fail_msg("%s: %s output lacks %s", what, fmt, text);
}

static void test_every_row(void **state) {
  (void)state;
  tbe_trace *t = import("cli/small.trace.json");
  tbe_analysis *an = NULL;
  assert_int_equal(tbe_analysis_create(&an, t, NULL), 0);
  assert_true(an->nsteps > 0 && an->ndevices > 0);
  /* A distinct value in every entry of every member row (a valid one for
   * every unit: positive, inside the time range, a window that ends in it). */
  for (size_t i = 0; i < TBE__FIG__COUNT; i++) {
    const tbe__figure *f = &tbe__figures[i];
    void *obj = object_of(an, f);
    /* every GPU the same as all of them: whichever column a format shows */
    for (size_t g = 0; g <= (f->scope == TBE__FS_DEVICE ? an->ndevices : 0); g++) {
      if (f->scope == TBE__FS_DEVICE && g < an->ndevices) obj = &an->devices[g];
      else obj = object_of(an, f);
      for (size_t k = 0; obj && !f->calc && k < f->n; k++) {
        int64_t v = 1000000 + 1000 * (int64_t)i + (int64_t)k;
        memcpy(tbe__fig_at(f, obj, k), &v, sizeof v);
      }
    }
  }
  void *buf = NULL;
  size_t n = 0;
  assert_int_equal(tbe_analysis_save(an, NULL, 0, &buf, &n, NULL), 0);
  tbe_analysis *x = NULL;
  tbe_analysis_load_error err;
  int rc = tbe_analysis_load(&x, NULL, buf, n, NULL, &err);
  if (rc) print_message("refused: %s\n", err.message);
  assert_int_equal(rc, 0);
  for (size_t i = 0; i < TBE__FIG__COUNT; i++) {
    const tbe__figure *f = &tbe__figures[i];
    const void *a = object_of(an, f), *b = object_of(x, f);
    for (size_t k = 0; k < f->n; k++)
      if (tbe__fig_real(f, a, k) != tbe__fig_real(f, b, k) ||
          tbe__fig_u64(f, a, k) != tbe__fig_u64(f, b, k))
        fail_msg("figure %s.%s[%zu]: saved %.17g, loaded %.17g", tbe__fig_scope_name(f->scope),
                 f->key, k, tbe__fig_real(f, a, k), tbe__fig_real(f, b, k));
  }
  char *js = render(x, TBE_REPORT_JSON), *csv = render(x, TBE_REPORT_CSV);
  char *md = render(x, TBE_REPORT_MARKDOWN), *tab = render(x, TBE_REPORT_TABLE);
  for (size_t i = 0; i < TBE__FIG__COUNT; i++) {
    const tbe__figure *f = &tbe__figures[i];
    if (f->n != 1 || f->scope == TBE__FS_STEP || strncmp(f->key, "step_hint", 9) == 0) continue;
    const void *obj = object_of(x, f);
    char want[160], v[48];
    double r = tbe__fig_real(f, obj, 0);
    if (f->unit == TBE__FU_PCT)
      snprintf(v, sizeof v, "%.3f", r);
    else
      snprintf(v, sizeof v, "%llu", (unsigned long long)tbe__fig_u64(f, obj, 0));
    snprintf(want, sizeof want, "\"%s\":%s", f->key, v);
    must_hold(js, f->key, want, "JSON");
    if (!tbe__fig_listed(f)) continue;
    must_hold(csv, f->key, f->key, "CSV");
    snprintf(want, sizeof want, ",%s,", v); /* a column of the all-GPU row (not the last) */
    if (!strstr(csv, want)) snprintf(want, sizeof want, ",%s\n", v); /* (the last) */
    must_hold(csv, f->key, want, "CSV");
    char cell[64];
    tbe__fig_cell(cell, sizeof cell, f, obj);
    snprintf(want, sizeof want, " %s |", cell);
    must_hold(md, f->key, want, "Markdown");
    must_hold(md, f->key, f->label, "Markdown");
    must_hold(tab, f->key, f->label, "table");
    must_hold(tab, f->key, cell, "table");
    if (f->diff == TBE__FD_NONE) continue;
    /* compared: the same value on both sides of a comparison with itself */
    tbe_diff *d = NULL;
    assert_int_equal(tbe_diff_create(&d, x, x, NULL), 0);
    for (int fmt = 0; fmt < 4; fmt++) {
      tbe_report_options o;
      tbe_report_options_init(&o);
      o.format = fmt;
      char *s = NULL;
      size_t sn = 0;
      assert_int_equal(tbe_report_diff(d, &o, &s, &sn), 0);
      if (fmt == TBE_REPORT_JSON)
        snprintf(want, sizeof want, "\"%s\":[%s,%s]", f->key, v, v);
      else if (fmt == TBE_REPORT_CSV)
        snprintf(want, sizeof want, "overall,%s,%s,%s,", f->key, v, v);
      else
        snprintf(want, sizeof want, "%s", cell);
      must_hold(s, f->key, want, "diff");
      if (fmt == TBE_REPORT_MARKDOWN || fmt == TBE_REPORT_TABLE)
        must_hold(s, f->key, f->label, "diff");
      tbe_report_free(s, sn, NULL);
    }
    tbe_diff_free(d);
  }
  tbe_report_free(js, strlen(js), NULL);
  tbe_report_free(csv, strlen(csv), NULL);
  tbe_report_free(md, strlen(md), NULL);
  tbe_report_free(tab, strlen(tab), NULL);
  tbe_analysis_free(x);
  tbe_analysis_save_free(buf, n, NULL);
  tbe_analysis_free(an);
  tbe_trace_free(t);
}

/* Every scalar TensorBoard gets from a listed row has a description, its
 * label in it, as every other tag of ours (scripts/check_tb_views.py asks
 * it of each tag); a leaf that is no row's gets none. */
static void test_row_descriptions(void **state) {
  (void)state;
  tbe_allocator a;
  tbe__allocator_init(&a, NULL);
  tbe__buf b;
  tbe__buf_init(&b, &a);
  char tag[160], leaf[128];
  for (size_t i = TBE__FIG_LISTED; i < TBE__FIG__COUNT; i++) {
    const tbe__figure *f = &tbe__figures[i];
    if (!tbe__fig_listed(f)) continue;
    tbe__ev_row_tag(f, leaf, sizeof leaf);
    const char *groups[] = {"summary", "gpu0"};
    for (size_t k = 0; k < 2; k++) {
      snprintf(tag, sizeof tag, "%s/%s", groups[k], leaf);
      b.len = 0;
      tbe__ev_describe(&b, tag, NULL);
      assert_non_null(strstr((const char *)b.data, f->label));
    }
    if (f->diff == TBE__FD_NONE) continue;
    snprintf(tag, sizeof tag, "diff/base/%s_ratio", f->key);
    b.len = 0;
    tbe__ev_describe(&b, tag, NULL);
    assert_non_null(strstr((const char *)b.data, f->label));
  }
  const char *none[] = {"summary/no_such_figure", "gpu0/no_such_figure", "diff/base/nope_ratio"};
  for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
    b.len = 0;
    tbe__ev_describe(&b, none[i], NULL);
    assert_string_equal((const char *)b.data, "");
  }
  tbe__buf_deinit(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rows),
      cmocka_unit_test(test_keys_are_file_fields),
      cmocka_unit_test(test_members),
      cmocka_unit_test(test_accessors),
      cmocka_unit_test(test_merge),
      cmocka_unit_test(test_every_row),
      cmocka_unit_test(test_row_descriptions),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
