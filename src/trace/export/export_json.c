/* export_json.c: the Chrome-trace JSON output, in Kineto's layout.
 *
 * Writes one finished trace as the object form PyTorch's profiler writes:
 * schemaVersion, deviceProperties, distributedInfo, displayTimeUnit,
 * baseTimeNanoseconds, traceEvents, traceName.  Host threads are rows
 * (pid, tid); GPU work goes on pid = device, tid = stream; every X event has
 * a `cat`; kernel, memcpy, memset and API-call args carry Kineto's names;
 * each resolved correlation link becomes an "ac2g" flow pair (an "s" on the
 * launching API call, an "f" with "bp":"e" on the GPU op, id = correlation),
 * and the model's other flows (fwdbwd, ...) follow.  Generic args are
 * re-emitted after the typed ones (skipping keys already written) so that
 * importing the output gives back the same model.  What Kineto's layout has
 * no place for goes under our own top-level keys, read back by
 * src/import/chrome_json.c: tbexportTrace (source, host, window),
 * tbexportCollection, tbexportWarnings, tbexportSteps,
 * tbexportKernelMetrics (the range profiler's per-kernel figures, also
 * shown on every kernel they describe as the arg "range profiler": the
 * summary's headings, two decimals, the analysis's "bound by"; made again
 * from tbexportKernelMetrics on import, never read back).  A GPU's
 * hardware-metric counter tracks (tbe_track_is_metric) are "C" events in
 * the GPU's pid, named by the metric, args {"value": v}: Perfetto makes one
 * counter track per name in each process, so one per metric per GPU.  Syncs sit where
 * Kineto puts them (pid = device, tid = stream, the row "stream N", without
 * the space Kineto's empty postfix leaves; a stream sync on the row
 * "stream N (sync)", tid + 1000000); a step that no ProfilerStep#N event
 * carries gets one (a user_annotation on its thread), as HTA and
 * torch-tb-profiler find steps by that name.
 *
 * Invariants:
 * - Times are printed from integer nanoseconds as exact microseconds with
 *   three decimals, relative to baseTimeNanoseconds, never through a float
 *   format (a double cannot hold epoch microseconds to the nanosecond).
 * - Every string is valid JSON: control characters become \u00XX, quotes and
 *   backslashes are escaped, invalid UTF-8 becomes U+FFFD.  Each interned
 *   string is escaped once and cached by id, so a kernel name seen a million
 *   times is scanned once.
 * - The document is produced in parts: the head (top-level fields and the
 *   metadata events) and the tail (model flows, traceName) here, on the
 *   calling thread, the events in chunks of 2048 formatted by worker
 *   threads (export_json_pipe.c: the online CPUs, at most 32) that the
 *   calling thread writes (or, gzip, that the workers deflate) strictly in
 *   order.  The bytes do not depend on the number of threads (tested);
 *   nothing is allocated per event.  The output writes into the file
 *   export_run.c hands it and never decides where files go.
 *
 * The parts of the output and what they share: export_json_int.h.
 *
 * Position: an output of src/trace (exporter table entry "json"); reads the
 * model, and the trace's analysis for the kernels' "bound by" when the
 * trace has range-profiler figures (the run's shared one). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/checked.h"
#include "common/map.h"
#include "tbexport/analysis.h"
#include "tbexport/error.h"
#include "tbexport/export.h"
#include "trace/export/export_json.h"
#include "trace/export/export_json_esc.h"
#include "trace/export/export_json_int.h"
#include "trace/exporter.h"
#include "trace/model/model_int.h"

/* Kineto floors its base time to this many seconds (~a quarter year), so
 * ranks on different hosts share one base (output_json.h). */
#define KINETO_BASE_PERIOD_S 7889238LL

/* ---- the document ---- */

