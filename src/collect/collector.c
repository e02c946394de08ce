/* collector.c: the CUPTI activity collector (see collector.h).
 *
 * Buffers.  CUPTI gives every application thread that calls CUDA a buffer
 * of its own (CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, default 1),
 * which the thread keeps until it is full or a flush returns it.  A JAX or
 * PyTorch process has tens of such threads, most of them nearly idle, so a
 * cap counted in whole buffers handed out (64 MiB / 4 MiB = 16 buffers) was
 * reached with the buffers almost empty and the records of the other
 * threads were dropped.  The cap (buffer_cap, --buffer-mb) therefore
 * bounds the bytes the buffers can make resident, not their number:
 *   - Every buffer is a slot of one anonymous mapping made at start
 *     (MAP_NORESERVE, TBE__NBUF slots): address space, which costs memory
 *     only where written.  CUPTI is told the buffers come pre-zeroed.
 *   - Each slot carries a charge: while CUPTI holds it, the size CUPTI was
 *     given (it writes nowhere else); once completed, its valid bytes
 *     rounded up to pages (CUPTI writes records in order from the start);
 *     once recycled, the pages kept resident.  G.held, the sum of charges,
 *     never exceeds the cap, and bounds the memory the buffers hold.
 *   - The size given is a slice of what the cap leaves: 1/TBE__SPREAD of
 *     it, between TBE__SLICE_MIN and the slot size (cap/TBE__SPREAD, at
 *     most 4 MiB): 2 MiB for the first thread at the default cap, smaller
 *     as more threads hold buffers.  Being a fixed fraction of the rest, it
 *     never overdraws, and (at the default cap) about 32 ln 32 + 32 = 140
 *     threads can hold one at once before any comes back; buffers coming back are re-sized from
 *     what is left then.  Below TBE__SLICE_MIN the remainder is handed out
 *     down to TBE__BUF_MIN; after that requests are declined, CUPTI drops
 *     and counts the records, and the count reaches the spool stats.  An
 *     explicit buffer_size (tests) replaces the slice.
 *   - The periodic flush (flush_ms) returns partly filled buffers whose
 *     records are complete, so an idle thread's buffer comes back within a
 *     period; the background thread returns each buffer to the free stack
 *     as soon as it is decoded, before the spool frame is written.
 *   - Recycling zeroes the valid bytes, keeping their pages resident so
 *     the next fill does not page-fault on the application's thread, and
 *     releases (MADV_DONTNEED) the rest of what CUPTI was given, so the
 *     buffer is all zeroes whatever CUPTI wrote there.  Above half the cap
 *     it releases everything: idle pages must not starve other threads.
 *
 * Hot path (CUPTI's and the application's threads): buffer_requested pops
 * a slot and sizes it (a shift and a few compares); buffer_completed
 * queues it and posts the background thread's semaphore.  Neither parses,
 * writes files, allocates or maps memory.
 *
 * Background thread: pops completed buffers, decodes every record into a
 * compact spool item (strings interned into spool string ids), recycles the
 * buffer, appends a stats item and writes the batch as one spool frame.  It
 * also switches collection on and off for delay/duration, flushes
 * periodically so a killed program loses at most about flush_ms of
 * activity, and serves the fatal-signal handler's flush requests.
 *
 * Fatal signals (catch_signals).  start installs a handler for SIGSEGV,
 * SIGBUS, SIGABRT, SIGFPE, SIGILL, SIGTERM and SIGINT (Ctrl-C), except
 * where the program ignores the signal.  The handler is async-signal-safe:
 * it posts a request to the background thread and polls (nanosleep) for
 * its answer, TBE__CRASH_WAIT_MS at most.  The background thread, an
 * ordinary thread, notes the signal in the spool, forces a CUPTI flush and
 * decodes and writes every buffer that returns.  Should the signalled
 * thread hold a lock the flush needs (it died inside CUPTI, malloc or this
 * file), the wait runs out.  Then the handler chains to the handler that
 * was installed before it (same arguments; SA_SIGINFO, SA_RESETHAND,
 * SA_NODEFER and its mask honoured), or, where that was the default,
 * restores the default and raises the signal again, so the program dies of
 * it as it would have (same exit status, same core dump).  No END item is
 * written: the spool still says the capture ended early, and holds every
 * record completed before the signal.  A program that handles the signal
 * itself (SIGTERM, say) keeps running and collecting.  A second fatal
 * signal while a flush is under way gets the default action at once.
 * Handlers the program installs after start replace ours; we never
 * re-install.  SIGSEGV runs on an alternate stack: start gives its own
 * thread a TBE__ALTSTACK one when it has none, so a stack overflow there
 * is flushed too (on other threads the kernel kills the program, as it
 * would without us).  SIGKILL cannot be caught: the periodic flush bounds
 * its loss.
 *
 * Invariants: a slot is in exactly one place (free stack, CUPTI, queue,
 * being decoded); G.held is the sum of the charges and is at most the cap;
 * the spool string ids are assigned only by the decoding thread (the
 * background thread, or the stopping thread after the join); CUPTI-owned
 * strings are copied before the buffer is recycled. */
#include "collect/collector.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "common/fsutil.h"
#include "common/iofault.h"
#include "tbexport/error.h"
#include "tbexport/profiler.h"

#define TBE__PAGE 4096u
#define TBE__BUF_MAX (16u << 20)    /* largest explicit buffer_size */
#define TBE__BUF_MIN TBE__PAGE      /* smallest buffer handed to CUPTI */
#define TBE__SLICE_MAX (4u << 20)   /* Kineto's size; CUPTI suggests 1-10 MB */
#define TBE__SLICE_MIN (64u << 10)  /* ~300 kernel records; XLA uses 32 KiB */
#define TBE__SPREAD 32u             /* a request gets 1/32 of what is left */
#define TBE__NBUF 1024u             /* slots: threads holding one + queued */
#define TBE__CRASH_WAIT_MS 2000     /* a forced flush takes 1-55 ms (H200) */
#define TBE__ALTSTACK (64u << 10)   /* signal stack given to start's thread */

_Static_assert(TBE__MK_INSTANT == CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS, "marker flag");
_Static_assert(TBE__MK_START == CUPTI_ACTIVITY_FLAG_MARKER_START, "marker flag");
_Static_assert(TBE__MK_END == CUPTI_ACTIVITY_FLAG_MARKER_END, "marker flag");
_Static_assert(TBE__MK_COLOR_ARGB == CUPTI_ACTIVITY_FLAG_MARKER_COLOR_ARGB, "marker flag");
_Static_assert(TBE__OBJ_PROCESS == CUPTI_ACTIVITY_OBJECT_PROCESS, "object kind");
_Static_assert(TBE__OBJ_THREAD == CUPTI_ACTIVITY_OBJECT_THREAD, "object kind");

/* ---- noisy API calls ---- */

static const char *const noisy_runtime[] = {
    "cudaGetDevice", "cudaGetLastError", "cudaPeekAtLastError", "cudaGetDeviceCount",
    "cudaDeviceGetAttribute", "cudaStreamIsCapturing", "cudaStreamGetCaptureInfo",
    "cudaPointerGetAttributes", NULL};
static const char *const noisy_driver[] = {
    "cuCtxGetCurrent", "cuCtxGetDevice", "cuDeviceGet", "cuDeviceGetAttribute",
    "cuDevicePrimaryCtxGetState", "cuKernelGetAttribute", "cuGetProcAddress",
    "cuGetErrorString", NULL};

int tbe__api_is_noisy(int driver, const char *name, size_t len) {
  const char *const *l = driver ? noisy_driver : noisy_runtime;
  for (; *l; l++)
    if (strlen(*l) == len && memcmp(*l, name, len) == 0) return 1;
  return 0;
}

