/* tbexport/profiler.h: collecting GPU activity in-process with CUPTI.
 *
 *   tbe_profiler_options o;
 *   tbe_profiler_options_init(&o);
 *   o.logdir = "log_dir";
 *   tbe_profiler_start(&o);        // before or after CUDA is initialized
 *   for (...) {
 *     tbe_profiler_step();         // optional: the run's steps are the iterations
 *     ... CUDA work, NVTX ranges ...
 *   }
 *   tbe_profiler_stop(&result);    // flushes, converts, writes the run
 *
 * The collector uses the CUPTI Activity API only (no Callback API
 * subscription), so it coexists with tools that hold the subscriber slot.
 * Records are decoded on a background thread and spooled to a hidden file
 * under `logdir`; stop converts the spool into the run layout of
 * tbexport/export.h (XSpace, Chrome JSON, summary events) and removes it.
 *
 * NVTX: NVTX reads NVTX_INJECTION64_PATH once, at the process's first NVTX
 * call.  When NVTX tracing is on and that variable is unset, start sets it
 * to the libcupti it loaded, so ranges opened after start are recorded if
 * the program had made no NVTX call before (otherwise set the variable
 * before the program starts, or use `tbexport -- CMD`).
 *
 * To profile an unmodified program use the `tbexport -- CMD` command,
 * which injects the same collector through CUDA_INJECTION64_PATH.
 *
 * Built without CUDA, every function still exists: start and stop return
 * TBE_ENOCUPTI.  When libcupti cannot be loaded at run time, start returns
 * TBE_ENOCUPTI too (set TBEXPORT_CUPTI_LIB to its path).
 *
 * Crashes: while a session runs, fatal signals (SIGSEGV, SIGBUS, SIGABRT,
 * SIGFPE, SIGILL, SIGTERM, SIGINT) first flush what CUPTI holds into the
 * spool (2 s at most), then go on to the handler installed before start, or
 * to the default action (the program dies of the same signal).  Handlers
 * the program installs after start replace the collector's; stop puts the
 * earlier ones back.  The spool of a program that died stays in
 * `logdir/.tbexport-spool-PID-N/`; `tbexport import` converts it.
 *
 * Thread safety: start and stop must not race each other; one session per
 * process at a time (a second start returns TBE_EBUSY).  CUDA work may run on
 * any thread meanwhile. */
#ifndef TBEXPORT_PROFILER_H
#define TBEXPORT_PROFILER_H

#include <stddef.h>
#include <stdint.h>

#include "tbexport/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What to trace (tbe_profiler_options.trace). */
#define TBE_TRACE_CUDA 0x1u    /* kernels, copies, memsets, runtime API, syncs, devices, overhead */
#define TBE_TRACE_NVTX 0x2u    /* NVTX ranges and marks (CUPTI marker records) */
/* TBE_TRACE_MEMORY: CUDA allocations and frees (CUPTI's MEMORY2: device,
 * pinned host, managed, async pools) and each GPU's device memory in use
 * sampled by NVML at 10 Hz, on by default; a mask without it records
 * none of that. */
#define TBE_TRACE_MEMORY 0x4u  /* CUDA memory (above) */
#define TBE_TRACE_DRIVER 0x8u  /* CUDA driver API calls */
#define TBE_TRACE_DEFAULT (TBE_TRACE_CUDA | TBE_TRACE_NVTX | TBE_TRACE_MEMORY)

/* Hardware metrics (tbe_profiler_options.gpu_metrics_hz, kernel_metrics). */
#define TBE_GPU_METRICS_DEFAULT_HZ 10000u
enum {
  TBE_KMETRICS_OFF = 0,
  TBE_KMETRICS_DEFAULT = 1, /* SM and memory throughput %, achieved occupancy,
                               tensor pipe %, L2 hit rate, DRAM throughput %,
                               duration: ncu's metric names */
  TBE_KMETRICS_BRIEF = 2    /* SM and memory throughput %, duration (fewer
                               replay passes) */
};

/* Framework operators (tbe_profiler_options.operators): `tbexport -- CMD`
 * turns on PyTorch's operator ranges in the Python processes of CMD that
 * import torch (a start-up hook; the program is not changed), and the
 * collector reads them into operators with their kernels. */
