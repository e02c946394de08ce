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
 * of `width` (default 100); names are shortened to fit unless `wide`. */
#include "trace/report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "tbexport/error.h"

#define NAME_MIN 12
#define SHORT_MAX 4096

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

static const char *dur(char *buf, int64_t ns) {
  tbe__fmt_dur(buf, 32, ns);
  return buf;
}

static double pct(int64_t part, int64_t whole) {
  return whole > 0 ? 100.0 * (double)part / (double)whole : 0.0;
}

static size_t utf8_len(const unsigned char *s);

void tbe__md_escape(tbe__buf *b, const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    unsigned char c = *p;
    if (c >= 0x80) { /* keep valid UTF-8, replace the rest (TensorBoard needs valid text) */
      size_t n = utf8_len(p);
      if (n) tbe__buf_append(b, p, n);
      else tbe__buf_puts(b, "\xef\xbf\xbd");
      p += n ? n : 1;
      continue;
    }
    p++;
    if (c < 0x20 || c == 0x7f) {
      tbe__buf_putc(b, ' ');
      continue;
    }
    if (strchr("|\\`*_<>[]#", c)) tbe__buf_putc(b, '\\');
    tbe__buf_putc(b, (char)c);
  }
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if invalid. */
static size_t utf8_len(const unsigned char *s) {
  unsigned c = s[0];
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) return (s[1] & 0xc0) == 0x80 ? 2 : 0;
  if (c >= 0xe0 && c <= 0xef) {
    if ((s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80) return 0;
    if (c == 0xe0 && s[1] < 0xa0) return 0;
    if (c == 0xed && s[1] >= 0xa0) return 0;
    return 3;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    if ((s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80 || (s[3] & 0xc0) != 0x80) return 0;
    if (c == 0xf0 && s[1] < 0x90) return 0;
    if (c == 0xf4 && s[1] >= 0x90) return 0;
    return 4;
  }
  return 0;
}

void tbe__json_str(tbe__buf *b, const char *s) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char *p = (const unsigned char *)s;
  tbe__buf_putc(b, '"');
  while (*p) {
    unsigned c = *p;
    if (c == '"' || c == '\\') {
      tbe__buf_putc(b, '\\');
      tbe__buf_putc(b, (char)c);
      p++;
    } else if (c < 0x20) {
      switch (c) {
        case '\n': tbe__buf_puts(b, "\\n"); break;
        case '\t': tbe__buf_puts(b, "\\t"); break;
        case '\r': tbe__buf_puts(b, "\\r"); break;
        default: {
          char e[7] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15], 0};
          tbe__buf_puts(b, e);
        }
      }
      p++;
    } else if (c < 0x80) {
      tbe__buf_putc(b, (char)c);
      p++;
    } else {
      size_t n = utf8_len(p);
      if (n == 0) {
        tbe__buf_puts(b, "\xef\xbf\xbd");
        p++;
      } else {
        tbe__buf_append(b, p, n);
        p += n;
      }
    }
  }
  tbe__buf_putc(b, '"');
}

static void csv_str(tbe__buf *b, const char *s) {
  if (!strpbrk(s, ",\"\n\r")) {
    tbe__buf_puts(b, s);
    return;
  }
  tbe__buf_putc(b, '"');
  for (; *s; s++) {
    if (*s == '"') tbe__buf_putc(b, '"');
    tbe__buf_putc(b, *s);
  }
  tbe__buf_putc(b, '"');
}

/* Appends `s` padded with spaces to `w` bytes (left-aligned), or right-
 * aligned when `right`. */
static void cell(tbe__buf *b, const char *s, int w, int right) {
  int n = (int)strlen(s);
  if (right)
    for (int i = n; i < w; i++) tbe__buf_putc(b, ' ');
  tbe__buf_puts(b, s);
  if (!right)
    for (int i = n; i < w; i++) tbe__buf_putc(b, ' ');
}

