/* export_events_tags.c: what the summary's TensorBoard tags are called
 * and what they say.
 *
 * Kernel tags (kernels/<tag>, diff/<base>/kernels/<tag>; tbe__ev_kernel_tag)
 * are a
 * function of the kernel's full (demangled) name alone, never of which
 * other kernels the run holds, so the same kernel has the same tag in every
 * run and before/after runs overlay:
 *   - a name that is already a tag (only [A-Za-z0-9_.:-], at most
 *     TAG_WIDTH bytes: "sm90_xmma_gemm_…", "triton_poi_fused_add_0") is
 *     its own tag;
 *   - any other is its short form (tbe_name_shorten: no return type, no
 *     parameters, no namespaces), characters outside that set made '_',
 *     cut to TAG_WIDTH - 9 bytes, then "." and 8 hex digits of the full
 *     name's hash (FNV-1a, 64 bits, low 32): "vectorized_elementwise_
 *     kernel_4_FillFunctor_float_array_char_1ul.1f392d55".  The short form
 *     keeps the tag readable; the hash keeps apart what it elided
 *     (parameters, namespaces, '*' against '&', the cut tail), so two of
 *     the many elementwise_kernel<…> instantiations never share a tag.
 * Two names with the same tag within one run (two hashes equal, about one
 * chance in 10^8 for the top 20 kernels) still get distinct tags: the
 * later one by total time gets "_2", "_3", ….
 *
 *
 * Descriptions (tbe__ev_describe) are a function of the tag alone, so that
 * every run describes a tag alike.  Nothing here writes or allocates but
 * into the caller's buffer. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/buf.h"
#include "common/map.h"
#include "trace/analysis/figures.h"
#include "trace/export/export_events_tags.h"
#include "trace/report/report.h"

/* snprintf that truncates silently (tags are bounded by construction). */
void tbe__ev_fmt(char *buf, size_t size, const char *f, ...) {
  va_list ap;
  va_start(ap, f);
  vsnprintf(buf, size, f, ap);
  va_end(ap);
}

/* ---- kernel tags ---- */

/* FNV-1a over the name's bytes: the same on every machine and in every
 * release, as tags must be. */
static uint64_t fnv1a(const char *s) { return tbe__fnv1a64(s, strlen(s), TBE__FNV64_BASIS); }

/* 1 if `name` can be a tag component as it is. */
static int is_tag(const char *name) {
  size_t n = 0;
  for (; name[n]; n++) {
    char c = name[n];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
          c == '.' || c == ':' || c == '-'))
      return 0;
  }
  return n > 0 && n <= TBE__EV_TAG_WIDTH;
}

/* The tag component of a kernel (the file essay gives the scheme). */
void tbe__ev_kernel_tag(const char *name, char *out, size_t size) {
  if (is_tag(name)) {
    snprintf(out, size, "%s", name);
    return;
  }
  char comp[TBE__EV_TAG_WIDTH + 1];
  size_t n = tbe__tag_component(name, TBE__EV_TAG_WIDTH - 9, comp, sizeof comp);
  while (n > 1 && comp[n - 1] == '_') comp[--n] = '\0';
  tbe__ev_fmt(out, size, "%s.%08x", comp, (unsigned)(fnv1a(name) & 0xffffffffu));
}

/* Stores the tag of kernel `name` in used[n], distinct from used[0..n). */
void tbe__ev_unique_kernel_tag(const char *name, char (*used)[TBE__EV_TAG_WIDTH + 8], size_t n) {
  char tag[TBE__EV_TAG_WIDTH + 1];
  tbe__ev_kernel_tag(name, tag, sizeof tag);
  snprintf(used[n], sizeof used[n], "%s", tag);
  for (int k = 2;; k++) {
    int clash = 0;
    for (size_t j = 0; j < n && !clash; j++) clash = strcmp(used[j], used[n]) == 0;
    if (!clash) return;
    tbe__ev_fmt(used[n], sizeof used[n], "%s_%d", tag, k);
  }
}

/* ---- descriptions ----
 * What a tag is and its unit (Markdown), shown by TensorBoard beside the
 * chart.  A function of the tag alone (and, for a kernel's or an
 * operator's tag, of the name the tag stands for, itself a function of
 * the tag), so that every run describes a tag alike: Time Series shows
 * one description per tag. */

