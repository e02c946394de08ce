/* analysis_advice.c: the advice lines of an analysis (tbexport/analysis.h,
 * tbe_advice): each a rule over the figures the analysis has computed
 * (GPU idle, short kernels, pageable copies, synchronization, dropped
 * records, and from the hardware metrics: SMs underfilled, tensor pipes
 * idle under GEMMs, a kernel at DRAM's peak, a kernel at the SMs' or the
 * tensor pipes' peak; from the operator table: copy and cast operators
 * launching much of the GPU work, one operator owning most of the GPU time,
 * many tiny kernels under one operator; from the memory figures: a
 * leak, fragmentation), written with the figure that triggered it, so a
 * reader can check the reason.  The per-kernel rules read the range
 * profiler's figures where a kernel has them, else the PM samples taken
 * while it ran (when they resolve it: at least 2 per launch).  Runs last in tbe_analysis_create, on the
 * finished figures only: it reads no event. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/checked.h"
#include "tbexport/error.h"
#include "trace/analysis/analysis_int.h"
#include "trace/analysis/figures.h"

static void add_advice(tbe_analysis *an, tbe_advice *buf, tbe_advice_kind k, double fig,
                       const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void add_advice(tbe_analysis *an, tbe_advice *buf, tbe_advice_kind k, double fig,
                       const char *fmt, ...) {
  tbe_advice *ad = &buf[an->nadvice++];
  ad->kind = k;
  ad->figure = fig;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(ad->text, sizeof ad->text, fmt, ap);
  va_end(ap);
}

/* ---- from the hardware metrics ---- */

/* The PM mean of `name` in `m` (an->gpu_metrics), NAN without one. */
static double pm(const tbe_analysis *an, const tbe_metric_mean *m, const char *name) {
  for (size_t i = 0; m && i < an->ngpu_metrics; i++)
    if (strcmp(an->gpu_metrics[i], name) == 0) return m[i].samples ? m[i].mean : NAN;
  return NAN;
}

/* A kernel figure of entry `e`, NAN without one. */
static double kfig(const tbe_analysis *an, const tbe_name_stats *e, const char *name) {
  for (size_t i = 0; e->metrics && i < an->nkernel_metrics; i++)
    if (strcmp(an->kernel_metrics[i], name) == 0)
      return e->metrics[i].samples ? e->metrics[i].mean : NAN;
  return NAN;
}

/* Thresholds of the three rules below. */
#define UNDERFILL_BUSY_PCT 50.0   /* the GPU is busy at least this much */
#define UNDERFILL_RATIO 0.5       /* ... and its SMs active less than this share of it */
#define TENSOR_GEMM_SHARE_PCT 10.0 /* GEMMs take at least this share of kernel time */
#define TENSOR_IDLE_PCT 5.0       /* ... with the tensor pipes below this */
#define DRAM_PEAK_PCT 80.0        /* a kernel at or above this share of DRAM's peak */
#define COMPUTE_PEAK_PCT 80.0     /* a kernel at or above this share of the SMs' or the
                                   * tensor pipes' peak */
#define ADVICE_MAX 20             /* lines an analysis holds */

/* The PM mean of `name` while kernel entry e ran, NAN without one or when
 * its launches are too short for the sampling interval (under 2 samples
 * each: the interval's value is mostly other work's). */
static double pm_during(const tbe_analysis *an, const tbe_name_stats *e, const char *name) {
  if (!e->pm_metrics || !e->calls) return NAN;
  for (size_t i = 0; i < an->ngpu_metrics; i++)
    if (strcmp(an->gpu_metrics[i], name) == 0)
      return e->pm_metrics[i].samples >= 2 * e->calls ? e->pm_metrics[i].mean : NAN;
  return NAN;
}

