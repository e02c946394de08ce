/* bench_load.c: how responsive `tbexport inspect`, `summary` and `diff`
 * stay on a big log_dir (issue 6, "Load and concurrency").  Not a test:
 * it prints a table.
 *
 * Builds, under $TMPDIR, one log_dir holding:
 *   - 1,000 small runs (run_0000 ... run_0999), each an event file of 200
 *     scalars over 4 tags and one text, written with tbe_writer;
 *   - run "big": a 5,000,000-event trace (2.5M kernels on 4 streams, each
 *     with its cudaLaunchKernel call, 250 steps) written by tbe_export_run
 *     (XSpace, Chrome JSON, summary events);
 *   - run "small": the same shape at 1/10 the size (500,000 events), the
 *     single-run baseline for per-event scaling.
 * Then times the tbexport program next to this binary (median of a few
 * runs, output discarded) against baselines measured in the same run:
 *   inspect log_dir (1,002 runs)  vs reading the same event files' bytes,
 *                                 and vs inspect of a single run;
 *   summary big                   vs gunzip of its trace.json.gz alone,
 *                                 and vs summary small x 10;
 *   diff small big                vs summary big + summary small.
 * Usage: bench_load [SCALE]: SCALE (default 1) multiplies the trace
 * sizes (0.1 for a quick look).  The log_dir is removed at the end unless
 * $TBE_BENCH_KEEP is set. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "tbexport.h"
#include "tbexport/error.h"
#include "tbexport/export.h"
#include "tbexport/trace.h"
#include "tbexport/writer.h"
#include "../stress/stress_util.h" /* st_rmtree, st_now */

#define NRUNS 1000

static void die(const char *what, int rc) {
  fprintf(stderr, "bench_load: %s: %s\n", what, rc ? tbe_strerror(rc) : strerror(errno));
  exit(1);
}

/* ---- data ---- */

static void write_small_runs(const char *logdir) {
  char dir[PATH_MAX];
  for (int r = 0; r < NRUNS; r++) {
    if (snprintf(dir, sizeof dir, "%s/run_%04d", logdir, r) >= (int)sizeof dir) die("path", TBE_EINVAL);
    tbe_writer *w;
    tbe_writer_options o;
    tbe_writer_options_init(&o);
    o.host = "bench";
    int rc = tbe_writer_open(&w, dir, &o);
    if (rc) die(dir, rc);
    static const char *tags[4] = {"loss", "accuracy", "lr", "grad_norm"};
    for (int s = 0; s < 50; s++)
      for (int t = 0; t < 4; t++)
        if ((rc = tbe_writer_add_scalar(w, tags[t], 1.0 / (1 + s + r), s, 1.7e9 + s)))
          die("add_scalar", rc);
    if ((rc = tbe_writer_add_text(w, "config", "lr=0.001 batch=64", 0, 1.7e9))) die("add_text", rc);
    if ((rc = tbe_writer_close(w))) die("close", rc);
  }
}

/* A trace of `nevents` events: kernels and their launches. */
static void write_trace(const char *logdir, const char *run, size_t nevents) {
  tbe_trace *t;
  int rc = tbe_trace_create(&t, NULL);
  if (rc) die("trace_create", rc);
  const int64_t t0 = 1700000000000000000ll, pid = 4242, tid = 4243;
  uint32_t pi, host_track, streams[4], dev;
  if ((rc = tbe_trace_process(t, pid, &pi))) die("process", rc);
  t->host = tbe_trace_str_id(t, "bench");
  t->processes[pi].host = t->host;
  t->processes[pi].name = tbe_trace_str_id(t, "python train.py");
  t->source = TBE_SRC_CUPTI;
  t->rank = -1;
  if ((rc = tbe_trace_device(t, 0, &dev))) die("device", rc);
  t->devices[dev].name = tbe_trace_str_id(t, "NVIDIA H200");
  t->devices[dev].sm_count = 132;
  if ((rc = tbe_trace_track(t, TBE_TRACK_THREAD, pid, tid, -1, &host_track))) die("track", rc);
  for (int s = 0; s < 4; s++)
    if ((rc = tbe_trace_track(t, TBE_TRACK_STREAM, pid, 7 + s, 0, &streams[s]))) die("track", rc);
  tbe_str names[50];
  for (int i = 0; i < 50; i++) {
    char nm[96];
    snprintf(nm, sizeof nm, "void gemm_kernel_%d<float, 128, 64>(float const*, float*, int)", i);
    names[i] = tbe_trace_str_id(t, nm);
  }
  tbe_str launch = tbe_trace_str_id(t, "cudaLaunchKernel");
  size_t nk = nevents / 2, per_step = nk / 250 ? nk / 250 : 1;
  int64_t step_start = t0;
  for (size_t i = 0; i < nk; i++) {
    int64_t ts = t0 + (int64_t)i * 2000;
    tbe_event api;
    memset(&api, 0, sizeof api);
    api.start_ns = ts;
    api.dur_ns = 900;
    api.correlation = i + 1;
    api.name = launch;
    api.track = host_track;
    api.kind = TBE_EV_RUNTIME;
    api.detail = TBE_NONE;
    api.link = TBE_NONE;
    if ((rc = tbe_trace_add_event(t, &api, NULL, NULL, 0, NULL))) die("add_event", rc);
    tbe_event k = api;
    k.start_ns = ts + 5000;
    k.dur_ns = 1500 + (int64_t)(i % 7) * 100;
    k.name = names[(i * 7) % 50];
    k.track = streams[i % 4];
    k.kind = TBE_EV_KERNEL;
    tbe_kernel kd;
    memset(&kd, 0, sizeof kd);
    kd.grid[0] = 128;
    kd.grid[1] = kd.grid[2] = 1;
    kd.block[0] = 256;
    kd.block[1] = kd.block[2] = 1;
    kd.registers = 64;
    kd.queued_ns = -1;
    kd.occupancy_pct = kd.blocks_per_sm = kd.warps_per_sm = -1;
    if ((rc = tbe_trace_add_event(t, &k, &kd, NULL, 0, NULL))) die("add_event", rc);
    if ((i + 1) % per_step == 0) {
      char sn[48];
      int64_t num = (int64_t)(i / per_step);
      snprintf(sn, sizeof sn, "ProfilerStep#%lld", (long long)num);
      if ((rc = tbe_trace_add_step(t, num, step_start, ts + 8000, tbe_trace_str_id(t, sn))))
        die("add_step", rc);
      step_start = ts + 8000;
    }
  }
  if ((rc = tbe_trace_finish(t))) die("finish", rc);
  tbe_export_options eo;
  tbe_export_options_init(&eo);
  eo.logdir = logdir;
  eo.run = run;
  eo.host = "bench";
  if ((rc = tbe_export_run(t, &eo))) die("export_run", rc);
  tbe_trace_free(t);
}

