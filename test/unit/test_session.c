/* test_session.c: the public session API (tbexport/session.h) that the
 * tbexport program runs `tbexport -- CMD` through, and the public text
 * forms (tbexport/text.h) it prints with.
 *
 * What must never happen: a run named after one that exists (the default
 * name takes the next free suffix), a named run started over outputs of
 * the same host without force, a job id's run (tbexport's name, not the
 * user's) refused or written over when a job of that id ran before (it
 * moves to the next free name, the same for every rank), a spool folder made through a symlink or
 * left half made, a variable of the protocol missing from the program's
 * environment (or NVTX injected when NVTX is not traced), a file taken for
 * a spool by its name, a spool whose header cannot be read let through to
 * a conversion that writes half a run, a message of the session printed
 * instead of handed to the caller, text from a spool reaching the caller
 * with a control character in it, a cut form that splits a character.
 * Spool contents and their conversion are test_spool.c's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fcntl.h>
#include <zlib.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "events/spool.h"
#include "tbexport.h"
#include "testutil.h"

static void touch(const char *dir, const char *rel) {
  char *p = tu_join(dir, rel);
  assert_int_equal(tu_write_file(p, "x", 1), 0);
  free(p);
}

static void mkdirs(const char *dir, const char *rel) {
  char *p = tu_join(dir, rel);
  char cmd[4400];
  snprintf(cmd, sizeof cmd, "mkdir -p '%s'", p);
  assert_int_equal(system(cmd), 0);
  free(p);
}

static int ends_with(const char *s, const char *tail) {
  size_t a = strlen(s), b = strlen(tail);
  return a >= b && strcmp(s + a - b, tail) == 0;
}

/* ---- naming the run ---- */

static void test_run_name_default(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  char a[TBE_NAME_MAX + 1], b[TBE_NAME_MAX + 1];
  assert_int_equal(tbe_session_run_name(dir, NULL, NULL, 0, a, sizeof a, NULL, 0), 0);
  assert_int_equal(strlen(a), 19); /* YYYY_MM_DD_HH_MM_SS */
  /* A run of that name exists (its events folder): the next is another. */
  mkdirs(dir, a);
  assert_int_equal(tbe_session_run_name(dir, NULL, NULL, 0, b, sizeof b, NULL, 0), 0);
  assert_string_not_equal(a, b);
  if (strncmp(a, b, 19) == 0) assert_string_equal(b + 19, "_2"); /* the same second */
  /* ... and its profile folder counts too. */
  mkdirs(dir, "plugins/profile");
  char *p = tu_join(dir, "plugins/profile");
  char *q = tu_join(p, b);
  assert_int_equal(mkdir(q, 0755), 0);
  char c[TBE_NAME_MAX + 1];
  assert_int_equal(tbe_session_run_name(dir, NULL, NULL, 0, c, sizeof c, NULL, 0), 0);
  assert_string_not_equal(c, a);
  assert_string_not_equal(c, b);
  /* buffers too small for any name */
  assert_int_equal(tbe_session_run_name(dir, NULL, NULL, 0, c, TBE_NAME_MAX, NULL, 0), TBE_EINVAL);
  free(p);
  free(q);
  tu_rmrf(dir);
  free(dir);
}

static void test_run_name_clash(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  char name[TBE_NAME_MAX + 1], clash[4096];
  mkdirs(dir, "plugins/profile/r");
  touch(dir, "plugins/profile/r/node.xplane.pb");
  touch(dir, "plugins/profile/r/nodeX.xplane.pb");
  assert_int_equal(tbe_session_run_name(dir, "r", "node", 0, name, sizeof name, clash, sizeof clash),
                   TBE_EEXIST);
  assert_true(ends_with(clash, "/plugins/profile/r/node.xplane.pb"));
  /* another host beside it; force replaces; a host that only starts alike */
  assert_int_equal(tbe_session_run_name(dir, "r", "gpu1", 0, name, sizeof name, clash, sizeof clash),
                   0);
  assert_string_equal(name, "r");
  assert_string_equal(clash, "");
  assert_int_equal(tbe_session_run_name(dir, "r", "node", 1, name, sizeof name, NULL, 0), 0);
  assert_int_equal(tbe_session_run_name(dir, "r", "nod", 0, name, sizeof name, NULL, 0), 0);
  /* what one session of several processes wrote: HOST_pidN.* */
  touch(dir, "plugins/profile/r/gpu2_pid41.trace.json.gz");
  assert_int_equal(tbe_session_run_name(dir, "r", "gpu2", 0, name, sizeof name, clash, sizeof clash),
                   TBE_EEXIST);
  assert_true(ends_with(clash, "/gpu2_pid41.trace.json.gz"));
  /* names that would not be a path part */
  assert_int_equal(tbe_session_run_name(dir, "../r", NULL, 0, name, sizeof name, NULL, 0),
                   TBE_ENAME);
  assert_int_equal(tbe_session_run_name(dir, "r", "a/b", 0, name, sizeof name, NULL, 0), TBE_ENAME);
  char host[TBE_NAME_MAX + 1];
  tbe_session_host(host, sizeof host);
  assert_int_equal(tbe_name_check(host, NULL), 0);
  tu_rmrf(dir);
  free(dir);
}

