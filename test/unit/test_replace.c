/* test_replace.c: replacing a run is a transaction (src/trace/export/export_run.c,
 * the stage of src/common/fsutil.c).
 *
 * What must never happen:
 * - a --force export that fails (a full disk, an I/O error at any write,
 *   fsync, close, link or rename) changes a byte of the run it replaces, or
 *   leaves a file behind, hidden or not;
 * - a process killed (SIGKILL) while it exports leaves a partial file under
 *   a final name; the next export into that run is then refused without
 *   --force, or leaves the dead writer's temporary files;
 * - a live writer's temporary file is removed by another writer;
 * - --force keeps the run's earlier summary events of that host (each
 *   re-export would add a point at step 0), or touches another host's, or
 *   a file that is not ours; a repeated diff adds a second comparison;
 * - two concurrent --force exports of different traces into one run end
 *   with the XSpace of one and the Chrome JSON of the other.
 * Kills are placed exactly with the I/O seam's KILL mode in a forked
 * child (src/common/iofault.h). */
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
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/fsutil.h"
#include "common/iofault.h"
#include "tbexport.h"
#include "testutil.h"

/* ---- helpers ---- */

static tbe_trace *load(const char *rel) {
  tbe_trace *t = NULL;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  tbe_import_error err;
  int rc = tbe_import_file(t, tu_data(rel), NULL, &err);
  if (rc) fprintf(stderr, "%s: %s\n", rel, err.message);
  assert_int_equal(rc, 0);
  return t;
}

static int export(const tbe_trace *t, const char *logdir, const char *host, int force,
                  int durable, char *where, size_t wsize) {
  tbe_export_options o;
  tbe_export_options_init(&o);
  o.logdir = logdir;
  o.run = "r";
  o.host = host;
  o.force = force;
  o.durable = durable;
  o.error_path = where;
  o.error_path_size = wsize;
  return tbe_export_run(t, &o);
}

/* Entries of `dir` (not recursive) whose name starts with `prefix` and,
 * when `suffix` is given, ends with it; the last one's name in `last`. */
static int count_names(const char *dir, const char *prefix, const char *suffix, char *last,
                       size_t size) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  int n = 0;
  size_t pl = strlen(prefix), sl = suffix ? strlen(suffix) : 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    size_t l = strlen(de->d_name);
    if (strncmp(de->d_name, prefix, pl) != 0) continue;
    if (suffix && (l < sl || strcmp(de->d_name + l - sl, suffix) != 0)) continue;
    n++;
    if (last) snprintf(last, size, "%s", de->d_name);
  }
  closedir(d);
  return n;
}

static long g_hidden;
static int hidden_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb;
  (void)flag;
  if (strncmp(p + ftw->base, TBE__TMP_PREFIX, strlen(TBE__TMP_PREFIX)) == 0 ||
      strcmp(p + ftw->base, TBE__LOCK_FILE) == 0)
    g_hidden++;
  return 0;
}
/* Temporary files and lock files anywhere below `dir`. */
static long hidden_below(const char *dir) {
  g_hidden = 0;
  nftw(dir, hidden_cb, 16, FTW_PHYS);
  return g_hidden;
}

/* The run's three files of host "h": their bytes (the summary events
 * found by its name scheme). */
typedef struct run_files {
  uint8_t *data[3];
  size_t len[3];
  char summary[512];
} run_files;

static int read_run(const char *logdir, run_files *f) {
  memset(f, 0, sizeof *f);
  char p[4700], dir[4096];
  snprintf(dir, sizeof dir, "%s/r", logdir);
  if (count_names(dir, "events.out.tfevents.", ".h.tbexport-summary", f->summary,
                  sizeof f->summary) != 1)
    return -1;
  snprintf(p, sizeof p, "%s/plugins/profile/r/h.xplane.pb", logdir);
  f->data[0] = tu_read_file(p, &f->len[0]);
  snprintf(p, sizeof p, "%s/plugins/profile/r/h.trace.json.gz", logdir);
  f->data[1] = tu_read_file(p, &f->len[1]);
  snprintf(p, sizeof p, "%s/%s", dir, f->summary);
  f->data[2] = tu_read_file(p, &f->len[2]);
  return f->data[0] && f->data[1] && f->data[2] ? 0 : -1;
}

static void free_run(run_files *f) {
  for (int i = 0; i < 3; i++) free(f->data[i]);
  memset(f, 0, sizeof *f);
}

