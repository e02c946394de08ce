/* test_launcher.c: the launcher's rank from the environment
 * (src/collect/launcher.h) and the session API over it
 * (tbe_session_launcher_read, tbe_session_host_entry).
 *
 * The environment is a table given through the getenv-like callback, so
 * nothing here reads or changes the process's own.
 *
 * What must never happen: a rank taken from a launcher when an earlier one
 * in the order has a valid rank; a malformed value (a sign, a space, a
 * letter, beyond int32, a rank not below its world size) taken, or
 * dropped without a reason; a malformed rank hiding a later launcher's
 * valid one; a job id without a rank; torchrun's "none" run id taken as a
 * job; a run name that tbe_name_check refuses; two attempts of one job
 * (a Slurm requeue, a torchrun restart) given one run name, or a first
 * attempt given a suffix. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "collect/launcher.h"
#include "tbexport.h"
#include "testutil.h"

/* ---- a fake environment ---- */

typedef struct fenv {
  const char *kv[32]; /* "NAME=VALUE" */
} fenv;

static const char *fget(void *ctx, const char *name) {
  const fenv *e = ctx;
  size_t n = strlen(name);
  for (size_t i = 0; i < 32 && e->kv[i]; i++)
    if (strncmp(e->kv[i], name, n) == 0 && e->kv[i][n] == '=') return e->kv[i] + n + 1;
  return NULL;
}

static tbe__launcher rd(const fenv *e) {
  tbe__launcher l;
  memset(&l, 0x5a, sizeof l); /* every field must be set */
  tbe__launcher_read(&l, fget, (void *)e);
  return l;
}

static void expect(const tbe__launcher *l, unsigned launcher, int rank, int size, int local,
                   const char *job) {
  assert_int_equal(l->launcher, launcher);
  assert_int_equal(l->rank, rank);
  assert_int_equal(l->world_size, size);
  assert_int_equal(l->local_rank, local);
  assert_string_equal(l->job, job);
}

static void run_name(const tbe__launcher *l, const char *want) {
  char buf[TBE_NAME_MAX + 1];
  int rc = tbe__launcher_run_name(l, buf, sizeof buf);
  if (!want) {
    assert_int_equal(rc, TBE_ENOENT);
    assert_string_equal(buf, "");
    return;
  }
  assert_int_equal(rc, 0);
  assert_string_equal(buf, want);
  assert_int_equal(tbe_name_check(buf, NULL), 0);
}

/* ---- each launcher ---- */

static void test_none(void **state) {
  (void)state;
  fenv e = {{"PATH=/bin", "HOME=/root", NULL}};
  tbe__launcher l = rd(&e);
  expect(&l, TBE__LAUNCHER_NONE, -1, 0, -1, "");
  assert_string_equal(l.why, "");
  run_name(&l, NULL);
  uint8_t body[64];
  assert_int_equal(tbe__launcher_item(&l, body, sizeof body), 0);
  /* a job id alone is no rank */
  fenv j = {{"SLURM_JOB_ID=77", "TORCHELASTIC_RUN_ID=abc", NULL}};
  l = rd(&j);
  expect(&l, TBE__LAUNCHER_NONE, -1, 0, -1, "");
}

