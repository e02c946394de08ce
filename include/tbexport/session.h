/* tbexport/session.h: a profiled session, `tbexport -- CMD` as a library:
 * running another program under the injected collector, then turning
 * what each of its processes collected into one run.
 *
 *   char run[TBE_NAME_MAX + 1], clash[4096], spool[4096], where[4096];
 *   tbe_session_run_name(logdir, NULL, NULL, 0, run, sizeof run, clash, sizeof clash);
 *   tbe_session_spool_dir(logdir, spool, sizeof spool, where, sizeof where);
 *   tbe_session_environment(&po, inject_lib, spool, set_variable, &env);
 *   ... run the program with that environment (fork, exec, signals, wait:
 *       the caller's) ...
 *   tbe_session_options so;
 *   tbe_session_options_init(&so);
 *   so.spool_dir = spool;
 *   so.export_options = &eo;            // logdir, run, host, force, ...
 *   tbe_session_convert(&so, &result);  // the run, one host per process
 *
 * The protocol between the parts: the environment points the CUDA driver
 * (CUDA_INJECTION64_PATH) and NVTX (NVTX_INJECTION64_PATH) at the
 * injection library, libtbexport_inject.so, and gives it the spool folder
 * and the collector's options (TBEXPORT_SPOOL_DIR, TBEXPORT_OPTIONS, read
 * by the injection library only).  Each process that initializes CUDA
 * writes <pid>.spool there, flock'ed while it writes, or <pid>.note saying
 * why it could not collect; conversion reads them after the program ends.
 * A spool cut short (a crash, SIGKILL) converts into a run marked as ended
 * early; one still locked belongs to a process that outlived the program
 * and is left for later (`tbexport import FILE.spool`).
 *
 * Messages (a process that could not collect, a spool left for later, the
 * program that never initialized CUDA, a spool or a run that failed) go to
 * the on_message callback of the options (tbexport/common.h), never to
 * stderr.
 *
 * Experimental tier (see tbexport.h): define TBE_EXPERIMENTAL before
 * including it. */
#ifndef TBEXPORT_SESSION_H
#define TBEXPORT_SESSION_H

#ifndef TBE_EXPERIMENTAL
#error "tbexport/session.h is the experimental tier: define TBE_EXPERIMENTAL before including tbexport headers (see tbexport.h)"
#endif

#include <stddef.h>
#include <stdint.h>

#include "tbexport/common.h"
#include "tbexport/export.h"
#include "tbexport/import.h"
#include "tbexport/profiler.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The experimental tier: hidden in the shared library (common.h). */
#undef TBE_API
#define TBE_API TBE__API_EXPERIMENTAL

/* Flags of tbe_session_run_name.  FORCE: the run's outputs of the host
 * entry are to be replaced (no check); NEXT_FREE: a taken entry moves on
 * to the next free name instead of being refused. */
#define TBE_SESSION_FORCE 1u
#define TBE_SESSION_NEXT_FREE 2u

/* Names the run before the program starts, into name[0..size) (at least
 * TBE_NAME_MAX + 1 bytes).  Without `run`: the local time
 * (tbe_run_name_default), with "_2", "_3", ... when a run of that name
 * exists in `logdir` (its profile folder or its events folder).  With
 * `run`, unless `flags` has TBE_SESSION_FORCE, it looks for outputs the
 * run already has for the host entry `host` (NULL: this machine,
 * tbe_session_host): a file plugins/profile/RUN/HOST.xplane.pb or
 * .trace.json.gz, or the same of HOST_pid<N>[_<k>], naming the first in
 * clash[0..clash_size) (may be NULL); other hosts' and other ranks' files
 * (HOST.rank<N>.*, for `host` HOST) are no clash, so the ranks of one job
 * join one run.  A taken entry is refused (TBE_EEXIST), or, with
 * TBE_SESSION_NEXT_FREE, the name is the first of RUN_2, RUN_3, ...
 * without outputs for the entry (0, and clash names what RUN had; the
 * tbexport program asks for this, so that neither a name used again nor
 * a job id seen again, a step run again by hand or an id the launcher
 * reuses, stops the program or replaces the earlier profile): the ranks
 * of the new job, each finding its own entry taken, reach the same next
 * name.  Returns 0, TBE_EEXIST (also when no free name fits), TBE_ENAME
 * (a refused name), TBE_EINVAL (no clock, buffers too small). */
TBE_API int tbe_session_run_name(const char *logdir, const char *run, const char *host,
                                 unsigned flags, char *name, size_t size, char *clash,
                                 size_t clash_size);

/* This machine's name as a host name: ':' and '/' replaced by '_',
 * "localhost" if unknown; NUL-terminated in buf[0..size). */
