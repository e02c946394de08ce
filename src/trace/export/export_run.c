/* export_run.c: writing a finished trace as a TensorBoard run
 * (include/tbexport/export.h): the one place that stages, commits and
 * renames an export's files, in the places the run room names.
 *
 * tbe_export_run refuses a trace tbe_trace_finish has not finished
 * (TBE_ESTATE: the outputs read its order and links), validates the run
 * and host names (tbe_name_check), applies the defaults (run: local time
 * YYYY_MM_DD_HH_MM_SS as XLA's saver names profile runs; host: the
 * trace's host made safe, else this machine's), then, holding the run
 * lock (tbe__run_lock):
 *   1. stages one file per requested output (common/fsutil.h, tbe__stage):
 *      the folders <logdir>/plugins/profile/<run>/ and <logdir>/<run>/ are
 *      opened under the symlink rule (made as needed; the temporary files
 *      of dead writers there are removed), an existing output is a
 *      conflict unless forced (before anything is written), and with force
 *      every earlier output of the host that this export does not write
 *      again (another format, its summary and HParams events, the PyTorch
 *      link, the analysis) is staged for removal: a forced export replaces
 *      all of a host's outputs or none;
 *   2. walks the exporter table (src/trace/exporter.h), each output writing
 *      its bytes into a sink over its staged file, progress added up over
 *      the outputs;
 *   3. commits: all new files in place and the replaced ones gone, or (on
 *      any failure: a full disk, an I/O error, a crash before the commit)
 *      the run exactly as it was.
 * With the events output, where the host's summary and session go in
 * TensorBoard is decided first (tbview_plan: a run's own folder for a
 * lone host without a rank, else a folder per host, ranks in rank order);
 * a lone host's files are moved when a second joins (stage_moves) and,
 * after the host's analysis, the job's file is rewritten from every
 * host's (job_stage), all in the same commit.
 * The same rules place the single-file outputs (tbe_export_chrome_json,
 * tbe_export_xplane: one atomic file).  Where each file goes, the names
 * of our event files, the run lock and the listing of a run's hosts are
 * the run room's (src/trace/run/: run_layout.h gives the layout); this
 * file decides which of them an export writes, replaces or moves.
 *
 * Invariants: names found inside a trace reach the file system only after
 * the same validation as user-given names; no file of a run is under its
 * final name before every file of that export is complete; no output
 * learns where its bytes go. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/fsutil.h"
#include "common/intern.h"
#include "common/optsize.h"
#include "tbexport/analysis.h"
#include "tbexport/error.h"
#include "tbexport/export.h"
#include "trace/analysis/analysis_store.h"
#include "trace/export/export_events.h"
#include "trace/exporter.h"
#include "trace/model/model_int.h"
#include "trace/model/vocab.h"
#include "trace/run/run_layout.h"
#include "trace/run/run_scan.h"
#include "trace/run/run_stage.h"

/* snprintf that cuts silently (paths and names checked by the caller). */
static void cut(char *buf, size_t size, const char *f, ...) __attribute__((format(printf, 3, 4)));
static void cut(char *buf, size_t size, const char *f, ...) {
  va_list ap;
  va_start(ap, f);
  vsnprintf(buf, size, f, ap);
  va_end(ap);
}

static const tbe__exporter *const EXPORTERS[] = {&tbe__exporter_xplane, &tbe__exporter_json,
                                                 &tbe__exporter_events, &tbe__exporter_hparams};
#define NEXPORTERS (sizeof EXPORTERS / sizeof EXPORTERS[0])

static void export_defaults(tbe_export_options *o) {
  memset(o, 0, sizeof *o);
  o->outputs = TBE_OUT_ALL;
}
TBE__OPTIONS_INIT_SIZED(tbe_export_options, export_defaults)

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
  tbe_export_options oc; /* the caller's, completed to this version (its size) */
  if (!t || !o || !(o = TBE__OPTIONS_TAKE(tbe_export_options, &oc, o))) return TBE_EINVAL;
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

/* ---- the layout ----
 * Where each output goes is the run room's (run/run_layout.h): the
 * profile plugin's outputs are <logdir>/plugins/profile/<run>/<host><suffix>,
 * the summary events <logdir>/<run>/events.out.tfevents.*. */

/* The run room's file of output `bit` in the profile folder (NULL: the
 * events outputs, in the host's TensorBoard run). */
static const char *profile_suffix(unsigned bit) {
  if (bit == TBE_OUT_XPLANE) return tbe__run_suffix(TBE__RUN_XSPACE);
  if (bit == TBE_OUT_JSON) return tbe__run_suffix(TBE__RUN_JSON);
  return NULL;
}

/* The folder of the profile plugin's outputs of `run` (a valid name),
 * relative to the log dir. */
static void profile_dir(char *buf, size_t size, const char *run) {
  tbe__run_profile_dir(buf, size, NULL, run);
}

