/* cmd_profile.c: `tbexport [OPTIONS] -- CMD ARGS...` (also `tbexport
 * profile [OPTIONS] -- CMD ARGS...`): runs an unmodified program with the
 * CUPTI collector injected and writes its GPU activity as a TensorBoard run.
 *
 * Steps: parse options; find the command (status 127 when it does not
 * exist) and libtbexport_inject.so; create a hidden spool directory under
 * the log dir; run the command with its arguments and environment plus
 * CUDA_INJECTION64_PATH, NVTX_INJECTION64_PATH and the session variables;
 * forward signals (see below); wait; convert every process's spool into the
 * run; print a summary on stderr; exit with the command's status (128+N
 * when a signal N ended it).  Naming the run, the spool folder, the
 * environment and the conversion are the session API's
 * (tbexport/session.h); running the program is this file's.
 *
 * The program always runs once the command line is valid: a problem of
 * ours is one line, and then the program runs without the collector (no
 * injection library, a spool folder we may not make, a build without
 * CUPTI).  A run whose host entry is taken is never written over without
 * --force, nor is the program refused for it: the profile becomes the next
 * free name, RUN_2, RUN_3, ... (a warning when the user gave the name, a
 * note when it is the launcher's job id seen again: a step run again by
 * hand, an id reused).  A restarted attempt of the job (a Slurm requeue, a
 * torchrun restart, which keep the job id) names RUN.requeue<K> /
 * RUN.restart<J>, a name the user gave included, so the attempts of one
 * job sit side by side and every rank of an attempt joins the same run. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/run_options.h"
#include "tbexport.h"

extern char **environ;

static const struct option profile_opts[] = {
    {"logdir", required_argument, 0, 'l'},
    {"run", required_argument, 0, 'r'},
    {"host", required_argument, 0, 'H'},
    {"trace", required_argument, 0, 't'},
    {"delay", required_argument, 0, 'd'},
    {"duration", required_argument, 0, 'D'},
    {"capture-range", required_argument, 0, 'c'},
    {"steps", required_argument, 0, 's'},
    {"buffer-mb", required_argument, 0, 'b'},
    {"flush-period", required_argument, 0, 'F'},
    {"gpu-metrics", optional_argument, 0, 'G'},
    {"kernel-metrics", optional_argument, 0, 'K'},
    {"kernel-metrics-launches", required_argument, 0, 'N'},
    {"keep-noisy-api", no_argument, 0, 'k'},
    {"no-ops", no_argument, 0, 'O'},
    {"record-shapes", no_argument, 0, 'S'},
    {"force", no_argument, 0, 'f'},
    {"empty-run", no_argument, 0, 'E'},
    {"quiet", no_argument, 0, 'q'},
    {"help", no_argument, 0, 'h'},
    TBE_CLI_RUN_OPTIONS,
    {0, 0, 0, 0}};

int tbe_cmd_profile_wants(int argc, char **argv) {
  if (argc < 2) return 0;
  const char *a = argv[1];
  if (strcmp(a, "--") == 0) return 1;
  if (strncmp(a, "--", 2) != 0) return 0;
  for (const struct option *o = profile_opts; o->name; o++) {
    if (strcmp(o->name, "help") == 0) continue;
    size_t n = strlen(o->name);
    if (strncmp(a + 2, o->name, n) == 0 && (a[2 + n] == '\0' || a[2 + n] == '=')) return 1;
  }
  return 0;
}

static void profile_usage(FILE *f) {
  fprintf(f,
          "usage: tbexport [OPTIONS] -- CMD [ARGS...]\n"
          "       tbexport profile [OPTIONS] -- CMD [ARGS...]\n"
          "\n"
          "Runs CMD unmodified with the CUPTI collector injected and writes its GPU activity\n"
          "(kernels, copies, memsets, CUDA API calls, synchronization, NVTX ranges) as a\n"
          "TensorBoard run: XSpace, Chrome trace JSON and summary events.\n"
          "\n"
          "options:\n"
          "  --logdir DIR            log directory (default: log_dir)\n"
          "  --run NAME              run name (default: the launcher's job id, torch-ID,\n"
          "                          slurm-JOB.STEP, ompi-ID, pmix-ID, which every rank\n"
          "                          joins (ID_2, ... when an earlier job of that id has\n"
          "                          this host's entry); else local time\n"
          "                          YYYY_MM_DD_HH_MM_SS); a restarted attempt adds\n"
          "                          .requeueK (Slurm) or .restartJ (torchrun), to NAME too\n"
          "  --host NAME             host name in the run (default: this machine); a process\n"
          "                          with a launcher's rank N gets NAME.rankN, several\n"
          "                          processes without one NAME_pidN\n"
          "  --trace LIST            cuda,nvtx,memory,driver (default: cuda,nvtx,memory;\n"
          "                          --trace cuda,nvtx records no memory)\n"
          "  --delay SEC             start collecting SEC after the process initializes CUDA\n"
          "  --duration SEC          stop collecting after SEC\n"
          "  --capture-range R       nvtx:NAME[@DOMAIN] keeps only activity inside NVTX ranges\n"
          "                          named NAME; cudaProfilerApi keeps only activity between\n"
          "                          cudaProfilerStart and cudaProfilerStop\n"
          "  --steps nvtx:NAME[@DOMAIN]\n"
          "                          the run's steps are the NVTX ranges (or record_function\n"
          "                          annotations) named NAME: the outermost ones of the\n"
          "                          thread with the most, numbered from 0 or by their\n"
          "                          integer payload; wins over tbe_profiler_step marks\n"
          "  --buffer-mb N           cap on the memory of host activity buffers per process\n"
          "                          (default: 64); beyond it records are dropped and counted\n"
          "  --gpu-metrics[=HZ]      sample the GPU's counters (SM active, occupancy, tensor\n"
          "                          pipe, DRAM, PCIe, NVLink, clocks) HZ times a second\n"
          "                          (default 10000)\n"
          "  --kernel-metrics[=SET]  per-kernel figures from CUPTI's range profiler (SET:\n"
          "                          default or brief); replays and so serializes the\n"
          "                          kernels it measures\n"
          "  --kernel-metrics-launches N  measure the first N launches of each kernel\n"
          "                          name (default 3); with --capture-range, the first N\n"
          "                          inside it\n"
          "  --flush-period MS       spool what CUPTI holds every MS milliseconds (default:\n"
          "                          1000), so a program killed with SIGKILL loses at most\n"
          "                          about that much (fatal signals flush everything first)\n"
          "  --keep-noisy-api        keep cudaGetDevice, cudaGetLastError and similar calls\n"
          "  --no-ops                no framework operators (by default the Python processes\n"
          "                          of CMD that import torch emit PyTorch's operator ranges,\n"
          "                          read into operators with the kernels they launched)\n"
          "  --record-shapes         operators with their input shapes (PyTorch formats them\n"
          "                          per call: costs the program more)\n"
          "  --force                 replace the run's outputs of this host together\n"
          "                          (without it, a run that has them already is left as\n"
          "                          it is, and this profile is the run NAME_2, NAME_3...)\n"
          "  --empty-run             write the run even when no process recorded CUDA activity\n"
          "                          (the program's span, with a note); without it such a\n"
          "                          session writes nothing and says why in one line\n"
          "  --label KEY=VALUE       a hyper-parameter of the run in TensorBoard's HParams\n"
          "                          dashboard (repeatable; a numeric VALUE is a number)\n"
          "  --no-pt-link            no RUN/HOST.pt.trace.json.gz (a hard link to the JSON,\n"
          "                          where PyTorch's TensorBoard plugin finds runs)\n"
          "  --quiet                 no summary\n"
          "\n"
          "exit status: the command's own (128+N if signal N ended it); 127 if CMD was not\n"
          "found; 2 for bad options (CMD not started); 1 when tbexport itself failed after\n"
          "CMD exited 0.  A problem of tbexport's before the start (no injection library,\n"
          "no permission for the spool folder) is one line, and CMD runs without the\n"
          "profiler; a run name already taken is never a reason not to run CMD.\n");
}

/* Signals.  When tbexport is the terminal's foreground job, the program
 * stays in tbexport's process group, so that it keeps the terminal and job
 * control (Ctrl-C, Ctrl-Z) reaches it directly; tbexport then forwards only
 * what was sent to it alone (kill PID: SI_USER, SI_QUEUE), not what the
 * terminal sent to the whole group.  Otherwise (a script, a batch system,
 * `timeout`, a background job) the program gets a process group of its own
 * and everything tbexport receives is forwarded to that group once: a
 * signal sent to tbexport's group (`kill -TERM -PGID`, `timeout`) would
 * otherwise reach the program twice.  A signal that arrives before the
 * program's pid is known is forwarded as soon as it is. */