static int same_file(const run_files *a, const run_files *b, int i) {
  return a->len[i] == b->len[i] && memcmp(a->data[i], b->data[i], a->len[i]) == 0;
}

/* The run now is byte for byte `want` (same summary file name too). */
static void assert_run_is(const char *logdir, const run_files *want, const char *what) {
  run_files now;
  if (read_run(logdir, &now) != 0) fail_msg("%s: the run is incomplete", what);
  for (int i = 0; i < 3; i++)
    if (!same_file(&now, want, i)) fail_msg("%s: file %d changed", what, i);
  assert_string_equal(now.summary, want->summary);
  free_run(&now);
}

/* ---- --force replaces, and only ours ---- */

static void test_force_leaves_one_summary(void **state) {
  (void)state;
  char *base = tu_mkdtemp();
  char *logdir = tu_join(base, "log");
  char *rundir = tu_join(logdir, "r");
  tbe_trace *t = load("cli/small.trace.json");
  char where[4096];
  assert_int_equal(export(t, logdir, "h", 0, 0, where, sizeof where), 0);
  assert_int_equal(export(t, logdir, "g", 0, 0, where, sizeof where), 0); /* another host */
  /* A user's own event file in the run folder. */
  tbe_writer_options wo;
  tbe_writer_options_init(&wo);
  wo.host = "h";
  tbe_writer *w;
  assert_int_equal(tbe_writer_open(&w, rundir, &wo), 0);
  assert_int_equal(tbe_writer_add_scalar(w, "mine", 1, 0, 1), 0);
  assert_int_equal(tbe_writer_close(w), 0);
  /* Without force: refused, naming the summary in the way. */
  assert_int_equal(export(t, logdir, "h", 0, 0, where, sizeof where), TBE_EEXIST);
  assert_non_null(strstr(where, "/plugins/profile/r/h.xplane.pb"));
  tbe_export_options o;
  tbe_export_options_init(&o);
  o.logdir = logdir;
  o.run = "r";
  o.host = "h";
  o.outputs = TBE_OUT_EVENTS;
  o.error_path = where;
  o.error_path_size = sizeof where;
  assert_int_equal(tbe_export_run(t, &o), TBE_EEXIST);
  assert_non_null(strstr(where, ".h.tbexport-summary"));
  for (int i = 0; i < 40; i++) assert_int_equal(export(t, logdir, "h", 1, 0, NULL, 0), 0);
  /* Two hosts: a TensorBoard run each (r/h/, r/g/: h's files moved there
   * when g joined), r/ the job's series beside the user's file. */
  char *hdir = tu_join(rundir, "h"), *gdir = tu_join(rundir, "g");
  assert_int_equal(count_names(hdir, "events.out.tfevents.", ".h.tbexport-summary", NULL, 0), 1);
  assert_int_equal(count_names(hdir, "events.out.tfevents.", ".h.tbexport-hparams", NULL, 0), 1);
  assert_int_equal(count_names(hdir, "events.out.tfevents.", NULL, NULL, 0), 2);
  assert_int_equal(count_names(gdir, "events.out.tfevents.", ".g.tbexport-summary", NULL, 0), 1);
  assert_int_equal(count_names(rundir, "events.out.tfevents.", ".r.tbexport-job", NULL, 0), 1);
  assert_int_equal(count_names(rundir, "events.out.tfevents.", NULL, NULL, 0), 2);
  /* TensorBoard sees one point per summary tag of each: read the runs. */
  const char *dirs[3] = {hdir, gdir, rundir};
  for (int d = 0; d < 3; d++) {
    tbe_reader *r;
    assert_int_equal(tbe_reader_open(&r, dirs[d], 0, NULL), 0);
    const tbe_tb_event *ev;
    int k, wall = 0, mine = 0;
    while ((k = tbe_reader_next(r, &ev)) == 1) {
      for (size_t i = 0; i < ev->nvalues; i++) {
        if (strcmp(ev->values[i].tag, "summary/wall_time_ms") == 0) wall++;
        if (strcmp(ev->values[i].tag, "mine") == 0) mine++;
      }
    }
    assert_int_equal(k, 0);
    assert_int_equal(wall, 1);
    assert_int_equal(mine, d == 2);
    tbe_reader_close(r);
  }
  free(hdir);
  free(gdir);
  assert_int_equal(hidden_below(logdir), 0);
  tbe_trace_free(t);
  tu_rmrf(base);
  free(rundir);
  free(logdir);
  free(base);
}

