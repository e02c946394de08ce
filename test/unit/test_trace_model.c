/* test_trace_model.c: the trace model: interning, tracks, events and their
 * details, finishing (order, correlation links, steps, span), and
 * allocation failures at every point of a build. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"

#include "tbexport.h"

static void test_intern(void **state) {
  (void)state;
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  assert_string_equal(tbe_trace_str(t, 0), "");
  tbe_str a, b, c;
  assert_int_equal(tbe_trace_intern(t, "kernel_a", 8, &a), 0);
  assert_int_equal(tbe_trace_intern(t, "kernel_axx", 8, &b), 0); /* same 8 bytes */
  assert_int_equal(a, b);
  assert_int_equal(tbe_trace_intern(t, "kernel_b", 8, &c), 0);
  assert_int_not_equal(a, c);
  assert_string_equal(tbe_trace_str(t, a), "kernel_a");
  assert_int_equal(tbe_trace_strlen(t, c), 8);
  assert_int_equal(tbe_trace_find_str(t, "kernel_b", 8), c);
  assert_int_equal(tbe_trace_find_str(t, "nope", 4), TBE_NONE);
  /* Many strings: ids stay stable and pointers stay valid across growth. */
  const char *first = tbe_trace_str(t, a);
  char buf[32];
  for (int i = 0; i < 100000; i++) {
    snprintf(buf, sizeof buf, "s%d", i);
    tbe_str id = tbe_trace_str_id(t, buf);
    assert_true(id > c);
  }
  assert_ptr_equal(first, tbe_trace_str(t, a));
  assert_int_equal(tbe_trace_nstrings(t), 100000 + 3);
  snprintf(buf, sizeof buf, "s%d", 4242);
  assert_string_equal(tbe_trace_str(t, tbe_trace_find_str(t, buf, strlen(buf))), "s4242");
  /* A string larger than an arena block. */
  size_t big = 200000;
  char *s = malloc(big);
  memset(s, 'x', big);
  tbe_str bid;
  assert_int_equal(tbe_trace_intern(t, s, big, &bid), 0);
  assert_int_equal(tbe_trace_strlen(t, bid), big);
  assert_memory_equal(tbe_trace_str(t, bid), s, big);
  free(s);
  assert_int_equal(tbe_trace_error(t), 0);
  tbe_trace_free(t);
}

static void test_tracks(void **state) {
  (void)state;
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  uint32_t a, b, c, d;
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_THREAD, 10, 11, -1, &a), 0);
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_STREAM, 10, 11, 0, &b), 0);
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_THREAD, 10, 11, -1, &c), 0);
  assert_int_not_equal(a, b);
  assert_int_equal(a, c);
  for (int i = 0; i < 1000; i++) assert_int_equal(tbe_trace_track(t, TBE_TRACK_STREAM, 1, i, 0, &d), 0);
  assert_int_equal(t->ntracks, 1002);
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_STREAM, 1, 500, 0, &d), 0);
  assert_int_equal(t->tracks[d].tid, 500);
  uint32_t p1, p2, d1, d2;
  assert_int_equal(tbe_trace_process(t, 77, &p1), 0);
  assert_int_equal(tbe_trace_process(t, 77, &p2), 0);
  assert_int_equal(p1, p2);
  assert_int_equal(tbe_trace_device(t, 3, &d1), 0);
  assert_int_equal(tbe_trace_device(t, 3, &d2), 0);
  assert_int_equal(d1, d2);
  assert_int_equal(t->devices[d1].id, 3);
  tbe_trace_free(t);
}

/* Builds: a host thread with ProfilerStep#1..#3 and three launches, a
 * stream with the three kernels added in reverse order. */
