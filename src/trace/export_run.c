/* export_run.c: writing a finished trace as a TensorBoard run
 * (include/tbexport/export.h).
 *
 * tbe_export_run validates the run and host names (tbe_name_check), applies
 * the defaults (run: local time YYYY_MM_DD_HH_MM_SS as XLA's saver names
 * profile runs; host: the trace's host made safe, else this machine's),
 * creates <logdir>/plugins/profile/<run>/ and <logdir>/<run>/ as needed
 * (never through a symlink planted at plugins, profile or the run: -ELOOP),
 * refuses to start when a target file exists (unless forced), and walks the
 * exporter table (src/trace/exporter.h).  Each output writes its files
 * atomically; when one fails, the files the earlier ones wrote in this call
 * are removed, so a run is written completely or not at all.
 *
 * Invariant: names found inside a trace reach the file system only after
 * the same validation as user-given names. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/fsutil.h"
#include "tbexport/error.h"
#include "tbexport/export.h"
#include "trace/exporter.h"

/* Whether one of T's warnings contains NEEDLE. */
static int mentions(const tbe_trace *t, const char *needle) {
  for (size_t i = 0; i < t->nwarnings; i++) {
    const char *w = tbe_trace_str(t, t->warnings[i]);
    if (w && strstr(w, needle)) return 1;
  }
  return 0;
}

void tbe__status_lines(const tbe_trace *t, int with_overhead,
                       void (*emit)(void *ctx, const char *line, size_t len), void *ctx) {
  char msg[200];
  int n;
  if (t->dropped_records && !mentions(t, "were dropped")) {
    n = snprintf(msg, sizeof msg, "%llu records were dropped while collecting",
                 (unsigned long long)t->dropped_records);
    emit(ctx, msg, (size_t)n);
  }
  if (t->dropped_out_of_range && !mentions(t, "zero or inverted timestamps")) {
    n = snprintf(msg, sizeof msg, "%llu records had zero or inverted timestamps and were dropped",
                 (unsigned long long)t->dropped_out_of_range);
    emit(ctx, msg, (size_t)n);
  }
  if (with_overhead && t->source == TBE_SRC_CUPTI && t->overhead_ns) {
    n = snprintf(msg, sizeof msg,
                 "CUPTI's own overhead: %.3f ms (its records are events on the host timeline)",
                 (double)t->overhead_ns / 1e6);
    emit(ctx, msg, (size_t)n);
  }
  if (t->ended_early && !mentions(t, "ended early")) emit(ctx, "the capture ended early", 23);
}

static const char *const SOURCE_NAMES[] = {"unknown", "cupti", "kineto", "chrome", "xspace", "nsys"};
#define NSOURCES (sizeof SOURCE_NAMES / sizeof SOURCE_NAMES[0])

const char *tbe__source_name(uint32_t source) {
  return source < NSOURCES ? SOURCE_NAMES[source] : SOURCE_NAMES[0];
}

uint32_t tbe__source_of(const char *name, size_t len) {
  for (uint32_t i = 0; i < NSOURCES; i++)
    if (strlen(SOURCE_NAMES[i]) == len && memcmp(SOURCE_NAMES[i], name, len) == 0) return i;
  return TBE_SRC_UNKNOWN;
}

/* tbe__status_prefix's EMIT: compares each line with the next expected one. */
typedef struct prefix_check {
  const tbe_trace *t;
  const tbe_str *lines;
  size_t k, at;
  int ok;
} prefix_check;

static void check_line(void *ctx, const char *line, size_t len) {
  prefix_check *p = ctx;
  if (!p->ok) return;
  if (p->at >= p->k || tbe_trace_strlen(p->t, p->lines[p->at]) != len ||
      memcmp(tbe_trace_str(p->t, p->lines[p->at]), line, len) != 0)
    p->ok = 0;
  p->at++;
}

size_t tbe__status_prefix(const tbe_trace *t, int with_overhead, const tbe_str *lines, size_t n) {
  for (size_t k = n < 4 ? n : 4; k > 0; k--) {
    tbe_trace tmp = *t; /* the counters of t, the warnings lines[k..n) */
    tmp.warnings = (tbe_str *)(uintptr_t)(lines + k);
    tmp.nwarnings = n - k;
    prefix_check p = {t, lines, k, 0, 1};
    tbe__status_lines(&tmp, with_overhead, check_line, &p);
    if (p.ok && p.at == k) return k;
  }
  return 0;
}

