/* test_export_run.c: the run layout (src/trace/export/export_run.c): run
 * and host names (validation, defaults), directories and file names, existing files
 * and planted symlinks never overwritten or followed, all-or-nothing
 * writing, the callbacks; every output refuses an unfinished trace; the
 * sink outputs write into. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tbexport/error.h"
#include "tbexport/export.h"
#include "tbexport/trace.h"
#include "testutil.h"
#include "trace/exporter.h"

/* The two-event trace of these tests, not finished yet. */
static tbe_trace *tiny_unfinished(const char *host) {
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  uint32_t h, s;
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_THREAD, 1, 2, -1, &h), 0);
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_STREAM, 1, 7, 0, &s), 0);
  tbe_event e;
  memset(&e, 0, sizeof e);
  e.kind = TBE_EV_RUNTIME;
  e.track = h;
  e.name = tbe_trace_str_id(t, "cudaLaunchKernel");
  e.start_ns = 1700000000000000000LL;
  e.dur_ns = 5000;
  e.correlation = 3;
  assert_int_equal(tbe_trace_add_event(t, &e, NULL, NULL, 0, NULL), 0);
  e.kind = TBE_EV_KERNEL;
  e.track = s;
  e.name = tbe_trace_str_id(t, "k");
  e.start_ns += 10000;
  tbe_kernel k;
  memset(&k, 0, sizeof k);
  k.occupancy_pct = -1;
  assert_int_equal(tbe_trace_add_event(t, &e, &k, NULL, 0, NULL), 0);
  if (host) t->host = tbe_trace_str_id(t, host);
  return t;
}

static tbe_trace *tiny(const char *host) {
  tbe_trace *t = tiny_unfinished(host);
  assert_int_equal(tbe_trace_finish(t), 0);
  return t;
}

typedef struct files {
  char paths[8][4096];
  int n;
} files;

static void on_file(void *ctx, const char *path) {
  files *f = ctx;
  if (f->n < 8) snprintf(f->paths[f->n++], sizeof f->paths[0], "%s", path);
}

static int exists(const char *dir, const char *rel) {
  char p[4096];
  snprintf(p, sizeof p, "%s/%s", dir, rel);
  struct stat st;
  return lstat(p, &st) == 0;
}

static void test_names(void **state) {
  (void)state;
  const char *why = NULL;
  assert_int_equal(tbe_name_check("fp32", &why), 0);
  assert_null(why);
  assert_int_equal(tbe_name_check("run 1 é", NULL), 0);
  const char *bad[] = {"", "a/b", "..", ".", ".hidden", "a\nb", "tab\t", "\x7f", "bad\xff", "/abs"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    why = NULL;
    assert_int_equal(tbe_name_check(bad[i], &why), TBE_ENAME);
    assert_non_null(why);
  }
  char longn[202];
  memset(longn, 'a', 201);
  longn[201] = 0;
  assert_int_equal(tbe_name_check(longn, NULL), TBE_ENAME);
  longn[200] = 0;
  assert_int_equal(tbe_name_check(longn, NULL), 0);

  char run[32];
  assert_int_equal(tbe_run_name_default(run, sizeof run), 0);
  assert_int_equal(strlen(run), 19);
  for (int i = 0; i < 19; i++) {
    if (i == 4 || i == 7 || i == 10 || i == 13 || i == 16) assert_int_equal(run[i], '_');
    else assert_true(run[i] >= '0' && run[i] <= '9');
  }
  assert_int_equal(tbe_run_name_default(run, 10), TBE_EINVAL);
}