static int build_small(tbe_trace *t) {
  uint32_t host, stream;
  int rc = tbe_trace_track(t, TBE_TRACK_THREAD, 100, 101, -1, &host);
  if (rc) return rc;
  rc = tbe_trace_track(t, TBE_TRACK_STREAM, 100, 7, 0, &stream);
  if (rc) return rc;
  for (int s = 3; s >= 1; s--) {
    char name[32];
    snprintf(name, sizeof name, "ProfilerStep#%d", s);
    tbe_event e = {0};
    e.start_ns = 1000 * s;
    e.dur_ns = 900;
    e.track = host;
    e.kind = TBE_EV_USER_ANNOTATION;
    e.name = tbe_trace_str_id(t, name);
    if ((rc = tbe_trace_add_event(t, &e, NULL, NULL, 0, NULL))) return rc;
    tbe_event l = {0};
    l.start_ns = 1000 * s + 10;
    l.dur_ns = 5;
    l.track = host;
    l.kind = TBE_EV_RUNTIME;
    l.correlation = (uint64_t)s;
    l.name = tbe_trace_str_id(t, "cudaLaunchKernel");
    if ((rc = tbe_trace_add_event(t, &l, NULL, NULL, 0, NULL))) return rc;
    tbe_kernel k = {.grid = {s, 1, 1}, .block = {128, 1, 1}, .registers = 32, .occupancy_pct = 50};
    tbe_event g = {0};
    g.start_ns = 1000 * s + 100;
    g.dur_ns = 300;
    g.track = stream;
    g.kind = TBE_EV_KERNEL;
    g.correlation = (uint64_t)s;
    g.name = tbe_trace_str_id(t, "my_kernel");
    tbe_arg args[2] = {{.key = tbe_trace_str_id(t, "k"), .type = TBE_ARG_INT, .v.i = s},
                       {.key = tbe_trace_str_id(t, "s"), .type = TBE_ARG_STR, .v.s = g.name}};
    if ((rc = tbe_trace_add_event(t, &g, &k, args, 2, NULL))) return rc;
  }
  return tbe_trace_error(t);
}

static void test_finish(void **state) {
  (void)state;
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  assert_int_equal(build_small(t), 0);
  assert_int_equal(tbe_trace_finish(t), 0);
  assert_int_equal(t->nevents, 9);
  /* Ordered by track then start. */
  for (size_t i = 1; i < t->nevents; i++) {
    const tbe_event *a = &t->events[i - 1], *b = &t->events[i];
    assert_true(a->track < b->track || (a->track == b->track && a->start_ns <= b->start_ns));
  }
  const tbe_track *st = &t->tracks[1];
  assert_int_equal(st->count, 3);
  for (uint32_t i = st->first; i < st->first + st->count; i++) {
    const tbe_event *k = &t->events[i];
    assert_int_equal(k->kind, TBE_EV_KERNEL);
    /* The detail moved with its event. */
    const tbe_kernel *kd = tbe_trace_kernel(t, k);
    assert_non_null(kd);
    assert_int_equal(kd->grid[0], k->correlation);
    assert_int_equal(k->nargs, 2);
    assert_int_equal(t->args[k->args].v.i, (int64_t)k->correlation);
    /* Linked both ways to the launch with the same correlation id. */
    assert_int_not_equal(k->link, TBE_NONE);
    const tbe_event *api = &t->events[k->link];
    assert_int_equal(api->kind, TBE_EV_RUNTIME);
    assert_int_equal(api->correlation, k->correlation);
    assert_int_equal(api->link, i);
  }
  assert_int_equal(t->nsteps, 3);
  for (size_t s = 0; s < 3; s++) {
    assert_int_equal(t->steps[s].num, (int64_t)s + 1);
    assert_int_equal(t->steps[s].start_ns, 1000 * ((int64_t)s + 1));
    assert_int_equal(t->steps[s].end_ns, 1000 * ((int64_t)s + 1) + 900);
  }
  assert_int_equal(t->start_ns, 1000);
  assert_int_equal(t->stop_ns, 3900); /* ProfilerStep#3 ends last */
  assert_int_equal(tbe_trace_finish(t), 0); /* idempotent */
  assert_null(tbe_trace_memcpy(t, &t->events[0]));
  tbe_trace_free(t);
}

