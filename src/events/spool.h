/* spool.h: the collector's spool file, one per profiled process: its
 * format, writing and scanning.
 *
 * It lives beside tfrecord.h because both are framed, checksummed record
 * files: the collector (src/collect) writes it, the spool importer
 * (src/import/spool.c) reads it, and neither room includes the other.
 *
 * The collector's background thread decodes CUPTI buffers into the compact
 * items below and appends them to the spool in framed blocks; `tbexport`
 * (or tbe_profiler_stop) converts the spool into the trace model after the
 * program ends.  The spool is a private, transient file written and read by
 * the same build on the same machine: items are native-endian structs
 * (the header records the byte order and checksum so a mismatch is an error,
 * not garbage).
 *
 * Layout:
 *   header (32 bytes): "TBESPL01", u32 version, u32 byte-order mark
 *                      0x01020304, u32 checksum kind, u32 0, i64 created_ns
 *   frame*:            u32 payload length, u32 checksum of (length bytes +
 *                      payload), payload
 *   payload:           item* where item = u16 type, u16 body length, body
 *
 * A frame is written with one write(2) call, so a crash leaves at most one
 * incomplete frame at the end.  The reader converts every complete frame
 * and reports the offset and size of what follows (truncated or corrupt).
 * The last frame of a clean session holds TBE__SP_END; its absence means the
 * capture ended early.  String ids are assigned by the writer (1, 2, ...)
 * and always defined (TBE__SP_STR) before the first item that uses them.
 *
 * Items are added without a new version: a reader skips item types it does
 * not know, so an older build reads a newer spool less the new items, and a
 * newer build reads an older spool as one without them (TBE__SP_STEP, added
 * after version 1 shipped: an older spool simply has no marked steps).
 *
 * Timestamps are CUPTI's clock (epoch ns), for the records and for the
 * items the collector writes itself (windows, steps, end). */
#ifndef TBE_EVENTS_SPOOL_H
#define TBE_EVENTS_SPOOL_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "tbexport/common.h"

#define TBE__SPOOL_MAGIC "TBESPL01"
#define TBE__SPOOL_VERSION 1u
#define TBE__SPOOL_BOM 0x01020304u
#define TBE__SPOOL_HEADER 32u
#define TBE__SPOOL_FRAME_MAX (64u << 20) /* largest payload a reader accepts */

/* Item types. */
enum {
  TBE__SP_INFO = 1,        /* tbe__sp_info, first item of the file */
  TBE__SP_HOST = 2,        /* bytes: host name */
  TBE__SP_CMD = 3,         /* bytes: command line, arguments separated by ' ' */
  TBE__SP_STR = 4,         /* u32 id, then the string's bytes */
  TBE__SP_NOTE = 5,        /* bytes: a line for the trace's warnings */
  TBE__SP_KERNEL = 10,
  TBE__SP_MEMCPY = 11,
  TBE__SP_MEMSET = 12,
  TBE__SP_API = 13,
  TBE__SP_SYNC = 14,
  TBE__SP_MARKER = 15,
  TBE__SP_MARKER_DATA = 16,
  TBE__SP_OVERHEAD = 17,
  TBE__SP_DEVICE = 18,
  TBE__SP_CONTEXT = 19,
  TBE__SP_MEMORY = 20,
  TBE__SP_THREAD_NAME = 21,
  TBE__SP_STEP = 22,       /* tbe__sp_step: the program began its next step */
  TBE__SP_SIGNAL = 23,     /* tbe__sp_signal: a fatal signal reached the program */
  TBE__SP_RANK = 24,       /* tbe__sp_rank + bytes: the launcher's rank of this process */
  TBE__SP_METRIC_DEF = 25, /* tbe__sp_metric_def: a hardware metric's id, name, unit */
  TBE__SP_METRIC_SAMPLES = 26, /* tbe__sp_metric_samples + values: PM sampling */
  TBE__SP_KERNEL_METRICS = 27, /* tbe__sp_kernel_metrics + values: range profiler */
  TBE__SP_METRIC_STATUS = 28,  /* tbe__sp_metric_status + bytes: how metrics went */
  TBE__SP_REPLAYED = 29,   /* tbe__sp_replayed: a launch the range profiler replayed */
  TBE__SP_WINDOW = 30,     /* tbe__sp_window: collection switched on/off */
  TBE__SP_STATS = 31,      /* tbe__sp_stats, cumulative: the last one counts */
  TBE__SP_END = 32,        /* tbe__sp_end: clean end of the session */
  TBE__SP_OP = 33,         /* tbe__sp_op: a framework operator began or ended */
  TBE__SP_NVTX_STATS = 34, /* tbe__sp_nvtx_stats, cumulative: the last one counts */
  TBE__SP_COUNTER = 35,    /* tbe__sp_counter: a sampled value of a GPU (NVML) */
  TBE__SP_DEVICE_UUID = 36, /* tbe__sp_device_uuid: a CUDA ordinal's GPU UUID */
  /* Deferred PM evaluation (issue 31; pmsampling.c, pmeval.c): raw counter
   * data images, evaluated into TBE__SP_METRIC_SAMPLES at conversion. */
  TBE__SP_PM_CONFIG = 40,    /* tbe__sp_pm_config + ids, chip, names, availability */
  TBE__SP_PM_IMAGE = 41,     /* tbe__sp_pm_image + bytes: part of a counter data image */
  TBE__SP_PM_TIMES = 42,     /* tbe__sp_pm_times + entries: the image's samples to keep */
  TBE__SP_PM_EVALUATED = 43  /* tbe__sp_pm_evaluated: conversion evaluated a device's images */
};

