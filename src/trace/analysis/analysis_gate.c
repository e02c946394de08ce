/* analysis_gate.c: a comparison as a gate (tbe_gate_parse, tbe_gate_eval;
 * the language is stated once, in tbexport/analysis.h).
 *
 * A condition names one figure, a direction and a threshold.  Evaluating
 * it on a diff:
 *   1. the figure's per-step values on each side: the steps' own (step
 *      time, kernel time, GPU busy share in parts per million), a class's
 *      time per step, or the step times of the names a pattern matches,
 *      summed step by step (read from the two analyses' tables through the
 *      diff's entries, so a replaced kernel counts as its replacement on
 *      the new side);
 *   2. the change: of the medians of those values (what the diff's "step
 *      b/n" columns show), relative or absolute; a side without steps
 *      falls back to the whole traces' totals, which can say "passes" but
 *      never "fires";
 *   3. when the change passes the threshold, the rank test of stats.c on
 *      the two samples (one test per condition: the user chose it before
 *      looking, so no false discovery rate across conditions) decides
 *      between "fires" (beyond the steps' own noise), "within noise" and
 *      "cannot judge" (too few steps).
 * A change that does not pass the threshold passes whatever the noise:
 * the test is only needed to call a passing change real.
 *
 * Position: beside analysis_diff.c; reads a finished diff and its two
 * analyses, never a trace.  The words of a result are the report room's
 * (report_gate.c, tbe_gate_describe). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/checked.h"
#include "tbexport/analysis.h"
#include "tbexport/error.h"

/* ---- parsing ---- */

/* The figures without a NAME, by tbe_gate_figure (NULL: one with a NAME). */
static const char *const FIGURES[] = {"step_median", "kernel_time", "gpu_busy", NULL, NULL,
                                      NULL,          NULL,          "peak_allocated",
                                      "peak_reserved"};

static int say(char *err, size_t size, const char *fmt, const char *a, const char *b) {
  if (err && size) snprintf(err, size, fmt, a, b);
  return TBE_EPARSE;
}

static int is_space(char c) { return c == ' ' || c == '\t'; }

/* CHANGE: [+|-]digits[.digits] unit, in [p, e). */
static int parse_change(tbe_gate *g, const char *p, const char *e) {
  double sign = 1;
  if (p < e && (*p == '+' || *p == '-')) sign = *p++ == '-' ? -1 : 1;
  const char *num = p;
  double v = 0, scale = 1;
  int digits = 0, dot = 0;
  for (; p < e && ((*p >= '0' && *p <= '9') || (*p == '.' && !dot)); p++) {
    if (*p == '.') {
      dot = 1;
      continue;
    }
    digits++;
    if (dot) scale /= 10;
    v = v * 10 + (*p - '0');
  }
  if (!digits || p == num) return -1;
  v *= scale;
  size_t ul = (size_t)(e - p);
  static const struct {
    const char *u;
    uint32_t unit;
    double ns;
  } UNITS[] = {{"%", TBE_GATE_PCT, 1},   {"pp", TBE_GATE_POINTS, 1}, {"ns", TBE_GATE_NS, 1},
               {"us", TBE_GATE_NS, 1e3}, {"ms", TBE_GATE_NS, 1e6},   {"s", TBE_GATE_NS, 1e9},
               {"B", TBE_GATE_BYTES, 1}, {"KiB", TBE_GATE_BYTES, 1024.0},
               {"MiB", TBE_GATE_BYTES, 1048576.0}, {"GiB", TBE_GATE_BYTES, 1073741824.0}};
  for (size_t i = 0; i < sizeof UNITS / sizeof *UNITS; i++)
    if (strlen(UNITS[i].u) == ul && memcmp(UNITS[i].u, p, ul) == 0) {
      g->unit = UNITS[i].unit;
      g->threshold = sign * v * UNITS[i].ns;
      return isfinite(g->threshold) && fabs(g->threshold) < 9.2e18 ? 0 : -1;
    }
  return -1;
}

