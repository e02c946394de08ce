/* test_pymem.c: the Python hook's memory file (src/import/spool_pymem.c).
 * What must hold: torch's microseconds land on the collector's clock
 * through the clock pair; each allocation and free is one [memory] event
 * of its block's size (the request rounded to 512 bytes, or the size at
 * exit of a block still allocated) with the totals after it computed
 * backward from the end state; a history that lost its beginning keeps
 * right totals and says so; a peak that differs from torch's by more
 * than 1% is said; JAX's samples are counters of their GPU.  What must
 * never happen: a bad file (every rule of the format broken once) doing
 * more than one warning that names the file and the byte, an event from a
 * bad file, a crash or an unbounded allocation on mutated input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <unistd.h>

#include "import/spool_pymem.h"
#include "tbexport/error.h"
#include "testutil.h"

#define W 1700000000000000000ll /* time.time_ns() in the pair */
#define C 5000000000000ll       /* the collector's clock then: another epoch */
#define US (W / 1000)           /* torch's microseconds at the pair's instant */

static tbe_trace *convert(const char *text) {
  tbe_trace *t = NULL;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  assert_int_equal(tbe__pymem_to_trace(text, strlen(text), "x/7.pymem", 7, t, NULL), 0);
  return t;
}

static size_t memory_events(const tbe_trace *t, const tbe_event **out, size_t max) {
  size_t n = 0;
  for (size_t i = 0; i < t->nevents; i++)
    if (t->events[i].kind == TBE_EV_MEMORY) {
      if (n < max) out[n] = &t->events[i];
      n++;
    }
  return n;
}

static int warned(const tbe_trace *t, const char *what) {
  for (size_t i = 0; i < t->nwarnings; i++)
    if (strstr(tbe_trace_str(t, t->warnings[i]), what)) return 1;
  return 0;
}

#define HEAD "tbexport-pymem 1\npid 7\nclock 1700000000000000000 5000000000000\ntorch 2.11\n"

/* 2 MiB segment, 1000 B (block 1024), 64 MiB segment and block (kept at
 * exit), the 1000 B freed: allocated 64 MiB at exit, peak 64 MiB + 1024. */
static const char good[] = HEAD
    "peak-reset 0\n"
    "device 0 67108864 69206016 67109888 69206016 1000\n"
    "b 9000000 67108864\n"
    "e segment_alloc 1700000000000010 1000000 2097152 0\n"
    "e alloc 1700000000000011 1000000 1000 0\n"
    "e segment_alloc 1700000000000020 9000000 67108864 0\n"
    "e alloc 1700000000000021 9000000 67108864 0\n"
    "e free_requested 1700000000000030 1000000 1000 0\n"
    "e free_completed 1700000000000031 1000000 1000 0\n"
    "e snapshot 1700000000000040 0 0 0\n"
    "end\n";

static void test_events_totals_clock(void **state) {
  (void)state;
  tbe_trace *t = convert(good);
  const tbe_event *e[8];
  assert_int_equal(memory_events(t, e, 8), 3);
  const int64_t bytes[3] = {1024, 67108864, -1024};
  const int64_t alloc[3] = {1024, 67108864 + 1024, 67108864};
  const int64_t resv[3] = {2097152, 69206016, 69206016};
  const int64_t us[3] = {1700000000000011, 1700000000000021, 1700000000000030};
  for (int i = 0; i < 3; i++) {
    const tbe_memory *m = tbe_trace_memory(t, e[i]);
    assert_non_null(m);
    assert_int_equal(m->bytes, bytes[i]);
    assert_int_equal(m->total_allocated, alloc[i]);
    assert_int_equal(m->total_reserved, resv[i]);
    assert_int_equal(m->device, 0);
    assert_int_equal(m->device_type, 1);
    assert_int_equal(m->source, TBE_MEMSRC_ALLOCATOR);
    assert_int_equal(e[i]->start_ns, C + (us[i] - US) * 1000);
    assert_string_equal(tbe_trace_str(t, e[i]->name), "[memory]");
    const tbe_track *tr = &t->tracks[e[i]->track];
    assert_int_equal(tr->type, TBE_TRACK_THREAD);
    assert_int_equal(tr->pid, 7);
    assert_int_equal(tr->tid, 7);
  }
  assert_int_equal(t->nwarnings, 0); /* the peak is torch's: no cross-check line */
  tbe_trace_free(t);
}

/* The ring lost its beginning (the first alloc of the block freed here is
 * gone): the totals are still the end state's, and a warning says so. */
