/* cmd_profile.c: `tbexport [OPTIONS] -- CMD ARGS...` (also `tbexport
 * profile [OPTIONS] -- CMD ARGS...`): runs an unmodified program with the
 * CUPTI collector injected and writes its GPU activity as a TensorBoard run.
 *
 * Steps: parse options; find the command (status 127 when it does not
 * exist) and libtbexport_inject.so; create a hidden spool directory under
 * the log dir; run the command with its arguments and environment plus
 * CUDA_INJECTION64_PATH, NVTX_INJECTION64_PATH and the session variables;
 * forward signals (see below); wait; convert every process's spool into the
 * run (collect/convert.c); print a summary on stderr; exit with the
 * command's status (128+N when a signal N ended it).  Without CUPTI at
 * build time it explains that the collector was not built. */
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
#include "collect/convert.h"
#include "collect/options.h"
#include "common/fsutil.h"
#include "tbexport.h"
#include "tbexport/profiler.h"

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
    {"keep-noisy-api", no_argument, 0, 'k'},
    {"force", no_argument, 0, 'f'},
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
          "  --run NAME              run name (default: local time YYYY_MM_DD_HH_MM_SS)\n"
          "  --host NAME             host name in the run (default: this machine; with several\n"
          "                          processes each gets NAME_pidN)\n"
          "  --trace LIST            cuda,nvtx,memory,driver (default: cuda,nvtx)\n"
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
          "  --flush-period MS       spool what CUPTI holds every MS milliseconds (default:\n"
          "                          1000), so a program killed with SIGKILL loses at most\n"
          "                          about that much (fatal signals flush everything first)\n"
          "  --keep-noisy-api        keep cudaGetDevice, cudaGetLastError and similar calls\n"
          "  --force                 replace the run's outputs of this host together\n"
          "  --label KEY=VALUE       a hyper-parameter of the run in TensorBoard's HParams\n"
          "                          dashboard (repeatable; a numeric VALUE is a number)\n"
          "  --no-pt-link            no RUN/HOST.pt.trace.json.gz (a hard link to the JSON,\n"
          "                          where PyTorch's TensorBoard plugin finds runs)\n"
          "  --quiet                 no summary\n"
          "\n"
          "exit status: the command's own (128+N if signal N ended it); 127 if CMD was not\n"
          "found; 1 or 2 when tbexport itself failed.\n");
}

#ifdef TBE_HAVE_CUPTI
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

#endif

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
                       "/" TBE_INJECT_RELDIR,
#endif
                       "/../lib/tbexport"};
  for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
    char cand[PATH_MAX + 64];
    snprintf(cand, sizeof cand, "%s%s/libtbexport_inject.so", exe, rel[i]);
    if (access(cand, R_OK) == 0) return realpath(cand, NULL);
  }
  return NULL;
}

/* The outputs run RUN already holds for host HOST in LOGDIR: a file under
 * plugins/profile/RUN named HOST.<ext> or HOST_pid<N>.<ext> (the names one
 * profiled session writes).  Returns 1 and names the first in FOUND, or 0. */
static int run_has_host(const char *logdir, const char *run, const char *host, char *found,
                        size_t size) {
  char dir[PATH_MAX];
  if (snprintf(dir, sizeof dir, "%s/plugins/profile/%s", logdir, run) >= (int)sizeof dir) return 0;
  DIR *d = opendir(dir);
  if (!d) return 0;
  size_t hl = strlen(host);
  struct dirent *e;
  int hit = 0;
  while (!hit && (e = readdir(d))) {
    const char *n = e->d_name;
    if (strncmp(n, host, hl) != 0) continue;
    if (n[hl] == '.' && n[hl + 1] != '\0') hit = 1;
    if (strncmp(n + hl, "_pid", 4) == 0 && n[hl + 4] >= '0' && n[hl + 4] <= '9') hit = 1;
    if (hit) snprintf(found, size, "%s/%s", dir, n);
  }
  closedir(d);
  return hit;
}

/* Whether anything of run RUN exists in LOGDIR (its profile folder or its
 * events folder). */
