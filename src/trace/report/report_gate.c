/* report_gate.c: the words of a gate's result (tbe_gate_describe), one
 * line that names the figure, its two values and change, and the verdict
 * with the test behind it, in the words the diff report uses for the same
 * test (tbe__noise_sentence), so that a CI log reads like the report.
 *
 * Position: a renderer of src/trace/report; the numbers are
 * analysis_gate.c's. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tbexport/analysis.h"
#include "trace/analysis/figures.h"
#include "trace/report/report.h"

typedef struct out {
  char *buf;
  size_t size, len;
} out;

static void put(out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(out *o, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *at = o->len < o->size ? o->buf + o->len : NULL;
  int n = vsnprintf(at, at ? o->size - o->len : 0, fmt, ap);
  va_end(ap);
  if (n > 0) o->len += (size_t)n;
}

static int is_memory(const tbe_gate *g) {
  return g->figure == TBE_GATE_PEAK_ALLOCATED || g->figure == TBE_GATE_PEAK_RESERVED;
}

/* A value of the figure: a duration, a share in %, or bytes. */
static const char *value(char *buf, const tbe_gate *g, double v) {
  if (g->figure == TBE_GATE_GPU_BUSY)
    snprintf(buf, 32, "%.1f%%", v);
  else if (is_memory(g))
    tbe__fmt_bytes(buf, 32, (int64_t)v, 0);
  else
    tbe__fmt_dur(buf, 32, (int64_t)v);
  return buf;
}

/* A change or a threshold in the condition's unit: "+7.5%", "-3.0pp",
 * "+916.339us". */
static const char *amount(char *buf, const tbe_gate *g, double v) {
  if (g->unit == TBE_GATE_BYTES) {
    tbe__fmt_bytes(buf, 32, (int64_t)v, 1);
  } else if (g->unit == TBE_GATE_NS) {
    if (v > 0) {
      buf[0] = '+';
      tbe__fmt_dur(buf + 1, 31, (int64_t)v);
    } else {
      tbe__fmt_dur(buf, 32, (int64_t)v);
    }
  } else if (isinf(v)) {
    snprintf(buf, 32, "%s", v > 0 ? "+inf% (from 0)" : "-inf% (from 0)");
  } else {
    snprintf(buf, 32, "%+.1f%s", v, g->unit == TBE_GATE_POINTS ? "pp" : "%");
  }
  return buf;
}

static void what(out *o, const tbe_gate *g, const tbe_gate_result *r) {
  const char *per = r->per_step ? "per step (median)" : "in total (a side has no steps)";
  switch (g->figure) {
    case TBE_GATE_STEP_MEDIAN: put(o, "step time (median)"); break;
    case TBE_GATE_KERNEL_TIME: put(o, "kernel time %s", per); break;
    case TBE_GATE_GPU_BUSY:
      put(o, "GPU busy share %s", r->per_step ? "per step (median)" : "of the wall time");
      break;
    case TBE_GATE_CLASS: put(o, "%s time %s", tbe_kernel_class_name(g->kclass), per); break;
    case TBE_GATE_PEAK_ALLOCATED:
    case TBE_GATE_PEAK_RESERVED:
      put(o, "peak %s %s", g->figure == TBE_GATE_PEAK_ALLOCATED ? "allocated" : "reserved",
          r->per_step ? "per step (median)" : "of the whole trace");
      break;
    default: {
      /* "kernels nvjet* (6 in base, 10 in new), time per step (median)" */
      static const char *const word[] = {"kernel", "", "operator", "range"};
      char nm[128];
      tbe_name_shorten(g->name, 100, nm, sizeof nm);
      put(o, "%s%s %s (%zu in base, %zu in new), time %s", word[g->figure - TBE_GATE_KERNEL],
          strpbrk(g->name, "*?") ? "s" : "", nm, r->names[0], r->names[1], per);
      break;
    }
  }
}

size_t tbe_gate_describe(const tbe_gate *g, const tbe_gate_result *r, char *buf, size_t size) {
  out o = {buf, size, 0};
  if (buf && size) buf[0] = '\0';
  if (!g || !r) return 0;
  char a[32], b[32], c[32], t[32], p[32];
  put(&o, "%s: ", g->text);
  const char *stepless = !r->nsteps[0] && !r->nsteps[1] ? "neither side has steps"
                         : !r->nsteps[0]                ? "base has no steps"
                                                        : "new has no steps";
  if (g->figure == TBE_GATE_STEP_MEDIAN && !r->per_step) {
    put(&o, "%s, so there is no step time to compare: cannot judge", stepless);
    return o.len;
  }
  if (is_memory(g) && !r->per_step && (r->value[0] < 0 || r->value[1] < 0)) {
    put(&o, "%s, so there is no peak to compare: cannot judge",
        r->value[0] < 0 && r->value[1] < 0 ? "neither side has memory events"
        : r->value[0] < 0                  ? "base has no memory events"
                                           : "new has no memory events");
    return o.len;
  }
  what(&o, g, r);
  put(&o, " %s -> %s (%s)", value(a, g, r->value[0]), value(b, g, r->value[1]),
      amount(c, g, r->change));
  amount(t, g, g->threshold);
  const char *op = g->above ? (g->or_equal ? ">=" : ">") : (g->or_equal ? "<=" : "<");
  if (r->steps.p_value >= 0) {
    if (r->steps.p_value < 0.001)
      snprintf(p, sizeof p, "p < 0.001");
    else
      snprintf(p, sizeof p, "p = %.3f", r->steps.p_value);
  }
  switch (r->outcome) {
    case TBE_GATE_PASS: put(&o, ", not %s %s: passes", op, t); break;
    case TBE_GATE_NOISE:
      put(&o,
          ", %s %s but within the steps' own noise (Mann-Whitney %s over %zu and %zu "
          "steps): passes",
          op, t, p, r->steps.dist[0].n, r->steps.dist[1].n);
      break;
    case TBE_GATE_FIRE:
      put(&o,
          ", %s %s and beyond the steps' own noise (Mann-Whitney %s over %zu and %zu "
          "steps): FAILS",
          op, t, p, r->steps.dist[0].n, r->steps.dist[1].n);
      break;
    default:
      if (r->per_step)
        put(&o,
            ", %s %s, but %zu and %zu steps are too few to tell it from the steps' own "
            "noise (%d per side needed): cannot judge",
            op, t, r->steps.dist[0].n, r->steps.dist[1].n, TBE_NOISE_MIN_STEPS);
      else if (r->nsteps[0] && r->nsteps[1])
        put(&o, ", %s %s, but a name has no times per step to tell it from noise: cannot judge", op,
            t);
      else
        put(&o, ", %s %s, but %s to tell it from noise: cannot judge", op, t, stepless);
      break;
  }
  return o.len;
}