/* ---- the spool folder and the environment ---- */

static void test_spool_dir(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  char *logdir = tu_join(dir, "a/b/log"), path[4096], where[4096];
  assert_int_equal(tbe_session_spool_dir(logdir, path, sizeof path, where, sizeof where), 0);
  struct stat st;
  assert_int_equal(lstat(path, &st), 0);
  assert_true(S_ISDIR(st.st_mode));
  assert_int_equal(st.st_mode & 0777, 0700);
  assert_true(strncmp(path, logdir, strlen(logdir)) == 0);
  assert_true(strncmp(path + strlen(logdir), "/.tbexport-spool-", 17) == 0);
  /* too small for the path: nothing is left behind */
  char small[8];
  assert_int_equal(tbe_session_spool_dir(logdir, small, sizeof small, NULL, 0), -ENAMETOOLONG);
  assert_int_equal(tu_count_files(logdir), 0);
  assert_int_equal(tbe_session_spool_dir("", path, sizeof path, NULL, 0), TBE_EINVAL);
  free(logdir);
  tu_rmrf(dir);
  free(dir);
}

typedef struct vars {
  char names[8][64], values[8][512];
  int n, fail_at;
} vars;

static int set_var(void *ctx, const char *name, const char *value) {
  vars *v = ctx;
  if (v->n == v->fail_at) return TBE_ENOMEM;
  snprintf(v->names[v->n], sizeof v->names[0], "%s", name);
  snprintf(v->values[v->n], sizeof v->values[0], "%s", value);
  v->n++;
  return 0;
}

static const char *var(const vars *v, const char *name) {
  for (int i = 0; i < v->n; i++)
    if (strcmp(v->names[i], name) == 0) return v->values[i];
  return NULL;
}

static void test_environment(void **state) {
  (void)state;
  tbe_profiler_options o;
  tbe_profiler_options_init(&o);
  o.buffer_mb = 8;
  o.flush_period_ms = 250;
  o.delay_s = 0.5;
  vars v = {.fail_at = -1};
  assert_int_equal(tbe_session_environment(&o, "/x/libtbexport_inject.so", "/l/.sp", set_var, &v),
                   0);
  assert_int_equal(v.n, 4);
  assert_string_equal(var(&v, "CUDA_INJECTION64_PATH"), "/x/libtbexport_inject.so");
  assert_string_equal(var(&v, "NVTX_INJECTION64_PATH"), "/x/libtbexport_inject.so");
  assert_string_equal(var(&v, "TBEXPORT_SPOOL_DIR"), "/l/.sp");
  const char *opts = var(&v, "TBEXPORT_OPTIONS");
  assert_non_null(opts);
  assert_non_null(strstr(opts, "trace=7;")); /* the default: cuda, nvtx, memory */
  assert_non_null(strstr(opts, "delay=0.5;"));
  assert_non_null(strstr(opts, "buffer_mb=8;"));
  assert_non_null(strstr(opts, "flush_ms=250;"));
  /* without NVTX tracing, NVTX is not pointed at the collector */
  o.trace = TBE_TRACE_CUDA;
  v.n = 0;
  assert_int_equal(tbe_session_environment(&o, "/i.so", "/s", set_var, &v), 0);
  assert_int_equal(v.n, 3);
  assert_null(var(&v, "NVTX_INJECTION64_PATH"));
  /* the first failure of the caller's setter is the result */
  v.n = 0;
  v.fail_at = 1;
  assert_int_equal(tbe_session_environment(&o, "/i.so", "/s", set_var, &v), TBE_ENOMEM);
  assert_int_equal(tbe_session_environment(&o, NULL, "/s", set_var, &v), TBE_EINVAL);
}

