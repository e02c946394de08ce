/* stress_writer_kill.c: SIGKILL at random moments while a process writes
 * TensorBoard events as fast as it can (issue 6, "SIGKILL").
 *
 * For each of N kills (default 200; argv[1] or $TBE_STRESS_KILLS) the parent
 * forks a child that opens a tbe_writer in a fresh run directory and writes
 * events in a tight loop: scalars (tag "s", value = sequence number), every
 * 101st a text (tag "note") and every 257th a histogram (tag "h"), step =
 * the event's sequence number.  Every `flush_every` events (random per
 * child) it calls tbe_writer_flush (every 50th durable) and, once that
 * returned 0, reports the count through a pipe.  Writer options are drawn
 * per child too (flush interval 0 / 2 ms / 1 s, buffer 512 B / 8 KiB /
 * 256 KiB), so kills land inside single-record writes, partial buffers and
 * fsyncs alike.  The parent kills the child after a random 0-50 ms (the
 * first four after 0, 0.3, 0.6 and 0.9 ms: inside tbe_writer_open; seeded:
 * the seed is printed, $TBE_STRESS_SEED replays a run), then reads the run
 * with the public reader and checks:
 *   - the file reads cleanly: no checksum or parse error; at most one
 *     TBE_ETRUNCATED, and only at the very end;
 *   - the events are exactly 0, 1, 2, ... k-1 (in order, none duplicated or
 *     missing), each with the kind, tag and value its number implies;
 *   - k >= the count the child acknowledged before it died.
 * Prints kills, events acknowledged and recovered, and torn tails seen.
 * Exit 0 when every check passed. */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "stress_util.h"
#include "tbexport/error.h"
#include "tbexport/reader.h"
#include "tbexport/writer.h"

typedef enum { K_SCALAR, K_TEXT, K_HISTO } kind;

static kind kind_of(uint64_t seq) {
  if (seq % 101 == 0) return K_TEXT;
  if (seq % 257 == 5) return K_HISTO;
  return K_SCALAR;
}

static double scalar_of(uint64_t seq) { return (double)(seq & 0xffffffu); }

typedef struct plan {
  double flush_interval;
  size_t buffer_size;
  unsigned flush_every;
  uint64_t delay_us;
} plan;

/* The child: writes until killed.  Exits non-zero only on an error. */
static void child(const char *dir, const plan *p, int ack_fd) {
  tbe_writer_options o;
  tbe_writer_options_init(&o);
  o.flush_interval_s = p->flush_interval;
  o.buffer_size = p->buffer_size;
  o.host = "stress";
  tbe_writer *w;
  int rc = tbe_writer_open(&w, dir, &o);
  if (rc) {
    fprintf(stderr, "child: open %s: %s\n", dir, tbe_strerror(rc));
    _exit(3);
  }
  uint64_t nflush = 0;
  for (uint64_t seq = 0;; seq++) {
    switch (kind_of(seq)) {
      case K_SCALAR: rc = tbe_writer_add_scalar(w, "s", scalar_of(seq), (int64_t)seq, 1.5e9); break;
      case K_TEXT: {
        char text[64];
        snprintf(text, sizeof text, "event %llu", (unsigned long long)seq);
        rc = tbe_writer_add_text(w, "note", text, (int64_t)seq, 1.5e9);
        break;
      }
      case K_HISTO: {
        double v[3] = {(double)seq, (double)seq + 1, (double)seq * 0.5};
        rc = tbe_writer_add_histogram(w, "h", v, 3, (int64_t)seq, 1.5e9);
        break;
      }
    }
    if (rc) {
      fprintf(stderr, "child: event %llu: %s\n", (unsigned long long)seq, tbe_strerror(rc));
      _exit(3);
    }
    if ((seq + 1) % p->flush_every == 0) {
      rc = tbe_writer_flush(w, ++nflush % 50 == 0);
      if (rc) {
        fprintf(stderr, "child: flush: %s\n", tbe_strerror(rc));
        _exit(3);
      }
      st_ack(ack_fd, seq + 1);
    }
  }
}

typedef struct child_args {
  const char *dir;
  const plan *p;
} child_args;

static void child_main(void *ctx, int ack_fd) {
  const child_args *a = ctx;
  child(a->dir, a->p, ack_fd);
}

/* Checks one event against what sequence number `seq` must hold. */
static int event_ok(const tbe_tb_event *ev, uint64_t seq) {
  if (ev->kind != TBE_TB_SUMMARY || ev->nvalues != 1 || ev->step != (int64_t)seq) return 0;
  const tbe_summary_value *v = &ev->values[0];
  switch (kind_of(seq)) {
    case K_SCALAR:
      return strcmp(v->tag, "s") == 0 && v->type == TBE_VALUE_SIMPLE &&
             v->simple_value == (float)scalar_of(seq);
    case K_TEXT: {
      char text[64];
      int n = snprintf(text, sizeof text, "event %llu", (unsigned long long)seq);
      return strcmp(v->tag, "note/text_summary") == 0 && v->type == TBE_VALUE_TENSOR &&
             v->tensor.nstrings == 1 && v->tensor.strings[0].size == (size_t)n &&
             memcmp(v->tensor.strings[0].data, text, (size_t)n) == 0;
    }
    case K_HISTO:
      return strcmp(v->tag, "h") == 0 && v->type == TBE_VALUE_HISTO && v->histo.num == 3 &&
             v->histo.max == (double)seq + 1 && v->histo.min == (double)seq * 0.5;
  }
  return 0;
}

