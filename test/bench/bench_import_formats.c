/* bench_import_formats.c: import rate of the XSpace and Nsight Systems
 * importers on the golden files.
 *
 * For each file: the best of N runs of tbe_import_file (detection, import,
 * tbe_trace_finish) into a fresh trace, against a baseline measured in the
 * same run on the same file: for XSpace, protobuf-c decoding the whole file
 * without building a model; for nsys, SQLite stepping through every row of
 * the tables the importer reads (no model).  Prints events/s, MB/s, the
 * ratio to the baseline and, for the 2.2 MB nsys file, the ratio to the
 * issue's 0.2 s goal (< 1 meets it).
 *
 * Usage: bench_import_formats [DATA_DIR] [RUNS]   (defaults: TBE_TEST_DATA
 * when built in-tree, else "test/data"; 10 runs). */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "profiler/xplane.pb-c.h"
#include "tbexport.h"

#ifndef TBE_TEST_DATA
#define TBE_TEST_DATA "test/data"
#endif

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long file_size(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* Best time of `runs` imports; stores the event count. */
static double time_import(const char *path, int runs, size_t *events) {
  double best = 1e30;
  for (int r = 0; r < runs; r++) {
    tbe_trace *t;
    if (tbe_trace_create(&t, NULL)) return -1;
    tbe_import_error err;
    double t0 = now();
    int rc = tbe_import_file(t, path, NULL, &err);
    double dt = now() - t0;
    if (rc) {
      fprintf(stderr, "%s\n", err.message);
      tbe_trace_free(t);
      return -1;
    }
    *events = t->nevents;
    tbe_trace_free(t);
    if (dt < best) best = dt;
  }
  return best;
}

static double time_protobuf(const char *path, int runs) {
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  long n = file_size(path);
  uint8_t *b = malloc((size_t)n);
  if (!b || fread(b, 1, (size_t)n, f) != (size_t)n) {
    fclose(f);
    free(b);
    return -1;
  }
  fclose(f);
  double best = 1e30;
  for (int r = 0; r < runs; r++) {
    double t0 = now();
    Tensorflow__Profiler__XSpace *xs = tensorflow__profiler__xspace__unpack(NULL, (size_t)n, b);
    double dt = now() - t0;
    if (!xs) {
      free(b);
      return -1;
    }
    tensorflow__profiler__xspace__free_unpacked(xs, NULL);
    if (dt < best) best = dt;
  }
  free(b);
  return best;
}

static double time_sqlite_scan(const char *path, int runs) {
  static const char *const tables[] = {
      "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
      "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
      "CUPTI_ACTIVITY_KIND_OVERHEAD", "PROFILER_OVERHEAD", "NVTX_EVENTS"};
  char uri[4200];
  snprintf(uri, sizeof uri, "file:%s?immutable=1", path);
  double best = 1e30;
  for (int r = 0; r < runs; r++) {
    double t0 = now();
    sqlite3 *db;
    if (sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL) != SQLITE_OK) return -1;
    int64_t sink = 0;
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) {
      char sql[256];
      snprintf(sql, sizeof sql, "SELECT * FROM %s", tables[i]);
      sqlite3_stmt *st;
      if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) continue; /* absent table */
      int nc = sqlite3_column_count(st);
      while (sqlite3_step(st) == SQLITE_ROW)
        for (int c = 0; c < nc; c++) sink += sqlite3_column_int64(st, c);
      sqlite3_finalize(st);
    }
    sqlite3_close(db);
    double dt = now() - t0;
    if (sink == 42) fputs("", stderr); /* keep the reads */
    if (dt < best) best = dt;
  }
  return best;
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : TBE_TEST_DATA;
  int runs = 10;
  char *end = NULL;
  if (argc > 2) runs = (int)strtol(argv[2], &end, 10);
  if (argc > 3 || (end && (*end || runs < 1))) {
    fprintf(stderr, "usage: bench_import_formats [DATA_DIR [RUNS >= 1]]\n");
    return 2;
  }
  static const struct {
    const char *rel;
    int nsys;
    double goal_s; /* 0 = none */
  } files[] = {{"jax/h200_matmul.xplane.pb", 0, 0},
               {"nsys/h100_2gpu_1s.sqlite", 1, 0.2},
               {"nsys/saxpy_mpi_cuda_perlmutter.sqlite", 1, 0}};
  printf("import rate, best of %d runs (baseline: %s)\n", runs,
         "XSpace = protobuf-c decode only, nsys = SQLite row scan only");
  printf("%-40s %8s %9s %9s %10s %8s %10s %9s %8s\n", "file", "MB", "events", "import_s", "events/s",
         "MB/s", "baseline_s", "x_base", "x_goal");
  int fail = 0;
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, files[i].rel);
    long sz = file_size(path);
    if (sz < 0) {
      fprintf(stderr, "missing %s\n", path);
      fail = 1;
      continue;
    }
    size_t events = 0;
    double ti = time_import(path, runs, &events);
    double tb = files[i].nsys ? time_sqlite_scan(path, runs) : time_protobuf(path, runs);
    if (ti < 0 || tb < 0 || events == 0) {
      fprintf(stderr, "%s: %s\n", path, events == 0 && ti >= 0 ? "no events imported" : "failed");
      fail = 1;
      continue;
    }
    double mb = (double)sz / 1e6;
    char goal[16] = "-";
    if (files[i].goal_s > 0) snprintf(goal, sizeof goal, "%.3f", ti / files[i].goal_s);
    printf("%-40s %8.2f %9zu %9.4f %10.0f %8.1f %10.4f %9.2f %8s\n", files[i].rel, mb, events, ti,
           (double)events / ti, mb / ti, tb, ti / tb, goal);
  }
  printf("x_base = import time / baseline time; x_goal = import time / 0.2 s (goal: < 1)\n");
  return fail;
}