static void test_torch(void **state) {
  (void)state;
  fenv e = {{"RANK=3", "WORLD_SIZE=8", "LOCAL_RANK=1", "TORCHELASTIC_RUN_ID=abc", NULL}};
  tbe__launcher l = rd(&e);
  expect(&l, TBE__LAUNCHER_TORCH, 3, 8, 1, "abc");
  assert_int_equal(l.job_launcher, TBE__LAUNCHER_TORCH);
  assert_string_equal(l.why, "");
  assert_string_equal(tbe__launcher_name(l.launcher), "torchrun");
  run_name(&l, "torch-abc");
  /* the item: the struct, then the job id's bytes */
  uint8_t body[sizeof(tbe__sp_rank) + TBE__JOB_MAX];
  size_t n = tbe__launcher_item(&l, body, sizeof body);
  assert_int_equal(n, sizeof(tbe__sp_rank) + 3);
  tbe__sp_rank r;
  memcpy(&r, body, sizeof r);
  assert_int_equal(r.rank, 3);
  assert_int_equal(r.world_size, 8);
  assert_int_equal(r.local_rank, 1);
  assert_int_equal(r.launcher, TBE__LAUNCHER_TORCH);
  assert_memory_equal(body + sizeof r, "abc", 3);
  /* too small a body: nothing */
  assert_int_equal(tbe__launcher_item(&l, body, sizeof r + 2), 0);
  /* "none" and "" are no run id (torchrun's default without rendezvous) */
  fenv none = {{"RANK=0", "WORLD_SIZE=2", "TORCHELASTIC_RUN_ID=none", NULL}};
  l = rd(&none);
  expect(&l, TBE__LAUNCHER_TORCH, 0, 2, -1, "");
  run_name(&l, NULL);
  fenv empty = {{"RANK=0", "WORLD_SIZE=2", "TORCHELASTIC_RUN_ID=", NULL}};
  l = rd(&empty);
  expect(&l, TBE__LAUNCHER_TORCH, 0, 2, -1, "");
}

static void test_ompi(void **state) {
  (void)state;
  fenv e = {{"OMPI_COMM_WORLD_RANK=5", "OMPI_COMM_WORLD_SIZE=6", "OMPI_COMM_WORLD_LOCAL_RANK=2",
             "PMIX_NAMESPACE=prterun-node1-4242@1", "OMPI_MCA_ess_base_jobid=99", "PMIX_RANK=5",
             NULL}};
  tbe__launcher l = rd(&e);
  expect(&l, TBE__LAUNCHER_OMPI, 5, 6, 2, "prterun-node1-4242@1");
  assert_string_equal(tbe__launcher_name(l.launcher), "Open MPI");
  run_name(&l, "ompi-prterun-node1-4242_1"); /* '@' is no name byte */
  /* older Open MPI: the ess job id */
  fenv old = {
      {"OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=2", "OMPI_MCA_ess_base_jobid=3121", NULL}};
  l = rd(&old);
  expect(&l, TBE__LAUNCHER_OMPI, 0, 2, -1, "3121");
  run_name(&l, "ompi-3121");
}

static void test_pmix(void **state) {
  (void)state;
  fenv e = {{"PMIX_RANK=7", "PMIX_NAMESPACE=slurm.pmix.41.0", NULL}};
  tbe__launcher l = rd(&e);
  expect(&l, TBE__LAUNCHER_PMIX, 7, 0, -1, "slurm.pmix.41.0");
  assert_string_equal(tbe__launcher_name(l.launcher), "PMIx");
  run_name(&l, "pmix-slurm.pmix.41.0");
}

static void test_pmi(void **state) {
  (void)state;
  /* MPICH's Hydra: no job id, so no run name (the caller says so) */
  fenv e = {{"PMI_RANK=1", "PMI_SIZE=4", "MPI_LOCALRANKID=1", NULL}};
  tbe__launcher l = rd(&e);
  expect(&l, TBE__LAUNCHER_PMI, 1, 4, 1, "");
  assert_string_equal(tbe__launcher_name(l.launcher), "PMI");
  run_name(&l, NULL);
}

static void test_mvapich(void **state) {
  (void)state;
  fenv e = {
      {"MV2_COMM_WORLD_RANK=2", "MV2_COMM_WORLD_SIZE=3", "MV2_COMM_WORLD_LOCAL_RANK=0", NULL}};
  tbe__launcher l = rd(&e);
  expect(&l, TBE__LAUNCHER_MVAPICH, 2, 3, 0, "");
  assert_int_equal(TBE__LAUNCHER_MVAPICH, 6);
  assert_string_equal(tbe__launcher_name(l.launcher), "MVAPICH");
}