static void test_resolve_host(void **state) {
  (void)state;
  tbe_export_options o;
  tbe_export_options_init(&o);
  o.logdir = "unused";
  char run[256], host[256];
  tbe_trace *t = tiny("h200:node/1");
  assert_int_equal(tbe_export_resolve(t, &o, run, sizeof run, host, sizeof host), 0);
  assert_string_equal(host, "h200_node_1");
  assert_int_equal(strlen(run), 19);
  o.host = "given";
  o.run = "r1";
  assert_int_equal(tbe_export_resolve(t, &o, run, sizeof run, host, sizeof host), 0);
  assert_string_equal(host, "given");
  assert_string_equal(run, "r1");
  o.run = "../up";
  assert_int_equal(tbe_export_resolve(t, &o, run, sizeof run, host, sizeof host), TBE_ENAME);
  o.run = NULL;
  o.host = "a/b";
  assert_int_equal(tbe_export_resolve(t, &o, run, sizeof run, host, sizeof host), TBE_ENAME);
  tbe_trace_free(t);
  /* a trace host that cannot be made a name falls back to this machine's */
  t = tiny("bad\xff");
  o.host = NULL;
  assert_int_equal(tbe_export_resolve(t, &o, run, sizeof run, host, sizeof host), 0);
  assert_int_equal(tbe_name_check(host, NULL), 0);
  assert_string_not_equal(host, "bad_");
  tbe_trace_free(t);
  t = tiny(".hidden");
  assert_int_equal(tbe_export_resolve(t, &o, run, sizeof run, host, sizeof host), 0);
  assert_string_equal(host, "_hidden");
  tbe_trace_free(t);
}

static void progress(void *ctx, uint64_t done, uint64_t total) {
  uint64_t *last = ctx;
  assert_true(done <= total);
  last[0] = done;
  last[1] = total;
}