static void test_bad_input(void **state) {
  (void)state;
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  tbe_event e = {0};
  e.track = 5; /* no such track */
  assert_int_equal(tbe_trace_add_event(t, &e, NULL, NULL, 0, NULL), TBE_EINVAL);
  uint32_t tr;
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_THREAD, 1, 1, -1, &tr), 0);
  e.track = tr;
  e.kind = 200;
  assert_int_equal(tbe_trace_add_event(t, &e, NULL, NULL, 0, NULL), TBE_EINVAL);
  e.kind = TBE_EV_GENERIC;
  e.dur_ns = -5;
  assert_int_equal(tbe_trace_add_event(t, &e, NULL, NULL, 0, NULL), 0);
  assert_int_equal(t->events[0].dur_ns, 0);
  assert_true(t->events[0].flags & TBE_EVF_CLAMPED);
  tbe_kernel k = {0};
  /* A kernel detail on a generic event is refused. */
  assert_int_equal(tbe_trace_add_event(t, &e, &k, NULL, 0, NULL), TBE_EINVAL);
  assert_int_equal(tbe_trace_warn(t, "dropped %d", 3), 0);
  assert_int_equal(tbe_trace_warn(t, "dropped %d", 3), 0);
  assert_int_equal(t->nwarnings, 1);
  assert_string_equal(tbe_trace_str(t, t->warnings[0]), "dropped 3");
  tbe_trace_free(NULL);
  tbe_trace_free(t);
}

/* Sorting a large shuffled trace: order and detail association hold. */
static void test_large_shuffle(void **state) {
  (void)state;
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  uint32_t tracks[4];
  for (int i = 0; i < 4; i++) assert_int_equal(tbe_trace_track(t, TBE_TRACK_STREAM, 1, i, 0, &tracks[i]), 0);
  srand(7);
  const int n = 200000;
  for (int i = 0; i < n; i++) {
    tbe_event e = {0};
    e.start_ns = rand() % 1000000;
    e.dur_ns = rand() % 100;
    e.track = tracks[rand() % 4];
    e.kind = TBE_EV_MEMSET;
    tbe_memset m = {.bytes = (uint64_t)e.start_ns * 4 + e.track};
    assert_int_equal(tbe_trace_add_event(t, &e, &m, NULL, 0, NULL), 0);
  }
  assert_int_equal(tbe_trace_finish(t), 0);
  size_t total = 0;
  for (int k = 0; k < 4; k++) total += t->tracks[tracks[k]].count;
  assert_int_equal(total, (size_t)n);
  for (int i = 1; i < n; i++) assert_true(t->events[i - 1].track < t->events[i].track ||
                                          t->events[i - 1].start_ns <= t->events[i].start_ns);
  for (int i = 0; i < n; i++) {
    const tbe_memset *m = tbe_trace_memset(t, &t->events[i]);
    assert_int_equal(m->bytes, (uint64_t)t->events[i].start_ns * 4 + t->events[i].track);
  }
  tbe_trace_free(t);
}


static void test_alloc_failures(void **state) {
  (void)state;
  int succeeded = 0;
  for (long n = 0; n < 1000 && !succeeded; n++) {
    tu_failalloc f;
    tbe_allocator a = tu_failalloc_init(&f, n);
    tbe_trace *t = NULL;
    int rc = tbe_trace_create(&t, &a);
    if (rc == 0) {
      rc = build_small(t);
      if (rc == 0) rc = tbe_trace_finish(t);
      if (rc == 0) succeeded = 1;
      else assert_int_equal(rc, TBE_ENOMEM);
      tbe_trace_free(t);
    } else {
      assert_int_equal(rc, TBE_ENOMEM);
    }
    assert_int_equal(f.live, 0); /* nothing leaked */
  }
  assert_true(succeeded);
}

/* ---- steps from a named range ---- */

/* Adds a host range of kind K on track TR: [start, start+dur), NVTX domain
 * DOM (NULL: default), integer payload PAY when HAS_PAY (1 int64, 2 uint64). */
static void range_ev(tbe_trace *t, uint32_t tr, tbe_event_kind k, const char *name, const char *dom,
                     int64_t start, int64_t dur, int has_pay, uint64_t pay) {
  tbe_event e = {0};
  e.start_ns = start;
  e.dur_ns = dur;
  e.name = tbe_trace_str_id(t, name);
  e.track = tr;
  e.kind = (uint8_t)k;
  tbe_nvtx nv = {0};
  nv.domain = dom ? tbe_trace_str_id(t, dom) : 0;
  nv.payload_type = (uint8_t)has_pay;
  nv.payload.u = pay;
  int nvtx = k == TBE_EV_NVTX_RANGE || k == TBE_EV_NVTX_MARK;
  assert_int_equal(tbe_trace_add_event(t, &e, nvtx ? &nv : NULL, NULL, 0, NULL), 0);
}