/* The figures a tag may end in, with what they are. */
static const struct {
  const char *leaf, *what;
} FIGURES[] = {
    {"gpu_busy_pct",
     "GPU busy: the share of the time in which a kernel, copy or memset ran (the "
     "union of their intervals), in %"},
    {"kernel_time_ms",
     "time in kernels: the sum of their durations (kernels running at once on "
     "several streams each count), in ms"},
    {"kernel_count", "kernels launched (a count)"},
    {"memcpy_time_ms", "time in memory copies, all directions, in ms"},
    {"memcpy_htod_ms", "time in host-to-device copies, in ms"},
    {"memcpy_dtoh_ms", "time in device-to-host copies, in ms"},
    {"memcpy_dtod_ms", "time in device-to-device copies, in ms"},
    {"memset_time_ms", "time in memsets, in ms"},
    {"sync_time_ms",
     "synchronization: the time the GPU's streams waited (CUDA's synchronization "
     "records), in ms"},
    {"idle_time_ms", "idle time: the window less the busy time, in ms"},
    {"launch_latency_us",
     "launch latency: the median time from a launch call's start on the host "
     "to the start of its work on the GPU (launch overhead and queue delay "
     "together), in µs"},
    {"launch_overhead_us",
     "launch overhead: the median duration of the call that launched GPU work "
     "(what the host pays per launch), in µs"},
    {"queue_delay_us",
     "queue delay: the median time from a launch call's end to the start of its "
     "work on the GPU (0 for work that started before the call returned; HTA's "
     "launch delay), in µs"},
    {"wall_time_ms", "the profiled window's length, in ms"},
    {"host_busy_pct",
     "the busiest host thread's busy share (CPU operators and CUDA calls, the "
     "synchronizing calls left out), in %"},
    {"sync_calls", "synchronizing calls (…Synchronize) and synchronization records (a count)"},
    {"step_time_median_ms", "the median step time (nearest rank, every step), in ms"},
    {"step_time_p90_ms", "the 90th percentile of the step times (nearest rank, every step), in ms"},
    {"steps", "steps (a count)"},
    {"warmup_step_ms",
     "the first step's time, written when the per-step series leave it out as "
     "warm-up: it took more than twice the median of the other steps; in ms"},
    {"hosts", "the processes (ranks, hosts) whose analyses make the job's figures (a count)"},
    {"step_time_ms",
     "step time: the step's window on the device (from its host start or the end "
     "of the step before, to its host end or the end of the last GPU work it "
     "launched, whichever is later), in ms; in a multi-host job's own run, the "
     "slowest host's, as the job waits for it"},
};

static const char *figure(const char *leaf) {
  for (size_t i = 0; i < sizeof FIGURES / sizeof FIGURES[0]; i++)
    if (strcmp(FIGURES[i].leaf, leaf) == 0) return FIGURES[i].what;
  return NULL;
}

/* What a PM metric is, from its name; its unit from the name's suffix. */
static void metric_what(tbe__buf *b, const char *m) {
  static const struct {
    const char *name, *what;
  } known[] = {
      {"sm_active_pct", "SM active: the share of cycles with at least one warp on an SM"},
      {"occupancy_pct", "achieved occupancy: resident warps as a share of the most an SM holds"},
      {"tensor_active_pct", "tensor pipes active: the share of cycles a tensor pipe was busy"},
      {"dram_read_pct", "DRAM read bandwidth as a share of its peak"},
      {"dram_write_pct", "DRAM write bandwidth as a share of its peak"},
      {"pcie_rx_bytes_per_s", "PCIe bytes received per second"},
      {"pcie_tx_bytes_per_s", "PCIe bytes sent per second"},
      {"nvlink_rx_bytes_per_s", "NVLink bytes received per second"},
      {"nvlink_tx_bytes_per_s", "NVLink bytes sent per second"},
      {"sm_clock_hz", "the SM clock"},
      {"dram_clock_hz", "the DRAM clock"},
  };
  const char *what = NULL;
  for (size_t i = 0; i < sizeof known / sizeof known[0] && !what; i++)
    if (strcmp(known[i].name, m) == 0) what = known[i].what;
  size_t l = strlen(m);
#define ENDS(s) (l >= sizeof(s) - 1 && strcmp(m + l - (sizeof(s) - 1), s) == 0)
  const char *unit = ENDS("_pct")           ? "%"
                     : ENDS("_bytes_per_s") ? "bytes/s"
                     : ENDS("_hz")          ? "Hz"
                     : ENDS("_ns")          ? "ns"
                                            : NULL;
#undef ENDS
  if (what)
    tbe__buf_puts(b, what);
  else
    tbe__md_escape(b, m);
  if (unit) tbe__buf_printf(b, ", in %s", unit);
}

