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
 * Fatal signals (catch_signals): collector_signals.c installs the
 * handler; it posts a request, and the background thread notes the
 * signal in the spool, forces a CUPTI flush and decodes and writes every
 * buffer that returns, then answers (crash_flush, bg_main).
 *
 * Hardware metrics (hwmetrics.h), when asked for, ride on the background
 * thread: its timers give them a turn (tbe__hwm_tick: PM samples drained
 * every 20-50 ms, range-profiler figures), their items go into the batch and
 * out as a frame like the records', the fatal-signal flush gives them a
 * last turn, and stop ends them before the END item.
 *
 * Device memory in use (nvml.h), with TBE_TRACE_MEMORY, is sampled by the
 * background thread too: NVML is loaded and started there at the first
 * sample time once collection is on (a missing or refusing NVML is a
 * note, never an error), sampled every TBE__NVML_PERIOD_S while
 * collection is on, each turn's items written as a frame, and stopped
 * there before the thread ends.
 *
 * Records become spool items in collector_decode.c (the per-record work
 * and the spool's string ids: the decoder, owned by the decoding thread).
 *
 * Invariants: a slot is in exactly one place (free stack, CUPTI, queue,
 * being decoded); G.held is the sum of the charges and is at most the cap;
 * the spool string ids are assigned only by the decoding thread (the
 * background thread, or the stopping thread after the join); CUPTI-owned
 * strings are copied before the buffer is recycled. */
#include "collect/collector.h"
#include "collect/collector_decode.h"
#include "collect/collector_signals.h"
#include "collect/hwmetrics.h"
#include "collect/launcher.h"
#include "collect/nvml.h"
#include "collect/nvtxhook.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
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

_Static_assert(TBE__MK_INSTANT == CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS, "marker flag");
_Static_assert(TBE__MK_START == CUPTI_ACTIVITY_FLAG_MARKER_START, "marker flag");
_Static_assert(TBE__MK_END == CUPTI_ACTIVITY_FLAG_MARKER_END, "marker flag");
_Static_assert(TBE__MK_COLOR_ARGB == CUPTI_ACTIVITY_FLAG_MARKER_COLOR_ARGB, "marker flag");
_Static_assert(TBE__OBJ_PROCESS == CUPTI_ACTIVITY_OBJECT_PROCESS, "object kind");
_Static_assert(TBE__OBJ_THREAD == CUPTI_ACTIVITY_OBJECT_THREAD, "object kind");

/* ---- noisy API calls (their names: collector_decode.c) ---- */

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
  tbe__decoder dec;        /* decoding thread only (collector_decode.h) */
  tbe__sp_stats stats;
  struct timespec t0;      /* CLOCK_MONOTONIC at start */
  int window_opened, window_closed;
  int walk_noted;          /* a buffer walk that CUPTI cut short was noted */
  unsigned crash_seen;     /* tbe__fatal_requests() when the background thread was made */
  int hwm;                 /* hardware metrics want ticks (hwmetrics.h) */
  double hwm_next;         /* since_t0() of the next tick */
  int nvtx;                /* our NVTX handlers record (nvtxhook.h) */
  double nvtx_next;        /* since_t0() of the next drain of their blocks */
  int nvml;                /* NVML_*: device memory sampled (nvml.h), by the background thread */
  double nvml_next;        /* since_t0() of the next sample */
} G = {.mu = PTHREAD_MUTEX_INITIALIZER, .fd = -1};

/* Wakes the background thread: a semaphore, because the fatal-signal
 * handler must wake it too and sem_post is async-signal-safe.  Initialized
 * once per process and never destroyed (a handler may post at any time). */
static sem_t wake_sem;
static pthread_once_t wake_once = PTHREAD_ONCE_INIT;
static void wake_init(void) { sem_init(&wake_sem, 0, 0); }
static void wake_bg(void) { sem_post(&wake_sem); }

static int atfork_registered;
static tbe_allocator malloc_alloc; /* the batches' allocator (malloc) */

/* One line to the caller's on_message (collector.h); the collector never
 * prints. */
