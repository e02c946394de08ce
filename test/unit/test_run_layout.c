/* test_run_layout.c: the run room (src/trace/run/): the table of a run's
 * files, the names and paths built from it, and the reading of a log dir.
 *
 * What must never happen:
 * - a path built from a hostile name ("..", ".", a slash, a control byte,
 *   a leading dot, more than TBE_NAME_MAX bytes) leaves the log dir: such
 *   names are refused, never cut or rewritten into another path;
 * - a path that does not fit its buffer is returned cut;
 * - a writer's hidden temporary file, or a file that is no trace, is taken
 *   for a run's host;
 * - a name read back (an event file's host, a trace file's host) that is
 *   not a valid name is returned.
 * Symlinked run folders are treated as the callers treated them before
 * the room: the readers' listing (tbe_run_list, the profile command's run
 * naming) follows one; the writers' listing (tbe__run_listing, under the
 * symlink rule) refuses it with -ELOOP, and tbe__run_is then finds no
 * host there. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "tbexport.h"
#include "testutil.h"
#include "trace/run/run_layout.h"
#include "trace/run/run_scan.h"

static const char *const HOSTILE[] = {"..", ".", "a/b", "../x", ".hidden", "", "tab\there", "/abs"};

/* ---- the table ---- */

static void test_table(void **state) {
  (void)state;
  assert_string_equal(tbe__run_suffix(TBE__RUN_ANALYSIS), TBE_ANALYSIS_SUFFIX);
  assert_string_equal(tbe__run_suffix(TBE__RUN_XSPACE), ".xplane.pb");
  assert_string_equal(tbe__run_suffix(TBE__RUN_JSON), ".trace.json.gz");
  assert_string_equal(tbe__run_suffix(TBE__RUN_PT_LINK), ".pt.trace.json.gz");
  assert_string_equal(tbe__run_suffix(TBE__RUN_SUMMARY), TBE__SUMMARY_MARK);
  assert_string_equal(tbe__run_suffix(TBE__RUN_HPARAMS), TBE__HPARAMS_MARK);
  assert_string_equal(tbe__run_suffix(TBE__RUN_JOB), TBE__JOB_MARK);
  assert_string_equal(tbe__run_suffix(TBE__RUN_DIFF), TBE__DIFF_MARK);
  assert_int_equal(tbe__run_file_row_of(TBE__RUN_XSPACE)->place, TBE__AT_PROFILE);
  assert_int_equal(tbe__run_file_row_of(TBE__RUN_SUMMARY)->place, TBE__AT_HOST_RUN);
  assert_int_equal(tbe__run_file_row_of(TBE__RUN_SPOOL)->place, TBE__AT_LOGDIR);
  assert_null(tbe__run_file_row_of(TBE__RUN_NFILES));
  /* every row named, no two names alike */
  for (int i = 0; i < TBE__RUN_NFILES; i++)
    for (int j = i + 1; j < TBE__RUN_NFILES; j++)
      assert_string_not_equal(tbe__run_file_row_of(i)->name, tbe__run_file_row_of(j)->name);
}

/* ---- paths ---- */

static void test_profile_dir(void **state) {
  (void)state;
  char buf[64];
  assert_int_equal(tbe__run_profile_dir(buf, sizeof buf, "/logs", "r1"), 0);
  assert_string_equal(buf, "/logs/plugins/profile/r1");
  assert_int_equal(tbe_run_profile_dir(buf, sizeof buf, NULL, "r1"), 0);
  assert_string_equal(buf, "plugins/profile/r1");
  for (size_t i = 0; i < sizeof HOSTILE / sizeof HOSTILE[0]; i++)
    assert_int_equal(tbe__run_profile_dir(buf, sizeof buf, "/logs", HOSTILE[i]), TBE_ENAME);
  char longname[TBE_NAME_MAX + 2];
  memset(longname, 'a', sizeof longname - 1);
  longname[sizeof longname - 1] = 0;
  assert_int_equal(tbe__run_profile_dir(buf, sizeof buf, "/logs", longname), TBE_ENAME);
  longname[TBE_NAME_MAX] = 0; /* the longest valid name: too long for buf, refused whole */
  assert_int_equal(tbe__run_profile_dir(buf, sizeof buf, "/logs", longname), -ENAMETOOLONG);
  char big[TBE_NAME_MAX + 64];
  assert_int_equal(tbe__run_profile_dir(big, sizeof big, "/l", longname), 0);
  assert_int_equal(strlen(big), strlen("/l/plugins/profile/") + TBE_NAME_MAX);
}

