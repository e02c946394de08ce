/* tbexport/analysis.h: where the time goes in a finished trace, and how two
 * traces differ.
 *
 * tbe_analysis_create walks a finished tbe_trace once and computes, per
 * GPU: wall time, busy time (the union of kernel, copy and memset
 * intervals), time in kernels, copies by direction, memsets,
 * synchronization, idle time, kernel count and, over correlated launches,
 * the median launch overhead (the API call's duration) and queue delay
 * (the call's end to the GPU start); per name:
 * kernels, CPU operators and host ranges (NVTX ranges and user
 * annotations) with calls, total, self, min and max; per operator also the
 * GPU work it launched, as torch.profiler's key_averages() gives it (self
 * CUDA, CUDA total, the activities and the kernels it launched, per name
 * and per name and input shapes: tbe_name_stats); per step: step time,
 * GPU busy time and kernel time; plus advice lines, each backed by the
 * figure that triggered it.
 *
 * tbe_diff_create matches two analyses by name and computes per-name
 * deltas and ratios, and compares the per-step distributions (median,
 * quartiles) of the step time and of each name with a rank test, so that
 * a change inside the steps' own noise is told apart from a real one (the
 * rule is at tbe_noise).
 *
 * A run of several processes or hosts has one trace per host file; each
 * gets its own analysis (pids and device ordinals of different hosts never
 * merge).  tbe_run_analysis_create aggregates N of them: name tables merged
 * by name, steps matched by number, one row per host, the slowest and the
 * fastest host, the distribution over hosts of the step time and of the
 * communication time, the outliers; tbe_run_diff_create compares two runs
 * in total and host by host (matched by rank, else by host name), with the
 * change of each host's median step time.
 *
 * tbe_report_summary / tbe_report_diff / tbe_report_run /
 * tbe_report_run_diff render any of these as a table (fits the given
 * width), CSV, JSON or Markdown into a string.  The JSON form is complete:
 * it holds every figure the other forms print.
 *
 * Ownership: an analysis borrows its trace (which must outlive it and stay
 * unchanged); a diff borrows its two analyses; a run analysis borrows its
 * host analyses and labels, a run diff its two runs.  All results are plain
 * data the caller reads directly.
 *
 * Thread safety: none inside one object; distinct objects may be used from
 * distinct threads, and any number of analyses may read one finished
 * trace concurrently. */
#ifndef TBEXPORT_ANALYSIS_H
#define TBEXPORT_ANALYSIS_H

#ifndef TBE_EXPERIMENTAL
#error "tbexport/analysis.h is the experimental tier: define TBE_EXPERIMENTAL before including tbexport headers (see tbexport.h)"
#endif

#include <stddef.h>
#include <stdint.h>

#include "tbexport/common.h"
#include "tbexport/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The experimental tier: hidden in the shared library (common.h). */
#undef TBE_API
#define TBE_API TBE__API_EXPERIMENTAL

/* Kernels shorter than this count as "short" in the advice (ns). */
#define TBE_SHORT_KERNEL_NS 5000
/* Copy directions tracked separately: tbe_copy_kind values 0..10. */
#define TBE_NCOPY_KINDS 11

/* The name tables. */
typedef enum tbe_group_kind {
  TBE_GROUP_KERNEL = 0,  /* GPU kernels */
  TBE_GROUP_CPU_OP = 1,  /* framework operators (Kineto cpu_op) */
  TBE_GROUP_RANGE = 2,   /* NVTX ranges and user annotations (steps excluded) */
  /* The operators again, one entry per name and input shapes (the
   * operator's "Input Dims", common spelling "[[4, 8], []]"; "" for an
   * operator without them), as torch.profiler's key_averages(
   * group_by_input_shape=True); empty when no operator of the trace
   * records its shapes.  The reports show it in place of
   * TBE_GROUP_CPU_OP with TBE_GROUP_BY_SHAPE. */
  TBE_GROUP_CPU_OP_SHAPE = 3,
  TBE_GROUP__COUNT
} tbe_group_kind;

/* Sort keys, each descending; ties by total, then by name (and shapes).
 * The CUDA keys order the operator tables by their GPU figures and the
 * other tables by total (a kernel's time is its GPU time); TBE_SORT_SELF
 * orders kernels by total too. */
typedef enum tbe_sort_key {
  TBE_SORT_TOTAL = 0,      /* total time (operators: CPU total) */
  TBE_SORT_AVG = 1,        /* average time per call */
  TBE_SORT_CALLS = 2,      /* calls */
  TBE_SORT_MAX = 3,        /* longest single call */
  TBE_SORT_CUDA_TOTAL = 4, /* operators: CUDA total (own and descendants' GPU work) */
  TBE_SORT_SELF_CUDA = 5,  /* operators: self CUDA (their own GPU work) */
  TBE_SORT_SELF = 6,       /* self time (operators: self CPU) */
  /* What tbe_report_options_init chooses: by total, except the operator
   * tables of a trace whose GPU work is attributed to operators
   * (tbe_analysis.op_gpu_count > 0): by CUDA total, the figure a reader of
   * torch.profiler's tables looks at first. */
  TBE_SORT_DEFAULT = 7
} tbe_sort_key;

/* The most kernels listed per operator in tbe_name_stats.launched (the
 * others are summed in launched_other_*). */
#define TBE_OP_KERNELS_TOP 5

/* One kernel name (or copy, or memset) an operator launched itself. */
typedef struct tbe_op_kernel {
  const char *name;  /* the activity's name (owned by the trace or the analysis) */
  uint64_t calls;
  int64_t total_ns;
} tbe_op_kernel;

/* Kernel classes: what a kernel does, decided from its (demangled) name
 * alone by an ordered table of name fragments (src/trace/kclass.c; the
 * first matching row wins, so specific families come before the broad
 * ones: communication, attention, softmax, normalization, convolution
 * and GEMM before reduction and elementwise).  Memcpy and memset records
 * count as TBE_KCLASS_COPY in the analysis. */
typedef enum tbe_kernel_class {
  TBE_KCLASS_GEMM = 0,       /* matrix multiply: cuBLAS, CUTLASS, nvjet, xmma gemm, triton mm */
  TBE_KCLASS_CONV = 1,       /* convolution: fprop, dgrad, wgrad, winograd, im2col */
  TBE_KCLASS_ATTENTION = 2,  /* fused attention: FlashAttention, fmha, SDPA, flex */
  TBE_KCLASS_ELEMENTWISE = 3,
  TBE_KCLASS_REDUCTION = 4,
  TBE_KCLASS_NORM = 5,       /* layer, batch, group, RMS normalization */
  TBE_KCLASS_SOFTMAX = 6,
  TBE_KCLASS_COPY = 7,       /* copy/memset: copy and fill kernels, layout
                                transposes, memcpy and memset records */
  TBE_KCLASS_COMM = 8,       /* communication: NCCL, NVSHMEM, all-reduce */
  TBE_KCLASS_OTHER = 9,
  TBE_KCLASS__COUNT
} tbe_kernel_class;

/* Hardware metrics (the trace's counter tracks and kernel figures:
 * tbexport/trace.h, "hardware metrics").  An analysis lists the names it
 * found once (tbe_analysis.gpu_metrics, .kernel_metrics: the names of the
 * issue in its order first, then any other name in byte order); each
 * device, step and kernel entry holds an array of means indexed like that
 * list, `samples` 0 where it has no figure. */
