/* bench_summary.c: what `tbexport summary` and `diff` of a written run cost
 * (issue 15): read from the analysis tbexport persisted beside the traces,
 * against today's path (`--from-traces`: import every trace, analyse it)
 * and against the floor any trace-reading path pays (`gzip -dc` of the
 * trace to /dev/null).  Not a test: it prints a table.
 *
 * In a temporary folder under $TMPDIR, gen_run (next to this binary)
 * writes run A of one rank and EVENTS events, run B like it with another
 * seed (for diff), and run R of RANKS ranks of 2,000 events each.  Then it
 * times, as child processes (posix_spawn, output to /dev/null), the
 * tbexport next to this binary (or the one given):
 *   summary A               vs  summary --from-traces A,  and gzip -dc of A's trace
 *   diff A B                vs  diff --from-traces A B
 *   summary R               vs  summary --from-traces R
 * each the median of a few runs (one for the slow from-traces cases of a
 * large A).  Goal: the persisted path >= 20x today's and under 1 s.
 *
 * Until tbexport knows --from-traces (the persisted analysis, branch
 * `persist`), only today's path is measured, against the gzip floor, and
 * the table says so on its first line.
 *
 * It checks that each path measured something: the JSON summary of A from
 * each path holds A's EVENTS / 2 kernels, and R's holds RANKS hosts; else
 * it exits 1.
 * Usage: bench_summary [EVENTS [RANKS [TBEXPORT]]] (default 5000000 256).
 * The folder is removed at the end unless $TBE_BENCH_KEEP is set. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../stress/stress_util.h" /* st_rmtree, st_now */

extern char **environ;

static char tbexport[PATH_MAX], gen[PATH_MAX];

static void die(const char *what) {
  fprintf(stderr, "bench_summary: %s%s%s\n", what, errno ? ": " : "", errno ? strerror(errno) : "");
  exit(1);
}

/* Runs argv[0] (a path, or a name looked up in PATH when `path_lookup`)
 * with stdout to `out` (NULL: /dev/null) and stderr to /dev/null, or to
 * ours when `loud`.  Returns seconds; exits on a failure of the child. */
static double run(char *const argv[], const char *out, int path_lookup, int loud) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out ? out : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  if (!loud) posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  double t = st_now();
  pid_t pid;
  int rc = path_lookup ? posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ)
                       : posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc) {
    errno = rc;
    die(argv[0]);
  }
  int st;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) die("waitpid");
  t = st_now() - t;
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    fprintf(stderr, "bench_summary:");
    for (int i = 0; argv[i]; i++) fprintf(stderr, " %s", argv[i]);
    fprintf(stderr, ": status 0x%x\n", st);
    exit(1);
  }
  return t;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(int reps, char *const argv[], int path_lookup) {
  double v[9];
  if (reps > 9) reps = 9;
  for (int i = 0; i < reps; i++) v[i] = run(argv, NULL, path_lookup, 0);
  qsort(v, (size_t)reps, sizeof *v, cmp_d);
  return v[reps / 2];
}

/* 1 when `tbexport summary --help` names --from-traces. */
static int knows_from_traces(const char dir[1024]) {
  char out[PATH_MAX];
  snprintf(out, sizeof out, "%s/help.txt", dir);
  char *argv[] = {tbexport, "summary", "--help", NULL};
  run(argv, out, 0, 0);
  FILE *f = fopen(out, "r");
  if (!f) die(out);
  char line[512];
  int yes = 0;
  while (fgets(line, sizeof line, f)) yes |= strstr(line, "--from-traces") != NULL;
  fclose(f);
  return yes;
}

/* 1 when the file holds `needle`. */
static int file_has(const char *path, const char *needle) {
  FILE *f = fopen(path, "r");
  if (!f) die(path);
  size_t n = strlen(needle), have = 0;
  int c, found = 0;
  /* a streaming search is enough: the needle has no repeated prefix that matters here */
  while (!found && (c = fgetc(f)) != EOF) {
    if ((char)c == needle[have]) {
      if (++have == n) found = 1;
    } else {
      have = (char)c == needle[0];
    }
  }
  fclose(f);
  return found;
}

static void find_trace(const char *logdir, const char *run_name, char *out, size_t size) {
  if ((size_t)snprintf(out, size, "%s/plugins/profile/%s/node.trace.json.gz", logdir, run_name) >=
      size)
    die("path too long");
  struct stat st;
  if (stat(out, &st) != 0) die(out);
}

