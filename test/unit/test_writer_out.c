/* test_writer_out.c: the event writer on a caller's output
 * (tbe__writer_open_out, events/writer_internal.h), as the exporter's sink
 * uses it.
 *
 * What must never happen: a write call that holds part of a record (the
 * output gets whole records, one call per flush); bytes that differ from
 * what the writer puts in a file of its own; a record reaching the output
 * after its first failure (the error is sticky, and finish returns it); a
 * write from a fork child; an output closed or synced behind the caller's
 * back, or a file or directory made beside it; a leak when memory runs
 * out while opening.  Threads may share the writer (no record interleaved
 * or lost). */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "events/tfrecord.h"
#include "events/writer_internal.h"
#include "tbexport.h"
#include "tensorboard/event.pb-c.h"
#include "testutil.h"

/* ---- a memory output ---- */

typedef struct memout {
  pthread_mutex_t mu; /* the writer calls under its own mutex: this checks it */
  int inside;         /* a write in progress (two at once: a race) */
  uint8_t *data;
  size_t len;
  long writes, syncs, records;
  long fail_write_at; /* the k-th write fails (0: none) */
  int fail_rc;
  long fail_sync_at;
  int bad; /* a call broke a rule (checked by the test's thread) */
} memout;

/* The records of a chunk, or -1 when it is not a sequence of complete,
 * checksummed records. */
static long count_records(const uint8_t *p, size_t n) {
  long k = 0;
  size_t o = 0;
  while (o < n) {
    uint64_t len;
    uint32_t g, wnt;
    if (tbe__tfr_check(p + o, n - o, &len, &g, &wnt) != TBE__TFR_OK) return -1;
    o += (size_t)len + TBE__TFR_OVERHEAD;
    k++;
  }
  return k;
}

/* Called from the writer's threads: no cmocka assertion here. */
static int mem_write(void *ctx, const void *p, size_t n) {
  memout *m = ctx;
  pthread_mutex_lock(&m->mu);
  if (m->inside++) m->bad = 1;
  pthread_mutex_unlock(&m->mu);
  int rc = 0;
  long k = count_records(p, n);
  if (++m->writes == m->fail_write_at) {
    rc = m->fail_rc;
  } else if (n == 0 || k < 0 || !(m->data = realloc(m->data, m->len + n))) {
    m->bad = 1;
  } else {
    m->records += k;
    memcpy(m->data + m->len, p, n);
    m->len += n;
  }
  pthread_mutex_lock(&m->mu);
  m->inside--;
  pthread_mutex_unlock(&m->mu);
  return rc;
}

static int mem_sync(void *ctx) {
  memout *m = ctx;
  return ++m->syncs == m->fail_sync_at ? -EIO : 0;
}

static void mem_init(memout *m) {
  memset(m, 0, sizeof *m);
  pthread_mutex_init(&m->mu, NULL);
}

static void mem_free(memout *m) {
  assert_int_equal(m->bad, 0);
  free(m->data);
  pthread_mutex_destroy(&m->mu);
}

static tbe_writer *open_mem(memout *m, double interval, int durable, double version_wall) {
  tbe__writer_out to = {mem_write, mem_sync, m};
  tbe_writer_options o;
  tbe_writer_options_init(&o);
  o.flush_interval_s = interval;
  o.durable = durable;
  tbe_writer *w = NULL;
  assert_int_equal(tbe__writer_open_out(&w, &to, "summary", &o, version_wall), 0);
  return w;
}

