/* rpcapture.c: the capture range as the program runs, for the range
 * profiler (hwmetrics.h).
 *
 * The capture range itself is applied when the spool is read (the
 * importer keeps the activity inside its windows), but the range
 * profiler must choose its launches while they happen: with a capture
 * range it measures only launches made while one is open, so that a
 * kernel's figures come from the launches the user asked about, not from
 * a warm-up before them.  "Open" follows the importer's windows:
 *   - cudaProfilerApi: from the end of a cudaProfilerStart (or
 *     cuProfilerStart) to the start of the next stop, any thread;
 *   - nvtx:NAME[@DOMAIN]: while any range of that message (in that
 *     domain; any domain without one) is open, any thread: push/pop
 *     ranges are matched on their thread's stack (per domain), start/end
 *     ranges by their id.
 * Read from CUPTI's callbacks on the hardware metrics' subscriber: the
 * profiler calls' runtime and driver callbacks, and the NVTX domain's
 * (CUPTI calls back once per NVTX call, after it, when it is NVTX's
 * injected implementation: nvtx in --trace).  Messages are matched when
 * ASCII (nvtx*A, or an Ex call's ASCII message); wide and registered
 * messages never open the range.  A thread's push stack is tracked 64
 * deep (deeper pushes are counted, never matched). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "collect/hwmetrics.h"
#include "tbexport/profiler.h"

#define TBE__RPC_DEPTH 64
#define TBE__RPC_IDS 256    /* start/end ranges of the name open at once */
#define TBE__RPC_DOMAINS 64 /* domains created, by handle */

static struct {
  pthread_mutex_t mu;
  unsigned mode;     /* TBE_CAPTURE_*; ALL: every launch is inside */
  char *name, *domain;
  int open;          /* ranges of the name open (NVTX), or started (profiler API) */
  uint64_t ids[TBE__RPC_IDS];
  unsigned nids;
  nvtxDomainHandle_t dom[TBE__RPC_DOMAINS];
  int dom_match[TBE__RPC_DOMAINS];
  unsigned ndom;
  uint64_t gen;      /* a new session's thread stacks start over */
} C = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* This thread's push stack: the domain of each level and whether it
 * matched; depth counts every level, the first TBE__RPC_DEPTH recorded. */
static __thread struct {
  uint64_t gen;
  unsigned depth;
  nvtxDomainHandle_t dom[TBE__RPC_DEPTH];
  uint8_t match[TBE__RPC_DEPTH];
} T;

static const CUpti_CallbackId nvtx_cbids[] = {
    CUPTI_CBID_NVTX_nvtxRangeStartA,       CUPTI_CBID_NVTX_nvtxRangeStartEx,
    CUPTI_CBID_NVTX_nvtxRangeEnd,          CUPTI_CBID_NVTX_nvtxRangePushA,
    CUPTI_CBID_NVTX_nvtxRangePushEx,       CUPTI_CBID_NVTX_nvtxRangePop,
    CUPTI_CBID_NVTX_nvtxDomainRangeStartEx, CUPTI_CBID_NVTX_nvtxDomainRangeEnd,
    CUPTI_CBID_NVTX_nvtxDomainRangePushEx, CUPTI_CBID_NVTX_nvtxDomainRangePop,
    CUPTI_CBID_NVTX_nvtxDomainCreateA,
};

/* The name and domain stay until the next start: a callback still in
 * flight on another thread may read them. */
void tbe__rpc_stop(void) {
  pthread_mutex_lock(&C.mu);
  __atomic_store_n(&C.mode, TBE_CAPTURE_ALL, __ATOMIC_RELEASE);
  C.nids = C.ndom = 0;
  __atomic_store_n(&C.open, 0, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&C.mu);
}

