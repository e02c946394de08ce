/* analysis_metrics.c: the hardware-metric figures of an analysis
 * (tbexport/analysis.h, tbe_metric_mean and tbe_bound): per GPU and per
 * step the time-weighted mean of each PM metric, per kernel name the
 * range profiler's figures and what bounds the kernel.
 *
 * PM means: a counter event holds its value from its start until the next
 * event of its track (tbexport/trace.h), so each event but the last of a
 * track is one interval; its weight is the part of the interval inside
 * the window (the analysis window for a device, the step's window for a
 * step).  mean = sum(value * weight) / sum(weight); a track whose
 * intervals have no length in the window (a lone event) gives the plain
 * mean of the values that lie in it.  A step's mean is over all GPUs'
 * intervals together, like the step's GPU busy time; so is `all`.
 *
 * PM means per kernel name (tbe_name_stats.pm_metrics): each launch on a
 * GPU with samples takes, from each metric track of that GPU, the
 * intervals it overlaps (found by bisection: the track is in time order),
 * each weighted by the overlap, into its name's sums.  Launches of one
 * stream never overlap each other; launches of several streams that run
 * at once each take the whole interval, as each was running then.
 *
 * Kernel figures: one kernel name measured on several devices gets the
 * launch-weighted mean of each metric (an entry with 0 launches weighs 1).
 *
 * Everything here is allocated in one block owned by the analysis
 * (tbe__analysis_metric_block) and reads only the trace's counter tracks
 * and kernel figures: a trace without them costs one pass over the tracks
 * and leaves every pointer NULL. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/checked.h"
#include "common/map.h"
#include "tbexport/error.h"
#include "trace/analysis/analysis_int.h"
#include "trace/model/memory_counters.h"

const char *tbe_bound_name(tbe_bound b) {
  switch (b) {
    case TBE_BOUND_COMPUTE: return "compute";
    case TBE_BOUND_MEMORY: return "memory";
    case TBE_BOUND_LATENCY: return "latency";
    case TBE_BOUND_LAUNCH: return "launch";
    default: return "";
  }
}

/* ---- the names ---- */

/* The names the issue gives, in its order: they come first. */
static const char *const known[] = {
    "sm_active_pct",       "occupancy_pct",          "tensor_active_pct",
    "dram_read_pct",       "dram_write_pct",         "pcie_rx_bytes_per_s",
    "pcie_tx_bytes_per_s", "nvlink_rx_bytes_per_s",  "nvlink_tx_bytes_per_s",
    "sm_clock_hz",         "dram_clock_hz",          "sm_throughput_pct",
    "mem_throughput_pct",  "achieved_occupancy_pct", "tensor_pipe_pct",
    "l2_hit_pct",          "dram_throughput_pct",    "duration_ns"};
#define NKNOWN (sizeof known / sizeof *known)

static size_t rank_of(const char *n) {
  for (size_t i = 0; i < NKNOWN; i++)
    if (strcmp(known[i], n) == 0) return i;
  return NKNOWN;
}

static int cmp_name(const void *x, const void *y) {
  const char *a = *(const char *const *)x, *b = *(const char *const *)y;
  size_t ra = rank_of(a), rb = rank_of(b);
  if (ra != rb) return ra < rb ? -1 : 1;
  return strcmp(a, b);
}

/* Adds `n` to names[0..*k) unless there. */
static void name_add(const char **names, size_t *k, const char *n) {
  for (size_t i = 0; i < *k; i++)
    if (names[i] == n || strcmp(names[i], n) == 0) return;
  names[(*k)++] = n;
}

static long name_index(const char *const *names, size_t k, const char *n) {
  for (size_t i = 0; i < k; i++)
    if (strcmp(names[i], n) == 0) return (long)i;
  return -1;
}

/* ---- PM means ---- */

/* Sums of one mean under construction. */
typedef struct acc {
  double vw, w, v;   /* sum(value * weight), sum(weight), sum(value) */
  uint64_t n, nw;    /* values, values with weight */
} acc;

static void acc_add(acc *a, double v, int64_t w) {
  if (w > 0) {
    a->vw += v * (double)w;
    a->w += (double)w;
    a->nw++;
  }
  a->v += v;
  a->n++;
}