static const CUpti_CallbackId noisy_runtime_cbids[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaPeekAtLastError_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceCount_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaDeviceGetAttribute_v5000,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamIsCapturing_v10000,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_v10010,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_v2_v11030,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_v12030,
    CUPTI_RUNTIME_TRACE_CBID_cudaPointerGetAttributes_v4000,
};
static const CUpti_CallbackId noisy_driver_cbids[] = {
    CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent,
    CUPTI_DRIVER_TRACE_CBID_cuCtxGetDevice,
    CUPTI_DRIVER_TRACE_CBID_cuDeviceGet,
    CUPTI_DRIVER_TRACE_CBID_cuDeviceGetAttribute,
    CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxGetState,
    CUPTI_DRIVER_TRACE_CBID_cuKernelGetAttribute,
    CUPTI_DRIVER_TRACE_CBID_cuGetProcAddress,
    CUPTI_DRIVER_TRACE_CBID_cuGetProcAddress_v2,
    CUPTI_DRIVER_TRACE_CBID_cuGetErrorString,
};

/* ---- string interning (decoding thread only) ---- */

typedef struct strent {
  uint64_t hash;
  char *s;
  uint32_t len, id;
} strent;

typedef struct strtab {
  strent *e;
  size_t cap, n;
  uint32_t next_id;
} strtab;

static uint64_t hash_str(const char *s, size_t *len) {
  uint64_t h = 1469598103934665603ull;
  const char *p = s;
  while (*p) {
    h ^= (unsigned char)*p++;
    h *= 1099511628211ull;
  }
  *len = (size_t)(p - s);
  return h;
}

/* The collector's global state. */
typedef struct qent {
  uint32_t slot;
  size_t valid;
} qent;

typedef struct slotinfo {
  uint32_t given;   /* bytes CUPTI was given; 0 while we hold the slot */
  uint32_t charge;  /* bytes counted against the cap (see the essay) */
} slotinfo;

static struct {
  pthread_mutex_t mu;
  int running;             /* between start and stop, in this process */
  int stopping;
  int closed;              /* stop finished decoding: late buffers are ignored */
  int enabled;             /* kinds currently on */
  int thread_started;
  pid_t owner;
  pthread_t thread;
  tbe__cupti_api api;
  tbe__collect_config cfg;
  uint32_t cupti_version;
  /* buffers: slots of one mapping */
  uint8_t *base;
  size_t map_bytes;
  size_t slot_size;        /* bytes of address space per slot */
  size_t fixed;            /* explicit buffer_size, or 0: slices */
  size_t cap;              /* bound on G.held */
  size_t held, held_peak;  /* sum of the charges; its maximum */
  uint32_t nslots;
  slotinfo *info;
  uint32_t *freel;         /* free stack of slot numbers */
  uint32_t nfree;
  uint32_t outstanding;    /* slots CUPTI holds */
  qent *queue;
  uint32_t qhead, qlen;
  uint64_t declined;
  /* spool */
  int fd;
  int write_err;
  tbe__buf batch;          /* decoding thread only */
  tbe__buf side;           /* items from other threads, under mu */
  uint64_t batch_records;
  strtab strs;
  uint32_t api_names[2][1024]; /* spool string id per cbid; UINT32_MAX = noisy */
  tbe__sp_stats stats;
  struct timespec t0;      /* CLOCK_MONOTONIC at start */
  int window_opened, window_closed;
  int walk_noted;          /* a buffer walk that CUPTI cut short was noted */
  unsigned crash_seen;     /* S.req when the background thread was made */
} G = {.mu = PTHREAD_MUTEX_INITIALIZER, .fd = -1};

/* Wakes the background thread: a semaphore, because the fatal-signal
 * handler must wake it too and sem_post is async-signal-safe.  Initialized
 * once per process and never destroyed (a handler may post at any time). */
static sem_t wake_sem;
static pthread_once_t wake_once = PTHREAD_ONCE_INIT;
static void wake_init(void) { sem_init(&wake_sem, 0, 0); }
static void wake_bg(void) { sem_post(&wake_sem); }

/* The fatal-signal handler's side (see the essay); lock-free atomics only. */
static struct {
  atomic_int armed;        /* a background thread serves requests */
  atomic_int busy;         /* a handler is flushing */
  atomic_int sig;          /* the signal of the last request */
  atomic_uint req, done;   /* request and answer sequence numbers */
} S;

static int atfork_registered;
static tbe_allocator malloc_alloc; /* the batches' allocator (malloc) */

/* One line to the caller's on_message (collector.h); the collector never
 * prints. */
static void say(tbe_message_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(tbe_message_level level, const char *fmt, ...) {
  if (!G.cfg.on_message) return;
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  G.cfg.on_message(G.cfg.message_ctx, level, line);
}

static uint32_t intern(const char *s) {
  if (!s) return 0;
  size_t len;
  uint64_t h = hash_str(s, &len);
  strtab *t = &G.strs;
  if (t->n * 2 >= t->cap) {
    size_t ncap = t->cap ? t->cap * 2 : 1024;
    strent *ne = calloc(ncap, sizeof *ne);
    if (!ne) return 0;
    for (size_t i = 0; i < t->cap; i++) {
      if (!t->e[i].s) continue;
      size_t j = t->e[i].hash & (ncap - 1);
      while (ne[j].s) j = (j + 1) & (ncap - 1);
      ne[j] = t->e[i];
    }
    free(t->e);
    t->e = ne;
    t->cap = ncap;
  }
  size_t j = h & (t->cap - 1);
  while (t->e[j].s) {
    if (t->e[j].hash == h && t->e[j].len == len && memcmp(t->e[j].s, s, len) == 0)
      return t->e[j].id;
    j = (j + 1) & (t->cap - 1);
  }
  char *copy = malloc(len + 1);
  if (!copy) return 0;
  memcpy(copy, s, len + 1);
  uint32_t id = ++t->next_id;
  t->e[j] = (strent){h, copy, (uint32_t)len, id};
  t->n++;
  tbe__spool_str(&G.batch, id, s, len);
  return id;
}

static void strtab_free(strtab *t) {
  for (size_t i = 0; i < t->cap; i++) free(t->e[i].s);
  free(t->e);
  memset(t, 0, sizeof *t);
}

/* Name of a runtime/driver call: cached spool id, UINT32_MAX if filtered. */
static uint32_t api_name(int driver, uint32_t cbid) {
  uint32_t *slot = cbid < 1024 ? &G.api_names[driver][cbid] : NULL;
  if (slot && *slot) return *slot;
  const char *name = NULL;
  char tmp[160];
  if (G.api.get_callback_name(driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API,
                              cbid, &name) != CUPTI_SUCCESS ||
      !name) {
    snprintf(tmp, sizeof tmp, "%s_cbid_%u", driver ? "cuDriver" : "cudaRuntime", cbid);
  } else {
    /* Drop the version suffix: cudaLaunchKernel_v7000 -> cudaLaunchKernel. */
    size_t n = strlen(name);
    const char *v = strstr(name, "_v");
    while (v) {
      const char *d = v + 2;
      while (*d >= '0' && *d <= '9') d++;
      if (*d == '\0' && d > v + 2) {
        n = (size_t)(v - name);
        break;
      }
      v = strstr(v + 2, "_v");
    }
    if (n >= sizeof tmp) n = sizeof tmp - 1;
    memcpy(tmp, name, n);
    tmp[n] = '\0';
  }
  uint32_t id;
  if (!G.cfg.keep_noisy && tbe__api_is_noisy(driver, tmp, strlen(tmp)))
    id = UINT32_MAX;
  else
    id = intern(tmp);
  if (slot && id) *slot = id;
  return id;
}

/* ---- decoding ---- */

static int64_t ts64(uint64_t v) { return v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v; }

#define ITEM(type, var) tbe__spool_item(&G.batch, type, &(var), sizeof(var))

/* A kernel (plain or concurrent). */
static void put_kernel(const CUpti_Activity *r) {
  const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)r;
  tbe__sp_kernel o;
  memset(&o, 0, sizeof o);
  o.start = ts64(k->start);
  o.end = ts64(k->end);
  o.corr = k->correlationId;
  o.device = k->deviceId;
  o.context = k->contextId;
  o.stream = k->streamId;
  o.name = intern(k->name);
  o.grid[0] = k->gridX, o.grid[1] = k->gridY, o.grid[2] = k->gridZ;
  o.block[0] = k->blockX, o.block[1] = k->blockY, o.block[2] = k->blockZ;
  o.static_shared = k->staticSharedMemory;
  o.dynamic_shared = k->dynamicSharedMemory;
  o.registers = k->registersPerThread;
  o.graph_id = k->graphId;
  o.launch_type = k->launchType;
  ITEM(TBE__SP_KERNEL, o);
}