static void test_truncated_history(void **state) {
  (void)state;
  tbe_trace *t = convert(HEAD
                         "device 0 2048 2097152 4096 2097152 3\n"
                         "b 1000000 1024\nb 1001024 1024\n"
                         "e free_requested 1700000000000010 1002048 2000 0\n"
                         "e free_completed 1700000000000011 1002048 2000 0\n"
                         "e alloc 1700000000000012 1001024 1024 0\n"
                         "end\n");
  const tbe_event *e[4];
  assert_int_equal(memory_events(t, e, 4), 2);
  assert_int_equal(tbe_trace_memory(t, e[0])->bytes, -2048);
  assert_int_equal(tbe_trace_memory(t, e[0])->total_allocated, 1024);
  assert_int_equal(tbe_trace_memory(t, e[1])->bytes, 1024);
  assert_int_equal(tbe_trace_memory(t, e[1])->total_allocated, 2048);
  assert_true(warned(t, "x/7.pymem: device 0: PyTorch's allocator history kept its last 3 events"));
  assert_int_equal(t->nwarnings, 1);
  tbe_trace_free(t);
}

static void test_peak_cross_check(void **state) {
  (void)state;
  /* torch says 2 MiB, the history 1024 bytes. */
  tbe_trace *t = convert(HEAD
                         "device 0 1024 2097152 2097152 2097152 1000\nb 1000000 1024\n"
                         "e alloc 1700000000000012 1000000 1000 0\nend\n");
  assert_true(warned(t,
                     "the peak allocated from PyTorch's allocator history, 1024 bytes, differs "
                     "from torch.cuda.max_memory_allocated(), 2097152 bytes, by more than 1%"));
  tbe_trace_free(t);
  /* the same after the program reset torch's peaks: no comparison */
  t = convert(HEAD
              "peak-reset 1\ndevice 0 1024 2097152 2097152 2097152 1000\nb 1000000 1024\n"
              "e alloc 1700000000000012 1000000 1000 0\nend\n");
  assert_int_equal(t->nwarnings, 0);
  tbe_trace_free(t);
  /* the program turned the history off (torch clears it then): said */
  t = convert(HEAD "device 0 1024 2097152 2097152 2097152 1000\nb 1000000 1024\nend\n");
  assert_true(warned(t, "x/7.pymem: device 0: PyTorch's allocator history was empty at exit"));
  assert_int_equal(memory_events(t, NULL, 0), 0);
  tbe_trace_free(t);
  /* a history that does not add up (it frees more than was ever there) */
  t = convert(HEAD "device 0 0 0 0 0 1000\ne alloc 1700000000000012 1000000 1000 0\nend\n");
  assert_true(warned(t, "does not add up"));
  const tbe_event *e[2];
  assert_int_equal(memory_events(t, e, 2), 1);
  assert_int_equal(tbe_trace_memory(t, e[0])->total_allocated, -1);
  tbe_trace_free(t);
}

static void test_jax_counters(void **state) {
  (void)state;
  tbe_trace *t = convert(HEAD
                         "jax 0 1700000000100000000 4096 8192 -1 1000000\n"
                         "jax 1 1700000000100000000 1 2 3 4\nend\n");
  size_t n = 0, in_use = 0;
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_event *e = &t->events[i];
    if (e->kind != TBE_EV_COUNTER) continue;
    n++;
    const tbe_track *tr = &t->tracks[e->track];
    assert_true(tbe_track_is_metric(tr));
    assert_int_equal(e->start_ns, C + 100000000);
    if (strcmp(tbe_trace_str(t, e->name), "JAX bytes in use") == 0 && tr->device == 0) {
      in_use++;
      assert_true(tbe_trace_counter(t, e)->value == 4096.0);
    }
  }
  assert_int_equal(n, 7); /* device 0 has no bytes_reserved */
  assert_int_equal(in_use, 1);
  tbe_trace_free(t);
}

/* Every rule broken once: one warning naming the file and the byte, no
 * event. */
