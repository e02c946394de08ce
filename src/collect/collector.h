/* collector.h: the CUPTI activity collector shared by the injection library
 * (libtbexport_inject.so) and the in-process profiler (tbe_profiler_start).
 *
 * Every CUPTI call goes through one function table, tbe__cupti_api, so the
 * unit tests can hand the collector a fake that delivers buffers of real
 * CUPTI record structs.  The collector is a process-wide singleton because
 * CUPTI's buffer callbacks carry no user pointer.
 *
 * Threads: CUPTI calls buffer_requested / buffer_completed on its own and on
 * application threads; those only move buffers between a free stack and a
 * queue under a mutex.  A background thread decodes completed buffers into
 * spool items (events/spool.h), zeroes and recycles the buffers, writes
 * the items, switches collection on/off for delay/duration and flushes
 * periodically.  start/stop must not race each other.
 *
 * Memory: buffer_cap bounds the bytes the buffers can make resident (what
 * CUPTI may fill, what awaits decoding, what is kept warm), not the number
 * of buffers, so that tens of threads, each with a buffer of its own, fit.
 *
 * Signals: with catch_signals, a fatal signal (SIGSEGV, SIGBUS, SIGABRT,
 * SIGFPE, SIGILL, SIGTERM, SIGINT) makes the collector flush and spool what
 * CUPTI holds (waiting 2 s at most) before the signal goes on to the
 * program's previous handler or its default action; see collector_signals.c. */
#ifndef TBE_COLLECT_COLLECTOR_H
#define TBE_COLLECT_COLLECTOR_H

#include <stddef.h>
#include <stdint.h>

#include "collect/cupti_abi.h" /* <cupti.h>, or our declarations of it */

#include "collect/cupti_host.h"
#include "events/spool.h"


typedef struct tbe__cupti_api {
  CUptiResult (*activity_enable)(CUpti_ActivityKind kind);
  CUptiResult (*activity_disable)(CUpti_ActivityKind kind);
  CUptiResult (*activity_enable_and_dump)(CUpti_ActivityKind kind); /* may be NULL */
  CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc req,
                                    CUpti_BuffersCallbackCompleteFunc done);
  CUptiResult (*get_next_record)(uint8_t *buf, size_t valid, CUpti_Activity **rec);
  CUptiResult (*get_num_dropped)(CUcontext ctx, uint32_t stream, size_t *dropped);
  CUptiResult (*flush_all)(uint32_t flag);
  CUptiResult (*set_attribute)(CUpti_ActivityAttribute attr, size_t *size, void *value);
  CUptiResult (*enable_runtime_api)(CUpti_CallbackId cbid, uint8_t enable); /* may be NULL */
  CUptiResult (*enable_driver_api)(CUpti_CallbackId cbid, uint8_t enable);  /* may be NULL */
  CUptiResult (*get_callback_name)(CUpti_CallbackDomain dom, uint32_t cbid, const char **name);
  CUptiResult (*get_version)(uint32_t *version);
  CUptiResult (*get_result_string)(CUptiResult r, const char **s); /* may be NULL */
  CUptiResult (*set_thread_id_type)(CUpti_ActivityThreadIdType type); /* may be NULL */
  CUptiResult (*get_timestamp)(uint64_t *ts);
  /* libcupti's NVTX injection entry (InitializeInjectionNvtx2); may be NULL. */
  int (*nvtx_init)(const void *(*get_export_table)(uint32_t));
  tbe__cupti_metrics_api m; /* hardware metrics; any entry may be NULL */
} tbe__cupti_api;

/* Fills `api` from libcupti: the library already loaded in the process if
 * any, else dlopen of $TBEXPORT_CUPTI_LIB, libcupti.so.13, libcupti.so and
 * the build-time location.  Returns 0 or TBE_ENOCUPTI with a reason in
 * `why` (NUL-terminated). */
int tbe__cupti_load(tbe__cupti_api *api, char *why, size_t whylen);

typedef struct tbe__collect_config {
  unsigned trace;          /* TBE_TRACE_* */
  double delay_s, duration_s;
  unsigned capture;        /* tbe_capture_mode, recorded in the spool only */
  size_t buffer_cap;       /* bytes the buffers may hold; 0 = 64 MiB */
  size_t buffer_size;      /* bytes per buffer; 0 = sized per request from
                              what the cap leaves (collector.c) */
  unsigned flush_ms;       /* periodic non-forced flush; 0 = none */
  int keep_noisy;          /* keep cudaGetDevice & co. */
  int catch_signals;       /* flush on fatal signals (see above) */
  uint32_t flags;          /* TBE__SPF_* */
  const char *spool_path;  /* file to create (O_EXCL) */
  /* Hardware metrics (hwmetrics.h): PM sampling at this rate, 0 = off;
   * the range profiler's metric set (TBE_KMETRICS_*), 0 = off, over the
   * first kernel_launches launches of each kernel name (0 = 3). */
  unsigned gpu_metrics_hz;
  unsigned kernel_metrics;
  unsigned kernel_launches;
  /* The capture range's NVTX name and domain (NULL: none, any domain),
   * for the range profiler, which measures only launches inside the
   * capture range (`capture`). */
  const char *capture_name, *capture_domain;
  /* NVTX is recorded by the collector's own handlers (nvtxhook.h: the
   * injection library is the program's NVTX tool), not as CUPTI's marker
   * records. */
  int nvtx_hook;
  /* Each GPU's device memory in use sampled from NVML (nvml.h) on the
   * background thread while collection is on, with TBE_TRACE_MEMORY in
   * `trace`; where NVML is missing or refuses, a note in the spool. */
  int nvml;
  /* What went wrong while collecting (CUPTI refusing a call, a spool
   * write that failed), one line each (tbexport/common.h); NULL: none.
   * Called from the starting thread or the background thread, never two
   * at once, with text that is not yet in line form (the spool's path is
   * the caller's).  The collector itself never prints. */
  tbe_message_fn on_message;
  void *message_ctx;
} tbe__collect_config;

/* Starts the singleton.  Returns 0, TBE_EBUSY, TBE_ECUPTI (a message names
 * the call and CUPTI's message), or an I/O error. */
int tbe__collector_start(const tbe__cupti_api *api, const tbe__collect_config *cfg);
/* Disables the kinds, forces a flush, drains and writes the end of the
 * spool, closes it.  `stats` may be NULL.  Returns 0, TBE_ESTATE if not
 * running, or the first spool write error. */
int tbe__collector_stop(tbe__sp_stats *stats);
/* 1 while running in this process (0 in a forked child). */
int tbe__collector_running(void);
/* The buffers' memory: *held, the bytes counted against buffer_cap now;
 * *peak, the most since start (also the spool stats' buffer_bytes);
 * *resident, the bytes of the buffers' mapping resident in memory
 * (mincore; meant for tests).  Any pointer may be NULL; *held and
 * *resident are 0 when not running. */
void tbe__collector_memory(size_t *held, size_t *peak, size_t *resident);
/* tbe_profiler_step: the calling thread marks the start of the program's
 * next step (a TBE__SP_STEP item).  Thread-safe, any thread; no CUPTI call
 * but a timestamp.  Returns 0, or TBE_ESTATE when not running in this
 * process. */
int tbe__collector_step(void);


#endif
