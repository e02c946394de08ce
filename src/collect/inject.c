/* inject.c: entry points of libtbexport_inject.so.
 *
 * `tbexport -- CMD` sets CUDA_INJECTION64_PATH (and, when NVTX is traced,
 * NVTX_INJECTION64_PATH) to this library and TBEXPORT_SPOOL_DIR /
 * TBEXPORT_OPTIONS to the session.  The CUDA driver calls
 * InitializeInjection during cuInit; the NVTX loader calls
 * InitializeInjectionNvtx2 on the first NVTX call of every library that
 * carries NVTX, where our own handlers take the calls (nvtxhook.h; they
 * cost tens of ns where libcupti's marker records cost 1-2 us).
 * Whichever comes first starts the collector (once per process: a forked
 * child that reaches either starts its own, since the parent's session is
 * not inherited; a call from inside the start, if CUPTI makes one, returns
 * at once) with a
 * spool <dir>/<pid>.spool and registers the at-exit forced flush.  The
 * collector also flushes on fatal signals (collector.c: SIGSEGV, SIGABRT,
 * SIGTERM, ...) and every flush_ms, so a crash keeps what completed and a
 * SIGKILL loses at most about one flush period.
 *
 * Only these two symbols are exported (inject.map), and
 * tbexport_inject_step, through which a program's own libtbexport reaches
 * this collector (tbe_profiler_step under `tbexport -- CMD`), and
 * tbexport_now_ns, the collector's clock for the Python hook; everything
 * else is hidden so nothing can clash with the host program.  A forked child does
 * not inherit the parent's session (collector.c's atfork handler); an
 * exec'd child starts its own from the inherited environment.
 *
 * When a process cannot collect (libcupti missing or refused, the spool
 * not creatable), it says why on its stderr and leaves <dir>/<pid>.note
 * with that line, so that tbexport can report the cause instead of "the
 * program never initialized CUDA".
 *
 * This file is the injection library's program side, as src/cli is the
 * tbexport program's: the one place of the collector that prints (on the
 * profiled program's stderr, where `tbexport -- CMD` shows it), here and
 * through the collector's on_message (scripts/check_layers lets it). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collect/collector.h"
#include "collect/nvtxhook.h"
#include "collect/options.h"
#include "tbexport/error.h"
#include "tbexport/profiler.h"

#define TBE_INJECT_API __attribute__((visibility("default")))

static pthread_mutex_t start_mu = PTHREAD_MUTEX_INITIALIZER;
static pid_t started_in; /* the process that ran start_once; 0: none */
static __thread int starting;
static tbe__cupti_api api;
static int api_ok;
static int nvtx_chain; /* libcupti must see NVTX too (the range profiler's capture range) */

/* Leaves DIR/<pid>.note holding WHY (one line); best effort. */
static void leave_note(const char *dir, const char *why) {
  char path[4200];
  snprintf(path, sizeof path, "%s/%ld.note", dir, (long)getpid());
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return;
  size_t n = strlen(why);
  ssize_t w = write(fd, why, n);
  (void)w;
  close(fd);
}

/* The collector's messages: on the program's stderr, one line each. */
static void print_message(void *ctx, tbe_message_level level, const char *line) {
  (void)ctx;
  (void)level;
  fprintf(stderr, "tbexport: %s\n", line);
}

static void at_exit(void) {
  if (tbe__collector_running()) tbe__collector_stop(NULL);
}

