/* test_import_nsys.c: the Nsight Systems SQLite importer.
 *
 * Golden files (schema 3.25 with ENUM tables, schema 2.9.1 without): every
 * count per kind equals a COUNT(*) run here through sqlite3 directly, the
 * total kernel time per name equals SQL SUM(end-start) grouped by name,
 * memory/copy kinds follow nsys's numbering, times become epoch ns, names
 * and ids come from StringIds and globalTid.  Synthetic databases cover
 * NVTX domains/registered strings/marks/start-end ranges/payloads, missing
 * tables, unknown columns, bad values, non-nsys SQLite files and damaged
 * files; the input is never written to.  CUDA memory: a copy of a golden
 * file with a CUDA_GPU_MEMORY_USAGE_EVENTS table of known sizes added
 * gives those allocations and frees, and once finished their running
 * totals and the GPU's "memory allocated" counter track. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <dirent.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "tbexport.h"
#include "testutil.h"

/* ---- helpers ---- */

static sqlite3 *open_ro(const char *path) {
  sqlite3 *db = NULL;
  char uri[4096];
  snprintf(uri, sizeof uri, "file:%s?immutable=1", path);
  assert_int_equal(sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL), SQLITE_OK);
  return db;
}

static int64_t sql_int(sqlite3 *db, const char *sql) {
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
    fprintf(stderr, "sql: %s: %s\n", sql, sqlite3_errmsg(db));
    fail();
  }
  int64_t v = -1;
  if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return v;
}

static int table_exists(sqlite3 *db, const char *t) {
  char sql[256];
  snprintf(sql, sizeof sql, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name='%s'", t);
  return sql_int(db, sql) > 0;
}

static int64_t count_table(sqlite3 *db, const char *t, const char *where) {
  if (!table_exists(db, t)) return 0;
  char sql[512];
  snprintf(sql, sizeof sql, "SELECT count(*) FROM %s %s", t, where ? where : "");
  return sql_int(db, sql);
}

static tbe_trace *import_ok(const char *path) {
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  tbe_import_error err;
  int rc = tbe_import_file(t, path, NULL, &err);
  if (rc) fprintf(stderr, "import %s: %s\n", path, err.message);
  assert_int_equal(rc, 0);
  assert_int_equal(t->source, TBE_SRC_NSYS);
  return t;
}

static size_t count_kind(const tbe_trace *t, tbe_event_kind k) {
  size_t n = 0;
  for (size_t i = 0; i < t->nevents; i++) n += t->events[i].kind == k;
  return n;
}

static void exec(sqlite3 *db, const char *sql) {
  char *msg = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
    fprintf(stderr, "exec: %s\n", msg);
    sqlite3_free(msg);
    fail();
  }
}

static char *make_db(const char *dir, const char *name, const char *sql) {
  char *path = tu_join(dir, name);
  sqlite3 *db;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  exec(db, sql);
  sqlite3_close(db);
  return path;
}

/* The import fails with `code` and a one-line message containing `want`. */
static void expect_fail(const char *path, int code, const char *want) {
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  tbe_import_error err;
  int rc = tbe_import_file(t, path, NULL, &err);
  if (rc != code || !strstr(err.message, want))
    fprintf(stderr, "got rc %d (%s), message: %s\n", rc, tbe_err_name(rc), err.message);
  assert_int_equal(rc, code);
  assert_non_null(strstr(err.message, want));
  assert_null(strchr(err.message, '\n'));
  tbe_trace_free(t);
}

/* ---- golden files ---- */