typedef struct tbe_metric_mean {
  double mean;        /* PM metrics: time-weighted mean over the window
                         (each sample weighs its interval, cut to the
                         window); kernel figures: launch-weighted mean */
  uint64_t samples;   /* PM: samples inside the window; kernels: launches
                         measured; 0: no figure */
} tbe_metric_mean;

/* What limits a kernel, from its range-profiler figures (roofline-style;
 * src/trace/analysis/analysis_metrics.c):
 * - compute / memory: the higher of the compute figure (the higher of
 *   sm_throughput_pct and tensor_pipe_pct) and the memory figure
 *   (dram_throughput_pct, else mem_throughput_pct, which counts L1 and
 *   shared memory traffic too: a tiled GEMM saturates those by design) is
 *   at least TBE_BOUND_PEAK_PCT % of peak: the one that is higher;
 * - launch: neither is, the kernel's mean duration (duration_ns, else the
 *   trace's) is below TBE_SHORT_KERNEL_NS and its GPU is busy less than
 *   TBE_BOUND_IDLE_PCT % of the time: it does too little to matter, the
 *   launches do;
 * - latency: neither is, and the kernel is not that short: its warps
 *   wait (memory or dependency latency) and there are too few of them to
 *   hide it, the more so when achieved occupancy is low;
 * - none: no figures (TBE_BOUND_NONE). */
#define TBE_BOUND_PEAK_PCT 60.0
#define TBE_BOUND_IDLE_PCT 50.0
typedef enum tbe_bound {
  TBE_BOUND_NONE = 0,
  TBE_BOUND_COMPUTE = 1,
  TBE_BOUND_MEMORY = 2,
  TBE_BOUND_LATENCY = 3,
  TBE_BOUND_LAUNCH = 4
} tbe_bound;
/* The static word: "", "compute", "memory", "latency", "launch". */
TBE_API const char *tbe_bound_name(tbe_bound b);

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
  uint32_t kclass;    /* kernels: tbe_kernel_class of the name; 0 otherwise */
  /* Kernels with range-profiler figures: the means over the devices that
   * measured it (tbe_analysis.nkernel_metrics entries), and the verdict;
   * NULL and TBE_BOUND_NONE otherwise. */
  tbe_metric_mean *metrics;
  uint32_t bound_by;  /* tbe_bound */
  /* Kernels whose GPU has PM samples: each PM metric's mean over the time
   * this name's launches ran (each sample interval weighted by its overlap
   * with each launch; tbe_analysis.ngpu_metrics entries, `samples` the
   * overlapping intervals), NULL otherwise.  Launches shorter than the
   * sampling interval get the means of the intervals around them, which
   * other work shares: `samples` below twice `calls` says so. */
  tbe_metric_mean *pm_metrics;
  /* Operators (TBE_GROUP_CPU_OP and TBE_GROUP_CPU_OP_SHAPE; 0 and NULL
   * in the other tables).  The GPU work of the trace (kernels, copies,
   * memsets) belongs to the innermost operator open on the thread of the
   * call that launched it (its external id, tbe_trace_finish: see
   * trace/model/ops.h); work launched inside a user annotation but no
   * operator, or outside both, belongs to none.  As in torch.profiler's
   * key_averages():
   *   self_cuda_ns: the GPU time of the work the name's calls launched
   *     themselves;
   *   cuda_total_ns: that plus the self CUDA time of every operator
   *     nested in a call (on its thread), summed over the calls, so an
   *     operator nested in one of its own name counts in both;
   *   kernels: the GPU activities the calls launched themselves.
   * total_ns is the CPU total and self_ns the self CPU time. */
  int64_t self_cuda_ns;
  int64_t cuda_total_ns;
  uint64_t kernels;
  /* CUDA total per step (nsteps entries, each call in the step where it
   * starts, as step_ns), NULL without steps or without GPU work attributed
   * to operators. */
  int64_t *cuda_step_ns;
  /* TBE_GROUP_CPU_OP_SHAPE: the input shapes ("" for none); NULL in the
   * other tables. */
  const char *shapes;
  /* What the name's calls launched themselves, by activity name: the
   * TBE_OP_KERNELS_TOP with the most GPU time (ties: by name), then the
   * rest summed, so that the listed calls plus launched_other_calls make
   * `kernels` and their times plus launched_other_ns make self_cuda_ns. */
  const tbe_op_kernel *launched;
  size_t nlaunched;
  uint64_t launched_other_calls;
  int64_t launched_other_ns;
  /* Kernels: the operator (its name) whose calls launched most of this
   * kernel's GPU time (ties: the name first in byte order), NULL when no
   * operator launched it; NULL in the other tables.  tbe_diff_create pairs
   * only kernels of the same operator where both sides know it. */
  const char *launch_op;
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
  /* Launches: the GPU work with the API call that launched it
   * (correlated pairs; launch_samples of them), split in two medians each
   * named for what it measures, as Holistic Trace Analysis does:
   *   launch_overhead_median_ns: the launching call's own duration (what
   *     the host pays per launch);
   *   queue_delay_median_ns: from the call's end to the work's start on
   *     the GPU (HTA's launch_delay), 0 for work that started before the
   *     call returned: the time the work waited behind earlier work of
   *     its stream or for the GPU.
   * launch_median_ns is the older single figure, the call's start to the
   * work's start (overhead and queueing together; 210 ms on a GEMM loop
   * that queues ahead), kept for readers of it; the reports show the
   * two above.  All -1 when unknown (no pairs; a run's merged total:
   * medians do not add). */
  int64_t launch_median_ns;
  uint64_t launch_samples; /* correlated pairs behind the medians */
  /* GPU time by kernel class (tbe_kernel_class_of the kernel's name);
   * memcpy and memset records count as TBE_KCLASS_COPY. */
  int64_t class_ns[TBE_KCLASS__COUNT];
  uint64_t class_count[TBE_KCLASS__COUNT];
  /* PM metric means over the window (tbe_analysis.ngpu_metrics entries;
   * in tbe_analysis.all, over all GPUs' samples), NULL without any. */
  tbe_metric_mean *metrics;
  int64_t launch_overhead_median_ns; /* see launch_median_ns; -1 if unknown */
  int64_t queue_delay_median_ns;     /* see launch_median_ns; -1 if unknown */
  /* Memory: the GPU's memory curve (tbe_trace_finish makes it: per
   * process, the allocator's totals, else the CUDA driver's; the
   * processes' curves on one GPU add up).  -1 when unknown (no memory
   * events for the GPU); in tbe_analysis.all, the largest GPU's.
   *   mem_peak_allocated, mem_peak_reserved: the curve's highest values;
   *   mem_growth_per_step: the least-squares slope of the allocated bytes
   *     at each step's end over the steps (bytes per step, signed;
   *     INT64_MIN when unknown: fewer than 2 steps with a value);
   *   mem_unfreed: the bytes allocated inside the steps (from the first
   *     step's start to the last step's end) that no free of the trace
   *     gives back (-1 without steps). */
  int64_t mem_peak_allocated;
  int64_t mem_peak_reserved;
  int64_t mem_growth_per_step;
  int64_t mem_unfreed;
  /* mem_sampled_peak: the highest device memory in use the driver
   * reported for the program's processes (NVML's samples, 10 a second, of
   * the process's own use, else of the GPU's); it includes what no
   * allocator reports (the CUDA context, libraries' workspaces).  -1 when
   * unknown (not sampled). */
  int64_t mem_sampled_peak;
} tbe_device_stats;