/* Reads the run; returns the number of events (0, 1, ... k-1) or -1 after
 * reporting a failure.  Counts a torn tail in *torn. */
static long long check_run(const char *dir, int kill_no, unsigned long *torn) {
  tbe_reader *r;
  int rc = tbe_reader_open(&r, dir, 0, NULL);
  if (rc) {
    st_fail("kill %d: cannot open %s: %s", kill_no, dir, tbe_strerror(rc));
    return -1;
  }
  if (tbe_reader_file_count(r) > 1) {
    st_fail("kill %d: %zu event files, want at most 1", kill_no, tbe_reader_file_count(r));
    tbe_reader_close(r);
    return -1;
  }
  uint64_t next = 0;
  int saw_version = 0, truncated = 0;
  long long res = -1;
  for (;;) {
    const tbe_tb_event *ev;
    rc = tbe_reader_next(r, &ev);
    if (rc == 0) {
      res = (long long)next;
      break;
    }
    if (rc == TBE_ETRUNCATED) {
      if (truncated) {
        st_fail("kill %d: truncation reported twice", kill_no);
        break;
      }
      truncated = 1;
      continue; /* the next call must say "nothing more" */
    }
    if (rc < 0) {
      tbe_reader_error_info info;
      tbe_reader_error(r, &info);
      st_fail("kill %d: %s at offset %llu: %s (%s)", kill_no, info.path ? info.path : dir,
              (unsigned long long)info.offset, info.message ? info.message : "",
              tbe_strerror(rc));
      break;
    }
    if (truncated) {
      st_fail("kill %d: an event after the torn record", kill_no);
      break;
    }
    if (!saw_version) {
      if (ev->kind != TBE_TB_FILE_VERSION || !ev->file_version ||
          strcmp(ev->file_version, "brain.Event:2") != 0) {
        st_fail("kill %d: first record is not the file version", kill_no);
        break;
      }
      saw_version = 1;
      continue;
    }
    if (!event_ok(ev, next)) {
      st_fail("kill %d: record at offset %llu is not event %llu (step %lld)", kill_no,
              (unsigned long long)ev->offset, (unsigned long long)next, (long long)ev->step);
      break;
    }
    next++;
  }
  tbe_reader_close(r);
  if (res >= 0 && truncated) (*torn)++;
  return res;
}

int main(int argc, char **argv) {
  long kills = argc > 1 ? atol(argv[1]) : st_env_long("TBE_STRESS_KILLS", 200);
  if (kills <= 0) kills = 200;
  uint64_t seed = st_seed();
  st_rng rng = {seed};
  printf("stress_writer_kill: %ld kills, seed %llu (TBE_STRESS_SEED=%llu replays)\n", kills,
         (unsigned long long)seed, (unsigned long long)seed);
  fflush(stdout);
  char *root = st_mkdtemp("tbe-writer-kill");
  static const double intervals[] = {0.0, 0.002, 1.0};
  static const size_t buffers[] = {512, 8192, 262144};
  unsigned long torn = 0, empty = 0;
  unsigned long long acked_total = 0, recovered_total = 0, beyond_ack = 0;
  double t0 = st_now();
  for (long k = 0; k < kills; k++) {
    plan p;
    p.flush_interval = intervals[st_below(&rng, 3)];
    p.buffer_size = buffers[st_below(&rng, 3)];
    p.flush_every = 1 + (unsigned)st_below(&rng, 2000);
    p.delay_us = st_below(&rng, 50001);
    if (k < 4) p.delay_us = (uint64_t)k * 300; /* the first kills land in the open itself */
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/k%ld", root, k);
    if (mkdir(dir, 0755) != 0) {
      st_fail("mkdir %s: %s", dir, strerror(errno));
      break;
    }
    child_args ca = {dir, &p};
    int ack_fd;
    pid_t pid = st_spawn(child_main, &ca, &ack_fd);
    if (pid < 0) break;
    st_sleep_us(p.delay_us);
    int status;
    uint64_t acked;
    if (!st_kill_reap(pid, ack_fd, &acked, &status)) {
      st_fail("kill %ld: the child ended by itself (status 0x%x) before the kill", k, status);
      continue;
    }
    long long got = check_run(dir, (int)k, &torn);
    if (got >= 0 && (uint64_t)got < acked)
      st_fail("kill %ld: %lld events in the file, but %llu were flushed before the kill "
              "(interval %g, buffer %zu, flush every %u, delay %llu us)",
              k, got, (unsigned long long)acked, p.flush_interval, p.buffer_size, p.flush_every,
              (unsigned long long)p.delay_us);
    if (got >= 0) {
      recovered_total += (unsigned long long)got;
      beyond_ack += (uint64_t)got - ((uint64_t)got < acked ? (uint64_t)got : acked);
      if (got == 0) empty++;
    }
    acked_total += acked;
    st_rmtree(dir);
  }
  double dt = st_now() - t0;
  st_rmtree(root);
  free(root);
  printf("kills: %ld in %.1f s (seed %llu)\n", kills, dt, (unsigned long long)seed);
  printf("events acknowledged (flushed before the kill): %llu\n", acked_total);
  printf("events recovered: %llu (%llu more than acknowledged: written by the writer's own "
         "flushes)\n", recovered_total, beyond_ack);
  printf("torn final records seen (reported as truncated): %lu; runs with no event yet: %lu\n",
         torn, empty);
  printf("failures: %lu\n", st_failures);
  return st_failures ? 1 : 0;
}