static void test_host_file(void **state) {
  (void)state;
  char buf[64];
  assert_int_equal(tbe__run_host_file(buf, sizeof buf, "node1", TBE__RUN_XSPACE), 0);
  assert_string_equal(buf, "node1.xplane.pb");
  assert_int_equal(tbe__run_host_file(buf, sizeof buf, "node1", TBE__RUN_PT_LINK), 0);
  assert_string_equal(buf, "node1.pt.trace.json.gz");
  assert_int_equal(tbe__run_host_file(buf, sizeof buf, "node1", TBE__RUN_ANALYSIS), 0);
  assert_string_equal(buf, "node1.analysis.pb");
  /* event files are named with their time, not here */
  assert_int_equal(tbe__run_host_file(buf, sizeof buf, "node1", TBE__RUN_SUMMARY), TBE_ENAME);
  for (size_t i = 0; i < sizeof HOSTILE / sizeof HOSTILE[0]; i++)
    assert_int_equal(tbe__run_host_file(buf, sizeof buf, HOSTILE[i], TBE__RUN_JSON), TBE_ENAME);
  assert_int_equal(tbe__run_host_file(buf, 10, "node1", TBE__RUN_JSON), -ENAMETOOLONG);
}

static void test_host_folder(void **state) {
  (void)state;
  char f[TBE_NAME_MAX + 1];
  tbe__run_host_folder("node", -1, 0, f, sizeof f);
  assert_string_equal(f, "node");
  tbe__run_host_folder("hparams", -1, 0, f, sizeof f); /* not the old sub-run */
  assert_string_equal(f, "hparams_");
  tbe__run_host_folder("node.rank3", 3, 16, f, sizeof f);
  assert_string_equal(f, "rank03.node");
  tbe__run_host_folder("node.rank3_pid7", 3, 4, f, sizeof f);
  assert_string_equal(f, "rank3.node_pid7");
  tbe__run_host_folder("node", 12, 2, f, sizeof f); /* a rank past the world's size */
  assert_string_equal(f, "rank12.node");
  tbe__run_host_folder(".rank2", 2, 4, f, sizeof f);
  assert_string_equal(f, "rank2");
}

static void test_events_names(void **state) {
  (void)state;
  char name[300], who[TBE_NAME_MAX + 1];
  assert_int_equal(tbe__events_name(name, sizeof name, 1700000000LL, "h1", TBE__SUMMARY_MARK), 0);
  assert_string_equal(name, "events.out.tfevents.1700000000.h1.tbexport-summary");
  assert_true(tbe__events_name_is(name, "h1", TBE__SUMMARY_MARK));
  assert_false(tbe__events_name_is(name, "h", TBE__SUMMARY_MARK));
  assert_false(tbe__events_name_is(name, "h1", TBE__HPARAMS_MARK));
  assert_true(tbe__events_who(name, TBE__SUMMARY_MARK, who, sizeof who));
  assert_string_equal(who, "h1");
  assert_false(tbe__events_who(name, TBE__DIFF_MARK, who, sizeof who));
  /* a time out of range is written as 0, in its fixed width */
  assert_int_equal(tbe__events_name(name, sizeof name, -5, "h1", TBE__JOB_MARK), 0);
  assert_string_equal(name, "events.out.tfevents.0000000000.h1.tbexport-job");
  assert_int_equal(tbe__events_name(name, 20, 1, "h1", TBE__JOB_MARK), TBE_EINVAL);
  /* read back: a who that is not a valid name is no file of ours */
  assert_false(tbe__events_who("events.out.tfevents.1700000000...tbexport-summary",
                               TBE__SUMMARY_MARK, who, sizeof who));
  assert_false(tbe__events_who("events.out.tfevents.1700000000.x\ty.tbexport-summary",
                               TBE__SUMMARY_MARK, who, sizeof who));
  assert_false(tbe__events_who("events.out.tfevents.17000000x0.h1.tbexport-summary",
                               TBE__SUMMARY_MARK, who, sizeof who));
  assert_false(tbe__events_who("events.out.tfevents.1700000000.h1.tbexport-summary",
                               TBE__SUMMARY_MARK, who, 2)); /* does not fit: not cut */
}

