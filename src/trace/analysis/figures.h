/* figures.h: the figures of an analysis, one row each.
 *
 * A figure is a number the analysis computes for a GPU (tbe_device_stats,
 * also tbe_analysis.all), for a step (tbe_step_stats) or for the whole
 * analysis (tbe_analysis): a time, a duration, a count.  Each is one row of
 * TBE__FIGURES below, as include/tbexport/error.h makes the error space
 * from one list; the code that stores, checks, merges, compares and shows
 * figures loops over the rows instead of naming fields one by one.
 *
 * A row is X(id, scope, key, label, unit, merge, diff, member, n), or
 * C(id, scope, key, label, unit, merge, diff, calc) for a figure computed
 * from the others of its struct by the function calc (figures.c, "computed
 * figures"): saved (in the `figures` list), never loaded (computed again
 * from what was), merged by computing it from the merged figures.
 *   id      TBE__FIG_<id>, the row's index in tbe__figures;
 *   scope   DEVICE, STEP or ANALYSIS: the struct the value lives in;
 *   key     its name in the analysis file (proto/tbexport/analysis.proto:
 *           the field of that name in the scope's message, Device, Step or
 *           Analysis, or, for a figure newer than the schema, the entry of
 *           that key in the message's `figures` list) and in every
 *           machine-readable output; pinned: a stored key is never renamed
 *           or reused;
 *   label   the words a report prints before it;
 *   unit    what the number is, which also fixes its C type and the range
 *           a loaded file's value must lie in (tbe__fig_unit below);
 *   merge   how a run's merged analysis gets it from its hosts' values
 *           (tbe__fig_merge below);
 *   diff    what a comparison of two analyses makes of it (tbe__fig_diff);
 *   member  the field of the scope's struct holding it;
 *   n       1, or the length of the member's array (per copy direction,
 *           per kernel class).
 *
 * Where reports show a row: the rows up to TBE__FIG_AN_OP_GPU existed
 * before the table, and each report prints them in its own established
 * place and order (hand-written: their outputs are byte for byte those of
 * before).  Rows are appended at the end of the list; every row from
 * TBE__FIG_LISTED on of the DEVICE scope is printed by the reports' loops
 * over the table, in every format: a row of the GPU overview (table), a
 * column of the device tables (Markdown, CSV), a member of each device
 * (JSON), and a scalar of each device in TensorBoard; and saved by key
 * (analysis_store.c).  Likewise every single-entry STEP row from
 * TBE__FIG_LISTED on (tbe__fig_step_listed, report.h): a column of the
 * steps' tables in every format and a per-step TensorBoard series
 * (steps/<key>).  The terminal and Markdown tables leave out a row (a
 * column) whose value is unknown everywhere (a trace without memory
 * events has no memory rows); CSV and JSON keep it, empty and null.  A new figure is therefore one row here plus its
 * computation.
 *
 * Invariants (test/unit/test_figures.c checks them, so a row that breaks
 * one fails there, not in a report):
 *   - keys are unique within a scope; a key naming a field of the scope's
 *     protobuf message names one of the unit's wire type (repeated when
 *     n > 1); a row without such a field (kept in the `figures` list) has
 *     a unit that can say unknown (NS_OPT, BYTES_OPT, BYTES_DELTA:
 *     tbe__fig_unknown), which is what a file written
 *     before the row reads as, never a wrong 0;
 *   - a member is of the unit's C type (its size is checked), n entries;
 *   - ids are dense: tbe__figures[TBE__FIG_x].id == TBE__FIG_x.
 * Identity fields (device ordinal, names, step number's matching, host,
 * pid, rank) and the per-name tables are not figures of this table: they
 * are keys and lists, each with code of its own. */
#ifndef TBE_TRACE_ANALYSIS_FIGURES_H
#define TBE_TRACE_ANALYSIS_FIGURES_H

#include <stddef.h>
#include <stdint.h>

#include "tbexport/analysis.h"

/* ---- the columns ---- */

/* Where a figure lives. */
typedef enum tbe__fig_scope {
  TBE__FS_DEVICE = 0,   /* tbe_device_stats: one per GPU, and tbe_analysis.all */
  TBE__FS_STEP = 1,     /* tbe_step_stats */
  TBE__FS_ANALYSIS = 2, /* tbe_analysis itself */
  TBE__FS__COUNT
} tbe__fig_scope;