static void say(tbe_message_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void say(tbe_message_level level, const char *fmt, ...) {
  if (!G.cfg.on_message) return;
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  G.cfg.on_message(G.cfg.message_ctx, level, line);
}

static int64_t ts64(uint64_t v) { return v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v; }

#define ITEM(type, var) tbe__spool_item(&G.batch, type, &(var), sizeof(var))

/* Where hardware metrics put their items: the decoding thread's batch and
 * string ids, and a warning line to on_message. */
static uint32_t hwm_str(void *ctx, const char *s) {
  (void)ctx;
  return tbe__decoder_str(&G.dec, s);
}
static void hwm_say(void *ctx, const char *line) {
  (void)ctx;
  say(TBE_MSG_WARNING, "%s", line);
}
static tbe__hwm_out hwm_out(void) {
  tbe__hwm_out o = {&G.batch, hwm_str, NULL, hwm_say, NULL};
  return o;
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

/* ---- device memory (nvml.h), on the background thread ---- */

static void side_item_locked(unsigned type, const void *body, size_t len);

/* G.nvml: off; wanted (TBE_TRACE_MEMORY and cfg.nvml: started at the
 * first sample time once collection is on, so that loading NVML, which
 * can take a while, never delays the thread's first buffers); on. */
enum { NVML_OFF = 0, NVML_WANTED = 1, NVML_ON = 2 };

/* Starts the sampler (background thread, G.mu not held); a failure is a
 * note in the spool and sampling stays off. */
static void nvml_begin(void) {
  char why[512];
  if (tbe__nvml_start((uint32_t)G.owner, why, sizeof why) == 0) {
    G.nvml = NVML_ON;
    return;
  }
  G.nvml = NVML_OFF;
  pthread_mutex_lock(&G.mu);
  side_item_locked(TBE__SP_NOTE, why, strlen(why));
  pthread_mutex_unlock(&G.mu);
}

/* One sample of every GPU into the batch (background thread). */
static void nvml_sample(void) {
  tbe__nvml_out o = {&G.batch, hwm_str, NULL};
  tbe__nvml_sample(&o, cupti_now());
}

/* Ends the sampler: a last sample (what the program holds at the end),
 * and a note when NVML never listed this process.  A program that ended
 * before the first sample time gets its one sample (or the note that NVML
 * is missing) here, so that every run collected says one or the other. */
static void nvml_end(void) {
  if (G.nvml == NVML_WANTED && G.window_opened) nvml_begin();
  if (G.nvml != NVML_ON) return;
  nvml_sample(); /* (outside the windows, conversion leaves it out) */
  char line[300];
  tbe__nvml_stop(line, sizeof line);
  G.nvml = NVML_OFF;
  if (!line[0]) return;
  pthread_mutex_lock(&G.mu);
  side_item_locked(TBE__SP_NOTE, line, strlen(line));
  pthread_mutex_unlock(&G.mu);
}

/* Puts the items of other threads that a failed frame held (collection
 * windows, notes, steps, a signal) back in front of G.side, for the next
 * frame: they are few, and they decide what the records mean (a lost "on"
 * window would leave every later record out of the run), so a failed write
 * loses only the records of its buffers.  Without memory for that, they
 * are lost with the frame, as before. */
static void requeue_side(const uint8_t *items, size_t len) {
  tbe__buf keep;
  tbe__buf_init(&keep, &malloc_alloc);
  tbe__buf_append(&keep, items, len);
  pthread_mutex_lock(&G.mu);
  tbe__buf_append(&keep, G.side.data, G.side.len);
  if (!tbe__buf_error(&keep)) {
    tbe__buf old = G.side;
    G.side = keep;
    keep = old;
  }
  pthread_mutex_unlock(&G.mu);
  tbe__buf_deinit(&keep);
}

/* Appends the stats item and writes the batch as one frame.  A frame that
 * cannot be written loses its records (counted in spool_dropped); the
 * strings it defined are defined again and the other threads' items it
 * held are queued again (requeue_side). */
/* Set on the background thread only: whose CPU time write_batch reads
 * (G.thread is written by pthread_create's caller, possibly after the
 * thread has begun writing batches: not to be read there). */
static __thread int on_bg_thread;

static void write_batch(void) {
  struct timespec c;
  if (on_bg_thread && clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c) == 0)
    G.stats.decode_cpu_ns = (uint64_t)c.tv_sec * 1000000000u + (uint64_t)c.tv_nsec;
  pthread_mutex_lock(&G.mu);
  G.stats.buffers_declined = G.declined;
  G.stats.buffer_bytes = G.held_peak;
  size_t side_at = G.batch.len, side_len = G.side.len;
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
  int written_whole = rc == 0;
  if (rc == 0 && G.fd >= 0) rc = tbe__spool_write_frame(G.fd, G.batch.data, G.batch.len);
  if (rc != 0 && written_whole && side_len) requeue_side(G.batch.data + side_at, side_len);
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
    tbe__decoder_redefine(&G.dec);
    tbe__hwm_redefine();
  }
}

