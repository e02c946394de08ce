/* test_paths.c: path and input safety.
 *
 * - Run and host names: the rules of tbe_name_check, and refused names
 *   create nothing anywhere.
 * - Names from inside traces (the trace's host, from XSpace hostnames or
 *   any importer) never reach the file system unchecked: hostile ones are
 *   made safe or replaced, and every file lands under the logdir.
 * - Planted symlinks: at a final output name (refused without force;
 *   replaced, never written through, with force), at the final name
 *   between the temporary file's creation and its commit, at the event
 *   file names the writer will try, and in place of the directories we
 *   create below the logdir (plugins, plugins/profile, the run, the
 *   events run, an hparams sub-run): those are refused with -ELOOP.  Each
 *   test checks that nothing outside the logdir changed.
 * - The matrix: a symlink (to a directory outside, to a file outside,
 *   dangling) at every component any library writer creates or writes
 *   through below the logdir (plugins, profile, the run's two folders, the
 *   lock file, each output name, the summary and diff event names, a new
 *   folder such as the spool folder), for every writer (tbe_export_run of
 *   each output and all, with and without force; the diff writer): a
 *   writer whose path crosses the link fails with -ELOOP (an output name:
 *   TBE_EEXIST without force, the link replaced itself with force) and
 *   names it in its error path; one whose path does not cross it works;
 *   nothing outside the logdir changes. 
 * - Imports bound their memory: lengths claimed by the input beyond its
 *   end are corruption, never an allocation of that size. */
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
#include <ftw.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "import/spool.h"
#include "events/spool.h"
#include "common/crc32c.h"
#include "common/fsutil.h"
#include "tbexport.h"
#include "testutil.h"

/* ---- helpers ---- */

typedef struct sandbox {
  char *base;    /* temporary root */
  char *logdir;  /* base/logdir */
  char *outside; /* base/outside: a directory we must never touch */
  char *target;  /* base/outside/target: a file we must never touch */
} sandbox;

static void sb_init(sandbox *s) {
  s->base = tu_mkdtemp();
  assert_non_null(s->base);
  s->logdir = tu_join(s->base, "logdir");
  s->outside = tu_join(s->base, "outside");
  s->target = tu_join(s->outside, "target");
  assert_int_equal(mkdir(s->logdir, 0755), 0);
  assert_int_equal(mkdir(s->outside, 0755), 0);
  assert_int_equal(tu_write_file(s->target, "KEEP", 4), 0);
}

static void sb_free(sandbox *s) {
  tu_rmrf(s->base);
  free(s->base);
  free(s->logdir);
  free(s->outside);
  free(s->target);
}

static long n_outside;
static int outside_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)p;
  (void)sb;
  (void)ftw;
  if (flag != FTW_D && flag != FTW_DP) n_outside++;
  return 0;
}

/* Nothing outside the logdir changed: the outside directory holds only
 * the untouched target. */
static void sb_check_outside(const sandbox *s) {
  size_t n;
  uint8_t *d = tu_read_file(s->target, &n);
  assert_non_null(d);
  assert_int_equal(n, 4);
  assert_memory_equal(d, "KEEP", 4);
  free(d);
  n_outside = 0;
  nftw(s->outside, outside_cb, 8, FTW_PHYS);
  assert_int_equal(n_outside, 1);
}

static const char *base_of(const char *p) {
  const char *s = strrchr(p, '/');
  return s ? s + 1 : p;
}

/* Files (not directories) below `root`, each checked to lie under
 * `under` (a prefix path) unless it is one of g_allow; returns the count
 * of those under `under`. */
static const char *g_under, *g_allow[2];
static long g_files;
static int under_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb;
  (void)ftw;
  if (flag == FTW_D || flag == FTW_DP) return 0;
  size_t ul = strlen(g_under);
  if ((g_allow[0] && strcmp(p, g_allow[0]) == 0) || (g_allow[1] && strcmp(p, g_allow[1]) == 0))
    return 0;
  if (strncmp(p, g_under, ul) != 0 || p[ul] != '/') {
    fprintf(stderr, "file outside the logdir: %s\n", p);
    fail();
  }
  g_files++;
  return 0;
}
static long files_under(const char *root, const char *under) {
  g_under = under;
  g_files = 0;
  nftw(root, under_cb, 16, FTW_PHYS);
  return g_files;
}

static tbe_trace *load_small(void) {
  tbe_trace *t = NULL;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  tbe_import_error err;
  assert_int_equal(tbe_import_file(t, tu_data("cli/small.trace.json"), NULL, &err), 0);
  return t;
}

