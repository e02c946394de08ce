/* vocab.c: the model's vocabulary (vocab.h): source names and the generic
 * status lines, spelled once for the importers that read them back and the
 * outputs that write them.
 *
 * Invariants: the status lines are a function of the trace's counters and
 * warnings only, so that tbe__status_prefix, run over a file we wrote,
 * finds exactly the lines tbe__status_lines wrote there. */
#include <stdio.h>
#include <string.h>

#include "trace/model/vocab.h"

/* Whether one of T's warnings contains NEEDLE. */
static int mentions(const tbe_trace *t, const char *needle) {
  for (size_t i = 0; i < t->nwarnings; i++) {
    const char *w = tbe_trace_str(t, t->warnings[i]);
    if (w && strstr(w, needle)) return 1;
  }
  return 0;
}

/* ---- status lines ---- */

void tbe__status_lines(const tbe_trace *t, int with_overhead,
                       void (*emit)(void *ctx, const char *line, size_t len), void *ctx) {
  char msg[200];
  int n;
  if (t->dropped_records && !mentions(t, "were dropped")) {
    n = snprintf(msg, sizeof msg, "%llu records were dropped while collecting",
                 (unsigned long long)t->dropped_records);
    emit(ctx, msg, (size_t)n);
  }
  if (t->dropped_out_of_range && !mentions(t, "zero or inverted timestamps")) {
    n = snprintf(msg, sizeof msg, "%llu records had zero or inverted timestamps and were dropped",
                 (unsigned long long)t->dropped_out_of_range);
    emit(ctx, msg, (size_t)n);
  }
  if (with_overhead && t->source == TBE_SRC_CUPTI && t->overhead_ns) {
    n = snprintf(msg, sizeof msg,
                 "CUPTI's own overhead: %.3f ms (its records are events on the host timeline)",
                 (double)t->overhead_ns / 1e6);
    emit(ctx, msg, (size_t)n);
  }
  if (t->ended_early && !mentions(t, "ended early")) emit(ctx, "the capture ended early", 23);
}

/* tbe__status_prefix's EMIT: compares each line with the next expected one. */
typedef struct prefix_check {
  const tbe_trace *t;
  const tbe_str *lines;
  size_t k, at;
  int ok;
} prefix_check;

static void check_line(void *ctx, const char *line, size_t len) {
  prefix_check *p = ctx;
  if (!p->ok) return;
  if (p->at >= p->k || tbe_trace_strlen(p->t, p->lines[p->at]) != len ||
      memcmp(tbe_trace_str(p->t, p->lines[p->at]), line, len) != 0)
    p->ok = 0;
  p->at++;
}

size_t tbe__status_prefix(const tbe_trace *t, int with_overhead, const tbe_str *lines, size_t n) {
  for (size_t k = n < 4 ? n : 4; k > 0; k--) {
    tbe_trace tmp = *t; /* the counters of t, the warnings lines[k..n) */
    tmp.warnings = (tbe_str *)(uintptr_t)(lines + k);
    tmp.nwarnings = n - k;
    prefix_check p = {t, lines, k, 0, 1};
    tbe__status_lines(&tmp, with_overhead, check_line, &p);
    if (p.ok && p.at == k) return k;
  }
  return 0;
}

/* ---- memory counters ---- */

tbe__mem_ctr tbe__memory_counter_of(const char *name) {
  static const char *const names[] = {
      NULL,
      TBE__CTR_MEM_ALLOCATED,
      TBE__CTR_MEM_RESERVED,
      TBE__CTR_NVML_PROC,
      TBE__CTR_NVML_DEVICE,
      TBE__CTR_TORCH_MAX_ALLOCATED,
      TBE__CTR_TORCH_MAX_RESERVED,
      TBE__CTR_JAX_IN_USE,
      TBE__CTR_JAX_PEAK,
      TBE__CTR_JAX_RESERVED,
      TBE__CTR_JAX_LIMIT};
  for (size_t i = 1; name && i < sizeof names / sizeof names[0]; i++)
    if (strcmp(name, names[i]) == 0) return (tbe__mem_ctr)i;
  return TBE__MCTR_NONE;
}

/* ---- source names ---- */

static const char *const SOURCE_NAMES[] = {"unknown", "cupti", "kineto", "chrome", "xspace", "nsys"};
#define NSOURCES (sizeof SOURCE_NAMES / sizeof SOURCE_NAMES[0])

const char *tbe__source_name(uint32_t source) {
  return source < NSOURCES ? SOURCE_NAMES[source] : SOURCE_NAMES[0];
}

uint32_t tbe__source_of(const char *name, size_t len) {
  for (uint32_t i = 0; i < NSOURCES; i++)
    if (strlen(SOURCE_NAMES[i]) == len && memcmp(SOURCE_NAMES[i], name, len) == 0) return i;
  return TBE_SRC_UNKNOWN;
}