static void acc_done(const acc *a, tbe_metric_mean *m) {
  if (a->nw) m->mean = a->vw / a->w, m->samples = a->nw;
  else if (a->n) m->mean = a->v / (double)a->n, m->samples = a->n;
}

/* Length of [a, b) inside [lo, hi). */
static int64_t overlap(int64_t a, int64_t b, int64_t lo, int64_t hi) {
  if (a < lo) a = lo;
  if (b > hi) b = hi;
  return b > a ? b - a : 0;
}

/* One metric track into the device's, all GPUs' and the steps' sums. */
static void pm_track(const tbe_analysis *an, const tbe_track *tr, acc *dev, acc *all,
                     acc *steps, size_t stride) {
  const tbe_trace *t = an->trace;
  int64_t wlo = an->start_ns, whi = tbe__sat_add(an->start_ns, an->wall_ns);
  size_t si = 0;
  for (uint32_t j = 0; j < tr->count; j++) {
    const tbe_event *e = &t->events[tr->first + j];
    const tbe_counter *c = tbe_trace_counter(t, e);
    if (!c || !isfinite(c->value)) continue;
    int64_t a = e->start_ns;
    int64_t b = j + 1 < tr->count ? t->events[tr->first + j + 1].start_ns : a;
    if (b > a) {
      int64_t w = overlap(a, b, wlo, whi);
      if (w > 0) {
        acc_add(dev, c->value, w);
        acc_add(all, c->value, w);
      }
    } else if (tr->count == 1 && a >= wlo && a <= whi) { /* a lone sample */
      acc_add(dev, c->value, 0);
      acc_add(all, c->value, 0);
    }
    if (!steps || b <= a) continue;
    /* steps tile the timeline in start order: skip those ending before a */
    while (si < an->nsteps && tbe__sat_add(an->steps[si].start_ns, an->steps[si].dur_ns) <= a) si++;
    for (size_t k = si; k < an->nsteps && an->steps[k].start_ns < b; k++) {
      int64_t w = overlap(a, b, an->steps[k].start_ns,
                          tbe__sat_add(an->steps[k].start_ns, an->steps[k].dur_ns));
      if (w > 0) acc_add(&steps[k * stride], c->value, w);
    }
  }
}

/* The last interval of metric track `mt` that starts at or before `ts`
 * (0 when none does). */
static uint32_t seek(const tbe_trace *t, const tbe_track *mt, int64_t ts) {
  uint32_t lo = 0, hi = mt->count;
  while (hi - lo > 1) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (t->events[mt->first + mid].start_ns <= ts) lo = mid;
    else hi = mid;
  }
  return lo;
}

/* Metric track `mt` (name index mi of nm) into the sums of the kernel
 * names launched on analysis device `dev` (kacc: a row of nm per kernel
 * entry, by the analysis's name slots). */
static void pm_kernels(const tbe_analysis *an, const tbe_track *mt, size_t mi, size_t nm,
                       int32_t dev, const uint32_t *kslot, const int32_t *track_dev, acc *kacc) {
  const tbe_trace *t = an->trace;
  if (mt->count < 2) return;
  for (size_t i = 0; i < t->ntracks; i++) {
    const tbe_track *tr = &t->tracks[i];
    if (track_dev[i] != dev || tbe_track_is_metric(tr)) continue;
    for (uint32_t k = 0; k < tr->count; k++) {
      const tbe_event *e = &t->events[tr->first + k];
      if (e->kind != TBE_EV_KERNEL || e->dur_ns <= 0) continue;
      uint32_t slot = kslot[e->name];
      if (slot == UINT32_MAX) continue;
      int64_t ks = e->start_ns, ke = tbe__sat_add(ks, e->dur_ns);
      for (uint32_t q = seek(t, mt, ks); q + 1 < mt->count; q++) {
        const tbe_event *s = &t->events[mt->first + q];
        if (s->start_ns >= ke) break;
        const tbe_counter *c = tbe_trace_counter(t, s);
        int64_t w = overlap(s->start_ns, t->events[mt->first + q + 1].start_ns, ks, ke);
        if (c && isfinite(c->value) && w > 0) acc_add(&kacc[(size_t)slot * nm + mi], c->value, w);
      }
    }
  }
}