/* One step.  Its window is the step as it ran on the device, the way
 * PyTorch's TensorBoard plugin measures it: in start order, a step starts
 * at its host start or where the previous step ended, whichever is later,
 * and ends at its host end or at the end of the last GPU work it launched
 * (kernels, copies, memsets), whichever is later.  So the windows tile the
 * timeline, and in a GPU-bound loop, whose host runs ahead, the step time
 * is the GPU's, not how fast the host queued work (host_ns). */
typedef struct tbe_step_stats {
  int64_t num;
  int64_t start_ns;     /* the window (above) */
  int64_t dur_ns;       /* the step time: the window's length */
  int64_t host_ns;      /* the step's host range alone */
  int64_t gpu_busy_ns;  /* time any GPU was busy inside the step's window */
  int64_t kernel_ns;    /* kernels launched in the step */
  uint64_t kernel_count;
  /* GPU work launched in the step (like kernel_ns: by the step of the API
   * call that launched it, else of its own start). */
  int64_t memcpy_ns;
  int64_t memset_ns;
  int64_t sync_ns;      /* synchronization records */
  /* The step's GPU work, as tbe_device_stats.launch_median_ns (the
   * older single figure), .launch_overhead_median_ns and
   * .queue_delay_median_ns: -1 if unknown. */
  int64_t launch_median_ns;
  int64_t class_ns[TBE_KCLASS__COUNT];  /* as tbe_device_stats.class_ns */
  int64_t gpu_end_ns;   /* private to the analysis (0 once it is done) */
  /* PM metric means inside the step's window over all GPUs
   * (tbe_analysis.ngpu_metrics entries), NULL without any. */
  tbe_metric_mean *metrics;
  int64_t launch_overhead_median_ns;
  int64_t queue_delay_median_ns;
  /* The highest allocated and reserved bytes inside the step's window
   * (the value the curve holds at its start included) of the GPU where
   * they are highest; -1 when unknown (no memory curve). */
  int64_t mem_peak_allocated;
  int64_t mem_peak_reserved;
} tbe_step_stats;

/* The distribution of n per-step figures (step durations, or one name's
 * time per step).  Quartiles interpolate linearly between order
 * statistics (q = x[h] + (h - floor h)(x[h+1] - x[h]), h = (n - 1) p, in
 * integer arithmetic rounding toward zero), so the median of an even count
 * is the mean of the two middle values.  All -1 when n is 0. */
typedef struct tbe_step_dist {
  size_t n;
  int64_t median_ns;
  int64_t q1_ns;   /* 25th percentile */
  int64_t q3_ns;   /* 75th percentile */
  int64_t min_ns;
  int64_t max_ns;
} tbe_step_dist;

/* Whether a change lies within the steps' own noise.
 *
 * The rule: the per-step figures of the two sides are compared with the
 * Mann-Whitney rank test (two-sided; exact distribution when both sides
 * have fewer than 50 steps and no value is repeated, else the normal
 * approximation with tie and continuity corrections).  A change is
 * "beyond noise" when p < TBE_NOISE_ALPHA, else "within noise": the
 * shift is one that reshuffling the steps between the two runs produces
 * at least that often.  With fewer than TBE_NOISE_MIN_STEPS steps on a
 * side nothing is judged: 4 steps per side is the fewest at which even a
 * complete separation of the two sides is significant (3 and 3 give
 * p = 0.10).  The per-name verdicts of one table control the false
 * discovery rate at TBE_NOISE_ALPHA over the names tested
 * (Benjamini-Hochberg), so a table of many unchanged names does not light
 * up by chance; p_value stays the test's own. */
#define TBE_NOISE_ALPHA 0.05
#define TBE_NOISE_MIN_STEPS 4

typedef enum tbe_noise {
  TBE_NOISE_NONE = 0,     /* not compared: a side has no per-step figures */
  TBE_NOISE_TOO_FEW = 1,  /* fewer than TBE_NOISE_MIN_STEPS steps on a side */
  TBE_NOISE_WITHIN = 2,   /* the change is within the steps' noise */
  TBE_NOISE_BEYOND = 3    /* the steps of the two sides differ */
} tbe_noise;

/* Per-step figures of one quantity on two sides ([0] base, [1] new). */
typedef struct tbe_step_compare {
  tbe_step_dist dist[2];
  uint32_t verdict;  /* tbe_noise */
  double p_value;    /* two-sided; -1 when not tested */
} tbe_step_compare;

/* Compares two samples of per-step figures by the rule above (sets every
 * field of *out).  `base` and `newer` are not changed.  `a` may be NULL.
 * Returns 0, TBE_EINVAL (NULL out, or NULL values with a non-zero count)
 * or TBE_ENOMEM. */
TBE_API int tbe_step_compare_values(tbe_step_compare *out, const int64_t *base, size_t nbase,
                                    const int64_t *newer, size_t nnew, const tbe_allocator *a);
/* Returns the static word for a verdict: "", "too few steps", "within
 * noise", "beyond noise". */
TBE_API const char *tbe_noise_name(tbe_noise v);

typedef enum tbe_advice_kind {
  TBE_ADVICE_LAUNCH_BOUND = 0,   /* GPU mostly idle while the host is busy */
  TBE_ADVICE_SHORT_KERNELS = 1,  /* many kernels shorter than a few us */
  TBE_ADVICE_PAGEABLE = 2,       /* copies from pageable memory */
  TBE_ADVICE_COPY_SHARE = 3,     /* a large share of time in host<->device copies */
  TBE_ADVICE_SYNC = 4,           /* frequent device synchronization */
  TBE_ADVICE_DROPPED = 5,        /* records were dropped or the capture ended early */
  TBE_ADVICE_SM_UNDERFILLED = 6, /* GPU busy but its SMs mostly inactive */
  TBE_ADVICE_TENSOR_IDLE = 7,    /* GEMMs with the tensor pipes idle */
  TBE_ADVICE_MEMORY_BOUND = 8,   /* a kernel near DRAM's peak bandwidth */
  TBE_ADVICE_COMPUTE_BOUND = 9,  /* a kernel near the SMs' (or tensor pipes') peak */
  /* Operators (the rules and thresholds: analysis_advice.c, "operators"): */
  TBE_ADVICE_OP_COPIES = 10,   /* copy/cast operators launch much of the GPU work */
  TBE_ADVICE_OP_DOMINANT = 11, /* one operator owns most of the GPU time */
  TBE_ADVICE_OP_TINY = 12,     /* an operator launches many tiny kernels per call */
  TBE_ADVICE_UNTRACED = 13,    /* GPU mostly idle, and no traced host work explains it */
  /* Memory (the rules and thresholds: analysis_advice.c, "memory"): */
  TBE_ADVICE_MEM_LEAK = 14,       /* allocated grows step after step, never freed */
  TBE_ADVICE_MEM_FRAGMENTED = 15, /* reserved far above allocated at the peak */
  TBE_ADVICE__COUNT
} tbe_advice_kind;