static void test_diff_replaces_its_own(void **state) {
  (void)state;
  char *base = tu_mkdtemp();
  char *rundir = tu_join(base, "new");
  tbe_trace *t = load("cli/small.trace.json");
  tbe_analysis *an;
  assert_int_equal(tbe_analysis_create(&an, t, NULL), 0);
  tbe_diff *d;
  assert_int_equal(tbe_diff_create(&d, an, an, NULL), 0);
  char path[4096];
  for (int i = 0; i < 5; i++)
    assert_int_equal(tbe_diff_write_events(d, rundir, "old", "new", 10, NULL, path, sizeof path), 0);
  assert_non_null(strstr(path, "/new/events.out.tfevents."));
  assert_non_null(strstr(path, ".old.tbexport-diff"));
  assert_int_equal(count_names(rundir, "events.out.tfevents.", NULL, NULL, 0), 1);
  assert_int_equal(tbe_diff_write_events(d, rundir, "other", "new", 10, NULL, NULL, 0), 0);
  assert_int_equal(count_names(rundir, "events.out.tfevents.", ".old.tbexport-diff", NULL, 0), 1);
  assert_int_equal(count_names(rundir, "events.out.tfevents.", ".other.tbexport-diff", NULL, 0), 1);
  assert_int_equal(hidden_below(base), 0);
  tbe_diff_free(d);
  tbe_analysis_free(an);
  tbe_trace_free(t);
  tu_rmrf(base);
  free(rundir);
  free(base);
}

/* ---- failures keep the old run ---- */

static const char *const KIND[] = {"open", "write", "fsync", "close", "rename"};

/* Replaces run A by B (force) with the k-th call of `kind` failing, for
 * k = 1, 2, ... until one succeeds: after every failure the run is A to
 * the byte and nothing is left behind; the success gives B. */
static long fail_sweep(tbe__io_kind kind, tbe__io_mode mode, int durable) {
  char *base = tu_mkdtemp();
  char *logdir = tu_join(base, "log");
  char *ref = tu_join(base, "ref");
  tbe_trace *a = load("cli/small.trace.json"), *b = load("cli/small2.trace.json");
  run_files A, B;
  assert_int_equal(export(a, logdir, "h", 0, 0, NULL, 0), 0);
  assert_int_equal(read_run(logdir, &A), 0);
  assert_int_equal(export(b, ref, "h", 0, 0, NULL, 0), 0);
  assert_int_equal(read_run(ref, &B), 0);
  long failures = 0;
  int done = 0;
  for (long k = 1; k < 10000 && !done; k++) {
    char where[4096];
    tbe__io_fault_arm(kind, k, mode);
    int rc = export(b, logdir, "h", 1, durable, where, sizeof where);
    long inj = tbe__io_fault_disarm();
    char what[128];
    snprintf(what, sizeof what, "%s fault %ld%s", KIND[kind], k, durable ? " (durable)" : "");
    if (inj == 0) {
      assert_int_equal(rc, 0);
      run_files now;
      assert_int_equal(read_run(logdir, &now), 0);
      assert_true(same_file(&now, &B, 0) && same_file(&now, &B, 1));
      free_run(&now);
      done = 1;
    } else {
      if (rc != (mode == TBE__IOF_EIO ? -EIO : -ENOSPC))
        fail_msg("%s: rc %s", what, tbe_err_name(rc));
      assert_true(where[0] != 0); /* the error names a path */
      assert_run_is(logdir, &A, what);
      failures++;
    }
    if (hidden_below(logdir)) fail_msg("%s: hidden files left", what);
  }
  assert_true(done);
  free_run(&A);
  free_run(&B);
  tbe_trace_free(a);
  tbe_trace_free(b);
  tu_rmrf(base);
  free(ref);
  free(logdir);
  free(base);
  return failures;
}

static void test_failed_replacement_keeps_run(void **state) {
  (void)state;
  long n = 0;
  n += fail_sweep(TBE__IO_WRITE, TBE__IOF_ENOSPC, 0);
  n += fail_sweep(TBE__IO_WRITE, TBE__IOF_SHORT, 0);
  n += fail_sweep(TBE__IO_OPEN, TBE__IOF_EIO, 0);
  n += fail_sweep(TBE__IO_FSYNC, TBE__IOF_EIO, 0);   /* replacing: new files are synced */
  n += fail_sweep(TBE__IO_FSYNC, TBE__IOF_EIO, 1);   /* and the folders */
  n += fail_sweep(TBE__IO_CLOSE, TBE__IOF_EIO, 0);
  n += fail_sweep(TBE__IO_RENAME, TBE__IOF_ENOSPC, 0); /* hiding the old, switching */
  n += fail_sweep(TBE__IO_RENAME, TBE__IOF_EIO, 1);
  print_message("failed replacements: %ld, each left the old run byte-identical\n", n);
}