static void check_counts(const char *rel) {
  const char *path = tu_data(rel);
  char *p = strdup(path);
  tbe_trace *t = import_ok(p);
  sqlite3 *db = open_ro(p);
  assert_int_equal(count_kind(t, TBE_EV_KERNEL), count_table(db, "CUPTI_ACTIVITY_KIND_KERNEL", NULL));
  assert_int_equal(count_kind(t, TBE_EV_MEMCPY), count_table(db, "CUPTI_ACTIVITY_KIND_MEMCPY", NULL));
  assert_int_equal(count_kind(t, TBE_EV_MEMSET), count_table(db, "CUPTI_ACTIVITY_KIND_MEMSET", NULL));
  assert_int_equal(count_kind(t, TBE_EV_SYNC),
                   count_table(db, "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", NULL));
  /* eventClass 0 = CUDA runtime, 1 = CUDA driver; 67 (CUDA backtrace rows)
   * repeat calls and are not calls themselves. */
  assert_int_equal(count_kind(t, TBE_EV_RUNTIME),
                   count_table(db, "CUPTI_ACTIVITY_KIND_RUNTIME", "WHERE eventClass = 0"));
  assert_int_equal(count_kind(t, TBE_EV_DRIVER),
                   count_table(db, "CUPTI_ACTIVITY_KIND_RUNTIME", "WHERE eventClass = 1"));
  assert_int_equal(count_kind(t, TBE_EV_OVERHEAD),
                   count_table(db, "CUPTI_ACTIVITY_KIND_OVERHEAD", NULL) +
                       count_table(db, "PROFILER_OVERHEAD", NULL));
  /* PyTorch's operator ranges (autograd-nvtx) are operators; the others
   * stay NVTX ranges. */
  assert_int_equal(count_kind(t, TBE_EV_NVTX_RANGE) + count_kind(t, TBE_EV_CPU_OP) +
                       count_kind(t, TBE_EV_USER_ANNOTATION),
                   count_table(db, "NVTX_EVENTS", "WHERE eventType IN (59, 60, 70, 71)"));
  assert_int_equal(count_kind(t, TBE_EV_NVTX_MARK), count_table(db, "NVTX_EVENTS", "WHERE eventType = 34"));
  assert_int_equal(t->nkernels, count_kind(t, TBE_EV_KERNEL));
  assert_int_equal(t->nmemcpys, count_kind(t, TBE_EV_MEMCPY));

  /* Total kernel time and calls per name: SQL vs the model.  A kernel is
   * named by its mangledName as c++filt demangles it (test_names checks
   * tbe_demangle against c++filt), else by nsys's demangledName; a
   * demangled one carries the mangled text as "mangled name". */
  sqlite3_stmt *st;
  assert_int_equal(sqlite3_prepare_v2(db,
                                      "SELECT m.value, d.value, sum(k.end - k.start), count(*) FROM "
                                      "CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds m ON "
                                      "m.id = k.mangledName JOIN StringIds d ON d.id = k.demangledName "
                                      "GROUP BY m.value",
                                      -1, &st, NULL),
                   SQLITE_OK);
  tbe_str key = tbe_trace_find_str(t, "mangled name", 12);
  size_t names = 0, demangled = 0;
  while (sqlite3_step(st) == SQLITE_ROW) {
    const char *mangled = (const char *)sqlite3_column_text(st, 0);
    const char *nsys_name = (const char *)sqlite3_column_text(st, 1);
    int64_t sum = sqlite3_column_int64(st, 2), calls = sqlite3_column_int64(st, 3);
    char want[8192];
    int dn = tbe_demangle(mangled, want, sizeof want);
    assert_true(dn < (int)sizeof want);
    if (dn < 0) snprintf(want, sizeof want, "%s", nsys_name);
    else demangled++;
    tbe_str id = tbe_trace_find_str(t, want, strlen(want));
    tbe_str mid = tbe_trace_find_str(t, mangled, strlen(mangled));
    assert_int_not_equal(id, TBE_NONE);
    int64_t msum = 0, mcalls = 0;
    for (size_t i = 0; i < t->nevents; i++) {
      const tbe_event *e = &t->events[i];
      if (e->kind != TBE_EV_KERNEL || e->name != id) continue;
      msum += e->dur_ns;
      mcalls++;
      int has = 0;
      for (uint32_t a = 0; a < e->nargs; a++) {
        const tbe_arg *g = &t->args[e->args + a];
        if (g->key == key && key != TBE_NONE) {
          assert_int_equal(g->type, TBE_ARG_STR);
          assert_int_equal(g->v.s, mid);
          has = 1;
        }
      }
      assert_int_equal(has, strcmp(want, mangled) != 0);
    }
    assert_int_equal(msum, sum);
    assert_int_equal(mcalls, calls);
    names++;
  }
  sqlite3_finalize(st);
  assert_true(names > 0);
  assert_true(demangled > 0);

  /* Memcpy bytes per direction (nsys copy kinds 1 HtoD, 2 DtoH, 8 DtoD). */
  const int kinds[] = {1, 2, 8, 10};
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT coalesce(sum(bytes), 0) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind = %d",
             kinds[k]);
    int64_t want = sql_int(db, sql);
    int64_t got = 0;
    for (size_t i = 0; i < t->nevents; i++) {
      const tbe_memcpy *m = tbe_trace_memcpy(t, &t->events[i]);
      if (m && m->copy_kind == kinds[k]) got += (int64_t)m->bytes;
    }
    assert_int_equal(got, want);
  }

  /* Times: epoch = utcEpochNs + (t - systemClockNs) (no systemClockNs in
   * schema 2.x: t counts from the session start). */
  int has_sys = sql_int(db, "SELECT count(*) FROM pragma_table_info('TARGET_INFO_SESSION_START_TIME') "
                            "WHERE name = 'systemClockNs'") > 0;
  int64_t off = sql_int(db, has_sys ? "SELECT utcEpochNs - systemClockNs FROM TARGET_INFO_SESSION_START_TIME"
                                    : "SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME");
  int64_t first = sql_int(db, "SELECT min(start) FROM CUPTI_ACTIVITY_KIND_KERNEL") + off;
  int64_t mfirst = INT64_MAX;
  for (size_t i = 0; i < t->nevents; i++)
    if (t->events[i].kind == TBE_EV_KERNEL && t->events[i].start_ns < mfirst) mfirst = t->events[i].start_ns;
  assert_int_equal(mfirst, first);
  assert_true(first > 1600000000LL * 1000000000LL); /* after 2020: wall clock */

  /* Process names from PROCESSES, pids from globalPid. */
  assert_int_equal(sqlite3_prepare_v2(db,
                                      "SELECT DISTINCT (k.globalPid >> 24) & 16777215, p.name FROM "
                                      "CUPTI_ACTIVITY_KIND_KERNEL k JOIN PROCESSES p ON "
                                      "p.globalPid = k.globalPid",
                                      -1, &st, NULL),
                   SQLITE_OK);
  while (sqlite3_step(st) == SQLITE_ROW) {
    int64_t pid = sqlite3_column_int64(st, 0);
    const char *name = (const char *)sqlite3_column_text(st, 1);
    int found = 0;
    for (size_t i = 0; i < t->nprocesses; i++)
      if (t->processes[i].pid == pid) {
        assert_string_equal(tbe_trace_str(t, t->processes[i].name), name);
        found = 1;
      }
    assert_true(found);
  }
  sqlite3_finalize(st);

  /* Every kernel and copy with a correlation id known to the runtime table
   * of its own process links to that call. */
  int64_t linked = sql_int(db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k WHERE EXISTS (SELECT 1 "
                               "FROM CUPTI_ACTIVITY_KIND_RUNTIME r WHERE r.correlationId = "
                               "k.correlationId AND ((r.globalTid >> 24) & 16777215) = "
                               "((k.globalPid >> 24) & 16777215) AND r.eventClass IN (0, 1))");
  int64_t mlinked = 0;
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_event *e = &t->events[i];
    if (e->kind != TBE_EV_KERNEL || e->link == TBE_NONE) continue;
    const tbe_event *api = &t->events[e->link];
    assert_true(api->kind == TBE_EV_RUNTIME || api->kind == TBE_EV_DRIVER);
    assert_int_equal(t->tracks[api->track].pid, t->tracks[e->track].pid);
    mlinked++;
  }
  assert_int_equal(mlinked, linked);

  sqlite3_close(db);
  tbe_trace_free(t);
  free(p);
}

static void test_h100_counts(void **state) {
  (void)state;
  check_counts("nsys/h100_2gpu_1s.sqlite");
}

static void test_saxpy_counts(void **state) {
  (void)state;
  check_counts("nsys/saxpy_mpi_cuda_perlmutter.sqlite");
}