static void test_slurm(void **state) {
  (void)state;
  fenv e = {{"SLURM_PROCID=9", "SLURM_NTASKS=16", "SLURM_LOCALID=1", "SLURM_JOB_ID=123456",
             "SLURM_STEP_ID=2", NULL}};
  tbe__launcher l = rd(&e);
  expect(&l, TBE__LAUNCHER_SLURM, 9, 16, 1, "123456.2");
  assert_string_equal(tbe__launcher_name(l.launcher), "Slurm");
  run_name(&l, "slurm-123456.2");
  fenv nostep = {{"SLURM_PROCID=0", "SLURM_NTASKS=1", "SLURM_JOB_ID=123456", NULL}};
  l = rd(&nostep);
  expect(&l, TBE__LAUNCHER_SLURM, 0, 1, -1, "123456");
  run_name(&l, "slurm-123456");
}

/* ---- the order, and the Slurm job around another launcher ---- */

static void test_precedence(void **state) {
  (void)state;
  /* torchrun inside an sbatch step: torch's rank, Slurm's job when torch
   * names none */
  fenv e = {{"SLURM_PROCID=0", "SLURM_NTASKS=2", "SLURM_JOB_ID=55", "SLURM_STEP_ID=0", "RANK=1",
             "WORLD_SIZE=4", "LOCAL_RANK=1", "TORCHELASTIC_RUN_ID=none", NULL}};
  tbe__launcher l = rd(&e);
  expect(&l, TBE__LAUNCHER_TORCH, 1, 4, 1, "55.0");
  assert_int_equal(l.job_launcher, TBE__LAUNCHER_SLURM);
  run_name(&l, "slurm-55.0");
  /* ... and torch's own run id when it has one */
  fenv t = {{"SLURM_PROCID=0", "SLURM_JOB_ID=55", "RANK=1", "WORLD_SIZE=4",
             "TORCHELASTIC_RUN_ID=j1", NULL}};
  l = rd(&t);
  expect(&l, TBE__LAUNCHER_TORCH, 1, 4, -1, "j1");
  run_name(&l, "torch-j1");
  /* mpirun under Slurm: Open MPI's rank, before PMIx's and Slurm's */
  fenv o = {{"SLURM_PROCID=3", "PMIX_RANK=2", "OMPI_COMM_WORLD_RANK=2", "OMPI_COMM_WORLD_SIZE=4",
             "PMIX_NAMESPACE=ns", NULL}};
  l = rd(&o);
  expect(&l, TBE__LAUNCHER_OMPI, 2, 4, -1, "ns");
  /* PMIx before PMI, PMI before MVAPICH, MVAPICH before Slurm */
  fenv p = {{"PMI_RANK=1", "PMI_SIZE=2", "PMIX_RANK=0", NULL}};
  l = rd(&p);
  assert_int_equal(l.launcher, TBE__LAUNCHER_PMIX);
  fenv q = {{"MV2_COMM_WORLD_RANK=1", "PMI_RANK=0", "PMI_SIZE=2", NULL}};
  l = rd(&q);
  assert_int_equal(l.launcher, TBE__LAUNCHER_PMI);
  fenv m = {{"SLURM_PROCID=0", "MV2_COMM_WORLD_RANK=1", "MV2_COMM_WORLD_SIZE=2", NULL}};
  l = rd(&m);
  assert_int_equal(l.launcher, TBE__LAUNCHER_MVAPICH);
  assert_int_equal(l.rank, 1);
}

/* ---- malformed values ---- */