static void write_device_props(jctx *c) {
  const tbe_trace *t = c->t;
  jw *w = &c->w;
  JW_LIT(w, "  \"deviceProperties\": [");
  for (size_t i = 0; i < t->ndevices; i++) {
    const tbe_device *d = &t->devices[i];
    jw_cstr(w, i ? ",\n    {" : "\n    {");
    JW_LIT(w, "\"id\":");
    jw_i64(w, d->id);
    JW_LIT(w, ", \"name\":");
    tbe__jw_str(c, d->name);
#define DPROP(key, v)                \
  if (v) {                           \
    JW_LIT(w, ", \"" key "\":");     \
    jw_i64(w, (int64_t)(v));         \
  }
    /* Kineto's fields in Kineto's order (DeviceProperties.cpp), each where
     * it is known (0: unknown); a minor of 0 is a real one (Hopper is 9.0)
     * wherever the major is known. */
    DPROP("totalGlobalMem", d->memory_bytes);
    DPROP("computeMajor", d->cc_major);
    if (d->cc_major) {
      JW_LIT(w, ", \"computeMinor\":");
      jw_i64(w, d->cc_minor);
    }
    DPROP("maxThreadsPerBlock", d->max_threads_per_block);
    DPROP("maxThreadsPerMultiprocessor", d->max_threads_per_sm);
    DPROP("regsPerBlock", d->regs_per_block);
    DPROP("warpSize", d->warp_size);
    DPROP("sharedMemPerBlock", d->shared_per_block);
    DPROP("numSms", d->sm_count);
    DPROP("regsPerMultiprocessor", d->regs_per_sm);
    DPROP("sharedMemPerBlockOptin", d->shared_per_block_optin);
    DPROP("sharedMemPerMultiprocessor", d->shared_per_sm);
    /* Not Kineto fields, but cudaDeviceProp names: kept for the XSpace
     * device plane of a re-imported trace. */
    DPROP("clockRate", d->clock_khz);
    DPROP("memoryBandwidth", d->memory_bandwidth);
#undef DPROP
    JW_LIT(w, "}");
  }
  jw_cstr(w, t->ndevices ? "\n  ],\n" : "],\n");
}

static void meta_event(jctx *c, const char *what, int64_t pid, int64_t tid, const char *argkey,
                       const char *sval, size_t slen, int64_t ival) {
  jw *w = &c->w;
  jw_cstr(w, c->first_event ? "\n  {\"name\":\"" : ",\n  {\"name\":\"");
  c->first_event = 0;
  jw_mem(w, what, strlen(what));
  JW_LIT(w, "\",\"ph\":\"M\",\"ts\":");
  char *d = jw_room(w, 32);
  if (d) w->len += put_us(d, tbe__sat_sub(c->t->start_ns, c->base));
  JW_LIT(w, ",\"pid\":");
  jw_i64(w, pid);
  JW_LIT(w, ",\"tid\":");
  jw_i64(w, tid);
  JW_LIT(w, ",\"args\":{\"");
  jw_mem(w, argkey, strlen(argkey));
  JW_LIT(w, "\":");
  if (sval) jw_qstr(w, sval, slen);
  else jw_i64(w, ival);
  JW_LIT(w, "}}");
}

/* Whether stream track `tr` holds a stream sync (which has a row of its own). */
static int has_stream_sync(const tbe_trace *t, const tbe_track *tr) {
  for (uint32_t i = tr->first; i < tr->first + tr->count; i++) {
    const tbe_sync *s = tbe_trace_sync(t, &t->events[i]);
    if (s && s->sync_kind == TBE_SYNC_STREAM) return 1;
  }
  return 0;
}

/* Appends `pid` to v[*n] unless `seen` has it (first appearance order). */
static void add_pid(tbe__map *seen, int64_t *v, size_t *n, int64_t pid) {
  int added = 0;
  if (tbe__map_put(seen, (uint64_t)pid, &added) && added) v[(*n)++] = pid;
}

/* process_name/labels/sort_index and thread_name/sort_index, as Kineto
 * writes them: host processes labelled "CPU", GPUs "GPU <n>" sorted after
 * every host pid, streams "stream <id> ", threads "thread <tid> (<name>)". */