static void test_h100_details(void **state) {
  (void)state;
  tbe_trace *t = import_ok(tu_data("nsys/h100_2gpu_1s.sqlite"));
  /* Figures from the fixture's README / the reference. */
  assert_int_equal(count_kind(t, TBE_EV_KERNEL), 3442);
  /* Its 16,782 NVTX ranges are PyTorch's operator ranges ("aten::view,
   * op_id = 314290"): operators named without the op id, autograd's
   * detach_ among them. */
  assert_int_equal(count_kind(t, TBE_EV_NVTX_RANGE), 0);
  assert_int_equal(count_kind(t, TBE_EV_CPU_OP), 16782);
  size_t views = 0;
  for (size_t i = 0; i < t->nevents; i++)
    if (t->events[i].kind == TBE_EV_CPU_OP && strcmp(tbe_trace_str(t, t->events[i].name), "aten::view") == 0)
      views++;
  assert_true(views > 0);
  assert_int_equal(tbe_trace_find_str(t, "aten::view, op_id = 314290", 26), TBE_NONE);
  assert_string_equal(tbe_trace_str(t, t->host), "modal");
  /* Two GPUs, two python3 processes (pids 111 and 112). */
  assert_int_equal(t->ndevices, 2);
  int have111 = 0;
  for (size_t i = 0; i < t->nprocesses; i++)
    if (t->processes[i].pid == 111) {
      have111 = 1;
      assert_string_equal(tbe_trace_str(t, t->processes[i].name), "python3");
    }
  assert_true(have111);
  /* Copies: nsys memory kinds are CUPTI's minus one.  In this file HtoD
   * copies go pinned (nsys 1) -> device (nsys 2), DtoH device -> pinned. */
  size_t htod = 0, async = 0;
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_memcpy *m = tbe_trace_memcpy(t, &t->events[i]);
    if (!m) continue;
    if (m->copy_kind == TBE_COPY_HTOD) {
      htod++;
      assert_int_equal(m->dst_kind, TBE_MEM_DEVICE);
    }
    if (m->copy_kind == TBE_COPY_DTOD) {
      assert_int_equal(m->src_kind, TBE_MEM_DEVICE);
      assert_int_equal(m->dst_kind, TBE_MEM_DEVICE);
    }
    async += m->async;
  }
  sqlite3 *db = open_ro(tu_data("nsys/h100_2gpu_1s.sqlite"));
  assert_int_equal(htod, sql_int(db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind = 1"));
  size_t pinned_src = 0;
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_memcpy *m = tbe_trace_memcpy(t, &t->events[i]);
    if (m && m->src_kind == TBE_MEM_PINNED) pinned_src++;
  }
  assert_int_equal(pinned_src, sql_int(db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE srcKind = 1"));
  /* async: launched by a *Async API of the same process. */
  assert_int_equal(async, sql_int(db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY m JOIN "
                                      "CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = "
                                      "m.correlationId AND ((r.globalTid >> 24) & 16777215) = "
                                      "((m.globalPid >> 24) & 16777215) JOIN StringIds s ON s.id = "
                                      "r.nameId WHERE s.value LIKE '%Async%'"));
  /* Memsets: memKind 2 is device memory in nsys numbering. */
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_memset *m = tbe_trace_memset(t, &t->events[i]);
    if (m) assert_int_equal(m->mem_kind, TBE_MEM_DEVICE);
  }
  /* Sync kinds (CUPTI numbering): 236 stream-wait-event, 8 stream syncs. */
  size_t swe = 0, ss = 0;
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_sync *y = tbe_trace_sync(t, &t->events[i]);
    if (!y) continue;
    swe += y->sync_kind == TBE_SYNC_STREAM_WAIT;
    ss += y->sync_kind == TBE_SYNC_STREAM;
  }
  assert_int_equal(swe, sql_int(db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION WHERE syncType = 2"));
  assert_int_equal(ss, sql_int(db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION WHERE syncType = 3"));
  /* API names drop nsys's version suffix. */
  assert_int_not_equal(tbe_trace_find_str(t, "cudaLaunchKernel", 16), TBE_NONE);
  int64_t launches = sql_int(db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON "
                                 "s.id = r.nameId WHERE s.value = 'cudaLaunchKernel_v7000'");
  tbe_str lk = tbe_trace_find_str(t, "cudaLaunchKernel", 16);
  int64_t mlaunch = 0;
  for (size_t i = 0; i < t->nevents; i++) mlaunch += t->events[i].name == lk && t->events[i].kind == TBE_EV_RUNTIME;
  assert_int_equal(mlaunch, launches);
  /* Overhead time recorded. */
  assert_int_equal((int64_t)t->overhead_ns,
                   sql_int(db, "SELECT sum(end - start) FROM CUPTI_ACTIVITY_KIND_OVERHEAD"));
  /* The operator ranges sit on the host thread of their globalTid. */
  tbe_str nv = tbe_trace_find_str(t, "aten::view", 10);
  assert_int_not_equal(nv, TBE_NONE);
  sqlite3_close(db);
  /* This export gives the sync rows of process 112 (whose work all ran on
   * device 1) device 0: they go on the device of their process's streams,
   * and a warning says how many were moved. */
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_event *e = &t->events[i];
    if (e->kind != TBE_EV_SYNC) continue;
    const tbe_track *tr = &t->tracks[e->track];
    assert_int_equal(tr->device, tr->pid == 111 ? 0 : 1);
  }
  db = open_ro(tu_data("nsys/h100_2gpu_1s.sqlite"));
  int64_t moved = sql_int(db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION WHERE "
                              "((globalPid >> 24) & 16777215) = 112 AND deviceId = 0");
  sqlite3_close(db);
  assert_true(moved > 0);
  assert_int_equal(t->nwarnings, 1);
  char want[64];
  snprintf(want, sizeof want, "nsys: %lld synchronization rows", (long long)moved);
  assert_non_null(strstr(tbe_trace_str(t, t->warnings[0]), want));
  tbe_trace_free(t);
}

static void test_saxpy_details(void **state) {
  (void)state;
  tbe_trace *t = import_ok(tu_data("nsys/saxpy_mpi_cuda_perlmutter.sqlite"));
  /* TARGET_INFO_GPU. */
  assert_int_equal(t->ndevices, 1);
  const tbe_device *d = &t->devices[0];
  assert_string_equal(tbe_trace_str(t, d->name), "NVIDIA A100-SXM4-40GB");
  assert_int_equal(d->sm_count, 108);
  assert_int_equal(d->clock_khz, 1410000);
  assert_int_equal(d->memory_bytes, 42297524224LL);
  assert_int_equal(d->cc_major, 8);
  assert_int_equal(d->cc_minor, 0);
  assert_int_equal(d->warp_size, 32);
  assert_int_equal(d->max_threads_per_sm, 64 * 32);
  assert_string_equal(tbe_trace_str(t, t->host), "nid001608");
  /* Old schema: copies HtoD pageable (nsys 0) -> device (nsys 2). */
  size_t htod = 0;
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_memcpy *m = tbe_trace_memcpy(t, &t->events[i]);
    if (!m || m->copy_kind != TBE_COPY_HTOD) continue;
    htod++;
    assert_int_equal(m->src_kind, TBE_MEM_PAGEABLE);
    assert_int_equal(m->dst_kind, TBE_MEM_DEVICE);
    assert_int_equal(m->bytes, 262144000);
  }
  assert_true(htod > 0);
  /* NVTX: the "MPI" domain (eventType 75) and its registered strings. */
  tbe_str mpi = tbe_trace_find_str(t, "MPI", 3);
  assert_int_not_equal(mpi, TBE_NONE);
  size_t in_domain = 0, saxpy = 0;
  tbe_str sx = tbe_trace_find_str(t, "saxpy", 5);
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_nvtx *n = tbe_trace_nvtx(t, &t->events[i]);
    if (!n) continue;
    in_domain += n->domain == mpi;
    saxpy += t->events[i].name == sx;
    assert_true(t->events[i].name != 0); /* text or registered string */
  }
  sqlite3 *db = open_ro(tu_data("nsys/saxpy_mpi_cuda_perlmutter.sqlite"));
  assert_int_equal(in_domain, sql_int(db, "SELECT count(*) FROM NVTX_EVENTS WHERE domainId = 1 AND "
                                          "eventType IN (34, 59, 60, 70, 71)"));
  assert_int_equal(saxpy, sql_int(db, "SELECT count(*) FROM NVTX_EVENTS WHERE text = 'saxpy'"));
  assert_int_equal(saxpy, 5);
  sqlite3_close(db);
  /* Thread names: NVTX (eventType 39) and ThreadNames. */
  int named = 0, worker = 0;
  for (size_t i = 0; i < t->ntracks; i++) {
    const char *n = tbe_trace_str(t, t->tracks[i].name);
    named += strcmp(n, "MPI Rank 0") == 0;
    worker += strcmp(n, "CUPTI worker thread") == 0;
  }
  assert_int_equal(named, 1);
  assert_int_equal(worker, 1);
  /* PROFILER_OVERHEAD names. */
  assert_int_not_equal(tbe_trace_find_str(t, "CUPTI: Buffer flush", 19), TBE_NONE);
  /* No CUDA backtrace duplicates: one cudaMalloc per call. */
  tbe_str cm = tbe_trace_find_str(t, "cudaMalloc", 10);
  size_t mallocs = 0;
  for (size_t i = 0; i < t->nevents; i++) mallocs += t->events[i].name == cm;
  assert_int_equal(mallocs, 15);
  tbe_trace_free(t);
}

/* The input file is not modified and nothing is created beside it. */
static void test_read_only(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  size_t n;
  uint8_t *data = tu_read_file(tu_data("nsys/saxpy_mpi_cuda_perlmutter.sqlite"), &n);
  assert_non_null(data);
  char *path = tu_join(dir, "copy.sqlite");
  assert_int_equal(tu_write_file(path, data, n), 0);
  assert_int_equal(chmod(path, 0444), 0);
  tbe_trace *t = import_ok(path);
  tbe_trace_free(t);
  size_t n2;
  uint8_t *after = tu_read_file(path, &n2);
  assert_int_equal(n2, n);
  assert_memory_equal(after, data, n);
  DIR *dh = opendir(dir);
  struct dirent *de;
  int entries = 0;
  while ((de = readdir(dh))) entries += de->d_name[0] != '.';
  closedir(dh);
  assert_int_equal(entries, 1);
  free(after);
  free(data);
  free(path);
  tu_rmrf(dir);
  free(dir);
}

/* ---- synthetic databases ---- */

static const char *const minimal_schema =
    "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT);"
    "CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT, localTime TEXT, "
    "  systemClockNs INTEGER);"
    "INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (1700000000000000000, '', '', 1000);"
    "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, "
    "  deviceId INTEGER NOT NULL, contextId INTEGER, streamId INTEGER, correlationId INTEGER, "
    "  globalPid INTEGER, demangledName INTEGER, shortName INTEGER, futureColumn TEXT, gridX INTEGER, "
    "  gridY INTEGER, gridZ INTEGER, blockX INTEGER, blockY INTEGER, blockZ INTEGER, "
    "  registersPerThread INTEGER);"
    "INSERT INTO StringIds VALUES (1, 'void k<float>(float*)'), (2, 'k'), (3, 'cudaLaunchKernel_v7000'),"
    "  (4, 'registered'), (5, 'cuLaunchKernel');";

/* globalTid for pid 77, tid 78; globalPid for pid 77. */
#define GTID "(1 << 48 | 77 << 24 | 78)"
#define GPID "(1 << 48 | 77 << 24)"

static void test_synthetic_minimal(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  char sql[4096];
  snprintf(sql, sizeof sql,
           "%s"
           "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, streamId, correlationId, "
           "  globalPid, demangledName, shortName, futureColumn, gridX, gridY, gridZ, blockX, blockY, "
           "  blockZ, registersPerThread) VALUES "
           "  (2000, 3000, 3, 13, 5, " GPID ", 1, 2, 'x', 4, 2, 1, 128, 1, 1, 40),"
           "  (4000, 4500, 3, 13, 6, " GPID ", NULL, 2, NULL, 1, 1, 1, 1, 1, 1, 8);"
           "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, "
           "  eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, "
           "  returnValue INTEGER NOT NULL, callchainId INTEGER);"
           "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (1500, 1900, 0, " GTID ", 5, 3, 0, NULL),"
           "  (3500, 3900, 1, " GTID ", 6, 5, 2, NULL);"
           "CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, "
           "  rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, "
           "  endGlobalTid INTEGER, textId INTEGER, domainId INTEGER, uint64Value INTEGER, "
           "  int64Value INTEGER, doubleValue REAL, uint32Value INTEGER, int32Value INTEGER, "
           "  floatValue REAL, jsonTextId INTEGER, jsonText TEXT);"
           "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId) VALUES "
           "  (1100, NULL, 75, 'mydomain', " GTID ", 9);"
           "INSERT INTO NVTX_EVENTS (start, end, eventType, text, textId, globalTid, domainId, color, "
           "  category, uint64Value, doubleValue, endGlobalTid) VALUES "
           "  (1200, 5000, 59, 'outer', NULL, " GTID ", 0, 4278255360, 3, 42, NULL, NULL),"
           "  (1300, 1400, 59, NULL, 4, " GTID ", 9, NULL, NULL, NULL, 2.5, NULL),"
           "  (1450, NULL, 34, 'a mark', NULL, " GTID ", 0, NULL, NULL, NULL, NULL, NULL),"
           "  (1600, 7000, 60, 'async', NULL, " GTID ", 0, NULL, NULL, NULL, NULL, (1 << 48 | 77 << 24 | 79)),"
           "  (1700, NULL, 59, 'never closed', NULL, " GTID ", 0, NULL, NULL, NULL, NULL, NULL);",
           minimal_schema);
  char *path = make_db(dir, "mini.sqlite", sql);
  tbe_trace *t = import_ok(path);
  const int64_t off = 1700000000000000000LL - 1000;
  assert_int_equal(count_kind(t, TBE_EV_KERNEL), 2);
  assert_int_equal(count_kind(t, TBE_EV_RUNTIME), 1);
  assert_int_equal(count_kind(t, TBE_EV_DRIVER), 1);
  assert_int_equal(count_kind(t, TBE_EV_NVTX_RANGE), 4);
  assert_int_equal(count_kind(t, TBE_EV_NVTX_MARK), 1);
  tbe_str dom = tbe_trace_find_str(t, "mydomain", 8);
  assert_int_not_equal(dom, TBE_NONE);
  int seen = 0;
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_event *e = &t->events[i];
    const char *name = tbe_trace_str(t, e->name);
    const tbe_track *tr = &t->tracks[e->track];
    if (e->kind == TBE_EV_KERNEL) {
      assert_int_equal(tr->type, TBE_TRACK_STREAM);
      assert_int_equal(tr->device, 3);
      assert_int_equal(tr->tid, 13);
      assert_int_equal(tr->pid, 77);
      const tbe_kernel *k = tbe_trace_kernel(t, e);
      if (e->start_ns == 2000 + off) {
        assert_string_equal(name, "void k<float>(float*)");
        assert_int_equal(e->dur_ns, 1000);
        assert_int_equal(k->grid[0], 4);
        assert_int_equal(k->grid[1], 2);
        assert_int_equal(k->block[0], 128);
        assert_int_equal(k->registers, 40);
        assert_int_not_equal(e->link, TBE_NONE);
        assert_string_equal(tbe_trace_str(t, t->events[e->link].name), "cudaLaunchKernel");
        seen |= 1;
      } else {
        assert_string_equal(name, "k"); /* no demangled name: the short one */
        assert_int_equal(t->events[e->link].kind, TBE_EV_DRIVER);
        seen |= 2;
      }
    } else if (e->kind == TBE_EV_DRIVER) {
      assert_string_equal(name, "cuLaunchKernel");
      assert_int_equal(tr->type, TBE_TRACK_THREAD);
      assert_int_equal(tr->pid, 77);
      assert_int_equal(tr->tid, 78);
      assert_int_equal(e->nargs, 1); /* the non-zero return value */
      assert_int_equal(t->args[e->args].v.i, 2);
    } else if (e->kind == TBE_EV_NVTX_RANGE || e->kind == TBE_EV_NVTX_MARK) {
      const tbe_nvtx *n = tbe_trace_nvtx(t, e);
      assert_non_null(n);
      if (strcmp(name, "outer") == 0) {
        assert_int_equal(e->dur_ns, 3800);
        assert_int_equal(n->color, 4278255360u);
        assert_int_equal(n->category, 3);
        assert_int_equal(n->payload_type, TBE_PAYLOAD_UINT64);
        assert_int_equal(n->payload.u, 42);
        assert_int_equal(n->domain, 0);
        seen |= 4;
      } else if (strcmp(name, "registered") == 0) {
        assert_int_equal(n->domain, dom);
        assert_int_equal(n->payload_type, TBE_PAYLOAD_DOUBLE);
        assert_true(n->payload.d == 2.5);
        seen |= 8;
      } else if (strcmp(name, "a mark") == 0) {
        assert_int_equal(e->kind, TBE_EV_NVTX_MARK);
        assert_int_equal(e->dur_ns, 0);
        seen |= 16;
      } else if (strcmp(name, "async") == 0) {
        assert_true(e->flags & TBE_EVF_ASYNC);
        assert_int_equal(e->nargs, 1);
        assert_int_equal(t->args[e->args].v.i, 79);
        seen |= 32;
      } else {
        assert_string_equal(name, "never closed");
        assert_int_equal(e->dur_ns, 0);
      }
    }
  }
  assert_int_equal(seen, 63);
  assert_int_equal(t->nwarnings, 1); /* the range never closed */
  assert_non_null(strstr(tbe_trace_str(t, t->warnings[0]), "never closed"));
  tbe_trace_free(t);
  free(path);
  tu_rmrf(dir);
  free(dir);
}