/* argv of `gzip -dc` over every trace of run `run_name` (freed at exit). */
static char **gzip_run(const char *logdir, const char *run_name, size_t nfiles) {
  char **v = calloc(nfiles + 3, sizeof *v);
  if (!v) die("memory");
  v[0] = "gzip";
  v[1] = "-dc";
  for (size_t i = 0; i < nfiles; i++) {
    char p[PATH_MAX];
    if ((size_t)snprintf(p, sizeof p, "%s/plugins/profile/%s/node%zu.rank%zu.trace.json.gz",
                         logdir, run_name, i / 8, i) >= sizeof p || !(v[2 + i] = strdup(p)))
      die("path");
    struct stat st;
    if (stat(p, &st) != 0) die(p);
  }
  return v;
}

static void row(const char *what, double t, const char *base, double tb) {
  printf("%-36s %9.3f   %-36s %9.3f %9.2f\n", what, t, base, tb, tb / t);
}

int main(int argc, char **argv) {
  unsigned long long events = 5000000, ranks = 256;
  char *end;
  if (argc > 1 && (events = strtoull(argv[1], &end, 10), *end || events < 1000 || events > 100000000ull))
    return fprintf(stderr, "usage: bench_summary [EVENTS (1000..1e8) [RANKS (2..4096) [TBEXPORT]]]\n"), 2;
  if (argc > 2 && (ranks = strtoull(argv[2], &end, 10), *end || ranks < 2 || ranks > 4096))
    return fprintf(stderr, "usage: bench_summary [EVENTS (1000..1e8) [RANKS (2..4096) [TBEXPORT]]]\n"), 2;
  if (argc > 4) return fprintf(stderr, "usage: bench_summary [EVENTS [RANKS [TBEXPORT]]]\n"), 2;
  ssize_t n = readlink("/proc/self/exe", gen, sizeof gen - 16);
  if (n <= 0) die("/proc/self/exe");
  gen[n] = '\0';
  strcpy(tbexport, gen);
  strcpy(strrchr(gen, '/') + 1, "gen_run");
  strcpy(strrchr(tbexport, '/') + 1, "tbexport");
  if (argc > 3) snprintf(tbexport, sizeof tbexport, "%s", argv[3]);
  if (access(tbexport, X_OK) != 0) die(tbexport);
  if (access(gen, X_OK) != 0) die(gen);

  const char *tmp = getenv("TMPDIR");
  char root[1024], logdir[PATH_MAX];
  snprintf(root, sizeof root, "%s/tbe-bench-summary.XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(root)) die(root);
  snprintf(logdir, sizeof logdir, "%s/log_dir", root);
  int persisted = knows_from_traces(root);

  char ev[32], rk[32], check[PATH_MAX], want[64];
  snprintf(ev, sizeof ev, "%llu", events);
  snprintf(rk, sizeof rk, "%llu", ranks);
  char *g_a[] = {gen, "--logdir", logdir, "--run", "A", "--events", ev, NULL};
  char *g_b[] = {gen, "--logdir", logdir, "--run", "B", "--events", ev, "--seed", "2", NULL};
  char *g_r[] = {gen, "--logdir", logdir, "--run", "R", "--ranks", rk, "--events-per-rank", "2000",
                 NULL};
  double w_a = run(g_a, NULL, 0, 1), w_b = run(g_b, NULL, 0, 1), w_r = run(g_r, NULL, 0, 1);
  printf("data: A and B %llu events each, written in %.2f s and %.2f s; R %llu ranks x 2,000 "
         "events in %.2f s\n",
         events, w_a, w_b, ranks, w_r);
  char trace_a[PATH_MAX];
  find_trace(logdir, "A", trace_a, sizeof trace_a);

  /* Each path measured something: the summary of A holds its kernels, R's its ranks. */
  snprintf(check, sizeof check, "%s/check.json", root);
  snprintf(want, sizeof want, "\"kernel_count\":%llu", events / 2);
  for (int p = 0; p <= persisted; p++) {
    char *a[] = {tbexport, "summary", "--quiet", "--format", "json", "--logdir", logdir,
                 p ? "--from-traces" : "A", p ? "A" : NULL, NULL};
    run(a, check, 0, 1);
    if (!file_has(check, want)) {
      fprintf(stderr, "bench_summary: summary%s A lacks %s\n", p ? " --from-traces" : "", want);
      return 1;
    }
    char *r[] = {tbexport, "summary", "--quiet", "--format", "json", "--logdir", logdir,
                 p ? "--from-traces" : "R", p ? "R" : NULL, NULL};
    run(r, check, 0, 1);
    snprintf(want, sizeof want, "\"hosts_count\":%llu", ranks);
    if (!file_has(check, want)) {
      fprintf(stderr, "bench_summary: summary%s R lacks %s\n", p ? " --from-traces" : "", want);
      return 1;
    }
    snprintf(want, sizeof want, "\"kernel_count\":%llu", events / 2);
  }

  int slow_reps = events > 1000000 ? 1 : 3;
  char *gz[] = {"gzip", "-dc", trace_a, NULL};
  char *s_old[] = {tbexport, "summary", "--quiet", "--logdir", logdir, "--from-traces", "A", NULL};
  char *s_new[] = {tbexport, "summary", "--quiet", "--logdir", logdir, "A", NULL};
  char *d_old[] = {tbexport, "diff", "--quiet", "--no-events", "--logdir", logdir,
                   "--from-traces", "A", "B", NULL};
  char *d_new[] = {tbexport, "diff", "--quiet", "--no-events", "--logdir", logdir, "A", "B", NULL};
  char *r_old[] = {tbexport, "summary", "--quiet", "--logdir", logdir, "--from-traces", "R", NULL};
  char *r_new[] = {tbexport, "summary", "--quiet", "--logdir", logdir, "R", NULL};
  if (!persisted) {
    /* today's path is the plain command: drop "--from-traces" */
    s_old[5] = "A", s_old[6] = NULL;
    d_old[6] = "A", d_old[7] = "B", d_old[8] = NULL;
    r_old[5] = "R", r_old[6] = NULL;
  }
  double t_gz = median(3, gz, 1);
  double t_s_old = median(slow_reps, s_old, 0), t_d_old = median(slow_reps, d_old, 0);
  double t_r_old = median(3, r_old, 0);
  char **gz_r = gzip_run(logdir, "R", (size_t)ranks);
  double t_gz_r = median(3, gz_r, 1);
  char l_a[64], l_r[64];
  snprintf(l_a, sizeof l_a, "summary A (%llu events)", events);
  snprintf(l_r, sizeof l_r, "summary R (%llu ranks)", ranks);
  if (!persisted) {
    printf("\nNOT MEASURED: this tbexport has no --from-traces (no persisted analysis yet);\n"
           "only today's path, against the gzip floor:\n");
    printf("\n%-36s %9s   %-36s %9s %9s\n", "operation (today's path)", "time (s)", "baseline",
           "time (s)", "base/op");
    row(l_a, t_s_old, "gzip -dc of its trace", t_gz);
    row("diff A B", t_d_old, "gzip -dc of A's trace", t_gz);
    row(l_r, t_r_old, "gzip -dc of its traces", t_gz_r);
  } else {
    double t_s_new = median(5, s_new, 0), t_d_new = median(5, d_new, 0);
    double t_r_new = median(5, r_new, 0);
    printf("\n%-36s %9s   %-36s %9s %9s\n", "operation (persisted analysis)", "time (s)",
           "baseline", "time (s)", "base/op");
    row(l_a, t_s_new, "summary --from-traces A", t_s_old);
    row(l_a, t_s_new, "gzip -dc of its trace", t_gz);
    row("diff A B", t_d_new, "diff --from-traces A B", t_d_old);
    row(l_r, t_r_new, "summary --from-traces R", t_r_old);
    row(l_r, t_r_new, "gzip -dc of its traces", t_gz_r);
    printf("\ngoal: >= 20x today's path and under 1 s: summary %s, diff %s, %llu ranks %s\n",
           t_s_old / t_s_new >= 20 && t_s_new < 1 ? "met" : "not met",
           t_d_old / t_d_new >= 20 && t_d_new < 1 ? "met" : "not met", ranks,
           t_r_new < 1 ? "under 1 s" : "over 1 s");
  }
  if (getenv("TBE_BENCH_KEEP"))
    printf("kept %s (TBE_BENCH_KEEP)\n", root);
  else
    st_rmtree(root);
  return 0;
}
