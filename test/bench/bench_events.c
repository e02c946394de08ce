/* bench_events.c: event writer and CRC32C throughput.
 *
 *   bench_events [REPO_ROOT] [--events N]
 *
 * 1. N (default 10,000,000) tbe_writer_add_scalar calls, one thread, into a
 *    file in the page cache (/dev/shm when present, else $TMPDIR or /tmp),
 *    close included.  Baseline measured in the same run: the same scalar
 *    Events built as protobuf-c structs and packed by protobuf-c (the path
 *    every other add_* takes), N/10 events.  For scale, TensorBoard's Python
 *    SummaryWriter did 19,400 events/s on the H200 host (100k add_scalar in
 *    5.14 s; not measured here).
 * 2. CRC32C over a 64 KiB buffer: SSE4.2 three-stream path vs the portable
 *    slicing-by-8 path.
 * Prints a table.  Never asserts a speed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/crc32c.h"
#include "events/writer_internal.h"
#include "tbexport.h"
#include "tensorboard/event.pb-c.h"
#include "tensorboard/summary.pb-c.h"

#define PY_TB_EVENTS_PER_S 19400.0

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void rm_dir(const char *dir) {
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "bench_events: could not remove %s\n", dir);
}

static double file_mb(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? st.st_size / 1e6 : 0;
}

/* Returns events/s, or -1 on error. */
static double bench_add_scalar(const char *base, long n, double *mb) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/tbe-bench-XXXXXX", base);
  if (!mkdtemp(dir)) return -1;
  tbe_writer *w;
  int rc = tbe_writer_open(&w, dir, NULL);
  if (rc < 0) {
    fprintf(stderr, "bench_events: open %s: %s\n", dir, tbe_strerror(rc));
    rm_dir(dir);
    return -1;
  }
  char path[4096];
  snprintf(path, sizeof path, "%s", tbe_writer_path(w));
  double t0 = now();
  for (long i = 0; i < n && rc == 0; i++)
    rc = tbe_writer_add_scalar(w, "loss/train", (double)i * 1e-3, i, 1700000000.0 + i * 1e-3);
  int crc = tbe_writer_close(w);
  double t = now() - t0;
  *mb = file_mb(path);
  rm_dir(dir);
  if (rc < 0 || crc < 0) {
    fprintf(stderr, "bench_events: add_scalar: %s\n", tbe_strerror(rc < 0 ? rc : crc));
    return -1;
  }
  return n / t;
}

static double bench_protobuf_c(const char *base, long n) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/tbe-bench-XXXXXX", base);
  if (!mkdtemp(dir)) return -1;
  tbe_writer *w;
  int rc = tbe_writer_open(&w, dir, NULL);
  if (rc < 0) {
    rm_dir(dir);
    return -1;
  }
  double t0 = now();
  for (long i = 0; i < n && rc == 0; i++) {
    Tensorboard__Summary__Value v = TENSORBOARD__SUMMARY__VALUE__INIT;
    v.tag = (char *)"loss/train";
    v.value_case = TENSORBOARD__SUMMARY__VALUE__VALUE_SIMPLE_VALUE;
    v.simple_value = (float)((double)i * 1e-3);
    Tensorboard__Summary__Value *pv = &v;
    Tensorboard__Summary s = TENSORBOARD__SUMMARY__INIT;
    s.n_value = 1;
    s.value = &pv;
    Tensorboard__Event ev = TENSORBOARD__EVENT__INIT;
    ev.wall_time = 1700000000.0 + i * 1e-3;
    ev.step = i;
    ev.what_case = TENSORBOARD__EVENT__WHAT_SUMMARY;
    ev.summary = &s;
    rc = tbe__writer_write_message(w, &ev.base);
  }
  int crc = tbe_writer_close(w);
  double t = now() - t0;
  rm_dir(dir);
  if (rc < 0 || crc < 0) return -1;
  return n / t;
}

typedef uint32_t (*crc_fn)(uint32_t, const void *, size_t);

static double bench_crc(crc_fn f, const uint8_t *buf, size_t len, double min_s, uint32_t *out) {
  uint32_t c = 0;
  long iters = 0;
  double t0 = now(), t;
  do {
    for (int k = 0; k < 64; k++) c = f(c, buf, len);
    iters += 64;
    t = now() - t0;
  } while (t < min_s);
  *out = c;
  return (double)iters * len / t / 1e9;
}

int main(int argc, char **argv) {
  long n = 10000000;
  for (int i = 1; i < argc; i++) {
    char *end = NULL;
    if (strcmp(argv[i], "--events") == 0 && i + 1 < argc) n = strtol(argv[++i], &end, 10);
    if (!end || *end || n < 1000) {
      fprintf(stderr, "usage: bench_events [--events N >= 1000]\n");
      return 2;
    }
  }
  const char *base = "/dev/shm";
  struct stat st;
  if (stat(base, &st) != 0 || !S_ISDIR(st.st_mode) || access(base, W_OK) != 0) {
    base = getenv("TMPDIR");
    if (!base || !*base) base = "/tmp";
  }

  double mb = 0;
  double ours = bench_add_scalar(base, n, &mb);
  double pbc = bench_protobuf_c(base, n / 10);

  enum { LEN = 64 * 1024 };
  uint8_t *buf = malloc(LEN);
  if (!buf) return 1;
  for (size_t i = 0; i < LEN; i++) buf[i] = (uint8_t)(i * 2654435761u >> 13);
  uint32_t c1 = 0, c2 = 0;
  int hw = tbe__crc32c_hw_available();
  double port = bench_crc(tbe__crc32c_portable, buf, LEN, 0.5, &c1);
  double hwr = hw ? bench_crc(tbe__crc32c_hw, buf, LEN, 0.5, &c2) : 0;
  if (hw && tbe__crc32c_hw(0, buf, LEN) != tbe__crc32c_portable(0, buf, LEN)) {
    fprintf(stderr, "bench_events: CRC paths disagree\n");
    free(buf);
    return 1;
  }
  free(buf);

  printf("bench_events (events into %s, %ld add_scalar, file %.0f MB)\n", base, n, mb);
  printf("%-46s %16s %12s\n", "case", "rate", "ratio");
  if (ours > 0) {
    printf("%-46s %12.2f M/s %12s\n", "add_scalar (hand-encoded), incl. close", ours / 1e6, "1.00");
    if (pbc > 0)
      printf("%-46s %12.2f M/s %11.2fx\n", "  baseline: protobuf-c pack, same events", pbc / 1e6,
             ours / pbc);
    printf("%-46s %12.4f M/s %11.0fx\n", "  reference: TensorBoard Python (H200 host)",
           PY_TB_EVENTS_PER_S / 1e6, ours / PY_TB_EVENTS_PER_S);
  } else {
    printf("%-46s %16s\n", "add_scalar", "FAILED");
  }
  printf("%-46s %12.2f GB/s %11s\n", "CRC32C 64 KiB, portable (slicing-by-8)", port, "1.00");
  if (hw)
    printf("%-46s %12.2f GB/s %11.2fx\n", "CRC32C 64 KiB, SSE4.2 3-stream", hwr, hwr / port);
  else
    printf("%-46s %16s\n", "CRC32C 64 KiB, SSE4.2 3-stream", "n/a (no SSE4.2)");
  (void)c1;
  (void)c2;
  return ours > 0 ? 0 : 1;
}
