/* tbexport/trace.h: the in-memory trace model.
 *
 * One model, fed by every source (the CUPTI collector, the Chrome/Kineto,
 * XSpace and Nsight Systems importers) and read by every output (Chrome
 * JSON, XSpace, run summary events, the summary and diff reports).
 *
 * The model is plain data: arrays of small structs that a reader walks
 * directly.  Strings are interned (tbe_str ids into one string table);
 * events are 64 bytes with kind-specific details in side arrays, so there is
 * no malloc per event.  Times are integer nanoseconds since the Unix epoch;
 * durations are integer nanoseconds.  The model holds times within
 * +-(2^62 - 1) ns (about 146 years around 1970), where any two differ and
 * any start plus its duration adds without overflow: tbe_trace_add_event
 * and tbe_trace_add_step saturate what lies outside (the importers refuse
 * such files first, naming the field).
 *
 * Building: tbe_trace_create, then tbe_trace_intern / _track / _add_*; then
 * tbe_trace_finish, which sorts events (by track, start, longer first),
 * links API calls to the GPU work they launched (correlation ids), derives
 * steps when none were given, and computes the time span.  Outputs expect a
 * finished trace.
 *
 * Thread safety: none; one thread builds, any number may read a finished
 * trace.
 *
 * Tiers (tbexport.h): the handle (create, finish, steps, free) is stable;
 * the layout and the building and reading functions are experimental,
 * declared only when TBE_EXPERIMENTAL is defined. */
#ifndef TBEXPORT_TRACE_H
#define TBEXPORT_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "tbexport/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the stable tier: a trace as a handle ----
 *
 * What reading and writing runs needs (tbexport/import.h, export.h):
 * create a trace, import into it, finish it, choose its steps, export it,
 * free it.  Its layout and the functions that build or read it event by
 * event are the experimental tier, below (tbexport.h). */

typedef struct tbe_trace tbe_trace;

/* Creates an empty trace.  `a` may be NULL.  Returns 0 or TBE_ENOMEM. */
TBE_API int tbe_trace_create(tbe_trace **out, const tbe_allocator *a);
/* Frees the trace and everything it owns (NULL is a no-op). */
TBE_API void tbe_trace_free(tbe_trace *t);

/* The first allocation failure met while building, sticky; 0 if none. */
TBE_API int tbe_trace_error(const tbe_trace *t);

/* Finishes building: sorts events by (track, start, longer first) and sets
 * each track's first/count; resolves correlation links (event.link) between
 * host API calls and GPU work; derives steps from "ProfilerStep#N" events
 * when none were added; renames every kernel whose name is mangled to the
 * demangled form (tbe_demangle: as c++filt prints it) and keeps the mangled
 * text in a string arg "mangled name" (kernels that already carry that arg
 * are left alone); sets start_ns/stop_ns from the events when unset.
 * Idempotent.  Returns 0 or an error. */
TBE_API int tbe_trace_finish(tbe_trace *t);

/* Steps from a named range.
 *
 * Replaces the trace's steps by the occurrences of the NVTX range or user
 * annotation (record_function) named exactly `name`: NVTX ranges of NVTX
 * domain `domain` only (NULL: any domain; a user annotation has no domain,
 * so it matches only when `domain` is NULL).  Marks, GPU projections of
 * annotations and events on GPU streams never match.
 * - Outermost occurrences only: one nested in another occurrence of the
 *   same name on its thread (recursion) is part of that step.
 * - One thread: when several host threads carry the range, the thread with
 *   the most outermost occurrences gives the steps (on a tie, the one whose
 *   first occurrence is earliest); the occurrences on other threads stay
 *   ordinary ranges.  Each step records that thread in tbe_step.track.
 * - Numbering: in time order, from 0; or, when every chosen occurrence is
 *   an NVTX range carrying an integer payload (int64, or uint64 up to
 *   INT64_MAX) and no two carry the same value, by that payload (PyTorch's
 *   and many training loops' step counter).  Steps are stored in time order
 *   and named like the range.
 * The trace is finished first if it was not, and stays finished.  Returns
 * the number of steps (> 0) with the steps replaced; 0 when nothing matches,
 * the steps then left as they were (not an error: callers say so, see
 * tbe_trace_top_ranges for a hint); TBE_EINVAL (empty name), TBE_ETOOBIG,
 * or TBE_ENOMEM with the steps unchanged. */
