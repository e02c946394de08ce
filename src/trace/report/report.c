/* report.c: rendering an analysis or a diff as a terminal table, CSV, JSON
 * or Markdown (tbexport/analysis.h), and the name shortening they share.
 *
 * Everything is written into one growable buffer (common/buf.h) with a
 * sticky allocation error, then handed to the caller whole, so a failed
 * report never prints half a table.  Durations are printed from integer
 * nanoseconds with integer arithmetic (tbe__fmt_dur), never through a
 * float format, so the text is the same on every machine; CSV and JSON
 * carry raw integer nanoseconds.  Percentages and ratios are the only
 * floats and are printed with a fixed number of decimals.
 *
 * Table layout: the name column takes whatever the numeric columns leave
 * of `width` (default 100); names are shortened to fit unless `wide`.
 *
 * The formats are a table (report_api.c, report.h): a row per format, a
 * renderer per report in each row, found by tbe__report_format_of; the
 * public entry points there check the options and call their format's
 * entry.  The renderers live with their report: report_summary.c (one
 * analysis), report_diff.c (two), report_run.c (a run of several hosts,
 * and two runs); this file, the folder's bottom, keeps the helpers they
 * share, the options and the name shortening, and calls none of them. */
#include "trace/report/report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/optsize.h"
#include "common/text.h"
#include "tbexport/error.h"


/* ---- small formatting helpers ---- */

size_t tbe__fmt_dur(char *buf, size_t size, int64_t ns) {
  const char *sign = "";
  uint64_t v;
  if (ns < 0) {
    sign = "-";
    v = (uint64_t)(-(ns + 1)) + 1;
  } else {
    v = (uint64_t)ns;
  }
  int n;
  if (v < 1000) {
    n = snprintf(buf, size, "%s%lluns", sign, (unsigned long long)v);
  } else if (v < 1000000) {
    n = snprintf(buf, size, "%s%llu.%03lluus", sign, (unsigned long long)(v / 1000),
                 (unsigned long long)(v % 1000));
  } else if (v < 1000000000) {
    uint64_t q = (v + 500) / 1000; /* microseconds, rounded */
    n = snprintf(buf, size, "%s%llu.%03llums", sign, (unsigned long long)(q / 1000),
                 (unsigned long long)(q % 1000));
  } else {
    uint64_t q = (v + 500000) / 1000000; /* milliseconds, rounded */
    n = snprintf(buf, size, "%s%llu.%03llus", sign, (unsigned long long)(q / 1000),
                 (unsigned long long)(q % 1000));
  }
  return n < 0 ? 0 : ((size_t)n < size ? (size_t)n : (size ? size - 1 : 0));
}

/* Text from the trace goes out through common/text.h: the terminal form
 * in tables, measured after escaping; the Markdown, JSON and CSV forms in
 * theirs. */
void tbe__md_escape(tbe__buf *b, const char *s) { tbe__text_md(b, s, strlen(s)); }
void tbe__json_str(tbe__buf *b, const char *s) { tbe__text_json(b, s, strlen(s)); }
static void csv_str(tbe__buf *b, const char *s) { tbe__text_csv(b, s, strlen(s)); }
/* Appends `s` in terminal form. */
void tbe__term(tbe__buf *b, const char *s) { tbe__text_term(b, s, strlen(s)); }

/* Appends `s` (safe text: terminal form or our own words) padded with
 * spaces to `w` columns (left-aligned), or right-aligned when `right`. */
static void cell(tbe__buf *b, const char *s, int w, int right) { tbe__text_cell(b, s, w, right); }

static void rule(tbe__buf *b, int w) {
  for (int i = 0; i < w; i++) tbe__buf_putc(b, '-');
  tbe__buf_putc(b, '\n');
}

void tbe__cell(tbe__buf *b, const char *s, int w, int right) { cell(b, s, w, right); }
void tbe__rule(tbe__buf *b, int w) { rule(b, w); }

void tbe__json_ns(tbe__buf *b, int64_t ns) {
  if (ns < 0)
    tbe__buf_puts(b, "null");
  else
    tbe__buf_printf(b, "%lld", (long long)ns);
}

void tbe__csv_ns(tbe__buf *b, int64_t ns) {
  if (ns >= 0) tbe__buf_printf(b, "%lld", (long long)ns);
}