typedef struct tbe_advice {
  uint32_t kind;     /* tbe_advice_kind */
  double figure;     /* the figure that triggered it (its unit is in text) */
  char text[240];    /* one line, figure included, no newline */
} tbe_advice;

typedef struct tbe_analysis {
  const tbe_trace *trace;     /* borrowed; NULL in a run's merged analysis */
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
  int64_t host_busy_ns;       /* busiest host thread: union of CPU ops and API calls,
                                 the synchronizing calls (waits for the GPU) left out */
  uint64_t api_calls;         /* CUDA runtime + driver calls */
  uint64_t sync_calls;        /* API calls that synchronize (…Synchronize) + sync records */
  int64_t sync_call_ns;
  int64_t overhead_ns;        /* trace's overhead_ns, else the overhead events' sum */
  uint64_t dropped_records;   /* trace's dropped_records + dropped_out_of_range */
  uint64_t out_of_range_records; /* of those: zero or inverted timestamps */
  int ended_early;
  tbe_advice *advice;
  size_t nadvice;
  /* Who and what, so that run-level reports need no trace. */
  const char *host;           /* the trace's host name, "" if unknown */
  int64_t pid;                /* process of the busiest host thread, else the first
                                 process; -1 if none */
  int32_t rank;               /* distributed rank when the trace gives one that
                                 means something (world size > 1 or rank > 0); else -1 */
  int32_t world_size;         /* as the trace gives it; 0 if unknown */
  tbe_step_dist step_dist;    /* of the step durations (n = 0 without steps) */
  /* Without steps: the range that looks like the iteration, so the report
   * can say which --steps nvtx:NAME to give; NULL when there are steps or
   * no range qualifies.  The rule: among NVTX ranges and user annotations
   * at the top of a host thread (no other range of that thread open around
   * them) that repeat on that thread and whose calls there cover at least
   * TBE_STEP_HINT_MIN_PCT % of the wall time, the most frequent (ties: the
   * longer total, then the name).  PyTorch's per-operator NVTX ranges (names
   * grouped under a label) never qualify. */
  const char *step_hint;      /* the range's full name (owned by the trace) */
  uint32_t step_hint_kind;    /* TBE_EV_NVTX_RANGE or TBE_EV_USER_ANNOTATION */
  uint64_t step_hint_count;   /* its top-level calls on that thread */
  int64_t step_hint_ns;       /* their total time */
  /* Hardware metrics: the PM metric names (counter tracks of GPUs) and
   * the kernel figure names, in the order described at tbe_metric_mean
   * (owned by the trace); 0 and NULL when the trace has none. */
  const char **gpu_metrics;
  size_t ngpu_metrics;
  const char **kernel_metrics;
  size_t nkernel_metrics;
  /* GPU work attributed to operators (tbe_name_stats.kernels): how many
   * activities and their GPU time; 0 when the trace has no operators or
   * none launched anything. */
  uint64_t op_gpu_count;
  int64_t op_gpu_ns;
  /* The launch sequence: the kernels of one representative step in the
   * order they were launched (by the launching call's start, else their
   * own; ties by start on the GPU), one entry per launch, as the labels of
   * groups[TBE_GROUP_KERNEL]; at most TBE_LAUNCH_SEQ_MAX, the first ones.
   * The step is the one of median duration among the steps that launched
   * kernels (the lower middle, then the earliest); without steps, the
   * whole window.  A run's merged analysis has its first host's that has
   * one.  NULL and 0 without kernels.  It is where a kernel sits in the
   * program, what tbe_diff_create aligns to pair kernels that replaced
   * each other. */
  const char **launch_seq;
  size_t nlaunch_seq;
  /* Private. */
  tbe_allocator alloc_;
  void *priv_;
} tbe_analysis;

/* The longest launch sequence an analysis keeps (tbe_analysis.launch_seq). */
#define TBE_LAUNCH_SEQ_MAX 2048

/* A range must cover this share of the wall time (%) to be a step hint. */
#define TBE_STEP_HINT_MIN_PCT 10

/* Analyses a finished trace (tbe_trace_finish done).  `a` may be NULL.
 * Allocates O(events of a kind) scratch once, never per event.  Returns 0,
 * TBE_EINVAL (NULL argument) or TBE_ENOMEM; on failure *out is NULL. */
TBE_API int tbe_analysis_create(tbe_analysis **out, const tbe_trace *t, const tbe_allocator *a);
/* Frees an analysis (NULL is a no-op).  The trace is not touched. */
TBE_API void tbe_analysis_free(tbe_analysis *an);
/* Re-sorts one name table by `key` as tbe_analysis_sort_key resolves it;
 * ties break by total, then by name, then by shapes. */
TBE_API void tbe_analysis_sort(tbe_analysis *an, tbe_group_kind g, tbe_sort_key key);
/* The key tbe_analysis_sort applies to table g of `an` for `key`:
 * TBE_SORT_DEFAULT and the CUDA keys resolved as tbe_sort_key says (a
 * value out of range reads as TBE_SORT_TOTAL). */
TBE_API tbe_sort_key tbe_analysis_sort_key(const tbe_analysis *an, tbe_group_kind g,
                                           tbe_sort_key key);
/* Returns the static name "kernels", "cpu_ops", "ranges" or
 * "cpu_ops_by_shape". */
TBE_API const char *tbe_group_name(tbe_group_kind g);

/* One name in a comparison. */
typedef struct tbe_diff_entry {
  const char *name;      /* full name (owned by one of the traces) */
  int present;           /* bit 0: in base, bit 1: in new (3 also for a
                            replaced kernel: see replaced_by) */
  uint64_t calls[2];     /* [0] base, [1] new */
  int64_t total_ns[2];
  int64_t delta_ns;      /* new total - base total */
  double ratio;          /* new total / base total; 0 when absent from base */
  /* This name's time per step on each side (names on both sides of
   * traces that both have steps; verdict TBE_NOISE_NONE otherwise). */
  tbe_step_compare steps;
  /* Operator tables: the input shapes (TBE_GROUP_CPU_OP_SHAPE, else
   * NULL), the CUDA total on each side, its change and its time per step
   * compared as `steps` is (a false discovery rate of its own over the
   * table). */
  const char *shapes;
  int64_t cuda_ns[2];
  int64_t cuda_delta_ns;
  tbe_step_compare cuda_steps;
  /* Kernels: a name only in base whose place a name only in new took (the
   * rule is at tbe_diff_create): the new name, NULL otherwise.  Such an
   * entry is one row for both: `name` is the base's, and calls[1],
   * total_ns[1], delta, ratio and the per-step comparison are the new
   * name's against it. */
  const char *replaced_by;
} tbe_diff_entry;

typedef struct tbe_diff {
  const tbe_analysis *side[2];   /* borrowed: [0] base, [1] new */
  /* Sorted by |delta_ns| descending (ties by name, then shapes), except
   * the operator tables when op_cuda: by |cuda_delta_ns|. */
  tbe_diff_entry *entries[TBE_GROUP__COUNT];
  size_t nentries[TBE_GROUP__COUNT];
  size_t added[TBE_GROUP__COUNT];    /* names only in new, not replacing one */
  size_t removed[TBE_GROUP__COUNT];  /* names only in base, not replaced */
  size_t replaced[TBE_GROUP__COUNT]; /* entries with replaced_by (kernels) */
  /* Overall figures. */
  int64_t wall_ns[2];
  int64_t kernel_ns[2];
  int64_t busy_ns[2];
  size_t nsteps[2];
  int64_t step_median_ns[2];   /* -1 without steps (= steps.dist[s].median_ns) */
  tbe_step_compare steps;      /* the step durations of the two sides */
  int op_cuda;                 /* a side attributes GPU work to operators */
  tbe_allocator alloc_;
} tbe_diff;