/* The ranks of one job join one run: each checks only its own entry. */
static void test_run_name_ranks(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  char name[TBE_NAME_MAX + 1], clash[4096];
  mkdirs(dir, "plugins/profile/torch-abc");
  touch(dir, "plugins/profile/torch-abc/node.rank0.xplane.pb");
  touch(dir, "plugins/profile/torch-abc/node.rank0.trace.json.gz");
  touch(dir, "plugins/profile/torch-abc/node.cluster.xplane.pb");
  /* rank 1 of the same host, and the same host without a rank, join */
  assert_int_equal(tbe_session_run_name(dir, "torch-abc", "node.rank1", 0, name, sizeof name, clash,
                                        sizeof clash),
                   0);
  assert_string_equal(name, "torch-abc");
  assert_int_equal(
      tbe_session_run_name(dir, "torch-abc", "node", 0, name, sizeof name, clash, sizeof clash), 0);
  assert_int_equal(tbe_session_run_name(dir, "torch-abc", "node.rank", 0, name, sizeof name, clash,
                                        sizeof clash),
                   0);
  /* rank 0 again: its own files */
  assert_int_equal(tbe_session_run_name(dir, "torch-abc", "node.rank0", 0, name, sizeof name, clash,
                                        sizeof clash),
                   TBE_EEXIST);
  assert_true(ends_with(clash, "/node.rank0.xplane.pb") ||
              ends_with(clash, "/node.rank0.trace.json.gz"));
  /* several processes of one rank: <entry>_pid<N>[_<k>] */
  touch(dir, "plugins/profile/torch-abc/node.rank3_pid77_2.trace.json.gz");
  assert_int_equal(tbe_session_run_name(dir, "torch-abc", "node.rank3", 0, name, sizeof name, clash,
                                        sizeof clash),
                   TBE_EEXIST);
  assert_true(ends_with(clash, "/node.rank3_pid77_2.trace.json.gz"));
  assert_int_equal(
      tbe_session_run_name(dir, "torch-abc", "node.rank3", 1, name, sizeof name, NULL, 0), 0);
  /* a file of another kind is no output of the entry */
  touch(dir, "plugins/profile/torch-abc/node.rank4.txt");
  assert_int_equal(tbe_session_run_name(dir, "torch-abc", "node.rank4", 0, name, sizeof name, clash,
                                        sizeof clash),
                   0);
  tu_rmrf(dir);
  free(dir);
}

/* A launcher's job id is tbexport's name, not the user's: when this
 * host entry has it already (the step run again by hand, an id reused),
 * the next free name, which every rank of the new job reaches alike. */
static void test_run_name_next_free(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  char name[TBE_NAME_MAX + 1], clash[4096];
  const unsigned nf = TBE_SESSION_NEXT_FREE;
  mkdirs(dir, "plugins/profile/slurm-42.0");
  touch(dir, "plugins/profile/slurm-42.0/n.rank0.xplane.pb");
  touch(dir, "plugins/profile/slurm-42.0/n.rank1.trace.json.gz");
  /* a free entry: the name itself, no clash */
  assert_int_equal(tbe_session_run_name(dir, "slurm-42.0", "n.rank2", nf, name, sizeof name, clash,
                                        sizeof clash),
                   0);
  assert_string_equal(name, "slurm-42.0");
  assert_string_equal(clash, "");
  /* a taken one: the next name, and what was found; the user's name is refused */
  assert_int_equal(tbe_session_run_name(dir, "slurm-42.0", "n.rank0", nf, name, sizeof name, clash,
                                        sizeof clash),
                   0);
  assert_string_equal(name, "slurm-42.0_2");
  assert_true(ends_with(clash, "/plugins/profile/slurm-42.0/n.rank0.xplane.pb"));
  assert_int_equal(
      tbe_session_run_name(dir, "slurm-42.0", "n.rank0", 0, name, sizeof name, clash, sizeof clash),
      TBE_EEXIST);
  /* the new job's rank 0 wrote slurm-42.0_2: its rank 1 joins it there */
  mkdirs(dir, "plugins/profile/slurm-42.0_2");
  touch(dir, "plugins/profile/slurm-42.0_2/n.rank0.xplane.pb");
  assert_int_equal(tbe_session_run_name(dir, "slurm-42.0", "n.rank1", nf, name, sizeof name, clash,
                                        sizeof clash),
                   0);
  assert_string_equal(name, "slurm-42.0_2");
  /* a third job: rank 0 past both */
  assert_int_equal(
      tbe_session_run_name(dir, "slurm-42.0", "n.rank0", nf, name, sizeof name, NULL, 0), 0);
  assert_string_equal(name, "slurm-42.0_3");
  /* force: the name itself, replaced */
  assert_int_equal(tbe_session_run_name(dir, "slurm-42.0", "n.rank0", nf | TBE_SESSION_FORCE, name,
                                        sizeof name, clash, sizeof clash),
                   0);
  assert_string_equal(name, "slurm-42.0");
  /* no room for a suffix: refused rather than cut */
  char longrun[TBE_NAME_MAX + 1];
  memset(longrun, 'r', TBE_NAME_MAX);
  longrun[TBE_NAME_MAX] = '\0';
  char rel[300];
  snprintf(rel, sizeof rel, "plugins/profile/%s", longrun);
  mkdirs(dir, rel);
  snprintf(rel, sizeof rel, "plugins/profile/%s/n.xplane.pb", longrun);
  touch(dir, rel);
  assert_int_equal(
      tbe_session_run_name(dir, longrun, "n", nf, name, sizeof name, clash, sizeof clash),
      TBE_EEXIST);
  tu_rmrf(dir);
  free(dir);
}

