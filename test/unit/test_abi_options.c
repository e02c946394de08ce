/* test_abi_options.c: option structs that grow (tbexport/common.h).
 *
 * A program built against an older header passes a shorter struct: its
 * `size` ends before the fields it does not know, and the library must
 * take their defaults, whatever lies in memory past `size`.  A size of 0
 * (a struct never initialised) or past the library's struct (a newer
 * header) is refused with TBE_EINVAL by every function that takes one.
 * And tbe_*_options_init never writes past the caller's size.
 *
 * Each "older caller" case sets the last field to a value the library
 * would act on (a failing allocator, a base directory the input is not
 * below, a refused label, an unknown grouping) and cuts `size` just
 * before it: the call must behave as without it, and as with it once
 * `size` covers it again. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tbexport.h"
#include "testutil.h"

/* Room for a struct a newer header would declare: this version's and
 * more, aligned for any field. */
typedef union newer {
  max_align_t align;
  unsigned char bytes[1024];
} newer;

static tbe_trace *small_trace(void) {
  tbe_trace *t = NULL;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  assert_int_equal(tbe_import_file(t, tu_data("cli/small.trace.json"), NULL, NULL), 0);
  return t;
}

/* ---- init ---- */

static void test_init_sets_size_and_defaults(void **state) {
  (void)state;
  tbe_export_options eo;
  tbe_export_options_init(&eo);
  assert_int_equal(eo.size, sizeof eo);
  assert_int_equal(eo.outputs, TBE_OUT_ALL);
  tbe_import_options io;
  tbe_import_options_init(&io);
  assert_int_equal(io.size, sizeof io);
  assert_int_equal(io.max_events, 0);
  tbe_writer_options wo;
  tbe_writer_options_init(&wo);
  assert_int_equal(wo.size, sizeof wo);
  assert_true(wo.flush_interval_s == 1.0);
  tbe_profiler_options po;
  tbe_profiler_options_init(&po);
  assert_int_equal(po.size, sizeof po);
  assert_int_equal(po.buffer_mb, 64);
  tbe_session_options so;
  tbe_session_options_init(&so);
  assert_int_equal(so.size, sizeof so);
  tbe_report_options ro;
  tbe_report_options_init(&ro);
  assert_int_equal(ro.size, sizeof ro);
  assert_int_equal(ro.width, 100);
  tbe_report_options copy = ro; /* a copy keeps its size */
  assert_int_equal(copy.size, sizeof copy);
}

static void test_init_never_writes_past_size(void **state) {
  (void)state;
  newer buf;
  size_t cut = offsetof(tbe_report_options, group_by);
  memset(buf.bytes, 0xAB, sizeof buf.bytes);
  tbe_report_options_init_sized((tbe_report_options *)buf.bytes, cut);
  tbe_report_options *o = (tbe_report_options *)buf.bytes;
  assert_int_equal(o->size, cut);
  assert_int_equal(o->width, 100);
  for (size_t i = cut; i < sizeof buf.bytes; i++) assert_int_equal(buf.bytes[i], 0xAB);
  /* Too small to hold even the size: nothing written. */
  memset(buf.bytes, 0xAB, sizeof buf.bytes);
  tbe_export_options_init_sized((tbe_export_options *)buf.bytes, sizeof(size_t) - 1);
  for (size_t i = 0; i < sizeof buf.bytes; i++) assert_int_equal(buf.bytes[i], 0xAB);
  /* A newer caller's struct: this version's defaults, zero past them. */
  memset(buf.bytes, 0xAB, sizeof buf.bytes);
  tbe_writer_options_init_sized((tbe_writer_options *)buf.bytes, sizeof(tbe_writer_options) + 16);
  assert_int_equal(((tbe_writer_options *)buf.bytes)->size, sizeof(tbe_writer_options) + 16);
  for (size_t i = sizeof(tbe_writer_options); i < sizeof(tbe_writer_options) + 16; i++)
    assert_int_equal(buf.bytes[i], 0);
  assert_int_equal(buf.bytes[sizeof(tbe_writer_options) + 16], 0xAB);
}

/* ---- an older caller: the fields past its size take their defaults ---- */

static void test_older_writer(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  tu_failalloc fa;
  tbe_allocator none = tu_failalloc_init(&fa, 0);
  tbe_writer_options o;
  tbe_writer_options_init(&o);
  o.allocator = &none;
  tbe_writer *w = NULL;
  assert_int_equal(tbe_writer_open(&w, dir, &o), TBE_ENOMEM);
  o.size = offsetof(tbe_writer_options, allocator);
  assert_int_equal(tbe_writer_open(&w, dir, &o), 0);
  assert_int_equal(tbe_writer_close(w), 0);
  tu_rmrf(dir);
  free(dir);
}

static void test_older_import(void **state) {
  (void)state;
  tbe_import_options o;
  tbe_import_options_init(&o);
  o.base_dir = "/nonexistent-tbexport-base";
  tbe_trace *t = NULL;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  assert_int_not_equal(tbe_import_file(t, tu_data("cli/small.trace.json"), &o, NULL), 0);
  tbe_trace_free(t);
  o.size = offsetof(tbe_import_options, base_dir);
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  assert_int_equal(tbe_import_file(t, tu_data("cli/small.trace.json"), &o, NULL), 0);
  tbe_trace_free(t);
}