/* Compares two analyses.  Names are matched by label (and shapes).  Of
 * the kernels left on one side only, a kernel only in base and one only
 * in new are paired as "replaced by" (one entry, replaced_by set) when
 * they are of the same kernel class, launched by the same operator where
 * both sides know it (tbe_name_stats.launch_op), and at the same place of
 * the two launch sequences (tbe_analysis.launch_seq, aligned as a longest
 * common subsequence in which the kernels of both sides anchor the
 * candidates between them; pairs one to one by the number of places they
 * share).  `a` may be NULL.  Returns 0, TBE_EINVAL or TBE_ENOMEM. */
TBE_API int tbe_diff_create(tbe_diff **out, const tbe_analysis *base, const tbe_analysis *newer,
                            const tbe_allocator *a);
TBE_API void tbe_diff_free(tbe_diff *d);

/* ---- a comparison as a gate (`tbexport diff --fail-if`) ----
 *
 * A condition on how one figure changed from base to new, which a CI job
 * checks as it checks tests: it "fires" only when the change passes the
 * threshold AND lies beyond the steps' own noise (the rank test of
 * tbe_noise on the figure's per-step values, at TBE_NOISE_ALPHA), so that
 * a noisy benchmark does not fail a build by chance.  The language, one
 * condition per string:
 *
 *   FIGURE OP CHANGE
 *   FIGURE  step_median        the step time
 *           kernel_time        GPU time in kernels, per step
 *           gpu_busy           the share of the step the GPUs were busy (%)
 *           kernel:NAME        a kernel's GPU time per step
 *           class:CLASS        a kernel class's (gemm, conv, attention,
 *                              elementwise, reduction, norm, softmax, copy,
 *                              comm, other)
 *           op:NAME            an operator's (its CUDA total when the
 *                              comparison has GPU work attributed to
 *                              operators, else its CPU total)
 *           range:NAME         an NVTX range's or annotation's
 *   OP      >  >=  <  <=       > fires on a change above CHANGE, < below it
 *   CHANGE  [+|-]NUMBER UNIT   % of base (relative), or an absolute time:
 *                              ns, us, ms, s; for gpu_busy also pp
 *                              (percentage points); no sign reads as +
 *
 * e.g. "step_median > +5%", "kernel:nvjet* > +10%", "class:gemm > +2ms",
 * "gpu_busy < -3pp", "peak_allocated > +10%", "peak_reserved > +512MiB"
 * (the memory curve's peak per step: B, KiB, MiB, GiB).  The figure compared is the median over steps of the
 * per-step values (what the diff's "step b/n" columns show).  NAME matches
 * a name or its short form (tbe_name_shorten) exactly, or as a pattern
 * when it holds * (any run of characters) or ? (one character); the
 * names it matches are summed step by step.  A kernel that was replaced
 * (tbe_diff_entry.replaced_by) counts on the new side as its replacement,
 * under either name.  Whitespace around OP is optional, except that a
 * NAME holding '<' or '>' needs a space before OP. */
typedef enum tbe_gate_figure {
  TBE_GATE_STEP_MEDIAN = 0,
  TBE_GATE_KERNEL_TIME = 1,
  TBE_GATE_GPU_BUSY = 2,
  TBE_GATE_KERNEL = 3,
  TBE_GATE_CLASS = 4,
  TBE_GATE_OP = 5,
  TBE_GATE_RANGE = 6,
  TBE_GATE_PEAK_ALLOCATED = 7, /* peak_allocated: the memory curve's, per step (bytes) */
  TBE_GATE_PEAK_RESERVED = 8   /* peak_reserved */
} tbe_gate_figure;

typedef enum tbe_gate_unit {
  TBE_GATE_PCT = 0,   /* % of the base figure */
  TBE_GATE_NS = 1,    /* an absolute time */
  TBE_GATE_POINTS = 2, /* percentage points (gpu_busy) */
  TBE_GATE_BYTES = 3   /* an amount of memory (peak_allocated, peak_reserved) */
} tbe_gate_unit;

/* The longest NAME of a condition (bytes). */
#define TBE_GATE_NAME_MAX 4096

typedef struct tbe_gate {
  uint32_t figure;                   /* tbe_gate_figure */
  char name[TBE_GATE_NAME_MAX];      /* kernel:, op:, range: the NAME; class: the class's word */
  uint32_t kclass;                   /* class: its tbe_kernel_class */
  int above;                         /* 1: > or >=; 0: < or <= */
  int or_equal;                      /* >= or <= */
  uint32_t unit;                     /* tbe_gate_unit */
  double threshold;                  /* in the unit; ns for TBE_GATE_NS */
  char text[TBE_GATE_NAME_MAX + 64]; /* the condition, spaces trimmed */
} tbe_gate;

/* Parses one condition.  Returns 0, or TBE_EPARSE with a one-line reason
 * in err (size bytes; may be NULL): an unknown figure or class, a missing
 * or malformed CHANGE, a unit the figure does not take, a NAME too long. */
TBE_API int tbe_gate_parse(tbe_gate *g, const char *text, char *err, size_t size);

typedef enum tbe_gate_outcome {
  TBE_GATE_PASS = 0,    /* the change does not pass the threshold */
  TBE_GATE_NOISE = 1,   /* it passes, but within the steps' own noise */
  TBE_GATE_FIRE = 2,    /* it passes, beyond the noise: the condition fires */
  TBE_GATE_UNJUDGED = 3 /* it passes, and a side has too few steps (fewer
                            than TBE_NOISE_MIN_STEPS, or none, or no
                            per-step figures) to tell */
} tbe_gate_outcome;

typedef struct tbe_gate_result {
  uint32_t outcome;       /* tbe_gate_outcome */
  int per_step;           /* the values are medians per step (else the
                                whole traces' totals: a side without steps) */
  double value[2];        /* the figure on each side: ns, or % for gpu_busy */
  double change;          /* new - base in the condition's unit (+-inf
                                for a % change from 0) */
  tbe_step_compare steps; /* the per-step values compared */
  size_t names[2];        /* kernel:, op:, range: names matched per side */
  size_t nsteps[2];       /* steps per side */
} tbe_gate_result;

/* Evaluates a parsed condition on a comparison (of two traces, or a run
 * comparison's total).  Returns 0; TBE_ENAME when NAME matches no name on
 * either side (r->names both 0); TBE_EINVAL; TBE_ENOMEM. */
TBE_API int tbe_gate_eval(const tbe_gate *g, const tbe_diff *d, tbe_gate_result *r,
                          const tbe_allocator *a);
/* One line (no newline) saying what the condition found, figures
 * included: "step_median > +5%: median step 12.156ms -> 13.073ms (+7.5%),
 * beyond the steps' own noise (Mann-Whitney p < 0.001 over 20 and 20
 * steps): fires".  Returns the length (snprintf-style). */
