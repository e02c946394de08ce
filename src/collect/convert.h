/* convert.h: spool files -> trace model -> run (built in every
 * configuration; no CUDA types).
 *
 * tbe__spool_to_trace reads one spool (one process) into a trace;
 * tbe__spools_write_run converts every spool of a session directory and
 * writes the run with tbe_export_run, one host entry per process when there
 * are several.  Both are used by the `tbexport -- CMD` command and by
 * tbe_profiler_stop. */
#ifndef TBE_COLLECT_CONVERT_H
#define TBE_COLLECT_CONVERT_H

#include <stddef.h>
#include <stdint.h>

#include "tbexport/export.h"
#include "tbexport/profiler.h"
#include "tbexport/trace.h"

typedef struct tbe__convert_opts {
  int capture;                /* tbe_capture_mode */
  const char *capture_name;   /* NVTX range name */
  const char *capture_domain; /* NULL: any domain */
  const char *host;           /* host name for the trace; NULL: from the spool */
  const char *steps_name;     /* --steps nvtx:NAME: steps from that range (wins over
                                 tbe_profiler_step marks); NULL: none */
  const char *steps_domain;   /* its NVTX domain; NULL: any domain */
} tbe__convert_opts;

typedef struct tbe__convert_info {
  int64_t pid;
  int ended_early;
  size_t tail_offset, tail_bytes; /* incomplete or bad bytes at the end */
  const char *tail_why;           /* static */
  uint64_t outside_capture;       /* records left out by the capture range */
  uint64_t outside_window;        /* records left out by the collection window
                                     (--delay/--duration, start/stop) */
  uint64_t steps_marked;          /* tbe_profiler_step marks in the spool */
  uint64_t nvtx_unclosed, nvtx_orphan_ends;
  uint64_t decode_cpu_ns;         /* collector's background thread */
  uint64_t buffer_bytes;
  uint64_t spool_bytes;           /* size of the spool image */
  char cmd[256];                  /* the process's command line, cut */
  tbe_profiler_result r;
} tbe__convert_info;

/* Converts the spool image `data` (n bytes) into the empty trace `t` and
 * finishes it.  `label` names the spool in warnings.  An incomplete tail
 * is not an error (info->ended_early, t->ended_early, a warning).
 * Returns 0, TBE_EFORMAT / TBE_ECORRUPT (not a spool of this build), or
 * TBE_ENOMEM. */
int tbe__spool_to_trace(const uint8_t *data, size_t n, const char *label,
                        const tbe__convert_opts *o, tbe_trace *t, tbe__convert_info *info);

/* Reads the file at `path` and converts it (see above). */
int tbe__spool_file_to_trace(const char *path, const tbe__convert_opts *o, tbe_trace *t,
                             tbe__convert_info *info);

/* One session's conversion.  `spool_dir` holds *.spool files (possibly
 * none: the run then holds a trace with a note that no CUDA activity was
 * seen, spanning [fallback_start_ns, fallback_stop_ns] for process
 * `fallback_pid` named `fallback_cmd`).  Writes the run through
 * tbe_export_run(eo); eo->host (NULL: this machine) is the base host name.
 * Removes the spools it converted and the directory when empty (unless
 * `keep`).  Prints warnings to stderr prefixed by `prog`.  Fills *total
 * with the sums over all processes (gpu_busy_pct of the union of all).
 * Returns 0 or the first error (conversion of the other spools continues). */
typedef struct tbe__session {
  const char *spool_dir;
  const char *const *files; /* instead of listing spool_dir: these spools */
  size_t nfiles;
  const tbe_export_options *eo;
  const tbe__convert_opts *co;
  int64_t fallback_start_ns, fallback_stop_ns;
  int64_t fallback_pid;
  const char *fallback_cmd;
  int keep;
  const char *prog;      /* "tbexport" */
  int quiet;             /* no warnings on stderr */
  /* Optional out: what collecting cost, summed over the processes. */
  struct tbe__collector_cost *cost;
} tbe__session;

typedef struct tbe__collector_cost {
  uint64_t decode_cpu_ns; /* CPU time of the collectors' background threads */
  uint64_t buffer_bytes;  /* host memory of CUPTI buffers at the peak */
  uint64_t spool_bytes;   /* spool files converted */
} tbe__collector_cost;

int tbe__spools_write_run(const tbe__session *s, tbe_profiler_result *total, size_t *nprocs);

/* Makes a session's hidden spool folder, <logdir>/.tbexport-spool-<pid>-<ns>
 * (mode 0700; the log dir made as needed), under the symlink rule
 * (common/fsutil.h): it must be new, and a symlink at its name is refused
 * (-ELOOP).  Its path goes into `path` (`size` bytes).  Returns 0 or a
 * negative code with `where` naming the path concerned. */
int tbe__spool_dir_make(const char *logdir, char *path, size_t size, char *where, size_t wsize);

/* Applies --steps nvtx:NAME[@DOMAIN] to the finished trace `t`
 * (tbe_trace_steps_from_range).  When nothing matches, adds one warning to
 * `t` naming NAME and the most frequent top-level ranges, and copies it into
 * `line` (when not NULL; "" otherwise).  Returns the number of steps
 * (0: no match) or an error. */
int tbe__steps_apply(tbe_trace *t, const char *name, const char *domain, char *line, size_t size);

/* Epoch ns now (CLOCK_REALTIME). */
int64_t tbe__now_ns(void);

#endif
