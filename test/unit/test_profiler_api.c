/* test_profiler_api.c: tbe_profiler_start / tbe_profiler_stop through the
 * public API, with the fake libcupti of test/stress/collect_fake_libcupti.c
 * (TBEXPORT_CUPTI_LIB) in place of CUPTI: no GPU, no CUDA work, so each
 * session writes the run of a process that never initialized CUDA.
 *
 * The run is named at start, as `tbexport -- CMD` names it: a run that
 * already has outputs for the host moves on to RUN_2 with a warning,
 * never a refusal at stop after the work is done; `force` keeps the name
 * and replaces. */
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

#include "tbexport.h"
#include "tbexport/profiler.h"
#include "testutil.h"

typedef struct said {
  int n;
  char text[4096];
} said;

static void on_message(void *ctx, tbe_message_level level, const char *line) {
  said *s = ctx;
  (void)level;
  s->n++;
  size_t l = strlen(s->text);
  snprintf(s->text + l, sizeof s->text - l, "%s\n", line);
}

static int exists(const char *dir, const char *rel) {
  char *p = tu_join(dir, rel);
  struct stat st;
  int r = stat(p, &st) == 0;
  free(p);
  return r;
}

static void profile(const char *dir, const char *run, int force, said *s) {
  tbe_profiler_options o;
  tbe_profiler_options_init(&o);
  o.logdir = dir;
  o.run = run;
  o.host = "node";
  o.force = force;
  o.on_message = on_message;
  o.message_ctx = s;
  assert_int_equal(tbe_profiler_start(&o), 0);
  tbe_profiler_result r;
  assert_int_equal(tbe_profiler_stop(&r), 0);
}

static void test_run_taken_moves_on(void **state) {
  (void)state;
  /* no launcher of ours or of the job around this test */
  static const char *const vars[] = {"TBEXPORT_SPOOL_DIR", "RANK", "WORLD_SIZE", "LOCAL_RANK",
                                     "TORCHELASTIC_RUN_ID", "SLURM_PROCID", "SLURM_JOB_ID",
                                     "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK",
                                     "MV2_COMM_WORLD_RANK"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) unsetenv(vars[i]);
  assert_int_equal(setenv("TBEXPORT_CUPTI_LIB", TBE_FAKE_LIBCUPTI, 1), 0);
  char *dir = tu_mkdtemp();
  said s;
  memset(&s, 0, sizeof s);
  profile(dir, "again", 0, &s);
  assert_true(exists(dir, "plugins/profile/again/node.xplane.pb"));
  assert_null(strstr(s.text, "already has outputs"));
  char *first = tu_join(dir, "plugins/profile/again/node.xplane.pb");
  struct stat st0, st1;
  assert_int_equal(stat(first, &st0), 0);

  /* the same run again: again_2, said once; the first profile untouched */
  memset(&s, 0, sizeof s);
  profile(dir, "again", 0, &s);
  assert_true(exists(dir, "plugins/profile/again_2/node.xplane.pb"));
  assert_non_null(strstr(s.text, "run 'again' already has outputs for host node"));
  assert_non_null(strstr(s.text, "this profile is run 'again_2'"));
  assert_int_equal(stat(first, &st1), 0);
  assert_int_equal(st1.st_ino, st0.st_ino);
  assert_int_equal(st1.st_mtim.tv_nsec, st0.st_mtim.tv_nsec);

  /* force: the name kept, its outputs replaced, no third run */
  memset(&s, 0, sizeof s);
  profile(dir, "again", 1, &s);
  assert_null(strstr(s.text, "already has outputs"));
  assert_false(exists(dir, "plugins/profile/again_3"));
  assert_int_equal(stat(first, &st1), 0);
  assert_int_not_equal(st1.st_ino, st0.st_ino);
  free(first);
  tu_rmrf(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_run_taken_moves_on),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