static void test_malformed(void **state) {
  (void)state;
  /* A RANK that is no number (a variable of the user's own) does not hide
   * Slurm's rank; the reason names it. */
  fenv e = {{"RANK=first", "SLURM_PROCID=4", "SLURM_NTASKS=8", "SLURM_JOB_ID=9", NULL}};
  tbe__launcher l = rd(&e);
  expect(&l, TBE__LAUNCHER_SLURM, 4, 8, -1, "9");
  assert_non_null(strstr(l.why, "RANK='first' is not a decimal number: ignored"));
  static const char *bad[] = {
      "-1", "+1", " 1", "1 ", "0x10", "1.0", "2147483648", "99999999999999999999", "1e3"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char kv[64];
    snprintf(kv, sizeof kv, "RANK=%s", bad[i]);
    fenv b = {{kv, "WORLD_SIZE=4", NULL}};
    l = rd(&b);
    if (l.rank != -1) fail_msg("RANK=%s was taken as %d", bad[i], l.rank);
    assert_non_null(strstr(l.why, "RANK="));
  }
  /* the largest int32 is a rank (with an unknown size) */
  fenv big = {{"PMIX_RANK=2147483646", NULL}};
  l = rd(&big);
  assert_int_equal(l.rank, 2147483646);
  /* a rank not below its world size: that launcher is not trusted */
  fenv over = {{"RANK=4", "WORLD_SIZE=4", "PMI_RANK=1", "PMI_SIZE=2", NULL}};
  l = rd(&over);
  expect(&l, TBE__LAUNCHER_PMI, 1, 2, -1, "");
  assert_non_null(strstr(l.why, "RANK=4 is not below WORLD_SIZE=4"));
  fenv alone = {{"RANK=4", "WORLD_SIZE=4", NULL}};
  l = rd(&alone);
  expect(&l, TBE__LAUNCHER_NONE, -1, 0, -1, "");
  assert_string_not_equal(l.why, "");
  /* a malformed size or local rank is dropped alone */
  fenv size = {{"RANK=1", "WORLD_SIZE=0", "LOCAL_RANK=x", NULL}};
  l = rd(&size);
  expect(&l, TBE__LAUNCHER_TORCH, 1, 0, -1, "");
  assert_non_null(strstr(l.why, "WORLD_SIZE='0' is not a positive decimal number"));
  fenv local = {{"RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=2", NULL}};
  l = rd(&local);
  expect(&l, TBE__LAUNCHER_TORCH, 1, 2, -1, "");
  assert_non_null(strstr(l.why, "LOCAL_RANK=2 is not below WORLD_SIZE=2"));
  /* an empty variable is absent, without a reason */
  fenv blank = {{"RANK=", "SLURM_PROCID=0", NULL}};
  l = rd(&blank);
  assert_int_equal(l.launcher, TBE__LAUNCHER_SLURM);
  assert_string_equal(l.why, "");
  /* a long value is cut in the reason */
  char longv[400];
  memset(longv, '7', sizeof longv);
  memcpy(longv, "RANK=x", 6);
  longv[sizeof longv - 1] = '\0';
  fenv lg = {{longv, NULL}};
  l = rd(&lg);
  assert_true(strlen(l.why) < 120);
  assert_non_null(strstr(l.why, "..."));
}

/* Job ids become names a path can hold, whatever bytes they carry. */
static void test_run_names(void **state) {
  (void)state;
  fenv e = {{"RANK=0", "WORLD_SIZE=1", "TORCHELASTIC_RUN_ID=../a/b..c d\x1b", NULL}};
  tbe__launcher l = rd(&e);
  char buf[TBE_NAME_MAX + 1];
  assert_int_equal(tbe__launcher_run_name(&l, buf, sizeof buf), 0);
  assert_string_equal(buf, "torch-.__a_b._c_d_");
  assert_int_equal(tbe_name_check(buf, NULL), 0);
  assert_int_equal(tbe__launcher_run_name(&l, buf, 8), TBE_EINVAL);
  /* the longest job id kept still makes a name */
  char kv[300] = "TORCHELASTIC_RUN_ID=";
  memset(kv + 20, 'j', 250);
  kv[270] = '\0';
  fenv lg = {{"RANK=0", kv, NULL}};
  l = rd(&lg);
  assert_int_equal(strlen(l.job), TBE__JOB_MAX);
  assert_int_equal(tbe__launcher_run_name(&l, buf, sizeof buf), 0);
  assert_int_equal(tbe_name_check(buf, NULL), 0);
}