static int write_metadata(jctx *c) {
  const tbe_trace *t = c->t;
  char tmp[600];
  size_t cap = t->nprocesses + t->ntracks + t->ndevices + 1;
  int64_t *hosts = tbe__calloc(c->w.a, cap, sizeof *hosts);
  int64_t *gpus = tbe__calloc(c->w.a, cap, sizeof *gpus);
  if (!hosts || !gpus) {
    tbe__free(c->w.a, hosts);
    tbe__free(c->w.a, gpus);
    return TBE_ENOMEM;
  }
  /* Host pids and GPUs in order of first appearance, each process's name
   * from the last entry of its pid that has one: through maps keyed by pid
   * and device (a scan per entry was quadratic in 80,000 GPUs). */
  size_t nh = 0, ng = 0;
  tbe__map hseen, gseen, named;
  tbe__map_init(&hseen, c->w.a, TBE__SEED_PROCESS);
  tbe__map_init(&gseen, c->w.a, TBE__SEED_PROCESS);
  tbe__map_init(&named, c->w.a, TBE__SEED_PROCESS);
  for (size_t i = 0; i < t->nprocesses; i++) {
    add_pid(&hseen, hosts, &nh, t->processes[i].pid);
    if (t->processes[i].name) tbe__map_set(&named, (uint64_t)t->processes[i].pid, (uint32_t)i);
  }
  for (size_t i = 0; i < t->ntracks; i++) {
    const tbe_track *tr = &t->tracks[i];
    if (tr->type == TBE_TRACK_THREAD) add_pid(&hseen, hosts, &nh, tr->pid);
    if (tr->type == TBE_TRACK_STREAM || tbe_track_is_metric(tr)) add_pid(&gseen, gpus, &ng, tr->device);
  }
  for (size_t i = 0; i < t->ndevices; i++) add_pid(&gseen, gpus, &ng, t->devices[i].id);
  int rc = tbe__map_error(&hseen);
  if (!rc) rc = tbe__map_error(&gseen);
  if (!rc) rc = tbe__map_error(&named);
  tbe__map_deinit(&hseen);
  tbe__map_deinit(&gseen);
  if (rc) {
    tbe__map_deinit(&named);
    tbe__free(c->w.a, hosts);
    tbe__free(c->w.a, gpus);
    return rc;
  }

  const char *main_name = NULL;
  for (size_t i = 0; i < nh; i++) {
    const uint32_t *k = tbe__map_get(&named, (uint64_t)hosts[i]);
    const char *pname = k ? tbe_trace_str(t, t->processes[*k].name) : NULL;
    if (pname) {
      meta_event(c, "process_name", hosts[i], 0, "name", pname, strlen(pname), 0);
      if (!main_name) main_name = pname;
    }
    meta_event(c, "process_labels", hosts[i], 0, "labels", "CPU", 3, 0);
    meta_event(c, "process_sort_index", hosts[i], 0, "sort_index", NULL, 0, hosts[i]);
  }
  for (size_t i = 0; i < ng; i++) {
    const char *pname = main_name;
    int n = snprintf(tmp, sizeof tmp, "GPU %lld", (long long)gpus[i]);
    meta_event(c, "process_name", gpus[i], 0, "name", pname ? pname : tmp,
               pname ? strlen(pname) : (size_t)n, 0);
    meta_event(c, "process_labels", gpus[i], 0, "labels", tmp, (size_t)n, 0);
    meta_event(c, "process_sort_index", gpus[i], 0, "sort_index", NULL, 0, 5000000 + gpus[i]);
  }
  tbe__map_deinit(&named);
  tbe__free(c->w.a, hosts);
  tbe__free(c->w.a, gpus);

  /* Streams of one GPU and id that are two tracks (the process's and
   * none's: a trace read back from our Chrome JSON whose memory events
   * joined their process, chrome_json_finish.c) are one row: named once. */
  tbe__map rows;
  tbe__map_init(&rows, c->w.a, TBE__SEED_PROCESS);
  for (size_t i = 0; i < t->ntracks; i++) {
    const tbe_track *tr = &t->tracks[i];
    int64_t pid, tid;
    track_row(tr, &pid, &tid);
    if (tr->type == TBE_TRACK_STREAM && tid >= 0 && tid <= UINT32_MAX) {
      int added = 0;
      if (tbe__map_put(&rows, (uint64_t)(uint32_t)tr->device << 32 | (uint64_t)tid, &added) &&
          !added)
        continue;
    }
    const char *name = tbe_trace_str(t, tr->name);
    size_t nl = tbe_trace_strlen(t, tr->name);
    const char *label = name;
    size_t ll = nl;
    int n = 0;
    if (tr->type == TBE_TRACK_STREAM && tr->tid < 0) continue; /* unnamed, as in Kineto */
    if (tbe_track_is_metric(tr)) continue; /* a counter: named by its events */
    if (tr->type == TBE_TRACK_STREAM) {
      /* "stream 7": Kineto's label less the space its empty postfix
       * leaves ("stream 7 "), which a Kineto trace's own rows carry. */
      n = snprintf(tmp, sizeof tmp, "stream %lld ", (long long)tr->tid);
      if (!nl || (nl == (size_t)n && memcmp(name, tmp, nl) == 0)) {
        label = tmp;
        ll = (size_t)n - 1;
      }
    } else if (tr->type == TBE_TRACK_THREAD) {
      if (!nl) {
        n = snprintf(tmp, sizeof tmp, "thread %lld", (long long)tr->tid);
        label = tmp;
        ll = (size_t)n;
      } else if (strncmp(name, "thread ", 7) != 0 && nl < 500) {
        n = snprintf(tmp, sizeof tmp, "thread %lld (%s)", (long long)tr->tid, name);
        label = tmp;
        ll = (size_t)n;
      }
    }
    if (ll) meta_event(c, "thread_name", pid, tid, "name", label, ll, 0);
    if (tr->type != TBE_TRACK_OTHER) meta_event(c, "thread_sort_index", pid, tid, "sort_index", NULL, 0, tid);
    if (tr->type == TBE_TRACK_STREAM && has_stream_sync(t, tr)) {
      n = snprintf(tmp, sizeof tmp, "stream %lld (sync)", (long long)tr->tid);
      meta_event(c, "thread_name", pid, tid + KINETO_SYNC_TID_OFFSET, "name", tmp, (size_t)n, 0);
      meta_event(c, "thread_sort_index", pid, tid + KINETO_SYNC_TID_OFFSET, "sort_index", NULL, 0,
                 tid);
    }
  }
  int rc2 = tbe__map_error(&rows);
  tbe__map_deinit(&rows);
  return rc2;
}