/* ---- ranked spools ---- */

#define T0 1790000000000000000LL

/* Writes DIR/<pid>.spool: one process with one kernel (none when
 * `kernel` is 0: an API call alone), of rank `rank` (-1: no rank item) in a
 * world of `world`. */
static void spool_k(const char *dir, uint32_t pid, int32_t rank, int32_t world, int kernel) {
  tbe_allocator al;
  tbe__allocator_init(&al, NULL);
  tbe__buf b;
  tbe__buf_init(&b, &al);
  tbe__sp_info info;
  memset(&info, 0, sizeof info);
  info.start_ns = T0;
  info.pid = pid;
  info.trace = 0xffff;
  tbe__spool_item(&b, TBE__SP_INFO, &info, sizeof info);
  if (rank >= 0) {
    uint8_t body[sizeof(tbe__sp_rank) + 3];
    tbe__sp_rank r = {rank, world, rank, TBE__LAUNCHER_TORCH};
    memcpy(body, &r, sizeof r);
    memcpy(body + sizeof r, "abc", 3);
    tbe__spool_item(&b, TBE__SP_RANK, body, sizeof body);
  }
  tbe__spool_item(&b, TBE__SP_HOST, "spoolhost", 9);
  tbe__spool_str(&b, 1, "cudaLaunchKernel", 16);
  tbe__spool_str(&b, 2, "allreduce_kernel", 16);
  tbe__sp_api a;
  memset(&a, 0, sizeof a);
  a.start = T0 + 1000;
  a.end = T0 + 2000;
  a.corr = 1;
  a.pid = pid;
  a.tid = pid;
  a.name = 1;
  tbe__spool_item(&b, TBE__SP_API, &a, sizeof a);
  tbe__sp_kernel k;
  memset(&k, 0, sizeof k);
  k.start = T0 + 3000;
  k.end = T0 + 9000;
  k.corr = 1;
  k.stream = 7;
  k.name = 2;
  if (kernel) tbe__spool_item(&b, TBE__SP_KERNEL, &k, sizeof k);
  tbe__sp_end e = {T0 + 10000};
  tbe__spool_item(&b, TBE__SP_END, &e, sizeof e);
  assert_int_equal(tbe__buf_error(&b), 0);
  char name[64];
  snprintf(name, sizeof name, "%u.spool", pid);
  char *p = tu_join(dir, name);
  int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  assert_true(fd >= 0);
  uint8_t head[TBE__SPOOL_HEADER];
  tbe__spool_header(head, T0);
  assert_int_equal(write(fd, head, sizeof head), (ssize_t)sizeof head);
  assert_int_equal(tbe__spool_write_frame(fd, b.data, b.len), 0);
  close(fd);
  free(p);
  tbe__buf_deinit(&b);
}

static void ranked_spool(const char *dir, uint32_t pid, int32_t rank, int32_t world) {
  spool_k(dir, pid, rank, world, 1);
}