TBE_API void tbe_session_host(char *buf, size_t size);

/* Ranks.  A process started by a distributed launcher (torchrun, Open
 * MPI's mpirun, PMIx, MPICH's Hydra and other PMI, MVAPICH, Slurm's srun)
 * has a rank, read from the launcher's variables, the first launcher
 * found winning in that order (src/collect/launcher.h lists the
 * variables); the collector records it in each process's spool.  A
 * process with a rank is the host entry "<host>.rank<N>" of its run
 * (files plugins/profile/RUN/<host>.rank<N>.xplane.pb, ...), several
 * processes of one rank "<host>.rank<N>_pid<P>"; processes without one
 * stay "<host>", or "<host>_pid<P>" when there are several.  With a job
 * id (torchrun's run id, Open MPI's or PMIx's namespace, Slurm's job and
 * step), every rank can name the same run without talking to the others:
 * "torch-<id>", "ompi-<id>", "pmix-<id>", "slurm-<job>[.<step>]".
 *
 * Restarts.  Slurm keeps the job and step id when it requeues a job and
 * torchrun keeps its run id when it restarts its workers; what changes is
 * SLURM_RESTART_COUNT and TORCHELASTIC_RESTART_COUNT.  An attempt after
 * the first is a run of its own, the job's name with ".requeue<K>" and/or
 * ".restart<J>" after it (`attempt`; the caller adds it to a name the user
 * gave as well), so every attempt's profile is kept and none is refused. */
typedef struct tbe_session_launcher {
  int32_t rank;          /* -1: no launcher gave a rank */
  int32_t world_size;    /* 0: unknown */
  int32_t local_rank;    /* -1: unknown */
  const char *launcher;  /* static: "torchrun", "Open MPI", "PMIx", "PMI", "MVAPICH",
                            "Slurm"; "" without a rank */
  char job_id[129];      /* "" if none (only with a rank) */
  int32_t requeue;       /* SLURM_RESTART_COUNT: 0 on the job's first run (or unset) */
  int32_t restart;       /* TORCHELASTIC_RESTART_COUNT: 0 for the first workers (or unset) */
  char attempt[40];      /* ".requeue<K>", ".restart<J>", both, or "" for a first attempt */
  char run[TBE_NAME_MAX + 1]; /* the run name of the job id and attempt, "" without a job id */
  char why[256];         /* a malformed variable that was ignored, "" if none */
} tbe_session_launcher;

/* Reads the launcher's variables through `get` (name -> value or NULL;
 * NULL: this process's environment, getenv) into *l.  A malformed value
 * is ignored (a rank above its world size, a size that is no number) and
 * l->why says which, for the caller to report. */
TBE_API void tbe_session_launcher_read(tbe_session_launcher *l,
                                       const char *(*get)(void *ctx, const char *name),
                                       void *ctx);

/* The host entry of a process of rank `rank` (-1: none) on host `host`
 * (NULL: this machine): "<host>.rank<N>", or the host itself, into
 * buf[0..size).  Returns 0, TBE_ENAME when the host or the result is not
 * a valid name (tbe_name_check), TBE_EINVAL when buf is too small. */
TBE_API int tbe_session_host_entry(const char *host, int32_t rank, char *buf, size_t size);

/* Makes the session's hidden spool folder, LOGDIR/.tbexport-spool-<pid>-<ns>
 * (mode 0700; LOGDIR and its parents made as needed), under the symlink
 * rule of tbexport/export.h: it must be new, and a symlink planted at its
 * name is refused (-ELOOP).  Its path goes into path[0..size).  Returns 0
 * or a negative code with where[0..wsize) naming the path concerned (both
 * may be NULL / 0). */
TBE_API int tbe_session_spool_dir(const char *logdir, char *path, size_t size, char *where,
                                  size_t wsize);

/* The variables the program's environment needs, given one at a time to
 * `set` (name, value): CUDA_INJECTION64_PATH (and NVTX_INJECTION64_PATH
 * when `o->trace` has TBE_TRACE_NVTX) = `inject_lib`, the spool folder
 * and the collector's options of `o` (trace, delay_s, duration_s,
 * capture, buffer_mb, flush_period_ms, keep_noisy_api, the hardware
 * metrics; the rest of `o` is the conversion's).  The capture range's
 * NVTX name and domain go too: the range profiler measures only launches
 * inside it (by NVTX callbacks, hence NVTX injection; each at most 255
 * bytes).  Operators (o->operators not TBE_OPS_OFF, NVTX traced): the
 * Python start-up hook's folder (tbe_session_python_hook) goes first on
 * PYTHONPATH (before the value in this process's environment) and
 * TBEXPORT_OPS says "1" or "shapes"; without the hook's folder they are
 * left out.  Returns 0, the first non-zero result of `set`, TBE_EINVAL or
 * TBE_ETOOBIG. */