static void metric_advice(tbe_analysis *an, tbe_advice *buf) {
  double wall = an->wall_ns > 0 ? (double)an->wall_ns : 1.0;
  /* SMs underfilled: per GPU, busy (any work queued) but SM active (a warp
   * resident on the SM) far lower, averaged over the same window. */
  for (size_t d = 0; d < an->ndevices && an->nadvice < ADVICE_MAX - 3; d++) {
    const tbe_device_stats *ds = &an->devices[d];
    double sm = pm(an, ds->metrics, "sm_active_pct");
    double busy = 100.0 * (double)ds->busy_ns / wall;
    if (isnan(sm) || busy < UNDERFILL_BUSY_PCT || sm >= UNDERFILL_RATIO * busy) continue;
    int32_t sms = 0;
    const tbe_trace *t = an->trace;
    for (size_t i = 0; t && i < t->ndevices; i++)
      if (t->devices[i].id == ds->device) sms = t->devices[i].sm_count;
    char fill[48] = "its SMs";
    if (sms > 0) snprintf(fill, sizeof fill, "its %d SMs", (int)sms);
    add_advice(an, buf, TBE_ADVICE_SM_UNDERFILLED, sm,
               "GPU %d busy %.0f%% but SM active %.0f%%: kernels too small or too short to fill "
               "%s; larger batches, fused kernels or CUDA graphs",
               (int)ds->device, busy, sm, fill);
  }
  /* Tensor pipes idle under GEMMs: the GEMMs' tensor-pipe figure weighted
   * by their time, else the GPUs' tensor_active_pct. */
  const tbe_name_stats *k = an->groups[TBE_GROUP_KERNEL];
  int64_t gemm_ns = 0, kern_ns = 0, measured_ns = 0;
  double tensor_w = 0;
  for (size_t i = 0; i < an->ngroups[TBE_GROUP_KERNEL]; i++) {
    kern_ns = tbe__sat_add(kern_ns, k[i].total_ns);
    if (k[i].kclass != TBE_KCLASS_GEMM) continue;
    gemm_ns = tbe__sat_add(gemm_ns, k[i].total_ns);
    double tp = kfig(an, &k[i], "tensor_pipe_pct");
    if (isnan(tp)) continue;
    tensor_w += tp * (double)k[i].total_ns;
    measured_ns = tbe__sat_add(measured_ns, k[i].total_ns);
  }
  double share = kern_ns > 0 ? 100.0 * (double)gemm_ns / (double)kern_ns : 0;
  double tensor = measured_ns > 0 ? tensor_w / (double)measured_ns
                                  : pm(an, an->all.metrics, "tensor_active_pct");
  if (gemm_ns > 0 && share >= TENSOR_GEMM_SHARE_PCT && !isnan(tensor) &&
      tensor < TENSOR_IDLE_PCT && an->nadvice < ADVICE_MAX)
    add_advice(an, buf, TBE_ADVICE_TENSOR_IDLE, tensor,
               "GEMMs run with tensor pipes idle (%.1f%% %s, GEMMs %.0f%% of kernel time): fp32 "
               "without TF32; use bf16/TF32 (torch.backends.cuda.matmul.allow_tf32 = True)",
               tensor, measured_ns > 0 ? "tensor pipe" : "tensor active", share);
  /* Memory-bound: the kernel with the most time among those at or above
   * DRAM_PEAK_PCT of DRAM's peak (its range-profiler figure, else DRAM
   * read + write while it ran). */
  const tbe_name_stats *top = NULL;
  double top_dram = 0;
  for (size_t i = 0; i < an->ngroups[TBE_GROUP_KERNEL]; i++) {
    double dr = kfig(an, &k[i], "dram_throughput_pct");
    if (isnan(dr)) {
      double rd = pm_during(an, &k[i], "dram_read_pct"), wr = pm_during(an, &k[i], "dram_write_pct");
      if (!isnan(rd) || !isnan(wr)) dr = (isnan(rd) ? 0 : rd) + (isnan(wr) ? 0 : wr);
    }
    if (isnan(dr) || dr < DRAM_PEAK_PCT) continue;
    if (!top || k[i].total_ns > top->total_ns) top = &k[i], top_dram = dr;
  }
  if (top && an->nadvice < ADVICE_MAX)
    add_advice(an, buf, TBE_ADVICE_MEMORY_BOUND, top_dram,
               "DRAM at %.0f%% of peak during %.90s (%.1f%% of kernel time): memory-bound; fuse "
               "it with its neighbours or move fewer bytes",
               top_dram, top->label ? top->label : "",
               kern_ns > 0 ? 100.0 * (double)top->total_ns / (double)kern_ns : 0.0);
  /* Compute-bound: the kernel with the most time among those at or above
   * COMPUTE_PEAK_PCT: SM throughput or tensor pipe (range profiler, a
   * kernel it calls compute-bound), else tensor pipes active while it ran
   * (PM sampling has no FMA-pipe figure, and SM active only says a warp
   * was resident, which a memory-bound kernel's are too). */
  top = NULL;
  double top_sm = NAN, top_tensor = NAN, top_fig = 0;
  for (size_t i = 0; i < an->ngroups[TBE_GROUP_KERNEL]; i++) {
    double sm = NAN, tp = NAN, f;
    if (k[i].metrics) {
      if (k[i].bound_by != TBE_BOUND_COMPUTE) continue;
      sm = kfig(an, &k[i], "sm_throughput_pct");
      tp = kfig(an, &k[i], "tensor_pipe_pct");
      f = isnan(tp) || (!isnan(sm) && sm > tp) ? sm : tp;
    } else {
      tp = pm_during(an, &k[i], "tensor_active_pct");
      f = tp;
    }
    if (isnan(f) || f < COMPUTE_PEAK_PCT) continue;
    if (!top || k[i].total_ns > top->total_ns) top = &k[i], top_sm = sm, top_tensor = tp, top_fig = f;
  }
  if (top && an->nadvice < ADVICE_MAX) {
    char figs[96];
    if (!isnan(top_sm) && !isnan(top_tensor))
      snprintf(figs, sizeof figs, "SM throughput %.0f%%, tensor pipe %.0f%%", top_sm, top_tensor);
    else if (!isnan(top_sm))
      snprintf(figs, sizeof figs, "SM throughput %.0f%%", top_sm);
    else
      snprintf(figs, sizeof figs, "tensor pipes active %.0f%%", top_tensor);
    add_advice(an, buf, TBE_ADVICE_COMPUTE_BOUND, top_fig,
               "%s during %.80s (%.1f%% of kernel time): compute-bound, near the GPU's peak; "
               "gains come from less work or lower precision (bf16, fp8)",
               figs, top->label ? top->label : "",
               kern_ns > 0 ? 100.0 * (double)top->total_ns / (double)kern_ns : 0.0);
  }
}