static int exists(const char *dir, const char *rel) {
  char *p = tu_join(dir, rel);
  struct stat st;
  int r = stat(p, &st) == 0;
  free(p);
  return r;
}

/* The text of a gzipped file (malloc'd). */
static char *gunzip(const char *dir, const char *rel) {
  char *p = tu_join(dir, rel);
  gzFile g = gzopen(p, "rb");
  assert_non_null(g);
  size_t cap = 1 << 20, n = 0;
  char *s = malloc(cap);
  int got;
  while ((got = gzread(g, s + n, (unsigned)(cap - 1 - n))) > 0) n += (size_t)got;
  s[n] = '\0';
  gzclose(g);
  free(p);
  return s;
}

/* Rank of the trace in plugins/profile/RUN/ENTRY<suffix>, as imported. */
static int32_t rank_of(const char *dir, const char *rel, int32_t *world) {
  char *p = tu_join(dir, rel);
  tbe_trace *t = NULL;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  assert_int_equal(tbe_import_file(t, p, NULL, NULL), 0);
  int32_t r = t->rank;
  *world = t->world_size;
  tbe_trace_free(t);
  free(p);
  return r;
}

/* Whether the trace at dir/rel, imported, has a warning holding `text`. */
static int has_warning(const char *dir, const char *rel, const char *text) {
  char *p = tu_join(dir, rel);
  tbe_trace *t = NULL;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  assert_int_equal(tbe_import_file(t, p, NULL, NULL), 0);
  int found = 0;
  for (size_t i = 0; i < t->nwarnings; i++)
    found |= strstr(tbe_trace_str(t, t->warnings[i]), text) != NULL;
  tbe_trace_free(t);
  free(p);
  return found;
}

static int convert_dir(const char *logdir, const char *spools, const char *run,
                       const tbe_session_launcher *sl, size_t *processes) {
  tbe_export_options eo;
  tbe_export_options_init(&eo);
  eo.logdir = logdir;
  eo.run = run;
  eo.host = "node";
  tbe_session_options so;
  tbe_session_options_init(&so);
  so.spool_dir = spools;
  so.export_options = &eo;
  so.launcher = sl;
  so.program_pid = 5;
  so.start_ns = T0;
  so.stop_ns = T0 + 20000;
  tbe_session_result r;
  int rc = tbe_session_convert(&so, &r);
  *processes = r.processes;
  return rc;
}

/* `tbexport -- torchrun ...`: each worker's spool carries its rank, and
 * the session names the host entries from them. */
