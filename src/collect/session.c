/* session.c: a profiled session (tbexport/session.h): the run's name, the
 * spool folder, the program's environment, and the conversion of every
 * process's spool into one run after the program ends.  Built in every
 * configuration (no CUDA types): the tbexport program, tbe_profiler_stop
 * and `tbexport import FILE.spool` all convert through here.
 *
 * Conversion, per spool in name order: a spool still flock'ed belongs to
 * a live process and is left alone; the others are read into a trace
 * (src/import/spool.c: spool -> trace model) and written with tbe_export_run, one
 * host entry per process, all under one run name fixed before the first.
 * The entries follow tbexport/session.h: <host>.rank<N> for a process
 * with a launcher's rank (the spool's TBE__SP_RANK, else the session's own
 * launcher), _pid<P> after it when several processes share the rank (or,
 * without ranks, when there are several); so every spool's rank is read
 * from its first frame before any is named.  A spool that fails to
 * convert or whose run fails to write is kept and counted; the others go
 * on, and the result is the first error.  With no spool at all, the run
 * still says what happened: a trace of the program's process, spanning
 * its wall time, with a warning (the program never initialized CUDA, or
 * the notes of processes that could not collect).
 *
 * Invariant: the library prints nothing: every message goes to the
 * caller's on_message, in line form (common/text.h), so that text from a
 * spool (a command line, a trace warning) can neither add a line nor act
 * on a terminal. */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "import/spool.h"
#include "collect/launcher.h"
#ifdef TBE_HAVE_CUPTI
#include "collect/hwmetrics.h"
#endif
#include "collect/options.h"
#include "events/spool.h"
#include "common/fsutil.h"
#include "common/optsize.h"
#include "common/text.h"
#include "tbexport/error.h"
#include "tbexport/session.h"
#include "trace/run/run_layout.h"
#include "trace/run/run_scan.h"

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* ---- naming the run ---- */

/* Whether a run exists and which hosts it holds are the run room's
 * reading of the layout (trace/run/run_scan.h: tbe__run_exists,
 * tbe__run_has_host). */

int tbe_session_run_name(const char *logdir, const char *run, const char *host, unsigned flags,
                         char *name, size_t size, char *clash, size_t clash_size) {
  if (clash && clash_size) clash[0] = '\0';
  if (!logdir || !name || size <= TBE_NAME_MAX) return TBE_EINVAL;
  if ((run && tbe__name_check(run, NULL)) || (host && tbe__name_check(host, NULL)))
    return TBE_ENAME;
  if (!run) {
    int rc = tbe_run_name_default(name, size);
    if (rc) return rc;
    /* Another session started in the same second: the next free suffix. */
    size_t bl = strlen(name);
    for (int k = 2; tbe__run_exists(logdir, name) && k < 1000; k++)
      snprintf(name + bl, size - bl, "_%d", k);
    return 0;
  }
  snprintf(name, size, "%s", run);
  if (flags & TBE_SESSION_FORCE) return 0;
  char hb[TBE_NAME_MAX + 1];
  if (host)
    snprintf(hb, sizeof hb, "%s", host);
  else
    tbe__hostname(hb, sizeof hb);
  if (!tbe__run_has_host(logdir, run, hb, clash, clash_size)) return 0;
  if (!(flags & TBE_SESSION_NEXT_FREE)) return TBE_EEXIST;
  /* Ours to move: the first RUN_<k> without this entry's outputs.  The
   * entry is checked, not the run: the other ranks of the new job join
   * the same RUN_<k>, each having found its own entry taken below it. */
  for (int k = 2; k < 10000; k++) {
    char cand[TBE_NAME_MAX + 1];
    int n = snprintf(cand, sizeof cand, "%s_%d", run, k);
    if (n < 0 || (size_t)n >= sizeof cand) break;
    if (!tbe__run_has_host(logdir, cand, hb, NULL, 0)) {
      snprintf(name, size, "%s", cand);
      return 0;
    }
  }
  return TBE_EEXIST;
}

void tbe_session_host(char *buf, size_t size) {
  if (buf && size) tbe__hostname(buf, size);
}

/* ---- ranks ---- */

_Static_assert(sizeof(((tbe_session_launcher *)0)->attempt) >= TBE__ATTEMPT_MAX,
               "the attempt suffix fits tbe_session_launcher.attempt");