/* A copy within one device or between host and device. */
static void put_memcpy(const CUpti_Activity *r) {
  const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)r;
  tbe__sp_memcpy o;
  memset(&o, 0, sizeof o);
  o.start = ts64(m->start);
  o.end = ts64(m->end);
  o.bytes = m->bytes;
  o.corr = m->correlationId;
  o.device = m->deviceId;
  o.context = m->contextId;
  o.stream = m->streamId;
  o.src_device = o.dst_device = -1;
  o.copy_kind = m->copyKind;
  o.src_kind = m->srcKind;
  o.dst_kind = m->dstKind;
  o.flags = m->flags;
  o.graph_id = m->graphId;
  ITEM(TBE__SP_MEMCPY, o);
}

/* A copy between two devices (peer to peer). */
static void put_memcpy_p2p(const CUpti_Activity *r) {
  const CUpti_ActivityMemcpyPtoP4 *m = (const CUpti_ActivityMemcpyPtoP4 *)r;
  tbe__sp_memcpy o;
  memset(&o, 0, sizeof o);
  o.start = ts64(m->start);
  o.end = ts64(m->end);
  o.bytes = m->bytes;
  o.corr = m->correlationId;
  o.device = m->deviceId;
  o.context = m->contextId;
  o.stream = m->streamId;
  o.src_device = (int32_t)m->srcDeviceId;
  o.dst_device = (int32_t)m->dstDeviceId;
  o.copy_kind = m->copyKind;
  o.src_kind = m->srcKind;
  o.dst_kind = m->dstKind;
  o.flags = m->flags;
  o.graph_id = m->graphId;
  ITEM(TBE__SP_MEMCPY, o);
}

/* A memset. */
static void put_memset(const CUpti_Activity *r) {
  const CUpti_ActivityMemset4 *m = (const CUpti_ActivityMemset4 *)r;
  tbe__sp_memset o;
  memset(&o, 0, sizeof o);
  o.start = ts64(m->start);
  o.end = ts64(m->end);
  o.bytes = m->bytes;
  o.corr = m->correlationId;
  o.device = m->deviceId;
  o.context = m->contextId;
  o.stream = m->streamId;
  o.value = m->value;
  o.mem_kind = m->memoryKind;
  o.flags = m->flags;
  ITEM(TBE__SP_MEMSET, o);
}

/* A runtime or driver API call; noisy ones (tbe__api_is_noisy) are left out. */
static void put_api_call(const CUpti_Activity *r) {
  const CUpti_ActivityAPI *a = (const CUpti_ActivityAPI *)r;
  int driver = r->kind == CUPTI_ACTIVITY_KIND_DRIVER;
  uint32_t name = api_name(driver, a->cbid);
  if (name == UINT32_MAX) return; /* filtered noisy call */
  tbe__sp_api o;
  memset(&o, 0, sizeof o);
  o.start = ts64(a->start);
  o.end = ts64(a->end);
  o.corr = a->correlationId;
  o.pid = a->processId;
  o.tid = a->threadId;
  o.cbid = a->cbid;
  o.ret = a->returnValue;
  o.name = name;
  o.domain = driver ? TBE__API_DRIVER : TBE__API_RUNTIME;
  ITEM(TBE__SP_API, o);
}

/* A synchronization (stream, event, context). */
static void put_sync(const CUpti_Activity *r) {
  const CUpti_ActivitySynchronization2 *s = (const CUpti_ActivitySynchronization2 *)r;
  tbe__sp_sync o;
  memset(&o, 0, sizeof o);
  o.start = ts64(s->start);
  o.end = ts64(s->end);
  o.corr = s->correlationId;
  o.context = s->contextId;
  o.stream = s->streamId;
  o.type = (uint32_t)s->type;
  o.event = s->cudaEventId;
  o.ret = s->returnValue;
  ITEM(TBE__SP_SYNC, o);
}

/* An NVTX mark, or one end of an NVTX range. */
static void put_marker(const CUpti_Activity *r) {
  const CUpti_ActivityMarker2 *m = (const CUpti_ActivityMarker2 *)r;
  tbe__sp_marker o;
  memset(&o, 0, sizeof o);
  o.ts = ts64(m->timestamp);
  o.id = m->id;
  o.flags = (uint32_t)m->flags;
  o.obj_kind = (uint32_t)m->objectKind;
  if (m->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ||
      m->objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS) {
    o.obj[0] = m->objectId.pt.processId;
    o.obj[1] = m->objectId.pt.threadId;
  } else {
    o.obj[0] = m->objectId.dcs.deviceId;
    o.obj[1] = m->objectId.dcs.contextId;
    o.obj[2] = m->objectId.dcs.streamId;
  }
  o.name = intern(m->name);
  o.domain = intern(m->domain);
  ITEM(TBE__SP_MARKER, o);
}

/* The color, category and payload of an NVTX marker. */
static void put_marker_data(const CUpti_Activity *r) {
  const CUpti_ActivityMarkerData2 *m = (const CUpti_ActivityMarkerData2 *)r;
  tbe__sp_marker_data o;
  memset(&o, 0, sizeof o);
  memcpy(&o.payload, &m->payload, sizeof o.payload);
  o.id = m->id;
  o.flags = (uint32_t)m->flags;
  o.payload_kind = (uint32_t)m->payloadKind;
  o.color = m->color;
  o.category = m->category;
  o.domain_id = m->cuptiDomainId;
  ITEM(TBE__SP_MARKER_DATA, o);
}

/* CUPTI's own overhead. */
static void put_overhead(const CUpti_Activity *r) {
  const CUpti_ActivityOverhead3 *m = (const CUpti_ActivityOverhead3 *)r;
  tbe__sp_overhead o;
  memset(&o, 0, sizeof o);
  o.start = ts64(m->start);
  o.end = ts64(m->end);
  o.kind = (uint32_t)m->overheadKind;
  o.obj_kind = (uint32_t)m->objectKind;
  if (m->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ||
      m->objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS) {
    o.obj[0] = m->objectId.pt.processId;
    o.obj[1] = m->objectId.pt.threadId;
  } else {
    o.obj[0] = m->objectId.dcs.deviceId;
    o.obj[1] = m->objectId.dcs.contextId;
    o.obj[2] = m->objectId.dcs.streamId;
  }
  o.corr = m->correlationId;
  /* The client owns overheadData (header: "must be freed by client"). */
  if (m->overheadData) free(m->overheadData);
  ITEM(TBE__SP_OVERHEAD, o);
}