CUptiResult tbe__rpc_start(const tbe__cupti_metrics_api *m, CUpti_SubscriberHandle sub,
                           unsigned mode, const char *name, const char *domain) {
  tbe__rpc_stop();
  pthread_mutex_lock(&C.mu);
  __atomic_add_fetch(&C.gen, 1, __ATOMIC_ACQ_REL);
  free(C.name);
  free(C.domain);
  C.name = C.domain = NULL;
  int rc = 0;
  if (mode == TBE_CAPTURE_NVTX) {
    if (!name || !*name || !(C.name = strdup(name)) ||
        (domain && *domain && !(C.domain = strdup(domain))))
      rc = -1;
  } else if (mode != TBE_CAPTURE_PROFILER_API) {
    mode = TBE_CAPTURE_ALL;
  }
  pthread_mutex_unlock(&C.mu);
  if (rc) return CUPTI_ERROR_OUT_OF_MEMORY;
  /* Closed from here: no launch is measured before the range opens. */
  __atomic_store_n(&C.mode, mode, __ATOMIC_RELEASE);
  CUptiResult r = CUPTI_SUCCESS;
  if (mode == TBE_CAPTURE_PROFILER_API) {
    r = m->enable_callback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API,
                           CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000);
    if (r == CUPTI_SUCCESS)
      r = m->enable_callback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API,
                             CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000);
    if (r == CUPTI_SUCCESS)
      r = m->enable_callback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API,
                             CUPTI_DRIVER_TRACE_CBID_cuProfilerStart);
    if (r == CUPTI_SUCCESS)
      r = m->enable_callback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API,
                             CUPTI_DRIVER_TRACE_CBID_cuProfilerStop);
  } else if (mode == TBE_CAPTURE_NVTX) {
    for (size_t i = 0; i < sizeof nvtx_cbids / sizeof nvtx_cbids[0] && r == CUPTI_SUCCESS; i++)
      r = m->enable_callback(1, sub, CUPTI_CB_DOMAIN_NVTX, nvtx_cbids[i]);
  }
  return r;
}

int tbe__rpc_inside(void) {
  return __atomic_load_n(&C.mode, __ATOMIC_ACQUIRE) == TBE_CAPTURE_ALL ||
         __atomic_load_n(&C.open, __ATOMIC_ACQUIRE) > 0;
}

int tbe__rpc_is_profiler_call(CUpti_CallbackDomain dom, CUpti_CallbackId cbid) {
  return (dom == CUPTI_CB_DOMAIN_RUNTIME_API &&
          (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000 ||
           cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000)) ||
         (dom == CUPTI_CB_DOMAIN_DRIVER_API && (cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart ||
                                                cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStop));
}

/* ---- NVTX (C.mode == TBE_CAPTURE_NVTX) ---- */

static const char *ex_message(const nvtxEventAttributes_v2 *a) {
  return a && a->messageType == NVTX_MESSAGE_TYPE_ASCII ? a->message.ascii : NULL;
}

/* Whether a range of `msg` in `domain` (NULL: the default) is the capture's. */
static int matches(nvtxDomainHandle_t domain, const char *msg) {
  if (!msg || strcmp(msg, C.name) != 0) return 0;
  if (!C.domain) return 1;
  if (!domain) return 0;
  int m = 0;
  pthread_mutex_lock(&C.mu);
  for (unsigned i = 0; i < C.ndom; i++)
    if (C.dom[i] == domain) m = C.dom_match[i];
  pthread_mutex_unlock(&C.mu);
  return m;
}

static void push(nvtxDomainHandle_t domain, const char *msg) {
  uint64_t gen = __atomic_load_n(&C.gen, __ATOMIC_ACQUIRE);
  if (T.gen != gen) {
    T.gen = gen;
    T.depth = 0;
  }
  int m = matches(domain, msg);
  if (T.depth < TBE__RPC_DEPTH) {
    T.dom[T.depth] = domain;
    T.match[T.depth] = (uint8_t)m;
    if (m) __atomic_add_fetch(&C.open, 1, __ATOMIC_ACQ_REL);
  }
  T.depth++;
}

/* Pops the innermost level of `domain` on this thread. */
static void pop(nvtxDomainHandle_t domain) {
  if (T.gen != __atomic_load_n(&C.gen, __ATOMIC_ACQUIRE) || T.depth == 0) return;
  if (T.depth > TBE__RPC_DEPTH) { /* (beyond the levels recorded: never matched) */
    T.depth--;
    return;
  }
  unsigned i = T.depth;
  while (i > 0 && T.dom[i - 1] != domain) i--;
  if (i == 0) return; /* (a pop without its push) */
  if (T.match[i - 1]) __atomic_sub_fetch(&C.open, 1, __ATOMIC_ACQ_REL);
  memmove(&T.dom[i - 1], &T.dom[i], (T.depth - i) * sizeof T.dom[0]);
  memmove(&T.match[i - 1], &T.match[i], (T.depth - i) * sizeof T.match[0]);
  T.depth--;
}