/* ---- a run's hosts in TensorBoard ----
 * TensorBoard merges every event file of one folder into one run, so two
 * hosts' summaries in one folder shadow each other (it shows one host's
 * values per step).  So a run of one host without a rank keeps
 * <run>/ as its TensorBoard run, and a multi-host run (a host with a rank,
 * or several hosts: a trace file, an analysis or our events of another
 * host in the run) gives each host a folder of its own, <run>/<folder>/
 * (host_folder: ranks first and zero-padded to the world size's width, so
 * that TensorBoard's string order is rank order), holding its summary and
 * HParams session, and keeps <run>/ for the job as a whole (job_stage).
 * A lone host's files already at <run>/ move into its folder when a second
 * host joins (stage_moves: copied into place and removed in the same
 * commit), as do the summaries of runs written before this layout. */

/* The rank the run's layout reads from a trace: the analysis's rule (a
 * rank that means something: world size above 1 or rank above 0), else
 * -1. */
static int32_t trace_rank(const tbe_trace *t) {
  return t->rank >= 0 && (t->world_size > 1 || t->rank > 0) ? t->rank : -1;
}

/* Another host of the run. */
typedef struct other_host {
  const char *name; /* interned in tbview.names */
  tbe_analysis *an; /* its current persisted analysis, or NULL */
  int top;          /* its summary or session sits at <run>/ */
} other_host;

/* What an export of the events output does to the run's TensorBoard
 * layout. */
typedef struct tbview {
  int multi;                        /* per-host folders */
  char hrel[2 * TBE_NAME_MAX + 40]; /* this host's TensorBoard run: <run> or <run>/<folder> */
  int mine_top;                     /* this host's summary or session sits at <run>/ */
  tbe__intern names;                /* the other hosts' names */
  other_host *others;
  size_t nothers, cap;
} tbview;

static void tbview_free(tbview *v, const tbe_allocator *a) {
  for (size_t i = 0; i < v->nothers; i++) tbe_analysis_free(v->others[i].an);
  tbe__free(a, v->others);
  tbe__intern_deinit(&v->names);
}

/* Adds host `h` (not this export's) to v->names; *top |= at_top. */
static int note_host(tbview *v, const tbe_allocator *a, const char *h, int at_top) {
  uint32_t id;
  int added = 0;
  int rc = tbe__intern_add(&v->names, h, strlen(h), &id, &added);
  if (rc < 0) return rc;
  if (added) {
    if (tbe__grow(a, (void **)&v->others, &v->cap, v->nothers + 1, sizeof *v->others))
      return TBE_ENOMEM;
    memset(&v->others[v->nothers], 0, sizeof v->others[0]);
    v->others[v->nothers].name = tbe__intern_str(&v->names, id);
    v->nothers++;
  }
  if (at_top) v->others[id].top = 1;
  return 0;
}

/* Reads the run's hosts (plugins/profile/<run>/ and <run>/), decides the
 * layout and this host's folder, and loads the other hosts' current
 * analyses when the run is a multi-host one.  `rank`, `world`: this
 * host's. */