static int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
  return q;
}

/* ---- top-level keys ---- */

/* "tbexportTrace": what the rest of the document does not say about the
 * trace: that our collector recorded it (its source), the host it was taken
 * on, and its profiled window when that is not the span of its events. */
static void write_trace_key(jctx *c, const char *host) {
  const tbe_trace *t = c->t;
  jw *w = &c->w;
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_event *e = &t->events[i];
    if (e->start_ns < lo) lo = e->start_ns;
    if (tbe__end_ns(e->start_ns, e->dur_ns) > hi) hi = tbe__end_ns(e->start_ns, e->dur_ns);
  }
  int window = t->nevents ? (t->start_ns != lo || t->stop_ns != hi) : (t->start_ns || t->stop_ns);
  int n = 0;
  if (t->source == TBE_SRC_CUPTI) {
    JW_LIT(w, "  \"tbexportTrace\": {\"source\": \"cupti\"");
    n++;
  }
  if (host && *host) { /* the run's host, as the XSpace records it */
    jw_cstr(w, n++ ? ", \"host\": " : "  \"tbexportTrace\": {\"host\": ");
    jw_qcstr(w, host);
  } else if (t->host) {
    jw_cstr(w, n++ ? ", \"host\": " : "  \"tbexportTrace\": {\"host\": ");
    tbe__jw_str(c, t->host);
  }
  if (window) {
    jw_cstr(w, n++ ? ", \"startNs\": " : "  \"tbexportTrace\": {\"startNs\": ");
    jw_i64(w, t->start_ns);
    JW_LIT(w, ", \"stopNs\": ");
    jw_i64(w, t->stop_ns);
  }
  if (n) JW_LIT(w, "},\n");
}