static const tbe__exporter *const EXPORTERS[] = {&tbe__exporter_xplane, &tbe__exporter_json,
                                                 &tbe__exporter_events};
#define NEXPORTERS (sizeof EXPORTERS / sizeof EXPORTERS[0])

void tbe_export_options_init(tbe_export_options *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->outputs = TBE_OUT_ALL;
}

int tbe_name_check(const char *name, const char **why) { return tbe__name_check(name, why); }

int tbe_run_name_default(char *buf, size_t size) {
  if (!buf || size < 20) return TBE_EINVAL;
  time_t now = time(NULL);
  struct tm tm;
  if (!localtime_r(&now, &tm)) return TBE_EINVAL;
  if (strftime(buf, size, "%Y_%m_%d_%H_%M_%S", &tm) == 0) return TBE_EINVAL;
  return 0;
}

/* The trace's host name as a file-name component: ':' (as XLA's saver
 * does), '/' and control characters become '_', a leading dot too; cut at
 * TBE_NAME_MAX bytes on a character boundary.  Returns 0 if the result is
 * a valid name. */
static int safe_host(const char *src, char *buf, size_t size) {
  size_t n = strlen(src);
  if (n == 0 || size < 2) return TBE_ENAME;
  if (n > TBE_NAME_MAX) n = TBE_NAME_MAX;
  if (n > size - 1) n = size - 1;
  while (n > 0 && ((unsigned char)src[n] & 0xC0) == 0x80) n--; /* keep whole characters */
  memcpy(buf, src, n);
  buf[n] = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)buf[i];
    if (c == ':' || c == '/' || c < 0x20 || c == 0x7F) buf[i] = '_';
  }
  if (buf[0] == '.') buf[0] = '_';
  return tbe__name_check(buf, NULL);
}

int tbe_export_resolve(const tbe_trace *t, const tbe_export_options *o, char *run, size_t run_size,
                       char *host, size_t host_size) {
  if (!t || !o) return TBE_EINVAL;
  if (run) {
    if (run_size <= TBE_NAME_MAX) return TBE_EINVAL;
    if (o->run) {
      int rc = tbe__name_check(o->run, NULL);
      if (rc) return rc;
      snprintf(run, run_size, "%s", o->run);
    } else {
      int rc = tbe_run_name_default(run, run_size);
      if (rc) return rc;
    }
  }
  if (host) {
    if (host_size <= TBE_NAME_MAX) return TBE_EINVAL;
    if (o->host) {
      int rc = tbe__name_check(o->host, NULL);
      if (rc) return rc;
      snprintf(host, host_size, "%s", o->host);
    } else if (!t->host || safe_host(tbe_trace_str(t, t->host), host, host_size) != 0) {
      tbe__hostname(host, host_size);
      if (strlen(host) > TBE_NAME_MAX) host[TBE_NAME_MAX] = 0;
      if (tbe__name_check(host, NULL)) snprintf(host, host_size, "localhost");
    }
  }
  return 0;
}

/* The file names an output creates under plugins/profile/<run>/ (the
 * events output names its files uniquely, so it never conflicts). */
static const char *profile_suffix(unsigned bit) {
  if (bit == TBE_OUT_XPLANE) return ".xplane.pb";
  if (bit == TBE_OUT_JSON) return ".trace.json.gz";
  return NULL;
}

static int conflict(const char *logdir, const char *run, const char *host, unsigned outputs,
                    char *buf, size_t size) {
  for (size_t i = 0; i < NEXPORTERS; i++) {
    unsigned bit = EXPORTERS[i]->bit;
    const char *suffix = profile_suffix(bit);
    if (!(outputs & bit) || !suffix) continue;
    char path[4096];
    int n = snprintf(path, sizeof path, "%s/plugins/profile/%s/%s%s", logdir, run, host, suffix);
    if (n < 0 || (size_t)n >= sizeof path) return -ENAMETOOLONG;
    struct stat st;
    if (lstat(path, &st) == 0) {
      if (buf && size) snprintf(buf, size, "%s", path);
      return 1;
    }
    if (errno != ENOENT && errno != ENOTDIR) return -errno;
  }
  return 0;
}