/* One thread: three outermost "train_step" ranges, one nested in the first
 * (recursion), other ranges around and inside; the steps are the three. */
static void test_steps_from_range_nesting(void **state) {
  (void)state;
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  uint32_t th, gpu;
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_THREAD, 10, 11, -1, &th), 0);
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_STREAM, 10, 7, 0, &gpu), 0);
  range_ev(t, th, TBE_EV_NVTX_RANGE, "epoch", NULL, 50, 5000, 0, 0);
  range_ev(t, th, TBE_EV_NVTX_RANGE, "train_step", NULL, 300, 200, 0, 0);
  range_ev(t, th, TBE_EV_NVTX_RANGE, "train_step", NULL, 100, 900, 0, 0);
  range_ev(t, th, TBE_EV_NVTX_RANGE, "forward", NULL, 120, 100, 0, 0);
  range_ev(t, th, TBE_EV_NVTX_RANGE, "train_step", NULL, 2000, 900, 0, 0);
  range_ev(t, th, TBE_EV_NVTX_RANGE, "train_step", NULL, 1000, 1000, 0, 0);
  range_ev(t, th, TBE_EV_NVTX_MARK, "train_step", NULL, 3500, 0, 0, 0); /* a mark: no */
  range_ev(t, gpu, TBE_EV_GPU_ANNOTATION, "train_step", NULL, 4000, 10, 0, 0); /* GPU: no */
  range_ev(t, th, TBE_EV_NVTX_RANGE, "step 7", NULL, 4500, 10, 0, 0); /* derived by name */
  assert_int_equal(tbe_trace_finish(t), 0);
  assert_int_equal(t->nsteps, 1); /* "step 7", derived */
  assert_int_equal(tbe_trace_steps_from_range(t, "train_step", NULL), 3);
  assert_int_equal(t->nsteps, 3);
  static const int64_t start[3] = {100, 1000, 2000}, end[3] = {1000, 2000, 2900};
  for (size_t i = 0; i < 3; i++) {
    assert_int_equal(t->steps[i].num, (int64_t)i);
    assert_int_equal(t->steps[i].start_ns, start[i]);
    assert_int_equal(t->steps[i].end_ns, end[i]);
    assert_string_equal(tbe_trace_str(t, t->steps[i].name), "train_step");
    assert_int_equal(t->steps[i].track, th);
  }
  /* Still finished: the analysis runs and sees the steps. */
  tbe_analysis *an;
  assert_int_equal(tbe_analysis_create(&an, t, NULL), 0);
  assert_int_equal(an->nsteps, 3);
  assert_int_equal(an->steps[1].dur_ns, 1000);
  tbe_analysis_free(an);
  /* An exact name only, and an empty one is refused. */
  assert_int_equal(tbe_trace_steps_from_range(t, "train", NULL), 0);
  assert_int_equal(tbe_trace_steps_from_range(t, "", NULL), TBE_EINVAL);
  assert_int_equal(tbe_trace_steps_from_range(t, NULL, NULL), TBE_EINVAL);
  assert_int_equal(t->nsteps, 3);
  tbe_trace_free(t);
}

/* Several threads: the one with the most occurrences gives the steps; on a
 * tie, the one whose first occurrence is earliest.  A trace not yet
 * finished is finished first. */