TBE_API int tbe_trace_steps_from_range(tbe_trace *t, const char *name, const char *domain);

/* tbe_trace_steps_from_range as `--steps nvtx:NAME[@DOMAIN]` applies it:
 * when nothing matches, the steps stay as they were and one warning is
 * added to the trace (and copied into line[0..size) when `line` is not
 * NULL, "" otherwise) naming NAME, the most frequent top-level ranges
 * (tbe_trace_top_ranges) and the steps kept.  Returns the number of steps
 * (0: no match) or an error. */
TBE_API int tbe_trace_steps_apply(tbe_trace *t, const char *name, const char *domain, char *line,
                                  size_t size);

#ifdef __cplusplus
}
#endif

#endif /* TBEXPORT_TRACE_H */

/* ---- the experimental tier: the model's layout ---- */
#if defined(TBE_EXPERIMENTAL) && !defined(TBEXPORT_TRACE_H_EXPERIMENTAL)
#define TBEXPORT_TRACE_H_EXPERIMENTAL

#ifdef __cplusplus
extern "C" {
#endif

/* The experimental tier: hidden in the shared library (common.h). */
#undef TBE_API
#define TBE_API TBE__API_EXPERIMENTAL

/* An interned string: an index into the trace's string table.  0 is "". */
typedef uint32_t tbe_str;

#define TBE_NONE UINT32_MAX

typedef enum tbe_event_kind {
  TBE_EV_KERNEL = 0,      /* GPU kernel; detail: tbe_kernel */
  TBE_EV_MEMCPY = 1,      /* GPU copy; detail: tbe_memcpy */
  TBE_EV_MEMSET = 2,      /* GPU memset; detail: tbe_memset */
  TBE_EV_RUNTIME = 3,     /* CUDA runtime API call (host) */
  TBE_EV_DRIVER = 4,      /* CUDA driver API call (host) */
  TBE_EV_SYNC = 5,        /* synchronization; detail: tbe_sync */
  TBE_EV_NVTX_RANGE = 6,  /* NVTX push/pop or start/end range; detail: tbe_nvtx */
  TBE_EV_NVTX_MARK = 7,   /* NVTX mark (instant); detail: tbe_nvtx */
  TBE_EV_CPU_OP = 8,      /* framework operator (Kineto cpu_op) */
  TBE_EV_USER_ANNOTATION = 9,  /* record_function / user range on the host */
  TBE_EV_GPU_ANNOTATION = 10,  /* user range projected onto a GPU stream */
  TBE_EV_PYTHON = 11,     /* Python function */
  TBE_EV_OVERHEAD = 12,   /* profiler overhead */
  TBE_EV_COUNTER = 13,    /* counter sample; detail: tbe_counter */
  TBE_EV_MEMORY = 14,     /* allocator event (Kineto "[memory]"); detail: tbe_memory */
  TBE_EV_INSTANT = 15,    /* other instant event */
  TBE_EV_GENERIC = 16,    /* any other duration event (cat kept in `cat`) */
  TBE_EV__COUNT
} tbe_event_kind;

/* Event flags. */
#define TBE_EVF_ASYNC 0x01      /* an asynchronous (non-nesting) range */
#define TBE_EVF_CLAMPED 0x02    /* duration was negative in the source, or a time
                                   lay outside the model's range (saturated) */
#define TBE_EVF_GRAPH 0x04      /* part of a CUDA graph launch */

typedef struct tbe_event {
  int64_t start_ns;     /* epoch ns */
  int64_t dur_ns;       /* >= 0; 0 for instants */
  uint64_t correlation; /* CUDA correlation id; 0 = none */
  uint64_t external_id; /* framework op id (Kineto "External id"); 0 = none */
  tbe_str name;
  tbe_str cat;          /* category as the source named it; 0 = the kind's default */
  uint32_t track;       /* index into tbe_trace.tracks */
  uint32_t detail;      /* index into the kind's detail array, or TBE_NONE */
  uint32_t link;        /* the correlated event (API call <-> GPU work), or TBE_NONE */
  uint32_t args;        /* first of `nargs` entries in tbe_trace.args */
  uint16_t nargs;
  uint8_t kind;         /* tbe_event_kind */
  uint8_t flags;        /* TBE_EVF_* */
  uint32_t reserved;
} tbe_event;

/* Memory kinds, numbered as CUPTI numbers them (CUpti_ActivityMemoryKind). */
typedef enum tbe_mem_kind {
  TBE_MEM_UNKNOWN = 0,
  TBE_MEM_PAGEABLE = 1,
  TBE_MEM_PINNED = 2,
  TBE_MEM_DEVICE = 3,
  TBE_MEM_ARRAY = 4,
  TBE_MEM_MANAGED = 5,
  TBE_MEM_DEVICE_STATIC = 6,
  TBE_MEM_MANAGED_STATIC = 7
} tbe_mem_kind;

/* Copy directions, numbered as CUPTI numbers them (CUpti_ActivityMemcpyKind). */
typedef enum tbe_copy_kind {
  TBE_COPY_UNKNOWN = 0,
  TBE_COPY_HTOD = 1,
  TBE_COPY_DTOH = 2,
  TBE_COPY_HTOA = 3,
  TBE_COPY_ATOH = 4,
  TBE_COPY_ATOA = 5,
  TBE_COPY_ATOD = 6,
  TBE_COPY_DTOA = 7,
  TBE_COPY_DTOD = 8,
  TBE_COPY_HTOH = 9,
  TBE_COPY_PTOP = 10
} tbe_copy_kind;

/* Synchronization kinds (CUpti_ActivitySynchronizationType). */
typedef enum tbe_sync_kind {
  TBE_SYNC_UNKNOWN = 0,
  TBE_SYNC_EVENT = 1,        /* cudaEventSynchronize */
  TBE_SYNC_STREAM_WAIT = 2,  /* cudaStreamWaitEvent */
  TBE_SYNC_STREAM = 3,       /* cudaStreamSynchronize */
  TBE_SYNC_CONTEXT = 4       /* cudaDeviceSynchronize / cuCtxSynchronize */
} tbe_sync_kind;

typedef struct tbe_kernel {
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t static_shared;   /* bytes */
  uint32_t dynamic_shared;  /* bytes */
  uint16_t registers;       /* per thread */
  uint16_t context;
  int32_t queued_ns;        /* launch-to-queue latency if known, else -1 */
  float occupancy_pct;      /* est. achieved occupancy %, Kineto's: min(blocks per SM, active
                               blocks per SM) x threads per block / threads per SM; the
                               source's, else computed at finish (occupancy.h); < 0 unknown */
  float blocks_per_sm;      /* < 0 if unknown */
  float warps_per_sm;       /* < 0 if unknown */
} tbe_kernel;

typedef struct tbe_memcpy {
  uint64_t bytes;
  uint8_t copy_kind;  /* tbe_copy_kind */
  uint8_t src_kind;   /* tbe_mem_kind */
  uint8_t dst_kind;   /* tbe_mem_kind */
  uint8_t async;
  int32_t src_device; /* -1 if unknown */
  int32_t dst_device; /* -1 if unknown */
  uint16_t context;
} tbe_memcpy;

typedef struct tbe_memset {
  uint64_t bytes;
  uint32_t value;
  uint8_t mem_kind;  /* tbe_mem_kind */
  uint8_t async;
  uint16_t context;
} tbe_memset;

typedef struct tbe_sync {
  uint8_t sync_kind;  /* tbe_sync_kind */
  int64_t stream;     /* -1 if none */
  uint64_t cuda_event;/* 0 if none */
} tbe_sync;

/* Which member of tbe_nvtx.payload holds the range's payload. */
typedef enum tbe_payload_type {
  TBE_PAYLOAD_NONE = 0,
  TBE_PAYLOAD_INT64 = 1,  /* payload.i */
  TBE_PAYLOAD_UINT64 = 2, /* payload.u */
  TBE_PAYLOAD_DOUBLE = 3  /* payload.d */
} tbe_payload_type;

typedef struct tbe_nvtx {
  tbe_str domain;     /* 0 = the default domain */
  uint32_t color;     /* ARGB; 0 = none */
  uint32_t category;
  uint8_t payload_type; /* tbe_payload_type (one byte: the layout stays) */
  union {
    int64_t i;
    uint64_t u;
    double d;
  } payload;
} tbe_nvtx;

typedef struct tbe_counter {
  double value;
} tbe_counter;

/* Who reported an allocation (tbe_memory.source). */
typedef enum tbe_mem_source {
  TBE_MEMSRC_UNKNOWN = 0,
  TBE_MEMSRC_CUDA = 1,      /* the CUDA driver (CUPTI memory activity, nsys, XLA's memalloc) */
  TBE_MEMSRC_ALLOCATOR = 2  /* a framework's allocator (PyTorch's caching allocator, Kineto's [memory]) */
} tbe_mem_source;

/* An allocation (bytes > 0) or a free (bytes < 0).  The totals are the
 * running sums of the source's curve for this device after the event;
 * tbe_trace_finish fills those the source left unknown (model/memory.c). */
typedef struct tbe_memory {
  uint64_t addr;
  int64_t bytes;           /* negative for frees */
  int64_t total_allocated; /* -1 if unknown */
  int64_t total_reserved;  /* -1 if unknown */
  int32_t device;          /* -1 for the host */
  int32_t device_type;     /* as the source numbered it (Kineto: 0 CPU, 1 CUDA) */
  uint8_t source;          /* tbe_mem_source */
  uint8_t mem_kind;        /* tbe_mem_kind; 0 when the source did not say */
  uint8_t reserved_[6];
} tbe_memory;

typedef enum tbe_arg_type {
  TBE_ARG_INT = 0,
  TBE_ARG_UINT = 1,
  TBE_ARG_DOUBLE = 2,
  TBE_ARG_STR = 3,
  TBE_ARG_JSON = 4   /* str holds a JSON value kept verbatim (arrays, objects) */
} tbe_arg_type;

/* A typed key/value attached to an event (e.g. Kineto's "Input Dims"). */
typedef struct tbe_arg {
  tbe_str key;
  uint32_t type;  /* tbe_arg_type */
  union {
    int64_t i;
    uint64_t u;
    double d;
    tbe_str s;
  } v;
} tbe_arg;

typedef enum tbe_track_type {
  TBE_TRACK_THREAD = 0,  /* host thread: pid, tid */
  TBE_TRACK_STREAM = 1,  /* GPU stream: device, tid = stream id */
  TBE_TRACK_OTHER = 2    /* anything else (pid, tid as the source gave them) */
} tbe_track_type;

typedef struct tbe_track {
  int64_t pid;      /* owning process (host pid; for streams, the pid or -1) */
  int64_t tid;      /* OS thread id or stream id */
  int32_t device;   /* GPU ordinal for streams; -1 otherwise */
  uint32_t type;    /* tbe_track_type */
  tbe_str name;     /* thread name or stream label; 0 = none */
  uint32_t first;   /* after tbe_trace_finish: first event index of this track */
  uint32_t count;   /* after tbe_trace_finish: number of events */
  uint32_t reserved;
} tbe_track;

typedef struct tbe_process {
  int64_t pid;
  tbe_str name;
  tbe_str host;
} tbe_process;

typedef struct tbe_device {
  int32_t id;                 /* ordinal */
  tbe_str name;
  int32_t sm_count;           /* 0 if unknown (likewise below) */
  int32_t clock_khz;
  int64_t memory_bytes;
  int64_t memory_bandwidth;   /* bytes per second */
  int32_t cc_major, cc_minor;
  int32_t max_threads_per_block;
  int32_t max_threads_per_sm;
  int32_t regs_per_block;
  int32_t regs_per_sm;
  int32_t warp_size;
  int64_t shared_per_block;
  int64_t shared_per_sm;
  int64_t shared_per_block_optin;
} tbe_device;

typedef struct tbe_step {
  int64_t num;
  int64_t start_ns;
  int64_t end_ns;
  tbe_str name;    /* e.g. "ProfilerStep#3" */
  uint32_t track;  /* host track of the event that defines the step (index
                      into tbe_trace.tracks), TBE_NONE when unknown;
                      tbe_trace_add_step leaves it TBE_NONE */
} tbe_step;

/* A flow arrow other than API->GPU launches (those come from correlation),
 * e.g. Kineto's forward->backward "fwdbwd" flows. */
typedef struct tbe_flow {
  uint64_t id;
  tbe_str cat;
  tbe_str name;
  uint32_t src_track;
  uint32_t dst_track;
  int64_t src_ns;
  int64_t dst_ns;
  uint8_t dst_enclosing;  /* the end binds to the enclosing slice ("bp":"e") */
} tbe_flow;

/* Where the trace came from. */
typedef enum tbe_source {
  TBE_SRC_UNKNOWN = 0,
  TBE_SRC_CUPTI = 1,
  TBE_SRC_KINETO = 2,
  TBE_SRC_CHROME = 3,
  TBE_SRC_XSPACE = 4,
  TBE_SRC_NSYS = 5
} tbe_source;

struct tbe_trace {
  /* Events and their kind-specific details. */
  tbe_event *events;     size_t nevents;
  tbe_kernel *kernels;   size_t nkernels;
  tbe_memcpy *memcpys;   size_t nmemcpys;
  tbe_memset *memsets;   size_t nmemsets;
  tbe_sync *syncs;       size_t nsyncs;
  tbe_nvtx *nvtx;        size_t nnvtx;
  tbe_counter *counters; size_t ncounters;
  tbe_memory *memory;    size_t nmemory;
  tbe_arg *args;         size_t nargs;

  tbe_track *tracks;     size_t ntracks;
  tbe_process *processes; size_t nprocesses;
  tbe_device *devices;   size_t ndevices;
  tbe_step *steps;       size_t nsteps;
  tbe_flow *flows;       size_t nflows;

  /* Session. */
  uint32_t source;         /* tbe_source */
  int64_t start_ns;        /* profile window; 0 = derive from the events */
  int64_t stop_ns;
  int64_t base_time_ns;    /* Kineto's baseTimeNanoseconds, 0 if none */
  tbe_str host;            /* host name the trace was taken on; 0 = unknown */
  tbe_str trace_name;
  int32_t rank;            /* distributed rank, -1 if none */
  int32_t world_size;      /* 0 if none */
  tbe_str dist_backend;    /* e.g. "nccl" */

  /* What was lost, counted so every output can say so. */
  uint64_t dropped_records;    /* records the collector could not keep */
  uint64_t dropped_out_of_range; /* zero or inverted timestamps */
  uint64_t overhead_ns;        /* profiler overhead recorded */
  int ended_early;             /* the capture ended early (crash, kill) */
  tbe_str *warnings;     size_t nwarnings;

  /* Hardware metrics (see "hardware metrics" below): the range profiler's
   * figures per kernel name and device, and their values. */
  struct tbe_kernel_metrics *kernel_metrics; size_t nkernel_metrics;
  struct tbe_metric_value *metric_values;    size_t nmetric_values;

  /* Private: string table, lookup indexes, allocator.  Do not touch. */
  struct tbe__trace_priv *priv;
};


/* Interns `len` bytes at `s` (need not be NUL-terminated, may not contain
 * NUL).  The same bytes always give the same id.  Returns 0 or an error. */
TBE_API int tbe_trace_intern(tbe_trace *t, const char *s, size_t len, tbe_str *out);
/* Shorthand for a NUL-terminated string; returns the id, or 0 after an
 * allocation failure, which is sticky (see tbe_trace_error). */
TBE_API tbe_str tbe_trace_str_id(tbe_trace *t, const char *s);
/* Returns the NUL-terminated text of `s` (owned by the trace; "" for 0). */
TBE_API const char *tbe_trace_str(const tbe_trace *t, tbe_str s);
/* Returns the byte length of `s`. */
TBE_API size_t tbe_trace_strlen(const tbe_trace *t, tbe_str s);
/* Returns the id of `s` if it is interned, else TBE_NONE.  No allocation. */
TBE_API tbe_str tbe_trace_find_str(const tbe_trace *t, const char *s, size_t len);
/* Number of distinct strings, id 0 included. */
TBE_API size_t tbe_trace_nstrings(const tbe_trace *t);

/* Finds or creates the track (type, pid, tid, device); stores its index in
 * *out.  Returns 0 or an error. */
TBE_API int tbe_trace_track(tbe_trace *t, tbe_track_type type, int64_t pid, int64_t tid,
                            int32_t device, uint32_t *out);
/* Finds or creates a process entry; returns its index in *out. */
TBE_API int tbe_trace_process(tbe_trace *t, int64_t pid, uint32_t *out);
/* Finds the device with ordinal `id`, creating a blank one; returns its
 * index in *out. */
TBE_API int tbe_trace_device(tbe_trace *t, int32_t id, uint32_t *out);

/* Appends an event.  `detail` points to the kind's detail struct (tbe_kernel
 * for TBE_EV_KERNEL, ...) or is NULL; `ev->detail` is set accordingly.
 * `args` (may be NULL) are copied.  Stores the new index in *index when
 * `index` is not NULL.  Returns 0 or an error. */
TBE_API int tbe_trace_add_event(tbe_trace *t, const tbe_event *ev, const void *detail,
                                const tbe_arg *args, size_t nargs, uint32_t *index);

TBE_API int tbe_trace_add_step(tbe_trace *t, int64_t num, int64_t start_ns, int64_t end_ns,
                               tbe_str name);
TBE_API int tbe_trace_add_flow(tbe_trace *t, const tbe_flow *flow);
/* Adds a warning (copied) shown by every output. */
TBE_API int tbe_trace_warn(tbe_trace *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));