static void test_older_export(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  tbe_trace *t = small_trace();
  static const char *const bad[] = {"run=x"}; /* a built-in name: refused */
  tbe_export_options o;
  tbe_export_options_init(&o);
  o.logdir = dir;
  o.run = "r";
  o.host = "h";
  o.outputs = TBE_OUT_EVENTS;
  o.labels = bad;
  o.nlabels = 1;
  assert_int_equal(tbe_export_run(t, &o), TBE_EINVAL);
  o.size = offsetof(tbe_export_options, command);
  assert_int_equal(tbe_export_run(t, &o), 0);
  assert_true(tu_count_files(dir) > 0);
  tbe_trace_free(t);
  tu_rmrf(dir);
  free(dir);
}

static void test_older_report(void **state) {
  (void)state;
  tbe_trace *t = small_trace();
  tbe_analysis *an = NULL;
  assert_int_equal(tbe_analysis_create(&an, t, NULL), 0);
  tbe_report_options o;
  tbe_report_options_init(&o);
  o.group_by = 99;
  char *out = NULL;
  size_t len = 0;
  assert_int_equal(tbe_report_summary(an, &o, &out, &len), TBE_EINVAL);
  o.size = offsetof(tbe_report_options, group_by);
  assert_int_equal(tbe_report_summary(an, &o, &out, &len), 0);
  assert_true(len > 0);
  tbe_report_free(out, len, NULL);
  tbe_analysis_free(an);
  tbe_trace_free(t);
}

/* ---- sizes refused: 0 (never initialised) and past this version ---- */

static int set_env(void *ctx, const char *name, const char *value) {
  (void)ctx, (void)name, (void)value;
  return 0;
}

static void test_sizes_refused(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  tbe_trace *t = small_trace();
  tbe_analysis *an = NULL;
  assert_int_equal(tbe_analysis_create(&an, t, NULL), 0);
  for (int k = 0; k < 2; k++) {
    newer eb, ib, wb, pb, sb, rb, ob;
    tbe_export_options *eo = (tbe_export_options *)eb.bytes;
    tbe_import_options *io = (tbe_import_options *)ib.bytes;
    tbe_writer_options *wo = (tbe_writer_options *)wb.bytes;
    tbe_profiler_options *po = (tbe_profiler_options *)pb.bytes;
    tbe_session_options *so = (tbe_session_options *)sb.bytes;
    tbe_report_options *ro = (tbe_report_options *)rb.bytes;
    /* k == 0: a struct never initialised; k == 1: a newer header's. */
    tbe_export_options_init_sized(eo, k ? sizeof *eo + 8 : sizeof *eo);
    tbe_import_options_init_sized(io, k ? sizeof *io + 8 : sizeof *io);
    tbe_writer_options_init_sized(wo, k ? sizeof *wo + 8 : sizeof *wo);
    tbe_profiler_options_init_sized(po, k ? sizeof *po + 8 : sizeof *po);
    tbe_session_options_init_sized(so, k ? sizeof *so + 8 : sizeof *so);
    tbe_report_options_init_sized(ro, k ? sizeof *ro + 8 : sizeof *ro);
    if (!k) eo->size = io->size = wo->size = po->size = so->size = ro->size = 0;
    eo->logdir = dir;
    po->logdir = dir;
    tbe_export_options *good = (tbe_export_options *)ob.bytes;
    tbe_export_options_init(good);
    good->logdir = dir;
    char run[TBE_NAME_MAX + 1], host[TBE_NAME_MAX + 1], where[256];
    assert_int_equal(tbe_export_run(t, eo), TBE_EINVAL);
    assert_int_equal(tbe_export_resolve(t, eo, run, sizeof run, host, sizeof host), TBE_EINVAL);
    assert_int_equal(tbe_export_conflict(t, eo, where, sizeof where), TBE_EINVAL);
    tbe_trace *t2 = NULL;
    assert_int_equal(tbe_trace_create(&t2, NULL), 0);
    assert_int_equal(tbe_import_file(t2, tu_data("cli/small.trace.json"), io, NULL), TBE_EINVAL);
    tbe_trace_free(t2);
    tbe_writer *w = NULL;
    assert_int_equal(tbe_writer_open(&w, dir, wo), TBE_EINVAL);
    assert_null(w);
    char *out = NULL;
    size_t len = 0;
    assert_int_equal(tbe_report_summary(an, ro, &out, &len), TBE_EINVAL);
    assert_null(out);
    assert_int_equal(tbe_session_environment(po, "inject.so", dir, set_env, NULL), TBE_EINVAL);
#ifdef TBE_HAVE_CUPTI
    assert_int_equal(tbe_profiler_start(po), TBE_EINVAL);
#endif
    /* The session's options, then its export options, each checked. */
    so->export_options = good;
    so->spool_dir = dir;
    assert_int_equal(tbe_session_convert(so, NULL), TBE_EINVAL);
    tbe_session_options s2;
    tbe_session_options_init(&s2);
    s2.spool_dir = dir;
    s2.export_options = eo;
    assert_int_equal(tbe_session_convert(&s2, NULL), TBE_EINVAL);
  }
  assert_int_equal(tu_count_files(dir), 0);
  tbe_analysis_free(an);
  tbe_trace_free(t);
  tu_rmrf(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_init_sets_size_and_defaults),
      cmocka_unit_test(test_init_never_writes_past_size),
      cmocka_unit_test(test_older_writer),
      cmocka_unit_test(test_older_import),
      cmocka_unit_test(test_older_export),
      cmocka_unit_test(test_older_report),
      cmocka_unit_test(test_sizes_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