TBE_API size_t tbe_gate_describe(const tbe_gate *g, const tbe_gate_result *r, char *buf,
                                 size_t size);

/* ---- runs of several hosts ---- */

/* One host (one trace file) of a run. */
typedef struct tbe_run_host {
  tbe_analysis *an;   /* borrowed */
  const char *label;  /* the caller's name for it (the host part of the file
                         name: "a", "node3_pid682"), else an->host */
  size_t index;       /* its position in the array given to create */
  uint32_t outlier;   /* 1 when its figure is an outlier of the run (below) */
} tbe_run_host;

/* The distribution of one figure over the hosts of a run, by nearest rank:
 * the p-th percentile of n sorted values is the ceil(p n / 100)-th, so
 * each is some host's own figure (p50 of 4 hosts is the 2nd).  n = 0 and
 * all -1 with fewer than two hosts. */
typedef struct tbe_run_spread {
  size_t n;
  int64_t min_ns, p50_ns, p90_ns, max_ns;
} tbe_run_spread;

/* A host's figure is an outlier when the run has at least
 * TBE_RUN_OUTLIER_MIN_HOSTS hosts and the figure lies farther from the
 * hosts' median (figure_dist.p50_ns) than both TBE_RUN_OUTLIER_MADS scaled
 * median absolute deviations (1.4826 x the median of |figure - median|,
 * the standard deviation of a normal sample, robust to the outliers
 * themselves) and TBE_RUN_OUTLIER_MIN_PCT % of the median (so that ranks
 * that all run alike, MAD near 0, do not flag microseconds). */
#define TBE_RUN_OUTLIER_MIN_HOSTS 5
#define TBE_RUN_OUTLIER_MADS 3.0
#define TBE_RUN_OUTLIER_MIN_PCT 2.0

/* The figure that orders hosts from slowest to fastest. */
typedef enum tbe_run_figure {
  TBE_RUN_BY_NONE = 0,         /* fewer than two hosts */
  TBE_RUN_BY_STEP_MEDIAN = 1,  /* every host has steps: the median step time */
  TBE_RUN_BY_WALL = 2          /* else: the wall time (ties: GPU busy time) */
} tbe_run_figure;

typedef struct tbe_run_analysis {
  /* Hosts, ordered by rank when every host has a distinct known rank
   * (by_rank), else by host name (the label without a trailing
   * "_pid<N>[_<k>]"), pid (the label's N, else the analysis's) and label. */
  tbe_run_host *hosts;
  size_t nhosts;
  int by_rank;
  /* The run in total.  One host: that host's analysis.  Several: a merged
   * analysis (trace NULL, no devices) whose name tables hold each name
   * once with calls, total, self, min and max over all hosts (matched by
   * label, so the order of hosts does not matter; the operators' GPU
   * figures add, their launched lists merge by name; the by-shape table,
   * matched by label and shapes, only when every host with operators has
   * one); whose steps are the step
   * numbers every host has, each with the slowest host's duration, the
   * earliest start and the sums of GPU busy, kernel time and kernels (per
   * name: the sum of the hosts' times in that step); and whose `all` sums
   * the hosts' `all` figures, wall_ns included (so busy_ns / wall_ns is the
   * GPU-busy share over all hosts; its launch median is -1: medians do
   * not add).  wall_ns of the analysis itself spans from the first start
   * to the last end (clocks of different machines may disagree), host_busy_ns
   * is the busiest thread anywhere; API, sync, overhead and drop counts are
   * sums.  Hardware metrics: the names of all hosts; all.metrics the hosts'
   * all-GPU PM means weighted by the windows of their GPUs that measured
   * them, a step's by the hosts' step times, kernel figures by launches
   * (samples add up), bound_by from the merged figures.  No advice of its
   * own (see the hosts').  Step hint: the one most hosts share (hint_hosts
   * of them).  Launch medians: -1 (medians do not add), launch_samples the
   * sum.  A kernel's launch_op: the first host's that knows one; the launch
   * sequence: the first host's that has one. */
  tbe_analysis *total;
  int64_t *step_fastest_ns;   /* per merged step: the fastest host's duration */
  size_t hint_hosts;
  /* Slowest and fastest host (indexes into hosts; -1 with fewer than two),
   * by `figure`; spread_ns = slowest_ns - fastest_ns. */
  uint32_t figure;            /* tbe_run_figure */
  long slowest, fastest;
  int64_t slowest_ns, fastest_ns, spread_ns;
  /* Across hosts (two or more; else n = 0): each host's `figure` value
   * and its communication time (kernel class comm: NCCL, NVSHMEM,
   * all-reduce kernels; all.class_ns[TBE_KCLASS_COMM]). */
  tbe_run_spread figure_dist;
  tbe_run_spread comm_dist;
  /* Host indexes from slowest to fastest by `figure` (ties in run order;
   * NULL with one host): the rows a compact report picks from. */
  long *order;
  size_t noutliers;           /* hosts with `outlier` set */
  /* Private. */
  tbe_allocator alloc_;
  void *priv_;
} tbe_run_analysis;

/* Aggregates n >= 1 analyses of the hosts of one run.  `labels` (may be
 * NULL, entries may be NULL) name them.  Linear in the names and steps of
 * all hosts (plus sorting the hosts).  `a` may be NULL.  Returns 0,
 * TBE_EINVAL or TBE_ENOMEM; on failure *out is NULL. */
TBE_API int tbe_run_analysis_create(tbe_run_analysis **out, tbe_analysis *const *an,
                                    const char *const *labels, size_t n, const tbe_allocator *a);
TBE_API void tbe_run_analysis_free(tbe_run_analysis *r);

/* One host in a comparison of two runs. */
typedef struct tbe_host_diff {
  long host[2];            /* index into each run's hosts; -1 when absent there */
  int64_t wall_ns[2];
  int64_t busy_ns[2];      /* the host's GPU busy time (any of its GPUs) */
  int64_t kernel_ns[2];
  int64_t comm_ns[2];      /* communication kernels (all.class_ns[TBE_KCLASS_COMM]) */
  tbe_step_compare steps;  /* the host's step durations */
  /* Median step time new - base, and that as % of base; 0 unless both
   * sides have steps (has_change). */
  int has_change;
  int64_t step_change_ns;
  double step_change_pct;
} tbe_host_diff;

typedef struct tbe_run_diff {
  const tbe_run_analysis *side[2];  /* borrowed: [0] base, [1] new */
  tbe_diff *total;                  /* the two runs' totals, compared as two traces are */
  /* Hosts matched by rank when both runs are by_rank, else by host name
   * (hosts of the same name paired in order of pid): the matched pairs in
   * the base run's order, then hosts only in base, then only in new. */
  tbe_host_diff *hosts;
  size_t nhosts;
  int by_rank;
  size_t matched;
  size_t only[2];                   /* hosts only in base, only in new */
  /* step_change_ns over the pairs that have one (n = 0: none), and the
   * pair indexes ordered by how much they changed: pairs with a change by
   * |step_change_ns| descending, then the other matched pairs by |wall
   * change| descending, then the unmatched, each in pair order; ties in
   * pair order.  NULL when there are no pairs. */
  tbe_run_spread change_dist;
  long *order;
  tbe_allocator alloc_;
} tbe_run_diff;

