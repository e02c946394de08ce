/* analysis_advice.c: the advice lines of an analysis (tbexport/analysis.h,
 * tbe_advice): each a rule over the figures the analysis has computed
 * (GPU idle, short kernels, pageable copies, synchronization, dropped
 * records, ...), written with the figure that triggered it, so a reader
 * can check the reason.  Runs last in tbe_analysis_create, on the
 * finished figures only: it reads no event. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/checked.h"
#include "tbexport/error.h"
#include "trace/analysis/analysis_int.h"

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

int tbe__analysis_advise(tbe_analysis *an) {
  tbe_advice *buf = tbe__calloc(&an->alloc_, 8, sizeof *buf);
  if (!buf) return TBE_ENOMEM;
  an->advice = buf;
  const tbe_device_stats *all = &an->all;
  double wall = an->wall_ns > 0 ? (double)an->wall_ns : 1.0;
  double gpu_pct = 100.0 * (double)all->busy_ns / wall;
  double host_pct = 100.0 * (double)an->host_busy_ns / wall;
  /* Launch-bound: the GPU idles most of the time while the host thread
   * that feeds it is busy at least half the time and twice as busy as the
   * GPU. */
  if (all->kernel_count > 0 && gpu_pct < 50.0 && host_pct >= 50.0 && host_pct >= 2.0 * gpu_pct)
    add_advice(an, buf, TBE_ADVICE_LAUNCH_BOUND, gpu_pct,
               "GPU busy only %.1f%% of the time while the busiest host thread is busy %.1f%%: "
               "launch-bound; consider CUDA graphs or kernel fusion",
               gpu_pct, host_pct);
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
    if ((an->nsteps && per_step >= 5.0) || (!an->nsteps && an->sync_calls >= 20) || share >= 10.0)
      add_advice(an, buf, TBE_ADVICE_SYNC, (double)an->sync_calls,
                 "%llu synchronizations (%.1f per step, %.1f%% of wall time): avoid .item(), "
                 ".cpu() and explicit synchronize in the loop",
                 (unsigned long long)an->sync_calls, per_step, share);
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
  return 0;
}