static volatile sig_atomic_t child_pid, own_group, pending_sig;

static void forward(int sig, siginfo_t *si, void *uc) {
  (void)uc;
  if (!own_group && !(si && (si->si_code == SI_USER || si->si_code == SI_QUEUE))) return;
  pid_t p = (pid_t)child_pid;
  if (p > 0)
    kill(own_group ? -p : p, sig);
  else
    pending_sig = sig;
}

/* Whether tbexport is the foreground job of a terminal. */
static int in_foreground(void) {
  for (int fd = 0; fd <= 2; fd++)
    if (isatty(fd)) return tcgetpgrp(fd) == getpgrp();
  return 0;
}

/* Finds `cmd` like execvp would; returns a malloc'd path or NULL (errno). */
static char *find_command(const char *cmd) {
  if (strchr(cmd, '/')) {
    if (access(cmd, X_OK) != 0) return NULL;
    return strdup(cmd);
  }
  const char *path = getenv("PATH");
  if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
  int saw_eacces = 0;
  for (const char *p = path;;) {
    const char *c = strchr(p, ':');
    size_t n = c ? (size_t)(c - p) : strlen(p);
    char *full = malloc(n + strlen(cmd) + 3);
    if (!full) return NULL;
    if (n == 0)
      sprintf(full, "./%s", cmd);
    else
      sprintf(full, "%.*s/%s", (int)n, p, cmd);
    struct stat st;
    if (stat(full, &st) == 0 && S_ISREG(st.st_mode)) {
      if (access(full, X_OK) == 0) return full;
      saw_eacces = 1;
    }
    free(full);
    if (!c) break;
    p = c + 1;
  }
  errno = saw_eacces ? EACCES : ENOENT;
  return NULL;
}