static int run_exists(const char *logdir, const char *run) {
  char p[PATH_MAX];
  struct stat st;
  snprintf(p, sizeof p, "%s/plugins/profile/%s", logdir, run);
  if (lstat(p, &st) == 0) return 1;
  snprintf(p, sizeof p, "%s/%s", logdir, run);
  return lstat(p, &st) == 0;
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

/* Sets KEY=VAL in the environment array; returns the new string (owned
 * by the caller, referenced by *envp) or NULL when out of memory. */
static char *set_env(char ***envp, size_t *n, const char *key, const char *val) {
  size_t kl = strlen(key);
  char *kv = malloc(kl + strlen(val) + 2);
  if (!kv) return NULL;
  sprintf(kv, "%s=%s", key, val);
  for (size_t i = 0; i < *n; i++)
    if (strncmp((*envp)[i], key, kl) == 0 && (*envp)[i][kl] == '=') {
      (*envp)[i] = kv;
      return kv;
    }
  char **e = realloc(*envp, (*n + 2) * sizeof *e);
  if (!e) {
    free(kv);
    return NULL;
  }
  e[(*n)++] = kv;
  e[*n] = NULL;
  *envp = e;
  return kv;
}

static double mono(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

#endif

int tbe_cmd_profile(int argc, char **argv) {
  const char *logdir = "log_dir", *run = NULL, *host = NULL;
  tbe__collect_opts co;
  tbe__opts_default(&co);
  int capture = TBE_CAPTURE_ALL, force = 0, quiet = 0;
  char *cap_name = NULL, *cap_domain = NULL, *steps_name = NULL, *steps_domain = NULL;
  int c;
  optind = 1;
  int li = -1;
  while ((c = getopt_long(argc, argv, "+h", profile_opts, &li)) != -1) {
    /* `--logdir -- CMD`: the value is missing, not a directory named "--" */
    if (optarg && strcmp(optarg, "--") == 0 && li >= 0) {
      tbe_cli_error("profile", "--%s needs a value before '--'", profile_opts[li].name);
      goto usage;
    }
    li = -1;
    switch (c) {
      case 'l': logdir = optarg; break;
      case 'r': run = optarg; break;
      case 'H': host = optarg; break;
      case 't': {
        size_t bad;
        if (tbe_profiler_parse_trace(optarg, &co.trace, &bad)) {
          tbe_cli_error("profile", "--trace: unknown kind at '%s' (use cuda,nvtx,memory,driver)",
                        optarg + bad);
          goto usage;
        }
        break;
      }
      case 'd':
      case 'D': {
        double s;
        if (tbe__parse_seconds(optarg, &s)) {
          tbe_cli_error("profile", "--%s: not a number of seconds: '%s'",
                        c == 'd' ? "delay" : "duration", optarg);
          goto usage;
        }
        if (c == 'd') co.delay_s = s;
        else co.duration_s = s;
        break;
      }
      case 'c':
        free(cap_name);
        free(cap_domain);
        if (tbe__parse_capture_range(optarg, &capture, &cap_name, &cap_domain)) {
          tbe_cli_error("profile",
                        "--capture-range: expected nvtx:NAME[@DOMAIN] or cudaProfilerApi, got '%s'",
                        optarg);
          goto usage;
        }
        break;
      case 's': {
        int mode;
        free(steps_name);
        free(steps_domain);
        if (tbe__parse_capture_range(optarg, &mode, &steps_name, &steps_domain) ||
            mode != TBE_CAPTURE_NVTX) {
          tbe_cli_error("profile", "--steps: expected nvtx:NAME[@DOMAIN], got '%s'", optarg);
          goto usage;
        }
        break;
      }
      case 'b': {
        char *end;
        long v = strtol(optarg, &end, 10);
        if (*end || v < 1 || v > 65536) {
          tbe_cli_error("profile", "--buffer-mb: expected 1..65536, got '%s'", optarg);
          goto usage;
        }
        co.buffer_mb = (size_t)v;
        break;
      }
      case 'F': {
        char *end;
        long v = strtol(optarg, &end, 10);
        if (!*optarg || *end || v < 1 || v > 3600000) {
          tbe_cli_error("profile", "--flush-period: expected milliseconds 1..3600000, got '%s'",
                        optarg);
          goto usage;
        }
        co.flush_ms = (unsigned)v;
        break;
      }
      case 'k': co.keep_noisy = 1; break;
      case 'f': force = 1; break;
      case 'q': quiet = 1; break;
      case TBE_CLI_OPT_LABEL:
      case TBE_CLI_OPT_NO_PT_LINK:
        if (tbe_cli_run_option("profile", c, optarg)) goto usage;
        break;
      case 'h':
        profile_usage(stdout);
        free(cap_name);
        free(cap_domain);
        free(steps_name);
        free(steps_domain);
        return TBE_EXIT_OK;
      default: goto usage;
    }
  }
  co.capture = (unsigned)capture;
  /* A capture range is read from records that --trace must collect. */
  if (capture == TBE_CAPTURE_NVTX && !(co.trace & TBE_TRACE_NVTX)) {
    tbe_cli_error("profile", "--capture-range nvtx:... needs nvtx in --trace");
    free(cap_name);
    free(cap_domain);
    free(steps_name);
    free(steps_domain);
    return TBE_EXIT_USAGE;
  }
  if (steps_name && !(co.trace & TBE_TRACE_NVTX)) {
    tbe_cli_error("profile", "--steps nvtx:... needs nvtx in --trace");
    free(cap_name);
    free(cap_domain);
    free(steps_name);
    free(steps_domain);
    return TBE_EXIT_USAGE;
  }
  if (capture == TBE_CAPTURE_PROFILER_API && !(co.trace & TBE_TRACE_CUDA)) {
    tbe_cli_error("profile", "--capture-range cudaProfilerApi needs cuda in --trace");
    free(cap_name);
    free(cap_domain);
    free(steps_name);
    free(steps_domain);
    return TBE_EXIT_USAGE;
  }
  if (optind >= argc) {
    tbe_cli_error("profile", "no command to run (usage: tbexport [OPTIONS] -- CMD [ARGS...])");
    goto usage;
  }
  const char *why;
  if (run && tbe_name_check(run, &why)) {
    tbe_cli_error("profile", "--run '%s': %s", run, why);
    goto usage;
  }
  if (host && tbe_name_check(host, &why)) {
    tbe_cli_error("profile", "--host '%s': %s", host, why);
    goto usage;
  }
  char **cmd = argv + optind;
  char *exe = find_command(cmd[0]);
  if (!exe) {
    int e = errno;
    tbe_cli_error("profile", "%s: %s", cmd[0],
                  e == EACCES ? "permission denied" : "command not found");
    free(cap_name);
    free(cap_domain);
    free(steps_name);
    free(steps_domain);
    return e == EACCES ? 126 : TBE_EXIT_NOCMD;
  }
#ifndef TBE_HAVE_CUPTI
  (void)logdir;
  (void)force;
  (void)quiet;
  tbe_cli_error("profile",
                "the CUPTI collector was not built: this tbexport was configured without the CUDA "
                "toolkit (CUPTI); rebuild with CUDA installed to profile programs");
  free(exe);
  free(cap_name);
  free(cap_domain);
  free(steps_name);
  free(steps_domain);
  return TBE_EXIT_FAIL;
#else
  int rc, ret = TBE_EXIT_FAIL, made_spool = 0, nadded = 0;
  char *inject = NULL, *spool = NULL, *added[4] = {0};
  char **sh_argv = NULL;
  int logdir_made = 0, made_logdir_empty = 0;
  char **envp = NULL;
  char spool_rel[PATH_MAX];
  written w = {0};
  /* The run's name is fixed before the program starts, and an existing
   * run is refused now rather than after a long program has run. */
  char run_buf[TBE_NAME_MAX + 1];
  if (!run) {
    if (tbe_run_name_default(run_buf, sizeof run_buf) != 0) {
      tbe_cli_error("profile", "cannot name the run from the clock; give --run NAME");
      goto out;
    }
    /* Another session started in the same second: the next free suffix. */
    size_t bl = strlen(run_buf);
    for (int k = 2; run_exists(logdir, run_buf) && k < 1000; k++)
      snprintf(run_buf + bl, sizeof run_buf - bl, "_%d", k);
    run = run_buf;
  } else if (!force) {
    char hb[TBE_NAME_MAX + 1], found[PATH_MAX + 300];
    if (host)
      snprintf(hb, sizeof hb, "%s", host);
    else
      tbe__hostname(hb, sizeof hb);
    if (run_has_host(logdir, run, hb, found, sizeof found)) {
      tbe_cli_error("profile",
                    "run '%s' already has outputs for host %s (%s); use --force to replace them, "
                    "or another --run or --host; the program was not started",
                    run, hb, found);
      goto out;
    }
  }
  inject = find_inject_lib();
  if (!inject) {
    tbe_cli_error("profile",
                  "libtbexport_inject.so not found next to tbexport or in its install folder "
                  "(set TBEXPORT_INJECT_LIB)");
    goto out;
  }
  struct stat lst;
  logdir_made = stat(logdir, &lst) != 0;
  if ((rc = tbe__mkdir_p(logdir, 0755))) {
    tbe_cli_error("profile", "%s: %s", logdir, tbe_strerror(rc));
    goto out;
  }
  {
    char where[PATH_MAX + 64], line[PATH_MAX + 200];
    if ((rc = tbe__spool_dir_make(logdir, spool_rel, sizeof spool_rel, where, sizeof where))) {
      tbe_cli_error("profile", "%s", tbe_export_strerror(rc, where, line, sizeof line));
      goto out;
    }
  }
  made_spool = 1;
  spool = realpath(spool_rel, NULL);
  char opts[256];
  tbe__opts_encode(&co, opts, sizeof opts);
  size_t ne = 0;
  while (environ[ne]) ne++;
  envp = malloc((ne + 1) * sizeof *envp);
  if (!envp || !spool) {
    tbe_cli_error("profile", "out of memory");
    goto out;
  }
  memcpy(envp, environ, (ne + 1) * sizeof *envp);
  int env_ok = (added[nadded++] = set_env(&envp, &ne, "CUDA_INJECTION64_PATH", inject)) != NULL;
  if (env_ok && (co.trace & TBE_TRACE_NVTX))
    env_ok = (added[nadded++] = set_env(&envp, &ne, "NVTX_INJECTION64_PATH", inject)) != NULL;
  if (env_ok) env_ok = (added[nadded++] = set_env(&envp, &ne, TBE__ENV_SPOOL_DIR, spool)) != NULL;
  if (env_ok) env_ok = (added[nadded++] = set_env(&envp, &ne, TBE__ENV_OPTIONS, opts)) != NULL;
  if (!env_ok) {
    tbe_cli_error("profile", "out of memory");
    goto out;
  }

  /* Run it.  A CLOEXEC pipe reports an exec failure. */
  int pfd[2];
  if (pipe2(pfd, O_CLOEXEC) != 0) {
    tbe_cli_error("profile", "pipe: %s", strerror(errno));
    goto out;
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
  sh_argv = malloc(((size_t)argc_cmd + 2) * sizeof *sh_argv);
  if (sh_argv) {
    sh_argv[0] = "/bin/sh";
    sh_argv[1] = exe;
    for (int i = 1; i <= argc_cmd; i++) sh_argv[i + 1] = cmd[i];
  }
  own_group = !in_foreground();
  pending_sig = 0;
  child_pid = 0;
  for (int i = 0; i < 6; i++) sigaction(fwd[i], &sa, &old[i]);
  int64_t start_ns = tbe__now_ns();
  double t0 = mono();
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    tbe_cli_error("profile", "fork: %s", strerror(errno));
    for (int i = 0; i < 6; i++) sigaction(fwd[i], &old[i], NULL);
    close(pfd[0]);
    close(pfd[1]);
    goto out;
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
      execve("/bin/sh", sh_argv, envp);
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
  int exec_err = 0;
  ssize_t got;
  do got = read(pfd[0], &exec_err, sizeof exec_err);
  while (got < 0 && errno == EINTR);
  close(pfd[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  double wall = mono() - t0;
  int64_t stop_ns = tbe__now_ns();
  child_pid = 0;
  for (int i = 0; i < 6; i++) sigaction(fwd[i], &old[i], NULL);
  int exit_code = WIFEXITED(status) ? WEXITSTATUS(status)
                  : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                        : TBE_EXIT_FAIL;
  if (got == (ssize_t)sizeof exec_err && exec_err) {
    tbe_cli_error("profile", "%s: %s", cmd[0], strerror(exec_err));
    ret = exec_err == EACCES ? 126 : TBE_EXIT_NOCMD;
    made_logdir_empty = logdir_made; /* nothing ran: leave no trace of it */
    goto out;
  }

  /* Convert. */
  double c0 = mono();
  tbe_export_options eo;
  tbe_export_options_init(&eo);
  eo.logdir = logdir;
  eo.run = run;
  eo.host = host;
  eo.force = force;
  eo.on_file = on_file;
  eo.ctx = &w;
  tbe__convert_opts cvo = {.capture = capture, .capture_name = cap_name,
                           .capture_domain = cap_domain, .steps_name = steps_name,
                           .steps_domain = steps_domain};
  char cmdline[512];
  size_t cl = 0;
  cmdline[0] = '\0';
  for (char **a = cmd; *a && cl < sizeof cmdline - 1; a++)
    cl += (size_t)snprintf(cmdline + cl, sizeof cmdline - cl, "%s%s", a == cmd ? "" : " ", *a);
  char command[1024];
  size_t ncmd = 0;
  while (cmd[ncmd]) ncmd++;
  tbe_cli_command_line(cmd, ncmd, command, sizeof command);
  tbe_cli_run_options_apply(&eo, command);
  tbe__session s;
  memset(&s, 0, sizeof s);
  s.spool_dir = spool;
  s.eo = &eo;
  s.co = &cvo;
  s.fallback_start_ns = start_ns;
  s.fallback_stop_ns = stop_ns;
  s.fallback_pid = pid;
  s.fallback_cmd = cmdline;
  s.prog = "tbexport";
  s.quiet = quiet;
  tbe__collector_cost cost;
  memset(&cost, 0, sizeof cost);
  s.cost = &cost;
  tbe_profiler_result r;
  size_t nprocs = 0;
  rc = tbe__spools_write_run(&s, &r, &nprocs);
  double conv = mono() - c0;
  if (!quiet) {
    if (WIFSIGNALED(status))
      tbe_cli_note("tbexport: %s was killed by signal %d after %.3f s", cmd[0], WTERMSIG(status),
                   wall);
    else
      tbe_cli_note("tbexport: %s exited with status %d after %.3f s", cmd[0], exit_code, wall);
    fprintf(stderr,
            "tbexport: %zu process%s with CUDA; GPU busy %.1f%%; kernels %llu, copies %llu, "
            "memsets %llu, API calls %llu, NVTX ranges %llu, marks %llu, steps %llu\n",
            nprocs, nprocs == 1 ? "" : "es", r.gpu_busy_pct, (unsigned long long)r.kernels,
            (unsigned long long)r.copies, (unsigned long long)r.memsets,
            (unsigned long long)r.api_calls, (unsigned long long)r.nvtx_ranges,
            (unsigned long long)r.nvtx_marks, (unsigned long long)r.steps);
    fprintf(stderr,
            "tbexport: dropped records %llu, out-of-range timestamps %llu, CUPTI overhead "
            "%.3f ms\n",
            (unsigned long long)r.dropped_records, (unsigned long long)r.dropped_out_of_range,
            (double)r.overhead_ns / 1e6);
    if (nprocs > 0)
      fprintf(stderr,
              "tbexport: collector: background thread CPU %.3f ms, CUPTI buffers %.1f MiB, "
              "spool %.1f MiB; conversion %.3f s\n",
              (double)cost.decode_cpu_ns / 1e6, (double)cost.buffer_bytes / 1048576.0,
              (double)cost.spool_bytes / 1048576.0, conv);
    else
      fprintf(stderr, "tbexport: conversion %.3f s\n", conv);
    for (size_t i = 0; i < w.n; i++) tbe_cli_note("tbexport: wrote %s", w.paths[i]);
  }
  /* (a failure to write the run: the session has said why, in one line) */
  made_spool = 0; /* the conversion removed it (or kept what it could not convert) */
  ret = rc && exit_code == 0 ? tbe_cli_exit_for(rc) : exit_code;
out:
  if (made_spool) rmdir(spool_rel);
  if (made_logdir_empty) rmdir(logdir); /* only if still empty */
  for (size_t i = 0; i < w.n; i++) free(w.paths[i]);
  free(w.paths);
  for (int i = 0; i < nadded; i++) free(added[i]);
  free(envp);
  free(sh_argv);
  free(exe);
  free(inject);
  free(spool);
  free(cap_name);
  free(cap_domain);
  free(steps_name);
  free(steps_domain);
  return ret;
#endif
usage:
  free(cap_name);
  free(cap_domain);
  free(steps_name);
  free(steps_domain);
  return TBE_EXIT_USAGE;
}