void tbe__json_launch(tbe__buf *b, int64_t all, int64_t overhead, int64_t queue) {
  tbe__json_ns(b, all);
  tbe__buf_puts(b, ",\"launch_overhead_median_ns\":");
  tbe__json_ns(b, overhead);
  tbe__buf_puts(b, ",\"queue_delay_median_ns\":");
  tbe__json_ns(b, queue);
}

void tbe__csv_launch(tbe__buf *b, int64_t all, int64_t overhead, int64_t queue) {
  tbe__csv_ns(b, all);
  tbe__buf_putc(b, ',');
  tbe__csv_ns(b, overhead);
  tbe__buf_putc(b, ',');
  tbe__csv_ns(b, queue);
}
void tbe__csv_str(tbe__buf *b, const char *s) { csv_str(b, s); }

/* Appends `text` wrapped at `width` columns (words split at spaces; a
 * \x01 is a space that does not break), then a newline. */
void tbe__wrap(tbe__buf *b, const char *text, int width) {
  int col = 0;
  const char *p = text;
  while (*p) {
    const char *w = p;
    int nbsp = 0;
    while (*p && *p != ' ') nbsp += *p++ == '\x01';
    int len = (int)tbe__text_width(w, (size_t)(p - w)) + nbsp;
    if (col > 0 && col + 1 + len > width) {
      tbe__buf_putc(b, '\n');
      col = 0;
    } else if (col > 0) {
      tbe__buf_putc(b, ' ');
      col++;
    }
    for (const char *q = w; q < p; q++) tbe__buf_putc(b, *q == '\x01' ? ' ' : *q);
    col += len;
    while (*p == ' ') p++;
  }
  tbe__buf_putc(b, '\n');
}

/* Appends `s` quoted for a POSIX shell when it needs it: in single quotes,
 * or, when it holds what the terminal form escapes, as bash's $'...',
 * whose escapes are the terminal form's (plus \' for a quote), so the word
 * both prints safely and gives the name back when pasted. */
void tbe__shell_word(tbe__buf *b, const char *s) {
  int plain = *s != '\0';
  for (const char *p = s; *p && plain; p++)
    plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            strchr("_./:@%+=,-#", *p);
  if (plain) {
    tbe__buf_puts(b, s);
    return;
  }
  tbe__buf t;
  tbe__buf_init(&t, b->a);
  tbe__text_line(&t, s, strlen(s));
  int ansi = t.len != strlen(s);
  if (ansi) {
    tbe__buf_clear(&t);
    tbe__text_term(&t, s, strlen(s));
  }
  if (tbe__buf_error(&t)) {
    b->err = t.err;
    tbe__buf_deinit(&t);
    return;
  }
  tbe__buf_puts(b, ansi ? "$'" : "'");
  for (size_t i = 0; i < t.len; i++) {
    if (t.data[i] == '\'' && ansi) tbe__buf_puts(b, "\\'");
    else if (t.data[i] == '\'') tbe__buf_puts(b, "'\\''");
    else tbe__buf_putc(b, (char)t.data[i]);
  }
  tbe__buf_putc(b, '\'');
  tbe__buf_deinit(&t);
}

/* ---- names ---- */

/* Copies `s[0..n)` into `out` eliding template arguments nested at depth
 * >= `depth` to "...".  Returns the new length. */
static size_t elide_templates(const char *s, size_t n, int depth, char *out, size_t size) {
  size_t o = 0;
  int d = 0;
  for (size_t i = 0; i < n && o + 4 < size; i++) {
    char c = s[i];
    if (c == '<') {
      d++;
      if (d == depth) {
        out[o++] = '<';
        memcpy(out + o, "...", 3);
        o += 3;
        continue;
      }
    } else if (c == '>' && d > 0) {
      d--;
      if (d >= depth) continue;
    }
    if (d >= depth) continue;
    out[o++] = c;
  }
  out[o] = '\0';
  return o;
}

/* Removes "ns::" qualifiers ("at::native::f<std::array<T> >" becomes
 * "f<array<T> >") in place; "(anonymous namespace)::" goes too.  Returns
 * the new length. */
static size_t strip_qualifiers(char *s, size_t n) {
  size_t o = 0, seg = 0; /* seg: where the current identifier began in the output */
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (c == ':' && i + 1 < n && s[i + 1] == ':') {
      o = seg; /* drop the qualifier just written */
      i++;
      continue;
    }
    s[o++] = c;
    int ident = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '_' || c == ')' || c == '(' || c == ' ';
    if (c == '(' && i + 21 <= n && strncmp(s + i, "(anonymous namespace)", 21) == 0) {
      /* copy the whole token so its space does not start a new segment */
      memmove(s + o, s + i + 1, 20);
      o += 20;
      i += 20;
      continue;
    }
    if (!ident || c == ' ') seg = o;
  }
  s[o] = '\0';
  return o;
}