/* Compares two runs.  `a` may be NULL.  Returns 0, TBE_EINVAL or
 * TBE_ENOMEM. */
TBE_API int tbe_run_diff_create(tbe_run_diff **out, const tbe_run_analysis *base,
                                const tbe_run_analysis *newer, const tbe_allocator *a);
TBE_API void tbe_run_diff_free(tbe_run_diff *d);

typedef enum tbe_report_format {
  TBE_REPORT_TABLE = 0,
  TBE_REPORT_CSV = 1,
  TBE_REPORT_JSON = 2,
  TBE_REPORT_MARKDOWN = 3
} tbe_report_format;

/* How the reports show the operator table. */
typedef enum tbe_group_by {
  TBE_GROUP_BY_NAME = 0,   /* one row per operator name (TBE_GROUP_CPU_OP) */
  TBE_GROUP_BY_SHAPE = 1   /* one row per name and input shapes
                              (TBE_GROUP_CPU_OP_SHAPE), when the trace has them */
} tbe_group_by;

typedef struct tbe_report_options {
  size_t size;         /* sizeof the struct: set by tbe_report_options_init (common.h) */
  int format;          /* tbe_report_format */
  int sort;            /* tbe_sort_key (summary only; diff sorts by |delta|) */
  size_t top;          /* rows per name table; 0 = all */
  int wide;            /* full names instead of shortened ones */
  int width;           /* table width in columns; default 100 */
  const char *label[2];/* diff: names of base and new (NULL: "base", "new");
                          summary: label[0] is the title (may be NULL) */
  const tbe_allocator *allocator;
  int group_by;        /* tbe_group_by */
} tbe_report_options;

/* Fills `o` with the defaults: table, TBE_SORT_DEFAULT, top 10, width 100,
 * operators by name. */
TBE_API void tbe_report_options_init_sized(tbe_report_options *o, size_t size);
#define tbe_report_options_init(o) tbe_report_options_init_sized((o), sizeof(tbe_report_options))
/* Renders a summary (sorting its tables by o->sort, hence non-const).
 * On success *out is a NUL-terminated string of *len bytes, freed with
 * tbe_report_free.  Returns 0, TBE_EINVAL or TBE_ENOMEM. */
TBE_API int tbe_report_summary(tbe_analysis *an, const tbe_report_options *o, char **out,
                               size_t *len);
TBE_API int tbe_report_diff(const tbe_diff *d, const tbe_report_options *o, char **out,
                            size_t *len);
/* Renders a run (one host: exactly tbe_report_summary of that host) and a
 * comparison of two runs (one host on each side: exactly tbe_report_diff).
 * When every host has a distinct rank, the hosts are a table of ranks
 * (rank, host, median step time, GPU busy %, kernel time, comm time) and
 * a diff compares rank by rank (median step time on each side and its
 * change, comm time).  The table and Markdown forms stay compact: up to 32
 * hosts (or pairs) every one; beyond, the 5 slowest, the 5 fastest and up
 * to 10 outliers (a diff: the 10 pairs whose step time changed most), a
 * line per gap, and the distributions over all hosts; CSV and JSON hold
 * every host.  Same contract as above; summary sorts the name tables,
 * hence non-const. */
TBE_API int tbe_report_run(tbe_run_analysis *r, const tbe_report_options *o, char **out,
                           size_t *len);
TBE_API int tbe_report_run_diff(const tbe_run_diff *d, const tbe_report_options *o,
                                char **out, size_t *len);
/* Frees a report string with the allocator it was made with. */
TBE_API void tbe_report_free(char *s, size_t len, const tbe_allocator *a);

/* Writes the comparison into TensorBoard: an event file in `run_dir`
 * ("<logdir>/<new run>") holding, under "diff/<base_label>/", the
 * Markdown report of the top `top` names per table as text ("report") and
 * the new/base ratios as scalars at step 0 ("wall_time_ratio",
 * "gpu_busy_ratio", "kernel_time_ratio", "step_time_ratio" when both sides
 * have steps, and "kernels/<tag>" for matched kernels, with the tags of the run
 * summary: the short name, plus a hash of the full name unless the name
 * is a tag as it is).  The file,
 * events.out.tfevents.<ts>.<base_label>.tbexport-diff, replaces the one an
 * earlier comparison against the same base wrote there.  It is placed
 * like tbe_export_run's outputs (tbexport/export.h): the log dir part of
 * `run_dir` is the caller's (symlinks followed), the run folder, its last
 * component, must pass tbe_name_check and is never a symlink (-ELOOP);
 * the file is complete under its name or absent, and the run lock is
 * held while it is written.  `base_label` must pass tbe_name_check.
 * `host` (NULL: this machine) is checked like a host name and no longer
 * part of the file name.  When `path` is not NULL, the file's path is
 * copied there (size bytes), or on failure the path the failure concerns
 * ("" if none: pass both to tbe_export_strerror).  Returns 0 or a
 * negative code. */
TBE_API int tbe_diff_write_events(const tbe_diff *d, const char *run_dir, const char *base_label,
                                  const char *new_label, size_t top, const char *host,
                                  char *path, size_t size);
/* The same for two runs: the ratios of the totals (d->total), and as
 * "report" the Markdown of tbe_report_run_diff. */
TBE_API int tbe_run_diff_write_events(const tbe_run_diff *d, const char *run_dir,
                                      const char *base_label, const char *new_label, size_t top,
                                      const char *host, char *path, size_t size);

/* ---- the persisted analysis ----
 *
 * One host's analysis as a file of its own (proto/tbexport/analysis.proto),
 * written by tbe_export_run beside the trace files it describes as
 * <logdir>/plugins/profile/<run>/<host>.analysis.pb, so that a summary or a
 * comparison reads kilobytes instead of re-importing the trace.  It holds
 * every figure the reports print, in every format, and what they read from
 * the trace itself (host name, warnings, device names): a loaded analysis
 * renders byte for byte the report of the analysis it was saved from.
 *
 * A loaded analysis owns a small trace of its own (an->trace), holding only
 * those strings: no events, no tracks.  Code that reads an analysis's
 * figures and names works unchanged; code that walks an->trace's events
 * finds none.
 *
 * The file says which code computed it and which trace files it was
 * computed from, so that a reader can tell a current analysis from a
 * stale one:
 *   - the analysis version (tbe_analysis_version(): a number the library
 *     raises whenever the figures an import and analysis give for the same
 *     trace change; test_analysis_version fails until it is raised), so an
 *     analysis of older code is never taken for today's;
 *   - each trace file's key: its name in the folder, its size and the
 *     CRC32C of its first and of its last TBE_ANALYSIS_KEY_SPAN bytes, not
 *     its mtime, so a copy (cp -r, tar, rsync) keeps the analysis current,
 *     and a rewrite, even of the same size, is seen wherever its head or
 *     tail differ.  Blind spot: a same-size change confined to the middle
 *     of a file over twice the span (a gzip trace's last 8 bytes are the
 *     CRC and length of all its content, so only a plain JSON or an XSpace
 *     can change there unseen).
 * The library records and returns them; the caller compares (the CLI:
 * the version with tbe_analysis_version(), the key with
 * tbe_analysis_source_key of the file it would otherwise import).
 *
 * Files are read like every file below a log dir: tbe_analysis_read opens
 * them without following symlinks below the directory given, without
 * blocking (a FIFO is refused, not waited on) and refuses a file over
 * TBE_ANALYSIS_FILE_MAX at its size, before reading it. */

