/* export_hparams.c: the HParams session of a host or of a job.
 *
 * export_events.c's "hparams" output writes the host's HParams session
 * into a file of its own in the same folder: the run, host, GPU, source,
 * event kinds, step definition, command and the user's labels as
 * hyper-parameters, and the experiment record (hparams_experiment): the
 * columns TensorBoard shows, the same in every session so that whichever
 * it reads (it takes one, at random) the table is the same.  Its metrics
 * are the host's own summary tags, with display names, the key ones
 * first.  A multi-host job's own session (export_events.c,
 * tbe__job_write) is made here the same way.
 * Labels (--label KEY=VALUE) are checked here too (tbe__labels_check):
 * never a built-in hyper-parameter's name. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "events/writer_internal.h"
#include "tbexport/error.h"
#include "trace/export/export_events_tags.h"
#include "trace/export/export_hparams.h"
#include "trace/exporter.h"

/* ---- the HParams session ---- */

/* The hyper-parameter names tbexport sets itself (labels may not take
 * them). */
static const char *const BUILTIN_HPARAMS[] = {"run",   "host",  "gpu",     "source",
                                              "kinds", "steps", "command", "labels"};
#define NBUILTIN (sizeof BUILTIN_HPARAMS / sizeof BUILTIN_HPARAMS[0])

int tbe__labels_check(const char *const *labels, size_t n) {
  if (n && !labels) return TBE_EINVAL;
  for (size_t i = 0; i < n; i++) {
    const char *l = labels[i], *eq = l ? strchr(l, '=') : NULL;
    if (!eq || eq == l || (size_t)(eq - l) > 100) return TBE_EINVAL;
    size_t kl = (size_t)(eq - l);
    for (size_t j = 0; j < kl; j++) {
      char c = l[j];
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '_' || c == '.' || c == '-'))
        return TBE_EINVAL;
    }
    for (size_t b = 0; b < NBUILTIN; b++)
      if (strlen(BUILTIN_HPARAMS[b]) == kl && memcmp(BUILTIN_HPARAMS[b], l, kl) == 0)
        return TBE_EINVAL;
    for (size_t j = 0; j < i; j++)
      if (strncmp(labels[j], l, kl + 1) == 0) return TBE_EINVAL; /* "key=" twice */
  }
  return 0;
}

/* Whether `v` reads whole as a finite number (then in *x). */
static int as_number(const char *v, double *x) {
  if (!*v) return 0;
  char *end;
  double d = strtod(v, &end);
  if (*end || d != d || d > 1.7e308 || d < -1.7e308) return 0;
  *x = d;
  return 1;
}

/* "NVIDIA H200", or "2 x NVIDIA H200", or "" without GPUs; `n` devices,
 * named as the first of `an`. */
void tbe__hp_gpu_text(const tbe_analysis *an, size_t n, char *buf, size_t size) {
  buf[0] = 0;
  if (!n || !an->ndevices) return;
  const char *name =
      an->devices[0].name && an->trace ? tbe_trace_str(an->trace, an->devices[0].name) : NULL;
  if (!name) name = "GPU";
  if (n == 1)
    snprintf(buf, size, "%s", name);
  else
    snprintf(buf, size, "%zu x %s", n, name);
}

/* The step definition: the steps' name without its number
 * ("ProfilerStep#", "train_step"), or "none". */
void tbe__hp_steps_text(const tbe_trace *t, char *buf, size_t size) {
  if (!t->nsteps) {
    snprintf(buf, size, "none");
    return;
  }
  const char *n = t->steps[0].name ? tbe_trace_str(t, t->steps[0].name) : "";
  size_t l = strlen(n);
  while (l && n[l - 1] >= '0' && n[l - 1] <= '9') l--;
  if (!l) {
    snprintf(buf, size, "unnamed");
    return;
  }
  snprintf(buf, size, "%.*s", (int)(l < size - 1 ? l : size - 1), n);
}

/* The kinds of events the trace holds, as a comma list. */
void tbe__hp_kinds_text(const tbe_analysis *an, char *buf, size_t size) {
  const tbe_device_stats *d = &an->all;
  uint64_t copies = 0;
  for (int k = 0; k < TBE_NCOPY_KINDS; k++) copies += d->memcpy_count[k];
  struct {
    const char *name;
    int has;
  } k[] = {{"kernel", d->kernel_count > 0},
           {"memcpy", copies > 0},
           {"memset", d->memset_count > 0},
           {"sync", d->sync_count > 0},
           {"api", an->api_calls > 0},
           {"cpu_op", an->ngroups[TBE_GROUP_CPU_OP] > 0},
           {"range", an->ngroups[TBE_GROUP_RANGE] > 0}};
  size_t at = 0;
  buf[0] = 0;
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
    if (k[i].has && at < size)
      at += (size_t)snprintf(buf + at, size - at, "%s%s", at ? "," : "", k[i].name);
}

/* The metric columns of the HParams table, key ones first: each a tag
 * every host's summary (and a job's) writes where it has the figure, so
 * that the session's metric is the run's own scalar (no copy under
 * another tag: the Scalars dashboard shows each figure once).  The same
 * list in every session's experiment.  The launch latency is followed by
 * its two parts (launch overhead: the call's own duration; queue delay:
 * the call's end to the work's start). */