int tbe_gate_parse(tbe_gate *g, const char *text, char *err, size_t size) {
  if (err && size) err[0] = '\0';
  if (!g || !text) return TBE_EINVAL;
  memset(g, 0, sizeof *g);
  const char *b = text, *e = text + strlen(text);
  while (b < e && is_space(*b)) b++;
  while (e > b && is_space(e[-1])) e--;
  if ((size_t)(e - b) >= sizeof g->text)
    return say(err, size, "the condition is longer than %s bytes%s", "4096", "");
  memcpy(g->text, b, (size_t)(e - b));
  for (const char *p = b; p < e; p++)
    if ((unsigned char)*p < 0x20 && *p != '\t')
      return say(err, size, "'%s': a control character%s", g->text, "");
  /* From the end: CHANGE, then OP, then the FIGURE is the rest. */
  const char *c = e;
  while (c > b && !is_space(c[-1]) && c[-1] != '<' && c[-1] != '>' && c[-1] != '=') c--;
  if (c == e || parse_change(g, c, e))
    return say(err, size,
               "'%s': expected a change at the end, as in +5%%, -3%%, +2ms, +1pp or +512MiB "
               "(units: %%, ns, us, ms, s, pp, B, KiB, MiB, GiB)%s",
               g->text, "");
  const char *o = c;
  while (o > b && is_space(o[-1])) o--;
  const char *oe = o;
  if (o > b && o[-1] == '=') o--;
  if (o > b && (o[-1] == '>' || o[-1] == '<')) o--;
  if (oe - o < 1 || (oe - o == 1 && *o == '=') || (oe - o == 2 && o[1] != '='))
    return say(err, size, "'%s': expected > , >= , < or <= before the change%s", g->text, "");
  g->above = *o == '>';
  g->or_equal = oe - o == 2;
  const char *fe = o;
  while (fe > b && is_space(fe[-1])) fe--;
  size_t fl = (size_t)(fe - b);
  if (!fl) return say(err, size, "'%s': no figure before the comparison%s", g->text, "");
  int known = 0;
  for (uint32_t i = 0; i < sizeof FIGURES / sizeof *FIGURES; i++)
    if (FIGURES[i] && strlen(FIGURES[i]) == fl && memcmp(FIGURES[i], b, fl) == 0)
      g->figure = i, known = 1;
  static const struct {
    const char *prefix;
    uint32_t figure;
  } NAMED[] = {{"kernel:", TBE_GATE_KERNEL},
               {"class:", TBE_GATE_CLASS},
               {"op:", TBE_GATE_OP},
               {"range:", TBE_GATE_RANGE}};
  for (size_t i = 0; !known && i < sizeof NAMED / sizeof *NAMED; i++) {
    size_t pl = strlen(NAMED[i].prefix);
    if (fl <= pl || memcmp(b, NAMED[i].prefix, pl) != 0) continue;
    known = 1;
    g->figure = NAMED[i].figure;
    if (fl - pl >= sizeof g->name)
      return say(err, size, "'%s': the name is too long%s", g->text, "");
    memcpy(g->name, b + pl, fl - pl);
    g->name[fl - pl] = '\0';
  }
  if (!known) {
    char fig[96];
    snprintf(fig, sizeof fig, "%.*s", (int)(fl < 80 ? fl : 80), b);
    return say(err, size,
               "unknown figure '%s' in '%s' (step_median, kernel_time, gpu_busy, "
               "peak_allocated, peak_reserved, kernel:NAME, class:CLASS, op:NAME, range:NAME)",
               fig, g->text);
  }
  if (g->figure == TBE_GATE_CLASS) {
    uint32_t k = 0;
    while (k < TBE_KCLASS__COUNT && strcmp(tbe_kernel_class_name(k), g->name) != 0) k++;
    if (k == TBE_KCLASS__COUNT)
      return say(err, size,
                 "unknown kernel class '%s' in '%s' (gemm, conv, attention, elementwise, "
                 "reduction, norm, softmax, copy, comm, other)",
                 g->name, g->text);
    g->kclass = k;
  }
  if (g->unit == TBE_GATE_POINTS && g->figure != TBE_GATE_GPU_BUSY)
    return say(err, size,
               "'%s': pp (percentage points) is for gpu_busy, a share; use %% or a "
               "time%s",
               g->text, "");
  if (g->unit == TBE_GATE_NS && g->figure == TBE_GATE_GPU_BUSY)
    return say(err, size, "'%s': gpu_busy is a share, not a time; use %% or pp%s", g->text, "");
  int mem = g->figure == TBE_GATE_PEAK_ALLOCATED || g->figure == TBE_GATE_PEAK_RESERVED;
  if (mem && g->unit != TBE_GATE_PCT && g->unit != TBE_GATE_BYTES)
    return say(err, size, "'%s': a memory peak is an amount; use %% or B, KiB, MiB, GiB%s", g->text,
               "");
  if (!mem && g->unit == TBE_GATE_BYTES)
    return say(err, size, "'%s': B, KiB, MiB and GiB are for peak_allocated and peak_reserved%s",
               g->text, "");
  return 0;
}