/* Marker flags, marker-data flags and object kinds keep CUPTI's numbers
 * (collector.c checks them against the CUPTI headers at compile time). */
#define TBE__MK_INSTANT 0x1u    /* CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS */
#define TBE__MK_START 0x2u      /* CUPTI_ACTIVITY_FLAG_MARKER_START */
#define TBE__MK_END 0x4u        /* CUPTI_ACTIVITY_FLAG_MARKER_END */
#define TBE__MK_COLOR_ARGB 0x2u /* CUPTI_ACTIVITY_FLAG_MARKER_COLOR_ARGB */
#define TBE__OBJ_PROCESS 1u     /* CUPTI_ACTIVITY_OBJECT_PROCESS */
#define TBE__OBJ_THREAD 2u      /* CUPTI_ACTIVITY_OBJECT_THREAD */

/* API domains (tbe__sp_api.domain). */
enum { TBE__API_RUNTIME = 0, TBE__API_DRIVER = 1 };

typedef struct tbe__sp_info {
  int64_t start_ns;  /* epoch ns when collection began */
  uint32_t pid, ppid;
  uint32_t trace;    /* TBE_TRACE_* mask */
  uint32_t capture;  /* tbe_capture_mode */
  uint32_t cupti_version;
  uint32_t flags;    /* TBE__SPF_* */
} tbe__sp_info;

#define TBE__SPF_INJECTED 0x1u  /* written by the injection library */

typedef struct tbe__sp_kernel {
  int64_t start, end;
  uint32_t corr, device, context, stream;
  uint32_t name;               /* string id */
  int32_t grid[3], block[3];
  int32_t static_shared, dynamic_shared;
  uint32_t graph_id;
  uint16_t registers;
  uint8_t launch_type;
  uint8_t pad;
} tbe__sp_kernel;

typedef struct tbe__sp_memcpy {
  int64_t start, end;
  uint64_t bytes;
  uint32_t corr, device, context, stream;
  int32_t src_device, dst_device; /* -1 unless peer-to-peer */
  uint8_t copy_kind, src_kind, dst_kind, flags;
  uint32_t graph_id;
} tbe__sp_memcpy;

typedef struct tbe__sp_memset {
  int64_t start, end;
  uint64_t bytes;
  uint32_t corr, device, context, stream;
  uint32_t value;
  uint16_t mem_kind, flags;
} tbe__sp_memset;

typedef struct tbe__sp_api {
  int64_t start, end;
  uint32_t corr, pid, tid, cbid;
  uint32_t ret;
  uint32_t name;     /* string id of the function name */
  uint8_t domain;    /* TBE__API_* */
  uint8_t pad[7];
} tbe__sp_api;

typedef struct tbe__sp_sync {
  int64_t start, end;
  uint32_t corr, context, stream, type;
  uint32_t event;    /* CUDA event id, UINT32_MAX if none */
  uint32_t ret;
} tbe__sp_sync;

typedef struct tbe__sp_marker {
  int64_t ts;
  uint32_t id, flags, obj_kind;
  uint32_t obj[3];   /* pid, tid (thread objects) or device, context, stream */
  uint32_t name, domain; /* string ids, 0 = none */
  uint32_t pad;
} tbe__sp_marker;