static const struct {
  const char *tag, *display;
} METRIC_COLUMNS[] = {
    {"summary/step_time_median_ms", "step time, median (ms)"},
    {"summary/step_time_p90_ms", "step time, p90 (ms)"},
    {"summary/gpu_busy_pct", "GPU busy (%)"},
    {"summary/kernel_time_ms", "kernel time (ms)"},
    {"summary/launch_latency_us", "launch latency, median (µs)"},
    {"summary/launch_overhead_us", "launch overhead, median (µs)"},
    {"summary/queue_delay_us", "queue delay, median (µs)"},
    {"summary/class/comm_ms", "communication kernels (ms)"},
    {"summary/memcpy_time_ms", "copies (ms)"},
    {"summary/sync_time_ms", "GPU sync waits (ms)"},
    {"summary/gpu_metrics/sm_active_pct", "SM active (%)"},
    {"summary/gpu_metrics/tensor_active_pct", "tensor pipes active (%)"},
    {"summary/peak_allocated_bytes", "peak memory allocated (bytes)"},
    {"summary/peak_reserved_bytes", "peak memory reserved (bytes)"},
    {"summary/memory_growth_bytes_per_step", "memory growth per step (bytes)"},
    {"summary/wall_time_ms", "profiled wall time (ms)"},
    {"summary/kernel_count", "kernels"},
    {"profiler/dropped_records", "dropped records"},
};
#define NMETRIC_COLUMNS (sizeof METRIC_COLUMNS / sizeof METRIC_COLUMNS[0])

/* Descriptions of the built-in hyper-parameters (BUILTIN_HPARAMS' order). */
static const char *const BUILTIN_WHAT[NBUILTIN] = {
    "The run's name.",
    "The host entry: the process's host name, with .rank<N> for a rank, _pid<P> for one of "
    "several processes; a multi-host job's own row says how many hosts it joins.",
    "The GPUs the trace used.",
    "What recorded the trace (cupti: tbexport's collector; kineto, chrome, xspace, nsys).",
    "The kinds of events in the trace.",
    "What a step is (the steps' name without its number), or none.",
    "The command that was profiled.",
    "Every --label KEY=VALUE of the run, in one column (each key also has a column of its "
    "own when the sessions agree on the keys)."};

/* The session: the experiment (the same columns in every session, so
 * that whichever TensorBoard reads the table is the same: the built-in
 * hyper-parameters, this session's label keys, METRIC_COLUMNS with their
 * display names), the hyper-parameters' values, start and end. */
int tbe__hp_session_write(tbe_writer *w, const tbe__hp_session *si, const tbe_allocator *a) {
  size_t nl = si->nlabels, cap = NBUILTIN + nl;
  tbe_hparam *hp = tbe__calloc(a, cap, sizeof *hp);
  tbe__hp_column *cols = tbe__calloc(a, cap + NMETRIC_COLUMNS, sizeof *cols);
  char *keys = tbe__alloc(a, nl * 104 + 1);
  tbe__buf all, desc;
  tbe__buf_init(&all, a);
  tbe__buf_init(&desc, a);
  int rc = 0;
  if (!hp || !cols || !keys) rc = TBE_ENOMEM;
  size_t nh = 0, nc = 0;
  const char *vals[NBUILTIN] = {si->run,   si->host,  si->gpu,     si->source,
                                si->kinds, si->steps, si->command, NULL};
  for (size_t i = 0; i < nl && !rc; i++) {
    if (i) tbe__buf_puts(&all, ", ");
    tbe__buf_puts(&all, si->labels[i]);
  }
  tbe__buf_putc(&all, '\0');
  if (nl) vals[NBUILTIN - 1] = (const char *)all.data;
  /* Metric descriptions, one block of NUL-terminated texts. */
  size_t at[NMETRIC_COLUMNS];
  for (size_t i = 0; i < NMETRIC_COLUMNS; i++) {
    at[i] = desc.len;
    tbe__ev_describe(&desc, METRIC_COLUMNS[i].tag, NULL);
  }
  if (tbe__buf_error(&all) || tbe__buf_error(&desc)) rc = TBE_ENOMEM;
  for (size_t b = 0; b < NBUILTIN && !rc; b++) {
    cols[nc++] = (tbe__hp_column){BUILTIN_HPARAMS[b], NULL, BUILTIN_WHAT[b], TBE_HPARAM_STRING,
                                  b == 0 || b == 1 || b == NBUILTIN - 1};
    if (!vals[b]) continue;
    hp[nh].name = BUILTIN_HPARAMS[b];
    hp[nh].type = TBE_HPARAM_STRING;
    hp[nh++].string = vals[b];
  }
  for (size_t i = 0; i < nl && !rc; i++) {
    const char *l = si->labels[i], *eq = strchr(l, '=');
    char *k = keys + i * 104;
    snprintf(k, 104, "%.*s", (int)(eq - l), l);
    hp[nh].name = k;
    if (as_number(eq + 1, &hp[nh].number)) {
      hp[nh].type = TBE_HPARAM_NUMBER;
    } else {
      hp[nh].type = TBE_HPARAM_STRING;
      hp[nh].string = eq + 1;
    }
    cols[nc++] = (tbe__hp_column){k, NULL, "A --label of the run.", hp[nh].type, 1};
    nh++;
  }
  size_t nhc = nc;
  for (size_t i = 0; i < NMETRIC_COLUMNS && !rc; i++)
    cols[nc++] = (tbe__hp_column){METRIC_COLUMNS[i].tag, METRIC_COLUMNS[i].display,
                                  (const char *)desc.data + at[i], TBE_HPARAM_NUMBER, 0};
  tbe__hp_experiment x = {cols, nhc, cols + nhc, nc - nhc};
  if (!rc) rc = tbe__writer_hparams_session(w, hp, nh, NULL, 0, &x, si->start, 0, si->wall);
  tbe__buf_deinit(&all);
  tbe__buf_deinit(&desc);
  tbe__free(a, hp);
  tbe__free(a, cols);
  tbe__free(a, keys);
  return rc;
}