/* ---- names ---- */

/* `pat` against `s`: * any run of characters, ? one. */
static int glob(const char *pat, const char *s) {
  const char *star = NULL, *back = NULL;
  while (*s) {
    if (*pat == '*') {
      star = pat++;
      back = s;
    } else if (*pat == '?' || *pat == *s) {
      pat++;
      s++;
    } else if (star) {
      pat = star + 1;
      s = ++back;
    } else {
      return 0;
    }
  }
  while (*pat == '*') pat++;
  return *pat == '\0';
}

/* Whether NAME names `label`: equal to it or to its short form, or as a
 * pattern. */
static int names(const char *pat, const char *label, char *buf, size_t size) {
  int wild = strpbrk(pat, "*?") != NULL;
  if (wild ? glob(pat, label) : strcmp(pat, label) == 0) return 1;
  tbe_name_shorten(label, 0, buf, size);
  return wild ? glob(pat, buf) : strcmp(pat, buf) == 0;
}

static const tbe_name_stats *find_label(const tbe_analysis *an, tbe_group_kind g,
                                        const char *label) {
  for (size_t i = 0; i < an->ngroups[g]; i++)
    if (strcmp(an->groups[g][i].label, label) == 0) return &an->groups[g][i];
  return NULL;
}

/* ---- values ---- */

typedef struct side {
  int64_t *v;    /* per step */
  size_t n;      /* steps; 0: no per-step values */
  int64_t total; /* the whole trace's figure (the fallback) */
} side;

/* The per-step values of a named figure on both sides: the names of the
 * diff's table that match, each side's by its own label (a replaced
 * kernel's new side is its replacement). */
static int named_values(const tbe_gate *g, const tbe_diff *d, side sd[2], size_t nm[2]) {
  tbe_group_kind grp = g->figure == TBE_GATE_KERNEL ? TBE_GROUP_KERNEL
                       : g->figure == TBE_GATE_OP   ? TBE_GROUP_CPU_OP
                                                    : TBE_GROUP_RANGE;
  int cuda = grp == TBE_GROUP_CPU_OP && d->op_cuda;
  char buf[TBE_GATE_NAME_MAX];
  for (size_t i = 0; i < d->nentries[grp]; i++) {
    const tbe_diff_entry *e = &d->entries[grp][i];
    if (!names(g->name, e->name, buf, sizeof buf) &&
        !(e->replaced_by && names(g->name, e->replaced_by, buf, sizeof buf)))
      continue;
    const char *label[2] = {e->present & 1 ? e->name : NULL, e->replaced_by   ? e->replaced_by
                                                             : e->present & 2 ? e->name
                                                                              : NULL};
    for (int s = 0; s < 2; s++) {
      const tbe_name_stats *ns = label[s] ? find_label(d->side[s], grp, label[s]) : NULL;
      if (!ns) continue;
      nm[s]++;
      sd[s].total = tbe__sat_add(sd[s].total, cuda ? ns->cuda_total_ns : ns->total_ns);
      const int64_t *per = cuda ? ns->cuda_step_ns : ns->step_ns;
      if (!per) sd[s].n = 0; /* a matched name without per-step times: no test */
      for (size_t k = 0; k < sd[s].n; k++) sd[s].v[k] = tbe__sat_add(sd[s].v[k], per[k]);
    }
  }
  return nm[0] || nm[1] ? 0 : TBE_ENAME;
}

/* Parts per million of `part` in `whole`. */
static int64_t ppm(int64_t part, int64_t whole) {
  return whole > 0 ? (int64_t)((double)part * 1e6 / (double)whole) : 0;
}

