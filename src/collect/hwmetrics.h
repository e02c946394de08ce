/* hwmetrics.h: hardware metrics beside the activity trace (issue 17): PM
 * sampling of the GPU's counters into a timeline (pmsampling.c) and
 * per-kernel figures from the range profiler (rangeprof.c).  Private to
 * src/collect; the collector (collector.c) starts, ticks and stops it.
 *
 * What lands in the spool (events/spool.h): TBE__SP_METRIC_DEF for every
 * (short name, CUPTI metric) pair before its first use; TBE__SP_METRIC_SAMPLES
 * per device as the samples are decoded; TBE__SP_KERNEL_METRICS per
 * (kernel name, device) once its launches are measured (or at stop, or
 * at a fatal signal, with the launches measured so far);
 * TBE__SP_METRIC_STATUS per kind and device when a collection fails (at
 * once) and while it runs (cumulative: samples, overflow and stale, the last one
 * counts), and a TBE__SP_NOTE plus one message per kind and failure.
 *
 * Threads.  PM sampling is owned by the collector's background thread:
 * the CUPTI callback (a context was created, a kernel is being launched)
 * only marks the device wanted, and the next tick enables sampling there,
 * drains CUPTI's hardware buffer and appends the items: the samples
 * evaluated, or (deferred, the default) the raw images that the
 * conversion evaluates (pmeval.c).  The range profiler runs on the
 * application's launching thread (CUPTI replays the kernel inside the
 * launch call), keeps its figures
 * per kernel name under its own lock, and the tick writes them.  Items
 * and spool strings are only made by the decoding thread (tbe__hwm_out).
 *
 * Failures never stop the activity trace: no counter permission
 * (NVreg_RestrictProfilingToAdminUsers), another profiler holding the
 * counters, an unsupported GPU or CUPTI, a callback subscriber already
 * taken: a status item and a line saying which. */
#ifndef TBE_COLLECT_HWMETRICS_H
#define TBE_COLLECT_HWMETRICS_H

#include <stddef.h>
#include <stdint.h>

#include "collect/cupti_host.h"
#include "common/buf.h"
#include "events/spool.h"

/* Where the tick's items go (the decoding thread's). */
typedef struct tbe__hwm_out {
  tbe__buf *batch;
  uint32_t (*str)(void *ctx, const char *s); /* spool string id, defined on first use */
  void *str_ctx;
  void (*say)(void *ctx, const char *line);  /* one warning line for the user */
  void *say_ctx;
} tbe__hwm_out;

typedef struct tbe__hwm_config {
  unsigned pm_hz;           /* PM sampling rate; 0 = off */
  unsigned kernel_set;      /* TBE_KMETRICS_*; 0 = off */
  unsigned kernel_launches; /* per kernel name; 0 = 3 */
  unsigned capture;         /* tbe_capture_mode: the range profiler measures only
                               launches inside it (rpcapture.c) */
  const char *capture_name, *capture_domain; /* its NVTX range (copied) */
  unsigned pm_eval;         /* TBE__PM_EVAL_*: where PM samples are evaluated */
} tbe__hwm_config;

/* Where PM samples are evaluated (pmsampling.c's essay): as they are
 * decoded, in the program's process (live), or at conversion from the
 * raw counter data images the spool keeps (deferred).  DEFAULT reads
 * TBEXPORT_PM_EVAL (live|deferred), else TBE__PM_EVAL_DEFAULT_IS. */
enum { TBE__PM_EVAL_DEFAULT = 0, TBE__PM_EVAL_LIVE = 1, TBE__PM_EVAL_DEFERRED = 2 };
#define TBE__PM_EVAL_DEFAULT_IS TBE__PM_EVAL_DEFERRED

/* Starts what cfg asks for: subscribes to CUPTI's context and launch
 * callbacks and marks the device of the current context (if any) wanted.
 * Failures are recorded for the first tick.  Returns 1 when something was
 * asked for (ticks are wanted), else 0.  `api` must outlive the session;
 * `timestamp` (cuptiGetTimestamp, may be NULL) times measured launches. */
int tbe__hwm_start(const tbe__cupti_metrics_api *api,
                   CUptiResult (*result_string)(CUptiResult r, const char **s),
                   CUptiResult (*timestamp)(uint64_t *ts), const tbe__hwm_config *cfg);
/* The background thread's turn: enables wanted devices, drains the
 * samples, writes statuses and finished kernel figures.  Returns the
 * seconds until it wants the next turn.  With final != 0 (a fatal
 * signal), also the figures of kernels not yet measured N times. */
double tbe__hwm_tick(tbe__hwm_out *o, int final);
/* Stops sampling (a last drain), writes every figure and the final
 * statuses, unsubscribes and frees.  Decoding thread, after the
 * background thread ended. */