static void test_layout(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  char *logdir = tu_join(dir, "log_dir");
  tbe_trace *t = tiny("node:0");
  tbe_export_options o;
  tbe_export_options_init(&o);
  assert_int_equal(o.outputs, TBE_OUT_ALL);
  o.logdir = logdir;
  o.run = "fp32";
  o.outputs = TBE_OUT_XPLANE | TBE_OUT_JSON;
  files f = {.n = 0};
  o.on_file = on_file;
  o.ctx = &f;
  uint64_t last[2] = {0, 0};
  o.progress = progress;
  o.progress_ctx = last;
  assert_int_equal(tbe_export_run(t, &o), 0);
  assert_int_equal(f.n, 3);
  char expect[4096];
  snprintf(expect, sizeof expect, "%s/plugins/profile/fp32/node_0.xplane.pb", logdir);
  assert_string_equal(f.paths[0], expect);
  snprintf(expect, sizeof expect, "%s/plugins/profile/fp32/node_0.trace.json.gz", logdir);
  assert_string_equal(f.paths[1], expect);
  /* The JSON's second name, where PyTorch's TensorBoard plugin looks: one
   * file (a hard link), not a copy. */
  snprintf(expect, sizeof expect, "%s/fp32/node_0.pt.trace.json.gz", logdir);
  assert_string_equal(f.paths[2], expect);
  struct stat sa, sb;
  assert_int_equal(lstat(f.paths[1], &sa), 0);
  assert_int_equal(lstat(f.paths[2], &sb), 0);
  assert_true(sa.st_ino == sb.st_ino && sa.st_dev == sb.st_dev && sa.st_nlink == 2);
  assert_int_equal(last[0], last[1]);
  assert_int_equal(last[1], 2 * t->nevents);
  /* no events output requested: the run folder holds the link alone */
  assert_true(exists(logdir, "fp32/node_0.pt.trace.json.gz"));
  assert_int_equal(tu_count_files(logdir), 4); /* with h.analysis.pb */

  /* a second export refuses, and says which file is in the way */
  char conflict[4096];
  assert_int_equal(tbe_export_conflict(t, &o, conflict, sizeof conflict), 1);
  snprintf(expect, sizeof expect, "%s/plugins/profile/fp32/node_0.xplane.pb", logdir);
  assert_string_equal(conflict, expect);
  f.n = 0;
  assert_int_equal(tbe_export_run(t, &o), TBE_EEXIST);
  assert_int_equal(f.n, 0);
  o.force = 1;
  assert_int_equal(tbe_export_run(t, &o), 0);
  assert_int_equal(f.n, 3);

  /* the same run name from another host: its own files */
  o.force = 0;
  o.host = "other";
  f.n = 0;
  assert_int_equal(tbe_export_run(t, &o), 0);
  assert_true(exists(logdir, "plugins/profile/fp32/other.xplane.pb"));
  assert_true(exists(logdir, "plugins/profile/fp32/node_0.xplane.pb"));

  /* bad names and options */
  o.run = "a/b";
  assert_int_equal(tbe_export_run(t, &o), TBE_ENAME);
  o.run = "ok";
  o.outputs = 0x80;
  assert_int_equal(tbe_export_run(t, &o), TBE_EINVAL);
  o.outputs = TBE_OUT_JSON;
  o.logdir = NULL;
  assert_int_equal(tbe_export_run(t, &o), TBE_EINVAL);

  /* no hidden temporary files are left behind */
  snprintf(expect, sizeof expect, "%s/plugins/profile/fp32", logdir);
  DIR *d = opendir(expect);
  assert_non_null(d);
  struct dirent *de;
  while ((de = readdir(d)) != NULL)
    if (de->d_name[0] == '.' && strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
      fail_msg("temporary file left: %s", de->d_name);
  closedir(d);
  tbe_trace_free(t);
  tu_rmrf(dir);
  free(logdir);
  free(dir);
}

/* One existing output stops the whole run before anything is written. */
static void test_existing_blocks_all(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  tbe_trace *t = tiny("h");
  char p[4096];
  snprintf(p, sizeof p, "%s/plugins/profile/r", dir);
  assert_int_equal(system("true"), 0);
  char cmd[8300];
  snprintf(cmd, sizeof cmd, "mkdir -p '%s' && echo keep > '%s/h.trace.json.gz'", p, p);
  assert_int_equal(system(cmd), 0);
  tbe_export_options o;
  tbe_export_options_init(&o);
  o.logdir = dir;
  o.run = "r";
  o.outputs = TBE_OUT_XPLANE | TBE_OUT_JSON;
  assert_int_equal(tbe_export_run(t, &o), TBE_EEXIST);
  assert_false(exists(dir, "plugins/profile/r/h.xplane.pb"));
  snprintf(cmd, sizeof cmd, "%s/plugins/profile/r/h.trace.json.gz", dir);
  size_t n;
  char *s = (char *)tu_read_file(cmd, &n);
  assert_string_equal(s, "keep\n");
  free(s);
  tbe_trace_free(t);
  tu_rmrf(dir);
  free(dir);
}

/* A symlink planted at the target name is neither followed nor replaced
 * without force; with force the link itself is replaced. */
static void test_symlink_not_followed(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  tbe_trace *t = tiny("h");
  char victim[4096], link[4200], pdir[4096];
  snprintf(victim, sizeof victim, "%s/victim", dir);
  assert_int_equal(tu_write_file(victim, "precious", 8), 0);
  snprintf(pdir, sizeof pdir, "%s/plugins/profile/r", dir);
  char cmd[8300];
  snprintf(cmd, sizeof cmd, "mkdir -p '%s'", pdir);
  assert_int_equal(system(cmd), 0);
  snprintf(link, sizeof link, "%s/h.xplane.pb", pdir);
  assert_int_equal(symlink(victim, link), 0);
  tbe_export_options o;
  tbe_export_options_init(&o);
  o.logdir = dir;
  o.run = "r";
  o.outputs = TBE_OUT_XPLANE;
  assert_int_equal(tbe_export_run(t, &o), TBE_EEXIST);
  o.force = 1;
  assert_int_equal(tbe_export_run(t, &o), 0);
  struct stat st;
  assert_int_equal(lstat(link, &st), 0);
  assert_true(S_ISREG(st.st_mode));
  size_t n;
  char *s = (char *)tu_read_file(victim, &n);
  assert_int_equal(n, 8);
  assert_memory_equal(s, "precious", 8);
  free(s);
  tbe_trace_free(t);
  tu_rmrf(dir);
  free(dir);
}

/* When a later output fails, the earlier one's file is removed again. */
static void test_all_or_nothing(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  tbe_trace *t = tiny("h");
  char cmd[8300];
  /* a non-empty directory where the JSON file should go: rename fails */
  snprintf(cmd, sizeof cmd, "mkdir -p '%s/plugins/profile/r/h.trace.json.gz/x'", dir);
  assert_int_equal(system(cmd), 0);
  tbe_export_options o;
  tbe_export_options_init(&o);
  o.logdir = dir;
  o.run = "r";
  o.force = 1;
  o.outputs = TBE_OUT_XPLANE | TBE_OUT_JSON;
  files f = {.n = 0};
  o.on_file = on_file;
  o.ctx = &f;
  int rc = tbe_export_run(t, &o);
  assert_true(rc < 0);
  assert_int_equal(f.n, 0);
  assert_false(exists(dir, "plugins/profile/r/h.xplane.pb"));
  tbe_trace_free(t);
  tu_rmrf(dir);
  free(dir);
}

/* All three outputs: the run summary goes to <logdir>/<run>/. */
static void test_all_outputs(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  tbe_trace *t = tiny("h");
  tbe_export_options o;
  tbe_export_options_init(&o);
  o.logdir = dir;
  o.run = "all";
  files f = {.n = 0};
  o.on_file = on_file;
  o.ctx = &f;
  assert_int_equal(tbe_export_run(t, &o), 0);
  assert_int_equal(f.n, 5);
  assert_true(exists(dir, "plugins/profile/all/h.xplane.pb"));
  assert_true(exists(dir, "plugins/profile/all/h.trace.json.gz"));
  assert_true(exists(dir, "all/h.pt.trace.json.gz"));
  char prefix[4096];
  snprintf(prefix, sizeof prefix, "%s/all/events.out.tfevents.", dir);
  assert_memory_equal(f.paths[3], prefix, strlen(prefix));
  /* The HParams session beside it: one TensorBoard run per run and host. */
  snprintf(prefix, sizeof prefix, "%s/all/events.out.tfevents.", dir);
  assert_memory_equal(f.paths[4], prefix, strlen(prefix));
  assert_non_null(strstr(f.paths[4], ".h.tbexport-hparams"));
  /* Without the link: no second name. */
  char *dir2 = tu_mkdtemp();
  o.logdir = dir2;
  o.no_pt_link = 1;
  f.n = 0;
  assert_int_equal(tbe_export_run(t, &o), 0);
  assert_int_equal(f.n, 4);
  assert_false(exists(dir2, "all/h.pt.trace.json.gz"));
  tu_rmrf(dir2);
  free(dir2);
  tbe_trace_free(t);
  tu_rmrf(dir);
  free(dir);
}

/* Number of entries of dir/rel (not recursive, "." and ".." aside) whose
 * name holds `part`. */
static int count_named(const char *dir, const char *rel, const char *part) {
  char p[4096];
  snprintf(p, sizeof p, "%s/%s", dir, rel);
  DIR *d = opendir(p);
  if (!d) return 0;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    if (e->d_name[0] != '.' && strstr(e->d_name, part)) n++;
  closedir(d);
  return n;
}

/* --force replaces all of a host's outputs or none: a forced export of
 * one format leaves none of the host's outputs of the others (the Chrome
 * JSON, its PyTorch link, the XSpace, the summary and HParams events, the
 * analysis of the old traces), in the same commit; another host's stay.
 * Without --force nothing of another format is touched. */
static void test_force_replaces_all(void **state) {
  (void)state;
  static const unsigned only[] = {TBE_OUT_XPLANE, TBE_OUT_JSON, TBE_OUT_EVENTS};
  for (size_t k = 0; k < 3; k++) {
    char *dir = tu_mkdtemp();
    tbe_trace *t = tiny("h");
    tbe_export_options o;
    tbe_export_options_init(&o);
    o.logdir = dir;
    o.run = "r";
    assert_int_equal(tbe_export_run(t, &o), 0);
    o.host = "g";
    assert_int_equal(tbe_export_run(t, &o), 0);
    o.host = "h";
    /* Without force: refused (its own format is there), nothing goes. */
    o.outputs = only[k];
    assert_int_equal(tbe_export_run(t, &o), TBE_EEXIST);
    o.force = 1;
    files f = {.n = 0};
    o.on_file = on_file;
    o.ctx = &f;
    assert_int_equal(tbe_export_run(t, &o), 0);
    int x = only[k] == TBE_OUT_XPLANE, j = only[k] == TBE_OUT_JSON, ev = only[k] == TBE_OUT_EVENTS;
    assert_int_equal(exists(dir, "plugins/profile/r/h.xplane.pb"), x);
    assert_int_equal(exists(dir, "plugins/profile/r/h.trace.json.gz"), j);
    assert_int_equal(exists(dir, "r/h.pt.trace.json.gz"), j);
    /* two hosts: each its own TensorBoard run, r/h/ and r/g/ (h's files
     * moved there when g joined), the job's series in r/ */
    assert_int_equal(count_named(dir, "r", ".h.tbexport-"), 0);
    assert_int_equal(count_named(dir, "r/h", ".h.tbexport-summary"), ev);
    assert_int_equal(count_named(dir, "r/h", ".h.tbexport-hparams"), ev);
    assert_int_equal(count_named(dir, "r", ".r.tbexport-job"), 1);
    /* the analysis goes with the traces it described, and comes with new ones */
    assert_int_equal(exists(dir, "plugins/profile/r/h.analysis.pb"), !ev);
    assert_int_equal(f.n, x ? 1 : ev ? 3 : 2); /* events: summary, session, the job */
    /* the other host is untouched */
    assert_true(exists(dir, "plugins/profile/r/g.xplane.pb"));
    assert_true(exists(dir, "plugins/profile/r/g.trace.json.gz"));
    assert_true(exists(dir, "plugins/profile/r/g.analysis.pb"));
    assert_true(exists(dir, "r/g.pt.trace.json.gz"));
    assert_int_equal(count_named(dir, "r/g", ".g.tbexport-summary"), 1);
    assert_int_equal(count_named(dir, "r/g", ".g.tbexport-hparams"), 1);
    /* With the JSON but no link: an old link goes too. */
    if (j) {
      o.outputs = TBE_OUT_ALL;
      o.on_file = NULL;
      assert_int_equal(tbe_export_run(t, &o), 0);
      assert_true(exists(dir, "r/h.pt.trace.json.gz"));
      o.outputs = TBE_OUT_JSON;
      o.no_pt_link = 1;
      assert_int_equal(tbe_export_run(t, &o), 0);
      assert_false(exists(dir, "r/h.pt.trace.json.gz"));
      assert_true(exists(dir, "plugins/profile/r/h.trace.json.gz"));
      assert_true(exists(dir, "plugins/profile/r/h.analysis.pb"));
    }
    tbe_trace_free(t);
    tu_rmrf(dir);
    free(dir);
  }
}

/* Every output refuses a trace tbe_trace_finish has not ordered and
 * linked, with TBE_ESTATE and before anything is written (not even the
 * run's folders); finished, the same export succeeds.  A finished trace
 * that gets another event is unfinished again. */
static void refuse_unfinished(unsigned bit) {
  char *dir = tu_mkdtemp();
  tbe_trace *t = tiny_unfinished("h");
  tbe_export_options o;
  tbe_export_options_init(&o);
  o.logdir = dir;
  o.run = "r";
  o.outputs = bit;
  files f = {.n = 0};
  o.on_file = on_file;
  o.ctx = &f;
  assert_int_equal(tbe_export_run(t, &o), TBE_ESTATE);
  assert_int_equal(f.n, 0);
  assert_int_equal(tu_count_files(dir), 0);
  assert_false(exists(dir, "plugins"));
  assert_false(exists(dir, "r"));
  assert_int_equal(tbe_trace_finish(t), 0);
  assert_int_equal(tbe_export_run(t, &o), 0);
  /* the JSON and its link; the events and their HParams session */
  assert_int_equal(f.n, bit == TBE_OUT_XPLANE ? 1 : 2);
  /* one more event: unfinished again, and the run is left as it was */
  tbe_event e;
  memset(&e, 0, sizeof e);
  e.kind = TBE_EV_CPU_OP;
  e.track = 0;
  e.name = tbe_trace_str_id(t, "aten::mm");
  e.start_ns = 1700000000000000000LL;
  e.dur_ns = 10;
  assert_int_equal(tbe_trace_add_event(t, &e, NULL, NULL, 0, NULL), 0);
  o.force = 1;
  assert_int_equal(tbe_export_run(t, &o), TBE_ESTATE);
  assert_int_equal(f.n, bit == TBE_OUT_XPLANE ? 1 : 2);
  /* + the analysis beside a profile output */
  assert_int_equal(tu_count_files(dir), (bit == TBE_OUT_XPLANE ? 1 : 2) + (bit != TBE_OUT_EVENTS));
  tbe_trace_free(t);
  tu_rmrf(dir);
  free(dir);
}

static void test_unfinished_xplane(void **state) {
  (void)state;
  refuse_unfinished(TBE_OUT_XPLANE);
  /* the single-file call too */
  char *dir = tu_mkdtemp();
  char *path = tu_join(dir, "t.xplane.pb");
  tbe_trace *t = tiny_unfinished("h");
  assert_int_equal(tbe_export_xplane(t, path, 0), TBE_ESTATE);
  assert_int_equal(tu_count_files(dir), 0);
  assert_int_equal(tbe_trace_finish(t), 0);
  assert_int_equal(tbe_export_xplane(t, path, 0), 0);
  assert_int_equal(tu_count_files(dir), 1);
  tbe_trace_free(t);
  free(path);
  tu_rmrf(dir);
  free(dir);
}

static void test_unfinished_json(void **state) {
  (void)state;
  refuse_unfinished(TBE_OUT_JSON);
  char *dir = tu_mkdtemp();
  char *gz = tu_join(dir, "t.trace.json.gz");
  char *plain = tu_join(dir, "t.trace.json");
  tbe_trace *t = tiny_unfinished("h");
  assert_int_equal(tbe_export_chrome_json(t, gz, 1, 0), TBE_ESTATE);
  assert_int_equal(tbe_export_chrome_json(t, plain, 0, 0), TBE_ESTATE);
  assert_int_equal(tu_count_files(dir), 0);
  assert_int_equal(tbe_trace_finish(t), 0);
  assert_int_equal(tbe_export_chrome_json(t, gz, 1, 0), 0);
  assert_int_equal(tbe_export_chrome_json(t, plain, 0, 0), 0);
  assert_int_equal(tu_count_files(dir), 2);
  tbe_trace_free(t);
  free(gz);
  free(plain);
  tu_rmrf(dir);
  free(dir);
}

static void test_unfinished_events(void **state) {
  (void)state;
  refuse_unfinished(TBE_OUT_EVENTS);
}

/* The single-file calls take no allocator: they allocate through the
 * trace's (the caller's, given to tbe_trace_create).  Failing its n-th
 * allocation, for every n until the export succeeds, gives TBE_ENOMEM,
 * leaves no file and no block behind. */
static void single_file_sweep(int json) {
  char *dir = tu_mkdtemp();
  char *path = tu_join(dir, json ? "t.trace.json.gz" : "t.xplane.pb");
  tu_failalloc f;
  tbe_allocator a = tu_failalloc_init(&f, 1L << 40);
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, &a), 0);
  uint32_t h;
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_THREAD, 1, 2, -1, &h), 0);
  tbe_event e;
  memset(&e, 0, sizeof e);
  e.kind = TBE_EV_CPU_OP;
  e.track = h;
  e.name = tbe_trace_str_id(t, "aten::mm");
  e.start_ns = 1700000000000000000LL;
  e.dur_ns = 5000;
  assert_int_equal(tbe_trace_add_event(t, &e, NULL, NULL, 0, NULL), 0);
  assert_int_equal(tbe_trace_finish(t), 0);
  long live = f.live, failed = 0;
  for (long n = 0;; n++) {
    f.left = n;
    int rc = json ? tbe_export_chrome_json(t, path, 1, 1) : tbe_export_xplane(t, path, 1);
    assert_int_equal(f.live, live);
    if (rc == 0) break;
    assert_int_equal(rc, TBE_ENOMEM);
    assert_int_equal(tu_count_files(dir), 0);
    failed++;
  }
  assert_true(failed > 0);
  assert_int_equal(tu_count_files(dir), 1);
  f.left = 1L << 40;
  tbe_trace_free(t);
  assert_int_equal(f.live, 0);
  free(path);
  tu_rmrf(dir);
  free(dir);
}

