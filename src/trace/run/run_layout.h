/* run_layout.h: the run on disk, spelled once: the table of the files a
 * run holds below its log dir, with their places and suffixes, and the
 * names and paths built from it (run_layout.c).  Pure string work: nothing
 * here opens a file (run_scan.h reads a log dir, run_stage.h writes one).
 *
 * The layout (RUN and HOST valid names, tbe_name_check):
 *   <logdir>/plugins/profile/<RUN>/<HOST>.xplane.pb         XSpace
 *   <logdir>/plugins/profile/<RUN>/<HOST>.trace.json.gz     Chrome JSON
 *   <logdir>/plugins/profile/<RUN>/<HOST>.analysis.pb       its analysis
 *   <logdir>/<RUN>/<HOST>.pt.trace.json.gz                  a hard link to the JSON
 *   <logdir>/<RUN>/events.out.tfevents.<ts>.<HOST><mark>    summary, HParams
 *     (a multi-host run: in <RUN>/<folder>/, tbe__run_host_folder, and
 *     the job's file, <ts>.<RUN>.tbexport-job, in <RUN>/; sessions
 *     written before this layout sit in the sub-run <RUN>/hparams/<HOST>/)
 *   <logdir>/<NEW RUN>/events.out.tfevents.<ts>.<BASE RUN>.tbexport-diff
 *   <logdir>/.tbexport-spool-<pid>-<ns>/                    a session's spools
 * Our event files are recognised by name, so that a replacement finds
 * the files it replaces: events.out.tfevents.<ts>.<who><mark>, <ts> the
 * export time in 10 digits, <who> a valid name, <mark> one of the marks
 * below.  TensorBoard reads every file whose name holds "tfevents"; the
 * fixed width of <ts> and the fixed mark make <who> unambiguous, and the
 * longest name is 248 bytes.
 *
 * Invariants: every name built here from names found on disk or inside a
 * trace is checked with tbe__name_check first (no '/', no "..", no
 * control byte, at most TBE_NAME_MAX bytes), so that a path built here
 * never leaves the log dir; a result that does not fit is refused
 * (TBE_EINVAL or -ENAMETOOLONG), never cut into another valid path. */
#ifndef TBE_TRACE_RUN_LAYOUT_H
#define TBE_TRACE_RUN_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

/* ---- the table of outputs ----
 * X(ID, name, place, suffix): where each file of a run goes and how its
 * name ends.  The profile plugin's files are <HOST><suffix>; the events
 * files end with their mark; the spool folder's name starts with its
 * prefix. */
#define TBE__RUN_FILES(X)                                      \
  X(XSPACE, "xplane", TBE__AT_PROFILE, ".xplane.pb")           \
  X(JSON, "json", TBE__AT_PROFILE, ".trace.json.gz")           \
  X(ANALYSIS, "analysis", TBE__AT_PROFILE, ".analysis.pb")     \
  X(PT_LINK, "pt-link", TBE__AT_RUN, ".pt.trace.json.gz")      \
  X(SUMMARY, "summary", TBE__AT_HOST_RUN, ".tbexport-summary") \
  X(HPARAMS, "hparams", TBE__AT_HOST_RUN, ".tbexport-hparams") \
  X(JOB, "job", TBE__AT_RUN, ".tbexport-job")                  \
  X(DIFF, "diff", TBE__AT_RUN, ".tbexport-diff")               \
  X(SPOOL, "spool", TBE__AT_LOGDIR, ".tbexport-spool-")

typedef enum tbe__run_place {
  TBE__AT_PROFILE,  /* <logdir>/plugins/profile/<RUN>/ */
  TBE__AT_RUN,      /* <logdir>/<RUN>/ */
  TBE__AT_HOST_RUN, /* the host's TensorBoard run: <RUN>/ or <RUN>/<folder>/ */
  TBE__AT_LOGDIR    /* <logdir>/ */
} tbe__run_place;

typedef enum tbe__run_file {
#define TBE__RUN_FILE_ENUM(id, name, place, suffix) TBE__RUN_##id,
  TBE__RUN_FILES(TBE__RUN_FILE_ENUM)
#undef TBE__RUN_FILE_ENUM
  TBE__RUN_NFILES
} tbe__run_file;