/* ---- kernel figures ---- */

static double fig(const tbe_analysis *an, const tbe_metric_mean *m, const char *name) {
  long i = name_index(an->kernel_metrics, an->nkernel_metrics, name);
  return i >= 0 && m[i].samples ? m[i].mean : NAN;
}

static tbe_bound bound_of(const tbe_analysis *an, const tbe_name_stats *e, double busy_pct) {
  const tbe_metric_mean *m = e->metrics;
  /* Compute: the SM's busiest unit or the tensor pipe.  Memory: DRAM, the
   * roofline's memory axis; mem_throughput_pct only without it, since it
   * counts L1 and shared memory too, which a tiled GEMM saturates by
   * design (on the H200 an 8192^3 bf16 GEMM: memory 94.7%, DRAM 20.6%,
   * tensor 96.9%). */
  double sm = fig(an, m, "sm_throughput_pct"), tensor = fig(an, m, "tensor_pipe_pct");
  if (isnan(sm) || (!isnan(tensor) && tensor > sm)) sm = tensor;
  double mem = fig(an, m, "dram_throughput_pct");
  if (isnan(mem)) mem = fig(an, m, "mem_throughput_pct");
  if (isnan(sm) && isnan(mem)) return TBE_BOUND_NONE;
  if (isnan(sm)) sm = 0;
  if (isnan(mem)) mem = 0;
  if (sm >= TBE_BOUND_PEAK_PCT || mem >= TBE_BOUND_PEAK_PCT)
    return sm >= mem ? TBE_BOUND_COMPUTE : TBE_BOUND_MEMORY;
  double dur = fig(an, m, "duration_ns");
  if (isnan(dur) && e->calls) dur = (double)e->total_ns / (double)e->calls;
  if (!isnan(dur) && dur < TBE_SHORT_KERNEL_NS && busy_pct < TBE_BOUND_IDLE_PCT)
    return TBE_BOUND_LAUNCH;
  return TBE_BOUND_LATENCY;
}

/* ---- the pass ---- */

/* A hardware metric's counter track: a GPU's counters other than the
 * memory curve's (memory_counters.h), which are bytes, not a metric. */
static int pm_track_of(const tbe_trace *t, const tbe_track *tr) {
  return tbe_track_is_metric(tr) && tr->count && !tbe__track_is_memory_counter(t, tr);
}