static void test_single_file_allocator(void **state) {
  (void)state;
  single_file_sweep(1);
  single_file_sweep(0);
}

/* The sink outputs write into (exporter.h): appends, patches of bytes
 * already written, and one sticky error: a patch past what was written is
 * refused (TBE_EINVAL), and after it nothing more reaches the file. */
static void test_sink(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  char *path = tu_join(dir, "s");
  FILE *fp = fopen(path, "wb");
  assert_non_null(fp);
  tbe__sink s;
  tbe__sink_file(&s, fileno(fp));
  tbe__sink_write(&s, "abcdef", 6);
  tbe__sink_patch(&s, 2, "XY", 2);
  assert_int_equal(tbe__sink_error(&s), 0);
  assert_int_equal(s.written, 6);
  tbe__sink_patch(&s, 5, "ZZ", 2);
  assert_int_equal(tbe__sink_error(&s), TBE_EINVAL);
  tbe__sink_write(&s, "gh", 2);
  assert_int_equal(s.written, 6);
  assert_int_equal(fclose(fp), 0);
  size_t len = 0;
  uint8_t *got = tu_read_file(path, &len);
  assert_int_equal(len, 6);
  assert_memory_equal(got, "abXYef", 6);
  free(got);
  /* a full device: the write's error is the sink's */
  int fd = open("/dev/full", O_WRONLY);
  assert_true(fd >= 0);
  tbe__sink_file(&s, fd);
  tbe__sink_write(&s, "x", 1);
  assert_int_equal(tbe__sink_error(&s), -ENOSPC);
  close(fd);
  free(path);
  tu_rmrf(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_names),
      cmocka_unit_test(test_resolve_host),
      cmocka_unit_test(test_layout),
      cmocka_unit_test(test_existing_blocks_all),
      cmocka_unit_test(test_symlink_not_followed),
      cmocka_unit_test(test_all_or_nothing),
      cmocka_unit_test(test_all_outputs),
      cmocka_unit_test(test_force_replaces_all),
      cmocka_unit_test(test_unfinished_xplane),
      cmocka_unit_test(test_unfinished_json),
      cmocka_unit_test(test_unfinished_events),
      cmocka_unit_test(test_single_file_allocator),
      cmocka_unit_test(test_sink),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