static void rule(tbe__buf *b, int w) {
  for (int i = 0; i < w; i++) tbe__buf_putc(b, '-');
  tbe__buf_putc(b, '\n');
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
  char dem[SHORT_MAX], tmp[SHORT_MAX];
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
  if (n >= SHORT_MAX) n = SHORT_MAX - 1;
  memcpy(tmp, s, n);
  tmp[n] = '\0';
  tbe__free(&al, heap);
  /* Too long: drop namespace qualifiers, then elide template arguments
   * nested two deep, then cut the end (the full name is in --wide, CSV
   * and JSON). */
  if (width && n > width) n = strip_qualifiers(tmp, n);
  if (width && n > width) {
    char t2[SHORT_MAX];
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

size_t tbe__tag_component(const char *name, size_t width, char *buf, size_t size) {
  char s[SHORT_MAX];
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

/* ---- summary: table ---- */

static const char *gtitle[TBE_GROUP__COUNT] = {"Kernels", "CPU operators", "Ranges"};

static void device_label(const tbe_analysis *an, const tbe_device_stats *d, char *buf,
                         size_t size) {
  if (d->device < 0) snprintf(buf, size, "all GPUs");
  else snprintf(buf, size, "GPU %d", (int)d->device);
  (void)an;
}

typedef struct row_fn {
  const char *label;
  int (*fmt)(const tbe_device_stats *d, char *out);  /* 0: no row */
} row_fn;

#define DCOL 20

static void overview_table(tbe__buf *b, const tbe_analysis *an, int width) {
  const tbe_device_stats *cols[65];
  size_t ncols = 0;
  for (size_t i = 0; i < an->ndevices && ncols < 64; i++) cols[ncols++] = &an->devices[i];
  if (an->ndevices > 1) cols[ncols++] = &an->all;
  if (ncols == 0) {
    tbe__buf_puts(b, "No GPU activity in this trace.\n");
    return;
  }
  const int lw = 16;
  size_t per = (size_t)((width - lw) / (DCOL + 2));
  if (per < 1) per = 1;
  char v[64], x[32], y[32];
  for (size_t c0 = 0; c0 < ncols; c0 += per) {
    size_t c1 = c0 + per < ncols ? c0 + per : ncols;
    cell(b, "", lw, 0);
    for (size_t c = c0; c < c1; c++) {
      device_label(an, cols[c], v, sizeof v);
      tbe__buf_puts(b, "  ");
      cell(b, v, DCOL, 1);
    }
    tbe__buf_putc(b, '\n');
    /* Rows. */
    static const int order[16] = {15, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14};
    for (int ri = 0; ri < 16; ri++) {
      int r = order[ri];
      const char *label = NULL;
      int any = 0;
      char vals[64][64];
      for (size_t c = c0; c < c1; c++) {
        const tbe_device_stats *d = cols[c];
        vals[c - c0][0] = '\0';
        switch (r) {
          case 15:
            label = "name";
            if (d->name) {
              const char *nm = tbe_trace_str(an->trace, d->name);
              size_t l = strlen(nm);
              if (l > DCOL) snprintf(vals[c - c0], 64, "%.*s...", DCOL - 3, nm);
              else snprintf(vals[c - c0], 64, "%s", nm);
              any = 1;
            }
            break;
          case 0: label = "wall time"; snprintf(vals[c - c0], 64, "%s", dur(x, d->wall_ns)); any = 1; break;
          case 1:
            label = "GPU busy";
            snprintf(vals[c - c0], 64, "%s %5.1f%%", dur(x, d->busy_ns), pct(d->busy_ns, d->wall_ns));
            any = 1;
            break;
          case 2:
            label = "kernels";
            snprintf(vals[c - c0], 64, "%s %5.1f%%", dur(x, d->kernel_ns), pct(d->kernel_ns, d->wall_ns));
            any = 1;
            break;
          case 3:
            label = "kernel count";
            snprintf(vals[c - c0], 64, "%llu", (unsigned long long)d->kernel_count);
            any = 1;
            break;
          case 4: case 5: case 6: case 7: case 8: {
            static const int kinds[5] = {TBE_COPY_HTOD, TBE_COPY_DTOH, TBE_COPY_DTOD, TBE_COPY_HTOH,
                                         TBE_COPY_PTOP};
            static const char *labels[5] = {"memcpy HtoD", "memcpy DtoH", "memcpy DtoD",
                                            "memcpy HtoH", "memcpy PtoP"};
            int k = kinds[r - 4];
            label = labels[r - 4];
            if (an->all.memcpy_count[k]) {
              snprintf(vals[c - c0], 64, "%s (%llu)", dur(x, d->memcpy_ns[k]),
                       (unsigned long long)d->memcpy_count[k]);
              any = 1;
            }
            break;
          }
          case 9: {
            label = "memcpy other";
            int64_t ns = 0;
            uint64_t cnt = 0, acnt = 0;
            for (int k = 0; k < TBE_NCOPY_KINDS; k++) {
              if (k == TBE_COPY_HTOD || k == TBE_COPY_DTOH || k == TBE_COPY_DTOD ||
                  k == TBE_COPY_HTOH || k == TBE_COPY_PTOP)
                continue;
              ns += d->memcpy_ns[k];
              cnt += d->memcpy_count[k];
              acnt += an->all.memcpy_count[k];
            }
            if (acnt) {
              snprintf(vals[c - c0], 64, "%s (%llu)", dur(x, ns), (unsigned long long)cnt);
              any = 1;
            }
            break;
          }
          case 10:
            label = "memset";
            if (an->all.memset_count) {
              snprintf(vals[c - c0], 64, "%s (%llu)", dur(x, d->memset_ns),
                       (unsigned long long)d->memset_count);
              any = 1;
            }
            break;
          case 11:
            label = "sync";
            if (an->all.sync_count) {
              snprintf(vals[c - c0], 64, "%s (%llu)", dur(x, d->sync_ns),
                       (unsigned long long)d->sync_count);
              any = 1;
            }
            break;
          case 12:
            label = "idle";
            snprintf(vals[c - c0], 64, "%s %5.1f%%", dur(x, d->idle_ns), pct(d->idle_ns, d->wall_ns));
            any = 1;
            break;
          case 13:
            label = "launch latency";
            if (an->all.launch_samples) {
              if (d->launch_median_ns >= 0) snprintf(vals[c - c0], 64, "%s", dur(x, d->launch_median_ns));
              else snprintf(vals[c - c0], 64, "-");
              any = 1;
            }
            break;
          case 14:
            label = "short kernels";
            if (an->all.kernel_count) {
              snprintf(vals[c - c0], 64, "%llu (<%dus)", (unsigned long long)d->short_kernels,
                       TBE_SHORT_KERNEL_NS / 1000);
              any = 1;
            }
            break;
          default: break;
        }
        (void)y;
      }
      if (!label || !any) continue;
      cell(b, label, lw, 0);
      for (size_t c = c0; c < c1; c++) {
        tbe__buf_puts(b, "  ");
        cell(b, vals[c - c0], DCOL, 1);
      }
      tbe__buf_putc(b, '\n');
    }
  }
}

static void host_lines(tbe__buf *b, const tbe_analysis *an) {
  char x[32], y[32];
  tbe__buf_printf(b, "host: busiest thread %s (%.1f%%), %llu CUDA API calls, %llu syncs (%s)\n",
                  dur(x, an->host_busy_ns), pct(an->host_busy_ns, an->wall_ns),
                  (unsigned long long)an->api_calls, (unsigned long long)an->sync_calls,
                  dur(y, an->sync_call_ns));
  if (an->overhead_ns || an->dropped_records || an->ended_early)
    tbe__buf_printf(b, "profiler: overhead %s, dropped records %llu (out-of-range timestamps %llu)%s\n",
                    dur(x, an->overhead_ns), (unsigned long long)an->dropped_records,
                    (unsigned long long)an->out_of_range_records,
                    an->ended_early ? ", capture ended early" : "");
}

static void name_table(tbe__buf *b, const tbe_analysis *an, tbe_group_kind g,
                       const tbe_report_options *o) {
  size_t n = an->ngroups[g];
  if (n == 0) return;
  size_t top = o->top && o->top < n ? o->top : n;
  int kern = g == TBE_GROUP_KERNEL;
  /* Columns: name, calls 7, total 10, self 10 (host tables), self% 6,
   * avg 10, min 10 (kernels), max 10. */
  static const int cw[6] = {7, 10, 10, 6, 10, 10};
  int fixed = 7 + 10 + 10 + 6 + 10 + 10 + 2 * 6;
  int nw = o->width - fixed;
  if (nw < NAME_MIN) nw = NAME_MIN;
  char name[SHORT_MAX], x[32];
  if (o->wide) {
    for (size_t i = 0; i < top; i++) {
      full_name(an->groups[g][i].label, name, sizeof name);
      size_t l = strlen(name);
      if ((int)l > nw) nw = (int)l;
    }
  }
  tbe__buf_printf(b, "\n%s (%zu of %zu, by %s)\n", gtitle[g], top, n,
                  o->sort == TBE_SORT_AVG ? "average" : o->sort == TBE_SORT_CALLS ? "calls"
                                            : o->sort == TBE_SORT_MAX ? "max" : "total");
  cell(b, "name", nw, 0);
  const char *hd[6] = {"calls", "total", kern ? "avg" : "self", "self%", kern ? "min" : "avg",
                       "max"};
  for (int c = 0; c < 6; c++) {
    tbe__buf_puts(b, "  ");
    cell(b, hd[c], cw[c], 1);
  }
  tbe__buf_putc(b, '\n');
  rule(b, nw + fixed);
  for (size_t i = 0; i < top; i++) {
    const tbe_name_stats *e = &an->groups[g][i];
    const char *full = e->label;
    if (o->wide) full_name(full, name, sizeof name);
    else tbe_name_shorten(full, (size_t)nw, name, sizeof name);
    if (!name[0]) snprintf(name, sizeof name, "(unnamed)");
    cell(b, name, nw, 0);
    int64_t avg = e->calls ? e->total_ns / (int64_t)e->calls : 0;
    char v[6][32];
    snprintf(v[0], 32, "%llu", (unsigned long long)e->calls);
    tbe__fmt_dur(v[1], 32, e->total_ns);
    tbe__fmt_dur(v[2], 32, kern ? avg : e->self_ns);
    snprintf(v[3], 32, "%.1f", pct(e->self_ns, an->group_total_ns[g]));
    tbe__fmt_dur(v[4], 32, kern ? e->min_ns : avg);
    tbe__fmt_dur(v[5], 32, e->max_ns);
    for (int c = 0; c < 6; c++) {
      tbe__buf_puts(b, "  ");
      cell(b, v[c], cw[c], 1);
    }
    tbe__buf_putc(b, '\n');
  }
  (void)x;
}

static void steps_table(tbe__buf *b, const tbe_analysis *an) {
  if (!an->nsteps) return;
  tbe__buf_printf(b, "\nSteps (%zu)\n", an->nsteps);
  static const char *hd[5] = {"step", "time", "GPU busy", "kernel time", "kernels"};
  static const int cw[5] = {10, 12, 9, 12, 8};
  for (int c = 0; c < 5; c++) {
    if (c) tbe__buf_puts(b, "  ");
    cell(b, hd[c], cw[c], c != 0);
  }
  tbe__buf_putc(b, '\n');
  rule(b, 10 + 12 + 9 + 12 + 8 + 8);
  for (size_t i = 0; i < an->nsteps; i++) {
    const tbe_step_stats *s = &an->steps[i];
    char v[5][32];
    snprintf(v[0], 32, "%lld", (long long)s->num);
    tbe__fmt_dur(v[1], 32, s->dur_ns);
    snprintf(v[2], 32, "%.1f%%", pct(s->gpu_busy_ns, s->dur_ns));
    tbe__fmt_dur(v[3], 32, s->kernel_ns);
    snprintf(v[4], 32, "%llu", (unsigned long long)s->kernel_count);
    for (int c = 0; c < 5; c++) {
      if (c) tbe__buf_puts(b, "  ");
      cell(b, v[c], cw[c], c != 0);
    }
    tbe__buf_putc(b, '\n');
  }
}

static void advice_lines(tbe__buf *b, const tbe_analysis *an, int md) {
  if (!an->nadvice) return;
  tbe__buf_puts(b, md ? "\n## Advice\n\n" : "\nAdvice\n");
  for (size_t i = 0; i < an->nadvice; i++) {
    tbe__buf_puts(b, "- ");
    if (md) tbe__md_escape(b, an->advice[i].text);
    else tbe__buf_puts(b, an->advice[i].text);
    tbe__buf_putc(b, '\n');
  }
}

static void summary_header(tbe__buf *b, const tbe_analysis *an, const tbe_report_options *o) {
  const tbe_trace *t = an->trace;
  char x[32];
  if (o->label[0]) tbe__buf_printf(b, "Trace %s\n", o->label[0]);
  tbe__buf_printf(b, "wall %s, %zu GPU%s, %llu kernels, %zu steps", dur(x, an->wall_ns),
                  an->ndevices, an->ndevices == 1 ? "" : "s",
                  (unsigned long long)an->all.kernel_count, an->nsteps);
  if (t->host) tbe__buf_printf(b, ", host %s", tbe_trace_str(t, t->host));
  tbe__buf_putc(b, '\n');
  for (size_t i = 0; i < t->nwarnings; i++)
    tbe__buf_printf(b, "warning: %s\n", tbe_trace_str(t, t->warnings[i]));
}

static void summary_table(tbe__buf *b, tbe_analysis *an, const tbe_report_options *o) {
  summary_header(b, an, o);
  tbe__buf_putc(b, '\n');
  overview_table(b, an, o->width);
  host_lines(b, an);
  for (int g = 0; g < TBE_GROUP__COUNT; g++) name_table(b, an, (tbe_group_kind)g, o);
  steps_table(b, an);
  advice_lines(b, an, 0);
}

/* ---- summary: markdown ---- */

void tbe__md_kernels(tbe__buf *b, const tbe_analysis *an, size_t top, int wide) {
  size_t n = an->ngroups[TBE_GROUP_KERNEL];
  if (top == 0 || top > n) top = n;
  char name[SHORT_MAX], v[6][32];
  tbe__buf_puts(b, "| kernel | calls | total | self % | avg | min | max |\n"
                   "|---|---:|---:|---:|---:|---:|---:|\n");
  for (size_t i = 0; i < top; i++) {
    const tbe_name_stats *e = &an->groups[TBE_GROUP_KERNEL][i];
    const char *full = e->label;
    if (wide) full_name(full, name, sizeof name);
    else tbe_name_shorten(full, 80, name, sizeof name);
    int64_t avg = e->calls ? e->total_ns / (int64_t)e->calls : 0;
    tbe__fmt_dur(v[1], 32, e->total_ns);
    tbe__fmt_dur(v[2], 32, avg);
    tbe__fmt_dur(v[3], 32, e->min_ns);
    tbe__fmt_dur(v[4], 32, e->max_ns);
    tbe__buf_puts(b, "| ");
    tbe__md_escape(b, name);
    tbe__buf_printf(b, " | %llu | %s | %.1f | %s | %s | %s |\n", (unsigned long long)e->calls,
                    v[1], pct(e->self_ns, an->group_total_ns[TBE_GROUP_KERNEL]), v[2], v[3], v[4]);
  }
}

static void md_group(tbe__buf *b, const tbe_analysis *an, tbe_group_kind g,
                     const tbe_report_options *o) {
  size_t n = an->ngroups[g];
  if (!n) return;
  size_t top = o->top && o->top < n ? o->top : n;
  tbe__buf_printf(b, "\n## %s (%zu of %zu)\n\n", gtitle[g], top, n);
  if (g == TBE_GROUP_KERNEL) {
    tbe__md_kernels(b, an, top, o->wide);
    return;
  }
  char name[SHORT_MAX], v[5][32];
  tbe__buf_puts(b, "| name | calls | total | self | self % | avg | max |\n"
                   "|---|---:|---:|---:|---:|---:|---:|\n");
  for (size_t i = 0; i < top; i++) {
    const tbe_name_stats *e = &an->groups[g][i];
    const char *full = e->label;
    if (o->wide) full_name(full, name, sizeof name);
    else tbe_name_shorten(full, 80, name, sizeof name);
    int64_t avg = e->calls ? e->total_ns / (int64_t)e->calls : 0;
    tbe__fmt_dur(v[0], 32, e->total_ns);
    tbe__fmt_dur(v[1], 32, e->self_ns);
    tbe__fmt_dur(v[2], 32, avg);
    tbe__fmt_dur(v[3], 32, e->max_ns);
    tbe__buf_puts(b, "| ");
    tbe__md_escape(b, name);
    tbe__buf_printf(b, " | %llu | %s | %s | %.1f | %s | %s |\n", (unsigned long long)e->calls,
                    v[0], v[1], pct(e->self_ns, an->group_total_ns[g]), v[2], v[3]);
  }
}

static void summary_md(tbe__buf *b, tbe_analysis *an, const tbe_report_options *o) {
  char x[32], y[32];
  tbe__buf_puts(b, "# Summary");
  if (o->label[0]) {
    tbe__buf_puts(b, ": ");
    tbe__md_escape(b, o->label[0]);
  }
  tbe__buf_printf(b, "\n\nWall time %s, %llu kernels, %zu steps.\n\n", dur(x, an->wall_ns),
                  (unsigned long long)an->all.kernel_count, an->nsteps);
  tbe__buf_puts(b, "| device | busy | busy % | kernels | kernel count | memcpy | memset | sync | "
                   "idle | launch latency |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (size_t i = 0; i <= an->ndevices; i++) {
    const tbe_device_stats *d = i < an->ndevices ? &an->devices[i] : &an->all;
    if (i == an->ndevices && an->ndevices == 1) break;
    int64_t cp = 0;
    for (int k = 0; k < TBE_NCOPY_KINDS; k++) cp += d->memcpy_ns[k];
    char v[6][32];
    tbe__fmt_dur(v[0], 32, d->busy_ns);
    tbe__fmt_dur(v[1], 32, d->kernel_ns);
    tbe__fmt_dur(v[2], 32, cp);
    tbe__fmt_dur(v[3], 32, d->memset_ns);
    tbe__fmt_dur(v[4], 32, d->sync_ns);
    tbe__fmt_dur(v[5], 32, d->idle_ns);
    char lab[32];
    device_label(an, d, lab, sizeof lab);
    tbe__buf_printf(b, "| %s | %s | %.1f | %s | %llu | %s | %s | %s | %s | %s |\n", lab, v[0],
                    pct(d->busy_ns, d->wall_ns), v[1], (unsigned long long)d->kernel_count, v[2],
                    v[3], v[4], v[5], d->launch_median_ns >= 0 ? dur(y, d->launch_median_ns) : "-");
  }
  for (int g = 0; g < TBE_GROUP__COUNT; g++) md_group(b, an, (tbe_group_kind)g, o);
  if (an->nsteps) {
    tbe__buf_puts(b, "\n## Steps\n\n| step | time | GPU busy % | kernel time | kernels |\n"
                     "|---:|---:|---:|---:|---:|\n");
    for (size_t i = 0; i < an->nsteps; i++) {
      const tbe_step_stats *s = &an->steps[i];
      tbe__buf_printf(b, "| %lld | %s | %.1f | %s | %llu |\n", (long long)s->num, dur(x, s->dur_ns),
                      pct(s->gpu_busy_ns, s->dur_ns), dur(y, s->kernel_ns),
                      (unsigned long long)s->kernel_count);
    }
  }
  advice_lines(b, an, 1);
}

/* ---- summary: CSV ---- */

static void summary_csv(tbe__buf *b, tbe_analysis *an, const tbe_report_options *o) {
  tbe__buf_puts(b, "section,device,wall_ns,busy_ns,kernel_ns,kernel_count,memcpy_htod_ns,"
                   "memcpy_dtoh_ns,memcpy_dtod_ns,memcpy_other_ns,memset_ns,sync_ns,idle_ns,"
                   "launch_median_ns\n");
  for (size_t i = 0; i <= an->ndevices; i++) {
    const tbe_device_stats *d = i < an->ndevices ? &an->devices[i] : &an->all;
    int64_t other = 0;
    for (int k = 0; k < TBE_NCOPY_KINDS; k++)
      if (k != TBE_COPY_HTOD && k != TBE_COPY_DTOH && k != TBE_COPY_DTOD) other += d->memcpy_ns[k];
    char dev[16];
    if (d->device < 0) snprintf(dev, sizeof dev, "all");
    else snprintf(dev, sizeof dev, "%d", (int)d->device);
    tbe__buf_printf(b, "device,%s,%lld,%lld,%lld,%llu,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld\n",
                    dev,
                    (long long)d->wall_ns, (long long)d->busy_ns, (long long)d->kernel_ns,
                    (unsigned long long)d->kernel_count, (long long)d->memcpy_ns[TBE_COPY_HTOD],
                    (long long)d->memcpy_ns[TBE_COPY_DTOH], (long long)d->memcpy_ns[TBE_COPY_DTOD],
                    (long long)other, (long long)d->memset_ns, (long long)d->sync_ns,
                    (long long)d->idle_ns, (long long)d->launch_median_ns);
  }
  tbe__buf_puts(b, "\nsection,name,calls,total_ns,self_ns,self_pct,avg_ns,min_ns,max_ns\n");
  for (int g = 0; g < TBE_GROUP__COUNT; g++) {
    size_t n = an->ngroups[g], top = o->top && o->top < n ? o->top : n;
    for (size_t i = 0; i < top; i++) {
      const tbe_name_stats *e = &an->groups[g][i];
      tbe__buf_printf(b, "%s,", tbe_group_name((tbe_group_kind)g));
      csv_str(b, e->label);
      tbe__buf_printf(b, ",%llu,%lld,%lld,%.2f,%lld,%lld,%lld\n", (unsigned long long)e->calls,
                      (long long)e->total_ns, (long long)e->self_ns,
                      pct(e->self_ns, an->group_total_ns[g]),
                      (long long)(e->calls ? e->total_ns / (int64_t)e->calls : 0),
                      (long long)e->min_ns, (long long)e->max_ns);
    }
  }
  if (an->nsteps) {
    tbe__buf_puts(b, "\nsection,step,start_ns,dur_ns,gpu_busy_ns,kernel_ns,kernel_count\n");
    for (size_t i = 0; i < an->nsteps; i++) {
      const tbe_step_stats *s = &an->steps[i];
      tbe__buf_printf(b, "step,%lld,%lld,%lld,%lld,%lld,%llu\n", (long long)s->num,
                      (long long)s->start_ns, (long long)s->dur_ns, (long long)s->gpu_busy_ns,
                      (long long)s->kernel_ns, (unsigned long long)s->kernel_count);
    }
  }
  if (an->nadvice) {
    tbe__buf_puts(b, "\nsection,kind,figure,text\n");
    for (size_t i = 0; i < an->nadvice; i++) {
      tbe__buf_printf(b, "advice,%u,%.3f,", an->advice[i].kind, an->advice[i].figure);
      csv_str(b, an->advice[i].text);
      tbe__buf_putc(b, '\n');
    }
  }
}

/* ---- summary: JSON ---- */

static void json_device(tbe__buf *b, const tbe_analysis *an, const tbe_device_stats *d) {
  static const char *copy[TBE_NCOPY_KINDS] = {"unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                              "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP"};
  tbe__buf_printf(b, "{\"device\":%d,\"name\":", (int)d->device);
  tbe__json_str(b, tbe_trace_str(an->trace, d->name));
  tbe__buf_printf(b,
                  ",\"wall_ns\":%lld,\"busy_ns\":%lld,\"busy_pct\":%.3f,\"idle_ns\":%lld,"
                  "\"kernel_ns\":%lld,\"kernel_count\":%llu,\"short_kernels\":%llu,"
                  "\"memset_ns\":%lld,\"memset_count\":%llu,\"sync_ns\":%lld,\"sync_count\":%llu,"
                  "\"pageable_ns\":%lld,\"pageable_count\":%llu,\"launch_median_ns\":%lld,"
                  "\"launch_samples\":%llu,\"memcpy\":{",
                  (long long)d->wall_ns, (long long)d->busy_ns, pct(d->busy_ns, d->wall_ns),
                  (long long)d->idle_ns, (long long)d->kernel_ns,
                  (unsigned long long)d->kernel_count, (unsigned long long)d->short_kernels,
                  (long long)d->memset_ns, (unsigned long long)d->memset_count,
                  (long long)d->sync_ns, (unsigned long long)d->sync_count,
                  (long long)d->pageable_ns, (unsigned long long)d->pageable_count,
                  (long long)d->launch_median_ns, (unsigned long long)d->launch_samples);
  int first = 1;
  for (int k = 0; k < TBE_NCOPY_KINDS; k++) {
    if (!d->memcpy_count[k]) continue;
    tbe__buf_printf(b, "%s\"%s\":{\"ns\":%lld,\"count\":%llu,\"bytes\":%llu}", first ? "" : ",",
                    copy[k], (long long)d->memcpy_ns[k], (unsigned long long)d->memcpy_count[k],
                    (unsigned long long)d->memcpy_bytes[k]);
    first = 0;
  }
  tbe__buf_puts(b, "}}");
}

static void summary_json(tbe__buf *b, tbe_analysis *an, const tbe_report_options *o) {
  const tbe_trace *t = an->trace;
  tbe__buf_puts(b, "{\"label\":");
  tbe__json_str(b, o->label[0] ? o->label[0] : "");
  tbe__buf_puts(b, ",\"host\":");
  tbe__json_str(b, tbe_trace_str(t, t->host));
  tbe__buf_printf(b,
                  ",\"start_ns\":%lld,\"wall_ns\":%lld,\"host_busy_ns\":%lld,\"api_calls\":%llu,"
                  "\"sync_calls\":%llu,\"sync_call_ns\":%lld,\"overhead_ns\":%lld,"
                  "\"dropped_records\":%llu,\"out_of_range_records\":%llu,\"ended_early\":%s,"
                  "\"devices\":[",
                  (long long)an->start_ns, (long long)an->wall_ns, (long long)an->host_busy_ns,
                  (unsigned long long)an->api_calls, (unsigned long long)an->sync_calls,
                  (long long)an->sync_call_ns, (long long)an->overhead_ns,
                  (unsigned long long)an->dropped_records,
                  (unsigned long long)an->out_of_range_records, an->ended_early ? "true" : "false");
  for (size_t i = 0; i < an->ndevices; i++) {
    if (i) tbe__buf_putc(b, ',');
    json_device(b, an, &an->devices[i]);
  }
  tbe__buf_puts(b, "],\"all\":");
  json_device(b, an, &an->all);
  char name[SHORT_MAX];
  for (int g = 0; g < TBE_GROUP__COUNT; g++) {
    size_t n = an->ngroups[g], top = o->top && o->top < n ? o->top : n;
    tbe__buf_printf(b, ",\"%s\":[", tbe_group_name((tbe_group_kind)g));
    for (size_t i = 0; i < top; i++) {
      const tbe_name_stats *e = &an->groups[g][i];
      const char *full = e->label;
      tbe_name_shorten(full, 0, name, sizeof name);
      tbe__buf_puts(b, i ? ",{\"name\":" : "{\"name\":");
      tbe__json_str(b, full);
      tbe__buf_puts(b, ",\"short_name\":");
      tbe__json_str(b, name);
      tbe__buf_printf(b,
                      ",\"calls\":%llu,\"total_ns\":%lld,\"self_ns\":%lld,\"self_pct\":%.3f,"
                      "\"avg_ns\":%lld,\"min_ns\":%lld,\"max_ns\":%lld",
                      (unsigned long long)e->calls, (long long)e->total_ns, (long long)e->self_ns,
                      pct(e->self_ns, an->group_total_ns[g]),
                      (long long)(e->calls ? e->total_ns / (int64_t)e->calls : 0),
                      (long long)e->min_ns, (long long)e->max_ns);
      if (e->step_ns) {
        tbe__buf_puts(b, ",\"step_ns\":[");
        for (size_t s = 0; s < an->nsteps; s++)
          tbe__buf_printf(b, "%s%lld", s ? "," : "", (long long)e->step_ns[s]);
        tbe__buf_putc(b, ']');
      }
      tbe__buf_putc(b, '}');
    }
    tbe__buf_putc(b, ']');
  }
  tbe__buf_puts(b, ",\"steps\":[");
  for (size_t i = 0; i < an->nsteps; i++) {
    const tbe_step_stats *s = &an->steps[i];
    tbe__buf_printf(b,
                    "%s{\"step\":%lld,\"start_ns\":%lld,\"dur_ns\":%lld,\"gpu_busy_ns\":%lld,"
                    "\"kernel_ns\":%lld,\"kernel_count\":%llu}",
                    i ? "," : "", (long long)s->num, (long long)s->start_ns, (long long)s->dur_ns,
                    (long long)s->gpu_busy_ns, (long long)s->kernel_ns,
                    (unsigned long long)s->kernel_count);
  }
  tbe__buf_puts(b, "],\"advice\":[");
  for (size_t i = 0; i < an->nadvice; i++) {
    tbe__buf_printf(b, "%s{\"kind\":%u,\"figure\":%.6g,\"text\":", i ? "," : "",
                    an->advice[i].kind, an->advice[i].figure);
    tbe__json_str(b, an->advice[i].text);
    tbe__buf_putc(b, '}');
  }
  tbe__buf_puts(b, "],\"warnings\":[");
  for (size_t i = 0; i < t->nwarnings; i++) {
    if (i) tbe__buf_putc(b, ',');
    tbe__json_str(b, tbe_trace_str(t, t->warnings[i]));
  }
  tbe__buf_puts(b, "]}\n");
}

/* ---- public entry points ---- */

void tbe_report_options_init(tbe_report_options *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->format = TBE_REPORT_TABLE;
  o->sort = TBE_SORT_TOTAL;
  o->top = 10;
  o->width = 100;
}

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

int tbe_report_summary(tbe_analysis *an, const tbe_report_options *o, char **out, size_t *len) {
  if (!out) return TBE_EINVAL;
  *out = NULL;
  if (!an) return TBE_EINVAL;
  tbe_report_options def;
  if (!o) {
    tbe_report_options_init(&def);
    o = &def;
  }
  tbe_report_options oo = *o;
  if (oo.width <= 0) oo.width = 100;
  if ((unsigned)oo.sort > TBE_SORT_MAX || (unsigned)oo.format > TBE_REPORT_MARKDOWN)
    return TBE_EINVAL;
  for (int g = 0; g < TBE_GROUP__COUNT; g++)
    tbe_analysis_sort(an, (tbe_group_kind)g, (tbe_sort_key)oo.sort);
  tbe_allocator al;
  tbe__allocator_init(&al, o->allocator);
  tbe__buf b;
  tbe__buf_init(&b, &al);
  switch (oo.format) {
    case TBE_REPORT_CSV: summary_csv(&b, an, &oo); break;
    case TBE_REPORT_JSON: summary_json(&b, an, &oo); break;
    case TBE_REPORT_MARKDOWN: summary_md(&b, an, &oo); break;
    default: summary_table(&b, an, &oo); break;
  }
  return finish(&b, out, len);
}

void tbe_report_free(char *s, size_t len, const tbe_allocator *a) {
  (void)len;
  if (!s) return;
  tbe_allocator al;
  tbe__allocator_init(&al, a);
  tbe__free(&al, s);
}

/* ---- diff ---- */

static void ratio_str(char *buf, size_t size, int64_t base, int64_t now) {
  if (base <= 0 && now <= 0) snprintf(buf, size, "-");
  else if (base <= 0) snprintf(buf, size, "new");
  else if (now <= 0) snprintf(buf, size, "gone");
  else snprintf(buf, size, "%.2fx", (double)now / (double)base);
}

static void delta_str(char *buf, int64_t d) {
  if (d > 0) {
    buf[0] = '+';
    tbe__fmt_dur(buf + 1, 31, d);
  } else {
    tbe__fmt_dur(buf, 32, d);
  }
}

static const char *entry_mark(const tbe_diff_entry *e) {
  if (e->present == 1) return "removed";
  if (e->present == 2) return "added";
  if (e->noise_checked && e->within_noise) return "noise";
  return "";
}

/* One-character form for the terminal table (legend printed below it). */
static const char *entry_mark1(const tbe_diff_entry *e) {
  if (e->present == 1) return "-";
  if (e->present == 2) return "+";
  if (e->noise_checked && e->within_noise) return "~";
  return "";
}

static void diff_overall_rows(const tbe_diff *d, int r, const char **label, int64_t v[2],
                              int *have) {
  *have = 1;
  switch (r) {
    case 0: *label = "wall time"; v[0] = d->wall_ns[0]; v[1] = d->wall_ns[1]; break;
    case 1: *label = "GPU busy"; v[0] = d->busy_ns[0]; v[1] = d->busy_ns[1]; break;
    case 2: *label = "kernel time"; v[0] = d->kernel_ns[0]; v[1] = d->kernel_ns[1]; break;
    case 3:
      *label = "step (median)";
      v[0] = d->step_median_ns[0];
      v[1] = d->step_median_ns[1];
      *have = d->nsteps[0] && d->nsteps[1];
      break;
    default: *have = 0;
  }
}

static void diff_table(tbe__buf *b, const tbe_diff *d, const tbe_report_options *o) {
  const char *lb = o->label[0] ? o->label[0] : "base";
  const char *ln = o->label[1] ? o->label[1] : "new";
  char x[32], y[32], z[32], w[32];
  tbe__buf_printf(b, "Comparing %s (base) with %s (new)\n\n", lb, ln);
  cell(b, "", 16, 0);
  cell(b, "base", 12, 1);
  cell(b, "new", 12, 1);
  cell(b, "delta", 12, 1);
  cell(b, "ratio", 8, 1);
  tbe__buf_putc(b, '\n');
  for (int r = 0; r < 4; r++) {
    const char *label;
    int64_t v[2];
    int have;
    diff_overall_rows(d, r, &label, v, &have);
    if (!have) continue;
    cell(b, label, 16, 0);
    cell(b, dur(x, v[0]), 12, 1);
    cell(b, dur(y, v[1]), 12, 1);
    delta_str(z, v[1] - v[0]);
    cell(b, z, 12, 1);
    ratio_str(w, sizeof w, v[0], v[1]);
    cell(b, w, 8, 1);
    if (r == 3 && d->steps_noise_checked)
      tbe__buf_printf(b, "  %s", d->steps_within_noise ? "within noise" : "beyond noise");
    tbe__buf_putc(b, '\n');
  }
  if (d->nsteps[0] || d->nsteps[1]) {
    tbe__buf_printf(b, "steps: %zu (base), %zu (new); spread (max-min) %s, %s\n", d->nsteps[0],
                    d->nsteps[1], dur(x, d->step_spread_ns[0]), dur(y, d->step_spread_ns[1]));
  }
  if (d->steps_noise_checked)
    tbe__buf_puts(b, "~ marks a change smaller than the step-to-step spread of either run\n");
  /* Per-name tables: name, calls b/n 13, total b, total n, avg b, avg n
   * (9 each), delta 10, ratio 7, mark. */
  static const int cw[8] = {9, 9, 9, 9, 9, 10, 6, 1};
  int fixed = 0;
  for (int c = 0; c < 8; c++) fixed += cw[c] + 1;
  for (int g = 0; g < TBE_GROUP__COUNT; g++) {
    size_t n = d->nentries[g];
    if (!n) continue;
    size_t top = o->top && o->top < n ? o->top : n;
    int nw = o->width - fixed - 1;
    if (nw < NAME_MIN) nw = NAME_MIN;
    char name[SHORT_MAX], v[8][40];
    if (o->wide)
      for (size_t i = 0; i < top; i++) {
        full_name(d->entries[g][i].name, name, sizeof name);
        if ((int)strlen(name) > nw) nw = (int)strlen(name);
      }
    tbe__buf_printf(b, "\n%s: %zu matched, %zu added (+), %zu removed (-); %zu shown, by |delta|\n",
                    gtitle[g], n - d->added[g] - d->removed[g], d->added[g], d->removed[g], top);
    cell(b, "name", nw, 0);
    static const char *hd[8] = {"calls b/n", "total b", "total n", "avg b", "avg n",
                                "delta", "ratio", ""};
    /* '~': the change is within the step-to-step noise. */
    for (int c = 0; c < 8; c++) {
      tbe__buf_putc(b, ' ');
      cell(b, hd[c], cw[c], c < 7);
    }
    while (b->len && b->data[b->len - 1] == ' ') b->len--;
    tbe__buf_putc(b, '\n');
    rule(b, nw + fixed);
    for (size_t i = 0; i < top; i++) {
      const tbe_diff_entry *e = &d->entries[g][i];
      if (o->wide) full_name(e->name, name, sizeof name);
      else tbe_name_shorten(e->name, (size_t)nw, name, sizeof name);
      if (!name[0]) snprintf(name, sizeof name, "(unnamed)");
      cell(b, name, nw, 0);
      snprintf(v[0], 40, "%llu/%llu", (unsigned long long)e->calls[0],
               (unsigned long long)e->calls[1]);
      tbe__fmt_dur(v[1], 40, e->total_ns[0]);
      tbe__fmt_dur(v[2], 40, e->total_ns[1]);
      tbe__fmt_dur(v[3], 40, e->calls[0] ? e->total_ns[0] / (int64_t)e->calls[0] : 0);
      tbe__fmt_dur(v[4], 40, e->calls[1] ? e->total_ns[1] / (int64_t)e->calls[1] : 0);
      delta_str(v[5], e->delta_ns);
      ratio_str(v[6], 40, e->total_ns[0], e->total_ns[1]);
      snprintf(v[7], 40, "%s", entry_mark1(e));
      for (int c = 0; c < 8; c++) {
        tbe__buf_putc(b, ' ');
        if (c == 7) tbe__buf_puts(b, v[c]);
        else cell(b, v[c], cw[c], 1);
      }
      /* No trailing spaces. */
      while (b->len && b->data[b->len - 1] == ' ') b->len--;
      tbe__buf_putc(b, '\n');
    }
  }
}

static void diff_md(tbe__buf *b, const tbe_diff *d, const tbe_report_options *o) {
  const char *lb = o->label[0] ? o->label[0] : "base";
  const char *ln = o->label[1] ? o->label[1] : "new";
  char x[32], y[32], z[32], w[32];
  tbe__buf_puts(b, "# Diff: ");
  tbe__md_escape(b, lb);
  tbe__buf_puts(b, " → ");
  tbe__md_escape(b, ln);
  tbe__buf_puts(b, "\n\n| | base | new | delta | ratio |\n|---|---:|---:|---:|---:|\n");
  for (int r = 0; r < 4; r++) {
    const char *label;
    int64_t v[2];
    int have;
    diff_overall_rows(d, r, &label, v, &have);
    if (!have) continue;
    delta_str(z, v[1] - v[0]);
    ratio_str(w, sizeof w, v[0], v[1]);
    tbe__buf_printf(b, "| %s | %s | %s | %s | %s%s |\n", label, dur(x, v[0]), dur(y, v[1]), z, w,
                    r == 3 && d->steps_noise_checked && d->steps_within_noise ? " (noise)" : "");
  }
  for (int g = 0; g < TBE_GROUP__COUNT; g++) {
    size_t n = d->nentries[g];
    if (!n) continue;
    size_t top = o->top && o->top < n ? o->top : n;
    tbe__buf_printf(b, "\n## %s: %zu matched, %zu added, %zu removed\n\n", gtitle[g],
                    n - d->added[g] - d->removed[g], d->added[g], d->removed[g]);
    tbe__buf_puts(b, "| name | calls base | calls new | total base | total new | avg base | "
                     "avg new | delta | ratio | |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
    char name[SHORT_MAX], v[6][40];
    for (size_t i = 0; i < top; i++) {
      const tbe_diff_entry *e = &d->entries[g][i];
      if (o->wide) full_name(e->name, name, sizeof name);
      else tbe_name_shorten(e->name, 80, name, sizeof name);
      tbe__fmt_dur(v[0], 40, e->total_ns[0]);
      tbe__fmt_dur(v[1], 40, e->total_ns[1]);
      tbe__fmt_dur(v[2], 40, e->calls[0] ? e->total_ns[0] / (int64_t)e->calls[0] : 0);
      tbe__fmt_dur(v[3], 40, e->calls[1] ? e->total_ns[1] / (int64_t)e->calls[1] : 0);
      delta_str(v[4], e->delta_ns);
      ratio_str(v[5], 40, e->total_ns[0], e->total_ns[1]);
      tbe__buf_puts(b, "| ");
      tbe__md_escape(b, name);
      tbe__buf_printf(b, " | %llu | %llu | %s | %s | %s | %s | %s | %s | %s |\n",
                      (unsigned long long)e->calls[0], (unsigned long long)e->calls[1], v[0], v[1],
                      v[2], v[3], v[4], v[5], entry_mark(e));
    }
  }
}

static void diff_csv(tbe__buf *b, const tbe_diff *d, const tbe_report_options *o) {
  tbe__buf_puts(b, "section,metric,base_ns,new_ns,delta_ns,ratio,noise\n");
  for (int r = 0; r < 4; r++) {
    const char *label;
    int64_t v[2];
    int have;
    diff_overall_rows(d, r, &label, v, &have);
    if (!have) continue;
    tbe__buf_printf(b, "overall,%s,%lld,%lld,%lld,%.6f,%s\n", label, (long long)v[0],
                    (long long)v[1], (long long)(v[1] - v[0]),
                    v[0] > 0 ? (double)v[1] / (double)v[0] : 0.0,
                    r == 3 && d->steps_noise_checked ? (d->steps_within_noise ? "within" : "beyond")
                                                     : "");
  }
  tbe__buf_puts(b, "\nsection,name,status,calls_base,calls_new,total_base_ns,total_new_ns,"
                   "avg_base_ns,avg_new_ns,delta_ns,ratio,noise\n");
  for (int g = 0; g < TBE_GROUP__COUNT; g++) {
    size_t n = d->nentries[g], top = o->top && o->top < n ? o->top : n;
    for (size_t i = 0; i < top; i++) {
      const tbe_diff_entry *e = &d->entries[g][i];
      tbe__buf_printf(b, "%s,", tbe_group_name((tbe_group_kind)g));
      csv_str(b, e->name);
      tbe__buf_printf(b, ",%s,%llu,%llu,%lld,%lld,%lld,%lld,%lld,%.6f,%s\n",
                      e->present == 3 ? "matched" : e->present == 2 ? "added" : "removed",
                      (unsigned long long)e->calls[0], (unsigned long long)e->calls[1],
                      (long long)e->total_ns[0], (long long)e->total_ns[1],
                      (long long)(e->calls[0] ? e->total_ns[0] / (int64_t)e->calls[0] : 0),
                      (long long)(e->calls[1] ? e->total_ns[1] / (int64_t)e->calls[1] : 0),
                      (long long)e->delta_ns, e->ratio,
                      e->noise_checked ? (e->within_noise ? "within" : "beyond") : "");
    }
  }
}

static void diff_json(tbe__buf *b, const tbe_diff *d, const tbe_report_options *o) {
  tbe__buf_puts(b, "{\"base\":");
  tbe__json_str(b, o->label[0] ? o->label[0] : "base");
  tbe__buf_puts(b, ",\"new\":");
  tbe__json_str(b, o->label[1] ? o->label[1] : "new");
  tbe__buf_puts(b, ",\"overall\":{");
  static const char *keys[4] = {"wall_ns", "busy_ns", "kernel_ns", "step_median_ns"};
  for (int r = 0; r < 4; r++) {
    const char *label;
    int64_t v[2];
    int have;
    diff_overall_rows(d, r, &label, v, &have);
    tbe__buf_printf(b, "%s\"%s\":[%lld,%lld]", r ? "," : "", keys[r], (long long)v[0],
                    (long long)v[1]);
  }
  tbe__buf_printf(b,
                  ",\"nsteps\":[%zu,%zu],\"step_spread_ns\":[%lld,%lld],\"steps_noise_checked\":%s,"
                  "\"steps_within_noise\":%s}",
                  d->nsteps[0], d->nsteps[1], (long long)d->step_spread_ns[0],
                  (long long)d->step_spread_ns[1], d->steps_noise_checked ? "true" : "false",
                  d->steps_within_noise ? "true" : "false");
  for (int g = 0; g < TBE_GROUP__COUNT; g++) {
    size_t n = d->nentries[g], top = o->top && o->top < n ? o->top : n;
    tbe__buf_printf(b, ",\"%s\":{\"added\":%zu,\"removed\":%zu,\"entries\":[",
                    tbe_group_name((tbe_group_kind)g), d->added[g], d->removed[g]);
    for (size_t i = 0; i < top; i++) {
      const tbe_diff_entry *e = &d->entries[g][i];
      tbe__buf_puts(b, i ? ",{\"name\":" : "{\"name\":");
      tbe__json_str(b, e->name);
      tbe__buf_printf(b,
                      ",\"status\":\"%s\",\"calls\":[%llu,%llu],\"total_ns\":[%lld,%lld],"
                      "\"delta_ns\":%lld,\"ratio\":%.6f",
                      e->present == 3 ? "matched" : e->present == 2 ? "added" : "removed",
                      (unsigned long long)e->calls[0], (unsigned long long)e->calls[1],
                      (long long)e->total_ns[0], (long long)e->total_ns[1], (long long)e->delta_ns,
                      e->ratio);
      if (e->noise_checked)
        tbe__buf_printf(b,
                        ",\"step_median_ns\":[%lld,%lld],\"step_spread_ns\":[%lld,%lld],"
                        "\"within_noise\":%s",
                        (long long)e->step_median_ns[0], (long long)e->step_median_ns[1],
                        (long long)e->step_spread_ns[0], (long long)e->step_spread_ns[1],
                        e->within_noise ? "true" : "false");
      tbe__buf_putc(b, '}');
    }
    tbe__buf_puts(b, "]}");
  }
  tbe__buf_puts(b, "}\n");
}

int tbe_report_diff(const tbe_diff *d, const tbe_report_options *o, char **out, size_t *len) {
  if (!out) return TBE_EINVAL;
  *out = NULL;
  if (!d) return TBE_EINVAL;
  tbe_report_options def;
  if (!o) {
    tbe_report_options_init(&def);
    o = &def;
  }
  tbe_report_options oo = *o;
  if (oo.width <= 0) oo.width = 100;
  if ((unsigned)oo.format > TBE_REPORT_MARKDOWN) return TBE_EINVAL;
  tbe_allocator al;
  tbe__allocator_init(&al, o->allocator);
  tbe__buf b;
  tbe__buf_init(&b, &al);
  switch (oo.format) {
    case TBE_REPORT_CSV: diff_csv(&b, d, &oo); break;
    case TBE_REPORT_JSON: diff_json(&b, d, &oo); break;
    case TBE_REPORT_MARKDOWN: diff_md(&b, d, &oo); break;
    default: diff_table(&b, d, &oo); break;
  }
  return finish(&b, out, len);
}