static void test_convert_ranks(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  char *spools = tu_join(dir, ".tbexport-spool-1");
  assert_int_equal(mkdir(spools, 0700), 0);
  ranked_spool(spools, 101, 0, 2);
  ranked_spool(spools, 102, 1, 2);
  ranked_spool(spools, 90, -1, 0); /* the launcher itself, without a rank */
  size_t np;
  assert_int_equal(convert_dir(dir, spools, "job", NULL, &np), 0);
  assert_int_equal(np, 3);
  const char *want[] = {
      "plugins/profile/job/node.rank0.xplane.pb", "plugins/profile/job/node.rank0.trace.json.gz",
      "plugins/profile/job/node.rank1.xplane.pb", "plugins/profile/job/node.rank1.trace.json.gz",
      "plugins/profile/job/node.xplane.pb",       "job/node.rank0.pt.trace.json.gz",
      "job/node.rank1.pt.trace.json.gz",          "job/rank1.node"};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
    if (!exists(dir, want[i])) fail_msg("missing %s", want[i]);
  assert_false(exists(dir, "plugins/profile/job/node_pid101.xplane.pb"));
  /* distributedInfo as HTA reads it, and both files give the rank back */
  char *j1 = gunzip(dir, "plugins/profile/job/node.rank1.trace.json.gz");
  assert_non_null(strstr(j1, "\"distributedInfo\": {\"rank\": 1, \"world_size\": 2}"));
  free(j1);
  char *j0 = gunzip(dir, "plugins/profile/job/node.rank0.trace.json.gz");
  assert_non_null(strstr(j0, "\"rank\": 0"));
  free(j0);
  char *ju = gunzip(dir, "plugins/profile/job/node.trace.json.gz");
  assert_null(strstr(ju, "distributedInfo"));
  free(ju);
  int32_t w;
  assert_int_equal(rank_of(dir, "plugins/profile/job/node.rank1.xplane.pb", &w), 1);
  assert_int_equal(w, 2);
  assert_int_equal(rank_of(dir, "plugins/profile/job/node.rank0.trace.json.gz", &w), 0);
  assert_int_equal(w, 2);
  assert_int_equal(rank_of(dir, "plugins/profile/job/node.xplane.pb", &w), -1);

  /* Two processes of one rank (a forked child that used CUDA too): both
   * <entry>_pid<N>; the lone unranked process stays <host>. */
  assert_int_equal(mkdir(spools, 0700), 0);
  ranked_spool(spools, 201, 0, 2);
  ranked_spool(spools, 202, 0, 2);
  ranked_spool(spools, 203, 1, 2);
  assert_int_equal(convert_dir(dir, spools, "dup", NULL, &np), 0);
  assert_true(exists(dir, "plugins/profile/dup/node.rank0_pid201.xplane.pb"));
  assert_true(exists(dir, "plugins/profile/dup/node.rank0_pid202.xplane.pb"));
  assert_true(exists(dir, "plugins/profile/dup/node.rank1.xplane.pb"));

  /* `tbexport -- torchrun ...` where the launcher's own process loaded
   * the collector too: no rank, no GPU work: not a host of the run (HTA
   * would read it as a second rank 0).  One with GPU work stays. */
  assert_int_equal(mkdir(spools, 0700), 0);
  ranked_spool(spools, 501, 0, 2);
  ranked_spool(spools, 502, 1, 2);
  spool_k(spools, 503, -1, 0, 0);
  assert_int_equal(convert_dir(dir, spools, "agent", NULL, &np), 0);
  assert_int_equal(np, 3);
  assert_true(exists(dir, "plugins/profile/agent/node.rank0.xplane.pb"));
  assert_true(exists(dir, "plugins/profile/agent/node.rank1.xplane.pb"));
  assert_false(exists(dir, "plugins/profile/agent/node.xplane.pb"));
  assert_false(exists(dir, "plugins/profile/agent/node_pid503.xplane.pb"));
  assert_false(exists(dir, "agent/node"));
  assert_int_equal(mkdir(spools, 0700), 0);
  ranked_spool(spools, 601, 0, 2);
  spool_k(spools, 602, -1, 0, 1);
  assert_int_equal(convert_dir(dir, spools, "worker", NULL, &np), 0);
  assert_true(exists(dir, "plugins/profile/worker/node.rank0.xplane.pb"));
  assert_true(exists(dir, "plugins/profile/worker/node.xplane.pb"));

  /* `srun tbexport -- ./app`: tbexport's own rank names a spool that has
   * none, and the run of a program that never initialized CUDA. */
  tbe_session_launcher sl;
  memset(&sl, 0, sizeof sl);
  sl.rank = 3;
  sl.world_size = 4;
  sl.local_rank = -1;
  sl.launcher = "Slurm";
  assert_int_equal(mkdir(spools, 0700), 0);
  ranked_spool(spools, 301, -1, 0);
  assert_int_equal(convert_dir(dir, spools, "own", &sl, &np), 0);
  assert_int_equal(rank_of(dir, "plugins/profile/own/node.rank3.xplane.pb", &w), 3);
  assert_int_equal(w, 4);
  /* the session's rank is the trace's before it is finished: its notes
   * (one of 4 ranks, no NCCL kernel) are there */
  char *jo = gunzip(dir, "plugins/profile/own/node.rank3.trace.json.gz");
  assert_non_null(strstr(jo, "no NCCL kernel in this rank's trace (one of 4 ranks)"));
  free(jo);
  assert_true(has_warning(dir, "plugins/profile/own/node.rank3.xplane.pb",
                          "no NCCL kernel in this rank's trace (one of 4 ranks)"));
  assert_int_equal(mkdir(spools, 0700), 0);
  assert_int_equal(convert_dir(dir, spools, "nocuda", &sl, &np), 0);
  assert_int_equal(np, 0);
  assert_int_equal(rank_of(dir, "plugins/profile/nocuda/node.rank3.trace.json.gz", &w), 3);
  /* a spool's own rank wins over the session's */
  assert_int_equal(mkdir(spools, 0700), 0);
  ranked_spool(spools, 302, 1, 4);
  assert_int_equal(convert_dir(dir, spools, "own2", &sl, &np), 0);
  assert_true(exists(dir, "plugins/profile/own2/node.rank1.xplane.pb"));
  /* the same rank again in a run that has it: refused, as any host */
  assert_int_equal(mkdir(spools, 0700), 0);
  ranked_spool(spools, 303, 1, 4);
  assert_int_equal(convert_dir(dir, spools, "own2", &sl, &np), TBE_EEXIST);
  free(spools);
  tu_rmrf(dir);
  free(dir);
}