typedef struct tbe__sp_marker_data {
  uint64_t payload;  /* raw 8 bytes of CUpti_MetricValue */
  uint32_t id, flags, payload_kind, color, category, domain_id;
} tbe__sp_marker_data;

typedef struct tbe__sp_overhead {
  int64_t start, end;
  uint32_t kind, obj_kind;
  uint32_t obj[3];
  uint32_t corr;
} tbe__sp_overhead;

typedef struct tbe__sp_device {
  int64_t memory_bytes;
  int64_t bandwidth_kbps;      /* KiB/s as CUPTI gives it */
  uint32_t id, name;
  uint32_t sm_count, clock_khz;
  uint32_t cc_major, cc_minor;
  uint32_t max_threads_per_block, max_warps_per_sm;
  uint32_t regs_per_block, regs_per_sm;
  uint32_t warp_size;
  uint32_t shared_per_block, shared_per_sm;
  uint32_t pad;
} tbe__sp_device;

typedef struct tbe__sp_context {
  uint32_t context, device;
} tbe__sp_context;

/* An allocation or release (CUPTI's MEMORY2 record).  `mem_kind` is
 * CUPTI's CUpti_ActivityMemoryKind (1 pageable and 2 pinned are host
 * memory; 3 device, 5 managed, ...).  An allocation from a stream-ordered
 * pool (cudaMallocAsync, cuMemAllocFromPoolAsync) has `is_async` set and
 * its pool's type (CUPTI's CUpti_ActivityMemoryPoolType: 1 local, 2
 * imported; 0 none).  Spools written before those two fields have 0
 * there (the item's size is unchanged). */
typedef struct tbe__sp_memory {
  int64_t ts;
  uint64_t addr, bytes;
  uint32_t op;       /* 1 allocation, 2 release */
  uint32_t mem_kind, corr, pid, device, context, stream;
  uint8_t is_async;  /* 1: a stream-ordered (pool) allocation or free */
  uint8_t pool_type; /* CUpti_ActivityMemoryPoolType; 0 when not from a pool */
  uint16_t pad;
} tbe__sp_memory;

typedef struct tbe__sp_thread_name {
  uint32_t pid, tid, name;
} tbe__sp_thread_name;

/* tbe_profiler_step: the calling thread marks the start of the program's
 * next step (numbered at conversion by time order over the whole spool, from
 * 0); a step lasts until the next one, the last until collection stops.
 * Queued by the marking thread with the collector's other side items and
 * carried by the next frame written; never in CUPTI's buffers. */
typedef struct tbe__sp_step {
  int64_t ts;        /* when the step began */
  uint32_t pid, tid; /* the marking thread (system thread id, as CUPTI's) */
} tbe__sp_step;

/* A fatal signal reached the program (SIGSEGV, SIGABRT, SIGTERM, ...):
 * written by the collector's signal handler before it forced CUPTI to
 * flush and spooled what came back, so every record completed before `ts`
 * follows in the file (unless the flush ran out of time).  A reader of an
 * older spool has none; conversion then says only that the capture ended
 * early. */
typedef struct tbe__sp_signal {
  int64_t ts;     /* when the handler ran */
  int32_t sig;    /* the signal number */
  uint32_t pad;
} tbe__sp_signal;

/* The rank this process has in a distributed job, read by the collector
 * from its launcher's environment when it starts (src/collect/launcher.c:
 * torchrun, Open MPI, PMIx, MPICH/PMI, MVAPICH, Slurm; the first found
 * wins), written after TBE__SP_INFO when the process has a rank.  The body
 * is followed by the job id's bytes (may be empty); `launcher` says which
 * launcher's variables gave the rank (TBE__LAUNCHER_*). */
typedef struct tbe__sp_rank {
  int32_t rank;        /* >= 0 */
  int32_t world_size;  /* > 0; 0 if unknown */
  int32_t local_rank;  /* -1 if unknown */
  uint32_t launcher;   /* TBE__LAUNCHER_* */
} tbe__sp_rank;