static void test_names_back(void **state) {
  (void)state;
  char h[TBE_NAME_MAX + 1];
  size_t stem;
  assert_true(tbe__run_profile_host("n1.xplane.pb", h, sizeof h));
  assert_string_equal(h, "n1");
  assert_true(tbe__run_profile_host("n1.analysis.pb", h, sizeof h));
  assert_false(tbe__run_profile_host(".tbexport-tmp-1.xplane.pb", h, sizeof h));
  assert_false(tbe__run_profile_host("..xplane.pb", h, sizeof h));
  assert_false(tbe__run_profile_host("n1.txt", h, sizeof h));
  assert_false(tbe__run_profile_host(".xplane.pb", h, sizeof h));
  assert_int_equal(tbe__run_trace_kind("n1.trace.json.gz", &stem), 3);
  assert_int_equal(stem, 2);
  assert_int_equal(tbe__run_trace_kind("n1.pt.trace.json.gz", &stem), 3);
  assert_int_equal(stem, 2);
  assert_int_equal(tbe__run_trace_kind("n1.trace.json", &stem), 2);
  assert_int_equal(tbe__run_trace_kind("n1.xplane.pb", &stem), 1);
  assert_int_equal(tbe__run_trace_kind("n1.analysis.pb", &stem), 0);
  assert_true(tbe__run_host_output("n1.xplane.pb", "n1"));
  assert_true(tbe__run_host_output("n1_pid42.trace.json.gz", "n1"));
  assert_true(tbe__run_host_output("n1_pid42_3.trace.json.gz", "n1"));
  assert_false(tbe__run_host_output("n1.rank1.xplane.pb", "n1"));
  assert_false(tbe__run_host_output("n10.xplane.pb", "n1"));
  assert_false(tbe__run_host_output("n1.analysis.pb", "n1"));
}

static void test_split_path(void **state) {
  (void)state;
  char dir[256], run[64];
  assert_true(tbe_run_of_path("/d/logs/plugins/profile/r1/h.analysis.pb", dir, sizeof dir, run,
                              sizeof run));
  assert_string_equal(dir, "/d/logs");
  assert_string_equal(run, "r1");
  assert_true(
      tbe_run_of_path("/plugins/profile/r1/h.analysis.pb", dir, sizeof dir, run, sizeof run));
  assert_string_equal(dir, "/");
  assert_true(tbe_run_of_path("logs/plugins/profile/r1/h", dir, sizeof dir, run, sizeof run));
  assert_string_equal(dir, "logs");
  assert_false(tbe_run_of_path("plugins/profile/r1/h", dir, sizeof dir, run, sizeof run));
  assert_false(tbe_run_of_path("/d/plugin/profile/r1/h", dir, sizeof dir, run, sizeof run));
  assert_false(tbe_run_of_path("/d/plugins/profiles/r1/h", dir, sizeof dir, run, sizeof run));
  assert_false(tbe_run_of_path("/d/plugins/profile/r1/h", dir, 2, run, sizeof run));
}

/* ---- scanning ---- */

static void put(const char *base, const char *rel, long long mtime) {
  char *p = tu_join(base, rel);
  assert_int_equal(tu_write_file(p, "x", 1), 0);
  if (mtime) {
    struct timespec ts[2] = {{mtime, 0}, {mtime, 0}};
    assert_int_equal(utimensat(AT_FDCWD, p, ts, 0), 0);
  }
  free(p);
}

static void mkdirs(const char *base, const char *rel) {
  char *p = tu_join(base, rel);
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "mkdir -p '%s'", p);
  assert_int_equal(system(cmd), 0);
  free(p);
}

static void test_list_and_latest(void **state) {
  (void)state;
  char *base = tu_mkdtemp();
  mkdirs(base, "plugins/profile/r1");
  mkdirs(base, "plugins/profile/r2");
  mkdirs(base, "plugins/profile/empty");
  put(base, "plugins/profile/r1/b.xplane.pb", 1000);
  put(base, "plugins/profile/r1/b.trace.json.gz", 1000);
  put(base, "plugins/profile/r1/a.xplane.pb", 1000);
  put(base, "plugins/profile/r1/c.pt.trace.json.gz", 1000);
  put(base, "plugins/profile/r1/.tbexport-tmp-9.trace.json.gz", 5000);
  put(base, "plugins/profile/r1/a.analysis.pb", 1000);
  put(base, "plugins/profile/r1/notes.txt", 1000);
  put(base, "plugins/profile/r2/z.xplane.pb", 2000);
  put(base, "plugins/profile/empty/z.analysis.pb", 9000);

  tbe_run_listing *h = NULL;
  size_t n = 0;
  assert_int_equal(tbe_run_list(base, "r1", &h, &n), 0);
  assert_int_equal(n, 3);
  assert_string_equal(h[0].host, "a");
  assert_string_equal(h[0].trace, "a.xplane.pb");
  assert_string_equal(h[1].host, "b");
  assert_string_equal(h[1].trace, "b.trace.json.gz"); /* preferred to its XSpace */
  assert_string_equal(h[2].host, "c");
  assert_string_equal(h[2].trace, "c.pt.trace.json.gz");
  tbe_run_list_free(h, n);
  assert_int_equal(tbe_run_list(base, "empty", &h, &n), 0);
  assert_int_equal(n, 0);
  assert_null(h);
  assert_int_equal(tbe_run_list(base, "missing", &h, &n), -ENOENT);
  for (size_t i = 0; i < sizeof HOSTILE / sizeof HOSTILE[0]; i++)
    assert_int_equal(tbe_run_list(base, HOSTILE[i], &h, &n), TBE_ENAME);

  char run[64];
  assert_int_equal(tbe_run_latest(base, run, sizeof run), 0);
  assert_string_equal(run, "r2"); /* newest trace; the analysis-only run holds none */
  put(base, "plugins/profile/r1/a.xplane.pb", 2000); /* a tie: the greater name */
  assert_int_equal(tbe_run_latest(base, run, sizeof run), 0);
  assert_string_equal(run, "r2");
  put(base, "plugins/profile/r1/a.xplane.pb", 3000);
  assert_int_equal(tbe_run_latest(base, run, sizeof run), 0);
  assert_string_equal(run, "r1");
  char *empty = tu_mkdtemp();
  assert_int_equal(tbe_run_latest(empty, run, sizeof run), -ENOENT);
  mkdirs(empty, "plugins/profile");
  assert_int_equal(tbe_run_latest(empty, run, sizeof run), 1);
  tu_rmrf(empty);
  free(empty);
  tu_rmrf(base);
  free(base);
}

