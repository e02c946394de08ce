/* figures.c: the table of an analysis's figures (figures.h), built from
 * TBE__FIGURES, and the accessors that read a row's value out of the
 * struct it lives in.
 *
 * The table is static data: a row's place is an offsetof into its scope's
 * struct, its size the member's, so a code that loops over the rows reads
 * and writes exactly the fields the hand-written code named. */
#include <math.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/checked.h"
#include "trace/analysis/figures.h"

/* The struct of each scope, for offsetof. */
#define TBE__FIG_T_DEVICE tbe_device_stats
#define TBE__FIG_T_STEP tbe_step_stats
#define TBE__FIG_T_ANALYSIS tbe_analysis

#define TBE__FIG_ROW(id, scope, key, label, unit, merge, diff, member, n) \
  {TBE__FIG_##id,                                                         \
   TBE__FS_##scope,                                                       \
   key,                                                                   \
   label,                                                                 \
   TBE__FU_##unit,                                                        \
   TBE__FM_##merge,                                                       \
   TBE__FD_##diff,                                                        \
   offsetof(TBE__FIG_T_##scope, member),                                  \
   sizeof(((TBE__FIG_T_##scope *)0)->member),                             \
   n,                                                                     \
   NULL},
#define TBE__FIG_CALC(id, scope, key, label, unit, merge, diff, calc) \
  {TBE__FIG_##id,                                                     \
   TBE__FS_##scope,                                                   \
   key,                                                               \
   label,                                                             \
   TBE__FU_##unit,                                                    \
   TBE__FM_##merge,                                                   \
   TBE__FD_##diff,                                                    \
   0,                                                                 \
   sizeof(double),                                                    \
   1,                                                                 \
   calc},

/* ---- computed figures ----
 * The functions of the C rows of TBE__FIGURES: a figure computed from the
 * other figures of its struct. */

/* ---- the table ---- */

const tbe__figure tbe__figures[TBE__FIG__COUNT] = {TBE__FIGURES(TBE__FIG_ROW, TBE__FIG_CALC)};
#undef TBE__FIG_ROW
#undef TBE__FIG_CALC

const tbe__figure *tbe__figure_by_key(tbe__fig_scope scope, const char *key) {
  if (!key) return NULL;
  for (size_t i = 0; i < TBE__FIG__COUNT; i++)
    if (tbe__figures[i].scope == (uint32_t)scope && strcmp(tbe__figures[i].key, key) == 0)
      return &tbe__figures[i];
  return NULL;
}

double tbe__fig_real(const tbe__figure *f, const void *obj, size_t k) {
  if (f->calc) return f->calc(obj);
  if (tbe__fig_unsigned(f)) return (double)tbe__fig_u64(f, obj, k);
  int64_t v = tbe__fig_i64(f, obj, k);
  if ((f->unit == TBE__FU_NS_OPT || f->unit == TBE__FU_BYTES_OPT) && v < 0) return NAN;
  if (f->unit == TBE__FU_BYTES_DELTA && v == INT64_MIN) return NAN;
  return (double)v;
}

int tbe__fig_unsigned(const tbe__figure *f) {
  return f->unit == TBE__FU_COUNT || f->unit == TBE__FU_BYTES;
}

int tbe__fig_unknown(uint32_t unit, int64_t *v) {
  int64_t u = unit == TBE__FU_BYTES_DELTA ? INT64_MIN : -1;
  if (unit != TBE__FU_NS_OPT && unit != TBE__FU_BYTES_OPT && unit != TBE__FU_BYTES_DELTA) return 0;
  if (v) *v = u;
  return 1;
}

int tbe__fig_is_mem(const tbe__figure *f) {
  return f->unit == TBE__FU_BYTES_OPT || f->unit == TBE__FU_BYTES_DELTA;
}

char *tbe__fmt_bytes(char *buf, size_t size, int64_t bytes, int sign) {
  static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  const char *sg = bytes < 0 ? "-" : sign ? "+" : "";
  uint64_t m = bytes < 0 ? (uint64_t)0 - (uint64_t)bytes : (uint64_t)bytes;
  if (m < 1024) {
    snprintf(buf, size, "%s%llu B", sg, (unsigned long long)m);
    return buf;
  }
  double v = (double)m;
  int u = -1;
  while (v >= 1024.0 && u < 5) v /= 1024.0, u++;
  char num[32];
  snprintf(num, sizeof num, "%.2f", v);
  size_t n = strlen(num);
  while (n && num[n - 1] == '0') num[--n] = 0;
  if (n && num[n - 1] == '.') num[--n] = 0;
  snprintf(buf, size, "%s%s %s", sg, num, units[u]);
  return buf;
}

int64_t tbe__fig_i64(const tbe__figure *f, const void *obj, size_t k) {
  const void *p = tbe__fig_at(f, obj, k);
  if (tbe__fig_unsigned(f)) {
    uint64_t u;
    memcpy(&u, p, sizeof u);
    return u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)u;
  }
  int64_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

uint64_t tbe__fig_u64(const tbe__figure *f, const void *obj, size_t k) {
  const void *p = tbe__fig_at(f, obj, k);
  if (tbe__fig_unsigned(f)) {
    uint64_t u;
    memcpy(&u, p, sizeof u);
    return u;
  }
  int64_t v;
  memcpy(&v, p, sizeof v);
  return v < 0 ? 0 : (uint64_t)v;
}

/* ---- merging ---- */

void tbe__figs_merge_init(tbe__fig_scope scope, void *into) {
  for (size_t i = 0; i < TBE__FIG__COUNT; i++) {
    const tbe__figure *f = &tbe__figures[i];
    if (f->scope != (uint32_t)scope || f->merge == TBE__FM_OWN || f->calc) continue;
    int64_t v = f->merge == TBE__FM_MIN ? INT64_MAX : f->merge == TBE__FM_UNKNOWN ? -1 : 0;
    tbe__fig_unknown(f->unit, &v); /* nothing known until a side says */
    for (size_t k = 0; k < f->n; k++) memcpy(tbe__fig_at(f, into, k), &v, sizeof v);
  }
}

void tbe__figs_merge(tbe__fig_scope scope, void *into, const void *from) {
  for (size_t i = 0; i < TBE__FIG__COUNT; i++) {
    const tbe__figure *f = &tbe__figures[i];
    if (f->scope != (uint32_t)scope || f->calc) continue; /* computed from the merged */
    for (size_t k = 0; k < f->n && f->merge <= TBE__FM_MIN; k++) {
      void *to = tbe__fig_at(f, into, k);
      if (tbe__fig_unsigned(f)) {
        uint64_t a, b = tbe__fig_u64(f, from, k);
        memcpy(&a, to, sizeof a);
        a = f->merge == TBE__FM_SUM   ? tbe__sat_addu(a, b)
            : f->merge == TBE__FM_MAX ? (b > a ? b : a)
                                      : (b < a ? b : a);
        memcpy(to, &a, sizeof a);
      } else {
        int64_t a, b = tbe__fig_i64(f, from, k);
        memcpy(&a, to, sizeof a);
        a = f->merge == TBE__FM_SUM   ? tbe__sat_add(a, b)
            : f->merge == TBE__FM_MAX ? (b > a ? b : a)
                                      : (b < a ? b : a);
        memcpy(to, &a, sizeof a);
      }
    }
  }
}

/* ---- names of the columns' values ---- */

static const char *word(const char *const *w, size_t n, uint32_t v) { return v < n ? w[v] : "?"; }

const char *tbe__fig_scope_name(uint32_t s) {
  static const char *const w[TBE__FS__COUNT] = {"device", "step", "analysis"};
  return word(w, TBE__FS__COUNT, s);
}

const char *tbe__fig_unit_name(uint32_t u) {
  static const char *const w[TBE__FU__COUNT] = {"ns",
                                                "ns_or_unknown",
                                                "time_ns",
                                                "count",
                                                "bytes",
                                                "number",
                                                "pct",
                                                "bytes_or_unknown",
                                                "bytes_delta_or_unknown"};
  return word(w, TBE__FU__COUNT, u);
}

const char *tbe__fig_merge_name(uint32_t m) {
  static const char *const w[TBE__FM__COUNT] = {"sum", "max", "min", "unknown", "own"};
  return word(w, TBE__FM__COUNT, m);
}

const char *tbe__fig_diff_name(uint32_t d) {
  static const char *const w[TBE__FD__COUNT] = {"none", "lower", "higher", "either"};
  return word(w, TBE__FD__COUNT, d);
}