/* "tbexportCollection": what the collection lost and cost, zeros included. */
static void write_collection_key(jctx *c) {
  const tbe_trace *t = c->t;
  jw *w = &c->w;
  if (t->source != TBE_SRC_CUPTI && !t->dropped_records && !t->dropped_out_of_range &&
      !t->overhead_ns && !t->ended_early)
    return;
  JW_LIT(w, "  \"tbexportCollection\": {\"droppedRecords\": ");
  jw_i64(w, (int64_t)t->dropped_records);
  JW_LIT(w, ", \"outOfRangeRecords\": ");
  jw_i64(w, (int64_t)t->dropped_out_of_range);
  JW_LIT(w, ", \"cuptiOverheadNs\": ");
  jw_i64(w, (int64_t)t->overhead_ns);
  if (t->ended_early)
    JW_LIT(w, ", \"endedEarly\": true},\n");
  else
    JW_LIT(w, ", \"endedEarly\": false},\n");
}

typedef struct warn_list {
  jw *w;
  int first;
} warn_list;

static void warning_item(void *ctx, const char *line, size_t len) {
  warn_list *l = ctx;
  if (!l->first) JW_LIT(l->w, ", ");
  jw_qstr(l->w, line, len);
  l->first = 0;
}

/* "tbexportWarnings": the generic status lines, then the trace's own. */
static void write_warnings_key(jctx *c) {
  const tbe_trace *t = c->t;
  jw *w = &c->w;
  if (!t->nwarnings && !t->dropped_records && !t->dropped_out_of_range && !t->ended_early) return;
  warn_list wl = {w, 1};
  JW_LIT(w, "  \"tbexportWarnings\": [");
  tbe__status_lines(t, 0, warning_item, &wl);
  int first = wl.first;
  for (size_t i = 0; i < t->nwarnings; i++) {
    if (!first) JW_LIT(w, ", ");
    tbe__jw_str(c, t->warnings[i]);
    first = 0;
  }
  JW_LIT(w, "],\n");
}

/* "tbexportKernelMetrics": the range profiler's figures per kernel name
 * and device (tbe_kernel_metrics), which no Kineto field holds. */
static void write_kernel_metrics_key(jctx *c) {
  const tbe_trace *t = c->t;
  jw *w = &c->w;
  if (!t->nkernel_metrics) return;
  JW_LIT(w, "  \"tbexportKernelMetrics\": [");
  for (size_t i = 0; i < t->nkernel_metrics; i++) {
    const tbe_kernel_metrics *k = &t->kernel_metrics[i];
    if (i) JW_LIT(w, ",");
    JW_LIT(w, "\n    {\"name\": ");
    tbe__jw_str(c, k->name);
    JW_LIT(w, ", \"device\": ");
    jw_i64(w, k->device);
    JW_LIT(w, ", \"launches\": ");
    jw_i64(w, k->launches > INT64_MAX ? INT64_MAX : (int64_t)k->launches);
    JW_LIT(w, ", \"metrics\": {");
    for (uint32_t j = 0; j < k->count; j++) {
      const tbe_metric_value *v = &t->metric_values[k->first + j];
      if (j) JW_LIT(w, ", ");
      tbe__jw_str(c, v->metric);
      JW_LIT(w, ": ");
      jw_double(w, v->value);
    }
    JW_LIT(w, "}}");
  }
  JW_LIT(w, "],\n");
}

/* As PyTorch: only a distributed run (a known rank) has the key. */
static void write_dist_key(jctx *c) {
  const tbe_trace *t = c->t;
  jw *w = &c->w;
  if (t->rank < 0) return;
  JW_LIT(w, "  \"distributedInfo\": {");
  if (t->dist_backend) {
    JW_LIT(w, "\"backend\": ");
    tbe__jw_str(c, t->dist_backend);
    JW_LIT(w, ", ");
  }
  JW_LIT(w, "\"rank\": ");
  jw_i64(w, t->rank);
  if (t->world_size > 0) { /* unknown (PMIx gives none): left out, not guessed */
    JW_LIT(w, ", \"world_size\": ");
    jw_i64(w, t->world_size);
  }
  JW_LIT(w, "},\n");
}

/* The head, into c->w: the top-level fields, then "traceEvents" opened
 * with the metadata events.  0 or an error. */