/* No session start: times stay relative, and a warning says so.  Only the
 * tables present are read. */
/* Kernel names: mangledName as c++filt demangles it, with the mangled text
 * as the "mangled name" arg; nsys's demangledName when libiberty refuses
 * the mangled one (the arg still keeps it); a plain C name as it is; the
 * short name when nothing else is there; and an old schema without
 * mangledName. */
static void test_kernel_names(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  const char *sql =
      "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
      "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, "
      "  deviceId INTEGER NOT NULL, streamId INTEGER, demangledName INTEGER, shortName INTEGER, "
      "  mangledName INTEGER);"
      "INSERT INTO StringIds VALUES "
      "  (1, '_ZN2at6native24vectorized_gather_kernelILi16ElEEvPcS2_PT0_illllb'),"
      "  (2, 'void at::native::vectorized_gather_kernel<(int)16, long>(char *, char *, T2 *, int, "
      "long, long, long, long, bool)'),"
      "  (3, 'vectorized_gather_kernel'),"
      "  (4, 'sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_cublas'),"
      "  (5, '_Z3badXYZ'), (6, 'bad(nvidia spelling)'), (7, 'bad'), (8, 'short_only');"
      "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES"
      "  (1000, 2000, 0, 7, 2, 3, 1),"
      "  (3000, 4000, 0, 7, 4, 4, 4),"
      "  (5000, 6000, 0, 7, 6, 7, 5),"
      "  (7000, 8000, 0, 7, NULL, 8, NULL),"
      "  (9000, 9500, 0, 7, 2, 3, 1);";
  char *path = make_db(dir, "names.sqlite", sql);
  tbe_trace *t = import_ok(path);
  static const struct {
    int64_t start;
    const char *name, *mangled;
  } want[] = {
      {1000,
       "void at::native::vectorized_gather_kernel<16, long>(char*, char*, long*, int, long, long, "
       "long, long, bool)",
       "_ZN2at6native24vectorized_gather_kernelILi16ElEEvPcS2_PT0_illllb"},
      {3000, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_cublas", NULL},
      {5000, "bad(nvidia spelling)", "_Z3badXYZ"},
      {7000, "short_only", NULL},
      {9000,
       "void at::native::vectorized_gather_kernel<16, long>(char*, char*, long*, int, long, long, "
       "long, long, bool)",
       "_ZN2at6native24vectorized_gather_kernelILi16ElEEvPcS2_PT0_illllb"},
  };
  tbe_str key = tbe_trace_find_str(t, "mangled name", 12);
  assert_int_not_equal(key, TBE_NONE);
  assert_int_equal(count_kind(t, TBE_EV_KERNEL), 5);
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_event *e = &t->events[i];
    size_t w = 0;
    while (w < 5 && e->start_ns % 1000000 != want[w].start) w++;
    assert_true(w < 5);
    assert_string_equal(tbe_trace_str(t, e->name), want[w].name);
    if (want[w].mangled) {
      assert_int_equal(e->nargs, 1);
      assert_int_equal(t->args[e->args].key, key);
      assert_int_equal(t->args[e->args].type, TBE_ARG_STR);
      assert_string_equal(tbe_trace_str(t, t->args[e->args].v.s), want[w].mangled);
    } else {
      assert_int_equal(e->nargs, 0);
    }
  }
  tbe_trace_free(t);

  /* No mangledName column (schema 2.x exports may lack it): demangledName. */
  char *old = make_db(dir, "old.sqlite",
                      "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
                      "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER "
                      "  NOT NULL, deviceId INTEGER NOT NULL, streamId INTEGER, demangledName INTEGER, "
                      "  shortName INTEGER);"
                      "INSERT INTO StringIds VALUES (1, 'saxpy(double *, double *, double *, double, int)'),"
                      "  (2, 'saxpy');"
                      "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1000, 2000, 0, 7, 1, 2);");
  t = import_ok(old);
  assert_int_equal(count_kind(t, TBE_EV_KERNEL), 1);
  for (size_t i = 0; i < t->nevents; i++) {
    assert_string_equal(tbe_trace_str(t, t->events[i].name),
                        "saxpy(double *, double *, double *, double, int)");
    assert_int_equal(t->events[i].nargs, 0);
  }
  tbe_trace_free(t);
  free(old);
  free(path);
  tu_rmrf(dir);
  free(dir);
}