enum {
  TBE_OPS_ON = 0,     /* operators, without input shapes (the default: 1.0x) */
  TBE_OPS_OFF = 1,    /* none */
  TBE_OPS_SHAPES = 2  /* operators with their input shapes (PyTorch formats
                         each operator's shapes as text: it costs the
                         program more, see README) */
};

/* Capture range (tbe_profiler_options.capture). */
typedef enum tbe_capture_mode {
  TBE_CAPTURE_ALL = 0,        /* everything between start and stop */
  TBE_CAPTURE_NVTX = 1,       /* only inside NVTX ranges named capture_name */
  TBE_CAPTURE_PROFILER_API = 2 /* only between cudaProfilerStart and cudaProfilerStop */
} tbe_capture_mode;

typedef struct tbe_profiler_options {
  size_t size;              /* sizeof the struct: set by tbe_profiler_options_init (common.h) */
  unsigned trace;           /* TBE_TRACE_* mask; 0 means TBE_TRACE_DEFAULT */
  double delay_s;           /* start collecting this long after start (0: at once) */
  double duration_s;        /* stop collecting after this long (0: until stop) */
  int capture;              /* tbe_capture_mode */
  const char *capture_name; /* NVTX range name for TBE_CAPTURE_NVTX */
  const char *capture_domain; /* its NVTX domain; NULL = any domain */
  size_t buffer_mb;         /* cap on the memory of host activity buffers;
                               0 = 64; beyond it records are dropped and
                               counted */
  int keep_noisy_api;       /* keep cudaGetDevice, cudaGetLastError, ... */
  unsigned flush_period_ms; /* CUPTI's buffers are flushed to the spool this
                               often, so a killed program loses at most about
                               this much activity; 0 = 1000 */
  /* Hardware metrics (CUPTI's profiling API: counters are readable by
   * admin users only unless the driver allows everyone,
   * NVreg_RestrictProfilingToAdminUsers=0).  Where a GPU, its driver or
   * another profiler refuses, one message says which and the activity
   * trace is collected as without them. */
  unsigned gpu_metrics_hz;  /* PM sampling of the GPU's counters (SM active,
                               occupancy, tensor pipe, DRAM, PCIe, NVLink,
                               clocks) this many times a second; 0 = off.
                               TBE_GPU_METRICS_DEFAULT_HZ is nsys's rate */
  unsigned kernel_metrics;  /* TBE_KMETRICS_*: per-kernel figures from the
                               range profiler, which replays and so
                               serializes the kernels it measures; 0 = off */
  unsigned kernel_metrics_launches; /* measure the first this many launches
                               of each kernel name; 0 = 3 */
  unsigned operators;       /* TBE_OPS_*: only `tbexport -- CMD` (the session
                               environment) can reach a program's Python;
                               tbe_profiler_start ignores it */
  /* Where the run is written (see tbexport/export.h). */
  const char *logdir;       /* required */
  const char *run;          /* NULL: the launcher's job id when the process
                               has a rank ("torch-<id>", "slurm-<job>.<step>",
                               ...: every rank joins it), else local time
                               as YYYY_MM_DD_HH_MM_SS.  Named at start:
                               without `force`, a run that already has
                               outputs for this host entry moves on to
                               RUN_2, RUN_3, ... (a warning says so), as
                               `tbexport -- CMD` does */
  const char *host;         /* NULL: this machine's name; a process with a
                               launcher's rank N is the host entry
                               "<host>.rank<N>" (tbexport/session.h) */
  unsigned outputs;         /* TBE_OUT_* mask; 0 means all */
  int force;                /* replace existing files */
  /* Messages (tbexport/common.h): why libcupti could not be loaded, what
   * CUPTI refused, records dropped because the spool could not be
   * written, what stop left out or kept.  NULL: none.  Called from the
   * calling thread or from the collector's background thread (never two
   * at once), until stop returns. */
  tbe_message_fn on_message;
  void *message_ctx;
} tbe_profiler_options;