#ifdef TBE_HAVE_CUPTI
/* Locates libtbexport_inject.so: $TBEXPORT_INJECT_LIB, next to this
 * program, then the install location relative to it. */
static char *find_inject_lib(void) {
  const char *env = getenv("TBEXPORT_INJECT_LIB");
  if (env && *env) return realpath(env, NULL);
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return NULL;
  exe[n] = '\0';
  char *slash = strrchr(exe, '/');
  if (!slash) return NULL;
  *slash = '\0';
  const char *rel[] = {"",
#ifdef TBE_INJECT_RELDIR
                       ("/" TBE_INJECT_RELDIR),
#endif
                       "/../lib/tbexport"};
  for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
    char cand[PATH_MAX + 64];
    snprintf(cand, sizeof cand, "%s%s/libtbexport_inject.so", exe, rel[i]);
    if (access(cand, R_OK) == 0) return realpath(cand, NULL);
  }
  return NULL;
}

typedef struct written {
  char **paths;
  size_t n, cap;
} written;

static void on_file(void *ctx, const char *path) {
  written *w = ctx;
  if (w->n == w->cap) {
    size_t nc = w->cap ? w->cap * 2 : 8;
    char **x = realloc(w->paths, nc * sizeof *x);
    if (!x) return;
    w->paths = x;
    w->cap = nc;
  }
  if ((w->paths[w->n] = strdup(path))) w->n++;
}

/* The program's environment: this process's, plus the session's
 * variables (tbe_session_environment), which replace any of the same
 * name. */
typedef struct env {
  char **v;       /* NULL-terminated */
  size_t n;
  char *added[8]; /* the strings we made (v points to them) */
  int nadded;
} env;

static int env_init(env *e) {
  memset(e, 0, sizeof *e);
  while (environ[e->n]) e->n++;
  if (!(e->v = malloc((e->n + 1) * sizeof *e->v))) return TBE_ENOMEM;
  memcpy(e->v, environ, (e->n + 1) * sizeof *e->v);
  return 0;
}

static int env_set(void *ctx, const char *key, const char *val) {
  env *e = ctx;
  size_t kl = strlen(key);
  if (e->nadded == (int)(sizeof e->added / sizeof e->added[0])) return TBE_ETOOBIG;
  char *kv = malloc(kl + strlen(val) + 2);
  if (!kv) return TBE_ENOMEM;
  sprintf(kv, "%s=%s", key, val);
  e->added[e->nadded++] = kv;
  for (size_t i = 0; i < e->n; i++)
    if (strncmp(e->v[i], key, kl) == 0 && e->v[i][kl] == '=') {
      e->v[i] = kv;
      return 0;
    }
  char **x = realloc(e->v, (e->n + 2) * sizeof *x);
  if (!x) return TBE_ENOMEM;
  x[e->n++] = kv;
  x[e->n] = NULL;
  e->v = x;
  return 0;
}

static void env_free(env *e) {
  for (int i = 0; i < e->nadded; i++) free(e->added[i]);
  free(e->v);
}
#endif