enum {
  TBE__LAUNCHER_NONE = 0,
  TBE__LAUNCHER_TORCH = 1,  /* RANK, WORLD_SIZE, LOCAL_RANK, TORCHELASTIC_RUN_ID */
  TBE__LAUNCHER_OMPI = 2,   /* OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK */
  TBE__LAUNCHER_PMIX = 3,   /* PMIX_RANK, PMIX_NAMESPACE */
  TBE__LAUNCHER_PMI = 4,    /* PMI_RANK, PMI_SIZE (MPICH's Hydra, others) */
  TBE__LAUNCHER_SLURM = 5,  /* SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_JOB_ID */
  TBE__LAUNCHER_MVAPICH = 6 /* MV2_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK */
};

/* Hardware metrics (issue 17).  Metric ids are the spool's own (1, 2, ...),
 * defined by TBE__SP_METRIC_DEF before any item uses them. */
enum {
  TBE__MU_PCT = 1,          /* percent of peak (0..100) */
  TBE__MU_BYTES_PER_S = 2,  /* throughput */
  TBE__MU_HZ = 3,           /* a clock */
  TBE__MU_COUNT = 4,        /* a plain count or ratio */
  TBE__MU_PER_S = 5         /* events per second */
};

typedef struct tbe__sp_metric_def {
  uint32_t id;      /* 1, 2, ... */
  uint32_t name;    /* string id: our short name ("sm_active_pct") */
  uint32_t source;  /* string id: the CUPTI metric it is read from; 0 if none */
  uint32_t unit;    /* TBE__MU_* */
} tbe__sp_metric_def;

/* PM sampling: `nsamples` samples of the same `nmetrics` metrics of one
 * device.  The body is followed by nmetrics u32 metric ids, then, per
 * sample, an int64 timestamp (CUPTI's clock, epoch ns) and nmetrics
 * doubles (the value of each metric, in the order of the ids, over the
 * interval that ends at the timestamp).  An item holds as many samples as
 * fit its 16-bit body length. */
typedef struct tbe__sp_metric_samples {
  uint32_t device;    /* CUDA device ordinal */
  uint32_t nmetrics;
  uint32_t nsamples;
  uint32_t pad;
} tbe__sp_metric_samples;

/* A kernel launch the range profiler measured, timed by the collector at
 * the launch call's entry and exit (CUPTI's clock).  Kernel replay runs
 * the kernel inside that call, and CUPTI gives the kernel record no GPU
 * times (start = end = 0 on the H200); a launch made through the driver
 * API (cuBLAS's) has no API record unless driver calls are traced, so
 * this is what places such a kernel on the timeline. */
typedef struct tbe__sp_replayed {
  uint32_t corr;      /* the launch call's correlation id: the kernel record's */
  uint32_t device;
  int64_t start, end;
} tbe__sp_replayed;

/* Deferred PM evaluation (TBEXPORT_PM_EVAL=deferred, pmsampling.c).  The
 * collector decodes CUPTI's hardware buffer into a counter data image (in
 * the program's process: that drains the device) but leaves evaluating it
 * (the profiler host API, CPU only) to the conversion (pmeval.c), which
 * appends the values as TBE__SP_METRIC_SAMPLES items in a frame of their
 * own, then one TBE__SP_PM_EVALUATED per device, so a spool is evaluated
 * once.  Per device, before its first image (and again after a lost
 * frame): TBE__SP_PM_CONFIG, followed by nmetrics u32 metric ids (the
 * TBE__SP_METRIC_DEF ids the samples will carry), chip_len bytes of the
 * chip name, names_len bytes of the CUPTI metric names (each ending in a
 * NUL, in the ids' order) and avail_len bytes of the counter availability
 * image.  Per decoded image holding samples to keep: TBE__SP_PM_IMAGE
 * items with consecutive parts of its first `total` bytes (offset 0
 * starts an image), then TBE__SP_PM_TIMES items naming the samples kept
 * (stale ones are not) and their end times.  An image copied in part
 * (its samples' part: head + stride * samples, where CUPTI's sizes say
 * the image is laid out so and the collector checked it once) is
 * zero-filled to `full` bytes before it is evaluated. */
#define TBE__SP_PM_IMAGE_MAX (256u << 20) /* the largest `full` (larger: evaluated live) */
typedef struct tbe__sp_pm_config {
  uint32_t device;
  uint32_t nmetrics;
  uint32_t chip_len, names_len, avail_len;
  uint32_t full;      /* the counter data image's size (bytes) */
  uint32_t head, stride; /* its size for 0 samples and per sample; 0: unknown */
} tbe__sp_pm_config;