/* What a figure is.  The unit fixes its C type (int64_t, or uint64_t for
 * counts and bytes) and the range a loaded value must meet, as an importer
 * checks a trace's (common/checked.h). */
typedef enum tbe__fig_unit {
  TBE__FU_NS = 0,          /* a duration or a sum of them: >= 0 */
  TBE__FU_NS_OPT = 1,      /* a median duration: >= 0, or -1 when unknown */
  TBE__FU_TIME = 2,        /* a time on the trace's clock: within +-(2^62 - 1) ns */
  TBE__FU_COUNT = 3,       /* a count: fits int64_t (stored as uint64_t) */
  TBE__FU_BYTES = 4,       /* bytes: any uint64_t (sums saturate) */
  TBE__FU_NUMBER = 5,      /* a number the trace gives (a step's): any int64_t */
  TBE__FU_PCT = 6,         /* a share in percent (double): computed rows only */
  TBE__FU_BYTES_OPT = 7,   /* bytes the trace may not tell (a memory peak): >= 0, or -1
                              when unknown (int64_t) */
  TBE__FU_BYTES_DELTA = 8, /* a signed change in bytes (memory growth per step): any
                              int64_t, INT64_MIN when unknown */
  TBE__FU__COUNT
} tbe__fig_unit;

/* How a run's merged analysis gets a figure from its hosts' (and a merged
 * step from the hosts' steps of the same number). */
typedef enum tbe__fig_merge {
  TBE__FM_SUM = 0,     /* the sum (durations saturate) */
  TBE__FM_MAX = 1,     /* the largest (a step's length: the slowest host's) */
  TBE__FM_MIN = 2,     /* the smallest (starts) */
  TBE__FM_UNKNOWN = 3, /* medians do not add: -1 (unknown) in the merge */
  TBE__FM_OWN = 4,     /* made by a rule of its own (the merged window, the
                          step hint most hosts share, the step number) */
  TBE__FM__COUNT
} tbe__fig_merge;

/* What a comparison does with a figure: nothing, or new - base and
 * new / base, and which way is better. */
typedef enum tbe__fig_diff {
  TBE__FD_NONE = 0,   /* not compared (times, numbers, identity) */
  TBE__FD_LOWER = 1,  /* compared; less is better (time spent, idle, waits) */
  TBE__FD_HIGHER = 2, /* compared; more is better */
  TBE__FD_EITHER = 3, /* compared; neither way is better in itself (counts) */
  TBE__FD__COUNT
} tbe__fig_diff;

/* ---- the rows ---- */