static void start(nvtxDomainHandle_t domain, const char *msg, const void *ret) {
  if (!ret || !matches(domain, msg)) return;
  uint64_t id;
  memcpy(&id, ret, sizeof id);
  pthread_mutex_lock(&C.mu);
  if (C.nids < TBE__RPC_IDS) {
    C.ids[C.nids++] = id;
    __atomic_add_fetch(&C.open, 1, __ATOMIC_ACQ_REL);
  }
  pthread_mutex_unlock(&C.mu);
}

static void end(uint64_t id) {
  pthread_mutex_lock(&C.mu);
  for (unsigned i = 0; i < C.nids; i++)
    if (C.ids[i] == id) {
      C.ids[i] = C.ids[--C.nids];
      __atomic_sub_fetch(&C.open, 1, __ATOMIC_ACQ_REL);
      break;
    }
  pthread_mutex_unlock(&C.mu);
}

static void domain_created(const char *name, const void *ret) {
  if (!ret || !C.domain) return;
  nvtxDomainHandle_t h;
  memcpy(&h, ret, sizeof h);
  pthread_mutex_lock(&C.mu);
  if (C.ndom < TBE__RPC_DOMAINS) {
    C.dom[C.ndom] = h;
    C.dom_match[C.ndom++] = name && strcmp(name, C.domain) == 0;
  }
  pthread_mutex_unlock(&C.mu);
}

static void nvtx_call(CUpti_CallbackId cbid, const CUpti_NvtxData *d) {
  const void *p = d->functionParams;
  if (!p && cbid != CUPTI_CBID_NVTX_nvtxRangePop) return;
  switch (cbid) {
  case CUPTI_CBID_NVTX_nvtxRangePushA:
    push(NULL, ((const nvtxRangePushA_params *)p)->message);
    break;
  case CUPTI_CBID_NVTX_nvtxRangePushEx:
    push(NULL, ex_message(((const nvtxRangePushEx_params *)p)->eventAttrib));
    break;
  case CUPTI_CBID_NVTX_nvtxDomainRangePushEx: {
    const nvtxDomainRangePushEx_params *q = p;
    push(q->domain, ex_message(q->core.eventAttrib));
    break;
  }
  case CUPTI_CBID_NVTX_nvtxRangePop:
    pop(NULL);
    break;
  case CUPTI_CBID_NVTX_nvtxDomainRangePop:
    pop(((const nvtxDomainRangePop_params *)p)->domain);
    break;
  case CUPTI_CBID_NVTX_nvtxRangeStartA:
    start(NULL, ((const nvtxRangeStartA_params *)p)->message, d->functionReturnValue);
    break;
  case CUPTI_CBID_NVTX_nvtxRangeStartEx:
    start(NULL, ex_message(((const nvtxRangeStartEx_params *)p)->eventAttrib),
          d->functionReturnValue);
    break;
  case CUPTI_CBID_NVTX_nvtxDomainRangeStartEx: {
    const nvtxDomainRangeStartEx_params *q = p;
    start(q->domain, ex_message(q->core.eventAttrib), d->functionReturnValue);
    break;
  }
  case CUPTI_CBID_NVTX_nvtxRangeEnd:
    end(((const nvtxRangeEnd_params *)p)->id);
    break;
  case CUPTI_CBID_NVTX_nvtxDomainRangeEnd:
    end(((const nvtxDomainRangeEnd_params *)p)->core.id);
    break;
  case CUPTI_CBID_NVTX_nvtxDomainCreateA:
    domain_created(((const nvtxDomainCreateA_params *)p)->name, d->functionReturnValue);
    break;
  default:
    break;
  }
}

void tbe__rpc_callback(CUpti_CallbackDomain dom, CUpti_CallbackId cbid, const void *data) {
  unsigned mode = __atomic_load_n(&C.mode, __ATOMIC_ACQUIRE);
  if (dom == CUPTI_CB_DOMAIN_NVTX) {
    if (mode == TBE_CAPTURE_NVTX) nvtx_call(cbid, data);
    return;
  }
  if (mode != TBE_CAPTURE_PROFILER_API || !tbe__rpc_is_profiler_call(dom, cbid)) return;
  const CUpti_CallbackData *cb = data;
  int is_start = cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000 ||
                 cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart;
  /* Opened when a start returns, closed when a stop is entered. */
  if (is_start && cb->callbackSite == CUPTI_API_EXIT)
    __atomic_store_n(&C.open, 1, __ATOMIC_RELEASE);
  else if (!is_start && cb->callbackSite == CUPTI_API_ENTER)
    __atomic_store_n(&C.open, 0, __ATOMIC_RELEASE);
}