static int tbview_plan(tbview *v, const char *logdir, const char *run, const char *host,
                       int32_t rank, int32_t world, const tbe_allocator *a, char *where,
                       size_t wsize) {
  memset(v, 0, sizeof *v);
  tbe__intern_init(&v->names, a, TBE__SEED_PROCESS);
  char prel[TBE_NAME_MAX + 32], h[TBE_NAME_MAX + 1];
  profile_dir(prel, sizeof prel, run);
  int rc;
  struct dirent *de;
  /* The profile folder only as far as it reads: an export that writes
   * there meets any refusal (a symlink, not a directory) when it does. */
  DIR *d = tbe__run_listing(logdir, prel, &rc, NULL, 0);
  rc = 0;
  while (!rc && d && (de = readdir(d)) != NULL)
    if (tbe__run_profile_host(de->d_name, h, sizeof h) && strcmp(h, host) != 0)
      rc = note_host(v, a, h, 0);
  if (d) closedir(d);
  int subdirs = 0;
  if (!rc && (d = tbe__run_listing(logdir, run, &rc, where, wsize)) != NULL) {
    while (!rc && (de = readdir(d)) != NULL) {
      int top = tbe__events_who(de->d_name, TBE__SUMMARY_MARK, h, sizeof h) ||
                tbe__events_who(de->d_name, TBE__HPARAMS_MARK, h, sizeof h);
      if (top && strcmp(h, host) == 0)
        v->mine_top = 1;
      else if (top)
        rc = note_host(v, a, h, 1);
      else if (de->d_name[0] != '.' && strcmp(de->d_name, TBE__HPARAMS_RUN) != 0 &&
               tbe__run_entry_is_dir(d, de))
        subdirs = 1;
    }
    closedir(d);
  }
  if (rc) return rc;
  v->multi = rank >= 0 || v->nothers > 0;
  if (!v->multi && subdirs) {
    /* a host's folder of this layout without a trace of that host (an
     * export of the events alone): look inside */
    if ((d = tbe__run_listing(logdir, run, &rc, NULL, 0)) != NULL) {
      char rel[2 * TBE_NAME_MAX + 8];
      while (!v->multi && (de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.' || strcmp(de->d_name, TBE__HPARAMS_RUN) == 0) continue;
        cut(rel, sizeof rel, "%s/%s", run, de->d_name);
        v->multi = tbe__run_holds_summary(logdir, rel);
      }
      closedir(d);
    }
  }
  if (!v->multi) {
    snprintf(v->hrel, sizeof v->hrel, "%s", run);
    return 0;
  }
  char f[TBE_NAME_MAX + 1];
  tbe__run_host_folder(host, rank, world, f, sizeof f);
  snprintf(v->hrel, sizeof v->hrel, "%s/%s", run, f);
  /* The other hosts' analyses: the job's figures and their folders. */
  for (size_t i = 0; i < v->nothers; i++) {
    char rel[2 * TBE_NAME_MAX + 64];
    snprintf(rel, sizeof rel, "%s/%s%s", prel, v->others[i].name, TBE_ANALYSIS_SUFFIX);
    tbe_analysis_stamp stamp;
    tbe_analysis *an = NULL;
    if (tbe_analysis_read(&an, &stamp, logdir, rel, a, NULL) == 0 &&
        stamp.analysis_version == tbe_analysis_version())
      v->others[i].an = an;
    else
      tbe_analysis_free(an);
  }
  return 0;
}

/* The folder of another host. */
static void other_folder(const other_host *oh, char *buf, size_t size) {
  tbe__run_host_folder(oh->name, oh->an ? oh->an->rank : -1, oh->an ? oh->an->world_size : 0, buf,
                       size);
}

/* Stages the move of every summary and session file of other hosts at
 * <run>/ into their folders: the same name and bytes there, removed
 * here, in the same commit. */
static int stage_moves(tbe__stage *s, const char *logdir, const char *run, const tbview *v,
                       const tbe_allocator *a) {
  int rc = 0, any = 0;
  for (size_t i = 0; i < v->nothers; i++) any |= v->others[i].top;
  if (!any) return 0;
  DIR *d = tbe__run_listing(logdir, run, &rc, NULL, 0);
  if (!d) return rc;
  struct dirent *de;
  char h[TBE_NAME_MAX + 1], f[TBE_NAME_MAX + 1], to[2 * TBE_NAME_MAX + 8];
  while (!rc && (de = readdir(d)) != NULL) {
    if (!tbe__events_who(de->d_name, TBE__SUMMARY_MARK, h, sizeof h) &&
        !tbe__events_who(de->d_name, TBE__HPARAMS_MARK, h, sizeof h))
      continue;
    const other_host *oh = NULL;
    for (size_t i = 0; i < v->nothers && !oh; i++)
      if (strcmp(v->others[i].name, h) == 0) oh = &v->others[i];
    if (!oh) continue; /* this host's own: replaced or refused by stage_outputs */
    other_folder(oh, f, sizeof f);
    cut(to, sizeof to, "%s/%s", run, f);
    char rel[2 * TBE_NAME_MAX + 320];
    cut(rel, sizeof rel, "%s/%s", run, de->d_name);
    void *buf = NULL;
    size_t len = 0;
    int fd = -1;
    rc = tbe__read_file(a, logdir, rel, (uint64_t)1 << 32, &buf, &len, NULL, s->where,
                        sizeof s->where);
    if (!rc) rc = tbe__stage_file(s, to, de->d_name, &fd);
    if (!rc && (rc = tbe__write_all(fd, buf, len)) != 0)
      snprintf(s->where, sizeof s->where, "%s/%s/%s", logdir, to, de->d_name);
    if (!rc) rc = tbe__stage_remove(s, run, de->d_name);
    tbe__free(a, buf);
  }
  closedir(d);
  return rc;
}

/* With force: stages the removal of this host's summaries and sessions
 * wherever an earlier export put them (<run>/, the old <run>/hparams/
 * <host>/, any folder of <run>/), but in `keep` (the folder whose earlier
 * files tbe__stage_events replaces itself; NULL: none).  <run>/ and the
 * old sub-run are ours: a symlink there is refused (-ELOOP, s->where
 * names it); any other entry of <run>/ that is no directory (a symlink
 * too) is not, and is left alone.  A folder is opened only while it is
 * read, and staged only when something goes. */
static int remove_host_events(tbe__stage *s, const char *logdir, const char *run, const char *host,
                              const char *keep) {
  static const char *const marks[] = {TBE__SUMMARY_MARK, TBE__HPARAMS_MARK};
  char rel[3 * TBE_NAME_MAX + 64], who[TBE_NAME_MAX + 1];
  int rc = 0;
  DIR *top = tbe__run_listing(logdir, run, &rc, s->where, sizeof s->where);
  if (!top) return rc;
  struct dirent *sub = NULL;
  for (int pass = 0; !rc; pass++) {
    if (pass == 0) {
      cut(rel, sizeof rel, "%s", run);
    } else if (pass == 1) {
      cut(rel, sizeof rel, "%s/%s/%s", run, TBE__HPARAMS_RUN, host);
    } else if ((sub = readdir(top)) != NULL) {
      if (sub->d_name[0] == '.' || strcmp(sub->d_name, TBE__HPARAMS_RUN) == 0 ||
          !tbe__run_entry_is_dir(top, sub))
        continue;
      cut(rel, sizeof rel, "%s/%s", run, sub->d_name);
    } else {
      break;
    }
    if (keep && strcmp(rel, keep) == 0) continue;
    DIR *d = tbe__run_listing(logdir, rel, &rc, s->where, sizeof s->where);
    if (!d) continue;
    struct dirent *de;
    while (!rc && (de = readdir(d)) != NULL)
      for (size_t m = 0; m < 2 && !rc; m++)
        if (tbe__events_who(de->d_name, marks[m], who, sizeof who) && strcmp(who, host) == 0)
          rc = tbe__stage_remove(s, rel, de->d_name);
    closedir(d);
  }
  closedir(top);
  if (!rc) s->where[0] = 0;
  return rc;
}

/* Whether logdir/rel holds this host's file of `mark`: 1, 0 or a
 * negative code (s->where names it). */
static int host_has(tbe__stage *s, const char *logdir, const char *rel, const char *host,
                    const char *mark) {
  int rc;
  DIR *d = tbe__run_listing(logdir, rel, &rc, s->where, sizeof s->where);
  if (!d) return rc;
  struct dirent *de;
  char who[TBE_NAME_MAX + 1];
  int hit = 0;
  while (!hit && (de = readdir(d)) != NULL)
    if (tbe__events_who(de->d_name, mark, who, sizeof who) && strcmp(who, host) == 0) {
      hit = 1;
      snprintf(s->where, sizeof s->where, "%s/%s/%s", logdir, rel, de->d_name);
    }
  closedir(d);
  return hit;
}

/* Stages the job's new file in <run>/, removing the earlier ones: named
 * for the run at this second, or one past the newest earlier one's, so
 * that it never takes an existing name (a commit without force refuses
 * that; every host's export rewrites the job, often within a second). */
static int stage_job_file(tbe__stage *s, const char *logdir, const char *run, int *fd, char *name,
                          size_t size) {
  int rc = 0;
  long long ts = (long long)time(NULL);
  DIR *d = tbe__run_listing(logdir, run, &rc, s->where, sizeof s->where);
  struct dirent *de;
  char who[TBE_NAME_MAX + 1];
  size_t pl = strlen(TBE__EVENTS_PREFIX);
  /* the new file first (tbe__stage_events says why), then the old ones */
  for (int pass = 0; pass < 2 && !rc && d; pass++) {
    rewinddir(d);
    while (!rc && (de = readdir(d)) != NULL) {
      if (!tbe__events_who(de->d_name, TBE__JOB_MARK, who, sizeof who) || strcmp(who, run) != 0)
        continue;
      long long was = strtoll(de->d_name + pl, NULL, 10);
      if (pass == 0 && was >= ts) ts = was + 1;
      if (pass == 1) rc = tbe__stage_remove(s, run, de->d_name);
    }
    if (pass == 0 && !rc) rc = tbe__events_name(name, size, ts, run, TBE__JOB_MARK);
    if (pass == 0 && !rc) rc = tbe__stage_file(s, run, name, fd);
  }
  if (d)
    closedir(d);
  else if (!rc && !(rc = tbe__events_name(name, size, ts, run, TBE__JOB_MARK)))
    rc = tbe__stage_file(s, run, name, fd);
  return rc;
}

/* The job: after this host's outputs, <run>/events.out.tfevents.<ts>.
 * <run>.tbexport-job from the analyses of every host of the run (this
 * one's just made, the others' persisted: tbview_plan), replacing the
 * earlier one; hosts without a current analysis are named in its text.
 * Run under the run lock, so the hosts of one run take turns and the
 * last one's job holds them all. */
static int job_stage(tbe__stage *s, const tbe_export_options *o, const char *run, const char *host,
                     tbe_analysis *mine, const tbview *v, const tbe_allocator *a, char *name,
                     size_t size) {
  size_t n = v->nothers + 1, k = 0, nl = 0;
  tbe_analysis **ans = tbe__calloc(a, n, sizeof *ans);
  const char **labels = tbe__calloc(a, n, sizeof *labels);
  const char **left = tbe__calloc(a, n, sizeof *left);
  int rc = ans && labels && left ? 0 : TBE_ENOMEM;
  if (!rc) {
    ans[k] = mine;
    labels[k++] = host;
    for (size_t i = 0; i < v->nothers; i++) {
      if (v->others[i].an) {
        ans[k] = v->others[i].an;
        labels[k++] = v->others[i].name;
      } else {
        left[nl++] = v->others[i].name;
      }
    }
  }
  tbe_run_analysis *r = NULL;
  if (!rc) rc = tbe_run_analysis_create(&r, ans, labels, k, a);
  int fd = -1;
  if (!rc) rc = stage_job_file(s, o->logdir, run, &fd, name, size);
  if (!rc) {
    tbe__job_ctx j = {run, o->command, o->labels, o->nlabels, left, nl, a};
    tbe__sink out;
    tbe__sink_file(&out, fd);
    rc = tbe__job_write(&out, name, r, &j);
    if (!rc) rc = tbe__sink_error(&out);
    if (rc) snprintf(s->where, sizeof s->where, "%s/%s/%s", o->logdir, run, name);
  }
  tbe_run_analysis_free(r);
  tbe__free(a, ans);
  tbe__free(a, labels);
  tbe__free(a, left);
  return rc;
}

static int conflict(const char *logdir, const char *run, const char *host, const char *folder,
                    unsigned outputs, char *buf, size_t size) {
  char path[4096], prel[TBE_NAME_MAX + 32];
  profile_dir(prel, sizeof prel, run);
  for (size_t i = 0; i < NEXPORTERS; i++) {
    unsigned bit = EXPORTERS[i]->bit;
    const char *suffix = profile_suffix(bit);
    if (!(outputs & bit)) continue;
    for (int in_folder = 0; !suffix && in_folder < 2; in_folder++) {
      /* the run's summary events of this host: in <run>/, or in its
       * folder of a multi-host run */
      int n = in_folder ? snprintf(path, sizeof path, "%s/%s/%s", logdir, run, folder)
                        : snprintf(path, sizeof path, "%s/%s", logdir, run);
      if (n < 0 || (size_t)n >= sizeof path) return -ENAMETOOLONG;
      DIR *d = opendir(path);
      if (!d) continue;
      struct dirent *de;
      int hit = 0;
      while (!hit && (de = readdir(d)) != NULL)
        if (tbe__events_name_is(de->d_name, host, TBE__SUMMARY_MARK)) {
          hit = 1;
          if (buf && size) snprintf(buf, size, "%s/%s", path, de->d_name);
        }
      closedir(d);
      if (hit) return 1;
    }
    if (!suffix) continue;
    int n = snprintf(path, sizeof path, "%s/%s/%s%s", logdir, prel, host, suffix);
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
  tbe_export_options oc; /* the caller's, completed to this version (its size) */
  if (!t || !o || !(o = TBE__OPTIONS_TAKE(tbe_export_options, &oc, o))) return TBE_EINVAL;
  if (!o->logdir || !*o->logdir) return TBE_EINVAL;
  char run[TBE_NAME_MAX + 1], host[TBE_NAME_MAX + 1];
  int rc = tbe_export_resolve(t, o, run, sizeof run, host, sizeof host);
  if (rc) return rc;
  char folder[TBE_NAME_MAX + 1];
  tbe__run_host_folder(host, trace_rank(t), t->world_size, folder, sizeof folder);
  return conflict(o->logdir, run, host, folder, o->outputs ? o->outputs : TBE_OUT_ALL, buf, size);
}

const char *tbe_export_strerror(int rc, const char *path, char *buf, size_t size) {
  if (!buf || !size) return buf;
  if (!path || !*path) snprintf(buf, size, "%s", tbe_strerror(rc));
  else if (rc == -ELOOP)
    snprintf(buf, size, "%s is a symbolic link: refusing to write through it", path);
  else if (rc == -ENOTDIR) snprintf(buf, size, "%s is not a directory", path);
  else if (rc == TBE_EEXIST || rc == -EEXIST) snprintf(buf, size, "%s already exists", path);
  else snprintf(buf, size, "%s: %s", path, tbe_strerror(rc));
  return buf;
}

/* Runs one output into the file `fd` and checks the sink once. */
static int write_output(const tbe__exporter *x, const tbe__export_ctx *ctx, int fd) {
  tbe__sink out;
  tbe__sink_file(&out, fd);
  int rc = x->write(ctx, &out);
  return rc ? rc : tbe__sink_error(&out);
}

/* ---- one output to one path ----
 * tbe_export_chrome_json and tbe_export_xplane: the output of `x` to
 * `path`, atomically (common/fsutil.h, tbe__afile: the file appears whole
 * or not at all; an existing one is a conflict unless `force`). */

static int export_file(const tbe_trace *t, const tbe__exporter *x, const char *path, int force,
                       int plain, const char *host) {
  if (!t || !path || !*path) return TBE_EINVAL;
  if (!tbe__trace_finished(t)) return TBE_ESTATE;
  tbe_allocator a;
  tbe__allocator_init(&a, tbe__trace_allocator(t));
  char *dir;
  const char *name;
  int rc = tbe__path_split(&a, path, &dir, &name);
  if (rc) return rc;
  tbe__afile f;
  rc = tbe__afile_open(&f, &a, dir, name, force);
  if (!rc) {
    tbe__export_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.trace = t;
    ctx.host = host;
    ctx.name = name;
    ctx.plain = plain;
    ctx.a = &a;
    rc = write_output(x, &ctx, f.fd);
    if (rc) tbe__afile_abort(&f);
    else rc = tbe__afile_commit(&f, 0, force);
  }
  tbe__free(&a, dir);
  return rc;
}

int tbe_export_chrome_json(const tbe_trace *t, const char *path, int gzip, int force) {
  return export_file(t, &tbe__exporter_json, path, force, !gzip, NULL);
}

int tbe_export_xplane(const tbe_trace *t, const char *path, int force) {
  /* The host name recorded inside is the trace's own (text, not a path). */
  return export_file(t, &tbe__exporter_xplane, path, force, 0,
                     t ? tbe_trace_str(t, t->host) : NULL);
}

/* ---- tbe_export_run ---- */

typedef struct prog {
  const tbe_export_options *o;
  uint64_t base, total;
} prog;

static void forward_progress(void *ctx, uint64_t done, uint64_t total) {
  prog *p = ctx;
  (void)total;
  p->o->progress(p->o->progress_ctx, p->base + done, p->total);
}

/* One output of this export: where its file goes. */
typedef struct placed {
  const tbe__exporter *x;
  const char *rel;
  char name[TBE_NAME_MAX + 64];
  int fd;
  char link[TBE_NAME_MAX + 64]; /* JSON: the name of its link in <run>/, "" none */
} placed;

/* Stages <run>/<host>.pt.trace.json.gz as a second name of the JSON
 * output staged as `q` (a conflict unless forced, like the output). */
static int stage_pt_link(tbe__stage *s, const tbe_export_options *o, const char *run,
                         const char *host, const char *prel, placed *q) {
  char target[3 * TBE_NAME_MAX + 128];
  snprintf(q->link, sizeof q->link, "%s%s", host, tbe__run_suffix(TBE__RUN_PT_LINK));
  snprintf(target, sizeof target, "../%s/%s", prel, q->name);
  int dfd = tbe__stage_dir(s, run, 1);
  if (dfd < 0) return dfd;
  struct stat st;
  if (!o->force && fstatat(dfd, q->link, &st, AT_SYMLINK_NOFOLLOW) == 0) {
    snprintf(s->where, sizeof s->where, "%s/%s/%s", o->logdir, run, q->link);
    return TBE_EEXIST;
  }
  return tbe__stage_link(s, q->fd, run, q->link, target);
}

/* ---- --force: the host's other outputs ----
 * With force an export replaces all of the host's outputs or none: what
 * it does not write again (an output left out of `outputs`, the PyTorch
 * link with no_pt_link) is staged for removal in the same commit, so no
 * file of an earlier export of the host is left beside the new ones for a
 * reader to take for them (a Chrome JSON that summary prefers to a new
 * XSpace).  The persisted analysis follows its traces (stage_analysis). */

/* Opens base/rel for removals: 0 and *dfd, 1 when it does not exist (there
 * is nothing to remove), or a negative code. */
static int removal_dir(tbe__stage *s, const char *rel, int *dfd) {
  *dfd = tbe__stage_dir(s, rel, 0);
  if (*dfd == -ENOENT) {
    s->where[0] = 0;
    return 1;
  }
  return *dfd < 0 ? *dfd : 0;
}

/* Stages the removal of rel/name when something is there (a symlink too:
 * the name goes, never what it points to). */
static int remove_if_there(tbe__stage *s, const char *rel, const char *name) {
  int dfd, rc = removal_dir(s, rel, &dfd);
  if (rc) return rc > 0 ? 0 : rc;
  struct stat st;
  if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return 0;
  return tbe__stage_remove(s, rel, name);
}

/* Stages the removal of the host's outputs this forced export does not
 * write again; its summaries and sessions in the places this export does
 * not write (all of them without the events output: hrel NULL). */
static int remove_others(tbe__stage *s, const tbe_export_options *o, unsigned outputs,
                         const char *run, const char *host, const char *prel, const char *hrel) {
  char name[TBE_NAME_MAX + 64];
  int rc = remove_host_events(s, o->logdir, run, host, hrel);
  for (size_t i = 0; i < NEXPORTERS && !rc; i++) {
    const tbe__exporter *x = EXPORTERS[i];
    const char *suffix = profile_suffix(x->bit);
    if ((outputs & x->bit) || !suffix) continue;
    snprintf(name, sizeof name, "%s%s", host, suffix);
    rc = remove_if_there(s, prel, name);
  }
  if (!rc && (!(outputs & TBE_OUT_JSON) || o->no_pt_link)) {
    snprintf(name, sizeof name, "%s%s", host, tbe__run_suffix(TBE__RUN_PT_LINK));
    rc = remove_if_there(s, run, name);
  }
  return rc;
}

/* Step 1: stages the file of every requested output; conflicts first. */
static int stage_outputs(tbe__stage *s, const tbe_export_options *o, unsigned outputs,
                         const char *run, const char *host, const char *prel, const char *hrel,
                         placed *p, size_t *np) {
  int rc = 0;
  *np = 0;
  for (size_t i = 0; i < NEXPORTERS && !rc; i++) {
    if (!(outputs & EXPORTERS[i]->bit)) continue;
    placed *q = &p[(*np)++];
    q->x = EXPORTERS[i];
    q->fd = -1;
    q->link[0] = 0;
    const char *suffix = profile_suffix(q->x->bit);
    if (!suffix) {
      /* the summary and the session: the host's TensorBoard run (tbview) */
      q->rel = hrel;
      rc = tbe__stage_events(s, hrel, host,
                             q->x == &tbe__exporter_hparams ? TBE__HPARAMS_MARK : TBE__SUMMARY_MARK,
                             o->force, &q->fd, q->name, sizeof q->name);
      continue;
    }
    q->rel = prel;
    snprintf(q->name, sizeof q->name, "%s%s", host, suffix);
    int dfd = tbe__stage_dir(s, prel, 1);
    if (dfd < 0) return dfd;
    struct stat st;
    if (!o->force && fstatat(dfd, q->name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
      snprintf(s->where, sizeof s->where, "%s/%s/%s", o->logdir, prel, q->name);
      return TBE_EEXIST;
    }
    rc = tbe__stage_file(s, prel, q->name, &q->fd);
    if (!rc && q->x->bit == TBE_OUT_JSON && !o->no_pt_link)
      rc = stage_pt_link(s, o, run, host, prel, q);
  }
  if (!rc && o->force)
    rc = remove_others(s, o, outputs, run, host, prel, (outputs & TBE_OUT_EVENTS) ? hrel : NULL);
  return rc;
}

/* Without force: an earlier summary or session of the host in a place
 * this export does not write (<run>/ when the host now has a folder of
 * its own, the old sub-run <run>/hparams/<host>/) is a conflict too. */
static int events_conflict(tbe__stage *s, const char *logdir, const char *run, const char *host,
                           const tbview *v) {
  char rel[2 * TBE_NAME_MAX + 32];
  int rc = 0;
  if (strcmp(v->hrel, run) != 0 && v->mine_top) {
    if ((rc = host_has(s, logdir, run, host, TBE__SUMMARY_MARK)) == 0)
      rc = host_has(s, logdir, run, host, TBE__HPARAMS_MARK);
  }
  snprintf(rel, sizeof rel, "%s/%s/%s", run, TBE__HPARAMS_RUN, host);
  if (!rc) rc = host_has(s, logdir, rel, host, TBE__HPARAMS_MARK);
  if (rc > 0) return TBE_EEXIST;
  if (!rc) s->where[0] = 0;
  return rc;
}

/* ---- the persisted analysis ----
 * <host>.analysis.pb beside the host's trace files (tbexport/analysis.h):
 * the analysis of the trace just written, stamped with this analysis
 * version, and the key of each trace file of this export (name, size, the
 * CRC32C of its head and tail: tbe__analysis_key_fd, read back from the
 * staged file, written completely by now; commit closes and renames it,
 * it does not write).  It goes with the others at commit and is replaced
 * with them (force).  Failing to make it (memory, a file past
 * TBE_ANALYSIS_FILE_MAX, reading a trace back) never fails the export: it
 * is then left out, and a file of that name from an earlier export is
 * staged for removal instead, as it is when it exists and the export is
 * not forced (the commit would refuse it), or when a forced export writes
 * no trace (its traces are gone with the rest).  An I/O error writing it
 * fails the export like any output's (the log dir's disk is failing; the
 * project's rule is that every injected I/O fault is reported,
 * test_faults_io.c). */
static int stage_analysis(tbe__stage *s, const tbe_export_options *o, const tbe_trace *t,
                          const char *host, const char *prel, const placed *p, size_t np,
                          struct tbe_analysis **shared, const tbe_allocator *a) {
  tbe_analysis_source src[NEXPORTERS];
  size_t nsrc = 0;
  int keyed = 1;
  for (size_t i = 0; i < np && keyed; i++) {
    if (!profile_suffix(p[i].x->bit)) continue;
    memset(&src[nsrc], 0, sizeof src[nsrc]);
    src[nsrc].name = p[i].name;
    keyed = tbe__analysis_key_fd(p[i].fd, &src[nsrc]) == 0;
    nsrc++;
  }
  if (!nsrc && !o->force) return 0; /* no trace written: the analysis still describes the old */
  char name[TBE_NAME_MAX + 32];
  snprintf(name, sizeof name, "%s%s", host, TBE_ANALYSIS_SUFFIX);
  int dfd = tbe__stage_dir(s, prel, nsrc > 0);
  if (dfd < 0) {
    s->where[0] = 0;
    return 0;
  }
  struct stat st;
  int exists = fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0, ok = 0, io = 0;
  if (nsrc && keyed && (!exists || o->force)) {
    void *buf = NULL;
    size_t len = 0;
    int fd = -1;
    int rc = *shared ? 0 : tbe_analysis_create(shared, t, a);
    if (!rc) {
      /* The files record the run's host, which a reader of them gets back
       * as the trace's host: so does the analysis. */
      tbe_analysis as_read = **shared;
      as_read.host = host;
      rc = tbe_analysis_save(&as_read, src, nsrc, &buf, &len, a);
    }
    if (!rc && !(io = tbe__stage_file(s, prel, name, &fd))) {
      io = tbe__write_all(fd, buf, len);
      if (io) tbe__stage_drop_last(s);
    }
    if (io) {
      snprintf(s->where, sizeof s->where, "%s/%s/%s", o->logdir, prel, name);
      rc = io;
    }
    tbe_analysis_save_free(buf, len, a);
    ok = !rc;
  }
  if (io) return io;
  if (!ok && exists) tbe__stage_remove(s, prel, name);
  s->where[0] = 0;
  return 0;
}

int tbe_export_run(const tbe_trace *t, const tbe_export_options *o) {
  tbe_export_options oc; /* the caller's, completed to this version (its size) */
  if (o && !(o = TBE__OPTIONS_TAKE(tbe_export_options, &oc, o))) return TBE_EINVAL;
  if (o && o->error_path && o->error_path_size) o->error_path[0] = 0;
  if (!t || !o || !o->logdir || !*o->logdir) return TBE_EINVAL;
  unsigned outputs = o->outputs ? o->outputs : TBE_OUT_ALL;
  if (outputs & ~TBE_OUT_ALL) return TBE_EINVAL;
  char run[TBE_NAME_MAX + 1], host[TBE_NAME_MAX + 1];
  if (!tbe__trace_finished(t)) return TBE_ESTATE;
  int rc = tbe_export_resolve(t, o, run, sizeof run, host, sizeof host);
  if (!rc && (outputs & TBE_OUT_EVENTS)) rc = tbe__labels_check(o->labels, o->nlabels);
  if (rc) return rc;

  tbe_allocator a;
  tbe__allocator_init(&a, o->allocator);
  tbe__stage s;
  tbe__stage_init(&s, &a, o->logdir);
  tbe__lock lock;
  rc = tbe__run_lock(&lock, o->logdir, run, s.where, sizeof s.where);
  if (rc) {
    if (o->error_path && o->error_path_size)
      snprintf(o->error_path, o->error_path_size, "%s", s.where);
    return rc;
  }
  char prel[TBE_NAME_MAX + 32];
  profile_dir(prel, sizeof prel, run);
  tbview v;
  memset(&v, 0, sizeof v);
  tbe__intern_init(&v.names, &a, TBE__SEED_PROCESS);
  snprintf(v.hrel, sizeof v.hrel, "%s", run);
  if (outputs & TBE_OUT_EVENTS) {
    tbview_free(&v, &a);
    rc = tbview_plan(&v, o->logdir, run, host, trace_rank(t), t->world_size, &a, s.where,
                     sizeof s.where);
    if (!rc && !o->force) rc = events_conflict(&s, o->logdir, run, host, &v);
  }
  placed p[NEXPORTERS];
  size_t np = 0;
  if (!rc) rc = stage_outputs(&s, o, outputs, run, host, prel, v.hrel, p, &np);
  if (!rc && v.multi) rc = stage_moves(&s, o->logdir, run, &v, &a);

  prog pr = {o, 0, 0};
  for (size_t i = 0; i < np; i++)
    if (p[i].x->bit != TBE_OUT_EVENTS) pr.total += t->nevents;
  tbe__export_ctx x;
  memset(&x, 0, sizeof x);
  struct tbe_analysis *shared = NULL;
  x.trace = t;
  x.host = host;
  x.a = &a;
  x.run = run;
  x.command = o->command;
  x.labels = o->labels;
  x.nlabels = o->nlabels;
  x.analysis = &shared;
  x.progress = o->progress ? forward_progress : NULL;
  x.progress_ctx = &pr;
  x.threads = o->threads;
  for (size_t i = 0; i < np && !rc; i++) {
    x.name = p[i].name;
    rc = write_output(p[i].x, &x, p[i].fd);
    if (rc) snprintf(s.where, sizeof s.where, "%s/%s/%s", o->logdir, p[i].rel, p[i].name);
    if (p[i].x->bit != TBE_OUT_EVENTS) pr.base += t->nevents;
  }
  if (!rc) rc = stage_analysis(&s, o, t, host, prel, p, np, &shared, &a);
  char job[TBE_NAME_MAX + 64] = "";
  if (!rc && v.multi && shared) rc = job_stage(&s, o, run, host, shared, &v, &a, job, sizeof job);
  tbview_free(&v, &a);
  tbe_analysis_free(shared);
  if (!rc) rc = tbe__stage_commit(&s, o->force, o->durable);
  else tbe__stage_abort(&s);
  tbe__lock_release(&lock);
  if (rc && o->error_path && o->error_path_size)
    snprintf(o->error_path, o->error_path_size, "%s", s.where);
  tbe__stage_free(&s);
  for (size_t i = 0; i < np && !rc && o->on_file; i++) {
    char path[4096 + 2 * TBE_NAME_MAX];
    snprintf(path, sizeof path, "%s/%s/%s", o->logdir, p[i].rel, p[i].name);
    o->on_file(o->ctx, path);
    if (p[i].link[0]) {
      snprintf(path, sizeof path, "%s/%s/%s", o->logdir, run, p[i].link);
      o->on_file(o->ctx, path);
    }
  }
  if (!rc && o->on_file && job[0]) {
    char path[4096 + 2 * TBE_NAME_MAX];
    snprintf(path, sizeof path, "%s/%s/%s", o->logdir, run, job);
    o->on_file(o->ctx, path);
  }
  return rc;
}