static void test_steps_from_range_threads(void **state) {
  (void)state;
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  uint32_t a, b, c;
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_THREAD, 1, 100, -1, &a), 0);
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_THREAD, 1, 200, -1, &b), 0);
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_THREAD, 2, 300, -1, &c), 0);
  /* a: 2; b: 4 starting at 200 (added out of order); c: 4 starting at 150 */
  for (int i = 0; i < 2; i++) range_ev(t, a, TBE_EV_NVTX_RANGE, "it", NULL, 10 + i * 100, 50, 0, 0);
  for (int i = 0; i < 4; i++) range_ev(t, b, TBE_EV_NVTX_RANGE, "it", NULL, 500 - i * 100, 50, 0, 0);
  for (int i = 0; i < 4; i++) range_ev(t, c, TBE_EV_NVTX_RANGE, "it", NULL, 150 + i * 100, 50, 0, 0);
  assert_int_equal(tbe_trace_steps_from_range(t, "it", NULL), 4);
  for (size_t i = 0; i < 4; i++) {
    assert_int_equal(t->steps[i].track, c);
    assert_int_equal(t->steps[i].start_ns, 150 + 100 * (int64_t)i);
    assert_int_equal(t->steps[i].num, (int64_t)i);
  }
  /* One more on b: b now has the most. */
  range_ev(t, b, TBE_EV_NVTX_RANGE, "it", NULL, 900, 50, 0, 0);
  assert_int_equal(tbe_trace_steps_from_range(t, "it", NULL), 5);
  assert_int_equal(t->steps[0].track, b);
  assert_int_equal(t->steps[0].start_ns, 200);
  assert_int_equal(t->steps[4].start_ns, 900);
  tbe_trace_free(t);
}

/* Payload numbering: used when every occurrence has a distinct integer
 * payload; a missing, repeated, double or too large one gives 0, 1, ... */
static void test_steps_from_range_payload(void **state) {
  (void)state;
  static const struct {
    int type[3];
    uint64_t pay[3];
    int64_t want[3];
  } cases[] = {
      {{1, 1, 1}, {40, 41, 42}, {40, 41, 42}},              /* int64 */
      {{2, 2, 1}, {7, 9, 8}, {7, 9, 8}},                    /* uint64 and int64, any order */
      {{1, 0, 1}, {40, 41, 42}, {0, 1, 2}},                 /* one without */
      {{1, 1, 1}, {5, 5, 6}, {0, 1, 2}},                    /* repeated */
      {{1, 3, 1}, {1, 2, 3}, {0, 1, 2}},                    /* a double */
      {{2, 2, 2}, {1, UINT64_MAX, 3}, {0, 1, 2}},           /* beyond int64 */
      {{1, 1, 1}, {(uint64_t)-3, (uint64_t)-2, (uint64_t)-1}, {-3, -2, -1}}, /* negative */
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    tbe_trace *t;
    assert_int_equal(tbe_trace_create(&t, NULL), 0);
    uint32_t th;
    assert_int_equal(tbe_trace_track(t, TBE_TRACK_THREAD, 1, 1, -1, &th), 0);
    for (int i = 0; i < 3; i++)
      range_ev(t, th, TBE_EV_NVTX_RANGE, "step", NULL, 1000 * (i + 1), 500, cases[k].type[i],
               cases[k].pay[i]);
    assert_int_equal(tbe_trace_steps_from_range(t, "step", NULL), 3);
    for (int i = 0; i < 3; i++) {
      assert_int_equal(t->steps[i].num, cases[k].want[i]);
      assert_int_equal(t->steps[i].start_ns, 1000 * (i + 1)); /* time order */
    }
    tbe_trace_free(t);
  }
}

/* Domains: NAME@DOMAIN matches NVTX ranges of that domain only; without a
 * domain any domain and user annotations (record_function) match. */
static void test_steps_from_range_domains(void **state) {
  (void)state;
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  uint32_t th;
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_THREAD, 1, 1, -1, &th), 0);
  range_ev(t, th, TBE_EV_NVTX_RANGE, "step", "train", 100, 50, 0, 0);
  range_ev(t, th, TBE_EV_NVTX_RANGE, "step", "train", 200, 50, 0, 0);
  range_ev(t, th, TBE_EV_NVTX_RANGE, "step", "eval", 300, 50, 0, 0);
  range_ev(t, th, TBE_EV_USER_ANNOTATION, "step", NULL, 400, 50, 0, 0);
  range_ev(t, th, TBE_EV_NVTX_RANGE, "step", NULL, 500, 50, 0, 0);
  assert_int_equal(tbe_trace_steps_from_range(t, "step", "train"), 2);
  assert_int_equal(t->steps[1].start_ns, 200);
  assert_int_equal(tbe_trace_steps_from_range(t, "step", "eval"), 1);
  assert_int_equal(t->steps[0].start_ns, 300);
  assert_int_equal(tbe_trace_steps_from_range(t, "step", NULL), 5);
  assert_int_equal(t->steps[3].start_ns, 400); /* the user annotation */
  /* An unknown domain, or a domain of a name that has none: no match, the
   * steps stay as they were. */
  assert_int_equal(tbe_trace_steps_from_range(t, "step", "nccl"), 0);
  assert_int_equal(tbe_trace_steps_from_range(t, "step", "step"), 0);
  assert_int_equal(t->nsteps, 5);
  tbe_trace_free(t);
}