/* ---- baselines ---- */

static unsigned long long read_tree(const char *path) {
  unsigned long long bytes = 0;
  struct stat st;
  if (lstat(path, &st) != 0) return 0;
  if (S_ISDIR(st.st_mode)) {
    DIR *d = opendir(path);
    if (!d) return 0;
    struct dirent *e;
    while ((e = readdir(d))) {
      if (e->d_name[0] == '.' || !strcmp(e->d_name, "plugins")) continue;
      char c[PATH_MAX];
      snprintf(c, sizeof c, "%s/%s", path, e->d_name);
      bytes += read_tree(c);
    }
    closedir(d);
  } else if (strstr(path, "tfevents")) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return 0;
    static char buf[1 << 16];
    ssize_t r;
    while ((r = read(fd, buf, sizeof buf)) > 0) bytes += (unsigned long long)r;
    close(fd);
  }
  return bytes;
}

static unsigned long long gunzip_file(const char *path) {
  gzFile f = gzopen(path, "rb");
  if (!f) return 0;
  gzbuffer(f, 1 << 17);
  static char buf[1 << 17];
  unsigned long long n = 0;
  int r;
  while ((r = gzread(f, buf, sizeof buf)) > 0) n += (unsigned long long)r;
  gzclose(f);
  return n;
}

static int find_trace(const char *logdir, const char *run, char *out, size_t size) {
  char d[PATH_MAX];
  snprintf(d, sizeof d, "%s/plugins/profile/%s", logdir, run);
  DIR *dir = opendir(d);
  if (!dir) return -1;
  struct dirent *e;
  int found = -1;
  while ((e = readdir(dir))) {
    size_t l = strlen(e->d_name);
    if (l > 14 && !strcmp(e->d_name + l - 14, ".trace.json.gz")) {
      if (snprintf(out, size, "%s/%s", d, e->d_name) >= (int)size) break;
      found = 0;
    }
  }
  closedir(dir);
  return found;
}

/* ---- timing the CLI ---- */

static char tbexport[PATH_MAX];

/* Runs tbexport ARGS with output to /dev/null; returns seconds (exit on
 * failure). */
static double run_cli(char *const argv[]) {
  double t = st_now();
  pid_t pid = fork();
  if (pid < 0) die("fork", 0);
  if (pid == 0) {
    int fd = open("/dev/null", O_WRONLY);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    execv(tbexport, argv);
    _exit(127);
  }
  int st;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    fprintf(stderr, "bench_load: tbexport");
    for (int i = 1; argv[i]; i++) fprintf(stderr, " %s", argv[i]);
    fprintf(stderr, ": status 0x%x\n", st);
    exit(1);
  }
  return st_now() - t;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median_cli(int reps, char *const argv[]) {
  double v[9];
  if (reps > 9) reps = 9;
  for (int i = 0; i < reps; i++) v[i] = run_cli(argv);
  qsort(v, (size_t)reps, sizeof *v, cmp_d);
  return v[reps / 2];
}