#define TBE__FIGURES(X, C)                                                                         \
  /* a GPU (and all GPUs together) */                                                              \
  X(DEV_WALL, DEVICE, "wall_ns", "wall time", NS, SUM, LOWER, wall_ns, 1)                          \
  X(DEV_BUSY, DEVICE, "busy_ns", "GPU busy", NS, SUM, EITHER, busy_ns, 1)                          \
  X(DEV_IDLE, DEVICE, "idle_ns", "idle", NS, SUM, LOWER, idle_ns, 1)                               \
  X(DEV_KERNEL, DEVICE, "kernel_ns", "kernels", NS, SUM, LOWER, kernel_ns, 1)                      \
  X(DEV_KERNEL_COUNT, DEVICE, "kernel_count", "kernel count", COUNT, SUM, EITHER, kernel_count, 1) \
  X(DEV_SHORT, DEVICE, "short_kernels", "short kernels", COUNT, SUM, LOWER, short_kernels, 1)      \
  X(DEV_MEMCPY, DEVICE, "memcpy_ns", "memcpy", NS, SUM, LOWER, memcpy_ns, TBE_NCOPY_KINDS)         \
  X(DEV_MEMCPY_COUNT, DEVICE, "memcpy_count", "memcpy count", COUNT, SUM, EITHER, memcpy_count,    \
    TBE_NCOPY_KINDS)                                                                               \
  X(DEV_MEMCPY_BYTES, DEVICE, "memcpy_bytes", "memcpy bytes", BYTES, SUM, EITHER, memcpy_bytes,    \
    TBE_NCOPY_KINDS)                                                                               \
  X(DEV_PAGEABLE, DEVICE, "pageable_ns", "pageable copies", NS, SUM, LOWER, pageable_ns, 1)        \
  X(DEV_PAGEABLE_COUNT, DEVICE, "pageable_count", "pageable copy count", COUNT, SUM, LOWER,        \
    pageable_count, 1)                                                                             \
  X(DEV_MEMSET, DEVICE, "memset_ns", "memset", NS, SUM, LOWER, memset_ns, 1)                       \
  X(DEV_MEMSET_COUNT, DEVICE, "memset_count", "memset count", COUNT, SUM, EITHER, memset_count, 1) \
  X(DEV_SYNC, DEVICE, "sync_ns", "sync", NS, SUM, LOWER, sync_ns, 1)                               \
  X(DEV_SYNC_COUNT, DEVICE, "sync_count", "sync count", COUNT, SUM, LOWER, sync_count, 1)          \
  X(DEV_LAUNCH, DEVICE, "launch_median_ns", "launch", NS_OPT, UNKNOWN, LOWER, launch_median_ns, 1) \
  X(DEV_LAUNCH_SAMPLES, DEVICE, "launch_samples", "launches measured", COUNT, SUM, NONE,           \
    launch_samples, 1)                                                                             \
  X(DEV_CLASS, DEVICE, "class_ns", "kernel class time", NS, SUM, LOWER, class_ns,                  \
    TBE_KCLASS__COUNT)                                                                             \
  X(DEV_CLASS_COUNT, DEVICE, "class_count", "kernel class count", COUNT, SUM, EITHER, class_count, \
    TBE_KCLASS__COUNT)                                                                             \
  X(DEV_LAUNCH_OVERHEAD, DEVICE, "launch_overhead_median_ns", "launch overhead", NS_OPT, UNKNOWN,  \
    LOWER, launch_overhead_median_ns, 1)                                                           \
  X(DEV_QUEUE_DELAY, DEVICE, "queue_delay_median_ns", "queue delay", NS_OPT, UNKNOWN, LOWER,       \
    queue_delay_median_ns, 1)                                                                      \
  /* a step */                                                                                     \
  X(STEP_NUM, STEP, "num", "step", NUMBER, OWN, NONE, num, 1)                                      \
  X(STEP_START, STEP, "start_ns", "start", TIME, MIN, NONE, start_ns, 1)                           \
  X(STEP_DUR, STEP, "dur_ns", "step time", NS, MAX, LOWER, dur_ns, 1)                              \
  X(STEP_HOST, STEP, "host_ns", "host time", NS, MAX, LOWER, host_ns, 1)                           \
  X(STEP_GPU_BUSY, STEP, "gpu_busy_ns", "GPU busy", NS, SUM, EITHER, gpu_busy_ns, 1)               \
  X(STEP_KERNEL, STEP, "kernel_ns", "kernels", NS, SUM, LOWER, kernel_ns, 1)                       \
  X(STEP_KERNEL_COUNT, STEP, "kernel_count", "kernel count", COUNT, SUM, EITHER, kernel_count, 1)  \
  X(STEP_MEMCPY, STEP, "memcpy_ns", "memcpy", NS, SUM, LOWER, memcpy_ns, 1)                        \
  X(STEP_MEMSET, STEP, "memset_ns", "memset", NS, SUM, LOWER, memset_ns, 1)                        \
  X(STEP_SYNC, STEP, "sync_ns", "sync", NS, SUM, LOWER, sync_ns, 1)                                \
  X(STEP_LAUNCH, STEP, "launch_median_ns", "launch", NS_OPT, UNKNOWN, LOWER, launch_median_ns, 1)  \
  X(STEP_CLASS, STEP, "class_ns", "kernel class time", NS, SUM, LOWER, class_ns,                   \
    TBE_KCLASS__COUNT)                                                                             \
  X(STEP_LAUNCH_OVERHEAD, STEP, "launch_overhead_median_ns", "launch overhead", NS_OPT, UNKNOWN,   \
    LOWER, launch_overhead_median_ns, 1)                                                           \
  X(STEP_QUEUE_DELAY, STEP, "queue_delay_median_ns", "queue delay", NS_OPT, UNKNOWN, LOWER,        \
    queue_delay_median_ns, 1)                                                                      \
  /* the whole analysis */                                                                         \
  X(AN_START, ANALYSIS, "start_ns", "start", TIME, MIN, NONE, start_ns, 1)                         \
  X(AN_WALL, ANALYSIS, "wall_ns", "wall time", NS, OWN, LOWER, wall_ns, 1)                         \
  X(AN_HOST_BUSY, ANALYSIS, "host_busy_ns", "host busy", NS, MAX, LOWER, host_busy_ns, 1)          \
  X(AN_API_CALLS, ANALYSIS, "api_calls", "API calls", COUNT, SUM, LOWER, api_calls, 1)             \
  X(AN_SYNC_CALLS, ANALYSIS, "sync_calls", "sync calls", COUNT, SUM, LOWER, sync_calls, 1)         \
  X(AN_SYNC_CALL, ANALYSIS, "sync_call_ns", "sync call time", NS, SUM, LOWER, sync_call_ns, 1)     \
  X(AN_OVERHEAD, ANALYSIS, "overhead_ns", "profiler overhead", NS, SUM, LOWER, overhead_ns, 1)     \
  X(AN_DROPPED, ANALYSIS, "dropped_records", "records lost", COUNT, SUM, LOWER, dropped_records,   \
    1)                                                                                             \
  X(AN_OUT_OF_RANGE, ANALYSIS, "out_of_range_records", "records out of range", COUNT, SUM, LOWER,  \
    out_of_range_records, 1)                                                                       \
  X(AN_STEP_HINT_COUNT, ANALYSIS, "step_hint_count", "step hint calls", COUNT, OWN, NONE,          \
    step_hint_count, 1)                                                                            \
  X(AN_STEP_HINT, ANALYSIS, "step_hint_ns", "step hint time", NS, OWN, NONE, step_hint_ns, 1)      \
  X(AN_OP_GPU_COUNT, ANALYSIS, "op_gpu_count", "GPU work of operators", COUNT, SUM, EITHER,        \
    op_gpu_count, 1)                                                                               \
  X(AN_OP_GPU, ANALYSIS, "op_gpu_ns", "GPU time of operators", NS, SUM, EITHER, op_gpu_ns, 1)      \
  /* memory (analysis_memory.c); all GPUs: the largest GPU's figure */                             \
  X(DEV_MEM_PEAK_ALLOC, DEVICE, "peak_allocated_bytes", "peak allocated", BYTES_OPT, MAX, LOWER,   \
    mem_peak_allocated, 1)                                                                         \
  X(DEV_MEM_PEAK_RESERVED, DEVICE, "peak_reserved_bytes", "peak reserved", BYTES_OPT, MAX, LOWER,  \
    mem_peak_reserved, 1)                                                                          \
  X(DEV_MEM_GROWTH, DEVICE, "memory_growth_bytes_per_step", "growth per step", BYTES_DELTA, MAX,   \
    LOWER, mem_growth_per_step, 1)                                                                 \
  X(DEV_MEM_UNFREED, DEVICE, "unfreed_bytes", "never freed", BYTES_OPT, MAX, LOWER, mem_unfreed,   \
    1)                                                                                             \
  X(DEV_MEM_SAMPLED_PEAK, DEVICE, "sampled_peak_bytes", "peak used (NVML)", BYTES_OPT, MAX,         \
    LOWER, mem_sampled_peak, 1)                                                                    \
  X(STEP_MEM_PEAK_ALLOC, STEP, "peak_allocated_bytes", "peak allocated", BYTES_OPT, MAX, LOWER,    \
    mem_peak_allocated, 1)                                                                         \
  X(STEP_MEM_PEAK_RESERVED, STEP, "peak_reserved_bytes", "peak reserved", BYTES_OPT, MAX, LOWER,   \
    mem_peak_reserved, 1)