static void test_no_session_start(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  char *path = make_db(dir, "rel.sqlite",
                       "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);"
                       "INSERT INTO StringIds VALUES (1, 'kern');"
                       "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId "
                       "  INTEGER, streamId INTEGER, demangledName INTEGER);"
                       "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (10, 25, 0, 7, 1);");
  tbe_trace *t = import_ok(path);
  assert_int_equal(t->nevents, 1);
  assert_int_equal(t->events[0].start_ns, 10);
  assert_int_equal(t->events[0].dur_ns, 15);
  assert_int_equal(t->tracks[t->events[0].track].pid, -1);
  assert_int_equal(t->nwarnings, 1);
  assert_non_null(strstr(tbe_trace_str(t, t->warnings[0]), "session start"));
  tbe_trace_free(t);
  free(path);
  tu_rmrf(dir);
  free(dir);
}

static void test_not_nsys(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  char *path = make_db(dir, "other.sqlite", "CREATE TABLE foo (a INTEGER); INSERT INTO foo VALUES (1);");
  expect_fail(path, TBE_EFORMAT, "not an Nsight Systems export");
  free(path);
  /* StringIds alone is not enough either. */
  path = make_db(dir, "strings.sqlite", "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);");
  expect_fail(path, TBE_EFORMAT, "not an Nsight Systems export");
  free(path);
  tu_rmrf(dir);
  free(dir);
}