static int write_head(jctx *c, const char *host) {
  jw *w = &c->w;
  JW_LIT(w, "{\n  \"schemaVersion\": 1,\n");
  write_device_props(c);
  write_dist_key(c);
  int list_steps = tbe__jw_plan_steps(c);
  if (list_steps < 0) return list_steps;
  write_trace_key(c, host);
  write_collection_key(c);
  write_warnings_key(c);
  if (list_steps) tbe__jw_steps_key(c);
  write_kernel_metrics_key(c);
  JW_LIT(w, "  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": ");
  jw_i64(w, c->base);
  JW_LIT(w, ",\n  \"traceEvents\": [");
  c->first_event = 1;
  int rc = write_metadata(c);
  return rc ? rc : w->err;
}

/* The tail, into c->w (emptied first): step markers after the last
 * event, the model's own flows (each end writes its separator) and the
 * closing fields.  0 or an error. */
static int write_tail(jctx *c, const char *trace_name) {
  const tbe_trace *t = c->t;
  jw *w = &c->w;
  w->len = 0;
  for (size_t m = tbe__jw_synth_from(c, (uint32_t)t->nevents); m < c->nsynth; m++)
    tbe__jw_step_marker(c, m);
  for (size_t i = 0; i < t->nflows && !w->err; i++) {
    const tbe_flow *f = &t->flows[i];
    const char *fc = tbe_trace_str(t, f->cat);
    if (strcmp(fc, "ac2g") == 0) continue; /* re-derived from correlation above */
    int64_t pid, tid;
    track_row(&t->tracks[f->src_track], &pid, &tid);
    tbe__jw_flow_end(c, "s", f->id, NULL, f->cat, f->name, pid, tid, f->src_ns, 0);
    track_row(&t->tracks[f->dst_track], &pid, &tid);
    tbe__jw_flow_end(c, "f", f->id, NULL, f->cat, f->name, pid, tid, f->dst_ns, f->dst_enclosing);
  }
  JW_LIT(w, "\n  ],\n  \"traceName\": ");
  if (t->trace_name) tbe__jw_str(c, t->trace_name);
  else jw_qcstr(w, trace_name ? trace_name : "");
  JW_LIT(w, "\n}\n");
  return w->err;
}

/* ---- the range profiler's figures on the kernels ---- */

/* c->kfig and c->kfig_bound (export_json_int.h) for a trace with kernel
 * figures: the entries by (name, device), each one's verdict from the
 * trace's analysis (the one `shared` holds, else made and kept there, or
 * made and freed here when `shared` is NULL).  0 or an error. */
static int plan_kernel_figures(jctx *c, tbe__map *map, uint8_t **bound,
                               struct tbe_analysis **shared, const tbe_allocator *a) {
  const tbe_trace *t = c->t;
  if (!t->nkernel_metrics) return 0;
  *bound = tbe__calloc(a, t->nkernel_metrics, 1);
  if (!*bound) return TBE_ENOMEM;
  for (size_t i = 0; i < t->nkernel_metrics; i++) {
    const tbe_kernel_metrics *k = &t->kernel_metrics[i];
    int rc = tbe__map_set(map, tbe__jw_kfig_key(k->name, k->device), (uint32_t)i);
    if (rc) return rc;
  }
  tbe_analysis *an = shared ? *shared : NULL;
  int own = 0;
  if (!an) {
    int rc = tbe_analysis_create(&an, t, a);
    if (rc) return rc;
    if (shared)
      *shared = an;
    else
      own = 1;
  }
  tbe__map verdict; /* kernel name -> its tbe_bound */
  tbe__map_init(&verdict, a, TBE__SEED_PROCESS);
  for (size_t i = 0; i < an->ngroups[TBE_GROUP_KERNEL]; i++) {
    const tbe_name_stats *ns = &an->groups[TBE_GROUP_KERNEL][i];
    if (ns->bound_by != TBE_BOUND_NONE) tbe__map_set(&verdict, ns->name, ns->bound_by);
  }
  for (size_t i = 0; i < t->nkernel_metrics; i++) {
    const uint32_t *v = tbe__map_get(&verdict, t->kernel_metrics[i].name);
    if (v) (*bound)[i] = (uint8_t)*v;
  }
  int rc = tbe__map_error(&verdict);
  tbe__map_deinit(&verdict);
  if (own) tbe_analysis_free(an);
  if (!rc) {
    c->kfig = map;
    c->kfig_bound = *bound;
  }
  return rc;
}

/* Writes the whole document into `out`: the head, the events
 * (export_json_pipe.c, `nth` formatting threads, 0: the default), the
 * tail. */
static int json_write(const tbe_trace *t, tbe__sink *out, int gzip, int nth, const char *trace_name,
                      const char *host, const tbe_allocator *a, struct tbe_analysis **shared,
                      void (*progress)(void *, uint64_t, uint64_t), void *progress_ctx) {
  jctx *c = tbe__calloc(a, 1, sizeof *c);
  if (!c) return TBE_ENOMEM;
  c->t = t;
  tbe__buf_init(&c->w, a);
  tbe__buf_init(&c->escbuf, a);
  c->nesc = tbe_trace_nstrings(t);
  c->esc = tbe__calloc(a, c->nesc ? c->nesc : 1, sizeof *c->esc);
  c->progress = progress;
  c->progress_ctx = progress_ctx;
  c->seed = tbe__hash_seed();
  if (t->base_time_ns) {
    c->base = t->base_time_ns;
  } else {
    const int64_t period = KINETO_BASE_PERIOD_S * 1000000000LL;
    c->base = tbe__sat_mul(floor_div(t->start_ns, period), period); /* saturates (common/checked.h) */
  }
  tbe__jw_keys(c);
  jsink sink = {out, gzip, 0, 0, 0, a};
  tbe__map kfig;
  uint8_t *kfig_bound = NULL;
  tbe__map_init(&kfig, a, TBE__SEED_PROCESS);
  int rc = c->esc ? tbe__jw_esc_all(c) : TBE_ENOMEM;
  if (!rc) rc = plan_kernel_figures(c, &kfig, &kfig_bound, shared, a);
  if (!rc) rc = write_head(c, host);
  if (!rc) {
    tbe__jw_sink_start(&sink);
    tbe__jw_sink_part(&sink, (const char *)c->w.data, c->w.len, NULL, 0);
    rc = sink.err;
  }
  if (!rc) rc = tbe__jw_events(c, &sink, nth);
  if (!rc) rc = write_tail(c, trace_name);
  if (!rc) {
    tbe__jw_sink_part(&sink, (const char *)c->w.data, c->w.len, NULL, 1);
    tbe__jw_sink_end(&sink);
    rc = sink.err;
  }
  if (!rc && progress) progress(progress_ctx, t->nevents, t->nevents);
  tbe__map_deinit(&kfig);
  tbe__free(a, kfig_bound);
  tbe__buf_deinit(&c->w);
  tbe__free(a, c->synth);
  tbe__free(a, c->esc);
  tbe__buf_deinit(&c->escbuf);
  tbe__free(a, c);
  return rc;
}

/* ---- entry points ---- */

int tbe__json_write_fd(const tbe_trace *t, int fd, int gzip, int threads, const char *trace_name) {
  if (!t || fd < 0) return TBE_EINVAL;
  if (!tbe__trace_finished(t)) return TBE_ESTATE;
  tbe_allocator a;
  tbe__allocator_init(&a, tbe__trace_allocator(t));
  tbe__sink out;
  tbe__sink_file(&out, fd);
  return json_write(t, &out, gzip, threads, trace_name, NULL, &a, NULL, NULL, NULL);
}

/* The exporter table's entry: the trace's name, when it has none of its
 * own, is the file's. */
static int json_export(const tbe__export_ctx *x, tbe__sink *out) {
  tbe_allocator a;
  tbe__allocator_init(&a, x->a);
  int nth = x->threads > 32 ? 32 : (int)x->threads; /* (export_json_pipe.c: at most 32) */
  return json_write(x->trace, out, !x->plain, nth, x->name, x->host, &a, x->analysis, x->progress,
                    x->progress_ctx);
}

const tbe__exporter tbe__exporter_json = {"json", TBE_OUT_JSON, json_export};