/* A device and its properties. */
static void put_device(const CUpti_Activity *r) {
  const CUpti_ActivityDevice5 *d = (const CUpti_ActivityDevice5 *)r;
  tbe__sp_device o;
  memset(&o, 0, sizeof o);
  o.memory_bytes = ts64(d->globalMemorySize);
  o.bandwidth_kbps = ts64(d->globalMemoryBandwidth);
  o.id = d->id;
  o.name = intern(d->name);
  o.sm_count = d->numMultiprocessors;
  o.clock_khz = d->coreClockRate;
  o.cc_major = d->computeCapabilityMajor;
  o.cc_minor = d->computeCapabilityMinor;
  o.max_threads_per_block = d->maxThreadsPerBlock;
  o.max_warps_per_sm = d->maxWarpsPerMultiprocessor;
  o.regs_per_block = d->maxRegistersPerBlock;
  o.regs_per_sm = d->maxRegistersPerMultiprocessor;
  o.warp_size = d->numThreadsPerWarp;
  o.shared_per_block = d->maxSharedMemoryPerBlock;
  o.shared_per_sm = d->maxSharedMemoryPerMultiprocessor;
  ITEM(TBE__SP_DEVICE, o);
}

/* A context (its device). */
static void put_context(const CUpti_Activity *r) {
  const CUpti_ActivityContext3 *c = (const CUpti_ActivityContext3 *)r;
  tbe__sp_context o = {c->contextId, c->deviceId};
  ITEM(TBE__SP_CONTEXT, o);
}

/* A device memory allocation or release. */
static void put_memory(const CUpti_Activity *r) {
  const CUpti_ActivityMemory4 *m = (const CUpti_ActivityMemory4 *)r;
  tbe__sp_memory o;
  memset(&o, 0, sizeof o);
  o.ts = ts64(m->timestamp);
  o.addr = m->address;
  o.bytes = m->bytes;
  o.op = (uint32_t)m->memoryOperationType;
  o.mem_kind = (uint32_t)m->memoryKind;
  o.corr = m->correlationId;
  o.pid = m->processId;
  o.device = m->deviceId;
  o.context = m->contextId;
  o.stream = m->streamId;
  ITEM(TBE__SP_MEMORY, o);
}

/* The name of a host thread (other objects are left out). */
static void put_thread_name(const CUpti_Activity *r) {
  const CUpti_ActivityName *n = (const CUpti_ActivityName *)r;
  if (n->objectKind != CUPTI_ACTIVITY_OBJECT_THREAD) return;
  tbe__sp_thread_name o = {n->objectId.pt.processId, n->objectId.pt.threadId,
                           intern(n->name)};
  ITEM(TBE__SP_THREAD_NAME, o);
}

/* One record into the batch: the switch over the kinds is the whole
 * per-record path; each kind's fields are copied by its put_ function above
 * (static, one caller each, so the compiler inlines them). */
static void decode_record(const CUpti_Activity *r) {
  G.stats.records++;
  switch (r->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: put_kernel(r); break;
    case CUPTI_ACTIVITY_KIND_MEMCPY: put_memcpy(r); break;
    case CUPTI_ACTIVITY_KIND_MEMCPY2: put_memcpy_p2p(r); break;
    case CUPTI_ACTIVITY_KIND_MEMSET: put_memset(r); break;
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: put_api_call(r); break;
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: put_sync(r); break;
    case CUPTI_ACTIVITY_KIND_MARKER: put_marker(r); break;
    case CUPTI_ACTIVITY_KIND_MARKER_DATA: put_marker_data(r); break;
    case CUPTI_ACTIVITY_KIND_OVERHEAD: put_overhead(r); break;
    case CUPTI_ACTIVITY_KIND_DEVICE: put_device(r); break;
    case CUPTI_ACTIVITY_KIND_CONTEXT: put_context(r); break;
    case CUPTI_ACTIVITY_KIND_MEMORY2: put_memory(r); break;
    case CUPTI_ACTIVITY_KIND_NAME: put_thread_name(r); break;
    default:
      G.stats.unknown_records++;
      break;
  }
}

static int64_t cupti_now(void) {
  uint64_t ts = 0;
  if (G.api.get_timestamp && G.api.get_timestamp(&ts) == CUPTI_SUCCESS && ts) return ts64(ts);
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void add_dropped(void) {
  size_t d = 0;
  if (G.api.get_num_dropped && G.api.get_num_dropped(NULL, 0, &d) == CUPTI_SUCCESS)
    G.stats.cupti_dropped += d;
}

/* Appends the stats item and writes the batch as one frame. */
static void write_batch(void) {
  struct timespec c;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c) == 0 && G.thread_started &&
      pthread_equal(pthread_self(), G.thread))
    G.stats.decode_cpu_ns = (uint64_t)c.tv_sec * 1000000000u + (uint64_t)c.tv_nsec;
  pthread_mutex_lock(&G.mu);
  G.stats.buffers_declined = G.declined;
  G.stats.buffer_bytes = G.held_peak;
  if (G.side.len) {
    tbe__buf_append(&G.batch, G.side.data, G.side.len);
    tbe__buf_clear(&G.side);
  }
  /* A snapshot under the lock: application threads update the counts
   * (buffer_requested) while this thread writes the batch. */
  tbe__sp_stats snap = G.stats;
  pthread_mutex_unlock(&G.mu);
  ITEM(TBE__SP_STATS, snap);
  int rc = tbe__buf_error(&G.batch);
  if (rc == 0 && G.fd >= 0) rc = tbe__spool_write_frame(G.fd, G.batch.data, G.batch.len);
  if (rc != 0) {
    G.stats.spool_dropped += G.batch_records;
    if (!G.write_err) {
      G.write_err = rc;
      say(TBE_MSG_WARNING, "cannot write the spool %s: %s; records are being dropped",
          G.cfg.spool_path, tbe_strerror(rc));
    }
    G.batch.err = 0;
  }
  tbe__buf_clear(&G.batch);
  G.batch_records = 0;
  if (rc != 0) {
    /* The lost frame may have defined strings that later records use:
     * define them all again in the next one. */
    for (size_t i = 0; i < G.strs.cap; i++)
      if (G.strs.e[i].s) tbe__spool_str(&G.batch, G.strs.e[i].id, G.strs.e[i].s, G.strs.e[i].len);
  }
}

static void note(const char *fmt, const char *a, const char *b);
static const char *cupti_err(CUptiResult r);

/* Decodes the records of one completed buffer into the batch. */
static void decode_buffer(uint8_t *buf, size_t valid) {
  uint64_t before = G.stats.records;
  CUpti_Activity *rec = NULL;
  if (valid) {
    for (;;) {
      CUptiResult r = G.api.get_next_record(buf, valid, &rec);
      if (r == CUPTI_ERROR_MAX_LIMIT_REACHED) break; /* the end */
      if (r != CUPTI_SUCCESS) {
        /* (INVALID_KIND: a record this CUPTI cannot size) the walk ends
         * here; what follows in the buffer is lost: said once. */
        if (!G.walk_noted) {
          G.walk_noted = 1;
          pthread_mutex_lock(&G.mu);
          note("CUPTI could not walk an activity buffer past a record (%s): %s", cupti_err(r),
               "the rest of that buffer was skipped, and of any other like it");
          pthread_mutex_unlock(&G.mu);
        }
        break;
      }
      decode_record(rec);
    }
  }
  G.stats.buffers++;
  G.batch_records += G.stats.records - before;
}

/* ---- buffers ---- */

static size_t page_up(size_t n) { return (n + TBE__PAGE - 1) & ~(size_t)(TBE__PAGE - 1); }

static uint8_t *slot_addr(uint32_t s) { return G.base + (size_t)s * G.slot_size; }

