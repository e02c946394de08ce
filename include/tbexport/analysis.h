/* tbexport/analysis.h: where the time goes in a finished trace, and how two
 * traces differ.
 *
 * tbe_analysis_create walks a finished tbe_trace once and computes, per
 * GPU: wall time, busy time (the union of kernel, copy and memset
 * intervals), time in kernels, copies by direction, memsets,
 * synchronization, idle time, kernel count and the median launch latency
 * (host API call start to GPU start, over correlated pairs); per name:
 * kernels, CPU operators and host ranges (NVTX ranges and user
 * annotations) with calls, total, self, min and max; per step: step time,
 * GPU busy time and kernel time; plus advice lines, each backed by the
 * figure that triggered it.
 *
 * tbe_diff_create matches two analyses by name and computes per-name
 * deltas and ratios, with a noise test on per-step medians when both
 * traces have several steps.
 *
 * tbe_report_summary / tbe_report_diff render either as a table (fits the
 * given width), CSV, JSON or Markdown into a string.
 *
 * Ownership: an analysis borrows its trace (which must outlive it and stay
 * unchanged); a diff borrows its two analyses.  All results are plain data
 * the caller reads directly.
 *
 * Thread safety: none inside one object; distinct objects may be used from
 * distinct threads, and any number of analyses may read one finished
 * trace concurrently. */
#ifndef TBEXPORT_ANALYSIS_H
#define TBEXPORT_ANALYSIS_H

#include <stddef.h>
#include <stdint.h>

#include "tbexport/common.h"
#include "tbexport/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Kernels shorter than this count as "short" in the advice (ns). */
#define TBE_SHORT_KERNEL_NS 5000
/* Copy directions tracked separately: tbe_copy_kind values 0..10. */
#define TBE_NCOPY_KINDS 11

/* The name tables. */
typedef enum tbe_group_kind {
  TBE_GROUP_KERNEL = 0,  /* GPU kernels */
  TBE_GROUP_CPU_OP = 1,  /* framework operators (Kineto cpu_op) */
  TBE_GROUP_RANGE = 2,   /* NVTX ranges and user annotations (steps excluded) */
  TBE_GROUP__COUNT
} tbe_group_kind;

typedef enum tbe_sort_key {
  TBE_SORT_TOTAL = 0,  /* total time, descending */
  TBE_SORT_AVG = 1,    /* average time, descending */
  TBE_SORT_CALLS = 2,  /* calls, descending */
  TBE_SORT_MAX = 3     /* longest single call, descending */
} tbe_sort_key;

/* Figures of one name in one table. */
typedef struct tbe_name_stats {
  tbe_str name;       /* in the analysed trace's string table (for ranges, the
                         first name seen of those grouped under `label`) */
  /* The name shown and matched by diff (owned by the analysis or the
   * trace).  Equal to the name, except for ranges whose names carry a
   * per-call suffix (PyTorch's NVTX "aten::mm, seq = 4, op_id = 12, sizes
   * = …"): those are grouped under the part before ", seq = ",
   * ", op_id = " or ", sizes = ". */
  const char *label;
  uint64_t calls;
  int64_t total_ns;
  int64_t self_ns;    /* total minus time in nested entries of the same table
                         on the same thread (kernels: equal to total) */
  int64_t min_ns;
  int64_t max_ns;
  /* Time per step (nsteps entries, indexed like tbe_analysis.steps) or
   * NULL when the trace has no steps.  Kernels count in the step of the
   * API call that launched them (else of their own start); host entries in
   * the step where they start. */
  int64_t *step_ns;
} tbe_name_stats;

/* Figures of one GPU (or, in tbe_analysis.all, of all GPUs together:
 * there busy_ns is the time any GPU was busy). */
typedef struct tbe_device_stats {
  int32_t device;            /* ordinal; -1 in tbe_analysis.all */
  tbe_str name;              /* device name from the trace, 0 if unknown */
  int64_t wall_ns;           /* profiled window */
  int64_t busy_ns;           /* union of kernel, copy and memset intervals */
  int64_t idle_ns;           /* wall_ns - busy_ns */
  int64_t kernel_ns;         /* sum of kernel durations */
  uint64_t kernel_count;
  uint64_t short_kernels;    /* kernels shorter than TBE_SHORT_KERNEL_NS */
  int64_t memcpy_ns[TBE_NCOPY_KINDS];  /* by tbe_copy_kind */
  uint64_t memcpy_count[TBE_NCOPY_KINDS];
  uint64_t memcpy_bytes[TBE_NCOPY_KINDS];
  int64_t pageable_ns;       /* copies from or to pageable host memory */
  uint64_t pageable_count;
  int64_t memset_ns;
  uint64_t memset_count;
  int64_t sync_ns;           /* synchronization records on this GPU's streams */
  uint64_t sync_count;
  int64_t launch_median_ns;  /* median API start -> GPU start; -1 if unknown */
  uint64_t launch_samples;   /* correlated pairs behind the median */
} tbe_device_stats;