/* ---- attempts: a requeued or restarted job keeps its id ---- */

static void attempt_is(const tbe__launcher *l, const char *want) {
  char buf[TBE__ATTEMPT_MAX];
  tbe__launcher_attempt(l, buf, sizeof buf);
  assert_string_equal(buf, want);
}

static void test_attempts(void **state) {
  (void)state;
  /* Slurm's requeue: the same job and step id, a count */
  fenv s0 = {{"SLURM_PROCID=1", "SLURM_NTASKS=2", "SLURM_JOB_ID=77", "SLURM_STEP_ID=0", NULL}};
  fenv s1 = {{"SLURM_PROCID=1", "SLURM_NTASKS=2", "SLURM_JOB_ID=77", "SLURM_STEP_ID=0",
              "SLURM_RESTART_COUNT=1", NULL}};
  fenv s0c = {
      {"SLURM_PROCID=1", "SLURM_JOB_ID=77", "SLURM_STEP_ID=0", "SLURM_RESTART_COUNT=0", NULL}};
  tbe__launcher l = rd(&s0);
  assert_int_equal(l.requeue, 0);
  assert_int_equal(l.restart, 0);
  attempt_is(&l, "");
  run_name(&l, "slurm-77.0");
  l = rd(&s0c);
  run_name(&l, "slurm-77.0");
  l = rd(&s1);
  expect(&l, TBE__LAUNCHER_SLURM, 1, 2, -1, "77.0");
  assert_int_equal(l.requeue, 1);
  attempt_is(&l, ".requeue1");
  run_name(&l, "slurm-77.0.requeue1");
  /* torchrun's restart: the same run id, a count */
  fenv t1 = {
      {"RANK=0", "WORLD_SIZE=2", "TORCHELASTIC_RUN_ID=tr", "TORCHELASTIC_RESTART_COUNT=3", NULL}};
  l = rd(&t1);
  assert_int_equal(l.restart, 3);
  run_name(&l, "torch-tr.restart3");
  /* torchrun inside a requeued sbatch job: both, Slurm's first */
  fenv both = {{"RANK=0", "WORLD_SIZE=2", "TORCHELASTIC_RUN_ID=none",
                "TORCHELASTIC_RESTART_COUNT=1", "SLURM_PROCID=0", "SLURM_JOB_ID=9",
                "SLURM_STEP_ID=1", "SLURM_RESTART_COUNT=2", NULL}};
  l = rd(&both);
  attempt_is(&l, ".requeue2.restart1");
  run_name(&l, "slurm-9.1.requeue2.restart1");
  /* no rank (tbexport around the launcher): no job name, the counts still */
  fenv bare = {{"SLURM_JOB_ID=9", "SLURM_RESTART_COUNT=4", NULL}};
  l = rd(&bare);
  expect(&l, TBE__LAUNCHER_NONE, -1, 0, -1, "");
  attempt_is(&l, ".requeue4");
  /* a malformed count is reported and counts as the first attempt */
  fenv bad = {{"SLURM_PROCID=0", "SLURM_JOB_ID=9", "SLURM_RESTART_COUNT=x1", NULL}};
  l = rd(&bad);
  assert_int_equal(l.requeue, 0);
  assert_non_null(strstr(l.why, "SLURM_RESTART_COUNT='x1' is not a decimal number: ignored"));
  run_name(&l, "slurm-9");
  /* the largest counts and the longest job id still make a valid name */
  char kv[300] = "TORCHELASTIC_RUN_ID=";
  memset(kv + 20, 'j', 250);
  kv[20 + TBE__JOB_MAX - 1] = '.'; /* the last byte kept is a dot: no ".." before the suffix */
  kv[270] = '\0';
  fenv big = {{"RANK=0", kv, "TORCHELASTIC_RESTART_COUNT=2147483647",
               "SLURM_RESTART_COUNT=2147483647", NULL}};
  l = rd(&big);
  attempt_is(&l, ".requeue2147483647.restart2147483647");
  char buf[TBE_NAME_MAX + 1];
  assert_int_equal(tbe__launcher_run_name(&l, buf, sizeof buf), 0);
  assert_int_equal(tbe_name_check(buf, NULL), 0);
  assert_null(strstr(buf, ".."));
  fenv dot = {{"RANK=0", "TORCHELASTIC_RUN_ID=a.", "TORCHELASTIC_RESTART_COUNT=1", NULL}};
  l = rd(&dot);
  run_name(&l, "torch-a_.restart1");
  /* too small a buffer: no suffix cut in half */
  tbe__launcher_attempt(&l, buf, 8);
  assert_string_equal(buf, "");
  /* the session API carries the counts and the attempt's run */
  tbe_session_launcher sl;
  tbe_session_launcher_read(&sl, fget, &both);
  assert_int_equal(sl.requeue, 2);
  assert_int_equal(sl.restart, 1);
  assert_string_equal(sl.attempt, ".requeue2.restart1");
  assert_string_equal(sl.run, "slurm-9.1.requeue2.restart1");
  tbe_session_launcher_read(&sl, fget, &s0);
  assert_string_equal(sl.attempt, "");
  assert_string_equal(sl.run, "slurm-77.0");
}