/* The stage alone: two new files replace two old ones and a third old one
 * goes; every failing rename or link puts all of them back. */
static void test_stage_rollback(void **state) {
  (void)state;
  char *base = tu_mkdtemp();
  char *p[3];
  const char *names[3] = {"a", "b", "c"};
  for (int i = 0; i < 3; i++) {
    p[i] = tu_join(base, names[i]);
    assert_int_equal(tu_write_file(p[i], "old", 3), 0);
  }
  long rolled = 0;
  for (long k = 1;; k++) {
    tbe_allocator al;
    tbe__allocator_init(&al, NULL);
    tbe__stage s;
    tbe__stage_init(&s, &al, base);
    int fa, fb;
    assert_int_equal(tbe__stage_file(&s, "", "a", &fa), 0);
    assert_int_equal(tbe__stage_file(&s, "", "b", &fb), 0);
    assert_int_equal(tbe__stage_remove(&s, "", "c"), 0);
    assert_int_equal(tbe__write_all(fa, "new", 3), 0);
    assert_int_equal(tbe__write_all(fb, "new", 3), 0);
    tbe__io_fault_arm(TBE__IO_RENAME, k, TBE__IOF_EIO);
    int rc = tbe__stage_commit(&s, 1, 0);
    long inj = tbe__io_fault_disarm();
    tbe__stage_free(&s);
    size_t n;
    if (!inj) {
      assert_int_equal(rc, 0);
      for (int i = 0; i < 2; i++) {
        uint8_t *d = tu_read_file(p[i], &n);
        assert_true(n == 3 && memcmp(d, "new", 3) == 0);
        free(d);
      }
      struct stat st;
      assert_int_not_equal(lstat(p[2], &st), 0);
      break;
    }
    assert_int_equal(rc, -EIO);
    for (int i = 0; i < 3; i++) {
      uint8_t *d = tu_read_file(p[i], &n);
      assert_non_null(d);
      assert_true(n == 3 && memcmp(d, "old", 3) == 0);
      free(d);
    }
    assert_int_equal(hidden_below(base), 0);
    rolled++;
  }
  assert_true(rolled >= 4); /* 3 hidden names, 2 renames */
  assert_int_equal(hidden_below(base), 0);
  for (int i = 0; i < 3; i++) free(p[i]);
  tu_rmrf(base);
  free(base);
}

/* ---- SIGKILL ---- */

/* Exports `t` (force) in a child that the seam kills at the k-th call of
 * `kind`; returns 1 if it was killed there, 0 if it finished. */
static int killed_export(const tbe_trace *t, const char *logdir, tbe__io_kind kind, long k) {
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    tbe__io_fault_arm(kind, k, TBE__IOF_KILL);
    int rc = export(t, logdir, "h", 1, 0, NULL, 0);
    _exit(rc ? 2 : 0);
  }
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  if (WIFSIGNALED(st)) {
    assert_int_equal(WTERMSIG(st), SIGKILL);
    return 1;
  }
  assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  return 0;
}

/* Calls of `kind` one export makes. */
static long calls_of(const tbe_trace *t, const char *logdir, tbe__io_kind kind) {
  tbe__io_fault_arm(kind, 1L << 40, TBE__IOF_EIO);
  assert_int_equal(export(t, logdir, "h", 1, 0, NULL, 0), 0);
  long n = tbe__io_fault_calls(kind);
  tbe__io_fault_disarm();
  return n;
}