size_t tbe_name_shorten(const char *name, size_t width, char *buf, size_t size) {
  if (!buf || size == 0) return 0;
  buf[0] = '\0';
  if (!name) return 0;
  /* Names in a finished trace arrive demangled; a mangled one given
   * directly is demangled here (on the heap when it is long). */
  char dem[TBE__SHORT_MAX], tmp[TBE__SHORT_MAX];
  char *heap = NULL;
  tbe_allocator al;
  tbe__allocator_init(&al, NULL);
  const char *s = name;
  if (name[0] == '_') {
    int dn = tbe_demangle(name, dem, sizeof dem);
    if (dn >= (int)sizeof dem && (heap = tbe__alloc(&al, (size_t)dn + 1)) != NULL) {
      tbe_demangle(name, heap, (size_t)dn + 1);
      s = heap;
    } else if (dn >= 0 && dn < (int)sizeof dem) {
      s = dem;
    }
  }
  size_t n = strlen(s);
  /* A C++ signature ends with its parameter list: drop it, then drop the
   * return type (text up to the last space outside brackets). */
  if (n > 1 && s[n - 1] == ')') {
    int d = 0;
    size_t open = n;
    for (size_t i = n; i-- > 0;) {
      char c = s[i];
      if (c == ')' || c == '>') d++;
      else if (c == '(' || c == '<') d--;
      if (d == 0) {
        open = i;
        break;
      }
    }
    if (open < n && open > 0 && s[open] == '(' && strncmp(s + open, "(anonymous", 10) != 0) {
      n = open;
      d = 0;
      size_t cut = 0;
      for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '<' || c == '(') d++;
        else if ((c == '>' || c == ')') && d > 0) d--;
        else if (c == ' ' && d == 0) cut = i + 1;
      }
      s += cut;
      n -= cut;
    }
  }
  if (n >= TBE__SHORT_MAX) n = TBE__SHORT_MAX - 1;
  memcpy(tmp, s, n);
  tmp[n] = '\0';
  tbe__free(&al, heap);
  /* Too long: drop namespace qualifiers, then elide template arguments
   * nested two deep, then cut the end (the full name is in --wide, CSV
   * and JSON). */
  if (width && n > width) n = strip_qualifiers(tmp, n);
  if (width && n > width) {
    char t2[TBE__SHORT_MAX];
    memcpy(t2, tmp, n + 1);
    n = elide_templates(t2, n, 2, tmp, sizeof tmp);
  }
  if (width && n > width) {
    size_t keep = width > 3 ? width - 3 : 0;
    while (keep > 0 && ((unsigned char)tmp[keep] & 0xc0) == 0x80) keep--;
    memcpy(tmp + keep, "...", 3);
    n = keep + (width >= 3 ? 3 : width);
    tmp[n] = '\0';
  }
  if (n >= size) {
    n = size - 1;
    while (n > 0 && ((unsigned char)tmp[n] & 0xc0) == 0x80) n--;
  }
  memcpy(buf, tmp, n);
  buf[n] = '\0';
  return n;
}

/* The full name as shown with --wide (kernel names arrive demangled:
 * tbe_trace_finish). */
static void full_name(const char *name, char *buf, size_t size) { snprintf(buf, size, "%s", name); }

void tbe__full_name(const char *name, char *buf, size_t size) { full_name(name, buf, size); }

void tbe__name_cell(const char *name, int w, int wide, char *buf, size_t size) {
  char esc[TBE__SHORT_MAX];
  tbe__text_term_z(esc, sizeof esc, name, 0);
  if (wide) full_name(esc, buf, size);
  else tbe_name_shorten(esc, (size_t)(w > 0 ? w : 1), buf, size);
  if (!buf[0]) snprintf(buf, size, "(unnamed)");
}

/* `s` cut to `w` bytes around byte `d`, where it differs from a row
 * that would read the same: its start, "...", then a window that begins a
 * little before `d`, closed by "..." when `s` goes on. */