/* ---- operators ----
 * Each rule reads the operator table (tbe_name_stats: kernels and self
 * CUDA are what an operator launched itself, so nothing is counted twice
 * over nested operators) against all the GPU work of the trace (kernels,
 * copies and memsets: N activities, T of GPU time):
 *   - copies and casts: the operators that cast or copy tensors
 *     (COPY_OPS) launched at least OP_COPIES_MIN activities on the device
 *     and OP_COPIES_PCT % of N (transfers to or from the host, which the
 *     copy-share rule speaks of, left out where their launched lists name
 *     them); named by the one of them that launched most;
 *   - one operator owns most of the GPU time: its self CUDA is at least
 *     OP_DOMINANT_PCT % of T, and at least one other operator launched
 *     GPU work (else there is nothing to compare it with);
 *   - many tiny kernels under one operator: at least OP_TINY_MIN
 *     launches, OP_TINY_PER_CALL per call, averaging under
 *     TBE_SHORT_KERNEL_NS, and OP_TINY_PCT % of N: a fusion candidate;
 *     the one with the most launches. */
#define OP_COPIES_MIN 20
#define OP_COPIES_PCT 20.0
#define OP_DOMINANT_PCT 50.0
#define OP_TINY_MIN 50
#define OP_TINY_PER_CALL 4
#define OP_TINY_PCT 10.0

static const char *const COPY_OPS[] = {"aten::copy_",      "aten::to",    "aten::_to_copy",
                                       "aten::contiguous", "aten::clone", "aten::type_as"};

static int is_copy_op(const char *name) {
  for (size_t i = 0; i < sizeof COPY_OPS / sizeof COPY_OPS[0]; i++)
    if (strcmp(name, COPY_OPS[i]) == 0) return 1;
  return 0;
}

/* An entry's launches on the device: all but the copies to or from the
 * host its list names ("Memcpy HtoD", "Memcpy DtoH", ...). */
static uint64_t device_launches(const tbe_name_stats *e) {
  uint64_t n = e->kernels;
  for (size_t k = 0; k < e->nlaunched; k++) {
    const char *l = e->launched[k].name;
    if (strncmp(l, "Memcpy ", 7) == 0 && strchr(l + 7, 'H'))
      n -= e->launched[k].calls < n ? e->launched[k].calls : n;
  }
  return n;
}