static void start_once(void) {
  char why[256];
  api_ok = tbe__cupti_load(&api, why, sizeof why) == 0;
  const char *dir = getenv(TBE__ENV_SPOOL_DIR);
  if (!dir || !*dir) {
    fprintf(stderr,
            "tbexport: libtbexport_inject.so was loaded without %s (it is meant to be set up by "
            "`tbexport -- CMD`); not collecting\n",
            TBE__ENV_SPOOL_DIR);
    return;
  }
  if (!api_ok) {
    fprintf(stderr, "tbexport: %s; not collecting\n", why);
    leave_note(dir, why);
    return;
  }
  tbe__collect_opts o;
  tbe__opts_default(&o);
  if (tbe__opts_decode(getenv(TBE__ENV_OPTIONS), &o) != 0)
    fprintf(stderr, "tbexport: ignoring malformed %s\n", TBE__ENV_OPTIONS);
  tbe__collect_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.trace = o.trace;
  cfg.delay_s = o.delay_s;
  cfg.duration_s = o.duration_s;
  cfg.capture = o.capture;
  cfg.buffer_cap = (o.buffer_mb ? o.buffer_mb : 64) << 20;
  cfg.flush_ms = o.flush_ms;
  cfg.keep_noisy = o.keep_noisy;
  cfg.catch_signals = 1;
  cfg.gpu_metrics_hz = o.gpu_metrics_hz;
  cfg.kernel_metrics = o.kernel_metrics;
  cfg.kernel_launches = o.kernel_launches;
  cfg.capture_name = o.capture_name[0] ? o.capture_name : NULL;
  cfg.capture_domain = o.capture_domain[0] ? o.capture_domain : NULL;
  cfg.flags = TBE__SPF_INJECTED;
  cfg.nvtx_hook = 1;
  cfg.nvml = 1; /* (with TBE_TRACE_MEMORY) */
  nvtx_chain = o.kernel_metrics && o.capture == TBE_CAPTURE_NVTX;
  cfg.on_message = print_message;
  char path[4200];
  int rc = TBE_EEXIST;
  for (int n = 0; n < 100 && rc == TBE_EEXIST; n++) {
    if (n == 0)
      snprintf(path, sizeof path, "%s/%ld.spool", dir, (long)getpid());
    else
      snprintf(path, sizeof path, "%s/%ld-%d.spool", dir, (long)getpid(), n);
    cfg.spool_path = path;
    rc = tbe__collector_start(&api, &cfg);
  }
  if (rc) {
    char msg[300];
    snprintf(msg, sizeof msg, "cannot start collecting: %s", tbe_strerror(rc));
    fprintf(stderr, "tbexport: %s in pid %ld\n", msg, (long)getpid());
    leave_note(dir, msg);
    return;
  }
  atexit(at_exit);
}

static void ensure_started(void) {
  if (starting) return;
  pthread_mutex_lock(&start_mu);
  if (started_in != getpid()) {
    started_in = getpid();
    starting = 1;
    start_once();
    starting = 0;
  }
  pthread_mutex_unlock(&start_mu);
}

TBE_INJECT_API int InitializeInjection(void) {
  ensure_started();
  return 1;
}

/* NVTX's tool: our own handlers (nvtxhook.h), chained to libcupti's when
 * the range profiler reads its capture range through CUPTI's NVTX
 * callbacks.  Without a collector, no tool: NVTX calls cost nothing. */
TBE_INJECT_API int InitializeInjectionNvtx2(const void *(*get_export_table)(uint32_t)) {
  ensure_started();
  if (!tbe__nvtx_recording()) return 0;
  return tbe__nvtx_attach(get_export_table, nvtx_chain && api_ok ? api.nvtx_init : NULL);
}

/* tbe_profiler_step of a program that links libtbexport and runs under
 * `tbexport -- CMD`: its libtbexport finds this symbol in the library the
 * driver loaded (profiler.c) and marks the step in this process's spool.
 * TBE_ESTATE until the collector started (CUDA or NVTX initialized). */
TBE_INJECT_API int tbexport_inject_step(void) { return tbe__collector_step(); }

/* The collector's clock now (cuptiGetTimestamp, as the collector stamps its
 * records, else CLOCK_REALTIME as it falls back to), in ns: the Python hook
 * reads it beside time.time_ns() once, so that the spool conversion maps
 * PyTorch's wall-clock times onto the trace's clock (spool_pymem.c). */
TBE_INJECT_API uint64_t tbexport_now_ns(void) {
  uint64_t ts = 0;
  if (api_ok && api.get_timestamp && api.get_timestamp(&ts) == CUPTI_SUCCESS && ts) return ts;
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}
