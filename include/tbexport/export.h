/* tbexport/export.h: writing a trace as a TensorBoard run.
 *
 * One finished trace becomes, under `logdir`:
 *   plugins/profile/<run>/<host>.xplane.pb       XSpace (xprof, JAX)
 *   plugins/profile/<run>/<host>.trace.json.gz   Chrome trace, Kineto layout
 *   <run>/events.out.tfevents.<ts>.<host>.tbexport-summary
 *                                                run summary (scalars, text)
 *   <run>/events.out.tfevents.<ts>.<host>.tbexport-hparams
 *                                                its HParams session
 * A multi-host run (a trace with a rank: world size above 1 or rank above
 * 0; or a run that holds another host) gives each host a TensorBoard run
 * of its own, so that none shadows another: the summary and session go
 * to <run>/<folder>/, the folder "rank<R>.<host without .rank<R>>" (R
 * zero-padded to the world size's digits, so that TensorBoard lists ranks
 * in rank order) or, without a rank, the host; a lone host's files move
 * there when a second host joins; and <run>/ holds the job as a whole,
 * events.out.tfevents.<ts>.<run>.tbexport-job, rewritten by every host's
 * export from the persisted analyses of all the run's hosts (per step the
 * slowest, median and fastest host, the ranks' table, its own session).
 * A run's files of one host are replaced together or not at all: each is
 * written under a hidden temporary name, and only when all are written
 * (and, when they replace files, synced) are they renamed into place; the
 * files they replace stay until then, and come back if the renaming fails.
 * An existing file is never replaced unless `force` is set; with `force`
 * every earlier output of that host goes, those of formats not written
 * again included (its XSpace, Chrome JSON and PyTorch link, its summary
 * and HParams events, recognised by their names, ".tbexport-summary" after
 * the host, and its analysis): a forced export leaves only what it wrote
 * of the host, so no reader takes an older trace for it.  Writers of one run take
 * turns (a lock in logdir/.tbexport.lock).  Run and host names are
 * validated (tbe_name_check); names found inside traces are never used as
 * paths.  Below `logdir` no component is ever a symbolic link we write
 * through: a symlink at plugins/, plugins/profile/, the run folders or
 * .tbexport.lock is refused (-ELOOP); one at an output name is refused
 * without `force` and with `force` replaced itself, never followed.
 * Hidden temporary files (".tbexport-tmp-*") of a writer that died are
 * removed by the next export into that folder. */
#ifndef TBEXPORT_EXPORT_H
#define TBEXPORT_EXPORT_H

#include <stddef.h>

#include "tbexport/common.h"
#include "tbexport/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TBE_OUT_XPLANE 0x1u
#define TBE_OUT_JSON 0x2u
#define TBE_OUT_EVENTS 0x4u
#define TBE_OUT_ALL (TBE_OUT_XPLANE | TBE_OUT_JSON | TBE_OUT_EVENTS)