int tbe__analysis_metrics(tbe_analysis *an, const uint32_t *kslot, const int32_t *track_dev) {
  const tbe_trace *t = an->trace;
  size_t nm = 0, nk = 0, ntr = 0;
  for (size_t i = 0; i < t->ntracks; i++)
    if (pm_track_of(t, &t->tracks[i])) ntr++;
  if (!ntr && !t->nkernel_metrics) return 0;
  /* names: at most one per track, one per kernel value */
  size_t cap_names = ntr + t->nmetric_values + 1;
  const char **names = tbe__calloc(&an->alloc_, cap_names, sizeof *names);
  if (!names) return TBE_ENOMEM;
  for (size_t i = 0; i < t->ntracks; i++)
    if (pm_track_of(t, &t->tracks[i])) name_add(names, &nm, tbe_trace_str(t, t->tracks[i].name));
  qsort(names, nm, sizeof *names, cmp_name);
  const char **knames = names + nm;
  for (size_t i = 0; i < t->nkernel_metrics; i++) {
    const tbe_kernel_metrics *k = &t->kernel_metrics[i];
    for (uint32_t j = 0; j < k->count; j++)
      name_add(knames, &nk, tbe_trace_str(t, t->metric_values[k->first + j].metric));
  }
  qsort(knames, nk, sizeof *knames, cmp_name);
  /* the means: devices, all, steps (PM); kernels */
  size_t nkern = an->ngroups[TBE_GROUP_KERNEL];
  size_t pm_cells = nm * (an->ndevices + 1 + an->nsteps + nkern);
  size_t cells = pm_cells + nk * nkern;
  tbe_metric_mean *block = tbe__calloc(&an->alloc_, cells ? cells : 1, sizeof *block);
  acc *sums = tbe__calloc(&an->alloc_, pm_cells + 1, sizeof *sums);
  if (!block || !sums) {
    tbe__free(&an->alloc_, block);
    tbe__free(&an->alloc_, sums);
    tbe__free(&an->alloc_, names);
    return TBE_ENOMEM;
  }
  *tbe__analysis_metric_block(an, 0) = names;
  *tbe__analysis_metric_block(an, 1) = block;
  an->gpu_metrics = nm ? names : NULL;
  an->ngpu_metrics = nm;
  an->kernel_metrics = nk ? knames : NULL;
  an->nkernel_metrics = nk;

  if (nm) {
    acc *all = sums + nm * an->ndevices, *steps = all + nm, *kacc = steps + nm * an->nsteps;
    for (size_t i = 0; i < t->ntracks; i++) {
      const tbe_track *tr = &t->tracks[i];
      if (!pm_track_of(t, tr)) continue;
      long mi = name_index(names, nm, tbe_trace_str(t, tr->name));
      size_t d = 0;
      while (d < an->ndevices && an->devices[d].device != tr->device) d++;
      if (mi < 0 || d == an->ndevices) continue;
      pm_track(an, tr, &sums[d * nm + (size_t)mi], &all[mi], an->nsteps ? &steps[mi] : NULL, nm);
      if (kslot && track_dev) pm_kernels(an, tr, (size_t)mi, nm, (int32_t)d, kslot, track_dev, kacc);
    }
    for (size_t d = 0; d <= an->ndevices; d++) {
      tbe_metric_mean *m = block + d * nm;
      for (size_t k = 0; k < nm; k++) acc_done(&sums[d * nm + k], &m[k]);
      if (d < an->ndevices) an->devices[d].metrics = m;
      else an->all.metrics = m;
    }
    for (size_t s = 0; s < an->nsteps; s++) {
      tbe_metric_mean *m = block + (an->ndevices + 1 + s) * nm;
      for (size_t k = 0; k < nm; k++) acc_done(&steps[s * nm + k], &m[k]);
      an->steps[s].metrics = m;
    }
    for (size_t e = 0; e < nkern; e++) {
      tbe_metric_mean *m = block + (an->ndevices + 1 + an->nsteps + e) * nm;
      int any = 0;
      for (size_t k = 0; k < nm; k++) {
        acc_done(&kacc[e * nm + k], &m[k]);
        any |= m[k].samples != 0;
      }
      if (any) an->groups[TBE_GROUP_KERNEL][e].pm_metrics = m;
    }
  }
  tbe__free(&an->alloc_, sums);

  if (nk) {
    tbe_metric_mean *kb = block + pm_cells;
    double wall = an->wall_ns > 0 ? (double)an->wall_ns : 1.0;
    double busy_pct = 100.0 * (double)an->all.busy_ns / wall;
    for (size_t e = 0; e < nkern; e++) {
      tbe_name_stats *ns = &an->groups[TBE_GROUP_KERNEL][e];
      tbe_metric_mean *m = kb + e * nk;
      int any = 0;
      for (size_t i = 0; i < t->nkernel_metrics; i++) {
        const tbe_kernel_metrics *k = &t->kernel_metrics[i];
        if (k->name != ns->name) continue;
        double w = k->launches ? (double)k->launches : 1.0;
        for (uint32_t j = 0; j < k->count; j++) {
          const tbe_metric_value *v = &t->metric_values[k->first + j];
          long mi = name_index(knames, nk, tbe_trace_str(t, v->metric));
          if (mi < 0) continue;
          /* running weighted mean: samples counts launches */
          double n0 = (double)m[mi].samples;
          m[mi].mean = (m[mi].mean * n0 + v->value * w) / (n0 + w);
          m[mi].samples += k->launches ? k->launches : 1;
          any = 1;
        }
      }
      if (!any) continue;
      ns->metrics = m;
      ns->bound_by = bound_of(an, ns, busy_pct);
    }
  }
  return 0;
}