void tbe__hwm_stop(tbe__hwm_out *o);
/* The metric definitions are written again with the next items (a frame
 * that held them was lost). */
void tbe__hwm_redefine(void);
/* How many times tbe__hwm_redefine ran (decoding thread): what the
 * deferred mode's TBE__SP_PM_CONFIG is written again after. */
unsigned tbe__hwm_redefinitions(void);

/* pmeval.c: the deferred PM evaluation at conversion.  Evaluates the raw
 * counter data images of the spool at `path` with the profiler host API
 * `host` (NULL: libcupti's, loaded through cupti_load.c) and appends the
 * samples (TBE__SP_METRIC_SAMPLES) and one TBE__SP_PM_EVALUATED per
 * device as frames of the spool; where they cannot be evaluated, a
 * TBE__SP_METRIC_STATUS saying why instead.  A spool without raw images,
 * or evaluated before, is left as it is.  Returns 0 (*why empty, or one
 * line saying what failed and was recorded so), or an error with *why
 * set when the spool could not be read or appended to. */
int tbe__pm_eval_spool(const char *path, const tbe__cupti_host_api *host, char *why,
                       size_t whylen);

/* ---- shared by pmsampling.c and rangeprof.c (hwmetrics.c) ---- */

/* Forgets the queued failures and metric ids; sets CUPTI's error text. */
void tbe__hwm_reset(CUptiResult (*result_string)(CUptiResult r, const char **s));
/* Writes the queued failures (decoding thread). */
void tbe__hwm_drain_fails(tbe__hwm_out *o);
/* Writes a status item (stale: PM samples left out for their time). */
void tbe__hwm_put_status(tbe__hwm_out *o, unsigned kind, uint32_t device, unsigned status,
                         uint64_t samples, uint64_t overflow, uint64_t stale,
                         const char *reason);

/* The spool metric id of (name, source), its TBE__SP_METRIC_DEF written
 * into o->batch first when new or redefined (decoding thread). */
uint32_t tbe__hwm_metric_id(tbe__hwm_out *o, const char *name, const char *source,
                            unsigned unit);
/* Records a failure of `kind` on `device` for the next tick (any thread):
 * a status item, a note, and one line per kind and status. */
void tbe__hwm_fail(unsigned kind, uint32_t device, unsigned status, const char *what,
                   CUptiResult r);
/* TBE__MS_* for a CUPTI error. */
unsigned tbe__hwm_status_of(CUptiResult r);
/* CUPTI's text for r. */
const char *tbe__hwm_err(CUptiResult r);

/* Registers (atexit) the hook that releases CUPTI's profiler objects at
 * the process's exit before CUPTI's own exit handlers run (pmsampling.c
 * says why); called after CUPTI's first profiler calls of a kind, from
 * any thread.  The hook runs once. */
void tbe__hwm_exit_hook(void);
/* The function the registered hook runs (tbe__hwm_at_exit; hwmetrics.c
 * registers, pmsampling.c acts). */
void tbe__hwm_exit_hook_set(void (*fn)(void));
/* Keeps an image CUPTI's undisabled object still points to, until the
 * process ends (the exit path). */
void tbe__hwm_keep(void *p);
/* The hook itself (what exit() runs; tests call it as exit would): stops
 * and releases PM sampling and the range profiler while the collector's
 * background thread runs.  Once per session. */
void tbe__hwm_at_exit(void);

/* rangeprof.c, driven by pmsampling.c's callback and tick. */
int tbe__rp_start(const tbe__cupti_metrics_api *api, CUptiResult (*timestamp)(uint64_t *ts),
                  unsigned set, unsigned launches);
void tbe__rp_launch(const CUpti_CallbackData *cb, uint32_t device); /* launch enter/exit */
void tbe__rp_context_destroyed(CUcontext ctx);
/* Releases every context's profiler objects (the exit hook); launches are
 * not measured after it, the figures stay for tbe__rp_stop. */
void tbe__rp_release(void);
void tbe__rp_emit(tbe__hwm_out *o, int all);
void tbe__rp_stop(tbe__hwm_out *o);

/* rpcapture.c: whether the capture range is open now, from CUPTI's
 * callbacks on the profiler calls (cudaProfilerApi) or NVTX calls.
 * tbe__rpc_start enables those callbacks on `sub` (CUPTI's refusal: then
 * nothing is inside); tbe__rpc_inside is 1 without a capture range. */
CUptiResult tbe__rpc_start(const tbe__cupti_metrics_api *m, CUpti_SubscriberHandle sub,
                           unsigned mode, const char *name, const char *domain);
void tbe__rpc_callback(CUpti_CallbackDomain dom, CUpti_CallbackId cbid, const void *data);
int tbe__rpc_is_profiler_call(CUpti_CallbackDomain dom, CUpti_CallbackId cbid);
int tbe__rpc_inside(void);
void tbe__rpc_stop(void);

#endif
