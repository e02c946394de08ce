/* profiler.c: the public in-process profiler (tbexport/profiler.h).
 *
 * Built into libtbexport in every configuration.  With the collector
 * (TBE_HAVE_CUPTI: every build but TBE_WITH_CUDA=OFF) it loads libcupti at run time
 * (cupti_load.c), starts the collector singleton with a spool in a hidden
 * directory under the log dir, and on stop converts that spool into the run
 * (src/import/spool.c).  Without the collector, start and stop return TBE_ENOCUPTI.  One
 * session at a time; the session state below is only touched by start and
 * stop, which must not race.
 *
 * tbe_profiler_step marks a step in the collector of this library, or,
 * when the process runs under `tbexport -- CMD`, in the injected one: the
 * library the CUDA driver loaded from CUDA_INJECTION64_PATH exports
 * tbexport_inject_step (inject.c), found once it is loaded and kept. */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "collect/options.h"
#include "common/fsutil.h"
#include "common/optsize.h"
#include "common/text.h"
#include "tbexport/error.h"
#include "tbexport/export.h"
#include "tbexport/profiler.h"
#include "tbexport/session.h"

#ifdef TBE_HAVE_CUPTI
#include "collect/collector.h"

static struct {
  int active;
  char *logdir, *run, *host, *capture_name, *capture_domain;
  char *spool_dir;
  int capture;
  unsigned outputs;
  int force;
  tbe_message_fn on_message;
  void *message_ctx;
} P;

static void session_free(void) {
  free(P.logdir);
  free(P.run);
  free(P.host);
  free(P.capture_name);
  free(P.capture_domain);
  free(P.spool_dir);
  memset(&P, 0, sizeof P);
}

/* NVTX hands its calls to the library named by NVTX_INJECTION64_PATH, read
 * once, at the process's first NVTX call.  When NVTX tracing is asked for
 * and the variable is unset, point it at the libcupti just loaded, so that
 * NVTX calls made after start reach CUPTI's marker records.  Never
 * overrides a value the user or another tool set. */
static void route_nvtx(const tbe__cupti_api *api) {
  if (getenv("NVTX_INJECTION64_PATH")) return;
  Dl_info info;
  void *sym;
  memcpy(&sym, &api->register_callbacks, sizeof sym);
  if (sym && dladdr(sym, &info) && info.dli_fname && info.dli_fname[0] == '/')
    setenv("NVTX_INJECTION64_PATH", info.dli_fname, 0);
}

/* One message to the caller's on_message (tbexport/common.h), in line
 * form: the library never prints. */