void tbe_session_launcher_read(tbe_session_launcher *l,
                               const char *(*get)(void *ctx, const char *name), void *ctx) {
  if (!l) return;
  tbe__launcher in;
  tbe__launcher_read(&in, get, ctx);
  memset(l, 0, sizeof *l);
  l->rank = in.rank;
  l->world_size = in.world_size;
  l->local_rank = in.local_rank;
  l->launcher = tbe__launcher_name(in.launcher);
  snprintf(l->job_id, sizeof l->job_id, "%s", in.job);
  l->requeue = in.requeue;
  l->restart = in.restart;
  tbe__launcher_attempt(&in, l->attempt, sizeof l->attempt);
  if (tbe__launcher_run_name(&in, l->run, sizeof l->run) || tbe__name_check(l->run, NULL))
    l->run[0] = '\0';
  snprintf(l->why, sizeof l->why, "%s", in.why);
}

int tbe_session_host_entry(const char *host, int32_t rank, char *buf, size_t size) {
  if (!buf || !size) return TBE_EINVAL;
  buf[0] = '\0';
  char hb[TBE_NAME_MAX + 1];
  if (host)
    snprintf(hb, sizeof hb, "%s", host);
  else
    tbe__hostname(hb, sizeof hb);
  if (tbe__name_check(hb, NULL)) return TBE_ENAME;
  int n = rank >= 0 ? snprintf(buf, size, "%.160s.rank%d", hb, (int)rank)
                    : snprintf(buf, size, "%s", hb);
  if (n < 0 || (size_t)n >= size) {
    buf[0] = '\0';
    return TBE_EINVAL;
  }
  if (tbe__name_check(buf, NULL)) {
    buf[0] = '\0';
    return TBE_ENAME;
  }
  return 0;
}

/* ---- the spool folder and the program's environment ---- */

int tbe_session_spool_dir(const char *logdir, char *path, size_t size, char *where, size_t wsize) {
  if (where && wsize) where[0] = '\0';
  if (!logdir || !*logdir || !path || !size) return TBE_EINVAL;
  int rc = tbe__mkdir_p(logdir, 0755);
  if (rc) {
    if (where && wsize) snprintf(where, wsize, "%s", logdir);
    return rc;
  }
  char name[80];
  snprintf(name, sizeof name, "%s%ld-%lld", tbe__run_suffix(TBE__RUN_SPOOL), (long)getpid(),
           (long long)now_ns());
  /* Made by this call (EXCL) under the symlink rule: a symlink planted at
   * its name is refused, never used. */
  int fd = tbe__dir_open(logdir, name, TBE__DIR_CREATE | TBE__DIR_EXCL, 0700, where, wsize);
  if (fd < 0) return fd;
  close(fd);
  int n = snprintf(path, size, "%s/%s", logdir, name);
  if (n < 0 || (size_t)n >= size) {
    char full[4400];
    snprintf(full, sizeof full, "%s/%s", logdir, name);
    rmdir(full);
    return -ENAMETOOLONG;
  }
  return 0;
}