static void op_advice(tbe_analysis *an, tbe_advice *buf) {
  const tbe_device_stats *d = &an->all;
  uint64_t all = d->kernel_count + d->memset_count;
  int64_t gpu_ns = tbe__sat_add(d->kernel_ns, d->memset_ns);
  for (int k = 0; k < TBE_NCOPY_KINDS; k++) {
    all += d->memcpy_count[k];
    gpu_ns = tbe__sat_add(gpu_ns, d->memcpy_ns[k]);
  }
  const tbe_name_stats *ops = an->groups[TBE_GROUP_CPU_OP];
  size_t n = an->ngroups[TBE_GROUP_CPU_OP];
  if (!an->op_gpu_count || !all) return;
  const tbe_name_stats *copy_top = NULL, *dom = NULL, *tiny = NULL;
  uint64_t copies = 0, copy_top_n = 0, launching = 0;
  int64_t copy_ns = 0;
  for (size_t i = 0; i < n; i++) {
    const tbe_name_stats *e = &ops[i];
    launching += e->kernels > 0;
    if (is_copy_op(e->label)) {
      uint64_t dev = device_launches(e);
      copies += dev;
      copy_ns = tbe__sat_add(copy_ns, e->self_cuda_ns);
      if (dev > copy_top_n || (dev == copy_top_n && copy_top && dev &&
                               strcmp(e->label, copy_top->label) < 0))
        copy_top = e, copy_top_n = dev;
    }
    if (e->self_cuda_ns > 0 &&
        (!dom || e->self_cuda_ns > dom->self_cuda_ns ||
         (e->self_cuda_ns == dom->self_cuda_ns && strcmp(e->label, dom->label) < 0)))
      dom = e;
    if (e->kernels >= OP_TINY_MIN && e->calls && e->kernels >= OP_TINY_PER_CALL * e->calls &&
        e->self_cuda_ns / (int64_t)e->kernels < TBE_SHORT_KERNEL_NS &&
        100.0 * (double)e->kernels >= OP_TINY_PCT * (double)all &&
        (!tiny || e->kernels > tiny->kernels ||
         (e->kernels == tiny->kernels && strcmp(e->label, tiny->label) < 0)))
      tiny = e;
  }
  double pct = 100.0 * (double)copies / (double)all;
  if (copy_top && copies >= OP_COPIES_MIN && pct >= OP_COPIES_PCT && an->nadvice < ADVICE_MAX)
    add_advice(an, buf, TBE_ADVICE_OP_COPIES, pct,
               "%.80s launches %.1f%% of the GPU work with the other copy and cast operators (%llu "
               "of %llu kernels, copies and memsets; %.3f ms): dtype casts or layout copies; cast "
               "once outside the loop, keep one dtype and layout",
               copy_top->label, pct, (unsigned long long)copies, (unsigned long long)all,
               (double)copy_ns / 1e6);
  double share = dom && gpu_ns > 0 ? 100.0 * (double)dom->self_cuda_ns / (double)gpu_ns : 0;
  if (dom && launching >= 2 && share >= OP_DOMINANT_PCT && an->nadvice < ADVICE_MAX)
    add_advice(an, buf, TBE_ADVICE_OP_DOMINANT, share,
               "%.80s owns %.1f%% of the GPU time (%.3f of %.3f ms, %llu launches in %llu calls): "
               "the operator to speed up first",
               dom->label, share, (double)dom->self_cuda_ns / 1e6, (double)gpu_ns / 1e6,
               (unsigned long long)dom->kernels, (unsigned long long)dom->calls);
  if (tiny && an->nadvice < ADVICE_MAX) {
    double tp = 100.0 * (double)tiny->kernels / (double)all;
    add_advice(an, buf, TBE_ADVICE_OP_TINY, tp,
               "%.80s launches %.1f%% of the GPU work as %llu kernels of %.1f us on average (%.1f "
               "per call): a fusion candidate (torch.compile, fused or foreach optimizers, CUDA "
               "graphs)",
               tiny->label, tp, (unsigned long long)tiny->kernels,
               (double)tiny->self_cuda_ns / (double)tiny->kernels / 1e3,
               (double)tiny->kernels / (double)tiny->calls);
  }
}

/* ---- memory ---- */

/* A leak: at least LEAK_MIN_STEPS steps with an allocated value at their
 * end, most of them (more than half the step-to-step changes) higher than
 * the step before, a slope of LEAK_MIN_SLOPE bytes per step or more and a
 * total growth of at least LEAK_MIN_PCT % of the peak: one tensor (or a
 * graph) kept each step grows the curve by its size every step.
 * Fragmentation: at the allocated peak, the allocator reserves at least
 * FRAG_RATIO times what it hands out and FRAG_MIN_GAP bytes more: blocks
 * it holds but cannot split for the requests it gets. */