static void test_kill_during_export(void **state) {
  (void)state;
  char *base = tu_mkdtemp();
  char *logdir = tu_join(base, "log");
  char *rundir = tu_join(logdir, "r");
  char *pdir = tu_join(logdir, "plugins/profile/r");
  tbe_trace *a = load("cli/small.trace.json"), *b = load("cli/small2.trace.json");
  char *count_dir = tu_join(base, "count");
  long writes = calls_of(b, count_dir, TBE__IO_WRITE);
  long renames = calls_of(b, count_dir, TBE__IO_RENAME);
  assert_true(writes > 3 && renames >= 3);

  /* 1. The first export of a run, killed at its last write (the end of
   * the events file) or as its commit begins: no final name at all, and
   * the next export, without --force, is not refused and removes the
   * dead one's temporary files. */
  for (int at = 0; at < 2; at++) {
    tu_rmrf(logdir);
    assert_int_equal(killed_export(b, logdir, at ? TBE__IO_RENAME : TBE__IO_WRITE,
                                   at ? 1 : writes), 1);
    assert_int_equal(count_names(rundir, "events", NULL, NULL, 0), 0);
    assert_int_equal(count_names(pdir, "h.", NULL, NULL, 0), 0);
    assert_true(count_names(rundir, TBE__TMP_PREFIX, NULL, NULL, 0) +
                    count_names(pdir, TBE__TMP_PREFIX, NULL, NULL, 0) >= 1);
    assert_int_equal(export(b, logdir, "h", 0, 0, NULL, 0), 0);
    assert_int_equal(hidden_below(logdir), 0);
  }

  /* 2. Replacing run A, killed at every write and at the start of the
   * commit: A stays, byte for byte; the next export cleans up. */
  tu_rmrf(logdir);
  assert_int_equal(export(a, logdir, "h", 0, 0, NULL, 0), 0);
  run_files A;
  assert_int_equal(read_run(logdir, &A), 0);
  long kills = 0;
  for (long k = 1; k <= writes; k++) {
    assert_int_equal(killed_export(b, logdir, TBE__IO_WRITE, k), 1);
    char what[64];
    snprintf(what, sizeof what, "killed at write %ld", k);
    assert_run_is(logdir, &A, what);
    kills++;
  }
  assert_int_equal(killed_export(b, logdir, TBE__IO_RENAME, 1), 1);
  assert_run_is(logdir, &A, "killed as the commit began");
  assert_true(hidden_below(logdir) > 0);

  /* 3. Killed inside the commit (the documented gap): every final name
   * holds a complete file, A's or B's, and the next export cleans up. */
  run_files B;
  char *ref = tu_join(base, "ref");
  assert_int_equal(export(b, ref, "h", 0, 0, NULL, 0), 0);
  assert_int_equal(read_run(ref, &B), 0);
  for (long k = 2; k <= renames; k++) {
    assert_int_equal(export(a, logdir, "h", 1, 0, NULL, 0), 0);
    assert_int_equal(killed_export(b, logdir, TBE__IO_RENAME, k), 1);
    char last[512];
    int nsum = count_names(rundir, "events.out.tfevents.", ".h.tbexport-summary", last,
                           sizeof last);
    assert_true(nsum >= 1 && nsum <= 2);
    run_files now;
    memset(&now, 0, sizeof now);
    char p[4096];
    snprintf(p, sizeof p, "%s/h.xplane.pb", pdir);
    now.data[0] = tu_read_file(p, &now.len[0]);
    snprintf(p, sizeof p, "%s/h.trace.json.gz", pdir);
    now.data[1] = tu_read_file(p, &now.len[1]);
    for (int i = 0; i < 2; i++) assert_true(same_file(&now, &A, i) || same_file(&now, &B, i));
    free_run(&now);
    assert_int_equal(export(b, logdir, "h", 1, 0, NULL, 0), 0);
    assert_int_equal(count_names(rundir, "events.out.tfevents.", ".h.tbexport-summary", NULL, 0),
                     1);
    assert_int_equal(hidden_below(logdir), 0);
    kills++;
  }
  print_message("SIGKILL during export: %ld kills, no partial file under a final name\n",
                kills + 2);
  free_run(&A);
  free_run(&B);
  tbe_trace_free(a);
  tbe_trace_free(b);
  tu_rmrf(base);
  free(ref);
  free(count_dir);
  free(pdir);
  free(rundir);
  free(logdir);
  free(base);
}

/* A live writer's temporary file is kept; once its writer is gone it is
 * removed by the next export into that folder. */