typedef struct tbe__run_file_row {
  const char *name;   /* "xplane", "summary", ... */
  tbe__run_place place;
  const char *suffix; /* after the host, or the mark, or the prefix */
} tbe__run_file_row;

/* The row of `f` (f < TBE__RUN_NFILES). */
const tbe__run_file_row *tbe__run_file_row_of(tbe__run_file f);
/* The suffix of `f`: tbe__run_file_row_of(f)->suffix. */
const char *tbe__run_suffix(tbe__run_file f);

/* The marks of our event files, as the writers of their bytes name them. */
#define TBE__SUMMARY_MARK ".tbexport-summary"
#define TBE__HPARAMS_MARK ".tbexport-hparams"
#define TBE__JOB_MARK ".tbexport-job"
#define TBE__DIFF_MARK ".tbexport-diff"
/* The sub-run older versions kept each host's session in,
 * <RUN>/TBE__HPARAMS_RUN/<HOST>/, still found there to be replaced. */
#define TBE__HPARAMS_RUN "hparams"
#define TBE__EVENTS_PREFIX "events.out.tfevents."
/* The profile plugin's folder of all runs, relative to the log dir. */
#define TBE__PROFILE_ROOT "plugins/profile"

/* ---- paths ---- */

/* Writes <logdir>/plugins/profile/<run> (logdir NULL: relative to the
 * log dir, plugins/profile/<run>).  Returns 0, TBE_ENAME (run is not a
 * valid name) or -ENAMETOOLONG (does not fit). */
int tbe__run_profile_dir(char *buf, size_t size, const char *logdir, const char *run);

/* Writes the name of host `host`'s file `f` of the profile plugin or the
 * run's folder (<host><suffix>: XSPACE, JSON, ANALYSIS, PT_LINK).
 * Returns 0, TBE_ENAME or -ENAMETOOLONG. */
int tbe__run_host_file(char *buf, size_t size, const char *host, tbe__run_file f);

/* The TensorBoard folder of `host` in a multi-host run: "rank<R>.<host
 * without its .rank<R>>" for a host with rank R (R zero-padded to the
 * digits of the world size less one: rank03.node for node.rank3 of 16,
 * rank3.node_pid7 for node.rank3_pid7), else the host itself ("hparams_"
 * for a host named "hparams", not the old sub-run); the host itself also
 * when that would not be a valid name. */
void tbe__run_host_folder(const char *host, int32_t rank, int32_t world, char *buf, size_t size);

/* Writes the name of our event file for `who` and `mark` at time `ts`.
 * Returns 0 or TBE_EINVAL (does not fit). */
int tbe__events_name(char *buf, size_t size, long long ts, const char *who, const char *mark);

/* Whether `name` is our event file for `who` and `mark` (any time). */
int tbe__events_name_is(const char *name, const char *who, const char *mark);

/* The `who` of our event file `name` with `mark`, into `who` (size
 * bytes): 1, or 0 when it is not one (or `who` is not a valid name). */
int tbe__events_who(const char *name, const char *mark, char *who, size_t size);

/* ---- reading names back ---- */

/* A trace file or analysis of a host in plugins/profile/<run>/ (XSPACE,
 * JSON, ANALYSIS): the host into `host`, 1; 0 for any other name, a
 * hidden one, or a host that is not a valid name. */
int tbe__run_profile_host(const char *name, char *host, size_t size);

/* A trace file a reader takes from a run's profile folder: its kind
 * (3: *.trace.json.gz, 2: *.trace.json, 1: *.xplane.pb; the higher is
 * preferred for one host) and in *stem_len the length of its host part
 * (a ".pt" before the suffix is not part of it); 0 for other names. */
int tbe__run_trace_kind(const char *name, size_t *stem_len);

/* Whether file name `n` is a trace output of host entry `host` of a
 * profiled session: <host> or <host>_pid<N>[_<k>], then .xplane.pb or
 * .trace.json.gz.  <host>.rank<N>.* is another entry, as is any host whose
 * name only starts with `host`. */
int tbe__run_host_output(const char *n, const char *host);

/* Splits `path`, a file <logdir>/plugins/profile/<run>/<file>, into its
 * log dir ("/" for the root; "" is not one) and run: 1, or 0 when `path`
 * does not have that shape or a part does not fit. */
int tbe__run_split_profile_path(const char *path, char *logdir, size_t lsize, char *run,
                                size_t rsize);

#endif
