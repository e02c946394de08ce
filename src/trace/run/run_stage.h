/* run_stage.h: writing into a run's folders (run_stage.c): the run lock,
 * a staged events file that replaces its predecessors, and a comparison's
 * events file.  tbe_export_run (export_run.c) stages its outputs with
 * these; the diff writers (export_events.c) write their file through
 * tbe__run_diff_file.  Every file appears at commit (common/fsutil.h,
 * tbe__stage) or not at all. */
#ifndef TBE_TRACE_RUN_STAGE_H
#define TBE_TRACE_RUN_STAGE_H

#include <stddef.h>

#include "common/fsutil.h"
#include "tbexport/common.h"
#include "trace/export/sink.h"

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

#endif