#define LEAK_MIN_STEPS 3
#define LEAK_MIN_SLOPE ((int64_t)1 << 20) /* 1 MiB */
#define LEAK_MIN_PCT 1.0
#define FRAG_RATIO 1.5
#define FRAG_MIN_GAP ((int64_t)1 << 30) /* 1 GiB */

static void memory_advice(tbe_analysis *an, tbe_advice *buf) {
  char x[32], y[64], z[32];
  const tbe__mem_trend *trend = ((const tbe__analysis_priv *)an->priv_)->mem_trend;
  for (size_t i = 0; trend && i < an->ndevices && an->nadvice < ADVICE_MAX; i++) {
    const tbe_device_stats *d = &an->devices[i];
    const tbe__mem_trend *tr = &trend[i];
    if (d->mem_peak_allocated <= 0) continue;
    if (tr->steps >= LEAK_MIN_STEPS && 2 * tr->grow_steps > tr->steps - 1 &&
        d->mem_growth_per_step != INT64_MIN && d->mem_growth_per_step >= LEAK_MIN_SLOPE &&
        100.0 * (double)tr->step_growth >= LEAK_MIN_PCT * (double)d->mem_peak_allocated) {
      tbe__fmt_bytes(x, sizeof x, d->mem_growth_per_step, 0);
      if (d->mem_unfreed > 0)
        snprintf(y, sizeof y, "never freed (%s by the end)",
                 tbe__fmt_bytes(z, sizeof z, d->mem_unfreed, 0));
      else
        snprintf(y, sizeof y, "(%s over the steps)",
                 tbe__fmt_bytes(z, sizeof z, tr->step_growth, 1));
      add_advice(an, buf, TBE_ADVICE_MEM_LEAK, (double)d->mem_growth_per_step,
                 "GPU %d: allocated grows %s per step over %llu steps, %s: a tensor kept each "
                 "step (a list, a history of losses with their graphs)",
                 (int)d->device, x, (unsigned long long)tr->steps, y);
    }
    int64_t res = tr->reserved_at_peak, gap = res - d->mem_peak_allocated;
    if (an->nadvice < ADVICE_MAX && res >= 0 &&
        (double)res >= FRAG_RATIO * (double)d->mem_peak_allocated && gap >= FRAG_MIN_GAP) {
      tbe__fmt_bytes(x, sizeof x, res, 0);
      tbe__fmt_bytes(y, sizeof y, d->mem_peak_allocated, 0);
      tbe__fmt_bytes(z, sizeof z, gap, 0);
      add_advice(an, buf, TBE_ADVICE_MEM_FRAGMENTED, (double)gap,
                 "GPU %d: reserved %s at the peak while allocated %s: the caching allocator "
                 "holds %s it cannot reuse; try PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
                 (int)d->device, x, y, z);
    }
  }
}