/* The file format's version: changes only on an incompatible change (the
 * rules are in proto/tbexport/analysis.proto).  A reader refuses files of
 * any other version. */
#define TBE_ANALYSIS_FORMAT_VERSION 1
/* The file name suffix after the host name. */
#define TBE_ANALYSIS_SUFFIX ".analysis.pb"
/* The largest analysis file: tbe_analysis_save refuses to make a larger
 * one (TBE_ETOOBIG) and the readers refuse one at its size.  Real ones
 * are a few KB; a trace of thousands of names and steps, a few MB. */
#define TBE_ANALYSIS_FILE_MAX ((uint64_t)64 << 20)
/* A trace file's key covers this many bytes at its start and at its end. */
#define TBE_ANALYSIS_KEY_SPAN 65536

/* A trace file an analysis was computed from. */
typedef struct tbe_analysis_source {
  const char *name;     /* its name in the same folder (no '/') */
  uint64_t size;        /* bytes */
  int64_t mtime_ns;     /* modification time, ns since the epoch: recorded
                           for information, not part of the key */
  uint32_t head_crc32c; /* CRC32C of its first min(size, TBE_ANALYSIS_KEY_SPAN) bytes */
  uint32_t tail_crc32c; /* CRC32C of its last min(size, TBE_ANALYSIS_KEY_SPAN) bytes */
} tbe_analysis_source;

/* What a file says about itself. */
typedef struct tbe_analysis_stamp {
  uint32_t version;                    /* TBE_ANALYSIS_FORMAT_VERSION */
  const char *producer;                /* "tbexport 0.1.0" */
  const tbe_analysis_source *sources;  /* nsources entries */
  size_t nsources;
  /* Its writer's tbe_analysis_version(); 0: written before there was one. */
  uint32_t analysis_version;
} tbe_analysis_stamp;

/* Why a file did not load: the byte offset in the file of what is wrong
 * (UINT64_MAX when no byte is at fault: a count, a missing field) and one
 * line naming the field, without the offset ("field
 * Analysis.steps[3].class_ns: 9 entries, expected 10", "field
 * Analysis.devices has wire type 0, expected 2"). */
typedef struct tbe_analysis_load_error {
  uint64_t offset;
  char message[256];
} tbe_analysis_load_error;

/* The analysis version of this library: what tbe_analysis_save writes
 * into every file, and what a current file must carry. */
TBE_API uint32_t tbe_analysis_version(void);

/* Serializes `an` with the given sources into a new buffer (*out, *len:
 * freed with tbe_analysis_save_free), stamped with this format and
 * analysis version.  `an` is not changed (its tables are saved in their
 * current order).  `a` may be NULL.  Returns 0, TBE_EINVAL (NULL argument,
 * a source without a name), TBE_ETOOBIG (more than TBE_ANALYSIS_FILE_MAX
 * bytes) or TBE_ENOMEM. */
TBE_API int tbe_analysis_save(const tbe_analysis *an, const tbe_analysis_source *sources,
                              size_t nsources, void **out, size_t *len, const tbe_allocator *a);
TBE_API void tbe_analysis_save_free(void *buf, size_t len, const tbe_allocator *a);

/* Reads a file tbe_analysis_save wrote, treating it as hostile: every
 * length, count, enum value and string is checked (per-step arrays of
 * exactly nsteps entries, per-enum arrays of exactly the enum's count,
 * text without NUL bytes and within the model's sizes), and every figure
 * as an importer checks a trace's (times within the model's +-(2^62 - 1)
 * ns and windows ending inside it, durations >= 0, latencies >= -1,
 * counts that fit int64_t, finite means and advice figures), before
 * anything is trusted.  On success *out is a new analysis (free with
 * tbe_analysis_free), its name tables in the saved order, and `stamp`
 * (may be NULL) points into it.  `a` may be NULL; `err` may be NULL.
 * Returns 0; TBE_EFORMAT for a file of another format version (stamp
 * version set, producer NULL, when stamp is given); TBE_ECORRUPT with
 * err naming the byte or field; TBE_ETOOBIG (more than
 * TBE_ANALYSIS_FILE_MAX bytes); TBE_EINVAL; TBE_ENOMEM.  Never aborts. */
TBE_API int tbe_analysis_load(tbe_analysis **out, tbe_analysis_stamp *stamp, const void *data,
                              size_t n, const tbe_allocator *a, tbe_analysis_load_error *err);

/* Reads and loads the analysis file `base`/`rel` (e.g. a log dir and
 * "plugins/profile/RUN/HOST.analysis.pb"; `rel` NULL: `base` is the
 * file).  `base` is the caller's (symlinks in it are followed); no
 * component of `rel` is followed when it is a symlink (-ELOOP); the open
 * never blocks and anything but a regular file is refused (TBE_ENOTREG,
 * -EISDIR), and so is a file over TBE_ANALYSIS_FILE_MAX bytes
 * (TBE_ETOOBIG), before a byte is read.  Returns 0 or tbe_analysis_load's
 * codes (err as there), or a refusal of the file itself: -ENOENT when
 * there is none, else -ELOOP, -ENOTDIR, TBE_ENOTREG, -EISDIR, TBE_ETOOBIG
 * or another -errno, with err->message a whole line naming the path
 * concerned ("LOGDIR/plugins/profile/r/h.analysis.pb is not a regular
 * file"). */
TBE_API int tbe_analysis_read(tbe_analysis **out, tbe_analysis_stamp *stamp, const char *base,
                              const char *rel, const tbe_allocator *a,
                              tbe_analysis_load_error *err);

/* The key of the trace file `base`/`rel` as an analysis records it: size,
 * mtime and the CRC32C of its head and tail (src->name is left as it
 * is).  Opened under tbe_analysis_read's rules (`rel` NULL: `base` is the
 * file); reads at most 2 * TBE_ANALYSIS_KEY_SPAN bytes.  Returns 0, or
 * -ENOENT, -ELOOP, TBE_ENOTREG, ... as tbe_analysis_read. */
TBE_API int tbe_analysis_source_key(tbe_analysis_source *src, const char *base, const char *rel);

/* Names. */
/* Writes a readable form of a kernel or operator name of at most `width`
 * bytes (0: no limit) into `buf`: without return type and parameter list,
 * and when too long without namespaces, then with nested template
 * arguments elided ("<…>" written "<...>"), then cut with "...".  A
 * mangled name is demangled first (names in a finished trace already are).
 * Returns the length written. */
TBE_API size_t tbe_name_shorten(const char *name, size_t width, char *buf, size_t size);


/* The class of a kernel name (demangled or not: "_Z…" names are
 * demangled first).  NULL or "" is TBE_KCLASS_OTHER. */
TBE_API tbe_kernel_class tbe_kernel_class_of(const char *name);
/* "gemm", "conv", "attention", "elementwise", "reduction", "norm",
 * "softmax", "copy", "comm", "other" (a tag component and a column
 * name); "?" for a value out of range. */
TBE_API const char *tbe_kernel_class_name(uint32_t k);

#undef TBE_API
#define TBE_API TBE__API_STABLE

#ifdef __cplusplus
}
#endif

#endif