int tbe_export_conflict(const tbe_trace *t, const tbe_export_options *o, char *buf, size_t size) {
  if (!t || !o || !o->logdir || !*o->logdir) return TBE_EINVAL;
  char run[TBE_NAME_MAX + 1], host[TBE_NAME_MAX + 1];
  int rc = tbe_export_resolve(t, o, run, sizeof run, host, sizeof host);
  if (rc) return rc;
  return conflict(o->logdir, run, host, o->outputs ? o->outputs : TBE_OUT_ALL, buf, size);
}

/* Paths written by this call, kept until every output succeeded. */
typedef struct written {
  char **paths;
  size_t n, cap;
  int err;
  const tbe_allocator *a;
} written;

/* A file that cannot be recorded (out of memory) is removed at once: it
 * could not be removed later when another output fails. */
static void record_file(void *ctx, const char *path) {
  written *w = ctx;
  if (w->err) {
    unlink(path);
    return;
  }
  if (tbe__grow(w->a, (void **)&w->paths, &w->cap, w->n + 1, sizeof *w->paths)) {
    w->err = TBE_ENOMEM;
    unlink(path);
    return;
  }
  w->paths[w->n] = tbe__strdup(w->a, path);
  if (!w->paths[w->n]) {
    w->err = TBE_ENOMEM;
    unlink(path);
    return;
  }
  w->n++;
}

typedef struct prog {
  const tbe_export_options *o;
  uint64_t base, total;
} prog;

static void forward_progress(void *ctx, uint64_t done, uint64_t total) {
  prog *p = ctx;
  (void)total;
  p->o->progress(p->o->progress_ctx, p->base + done, p->total);
}

int tbe_export_run(const tbe_trace *t, const tbe_export_options *o) {
  if (!t || !o || !o->logdir || !*o->logdir) return TBE_EINVAL;
  unsigned outputs = o->outputs ? o->outputs : TBE_OUT_ALL;
  if (outputs & ~TBE_OUT_ALL) return TBE_EINVAL;
  char run[TBE_NAME_MAX + 1], host[TBE_NAME_MAX + 1];
  int rc = tbe_export_resolve(t, o, run, sizeof run, host, sizeof host);
  if (rc) return rc;

  tbe_allocator a;
  tbe__allocator_init(&a, o->allocator);
  /* The directories below logdir are ours: never written through a
   * symlink planted in their place (-ELOOP). */
  char rel[TBE_NAME_MAX + 32];
  if (outputs & (TBE_OUT_XPLANE | TBE_OUT_JSON)) {
    snprintf(rel, sizeof rel, "plugins/profile/%s", run);
    rc = tbe__mkdir_under(o->logdir, rel, 0755);
  }
  if (!rc && (outputs & TBE_OUT_EVENTS)) rc = tbe__mkdir_under(o->logdir, run, 0755);
  if (rc) return rc;
  if (!o->force) {
    rc = conflict(o->logdir, run, host, outputs, NULL, 0);
    if (rc == 1) return TBE_EEXIST;
    if (rc) return rc;
  }

  written w = {NULL, 0, 0, 0, &a};
  prog pr = {o, 0, 0};
  for (size_t i = 0; i < NEXPORTERS; i++)
    if ((outputs & EXPORTERS[i]->bit) && EXPORTERS[i]->bit != TBE_OUT_EVENTS)
      pr.total += t->nevents;
  tbe__export_ctx x;
  memset(&x, 0, sizeof x);
  x.trace = t;
  x.logdir = o->logdir;
  x.run = run;
  x.host = host;
  x.force = o->force;
  x.durable = o->durable;
  x.a = &a;
  x.on_file = record_file;
  x.on_file_ctx = &w;
  x.progress = o->progress ? forward_progress : NULL;
  x.progress_ctx = &pr;
  for (size_t i = 0; i < NEXPORTERS && !rc; i++) {
    if (!(outputs & EXPORTERS[i]->bit)) continue;
    rc = EXPORTERS[i]->write(&x);
    if (!rc) rc = w.err;
    if (EXPORTERS[i]->bit != TBE_OUT_EVENTS) pr.base += t->nevents;
  }
  for (size_t i = 0; i < w.n; i++) {
    if (rc) unlink(w.paths[i]);
    else if (o->on_file) o->on_file(o->ctx, w.paths[i]);
    tbe__free(&a, w.paths[i]);
  }
  tbe__free(&a, w.paths);
  return rc;
}