static int export(const tbe_trace *t, const char *logdir, const char *run, const char *host,
                  unsigned outputs, int force) {
  tbe_export_options o;
  tbe_export_options_init(&o);
  o.logdir = logdir;
  o.run = run;
  o.host = host;
  o.outputs = outputs;
  o.force = force;
  return tbe_export_run(t, &o);
}

/* ---- names ---- */

static void test_name_rules(void **state) {
  (void)state;
  char n200[201], n201[202];
  memset(n200, 'a', 200);
  n200[200] = 0;
  memset(n201, 'a', 201);
  n201[201] = 0;
  const char *good[] = {"run1", "2026_12_02_10_00_00", "a..b", "host-1.example.com", "Zürich",
                        "a b", "x:y", n200};
  const char *bad[] = {"",      ".",   "..",       ".hidden", "../x",   "a/b",      "/abs",
                       "a/",    "a\n", "tab\there", "del\x7f", "\xff\xfe", "\xc0\xaf", n201,
                       "\xed\xa0\x80" /* surrogate */};
  for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
    const char *why = "x";
    assert_int_equal(tbe_name_check(good[i], &why), 0);
    assert_null(why);
  }
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    const char *why = NULL;
    assert_int_equal(tbe_name_check(bad[i], &why), TBE_ENAME);
    assert_non_null(why);
  }
  assert_int_equal(tbe_name_check(NULL, NULL), TBE_ENAME);
}

static void test_refused_names_create_nothing(void **state) {
  (void)state;
  sandbox s;
  sb_init(&s);
  tbe_trace *t = load_small();
  const char *bad[] = {"../escape", "a/b", ".hidden", "..", "", "x\ny", "/tmp"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    assert_int_equal(export(t, s.logdir, bad[i], "h", TBE_OUT_ALL, 0), TBE_ENAME);
    assert_int_equal(export(t, s.logdir, "r", bad[i], TBE_OUT_ALL, 1), TBE_ENAME);
    tbe_writer_options o;
    tbe_writer_options_init(&o);
    o.host = bad[i];
    tbe_writer *w = NULL;
    assert_int_equal(tbe_writer_open(&w, s.logdir, &o), TBE_ENAME);
  }
  assert_int_equal(files_under(s.base, s.outside), 1); /* only the target */
  struct stat st;
  assert_int_equal(stat(s.logdir, &st), 0);
  assert_int_equal(files_under(s.logdir, s.logdir), 0);
  sb_check_outside(&s);
  tbe_trace_free(t);
  sb_free(&s);
}

/* ---- names from inside traces ---- */

