/* analysis_store.c: one host's analysis read back from its file
 * (tbe_analysis_load, tbe_analysis_read; schema
 * proto/tbexport/analysis.proto; the writer, tbe_analysis_save, is
 * analysis_save.c, and what both share is analysis_store_int.h).
 *
 * The file ends with the CRC32C of all the bytes before it (field 5,
 * crc32c, written last by hand after the packed message).
 *
 * Loading treats the bytes as hostile:
 *   1. the top level is walked by hand for format_version, so a file of
 *      another version is told apart from a corrupt one before anything
 *      else is read; then the checksum (a flipped bit in a number is valid
 *      protobuf: only the sum tells);
 *   2. protobuf-c decodes the whole file (its allocations are bounded by
 *      the input's size: counts come from the bytes present); when it
 *      refuses, a walk guided by the generated descriptors finds the first
 *      malformed field and the error names its byte offset and field;
 *   3. every count, enum value and text is checked against the model
 *      (per-enum arrays of exactly the enum's count, per-step arrays of
 *      exactly nsteps, advice text that fits tbe_advice.text, warnings as
 *      long as tbe_trace_warn keeps, no NUL in any text), and every figure
 *      against its range as an importer checks a trace's times (below,
 *      "the figures' ranges"), naming the field;
 *   4. only then is the analysis built: a blank analysis (analysis_int.h)
 *      that owns a skeleton trace holding its strings (host, warnings,
 *      device names, names, labels, step hint), so the report code, which
 *      reads those through an->trace, works unchanged.
 * Files (tbe_analysis_read) are read as every file below a log dir is
 * (common/fsutil.h, tbe__read_open): no symlink followed below the base,
 * no open that blocks (a FIFO is refused on its descriptor), and nothing
 * over TBE_ANALYSIS_FILE_MAX read: refused at its size first.  A trace's
 * key (tbe__analysis_key_fd) is its size and the CRC32C of its first and
 * last TBE_ANALYSIS_KEY_SPAN bytes, read with pread in 8 KiB pieces.
 * Nothing here aborts or prints; every failure is a return code and one
 * line in the caller's tbe_analysis_load_error.
 *
 * Invariant: a loaded analysis renders the same report bytes, in every
 * format, as the analysis it was saved from (test/unit/test_analysis_store.c
 * and test/cli/test_persist.sh check it over every real file of test/data).
 * Strings are interned first and resolved to pointers after the last
 * intern, so no pointer into the string table outlives a growth of it. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/checked.h"
#include "common/crc32c.h"
#include "common/pbwire.h"
#include "common/fsutil.h"
#include "common/map.h"
#include "tbexport/analysis.h"
#include "tbexport/error.h"
#include "tbexport/trace.h"
#include "tbexport/version.h"
#include "trace/analysis/analysis_int.h"
#include "trace/analysis/analysis_store.h"
#include "trace/analysis/analysis_version.h"
#include "trace/analysis/analysis_store_int.h"

/* Longest warning the model keeps (tbe_trace_warn formats into 512 bytes). */
#define WARNING_MAX 511
/* Longest text of any other field (names, host, producer): far beyond any
 * real name, small enough that a bad length is caught as such. */
#define TEXT_MAX ((size_t)1 << 20)

/* ---- loading: errors ---- */