/* ---- hardware metrics ----
 *
 * Two kinds, both optional (a trace without them reads as before):
 * - Timelines (the collector's PM sampling; a JSON or XSpace counter on a
 *   GPU): one counter track per metric per GPU, made by
 *   tbe_trace_metric_track: type TBE_TRACK_OTHER, device = the GPU's
 *   ordinal (the one kind of TBE_TRACK_OTHER track with a device >= 0:
 *   tbe_track_is_metric), name = the metric's short name ("sm_active_pct",
 *   "dram_read_pct", ...; any name passes), tid derived from the name so
 *   that each (pid, device, metric) has one track.  Its events are
 *   TBE_EV_COUNTER events named like the metric; an event's value holds
 *   from its start until the next event of the track (as a Chrome "C"
 *   event does), so a sample over the interval (a, b] sits at a, and a
 *   series ends with an event at the end of its last interval repeating
 *   the last value.  The unit is in the name's suffix: _pct (percent of
 *   peak), _bytes_per_s, _hz.
 * - Per kernel (the collector's range profiler): tbe_kernel_metrics, the
 *   mean figures of one kernel name on one device over `launches`
 *   launches measured, by metric name (sm_throughput_pct,
 *   mem_throughput_pct, achieved_occupancy_pct, tensor_pipe_pct,
 *   l2_hit_pct, dram_throughput_pct, duration_ns, or any other).
 *   tbe_trace_finish demangles their names like the kernels'. */