static void test_live_temp_kept(void **state) {
  (void)state;
  char *base = tu_mkdtemp();
  char *logdir = tu_join(base, "log");
  char *pdir = tu_join(logdir, "plugins/profile/r");
  assert_int_equal(tbe__mkdir_p(pdir, 0755), 0);
  tbe_trace *t = load("cli/small.trace.json");
  int go[2], ready[2];
  assert_int_equal(pipe(go), 0);
  assert_int_equal(pipe(ready), 0);
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    tbe_allocator al;
    tbe__allocator_init(&al, NULL);
    tbe__stage s;
    tbe__stage_init(&s, &al, logdir);
    int fd;
    if (tbe__stage_file(&s, "plugins/profile/r", "h.xplane.pb", &fd)) _exit(3);
    if (write(ready[1], "x", 1) != 1) _exit(4);
    char c;
    if (read(go[0], &c, 1) < 0) _exit(5);
    _exit(0); /* dies holding it: no cleanup */
  }
  char c;
  assert_int_equal(read(ready[0], &c, 1), 1);
  assert_int_equal(count_names(pdir, TBE__TMP_PREFIX, NULL, NULL, 0), 1);
  assert_int_equal(export(t, logdir, "g", 0, 0, NULL, 0), 0); /* into the same folder */
  assert_int_equal(count_names(pdir, TBE__TMP_PREFIX, NULL, NULL, 0), 1); /* kept */
  /* A stale one with no writer, and one of ours that is a symlink. */
  char *stale = tu_join(pdir, TBE__TMP_PREFIX "1-dead");
  assert_int_equal(tu_write_file(stale, "x", 1), 0);
  char *other = tu_join(pdir, ".not-ours");
  assert_int_equal(tu_write_file(other, "x", 1), 0);
  assert_int_equal(export(t, logdir, "g", 1, 0, NULL, 0), 0);
  struct stat st;
  assert_int_not_equal(lstat(stale, &st), 0);
  assert_int_equal(lstat(other, &st), 0);
  assert_int_equal(count_names(pdir, TBE__TMP_PREFIX, NULL, NULL, 0), 1);
  assert_int_equal(write(go[1], "x", 1), 1);
  int wst;
  assert_int_equal(waitpid(pid, &wst, 0), pid);
  assert_true(WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
  assert_int_equal(export(t, logdir, "g", 1, 0, NULL, 0), 0);
  assert_int_equal(count_names(pdir, TBE__TMP_PREFIX, NULL, NULL, 0), 0); /* its writer is gone */
  assert_int_equal(hidden_below(logdir), 0);
  close(go[0]);
  close(go[1]);
  close(ready[0]);
  close(ready[1]);
  free(stale);
  free(other);
  tbe_trace_free(t);
  tu_rmrf(base);
  free(pdir);
  free(logdir);
  free(base);
}

/* ---- concurrent writers of one run ---- */