static void test_bad_rows(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  char sql[4096];
  /* A text where a timestamp belongs. */
  snprintf(sql, sizeof sql,
           "%s INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, streamId, demangledName) "
           "VALUES (1, 2, 0, 1, 1), (1, 2, 0, 1, 1), ('soon', 5, 0, 1, 1);",
           minimal_schema);
  char *path = make_db(dir, "text.sqlite", sql);
  expect_fail(path, TBE_ECORRUPT, "table CUPTI_ACTIVITY_KIND_KERNEL row 3: column start is not a number");
  free(path);
  /* A NULL in a required column. */
  snprintf(sql, sizeof sql,
           "%s INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, streamId, demangledName) "
           "VALUES (1, 2, 0, NULL, 1);",
           minimal_schema);
  path = make_db(dir, "null.sqlite", sql);
  expect_fail(path, TBE_ECORRUPT, "table CUPTI_ACTIVITY_KIND_KERNEL row 1: column streamId is NULL");
  free(path);
  /* A device ordinal that cannot be one. */
  snprintf(sql, sizeof sql,
           "%s INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, streamId, demangledName) "
           "VALUES (1, 2, -3, 1, 1);",
           minimal_schema);
  path = make_db(dir, "dev.sqlite", sql);
  expect_fail(path, TBE_ECORRUPT, "table CUPTI_ACTIVITY_KIND_KERNEL row 1: column deviceId is not a device ordinal");
  free(path);
  /* A required column missing. */
  path = make_db(dir, "nocol.sqlite",
                 "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);"
                 "CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT);"
                 "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER, end INTEGER, deviceId INTEGER);");
  expect_fail(path, TBE_ECORRUPT, "table CUPTI_ACTIVITY_KIND_MEMCPY: no column \"streamId\"");
  free(path);
  tu_rmrf(dir);
  free(dir);
}

/* Device ordinals (importer.h): every column that names a device is
 * checked before it is narrowed to the model's int32_t.  GPU work's
 * deviceId must be 0..65535; a copy's srcDeviceId/dstDeviceId and the
 * TARGET_INFO ordinals may also be -1 (none: a host end, a GPU that CUDA
 * does not number); anything else is refused naming table, row and column
 * (the copy's ends were cast: 2^32 became device 0, and TARGET_INFO rows
 * out of range were skipped silently). */
static void test_device_ordinals(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  char sql[4096];
  static const struct {
    const char *v;
    const char *want; /* NULL: accepted */
  } kern[] = {{"65535", NULL},
              {"-1", "column deviceId is not a device ordinal (0 to 65535): -1"},
              {"65536", "column deviceId is not a device ordinal (0 to 65535): 65536"},
              {"4294967296", "column deviceId is not a device ordinal (0 to 65535): 4294967296"},
              {"9223372036854775807", "column deviceId is not a device ordinal (0 to 65535): 9223372036854775807"}};
  for (size_t i = 0; i < sizeof kern / sizeof kern[0]; i++) {
    snprintf(sql, sizeof sql,
             "%s INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, streamId, demangledName) "
             "VALUES (1, 2, 0, 1, 1), (1, 2, %s, 1, 1);",
             minimal_schema, kern[i].v);
    char name[32];
    snprintf(name, sizeof name, "k%zu.sqlite", i);
    char *path = make_db(dir, name, sql);
    if (kern[i].want) {
      char want[200];
      snprintf(want, sizeof want, "table CUPTI_ACTIVITY_KIND_KERNEL row 2: %s", kern[i].want);
      expect_fail(path, TBE_ECORRUPT, want);
    } else {
      tbe_trace *t = import_ok(path);
      assert_int_equal(t->ndevices, 2);
      assert_int_equal(t->devices[1].id, 65535);
      tbe_trace_free(t);
    }
    free(path);
  }
  /* a copy's ends */
  static const char copy_schema[] =
      "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL, "
      "  deviceId INTEGER NOT NULL, contextId INTEGER, streamId INTEGER NOT NULL, correlationId INTEGER, "
      "  globalPid INTEGER, bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL, srcKind INTEGER, "
      "  dstKind INTEGER, srcDeviceId INTEGER, dstDeviceId INTEGER);";
  static const struct {
    const char *src, *dst, *want;
  } copy[] = {{"-1", "2", NULL},
              {"NULL", "NULL", NULL},
              {"4294967296", "0",
               "table CUPTI_ACTIVITY_KIND_MEMCPY row 1: column srcDeviceId is not a device ordinal (0 "
               "to 65535, or -1 for none): 4294967296"},
              {"0", "-2", "column dstDeviceId is not a device ordinal (0 to 65535, or -1 for none): -2"}};
  for (size_t i = 0; i < sizeof copy / sizeof copy[0]; i++) {
    snprintf(sql, sizeof sql,
             "%s %s INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, streamId, bytes, "
             "copyKind, srcDeviceId, dstDeviceId) VALUES (1, 2, 0, 1, 8, 1, %s, %s);",
             minimal_schema, copy_schema, copy[i].src, copy[i].dst);
    char name[32];
    snprintf(name, sizeof name, "c%zu.sqlite", i);
    char *path = make_db(dir, name, sql);
    if (copy[i].want) {
      expect_fail(path, TBE_ECORRUPT, copy[i].want);
    } else {
      tbe_trace *t = import_ok(path);
      assert_int_equal(t->nevents, 1);
      const tbe_memcpy *m = tbe_trace_memcpy(t, &t->events[0]);
      assert_non_null(m);
      assert_int_equal(m->src_device, -1);
      assert_int_equal(m->dst_device, i == 0 ? 2 : -1);
      tbe_trace_free(t);
    }
    free(path);
  }
  /* TARGET_INFO_GPU: cuDevice, else id; -1 is no device of ours */
  static const char gpu_schema[] =
      "CREATE TABLE TARGET_INFO_GPU (id INTEGER, name TEXT, cuDevice INTEGER, smCount INTEGER);";
  static const struct {
    const char *rows, *want;
    size_t ndevices;
  } gpus[] = {{"(0, 'A', 1, 108), (1, 'B', -1, 108), (2, 'C', NULL, 132)", NULL, 2},
              {"(0, 'A', 4294967296, 108)",
               "table TARGET_INFO_GPU row 1: column cuDevice is not a device ordinal (0 to 65535, or -1 "
               "for none): 4294967296", 0},
              {"(0, 'A', 1, 108), (70000, 'B', NULL, 108)",
               "table TARGET_INFO_GPU row 2: column id is not a device ordinal", 0}};
  for (size_t i = 0; i < sizeof gpus / sizeof gpus[0]; i++) {
    snprintf(sql, sizeof sql, "%s %s INSERT INTO TARGET_INFO_GPU VALUES %s;", minimal_schema, gpu_schema,
             gpus[i].rows);
    char name[32];
    snprintf(name, sizeof name, "g%zu.sqlite", i);
    char *path = make_db(dir, name, sql);
    if (gpus[i].want) {
      expect_fail(path, TBE_ECORRUPT, gpus[i].want);
    } else {
      tbe_trace *t = import_ok(path);
      assert_int_equal(t->ndevices, gpus[i].ndevices);
      assert_int_equal(t->devices[0].id, 1);
      assert_string_equal(tbe_trace_str(t, t->devices[0].name), "A");
      assert_int_equal(t->devices[1].id, 2);
      assert_int_equal(t->devices[1].sm_count, 132);
      tbe_trace_free(t);
    }
    free(path);
  }
  tu_rmrf(dir);
  free(dir);
}