/* ---- runs of several hosts ---- */

/* Adds v with weight w (> 0) to a running weighted mean in m; `samples`
 * adds n. */
static void wmean_add(tbe_metric_mean *m, double *wsum, double v, double w, uint64_t n) {
  m->mean = (m->mean * *wsum + v * w) / (*wsum + w);
  *wsum += w;
  m->samples += n;
}

/* The weight of a host's all-GPU mean of metric k: the windows of its
 * GPUs that measured it (each GPU's mean is over its window), else its
 * sample count. */
static double host_weight(const tbe_analysis *an, size_t k) {
  double w = 0;
  for (size_t d = 0; d < an->ndevices; d++)
    if (an->devices[d].metrics && an->devices[d].metrics[k].samples)
      w += (double)an->devices[d].wall_ns;
  return w > 0 ? w : (double)an->all.metrics[k].samples;
}

int tbe__analysis_metrics_merge(tbe_analysis *tot, const tbe_run_host *hosts, size_t n,
                                long *const *map) {
  size_t cg = 0, ck = 0;
  for (size_t h = 0; h < n; h++) {
    cg += hosts[h].an->ngpu_metrics;
    ck += hosts[h].an->nkernel_metrics;
  }
  if (!cg && !ck) return 0;
  const tbe_allocator *a = &tot->alloc_;
  const char **names = tbe__calloc(a, cg + ck + 1, sizeof *names);
  if (!names) return TBE_ENOMEM;
  size_t nm = 0, nk = 0;
  for (size_t h = 0; h < n; h++)
    for (size_t k = 0; k < hosts[h].an->ngpu_metrics; k++)
      name_add(names, &nm, hosts[h].an->gpu_metrics[k]);
  qsort(names, nm, sizeof *names, cmp_name);
  const char **knames = names + nm;
  for (size_t h = 0; h < n; h++)
    for (size_t k = 0; k < hosts[h].an->nkernel_metrics; k++)
      name_add(knames, &nk, hosts[h].an->kernel_metrics[k]);
  qsort(knames, nk, sizeof *knames, cmp_name);
  size_t nkern = tot->ngroups[TBE_GROUP_KERNEL];
  size_t pm_cells = nm * (1 + tot->nsteps + nkern);
  size_t cells = pm_cells + nk * nkern;
  tbe_metric_mean *block = tbe__calloc(a, cells ? cells : 1, sizeof *block);
  double *wsum = tbe__calloc(a, cells ? cells : 1, sizeof *wsum);
  if (!block || !wsum) {
    tbe__free(a, block);
    tbe__free(a, wsum);
    tbe__free(a, names);
    return TBE_ENOMEM;
  }
  *tbe__analysis_metric_block(tot, 0) = names;
  *tbe__analysis_metric_block(tot, 1) = block;
  tot->gpu_metrics = nm ? names : NULL;
  tot->ngpu_metrics = nm;
  tot->kernel_metrics = nk ? knames : NULL;
  tot->nkernel_metrics = nk;
  if (nm) {
    tot->all.metrics = block;
    for (size_t s = 0; s < tot->nsteps; s++) tot->steps[s].metrics = block + (1 + s) * nm;
    for (size_t h = 0; h < n; h++) {
      const tbe_analysis *an = hosts[h].an;
      for (size_t k = 0; k < an->ngpu_metrics; k++) {
        size_t mi = (size_t)name_index(names, nm, an->gpu_metrics[k]);
        const tbe_metric_mean *m = an->all.metrics ? &an->all.metrics[k] : NULL;
        if (m && m->samples)
          wmean_add(&block[mi], &wsum[mi], m->mean, host_weight(an, k), m->samples);
        /* a merged step: the hosts' step means by their step times */
        for (size_t s = 0; s < an->nsteps && map && map[h]; s++) {
          const tbe_metric_mean *sm = an->steps[s].metrics ? &an->steps[s].metrics[k] : NULL;
          if (map[h][s] < 0 || !sm || !sm->samples) continue;
          size_t c = (1 + (size_t)map[h][s]) * nm + mi;
          double w = an->steps[s].dur_ns > 0 ? (double)an->steps[s].dur_ns : 1.0;
          wmean_add(&block[c], &wsum[c], sm->mean, w, sm->samples);
        }
      }
    }
    /* A kernel name's PM means: the hosts' by their overlapping intervals;
     * the run's entries found by label through an index (runs of many
     * ranks have as many tables). */
    tbe_metric_mean *pb = block + nm * (1 + tot->nsteps);
    double *pw = wsum + nm * (1 + tot->nsteps);
    tbe__index ix;
    tbe__index_init(&ix, a, 0);
    for (size_t e = 0; e < nkern; e++) {
      const char *l = tot->groups[TBE_GROUP_KERNEL][e].label;
      tbe__index_add(&ix, tbe__hash_bytes(l, strlen(l), ix.seed), (uint32_t)e);
    }
    int err = tbe__index_error(&ix);
    for (size_t h = 0; h < n && !err; h++) {
      const tbe_analysis *an = hosts[h].an;
      for (size_t i = 0; an->ngpu_metrics && i < an->ngroups[TBE_GROUP_KERNEL]; i++) {
        const tbe_name_stats *he = &an->groups[TBE_GROUP_KERNEL][i];
        if (!he->pm_metrics) continue;
        tbe__iprobe pr;
        uint32_t e = tbe__index_first(&ix, tbe__hash_bytes(he->label, strlen(he->label), ix.seed), &pr);
        while (e != TBE__NOIDX && strcmp(tot->groups[TBE_GROUP_KERNEL][e].label, he->label) != 0)
          e = tbe__index_next(&ix, &pr);
        if (e == TBE__NOIDX) continue;
        for (size_t k = 0; k < an->ngpu_metrics; k++) {
          if (!he->pm_metrics[k].samples) continue;
          size_t c = e * nm + (size_t)name_index(names, nm, an->gpu_metrics[k]);
          wmean_add(&pb[c], &pw[c], he->pm_metrics[k].mean, (double)he->pm_metrics[k].samples,
                    he->pm_metrics[k].samples);
          tot->groups[TBE_GROUP_KERNEL][e].pm_metrics = pb + e * nm;
        }
      }
    }
    tbe__index_deinit(&ix);
    if (err) {
      tbe__free(a, wsum);
      return err;
    }
  }
  if (nk) {
    tbe_metric_mean *kb = block + pm_cells;
    double *kw = wsum + pm_cells;
    for (size_t e = 0; e < nkern; e++) {
      tbe_name_stats *ns = &tot->groups[TBE_GROUP_KERNEL][e];
      int any = 0;
      for (size_t h = 0; h < n; h++) {
        const tbe_analysis *an = hosts[h].an;
        if (!an->nkernel_metrics) continue;
        const tbe_name_stats *he = NULL;
        for (size_t i = 0; i < an->ngroups[TBE_GROUP_KERNEL] && !he; i++)
          if (an->groups[TBE_GROUP_KERNEL][i].metrics &&
              strcmp(an->groups[TBE_GROUP_KERNEL][i].label, ns->label) == 0)
            he = &an->groups[TBE_GROUP_KERNEL][i];
        if (!he) continue;
        for (size_t k = 0; k < an->nkernel_metrics; k++) {
          if (!he->metrics[k].samples) continue;
          size_t mi = (size_t)name_index(knames, nk, an->kernel_metrics[k]);
          /* launch-weighted, as on one host */
          wmean_add(&kb[e * nk + mi], &kw[e * nk + mi], he->metrics[k].mean,
                    (double)he->metrics[k].samples, he->metrics[k].samples);
          any = 1;
        }
      }
      if (any) ns->metrics = kb + e * nk;
    }
    double wall = tot->all.wall_ns > 0 ? (double)tot->all.wall_ns : 1.0;
    double busy_pct = 100.0 * (double)tot->all.busy_ns / wall;
    for (size_t e = 0; e < nkern; e++) {
      tbe_name_stats *ns = &tot->groups[TBE_GROUP_KERNEL][e];
      if (ns->metrics) ns->bound_by = bound_of(tot, ns, busy_pct);
    }
  }
  tbe__free(a, wsum);
  return 0;
}
