/* export_run.h: where the files of a run go (export_run.c), for the
 * files of src/trace that write one: the names of our event files, the
 * run lock, a staged events file, a comparison's events file.  Outputs
 * (exporter.h) never need this header: they write into the sink they are
 * handed. */
#ifndef TBE_TRACE_EXPORT_RUN_H
#define TBE_TRACE_EXPORT_RUN_H

#include <stddef.h>

#include "common/fsutil.h"
#include "trace/exporter.h"

/* ---- the run layout ----
 * <logdir>/<run>/events.out.tfevents.*<SUMMARY_MARK>  the run summary
 * <logdir>/<run>/events.out.tfevents.*<HPARAMS_MARK>  its session
 *   (a multi-host run: both in <run>/<host folder>/, and the job's file,
 *   *<JOB_MARK>, in <run>/; sessions written before this layout sit in
 *   the sub-run <run>/hparams/<host>/, which a forced export of that host
 *   clears)
 * <logdir>/<run>/<host>.pt.trace.json.gz  a hard link to the JSON output
 * <logdir>/plugins/profile/<run>/<host>.{xplane.pb,trace.json.gz}
 * Our event files are recognised by name, so that a replacement finds
 * the files it replaces:
 *   events.out.tfevents.<ts>.<who><mark>
 * <ts> the export time, 10 digits; <who> a valid name (tbe_name_check);
 * <mark> TBE__SUMMARY_MARK (the run summary of host <who>, in <run>/) or
 * TBE__DIFF_MARK (the comparison against base run <who>, in the new run's
 * folder).  TensorBoard reads every file whose name holds "tfevents"; the
 * fixed width of <ts> and the fixed mark make <who> unambiguous, and the
 * longest name is 248 bytes. */
#define TBE__SUMMARY_MARK ".tbexport-summary"
#define TBE__DIFF_MARK ".tbexport-diff"
/* The run's HParams session of each host, beside its summary (its
 * metrics are the summary's tags, named by the session's experiment
 * record); TBE__HPARAMS_RUN is the sub-run older versions wrote them in,
 * <run>/TBE__HPARAMS_RUN/<host>/, still found there to be replaced. */
#define TBE__HPARAMS_MARK ".tbexport-hparams"
#define TBE__HPARAMS_RUN "hparams"

/* Writes the name of our event file for `who` and `mark` at time `ts`.
 * Returns 0 or TBE_EINVAL (does not fit). */
int tbe__events_name(char *buf, size_t size, long long ts, const char *who, const char *mark);

/* Whether `name` is our event file for `who` and `mark` (any time). */
int tbe__events_name_is(const char *name, const char *who, const char *mark);

/* The run lock: waits until no other writer of run `run` in `logdir`
 * holds it (tbe__lock_take on logdir/.tbexport.lock).  Every writer into
 * a run's folders (tbe_export_run, the diff writers) holds it from before
 * it looks at the folders to after its commit, so writers of one run take
 * turns: the last to commit wins, with all its files.  Waiting, not
 * refusing: writers of different hosts into one run (the ranks of one
 * job) are all meant to succeed, and a writer holds the lock only for its
 * export, never while a profiled program runs.  Returns 0 (release with
 * tbe__lock_release) or a negative code (`where` names the path). */
int tbe__run_lock(tbe__lock *l, const char *logdir, const char *run, char *where, size_t wsize);

/* Stages, in the stage's base/<run>/, a new event file for `who` and
 * `mark` (name in `name`, `size` bytes; descriptor in *fd) that replaces,
 * at commit, every earlier one of the same `who` and `mark`.  With
 * `force` 0 an earlier one is a conflict instead: TBE_EEXIST, s->where
 * names it.  Call with the run lock held.  Returns 0 or a negative code. */
int tbe__stage_events(tbe__stage *s, const char *run, const char *who, const char *mark,
                      int force, int *fd, char *name, size_t size);

/* A comparison's events file (tbe_diff_write_events): in `run_dir`
 * (<logdir>/<run>, the run validated here), named for `base_label` with
 * TBE__DIFF_MARK, replacing earlier ones of that base; under the run lock,
 * staged, filled by WRITE (its sink and the file's name), committed whole
 * or not at all.  `path` (may be NULL) gets the final path, or the one
 * that failed.  Returns 0 or a negative code. */
int tbe__export_diff_file(const tbe_allocator *a, const char *run_dir, const char *base_label,
                          int (*write)(void *ctx, tbe__sink *out, const char *name), void *ctx,
                          char *path, size_t size);

/* ---- a multi-host run ----
 * A run of several hosts (or of a host with a rank) gives each host a
 * TensorBoard run of its own, <run>/<host folder>/ (tbe__host_folder:
 * ranks sort in rank order), and the run's own folder <run>/ the job's
 * series, written after each host's export from the persisted analyses of
 * all the run's hosts (export_run.c, job_stage) by tbe__job_write
 * (export_events.c) into events.out.tfevents.<ts>.<run>.tbexport-job. */
#define TBE__JOB_MARK ".tbexport-job"

/* What the job's file says besides the figures: its HParams session's
 * run, command and labels (the exporting host's), and the hosts of the
 * run left out of the figures (no current analysis). */
typedef struct tbe__job_ctx {
  const char *run;
  const char *command;
  const char *const *labels;
  size_t nlabels;
  const char *const *left;
  size_t nleft;
  const tbe_allocator *a;
} tbe__job_ctx;

struct tbe_run_analysis;
/* Writes the job's events of run analysis `r` (one or more hosts) into
 * `out` (the file `name`).  Returns 0 or a negative code. */
int tbe__job_write(tbe__sink *out, const char *name, struct tbe_run_analysis *r,
                   const tbe__job_ctx *j);

/* Whether `run` is a run of the log dir that holds `run_dir` (its parent)
 * with each of the `n` hosts (a trace or an analysis of each in
 * plugins/profile/<run>/): 1 (then `dir` gets <logdir>/<run>), 0, or a
 * negative code. */
int tbe__run_is(const tbe_allocator *a, const char *run_dir, const char *run,
                const char *const *hosts, size_t n, char *dir, size_t size);

#endif
