/* fuzz_analysis.c: libFuzzer target for the analysis, the reports and the
 * exporters, over traces built from the input bytes.
 *
 * The importers check what they read; the analysis takes any tbe_trace a
 * library user builds through the public API, whose fields are public: a
 * start of INT64_MIN, a window that ends before it starts, steps that
 * overlap or invert, durations summing past int64.  So the input is read
 * as a little program that builds such a trace:
 *   byte 0      flags: bit 0 sets start_ns/stop_ns from the next 16 bytes,
 *               bit 2 runs tbe_trace_steps_from_range("train_step"),
 *               bit 3 exports XSpace and Chrome JSON
 *   then records of 20 bytes: kind, track (4 host threads, 4 GPU streams
 *   on 3 devices), name (a table of kernel, API, range and step names),
 *   a byte for correlation/steps, start (int64 LE), dur (int64 LE); a kind
 *   byte >= 0xF0 adds a step (num from the name byte, start, end) instead.
 * Times are taken raw about half the time and, otherwise, as small values
 * near an epoch base, so both the extremes and ordinary overlaps come up.
 * Then: finish, analysis, the summary in every format, the run analysis
 * of two hosts (the trace twice) and its report, the diff of the trace with
 * itself and its report; with bit 3 the XSpace and Chrome JSON exporters
 * write into a temporary directory (removed after).  No output is checked
 * beyond "no crash, no sanitizer report, every call returns"; the
 * sanitized builds make every signed overflow a finding. */
#include <stdint.h>
#include <stdio.h>

#include "fuzz_util.h"
#include "tbexport/analysis.h"
#include "tbexport/export.h"
#include "tbexport/trace.h"

#define MAX_RECORDS 2048

static int64_t rd64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return (int64_t)v;
}

/* A raw value, or a small offset from an epoch base. */
static int64_t time_of(const uint8_t *p) {
  int64_t v = rd64(p);
  if (p[7] & 0x80 && p[6] & 0x40) return v; /* raw: the extremes */
  return 1700000000000000000LL + (v & 0xFFFFFFF);
}

static int64_t dur_of(const uint8_t *p) {
  int64_t v = rd64(p);
  if ((p[7] & 0xC0) == 0xC0) return v; /* raw: negative, huge */
  return v & 0xFFFFF;
}

static const char *const names[] = {
    "gemm_kernel", "cudaLaunchKernel", "cudaDeviceSynchronize", "aten::mm", "train_step",
    "ProfilerStep#1", "ProfilerStep#2", "forward, seq = 3, op_id = 1", "", "Memcpy HtoD",
    "step 7", "cuStreamSynchronize"};
#define NNAMES (sizeof names / sizeof names[0])