static void test_bad_files(void **state) {
  (void)state;
  static const struct {
    const char *text, *why;
    size_t at;
  } bad[] = {
      {"", "not a tbexport-pymem file", 0},
      {"tbexport-pymem 2\nend\n", "a version this build does not read", 0},
      {"tbexport-pymem x\nend\n", "a bad version", 0},
      {"tbexport-pymem 1\ndevice 0 1 2 3 4 5\ne alloc 1 2 3 0\nend", "the file ends inside a line",
       52},
      {"tbexport-pymem 1\ndevice 0 1 2 3 4 5\ne alloc 1 2 3 0\n", "no end line (the file was cut)",
       52},
      {"tbexport-pymem 1\ndevice 0 1 2 3 4 5\ne alloc 1 2x 3 0\nend\n", "a bad entry line", 36},
      {"tbexport-pymem 1\ne alloc 1 2 3 0\nend\n", "a block or entry before its device line", 17},
      {"tbexport-pymem 1\ndevice 0 1 2 3 4\nend\n", "a bad device line", 17},
      {"tbexport-pymem 1\ndevice 0 -5 2 3 4 5\nend\n", "a device figure out of range", 17},
      {"tbexport-pymem 1\ndevice 0 1 2 3 4 5\nb 1 0\nend\n", "a bad block line", 36},
      {"tbexport-pymem 1\nclock 1 99999999999999999999\nend\n", "a bad clock line", 17},
      {"tbexport-pymem 1\njax 0 0 1 2 3 4\nend\n", "a bad jax line", 17},
      {"tbexport-pymem 1\n\nend\n", "an empty line", 17},
      {"tbexport-pymem 1\nend\nmore\n", "text after end", 21},
      {"tbexport-pymem 1\nend x\n", "text after end", 17},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    tbe_trace *t = convert(bad[i].text);
    char want[200];
    snprintf(want, sizeof want, "x/7.pymem: byte %zu: %s;", bad[i].at, bad[i].why);
    if (t->nwarnings != 1 || !warned(t, want))
      fail_msg("case %zu: want '%s', have %zu warnings: %s", i, want, t->nwarnings,
               t->nwarnings ? tbe_trace_str(t, t->warnings[0]) : "");
    assert_int_equal(t->nevents, 0);
    tbe_trace_free(t);
  }
  /* a line longer than any of ours */
  char *big = malloc(10000);
  assert_non_null(big);
  strcpy(big, "tbexport-pymem 1\ntorch ");
  memset(big + strlen(big), 'a', 5000);
  strcpy(big + 23 + 5000, "\nend\n");
  tbe_trace *t = convert(big);
  assert_true(warned(t, "x/7.pymem: byte 17: a line too long"));
  tbe_trace_free(t);
  free(big);
}

/* Mutations of the good file: any outcome but a crash, a leak (ASan) or an
 * error code. */
static void test_mutations(void **state) {
  (void)state;
  size_t n = sizeof good - 1;
  char *buf = malloc(n + 1);
  assert_non_null(buf);
  uint32_t seed = 12345;
  static const char alphabet[] = "0123456789- \nabe-";
  for (int round = 0; round < 2000; round++) {
    memcpy(buf, good, n + 1);
    for (int k = 0; k < 1 + round % 4; k++) {
      seed = seed * 1103515245u + 12345u;
      size_t at = (seed >> 8) % n;
      seed = seed * 1103515245u + 12345u;
      buf[at] = alphabet[(seed >> 8) % (sizeof alphabet - 1)];
    }
    size_t len = round % 7 == 0 ? (seed >> 4) % n : n;
    tbe_trace *t = NULL;
    assert_int_equal(tbe_trace_create(&t, NULL), 0);
    assert_int_equal(tbe__pymem_to_trace(buf, len, "m", 7, t, NULL), 0);
    assert_int_equal(tbe_trace_finish(t), 0);
    tbe_trace_free(t);
  }
  free(buf);
}

/* The file read from a folder: none is nothing; one is read. */
static void test_file(void **state) {
  (void)state;
  char dir[] = "/tmp/tbe_pymem_XXXXXX";
  assert_non_null(mkdtemp(dir));
  tbe_trace *t = NULL;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  assert_int_equal(tbe__pymem_file_to_trace(dir, 7, t, NULL), 0);
  assert_int_equal(t->nevents + t->nwarnings, 0);
  char path[300];
  snprintf(path, sizeof path, "%s/7.pymem", dir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(good, f);
  fclose(f);
  assert_int_equal(tbe__pymem_file_to_trace(dir, 7, t, NULL), 0);
  const tbe_event *e[4];
  assert_int_equal(memory_events(t, e, 4), 3);
  tbe_trace_free(t);
  unlink(path);
  rmdir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_events_totals_clock),
      cmocka_unit_test(test_truncated_history),
      cmocka_unit_test(test_peak_cross_check),
      cmocka_unit_test(test_jax_counters),
      cmocka_unit_test(test_bad_files),
      cmocka_unit_test(test_mutations),
      cmocka_unit_test(test_file),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
