/* stress_writer_load.c: many threads writing to one tbe_writer (issue 6,
 * "Load and concurrency").
 *
 * T threads (default 16; argv[1] or $TBE_STRESS_THREADS) each add N scalars
 * (default 1,000,000; argv[2] or $TBE_STRESS_EVENTS) to one shared writer:
 * tag "t<thread>", step = the thread's own sequence number, value = that
 * number.  A further thread calls tbe_writer_flush every millisecond (every
 * 64th durable) while they run, so flushes race with appends.  All threads
 * start together (a barrier).  Then the file is read back with the public
 * reader and checked: every record is intact (no checksum error: records
 * were not interleaved), each holds exactly one value of a known thread,
 * each thread's steps come in order 0, 1, 2, ... without gap or repeat,
 * and every thread has all N.  Prints write and read rates.  The file goes
 * to $TMPDIR and is removed afterwards.  Under ThreadSanitizer run it with
 * fewer events (e.g. TBE_STRESS_EVENTS=20000). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "stress_util.h"
#include "tbexport/error.h"
#include "tbexport/reader.h"
#include "tbexport/writer.h"

#define MAX_THREADS 256

static tbe_writer *W;
static long N;
static pthread_barrier_t start;
static atomic_int writers_done;
static atomic_int errors;

static void *writer_main(void *arg) {
  int id = (int)(intptr_t)arg;
  char tag[16];
  snprintf(tag, sizeof tag, "t%02d", id);
  pthread_barrier_wait(&start);
  for (long i = 0; i < N; i++) {
    int rc = tbe_writer_add_scalar(W, tag, (double)(i & 0xffffff), i, 1.5e9 + (double)i);
    if (rc) {
      fprintf(stderr, "thread %d: event %ld: %s\n", id, i, tbe_strerror(rc));
      atomic_fetch_add(&errors, 1);
      break;
    }
  }
  atomic_fetch_add(&writers_done, 1);
  return NULL;
}

static int nthreads;

static void *flusher_main(void *arg) {
  (void)arg;
  pthread_barrier_wait(&start);
  unsigned n = 0;
  while (atomic_load(&writers_done) < nthreads) {
    int rc = tbe_writer_flush(W, ++n % 64 == 0);
    if (rc) {
      fprintf(stderr, "flusher: %s\n", tbe_strerror(rc));
      atomic_fetch_add(&errors, 1);
      break;
    }
    st_sleep_us(1000);
  }
  return NULL;
}

int main(int argc, char **argv) {
  nthreads = (int)(argc > 1 ? atol(argv[1]) : st_env_long("TBE_STRESS_THREADS", 16));
  N = argc > 2 ? atol(argv[2]) : st_env_long("TBE_STRESS_EVENTS", 1000000);
  if (nthreads < 1 || nthreads > MAX_THREADS || N < 1) {
    fprintf(stderr, "usage: stress_writer_load [THREADS (1..%d) [EVENTS_PER_THREAD]]\n",
            MAX_THREADS);
    return 2;
  }
  printf("stress_writer_load: %d threads x %ld scalars into one writer\n", nthreads, N);
  char *dir = st_mkdtemp("tbe-writer-load");
  tbe_writer_options o;
  tbe_writer_options_init(&o);
  o.host = "stress";
  int rc = tbe_writer_open(&W, dir, &o);
  if (rc) {
    fprintf(stderr, "open %s: %s\n", dir, tbe_strerror(rc));
    return 2;
  }
  char *path = strdup(tbe_writer_path(W));
  pthread_barrier_init(&start, NULL, (unsigned)nthreads + 2);
  pthread_t th[MAX_THREADS], fl;
  for (int i = 0; i < nthreads; i++)
    if (pthread_create(&th[i], NULL, writer_main, (void *)(intptr_t)i) != 0) {
      fprintf(stderr, "pthread_create failed\n");
      return 2;
    }
  if (pthread_create(&fl, NULL, flusher_main, NULL) != 0) return 2;
  double t0 = st_now();
  pthread_barrier_wait(&start);
  for (int i = 0; i < nthreads; i++) pthread_join(th[i], NULL);
  pthread_join(fl, NULL);
  rc = tbe_writer_close(W);
  double tw = st_now() - t0;
  if (rc) st_fail("close: %s", tbe_strerror(rc));
  if (atomic_load(&errors)) st_fail("%d writing thread(s) failed", atomic_load(&errors));
  pthread_barrier_destroy(&start);
  struct stat st;
  long long bytes = stat(path, &st) == 0 ? (long long)st.st_size : -1;

  /* Read back. */
  long long *next = calloc((size_t)nthreads, sizeof *next);
  unsigned long long total = 0, bad = 0;
  double t1 = st_now();
  tbe_reader *r;
  rc = tbe_reader_open(&r, path, 0, NULL);
  if (rc) {
    st_fail("reader open %s: %s", path, tbe_strerror(rc));
  } else {
    int first = 1;
    for (;;) {
      const tbe_tb_event *ev;
      rc = tbe_reader_next(r, &ev);
      if (rc == 0) break;
      if (rc < 0) {
        tbe_reader_error_info info;
        tbe_reader_error(r, &info);
        st_fail("record at offset %llu: %s (%s)", (unsigned long long)info.offset,
                info.message ? info.message : "", tbe_strerror(rc));
        break;
      }
      if (first) {
        first = 0;
        if (ev->kind != TBE_TB_FILE_VERSION) st_fail("first record is not the file version");
        continue;
      }
      const tbe_summary_value *v = ev->values;
      int id = -1;
      if (ev->kind == TBE_TB_SUMMARY && ev->nvalues == 1 && v->type == TBE_VALUE_SIMPLE &&
          v->tag[0] == 't' && strlen(v->tag) >= 3)
        id = atoi(v->tag + 1);
      if (id < 0 || id >= nthreads) {
        if (bad++ < 5) st_fail("record at offset %llu is not one of ours", (unsigned long long)ev->offset);
        continue;
      }
      if (ev->step != next[id] || v->simple_value != (float)(ev->step & 0xffffff) ||
          ev->wall_time != 1.5e9 + (double)ev->step) {
        if (bad++ < 5)
          st_fail("thread %d: record at offset %llu has step %lld, want %lld (lost, duplicated "
                  "or out of order)",
                  id, (unsigned long long)ev->offset, (long long)ev->step, next[id]);
        if (ev->step >= next[id]) next[id] = ev->step + 1;
        continue;
      }
      next[id]++;
      total++;
    }
    tbe_reader_close(r);
  }
  double tr = st_now() - t1;
  for (int i = 0; i < nthreads; i++)
    if (next[i] != N) st_fail("thread %d: %lld of %ld events read back", i, next[i], N);
  printf("written: %d x %ld = %llu events, %lld bytes in %.2f s (%.2f M events/s)\n", nthreads, N,
         (unsigned long long)nthreads * (unsigned long long)N, bytes, tw,
         (double)nthreads * (double)N / tw / 1e6);
  printf("read back: %llu events in order, %llu bad, in %.2f s (%.2f M events/s)\n", total, bad,
         tr, (double)total / tr / 1e6);
  printf("lost: %llu, failures: %lu\n",
         (unsigned long long)nthreads * (unsigned long long)N - total, st_failures);
  free(next);
  st_rmtree(dir);
  free(dir);
  free(path);
  return st_failures ? 1 : 0;
}
