/* hwmetrics.c: what PM sampling (pmsampling.c) and the range profiler
 * (rangeprof.c) share (hwmetrics.h): CUPTI's errors as statuses, the
 * queue of failures written by the background thread's tick (a status
 * item, a note, one line per kind and status for the user), and the
 * spool's metric ids with their definitions.
 *
 * Invariants: failures are queued under S.mu from any thread and written
 * only by the decoding thread; metric ids and their definitions belong to
 * the decoding thread; an id's TBE__SP_METRIC_DEF precedes, in the batch,
 * every item that uses it (again after a lost frame: tbe__hwm_redefine). */
#include "collect/hwmetrics.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TBE__MAXMET 64
#define TBE__MAXFAIL 64

typedef struct fail {
  unsigned kind, status;
  uint32_t device;
  char reason[240];
} fail;

static struct {
  pthread_mutex_t mu;       /* fails, nfail, said */
  CUptiResult (*result_string)(CUptiResult r, const char **s);
  struct {
    char *name, *source;
    unsigned unit;
    int defined;
  } met[TBE__MAXMET];
  uint32_t nmet;
  fail fails[TBE__MAXFAIL];
  unsigned nfail;
  unsigned said[3];         /* per kind: statuses already said (bit per status) */
} S = {.mu = PTHREAD_MUTEX_INITIALIZER};

void tbe__hwm_reset(CUptiResult (*result_string)(CUptiResult r, const char **s)) {
  for (uint32_t i = 0; i < S.nmet; i++) {
    free(S.met[i].name);
    free(S.met[i].source);
  }
  S.nmet = 0;
  pthread_mutex_lock(&S.mu);
  S.result_string = result_string;
  S.nfail = 0;
  memset(S.said, 0, sizeof S.said);
  pthread_mutex_unlock(&S.mu);
}

/* ---- errors and statuses ---- */

const char *tbe__hwm_err(CUptiResult r) {
  const char *s = NULL;
  if (S.result_string && S.result_string(r, &s) == CUPTI_SUCCESS && s) return s;
  return "CUPTI error";
}

unsigned tbe__hwm_status_of(CUptiResult r) {
  switch (r) {
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES: return TBE__MS_NO_PERMISSION;
    case CUPTI_ERROR_HARDWARE_BUSY:
    case CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED:
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED: return TBE__MS_BUSY;
    case CUPTI_ERROR_NOT_SUPPORTED:
    case CUPTI_ERROR_NOT_COMPATIBLE:
    case CUPTI_ERROR_API_NOT_IMPLEMENTED:
    case CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED:
    case CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_INVALID_CHIP_NAME: return TBE__MS_UNSUPPORTED;
    default: return TBE__MS_FAILED;
  }
}

void tbe__hwm_fail(unsigned kind, uint32_t device, unsigned status, const char *what,
                   CUptiResult r) {
  fail f;
  memset(&f, 0, sizeof f);
  f.kind = kind;
  f.device = device;
  f.status = status;
  const char *err = r == CUPTI_SUCCESS ? NULL : tbe__hwm_err(r);
  switch (status) {
    case TBE__MS_NO_PERMISSION:
      snprintf(f.reason, sizeof f.reason,
               "no permission to read the GPU's performance counters (%s: the driver allows "
               "admin users only, NVreg_RestrictProfilingToAdminUsers=1)",
               what);
      break;
    case TBE__MS_BUSY:
      snprintf(f.reason, sizeof f.reason, "another profiler holds the GPU's counters (%s: %s)",
               what, err ? err : "busy");
      break;
    case TBE__MS_UNSUPPORTED:
      snprintf(f.reason, sizeof f.reason, "not supported here (%s%s%s)", what, err ? ": " : "",
               err ? err : "");
      break;
    default:
      snprintf(f.reason, sizeof f.reason, "%s failed%s%s", what, err ? ": " : "", err ? err : "");
  }
  pthread_mutex_lock(&S.mu);
  if (S.nfail < TBE__MAXFAIL) S.fails[S.nfail++] = f;
  pthread_mutex_unlock(&S.mu);
}

void tbe__hwm_put_status(tbe__hwm_out *o, unsigned kind, uint32_t device, unsigned status,
                         uint64_t samples, uint64_t overflow, uint64_t stale,
                         const char *reason) {
  uint8_t body[sizeof(tbe__sp_metric_status) + 256];
  tbe__sp_metric_status st;
  memset(&st, 0, sizeof st);
  st.kind = kind;
  st.device = device;
  st.status = status;
  st.samples = samples;
  st.overflow = overflow;
  st.stale = stale > UINT32_MAX ? UINT32_MAX : (uint32_t)stale;
  size_t rl = reason ? strlen(reason) : 0;
  if (rl > 256) rl = 256;
  memcpy(body, &st, sizeof st);
  if (rl) memcpy(body + sizeof st, reason, rl);
  tbe__spool_item(o->batch, TBE__SP_METRIC_STATUS, body, sizeof st + rl);
}

