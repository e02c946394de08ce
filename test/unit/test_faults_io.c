/* test_faults_io.c: I/O-failure sweeps through the seam of
 * src/common/iofault.h.
 *
 * For each target (the event writer, each exporter into a run directory,
 * the single-file Chrome JSON export, the spool frame writer), each call
 * kind (open, write, fsync, close, rename) and each fault (ENOSPC, EIO and,
 * for writes, a short write after which the disk stays full), the k-th
 * call fails for k = 1, 2, ... until a run meets no fault.  Every run must:
 * return the injected error (the same one from every later call: sticky),
 * leak nothing (allocator counter), leave event files and spools that read
 * back as a clean sequence of whole records (never a torn record), and for
 * exports leave no file at all, neither under a final nor a temporary name.
 * Each sweep prints how many faults it injected. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include "events/spool.h"
#include "common/iofault.h"
#include "tbexport.h"
#include "testutil.h"

static const char *const KIND[] = {"open", "write", "fsync", "close", "rename"};
static const char *const MODE[] = {"ENOSPC", "EIO", "short"};

static long g_faults, g_runs; /* over the whole program, for the summary line */

static int mode_errno(tbe__io_mode m) { return m == TBE__IOF_EIO ? -EIO : -ENOSPC; }

/* ---- file-tree helpers ---- */

static long count_files(const char *dir) { return tu_count_files(dir); }

/* ---- the sweep ---- */

typedef struct target {
  const char *name;
  /* One run with a plan armed; returns the operation's result. */
  int (*run)(struct target *t);
  /* Checks what the run left behind (rc: its result, injected: faults). */
  void (*check)(struct target *t, int rc, long injected);
  void *ctx;
  tbe__io_mode mode;
  int durable; /* fsync files and directories: only in the fsync sweeps, to
                  keep the others fast */
} target;

/* Fails the k-th call of `kind` for k = 1, 2, ... (every k up to 64, then
 * every 3rd) until a run meets no fault; returns the faults injected. */
static long sweep(target *t, tbe__io_kind kind, tbe__io_mode mode) {
  long injected_total = 0, runs = 0, k;
  int done = 0;
  t->mode = mode;
  t->durable = kind == TBE__IO_FSYNC;
  for (k = 1; k < 100000 && !done; k += k < 64 ? 1 : 3, runs++) {
    tbe__io_fault_arm(kind, k, mode);
    int rc = t->run(t);
    long inj = tbe__io_fault_disarm();
    if (inj == 0) {
      if (rc != 0) fprintf(stderr, "%s/%s/%s k=%ld: no fault but rc %d\n", t->name, KIND[kind],
                           MODE[mode], k, rc);
      assert_int_equal(rc, 0);
      done = 1;
    } else {
      if (rc != mode_errno(mode))
        fprintf(stderr, "%s/%s/%s k=%ld: rc %d (%s)\n", t->name, KIND[kind], MODE[mode], k, rc,
                tbe_strerror(rc));
      assert_int_equal(rc, mode_errno(mode));
    }
    t->check(t, rc, inj);
    injected_total += inj;
  }
  assert_true(done);
  /* Runs that met a fault (all but the last), and the calls failed or cut
   * short in them (a short write counts with the ENOSPC writes after it). */
  print_message("io sweep %s/%s/%s: %ld failing runs, %ld faults injected, all reported\n",
                t->name, KIND[kind], MODE[mode], runs - 1, injected_total);
  g_faults += injected_total;
  g_runs += runs - 1;
  return injected_total;
}

static long sweep_all(target *t, int with_open_close_rename) {
  long total = 0;
  for (int kind = 0; kind < TBE__IO_NKINDS; kind++) {
    if (!with_open_close_rename && kind != TBE__IO_WRITE) continue;
    for (int m = 0; m < 3; m++) {
      if (m == TBE__IOF_SHORT && kind != TBE__IO_WRITE) continue;
      total += sweep(t, (tbe__io_kind)kind, (tbe__io_mode)m);
    }
  }
  return total;
}

/* ---- the event writer ---- */

#define WN 400

typedef struct wctx {
  char *dir;
  char path[4096];
  long live;
} wctx;