typedef struct tbe_step_stats {
  int64_t num;
  int64_t start_ns;
  int64_t dur_ns;
  int64_t gpu_busy_ns;  /* time any GPU was busy inside the step's window */
  int64_t kernel_ns;    /* kernels launched in the step */
  uint64_t kernel_count;
} tbe_step_stats;

typedef enum tbe_advice_kind {
  TBE_ADVICE_LAUNCH_BOUND = 0,  /* GPU mostly idle while the host is busy */
  TBE_ADVICE_SHORT_KERNELS = 1, /* many kernels shorter than a few us */
  TBE_ADVICE_PAGEABLE = 2,      /* copies from pageable memory */
  TBE_ADVICE_COPY_SHARE = 3,    /* a large share of time in host<->device copies */
  TBE_ADVICE_SYNC = 4,          /* frequent device synchronization */
  TBE_ADVICE_DROPPED = 5        /* records were dropped or the capture ended early */
} tbe_advice_kind;

typedef struct tbe_advice {
  uint32_t kind;     /* tbe_advice_kind */
  double figure;     /* the figure that triggered it (its unit is in text) */
  char text[240];    /* one line, figure included, no newline */
} tbe_advice;

typedef struct tbe_analysis {
  const tbe_trace *trace;     /* borrowed */
  int64_t start_ns;           /* profiled window */
  int64_t wall_ns;
  tbe_device_stats *devices;  /* one per GPU seen, by ordinal */
  size_t ndevices;
  tbe_device_stats all;       /* all GPUs together */
  /* Name tables, sorted by tbe_analysis_sort (initially by total). */
  tbe_name_stats *groups[TBE_GROUP__COUNT];
  size_t ngroups[TBE_GROUP__COUNT];
  int64_t group_total_ns[TBE_GROUP__COUNT];  /* sum of self_ns: the self % base */
  tbe_step_stats *steps;      /* the trace's steps, in order */
  size_t nsteps;
  int64_t host_busy_ns;       /* busiest host thread: union of CPU ops and API calls */
  uint64_t api_calls;         /* CUDA runtime + driver calls */
  uint64_t sync_calls;        /* API calls that synchronize (…Synchronize) + sync records */
  int64_t sync_call_ns;
  int64_t overhead_ns;        /* trace's overhead_ns, else the overhead events' sum */
  uint64_t dropped_records;   /* trace's dropped_records + dropped_out_of_range */
  uint64_t out_of_range_records; /* of those: zero or inverted timestamps */
  int ended_early;
  tbe_advice *advice;
  size_t nadvice;
  /* Private. */
  tbe_allocator alloc_;
  void *priv_;
} tbe_analysis;

/* Analyses a finished trace (tbe_trace_finish done).  `a` may be NULL.
 * Allocates O(events of a kind) scratch once, never per event.  Returns 0,
 * TBE_EINVAL (NULL argument) or TBE_ENOMEM; on failure *out is NULL. */
TBE_API int tbe_analysis_create(tbe_analysis **out, const tbe_trace *t, const tbe_allocator *a);
/* Frees an analysis (NULL is a no-op).  The trace is not touched. */
TBE_API void tbe_analysis_free(tbe_analysis *an);
/* Re-sorts one name table; ties break by name. */
TBE_API void tbe_analysis_sort(tbe_analysis *an, tbe_group_kind g, tbe_sort_key key);
/* Returns the static name "kernels", "cpu_ops" or "ranges". */
TBE_API const char *tbe_group_name(tbe_group_kind g);

/* One name in a comparison. */
typedef struct tbe_diff_entry {
  const char *name;      /* full name (owned by one of the traces) */
  int present;           /* bit 0: in base, bit 1: in new */
  uint64_t calls[2];     /* [0] base, [1] new */
  int64_t total_ns[2];
  int64_t delta_ns;      /* new total - base total */
  double ratio;          /* new total / base total; 0 when absent from base */
  int noise_checked;     /* both sides had >= 2 steps */
  int64_t step_median_ns[2];
  int64_t step_spread_ns[2];  /* max - min of the per-step times */
  int within_noise;      /* median delta 0 or smaller than the larger spread */
} tbe_diff_entry;