static int64_t epoch_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static double mono(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ---- options ---- */

typedef struct profile_args {
  const char *logdir, *run, *host;
  tbe_profiler_options po; /* what to collect, the capture range */
  char *cap_buf, *steps_buf; /* the ranges' names (tbe_profiler_parse_range) */
  const char *steps_name, *steps_domain;
  int force, quiet, empty_run;
  char **cmd;
} profile_args;

static void args_free(profile_args *a) {
  free(a->cap_buf);
  free(a->steps_buf);
}

/* A range option (--capture-range, --steps) into *buf: 0, or -1 after the
 * error line. */
static int parse_range(const char *opt, const char *arg, int *mode, char **buf,
                       const char **name, const char **domain) {
  free(*buf);
  size_t size = strlen(arg) + 1;
  if (!(*buf = malloc(size))) {
    tbe_cli_error("profile", "out of memory");
    return -1;
  }
  if (tbe_profiler_parse_range(arg, mode, *buf, size, name, domain) == 0) return 0;
  if (strcmp(opt, "steps") == 0)
    tbe_cli_error("profile", "--steps: expected nvtx:NAME[@DOMAIN], got '%s'", arg);
  else
    tbe_cli_error("profile",
                  "--capture-range: expected nvtx:NAME[@DOMAIN] or cudaProfilerApi, got '%s'", arg);
  return -1;
}

/* One option; 0, or -1 after the error line. */
static int parse_one(int c, const char *arg, profile_args *a) {
  tbe_profiler_options *po = &a->po;
  char *end;
  long v;
  switch (c) {
    case 'l': a->logdir = arg; return 0;
    case 'r': a->run = arg; return 0;
    case 'H': a->host = arg; return 0;
    case 'k': po->keep_noisy_api = 1; return 0;
    case 'O': po->operators = TBE_OPS_OFF; return 0;
    case 'S':
      if (po->operators != TBE_OPS_OFF) po->operators = TBE_OPS_SHAPES;
      return 0;
    case 'f': a->force = 1; return 0;
    case 'E': a->empty_run = 1; return 0;
    case 'q': a->quiet = 1; return 0;
    case TBE_CLI_OPT_LABEL:
    case TBE_CLI_OPT_NO_PT_LINK: return tbe_cli_run_option("profile", c, arg) ? -1 : 0;
    case 't': {
      size_t bad;
      if (!tbe_profiler_parse_trace(arg, &po->trace, &bad)) return 0;
      tbe_cli_error("profile", "--trace: unknown kind at '%s' (use cuda,nvtx,memory,driver)",
                    arg + bad);
      return -1;
    }
    case 'd':
    case 'D':
      if (!tbe_profiler_parse_seconds(arg, c == 'd' ? &po->delay_s : &po->duration_s)) return 0;
      tbe_cli_error("profile", "--%s: not a number of seconds: '%s'",
                    c == 'd' ? "delay" : "duration", arg);
      return -1;
    case 'c':
      return parse_range("capture-range", arg, &po->capture, &a->cap_buf, &po->capture_name,
                         &po->capture_domain);
    case 's': {
      int mode;
      if (parse_range("steps", arg, &mode, &a->steps_buf, &a->steps_name, &a->steps_domain))
        return -1;
      if (mode == TBE_CAPTURE_NVTX) return 0;
      tbe_cli_error("profile", "--steps: expected nvtx:NAME[@DOMAIN], got '%s'", arg);
      return -1;
    }
    case 'b':
      v = strtol(arg, &end, 10);
      if (!*end && v >= 1 && v <= 65536) {
        po->buffer_mb = (size_t)v;
        return 0;
      }
      tbe_cli_error("profile", "--buffer-mb: expected 1..65536, got '%s'", arg);
      return -1;
    case 'F':
      v = strtol(arg, &end, 10);
      if (*arg && !*end && v >= 1 && v <= 3600000) {
        po->flush_period_ms = (unsigned)v;
        return 0;
      }
      tbe_cli_error("profile", "--flush-period: expected milliseconds 1..3600000, got '%s'", arg);
      return -1;
    case 'G':
      if (!arg) {
        po->gpu_metrics_hz = TBE_GPU_METRICS_DEFAULT_HZ;
        return 0;
      }
      v = strtol(arg, &end, 10);
      if (*arg && !*end && v >= 1 && v <= 200000) {
        po->gpu_metrics_hz = (unsigned)v;
        return 0;
      }
      tbe_cli_error("profile", "--gpu-metrics: expected a sampling rate in Hz 1..200000, got '%s'",
                    arg);
      return -1;
    case 'K':
      if (!arg) {
        po->kernel_metrics = TBE_KMETRICS_DEFAULT;
        return 0;
      }
      if (!tbe_profiler_parse_kernel_metrics(arg, &po->kernel_metrics)) return 0;
      tbe_cli_error("profile", "--kernel-metrics: unknown set '%s' (use default or brief)", arg);
      return -1;
    case 'N':
      v = strtol(arg, &end, 10);
      if (*arg && !*end && v >= 1 && v <= 1000000) {
        po->kernel_metrics_launches = (unsigned)v;
        return 0;
      }
      tbe_cli_error("profile", "--kernel-metrics-launches: expected 1..1000000, got '%s'", arg);
      return -1;
    default: return -1;
  }
}

/* Parses argv into *a.  Returns -1 to go on, or the exit status (0 after
 * --help). */
static int parse_args(int argc, char **argv, profile_args *a) {
  memset(a, 0, sizeof *a);
  a->logdir = "log_dir";
  tbe_profiler_options_init(&a->po);
  int c, li = -1;
  optind = 1;
  while ((c = getopt_long(argc, argv, "+h", profile_opts, &li)) != -1) {
    /* `--logdir -- CMD`: the value is missing, not a directory named "--" */
    if (optarg && strcmp(optarg, "--") == 0 && li >= 0) {
      tbe_cli_error("profile", "--%s needs a value before '--'", profile_opts[li].name);
      return TBE_EXIT_USAGE;
    }
    li = -1;
    if (c == 'h') {
      profile_usage(stdout);
      return TBE_EXIT_OK;
    }
    if (parse_one(c, optarg, a)) return TBE_EXIT_USAGE;
  }
  const tbe_profiler_options *po = &a->po;
  /* A capture range is read from records that --trace must collect. */
  const char *needs = po->capture == TBE_CAPTURE_NVTX && !(po->trace & TBE_TRACE_NVTX)
                          ? "--capture-range nvtx:... needs nvtx in --trace"
                      : a->steps_name && !(po->trace & TBE_TRACE_NVTX)
                          ? "--steps nvtx:... needs nvtx in --trace"
                      : po->capture == TBE_CAPTURE_PROFILER_API && !(po->trace & TBE_TRACE_CUDA)
                          ? "--capture-range cudaProfilerApi needs cuda in --trace"
                          : NULL;
  if (needs) {
    tbe_cli_error("profile", "%s", needs);
    return TBE_EXIT_USAGE;
  }
  if (optind >= argc) {
    tbe_cli_error("profile", "no command to run (usage: tbexport [OPTIONS] -- CMD [ARGS...])");
    return TBE_EXIT_USAGE;
  }
  const char *why;
  if (a->run && tbe_name_check(a->run, &why)) {
    tbe_cli_error("profile", "--run '%s': %s", a->run, why);
    return TBE_EXIT_USAGE;
  }
  if (a->host && tbe_name_check(a->host, &why)) {
    tbe_cli_error("profile", "--host '%s': %s", a->host, why);
    return TBE_EXIT_USAGE;
  }
  a->cmd = argv + optind;
  return -1;
}

/* ---- running the program ---- */

typedef struct ran {
  pid_t pid;
  int status;      /* waitpid's */
  int exec_err;    /* errno of a failed exec, else 0 */
  double wall;     /* seconds */
  int64_t start_ns, stop_ns;
} ran;

/* Runs `exe` with argv `cmd` and environment `envp`, forwarding signals
 * (see above), and waits for it.  Returns 0, or -1 after the error line
 * (nothing ran). */
static int run_program(const char *exe, char **cmd, char **envp, ran *r) {
  memset(r, 0, sizeof *r);
  /* A CLOEXEC pipe reports an exec failure. */
  int pfd[2];
  if (pipe2(pfd, O_CLOEXEC) != 0) {
    tbe_cli_error("profile", "pipe: %s", strerror(errno));
    return -1;
  }
  struct sigaction sa, old[6];
  static const int fwd[6] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = forward;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  /* argv for running CMD with /bin/sh should it lack a #! line (made
   * before fork: the child only calls execve). */
  int argc_cmd = 0;
  while (cmd[argc_cmd]) argc_cmd++;
  const char **sh_argv = malloc(((size_t)argc_cmd + 2) * sizeof *sh_argv);
  if (sh_argv) {
    sh_argv[0] = "/bin/sh";
    sh_argv[1] = exe;
    for (int i = 1; i <= argc_cmd; i++) sh_argv[i + 1] = cmd[i];
  }
  own_group = !in_foreground();
  pending_sig = 0;
  child_pid = 0;
  for (int i = 0; i < 6; i++) sigaction(fwd[i], &sa, &old[i]);
  r->start_ns = epoch_ns();
  double t0 = mono();
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    tbe_cli_error("profile", "fork: %s", strerror(errno));
    for (int i = 0; i < 6; i++) sigaction(fwd[i], &old[i], NULL);
    close(pfd[0]);
    close(pfd[1]);
    free(sh_argv);
    return -1;
  }
  if (pid == 0) {
    close(pfd[0]);
    if (own_group) setpgid(0, 0);
    for (int i = 0; i < 6; i++) sigaction(fwd[i], &old[i], NULL);
    execve(exe, cmd, envp);
    int e = errno;
    if (e == ENOEXEC && sh_argv) {
      /* An executable without #! line: run by the shell, as shells and
       * execvp do. */
      execve("/bin/sh", (char *const *)sh_argv, envp);
      e = errno;
    }
    ssize_t wr = write(pfd[1], &e, sizeof e);
    (void)wr;
    _exit(127);
  }
  if (own_group) setpgid(pid, pid); /* both sides: whichever runs first */
  child_pid = pid;
  if (pending_sig) kill(own_group ? -pid : pid, pending_sig);
  close(pfd[1]);
  ssize_t got;
  do got = read(pfd[0], &r->exec_err, sizeof r->exec_err);
  while (got < 0 && errno == EINTR);
  if (got != (ssize_t)sizeof r->exec_err) r->exec_err = 0;
  close(pfd[0]);
  while (waitpid(pid, &r->status, 0) < 0 && errno == EINTR) {
  }
  r->wall = mono() - t0;
  r->stop_ns = epoch_ns();
  r->pid = pid;
  child_pid = 0;
  for (int i = 0; i < 6; i++) sigaction(fwd[i], &old[i], NULL);
  free(sh_argv);
  return 0;
}

/* ---- the program without the collector ---- */

/* The exit status of a program that ran. */
static int exit_status(const ran *r) {
  return WIFEXITED(r->status)     ? WEXITSTATUS(r->status)
         : WIFSIGNALED(r->status) ? 128 + WTERMSIG(r->status)
                                  : TBE_EXIT_FAIL;
}

/* Runs the program without the collector, after one line saying why: a
 * problem of ours (no injection library, a spool folder we may not make)
 * never keeps the program from running.  Returns its exit status. */
static int run_bare(const profile_args *a, const char *exe, const char *why) {
  tbe_cli_warn("profile", "%s; running %s without the profiler", why, a->cmd[0]);
  ran r;
  if (run_program(exe, a->cmd, environ, &r)) return TBE_EXIT_FAIL;
  if (r.exec_err) {
    tbe_cli_error("profile", "%s: %s", a->cmd[0], strerror(r.exec_err));
    return r.exec_err == EACCES ? 126 : TBE_EXIT_NOCMD;
  }
  return exit_status(&r);
}

#ifdef TBE_HAVE_CUPTI
/* ---- the session ---- */

/* The summary on stderr after the run is written. */
static void report(const profile_args *a, const ran *r, int exit_code, double conv,
                   const tbe_session_result *sr, const written *w) {
  const tbe_profiler_result *t = &sr->total;
  if (WIFSIGNALED(r->status))
    tbe_cli_note("tbexport: %s was killed by signal %d after %.3f s", a->cmd[0],
                 WTERMSIG(r->status), r->wall);
  else
    tbe_cli_note("tbexport: %s exited with status %d after %.3f s", a->cmd[0], exit_code, r->wall);
  size_t np = sr->processes;
  if (np == 0 && w->n == 0) return; /* nothing recorded, no run: the session said why */
  fprintf(stderr,
          "tbexport: %zu process%s with CUDA; GPU busy %.1f%%; kernels %llu, copies %llu, "
          "memsets %llu, API calls %llu, NVTX ranges %llu, marks %llu, steps %llu\n",
          np, np == 1 ? "" : "es", t->gpu_busy_pct, (unsigned long long)t->kernels,
          (unsigned long long)t->copies, (unsigned long long)t->memsets,
          (unsigned long long)t->api_calls, (unsigned long long)t->nvtx_ranges,
          (unsigned long long)t->nvtx_marks, (unsigned long long)t->steps);
  fprintf(stderr,
          "tbexport: records lost: %llu for lack of buffer space (or spool writes), %llu with "
          "zero or inverted timestamps; CUPTI overhead %.3f ms\n",
          (unsigned long long)t->dropped_records, (unsigned long long)t->dropped_out_of_range,
          (double)t->overhead_ns / 1e6);
  if (np > 0)
    fprintf(stderr,
            "tbexport: collector: background thread CPU %.3f ms, CUPTI buffers %.1f MiB, "
            "spool %.1f MiB; conversion %.3f s\n",
            (double)sr->collector_cpu_ns / 1e6, (double)sr->buffer_bytes / 1048576.0,
            (double)sr->spool_bytes / 1048576.0, conv);
  else
    fprintf(stderr, "tbexport: conversion %.3f s\n", conv);
  for (size_t i = 0; i < w->n; i++) tbe_cli_note("tbexport: wrote %s", w->paths[i]);
}