typedef struct tbe_export_options {
  size_t size;          /* sizeof the struct: set by tbe_export_options_init (common.h) */
  const char *logdir;   /* required */
  const char *run;      /* NULL: local time as YYYY_MM_DD_HH_MM_SS */
  const char *host;     /* NULL: the trace's host, else this machine's */
  unsigned outputs;     /* TBE_OUT_* mask; 0 means all */
  int force;            /* replace existing files */
  int durable;          /* fsync files and directories */
  /* Called once per file written, with its path, after every requested
   * output has been written.  May be NULL. */
  void (*on_file)(void *ctx, const char *path);
  void *ctx;
  const tbe_allocator *allocator;
  /* Called now and then with work done and the total (events times the
   * number of event-walking outputs).  May be NULL. */
  void (*progress)(void *ctx, uint64_t done, uint64_t total);
  void *progress_ctx;
  /* When not NULL: after a failure, the path it concerns (the symlink
   * refused, the file in the way, the file that could not be written),
   * or "" when none does; `error_path_size` bytes, cut to fit. */
  char *error_path;
  size_t error_path_size;
  /* The run in TensorBoard's HParams dashboard (with the events output):
   * the host's TensorBoard run holds one session whose hyper-parameters
   * are the run, host, GPU, trace source, event kinds and step
   * definition, `command` (what produced the trace, e.g. the profiled
   * command line; NULL: none), the labels one by one and all of them in
   * "labels", and whose metrics are the run's own summary figures (median
   * and p90 step time, GPU busy %, kernel time, launch latency,
   * communication, copy and sync time, SM and tensor-pipe activity, wall
   * time, kernels, dropped records), with display names, the key ones
   * first.  Each label is "key=value": key a valid tag, not one of the
   * built-in names (run, host, gpu, source, kinds, steps, command,
   * labels), each key once (TBE_EINVAL otherwise); a value that reads
   * whole as a number is a number.  Runs written at different times land
   * in one HParams table. */
  const char *command;
  const char *const *labels;
  size_t nlabels;
  /* With the JSON output: also <logdir>/<run>/<host>.pt.trace.json.gz, a
   * hard link to it (no extra disk; a symbolic link where the file system
   * has no hard links), where PyTorch's TensorBoard plugin finds runs.
   * Set to 1 to leave it out. */
  int no_pt_link;
  /* Threads formatting the Chrome JSON output (the bytes are the same for
   * any number): 0 = the online CPUs, at most 32; 1 = the calling thread
   * only; N = N (at most 32).  The library reads no environment for it (the
   * tbexport program takes TBE_EXPORT_THREADS). */
  unsigned threads;
} tbe_export_options;

/* Fills `o` with the defaults above (logdir NULL). */
TBE_API void tbe_export_options_init_sized(tbe_export_options *o, size_t size);
#define tbe_export_options_init(o) tbe_export_options_init_sized((o), sizeof(tbe_export_options))

/* Writes the outputs of a finished trace.  Returns 0 or a negative code:
 * TBE_ESTATE (tbe_trace_finish has not run on the trace: nothing is
 * written), TBE_EINVAL (no logdir, unknown output bits), TBE_ENAME (run or
 * host name refused), TBE_EEXIST (an output of this run and host exists
 * and `force` is 0: checked for every output before anything is written),
 * -ELOOP (a symbolic link below logdir where the outputs go: plugins/,
 * plugins/profile/, a run folder, logdir/.tbexport.lock; logdir itself
 * may be one), -ENOTDIR, -errno (-ENOSPC ...), TBE_ENOMEM; then
 * o->error_path names the path concerned.  All or nothing (see above):
 * on failure the run is as it was, and on_file is only called after the
 * commit.  Waits while another writer (thread or process) writes the same
 * run. */
TBE_API int tbe_export_run(const tbe_trace *t, const tbe_export_options *o);

/* One line for a failure `rc` of tbe_export_run or of the diff writers
 * (analysis.h) about `path` (their error path; NULL or "" for none):
 * "PATH is a symbolic link: refusing to write through it", "PATH already
 * exists", "PATH: No space left on device", ...  Written into `buf`
 * (`size` bytes, cut to fit); returns `buf`. */
TBE_API const char *tbe_export_strerror(int rc, const char *path, char *buf, size_t size);

/* Resolves the run and host names tbe_export_run would use (defaults
 * applied, both validated) into `run` and `host` (at least 201 bytes each;
 * either may be NULL).  The host default is the trace's host with ':', '/'
 * and control characters replaced by '_' when that gives a valid name, else
 * this machine's.  Returns 0, TBE_ENAME or TBE_EINVAL. */
TBE_API int tbe_export_resolve(const tbe_trace *t, const tbe_export_options *o, char *run,
                               size_t run_size, char *host, size_t host_size);