/* Times outside the model's range (+-146 years of 1970), as the session
 * offset and the row give them, are refused naming table, row and column;
 * the session offset itself when utcEpochNs - systemClockNs overflows.
 * --max-events stops at the row past the limit. */
static void test_time_range_and_limits(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  char sql[4096];
  struct {
    const char *rows, *want;
  } c[] = {
      {"(9223372036854775807, 9223372036854775807, 0, 1, 1)",
       "table CUPTI_ACTIVITY_KIND_KERNEL row 1: column start is out of range"},
      {"(1, 2, 0, 1, 1), (5, 9223372036854775807, 0, 1, 1)",
       "table CUPTI_ACTIVITY_KIND_KERNEL row 2: column end is out of range"},
      {"(-9223372036854775807, 5, 0, 1, 1)",
       "table CUPTI_ACTIVITY_KIND_KERNEL row 1: column start is out of range"},
  };
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    snprintf(sql, sizeof sql,
             "%s INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, streamId, "
             "demangledName) VALUES %s;",
             minimal_schema, c[i].rows);
    char *path = make_db(dir, "times.sqlite", sql);
    expect_fail(path, TBE_ECORRUPT, c[i].want);
    unlink(path);
    free(path);
  }
  char *path = make_db(dir, "offset.sqlite",
                       "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
                       "CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT);"
                       "CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, "
                       "  systemClockNs INTEGER);"
                       "INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (9223372036854775807, "
                       "  -9223372036854775807);");
  expect_fail(path, TBE_ECORRUPT, "utcEpochNs - systemClockNs is out of range");
  free(path);
  snprintf(sql, sizeof sql,
           "%s INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, streamId, demangledName) "
           "VALUES (1, 2, 0, 1, 1), (3, 4, 0, 1, 1), (5, 6, 0, 1, 1);",
           minimal_schema);
  path = make_db(dir, "three.sqlite", sql);
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  tbe_import_error err;
  tbe_import_options o = {.size = sizeof o, .max_events = 2};
  assert_int_equal(tbe_import_file(t, path, &o, &err), TBE_ETOOBIG);
  assert_non_null(strstr(err.message, "table CUPTI_ACTIVITY_KIND_KERNEL row 3: more events than the limit"));
  assert_non_null(strstr(err.message, "raise it with --max-events"));
  tbe_trace_free(t);
  free(path);
  tu_rmrf(dir);
  free(dir);
}

/* Damaged files: a one-line error, never a crash. */
static void test_damaged(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  size_t n;
  uint8_t *data = tu_read_file(tu_data("nsys/saxpy_mpi_cuda_perlmutter.sqlite"), &n);
  assert_non_null(data);
  char *path = tu_join(dir, "bad.sqlite");
  /* Truncated to a few pages: the schema points at pages that are gone. */
  const size_t cuts[] = {4096, n / 4, n / 2};
  for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
    assert_int_equal(tu_write_file(path, data, cuts[c]), 0);
    tbe_trace *t;
    assert_int_equal(tbe_trace_create(&t, NULL), 0);
    tbe_import_error err;
    int rc = tbe_import_file(t, path, NULL, &err);
    assert_true(rc == TBE_ECORRUPT || rc == TBE_EFORMAT || rc == 0);
    if (rc) {
      assert_non_null(strstr(err.message, "bad.sqlite"));
      assert_null(strchr(err.message, '\n'));
    }
    tbe_trace_free(t);
  }
  /* Garbage over every page but the header page. */
  uint8_t *bad = malloc(n);
  memcpy(bad, data, n);
  for (size_t i = 4096; i < n; i++) bad[i] = (uint8_t)(i * 131 + 7);
  assert_int_equal(tu_write_file(path, bad, n), 0);
  expect_fail(path, TBE_ECORRUPT, "bad.sqlite");
  /* A header that says SQLite but nothing else that is. */
  memset(bad + 16, 0xff, 84);
  assert_int_equal(tu_write_file(path, bad, 4096), 0);
  expect_fail(path, TBE_ECORRUPT, "bad.sqlite");
  free(bad);
  free(data);
  free(path);
  tu_rmrf(dir);
  free(dir);
}

/* ---- CUDA memory (CUDA_GPU_MEMORY_USAGE_EVENTS) ---- */

/* A copy of golden export `rel` with rows of known sizes in its CUDA
 * memory table, in the session, on the process of a kernel of GPU 0.  The
 * saxpy export (schema 2.x) has the table, empty, without streamId; the
 * H100 one (3.x, ENUM tables) has none: it gets one with the columns of
 * 3.x and one of the future.  memKind as nsys numbers it (1 pinned, 2
 * device); operation 0 allocation, 1 free. */
static char *memory_db(const char *dir, const char *rel, int *with_stream) {
  size_t n;
  uint8_t *data = tu_read_file(tu_data(rel), &n);
  assert_non_null(data);
  char *path = tu_join(dir, "memory.sqlite");
  assert_int_equal(tu_write_file(path, data, n), 0);
  free(data);
  sqlite3 *db;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  *with_stream = !table_exists(db, "CUDA_GPU_MEMORY_USAGE_EVENTS");
  if (*with_stream)
    exec(db, "CREATE TABLE CUDA_GPU_MEMORY_USAGE_EVENTS (start INTEGER NOT NULL, "
             "  globalPid INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, "
             "  address INTEGER NOT NULL, pc INTEGER NOT NULL, bytes INTEGER NOT NULL, "
             "  memKind INTEGER NOT NULL, memoryOperationType INTEGER NOT NULL, name TEXT, "
             "  correlationId INTEGER, streamId INTEGER, localMemoryPoolAddress INTEGER, "
             "  futureColumn TEXT);");
  exec(db, "CREATE TEMP VIEW k AS SELECT min(start) AS t0, globalPid AS gp "
           "  FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE deviceId = 0;"
           "CREATE TEMP TABLE r (dt INTEGER, addr INTEGER, bytes INTEGER, kind INTEGER, op INTEGER);"
           "INSERT INTO r VALUES (1000, 4096000, 1048576, 2, 0), (2000, 8192000, 3145728, 2, 0),"
           "  (3000, 4096000, 1048576, 2, 1), (4000, 12288000, 4096, 1, 0),"
           "  (5000, 8192000, 3145728, 2, 1);"
           "INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS (start, globalPid, deviceId, contextId, "
           "  address, pc, bytes, memKind, memoryOperationType)"
           "  SELECT t0 + dt, gp, 0, 1, addr, 0, bytes, kind, op FROM k, r;");
  if (*with_stream)
    exec(db, "UPDATE CUDA_GPU_MEMORY_USAGE_EVENTS SET streamId = 7, futureColumn = 'x' "
             "  WHERE memKind = 2;");
  sqlite3_close(db);
  return path;
}

