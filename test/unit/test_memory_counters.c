/* test_memory_counters.c: the memory curve as counter tracks per GPU
 * (src/trace/model/memory_counters.c, a pass of tbe_trace_finish).
 *
 * What must never happen: a counter for a total the curve did not have (a
 * host allocation, another name's event), two counters of a track at one
 * time, a counter where the total did not change, and counters doubled
 * when our own Chrome JSON or XSpace is read back.  The trace is built
 * here with every total given, so the checks hold with or without the
 * curve pass that fills missing totals (model/memory.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tbexport/export.h"
#include "tbexport/import.h"
#include "tbexport/trace.h"
#include "testutil.h"

#define T0 1700000000000000000LL

static void mem(tbe_trace *t, uint32_t track, int64_t at, const char *name, int32_t dev,
                int64_t bytes, int64_t alloc, int64_t resv, uint8_t source) {
  tbe_event e;
  memset(&e, 0, sizeof e);
  e.start_ns = T0 + at;
  e.name = tbe_trace_str_id(t, name);
  e.track = track;
  e.link = TBE_NONE;
  e.kind = TBE_EV_MEMORY;
  tbe_memory m;
  memset(&m, 0, sizeof m);
  m.addr = 4096 + (uint64_t)at;
  m.bytes = bytes;
  m.total_allocated = alloc;
  m.total_reserved = resv;
  m.device = dev;
  m.device_type = dev >= 0 ? 1 : 0;
  m.source = source;
  m.mem_kind = dev >= 0 ? TBE_MEM_DEVICE : TBE_MEM_PINNED;
  assert_int_equal(tbe_trace_add_event(t, &e, &m, NULL, 0, NULL), 0);
}

/* An allocator's curve on GPU 0 with two events at one time, a change of
 * reserved alone, a host allocation and the driver's event of another
 * name; finished. */
static tbe_trace *curve(void) {
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  uint32_t host, dev;
  assert_int_equal(tbe_trace_device(t, 0, &dev), 0);
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_THREAD, 10, 11, -1, &host), 0);
  const uint8_t A = TBE_MEMSRC_ALLOCATOR;
  mem(t, host, 100, "[memory]", 0, 10, 10, 20, A);
  mem(t, host, 200, "[memory]", 0, 20, 30, 20, A); /* two at 200: the last counts */
  mem(t, host, 200, "[memory]", 0, -15, 15, 20, A);
  mem(t, host, 300, "[memory]", 0, 0, 15, 40, A); /* reserved alone changes */
  mem(t, host, 350, "[memory]", 0, -5, 10, 40, A);
  mem(t, host, 400, "[memory]", -1, 64, 64, 64, A); /* the host's: no GPU track */
  /* the driver's, another name: not the curve */
  mem(t, host, 500, "[cuda memory]", 0, 1 << 20, 1 << 20, 1 << 20, TBE_MEMSRC_CUDA);
  assert_int_equal(tbe_trace_finish(t), 0);
  return t;
}

/* The counter points of GPU 0's track `name`: "at=value ..." (malloc'd). */
static char *points(const tbe_trace *t, const char *name) {
  char *out = calloc(1, 1024);
  size_t len = 0, ntracks = 0;
  for (size_t i = 0; i < t->ntracks; i++) {
    const tbe_track *tr = &t->tracks[i];
    if (!tbe_track_is_metric(tr) || strcmp(tbe_trace_str(t, tr->name), name) != 0) continue;
    ntracks++;
    assert_int_equal(tr->device, 0);
    for (uint32_t k = 0; k < tr->count; k++) {
      const tbe_event *e = &t->events[tr->first + k];
      assert_int_equal(e->kind, TBE_EV_COUNTER);
      len += (size_t)snprintf(out + len, 1024 - len, "%s%lld=%.0f", len ? " " : "",
                              (long long)(e->start_ns - T0), tbe_trace_counter(t, e)->value);
    }
  }
  assert_true(ntracks <= 1); /* one track per GPU and name, never two */
  return out;
}

static void expect_points(const tbe_trace *t, const char *what) {
  char *a = points(t, "memory allocated"), *r = points(t, "memory reserved");
  if (strcmp(a, "100=10 200=15 350=10") != 0 || strcmp(r, "100=20 300=40") != 0)
    fail_msg("%s: allocated [%s], reserved [%s]", what, a, r);
  free(a);
  free(r);
}

static void test_points(void **state) {
  (void)state;
  tbe_trace *t = curve();
  expect_points(t, "the model");
  /* nothing else is a counter */
  size_t counters = 0;
  for (size_t i = 0; i < t->nevents; i++) counters += t->events[i].kind == TBE_EV_COUNTER;
  assert_int_equal(counters, 5);
  tbe_trace_free(t);
}

static tbe_trace *import(const char *path) {
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  tbe_import_error err;
  int rc = tbe_import_file(t, path, NULL, &err);
  if (rc) fail_msg("import %s: %s", path, err.message);
  return t;
}

/* Read back from our Chrome JSON (the "C" events in GPU 0's pid) and our
 * XSpace (its counter lines), the same points, not twice as many; and
 * once more from the re-read trace's own outputs. */
static void test_read_back(void **state) {
  (void)state;
  tbe_trace *t = curve();
  char *dir = tu_mkdtemp();
  char *j = tu_join(dir, "a.trace.json.gz"), *x = tu_join(dir, "a.xplane.pb");
  char *j2 = tu_join(dir, "b.trace.json.gz"), *x2 = tu_join(dir, "b.xplane.pb");
  assert_int_equal(tbe_export_chrome_json(t, j, 1, 1), 0);
  assert_int_equal(tbe_export_xplane(t, x, 1), 0);
  tbe_trace *rj = import(j), *rx = import(x);
  expect_points(rj, "Chrome JSON");
  expect_points(rx, "XSpace");
  assert_int_equal(tbe_export_chrome_json(rj, j2, 1, 1), 0);
  assert_int_equal(tbe_export_xplane(rx, x2, 1), 0);
  tbe_trace *rj2 = import(j2), *rx2 = import(x2);
  expect_points(rj2, "Chrome JSON twice");
  expect_points(rx2, "XSpace twice");
  tbe_trace_free(rj2);
  tbe_trace_free(rx2);
  tbe_trace_free(rj);
  tbe_trace_free(rx);
  tbe_trace_free(t);
  tu_rmrf(dir);
  free(j);
  free(x);
  free(j2);
  free(x2);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_points),
      cmocka_unit_test(test_read_back),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