static void cut_around(const char *s, size_t d, size_t w, char *out, size_t size) {
  size_t n = strlen(s);
  if (n <= w || w < 12) {
    snprintf(out, size, "%.*s", (int)(w < n ? w : n), s);
    return;
  }
  size_t head = w / 3, win = w - head - 3;
  size_t from = d > win / 4 ? d - win / 4 : 0;
  if (from < head) from = head;
  int more = from + win < n;
  if (more) win -= 3;
  if (from + win > n) from = n - win;
  /* cut on character boundaries */
  while (head > 0 && ((unsigned char)s[head] & 0xc0) == 0x80) head--;
  while (from < n && ((unsigned char)s[from] & 0xc0) == 0x80) from++;
  size_t end = from + win;
  while (end > from && end < n && ((unsigned char)s[end] & 0xc0) == 0x80) end--;
  snprintf(out, size, "%.*s...%.*s%s", (int)head, s, (int)(end - from), s + from,
           more ? "..." : "");
}

static size_t first_diff(const char *a, const char *b) {
  size_t i = 0;
  while (a[i] && a[i] == b[i]) i++;
  return i;
}

int tbe__name_cells(const char *const *names, size_t n, int w, int wide, char *cells,
                    size_t size, const tbe_allocator *a) {
  for (size_t i = 0; i < n; i++) tbe__name_cell(names[i], w, wide, cells + i * size, size);
  if (wide || n < 2) return 0;
  /* Rows that read alike: their names without the template arguments
   * elided by tbe_name_shorten, else their whole names, cut where they
   * differ from the others. */
  char *full = tbe__alloc(a, n * size);
  char *plain = tbe__alloc(a, n * size); /* the cells before any is changed */
  uint8_t *dup = tbe__calloc(a, n, 1);
  if (!full || !plain || !dup) {
    tbe__free(a, full);
    tbe__free(a, plain);
    tbe__free(a, dup);
    return TBE_ENOMEM;
  }
  memcpy(plain, cells, n * size);
  for (size_t i = 0; i < n; i++)
    for (size_t j = i + 1; j < n; j++)
      if (strcmp(plain + i * size, plain + j * size) == 0) dup[i] = dup[j] = 1;
  for (int pass = 0; pass < 2; pass++) {
    for (size_t i = 0; i < n; i++) {
      if (!dup[i]) continue;
      char esc[TBE__SHORT_MAX];
      tbe__text_term_z(esc, sizeof esc, names[i], 0);
      if (pass == 0) tbe_name_shorten(esc, 0, full + i * size, size);
      else snprintf(full + i * size, size, "%s", esc);
    }
    int left = 0;
    for (size_t i = 0; i < n; i++) {
      if (!dup[i]) continue;
      size_t d = 0;
      int clash = 0;
      for (size_t j = 0; j < n; j++) {
        if (j == i || !dup[j] || strcmp(plain + i * size, plain + j * size) != 0) continue;
        size_t f = first_diff(full + i * size, full + j * size);
        if (f > d) d = f;
        clash |= strcmp(full + i * size, full + j * size) == 0;
      }
      if (clash) {
        left = 1; /* the same short form: the whole names, next pass */
        continue;
      }
      cut_around(full + i * size, d, (size_t)(w > 0 ? w : 1), cells + i * size, size);
      dup[i] = 2;
    }
    if (!left) break;
  }
  tbe__free(a, full);
  tbe__free(a, plain);
  tbe__free(a, dup);
  return 0;
}

size_t tbe__tag_component(const char *name, size_t width, char *buf, size_t size) {
  char s[TBE__SHORT_MAX];
  size_t n = tbe_name_shorten(name, 0, s, sizeof s);
  strip_qualifiers(s, n);
  size_t o = 0;
  if (width && width < size) size = width + 1;
  for (const char *p = s; *p && o + 1 < size; p++) {
    char c = *p;
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
             c == '_' || c == '.' || c == ':' || c == '-';
    if (!ok) c = '_';
    if (c == '_' && o > 0 && buf[o - 1] == '_') continue;
    buf[o++] = c;
  }
  while (o > 1 && buf[o - 1] == '_') o--;
  if (o == 0 && size > 1) buf[o++] = '_';
  if (size) buf[o < size ? o : size - 1] = '\0';
  return o;
}

/* ---- group titles ---- */

static const char *gtitle[TBE_GROUP__COUNT] = {"Kernels", "CPU operators", "Ranges",
                                               "CPU operators by input shape"};

const char *tbe__group_title(tbe_group_kind g) {
  return (unsigned)g < TBE_GROUP__COUNT ? gtitle[g] : "";
}