typedef struct tbe__sp_pm_image {
  uint32_t device;
  uint32_t seq;       /* the image's number on the device (0, 1, ...) */
  uint32_t offset;    /* of these bytes in the image */
  uint32_t total;     /* bytes of the image copied (<= full) */
} tbe__sp_pm_image;

typedef struct tbe__sp_pm_times {
  uint32_t device;
  uint32_t seq;       /* the image they belong to */
  uint32_t n;         /* entries that follow */
  uint32_t pad;
} tbe__sp_pm_times;

typedef struct tbe__sp_pm_time {
  uint32_t index;     /* the sample's index in the image */
  uint32_t pad;
  int64_t end;        /* its end (CUPTI's clock): the sample's timestamp */
} tbe__sp_pm_time;

typedef struct tbe__sp_pm_evaluated {
  uint32_t device;
  uint32_t status;    /* TBE__MS_*: OK, or why the images were not evaluated */
  uint64_t samples;   /* samples evaluated */
  uint64_t failed;    /* samples CUPTI could not evaluate (left out) */
} tbe__sp_pm_evaluated;

/* Range profiler: the figures of one kernel name on one device, over
 * `launches` launches measured.  Followed by nvalues pairs of (u32 metric
 * id, u32 0, double value). */
typedef struct tbe__sp_kernel_metrics {
  uint32_t name;      /* string id: the kernel's name as CUPTI gives it */
  uint32_t device;
  uint32_t launches;
  uint32_t nvalues;
} tbe__sp_kernel_metrics;

/* What became of a metrics collection (one per kind and device, the last
 * one counts); followed by a one-line reason's bytes when status != OK. */
enum { TBE__MKIND_PM_SAMPLING = 1, TBE__MKIND_RANGE_PROFILER = 2 };
enum {
  TBE__MS_OK = 0,
  TBE__MS_NO_PERMISSION = 1,  /* CUPTI_ERROR_INSUFFICIENT_PRIVILEGES */
  TBE__MS_BUSY = 2,           /* another profiler holds the counters */
  TBE__MS_UNSUPPORTED = 3,    /* this GPU or CUPTI has no such API */
  TBE__MS_FAILED = 4          /* any other error (the reason says which) */
};
typedef struct tbe__sp_metric_status {
  uint32_t kind;      /* TBE__MKIND_PM_SAMPLING or TBE__MKIND_RANGE_PROFILER */
  uint32_t device;    /* ordinal; UINT32_MAX: every device */
  uint32_t status;    /* TBE__MS_* */
  uint32_t stale;     /* PM: samples left out because their time was not after the
                       * previous sample's (saturates; 0 in spools before it) */
  uint64_t samples;   /* samples (PM) or launches (range) recorded */
  uint64_t overflow;  /* samples lost when the hardware buffer overflowed (PM);
                       * launches measured but dropped (range) */
} tbe__sp_metric_status;

typedef struct tbe__sp_window {
  int64_t ts;
  uint32_t on;
  uint32_t pad;
} tbe__sp_window;

typedef struct tbe__sp_stats {
  uint64_t records;          /* CUPTI records decoded */
  uint64_t cupti_dropped;    /* cuptiActivityGetNumDroppedRecords, summed */
  uint64_t spool_dropped;    /* records lost writing the spool */
  uint64_t buffers;          /* completed buffers */
  uint64_t buffers_declined; /* buffer requests refused at the cap */
  uint64_t buffer_bytes;     /* host buffer memory allocated */
  uint64_t decode_cpu_ns;    /* CPU time of the background thread */
  uint64_t unknown_records;  /* records of kinds we do not decode */
} tbe__sp_stats;

typedef struct tbe__sp_end {
  int64_t end_ns;
} tbe__sp_end;

/* A framework operator, from the NVTX range PyTorch pushes for it under
 * emit_nvtx (common/torchnvtx.h), read by the collector's own NVTX
 * handlers (collect/nvtxhook.c): one item where the range was pushed
 * (TBE__OPF_BEGIN: name, shapes, sequence number) and one where it was
 * popped (TBE__OPF_END, the same id, the other fields 0).  A BEGIN without
 * its END is an operator still running when the capture ended (a crash).
 * Any other NVTX range stays a marker (TBE__SP_MARKER). */