/* ---- telling spools ---- */

static void test_spool_check(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  tbe_import_error err;
  char *p = tu_join(dir, "1.spool");
  /* not there, not a spool (whatever its name), a spool's header */
  assert_int_equal(tbe_session_spool_check(p, &err), 0);
  assert_int_equal(tu_write_file(p, "{\"traceEvents\":[]}", 18), 0);
  assert_int_equal(tbe_session_spool_check(p, &err), 0);
  uint8_t head[TBE__SPOOL_HEADER];
  tbe__spool_header(head, 1700000000000000000LL);
  char *q = tu_join(dir, "trace.json");
  assert_int_equal(tu_write_file(q, head, sizeof head), 0);
  assert_int_equal(tbe_session_spool_check(q, &err), 1);
  /* the magic, then a header of another build: refused, with its offset */
  head[12] ^= 0xff;
  assert_int_equal(tu_write_file(p, head, sizeof head), 0);
  assert_int_equal(tbe_session_spool_check(p, &err), TBE_ECORRUPT);
  assert_non_null(strstr(err.message, "1.spool: byte 12: other byte order"));
  assert_int_equal(err.offset, 12);
  assert_true(tbe_session_spool_check(p, NULL) < 0);
  /* the magic alone: a header cut by a crash, which converts as a capture
   * that ended early */
  assert_int_equal(tu_write_file(p, TBE__SPOOL_MAGIC, 8), 0);
  assert_int_equal(tbe_session_spool_check(p, &err), 1);
  free(p);
  free(q);
  tu_rmrf(dir);
  free(dir);
}

/* ---- messages ---- */

typedef struct said {
  int n, levels[8];
  char lines[8][1024];
} said;

static void on_message(void *ctx, tbe_message_level level, const char *line) {
  said *s = ctx;
  if (s->n == 8) return;
  s->levels[s->n] = (int)level;
  snprintf(s->lines[s->n++], sizeof s->lines[0], "%s", line);
}

static void test_messages(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  char *spools = tu_join(dir, ".tbexport-spool-1");
  assert_int_equal(mkdir(spools, 0700), 0);
  tbe_export_options eo;
  tbe_export_options_init(&eo);
  eo.logdir = dir;
  eo.run = "m";
  eo.host = "node";
  tbe_session_options so;
  tbe_session_options_init(&so);
  so.spool_dir = spools;
  so.export_options = &eo;
  so.program_pid = 5;
  so.start_ns = 1700000000000000000LL;
  so.stop_ns = so.start_ns + 1000;
  /* A program that never initialized CUDA: a run, and a note for the caller. */
  said s = {0};
  so.on_message = on_message;
  so.message_ctx = &s;
  tbe_session_result r;
  assert_int_equal(tbe_session_convert(&so, &r), 0);
  assert_int_equal(r.processes, 0);
  assert_int_equal(s.n, 1);
  assert_int_equal(s.levels[0], TBE_MSG_NOTE);
  assert_non_null(strstr(s.lines[0], "no CUDA activity was recorded"));
  char *x = tu_join(dir, "plugins/profile/m/node.xplane.pb");
  struct stat st;
  assert_int_equal(stat(x, &st), 0);
  /* The same with no_empty_run (tbexport -- CMD's default): no run, one
   * line that says so and why, the spool folder gone. */
  assert_int_equal(mkdir(spools, 0700), 0);
  eo.run = "m_empty";
  so.no_empty_run = 1;
  s.n = 0;
  assert_int_equal(tbe_session_convert(&so, &r), 0);
  assert_int_equal(r.processes, 0);
  assert_int_equal(s.n, 1);
  assert_non_null(strstr(s.lines[0], "no CUDA activity was recorded, no run written"));
  char *xe = tu_join(dir, "plugins/profile/m_empty");
  assert_int_not_equal(stat(xe, &st), 0);
  char *re = tu_join(dir, "m_empty");
  assert_int_not_equal(stat(re, &st), 0);
  assert_int_not_equal(stat(spools, &st), 0);
  free(xe);
  free(re);
  so.no_empty_run = 0;
  eo.run = "m";
  s.n = 0;
  /* A spool that cannot be read, named with an escape: an error for the
   * caller, in line form (no control character reaches it), the spool
   * kept and a warning saying so. */
  assert_int_equal(mkdir(spools, 0700), 0);
  char *bad = tu_join(spools, "7\x1b[2J.spool");
  uint8_t head[TBE__SPOOL_HEADER];
  tbe__spool_header(head, so.start_ns);
  head[8] ^= 0xff; /* another version */
  assert_int_equal(tu_write_file(bad, head, sizeof head), 0);
  s.n = 0;
  eo.run = "m2";
  assert_true(tbe_session_convert(&so, &r) < 0);
  assert_int_equal(r.processes, 1);
  assert_true(s.n >= 2);
  assert_int_equal(s.levels[0], TBE_MSG_ERROR);
  assert_non_null(strstr(s.lines[0], "7\\x1b[2J.spool: byte 8: unknown spool version"));
  for (int i = 0; i < s.n; i++)
    for (const char *c = s.lines[i]; *c; c++) assert_true((unsigned char)*c >= 0x20);
  assert_int_equal(s.levels[s.n - 1], TBE_MSG_WARNING);
  assert_non_null(strstr(s.lines[s.n - 1], "were not converted and are kept"));
  assert_int_equal(stat(bad, &st), 0);
  /* No callback: nothing is said, the result is the same. */
  so.on_message = NULL;
  eo.run = "m3";
  assert_true(tbe_session_convert(&so, NULL) < 0);
  /* No export options: refused. */
  so.export_options = NULL;
  assert_int_equal(tbe_session_convert(&so, &r), TBE_EINVAL);
  free(bad);
  free(x);
  free(spools);
  tu_rmrf(dir);
  free(dir);
}