typedef enum tbe__fig_id {
#define TBE__FIG_ENUM(id, scope, key, label, unit, merge, diff, member, n) TBE__FIG_##id,
#define TBE__FIG_ENUMC(id, scope, key, label, unit, merge, diff, calc) TBE__FIG_##id,
  TBE__FIGURES(TBE__FIG_ENUM, TBE__FIG_ENUMC)
#undef TBE__FIG_ENUM
#undef TBE__FIG_ENUMC
      TBE__FIG__COUNT
} tbe__fig_id;

/* The first row the reports print from the table (above). */
#define TBE__FIG_LISTED (TBE__FIG_AN_OP_GPU + 1)

/* One row. */
typedef struct tbe__figure {
  uint32_t id;    /* tbe__fig_id */
  uint32_t scope; /* tbe__fig_scope */
  const char *key;
  const char *label;
  uint32_t unit;  /* tbe__fig_unit */
  uint32_t merge; /* tbe__fig_merge */
  uint32_t diff;  /* tbe__fig_diff */
  size_t offset;  /* of the member in the scope's struct */
  size_t size;    /* of the member (all n entries) */
  size_t n;       /* entries */
  /* computed rows: the value from the struct; NULL for a member */
  double (*calc)(const void *obj);
} tbe__figure;

/* The table, indexed by tbe__fig_id. */
extern const tbe__figure tbe__figures[TBE__FIG__COUNT];