#define TBE__OPF_BEGIN 0x1u
#define TBE__OPF_END 0x2u
typedef struct tbe__sp_op {
  int64_t ts;
  uint64_t id;       /* unique in the process */
  uint32_t pid, tid; /* the thread that pushed (and popped) it */
  uint32_t name;     /* string id: the operator's name ("aten::mm") */
  uint32_t shapes;   /* string id: the input shapes' text ("[[4, 8], []]"); 0 if none */
  int64_t seq;       /* PyTorch's sequence number; -1 if none */
  uint32_t flags;    /* TBE__OPF_BEGIN or TBE__OPF_END */
  uint32_t ninputs;  /* inputs the shapes list */
} tbe__sp_op;

/* The longest NVTX message the collector's own handlers keep, in bytes
 * (longer ones are cut there and counted). */
#define TBE__NVTX_MSG_MAX 8192

/* The collector's own NVTX handlers (collect/nvtxhook.c), cumulative. */
typedef struct tbe__sp_nvtx_stats {
  uint64_t records;    /* NVTX calls recorded */
  uint64_t dropped;    /* calls lost: no free block (the decoder fell behind) or
                          no thread slot left */
  uint64_t truncated;  /* messages cut at TBE__NVTX_MSG_MAX bytes */
  uint64_t unclosed;   /* pops without a push on their thread and domain */
} tbe__sp_nvtx_stats;

/* A value sampled from a GPU by the collector's own thread (NVML: the
 * device memory this process uses, collect/nvml.c), at `ts` (CUPTI's
 * clock): the value holds from then until the next sample of the same
 * name and GPU.  The GPU is named by its CUDA ordinal when the collector
 * knew it (`device`), else by its UUID (`device` UINT32_MAX), which
 * conversion matches with the TBE__SP_DEVICE_UUID items: NVML numbers
 * every GPU of the machine, CUDA only those the process sees
 * (CUDA_VISIBLE_DEVICES), in its own order. */
typedef struct tbe__sp_counter {
  int64_t ts;
  double value;
  uint32_t name;     /* string id: the counter's name ("device memory used (NVML)") */
  uint32_t device;   /* CUDA ordinal; UINT32_MAX: see uuid */
  uint8_t uuid[16];  /* the GPU's UUID (all zero: unknown) */
} tbe__sp_counter;

/* The UUID of CUDA device `device`, from CUPTI's device record (written
 * by the decoder with the TBE__SP_DEVICE item). */
typedef struct tbe__sp_device_uuid {
  uint32_t device;
  uint32_t pad;
  uint8_t uuid[16];
} tbe__sp_device_uuid;

/* Checksum of the frame (length bytes + payload). */
uint32_t tbe__spool_checksum(const void *p, size_t n, uint32_t seed);
extern const uint32_t tbe__spool_checksum_kind; /* 1 CRC32C, 2 zlib CRC32 */

/* Fills the 32-byte header. */
void tbe__spool_header(uint8_t out[TBE__SPOOL_HEADER], int64_t created_ns);

/* Appends one item to a payload being built. */
void tbe__spool_item(tbe__buf *b, unsigned type, const void *body, size_t len);
/* Appends a string definition item. */
void tbe__spool_str(tbe__buf *b, uint32_t id, const char *s, size_t len);

/* Frames `payload` (len bytes) and writes it to fd with one write call
 * (retrying short writes).  Returns 0 or -errno. */
int tbe__spool_write_frame(int fd, const uint8_t *payload, size_t len);

/* Reading.  tbe__spool_scan walks the file image `data` (n bytes): checks
 * the header, then calls `on_item` for every item of every complete,
 * checksum-valid frame, in order.  Stops at the first incomplete or bad
 * frame and describes it in *tail.  Returns 0 (also when a tail was left:
 * check tail->bytes), TBE_EFORMAT (not a spool), TBE_ECORRUPT (wrong byte
 * order or checksum kind), or the first non-zero value `on_item` returned. */
typedef struct tbe__spool_tail {
  size_t good_bytes;  /* bytes of complete frames, header included */
  size_t bytes;       /* bytes after them, 0 if the file ended cleanly */
  size_t frames;      /* complete frames read */
  const char *why;    /* static: "truncated frame", "checksum mismatch", ... */
} tbe__spool_tail;

int tbe__spool_scan(const uint8_t *data, size_t n,
                    int (*on_item)(void *ctx, unsigned type, const uint8_t *body, size_t len),
                    void *ctx, tbe__spool_tail *tail);

#endif