int tbe__analysis_advise(tbe_analysis *an) {
  tbe_advice *buf = tbe__calloc(&an->alloc_, ADVICE_MAX, sizeof *buf);
  if (!buf) return TBE_ENOMEM;
  an->advice = buf;
  const tbe_device_stats *all = &an->all;
  double wall = an->wall_ns > 0 ? (double)an->wall_ns : 1.0;
  double gpu_pct = 100.0 * (double)all->busy_ns / wall;
  double host_pct = 100.0 * (double)an->host_busy_ns / wall;
  /* Launch-bound: the GPU idles most of the time while the host thread
   * that feeds it is busy at least half the time and twice as busy as the
   * GPU.  Not from a run with the range profiler's figures: it replays
   * launches inside the launch call and slows the others (on the H200 a
   * GEMM loop so profiled read "GPU busy 14%, host 72%"), so the host's
   * share is the profiler's, not the program's. */
  if (all->kernel_count > 0 && gpu_pct < 50.0 && host_pct >= 50.0 && host_pct >= 2.0 * gpu_pct &&
      an->nkernel_metrics == 0)
    add_advice(an, buf, TBE_ADVICE_LAUNCH_BOUND, gpu_pct,
               "GPU busy only %.1f%% of the time while the busiest host thread is busy %.1f%%: "
               "launch-bound; consider CUDA graphs or kernel fusion",
               gpu_pct, host_pct);
  /* The GPU idles most of the wall and the traced host work (CUDA calls,
   * operators, ranges of the busiest thread) covers under a fifth of it:
   * the time goes to what was not traced.  Only where the host side was
   * traced at all (API calls), over a wall of 1 ms at least. */
  else if (all->kernel_count > 0 && an->api_calls > 0 && an->wall_ns >= 1000000 && gpu_pct < 50.0 &&
           host_pct < 20.0)
    add_advice(an, buf, TBE_ADVICE_UNTRACED, 100.0 - gpu_pct,
               "GPU idle %.1f%% of the time and traced host work busy only %.1f%%: the time is "
               "outside what was traced (data loading, Python, I/O); profile the host (py-spy, "
               "perf) or mark it with NVTX ranges",
               100.0 - gpu_pct, host_pct);
  if (all->kernel_count >= 10) {
    double pct = 100.0 * (double)all->short_kernels / (double)all->kernel_count;
    if (pct >= 30.0)
      add_advice(an, buf, TBE_ADVICE_SHORT_KERNELS, pct,
                 "%.1f%% of kernels (%llu of %llu) ran shorter than %d us: launch overhead "
                 "dominates; fuse them or use CUDA graphs",
                 pct, (unsigned long long)all->short_kernels,
                 (unsigned long long)all->kernel_count, TBE_SHORT_KERNEL_NS / 1000);
  }
  if (all->pageable_count > 0)
    add_advice(an, buf, TBE_ADVICE_PAGEABLE, (double)all->pageable_count,
               "%llu cop%s (%.3f ms) used pageable host memory: use pinned memory "
               "(pin_memory=True, cudaHostAlloc)",
               (unsigned long long)all->pageable_count, all->pageable_count == 1 ? "y" : "ies",
               (double)all->pageable_ns / 1e6);
  int64_t hd = tbe__sat_add(all->memcpy_ns[TBE_COPY_HTOD], all->memcpy_ns[TBE_COPY_DTOH]);
  if (all->busy_ns > 0 && hd > 0) {
    double pct = 100.0 * (double)hd / (double)all->busy_ns;
    if (pct >= 20.0)
      add_advice(an, buf, TBE_ADVICE_COPY_SHARE, pct,
                 "%.1f%% of GPU busy time is host<->device copies (%.3f ms): keep data on the "
                 "GPU, overlap copies with compute",
                 pct, (double)hd / 1e6);
  }
  if (an->sync_calls > 0) {
    double per_step = an->nsteps ? (double)an->sync_calls / (double)an->nsteps : 0;
    double share = 100.0 * (double)an->sync_call_ns / wall;
    /* "per step" only where there are steps */
    char rate[48] = "";
    if (an->nsteps) snprintf(rate, sizeof rate, "%.1f per step, ", per_step);
    if ((an->nsteps && per_step >= 5.0) || (!an->nsteps && an->sync_calls >= 20) || share >= 10.0)
      add_advice(an, buf, TBE_ADVICE_SYNC, (double)an->sync_calls,
                 "%llu synchronizations (%s%.1f%% of wall time%s): avoid .item(), "
                 ".cpu() and explicit synchronize in the loop",
                 (unsigned long long)an->sync_calls, rate, share,
                 /* several threads or streams wait at once */
                 share > 100.0 ? ", their times summed over threads and streams" : "");
  }
  if (an->dropped_records > 0 || an->ended_early) {
    uint64_t lost = an->dropped_records - an->out_of_range_records;
    char parts[256];
    int n = 0;
    if (lost)
      n += snprintf(parts + n, sizeof parts - (size_t)n,
                    "%llu records were dropped for lack of buffer space (raise --buffer-mb or "
                    "profile fewer steps)",
                    (unsigned long long)lost);
    if (an->out_of_range_records)
      n += snprintf(parts + n, sizeof parts - (size_t)n,
                    "%s%llu records had zero or inverted timestamps and were left out",
                    n ? "; " : "", (unsigned long long)an->out_of_range_records);
    if (an->ended_early)
      snprintf(parts + n, sizeof parts - (size_t)n, "%sthe capture ended early",
               n ? "; " : "");
    add_advice(an, buf, TBE_ADVICE_DROPPED, (double)an->dropped_records,
               "%s: the figures above undercount", parts);
  }
  memory_advice(an, buf);
  op_advice(an, buf);
  metric_advice(an, buf);
  return 0;
}