/* ---- public entry points ---- */

static void report_defaults(tbe_report_options *o) {
  memset(o, 0, sizeof *o);
  o->format = TBE_REPORT_TABLE;
  o->sort = TBE_SORT_DEFAULT;
  o->top = 10;
  o->width = 100;
}
TBE__OPTIONS_INIT_SIZED(tbe_report_options, report_defaults)

static int finish(tbe__buf *b, char **out, size_t *len) {
  tbe__buf_putc(b, '\0');
  if (tbe__buf_error(b)) {
    tbe__buf_deinit(b);
    return TBE_ENOMEM;
  }
  *out = (char *)b->data;
  if (len) *len = b->len - 1;
  return 0;
}

void tbe_report_free(char *s, size_t len, const tbe_allocator *a) {
  (void)len;
  if (!s) return;
  tbe_allocator al;
  tbe__allocator_init(&al, a);
  tbe__free(&al, s);
}

int tbe__report_options(const tbe_report_options *o, tbe_report_options *oo) {
  if (!o) tbe_report_options_init(oo);
  else if (!TBE__OPTIONS_TAKE(tbe_report_options, oo, o))
    return TBE_EINVAL; /* its size */
  if (oo->width <= 0) oo->width = 100;
  if ((unsigned)oo->sort > TBE_SORT_DEFAULT || (unsigned)oo->format > TBE_REPORT_MARKDOWN ||
      (unsigned)oo->group_by > TBE_GROUP_BY_SHAPE)
    return TBE_EINVAL;
  return 0;
}

int tbe__report_finish(tbe__buf *b, char **out, size_t *len) { return finish(b, out, len); }

/* ---- figures printed from the table ---- */

int tbe__fig_listed(const tbe__figure *f) {
  return f->id >= TBE__FIG_LISTED && f->scope == TBE__FS_DEVICE && f->n == 1;
}

int tbe__fig_step_listed(const tbe__figure *f) {
  return f->id >= TBE__FIG_LISTED && f->scope == TBE__FS_STEP && f->n == 1;
}

int tbe__fig_known(const tbe__figure *f, const void *obj, size_t n, size_t stride) {
  for (size_t i = 0; i < n; i++)
    if (!isnan(tbe__fig_real(f, (const char *)obj + i * stride, 0))) return 1;
  return 0;
}

void tbe__fig_cell(char *buf, size_t size, const tbe__figure *f, const void *obj) {
  double r = tbe__fig_real(f, obj, 0);
  if (isnan(r))
    snprintf(buf, size, "-");
  else if (f->unit == TBE__FU_PCT)
    snprintf(buf, size, "%.1f%%", r);
  else if (f->unit == TBE__FU_NS || f->unit == TBE__FU_NS_OPT)
    tbe__fmt_dur(buf, size, tbe__fig_i64(f, obj, 0));
  else if (tbe__fig_is_mem(f))
    tbe__fmt_bytes(buf, size, tbe__fig_i64(f, obj, 0), f->unit == TBE__FU_BYTES_DELTA);
  else if (tbe__fig_unsigned(f))
    snprintf(buf, size, "%llu", (unsigned long long)tbe__fig_u64(f, obj, 0));
  else
    snprintf(buf, size, "%lld", (long long)tbe__fig_i64(f, obj, 0));
}

/* The value as JSON and CSV write it: NULL when unknown. */
static const char *fig_raw(char *buf, size_t size, const tbe__figure *f, const void *obj) {
  double r = tbe__fig_real(f, obj, 0);
  if (isnan(r)) return NULL;
  if (f->unit == TBE__FU_PCT)
    snprintf(buf, size, "%.3f", r);
  else if (tbe__fig_unsigned(f))
    snprintf(buf, size, "%llu", (unsigned long long)tbe__fig_u64(f, obj, 0));
  else
    snprintf(buf, size, "%lld", (long long)tbe__fig_i64(f, obj, 0));
  return buf;
}

void tbe__fig_json(tbe__buf *b, const tbe__figure *f, const void *obj) {
  char v[48];
  const char *s = fig_raw(v, sizeof v, f, obj);
  tbe__buf_puts(b, s ? s : "null");
}

void tbe__fig_csv(tbe__buf *b, const tbe__figure *f, const void *obj) {
  char v[48];
  const char *s = fig_raw(v, sizeof v, f, obj);
  if (s) tbe__buf_puts(b, s);
}