/* No match, and the hint: the most frequent top-level range names. */
static void test_top_ranges(void **state) {
  (void)state;
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  uint32_t a, b, gpu;
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_THREAD, 1, 1, -1, &a), 0);
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_THREAD, 1, 2, -1, &b), 0);
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_STREAM, 1, 7, 0, &gpu), 0);
  tbe_name_count top[4];
  assert_int_equal(tbe_trace_top_ranges(t, top, 4), TBE_ESTATE); /* not finished */
  for (int i = 0; i < 5; i++) {
    range_ev(t, a, TBE_EV_NVTX_RANGE, "iteration", NULL, 1000 * i, 900, 0, 0);
    range_ev(t, a, TBE_EV_NVTX_RANGE, "forward", NULL, 1000 * i + 10, 100, 0, 0); /* nested */
  }
  for (int i = 0; i < 3; i++) range_ev(t, b, TBE_EV_USER_ANNOTATION, "loader", NULL, 1000 * i, 10, 0, 0);
  range_ev(t, b, TBE_EV_NVTX_RANGE, "iteration", NULL, 9000, 10, 0, 0);
  range_ev(t, a, TBE_EV_NVTX_RANGE, "setup", NULL, 9000, 10, 0, 0);
  for (int i = 0; i < 9; i++) range_ev(t, gpu, TBE_EV_GPU_ANNOTATION, "gpu", NULL, 10 * i, 5, 0, 0);
  range_ev(t, a, TBE_EV_NVTX_MARK, "mark", NULL, 9500, 0, 0, 0);
  assert_int_equal(tbe_trace_finish(t), 0);
  assert_int_equal(tbe_trace_steps_from_range(t, "train_step", NULL), 0);
  assert_int_equal(t->nsteps, 0);
  assert_int_equal(tbe_trace_top_ranges(t, top, 4), 3);
  assert_string_equal(tbe_trace_str(t, top[0].name), "iteration");
  assert_int_equal(top[0].count, 6);
  assert_string_equal(tbe_trace_str(t, top[1].name), "loader");
  assert_int_equal(top[1].count, 3);
  assert_string_equal(tbe_trace_str(t, top[2].name), "setup");
  assert_int_equal(top[2].count, 1);
  assert_int_equal(tbe_trace_top_ranges(t, top, 1), 1);
  assert_string_equal(tbe_trace_str(t, top[0].name), "iteration");
  assert_int_equal(tbe_trace_top_ranges(t, NULL, 0), 0);
  tbe_trace_free(t);
}

/* Allocation failures: an error with the steps unchanged, never a partial
 * replacement. */
static void test_steps_from_range_alloc(void **state) {
  (void)state;
  int succeeded = 0;
  for (long n = 0; n < 400 && !succeeded; n++) {
    tu_failalloc f;
    tbe_allocator al = tu_failalloc_init(&f, 1000000);
    tbe_trace *t = NULL;
    assert_int_equal(tbe_trace_create(&t, &al), 0);
    uint32_t th;
    assert_int_equal(tbe_trace_track(t, TBE_TRACK_THREAD, 1, 1, -1, &th), 0);
    for (int i = 0; i < 100; i++) range_ev(t, th, TBE_EV_NVTX_RANGE, "s", NULL, 10 * i, 5, 0, 0);
    range_ev(t, th, TBE_EV_NVTX_RANGE, "ProfilerStep#9", NULL, 5000, 5, 0, 0);
    assert_int_equal(tbe_trace_finish(t), 0);
    assert_int_equal(t->nsteps, 1);
    f.left = n; /* from here on, allocation n fails */
    int rc = tbe_trace_steps_from_range(t, "s", NULL);
    if (rc == 100) {
      succeeded = 1;
      assert_int_equal(t->nsteps, 100);
    } else {
      assert_int_equal(rc, TBE_ENOMEM);
      assert_int_equal(t->nsteps, 1);
      assert_int_equal(t->steps[0].num, 9);
    }
    tbe_trace_free(t);
    assert_int_equal(f.live, 0);
  }
  assert_true(succeeded);
}