static int values(const tbe_gate *g, const tbe_diff *d, side sd[2], size_t nm[2]) {
  for (int s = 0; s < 2; s++) {
    const tbe_analysis *an = d->side[s];
    for (size_t i = 0; i < sd[s].n; i++) {
      const tbe_step_stats *st = &an->steps[i];
      switch (g->figure) {
        case TBE_GATE_STEP_MEDIAN: sd[s].v[i] = st->dur_ns; break;
        case TBE_GATE_KERNEL_TIME: sd[s].v[i] = st->kernel_ns; break;
        case TBE_GATE_GPU_BUSY: sd[s].v[i] = ppm(st->gpu_busy_ns, st->dur_ns); break;
        case TBE_GATE_CLASS: sd[s].v[i] = st->class_ns[g->kclass]; break;
        case TBE_GATE_PEAK_ALLOCATED: sd[s].v[i] = st->mem_peak_allocated; break;
        case TBE_GATE_PEAK_RESERVED: sd[s].v[i] = st->mem_peak_reserved; break;
        default: sd[s].v[i] = 0; break;
      }
      /* a step without a memory value: no per-step test of that side */
      if (sd[s].v[i] < 0) sd[s].n = 0;
    }
    switch (g->figure) {
      case TBE_GATE_STEP_MEDIAN: sd[s].total = -1; break; /* no steps, no step time */
      case TBE_GATE_KERNEL_TIME: sd[s].total = an->all.kernel_ns; break;
      case TBE_GATE_GPU_BUSY: sd[s].total = ppm(an->all.busy_ns, an->all.wall_ns); break;
      case TBE_GATE_CLASS: sd[s].total = an->all.class_ns[g->kclass]; break;
      /* -1 without memory: unknown, never a 0 that a change could pass */
      case TBE_GATE_PEAK_ALLOCATED: sd[s].total = an->all.mem_peak_allocated; break;
      case TBE_GATE_PEAK_RESERVED: sd[s].total = an->all.mem_peak_reserved; break;
      default: break;
    }
  }
  if (g->figure >= TBE_GATE_KERNEL && g->figure <= TBE_GATE_RANGE && g->figure != TBE_GATE_CLASS)
    return named_values(g, d, sd, nm);
  return 0;
}

/* ---- the verdict ---- */

static double change_of(const tbe_gate *g, double v0, double v1) {
  if (g->unit != TBE_GATE_PCT) return v1 - v0;
  if (v0 > 0) return 100.0 * (v1 - v0) / v0;
  return v1 > 0 ? INFINITY : v1 < 0 ? -INFINITY : 0.0;
}

static int passes(const tbe_gate *g, double change) {
  if (g->above) return g->or_equal ? change >= g->threshold : change > g->threshold;
  return g->or_equal ? change <= g->threshold : change < g->threshold;
}

int tbe_gate_eval(const tbe_gate *g, const tbe_diff *d, tbe_gate_result *r,
                  const tbe_allocator *a) {
  if (!r) return TBE_EINVAL;
  memset(r, 0, sizeof *r);
  r->steps.p_value = -1;
  if (!g || !d || !d->side[0] || !d->side[1] || g->figure > TBE_GATE_PEAK_RESERVED) return TBE_EINVAL;
  tbe_allocator al;
  tbe__allocator_init(&al, a);
  side sd[2];
  memset(sd, 0, sizeof sd);
  int rc = 0;
  for (int s = 0; s < 2 && !rc; s++) {
    sd[s].n = r->nsteps[s] = d->side[s]->nsteps;
    sd[s].v = tbe__calloc(&al, sd[s].n ? sd[s].n : 1, sizeof *sd[s].v);
    if (!sd[s].v) rc = TBE_ENOMEM;
  }
  if (!rc) rc = values(g, d, sd, r->names);
  int both = sd[0].n && sd[1].n;
  if (!rc)
    rc = tbe_step_compare_values(&r->steps, sd[0].v, both ? sd[0].n : 0, sd[1].v,
                                 both ? sd[1].n : 0, &al);
  if (!rc) {
    double scale = g->figure == TBE_GATE_GPU_BUSY ? 1e-4 : 1; /* ppm -> % */
    r->per_step = both;
    for (int s = 0; s < 2; s++)
      r->value[s] = (double)(both ? r->steps.dist[s].median_ns : sd[s].total) * scale;
    int known = both || (sd[0].total >= 0 && sd[1].total >= 0);
    r->change = known ? change_of(g, r->value[0], r->value[1]) : 0;
    if (!known)
      r->outcome = TBE_GATE_UNJUDGED; /* a step time without steps */
    else if (!passes(g, r->change))
      r->outcome = TBE_GATE_PASS;
    else if (!both || r->steps.verdict == TBE_NOISE_TOO_FEW || r->steps.verdict == TBE_NOISE_NONE)
      r->outcome = TBE_GATE_UNJUDGED;
    else
      r->outcome = r->steps.verdict == TBE_NOISE_BEYOND ? TBE_GATE_FIRE : TBE_GATE_NOISE;
  }
  for (int s = 0; s < 2; s++) tbe__free(&al, sd[s].v);
  return rc;
}