typedef struct tbe_metric_value {
  tbe_str metric;     /* the metric's short name */
  uint32_t reserved;
  double value;       /* finite */
} tbe_metric_value;

typedef struct tbe_kernel_metrics {
  tbe_str name;       /* the kernel's name */
  int32_t device;     /* GPU ordinal */
  uint64_t launches;  /* launches measured */
  uint32_t first;     /* first of `count` entries in tbe_trace.metric_values */
  uint32_t count;
} tbe_kernel_metrics;

/* Finds or creates the counter track of metric `metric` of GPU `device`
 * in process `pid` (see above); stores its index in *out.  Returns 0 or
 * an error (TBE_EINVAL: device < 0 or metric 0). */
TBE_API int tbe_trace_metric_track(tbe_trace *t, int64_t pid, int32_t device, tbe_str metric,
                                   uint32_t *out);
/* 1 when the track is a GPU's metric counter track. */
TBE_API int tbe_track_is_metric(const tbe_track *tr);
/* Adds the figures of kernel `name` on `device` (n values, copied; a
 * metric given twice keeps the last).  A second entry for the same name
 * and device replaces the first (the collector's last word counts).
 * Returns 0 or an error. */
TBE_API int tbe_trace_add_kernel_metrics(tbe_trace *t, tbe_str name, int32_t device,
                                         uint64_t launches, const tbe_metric_value *v, size_t n);