int tbe_session_environment(const tbe_profiler_options *o, const char *inject_lib,
                            const char *spool_dir,
                            int (*set)(void *ctx, const char *name, const char *value),
                            void *ctx) {
  tbe_profiler_options oc; /* the caller's, completed to this version (its size) */
  if (!o || !inject_lib || !spool_dir || !set) return TBE_EINVAL;
  if (!(o = TBE__OPTIONS_TAKE(tbe_profiler_options, &oc, o))) return TBE_EINVAL;
  tbe__collect_opts co;
  tbe__opts_default(&co);
  co.trace = o->trace;
  co.delay_s = o->delay_s;
  co.duration_s = o->duration_s;
  co.capture = (unsigned)o->capture;
  if (o->buffer_mb) co.buffer_mb = o->buffer_mb;
  if (o->flush_period_ms) co.flush_ms = o->flush_period_ms;
  co.keep_noisy = o->keep_noisy_api;
  co.gpu_metrics_hz = o->gpu_metrics_hz;
  co.kernel_metrics = o->kernel_metrics;
  co.kernel_launches = o->kernel_metrics_launches;
  /* The range profiler measures only launches inside the capture range. */
  const char *cn = o->capture == TBE_CAPTURE_NVTX && o->capture_name ? o->capture_name : "";
  const char *cd = o->capture == TBE_CAPTURE_NVTX && o->capture_domain ? o->capture_domain : "";
  if (strlen(cn) >= sizeof co.capture_name || strlen(cd) >= sizeof co.capture_domain)
    return TBE_ETOOBIG;
  memcpy(co.capture_name, cn, strlen(cn) + 1);
  memcpy(co.capture_domain, cd, strlen(cd) + 1);
  char opts[2048];
  int rc = tbe__opts_encode(&co, opts, sizeof opts);
  if (!rc) rc = set(ctx, "CUDA_INJECTION64_PATH", inject_lib);
  if (!rc && (co.trace & TBE_TRACE_NVTX)) rc = set(ctx, "NVTX_INJECTION64_PATH", inject_lib);
  if (!rc) rc = set(ctx, TBE__ENV_SPOOL_DIR, spool_dir);
  if (!rc) rc = set(ctx, TBE__ENV_OPTIONS, opts);
  /* Operators: PyTorch's operator ranges, turned on by the Python hook;
   * memory: PyTorch's caching allocator and JAX's devices, recorded by it
   * (<pid>.pymem, read by the conversion). */
  char hook[4096];
  unsigned trace = o->trace ? o->trace : TBE_TRACE_DEFAULT;
  int ops = o->operators != TBE_OPS_OFF && (trace & TBE_TRACE_NVTX);
  int mem = (trace & TBE_TRACE_MEMORY) != 0;
  if (!rc && (ops || mem) && tbe_session_python_hook(inject_lib, hook, sizeof hook) == 0) {
    const char *old = getenv("PYTHONPATH");
    size_t n = strlen(hook) + (old && *old ? strlen(old) + 1 : 0) + 1;
    char *pp = malloc(n);
    if (!pp) return TBE_ENOMEM;
    snprintf(pp, n, "%s%s%s", hook, old && *old ? ":" : "", old && *old ? old : "");
    rc = set(ctx, "PYTHONPATH", pp);
    free(pp);
    if (!rc && ops) rc = set(ctx, "TBEXPORT_OPS", o->operators == TBE_OPS_SHAPES ? "shapes" : "1");
    if (!rc && mem) rc = set(ctx, "TBEXPORT_MEM", "1");
  }
  return rc;
}

int tbe_session_python_hook(const char *inject_lib, char *buf, size_t size) {
  if (!inject_lib || !buf || !size) return TBE_EINVAL;
  const char *slash = strrchr(inject_lib, '/');
  size_t dir = slash ? (size_t)(slash - inject_lib) : 0;
  int n = snprintf(buf, size, "%.*s%spython", (int)dir, inject_lib, slash ? "/" : "");
  if (n < 0 || (size_t)n + sizeof "/sitecustomize.py" > size) return TBE_EINVAL;
  char file[4200];
  snprintf(file, sizeof file, "%s/sitecustomize.py", buf);
  return access(file, R_OK) == 0 ? 0 : TBE_ENOENT;
}

int tbe_session_spool_check(const char *path, tbe_import_error *err) {
  if (err) memset(err, 0, sizeof *err);
  if (!path) return 0;
  /* Regular files only, opened without blocking: a FIFO (which a plain
   * open would wait on forever) or a device is the importer's to refuse. */
  uint8_t head[TBE__SPOOL_HEADER];
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return 0;
  struct stat st;
  ssize_t got = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? read(fd, head, sizeof head) : -1;
  close(fd);
  size_t n = got > 0 ? (size_t)got : 0;
  if (n < 8 || memcmp(head, TBE__SPOOL_MAGIC, 8) != 0) return 0;
  tbe__spool_tail tail;
  int rc = tbe__spool_scan(head, n, NULL, NULL, &tail);
  if (rc == 0) return 1;
  if (err) {
    char msg[sizeof err->message];
    snprintf(msg, sizeof msg, "%s: byte %zu: %s", path, tail.good_bytes,
             tail.why ? tail.why : "not a spool file");
    tbe__text_term_z(err->message, sizeof err->message, msg, 1);
    err->offset = tail.good_bytes;
  }
  return rc == TBE_ECORRUPT ? TBE_ECORRUPT : TBE_EFORMAT;
}

/* ---- messages ---- */

/* One line to the caller, whatever the spool's names and warnings hold
 * (common/text.h, the line form, as the CLI's printer). */