/* The records every kind of add_* writes, at fixed wall times. */
static void add_all(tbe_writer *w) {
  double v[4] = {1, 2, 3, 5};
  uint8_t lab[3] = {0, 1, 1}, px[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  float pr[3] = {0.2f, 0.7f, 0.9f};
  const char *tags[] = {"loss"};
  tbe_chart ch = {"c", 0, tags, 1};
  tbe_category cat = {"k", &ch, 1, 0};
  tbe_hparam hp = {"lr", TBE_HPARAM_NUMBER, 0.1, NULL, 0};
  tbe_metric me = {"acc", 0.5};
  for (int s = 0; s < 50; s++)
    assert_int_equal(tbe_writer_add_scalar(w, "loss", 1.0 / (s + 1), s, 1700000000.0 + s), 0);
  assert_int_equal(tbe_writer_add_scalar_described(w, "d", 2, 0, 1700000001.0, "D", "a d"), 0);
  assert_int_equal(tbe_writer_add_histogram(w, "h", v, 4, 1, 1700000002.0), 0);
  assert_int_equal(tbe_writer_add_text_described(w, "t", "*x*", 1, 1700000003.0, "why"), 0);
  assert_int_equal(tbe_writer_add_image(w, "i", px, sizeof px, 2, 2, 3, 1, 1700000004.0), 0);
  assert_int_equal(tbe_writer_add_pr_curve(w, "p", lab, pr, 3, 5, 1, 1700000005.0), 0);
  assert_int_equal(tbe__writer_layout_at(w, &cat, 1, 1700000006.0), 0);
  assert_int_equal(tbe__writer_hparams_session(w, &hp, 1, &me, 1, NULL, 5, 0, 1700000007.0), 0);
}

/* ---- the same bytes as a file of its own ---- */

static void test_out_same_bytes(void **state) {
  (void)state;
  memout m;
  mem_init(&m);
  tbe_writer *w = open_mem(&m, 3600, 0, 0.0);
  assert_string_equal(tbe_writer_path(w), "summary");
  assert_int_equal(m.writes, 1); /* the file_version record, at once */
  add_all(w);
  assert_int_equal(tbe_writer_finish(w), 0);
  assert_int_equal(tbe_writer_add_scalar(w, "x", 1, 0, 1), TBE_ECLOSED);
  assert_int_equal(tbe_writer_close(w), 0);

  char *dir = tu_mkdtemp();
  tbe_writer_options o;
  tbe_writer_options_init(&o);
  o.flush_interval_s = 3600;
  assert_int_equal(tbe_writer_open(&w, dir, &o), 0);
  char *path = strdup(tbe_writer_path(w));
  add_all(w);
  assert_int_equal(tbe_writer_close(w), 0);
  size_t flen;
  uint8_t *file = tu_read_file(path, &flen);
  assert_non_null(file);
  /* after the first record (its wall time is now in the file) byte for
   * byte, framing included */
  uint64_t l0, l1;
  uint32_t g, wnt;
  assert_int_equal(tbe__tfr_check(m.data, m.len, &l0, &g, &wnt), TBE__TFR_OK);
  assert_int_equal(tbe__tfr_check(file, flen, &l1, &g, &wnt), TBE__TFR_OK);
  size_t r0 = (size_t)l0 + TBE__TFR_OVERHEAD, r1 = (size_t)l1 + TBE__TFR_OVERHEAD;
  assert_int_equal(m.len - r0, flen - r1);
  assert_memory_equal(m.data + r0, file + r1, flen - r1);
  /* file_version, 50 scalars, 6 summaries, session start and end, metric */
  assert_int_equal(m.records, 1 + 50 + 6 + 3);
  /* the first record: file_version at the wall time asked for */
  Tensorboard__Event *ev = tensorboard__event__unpack(NULL, (size_t)l0, m.data + 12);
  assert_non_null(ev);
  assert_int_equal(ev->what_case, TENSORBOARD__EVENT__WHAT_FILE_VERSION);
  assert_string_equal(ev->file_version, "brain.Event:2");
  assert_true(ev->wall_time == 0.0);
  tensorboard__event__free_unpacked(ev, NULL);
  /* no file, no directory beside it: only the file writer's one file */
  assert_int_equal(tu_count_files(dir), 1);
  assert_int_equal(m.syncs, 0); /* not durable: never synced */
  free(file);
  free(path);
  tu_rmrf(dir);
  free(dir);
  mem_free(&m);
}

/* ---- one write per flush, durable flushes synced ---- */

static void test_out_flushes(void **state) {
  (void)state;
  memout m;
  mem_init(&m);
  tbe_writer *w = open_mem(&m, 3600, 0, 1.0);
  for (int i = 0; i < 10; i++) assert_int_equal(tbe_writer_add_scalar(w, "a", i, i, 2), 0);
  assert_int_equal(m.writes, 1); /* buffered */
  assert_int_equal(tbe_writer_flush(w, 0), 0);
  assert_int_equal(m.writes, 2); /* ten records, one call */
  assert_int_equal(m.records, 11);
  assert_int_equal(m.syncs, 0);
  assert_int_equal(tbe_writer_flush(w, 1), 0); /* nothing buffered: a sync only */
  assert_int_equal(m.writes, 2);
  assert_int_equal(m.syncs, 1);
  assert_int_equal(tbe_writer_close(w), 0);
  mem_free(&m);

  /* interval 0: each record its own write; durable: each synced */
  mem_init(&m);
  w = open_mem(&m, 0, 1, -1.0);
  long s0 = m.syncs; /* the file_version record synced before open returns */
  assert_true(s0 >= 1);
  for (int i = 0; i < 5; i++) assert_int_equal(tbe_writer_add_text(w, "t", "x", i, 2), 0);
  assert_int_equal(m.writes, 6);
  assert_int_equal(m.records, 6);
  assert_int_equal(m.syncs, s0 + 5);
  assert_int_equal(tbe_writer_close(w), 0);
  mem_free(&m);
}

/* ---- the first failure is sticky ---- */

static void test_out_sticky(void **state) {
  (void)state;
  memout m;
  mem_init(&m);
  m.fail_write_at = 2;
  m.fail_rc = -ENOSPC;
  tbe_writer *w = open_mem(&m, 3600, 0, 0.0);
  size_t len0 = m.len;
  assert_int_equal(tbe_writer_add_scalar(w, "a", 1, 0, 1), 0);
  assert_int_equal(tbe_writer_flush(w, 0), -ENOSPC);
  assert_int_equal(tbe_writer_add_scalar(w, "a", 1, 1, 1), -ENOSPC);
  assert_int_equal(tbe_writer_add_histogram(w, "h", (double[]){1}, 1, 1, 1), -ENOSPC);
  assert_int_equal(tbe_writer_flush(w, 1), -ENOSPC);
  assert_int_equal(tbe_writer_finish(w), -ENOSPC);
  assert_int_equal(tbe_writer_close(w), -ENOSPC);
  assert_int_equal(m.writes, 2); /* nothing after the failure */
  assert_int_equal(m.len, len0);
  assert_int_equal(m.syncs, 0);
  mem_free(&m);

  /* a failed sync too */
  mem_init(&m);
  m.fail_sync_at = 1;
  tbe__writer_out to = {mem_write, mem_sync, &m};
  tbe_writer_options o;
  tbe_writer_options_init(&o);
  o.durable = 1;
  w = NULL;
  assert_int_equal(tbe__writer_open_out(&w, &to, "s", &o, 0.0), -EIO);
  assert_null(w);
  mem_free(&m);
  mem_init(&m);
  m.fail_sync_at = 2;
  w = open_mem(&m, 3600, 0, 0.0);
  assert_int_equal(tbe_writer_flush(w, 1), 0);
  assert_int_equal(tbe_writer_add_scalar(w, "a", 1, 0, 1), 0);
  assert_int_equal(tbe_writer_flush(w, 1), -EIO);
  assert_int_equal(tbe_writer_add_scalar(w, "a", 1, 0, 1), -EIO);
  assert_int_equal(tbe_writer_close(w), -EIO);
  mem_free(&m);
}

/* ---- what a writer without a directory refuses ---- */

static void test_out_no_directory(void **state) {
  (void)state;
  memout m;
  mem_init(&m);
  tbe_writer *w = NULL;
  tbe__writer_out none = {NULL, NULL, &m};
  assert_int_equal(tbe__writer_open_out(&w, &none, "s", NULL, 0.0), TBE_EINVAL);
  assert_int_equal(tbe__writer_open_out(&w, NULL, "s", NULL, 0.0), TBE_EINVAL);
  tbe__writer_out to = {mem_write, NULL, &m};
  assert_int_equal(tbe__writer_open_out(&w, &to, NULL, NULL, 0.0), TBE_EINVAL);
  assert_int_equal(tbe__writer_open_out(NULL, &to, "s", NULL, 0.0), TBE_EINVAL);
  assert_int_equal(m.writes, 0);
  assert_int_equal(tbe__writer_open_out(&w, &to, "s", NULL, 0.0), 0);
  /* a sub-run beside a file it does not have: refused, nothing made */
  char *cwd = getcwd(NULL, 0);
  char *dir = tu_mkdtemp();
  assert_int_equal(chdir(dir), 0);
  tbe_hparam hp = {"lr", TBE_HPARAM_NUMBER, 0.1, NULL, 0};
  assert_int_equal(tbe_writer_add_hparams(w, &hp, 1, NULL, 0, "sub", 0, 1), TBE_ESTATE);
  assert_int_equal(chdir(cwd), 0);
  assert_int_equal(tu_count_files(dir), 0);
  /* no descriptor to replace (nor is `fd` taken) */
  int fd = dup(1);
  assert_int_equal(tbe__writer_replace_fd(w, fd), TBE_EINVAL);
  assert_int_equal(close(fd), 0);
  /* still writing; a sync without a sync function is nothing to do */
  assert_int_equal(tbe_writer_add_scalar(w, "a", 1, 0, 1), 0);
  assert_int_equal(tbe_writer_flush(w, 1), 0);
  assert_int_equal(m.records, 2);
  assert_int_equal(tbe_writer_close(w), 0);
  free(cwd);
  tu_rmrf(dir);
  free(dir);
  mem_free(&m);
}

/* ---- fork: a child never writes the parent's records ---- */

static void test_out_fork(void **state) {
  (void)state;
  memout m;
  mem_init(&m);
  tbe_writer *w = open_mem(&m, 3600, 0, 0.0);
  assert_int_equal(tbe_writer_add_scalar(w, "a", 1, 0, 1), 0); /* buffered */
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    int bad = tbe_writer_add_scalar(w, "a", 2, 1, 1) != TBE_ESTATE ||
              tbe_writer_flush(w, 0) != TBE_ESTATE || tbe_writer_close(w) != TBE_ESTATE ||
              m.writes != 1;
    _exit(bad ? 1 : 0);
  }
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 0);
  assert_int_equal(tbe_writer_close(w), 0); /* the parent writes its record */
  assert_int_equal(m.writes, 2);
  assert_int_equal(m.records, 2);
  mem_free(&m);
}