static void report_all(tbe_analysis *an) {
  tbe_report_options o;
  tbe_report_options_init(&o);
  for (int f = 0; f < 4; f++) {
    o.format = f;
    o.top = f == 1 ? 0 : 10;
    char *s = NULL;
    size_t n = 0;
    if (tbe_report_summary(an, &o, &s, &n) == 0) tbe_report_free(s, n, NULL);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  uint8_t flags = data[0];
  size_t pos = 1;
  tbe_trace *t = NULL;
  if (tbe_trace_create(&t, NULL)) return 0;
  uint32_t tracks[8];
  int ok = 1;
  for (int i = 0; i < 8 && ok; i++)
    ok = tbe_trace_track(t, i < 4 ? TBE_TRACK_THREAD : TBE_TRACK_STREAM, i < 4 ? 100 : -1,
                         i < 4 ? i + 1 : i, i < 4 ? -1 : (i % 3), &tracks[i]) == 0;
  tbe_str ids[NNAMES];
  for (size_t i = 0; i < NNAMES && ok; i++) ok = tbe_trace_intern(t, names[i], strlen(names[i]), &ids[i]) == 0;
  if (!ok) {
    tbe_trace_free(t);
    return 0;
  }
  if ((flags & 1) && size - pos >= 16) {
    t->start_ns = rd64(data + pos);
    t->stop_ns = rd64(data + pos + 8);
    pos += 16;
  }
  for (size_t r = 0; r < MAX_RECORDS && size - pos >= 20; r++, pos += 20) {
    const uint8_t *p = data + pos;
    int64_t start = time_of(p + 4), dur = dur_of(p + 12);
    if (p[0] >= 0xF0) {
      tbe_str nm = ids[p[2] % NNAMES];
      if (tbe_trace_add_step(t, (int64_t)p[2] - 8, start, rd64(p + 12), nm) == 0 && (p[3] & 1))
        t->steps[t->nsteps - 1].track = tracks[p[1] % 4];
      continue;
    }
    tbe_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = (uint8_t)(p[0] % TBE_EV__COUNT);
    int gpu = tbe_event_kind_is_gpu((tbe_event_kind)ev.kind);
    ev.track = tracks[gpu ? 4 + p[1] % 4 : p[1] % 4];
    ev.name = ids[p[2] % NNAMES];
    ev.correlation = p[3] & 0x0F;
    ev.flags = (uint8_t)((p[3] >> 4) & TBE_EVF_ASYNC);
    ev.start_ns = start;
    ev.dur_ns = dur;
    ev.detail = ev.link = TBE_NONE;
    union {
      tbe_kernel k;
      tbe_memcpy mc;
      tbe_memset ms;
      tbe_sync sy;
      tbe_nvtx nv;
      tbe_counter c;
      tbe_memory m;
    } d;
    memset(&d, 0, sizeof d);
    const void *detail = NULL;
    switch (ev.kind) {
      case TBE_EV_KERNEL: d.k.occupancy_pct = -1, detail = &d; break;
      case TBE_EV_MEMCPY:
        d.mc.bytes = (uint64_t)rd64(p + 12);
        d.mc.copy_kind = (uint8_t)(p[3] % 11);
        d.mc.src_kind = (uint8_t)(p[1] % 8);
        detail = &d;
        break;
      case TBE_EV_MEMSET: d.ms.bytes = (uint64_t)dur, detail = &d; break;
      case TBE_EV_SYNC: d.sy.stream = p[1] % 4, detail = &d; break;
      case TBE_EV_NVTX_RANGE:
      case TBE_EV_NVTX_MARK:
        d.nv.payload_type = p[3] & 1;
        d.nv.payload.i = p[2];
        detail = &d;
        break;
      case TBE_EV_COUNTER: d.c.value = (double)dur, detail = &d; break;
      case TBE_EV_MEMORY: d.m.bytes = dur, d.m.device = -1, detail = &d; break;
      default: break;
    }
    (void)tbe_trace_add_event(t, &ev, detail, NULL, 0, NULL);
  }
  if (tbe_trace_finish(t) == 0) {
    if (flags & 4) (void)tbe_trace_steps_from_range(t, "train_step", NULL);
    tbe_analysis *an = NULL, *an2 = NULL;
    if (tbe_analysis_create(&an, t, NULL) == 0 && tbe_analysis_create(&an2, t, NULL) == 0) {
      report_all(an);
      tbe_analysis *hosts[2] = {an, an2};
      const char *labels[2] = {"a", "b"};
      tbe_run_analysis *run = NULL;
      tbe_report_options o;
      tbe_report_options_init(&o);
      char *s = NULL;
      size_t n = 0;
      if (tbe_run_analysis_create(&run, hosts, labels, 2, NULL) == 0) {
        for (int f = 0; f < 4; f++) {
          o.format = f;
          if (tbe_report_run(run, &o, &s, &n) == 0) tbe_report_free(s, n, NULL);
        }
        tbe_run_diff *rd = NULL;
        if (tbe_run_diff_create(&rd, run, run, NULL) == 0) {
          o.format = TBE_REPORT_JSON;
          if (tbe_report_run_diff(rd, &o, &s, &n) == 0) tbe_report_free(s, n, NULL);
          tbe_run_diff_free(rd);
        }
        tbe_run_analysis_free(run);
      }
      tbe_diff *df = NULL;
      if (tbe_diff_create(&df, an, an2, NULL) == 0) {
        for (int f = 0; f < 4; f++) {
          o.format = f;
          if (tbe_report_diff(df, &o, &s, &n) == 0) tbe_report_free(s, n, NULL);
        }
        tbe_diff_free(df);
      }
    }
    tbe_analysis_free(an);
    tbe_analysis_free(an2);
    if (flags & 8) {
      char path[128];
      snprintf(path, sizeof path, "%s/h.xplane.pb", fz_tmpdir());
      (void)tbe_export_xplane(t, path, 1);
      unlink(path);
      snprintf(path, sizeof path, "%s/h.trace.json.gz", fz_tmpdir());
      (void)tbe_export_chrome_json(t, path, 1, 1);
      unlink(path);
    }
  }
  tbe_trace_free(t);
  return 0;
}