/* The slot of a buffer CUPTI hands back, or UINT32_MAX if it is not ours. */
static uint32_t slot_of(const uint8_t *b) {
  if (!G.base || b < G.base || b >= G.base + G.map_bytes) return UINT32_MAX;
  size_t off = (size_t)(b - G.base);
  if (off % G.slot_size) return UINT32_MAX;
  return (uint32_t)(off / G.slot_size);
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
  *max_records = 0;
  *buffer = NULL;
  *size = 0;
  pthread_mutex_lock(&G.mu);
  if (!G.running || G.closed || G.owner != getpid()) {
    pthread_mutex_unlock(&G.mu);
    return;
  }
  size_t give = 0;
  uint32_t s = 0;
  if (G.nfree > 0) {
    s = G.freel[G.nfree - 1];
    size_t kept = G.info[s].charge; /* pages still resident from its last use */
    size_t left = G.cap - G.held;   /* held includes `kept` */
    size_t want = G.fixed;
    if (!want) {
      want = (left / TBE__SPREAD) & ~(size_t)(TBE__PAGE - 1);
      if (want < TBE__SLICE_MIN) want = TBE__SLICE_MIN;
    }
    if (want > G.slot_size) want = G.slot_size;
    give = want < kept + left ? want : (kept + left) & ~(size_t)(TBE__PAGE - 1);
    if (give < kept) give = kept;
    if (give < TBE__BUF_MIN) give = 0;
  }
  if (give) {
    G.nfree--;
    G.held += give - G.info[s].charge;
    if (G.held > G.held_peak) G.held_peak = G.held;
    G.info[s].given = G.info[s].charge = (uint32_t)give;
    G.outstanding++;
  } else {
    G.declined++;
  }
  pthread_mutex_unlock(&G.mu);
  if (give) {
    *buffer = slot_addr(s);
    *size = give;
  }
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer,
                                     size_t size, size_t valid) {
  (void)ctx;
  (void)stream;
  (void)size;
  if (!buffer) return;
  pthread_mutex_lock(&G.mu);
  uint32_t s = slot_of(buffer);
  if (G.closed || G.owner != getpid() || s == UINT32_MAX || !G.info[s].given) {
    /* After stop finished, in a forked child, or not a buffer CUPTI holds:
     * nothing decodes any more. */
    pthread_mutex_unlock(&G.mu);
    return;
  }
  slotinfo *in = &G.info[s];
  if (valid > in->given) valid = in->given;
  size_t used = page_up(valid); /* what CUPTI wrote: the valid bytes, from the start */
  if (used > in->given) used = in->given;
  G.held -= in->charge - used;
  in->charge = (uint32_t)used;
  G.outstanding--;
  G.queue[(G.qhead + G.qlen) % G.nslots] = (qent){s, valid};
  G.qlen++;
  pthread_mutex_unlock(&G.mu);
  wake_bg();
}

/* Zeroes a decoded buffer and returns it to the free stack (decoding
 * thread; see the essay for what stays resident). */
static void recycle(qent e) {
  pthread_mutex_lock(&G.mu);
  size_t given = G.info[e.slot].given, used = G.info[e.slot].charge;
  int release = G.held > G.cap / 2;
  pthread_mutex_unlock(&G.mu);
  uint8_t *b = slot_addr(e.slot);
  size_t kept = 0;
  if (release) {
    if (used) madvise(b, used, MADV_DONTNEED); /* zero-filled when touched again */
  } else {
    memset(b, 0, used);
    kept = used;
  }
  if (given > used) madvise(b + used, given - used, MADV_DONTNEED); /* cheap: untouched */
  pthread_mutex_lock(&G.mu);
  G.held -= used - kept;
  G.info[e.slot].charge = (uint32_t)kept;
  G.info[e.slot].given = 0;
  G.freel[G.nfree++] = e.slot;
  pthread_mutex_unlock(&G.mu);
}

/* Decodes one completed buffer, recycles it, then writes its frame. */
static void process(qent e) {
  decode_buffer(slot_addr(e.slot), e.valid);
  recycle(e);
  add_dropped();
  write_batch();
}

/* Maps the slots (G.slot_size each); fewer when the system refuses that
 * much address space (strict overcommit).  Returns 0 or TBE_ENOMEM. */
static int map_slots(uint32_t want) {
  for (uint32_t n = want; n >= 16; n /= 2) {
    size_t bytes = (size_t)n * G.slot_size;
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) continue;
    G.base = p; /* zero-filled, page aligned */
    G.map_bytes = bytes;
    G.nslots = n;
    G.info = calloc(n, sizeof *G.info);
    G.freel = calloc(n, sizeof *G.freel);
    G.queue = calloc(n, sizeof *G.queue);
    if (!G.info || !G.freel || !G.queue) return TBE_ENOMEM;
    for (uint32_t i = 0; i < n; i++) G.freel[i] = n - 1 - i; /* slot 0 on top */
    G.nfree = n;
    return 0;
  }
  return TBE_ENOMEM;
}

/* Unmaps the slots unless CUPTI still holds one (it might write to it:
 * then the mapping is left on purpose). */
static void free_slots(void) {
  if (G.base && G.outstanding == 0) munmap(G.base, G.map_bytes);
  free(G.info);
  free(G.freel);
  free(G.queue);
  G.base = NULL;
  G.info = NULL;
  G.freel = NULL;
  G.queue = NULL;
  G.map_bytes = 0;
  G.nslots = G.nfree = G.qlen = G.qhead = G.outstanding = 0;
  G.held = 0;
}

/* ---- enabling ---- */

static const char *cupti_err(CUptiResult r) {
  const char *s = NULL;
  if (G.api.get_result_string && G.api.get_result_string(r, &s) == CUPTI_SUCCESS && s) return s;
  return "CUPTI error";
}

/* Queues an item from a thread other than the decoding one (G.mu held);
 * the next batch written carries it. */
static void side_item_locked(unsigned type, const void *body, size_t len) {
  tbe__spool_item(&G.side, type, body, len);
}

/* Records a line the converter turns into a trace warning (G.mu held). */
static void note(const char *fmt, const char *a, const char *b) {
  char line[256];
  snprintf(line, sizeof line, fmt, a, b);
  side_item_locked(TBE__SP_NOTE, line, strlen(line));
}

typedef struct kindent {
  CUpti_ActivityKind kind;
  const char *name;
  unsigned need;   /* TBE_TRACE_* bit */
  int dump;        /* use EnableAndDump when available */
} kindent;

static const kindent kinds[] = {
    {CUPTI_ACTIVITY_KIND_DEVICE, "DEVICE", TBE_TRACE_CUDA | TBE_TRACE_NVTX, 1},
    {CUPTI_ACTIVITY_KIND_CONTEXT, "CONTEXT", TBE_TRACE_CUDA, 1},
    {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "CONCURRENT_KERNEL", TBE_TRACE_CUDA, 0},
    {CUPTI_ACTIVITY_KIND_MEMCPY, "MEMCPY", TBE_TRACE_CUDA, 0},
    {CUPTI_ACTIVITY_KIND_MEMCPY2, "MEMCPY2", TBE_TRACE_CUDA, 0},
    {CUPTI_ACTIVITY_KIND_MEMSET, "MEMSET", TBE_TRACE_CUDA, 0},
    {CUPTI_ACTIVITY_KIND_RUNTIME, "RUNTIME", TBE_TRACE_CUDA, 0},
    {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "SYNCHRONIZATION", TBE_TRACE_CUDA, 0},
    {CUPTI_ACTIVITY_KIND_OVERHEAD, "OVERHEAD", TBE_TRACE_CUDA, 0},
    {CUPTI_ACTIVITY_KIND_DRIVER, "DRIVER", TBE_TRACE_DRIVER, 0},
    {CUPTI_ACTIVITY_KIND_MEMORY2, "MEMORY2", TBE_TRACE_MEMORY, 0},
    {CUPTI_ACTIVITY_KIND_MARKER, "MARKER", TBE_TRACE_NVTX, 0},
    {CUPTI_ACTIVITY_KIND_MARKER_DATA, "MARKER_DATA", TBE_TRACE_NVTX, 0},
    {CUPTI_ACTIVITY_KIND_NAME, "NAME", TBE_TRACE_NVTX, 0},
};
#define NKINDS (sizeof kinds / sizeof kinds[0])
static int kind_on[NKINDS];

