/* fuzz_analysis_store.c: libFuzzer target for the persisted analysis
 * reader (tbe_analysis_load) and for the reports over what it accepts.
 *
 * Each input is loaded twice: as it is (so the version peek, the checksum
 * and the framing checks are reached), and with a correct checksum field
 * appended (so the fuzzer gets past the sum and into the decoding and the
 * checks of every count, enum and text).  Whatever loads is rendered: the
 * summary in every format, a run of two hosts (the analysis twice) and its
 * report, the diff of the analysis with itself.  No output is checked
 * beyond "no crash, no sanitizer report, every call returns"; a load that
 * fails must say why in its error, and one that succeeds must give figures
 * in the ranges the loader promises (times and windows inside the model's
 * range, durations >= 0, latencies >= -1, counts that fit int64_t, finite
 * figures): what the reports, diffs and events writers rely on. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "common/checked.h"
#include "common/crc32c.h"
#include "tbexport/analysis.h"

static void render(tbe_analysis *an) {
  for (int f = 0; f < 4; f++) {
    tbe_report_options o;
    tbe_report_options_init(&o);
    o.format = f;
    o.top = f == 2 ? 0 : 10;
    char *s = NULL;
    size_t n = 0;
    if (tbe_report_summary(an, &o, &s, &n) == 0) tbe_report_free(s, n, NULL);
  }
  tbe_analysis *two[2] = {an, an};
  tbe_run_analysis *r = NULL;
  if (tbe_run_analysis_create(&r, two, NULL, 2, NULL) == 0) {
    tbe_report_options o;
    tbe_report_options_init(&o);
    char *s = NULL;
    size_t n = 0;
    if (tbe_report_run(r, &o, &s, &n) == 0) tbe_report_free(s, n, NULL);
    tbe_run_analysis_free(r);
  }
  tbe_diff *d = NULL;
  if (tbe_diff_create(&d, an, an, NULL) == 0) {
    tbe_report_options o;
    tbe_report_options_init(&o);
    o.format = TBE_REPORT_JSON;
    char *s = NULL;
    size_t n = 0;
    if (tbe_report_diff(d, &o, &s, &n) == 0) tbe_report_free(s, n, NULL);
    tbe_diff_free(d);
  }
}

/* The ranges tbe_analysis_load promises, on what it built. */
static int in_range(const tbe_analysis *an) {
  int ok = tbe__span_ok(an->start_ns, an->wall_ns) && an->host_busy_ns >= 0 &&
           an->api_calls <= (uint64_t)INT64_MAX;
  for (size_t i = 0; i <= an->ndevices; i++) {
    const tbe_device_stats *d = i < an->ndevices ? &an->devices[i] : &an->all;
    ok = ok && d->busy_ns >= 0 && d->kernel_ns >= 0 && d->launch_median_ns >= -1 &&
         d->kernel_count <= (uint64_t)INT64_MAX;
    for (int k = 0; k < TBE_KCLASS__COUNT; k++) ok = ok && d->class_ns[k] >= 0;
  }
  for (int g = 0; g < TBE_GROUP__COUNT; g++)
    for (size_t i = 0; i < an->ngroups[g]; i++) {
      const tbe_name_stats *e = &an->groups[g][i];
      ok = ok && e->total_ns >= 0 && e->self_ns >= 0 && e->calls <= (uint64_t)INT64_MAX;
      for (size_t k = 0; e->step_ns && k < an->nsteps; k++) ok = ok && e->step_ns[k] >= 0;
    }
  for (size_t i = 0; i < an->nsteps; i++)
    ok = ok && tbe__span_ok(an->steps[i].start_ns, an->steps[i].dur_ns) &&
         an->steps[i].launch_median_ns >= -1;
  for (size_t i = 0; i < an->nadvice; i++) ok = ok && isfinite(an->advice[i].figure);
  return ok && an->step_dist.median_ns >= -1 && an->step_dist.min_ns >= -1;
}

static void one(const uint8_t *data, size_t size) {
  tbe_analysis *an = NULL;
  tbe_analysis_stamp st;
  tbe_analysis_load_error err;
  int rc = tbe_analysis_load(&an, &st, data, size, NULL, &err);
  if (rc == 0) {
    if (!in_range(an)) abort(); /* loaded, and out of the promised ranges */
    render(an);
    tbe_analysis_free(an);
  } else if (!err.message[0] || an) {
    abort(); /* a refusal must say why, and give nothing */
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  one(data, size);
  uint8_t *b = malloc(size + 5);
  if (!b) return 0;
  if (size) memcpy(b, data, size);
  uint32_t c = tbe__crc32c(b, size);
  b[size] = (5 << 3) | 5;
  for (int i = 0; i < 4; i++) b[size + 1 + i] = (uint8_t)(c >> (8 * i));
  one(b, size + 5);
  free(b);
  return 0;
}