/* ---- text forms ---- */

static void test_text_forms(void **state) {
  (void)state;
  char buf[64];
  const char *s = "a\x1b[2Jb\\c";
  /* measure, then write: snprintf's rule */
  size_t n = tbe_text_escape(TBE_TEXT_TERMINAL, s, strlen(s), NULL, 0);
  assert_int_equal(n, strlen("a\\x1b[2Jb\\\\c"));
  assert_int_equal(tbe_text_escape(TBE_TEXT_TERMINAL, s, strlen(s), buf, sizeof buf), n);
  assert_string_equal(buf, "a\\x1b[2Jb\\\\c");
  /* the line form keeps backslashes and is idempotent */
  assert_int_equal(tbe_text_escape(TBE_TEXT_LINE, s, strlen(s), buf, sizeof buf),
                   strlen("a\\x1b[2Jb\\c"));
  assert_string_equal(buf, "a\\x1b[2Jb\\c");
  char again[64];
  tbe_text_escape(TBE_TEXT_LINE, buf, strlen(buf), again, sizeof again);
  assert_string_equal(again, buf);
  /* a cut never splits a character: "é" is two bytes */
  assert_int_equal(tbe_text_escape(TBE_TEXT_TERMINAL, "ab\xc3\xa9", 4, buf, 4), 4);
  assert_string_equal(buf, "ab");
  assert_int_equal(tbe_text_escape(TBE_TEXT_JSON, "q\"\n", 3, buf, sizeof buf), 7);
  assert_string_equal(buf, "\"q\\\"\\n\"");
  assert_int_equal(tbe_text_escape(TBE_TEXT_CSV, "a,b", 3, buf, sizeof buf), 5);
  assert_string_equal(buf, "\"a,b\"");
  tbe_text_escape(TBE_TEXT_MARKDOWN, "<b>|", 4, buf, sizeof buf);
  assert_null(strchr(buf, '<'));
  assert_int_equal(tbe_text_width("\xe6\x97\xa5\xe6\x9c\xac", 6), 4); /* two wide characters */
  assert_int_equal(tbe_text_escape(TBE_TEXT_LINE, NULL, 5, buf, sizeof buf), 0);
  assert_string_equal(buf, "");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_run_name_default),   cmocka_unit_test(test_run_name_clash),
      cmocka_unit_test(test_spool_dir),          cmocka_unit_test(test_environment),
      cmocka_unit_test(test_spool_check),        cmocka_unit_test(test_messages),
      cmocka_unit_test(test_text_forms),         cmocka_unit_test(test_run_name_ranks),
      cmocka_unit_test(test_run_name_next_free), cmocka_unit_test(test_convert_ranks),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