/* Writes the queued failures: a status item and a note each, and one line
 * per kind and status for the user. */
void tbe__hwm_drain_fails(tbe__hwm_out *o) {
  fail fs[TBE__MAXFAIL];
  unsigned n, said_before[3];
  pthread_mutex_lock(&S.mu);
  n = S.nfail;
  memcpy(fs, S.fails, n * sizeof *fs);
  S.nfail = 0;
  memcpy(said_before, S.said, sizeof said_before);
  pthread_mutex_unlock(&S.mu);
  for (unsigned i = 0; i < n; i++) {
    const fail *f = &fs[i];
    const char *what = f->kind == TBE__MKIND_PM_SAMPLING ? "GPU metrics (PM sampling)"
                                                         : "kernel metrics (range profiler)";
    char line[400];
    if (f->device == UINT32_MAX)
      snprintf(line, sizeof line, "%s off: %s; the activity trace is still collected", what,
               f->reason);
    else
      snprintf(line, sizeof line, "%s off on device %u: %s; the activity trace is still collected",
               what, f->device, f->reason);
    tbe__hwm_put_status(o, f->kind, f->device, f->status, 0, 0, 0, f->reason);
    tbe__spool_item(o->batch, TBE__SP_NOTE, line, strlen(line));
    unsigned k = f->kind < 3 ? f->kind : 0, bit = 1u << f->status;
    if (!(said_before[k] & bit)) {
      said_before[k] |= bit;
      if (o->say) o->say(o->say_ctx, line);
    }
  }
  pthread_mutex_lock(&S.mu);
  memcpy(S.said, said_before, sizeof said_before);
  pthread_mutex_unlock(&S.mu);
}

/* ---- metric ids ---- */

uint32_t tbe__hwm_metric_id(tbe__hwm_out *o, const char *name, const char *source,
                            unsigned unit) {
  uint32_t i;
  for (i = 0; i < S.nmet; i++)
    if (strcmp(S.met[i].name, name) == 0 && strcmp(S.met[i].source, source) == 0) break;
  if (i == S.nmet) {
    if (S.nmet == TBE__MAXMET) return 0;
    char *a = strdup(name), *b = strdup(source);
    if (!a || !b) {
      free(a);
      free(b);
      return 0;
    }
    S.met[i].name = a;
    S.met[i].source = b;
    S.met[i].unit = unit;
    S.met[i].defined = 0;
    S.nmet++;
  }
  if (!S.met[i].defined) {
    tbe__sp_metric_def d = {i + 1, o->str(o->str_ctx, S.met[i].name),
                            o->str(o->str_ctx, S.met[i].source), S.met[i].unit};
    tbe__spool_item(o->batch, TBE__SP_METRIC_DEF, &d, sizeof d);
    S.met[i].defined = 1;
  }
  return i + 1;
}

static unsigned redefinitions; /* decoding thread */

unsigned tbe__hwm_redefinitions(void) { return redefinitions; }

void tbe__hwm_redefine(void) {
  redefinitions++;
  for (uint32_t i = 0; i < S.nmet; i++) S.met[i].defined = 0;
}

/* ---- the exit hook's registration ---- */

static void (*exit_fn)(void); /* pmsampling.c's hook */
static int exit_hooks;        /* registrations so far */

static void run_exit_hook(void) {
  void (*f)(void) = __atomic_load_n(&exit_fn, __ATOMIC_ACQUIRE);
  if (f) f();
}

void tbe__hwm_exit_hook_set(void (*fn)(void)) { __atomic_store_n(&exit_fn, fn, __ATOMIC_RELEASE); }

void tbe__hwm_exit_hook(void) {
  /* A few registrations at most, each later than CUPTI's handlers of the
   * moment; the hook itself acts once. */
  if (__atomic_add_fetch(&exit_hooks, 1, __ATOMIC_ACQ_REL) <= 4) atexit(run_exit_hook);
}

/* Images left to CUPTI at exit (its objects not disabled keep pointers to
 * them): held here until the process ends. */
static void *kept[256];
static unsigned nkept;

void tbe__hwm_keep(void *p) {
  if (!p) return;
  unsigned i = __atomic_fetch_add(&nkept, 1, __ATOMIC_ACQ_REL);
  if (i < sizeof kept / sizeof kept[0]) __atomic_store_n(&kept[i], p, __ATOMIC_RELEASE);
}