/* The memory events of `t` in time order (at most `max`). */
static size_t memory_events(const tbe_trace *t, const tbe_event **out, size_t max) {
  size_t n = 0;
  for (size_t i = 0; i < t->nevents; i++)
    if (t->events[i].kind == TBE_EV_MEMORY && n < max) out[n++] = &t->events[i];
  for (size_t i = 1; i < n; i++)
    for (size_t j = i; j > 0 && out[j - 1]->start_ns > out[j]->start_ns; j--) {
      const tbe_event *x = out[j];
      out[j] = out[j - 1];
      out[j - 1] = x;
    }
  return n;
}

static void check_memory_usage(const char *rel) {
  char *dir = tu_mkdtemp();
  int with_stream;
  char *path = memory_db(dir, rel, &with_stream);
  tbe_trace *t = import_ok(path);
  const tbe_event *ev[8];
  assert_int_equal(memory_events(t, ev, 8), 5);
  static const struct {
    int64_t bytes;
    uint64_t addr;
    uint8_t kind;
  } want[5] = {{1048576, 4096000, TBE_MEM_DEVICE},
               {3145728, 8192000, TBE_MEM_DEVICE},
               {-1048576, 4096000, TBE_MEM_DEVICE},
               {4096, 12288000, TBE_MEM_PINNED},
               {-3145728, 8192000, TBE_MEM_DEVICE}};
  for (int i = 0; i < 5; i++) {
    const tbe_memory *m = tbe_trace_memory(t, ev[i]);
    assert_non_null(m);
    assert_string_equal(tbe_trace_str(t, ev[i]->name), "[memory]");
    assert_int_equal(ev[i]->dur_ns, 0);
    assert_int_equal(m->bytes, want[i].bytes);
    assert_int_equal(m->addr, want[i].addr);
    assert_int_equal(m->mem_kind, want[i].kind);
    assert_int_equal(m->source, TBE_MEMSRC_CUDA);
    if (i) assert_int_equal(ev[i]->start_ns - ev[0]->start_ns, 1000 * i);
    const tbe_track *tr = &t->tracks[ev[i]->track];
    assert_int_equal(tr->type, TBE_TRACK_STREAM);
    assert_int_equal(tr->tid, i == 3 || !with_stream ? -1 : 7); /* no stream: -1 */
  }
  /* the import finishes the trace: the driver's curve (model/memory.c)
   * has its totals, device memory on GPU 0 (1, 4, 3, 0 MiB), the pinned
   * block on the host; the GPU's counter track "memory allocated"
   * follows the curve */
  static const int64_t totals[5] = {1048576, 4194304, 3145728, 4096, 0};
  for (int i = 0; i < 5; i++) {
    const tbe_memory *m = tbe_trace_memory(t, ev[i]);
    assert_int_equal(m->total_allocated, totals[i]);
    assert_int_equal(m->total_reserved, totals[i]);
    assert_int_equal(m->device, i == 3 ? -1 : 0);
    assert_int_equal(m->device_type, i == 3 ? 0 : 1);
  }
  tbe_str name = tbe_trace_find_str(t, "memory allocated", 16);
  assert_int_not_equal(name, TBE_NONE);
  size_t found = 0;
  for (size_t k = 0; k < t->ntracks; k++) {
    const tbe_track *tr = &t->tracks[k];
    if (!tbe_track_is_metric(tr) || tr->name != name) continue;
    found++;
    assert_int_equal(tr->device, 0);
    assert_int_equal(tr->count, 4);
    static const double v[4] = {1048576, 4194304, 3145728, 0};
    for (uint32_t j = 0; j < tr->count; j++) {
      const tbe_event *c = &t->events[tr->first + j];
      assert_int_equal(c->start_ns, j < 3 ? ev[j]->start_ns : ev[4]->start_ns);
      assert_true(tbe_trace_counter(t, c)->value == v[j]);
    }
  }
  assert_int_equal(found, 1);
  tbe_trace_free(t);
  free(path);
  tu_rmrf(dir);
  free(dir);
}

static void test_memory_usage(void **state) {
  (void)state;
  check_memory_usage("nsys/saxpy_mpi_cuda_perlmutter.sqlite");
  check_memory_usage("nsys/h100_2gpu_1s.sqlite");
}

/* A free of negative bytes is refused naming the column; a table without a
 * required column is refused naming it. */
static void test_memory_usage_bad(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  char sql[2048];
  snprintf(sql, sizeof sql,
           "%s"
           "CREATE TABLE CUDA_GPU_MEMORY_USAGE_EVENTS (start INTEGER NOT NULL, globalPid INTEGER, "
           "  deviceId INTEGER NOT NULL, address INTEGER, bytes INTEGER, memKind INTEGER, "
           "  memoryOperationType INTEGER);"
           "INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS VALUES (2000, %s, 0, 64, -5, 2, 0);",
           minimal_schema, GPID);
  char *p = make_db(dir, "neg.sqlite", sql);
  expect_fail(p, TBE_ECORRUPT, "table CUDA_GPU_MEMORY_USAGE_EVENTS row 1: column bytes is negative");
  free(p);
  snprintf(sql, sizeof sql,
           "%s"
           "CREATE TABLE CUDA_GPU_MEMORY_USAGE_EVENTS (start INTEGER NOT NULL, deviceId INTEGER, "
           "  bytes INTEGER);"
           "INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS VALUES (2000, 0, 5);",
           minimal_schema);
  p = make_db(dir, "noop.sqlite", sql);
  expect_fail(p, TBE_ECORRUPT, "memoryOperationType");
  free(p);
  tu_rmrf(dir);
  free(dir);
}

static void count_progress(void *ctx, uint64_t done, uint64_t total) {
  uint64_t *c = ctx;
  c[0]++;
  c[1] = done;
  c[2] = total;
}

static void test_progress(void **state) {
  (void)state;
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  uint64_t c[3] = {0, 0, 0};
  tbe_import_options o = {.size = sizeof o, .progress = count_progress, .progress_ctx = c};
  assert_int_equal(tbe_import_file(t, tu_data("nsys/h100_2gpu_1s.sqlite"), &o, NULL), 0);
  assert_true(c[0] > 1);
  assert_int_equal(c[1], t->nevents); /* every event row counted at the end */
  assert_true(c[2] >= c[1]);
  tbe_trace_free(t);
}


/* ---- allocation failures ---- */


static void test_alloc_failures(void **state) {
  (void)state;
  tu_import_alloc_sweep(tu_data("nsys/saxpy_mpi_cuda_perlmutter.sqlite"), 5000);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_h100_counts),       cmocka_unit_test(test_saxpy_counts),
      cmocka_unit_test(test_h100_details),      cmocka_unit_test(test_saxpy_details),
      cmocka_unit_test(test_kernel_names),
      cmocka_unit_test(test_read_only),         cmocka_unit_test(test_synthetic_minimal),
      cmocka_unit_test(test_no_session_start),  cmocka_unit_test(test_not_nsys),
      cmocka_unit_test(test_bad_rows),          cmocka_unit_test(test_damaged),
      cmocka_unit_test(test_progress),          cmocka_unit_test(test_alloc_failures),
      cmocka_unit_test(test_time_range_and_limits),
      cmocka_unit_test(test_device_ordinals),
      cmocka_unit_test(test_memory_usage),      cmocka_unit_test(test_memory_usage_bad),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