/* Warnings are said once and kernel figures kept once per (name, device),
 * the last given winning, by maps that follow the public arrays: an
 * array shortened behind the model's back, or kernel names renamed by
 * finishing (demangled), are seen by the next call, as a scan of the
 * array would see them. */
static void test_warnings_and_figures_by_map(void **state) {
  (void)state;
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  for (int i = 0; i < 20000; i++) assert_int_equal(tbe_trace_warn(t, "line %d", i % 10000), 0);
  assert_int_equal(t->nwarnings, 10000);
  assert_string_equal(tbe_trace_str(t, t->warnings[9999]), "line 9999");
  t->nwarnings = 1; /* the caller cut the list: "line 1" is new again */
  assert_int_equal(tbe_trace_warn(t, "line %d", 1), 0);
  assert_int_equal(tbe_trace_warn(t, "line %d", 0), 0);
  assert_int_equal(t->nwarnings, 2);
  assert_string_equal(tbe_trace_str(t, t->warnings[1]), "line 1");

  tbe_str a = tbe_trace_str_id(t, "_Z4gemmi"), b = tbe_trace_str_id(t, "b");
  tbe_metric_value v = {tbe_trace_str_id(t, "sm_pct"), 0, 1.0};
  assert_int_equal(tbe_trace_add_kernel_metrics(t, a, 0, 1, &v, 1), 0);
  assert_int_equal(tbe_trace_add_kernel_metrics(t, b, 0, 1, &v, 1), 0);
  assert_int_equal(tbe_trace_add_kernel_metrics(t, a, 1, 1, &v, 1), 0);
  v.value = 2.0;
  assert_int_equal(tbe_trace_add_kernel_metrics(t, a, 0, 7, &v, 1), 0); /* replaces */
  assert_int_equal(t->nkernel_metrics, 3);
  assert_int_equal(t->kernel_metrics[0].launches, 7);
  assert_true(t->metric_values[t->kernel_metrics[0].first].value == 2.0);
  assert_int_equal(tbe_trace_finish(t), 0);
  tbe_str dem = t->kernel_metrics[0].name; /* "gemm(int)" now */
  assert_int_not_equal(dem, a);
  assert_string_equal(tbe_trace_str(t, dem), "gemm(int)");
  v.value = 3.0;
  assert_int_equal(tbe_trace_add_kernel_metrics(t, dem, 0, 9, &v, 1), 0);
  assert_int_equal(t->nkernel_metrics, 3);
  assert_int_equal(t->kernel_metrics[0].launches, 9);
  t->nkernel_metrics = 1; /* the caller cut the list: (b, 0) is new again */
  assert_int_equal(tbe_trace_add_kernel_metrics(t, b, 0, 4, &v, 1), 0);
  assert_int_equal(t->nkernel_metrics, 2);
  assert_int_equal(t->kernel_metrics[1].launches, 4);
  tbe_trace_free(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_intern),        cmocka_unit_test(test_tracks),
      cmocka_unit_test(test_finish),        cmocka_unit_test(test_bad_input),
      cmocka_unit_test(test_large_shuffle), cmocka_unit_test(test_alloc_failures),
      cmocka_unit_test(test_steps_from_range_nesting),
      cmocka_unit_test(test_steps_from_range_threads),
      cmocka_unit_test(test_steps_from_range_payload),
      cmocka_unit_test(test_steps_from_range_domains),
      cmocka_unit_test(test_top_ranges),
      cmocka_unit_test(test_steps_from_range_alloc),
      cmocka_unit_test(test_warnings_and_figures_by_map),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