static void say(tbe_message_fn fn, void *ctx, tbe_message_level level, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void say(tbe_message_fn fn, void *ctx, tbe_message_level level, const char *fmt, ...) {
  if (!fn) return;
  char msg[1024], line[4 * sizeof msg];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  tbe__text_term_z(line, sizeof line, msg, 1);
  fn(ctx, level, line);
}

/* The collector's messages (from this thread or its background thread). */
static void relay(void *ctx, tbe_message_level level, const char *line) {
  (void)ctx;
  say(P.on_message, P.message_ctx, level, "%s", line);
}

static char *dup_or_null(const char *s, int *err) {
  if (!s) return NULL;
  char *d = strdup(s);
  if (!d) *err = TBE_ENOMEM;
  return d;
}
#endif

int tbe_profiler_start(const tbe_profiler_options *o) {
#ifndef TBE_HAVE_CUPTI
  (void)o;
  return TBE_ENOCUPTI;
#else
  tbe_profiler_options oc; /* the caller's, completed to this version (its size) */
  if (!o || !(o = TBE__OPTIONS_TAKE(tbe_profiler_options, &oc, o))) return TBE_EINVAL;
  if (!o->logdir || !*o->logdir) return TBE_EINVAL;
  if ((o->run && tbe__name_check(o->run, NULL)) || (o->host && tbe__name_check(o->host, NULL)))
    return TBE_EINVAL;
  if (o->capture == TBE_CAPTURE_NVTX && (!o->capture_name || !*o->capture_name))
    return TBE_EINVAL;
  if (o->delay_s < 0 || o->duration_s < 0) return TBE_EINVAL;
  if (P.active) return TBE_EBUSY;
  /* A process run under `tbexport -- CMD` is already being collected. */
  const char *inj = getenv(TBE__ENV_SPOOL_DIR);
  if (inj && *inj) return TBE_EBUSY;
  tbe__cupti_api api;
  char why[256];
  int rc = tbe__cupti_load(&api, why, sizeof why);
  if (rc) {
    say(o->on_message, o->message_ctx, TBE_MSG_ERROR, "%s", why);
    return rc;
  }
  /* The run is named now, as `tbexport -- CMD` names it: a run (or the
   * launcher's job id) that already has outputs for this host entry moves
   * on to RUN_2, RUN_3, ... with a warning, rather than being refused at
   * stop, after the work.  --force keeps the name (and replaces). */
  char named[TBE_NAME_MAX + 1] = "";
  if (!o->force) {
    tbe_session_launcher li;
    tbe_session_launcher_read(&li, NULL, NULL);
    const char *want = o->run ? o->run : li.run[0] ? li.run : NULL;
    char entry[TBE_NAME_MAX + 1], clash[TBE_NAME_MAX + 64];
    if (tbe_session_host_entry(o->host, li.rank, entry, sizeof entry) == 0 &&
        tbe_session_run_name(o->logdir, want, entry, TBE_SESSION_NEXT_FREE, named, sizeof named,
                             clash, sizeof clash) == 0) {
      if (want && clash[0])
        say(o->on_message, o->message_ctx, TBE_MSG_WARNING,
            "run '%s' already has outputs for host %s (%s): this profile is run '%s' (force "
            "replaces them)",
            want, entry, clash, named);
    } else {
      named[0] = '\0'; /* named at stop, as before (a refusal is said there) */
    }
  }
  int err = 0;
  P.logdir = dup_or_null(o->logdir, &err);
  P.run = dup_or_null(named[0] ? named : o->run, &err);
  P.host = dup_or_null(o->host, &err);
  P.capture_name = dup_or_null(o->capture_name, &err);
  P.capture_domain = dup_or_null(o->capture_domain, &err);
  P.capture = o->capture;
  P.outputs = o->outputs;
  P.force = o->force;
  P.on_message = o->on_message;
  P.message_ctx = o->message_ctx;
  size_t dl = strlen(o->logdir) + 64;
  P.spool_dir = malloc(dl);
  if (err || !P.spool_dir) {
    session_free();
    return TBE_ENOMEM;
  }
  if ((rc = tbe_session_spool_dir(o->logdir, P.spool_dir, dl, NULL, 0))) {
    session_free();
    return rc;
  }
  char path[4200];
  snprintf(path, sizeof path, "%s/%ld.spool", P.spool_dir, (long)getpid());
  tbe__collect_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.trace = o->trace ? o->trace : TBE_TRACE_DEFAULT;
  cfg.delay_s = o->delay_s;
  cfg.duration_s = o->duration_s;
  cfg.capture = (unsigned)o->capture;
  cfg.buffer_cap = (o->buffer_mb ? o->buffer_mb : 64) << 20;
  cfg.keep_noisy = o->keep_noisy_api;
  cfg.flush_ms = o->flush_period_ms ? o->flush_period_ms : 1000;
  cfg.catch_signals = 1;
  cfg.nvml = 1; /* (with TBE_TRACE_MEMORY) */
  cfg.gpu_metrics_hz = o->gpu_metrics_hz;
  cfg.kernel_metrics = o->kernel_metrics;
  cfg.kernel_launches = o->kernel_metrics_launches;
  cfg.capture_name = P.capture_name;
  cfg.capture_domain = P.capture_domain;
  cfg.spool_path = path;
  cfg.on_message = relay;
  if (cfg.trace & TBE_TRACE_NVTX) route_nvtx(&api);
  rc = tbe__collector_start(&api, &cfg);
  if (rc) {
    rmdir(P.spool_dir);
    session_free();
    return rc;
  }
  P.active = 1;
  return 0;
#endif
}

int tbe_profiler_stop(tbe_profiler_result *result) {
#ifndef TBE_HAVE_CUPTI
  if (result) memset(result, 0, sizeof *result);
  return TBE_ENOCUPTI;
#else
  if (result) memset(result, 0, sizeof *result);
  if (!P.active) return TBE_ESTATE;
  int rc = tbe__collector_stop(NULL);
  if (rc)
    say(P.on_message, P.message_ctx, TBE_MSG_WARNING, "the spool was not fully written: %s",
        tbe_strerror(rc));
  tbe_export_options eo;
  tbe_export_options_init(&eo);
  eo.logdir = P.logdir;
  /* Without a run: the launcher's job id names it, so every rank of the
   * job joins one run (tbexport/session.h). */
  tbe_session_launcher li;
  tbe_session_launcher_read(&li, NULL, NULL);
  eo.run = P.run ? P.run : li.run[0] ? li.run : NULL;
  eo.host = P.host;
  eo.outputs = P.outputs;
  eo.force = P.force;
  tbe_session_options so;
  tbe_session_options_init(&so);
  so.spool_dir = P.spool_dir;
  so.export_options = &eo;
  so.launcher = &li;
  so.capture = P.capture;
  so.capture_name = P.capture_name;
  so.capture_domain = P.capture_domain;
  so.program_pid = getpid();
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  so.start_ns = so.stop_ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
  so.on_message = P.on_message;
  so.message_ctx = P.message_ctx;
  tbe_session_result sr;
  int rc2 = tbe_session_convert(&so, &sr);
  if (result) *result = sr.total;
  session_free();
  return rc2;
#endif
}

/* ---- steps ---- */

typedef int (*tbe__step_fn)(void);
static tbe__step_fn injected_step; /* atomic: set once found */

/* The injection library's step function, when this process is profiled by
 * `tbexport -- CMD` and the driver has loaded it (RTLD_NOLOAD: never loads
 * it; the handle is kept, so it stays).  NULL otherwise; tried again on the
 * next call, since the driver loads it when CUDA initializes. */
static tbe__step_fn find_injected_step(void) {
  tbe__step_fn f = __atomic_load_n(&injected_step, __ATOMIC_ACQUIRE);
  if (f) return f;
  const char *dir = getenv(TBE__ENV_SPOOL_DIR), *lib = getenv("CUDA_INJECTION64_PATH");
  if (!dir || !*dir || !lib || !*lib) return NULL;
  void *h = dlopen(lib, RTLD_LAZY | RTLD_NOLOAD);
  if (!h) return NULL;
  void *sym = dlsym(h, "tbexport_inject_step");
  if (!sym) {
    dlclose(h);
    return NULL;
  }
  memcpy(&f, &sym, sizeof f);
  __atomic_store_n(&injected_step, f, __ATOMIC_RELEASE);
  return f;
}

int tbe_profiler_step(void) {
#ifdef TBE_HAVE_CUPTI
  int rc = tbe__collector_step();
  if (rc != TBE_ESTATE) return rc;
#else
  int rc = TBE_ENOCUPTI;
#endif
  tbe__step_fn f = find_injected_step();
  return f ? f() : rc;
}