/* The value of `metric` in entry `km`: 0 with the value in *v (when v is
 * not NULL), 1 when the entry has no such metric, TBE_EINVAL. */
TBE_API int tbe_kernel_metrics_get(const tbe_trace *t, const tbe_kernel_metrics *km,
                                   const char *metric, double *v);

/* A name and how often it occurs (tbe_trace_top_ranges). */
typedef struct tbe_name_count {
  tbe_str name;
  uint64_t count;
} tbe_name_count;

/* The most frequent names of top-level host ranges (NVTX ranges and user
 * annotations not inside another such range on their thread), for telling
 * a user which names a finished trace offers.  Fills out[0..n) by count,
 * highest first (ties: the name first interned), and returns how many were
 * filled (<= n); TBE_ESTATE when the trace is not finished; TBE_ENOMEM. */
TBE_API int tbe_trace_top_ranges(const tbe_trace *t, tbe_name_count *out, size_t n);

/* Helpers for readers. */
TBE_API const char *tbe_event_kind_name(tbe_event_kind k);   /* "kernel", "memcpy", ... */
TBE_API const char *tbe_mem_kind_name(tbe_mem_kind k);       /* "pageable", "pinned", ... */
TBE_API const char *tbe_copy_kind_name(tbe_copy_kind k);     /* "HtoD", "DtoH", ... */
TBE_API const char *tbe_sync_kind_name(tbe_sync_kind k);
/* Returns 1 for kinds that run on a GPU stream (kernel, memcpy, memset,
 * GPU annotation). */