static void test_hostile_trace_host(void **state) {
  (void)state;
  char longname[400];
  memset(longname, 'h', sizeof longname - 1);
  longname[sizeof longname - 1] = 0;
  longname[0] = '.';
  longname[5] = '/';
  const char *hostile[] = {"../../escape", "/etc/passwd", ".hidden", "a/../../b", "x\n\ty",
                           "..",           ".",           "\xff\xfe", "evil:1234", longname,
                           "ok/../../../../../../tmp/x"};
  for (size_t i = 0; i < sizeof hostile / sizeof *hostile; i++) {
    sandbox s;
    sb_init(&s);
    tbe_trace *t = load_small();
    t->host = tbe_trace_str_id(t, hostile[i]);
    assert_true(t->host != 0);
    tbe_export_options o;
    tbe_export_options_init(&o);
    o.logdir = s.logdir;
    o.run = "r";
    char run[256], host[256];
    assert_int_equal(tbe_export_resolve(t, &o, run, sizeof run, host, sizeof host), 0);
    assert_int_equal(tbe_name_check(host, NULL), 0);
    assert_null(strchr(host, '/'));
    assert_int_equal(tbe_export_run(t, &o), 0);
    g_allow[0] = s.target;
    /* the 3 outputs, the JSON's link, the HParams session, the analysis; nothing elsewhere */
    assert_int_equal(files_under(s.base, s.logdir), 6);
    g_allow[0] = NULL;
    /* The trace's host is used as a name only: the profile files carry the
     * resolved (safe) name. */
    char *p = tu_join(s.logdir, "plugins/profile/r");
    char *x = malloc(strlen(p) + strlen(host) + 16);
    sprintf(x, "%s/%s.xplane.pb", p, host);
    struct stat st;
    assert_int_equal(lstat(x, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    free(x);
    free(p);
    sb_check_outside(&s);
    tbe_trace_free(t);
    sb_free(&s);
  }
}

/* protobuf helpers for a hand-made XSpace */
static size_t put_varint(uint8_t *b, uint64_t v) {
  size_t n = 0;
  while (v >= 0x80) {
    b[n++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  b[n++] = (uint8_t)v;
  return n;
}
static size_t put_bytes(uint8_t *b, unsigned field, const void *p, size_t len) {
  size_t n = put_varint(b, (uint64_t)field << 3 | 2);
  n += put_varint(b + n, len);
  memcpy(b + n, p, len);
  return n + len;
}

static void test_hostile_xspace_hostname(void **state) {
  (void)state;
  /* XSpace { planes: XPlane { id: 1, name: "/host:CPU" }, hostnames: H }:
   * the importer takes hostnames[0] as the trace's host. */
  const char *hostile[] = {"../../../escape", "/abs/path", ".dot", "ctl\x01name"};
  for (size_t i = 0; i < sizeof hostile / sizeof *hostile; i++) {
    sandbox s;
    sb_init(&s);
    uint8_t plane[64], space[256];
    size_t pn = 0;
    plane[pn++] = 0x08; /* id */
    plane[pn++] = 1;
    pn += put_bytes(plane + pn, 2, "/host:CPU", 9);
    size_t n = put_bytes(space, 1, plane, pn);
    n += put_bytes(space + n, 4, hostile[i], strlen(hostile[i]));
    char *in = tu_join(s.base, "in.xplane.pb");
    assert_int_equal(tu_write_file(in, space, n), 0);
    tbe_trace *t = NULL;
    assert_int_equal(tbe_trace_create(&t, NULL), 0);
    tbe_import_error err;
    int rc = tbe_import_file(t, in, NULL, &err);
    if (rc) fprintf(stderr, "%s\n", err.message);
    assert_int_equal(rc, 0);
    assert_string_equal(tbe_trace_str(t, t->host), hostile[i]); /* kept as text */
    assert_int_equal(export(t, s.logdir, "r", NULL, TBE_OUT_ALL, 0), 0);
    g_allow[0] = s.target;
    g_allow[1] = in;
    /* the 3 outputs, the JSON's link, the HParams session, the analysis; nothing elsewhere */
    assert_int_equal(files_under(s.base, s.logdir), 6);
    g_allow[0] = g_allow[1] = NULL;
    sb_check_outside(&s);
    tbe_trace_free(t);
    free(in);
    sb_free(&s);
  }
}

/* ---- planted symlinks ---- */

static void test_symlink_at_final_name(void **state) {
  (void)state;
  const char *names[] = {"h.xplane.pb", "h.trace.json.gz"};
  unsigned bits[] = {TBE_OUT_XPLANE, TBE_OUT_JSON};
  for (int i = 0; i < 2; i++) {
    for (int dangling = 0; dangling < 2; dangling++) {
      sandbox s;
      sb_init(&s);
      tbe_trace *t = load_small();
      char *dir = tu_join(s.logdir, "plugins/profile/r");
      assert_int_equal(tbe__mkdir_p(dir, 0755), 0);
      char *link = tu_join(dir, names[i]);
      char *dest = dangling ? tu_join(s.outside, "new") : strdup(s.target);
      assert_int_equal(symlink(dest, link), 0);
      /* Without force: refused, the link untouched. */
      assert_int_equal(export(t, s.logdir, "r", "h", bits[i], 0), TBE_EEXIST);
      char buf[4096];
      tbe_export_options o;
      tbe_export_options_init(&o);
      o.logdir = s.logdir;
      o.run = "r";
      o.host = "h";
      o.outputs = bits[i];
      assert_int_equal(tbe_export_conflict(t, &o, buf, sizeof buf), 1);
      assert_string_equal(base_of(buf), names[i]);
      struct stat st;
      assert_int_equal(lstat(link, &st), 0);
      assert_true(S_ISLNK(st.st_mode));
      /* With force: the link itself is replaced by the file. */
      assert_int_equal(export(t, s.logdir, "r", "h", bits[i], 1), 0);
      assert_int_equal(lstat(link, &st), 0);
      assert_true(S_ISREG(st.st_mode));
      assert_true(st.st_size > 4);
      sb_check_outside(&s); /* also: "new" was not created */
      free(dest);
      free(link);
      free(dir);
      tbe_trace_free(t);
      sb_free(&s);
    }
  }
}

/* The single-file API follows the same rule. */
static void test_symlink_single_file_api(void **state) {
  (void)state;
  sandbox s;
  sb_init(&s);
  tbe_trace *t = load_small();
  char *link = tu_join(s.logdir, "t.json");
  assert_int_equal(symlink(s.target, link), 0);
  assert_int_equal(tbe_export_chrome_json(t, link, 0, 0), TBE_EEXIST);
  assert_int_equal(tbe_export_xplane(t, link, 0), TBE_EEXIST);
  sb_check_outside(&s);
  assert_int_equal(tbe_export_chrome_json(t, link, 0, 1), 0);
  struct stat st;
  assert_int_equal(lstat(link, &st), 0);
  assert_true(S_ISREG(st.st_mode));
  sb_check_outside(&s);
  free(link);
  tbe_trace_free(t);
  sb_free(&s);
}

/* A symlink planted at the final name after the temporary file was made
 * (the race an attacker would try): the commit refuses without force and
 * replaces the link itself with force; the temporary file is gone. */
static void test_symlink_planted_before_commit(void **state) {
  (void)state;
  for (int force = 0; force < 2; force++) {
    sandbox s;
    sb_init(&s);
    tbe_allocator a;
    memset(&a, 0, sizeof a);
    tu_failalloc fa;
    a = tu_failalloc_init(&fa, 1L << 40);
    tbe__afile f;
    assert_int_equal(tbe__afile_open(&f, &a, s.logdir, "out.bin", force), 0);
    assert_int_equal(tbe__write_all(f.fd, "DATA", 4), 0);
    char *link = tu_join(s.logdir, "out.bin");
    assert_int_equal(symlink(s.target, link), 0);
    int rc = tbe__afile_commit(&f, 1, force);
    assert_int_equal(fa.live, 0);
    struct stat st;
    assert_int_equal(lstat(link, &st), 0);
    if (!force) {
      assert_int_equal(rc, TBE_EEXIST);
      assert_true(S_ISLNK(st.st_mode));
    } else {
      assert_int_equal(rc, 0);
      assert_true(S_ISREG(st.st_mode));
    }
    assert_int_equal(files_under(s.logdir, s.logdir), 1); /* no temporary left */
    sb_check_outside(&s);
    free(link);
    sb_free(&s);
  }
}

/* The writer creates its file with O_EXCL: symlinks planted at the names
 * it will try are skipped, never opened. */
static void test_symlink_at_event_file_names(void **state) {
  (void)state;
  sandbox s;
  sb_init(&s);
  long long now = (long long)time(NULL);
  char name[512];
  int planted = 0;
  for (long long ts = now; ts <= now + 2; ts++)
    for (unsigned n = 0; n < 64; n++) {
      snprintf(name, sizeof name, "%s/events.out.tfevents.%010lld.h.%ld.%u", s.logdir, ts,
               (long)getpid(), n);
      assert_int_equal(symlink(s.target, name), 0);
      planted++;
    }
  tbe_writer_options o;
  tbe_writer_options_init(&o);
  o.host = "h";
  tbe_writer *w = NULL;
  assert_int_equal(tbe_writer_open(&w, s.logdir, &o), 0);
  assert_int_equal(tbe_writer_add_scalar(w, "x", 1, 1, 1), 0);
  struct stat st;
  assert_int_equal(lstat(tbe_writer_path(w), &st), 0);
  assert_true(S_ISREG(st.st_mode));
  assert_int_equal(tbe_writer_close(w), 0);
  assert_int_equal(files_under(s.logdir, s.logdir), planted + 1);
  sb_check_outside(&s);
  sb_free(&s);
}

/* Policy: the directories tbexport creates below the logdir (plugins,
 * plugins/profile, plugins/profile/<run>, <run>, an hparams sub-run) are
 * never written through a symlink, even with force: -ELOOP.  The logdir
 * itself (given by the user) may be a symlink. */
static void test_symlinked_directories(void **state) {
  (void)state;
  const char *where[] = {"plugins", "plugins/profile", "plugins/profile/r", "r"};
  unsigned outputs[] = {TBE_OUT_ALL, TBE_OUT_XPLANE, TBE_OUT_JSON, TBE_OUT_EVENTS};
  for (size_t i = 0; i < 4; i++) {
    for (int force = 0; force < 2; force++) {
      sandbox s;
      sb_init(&s);
      tbe_trace *t = load_small();
      char *link = tu_join(s.logdir, where[i]);
      char *parent = strdup(link);
      *strrchr(parent, '/') = 0;
      assert_int_equal(tbe__mkdir_p(parent, 0755), 0);
      assert_int_equal(symlink(s.outside, link), 0);
      unsigned out = i == 3 ? TBE_OUT_EVENTS : outputs[i];
      int rc = export(t, s.logdir, "r", "h", out, force);
      if (rc != -ELOOP) fprintf(stderr, "%s: %s\n", where[i], tbe_strerror(rc));
      assert_int_equal(rc, -ELOOP);
      sb_check_outside(&s);
      free(parent);
      free(link);
      tbe_trace_free(t);
      sb_free(&s);
    }
  }
  /* A symlinked logdir is the user's choice and works. */
  sandbox s;
  sb_init(&s);
  tbe_trace *t = load_small();
  char *ld = tu_join(s.base, "linked");
  assert_int_equal(symlink(s.logdir, ld), 0);
  assert_int_equal(export(t, ld, "r", "h", TBE_OUT_ALL, 0), 0);
  assert_int_equal(files_under(s.logdir, s.logdir), 6);
  sb_check_outside(&s);
  free(ld);
  tbe_trace_free(t);
  sb_free(&s);
}

static void test_symlinked_hparams_subrun(void **state) {
  (void)state;
  sandbox s;
  sb_init(&s);
  tbe_writer_options o;
  tbe_writer_options_init(&o);
  o.host = "h";
  tbe_writer *w = NULL;
  assert_int_equal(tbe_writer_open(&w, s.logdir, &o), 0);
  char *link = tu_join(s.logdir, "hp");
  assert_int_equal(symlink(s.outside, link), 0);
  tbe_hparam hp = {"lr", TBE_HPARAM_NUMBER, 0.1, NULL, 0};
  assert_int_equal(tbe_writer_add_hparams(w, &hp, 1, NULL, 0, "hp", 1, 1), -ELOOP);
  assert_int_equal(tbe_writer_add_hparams(w, &hp, 1, NULL, 0, "hp2", 1, 1), 0);
  assert_int_equal(tbe_writer_close(w), 0);
  sb_check_outside(&s);
  free(link);
  sb_free(&s);
}

/* ---- the symlink matrix ---- */

/* What a writer of the matrix is. */
typedef struct mwriter {
  const char *name;
  unsigned outputs; /* tbe_export_run's, or 0: the diff writer */
  int force;
} mwriter;

/* A component: where the link goes, and which writers cross it. */
typedef struct mcomp {
  const char *rel;
  unsigned crossed_by; /* output bits; TBE_OUT_EVENTS << 1: the diff writer */
  int is_output;       /* an output name: with force replaced, not refused */
} mcomp;

#define M_DIFF (TBE_OUT_EVENTS << 1)

/* A comparison of `t` with itself (the analyses use t's strings: keep t). */
static tbe_diff *small_diff(const tbe_trace *t, tbe_analysis **an) {
  assert_int_equal(tbe_analysis_create(&an[0], t, NULL), 0);
  assert_int_equal(tbe_analysis_create(&an[1], t, NULL), 0);
  tbe_diff *d = NULL;
  assert_int_equal(tbe_diff_create(&d, an[0], an[1], NULL), 0);
  return d;
}

static void test_symlink_matrix(void **state) {
  (void)state;
  long long now = (long long)time(NULL);
  char sum_name[3][300], diff_name[3][300], hp_name[3][300];
  for (int k = 0; k < 3; k++) {
    snprintf(hp_name[k], sizeof hp_name[k],
             "r/events.out.tfevents.%010lld.h.tbexport-hparams", now + k);
    snprintf(sum_name[k], sizeof sum_name[k], "r/events.out.tfevents.%010lld.h.tbexport-summary",
             now + k);
    snprintf(diff_name[k], sizeof diff_name[k], "r/events.out.tfevents.%010lld.base.tbexport-diff",
             now + k);
  }
  const mcomp comps[] = {
      {"plugins", TBE_OUT_XPLANE | TBE_OUT_JSON, 0},
      {"plugins/profile", TBE_OUT_XPLANE | TBE_OUT_JSON, 0},
      {"plugins/profile/r", TBE_OUT_XPLANE | TBE_OUT_JSON, 0},
      {"r", TBE_OUT_EVENTS | TBE_OUT_JSON | M_DIFF, 0}, /* JSON: its link, r/h.pt.trace.json.gz */
      {".tbexport.lock", TBE_OUT_ALL | M_DIFF, 0},
      {"plugins/profile/r/h.xplane.pb", TBE_OUT_XPLANE, 1},
      {"plugins/profile/r/h.trace.json.gz", TBE_OUT_JSON, 1},
      {"summary events (3 seconds of names)", TBE_OUT_EVENTS, 1},
      {"diff events (3 seconds of names)", M_DIFF, 1},
      {"r/h.pt.trace.json.gz", TBE_OUT_JSON, 1},
      {"r/hparams", TBE_OUT_EVENTS, 0},   /* the sub-run of sessions written before */
      {"r/hparams/h", TBE_OUT_EVENTS, 0}, /* the host's own: a conflict, or removed */
      {"hparams events (3 seconds of names)", TBE_OUT_EVENTS, 1},
  };
  const mwriter writers[] = {
      {"export all", TBE_OUT_ALL, 0},         {"export all --force", TBE_OUT_ALL, 1},
      {"export xplane", TBE_OUT_XPLANE, 0},   {"export json --force", TBE_OUT_JSON, 1},
      {"export events", TBE_OUT_EVENTS, 0},   {"export events --force", TBE_OUT_EVENTS, 1},
      {"diff", 0, 1},
  };
  tbe_trace *t = load_small();
  tbe_analysis *an[2];
  tbe_diff *d = small_diff(t, an);
  long cases = 0;
  for (size_t c = 0; c < sizeof comps / sizeof *comps; c++)
    for (size_t w = 0; w < sizeof writers / sizeof *writers; w++)
      for (int kind = 0; kind < 3; kind++) { /* to a dir outside, a file outside, dangling */
        sandbox s;
        sb_init(&s);
        char *dangling = tu_join(s.outside, "new");
        const char *dest = kind == 0 ? s.outside : kind == 1 ? s.target : dangling;
        /* Plant the link(s). */
        const char *rels[3] = {comps[c].rel, NULL, NULL};
        if (c == 7 || c == 8 || c == 12)
          for (int k = 0; k < 3; k++)
            rels[k] = c == 7 ? sum_name[k] : c == 8 ? diff_name[k] : hp_name[k];
        for (int k = 0; k < 3 && rels[k]; k++) {
          char *link = tu_join(s.logdir, rels[k]);
          char *parent = strdup(link);
          *strrchr(parent, '/') = 0;
          assert_int_equal(tbe__mkdir_p(parent, 0755), 0);
          assert_int_equal(symlink(dest, link), 0);
          free(parent);
          free(link);
        }
        const mwriter *mw = &writers[w];
        /* A forced export replaces all of the host's outputs (those of
         * formats it does not write go), so it crosses every place any
         * export of the host does. */
        unsigned me = !mw->outputs ? M_DIFF : mw->force ? TBE_OUT_ALL : mw->outputs;
        int crossed = (comps[c].crossed_by & me) != 0;
        char where[4096] = "x";
        int rc;
        if (mw->outputs) {
          tbe_export_options o;
          tbe_export_options_init(&o);
          o.logdir = s.logdir;
          o.run = "r";
          o.host = "h";
          o.outputs = mw->outputs;
          o.force = mw->force;
          o.error_path = where;
          o.error_path_size = sizeof where;
          rc = tbe_export_run(t, &o);
        } else {
          char *run_dir = tu_join(s.logdir, "r");
          rc = tbe_diff_write_events(d, run_dir, "base", "r", 10, NULL, where, sizeof where);
          free(run_dir);
        }
        int want = !crossed ? 0 : !comps[c].is_output ? -ELOOP : mw->force ? 0 : TBE_EEXIST;
        if (rc != want)
          fail_msg("link at %s (%s), %s: got %s, want %s (%s)", comps[c].rel,
                   kind == 0 ? "dir" : kind == 1 ? "file" : "dangling", mw->name,
                   tbe_err_name(rc), tbe_err_name(want), where);
        if (want) {
          /* The error names the component (a summary/diff name: one of them). */
          char *expect = tu_join(s.logdir, rels[0]);
          if (c == 7 || c == 8 || c == 12)
            assert_non_null(strstr(where, c == 7   ? ".h.tbexport-summary"
                                          : c == 8 ? ".base.tbexport-diff"
                                                   : ".h.tbexport-hparams"));
          else assert_string_equal(where, expect);
          free(expect);
        }
        if (crossed && comps[c].is_output && mw->force) {
          /* The link itself was replaced (or, for an older event name,
           * removed): none is left where a link was, except at names of
           * seconds the writer did not use. */
          struct stat st;
          int links = 0;
          for (int k = 0; k < 3 && rels[k]; k++) {
            char *p = tu_join(s.logdir, rels[k]);
            if (lstat(p, &st) == 0 && S_ISLNK(st.st_mode)) links++;
            else if (lstat(p, &st) == 0) assert_true(S_ISREG(st.st_mode));
            free(p);
          }
          assert_int_equal(links, 0);
        }
        sb_check_outside(&s); /* the target untouched, "new" not created */
        cases++;
        free(dangling);
        sb_free(&s);
      }
  fprintf(stderr, "symlink matrix: %ld cases (13 components x 7 writers x 3 link kinds)\n", cases);
  tbe_diff_free(d);
  tbe_analysis_free(an[0]);
  tbe_analysis_free(an[1]);
  tbe_trace_free(t);
}

/* A folder that must be new (the spool folder, tbe_session_spool_dir):
 * a symlink at its name is refused, never used. */
static void test_symlink_at_new_folder(void **state) {
  (void)state;
  sandbox s;
  sb_init(&s);
  char *link = tu_join(s.logdir, ".tbexport-spool-1-2");
  assert_int_equal(symlink(s.outside, link), 0);
  char where[4096];
  int fd = tbe__dir_open(s.logdir, ".tbexport-spool-1-2", TBE__DIR_CREATE | TBE__DIR_EXCL, 0700,
                         where, sizeof where);
  assert_int_equal(fd, -ELOOP);
  assert_string_equal(where, link);
  char path[4096];
  assert_int_equal(tbe_session_spool_dir(s.logdir, path, sizeof path, where, sizeof where), 0);
  struct stat st;
  assert_int_equal(lstat(path, &st), 0);
  assert_true(S_ISDIR(st.st_mode));
  assert_int_equal(st.st_mode & 0777, 0700);
  sb_check_outside(&s);
  free(link);
  sb_free(&s);
}

static void test_mkdir_under(void **state) {
  (void)state;
  sandbox s;
  sb_init(&s);
  assert_int_equal(tbe__mkdir_under(s.logdir, "a/b/c", 0755), 0);
  assert_int_equal(tbe__mkdir_under(s.logdir, "a/b/c", 0755), 0); /* exists: fine */
  assert_int_equal(tbe__mkdir_under(s.logdir, "../x", 0755), TBE_EINVAL);
  assert_int_equal(tbe__mkdir_under(s.logdir, "a/./b", 0755), TBE_EINVAL);
  assert_int_equal(tbe__mkdir_under(s.logdir, "/abs", 0755), TBE_EINVAL);
  assert_int_equal(tbe__mkdir_under(s.logdir, "a//b", 0755), TBE_EINVAL);
  char *f = tu_join(s.logdir, "file");
  assert_int_equal(tu_write_file(f, "x", 1), 0);
  assert_int_equal(tbe__mkdir_under(s.logdir, "file/sub", 0755), -ENOTDIR);
  char *l = tu_join(s.logdir, "a/b/l");
  assert_int_equal(symlink(s.outside, l), 0);
  assert_int_equal(tbe__mkdir_under(s.logdir, "a/b/l/deeper", 0755), -ELOOP);
  sb_check_outside(&s);
  free(f);
  free(l);
  sb_free(&s);
}

/* ---- imports bound their memory ---- */

/* A TFRecord whose length field claims far more than the file holds: the
 * reader reports truncation and never asks for a buffer of that size. */
static void test_tfrecord_claimed_length(void **state) {
  (void)state;
  sandbox s;
  sb_init(&s);
  uint64_t claims[] = {1ull << 40, 1ull << 31, 0xFFFFFFFFFFFFFFFFull, 100000};
  for (size_t i = 0; i < sizeof claims / sizeof *claims; i++) {
    uint8_t rec[12 + 64];
    memcpy(rec, &claims[i], 8);
    uint32_t c = tbe__crc32c_mask(tbe__crc32c(rec, 8));
    memcpy(rec + 8, &c, 4);
    memset(rec + 12, 0x5A, 64);
    char *p = tu_join(s.base, "events.out.tfevents.1.x");
    assert_int_equal(tu_write_file(p, rec, sizeof rec), 0);
    tu_failalloc fa;
    tbe_allocator a = tu_failalloc_init(&fa, 1L << 40);
    tbe_reader *r = NULL;
    assert_int_equal(tbe_reader_open(&r, p, 0, &a), 0);
    const tbe_tb_event *ev;
    int rc = tbe_reader_next(r, &ev);
    assert_true(rc < 0 || rc == 0);
    assert_true(rc != TBE_ENOMEM);
    tbe_reader_close(r);
    assert_int_equal(fa.live, 0);
    assert_true(fa.biggest < (1u << 20)); /* bounded by the input, not the claim */
    free(p);
  }
  sb_free(&s);
}

/* XSpace length-delimited fields claiming more than the input: a clear
 * format error, not an allocation. */
static void test_xspace_claimed_lengths(void **state) {
  (void)state;
  sandbox s;
  sb_init(&s);
  uint8_t b[64];
  struct {
    const char *what;
    size_t n;
  } cases[4];
  uint8_t bufs[4][64];
  size_t n = 0;
  /* planes field claiming 2^40 bytes */
  n = 0;
  b[n++] = 0x0A;
  n += put_varint(b + n, 1ull << 40);
  memset(b + n, 0, 8);
  n += 8;
  memcpy(bufs[0], b, n);
  cases[0].what = "planes length 2^40";
  cases[0].n = n;
  /* hostnames field claiming 2^62 */
  n = 0;
  b[n++] = 0x22;
  n += put_varint(b + n, 1ull << 62);
  b[n++] = 'x';
  memcpy(bufs[1], b, n);
  cases[1].what = "hostname length 2^62";
  cases[1].n = n;
  /* a plane whose name claims 2^32 inside a well-formed plane field */
  uint8_t plane[16];
  size_t pn = 0;
  plane[pn++] = 0x12;
  pn += put_varint(plane + pn, 1ull << 32);
  plane[pn++] = 'a';
  n = put_bytes(b, 1, plane, pn);
  memcpy(bufs[2], b, n);
  cases[2].what = "plane name length 2^32";
  cases[2].n = n;
  /* a plane whose lines field claims just past the end */
  pn = 0;
  plane[pn++] = 0x1A;
  pn += put_varint(plane + pn, 5);
  plane[pn++] = 0;
  n = put_bytes(b, 1, plane, pn);
  memcpy(bufs[3], b, n);
  cases[3].what = "lines one past the end";
  cases[3].n = n;
  char *p = tu_join(s.base, "bad.xplane.pb");
  for (int i = 0; i < 4; i++) {
    assert_int_equal(tu_write_file(p, bufs[i], cases[i].n), 0);
    tu_failalloc fa;
    tbe_allocator a = tu_failalloc_init(&fa, 1L << 40);
    tbe_trace *t = NULL;
    assert_int_equal(tbe_trace_create(&t, &a), 0);
    tbe_import_error err;
    int rc = tbe_import_file(t, p, NULL, &err);
    fprintf(stderr, "%s: %s\n", cases[i].what, err.message);
    assert_true(rc == TBE_ECORRUPT || rc == TBE_EPARSE); /* read as XSpace, refused */
    assert_true(strlen(err.message) > 0);
    tbe_trace_free(t);
    assert_int_equal(fa.live, 0);
    assert_true(fa.biggest < (1u << 20));
  }
  free(p);
  sb_free(&s);
}

/* A spool frame claiming more than the file holds (or more than any frame
 * may) is a truncated tail, reported, never an allocation. */
static void test_spool_claimed_length(void **state) {
  (void)state;
  uint32_t claims[] = {0xFFFFFFF0u, TBE__SPOOL_FRAME_MAX, TBE__SPOOL_FRAME_MAX + 1u, 4096};
  for (size_t i = 0; i < sizeof claims / sizeof *claims; i++) {
    uint8_t img[TBE__SPOOL_HEADER + 8 + 32];
    tbe__spool_header(img, 1);
    memcpy(img + TBE__SPOOL_HEADER, &claims[i], 4);
    memset(img + TBE__SPOOL_HEADER + 4, 0, 4 + 32);
    tu_failalloc fa;
    tbe_allocator a = tu_failalloc_init(&fa, 1L << 40);
    tbe_trace *t = NULL;
    assert_int_equal(tbe_trace_create(&t, &a), 0);
    tbe__convert_info info;
    memset(&info, 0, sizeof info);
    int rc = tbe__spool_to_trace(img, sizeof img, "claim.spool", NULL, t, &info);
    assert_int_equal(rc, 0); /* an incomplete tail is not an error... */
    assert_true(info.ended_early); /* ...but it is reported */
    assert_int_equal(info.tail_bytes, 8 + 32);
    tbe_trace_free(t);
    assert_int_equal(fa.live, 0);
    assert_true(fa.biggest < (1u << 20));
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_symlink_at_event_file_names), /* first: the writer's name counter */
      cmocka_unit_test(test_name_rules),
      cmocka_unit_test(test_refused_names_create_nothing),
      cmocka_unit_test(test_hostile_trace_host),
      cmocka_unit_test(test_hostile_xspace_hostname),
      cmocka_unit_test(test_symlink_at_final_name),
      cmocka_unit_test(test_symlink_single_file_api),
      cmocka_unit_test(test_symlink_planted_before_commit),
      cmocka_unit_test(test_symlinked_directories),
      cmocka_unit_test(test_symlinked_hparams_subrun),
      cmocka_unit_test(test_symlink_matrix),
      cmocka_unit_test(test_symlink_at_new_folder),
      cmocka_unit_test(test_mkdir_under),
      cmocka_unit_test(test_tfrecord_claimed_length),
      cmocka_unit_test(test_xspace_claimed_lengths),
      cmocka_unit_test(test_spool_claimed_length),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
