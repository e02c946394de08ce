/* spool.h: the spool importer: spool file -> trace model (built in every
 * configuration; no CUDA types).
 *
 * The fourth importer (importer.h): tbe_import_file takes a file that
 * begins with the spool magic (events/spool.h) through the table, with
 * no capture range, steps or host of its own.  The collector's side calls
 * the functions below with its options: tbe__spool_to_trace reads one
 * spool (one process) into a trace; the session (src/collect/session.c,
 * tbexport/session.h) converts every spool of a session this way and
 * writes the run, with what tbe__convert_info tells about each process. */
#ifndef TBE_IMPORT_SPOOL_H
#define TBE_IMPORT_SPOOL_H

#include <stddef.h>
#include <stdint.h>

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
  const tbe_allocator *allocator; /* the conversion's scratch (arrays, maps); NULL: the
                                     trace's */
  int has_rank;        /* the rank below for a spool without its own TBE__SP_RANK (the
                          session's launcher); set before the trace is finished, so the
                          rank's notes (collectives, backend) are made with it */
  int32_t rank;        /* with has_rank: >= 0 */
  int32_t world_size;  /* with has_rank: 0 unknown, else > rank */
  const char *pymem_dir; /* the folder of the Python hook's <pid>.pymem files (the framework's
                            allocator memory, spool_pymem.h), read into the trace before it is
                            finished; NULL: none */
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
  uint64_t ops;                   /* framework operators (TBE__SP_OP) kept */
  uint64_t ops_unclosed;          /* of those: still running when the capture ended */
  uint64_t bad_devices;           /* records left out: a device id beyond int32 */
  uint64_t decode_cpu_ns;         /* collector's background thread */
  uint64_t buffer_bytes;
  uint64_t spool_bytes;           /* size of the spool image */
  char cmd[256];                  /* the process's command line, cut */
  /* The launcher's rank (TBE__SP_RANK), also in t->rank and t->world_size. */
  int32_t rank;                   /* -1: none */
  int32_t world_size, local_rank; /* 0 / -1: unknown */
  uint32_t launcher;              /* TBE__LAUNCHER_* */
  char job[129];                  /* the job id, "" if none */
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

/* The launcher's rank recorded in the spool at `path` (*rank, -1 when
 * none), read from its first frames only, for naming hosts before a
 * conversion.  Returns 1 when it has one, else 0 (also when the file
 * cannot be read: converting it will say why). */
int tbe__spool_file_rank(const char *path, int32_t *rank);

#endif