TBE_API int tbe_event_kind_is_gpu(tbe_event_kind k);
/* Pointers to an event's detail, or NULL when it has none of that kind. */
TBE_API const tbe_kernel *tbe_trace_kernel(const tbe_trace *t, const tbe_event *e);
TBE_API const tbe_memcpy *tbe_trace_memcpy(const tbe_trace *t, const tbe_event *e);
TBE_API const tbe_memset *tbe_trace_memset(const tbe_trace *t, const tbe_event *e);
TBE_API const tbe_sync *tbe_trace_sync(const tbe_trace *t, const tbe_event *e);
TBE_API const tbe_nvtx *tbe_trace_nvtx(const tbe_trace *t, const tbe_event *e);
TBE_API const tbe_memory *tbe_trace_memory(const tbe_trace *t, const tbe_event *e);
TBE_API const tbe_counter *tbe_trace_counter(const tbe_trace *t, const tbe_event *e);

/* ---- names ---- */
/* Demangles `mangled` into `buf` exactly as `c++filt` (GNU binutils, its
 * default options) prints it: Itanium C++ names ("_Z…", e.g.
 * "_ZN2at6native24vectorized_gather_kernelILi16ElEEvPcS2_PT0_illllb" ->
 * "void at::native::vectorized_gather_kernel<16, long>(char*, char*,
 * long*, int, long, long, long, long, bool)"), Rust names, "_GLOBAL_…"
 * constructor names.  The engine is libiberty's; nothing is allocated and
 * the function is reentrant.  Like c++filt, names longer than 1,024 bytes
 * are not demangled.
 * Returns the full length of the demangled text (snprintf-style: when it
 * is `size` or more, `buf` holds its first size - 1 bytes), or -1 when
 * `mangled` is not demangled (then `buf` holds the input, truncated to
 * fit).  `buf` is always NUL-terminated when size > 0; with size 0 it may
 * be NULL and only the length is returned. */
TBE_API int tbe_demangle(const char *mangled, char *buf, size_t size);

#undef TBE_API
#define TBE_API TBE__API_STABLE

#ifdef __cplusplus
}
#endif

#endif /* TBE_EXPERIMENTAL */