int main(int argc, char **argv) {
  double scale = 1.0;
  char *end = NULL;
  if (argc > 1) scale = strtod(argv[1], &end);
  if (argc > 2 || (end && (*end || !(scale >= 0.001 && scale <= 100)))) {
    fprintf(stderr, "usage: bench_load [SCALE: 0.001..100]\n");
    return 2;
  }
  ssize_t n = readlink("/proc/self/exe", tbexport, sizeof tbexport - 16);
  if (n <= 0) die("/proc/self/exe", 0);
  tbexport[n] = '\0';
  char *slash = strrchr(tbexport, '/');
  strcpy(slash + 1, "tbexport");
  if (access(tbexport, X_OK) != 0) die(tbexport, 0);
  const char *tmp = getenv("TMPDIR");
  char root[PATH_MAX], logdir[PATH_MAX];
  snprintf(root, sizeof root, "%s/tbe-bench-load.XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(root)) die(root, 0);
  if (snprintf(logdir, sizeof logdir, "%s/log_dir", root) >= (int)sizeof logdir) die("path", TBE_EINVAL);
  size_t big_n = (size_t)(5e6 * scale), small_n = big_n / 10;

  double t = st_now();
  write_small_runs(logdir);
  double t_runs = st_now() - t;
  t = st_now();
  write_trace(logdir, "big", big_n);
  double t_big = st_now() - t;
  t = st_now();
  write_trace(logdir, "small", small_n);
  double t_small = st_now() - t;
  printf("data: %d runs written in %.2f s; 'big' (%zu events) exported in %.2f s; 'small' (%zu "
         "events) in %.2f s\n",
         NRUNS, t_runs, big_n, t_big, small_n, t_small);

  char one_run[PATH_MAX], big_trace[PATH_MAX], small_trace[PATH_MAX];
  if (snprintf(one_run, sizeof one_run, "%s/run_0000", logdir) >= (int)sizeof one_run)
    die("path", TBE_EINVAL);
  if (find_trace(logdir, "big", big_trace, sizeof big_trace) ||
      find_trace(logdir, "small", small_trace, sizeof small_trace)) {
    fprintf(stderr, "bench_load: no trace.json.gz written\n");
    return 1;
  }

  /* baselines */
  t = st_now();
  unsigned long long ev_bytes = read_tree(logdir);
  double b_read = st_now() - t;
  t = st_now();
  unsigned long long json_bytes = gunzip_file(big_trace);
  double b_gunzip = st_now() - t;

  char *a_inspect_all[] = {"tbexport", "inspect", logdir, NULL};
  char *a_inspect_one[] = {"tbexport", "inspect", one_run, NULL};
  char *a_sum_big[] = {"tbexport", "summary", "--quiet", "--logdir", logdir, "big", NULL};
  char *a_sum_small[] = {"tbexport", "summary", "--quiet", "--logdir", logdir, "small", NULL};
  char *a_diff[] = {"tbexport", "diff", "--quiet", "--no-events", "--logdir", logdir,
                    "small", "big", NULL};
  double c_inspect_all = median_cli(3, a_inspect_all);
  double c_inspect_one = median_cli(5, a_inspect_one);
  double c_sum_big = median_cli(1, a_sum_big);
  double c_sum_small = median_cli(3, a_sum_small);
  double c_diff = median_cli(1, a_diff);

  char l_big[64], l_small[64];
  snprintf(l_big, sizeof l_big, "summary big (%zu events)", big_n);
  snprintf(l_small, sizeof l_small, "summary small (%zu) x 10", small_n);
  printf("\n%-34s %10s   %-36s %10s %8s\n", "operation", "time (s)", "baseline", "time (s)",
         "ratio");
  printf("%-34s %10.3f   %-36s %10.3f %8.2f\n", "inspect log_dir (1002 runs)", c_inspect_all,
         "read the event files' bytes", b_read, c_inspect_all / b_read);
  printf("%-34s %10.3f   %-36s %10.3f %8.2f\n", "inspect log_dir (1002 runs)", c_inspect_all,
         "inspect one run (run_0000)", c_inspect_one, c_inspect_all / c_inspect_one);
  printf("%-34s %10.3f   %-36s %10.3f %8.2f\n", l_big, c_sum_big,
         "gunzip its trace.json.gz", b_gunzip, c_sum_big / b_gunzip);
  printf("%-34s %10.3f   %-36s %10.3f %8.2f\n", l_big, c_sum_big,
         l_small, c_sum_small * 10, c_sum_big / (c_sum_small * 10));
  printf("%-34s %10.3f   %-36s %10.3f %8.2f\n", "diff small big", c_diff,
         "summary small + summary big", c_sum_small + c_sum_big,
         c_diff / (c_sum_small + c_sum_big));
  printf("\n(event files: %.1f MB; big trace JSON: %.1f MB uncompressed; inspect of one run: "
         "%.3f s)\n",
         (double)ev_bytes / 1e6, (double)json_bytes / 1e6, c_inspect_one);
  if (getenv("TBE_BENCH_KEEP"))
    printf("kept %s (TBE_BENCH_KEEP)\n", logdir);
  else
    st_rmtree(root);
  return 0;
}