static int kind_is_on(CUpti_ActivityKind k) {
  for (size_t i = 0; i < NKINDS; i++)
    if (kinds[i].kind == k) return kind_on[i];
  return 0;
}

/* Switches the configured kinds on (1) or off (0).  Called with G.mu not
 * held.  Failures to enable are recorded as notes (not fatal) unless no
 * kind could be enabled at all. */
static int set_enabled(int on) {
  int any = 0;
  CUptiResult first_err = CUPTI_SUCCESS;
  /* The window item's time: on, before the first kind is enabled; off,
   * after the last is disabled (conversion keeps only what lies inside). */
  int64_t on_at = on ? cupti_now() : 0;
  for (size_t i = 0; i < NKINDS; i++) {
    if (!(kinds[i].need & G.cfg.trace)) continue;
    if (on) {
      CUptiResult r;
      r = CUPTI_ERROR_NOT_SUPPORTED;
      /* Dump records for devices/contexts that exist already (late start);
       * fall back to a plain enable where dumping is refused. */
      if (kinds[i].dump && G.api.activity_enable_and_dump)
        r = G.api.activity_enable_and_dump(kinds[i].kind);
      if (r != CUPTI_SUCCESS) r = G.api.activity_enable(kinds[i].kind);
      if (r == CUPTI_SUCCESS) {
        kind_on[i] = 1;
        any = 1;
      } else {
        if (first_err == CUPTI_SUCCESS) first_err = r;
        pthread_mutex_lock(&G.mu);
        note("CUPTI refused activity kind %s: %s", kinds[i].name, cupti_err(r));
        pthread_mutex_unlock(&G.mu);
      }
    } else if (kind_on[i]) {
      G.api.activity_disable(kinds[i].kind);
      kind_on[i] = 0;
    }
  }
  if (on && !G.cfg.keep_noisy) {
    /* After enabling the kinds: enabling a kind resets per-call choices. */
    if (kind_is_on(CUPTI_ACTIVITY_KIND_RUNTIME) && G.api.enable_runtime_api)
      for (size_t i = 0; i < sizeof noisy_runtime_cbids / sizeof noisy_runtime_cbids[0]; i++)
        G.api.enable_runtime_api(noisy_runtime_cbids[i], 0);
    if (kind_is_on(CUPTI_ACTIVITY_KIND_DRIVER) && G.api.enable_driver_api)
      for (size_t i = 0; i < sizeof noisy_driver_cbids / sizeof noisy_driver_cbids[0]; i++)
        G.api.enable_driver_api(noisy_driver_cbids[i], 0);
  }
  int64_t now = on ? on_at : cupti_now();
  tbe__sp_window w = {now, (uint32_t)on, 0};
  pthread_mutex_lock(&G.mu);
  side_item_locked(TBE__SP_WINDOW, &w, sizeof w);
  G.enabled = on && any;
  pthread_mutex_unlock(&G.mu);
  if (on && !any && G.cfg.trace) {
    say(TBE_MSG_ERROR, "CUPTI refused every activity kind: %s", cupti_err(first_err));
    return TBE_ECUPTI;
  }
  return 0;
}

/* ---- background thread ---- */

static double since_t0(void) {
  struct timespec n;
  clock_gettime(CLOCK_MONOTONIC, &n);
  return (double)(n.tv_sec - G.t0.tv_sec) + (double)(n.tv_nsec - G.t0.tv_nsec) * 1e-9;
}

/* The first half of a fatal-signal flush (G.mu not held): says so in the
 * spool at once, then forces CUPTI to return every buffer; the caller
 * decodes them. */