typedef struct tbe_diff {
  const tbe_analysis *side[2];   /* borrowed: [0] base, [1] new */
  tbe_diff_entry *entries[TBE_GROUP__COUNT];  /* sorted by |delta_ns| desc */
  size_t nentries[TBE_GROUP__COUNT];
  size_t added[TBE_GROUP__COUNT];    /* names only in new */
  size_t removed[TBE_GROUP__COUNT];  /* names only in base */
  /* Overall figures. */
  int64_t wall_ns[2];
  int64_t kernel_ns[2];
  int64_t busy_ns[2];
  size_t nsteps[2];
  int64_t step_median_ns[2];   /* -1 without steps */
  int64_t step_spread_ns[2];
  int steps_noise_checked;
  int steps_within_noise;
  tbe_allocator alloc_;
} tbe_diff;

/* Compares two analyses.  `a` may be NULL.  Returns 0, TBE_EINVAL or
 * TBE_ENOMEM. */
TBE_API int tbe_diff_create(tbe_diff **out, const tbe_analysis *base, const tbe_analysis *newer,
                            const tbe_allocator *a);
TBE_API void tbe_diff_free(tbe_diff *d);

typedef enum tbe_report_format {
  TBE_REPORT_TABLE = 0,
  TBE_REPORT_CSV = 1,
  TBE_REPORT_JSON = 2,
  TBE_REPORT_MARKDOWN = 3
} tbe_report_format;

typedef struct tbe_report_options {
  int format;          /* tbe_report_format */
  int sort;            /* tbe_sort_key (summary only; diff sorts by |delta|) */
  size_t top;          /* rows per name table; 0 = all */
  int wide;            /* full names instead of shortened ones */
  int width;           /* table width in columns; default 100 */
  const char *label[2];/* diff: names of base and new (NULL: "base", "new");
                          summary: label[0] is the title (may be NULL) */
  const tbe_allocator *allocator;
} tbe_report_options;

/* Fills `o` with the defaults: table, by total, top 10, width 100. */
TBE_API void tbe_report_options_init(tbe_report_options *o);
/* Renders a summary (sorting its tables by o->sort, hence non-const).
 * On success *out is a NUL-terminated string of *len bytes, freed with
 * tbe_report_free.  Returns 0, TBE_EINVAL or TBE_ENOMEM. */
TBE_API int tbe_report_summary(tbe_analysis *an, const tbe_report_options *o, char **out,
                               size_t *len);
TBE_API int tbe_report_diff(const tbe_diff *d, const tbe_report_options *o, char **out,
                            size_t *len);
/* Frees a report string with the allocator it was made with. */
TBE_API void tbe_report_free(char *s, size_t len, const tbe_allocator *a);

/* Writes the comparison into TensorBoard: a new event file in `run_dir`
 * (normally "<logdir>/<new run>") holding, under "diff/<base_label>/", the
 * Markdown report of the top `top` names per table as text ("report") and
 * the new/base ratios as scalars at step 0 ("wall_time_ratio",
 * "gpu_busy_ratio", "kernel_time_ratio", "step_time_ratio" when both sides
 * have steps, and "kernels/<tag>" for matched kernels, with the tags of the run
 * summary: the short name, plus a hash of the full name unless the name
 * is a tag as it is).
 * `base_label` must pass tbe_name_check.  `host` may be NULL (this
 * machine).  When `path` is not NULL, the file's path is copied there
 * (size bytes).  On failure the file is removed.  Returns 0 or a negative
 * code. */
TBE_API int tbe_diff_write_events(const tbe_diff *d, const char *run_dir, const char *base_label,
                                  const char *new_label, size_t top, const char *host,
                                  char *path, size_t size);

/* Names. */
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
/* Writes a readable form of a kernel or operator name of at most `width`
 * bytes (0: no limit) into `buf`: without return type and parameter list,
 * and when too long without namespaces, then with nested template
 * arguments elided ("<…>" written "<...>"), then cut with "...".  A
 * mangled name is demangled first (names in a finished trace already are).
 * Returns the length written. */
TBE_API size_t tbe_name_shorten(const char *name, size_t width, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif
