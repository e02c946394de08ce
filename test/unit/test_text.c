/* test_text.c: text from inputs made safe for where it is shown
 * (common/text.h) and the reports that use it.
 *
 * What must never happen, whatever a trace's names, hosts and warnings
 * hold (ESC [2J, OSC 8 links, an OSC title, CR and LF, a one-byte C1 CSI,
 * bidi overrides, zero-width characters, invalid UTF-8, tabs, Markdown and
 * HTML syntax):
 *  - a report (summary, diff, of one trace or of a run of several hosts,
 *    in every format) holding a raw control byte (other than the newlines
 *    that end its lines), DEL, a C1 control, an invisible or reordering
 *    character, or invalid UTF-8;
 *  - a table row out of line with its header (names are measured after
 *    escaping, in terminal columns, wide characters counting 2);
 *  - a Markdown table row with more or fewer cells than its header;
 *  - JSON that does not parse or that changes the name (it escapes, it
 *    does not drop); CSV whose records span lines or change field count.
 * The forms themselves are checked on exact strings here and on arbitrary
 * bytes by test/fuzz/fuzz_text.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <yajl/yajl_tree.h>

#include "common/alloc.h"
#include "common/text.h"
#include "tbexport.h"
#include "tbexport/analysis.h"
#include "testutil.h"

/* ---- the forms on exact strings ---- */

typedef void (*form_fn)(tbe__buf *, const char *, size_t);

static char *form(form_fn f, const char *s, size_t n) {
  static char out[4096];
  tbe_allocator al;
  tbe__allocator_init(&al, NULL);
  tbe__buf b;
  tbe__buf_init(&b, &al);
  f(&b, s, n);
  assert_false(tbe__buf_error(&b));
  assert_true(b.len < sizeof out);
  memcpy(out, b.data, b.len);
  out[b.len] = '\0';
  tbe__buf_deinit(&b);
  return out;
}
#define FORM(f, lit) form(f, lit, sizeof(lit) - 1)

static void test_terminal_form(void **state) {
  (void)state;
  assert_string_equal(FORM(tbe__text_term, "plain ascii ~!@#"), "plain ascii ~!@#");
  assert_string_equal(FORM(tbe__text_term, "\x1b[2J\x1b]0;title\x07"), "\\x1b[2J\\x1b]0;title\\x07");
  assert_string_equal(FORM(tbe__text_term, "a\r\nb\tc\x7f" "d\\e"), "a\\r\\nb\\tc\\x7fd\\\\e");
  assert_string_equal(FORM(tbe__text_term, "nul\0end"), "nul\\x00end");
  /* valid UTF-8 passes; C1 and invisible characters are named */
  assert_string_equal(FORM(tbe__text_term, "caf\xc3\xa9 \xe4\xb8\xad"), "caf\xc3\xa9 \xe4\xb8\xad");
  assert_string_equal(FORM(tbe__text_term, "\xc2\x9b" "2J"), "\\u009b2J");
  assert_string_equal(FORM(tbe__text_term, "\xe2\x80\xae" "abc\xe2\x80\xac"), "\\u202eabc\\u202c");
  assert_string_equal(FORM(tbe__text_term, "a\xe2\x80\x8b" "b\xef\xbb\xbf" "c\xe2\x80\xa8"),
                      "a\\u200bb\\ufeffc\\u2028");
  assert_string_equal(FORM(tbe__text_term, "tag\xf3\xa0\x80\x81"), "tag\\U000e0001");
  /* invalid UTF-8: each byte that starts no valid sequence */
  assert_string_equal(FORM(tbe__text_term, "\xff\xfe"), "\\xff\\xfe");
  assert_string_equal(FORM(tbe__text_term, "\xc0\xaf"), "\\xc0\\xaf");         /* overlong */
  assert_string_equal(FORM(tbe__text_term, "\xed\xa0\x80"), "\\xed\\xa0\\x80"); /* surrogate */
  assert_string_equal(FORM(tbe__text_term, "\xe4\xb8"), "\\xe4\\xb8");          /* cut */
  /* the line form keeps backslashes, so it is idempotent */
  assert_string_equal(FORM(tbe__text_line, "C:\\x\n\x1b"), "C:\\x\\n\\x1b");
  assert_string_equal(FORM(tbe__text_line, "C:\\x\\n\\x1b"), "C:\\x\\n\\x1b");
  char z[12];
  assert_int_equal(tbe__text_term_z(z, sizeof z, "ab\x1b\x1b\x1b", 0), 10);
  assert_string_equal(z, "ab\\x1b\\x1b"); /* cut before the escape that does not fit */
}

static void test_markdown_form(void **state) {
  (void)state;
  assert_string_equal(FORM(tbe__text_md, "a|b`c`*d*_e_[f](g)#h"),
                      "a\\|b\\`c\\`\\*d\\*\\_e\\_\\[f\\](g)\\#h");
  assert_string_equal(FORM(tbe__text_md, "<script>&lt;"), "&lt;script&gt;&amp;lt;");
  assert_string_equal(FORM(tbe__text_md, "- item"), "\\- item");
  assert_string_equal(FORM(tbe__text_md, "+ item"), "\\+ item");
  assert_string_equal(FORM(tbe__text_md, "12. item 3. x"), "12\\. item 3. x");
  assert_string_equal(FORM(tbe__text_md, "a-b"), "a-b");
  assert_string_equal(FORM(tbe__text_md, "x\ny\x1b"), "x\\\\ny\\\\x1b");
  assert_string_equal(FORM(tbe__text_md, "\\"), "\\\\\\\\");
}

static void test_json_csv_forms(void **state) {
  (void)state;
  assert_string_equal(FORM(tbe__text_json, "a\"b\\c\n\x01\x7f"), "\"a\\\"b\\\\c\\n\\u0001\\u007f\"");
  assert_string_equal(FORM(tbe__text_json, "\xc2\x9b\xe2\x80\xae\xff"), "\"\\u009b\\u202e\xef\xbf\xbd\"");
  assert_string_equal(FORM(tbe__text_json, "\xf3\xa0\x80\x81"), "\"\\udb40\\udc01\"");
  assert_string_equal(FORM(tbe__text_json, "caf\xc3\xa9"), "\"caf\xc3\xa9\"");
  assert_string_equal(FORM(tbe__text_csv, "plain"), "plain");
  assert_string_equal(FORM(tbe__text_csv, "a,b \"q\""), "\"a,b \"\"q\"\"\"");
  assert_string_equal(FORM(tbe__text_csv, "line\nbreak\x1b"), "line\\nbreak\\x1b");
}

static void test_widths(void **state) {
  (void)state;
  assert_int_equal(tbe__text_width("abc", 3), 3);
  assert_int_equal(tbe__text_width("\xe4\xb8\xad\xe6\x96\x87", 6), 4); /* two CJK: 2 each */
  assert_int_equal(tbe__text_width("e\xcc\x81", 3), 1);                /* e + combining acute */
  assert_int_equal(tbe__text_width("\xf0\x9f\x98\x80", 4), 2);         /* an emoji */
  assert_int_equal(tbe__text_width("caf\xc3\xa9", 5), 4);
  char out[64];
  assert_int_equal(tbe__text_fit(out, sizeof out, "short", 10), 5);
  assert_string_equal(out, "short");
  assert_int_equal(tbe__text_fit(out, sizeof out, "\x1b[2Jabcdef", 10), 10);
  assert_string_equal(out, "\\x1b[2J...");
  /* never half a wide character or an escape */
  assert_int_equal(tbe__text_fit(out, sizeof out, "\xe4\xb8\xad\xe6\x96\x87\xe4\xb8\xad", 6), 6);
  assert_int_equal(tbe__text_fit(out, sizeof out, "\xe4\xb8\xad\xe6\x96\x87\xe4\xb8\xad", 5), 5);
  assert_string_equal(out, "\xe4\xb8\xad...");
  assert_int_equal(tbe__text_fit(out, sizeof out, "ab\x1b", 5), 5);
  assert_string_equal(out, "ab...");
  assert_int_equal(tbe__text_fit(out, sizeof out, "abcdef", 0), 6);
  tbe_allocator al;
  tbe__allocator_init(&al, NULL);
  tbe__buf b;
  tbe__buf_init(&b, &al);
  tbe__text_cell(&b, "\xe4\xb8\xad|", 5, 0);
  tbe__text_cell(&b, "x", 3, 1);
  tbe__buf_putc(&b, '\0');
  assert_string_equal((char *)b.data, "\xe4\xb8\xad|  " "  x");
  tbe__buf_deinit(&b);
}

/* ---- reports of a hostile trace ---- */

#define T0 1000000000LL

static const char *const K[5] = {
    "evil\x1b[2J\x1b[31mkernel",
    "\x1b]8;;http://evil.example/\x07" "click\x1b]8;;\x07",
    "ok\r\nall good | done",
    "c1\xc2\x9b" "2J\xff\xfe-invalid",
    "wide\xe4\xb8\xad\xe6\x96\x87 combining e\xcc\x81"};
static const char *const OPS[2] = {"aten::\xe2\x80\xae" "evil\xe2\x80\xac", "tab\there|pipe`tick`<b>"};
static const char HINT[] = "it`er \x1b[1m'q\xe2\x80\xae";
static const char DEV[] = "GPU\x1b]0;pwned\x07";
static const char HOST[] = "host\nwarning: all good\xff";

static void add(tbe_trace *t, uint32_t track, tbe_event_kind k, const char *name, int64_t start,
                int64_t dur, uint64_t corr, const void *detail) {
  tbe_event e;
  memset(&e, 0, sizeof e);
  e.start_ns = T0 + start;
  e.dur_ns = dur;
  e.correlation = corr;
  e.name = tbe_trace_str_id(t, name);
  e.track = track;
  e.kind = (uint8_t)k;
  e.link = TBE_NONE;
  e.detail = TBE_NONE;
  assert_int_equal(tbe_trace_add_event(t, &e, detail, NULL, 0, NULL), 0);
}

/* Five iterations of the hint range, each with a launch and a kernel of
 * K, both operators; `scale` changes the kernels' times (for a diff). */
static tbe_trace *hostile(int64_t pid, const char *host, int64_t scale) {
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  uint32_t thr, st, dev, pi;
  assert_int_equal(tbe_trace_process(t, pid, &pi), 0);
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_THREAD, pid, pid, -1, &thr), 0);
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_STREAM, pid, 7, 0, &st), 0);
  assert_int_equal(tbe_trace_device(t, 0, &dev), 0);
  t->devices[dev].name = tbe_trace_str_id(t, DEV);
  t->host = tbe_trace_str_id(t, host);
  assert_int_equal(tbe_trace_warn(t, "%s", "first\rline\x1b[K and \xe2\x80\x8bzero width"), 0);
  tbe_nvtx nv;
  memset(&nv, 0, sizeof nv);
  tbe_kernel k;
  memset(&k, 0, sizeof k);
  k.occupancy_pct = -1;
  k.blocks_per_sm = -1;
  k.warps_per_sm = -1;
  k.queued_ns = -1;
  for (int i = 0; i < 5; i++) {
    int64_t at = i * 100000;
    add(t, thr, TBE_EV_NVTX_RANGE, HINT, at, 90000, 0, &nv);
    add(t, thr, TBE_EV_CPU_OP, OPS[i % 2], at + 1000, 20000, 0, NULL);
    uint64_t corr = (uint64_t)i + 1;
    add(t, thr, TBE_EV_RUNTIME, "cudaLaunchKernel", at + 30000, 2000, corr, NULL);
    add(t, st, TBE_EV_KERNEL, K[i], at + 40000, (10000 + 1000 * i) * scale, corr, &k);
  }
  assert_int_equal(tbe_trace_finish(t), 0);
  return t;
}

/* Raw control bytes other than LF, DEL, C1, invisible characters or
 * invalid UTF-8 anywhere in `s`. */
static void check_inert(const char *s, size_t n, const char *what) {
  const uint8_t *p = (const uint8_t *)s;
  for (size_t i = 0; i < n;) {
    uint32_t cp;
    size_t k = tbe__utf8_decode(p + i, n - i, &cp);
    int bad = !k || (cp < 0x20 && cp != '\n') || cp == 0x7f || tbe__text_invisible(cp);
    if (bad) fail_msg("%s: byte 0x%02x at %zu is raw: ...%.40s", what, p[i], i, s + (i > 20 ? i - 20 : 0));
    i += k;
  }
}

/* The character at display column `col` of a line (0 past its end). */
static uint32_t at_col(const char *line, size_t len, size_t col) {
  size_t c = 0;
  for (size_t i = 0; i < len;) {
    uint32_t cp;
    size_t k = tbe__utf8_decode((const uint8_t *)line + i, len - i, &cp);
    if (!k) return 0xfffd;
    size_t w = tbe__text_width(line + i, k);
    if (col >= c && col < c + (w ? w : 1)) return cp;
    c += w;
    i += k;
  }
  return 0;
}

/* In every table of `s` whose header line holds `word` right-aligned,
 * every row (up to the next blank line, or `nrows` rows) ends a field
 * exactly where `word` ends (not a space there, a space or nothing
 * after): the name cells before it took exactly their columns.  Returns
 * the rows checked. */
static int check_aligned(const char *s, const char *word, int nrows, const char *what) {
  int rows = 0;
  const char *line = s;
  while (*line) {
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    const char *w = NULL;
    for (const char *q = line; q + strlen(word) <= line + len; q++)
      if (strncmp(q, word, strlen(word)) == 0 && (q + strlen(word) == line + len || q[strlen(word)] == ' ')) {
        w = q;
        break;
      }
    if (w && (strncmp(line, "name", 4) == 0 || strncmp(line, "host", 4) == 0)) {
      size_t ecol = tbe__text_width(line, (size_t)(w - line) + strlen(word));
      const char *r = end ? end + 1 : line + len;
      if (strncmp(r, "---", 3) == 0) r = strchr(r, '\n') ? strchr(r, '\n') + 1 : r + strlen(r);
      for (int k = 0; *r && *r != '\n' && (!nrows || k < nrows); k++) {
        const char *re = strchr(r, '\n');
        size_t rl = re ? (size_t)(re - r) : strlen(r);
        uint32_t last = at_col(r, rl, ecol - 1), next = at_col(r, rl, ecol);
        if (last == ' ' || last == 0 || !(next == ' ' || next == 0))
          fail_msg("%s: row out of line with '%s' (column %zu): %.*s", what, word, ecol, (int)rl, r);
        rows++;
        r = re ? re + 1 : r + rl;
      }
      line = r;
      continue;
    }
    line = end ? end + 1 : line + len;
  }
  return rows;
}

/* Every Markdown table row has as many cells (unescaped '|') as its
 * header.  Returns the rows checked. */
static int check_md_cells(const char *s, const char *what) {
  int rows = 0, want = -1;
  for (const char *line = s; *line;) {
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    if (len && line[0] == '|') {
      int pipes = 0;
      for (size_t i = 0; i < len; i++) {
        if (line[i] == '\\') {
          i++;
          continue;
        }
        pipes += line[i] == '|';
      }
      if (want < 0) want = pipes;
      else if (pipes != want) fail_msg("%s: %d cells, the header has %d: %.*s", what, pipes, want, (int)len, line);
      rows++;
    } else {
      want = -1;
    }
    line = end ? end + 1 : line + len;
  }
  return rows;
}

/* Every CSV record is one line with as many fields as its section's
 * header.  Returns the records checked. */
static int check_csv(const char *s, const char *what) {
  int rows = 0, want = -1;
  for (const char *line = s; *line;) {
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    if (!len) {
      want = -1;
    } else {
      int fields = 1, quoted = 0;
      for (size_t i = 0; i < len; i++) {
        if (line[i] == '"') quoted = !quoted;
        else if (line[i] == ',' && !quoted) fields++;
      }
      if (quoted) fail_msg("%s: a quoted field spans lines: %.*s", what, (int)len, line);
      if (want < 0) want = fields;
      else if (fields != want) fail_msg("%s: %d fields, the header has %d: %.*s", what, fields, want, (int)len, line);
      rows++;
    }
    line = end ? end + 1 : line + len;
  }
  return rows;
}

/* JSON parses, and some name of K is in it whole (escaped, not dropped). */
static void check_json(const char *s, const char *what) {
  char err[256];
  yajl_val v = yajl_tree_parse(s, err, sizeof err);
  if (!v) fail_msg("%s: JSON does not parse: %s", what, err);
  yajl_tree_free(v);
  assert_non_null(strstr(s, "\"evil\\u001b[2J\\u001b[31mkernel\""));
}

/* A header word of the tables, right-aligned, to check rows by, and how
 * many rows its table has (0: up to a blank line). */
typedef struct col {
  const char *word;
  int rows;
} col;