static int fail(tbe_analysis_load_error *err, int rc, uint64_t offset, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(tbe_analysis_load_error *err, int rc, uint64_t offset, const char *fmt, ...) {
  if (err) {
    err->offset = offset;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
  }
  return rc;
}

/* ---- loading: the wire ---- */

/* One field at b[*pos]: its number, wire type and payload [*data, +*len)
 * (for wire type 0 the varint's bytes).  Returns 0, or -1 when the header
 * or payload runs past `n` or the wire type is unknown. */
static int next_field(const uint8_t *b, size_t n, size_t *pos, uint32_t *field, uint32_t *wt,
                      size_t *data, size_t *len) {
  return tbe__pb_next_field(b, n, pos, field, wt, data, len);
}

/* The wire type a scalar field's type is written with. */
static uint32_t wire_of(ProtobufCType t) {
  switch (t) {
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_DOUBLE: return 1;
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_FLOAT: return 5;
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_BYTES:
    case PROTOBUF_C_TYPE_MESSAGE: return 2;
    default: return 0;
  }
}

/* Walks a message of type `m` at b[0..n) (at file offset `base`) as the
 * descriptors describe it.  Returns the file offset of the first field
 * that does not decode and names it in `what`, or UINT64_MAX. */
static uint64_t find_bad(const ProtobufCMessageDescriptor *m, const uint8_t *b, size_t n,
                         uint64_t base, int depth, char *what, size_t wsize) {
  size_t pos = 0;
  while (pos < n) {
    uint32_t f, wt;
    size_t data, len, start = pos;
    if (next_field(b, n, &pos, &f, &wt, &data, &len)) {
      snprintf(what, wsize, "a field of %s runs past its end or has a bad header",
               m->short_name);
      return base + start;
    }
    const ProtobufCFieldDescriptor *fd = protobuf_c_message_descriptor_get_field(m, f);
    if (!fd) continue; /* a newer writer's field: skipped */
    uint32_t want = wire_of(fd->type);
    int packed = fd->label == PROTOBUF_C_LABEL_REPEATED && want != 2 && wt == 2;
    if (wt != want && !packed) {
      snprintf(what, wsize, "field %s.%s has wire type %u, expected %u", m->short_name,
               fd->name, wt, want);
      return base + start;
    }
    if (packed) {
      size_t p = 0;
      uint64_t v;
      while (p < len) {
        size_t at = p;
        int bad = want == 0 ? tbe__pb_get_varint(b + data, len, &p, &v)
                            : (len - p < (want == 1 ? 8u : 4u) ? -1 : (p += want == 1 ? 8 : 4, 0));
        if (bad) {
          snprintf(what, wsize, "field %s.%s: a packed value runs past its end", m->short_name,
                   fd->name);
          return base + data + at;
        }
      }
    } else if (fd->type == PROTOBUF_C_TYPE_MESSAGE && depth < 8) {
      uint64_t r = find_bad(fd->descriptor, b + data, len, base + data, depth + 1, what, wsize);
      if (r != UINT64_MAX) return r;
    }
  }
  return UINT64_MAX;
}

/* format_version from the top level, without decoding the rest: 0 when
 * absent; -1 when the top level does not walk (*bad at the byte). */
static int peek_version(const uint8_t *b, size_t n, uint64_t *version, size_t *bad) {
  size_t pos = 0;
  *version = 0;
  while (pos < n) {
    uint32_t f, wt;
    size_t data, len;
    *bad = pos;
    if (next_field(b, n, &pos, &f, &wt, &data, &len)) return -1;
    if (f == 1 && wt == 0) {
      size_t p = data;
      tbe__pb_get_varint(b, n, &p, version);
    }
  }
  return 0;
}

/* ---- loading: checks ---- */

typedef struct loader {
  tbe_analysis_load_error *err;
  int rc;
} loader;

/* Text of a field: no NUL, at most `max` bytes.  Returns 0 or sets the
 * error. */
static int check_text(loader *L, const ProtobufCBinaryData *t, size_t max, const char *field) {
  if (L->rc) return L->rc;
  if (t->len > max)
    return L->rc = fail(L->err, TBE_ECORRUPT, UINT64_MAX,
                        "field %s: %zu bytes, at most %zu allowed", field, t->len, max);
  if (t->len && memchr(t->data, 0, t->len))
    return L->rc = fail(L->err, TBE_ECORRUPT, UINT64_MAX, "field %s: holds a NUL byte", field);
  return 0;
}

static int check_count(loader *L, size_t got, size_t want, const char *field) {
  if (L->rc) return L->rc;
  if (got != want)
    return L->rc = fail(L->err, TBE_ECORRUPT, UINT64_MAX, "field %s: %zu entries, expected %zu",
                        field, got, want);
  return 0;
}

static int check(loader *L, int ok, const char *fmt, const char *field, long long v) {
  if (L->rc || ok) return L->rc;
  char what[160];
  snprintf(what, sizeof what, fmt, v);
  return L->rc = fail(L->err, TBE_ECORRUPT, UINT64_MAX, "field %s: %s", field, what);
}

static int missing(loader *L, const char *field) {
  if (L->rc) return L->rc;
  return L->rc = fail(L->err, TBE_ECORRUPT, UINT64_MAX, "field %s: missing", field);
}

/* A message's metric means: none, or `n` means and `n` sample counts. */
static void check_means(loader *L, size_t nmean, size_t nsamp, size_t n, const char *where) {
  check(L, (nmean == 0 && nsamp == 0) || (nmean == n && nsamp == n),
        "%lld metric means, not the number of metric names", where, (long long)nmean);
}

/* The figures of message m (of `scope`): arrays of exactly the row's
 * entries; the `figures` list's keys are text, and the entries of keys
 * this code knows hold the row's entries (other keys are skipped: a newer
 * writer's figures). */
static void check_fig_layout(loader *L, const void *m, uint32_t scope, const char *where) {
  char fl[160];
  for (size_t i = 0; i < TBE__FIG__COUNT && !L->rc; i++) {
    const tbe__figure *f = &tbe__figures[i];
    if (f->scope != scope) continue;
    const ProtobufCFieldDescriptor *fd = fig_field(f);
    if (!fd || fd->label != PROTOBUF_C_LABEL_REPEATED) continue;
    snprintf(fl, sizeof fl, "%s.%s", where, f->key);
    check_count(L, *(const size_t *)msg_at(m, fd->quantifier_offset), f->n, fl);
  }
  size_t nk = *keyed_n(m, scope);
  PFigure *const *v = *keyed_v(m, scope);
  for (size_t i = 0; i < nk && !L->rc; i++) {
    snprintf(fl, sizeof fl, "%s.figures[%zu].key", where, i);
    check_text(L, &v[i]->key, TEXT_MAX, fl);
  }
  for (size_t i = 0; i < TBE__FIG__COUNT && !L->rc; i++) {
    const tbe__figure *f = &tbe__figures[i];
    const PFigure *e = f->scope == scope && !f->calc && !fig_field(f) ? keyed_find(m, f) : NULL;
    if (!e) continue;
    snprintf(fl, sizeof fl, "%s.figures[%s].value", where, f->key);
    check_count(L, e->n_value, f->n, fl);
  }
}

static void check_device(loader *L, const PDevice *d, const char *where) {
  char f[160]; /* where (at most 127 bytes) and ".name" */
  if (!d) {
    missing(L, where);
    return;
  }
  snprintf(f, sizeof f, "%s.name", where);
  check_text(L, &d->name, TEXT_MAX, f);
  check_fig_layout(L, d, TBE__FS_DEVICE, where);
}

static const char *const TABLE_FIELD[TBE_GROUP__COUNT] = {
    "Analysis.kernels", "Analysis.cpu_ops", "Analysis.ranges", "Analysis.cpu_ops_by_shape"};

/* The by-shape table of a file written before it existed: empty. */
static const PTable EMPTY_TABLE = TBEXPORT__NAME_TABLE__INIT;

static const PTable *table_of(const PAnalysis *m, int g) {
  switch (g) {
    case TBE_GROUP_KERNEL: return m->kernels;
    case TBE_GROUP_CPU_OP: return m->cpu_ops;
    case TBE_GROUP_RANGE: return m->ranges;
    default: return m->cpu_ops_by_shape ? m->cpu_ops_by_shape : &EMPTY_TABLE;
  }
}

static int is_op_table(int g) { return g == TBE_GROUP_CPU_OP || g == TBE_GROUP_CPU_OP_SHAPE; }

/* Every check of step 3. */
static int check_file(loader *L, const PFile *f) {
  char fl[128];
  check_text(L, &f->producer, 64, "AnalysisFile.producer");
  for (size_t i = 0; i < f->n_sources && !L->rc; i++) {
    const PSource *s = f->sources[i];
    snprintf(fl, sizeof fl, "AnalysisFile.sources[%zu].name", i);
    check_text(L, &s->name, TBE_NAME_MAX + 64, fl);
    check(L, s->name.len > 0 && !memchr(s->name.data, '/', s->name.len),
          "not a file name in the folder (%lld)", fl, (long long)s->name.len);
  }
  const PAnalysis *m = f->analysis;
  if (!m) return missing(L, "AnalysisFile.analysis");
  for (size_t i = 0; i < m->n_devices && !L->rc; i++) {
    snprintf(fl, sizeof fl, "Analysis.devices[%zu]", i);
    check_device(L, m->devices[i], fl);
  }
  check_device(L, m->all, "Analysis.all");
  check_fig_layout(L, m, TBE__FS_ANALYSIS, "Analysis");
  for (size_t i = 0; i < m->n_gpu_metrics + m->n_kernel_metrics && !L->rc; i++) {
    snprintf(fl, sizeof fl, "Analysis.%s[%zu]", i < m->n_gpu_metrics ? "gpu_metrics" : "kernel_metrics", i);
    const ProtobufCBinaryData *b = i < m->n_gpu_metrics ? &m->gpu_metrics[i]
                                                         : &m->kernel_metrics[i - m->n_gpu_metrics];
    check_text(L, b, TEXT_MAX, fl);
    check(L, b->len > 0, "empty metric name (%lld)", fl, (long long)b->len);
  }
  for (size_t i = 0; i <= m->n_devices && !L->rc; i++) {
    const PDevice *d = i < m->n_devices ? m->devices[i] : m->all;
    snprintf(fl, sizeof fl, "Analysis.devices[%zu].metric_mean", i);
    check_means(L, d->n_metric_mean, d->n_metric_samples, m->n_gpu_metrics, fl);
  }
  size_t cells = 0, cuda_cells = 0;
  for (int g = 0; g < TBE_GROUP__COUNT && !L->rc; g++) {
    const PTable *t = table_of(m, g);
    if (!t) return missing(L, TABLE_FIELD[g]);
    for (size_t i = 0; i < t->n_names && !L->rc; i++) {
      const PName *e = t->names[i];
      snprintf(fl, sizeof fl, "%s.names[%zu].label", TABLE_FIELD[g], i);
      check_text(L, &e->label, TEXT_MAX, fl);
      snprintf(fl, sizeof fl, "%s.names[%zu].name", TABLE_FIELD[g], i);
      check_text(L, &e->name, TEXT_MAX, fl);
      snprintf(fl, sizeof fl, "%s.names[%zu].step_ns", TABLE_FIELD[g], i);
      check(L, !e->has_step_ns || m->n_steps > 0, "%lld per-step times in a trace without steps",
            fl, (long long)e->n_step_ns);
      check_count(L, e->n_step_ns, e->has_step_ns ? m->n_steps : 0, fl);
      snprintf(fl, sizeof fl, "%s.names[%zu].kclass", TABLE_FIELD[g], i);
      check(L, e->kclass < TBE_KCLASS__COUNT, "kernel class %lld out of range", fl,
            (long long)e->kclass);
      if (e->has_step_ns) cells += m->n_steps;
      snprintf(fl, sizeof fl, "%s.names[%zu].metric_mean", TABLE_FIELD[g], i);
      check_means(L, e->n_metric_mean, e->n_metric_samples,
                  g == TBE_GROUP_KERNEL ? m->n_kernel_metrics : 0, fl);
      check(L, e->bound_by <= TBE_BOUND_LAUNCH, "bound-by %lld out of range", fl,
            (long long)e->bound_by);
      snprintf(fl, sizeof fl, "%s.names[%zu].pm_mean", TABLE_FIELD[g], i);
      check_means(L, e->n_pm_mean, e->n_pm_samples, g == TBE_GROUP_KERNEL ? m->n_gpu_metrics : 0,
                  fl);
      /* the operator figures: only in the operator tables */
      snprintf(fl, sizeof fl, "%s.names[%zu].launched", TABLE_FIELD[g], i);
      check(L, e->n_launched <= (is_op_table(g) ? TBE_OP_KERNELS_TOP : 0),
            "%lld launched entries, more than this table's entries hold", fl,
            (long long)e->n_launched);
      for (size_t k = 0; k < e->n_launched && !L->rc; k++) {
        snprintf(fl, sizeof fl, "%s.names[%zu].launched[%zu].name", TABLE_FIELD[g], i, k);
        check_text(L, &e->launched[k]->name, TEXT_MAX, fl);
      }
      snprintf(fl, sizeof fl, "%s.names[%zu].cuda_step_ns", TABLE_FIELD[g], i);
      check(L, !e->has_cuda_step_ns || (is_op_table(g) && m->n_steps > 0),
            "%lld per-step CUDA times outside an operator table with steps", fl,
            (long long)e->n_cuda_step_ns);
      check_count(L, e->n_cuda_step_ns, e->has_cuda_step_ns ? m->n_steps : 0, fl);
      if (e->has_cuda_step_ns) cuda_cells += m->n_steps;
      snprintf(fl, sizeof fl, "%s.names[%zu].shapes", TABLE_FIELD[g], i);
      check_text(L, &e->shapes, TEXT_MAX, fl);
      check(L, g == TBE_GROUP_CPU_OP_SHAPE || e->shapes.len == 0,
            "%lld bytes of input shapes outside the by-shape table", fl, (long long)e->shapes.len);
      snprintf(fl, sizeof fl, "%s.names[%zu].launch_op", TABLE_FIELD[g], i);
      check_text(L, &e->launch_op, TEXT_MAX, fl);
      check(L, g == TBE_GROUP_KERNEL || (!e->has_launch_op && !e->launch_op.len),
            "an operator (%lld bytes) outside the kernel table", fl, (long long)e->launch_op.len);
    }
  }
  check(L, m->n_launch_seq <= TBE_LAUNCH_SEQ_MAX, "%lld launches, more than an analysis keeps",
        "Analysis.launch_seq", (long long)m->n_launch_seq);
  for (size_t i = 0; i < m->n_launch_seq && !L->rc; i++) {
    snprintf(fl, sizeof fl, "Analysis.launch_seq[%zu]", i);
    check(L, m->launch_seq[i] < m->kernels->n_names, "kernel %lld of a table of fewer", fl,
          (long long)m->launch_seq[i]);
  }
  check(L, cells <= TBE__STEP_CELLS_MAX, "%lld per-step cells, more than an analysis holds",
        "NameStats.step_ns", (long long)cells);
  check(L, cuda_cells <= TBE__STEP_CELLS_MAX, "%lld per-step cells, more than an analysis holds",
        "NameStats.cuda_step_ns", (long long)cuda_cells);
  for (size_t i = 0; i < m->n_steps && !L->rc; i++) {
    snprintf(fl, sizeof fl, "Analysis.steps[%zu]", i);
    check_fig_layout(L, m->steps[i], TBE__FS_STEP, fl);
    snprintf(fl, sizeof fl, "Analysis.steps[%zu].metric_mean", i);
    check_means(L, m->steps[i]->n_metric_mean, m->steps[i]->n_metric_samples, m->n_gpu_metrics,
                fl);
  }
  for (size_t i = 0; i < m->n_advice && !L->rc; i++) {
    snprintf(fl, sizeof fl, "Analysis.advice[%zu].kind", i);
    check(L, m->advice[i]->kind < TBE_ADVICE__COUNT, "advice kind %lld out of range", fl,
          (long long)m->advice[i]->kind);
    snprintf(fl, sizeof fl, "Analysis.advice[%zu].text", i);
    check_text(L, &m->advice[i]->text, sizeof(((tbe_advice *)0)->text) - 1, fl);
  }
  check_text(L, &m->host, TEXT_MAX, "Analysis.host");
  check(L, m->rank >= -1, "rank %lld", "Analysis.rank", (long long)m->rank);
  check(L, m->world_size >= 0, "world size %lld", "Analysis.world_size",
        (long long)m->world_size);
  if (!m->step_dist) return missing(L, "Analysis.step_dist");
  check(L, m->step_dist->n == m->n_steps, "n = %lld, not the number of steps",
        "Analysis.step_dist.n", (long long)m->step_dist->n);
  check_text(L, &m->step_hint, TEXT_MAX, "Analysis.step_hint");
  check(L, m->step_hint_kind < TBE_EV__COUNT, "event kind %lld out of range",
        "Analysis.step_hint_kind", (long long)m->step_hint_kind);
  for (size_t i = 0; i < m->n_warnings && !L->rc; i++) {
    snprintf(fl, sizeof fl, "Analysis.warnings[%zu]", i);
    check_text(L, &m->warnings[i], WARNING_MAX, fl);
  }
  return L->rc;
}

/* ---- loading: the figures' ranges ----
 * Step 3 also checks every figure as an importer checks a trace's times
 * (common/checked.h), so that a loaded analysis meets what a computed one
 * meets and everything downstream (reports, run analysis, diff, the
 * events exporter) does on it only arithmetic that cannot overflow:
 *   - times (the window's and the steps' starts) within the model's
 *     +-(2^62 - 1) ns, and windows (start + length) ending inside it;
 *   - durations and sums of durations >= 0 (sums saturate at INT64_MAX);
 *   - latencies and step quantiles >= -1 (-1: unknown, no steps);
 *   - counts that fit int64_t (the reports divide totals by them as
 *     int64_t; a trace holds fewer than 2^58 events);
 *   - means, figures of advice: finite numbers.
 * Bytes copied (memcpy_bytes) are any uint64: a trace's copy sizes are
 * not bounded and their sums saturate at UINT64_MAX.  A refusal names the
 * field and, in an array, the entry. */

enum { R_TIME, R_DUR, R_OPT };

/* Names the field `where`.`name` (`name` NULL: `where`), entry k of it
 * when `array`.  Formatted only on failure. */
static int bad_figure(loader *L, const char *where, const char *name, size_t k, int array,
                      const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static int bad_figure(loader *L, const char *where, const char *name, size_t k, int array,
                      const char *fmt, ...) {
  char what[160], idx[32] = "";
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  if (array) snprintf(idx, sizeof idx, "[%zu]", k);
  return L->rc = fail(L->err, TBE_ECORRUPT, UINT64_MAX, "field %s%s%s%s: %s", where,
                      name ? "." : "", name ? name : "", idx, what);
}

/* `n` int64 figures of one kind (`array`: name the entry). */
static int check_i64(loader *L, const int64_t *v, size_t n, int kind, const char *where,
                     const char *name, int array) {
  for (size_t k = 0; k < n && !L->rc; k++) {
    long long x = (long long)v[k];
    if (kind == R_TIME && !tbe__time_ok(v[k]))
      return bad_figure(L, where, name, k, array,
                        "%lld ns is outside the model's time range (+-%lld ns)", x,
                        (long long)TBE__TIME_MAX);
    if (kind == R_DUR && v[k] < 0)
      return bad_figure(L, where, name, k, array, "%lld ns is negative (a duration)", x);
    if (kind == R_OPT && v[k] < -1)
      return bad_figure(L, where, name, k, array,
                        "%lld ns is below -1 (a duration, or -1: unknown)", x);
  }
  return L->rc;
}

static int check_counts(loader *L, const uint64_t *v, size_t n, const char *where, const char *name,
                        int array) {
  for (size_t k = 0; k < n && !L->rc; k++)
    if (v[k] > (uint64_t)INT64_MAX)
      return bad_figure(L, where, name, k, array, "%llu is more than a count can be (2^63 - 1)",
                        (unsigned long long)v[k]);
  return L->rc;
}

static int check_reals(loader *L, const double *v, size_t n, const char *where, const char *name,
                       int array) {
  for (size_t k = 0; k < n && !L->rc; k++)
    if (!isfinite(v[k])) return bad_figure(L, where, name, k, array, "not a finite number");
  return L->rc;
}

/* A window of `where`: its start a time, its length a duration that ends
 * inside the range. */
static int check_window(loader *L, int64_t start, int64_t dur, const char *where, const char *sname,
                        const char *dname) {
  if (check_i64(L, &start, 1, R_TIME, where, sname, 0) ||
      check_i64(L, &dur, 1, R_DUR, where, dname, 0))
    return L->rc;
  if (!tbe__span_ok(start, dur))
    return bad_figure(L, where, dname, 0, 0,
                      "%lld ns from %lld ns ends outside the model's time range", (long long)dur,
                      (long long)start);
  return 0;
}

/* Single figures of one message: values and field names side by side. */
static void check_durs(loader *L, const int64_t *v, const char *const *names, size_t n,
                       const char *where) {
  for (size_t i = 0; i < n; i++) check_i64(L, &v[i], 1, R_DUR, where, names[i], 0);
}

static void check_nums(loader *L, const uint64_t *v, const char *const *names, size_t n,
                       const char *where) {
  for (size_t i = 0; i < n; i++) check_counts(L, &v[i], 1, where, names[i], 0);
}

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* The figures of message m (of `scope`) by their rows' units: durations
 * >= 0, medians >= -1, counts that fit int64_t.  Times are checked with
 * their windows (check_window), bytes and numbers take any value. */
static void check_fig_ranges(loader *L, const void *m, uint32_t scope, const char *where) {
  for (size_t i = 0; i < TBE__FIG__COUNT && !L->rc; i++) {
    const tbe__figure *f = &tbe__figures[i];
    if (f->scope != scope || f->calc) continue; /* computed rows are not read */
    const ProtobufCFieldDescriptor *fd = fig_field(f);
    const void *v;
    size_t n = 1;
    if (fd && fd->label == PROTOBUF_C_LABEL_REPEATED) {
      v = *(void *const *)msg_at(m, fd->offset);
      n = *(const size_t *)msg_at(m, fd->quantifier_offset);
    } else if (fd) {
      v = msg_at(m, fd->offset);
    } else {
      const PFigure *e = keyed_find(m, f);
      if (!e) continue;
      v = e->value;
      n = e->n_value;
    }
    if (f->unit == TBE__FU_NS || f->unit == TBE__FU_NS_OPT || f->unit == TBE__FU_BYTES_OPT)
      check_i64(L, v, n, f->unit == TBE__FU_NS ? R_DUR : R_OPT, where, f->key, f->n > 1);
    else if (f->unit == TBE__FU_COUNT)
      check_counts(L, v, n, where, f->key, f->n > 1);
  }
}

static void check_device_figures(loader *L, const PDevice *d, const char *where) {
  check_fig_ranges(L, d, TBE__FS_DEVICE, where);
  check_reals(L, d->metric_mean, d->n_metric_mean, where, "metric_mean", 1);
  check_counts(L, d->metric_samples, d->n_metric_samples, where, "metric_samples", 1);
}

static void check_name_figures(loader *L, const PName *e, const char *where) {
  check_counts(L, &e->calls, 1, where, "calls", 0);
  const int64_t durs[] = {e->total_ns, e->self_ns, e->min_ns, e->max_ns};
  static const char *const dnames[] = {"total_ns", "self_ns", "min_ns", "max_ns"};
  check_durs(L, durs, dnames, NELEM(durs), where);
  check_i64(L, e->step_ns, e->n_step_ns, R_DUR, where, "step_ns", 1);
  check_reals(L, e->metric_mean, e->n_metric_mean, where, "metric_mean", 1);
  check_counts(L, e->metric_samples, e->n_metric_samples, where, "metric_samples", 1);
  check_reals(L, e->pm_mean, e->n_pm_mean, where, "pm_mean", 1);
  check_counts(L, e->pm_samples, e->n_pm_samples, where, "pm_samples", 1);
  const int64_t odurs[] = {e->self_cuda_ns, e->cuda_total_ns, e->launched_other_ns};
  static const char *const onames[] = {"self_cuda_ns", "cuda_total_ns", "launched_other_ns"};
  check_durs(L, odurs, onames, NELEM(odurs), where);
  const uint64_t ocounts[] = {e->kernels, e->launched_other_calls};
  static const char *const ocnames[] = {"kernels", "launched_other_calls"};
  check_nums(L, ocounts, ocnames, NELEM(ocounts), where);
  check_i64(L, e->cuda_step_ns, e->n_cuda_step_ns, R_DUR, where, "cuda_step_ns", 1);
  for (size_t k = 0; k < e->n_launched && !L->rc; k++) {
    char fl[160];
    snprintf(fl, sizeof fl, "%s.launched[%zu]", where, k);
    check_counts(L, &e->launched[k]->calls, 1, fl, "calls", 0);
    check_i64(L, &e->launched[k]->total_ns, 1, R_DUR, fl, "total_ns", 0);
  }
}

static void check_step_figures(loader *L, const PStep *s, const char *where) {
  check_window(L, s->start_ns, s->dur_ns, where, "start_ns", "dur_ns");
  check_fig_ranges(L, s, TBE__FS_STEP, where);
  check_reals(L, s->metric_mean, s->n_metric_mean, where, "metric_mean", 1);
  check_counts(L, s->metric_samples, s->n_metric_samples, where, "metric_samples", 1);
}

/* Every figure of a file whose layout check_file accepted. */
static int check_figures(loader *L, const PFile *f) {
  const PAnalysis *m = f->analysis;
  char fl[128];
  check_window(L, m->start_ns, m->wall_ns, "Analysis", "start_ns", "wall_ns");
  check_fig_ranges(L, m, TBE__FS_ANALYSIS, "Analysis");
  for (size_t i = 0; i < m->n_devices && !L->rc; i++) {
    snprintf(fl, sizeof fl, "Analysis.devices[%zu]", i);
    check_device_figures(L, m->devices[i], fl);
  }
  check_device_figures(L, m->all, "Analysis.all");
  for (int g = 0; g < TBE_GROUP__COUNT && !L->rc; g++) {
    const PTable *t = table_of(m, g);
    check_i64(L, &t->total_ns, 1, R_DUR, TABLE_FIELD[g], "total_ns", 0);
    for (size_t i = 0; i < t->n_names && !L->rc; i++) {
      snprintf(fl, sizeof fl, "%s.names[%zu]", TABLE_FIELD[g], i);
      check_name_figures(L, t->names[i], fl);
    }
  }
  for (size_t i = 0; i < m->n_steps && !L->rc; i++) {
    snprintf(fl, sizeof fl, "Analysis.steps[%zu]", i);
    check_step_figures(L, m->steps[i], fl);
  }
  const PDist *d = m->step_dist;
  const int64_t q[] = {d->median_ns, d->q1_ns, d->q3_ns, d->min_ns, d->max_ns};
  static const char *const qnames[] = {"median_ns", "q1_ns", "q3_ns", "min_ns", "max_ns"};
  for (size_t i = 0; i < NELEM(q); i++)
    check_i64(L, &q[i], 1, R_OPT, "Analysis.step_dist", qnames[i], 0);
  for (size_t i = 0; i < m->n_advice && !L->rc; i++) {
    snprintf(fl, sizeof fl, "Analysis.advice[%zu]", i);
    check_reals(L, &m->advice[i]->figure, 1, fl, "figure", 0);
  }
  return L->rc;
}

/* ---- loading: building ---- */

typedef struct builder {
  tbe_trace *t;
  int rc;
} builder;

static tbe_str intern(builder *B, const ProtobufCBinaryData *s) {
  tbe_str id = 0;
  if (!B->rc && s->len) B->rc = tbe_trace_intern(B->t, (const char *)s->data, s->len, &id);
  return id;
}

static const char *text(builder *B, tbe_str id) { return tbe_trace_str(B->t, id); }

/* The figures of a checked message m (of `scope`) into `obj`.  A row
 * kept in the `figures` list that the file lacks (written before the row
 * existed) is unknown: -1, or INT64_MIN for a change in bytes (figures.h:
 * such rows are of a unit that has an unknown value, tbe__fig_unknown). */
static void load_figures(void *obj, const void *m, uint32_t scope) {
  for (size_t i = 0; i < TBE__FIG__COUNT; i++) {
    const tbe__figure *f = &tbe__figures[i];
    if (f->scope != scope || f->calc) continue; /* computed from the others */
    const ProtobufCFieldDescriptor *fd = fig_field(f);
    void *to = tbe__fig_at(f, obj, 0);
    if (fd && fd->label == PROTOBUF_C_LABEL_REPEATED) {
      memcpy(to, *(void *const *)msg_at(m, fd->offset), f->size);
    } else if (fd) {
      memcpy(to, msg_at(m, fd->offset), f->size);
    } else {
      const PFigure *e = keyed_find(m, f);
      int64_t u = -1;
      tbe__fig_unknown(f->unit, &u); /* the unit's unknown value */
      if (e)
        memcpy(to, e->value, f->size);
      else
        for (size_t k = 0; k < f->n; k++) memcpy(tbe__fig_at(f, obj, k), &u, sizeof u);
    }
  }
}

static void load_device(tbe_device_stats *d, const PDevice *m, tbe_str name) {
  d->device = m->device;
  d->name = m->has_name ? name : 0;
  load_figures(d, m, TBE__FS_DEVICE);
}

/* The hardware-metric names and means of a checked file, in the blocks
 * analysis_metrics.c would have made (tbe__analysis_metric_block).
 * `mids`: the names' string ids, gpu_metrics then kernel_metrics. */
static void load_means(tbe_metric_mean *to, const double *mean, const uint64_t *samp, size_t n) {
  for (size_t i = 0; i < n; i++) to[i].mean = mean[i], to[i].samples = samp[i];
}

static int load_metrics(tbe_analysis *an, const PAnalysis *m, builder *B, const tbe_str *mids) {
  size_t ng = m->n_gpu_metrics, nk = m->n_kernel_metrics;
  if (!ng && !nk) return 0;
  size_t nkern = an->ngroups[TBE_GROUP_KERNEL];
  const char **names = tbe__calloc(&an->alloc_, ng + nk, sizeof *names);
  size_t cells = ng * (an->ndevices + 1 + an->nsteps + nkern) + nk * nkern;
  tbe_metric_mean *block = tbe__calloc(&an->alloc_, cells ? cells : 1, sizeof *block);
  *tbe__analysis_metric_block(an, 0) = names;
  *tbe__analysis_metric_block(an, 1) = block; /* freed with `an` */
  if (!names || !block) return TBE_ENOMEM;
  for (size_t i = 0; i < ng + nk; i++) names[i] = text(B, mids[i]);
  an->gpu_metrics = ng ? names : NULL;
  an->ngpu_metrics = ng;
  an->kernel_metrics = nk ? names + ng : NULL;
  an->nkernel_metrics = nk;
  tbe_metric_mean *p = block;
  for (size_t i = 0; i <= an->ndevices && ng; i++) {
    const PDevice *d = i < an->ndevices ? m->devices[i] : m->all;
    if (!d->n_metric_mean) continue;
    load_means(p, d->metric_mean, d->metric_samples, ng);
    (i < an->ndevices ? &an->devices[i] : &an->all)->metrics = p;
    p += ng;
  }
  for (size_t i = 0; i < an->nsteps && ng; i++) {
    if (!m->steps[i]->n_metric_mean) continue;
    load_means(p, m->steps[i]->metric_mean, m->steps[i]->metric_samples, ng);
    an->steps[i].metrics = p;
    p += ng;
  }
  for (size_t i = 0; i < nkern && ng; i++) {
    const PName *e = m->kernels->names[i];
    if (!e->n_pm_mean) continue;
    load_means(p, e->pm_mean, e->pm_samples, ng);
    an->groups[TBE_GROUP_KERNEL][i].pm_metrics = p;
    p += ng;
  }
  for (size_t i = 0; i < nkern && nk; i++) {
    const PName *e = m->kernels->names[i];
    an->groups[TBE_GROUP_KERNEL][i].bound_by = e->bound_by;
    if (!e->n_metric_mean) continue;
    load_means(p, e->metric_mean, e->metric_samples, nk);
    an->groups[TBE_GROUP_KERNEL][i].metrics = p;
    p += nk;
  }
  return 0;
}

/* Step 4: the analysis of a checked file.  Returns 0 or TBE_ENOMEM. */
static int build(tbe_analysis **out, tbe_analysis_stamp *stamp, const PFile *f,
                 const tbe_allocator *al) {
  const PAnalysis *m = f->analysis;
  tbe_analysis *an = NULL;
  int rc = tbe__analysis_blank(&an, al);
  if (rc) return rc;
  tbe_trace *t = NULL;
  tbe_str *mids = NULL; /* the metric names' string ids */
  /* The stamp's sources and the string ids of the names, in one block. */
  size_t nnames = 0, nlaunched = 0;
  for (int g = 0; g < TBE_GROUP__COUNT; g++) {
    const PTable *tb = table_of(m, g);
    nnames += tb->n_names;
    for (size_t i = 0; i < tb->n_names; i++) nlaunched += tb->names[i]->n_launched;
  }
  size_t nids = 4 * nnames + nlaunched + m->n_devices + 1 + f->n_sources + 3;
  void *mem = tbe__calloc(&an->alloc_, 1, f->n_sources * sizeof(tbe_analysis_source) +
                                              nids * sizeof(tbe_str) + 16);
  rc = mem ? tbe_trace_create(&t, &an->alloc_) : TBE_ENOMEM;
  tbe__analysis_adopt(an, t, mem); /* freed with `an` from here on */
  if (rc) goto done;
  tbe_analysis_source *src = mem;
  tbe_str *ids = (tbe_str *)(src + f->n_sources), *id = ids;
  builder B = {t, 0};

  /* Intern every string first; resolve pointers after the last intern. */
  tbe_str host = intern(&B, &m->host), producer = intern(&B, &f->producer);
  if (m->has_host) t->host = host;
  for (size_t i = 0; i < f->n_sources; i++) *id++ = intern(&B, &f->sources[i]->name);
  for (size_t i = 0; i < m->n_devices; i++) *id++ = intern(&B, &m->devices[i]->name);
  *id++ = intern(&B, &m->all->name);
  for (int g = 0; g < TBE_GROUP__COUNT; g++) {
    const PTable *tb = table_of(m, g);
    for (size_t i = 0; i < tb->n_names; i++) {
      const PName *p = tb->names[i];
      tbe_str label = intern(&B, &p->label);
      *id++ = label;
      *id++ = p->name.len ? intern(&B, &p->name) : label;
      *id++ = intern(&B, &p->shapes);
      *id++ = intern(&B, &p->launch_op);
      for (size_t k = 0; k < p->n_launched; k++) *id++ = intern(&B, &p->launched[k]->name);
    }
  }
  tbe_str hint = intern(&B, &m->step_hint);
  size_t nmn = m->n_gpu_metrics + m->n_kernel_metrics;
  mids = nmn ? tbe__calloc(&an->alloc_, nmn, sizeof *mids) : NULL;
  if (nmn && !mids) B.rc = TBE_ENOMEM;
  for (size_t i = 0; i < nmn && !B.rc; i++)
    mids[i] = intern(&B, i < m->n_gpu_metrics ? &m->gpu_metrics[i]
                                              : &m->kernel_metrics[i - m->n_gpu_metrics]);
  for (size_t i = 0; i < m->n_warnings && !B.rc; i++)
    B.rc = tbe_trace_warn(t, "%.*s", (int)m->warnings[i].len,
                          (const char *)m->warnings[i].data);
  if ((rc = B.rc)) goto done;

  id = ids;
  for (size_t i = 0; i < f->n_sources; i++) {
    src[i].name = text(&B, *id++);
    src[i].size = f->sources[i]->size;
    src[i].mtime_ns = f->sources[i]->mtime_ns;
    src[i].head_crc32c = f->sources[i]->head_crc32c;
    src[i].tail_crc32c = f->sources[i]->tail_crc32c;
  }
  an->ndevices = m->n_devices;
  if (m->n_devices && !(an->devices = tbe__calloc(&an->alloc_, m->n_devices, sizeof *an->devices))) {
    rc = TBE_ENOMEM;
    goto done;
  }
  for (size_t i = 0; i < m->n_devices; i++) load_device(&an->devices[i], m->devices[i], *id++);
  load_device(&an->all, m->all, *id++);

  size_t cells = 0, cuda_cells = 0;
  for (int g = 0; g < TBE_GROUP__COUNT; g++)
    for (size_t i = 0; i < table_of(m, g)->n_names; i++) {
      if (table_of(m, g)->names[i]->has_step_ns) cells += m->n_steps;
      if (table_of(m, g)->names[i]->has_cuda_step_ns) cuda_cells += m->n_steps;
    }
  int64_t *pool = cells ? tbe__analysis_pool(an, cells) : NULL;
  int64_t *cpool = cuda_cells ? tbe__calloc(&an->alloc_, cuda_cells, sizeof *cpool) : NULL;
  tbe_op_kernel *lpool = nlaunched ? tbe__calloc(&an->alloc_, nlaunched, sizeof *lpool) : NULL;
  *tbe__analysis_ops_block(an, TBE__OPS_STEP_CELLS) = cpool; /* freed with `an` */
  *tbe__analysis_ops_block(an, TBE__OPS_LAUNCHED) = lpool;
  if ((cells && !pool) || (cuda_cells && !cpool) || (nlaunched && !lpool)) {
    rc = TBE_ENOMEM;
    goto done;
  }
  an->op_gpu_count = m->op_gpu_count;
  an->op_gpu_ns = m->op_gpu_ns;
  for (int g = 0; g < TBE_GROUP__COUNT; g++) {
    const PTable *tb = table_of(m, g);
    an->group_total_ns[g] = tb->total_ns;
    an->ngroups[g] = tb->n_names;
    if (!tb->n_names) continue;
    if (!(an->groups[g] = tbe__calloc(&an->alloc_, tb->n_names, sizeof(tbe_name_stats)))) {
      rc = TBE_ENOMEM;
      goto done;
    }
    for (size_t i = 0; i < tb->n_names; i++) {
      const PName *p = tb->names[i];
      tbe_name_stats *e = &an->groups[g][i];
      e->label = text(&B, *id++);
      e->name = *id++;
      tbe_str shapes = *id++, op = *id++;
      if (g == TBE_GROUP_CPU_OP_SHAPE) e->shapes = text(&B, shapes);
      if (p->has_launch_op) e->launch_op = text(&B, op);
      if (p->n_launched) e->launched = lpool;
      e->nlaunched = p->n_launched;
      for (size_t k = 0; k < p->n_launched; k++, lpool++) {
        lpool->name = text(&B, *id++);
        lpool->calls = p->launched[k]->calls;
        lpool->total_ns = p->launched[k]->total_ns;
      }
      e->self_cuda_ns = p->self_cuda_ns;
      e->cuda_total_ns = p->cuda_total_ns;
      e->kernels = p->kernels;
      e->launched_other_calls = p->launched_other_calls;
      e->launched_other_ns = p->launched_other_ns;
      if (p->has_cuda_step_ns) {
        e->cuda_step_ns = cpool;
        memcpy(cpool, p->cuda_step_ns, m->n_steps * sizeof *cpool);
        cpool += m->n_steps;
      }
      e->calls = p->calls;
      e->total_ns = p->total_ns;
      e->self_ns = p->self_ns;
      e->min_ns = p->min_ns;
      e->max_ns = p->max_ns;
      e->kclass = p->kclass;
      if (p->has_step_ns) {
        e->step_ns = pool;
        memcpy(pool, p->step_ns, m->n_steps * sizeof *pool);
        pool += m->n_steps;
      }
    }
  }
  if (m->n_launch_seq) {
    an->launch_seq = tbe__alloc(&an->alloc_, m->n_launch_seq * sizeof *an->launch_seq);
    if (!an->launch_seq) {
      rc = TBE_ENOMEM;
      goto done;
    }
    for (size_t i = 0; i < m->n_launch_seq; i++)
      an->launch_seq[i] = an->groups[TBE_GROUP_KERNEL][m->launch_seq[i]].label;
    an->nlaunch_seq = m->n_launch_seq;
  }
  an->nsteps = m->n_steps;
  if (m->n_steps && !(an->steps = tbe__calloc(&an->alloc_, m->n_steps, sizeof *an->steps))) {
    rc = TBE_ENOMEM;
    goto done;
  }
  for (size_t i = 0; i < m->n_steps; i++) load_figures(&an->steps[i], m->steps[i], TBE__FS_STEP);
  load_figures(an, m, TBE__FS_ANALYSIS);
  an->ended_early = m->ended_early;
  an->nadvice = m->n_advice;
  if (m->n_advice && !(an->advice = tbe__calloc(&an->alloc_, m->n_advice, sizeof *an->advice))) {
    rc = TBE_ENOMEM;
    goto done;
  }
  for (size_t i = 0; i < m->n_advice; i++) {
    an->advice[i].kind = m->advice[i]->kind;
    an->advice[i].figure = m->advice[i]->figure;
    memcpy(an->advice[i].text, m->advice[i]->text.data, m->advice[i]->text.len);
  }
  an->host = text(&B, host);
  an->pid = m->pid;
  an->rank = m->rank;
  an->world_size = m->world_size;
  an->step_dist.n = (size_t)m->step_dist->n;
  an->step_dist.median_ns = m->step_dist->median_ns;
  an->step_dist.q1_ns = m->step_dist->q1_ns;
  an->step_dist.q3_ns = m->step_dist->q3_ns;
  an->step_dist.min_ns = m->step_dist->min_ns;
  an->step_dist.max_ns = m->step_dist->max_ns;
  an->step_hint = m->has_step_hint ? text(&B, hint) : NULL;
  an->step_hint_kind = m->step_hint_kind;
  if ((rc = load_metrics(an, m, &B, mids))) goto done;
  if (stamp) {
    stamp->version = f->format_version;
    stamp->producer = text(&B, producer);
    stamp->sources = src;
    stamp->nsources = f->n_sources;
    stamp->analysis_version = f->analysis_version;
  }
done:
  if (an) tbe__free(&an->alloc_, mids);
  if (rc) {
    tbe_analysis_free(an);
    return rc;
  }
  *out = an;
  return 0;
}

/* ---- loading ---- */

typedef struct pb_alloc {
  const tbe_allocator *a;
  int nomem;
} pb_alloc;

static void *pb_alloc_fn(void *ctx, size_t size) {
  pb_alloc *p = ctx;
  void *r = tbe__alloc(p->a, size ? size : 1);
  if (!r) p->nomem = 1;
  return r;
}

static void pb_free_fn(void *ctx, void *ptr) { tbe__free(((pb_alloc *)ctx)->a, ptr); }

int tbe_analysis_load(tbe_analysis **out, tbe_analysis_stamp *stamp, const void *data, size_t n,
                      const tbe_allocator *a, tbe_analysis_load_error *err) {
  if (err) {
    err->offset = UINT64_MAX;
    err->message[0] = 0;
  }
  if (stamp) memset(stamp, 0, sizeof *stamp);
  if (!out) return TBE_EINVAL;
  *out = NULL;
  if (!data && n) return TBE_EINVAL;
  if ((uint64_t)n > TBE_ANALYSIS_FILE_MAX)
    return fail(err, TBE_ETOOBIG, UINT64_MAX,
                "%zu bytes, more than an analysis file holds (at most %llu)", n,
                (unsigned long long)TBE_ANALYSIS_FILE_MAX);
  const uint8_t *b = data;
  uint64_t version;
  size_t bad;
  if (peek_version(b, n, &version, &bad))
    return fail(err, TBE_ECORRUPT, bad,
                "a field of AnalysisFile runs past the end or has a bad header");
  if (version != TBE_ANALYSIS_FORMAT_VERSION) {
    if (stamp) stamp->version = version > UINT32_MAX ? UINT32_MAX : (uint32_t)version;
    if (version == 0)
      return fail(err, TBE_ECORRUPT, UINT64_MAX,
                  "field AnalysisFile.format_version: missing (not an analysis file)");
    return fail(err, TBE_EFORMAT, UINT64_MAX, "format version %llu, this tbexport reads %d",
                (unsigned long long)version, TBE_ANALYSIS_FORMAT_VERSION);
  }
  if (n < CRC_FIELD || b[n - CRC_FIELD] != CRC_TAG)
    return fail(err, TBE_ECORRUPT, n < CRC_FIELD ? 0 : n - CRC_FIELD,
                "field AnalysisFile.crc32c: not the last field (the file is cut short?)");
  uint32_t want = (uint32_t)b[n - 4] | (uint32_t)b[n - 3] << 8 | (uint32_t)b[n - 2] << 16 |
                  (uint32_t)b[n - 1] << 24;
  if (tbe__crc32c(b, n - CRC_FIELD) != want)
    return fail(err, TBE_ECORRUPT, UINT64_MAX,
                "field AnalysisFile.crc32c: the checksum of bytes 0-%zu does not match",
                n - CRC_FIELD);
  tbe_allocator al;
  tbe__allocator_init(&al, a);
  pb_alloc pctx = {&al, 0};
  ProtobufCAllocator pa = {pb_alloc_fn, pb_free_fn, &pctx};
  PFile *f = tbexport__analysis_file__unpack(&pa, n, b);
  if (!f) {
    if (pctx.nomem) return fail(err, TBE_ENOMEM, UINT64_MAX, "%s", tbe_strerror(TBE_ENOMEM));
    char what[160];
    uint64_t at = find_bad(&tbexport__analysis_file__descriptor, b, n, 0, 0, what, sizeof what);
    if (at != UINT64_MAX)
      return fail(err, TBE_ECORRUPT, at, "%s", what);
    return fail(err, TBE_ECORRUPT, UINT64_MAX, "does not decode as an AnalysisFile");
  }
  loader L = {err, 0};
  int rc = check_file(&L, f);
  if (!rc) rc = check_figures(&L, f);
  if (!rc) {
    rc = build(out, stamp, f, &al);
    if (rc) fail(err, rc, UINT64_MAX, "%s", tbe_strerror(rc));
  }
  tbexport__analysis_file__free_unpacked(f, &pa);
  return rc;
}

/* ---- files ----
 * Read like every file below a log dir (common/fsutil.h, tbe__read_open:
 * no symlink followed below `base`, no blocking open, regular files only,
 * bounded before a byte is read). */

uint32_t tbe_analysis_version(void) { return TBE__ANALYSIS_VERSION; }

/* err: one line naming `path` for a refusal of the file itself. */
static int file_fail(tbe_analysis_load_error *err, int rc, const char *path, uint64_t size) {
  if (rc == -ELOOP) return fail(err, rc, UINT64_MAX, "%s is a symbolic link: not followed", path);
  if (rc == -ENOTDIR) return fail(err, rc, UINT64_MAX, "%s is not a directory", path);
  if (rc == TBE_ENOTREG)
    return fail(err, rc, UINT64_MAX, "%s is not a regular file: not read", path);
  if (rc == TBE_ETOOBIG)
    return fail(err, rc, UINT64_MAX,
                "%s is %llu bytes, more than an analysis file holds (at most %llu): not read", path,
                (unsigned long long)size, (unsigned long long)TBE_ANALYSIS_FILE_MAX);
  return fail(err, rc, UINT64_MAX, "%s: %s", path, tbe_strerror(rc));
}

int tbe_analysis_read(tbe_analysis **out, tbe_analysis_stamp *stamp, const char *base,
                      const char *rel, const tbe_allocator *a, tbe_analysis_load_error *err) {
  if (err) {
    err->offset = UINT64_MAX;
    err->message[0] = 0;
  }
  if (stamp) memset(stamp, 0, sizeof *stamp);
  if (!out) return TBE_EINVAL;
  *out = NULL;
  if (!base || !*base) return TBE_EINVAL;
  tbe_allocator al;
  tbe__allocator_init(&al, a);
  void *buf = NULL;
  size_t len = 0;
  uint64_t size = 0;
  char where[4096];
  int rc =
      tbe__read_file(&al, base, rel, TBE_ANALYSIS_FILE_MAX, &buf, &len, &size, where, sizeof where);
  if (rc == TBE_ENOMEM) return fail(err, rc, UINT64_MAX, "%s", tbe_strerror(rc));
  if (rc) return file_fail(err, rc, where, size);
  rc = tbe_analysis_load(out, stamp, buf, len, a, err);
  tbe__free(&al, buf);
  return rc;
}

/* The CRC32C of `n` bytes of `fd` at `off`, read in small pieces (the key
 * is made on the caller's thread, whose stack is not ours to size). */
static int crc_range(int fd, uint64_t off, uint64_t n, uint32_t *crc) {
  uint8_t buf[8192];
  uint32_t c = 0;
  while (n > 0) {
    size_t k = n < sizeof buf ? (size_t)n : sizeof buf;
    int rc = tbe__pread_all(fd, buf, k, off);
    if (rc) return rc;
    c = tbe__crc32c_extend(c, buf, k);
    off += k;
    n -= k;
  }
  *crc = c;
  return 0;
}

int tbe__analysis_key_fd(int fd, tbe_analysis_source *src) {
  struct stat st;
  if (fstat(fd, &st) != 0) return -errno;
  if (!S_ISREG(st.st_mode)) return TBE_ENOTREG;
  uint64_t size = (uint64_t)st.st_size, span = TBE_ANALYSIS_KEY_SPAN;
  if (span > size) span = size;
  uint32_t head, tail;
  int rc = crc_range(fd, 0, span, &head);
  if (!rc) rc = crc_range(fd, size - span, span, &tail);
  if (rc) return rc;
  src->size = size;
  src->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
  src->head_crc32c = head;
  src->tail_crc32c = tail;
  return 0;
}

int tbe_analysis_source_key(tbe_analysis_source *src, const char *base, const char *rel) {
  if (!src || !base || !*base) return TBE_EINVAL;
  struct stat st;
  int fd = tbe__read_open(base, rel, &st, NULL, 0);
  if (fd < 0) return fd;
  int rc = tbe__analysis_key_fd(fd, src);
  close(fd);
  return rc;
}