/* ---- reading the rows ---- */

/* The row of `key` in `scope`, NULL when none. */
const tbe__figure *tbe__figure_by_key(tbe__fig_scope scope, const char *key);
/* The value of entry k as a real number: a computed row's, else the
 * member's (NaN for an unknown median). */
double tbe__fig_real(const tbe__figure *f, const void *obj, size_t k);
/* 1 when the unit's values are uint64_t (counts, bytes), 0 for int64_t. */
int tbe__fig_unsigned(const tbe__figure *f);
/* 1 when the unit has a value that says "unknown" (NS_OPT, BYTES_OPT,
 * BYTES_DELTA), and that value in *v (as int64_t) when v is not NULL. */
int tbe__fig_unknown(uint32_t unit, int64_t *v);
/* 1 for the units of bytes a report prints for people (BYTES_OPT,
 * BYTES_DELTA). */
int tbe__fig_is_mem(const tbe__figure *f);
/* `bytes` for people, into buf: "800 B", "64 MiB", "1.25 GiB" (two
 * decimals at most, trailing zeros dropped); with `sign`, "+64 MiB" and
 * "-3 MiB".  Returns buf. */
char *tbe__fmt_bytes(char *buf, size_t size, int64_t bytes, int sign);
/* The static words "device", "step", "analysis"; "ns", "ns_or_unknown",
 * "time_ns", "count", "bytes", "number", "pct"; "sum", "max", "min", "unknown",
 * "own"; "none", "lower", "higher", "either" ("?" out of range). */
const char *tbe__fig_scope_name(uint32_t s);
const char *tbe__fig_unit_name(uint32_t u);
const char *tbe__fig_merge_name(uint32_t m);
const char *tbe__fig_diff_name(uint32_t d);

/* The address of entry k of figure f in `obj` (a tbe_device_stats,
 * tbe_step_stats or tbe_analysis as f->scope says). */
static inline void *tbe__fig_at(const tbe__figure *f, const void *obj, size_t k) {
  return (char *)(uintptr_t)obj + f->offset + k * (f->size / f->n);
}
/* Entry k as int64_t (counts and bytes above INT64_MAX read INT64_MAX)
 * and as uint64_t (negative values read 0). */
int64_t tbe__fig_i64(const tbe__figure *f, const void *obj, size_t k);
uint64_t tbe__fig_u64(const tbe__figure *f, const void *obj, size_t k);

/* ---- merging ----
 * A run's merged analysis (run_analysis.c) takes each figure of its hosts
 * (and a merged step from the hosts' steps of its number) by its row's
 * merge rule: tbe__figs_merge_init prepares `into` (MIN rows at INT64_MAX,
 * UNKNOWN rows at -1, the others 0; OWN rows untouched), then
 * tbe__figs_merge folds each `from` in: SUM adds (saturating: durations at
 * INT64_MAX, counts and bytes at UINT64_MAX), MAX and MIN keep the larger
 * and the smaller (an unknown value never wins a MAX: it is the least;
 * BYTES_OPT and BYTES_DELTA rows merge by MAX only), UNKNOWN and OWN leave
 * `into` as it is. */
void tbe__figs_merge_init(tbe__fig_scope scope, void *into);
void tbe__figs_merge(tbe__fig_scope scope, void *into, const void *from);

#endif