/* Converts the session's spools into the run and prints the summary;
 * returns the exit status. */
static int convert(const profile_args *a, const char *run, const char *spool, const ran *r,
                   const tbe_session_launcher *li) {
  int exit_code = exit_status(r);
  double c0 = mono();
  written w = {0};
  tbe_export_options eo;
  tbe_export_options_init(&eo);
  eo.threads = tbe_cli_export_threads();
  eo.logdir = a->logdir;
  eo.run = run;
  eo.host = a->host;
  eo.force = a->force;
  eo.on_file = on_file;
  eo.ctx = &w;
  char cmdline[512];
  size_t cl = 0;
  cmdline[0] = '\0';
  for (char **x = a->cmd; *x && cl < sizeof cmdline - 1; x++)
    cl += (size_t)snprintf(cmdline + cl, sizeof cmdline - cl, "%s%s", x == a->cmd ? "" : " ", *x);
  /* The HParams "command": what the run was made from. */
  char command[1024];
  size_t ncmd = 0;
  while (a->cmd[ncmd]) ncmd++;
  tbe_cli_command_line(a->cmd, ncmd, command, sizeof command);
  tbe_cli_run_options_apply(&eo, command);
  tbe_session_options so;
  tbe_session_options_init(&so);
  so.spool_dir = spool;
  so.export_options = &eo;
  so.launcher = li;
  so.capture = a->po.capture;
  so.capture_name = a->po.capture_name;
  so.capture_domain = a->po.capture_domain;
  so.steps_name = a->steps_name;
  so.steps_domain = a->steps_domain;
  so.program_pid = r->pid;
  so.program_cmd = cmdline;
  so.start_ns = r->start_ns;
  so.stop_ns = r->stop_ns;
  so.on_message = tbe_cli_on_message;
  so.message_ctx = (void *)&a->quiet;
  so.no_empty_run = !a->empty_run;
  tbe_session_result sr;
  int rc = tbe_session_convert(&so, &sr);
  if (!a->quiet) report(a, r, exit_code, mono() - c0, &sr, &w);
  for (size_t i = 0; i < w.n; i++) free(w.paths[i]);
  free(w.paths);
  /* (a failure to write the run: the session has said why, in one line) */
  return rc && exit_code == 0 ? tbe_cli_exit_for(rc) : exit_code;
}