static void note(const char *fmt, const char *a, const char *b);
static const char *cupti_err(CUptiResult r);

/* Decodes one completed buffer (collector_decode.h); a walk CUPTI cut
 * short is noted once. */
static void decode_buffer(uint8_t *buf, size_t valid) {
  uint64_t n = 0;
  int bad = tbe__decoder_buffer(&G.dec, buf, valid, &n);
  G.batch_records += n;
  if (bad && !G.walk_noted) {
    G.walk_noted = 1;
    pthread_mutex_lock(&G.mu);
    note("CUPTI could not walk an activity buffer past a record (%s): %s",
         cupti_err((CUptiResult)bad),
         "the rest of that buffer was skipped, and of any other like it");
    pthread_mutex_unlock(&G.mu);
  }
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
    {CUPTI_ACTIVITY_KIND_DRIVER, "DRIVER", TBE_TRACE_CUDA | TBE_TRACE_DRIVER, 0},
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

/* Whether a driver call is one that puts work on the GPU: kernel, cooperative
 * and graph launches, copies and memsets (by the name CUPTI gives its id). */
static int driver_call_launches(const char *name) {
  static const char *const prefixes[] = {"cuLaunch", "cuGraphLaunch", "cuMemcpy", "cuMemset"};
  for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
    if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0) return 1;
  return 0;
}

/* The driver calls recorded by default: the launch subset (the calls that
 * put work on a GPU, made by cuBLASLt, cuDNN, CUTLASS, Triton and XLA
 * rather than through the runtime), every other driver call switched off
 * one by one.  Ids run from 1 until CUPTI names none (TBE__DRIVER_CBID_MAX
 * at most). */