static void test_symlinked_run(void **state) {
  (void)state;
  char *base = tu_mkdtemp();
  mkdirs(base, "elsewhere");
  mkdirs(base, "logs/plugins/profile");
  put(base, "elsewhere/h.xplane.pb", 0);
  char *link = tu_join(base, "logs/plugins/profile/r");
  char *target = tu_join(base, "elsewhere");
  assert_int_equal(symlink(target, link), 0);
  char *logdir = tu_join(base, "logs");
  /* the readers' listing follows it, as the summary command did */
  tbe_run_listing *h = NULL;
  size_t n = 0;
  assert_int_equal(tbe_run_list(logdir, "r", &h, &n), 0);
  assert_int_equal(n, 1);
  assert_string_equal(h[0].host, "h");
  tbe_run_list_free(h, n);
  assert_true(tbe__run_exists(logdir, "r"));
  char found[4400];
  assert_true(tbe__run_has_host(logdir, "r", "h", found, sizeof found));
  assert_non_null(strstr(found, "/plugins/profile/r/h.xplane.pb"));
  assert_false(tbe__run_has_host(logdir, "r", "g", NULL, 0));
  /* the writers' listing refuses it */
  int rc = 0;
  char where[4400] = "";
  assert_null(tbe__run_listing(logdir, "plugins/profile/r", &rc, where, sizeof where));
  assert_int_equal(rc, -ELOOP);
  tbe_allocator a;
  tbe__allocator_init(&a, NULL);
  char rundir[4400], dir[4400] = "";
  snprintf(rundir, sizeof rundir, "%s/r", logdir);
  const char *hosts[] = {"h"};
  assert_int_equal(tbe__run_is(&a, rundir, "r", hosts, 1, dir, sizeof dir), 0);
  assert_false(tbe__run_exists(logdir, "nothing"));
  free(logdir);
  free(target);
  free(link);
  tu_rmrf(base);
  free(base);
}

static void test_run_is(void **state) {
  (void)state;
  char *base = tu_mkdtemp();
  mkdirs(base, "plugins/profile/r1");
  put(base, "plugins/profile/r1/a.xplane.pb", 0);
  put(base, "plugins/profile/r1/b.analysis.pb", 0);
  tbe_allocator a;
  tbe__allocator_init(&a, NULL);
  char rundir[4400], dir[4400] = "";
  snprintf(rundir, sizeof rundir, "%s/new", base);
  const char *both[] = {"a", "b"}, *more[] = {"a", "c"};
  assert_int_equal(tbe__run_is(&a, rundir, "r1", both, 2, dir, sizeof dir), 1);
  char want[4400];
  snprintf(want, sizeof want, "%s/r1", base);
  assert_string_equal(dir, want);
  assert_int_equal(tbe__run_is(&a, rundir, "r1", more, 2, dir, sizeof dir), 0);
  assert_int_equal(tbe__run_is(&a, rundir, "..", both, 2, dir, sizeof dir), 0);
  assert_int_equal(tbe__run_is(&a, rundir, "r1", both, 0, dir, sizeof dir), 0);
  tu_rmrf(base);
  free(base);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_table),         cmocka_unit_test(test_profile_dir),
      cmocka_unit_test(test_host_file),     cmocka_unit_test(test_host_folder),
      cmocka_unit_test(test_events_names),  cmocka_unit_test(test_names_back),
      cmocka_unit_test(test_split_path),    cmocka_unit_test(test_list_and_latest),
      cmocka_unit_test(test_symlinked_run), cmocka_unit_test(test_run_is),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