/* The description of `tag` into `b` (NUL-terminated); `name` is what a
 * kernel's or operator's tag stands for (NULL otherwise).  Empty when
 * the tag is none of ours. */
/* The tag leaf of a listed figure row (see the header). */
int tbe__ev_row_tag(const tbe__figure *f, char *out, size_t size) {
  size_t kl = strlen(f->key);
  int dur = (f->unit == TBE__FU_NS || f->unit == TBE__FU_NS_OPT) && kl > 3 &&
            strcmp(f->key + kl - 3, "_ns") == 0;
  tbe__ev_fmt(out, size, "%.*s%s", (int)(dur ? kl - 3 : kl), f->key, dur ? "_ms" : "");
  return dur;
}

/* The description of a scalar the writers make from a figure row listed
 * by the table (figures.h, TBE__FIG_LISTED on): summary/<tag> and
 * gpu<N>/<tag>, and diff/<base>/<key>_ratio; the tag as export_events.c
 * spells it (a duration key's "_ns" as "_ms").  Nothing for another leaf. */
static void row_describe(tbe__buf *b, const char *tag, size_t gl, const char *leaf,
                         const char *one_point, const char *per_step) {
  int diff = gl == 4 && memcmp(tag, "diff", 4) == 0;
  int steps = gl == 5 && memcmp(tag, "steps", 5) == 0;
  const char *w = leaf;
  if (diff && (w = strchr(leaf, '/')) != NULL) w++;
  if (!w) return;
  for (size_t i = TBE__FIG_LISTED; i < TBE__FIG__COUNT; i++) {
    const tbe__figure *f = &tbe__figures[i];
    if (steps ? !tbe__fig_step_listed(f) : !tbe__fig_listed(f)) continue;
    char want[128];
    int dur = diff ? 0 : tbe__ev_row_tag(f, want, sizeof want);
    if (diff) tbe__ev_fmt(want, sizeof want, "%s_ratio", f->key);
    if (strcmp(want, w) != 0) continue;
    const char *unit = dur                              ? "ms"
                       : f->unit == TBE__FU_PCT         ? "%"
                       : f->unit == TBE__FU_BYTES_OPT   ? "bytes"
                       : f->unit == TBE__FU_BYTES_DELTA ? "bytes per step"
                                                        : "a count or a number";
    if (diff)
      tbe__buf_printf(b, "This run's %s divided by run %.*s's (below 1: less here).", f->label,
                      (int)(w - 1 - leaf), leaf);
    else if (steps)
      tbe__buf_printf(b, "In each step, of the GPU where it is highest: %s, in %s.", f->label,
                      unit);
    else if (gl == 7)
      tbe__buf_printf(b, "All GPUs over the profiled window: %s, in %s.", f->label, unit);
    else
      tbe__buf_printf(b, "GPU %.*s over the profiled window: %s, in %s.", (int)(gl - 3), tag + 3,
                      f->label, unit);
    if (tbe__fig_is_mem(f) && !steps && !diff)
      tbe__buf_puts(b,
                    " Memory: the curve of allocated and reserved bytes (the framework "
                    "allocator's, else the CUDA driver's); with all GPUs, the largest GPU's.");
    tbe__buf_puts(b, steps ? per_step : one_point);
    return;
  }
}