#define TBE__DRIVER_CBID_MAX 4096u
static void driver_launches_only(void) {
  unsigned off = 0, kept = 0, unnamed = 0;
  for (uint32_t cbid = 1; cbid < TBE__DRIVER_CBID_MAX && unnamed < 64; cbid++) {
    const char *name = NULL;
    if (G.api.get_callback_name(CUPTI_CB_DOMAIN_DRIVER_API, cbid, &name) != CUPTI_SUCCESS ||
        !name) {
      unnamed++; /* past the last id (a few ids in between may have no name) */
      continue;
    }
    unnamed = 0;
    if (driver_call_launches(name)) {
      kept++;
      continue;
    }
    if (G.api.enable_driver_api(cbid, 0) == CUPTI_SUCCESS) off++;
  }
  (void)off;
  if (!kept) {
    G.api.activity_disable(CUPTI_ACTIVITY_KIND_DRIVER);
    for (size_t i = 0; i < NKINDS; i++)
      if (kinds[i].kind == CUPTI_ACTIVITY_KIND_DRIVER) kind_on[i] = 0;
  }
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
    /* NVTX recorded by our own handlers (nvtxhook.h): no marker records. */
    if (G.cfg.nvtx_hook && (kinds[i].need & TBE_TRACE_NVTX) && !(kinds[i].need & TBE_TRACE_CUDA))
      continue;
    /* Driver calls without --trace driver: the launch subset only, and only
     * where CUPTI lets us choose calls (else none). */
    if (kinds[i].kind == CUPTI_ACTIVITY_KIND_DRIVER && !(G.cfg.trace & TBE_TRACE_DRIVER) &&
        !G.api.enable_driver_api)
      continue;
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
  if (on && kind_is_on(CUPTI_ACTIVITY_KIND_DRIVER) && !(G.cfg.trace & TBE_TRACE_DRIVER))
    driver_launches_only();
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

/* Our NVTX handlers' records so far into the batch (decoding thread, G.mu
 * not held). */
#define TBE__NVTX_DRAIN_S 0.2 /* how often: 200 ms of a busy thread is ~2 blocks */
static void drain_nvtx(void) {
  if (G.nvtx) tbe__nvtx_drain(&G.dec, (uint32_t)G.owner);
}

/* The first half of a fatal-signal flush (G.mu not held): says so in the
 * spool at once, then forces CUPTI to return every buffer; the caller
 * decodes them. */
static void crash_flush(int sig) {
  pthread_mutex_lock(&G.mu);
  tbe__sp_signal si = {cupti_now(), sig, 0};
  side_item_locked(TBE__SP_SIGNAL, &si, sizeof si);
  pthread_mutex_unlock(&G.mu);
  if (G.hwm) {
    /* The samples so far and every kernel's figures, before anything else
     * can go wrong. */
    tbe__hwm_out o = hwm_out();
    tbe__hwm_tick(&o, 1);
  }
  drain_nvtx();
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

/* The background thread's nice value: it yields to the program's
 * threads (Linux's setpriority on a thread id sets that thread's alone);
 * its work is behind theirs, and the buffer cap bounds how far behind. */
#define TBE__BG_NICE 10

static void *bg_main(void *arg) {
  (void)arg;
  on_bg_thread = 1;
  /* (refused, as under a seccomp filter: it runs at the program's) */
  (void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), TBE__BG_NICE);
  double last_flush = 0;
  unsigned crash_seen = G.crash_seen; /* (not the requests now: one may
                                         come before this thread runs) */
  int draining = 0; /* decoding what a fatal-signal flush returned */
  pthread_mutex_lock(&G.mu);
  for (;;) {
    unsigned req = tbe__fatal_requests();
    if (req != crash_seen && !draining) {
      crash_seen = req;
      draining = 1;
      pthread_mutex_unlock(&G.mu);
      crash_flush(tbe__fatal_signal());
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
      tbe__fatal_answer(crash_seen);
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
    if (G.hwm) {
      if (now >= G.hwm_next) {
        pthread_mutex_unlock(&G.mu);
        tbe__hwm_out o = hwm_out();
        double next = tbe__hwm_tick(&o, 0);
        if (G.batch.len) write_batch();
        pthread_mutex_lock(&G.mu);
        G.hwm_next = since_t0() + next;
        continue;
      }
      if (G.hwm_next - now < wake) wake = G.hwm_next - now;
    }
    if (G.nvtx) {
      if (now >= G.nvtx_next || tbe__nvtx_pressure()) {
        pthread_mutex_unlock(&G.mu);
        drain_nvtx();
        if (G.batch.len) write_batch();
        pthread_mutex_lock(&G.mu);
        G.nvtx_next = since_t0() + TBE__NVTX_DRAIN_S;
        continue;
      }
      if (G.nvtx_next - now < wake) wake = G.nvtx_next - now;
    }
    if (G.nvml && G.enabled) {
      if (now >= G.nvml_next) {
        pthread_mutex_unlock(&G.mu);
        if (G.nvml == NVML_WANTED) nvml_begin(); /* (on, or off with a note) */
        if (G.nvml == NVML_ON) nvml_sample();
        if (G.batch.len) write_batch();
        pthread_mutex_lock(&G.mu);
        G.nvml_next = since_t0() + TBE__NVML_PERIOD_S;
        continue;
      }
      if (G.nvml_next - now < wake) wake = G.nvml_next - now;
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
  nvml_end(); /* its last sample and note: the stopping thread writes them */
  G.nvml = NVML_OFF;
  return NULL;
}

/* ---- fork ---- */

static void atfork_prepare(void) { pthread_mutex_lock(&G.mu); }
static void atfork_parent(void) { pthread_mutex_unlock(&G.mu); }
static void atfork_child(void) {
  /* The child has no background thread and must not touch the parent's
   * spool or CUPTI state: it simply is not collecting.  Our signal handlers
   * stay and only chain. */
  pthread_mutex_unlock(&G.mu);
  tbe__fatal_atfork_child();
  tbe__nvtx_atfork_child();
  G.nvtx = 0;
  G.nvml = NVML_OFF; /* (the sampler was the parent's thread's) */
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
  /* The launcher's rank (launcher.h), read once here: the environment
   * this process started with. */
  tbe__launcher l;
  tbe__launcher_read(&l, NULL, NULL);
  uint8_t rank_body[sizeof(tbe__sp_rank) + TBE__JOB_MAX];
  size_t rank_len = tbe__launcher_item(&l, rank_body, sizeof rank_body);
  if (rank_len) tbe__spool_item(&G.batch, TBE__SP_RANK, rank_body, rank_len);
  if (l.why[0]) {
    char note[300];
    int nl = snprintf(note, sizeof note, "launcher: %s", l.why);
    tbe__spool_item(&G.batch, TBE__SP_NOTE, note,
                    nl < (int)sizeof note ? (size_t)nl : sizeof note - 1);
  }
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

/* Undoes a start that failed at any step (the kinds off, hardware metrics
 * stopped, the spool closed and removed, the buffers freed); returns rc. */
static int start_failed(int rc) {
  set_enabled(0);
  if (G.hwm) {
    tbe__hwm_out o = hwm_out();
    tbe__hwm_stop(&o);
    G.hwm = 0;
  }
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
  tbe__decoder_reset(&G.dec);
  free_slots(); /* (kept mapped if CUPTI holds a buffer) */
  free((char *)G.cfg.spool_path);
  G.cfg.spool_path = NULL;
  return rc;
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
  tbe__decoder_reset(&G.dec);
  G.dec.batch = &G.batch;
  G.dec.stats = &G.stats;
  G.dec.keep_noisy = cfg->keep_noisy;
  G.dec.get_next_record = api->get_next_record;
  G.dec.get_callback_name = api->get_callback_name;
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
  G.hwm = 0;
  G.hwm_next = 0;
  if (rc == 0 && (cfg->gpu_metrics_hz || cfg->kernel_metrics)) {
    tbe__hwm_config hc = {cfg->gpu_metrics_hz, cfg->kernel_metrics, cfg->kernel_launches,
                          cfg->capture, cfg->capture_name, cfg->capture_domain,
                          TBE__PM_EVAL_DEFAULT};
    G.hwm = tbe__hwm_start(&G.api.m, G.api.get_result_string, G.api.get_timestamp, &hc);
  }
  G.nvtx = 0;
  G.nvtx_next = 0;
  /* (the background thread starts the sampler: nvml_begin) */
  G.nvml = cfg->nvml && (cfg->trace & TBE_TRACE_MEMORY) ? NVML_WANTED : NVML_OFF;
  G.nvml_next = 0;
  if (rc == 0 && cfg->nvtx_hook && (cfg->trace & TBE_TRACE_NVTX)) {
    if (tbe__nvtx_start(G.api.get_timestamp, wake_bg) == 0)
      G.nvtx = 1;
    else
      say(TBE_MSG_WARNING, "NVTX ranges are not recorded: no memory for their buffers");
  }
  if (rc == 0) {
    /* The thread must not inherit the application's signal handling. */
    G.crash_seen = tbe__fatal_requests();
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
  if (rc == 0 && G.cfg.catch_signals) tbe__fatal_catch(G.thread, wake_bg);
  return rc != 0 ? start_failed(rc) : 0;
}

int tbe__collector_stop(tbe__sp_stats *stats) {
  pthread_mutex_lock(&G.mu);
  if (!G.running || G.owner != getpid()) {
    pthread_mutex_unlock(&G.mu);
    return TBE_ESTATE;
  }
  pthread_mutex_unlock(&G.mu);
  tbe__fatal_disarm();
  if (G.cfg.catch_signals) tbe__fatal_remove();
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
  if (G.nvtx) {
    tbe__nvtx_stop();
    drain_nvtx();
    tbe__sp_nvtx_stats ns;
    tbe__nvtx_stats(&ns);
    ITEM(TBE__SP_NVTX_STATS, ns);
    G.nvtx = 0;
  }
  add_dropped();
  if (G.hwm) {
    tbe__hwm_out o = hwm_out();
    tbe__hwm_stop(&o);
    G.hwm = 0;
  }
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
  tbe__decoder_reset(&G.dec);
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