/* Writes into `buf` the path of the first file tbe_export_run would
 * create or, with `force`, replace that already exists without `force`
 * (a symlink counts; it is never followed): a profile file of the run and
 * host, or the run's summary events of that host.  Returns 1 if there is
 * one, 0 if none, or a negative code.  Advisory: tbe_export_run checks
 * again under the run lock. */
TBE_API int tbe_export_conflict(const tbe_trace *t, const tbe_export_options *o, char *buf,
                                size_t size);

/* Checks a run or host name: 1..200 bytes of valid UTF-8, no '/', no
 * control characters, not "." or "..", no leading dot.  Returns 0 or
 * TBE_ENAME with a static reason in *why (if `why` is not NULL). */
TBE_API int tbe_name_check(const char *name, const char **why);

/* Writes the default run name (local time, YYYY_MM_DD_HH_MM_SS) into buf
 * (at least 20 bytes).  Returns 0 or TBE_EINVAL. */
TBE_API int tbe_run_name_default(char *buf, size_t size);

/* Single outputs, for programs that want one file at a given path.  The
 * file is written atomically and not replaced unless `force`; memory comes
 * from the trace's allocator.  TBE_ESTATE for a trace not finished. */
TBE_API int tbe_export_chrome_json(const tbe_trace *t, const char *path, int gzip, int force);
TBE_API int tbe_export_xplane(const tbe_trace *t, const char *path, int force);

#ifdef __cplusplus
}
#endif

#endif

/* ---- the experimental tier: reading a log dir's runs ----
 * Where the files above are found again, for readers of a log dir (the
 * summary and profile commands): the same layout, spelled by the library
 * only (src/trace/run/).  Run names are checked as tbe_name_check does;
 * no symbolic link below the log dir's plugins/profile/<run>/ is read
 * through when a caller opens what these name with tbe_import_options'
 * base_dir. */
#if defined(TBE_EXPERIMENTAL) && !defined(TBEXPORT_EXPORT_H_EXPERIMENTAL)
#define TBEXPORT_EXPORT_H_EXPERIMENTAL

#ifdef __cplusplus
extern "C" {
#endif

/* One host of a run: its name (a trace file's name before its suffix)
 * and its preferred trace file in plugins/profile/<run>/ (the gzipped
 * Chrome JSON, then the plain one, then the XSpace). */
typedef struct tbe_run_listing {
  char *host;
  char *trace;
} tbe_run_listing;

/* The profile folder of `run`: <logdir>/plugins/profile/<run>, or with
 * `logdir` NULL the same relative to the log dir.  Returns 0, TBE_ENAME
 * (not a valid run name) or -ENAMETOOLONG. */
TBE_API int tbe_run_profile_dir(char *buf, size_t size, const char *logdir, const char *run);

/* The hosts of `run` in `logdir`, sorted by name, into *hosts (*n of
 * them, possibly 0; free with tbe_run_list_free).  Hidden files are not
 * read.  Returns 0, TBE_ENAME, -errno of opening the folder (-ENOENT: no
 * such run) or TBE_ENOMEM. */
TBE_API int tbe_run_list(const char *logdir, const char *run, tbe_run_listing **hosts, size_t *n);
TBE_API void tbe_run_list_free(tbe_run_listing *hosts, size_t n);

/* The run of `logdir` whose newest trace file was written last (ties: the
 * greater name; folders whose name is not a valid run name are passed
 * over), into `run`.  Returns 0, 1 when no run holds a trace
 * file, or -errno of opening <logdir>/plugins/profile. */
TBE_API int tbe_run_latest(const char *logdir, char *run, size_t size);

/* When `path` is a file <logdir>/plugins/profile/<run>/<file>: its log dir
 * ("/" for the root) and run, 1; else 0. */
TBE_API int tbe_run_of_path(const char *path, char *logdir, size_t lsize, char *run, size_t rsize);

#ifdef __cplusplus
}
#endif

#endif /* TBE_EXPERIMENTAL */