static int writer_run(target *t) {
  wctx *c = t->ctx;
  tu_rmrf(c->dir);
  c->path[0] = 0;
  tu_failalloc fa;
  tbe_allocator a = tu_failalloc_init(&fa, 1L << 40);
  tbe_writer_options o;
  tbe_writer_options_init(&o);
  o.buffer_size = 700; /* many flushes */
  o.flush_interval_s = 3600;
  o.durable = t->durable;
  o.allocator = &a;
  o.host = "h";
  tbe_writer *w = NULL;
  int rc = tbe_writer_open(&w, c->dir, &o);
  if (rc) {
    c->live = fa.live;
    return rc;
  }
  snprintf(c->path, sizeof c->path, "%s", tbe_writer_path(w));
  int first = 0;
  for (int i = 0; i < WN; i++) {
    int r = tbe_writer_add_scalar(w, "loss", (double)i, i, 1000.0 + i);
    if (first) assert_int_equal(r, first); /* sticky */
    else first = r;
    if (i % 97 == 96) {
      r = tbe_writer_flush(w, 0);
      if (first) assert_int_equal(r, first);
      else first = r;
    }
  }
  int r = tbe_writer_close(w);
  if (first) assert_int_equal(r, first); /* close reports it too */
  else first = r;
  c->live = fa.live;
  return first;
}

/* The file holds the version record then scalars 0, 1, ..., m-1, all
 * whole; returns m. */
static long read_back(const char *path) {
  tbe_reader *r = NULL;
  assert_int_equal(tbe_reader_open(&r, path, 0, NULL), 0);
  const tbe_tb_event *ev;
  long n = 0, m = 0;
  int rc;
  while ((rc = tbe_reader_next(r, &ev)) == 1) {
    if (n++ == 0) {
      assert_int_equal(ev->kind, TBE_TB_FILE_VERSION);
      continue;
    }
    assert_int_equal(ev->nvalues, 1);
    assert_string_equal(ev->values[0].tag, "loss");
    assert_int_equal(ev->step, m);
    m++;
  }
  if (rc != 0) {
    tbe_reader_error_info info;
    tbe_reader_error(r, &info);
    fprintf(stderr, "%s: %s at %llu\n", path, info.message, (unsigned long long)info.offset);
  }
  assert_int_equal(rc, 0); /* no torn or corrupt record anywhere */
  tbe_reader_close(r);
  return m;
}

static void writer_check(target *t, int rc, long injected) {
  wctx *c = t->ctx;
  assert_int_equal(c->live, 0);
  if (!c->path[0]) {
    /* open failed: it leaves no file behind */
    assert_true(rc != 0);
    assert_int_equal(count_files(c->dir), 0);
    return;
  }
  long m = read_back(c->path);
  if (!injected) assert_int_equal(m, WN);
  else assert_true(m <= WN);
}

static void test_writer_io(void **state) {
  (void)state;
  char *base = tu_mkdtemp();
  wctx c = {tu_join(base, "run"), {0}, 0};
  target t = {"writer", writer_run, writer_check, &c, 0, 0};
  long n = sweep_all(&t, 1);
  assert_true(n > 20);
  free(c.dir);
  tu_rmrf(base);
  free(base);
}

/* ---- exporters ---- */

typedef struct xctx {
  tbe_trace *trace;
  char *base;
  char *logdir;
  unsigned outputs;
  long live;
  int single_json; /* tbe_export_chrome_json(plain) instead of a run */
} xctx;

static int export_run(target *t) {
  xctx *c = t->ctx;
  tu_rmrf(c->logdir);
  if (c->single_json) {
    mkdir(c->logdir, 0755);
    char *p = tu_join(c->logdir, "out.trace.json");
    int rc = tbe_export_chrome_json(c->trace, p, 0, 0);
    free(p);
    c->live = 0;
    return rc;
  }
  tu_failalloc fa;
  tbe_allocator a = tu_failalloc_init(&fa, 1L << 40);
  tbe_export_options o;
  tbe_export_options_init(&o);
  o.logdir = c->logdir;
  o.run = "r";
  o.host = "h";
  o.outputs = c->outputs;
  o.durable = t->durable;
  o.allocator = &a;
  int rc = tbe_export_run(c->trace, &o);
  c->live = fa.live;
  return rc;
}