/* What a session collected (filled by tbe_profiler_stop). */
typedef struct tbe_profiler_result {
  uint64_t kernels;
  uint64_t copies;           /* memcpy records */
  uint64_t memsets;
  uint64_t api_calls;        /* runtime + driver API records */
  uint64_t nvtx_ranges;
  uint64_t nvtx_marks;
  uint64_t dropped_records;  /* lost: no buffer, spool write failure */
  uint64_t dropped_out_of_range; /* zero or inverted timestamps */
  uint64_t overhead_ns;      /* CUPTI's own overhead records, summed */
  int64_t start_ns, stop_ns; /* epoch ns of the session */
  double gpu_busy_pct;       /* union of GPU activity / session time, 0..100 */
  uint64_t steps;            /* steps in the run (tbe_profiler_step, or derived) */
} tbe_profiler_result;

/* Fills `o` with the defaults (logdir NULL). */
TBE_API void tbe_profiler_options_init_sized(tbe_profiler_options *o, size_t size);
#define tbe_profiler_options_init(o) \
  tbe_profiler_options_init_sized((o), sizeof(tbe_profiler_options))

/* Parses a comma-separated kind list ("cuda,nvtx,memory,driver", also
 * "none") into a TBE_TRACE_* mask.  Returns 0 or TBE_EINVAL with the
 * offending word's offset in *bad_at (if not NULL). */
TBE_API int tbe_profiler_parse_trace(const char *list, unsigned *mask, size_t *bad_at);

/* Parses a capture range or a step range as the command line spells it:
 * "nvtx:NAME[@DOMAIN]" (the last '@' starts the domain; NAME and DOMAIN
 * not empty), "cudaProfilerApi" or "none".  Sets *mode (tbe_capture_mode)
 * and copies NAME and DOMAIN into buf[0..size) (strlen(arg) + 1 bytes
 * always suffice), pointing *name and *domain at the copies (NULL when
 * absent).  Returns 0, TBE_EINVAL (not such a range) or TBE_ETOOBIG (buf
 * too small). */
TBE_API int tbe_profiler_parse_range(const char *arg, int *mode, char *buf, size_t size,
                                     const char **name, const char **domain);

/* Parses a non-negative number of seconds: "2", "0.5", "1.5s", "200ms".
 * Returns 0 or TBE_EINVAL. */
TBE_API int tbe_profiler_parse_seconds(const char *s, double *out);

/* Parses a kernel-metrics set name ("default", "brief") into a
 * TBE_KMETRICS_* value.  Returns 0 or TBE_EINVAL. */
TBE_API int tbe_profiler_parse_kernel_metrics(const char *set, unsigned *out);

/* Starts collecting.  Returns 0; TBE_EINVAL (no logdir, bad names);
 * TBE_EBUSY (a session is active, or this process is being profiled by
 * `tbexport -- CMD`); TBE_ENOCUPTI (built without CUDA or libcupti not
 * loadable); TBE_ECUPTI (CUPTI refused; on_message says why); or an
 * I/O error creating the spool. */
TBE_API int tbe_profiler_start(const tbe_profiler_options *o);

/* Marks the start of the program's next step (torch.profiler's step()):
 * the first call starts step 0, each call ends the step before it, and
 * tbe_profiler_stop (or the end of collection) ends the last.  The run's
 * steps are then these (the per-step table of `tbexport summary`, xprof's
 * step markers) instead of steps found by name; `--steps nvtx:NAME`, when
 * also given, wins.  Steps that begin outside what is kept (--delay,
 * --duration, a capture range) are left out and keep their numbers; the
 * one in progress when collection stops ends there.
 *
 * Cheap (a CUPTI timestamp and a short lock; no allocation in the steady
 * state, nothing written at once) and thread-safe: any application thread
 * may call it; each step records the thread that marked it.
 *
 * Under `tbexport -- CMD` (when the program links libtbexport) the call
 * reaches the injected collector of the process: the run written after the
 * program ends has these steps.  Calls made before the process initialized
 * CUDA (or made its first NVTX call) are not recorded, as nothing is
 * collecting yet; they return TBE_ESTATE.
 *
 * Returns 0; TBE_ESTATE (no session collecting in this process);
 * TBE_ENOCUPTI (built without CUDA and not under `tbexport -- CMD`). */
TBE_API int tbe_profiler_step(void);

/* Stops collecting, flushes every buffer, converts the session into the
 * run and writes it.  `result` may be NULL.  Returns 0, TBE_ESTATE (no
 * session), TBE_ENOCUPTI, or the export's error (the session is over in all
 * cases). */
TBE_API int tbe_profiler_stop(tbe_profiler_result *result);

#ifdef __cplusplus
}
#endif

#endif