/* ---- threads ---- */

#define NTHREADS 8
#define PER_THREAD 2000

static void *adder(void *arg) {
  tbe_writer *w = arg;
  for (int i = 0; i < PER_THREAD; i++)
    if (tbe_writer_add_scalar(w, "t", i, i, 1) != 0) return (void *)1;
  return NULL;
}

static void test_out_threads(void **state) {
  (void)state;
  memout m;
  mem_init(&m);
  tbe__writer_out to = {mem_write, NULL, &m};
  tbe_writer_options o;
  tbe_writer_options_init(&o);
  o.buffer_size = 1000; /* many flushes from every thread */
  tbe_writer *w = NULL;
  assert_int_equal(tbe__writer_open_out(&w, &to, "s", &o, 0.0), 0);
  pthread_t th[NTHREADS];
  for (int i = 0; i < NTHREADS; i++) assert_int_equal(pthread_create(&th[i], NULL, adder, w), 0);
  for (int i = 0; i < NTHREADS; i++) {
    void *r;
    assert_int_equal(pthread_join(th[i], &r), 0);
    assert_null(r);
  }
  assert_int_equal(tbe_writer_close(w), 0);
  assert_int_equal(m.records, 1 + NTHREADS * PER_THREAD);
  assert_true(m.writes > 100);
  assert_int_equal(count_records(m.data, m.len), m.records);
  mem_free(&m);
}

/* ---- out of memory while opening ---- */

static int open_out_run(const tbe_allocator *a, void *ctx) {
  memout *m = ctx;
  tbe__writer_out to = {mem_write, NULL, m};
  tbe_writer_options o;
  tbe_writer_options_init(&o);
  o.allocator = a;
  tbe_writer *w = NULL;
  int rc = tbe__writer_open_out(&w, &to, "summary", &o, 0.0);
  if (rc) {
    assert_null(w);
    return rc;
  }
  rc = tbe_writer_add_text(w, "t", "x", 0, 1);
  int crc = tbe_writer_close(w);
  return rc ? rc : crc;
}

static void test_out_alloc(void **state) {
  (void)state;
  memout m;
  mem_init(&m);
  long failed = tu_alloc_sweep(open_out_run, &m, 64);
  print_message("writer on an output: %ld allocation failures, each TBE_ENOMEM, no leak\n", failed);
  mem_free(&m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_out_same_bytes), cmocka_unit_test(test_out_flushes),
      cmocka_unit_test(test_out_sticky),     cmocka_unit_test(test_out_no_directory),
      cmocka_unit_test(test_out_fork),       cmocka_unit_test(test_out_threads),
      cmocka_unit_test(test_out_alloc),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