static void export_check(target *t, int rc, long injected) {
  xctx *c = t->ctx;
  (void)injected;
  assert_int_equal(c->live, 0);
  long n = count_files(c->logdir);
  if (rc) {
    if (n) fprintf(stderr, "%s: %ld files left after a failed export\n", t->name, n);
    assert_int_equal(n, 0); /* no final file, no temporary one */
    return;
  }
  long want = c->single_json ? 1 : 0;
  if (c->outputs & TBE_OUT_XPLANE) want++;
  if (c->outputs & TBE_OUT_JSON) want += c->single_json ? 1 : 2; /* + <run>/h.pt.trace.json.gz */
  if (c->outputs & TBE_OUT_EVENTS) want += 2;                      /* + <run>/hparams/<host>/ session */
  if (!c->single_json && (c->outputs & (TBE_OUT_XPLANE | TBE_OUT_JSON)))
    want++; /* + <host>.analysis.pb */
  assert_int_equal(n, want);
  if (c->outputs & TBE_OUT_EVENTS) {
    char *run = tu_join(c->logdir, "r");
    tbe_reader *r = NULL;
    assert_int_equal(tbe_reader_open(&r, run, 0, NULL), 0);
    const tbe_tb_event *ev;
    int k, cnt = 0;
    while ((k = tbe_reader_next(r, &ev)) == 1) cnt++;
    assert_int_equal(k, 0);
    assert_true(cnt > 1);
    tbe_reader_close(r);
    free(run);
  }
}

static tbe_trace *load(const char *rel) {
  tbe_trace *t = NULL;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  tbe_import_error err;
  int rc = tbe_import_file(t, tu_data(rel), NULL, &err);
  if (rc) fprintf(stderr, "%s: %s\n", rel, err.message);
  assert_int_equal(rc, 0);
  return t;
}

/* A synthetic trace large enough that the XSpace output flushes its
 * buffer in the middle of a line (so lengths are patched with pwrite) and
 * the JSON output writes many chunks: 80,000 CPU ops with arguments on one
 * host thread. */
static tbe_trace *big_trace(void) {
  tbe_trace *t = NULL;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  uint32_t host;
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_THREAD, 100, 101, -1, &host), 0);
  tbe_str names[4] = {tbe_trace_str_id(t, "aten::mm"), tbe_trace_str_id(t, "aten::add"),
                      tbe_trace_str_id(t, "aten::relu"), tbe_trace_str_id(t, "aten::copy_")};
  tbe_arg arg = {tbe_trace_str_id(t, "Input Dims"), TBE_ARG_JSON,
                 {.s = tbe_trace_str_id(t, "[[1024, 1024], [1024, 1024]]")}};
  for (int i = 0; i < 80000; i++) {
    tbe_event e;
    memset(&e, 0, sizeof e);
    e.kind = TBE_EV_CPU_OP;
    e.track = host;
    e.name = names[i % 4];
    e.start_ns = 1700000000000000000ll + (int64_t)i * 1000;
    e.dur_ns = 500 + i % 300;
    e.external_id = (uint64_t)i + 1;
    assert_int_equal(tbe_trace_add_event(t, &e, NULL, &arg, 1, NULL), 0);
  }
  assert_int_equal(tbe_trace_finish(t), 0);
  return t;
}

static void export_sweeps(const char *name, unsigned outputs, int single_json, int all_kinds) {
  xctx c;
  memset(&c, 0, sizeof c);
  c.trace = all_kinds ? load("kineto/h200_add_loop.trace.json") : big_trace();
  c.base = tu_mkdtemp();
  c.logdir = tu_join(c.base, "logdir");
  c.outputs = outputs;
  c.single_json = single_json;
  target t = {name, export_run, export_check, &c, 0, 0};
  long n = sweep_all(&t, all_kinds);
  assert_true(n > 0);
  tbe_trace_free(c.trace);
  tu_rmrf(c.base);
  free(c.logdir);
  free(c.base);
}