TBE_API int tbe_session_environment(const tbe_profiler_options *o, const char *inject_lib,
                                    const char *spool_dir,
                                    int (*set)(void *ctx, const char *name, const char *value),
                                    void *ctx);

/* Whether `path` is a spool file, checked before anything is written:
 * returns 0 when it does not start like one (or is not a regular file,
 * or cannot be read: then importing it says why; a FIFO is never waited
 * on), 1 when it is a spool whose header reads (a cut
 * or corrupt tail only ends it early), or TBE_EFORMAT / TBE_ECORRUPT with
 * err->message "PATH: byte N: what" when it is a spool that cannot be
 * converted (err may be NULL). */
/* The folder of the Python start-up hook that turns on PyTorch's operator
 * ranges (sitecustomize.py; src/collect/python): "python" beside
 * `inject_lib`, into buf[0..size).  Returns 0, or TBE_ENOENT when it holds
 * no sitecustomize.py, TBE_EINVAL when buf is too small. */
TBE_API int tbe_session_python_hook(const char *inject_lib, char *buf, size_t size);

TBE_API int tbe_session_spool_check(const char *path, tbe_import_error *err);

typedef struct tbe_session_options {
  size_t size; /* sizeof the struct: set by tbe_session_options_init (common.h) */
  /* The spools: every <pid>.spool (and <pid>.note) of spool_dir, or, when
   * nfiles > 0, the files named. */
  const char *spool_dir;
  const char *const *files;
  size_t nfiles;
  int keep;                      /* keep the spools and their folder */
  /* Where the run goes (tbe_export_run; required): the host entries of
   * the processes as the launcher's ranks and the count of processes
   * make them (above: <host>, <host>_pid<N>, <host>.rank<N>), its host
   * NULL meaning this machine's name.  Without its run, one default name
   * for all. */
  const tbe_export_options *export_options;
  /* The session's own launcher (tbe_session_launcher_read, of the process
   * that runs the program), or NULL: its rank is that of a spool that
   * records none and of the run written when no process initialized
   * CUDA. */
  const tbe_session_launcher *launcher;
  /* Applied while converting, as tbe_profiler_options says. */
  int capture;                   /* tbe_capture_mode */
  const char *capture_name;
  const char *capture_domain;
  const char *steps_name;        /* --steps nvtx:NAME: steps from that range */
  const char *steps_domain;
  /* The program, for the run written when no process initialized CUDA:
   * one process with this pid and command line, spanning [start_ns,
   * stop_ns] (epoch ns), with a warning saying so. */
  int64_t program_pid;
  const char *program_cmd;
  int64_t start_ns, stop_ns;
  /* Messages (tbexport/common.h); NULL: none.  Called on this thread. */
  tbe_message_fn on_message;
  void *message_ctx;
  /* When no process recorded CUDA activity: 0 writes the run of the
   * program above, with the note; 1 writes no run and only says, in one
   * line, why (the collector could not start, no NVIDIA driver on this
   * machine, or the program never initialized CUDA). */
  int no_empty_run;
} tbe_session_options;

typedef struct tbe_session_result {
  tbe_profiler_result total;     /* sums over the processes; gpu_busy_pct
                                    weighted by each one's span */
  size_t processes;              /* spools found (converted, failed or busy) */
  /* What collecting cost, summed over the processes. */
  uint64_t collector_cpu_ns;     /* CPU time of the collectors' background threads */
  uint64_t buffer_bytes;         /* host memory of CUPTI buffers at the peak */
  uint64_t spool_bytes;          /* spool files converted */
} tbe_session_result;

/* Fills `o` with the defaults: nothing to convert, no capture range. */
TBE_API void tbe_session_options_init_sized(tbe_session_options *o, size_t size);
#define tbe_session_options_init(o) tbe_session_options_init_sized((o), sizeof(tbe_session_options))

/* Converts every spool into the run (one host entry per process when
 * there are several; a trace noting that no CUDA activity was recorded
 * when there is none), then removes what it converted and the folder when
 * empty, unless `keep`.  A spool that fails does not stop the others: it
 * is kept, and a message says how to convert it later.  Returns 0 or the
 * first error (TBE_EFORMAT / TBE_ECORRUPT: a spool that is not one of
 * this build; an export error); `result` (may be NULL) is filled in every
 * case. */
TBE_API int tbe_session_convert(const tbe_session_options *o, tbe_session_result *result);

#undef TBE_API
#define TBE_API TBE__API_STABLE

#ifdef __cplusplus
}
#endif

#endif