/* ---- the session API ---- */

static void test_session_api(void **state) {
  (void)state;
  fenv e = {{"SLURM_PROCID=1", "SLURM_NTASKS=2", "SLURM_LOCALID=1", "SLURM_JOB_ID=8",
             "SLURM_STEP_ID=3", NULL}};
  tbe_session_launcher l;
  tbe_session_launcher_read(&l, fget, &e);
  assert_int_equal(l.rank, 1);
  assert_int_equal(l.world_size, 2);
  assert_int_equal(l.local_rank, 1);
  assert_string_equal(l.launcher, "Slurm");
  assert_string_equal(l.job_id, "8.3");
  assert_string_equal(l.run, "slurm-8.3");
  assert_string_equal(l.why, "");
  fenv none = {{NULL}};
  tbe_session_launcher_read(&l, fget, &none);
  assert_int_equal(l.rank, -1);
  assert_string_equal(l.launcher, "");
  assert_string_equal(l.run, "");
  char buf[TBE_NAME_MAX + 1];
  assert_int_equal(tbe_session_host_entry("node", 3, buf, sizeof buf), 0);
  assert_string_equal(buf, "node.rank3");
  assert_int_equal(tbe_session_host_entry("node", -1, buf, sizeof buf), 0);
  assert_string_equal(buf, "node");
  assert_int_equal(tbe_session_host_entry(NULL, 0, buf, sizeof buf), 0);
  assert_non_null(strstr(buf, ".rank0"));
  assert_int_equal(tbe_session_host_entry("a/b", 0, buf, sizeof buf), TBE_ENAME);
  assert_int_equal(tbe_session_host_entry("node", 12, buf, 8), TBE_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_none),      cmocka_unit_test(test_torch),
      cmocka_unit_test(test_ompi),      cmocka_unit_test(test_pmix),
      cmocka_unit_test(test_pmi),       cmocka_unit_test(test_mvapich),
      cmocka_unit_test(test_slurm),     cmocka_unit_test(test_precedence),
      cmocka_unit_test(test_malformed), cmocka_unit_test(test_run_names),
      cmocka_unit_test(test_attempts),  cmocka_unit_test(test_session_api),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