static void crash_flush(int sig) {
  pthread_mutex_lock(&G.mu);
  tbe__sp_signal si = {cupti_now(), sig, 0};
  side_item_locked(TBE__SP_SIGNAL, &si, sizeof si);
  pthread_mutex_unlock(&G.mu);
  write_batch();
  G.api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

/* Waits for a wake-up or until `secs` have passed (G.mu held; dropped
 * while waiting).  sem_timedwait counts in CLOCK_REALTIME: a clock step
 * makes one wait end early or late, never lost. */
static void wait_locked(double secs) {
  if (secs < 0.001) secs = 0.001;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  long long ns = ts.tv_nsec + (long long)(secs * 1e9);
  ts.tv_sec += (time_t)(ns / 1000000000);
  ts.tv_nsec = (long)(ns % 1000000000);
  pthread_mutex_unlock(&G.mu);
  while (sem_timedwait(&wake_sem, &ts) != 0 && errno == EINTR) {
  }
  /* One look at the state answers every post made so far (each poster
   * changed it first): collapse them, or a busy spell's posts would cost
   * as many empty rounds later. */
  while (sem_trywait(&wake_sem) == 0) {
  }
  pthread_mutex_lock(&G.mu);
}

static void *bg_main(void *arg) {
  (void)arg;
  double last_flush = 0;
  unsigned crash_seen = G.crash_seen; /* (not S.req now: a request may
                                         come before this thread runs) */
  int draining = 0; /* decoding what a fatal-signal flush returned */
  pthread_mutex_lock(&G.mu);
  for (;;) {
    unsigned req = atomic_load(&S.req);
    if (req != crash_seen && !draining) {
      crash_seen = req;
      draining = 1;
      pthread_mutex_unlock(&G.mu);
      crash_flush(atomic_load(&S.sig));
      pthread_mutex_lock(&G.mu);
      continue;
    }
    if (G.qlen > 0) {
      qent e = G.queue[G.qhead];
      G.qhead = (G.qhead + 1) % G.nslots;
      G.qlen--;
      pthread_mutex_unlock(&G.mu);
      process(e);
      pthread_mutex_lock(&G.mu);
      continue;
    }
    if (draining) {
      /* Everything the forced flush returned is in the spool. */
      draining = 0;
      atomic_store(&S.done, crash_seen);
      continue;
    }
    if (G.stopping) break;
    /* Timers: delay, duration, periodic flush. */
    double now = since_t0(), wake = 0.5;
    if (!G.window_opened) {
      if (now >= G.cfg.delay_s) {
        G.window_opened = 1;
        pthread_mutex_unlock(&G.mu);
        set_enabled(1);
        pthread_mutex_lock(&G.mu);
        continue;
      }
      wake = G.cfg.delay_s - now;
    } else if (!G.window_closed && G.cfg.duration_s > 0) {
      double end = G.cfg.delay_s + G.cfg.duration_s;
      if (now >= end) {
        G.window_closed = 1;
        pthread_mutex_unlock(&G.mu);
        set_enabled(0);
        G.api.flush_all(0);
        pthread_mutex_lock(&G.mu);
        continue;
      }
      if (end - now < wake) wake = end - now;
    }
    if (G.cfg.flush_ms && G.enabled) {
      double period = G.cfg.flush_ms / 1000.0;
      if (now - last_flush >= period) {
        last_flush = now;
        pthread_mutex_unlock(&G.mu);
        G.api.flush_all(0);
        pthread_mutex_lock(&G.mu);
        continue;
      }
      if (last_flush + period - now < wake) wake = last_flush + period - now;
    }
    wait_locked(wake);
  }
  pthread_mutex_unlock(&G.mu);
  return NULL;
}

/* ---- fatal signals ---- */

static const int fatal_sigs[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL, SIGTERM, SIGINT};
#define NFATAL (sizeof fatal_sigs / sizeof fatal_sigs[0])
static struct sigaction old_act[NFATAL]; /* what each was before we came */
static int have_old[NFATAL];             /* old_act[i] is valid */

static int fatal_index(int sig) {
  for (size_t i = 0; i < NFATAL; i++)
    if (fatal_sigs[i] == sig) return (int)i;
  return -1;
}

static void set_default(int sig) {
  struct sigaction d;
  memset(&d, 0, sizeof d);
  d.sa_handler = SIG_DFL;
  sigemptyset(&d.sa_mask);
  sigaction(sig, &d, NULL);
}

/* Hands the signal on as if we had never been there (async-signal-safe). */
static void chain(int sig, siginfo_t *si, void *uc) {
  int k = fatal_index(sig);
  const struct sigaction *o = k >= 0 && have_old[k] ? &old_act[k] : NULL;
  if (!o || o->sa_handler == SIG_DFL) {
    /* The default: dies of the signal on return (it is blocked here). */
    set_default(sig);
    raise(sig);
    return;
  }
  if (o->sa_handler == SIG_IGN) return;
  if (o->sa_flags & SA_RESETHAND) set_default(sig); /* as the kernel would have */
  sigset_t m = o->sa_mask;
  if (o->sa_flags & SA_NODEFER) {
    pthread_sigmask(SIG_BLOCK, &m, NULL);
    sigemptyset(&m);
    sigaddset(&m, sig);
    pthread_sigmask(SIG_UNBLOCK, &m, NULL);
  } else {
    pthread_sigmask(SIG_BLOCK, &m, NULL);
  }
  if (o->sa_flags & SA_SIGINFO)
    o->sa_sigaction(sig, si, uc);
  else
    o->sa_handler(sig);
  /* (the mask is restored when this handler returns) */
}

static void on_fatal(int sig, siginfo_t *si, void *uc) {
  int saved_errno = errno;
  int idle = 0;
  if (!atomic_compare_exchange_strong(&S.busy, &idle, 1)) {
    /* A second fatal signal while a flush is under way: the default. */
    set_default(sig);
    raise(sig);
    errno = saved_errno;
    return;
  }
  if (atomic_load(&S.armed) && !pthread_equal(pthread_self(), G.thread)) {
    atomic_store(&S.sig, sig);
    unsigned seq = atomic_fetch_add(&S.req, 1) + 1;
    wake_bg();
    struct timespec t0, now, nap = {0, 1000000};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
      if ((int)(atomic_load(&S.done) - seq) >= 0) break;
      clock_gettime(CLOCK_MONOTONIC, &now);
      long long ms = (long long)(now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000;
      if (ms >= TBE__CRASH_WAIT_MS) break;
      nanosleep(&nap, NULL);
    }
  }
  atomic_store(&S.busy, 0);
  chain(sig, si, uc);
  errno = saved_errno;
}

static int is_ours(const struct sigaction *a) {
  return (a->sa_flags & SA_SIGINFO) && a->sa_sigaction == on_fatal;
}

/* Gives the calling thread an alternate signal stack when it has none, so
 * that SIGSEGV from a stack overflow can still run the handler.  Never
 * freed: the thread keeps it after stop (one per thread that starts a
 * session without a signal stack of its own). */
static void give_altstack(void) {
  stack_t cur;
  if (sigaltstack(NULL, &cur) != 0 || !(cur.ss_flags & SS_DISABLE)) return;
  void *p = mmap(NULL, TBE__ALTSTACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return;
  stack_t ss;
  memset(&ss, 0, sizeof ss);
  ss.ss_sp = p;
  ss.ss_size = TBE__ALTSTACK;
  if (sigaltstack(&ss, NULL) != 0) munmap(p, TBE__ALTSTACK);
}

/* Installs on_fatal for each fatal signal the program does not ignore.
 * Where on_fatal is installed already (a forked child starting again) the
 * handler saved then is kept. */
static void install_handlers(void) {
  give_altstack();
  for (size_t i = 0; i < NFATAL; i++) {
    struct sigaction cur;
    if (sigaction(fatal_sigs[i], NULL, &cur) != 0) continue;
    if (is_ours(&cur)) continue;
    if (cur.sa_handler == SIG_IGN) continue; /* (sa_handler shares sa_sigaction's storage) */
    old_act[i] = cur;
    have_old[i] = 1;
    struct sigaction a;
    memset(&a, 0, sizeof a);
    a.sa_sigaction = on_fatal;
    a.sa_mask = cur.sa_mask;
    a.sa_flags = SA_SIGINFO | (cur.sa_flags & (SA_RESTART | SA_ONSTACK)) |
                 (fatal_sigs[i] == SIGSEGV ? SA_ONSTACK : 0);
    sigaction(fatal_sigs[i], &a, NULL);
  }
}

/* Puts back what was there before, where ours is still installed. */
static void remove_handlers(void) {
  for (size_t i = 0; i < NFATAL; i++) {
    struct sigaction cur;
    if (!have_old[i] || sigaction(fatal_sigs[i], NULL, &cur) != 0) continue;
    if (is_ours(&cur)) sigaction(fatal_sigs[i], &old_act[i], NULL);
    have_old[i] = 0;
  }
}

/* ---- fork ---- */

static void atfork_prepare(void) { pthread_mutex_lock(&G.mu); }
static void atfork_parent(void) { pthread_mutex_unlock(&G.mu); }
static void atfork_child(void) {
  /* The child has no background thread and must not touch the parent's
   * spool or CUPTI state: it simply is not collecting.  Our signal handlers
   * stay and only chain. */
  pthread_mutex_unlock(&G.mu);
  atomic_store(&S.armed, 0);
  atomic_store(&S.busy, 0);
  if (G.running) {
    G.running = 0;
    G.closed = 1;
    G.thread_started = 0;
    if (G.fd >= 0) close(G.fd);
    G.fd = -1;
  }
}

/* ---- start / stop ---- */

int tbe__collector_running(void) {
  pthread_mutex_lock(&G.mu);
  int r = G.running && G.owner == getpid();
  pthread_mutex_unlock(&G.mu);
  return r;
}

void tbe__collector_memory(size_t *held, size_t *peak, size_t *resident) {
  pthread_mutex_lock(&G.mu);
  if (held) *held = G.held;
  if (peak) *peak = G.held_peak;
  uint8_t *base = G.base;
  size_t bytes = G.map_bytes;
  pthread_mutex_unlock(&G.mu);
  if (!resident) return;
  *resident = 0;
  size_t pages = bytes / TBE__PAGE;
  unsigned char *vec = pages ? malloc(pages) : NULL;
  if (vec && mincore(base, bytes, vec) == 0)
    for (size_t i = 0; i < pages; i++) *resident += (vec[i] & 1) ? TBE__PAGE : 0;
  free(vec);
}

static void write_header_items(void) {
  tbe__sp_info info;
  memset(&info, 0, sizeof info);
  info.start_ns = cupti_now();
  info.pid = (uint32_t)getpid();
  info.ppid = (uint32_t)getppid();
  info.trace = G.cfg.trace;
  info.capture = G.cfg.capture;
  info.cupti_version = G.cupti_version;
  info.flags = G.cfg.flags;
  ITEM(TBE__SP_INFO, info);
  char host[256];
  if (gethostname(host, sizeof host) != 0) strcpy(host, "localhost");
  host[sizeof host - 1] = '\0';
  tbe__spool_item(&G.batch, TBE__SP_HOST, host, strlen(host));
  /* Command line from /proc/self/cmdline, NULs turned into spaces. */
  char cmd[4096];
  size_t n = 0;
  int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ssize_t r;
    while (n < sizeof cmd && (r = read(fd, cmd + n, sizeof cmd - n)) > 0) n += (size_t)r;
    close(fd);
  }
  while (n > 0 && cmd[n - 1] == '\0') n--;
  for (size_t i = 0; i < n; i++)
    if (cmd[i] == '\0') cmd[i] = ' ';
  tbe__spool_item(&G.batch, TBE__SP_CMD, cmd, n);
}

int tbe__collector_start(const tbe__cupti_api *api, const tbe__collect_config *cfg) {
  if (!api || !cfg || !cfg->spool_path) return TBE_EINVAL;
  pthread_mutex_lock(&G.mu);
  if (G.running && G.owner == getpid()) {
    pthread_mutex_unlock(&G.mu);
    return TBE_EBUSY;
  }
  if (!atfork_registered) {
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
    atfork_registered = 1;
  }
  G.api = *api;
  G.cfg = *cfg;
  G.cfg.spool_path = strdup(cfg->spool_path);
  pthread_mutex_unlock(&G.mu);
  if (!G.cfg.spool_path) return TBE_ENOMEM;
  pthread_once(&wake_once, wake_init);

  /* The buffers (see the essay). */
  size_t cap = cfg->buffer_cap ? cfg->buffer_cap : (size_t)64 << 20;
  if (cap < TBE__BUF_MIN) cap = TBE__BUF_MIN;
  if (cfg->buffer_size) {
    size_t bs = cfg->buffer_size;
    if (bs > TBE__BUF_MAX) bs = TBE__BUF_MAX;
    G.fixed = G.slot_size = page_up(bs < TBE__BUF_MIN ? TBE__BUF_MIN : bs);
  } else {
    size_t ss = (cap / TBE__SPREAD) & ~(size_t)(TBE__PAGE - 1);
    G.fixed = 0;
    G.slot_size = ss < TBE__SLICE_MIN ? TBE__SLICE_MIN : ss > TBE__SLICE_MAX ? TBE__SLICE_MAX : ss;
  }
  G.cap = cap;
  G.held = G.held_peak = 0;
  G.outstanding = G.qlen = G.qhead = 0;
  int rc = map_slots(TBE__NBUF);
  tbe__allocator_init(&malloc_alloc, NULL);
  tbe__buf_init(&G.batch, &malloc_alloc);
  tbe__buf_init(&G.side, &malloc_alloc);
  memset(&G.stats, 0, sizeof G.stats);
  memset(G.api_names, 0, sizeof G.api_names);
  memset(kind_on, 0, sizeof kind_on);
  G.declined = 0;
  G.write_err = 0;
  G.stopping = G.closed = G.enabled = 0;
  G.window_opened = G.window_closed = 0;
  G.walk_noted = 0;
  G.owner = getpid();
  G.cupti_version = 0;
  if (rc == 0) {
    G.fd = tbe__io_open(G.cfg.spool_path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0600);
    if (G.fd < 0) rc = -errno;
    /* Held while this process writes: the converter leaves a spool alone
     * while a process that outlived the program still writes it. */
    else
      flock(G.fd, LOCK_EX | LOCK_NB);
  }
  if (rc == 0) {
    uint8_t head[TBE__SPOOL_HEADER];
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    tbe__spool_header(head, (int64_t)rt.tv_sec * 1000000000 + rt.tv_nsec);
    rc = tbe__write_all(G.fd, head, sizeof head);
  }
  if (rc == 0) {
    clock_gettime(CLOCK_MONOTONIC, &G.t0);
    if (G.api.get_version) G.api.get_version(&G.cupti_version);
    while (sem_trywait(&wake_sem) == 0) {
    } /* posts left from an earlier session */
    pthread_mutex_lock(&G.mu);
    write_header_items();
    G.running = 1;
    pthread_mutex_unlock(&G.mu);
    write_batch(); /* the process is identified even if it dies at once */

    uint8_t one = 1;
    size_t sz = sizeof one;
    if (G.api.set_attribute)
      G.api.set_attribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &sz, &one);
    if (G.api.set_thread_id_type) G.api.set_thread_id_type(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
    CUptiResult r = G.api.register_callbacks(buffer_requested, buffer_completed);
    if (r != CUPTI_SUCCESS) {
      say(TBE_MSG_ERROR, "cuptiActivityRegisterCallbacks failed: %s", cupti_err(r));
      rc = TBE_ECUPTI;
    }
  }
  if (rc == 0 && G.cfg.delay_s <= 0) {
    G.window_opened = 1;
    rc = set_enabled(1);
  }
  if (rc == 0) {
    /* The thread must not inherit the application's signal handling. */
    G.crash_seen = atomic_load(&S.req);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int e = pthread_create(&G.thread, NULL, bg_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (e != 0) {
      rc = -e;
    } else {
      G.thread_started = 1;
    }
  }
  if (rc == 0 && G.cfg.catch_signals) {
    install_handlers();
    atomic_store(&S.armed, 1);
  }
  if (rc != 0) {
    set_enabled(0);
    pthread_mutex_lock(&G.mu);
    G.running = 0;
    G.closed = 1;
    pthread_mutex_unlock(&G.mu);
    if (G.fd >= 0) {
      close(G.fd);
      unlink(G.cfg.spool_path);
      G.fd = -1;
    }
    tbe__buf_deinit(&G.batch);
    tbe__buf_deinit(&G.side);
    strtab_free(&G.strs);
    free_slots(); /* (kept mapped if CUPTI holds a buffer) */
    free((char *)G.cfg.spool_path);
    G.cfg.spool_path = NULL;
    return rc;
  }
  return 0;
}

int tbe__collector_stop(tbe__sp_stats *stats) {
  pthread_mutex_lock(&G.mu);
  if (!G.running || G.owner != getpid()) {
    pthread_mutex_unlock(&G.mu);
    return TBE_ESTATE;
  }
  pthread_mutex_unlock(&G.mu);
  atomic_store(&S.armed, 0);
  if (G.cfg.catch_signals) remove_handlers();
  set_enabled(0);
  /* Forced flush: CUPTI completes every buffer, incomplete records too. */
  G.api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  pthread_mutex_lock(&G.mu);
  G.stopping = 1;
  pthread_mutex_unlock(&G.mu);
  wake_bg();
  if (G.thread_started) pthread_join(G.thread, NULL);
  G.thread_started = 0;
  /* Buffers completed after the thread left are decoded here. */
  pthread_mutex_lock(&G.mu);
  while (G.qlen > 0) {
    qent e = G.queue[G.qhead];
    G.qhead = (G.qhead + 1) % G.nslots;
    G.qlen--;
    pthread_mutex_unlock(&G.mu);
    decode_buffer(slot_addr(e.slot), e.valid);
    recycle(e);
    pthread_mutex_lock(&G.mu);
  }
  G.closed = 1;
  G.running = 0;
  pthread_mutex_unlock(&G.mu);
  add_dropped();
  tbe__sp_end end = {cupti_now()};
  ITEM(TBE__SP_END, end);
  write_batch();
  int rc = G.write_err;
  if (G.fd >= 0) {
    if (tbe__io_close(G.fd) != 0 && rc == 0) rc = -errno;
    G.fd = -1;
  }
  if (stats) *stats = G.stats;
  tbe__buf_deinit(&G.batch);
  tbe__buf_deinit(&G.side);
  strtab_free(&G.strs);
  free_slots();
  free((char *)G.cfg.spool_path);
  G.cfg.spool_path = NULL;
  return rc;
}

/* ---- steps (tbe_profiler_step) ---- */

/* Marks the start of the program's next step from any application thread:
 * a CUPTI timestamp and one TBE__SP_STEP item queued with the side items
 * (under G.mu, as the other side items), carried by the next frame the
 * background thread writes.  CUPTI's buffers and their hot path are not
 * touched.  Steps are marked while the collector runs, also outside the
 * collection window (--delay), so that conversion numbers them by call. */
int tbe__collector_step(void) {
  uint32_t tid = (uint32_t)gettid();
  pthread_mutex_lock(&G.mu);
  if (!G.running || G.closed || G.owner != getpid()) {
    pthread_mutex_unlock(&G.mu);
    return TBE_ESTATE;
  }
  /* (the time is taken under the lock: items are queued in time order) */
  tbe__sp_step st = {cupti_now(), (uint32_t)G.owner, tid};
  side_item_locked(TBE__SP_STEP, &st, sizeof st);
  pthread_mutex_unlock(&G.mu);
  return 0;
}