static void test_export_xplane_io(void **state) {
  (void)state;
  export_sweeps("export-xplane", TBE_OUT_XPLANE, 0, 1);
}
static void test_export_json_gz_io(void **state) {
  (void)state;
  export_sweeps("export-json.gz", TBE_OUT_JSON, 0, 1);
}
static void test_export_events_io(void **state) {
  (void)state;
  export_sweeps("export-events", TBE_OUT_EVENTS, 0, 1);
}
static void test_export_big_io(void **state) {
  (void)state;
  export_sweeps("export-xplane-big", TBE_OUT_XPLANE, 0, 0);
  export_sweeps("export-json.gz-big", TBE_OUT_JSON, 0, 0);
  export_sweeps("export-json-plain-big", 0, 1, 0);
}
static void test_export_all_io(void **state) {
  (void)state;
  export_sweeps("export-all", TBE_OUT_ALL, 0, 1);
}
static void test_export_json_plain_io(void **state) {
  (void)state;
  export_sweeps("export-json-plain", 0, 1, 1);
}

/* ---- the spool frame writer ---- */

#define SN 60

typedef struct sctx {
  char *path;
  long frames_ok;
} sctx;

static int spool_run(target *t) {
  sctx *c = t->ctx;
  unlink(c->path);
  int fd = open(c->path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0600);
  assert_true(fd >= 0);
  uint8_t head[TBE__SPOOL_HEADER];
  tbe__spool_header(head, 1);
  assert_int_equal(write(fd, head, sizeof head), (ssize_t)sizeof head);
  uint8_t payload[1000];
  int first = 0;
  c->frames_ok = 0;
  for (int i = 0; i < SN; i++) {
    /* Items: one note item of a length varying with i. */
    size_t body = 20 + (size_t)(i * 37) % 900;
    uint16_t ty = TBE__SP_NOTE, bl = (uint16_t)body;
    memcpy(payload, &ty, 2);
    memcpy(payload + 2, &bl, 2);
    memset(payload + 4, 'a' + i % 26, body);
    /* Like the collector: a failed frame is dropped and writing goes on. */
    int rc = tbe__spool_write_frame(fd, payload, 4 + body);
    if (rc == 0) c->frames_ok++;
    else if (!first) first = rc;
  }
  close(fd);
  return first;
}

static int count_item(void *ctx, unsigned type, const uint8_t *body, size_t len) {
  (void)body;
  (void)len;
  assert_int_equal(type, TBE__SP_NOTE);
  (*(long *)ctx)++;
  return 0;
}

static void spool_check(target *t, int rc, long injected) {
  sctx *c = t->ctx;
  (void)rc;
  (void)injected;
  size_t n;
  uint8_t *d = tu_read_file(c->path, &n);
  assert_non_null(d);
  tbe__spool_tail tail;
  long items = 0;
  assert_int_equal(tbe__spool_scan(d, n, count_item, &items, &tail), 0);
  if (tail.bytes) fprintf(stderr, "spool: %s after %zu frames\n", tail.why, (size_t)tail.frames);
  assert_int_equal(tail.bytes, 0); /* every frame whole: no torn one */
  assert_int_equal(items, c->frames_ok);
  free(d);
}

static void test_spool_io(void **state) {
  (void)state;
  char *base = tu_mkdtemp();
  sctx c = {tu_join(base, "p.spool"), 0};
  target t = {"spool", spool_run, spool_check, &c, 0, 0};
  for (int m = 0; m < 3; m++) sweep(&t, TBE__IO_WRITE, (tbe__io_mode)m);
  free(c.path);
  tu_rmrf(base);
  free(base);
}

static void test_total(void **state) {
  (void)state;
  print_message("io sweeps: %ld failing runs, %ld faults injected in total, all reported\n", g_runs,
                g_faults);
  assert_true(g_faults > 100);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_writer_io),        cmocka_unit_test(test_export_xplane_io),
      cmocka_unit_test(test_export_json_gz_io), cmocka_unit_test(test_export_events_io),
      cmocka_unit_test(test_export_all_io),
      cmocka_unit_test(test_export_big_io),    cmocka_unit_test(test_export_json_plain_io),
      cmocka_unit_test(test_spool_io),         cmocka_unit_test(test_total),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
