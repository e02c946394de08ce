/* run_scan.h: reading a log dir's runs back (run_scan.c): which runs and
 * hosts it holds, a run's trace files and analyses, where TensorBoard's
 * runs of a host are.  The names come from run_layout.h; what is found is
 * checked as a name before it is used in a path.
 *
 * Two ways to open a folder, as the callers had them:
 *   - tbe__run_listing: under the symlink rule (common/fsutil.h,
 *     tbe__dir_open: no component below the log dir a symbolic link), for
 *     the writers' planning (export_run.c) and tbe__run_is;
 *   - plain opendir (the profile command's run naming, the readers'
 *     listing): a symlinked run folder is followed there, as before;
 *     the files are then opened with the importer's base_dir rule. */
#ifndef TBE_TRACE_RUN_SCAN_H
#define TBE_TRACE_RUN_SCAN_H

#include <dirent.h>
#include <stddef.h>

#include "tbexport/common.h"

/* Opens logdir/rel for reading its entries under the symlink rule, or
 * NULL (missing: *rc 0; else *rc the code, `where` naming the path). */
DIR *tbe__run_listing(const char *logdir, const char *rel, int *rc, char *where, size_t wsize);

/* Whether entry `de` of `d` is a directory (not following a symlink). */
int tbe__run_entry_is_dir(DIR *d, const struct dirent *de);

/* Whether logdir/rel holds one of our summaries (any host). */
int tbe__run_holds_summary(const char *logdir, const char *rel);

/* Whether anything of run `run` exists in `logdir` (its profile folder or
 * its events folder; a symlink counts). */
int tbe__run_exists(const char *logdir, const char *run);

/* Whether run `run` of `logdir` holds trace outputs of host entry `host`
 * (tbe__run_host_output): 1, the first named in `found` (may be NULL),
 * or 0. */
int tbe__run_has_host(const char *logdir, const char *run, const char *host, char *found,
                      size_t size);

/* Whether `run` is a run of the log dir that holds `run_dir` (its parent)
 * with each of the `n` hosts (a trace or an analysis of each in
 * plugins/profile/<run>/): 1 (then `dir` gets <logdir>/<run>), 0, or a
 * negative code. */
int tbe__run_is(const tbe_allocator *a, const char *run_dir, const char *run,
                const char *const *hosts, size_t n, char *dir, size_t size);

#endif