static void check_report(const char *s, size_t n, int format, const char *what,
                         const col *cols) {
  check_inert(s, n, what);
  switch (format) {
    case TBE_REPORT_TABLE: {
      int rows = 0;
      for (; cols->word; cols++) rows += check_aligned(s, cols->word, cols->rows, what);
      assert_true(rows >= 3);
      break;
    }
    case TBE_REPORT_MARKDOWN: assert_true(check_md_cells(s, what) >= 3); break;
    case TBE_REPORT_CSV: assert_true(check_csv(s, what) >= 3); break;
    case TBE_REPORT_JSON: check_json(s, what); break;
  }
}

static void test_hostile_reports(void **state) {
  (void)state;
  tbe_trace *t[3] = {hostile(10, HOST, 1), hostile(20, "other\x1b[2Jhost", 2),
                     hostile(30, "\xe4\xb8\xad\xe6\x96\x87-host", 3)};
  tbe_analysis *an[3];
  for (int i = 0; i < 3; i++) assert_int_equal(tbe_analysis_create(&an[i], t[i], NULL), 0);
  assert_non_null(an[0]->step_hint); /* the hostile range is the hint */
  /* host labels of a run come from file names: as hostile as anything */
  const char *labels[3] = {"a\nb\x1b[2J", ("\xe2\x80\xae" "fastest"), "\xe4\xb8\xad\xe6\x96\x87-wide"};
  tbe_run_analysis *run[2];
  assert_int_equal(tbe_run_analysis_create(&run[0], an, labels, 3, NULL), 0);
  assert_int_equal(tbe_run_analysis_create(&run[1], an + 1, labels + 1, 2, NULL), 0);
  tbe_diff *d;
  assert_int_equal(tbe_diff_create(&d, an[0], an[1], NULL), 0);
  tbe_run_diff *rd;
  assert_int_equal(tbe_run_diff_create(&rd, run[0], run[1], NULL), 0);
  static const col one[] = {{"calls", 0}, {NULL, 0}}, hosts[] = {{"calls", 0}, {"pid", 3}, {NULL, 0}},
                   diff[] = {{"calls b/n", 0}, {NULL, 0}},
                   host_diff[] = {{"calls b/n", 0}, {"wall b", 3}, {NULL, 0}};
  for (int f = 0; f < 4; f++)
    for (int wide = 0; wide < 2; wide++) {
      tbe_report_options o;
      tbe_report_options_init(&o);
      o.format = f;
      o.wide = wide;
      o.top = 0;
      o.label[0] = "base\x1b]8;;x\x07" "label";
      o.label[1] = "new\r\nlabel";
      char *s, what[64];
      size_t n;
      snprintf(what, sizeof what, "summary, format %d%s", f, wide ? ", wide" : "");
      assert_int_equal(tbe_report_summary(an[0], &o, &s, &n), 0);
      check_report(s, n, f, what, one);
      if (f == TBE_REPORT_TABLE) /* the flag gives the range back when pasted into bash */
        assert_non_null(strstr(s, "--steps $'nvtx:it`er \\x1b[1m\\'q\\u202e'"));
      tbe_report_free(s, n, NULL);
      snprintf(what, sizeof what, "run summary, format %d%s", f, wide ? ", wide" : "");
      assert_int_equal(tbe_report_run(run[0], &o, &s, &n), 0);
      check_report(s, n, f, what, hosts);
      tbe_report_free(s, n, NULL);
      snprintf(what, sizeof what, "diff, format %d%s", f, wide ? ", wide" : "");
      assert_int_equal(tbe_report_diff(d, &o, &s, &n), 0);
      check_report(s, n, f, what, diff);
      tbe_report_free(s, n, NULL);
      snprintf(what, sizeof what, "run diff, format %d%s", f, wide ? ", wide" : "");
      assert_int_equal(tbe_report_run_diff(rd, &o, &s, &n), 0);
      check_report(s, n, f, what, host_diff);
      tbe_report_free(s, n, NULL);
    }
  tbe_run_diff_free(rd);
  tbe_diff_free(d);
  for (int i = 0; i < 2; i++) tbe_run_analysis_free(run[i]);
  for (int i = 0; i < 3; i++) {
    tbe_analysis_free(an[i]);
    tbe_trace_free(t[i]);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_terminal_form),  cmocka_unit_test(test_markdown_form),
      cmocka_unit_test(test_json_csv_forms), cmocka_unit_test(test_widths),
      cmocka_unit_test(test_hostile_reports),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