static void say(const tbe_session_options *o, tbe_message_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void say(const tbe_session_options *o, tbe_message_level level, const char *fmt, ...) {
  if (!o->on_message) return;
  char msg[2048], line[4 * sizeof msg];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  tbe__text_term_z(line, sizeof line, msg, 1);
  o->on_message(o->message_ctx, level, line);
}

/* ---- converting ---- */

static void session_defaults(tbe_session_options *o) { memset(o, 0, sizeof *o); }
TBE__OPTIONS_INIT_SIZED(tbe_session_options, session_defaults)

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void sum(tbe_profiler_result *a, const tbe_profiler_result *b) {
  a->kernels += b->kernels;
  a->copies += b->copies;
  a->memsets += b->memsets;
  a->api_calls += b->api_calls;
  a->nvtx_ranges += b->nvtx_ranges;
  a->nvtx_marks += b->nvtx_marks;
  a->dropped_records += b->dropped_records;
  a->dropped_out_of_range += b->dropped_out_of_range;
  a->overhead_ns += b->overhead_ns;
  a->steps += b->steps;
  if (b->start_ns && (!a->start_ns || b->start_ns < a->start_ns)) a->start_ns = b->start_ns;
  if (b->stop_ns > a->stop_ns) a->stop_ns = b->stop_ns;
}

/* Whether a live process still holds PATH's lock (collector.c): it is
 * still writing that spool. */
static int spool_in_use(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  int busy = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  close(fd);
  return busy;
}

/* Appends "pid <stem>: <first line of DIR/NAME>" to NOTES (a "; "-separated
 * list of why processes did not collect; see inject.c) and removes the
 * file unless KEEP. */
static void take_note(const char *dir, const char *name, int keep, char *notes, size_t size) {
  char path[4200], text[320];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  ssize_t n = read(fd, text, sizeof text - 1);
  close(fd);
  if (n < 0) n = 0;
  text[n] = '\0';
  for (ssize_t i = 0; i < n; i++)
    if ((unsigned char)text[i] < 0x20) text[i] = i == n - 1 && text[i] == '\n' ? '\0' : ' ';
  size_t used = strlen(notes);
  if (used < size)
    snprintf(notes + used, size - used, "%spid %.*s: %s", used ? "; " : "",
             (int)(strlen(name) - 5), name, text);
  if (!keep) unlink(path);
}

/* What the Python start-up hook said of each process (`<pid>.ops`, one
 * line: "ok[ shapes] torch V", "no-torch", or why operators are not
 * recorded). */
#define TBE__OPS_NOTES 64
typedef struct ops_notes {
  int64_t pid[TBE__OPS_NOTES];
  char text[TBE__OPS_NOTES][160];
  int used[TBE__OPS_NOTES];
  size_t n;
  int any_ok, any_no_torch;
} ops_notes;

static void take_ops(const char *dir, const char *name, int keep, ops_notes *on) {
  char path[4200], text[160];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return;
  struct stat st;
  ssize_t n = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? read(fd, text, sizeof text - 1) : 0;
  close(fd);
  if (!keep) unlink(path);
  if (n < 0) n = 0;
  text[n] = '\0';
  for (ssize_t i = 0; i < n; i++)
    if ((unsigned char)text[i] < 0x20) text[i] = i == n - 1 ? '\0' : ' ';
  if (strncmp(text, "ok", 2) == 0) {
    on->any_ok = 1;
    return;
  }
  if (strcmp(text, "no-torch") == 0) {
    on->any_no_torch = 1;
    return;
  }
  if (on->n == TBE__OPS_NOTES) return;
  on->pid[on->n] = strtoll(name, NULL, 10);
  snprintf(on->text[on->n], sizeof on->text[on->n], "%s", text);
  on->n++;
}

/* Removes the Python hook's <pid>.pymem files of DIR whose process left
 * no <pid>.spool there (it could not collect): the spools converted took
 * theirs with them, those kept keep theirs. */
static void drop_orphan_pymem(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  while (d && (e = readdir(d))) {
    size_t l = strlen(e->d_name);
    if (l < 7 || l > 40 || strcmp(e->d_name + l - 6, ".pymem") != 0) continue;
    char path[4200];
    snprintf(path, sizeof path, "%s/%.*s.spool", dir, (int)(l - 6), e->d_name);
    if (access(path, F_OK) == 0) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    unlink(path);
  }
  if (d) closedir(d);
}

/* The spools to convert, sorted, into *names (malloc'd), the notes of
 * processes that could not collect and the Python hook's notes.  Returns
 * 0 or TBE_ENOMEM. */
static int list_spools(const tbe_session_options *o, char ***names, size_t *nn, char *notes,
                       size_t nsize, ops_notes *on) {
  size_t cap = 0;
  int rc = 0;
  *names = NULL;
  *nn = 0;
  if (o->nfiles) {
    if (!(*names = calloc(o->nfiles, sizeof **names))) return TBE_ENOMEM;
    for (size_t i = 0; i < o->nfiles && !rc; i++) {
      if (!((*names)[i] = strdup(o->files[i]))) rc = TBE_ENOMEM;
      else *nn = i + 1;
    }
  } else if (o->spool_dir) {
    DIR *d = opendir(o->spool_dir);
    struct dirent *e;
    while (d && !rc && (e = readdir(d))) {
      size_t l = strlen(e->d_name);
      if (l > 5 && strcmp(e->d_name + l - 5, ".note") == 0) {
        take_note(o->spool_dir, e->d_name, o->keep, notes, nsize);
        continue;
      }
      if (l > 4 && strcmp(e->d_name + l - 4, ".ops") == 0) {
        take_ops(o->spool_dir, e->d_name, o->keep, on);
        continue;
      }
      if (l < 7 || strcmp(e->d_name + l - 6, ".spool") != 0) continue;
      if (*nn == cap) {
        size_t nc = cap ? cap * 2 : 8;
        char **x = realloc(*names, nc * sizeof *x);
        if (!x) {
          rc = TBE_ENOMEM;
          break;
        }
        *names = x;
        cap = nc;
      }
      if (!((*names)[*nn] = malloc(strlen(o->spool_dir) + l + 2))) {
        rc = TBE_ENOMEM;
        break;
      }
      sprintf((*names)[(*nn)++], "%s/%s", o->spool_dir, e->d_name);
    }
    if (d) closedir(d);
  }
  if (*nn > 1) qsort(*names, *nn, sizeof **names, cmp_str);
  return rc;
}

/* Whether spool i is a process without a rank that did no GPU work
 * (no kernel, copy or memset) in a session whose other spools have ranks. */
static int unranked_idle(const int32_t *ranks, size_t nn, size_t i, const tbe_profiler_result *r) {
  if (ranks[i] >= 0 || r->kernels || r->copies || r->memsets) return 0;
  for (size_t j = 0; j < nn; j++)
    if (ranks[j] >= 0) return 1;
  return 0;
}

/* The host entry <base>[.rank<R>] into host[0..size). */
static void entry_of(char *host, size_t size, const char *base, int32_t rank) {
  if (rank >= 0)
    snprintf(host, size, "%.160s.rank%d", base, (int)rank);
  else
    snprintf(host, size, "%s", base);
}

/* The host entry of spool i of nn, whose rank is ranks[i] (-1: none) and
 * pid pids[i] (those of spools before it are known): <base>[.rank<R>]
 * alone when no other spool of the session shares that rank (or, without
 * one, when no other spool lacks one), else with _pid<P> after it, and
 * _<k> for the k-th spool of one pid (spools imported from several
 * sessions). */
static void spool_host(char *host, size_t size, const char *base, const int32_t *ranks,
                       const int64_t *pids, size_t nn, size_t i) {
  char e[TBE_NAME_MAX + 1];
  entry_of(e, sizeof e, base, ranks[i]);
  size_t peers = 0;
  for (size_t j = 0; j < nn; j++) peers += j != i && ranks[j] == ranks[i];
  if (!peers) {
    snprintf(host, size, "%s", e);
    return;
  }
  int same = 0;
  for (size_t j = 0; j < i; j++) same += pids[j] == pids[i] && ranks[j] == ranks[i];
  if (same)
    snprintf(host, size, "%.180s_pid%lld_%d", e, (long long)pids[i], same + 1);
  else
    snprintf(host, size, "%.180s_pid%lld", e, (long long)pids[i]);
}

/* The trace of a session in which no process initialized CUDA: the
 * program's process over its wall time, with a warning. */
static int program_trace(const tbe_session_options *o, tbe_trace *t, const char *host,
                         const char *notes) {
  uint32_t pi;
  int r = tbe_trace_process(t, o->program_pid, &pi);
  if (r) return r;
  t->host = tbe_trace_str_id(t, host);
  t->processes[pi].host = t->host;
  t->processes[pi].name = tbe_trace_str_id(t, o->program_cmd ? o->program_cmd : "");
  t->source = TBE_SRC_CUPTI;
  const tbe_session_launcher *sl = o->launcher;
  t->rank = sl && sl->rank >= 0 ? sl->rank : -1;
  t->world_size = t->rank >= 0 && sl->world_size > t->rank ? sl->world_size : 0;
  t->start_ns = o->start_ns;
  t->stop_ns = o->stop_ns;
  if (notes[0])
    tbe_trace_warn(t, "no CUDA activity was recorded: the collector could not start (%s)", notes);
  else
    tbe_trace_warn(t,
                   "no CUDA activity was recorded: the program never initialized CUDA (or no "
                   "GPU/driver was available)");
  return tbe_trace_finish(t);
}

/* The trace of a session in which no process initialized CUDA, as host
 * entry <base_host>[.rank<R>] (into host): a run with a note, said to the
 * caller too.  Sets the session's span in *tot. */
static int no_cuda_trace(const tbe_session_options *o, tbe_trace *t, char *host, size_t hsize,
                         const char *base_host, int32_t own_rank, const char *notes,
                         tbe_profiler_result *tot) {
  entry_of(host, hsize, base_host, own_rank);
  int r = program_trace(o, t, host, notes);
  tot->start_ns = o->start_ns;
  tot->stop_ns = o->stop_ns;
  if (!r && notes[0])
    say(o, TBE_MSG_WARNING, "no CUDA activity was recorded: the collector could not start (%s)",
        notes);
  else if (!r)
    say(o, TBE_MSG_NOTE,
        "note: no CUDA activity was recorded (the program never initialized CUDA)");
  return r;
}

/* No process recorded CUDA activity and no run is written
 * (no_empty_run): one line saying why, and what can be done here instead
 * when the machine has no NVIDIA driver. */
static void say_nothing_recorded(const tbe_session_options *o, const char *notes) {
  if (notes[0]) {
    say(o, TBE_MSG_WARNING,
        "no CUDA activity was recorded, no run written: the collector could not start (%s)",
        notes);
    return;
  }
  void *cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (!cuda) {
    say(o, TBE_MSG_WARNING,
        "no CUDA activity was recorded, no run written: this machine has no NVIDIA driver "
        "(libcuda.so.1 cannot be loaded), so nothing runs on a GPU here; traces made "
        "elsewhere read here: tbexport summary FILE, tbexport import FILE --logdir DIR");
    return;
  }
  dlclose(cuda);
  say(o, TBE_MSG_NOTE,
      "note: no CUDA activity was recorded (the program never initialized CUDA): no run "
      "written");
}

/* The end of a conversion that writes nothing (above): says why, frees
 * the (empty) spool listing, removes the spool folder when empty, and
 * gives the session's span as its result.  Returns 0. */
static int nothing_recorded(const tbe_session_options *o, const char *notes, char **names,
                            ops_notes *on, tbe_session_result *result) {
  say_nothing_recorded(o, notes);
  free(names);
  free(on);
  if (o->spool_dir && !o->keep) rmdir(o->spool_dir); /* only if empty */
  tbe_session_result res;
  memset(&res, 0, sizeof res);
  res.total.start_ns = o->start_ns;
  res.total.stop_ns = o->stop_ns;
  if (result) *result = res;
  return 0;
}

/* Writes trace `t` as host `host` of the session's run (`eo_run`: the
 * caller's export options with the session's one run name); a failure is
 * said in one line naming the path.  Returns 0 or the export's code. */
static int export_host(const tbe_session_options *o, const tbe_export_options *eo_run,
                       const tbe_trace *t, const char *host) {
  tbe_export_options eo = *eo_run;
  eo.host = host;
  char where[4200], line[4400];
  eo.error_path = where;
  eo.error_path_size = sizeof where;
  int r = tbe_export_run(t, &eo);
  if (r)
    say(o, TBE_MSG_ERROR, "cannot write run '%s' for host %s%s%s: %s%s", eo.run, host,
        where[0] ? "" : " in ", where[0] ? "" : eo.logdir,
        tbe_export_strerror(r, where, line, sizeof line),
        r == TBE_EEXIST ? " (use --force to replace it)" : "");
  return r;
}

/* PM samples the program left raw (TBEXPORT_PM_EVAL=deferred) evaluated
 * into the spool (collect/pmeval.c), before it is read: a failure to
 * evaluate is the spool's metric status (the trace's one line); one to
 * read or append to the spool is said here. */
static void eval_raw_pm(const tbe_session_options *o, const char *path) {
#ifdef TBE_HAVE_CUPTI
  char why[300];
  if (tbe__pm_eval_spool(path, NULL, why, sizeof why) != 0) say(o, TBE_MSG_WARNING, "%s", why);
#else
  (void)o;
  (void)path;
#endif
}

static int convert(const tbe_session_options *o, tbe_session_result *result) {
  tbe_session_result res;
  memset(&res, 0, sizeof res);
  if (result) *result = res;
  if (!o || !o->export_options) return TBE_EINVAL;
  const tbe_export_options *eo0 = o->export_options;
  tbe_profiler_result *tot = &res.total;
  char **names = NULL, notes[1024] = "";
  size_t nn = 0;
  ops_notes *on = calloc(1, sizeof *on);
  if (!on) return TBE_ENOMEM;
  int rc = list_spools(o, &names, &nn, notes, sizeof notes, on);
  if (!on->any_ok && on->any_no_torch && !on->n)
    say(o, TBE_MSG_NOTE, "note: no operators: no Python process of the program imported torch");
  if (nn > 0 && notes[0]) say(o, TBE_MSG_WARNING, "some processes did not collect: %s", notes);
  if (!rc && nn == 0 && o->no_empty_run) return nothing_recorded(o, notes, names, on, result);
  char base_host[TBE_NAME_MAX + 1];
  if (eo0->host)
    snprintf(base_host, sizeof base_host, "%s", eo0->host);
  else
    tbe__hostname(base_host, sizeof base_host);

  /* GPU busy over all processes: sum the per-process busy time weighted
   * by span (an approximation when processes overlap). */
  double busy_ns = 0;
  size_t done = 0;
  /* One run name for the whole session: without a run each export would
   * pick its own (time-stamped) default, splitting the processes. */
  char run_buf[TBE_NAME_MAX + 1];
  tbe_export_options eo_run = *eo0;
  if (!eo_run.run) {
    int r = tbe_run_name_default(run_buf, sizeof run_buf);
    if (r && !rc) rc = r;
    eo_run.run = run_buf;
  }
  /* A spool that fails to convert does not stop the others: rc keeps the
   * first error. */
  /* The host entry of each spool follows its rank (the spool's, else the
   * session's), so the ranks are read first. */
  const tbe_session_launcher *sl = o->launcher;
  int32_t own_rank = sl && sl->rank >= 0 ? sl->rank : -1;
  int64_t *pids = nn ? calloc(nn, sizeof *pids) : NULL;
  int32_t *ranks = nn ? calloc(nn, sizeof *ranks) : NULL;
  if (nn && (!pids || !ranks) && !rc) rc = TBE_ENOMEM;
  for (size_t i = 0; ranks && i < nn; i++)
    if (!tbe__spool_file_rank(names[i], &ranks[i])) ranks[i] = own_rank;
  int listed = rc == 0;
  if (!listed) say(o, TBE_MSG_ERROR, "cannot list the spools: %s", tbe_strerror(rc));
  size_t busy = 0;
  tbe__convert_opts co = {.capture = o->capture, .capture_name = o->capture_name,
                          .capture_domain = o->capture_domain, .steps_name = o->steps_name,
                          .steps_domain = o->steps_domain};
  co.pymem_dir = o->spool_dir; /* the Python hook's <pid>.pymem files */
  for (size_t i = 0; listed && i <= nn; i++) {
    if (i == nn && nn > 0) break;
    if (nn > 0 && spool_in_use(names[i])) {
      /* A process that outlived the program (a daemon, a straggler). */
      say(o, TBE_MSG_WARNING,
          "%s is still being written by a running process: left as it is; convert it later "
          "with: tbexport import %s --logdir DIR --run NAME",
          names[i], names[i]);
      busy++;
      continue;
    }
    tbe_trace *t = NULL;
    int r = tbe_trace_create(&t, eo0->allocator);
    if (r) {
      say(o, TBE_MSG_ERROR, "cannot convert the spools: %s", tbe_strerror(r));
      rc = r;
      break;
    }
    tbe__convert_info info;
    memset(&info, 0, sizeof info);
    int skip = 0;
    char host[TBE_NAME_MAX + 1];
    if (nn == 0) {
      r = no_cuda_trace(o, t, host, sizeof host, base_host, own_rank, notes, tot);
    } else {
      co.has_rank = ranks[i] >= 0;
      co.rank = ranks[i];
      co.world_size = sl && sl->world_size > ranks[i] ? sl->world_size : 0;
      eval_raw_pm(o, names[i]);
      char fdir[4200]; /* the folder of a spool given by name: its <pid>.pymem */
      if (!o->spool_dir) {
        const char *slash = strrchr(names[i], '/');
        snprintf(fdir, sizeof fdir, "%.*s",
                 slash ? (int)(slash - names[i]) + (slash == names[i]) : 1, slash ? names[i] : ".");
        co.pymem_dir = fdir;
      }
      r = tbe__spool_file_to_trace(names[i], &co, t, &info);
      if (r && info.tail_why)
        say(o, TBE_MSG_ERROR, "%s: byte %zu: %s", names[i], info.tail_offset, info.tail_why);
      else if (r) {
        say(o, TBE_MSG_ERROR, "%s: cannot convert: %s", names[i], tbe_strerror(r));
      } else {
        pids[i] = info.pid;
        for (size_t k = 0; k < on->n; k++)
          if (on->pid[k] == info.pid) {
            tbe_trace_warn(t, "operators are not recorded: %s", on->text[k]);
            on->used[k] = 1;
          }
        spool_host(host, sizeof host, base_host, ranks, pids, nn, i);
        if (unranked_idle(ranks, nn, i, &info.r)) {
          /* A launcher's own process (torchrun's agent) beside its ranks:
           * written as a host it would be one more trace without a rank,
           * which HTA reads as a second rank 0. */
          say(o, TBE_MSG_NOTE,
              "note: pid %lld has no launcher rank and ran no GPU work beside the ranks of this "
              "run (a launcher's own process): not written as a host of the run",
              (long long)info.pid);
          skip = 1;
        }
        for (size_t w = 0; w < t->nwarnings; w++)
          say(o, TBE_MSG_WARNING, "pid %lld: %s", (long long)info.pid,
              tbe_trace_str(t, t->warnings[w]));
        sum(tot, &info.r);
        res.collector_cpu_ns += info.decode_cpu_ns;
        res.buffer_bytes += info.buffer_bytes;
        res.spool_bytes += info.spool_bytes;
        busy_ns += info.r.gpu_busy_pct / 100.0 * (double)(info.r.stop_ns - info.r.start_ns);
      }
    }
    if (!r && !skip) r = export_host(o, &eo_run, t, host);
    tbe_trace_free(t);
    if (r) {
      if (!rc) rc = r;
      continue;
    }
    done++;
    if (nn > 0 && !o->keep) unlink(names[i]);
    if (nn > 0 && !o->keep && o->spool_dir && pids[i] > 0) {
      char pm[4200];
      snprintf(pm, sizeof pm, "%s/%lld.pymem", o->spool_dir, (long long)pids[i]);
      unlink(pm);
    }
  }
  for (size_t i = 0; i < nn; i++) free(names[i]);
  free(names);
  free(pids);
  free(ranks);
  for (size_t k = 0; k < on->n; k++)
    if (!on->used[k])
      say(o, TBE_MSG_WARNING, "pid %lld: operators are not recorded: %s", (long long)on->pid[k],
          on->text[k]);
  free(on);
  if (o->spool_dir && !o->keep) drop_orphan_pymem(o->spool_dir);
  if (o->spool_dir && !o->keep) rmdir(o->spool_dir); /* only if empty */
  if (rc && nn > 0 && !o->keep && done + busy < nn)
    say(o, TBE_MSG_WARNING,
        "%zu of %zu spool files were not converted and are kept in %s; convert them later "
        "with: tbexport import FILE.spool... --logdir DIR --run NAME",
        nn - done - busy, nn, o->spool_dir ? o->spool_dir : ".");
  if (tot->stop_ns > tot->start_ns)
    tot->gpu_busy_pct = 100.0 * busy_ns / (double)(tot->stop_ns - tot->start_ns);
  if (tot->gpu_busy_pct > 100) tot->gpu_busy_pct = 100;
  res.processes = nn;
  if (result) *result = res;
  return rc;
}

/* The caller's options and its export options, completed to this version
 * (their sizes, tbexport/common.h): convert copies the export options
 * whole.  A size refused leaves NULL, which convert refuses. */
int tbe_session_convert(const tbe_session_options *o, tbe_session_result *result) {
  tbe_session_options oc;
  tbe_export_options eoc;
  if (o && (o = TBE__OPTIONS_TAKE(tbe_session_options, &oc, o)) && oc.export_options)
    oc.export_options = TBE__OPTIONS_TAKE(tbe_export_options, &eoc, oc.export_options);
  return convert(o, result);
}