/* Says that this is an attempt after a restart of the job, and its run. */
static void note_attempt(const tbe_session_launcher *li, const char *run) {
  char what[96];
  int n = 0;
  what[0] = '\0';
  if (li->requeue > 0)
    n = snprintf(what, sizeof what, "Slurm requeued it %d time%s", (int)li->requeue,
                 li->requeue == 1 ? "" : "s");
  if (li->restart > 0)
    snprintf(what + n, sizeof what - (size_t)n, "%storchrun restarted its workers %d time%s",
             n ? ", " : "", (int)li->restart, li->restart == 1 ? "" : "s");
  tbe_cli_note("tbexport: note: a restarted attempt of the job (%s): its profile is run '%s'", what,
               run);
}

/* Names the run, makes the spool folder, runs the program under the
 * collector and converts.  Returns the exit status.  Whatever goes wrong
 * on our side before the start, the program runs (without the collector
 * when it cannot be set up). */
static int session(const profile_args *a, const char *exe) {
  char run[TBE_NAME_MAX + 1], clash[PATH_MAX + 300], entry[TBE_NAME_MAX + 1];
  char want[TBE_NAME_MAX + 1], why[sizeof clash + 2 * TBE_NAME_MAX + 100];
  /* Under a launcher (srun tbexport -- ..., torchrun --no-python tbexport
   * -- ...) this process has the program's rank: its host entry is
   * <host>.rank<N>, and the job id names the run every rank joins. */
  tbe_session_launcher li;
  tbe_session_launcher_read(&li, NULL, NULL);
  if (li.why[0] && !a->quiet) tbe_cli_note("tbexport: note: %s", li.why);
  /* A restarted attempt (a Slurm requeue, a torchrun restart) keeps the
   * job's id: its run is the name with the attempt after it, a name the
   * user gave included, so no attempt lands on an earlier one. */
  const char *run_arg = a->run;
  /* A taken entry moves on to the next free name, whoever chose it:
   * replacing is --force's alone, and refusing would stop the program. */
  unsigned flags = a->force ? TBE_SESSION_FORCE : TBE_SESSION_NEXT_FREE;
  if (run_arg && li.attempt[0]) {
    int n = snprintf(want, sizeof want, "%s%s", run_arg, li.attempt);
    if (n > 0 && n <= TBE_NAME_MAX) run_arg = want;
  } else if (!run_arg && li.run[0]) {
    run_arg = li.run;
  } else if (!run_arg && li.rank >= 0 && !a->quiet) {
    tbe_cli_note(
        "tbexport: note: rank %d (%s) has no job id to name the run: ranks that start "
        "in different seconds land in different runs; pass the same --run NAME to "
        "every rank",
        (int)li.rank, li.launcher);
  }
  if (tbe_session_host_entry(a->host, li.rank, entry, sizeof entry)) {
    snprintf(why, sizeof why, "the host name with rank %d is not a valid name (give --host NAME)",
             (int)li.rank);
    return run_bare(a, exe, why);
  }
  /* The run's name is fixed before the program starts, and an existing
   * entry is found now rather than after a long program has run (only
   * this host entry's files: the other ranks join the run). */
  int rc =
      tbe_session_run_name(a->logdir, run_arg, entry, flags, run, sizeof run, clash, sizeof clash);
  if (rc == TBE_EEXIST) {
    snprintf(why, sizeof why,
             "run '%s' already has outputs for host %s (%s) and no free name follows it", run_arg,
             entry, clash);
    return run_bare(a, exe, why);
  }
  if (rc) return run_bare(a, exe, "cannot name the run from the clock (give --run NAME)");
  if (clash[0] && a->run)
    tbe_cli_warn("profile",
                 "run '%s' already has outputs for host %s (%s): this profile is run '%s' "
                 "(--force replaces them)",
                 run_arg, entry, clash, run);
  else if (clash[0] && !a->quiet)
    tbe_cli_note(
        "tbexport: note: run '%s' already has a profile of host %s (%s), from an earlier "
        "job of the same id: this one is run '%s'",
        run_arg, entry, clash, run);
  if (li.attempt[0] && !a->quiet) note_attempt(&li, run);
  char *inject = find_inject_lib();
  if (!inject)
    return run_bare(a, exe,
                    "libtbexport_inject.so not found next to tbexport or in its install folder "
                    "(set TBEXPORT_INJECT_LIB)");
  unsigned traced = a->po.trace ? a->po.trace : TBE_TRACE_DEFAULT;
  char hook[PATH_MAX];
  if (a->po.operators != TBE_OPS_OFF && (traced & TBE_TRACE_NVTX) &&
      tbe_session_python_hook(inject, hook, sizeof hook) != 0)
    tbe_cli_warn("profile",
                 "operators are not recorded: %s/sitecustomize.py is missing (the Python hook "
                 "installed beside libtbexport_inject.so)",
                 hook);
  struct stat lst;
  int logdir_made = stat(a->logdir, &lst) != 0, ret = TBE_EXIT_FAIL;
  char spool_rel[PATH_MAX], where[PATH_MAX + 64], line[PATH_MAX + 200];
  char *spool = NULL;
  env e;
  int env_ok = env_init(&e) == 0;
  if ((rc = tbe_session_spool_dir(a->logdir, spool_rel, sizeof spool_rel, where, sizeof where))) {
    ret = run_bare(a, exe, tbe_export_strerror(rc, where, line, sizeof line));
    goto out;
  }
  spool = realpath(spool_rel, NULL);
  if (!env_ok || !spool || tbe_session_environment(&a->po, inject, spool, env_set, &e)) {
    rmdir(spool_rel);
    ret = run_bare(a, exe, "out of memory");
    goto out;
  }
  ran r;
  if (run_program(exe, a->cmd, e.v, &r)) {
    rmdir(spool_rel);
    goto out;
  }
  if (r.exec_err) {
    tbe_cli_error("profile", "%s: %s", a->cmd[0], strerror(r.exec_err));
    ret = r.exec_err == EACCES ? 126 : TBE_EXIT_NOCMD;
    rmdir(spool_rel);
    if (logdir_made) rmdir(a->logdir); /* nothing ran: leave no trace of it (if still empty) */
    goto out;
  }
  /* The conversion removes the spool folder (or keeps what it could not
   * convert). */
  ret = convert(a, run, spool, &r, &li);
out:
  env_free(&e);
  free(spool);
  free(inject);
  return ret;
}
#endif

int tbe_cmd_profile(int argc, char **argv) {
  profile_args a;
  int ret = parse_args(argc, argv, &a);
  if (ret >= 0) {
    args_free(&a);
    return ret;
  }
  char *exe = find_command(a.cmd[0]);
  if (!exe) {
    int e = errno;
    tbe_cli_error("profile", "%s: %s", a.cmd[0],
                  e == EACCES ? "permission denied" : "command not found");
    args_free(&a);
    return e == EACCES ? 126 : TBE_EXIT_NOCMD;
  }
#ifdef TBE_HAVE_CUPTI
  ret = session(&a, exe);
#else
  ret = run_bare(&a, exe,
                 "the CUPTI collector was not built: this tbexport was configured without the CUDA "
                 "toolkit (CUPTI); rebuild with CUDA installed to profile programs");
#endif
  free(exe);
  args_free(&a);
  return ret;
}