static void test_concurrent_force_pairs(void **state) {
  (void)state;
  char *base = tu_mkdtemp();
  char *logdir = tu_join(base, "log");
  const char *in[2] = {"cli/small.trace.json", "cli/small2.trace.json"};
  run_files ref[2];
  for (int i = 0; i < 2; i++) {
    char name[16];
    snprintf(name, sizeof name, "ref%d", i);
    char *d = tu_join(base, name);
    tbe_trace *t = load(in[i]);
    assert_int_equal(export(t, d, "h", 0, 0, NULL, 0), 0);
    assert_int_equal(read_run(d, &ref[i]), 0);
    tbe_trace_free(t);
    free(d);
  }
  assert_false(same_file(&ref[0], &ref[1], 0)); /* the two inputs are told apart */
  assert_false(same_file(&ref[0], &ref[1], 1));
  enum { ROUNDS = 10, EACH = 8 };
  for (int round = 0; round < ROUNDS; round++) {
    pid_t pid[2];
    fflush(NULL);
    for (int i = 0; i < 2; i++) {
      pid[i] = fork();
      assert_true(pid[i] >= 0);
      if (pid[i] == 0) {
        tbe_trace *t = load(in[i]);
        int rc = 0;
        for (int k = 0; k < EACH && !rc; k++) rc = export(t, logdir, "h", 1, 0, NULL, 0);
        tbe_trace_free(t);
        _exit(rc ? 1 : 0);
      }
    }
    for (int i = 0; i < 2; i++) {
      int st;
      assert_int_equal(waitpid(pid[i], &st, 0), pid[i]);
      assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    run_files now;
    assert_int_equal(read_run(logdir, &now), 0); /* one summary */
    int which = same_file(&now, &ref[0], 0) ? 0 : 1;
    assert_true(same_file(&now, &ref[which], 0));
    if (!same_file(&now, &ref[which], 1)) fail_msg("round %d: XSpace and JSON of different inputs", round);
    free_run(&now);
    assert_int_equal(hidden_below(logdir), 0);
  }
  free_run(&ref[0]);
  free_run(&ref[1]);
  tu_rmrf(base);
  free(logdir);
  free(base);
}

/* Made certain: one writer pauses inside its commit (its XSpace in place,
 * its JSON not yet) while a second replaces the run.  The second waits for
 * the run lock, so the run ends as the second's pair; without the lock the
 * first's JSON would land over the second's pair. */
static void test_lock_orders_commits(void **state) {
  (void)state;
  char *base = tu_mkdtemp();
  char *logdir = tu_join(base, "log");
  tbe_trace *a = load("cli/small.trace.json"), *b = load("cli/small2.trace.json");
  run_files ref[2];
  for (int i = 0; i < 2; i++) {
    char *d = tu_join(base, i ? "refb" : "refa");
    assert_int_equal(export(i ? b : a, d, "h", 0, 0, NULL, 0), 0);
    assert_int_equal(read_run(d, &ref[i]), 0);
    free(d);
  }
  assert_int_equal(export(a, logdir, "h", 0, 0, NULL, 0), 0);
  /* The calls of a replacing commit: 3 hidden names (links), then the
   * XSpace's rename (4), then the JSON's (5). */
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    tbe__io_fault_arm(TBE__IO_RENAME, 5, TBE__IOF_DELAY);
    int rc = export(b, logdir, "h", 1, 0, NULL, 0);
    long inj = tbe__io_fault_disarm();
    _exit(rc ? 1 : inj == 1 ? 0 : 2);
  }
  usleep(150000); /* the child is asleep in its commit by now */
  assert_int_equal(export(a, logdir, "h", 1, 0, NULL, 0), 0);
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  run_files now;
  assert_int_equal(read_run(logdir, &now), 0); /* one summary */
  assert_true(same_file(&now, &ref[0], 0));
  if (!same_file(&now, &ref[0], 1)) fail_msg("XSpace and JSON of different inputs");
  free_run(&now);
  assert_int_equal(hidden_below(logdir), 0);
  free_run(&ref[0]);
  free_run(&ref[1]);
  tbe_trace_free(a);
  tbe_trace_free(b);
  tu_rmrf(base);
  free(logdir);
  free(base);
}

/* The run lock: writers of one run wait for each other (threads of one
 * process too), writers of different runs do not. */
static void test_run_lock(void **state) {
  (void)state;
  char *base = tu_mkdtemp();
  tbe__lock l1, l2;
  assert_int_equal(tbe__lock_take(&l1, base, "r1", NULL, 0), 0);
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    /* The parent's lock is an open file description this child shares
     * after fork: let go of it, as an exec would (O_CLOEXEC). */
    close(l1.fd);
    tbe__lock l;
    if (tbe__lock_take(&l, base, "r1", NULL, 0)) _exit(1);
    if (write(fds[1], "x", 1) != 1) _exit(2);
    tbe__lock_release(&l);
    _exit(0);
  }
  /* A different run is not held up. */
  assert_int_equal(tbe__lock_take(&l2, base, "r2-other", NULL, 0), 0);
  tbe__lock_release(&l2);
  usleep(100000);
  int fl = fcntl(fds[0], F_GETFL);
  fcntl(fds[0], F_SETFL, fl | O_NONBLOCK);
  char c;
  assert_int_equal(read(fds[0], &c, 1), -1); /* still waiting */
  tbe__lock_release(&l1);
  fcntl(fds[0], F_SETFL, fl);
  assert_int_equal(read(fds[0], &c, 1), 1);
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  struct stat sb;
  char *lf = tu_join(base, TBE__LOCK_FILE);
  assert_int_not_equal(lstat(lf, &sb), 0); /* the last one out removed it */
  close(fds[0]);
  close(fds[1]);
  free(lf);
  tu_rmrf(base);
  free(base);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_force_leaves_one_summary),
      cmocka_unit_test(test_diff_replaces_its_own),
      cmocka_unit_test(test_failed_replacement_keeps_run),
      cmocka_unit_test(test_stage_rollback),
      cmocka_unit_test(test_kill_during_export),
      cmocka_unit_test(test_live_temp_kept),
      cmocka_unit_test(test_concurrent_force_pairs),
      cmocka_unit_test(test_lock_orders_commits),
      cmocka_unit_test(test_run_lock),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