void tbe__ev_describe(tbe__buf *b, const char *tag, const char *name) {
  const char *slash = strchr(tag, '/');
  const char *leaf = slash ? slash + 1 : tag;
  size_t gl = slash ? (size_t)(slash - tag) : 0;
  const char *what;
  size_t start = b->len;
#define GROUP(g) (gl == sizeof(g) - 1 && memcmp(tag, g, gl) == 0)
#define STARTS(p) (strncmp(leaf, p, sizeof(p) - 1) == 0)
  static const char per_step[] =
      " Per step (x axis: the step number). A first step that took more than twice the median "
      "of the others is left out as warm-up (summary/warmup_step_ms).";
  static const char one_point[] = " One point per run (step 0).";
  if (GROUP("summary") && STARTS("class/")) {
    tbe__buf_puts(b, "All GPUs over the profiled window: the GPU time in ");
    tbe__buf_append(b, leaf + 6, strlen(leaf + 6) > 3 ? strlen(leaf + 6) - 3 : 0);
    tbe__buf_puts(b,
                  " kernels (the class read from the kernel's demangled name; copies and "
                  "memsets count as copy), in ms.");
    tbe__buf_puts(b, one_point);
  } else if (GROUP("steps") && STARTS("class/")) {
    tbe__buf_puts(b, "The GPU time in ");
    tbe__buf_append(b, leaf + 6, strlen(leaf + 6) > 3 ? strlen(leaf + 6) - 3 : 0);
    tbe__buf_puts(b,
                  " kernels launched in the step (the class read from the kernel's demangled "
                  "name; copies and memsets count as copy), in ms.");
    tbe__buf_puts(b, per_step);
  } else if ((GROUP("kernels") || (GROUP("steps") && STARTS("kernels/"))) && name) {
    tbe__buf_puts(
        b, GROUP("kernels") ? "The total GPU time of the kernel " : "The GPU time of the kernel ");
    tbe__md_escape(b, name);
    tbe__buf_puts(b, GROUP("kernels") ? ", in ms." : " launched in the step, in ms.");
    tbe__buf_puts(b, GROUP("kernels") ? one_point : per_step);
  } else if (GROUP("ops") && name) {
    tbe__buf_puts(b, "The CUDA total of the operator ");
    tbe__md_escape(b, name);
    tbe__buf_puts(b,
                  ": the GPU time of the work it and the operators inside it launched, as "
                  "torch.profiler's key_averages() gives it, in ms; per step (x axis: the "
                  "step number, warm-up left out as in steps/), or one point (step 0) without "
                  "steps.");
  } else if (GROUP("gpu_metrics")) {
    tbe__buf_puts(b, "PM sampling, all GPUs: ");
    metric_what(b, leaf);
    tbe__buf_puts(b,
                  ". With steps, each step's time-weighted mean (x axis: the step number, "
                  "warm-up left out as in steps/); without steps, the mean of each time "
                  "bucket (x axis: milliseconds since the profile's start; wall time: the "
                  "bucket's start).");
  } else if (GROUP("summary") && STARTS("gpu_metrics/")) {
    tbe__buf_puts(b, "PM sampling, all GPUs: ");
    metric_what(b, leaf + 12);
    tbe__buf_puts(b, "; the time-weighted mean over the profiled window.");
    tbe__buf_puts(b, one_point);
  } else if ((GROUP("summary") || (gl > 3 && memcmp(tag, "gpu", 3) == 0)) &&
             (what = figure(leaf)) != NULL) {
    if (GROUP("summary"))
      tbe__buf_puts(b, "All GPUs over the profiled window: ");
    else
      tbe__buf_printf(b, "GPU %.*s over the profiled window: ", (int)(gl - 3), tag + 3);
    tbe__buf_puts(b, what);
    tbe__buf_putc(b, '.');
    tbe__buf_puts(b, one_point);
  } else if (GROUP("steps") && (what = figure(leaf)) != NULL) {
    tbe__buf_puts(b, "In each step: ");
    tbe__buf_puts(b, what);
    tbe__buf_putc(b, '.');
    tbe__buf_puts(b, per_step);
  } else if (GROUP("profiler")) {
    static const char *const prof[][2] = {
        {"dropped_records", "Records the collector or the source dropped (a count)."},
        {"out_of_range_records", "Records dropped for zero or inverted timestamps (a count)."},
        {"overhead_ms", "The profiler's own overhead (CUPTI's overhead records), in ms."},
        {"ended_early", "1 when the capture ended early (the trace is cut short), else 0."}};
    for (size_t i = 0; i < sizeof prof / sizeof prof[0]; i++)
      if (strcmp(prof[i][0], leaf) == 0) tbe__buf_puts(b, prof[i][1]);
    if (b->len) tbe__buf_puts(b, one_point);
  } else if (GROUP("job")) {
    static const char *const job[][2] = {
        {"step_time_slowest_ms",
         "the slowest host's step time (the job's step time: it waits "
         "for its slowest rank), in ms"},
        {"step_time_median_ms",
         "the median host's step time (nearest rank, the lower of two), "
         "in ms"},
        {"step_time_fastest_ms", "the fastest host's step time, in ms"},
        {"step_spread_pct",
         "the spread: the slowest host's step time less the fastest's, as a "
         "share of the fastest's, in %"},
        {"slowest_rank",
         "the rank of the slowest host, the lowest of those tied (without ranks, "
         "its index in the run's order)"}};
    for (size_t i = 0; i < sizeof job / sizeof job[0]; i++)
      if (strcmp(job[i][0], leaf) == 0) {
        tbe__buf_puts(b, "A multi-host job, in each of the steps every host has: ");
        tbe__buf_puts(b, job[i][1]);
        tbe__buf_puts(b,
                      ". Per step (x axis: the step number; a warm-up first step left out as "
                      "in steps/).");
      }
  } else if (GROUP("diff")) {
    /* diff/<base>/<what> */
    const char *w = strchr(leaf, '/');
    size_t bl = w ? (size_t)(w - leaf) : 0;
    w = w ? w + 1 : leaf;
    static const char *const ratios[][2] = {{"wall_time_ratio", "profiled wall time"},
                                            {"gpu_busy_ratio", "GPU busy time"},
                                            {"kernel_time_ratio", "time in kernels"},
                                            {"step_time_ratio", "median step time"}};
    for (size_t i = 0; i < sizeof ratios / sizeof ratios[0]; i++)
      if (strcmp(ratios[i][0], w) == 0)
        tbe__buf_printf(b, "This run's %s divided by run %.*s's (below 1: less here).",
                        ratios[i][1], (int)bl, leaf);
    if (strncmp(w, "kernels/", 8) == 0 && name) {
      tbe__buf_puts(b, "This run's total time of the kernel ");
      tbe__md_escape(b, name);
      tbe__buf_printf(b, " divided by run %.*s's (below 1: less here).", (int)bl, leaf);
    }
    if (strcmp(w, "report") == 0)
      tbe__buf_printf(b,
                      "The comparison of runs %.*s (base) and this one, or of this run (base) "
                      "and %.*s, as `tbexport diff` prints it (Markdown).",
                      (int)bl, leaf, (int)bl, leaf);
    if (b->len) tbe__buf_puts(b, one_point);
  }
  if (b->len == start && (GROUP("summary") || GROUP("diff") || GROUP("steps") ||
                          (gl > 3 && memcmp(tag, "gpu", 3) == 0)))
    row_describe(b, tag, gl, leaf, one_point, per_step);
#undef GROUP
#undef STARTS
  tbe__buf_putc(b, '\0');
}

/* The text tags' descriptions. */
const char *tbe__ev_text_description(const char *tag) {
  static const char *const texts[][2] = {
      {"summary/top_kernels",
       "The kernels with the most GPU time: calls, total, share, mean "
       "(Markdown table)."},
      {"summary/advice", "What the figures suggest, each line with the figure behind it."},
      {"summary/top_operators",
       "The CPU operators by CUDA total, with the kernels each "
       "launched (Markdown table)."},
      {"summary/kernel_metrics",
       "Per kernel: the range profiler's figures (SM, memory, "
       "tensor pipe, occupancy, L2, DRAM) and what bounds it, and the "
       "PM means while it ran (Markdown tables)."},
      {"job/ranks",
       "The job rank by rank (or host by host): median step time, GPU busy, kernel "
       "and communication time, the slowest and fastest, as `tbexport summary RUN` "
       "prints it (Markdown)."}};
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
    if (strcmp(texts[i][0], tag) == 0) return texts[i][1];
  return NULL;
}
