/* test_report.c: report rendering and name shortening (report.c) and the
 * run-summary events exporter (export_events.c); the demangler and kernel
 * tags are tested in test_names.c.
 *
 * The events exporter is checked by reading its file back with the event
 * reader: tags, steps, values and the Markdown text. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <yajl/yajl_tree.h>

#include "tbexport.h"
#include "tbexport/analysis.h"
#include "tbexport/reader.h"
#include "common/alloc.h"
#include "testutil.h"
#include "trace/exporter.h"
#include "trace/report/report.h"

static void test_fmt_dur(void **state) {
  (void)state;
  char b[32];
  static const struct {
    int64_t ns;
    const char *s;
  } cases[] = {{0, "0ns"},
               {999, "999ns"},
               {1000, "1.000us"},
               {12345, "12.345us"},
               {999999, "999.999us"},
               {1000000, "1.000ms"},
               {1234567, "1.235ms"},   /* rounded to the microsecond */
               {999999499, "999.999ms"},
               {1000000000, "1.000s"},
               {61234567890LL, "61.235s"},
               {-1500, "-1.500us"},
               {INT64_MIN, "-9223372036.855s"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    size_t n = tbe__fmt_dur(b, sizeof b, cases[i].ns);
    assert_string_equal(b, cases[i].s);
    assert_int_equal(n, strlen(cases[i].s));
  }
  /* Truncation never overruns. */
  assert_int_equal(tbe__fmt_dur(b, 4, 12345), 3);
  assert_string_equal(b, "12.");
}

static void test_shorten(void **state) {
  (void)state;
  char b[256];
  const char *full = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
                     "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)";
  /* Unlimited: return type and parameters go. */
  tbe_name_shorten(full, 0, b, sizeof b);
  assert_string_equal(b, "at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
                         "std::array<char*, 1ul> >");
  /* 80: namespaces go. */
  tbe_name_shorten(full, 80, b, sizeof b);
  assert_string_equal(b, "vectorized_elementwise_kernel<4, FillFunctor<float>, array<char*, 1ul> >");
  /* 40: nested template arguments elided, then cut. */
  size_t n = tbe_name_shorten(full, 40, b, sizeof b);
  assert_int_equal(n, 40);
  assert_string_equal(b, "vectorized_elementwise_kernel<4, Fill...");
  /* Mangled names are demangled first. */
  tbe_name_shorten("_Z10add_kernelPfPKfi", 30, b, sizeof b);
  assert_string_equal(b, "add_kernel");
  /* Plain names and names with spaces are left alone. */
  tbe_name_shorten("aten::conv2d", 30, b, sizeof b);
  assert_string_equal(b, "aten::conv2d");
  tbe_name_shorten("Memcpy HtoD (Pageable -> Device)", 60, b, sizeof b);
  assert_string_equal(b, "Memcpy HtoD (Pageable -> Device)");
  tbe_name_shorten("forward pass", 60, b, sizeof b);
  assert_string_equal(b, "forward pass");
  /* Anonymous namespaces. */
  tbe_name_shorten("void (anonymous namespace)::softmax_warp_forward<float, float, 10>(float*, int)", 30,
                   b, sizeof b);
  assert_string_equal(b, "softmax_warp_forward<float,...");
  /* UTF-8 is never cut inside a character. */
  tbe_name_shorten("k\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", 8, b, sizeof b);
  assert_string_equal(b, "k\xc3\xa9\xc3\xa9...");
  /* Tag components. */
  tbe__tag_component(full, 60, b, sizeof b);
  assert_string_equal(b, "vectorized_elementwise_kernel_4_FillFunctor_float_array_char");
  tbe__tag_component("<>", 60, b, sizeof b);
  assert_string_equal(b, "_");
  tbe__tag_component("", 60, b, sizeof b);
  assert_string_equal(b, "_");
}

static void test_escapes(void **state) {
  (void)state;
  tbe__buf b;
  tbe_allocator al;
  tbe__allocator_init(&al, NULL);
  tbe__buf_init(&b, &al);
  tbe__json_str(&b, "a\"b\\c\n\x01\xff\xc3\xa9");
  tbe__buf_putc(&b, '\0');
  assert_string_equal((char *)b.data, "\"a\\\"b\\\\c\\n\\u0001\xef\xbf\xbd\xc3\xa9\"");
  tbe__buf_clear(&b);
  tbe__md_escape(&b, "a|b<c>_*\n\xfe");
  tbe__buf_putc(&b, '\0');
  /* the terminal form (\n, \xfe shown as text), then Markdown's escapes */
  assert_string_equal((char *)b.data, "a\\|b&lt;c&gt;\\_\\*\\\\n\\\\xfe");
  tbe__buf_deinit(&b);
}

static tbe_trace *import(const char *rel) {
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  tbe_import_error err;
  int rc = tbe_import_file(t, tu_data(rel), NULL, &err);
  if (rc) fprintf(stderr, "%s\n", err.message);
  assert_int_equal(rc, 0);
  return t;
}

/* Every table line fits the width; all formats render; JSON parses. */
static void test_table_width(void **state) {
  (void)state;
  tbe_trace *t = import("kineto/h200_cnn_bf16.pt.trace.json");
  tbe_analysis *an;
  assert_int_equal(tbe_analysis_create(&an, t, NULL), 0);
  static const int widths[] = {100, 80, 140};
  for (size_t w = 0; w < 3; w++) {
    tbe_report_options o;
    tbe_report_options_init(&o);
    o.width = widths[w];
    o.top = 0;
    char *s;
    size_t n;
    assert_int_equal(tbe_report_summary(an, &o, &s, &n), 0);
    size_t col = 0, maxcol = 0;
    for (size_t i = 0; i < n; i++) {
      if (s[i] == '\n') col = 0;
      else if (((unsigned char)s[i] & 0xc0) != 0x80 && ++col > maxcol) maxcol = col;
    }
    /* Advice lines are prose, not table; check every other line. */
    char *line = s;
    while (line && *line) {
      char *nl = strchr(line, '\n');
      size_t len = nl ? (size_t)(nl - line) : strlen(line);
      if (strncmp(line, "- ", 2) != 0 && strncmp(line, "host:", 5) != 0)
        assert_true(len <= (size_t)widths[w]);
      line = nl ? nl + 1 : NULL;
    }
    tbe_report_free(s, n, NULL);
  }
  for (int f = 0; f < 4; f++) {
    tbe_report_options o;
    tbe_report_options_init(&o);
    o.format = f;
    o.wide = 1;
    char *s;
    size_t n;
    assert_int_equal(tbe_report_summary(an, &o, &s, &n), 0);
    if (f == TBE_REPORT_JSON) {
      char err[256];
      yajl_val v = yajl_tree_parse(s, err, sizeof err);
      assert_non_null(v);
      const char *pk[] = {"kernels", NULL};
      yajl_val k = yajl_tree_get(v, pk, yajl_t_array);
      assert_non_null(k);
      assert_int_equal(YAJL_GET_ARRAY(k)->len, 10);
      yajl_tree_free(v);
    }
    tbe_report_free(s, n, NULL);
  }
  /* Bad options. */
  tbe_report_options o;
  tbe_report_options_init(&o);
  o.format = 9;
  char *s = (char *)1;
  size_t n;
  assert_int_equal(tbe_report_summary(an, &o, &s, &n), TBE_EINVAL);
  assert_null(s);
  assert_int_equal(tbe_report_summary(NULL, NULL, &s, &n), TBE_EINVAL);
  tbe_analysis_free(an);
  tbe_trace_free(t);
}

/* Lines of a table report fit `width`, except advice ("- ") and warnings,
 * which are prose. */
static void check_width(const char *s, int width) {
  const char *line = s;
  while (line && *line) {
    const char *nl = strchr(line, '\n');
    size_t len = nl ? (size_t)(nl - line) : strlen(line);
    size_t cols = 0;
    for (size_t i = 0; i < len; i++) cols += ((unsigned char)line[i] & 0xc0) != 0x80;
    if (strncmp(line, "- ", 2) != 0 && strncmp(line, "warning:", 8) != 0 && cols > (size_t)width) {
      fprintf(stderr, "line of %zu > %d columns: %.*s\n", cols, width, (int)len, line);
      fail();
    }
    line = nl ? nl + 1 : NULL;
  }
}

/* A run of golden traces as hosts: every format renders, tables fit the
 * width, JSON parses with the totals equal to the sums, CSV has a row per
 * host; beyond eight hosts the overview keeps only the total column. */
/* Names that shorten alike show where they differ: cuBLAS's GEMM kernels
 * (alike for 60 bytes), CUTLASS instantiations (alike once their template
 * arguments are elided), and two that differ only past any cut.  No two
 * rows of a table read the same, in the summary and in the diff. */
static void test_alike_names(void **state) {
  (void)state;
  static const char *const names[] = {
      "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x64x8_stage3_warpsize2x2x1_ffma_aligna4_"
      "alignc4_execute_kernel__5x_cublas",
      "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_aligna4_"
      "alignc4_execute_kernel__5x_cublas",
      "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize256x128x8_stage3_warpsize2x2x1_ffma_"
      "aligna4_alignc4_execute_kernel__5x_cublas",
      "void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nt_align1>(cutlass_80_simt_"
      "sgemm_256x128_8x4_nt_align1::Params)",
      "void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(cutlass_80_simt_"
      "sgemm_256x128_8x4_nn_align1::Params)",
      "a_kernel_whose_name_is_long_enough_to_be_cut_and_then_differs_at_the_very_end_A",
      "a_kernel_whose_name_is_long_enough_to_be_cut_and_then_differs_at_the_very_end_B",
  };
  const size_t nn = sizeof names / sizeof names[0];
  const char *want[] = {"128x64x8", "f32_nn_n", "256x128x8", "8x4_nt_", "8x4_nn_", "end_A", "end_B"};
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  uint32_t s7;
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_STREAM, 1, 7, 0, &s7), 0);
  tbe_kernel k;
  memset(&k, 0, sizeof k);
  for (size_t i = 0; i < nn; i++) {
    tbe_event e;
    memset(&e, 0, sizeof e);
    e.start_ns = 1000000000LL + (int64_t)i * 10000;
    e.dur_ns = 9000 - (int64_t)i * 100; /* sorted by total: in this order */
    e.name = tbe_trace_str_id(t, names[i]);
    e.track = s7;
    e.kind = TBE_EV_KERNEL;
    e.link = e.detail = TBE_NONE;
    assert_int_equal(tbe_trace_add_event(t, &e, &k, NULL, 0, NULL), 0);
  }
  assert_int_equal(tbe_trace_finish(t), 0);
  tbe_analysis *an;
  assert_int_equal(tbe_analysis_create(&an, t, NULL), 0);
  tbe_diff *d;
  assert_int_equal(tbe_diff_create(&d, an, an, NULL), 0);
  for (int which = 0; which < 2; which++) {
    tbe_report_options o;
    tbe_report_options_init(&o);
    o.top = 0;
    char *s;
    size_t n;
    if (which == 0) assert_int_equal(tbe_report_summary(an, &o, &s, &n), 0);
    else assert_int_equal(tbe_report_diff(d, &o, &s, &n), 0);
    const char *sec = strstr(s, which == 0 ? "\nKernels (" : "\nKernels:");
    assert_non_null(sec);
    const char *row = strstr(sec, "\n---");
    assert_non_null(row);
    row = strchr(row + 1, '\n') + 1;
    char cells[8][64];
    for (size_t i = 0; i < nn; i++) {
      const char *end = strstr(row, "  ");
      assert_non_null(end);
      size_t l = (size_t)(end - row);
      assert_true(l < sizeof cells[i]);
      memcpy(cells[i], row, l);
      cells[i][l] = '\0';
      for (size_t j = 0; j < i; j++)
        if (strcmp(cells[i], cells[j]) == 0) fail_msg("rows %zu and %zu both read '%s'", j, i, cells[i]);
      row = strchr(row, '\n') + 1;
    }
    /* (the diff orders rows its own way) each row shows what tells it apart */
    for (size_t w = 0; w < nn; w++) {
      size_t hits = 0;
      for (size_t i = 0; i < nn; i++) hits += strstr(cells[i], want[w]) != NULL;
      if (hits != 1) fail_msg("%s: %zu rows show '%s'", which ? "diff" : "summary", hits, want[w]);
    }
    tbe_report_free(s, n, NULL);
  }
  tbe_diff_free(d);
  tbe_analysis_free(an);
  tbe_trace_free(t);
}

static void test_run_reports(void **state) {
  (void)state;
  const char *files[3] = {"kineto/h200_cnn_fp32.pt.trace.json", "kineto/h200_cnn_bf16.pt.trace.json",
                          "kineto/h200_add_loop.trace.json"};
  tbe_trace *t[10];
  tbe_analysis *an[10];
  const char *labels[10] = {"node1_pid10", "node1_pid9", "node2", "n03", "n04",
                            "n05",         "n06",        "n07",   "n08", "n09"};
  for (int i = 0; i < 10; i++) {
    t[i] = import(files[i % 3]);
    assert_int_equal(tbe_analysis_create(&an[i], t[i], NULL), 0);
  }
  tbe_run_analysis *r;
  assert_int_equal(tbe_run_analysis_create(&r, an, labels, 3, NULL), 0);
  uint64_t kernels = 0;
  for (int i = 0; i < 3; i++) kernels += an[i]->all.kernel_count;
  assert_int_equal(r->total->all.kernel_count, kernels);
  static const int widths[] = {100, 80, 140};
  for (size_t w = 0; w < 3; w++) {
    tbe_report_options o;
    tbe_report_options_init(&o);
    o.width = widths[w];
    o.top = 0;
    o.label[0] = "run";
    char *txt;
    size_t n;
    assert_int_equal(tbe_report_run(r, &o, &txt, &n), 0);
    check_width(txt, widths[w]);
    assert_non_null(strstr(txt, "node1_pid9"));
    /* node1's processes in pid order, then node2 */
    assert_true(strstr(txt, "\nnode1_pid9 ") < strstr(txt, "\nnode1_pid10 "));
    assert_true(strstr(txt, "\nnode1_pid10 ") < strstr(txt, "\nnode2 "));
    tbe_report_free(txt, n, NULL);
  }
  for (int f = 0; f < 4; f++) {
    tbe_report_options o;
    tbe_report_options_init(&o);
    o.format = f;
    char *txt;
    size_t n;
    assert_int_equal(tbe_report_run(r, &o, &txt, &n), 0);
    if (f == TBE_REPORT_JSON) {
      char err[256];
      yajl_val v = yajl_tree_parse(txt, err, sizeof err);
      assert_non_null(v);
      const char *pk[] = {"total", "all", "kernel_count", NULL}, *ph[] = {"hosts", NULL};
      yajl_val k = yajl_tree_get(v, pk, yajl_t_number);
      assert_non_null(k);
      assert_int_equal(YAJL_GET_INTEGER(k), kernels);
      yajl_val h = yajl_tree_get(v, ph, yajl_t_array);
      assert_int_equal(YAJL_GET_ARRAY(h)->len, 3);
      const char *pi[] = {"index", NULL}, *pl[] = {"label", NULL};
      yajl_val h0 = YAJL_GET_ARRAY(h)->values[0];
      assert_string_equal(YAJL_GET_STRING(yajl_tree_get(h0, pl, yajl_t_string)), "node1_pid9");
      assert_int_equal(YAJL_GET_INTEGER(yajl_tree_get(h0, pi, yajl_t_number)), 1);
      yajl_tree_free(v);
    }
    if (f == TBE_REPORT_CSV) {
      int rows = 0;
      for (const char *p = txt; (p = strstr(p, "\nhost,")) != NULL; p++) rows++;
      assert_int_equal(rows, 3);
    }
    if (f == TBE_REPORT_MARKDOWN) assert_non_null(strstr(txt, "| all hosts |"));
    tbe_report_free(txt, n, NULL);
  }
  /* A diff of the run against two of its hosts fits too (from 100
   * columns: the per-name diff tables need 82 at least). */
  tbe_run_analysis *r2;
  assert_int_equal(tbe_run_analysis_create(&r2, an + 1, labels + 1, 2, NULL), 0);
  tbe_run_diff *d;
  assert_int_equal(tbe_run_diff_create(&d, r, r2, NULL), 0);
  for (size_t w = 0; w < 3; w += 2) {
    tbe_report_options o;
    tbe_report_options_init(&o);
    o.width = widths[w];
    char *txt;
    size_t n;
    assert_int_equal(tbe_report_run_diff(d, &o, &txt, &n), 0);
    check_width(txt, widths[w]);
    assert_non_null(strstr(txt, "Hosts: 2 matched by host name, 1 only in base (-), 0 only in new (+)"));
    tbe_report_free(txt, n, NULL);
  }
  tbe_run_diff_free(d);
  tbe_run_analysis_free(r2);
  tbe_run_analysis_free(r);
  /* Ten hosts: no column per host in the overview; a warning all hosts
   * share is one line naming the first (in run order: n03 sorts first) and
   * how many more; one of a host alone names it. */
  for (int i = 0; i < 10; i++) assert_int_equal(tbe_trace_warn(t[i], "the hosts' note"), 0);
  assert_int_equal(tbe_trace_warn(t[4], "n04's own note"), 0);
  assert_int_equal(tbe_run_analysis_create(&r, an, labels, 10, NULL), 0);
  {
    tbe_report_options o;
    tbe_report_options_init(&o);
    char *txt;
    size_t n;
    assert_int_equal(tbe_report_run(r, &o, &txt, &n), 0);
    check_width(txt, 100);
    const char *ov = strstr(txt, "GPUs of each host together");
    assert_non_null(ov);
    const char *hdr = strchr(ov, '\n') + 1;
    const char *end = strchr(hdr, '\n');
    assert_non_null(strstr(hdr, "all hosts"));
    assert_true(strstr(hdr, "all hosts") < end);
    assert_null(memmem(hdr, (size_t)(end - hdr), "n03", 3));
    const char *w = strstr(txt, "the hosts' note");
    assert_non_null(w);
    assert_null(strstr(w + 1, "the hosts' note"));
    assert_non_null(strstr(txt, "\nwarning: n03 (and 9 more hosts): the hosts' note\n"));
    assert_non_null(strstr(txt, "\nwarning: n04: n04's own note\n"));
    tbe_report_free(txt, n, NULL);
  }
  tbe_run_analysis_free(r);
  for (int i = 0; i < 10; i++) {
    tbe_analysis_free(an[i]);
    tbe_trace_free(t[i]);
  }
}

/* Prose wraps at the width; a \x01 is a space where no line breaks. */
static void test_wrap(void **state) {
  (void)state;
  tbe_allocator al;
  tbe__allocator_init(&al, NULL);
  tbe__buf b;
  tbe__buf_init(&b, &al);
  tbe__wrap(&b, "aaa bbb ccc dd\x01" "ee ffffffffffff g", 8);
  tbe__buf_putc(&b, '\0');
  assert_string_equal((const char *)b.data, "aaa bbb\nccc\ndd ee\nffffffffffff\ng\n");
  tbe__buf_deinit(&b);
}

/* ---- the events exporter, read back ---- */

typedef struct seen {
  char tag[160];
  int64_t step;
  double value;
  char *text;
} seen;

static int read_back(const char *dir, seen *out, int max) {
  tbe_reader *r;
  assert_int_equal(tbe_reader_open(&r, dir, 0, NULL), 0);
  assert_int_equal(tbe_reader_file_count(r), 1);
  const tbe_tb_event *ev;
  int n = 0, rc;
  while ((rc = tbe_reader_next(r, &ev)) == 1) {
    if (ev->kind != TBE_TB_SUMMARY) continue;
    for (size_t i = 0; i < ev->nvalues && n < max; i++) {
      const tbe_summary_value *v = &ev->values[i];
      seen *s = &out[n++];
      snprintf(s->tag, sizeof s->tag, "%s", v->tag);
      s->step = ev->step;
      s->value = v->type == TBE_VALUE_SIMPLE ? v->simple_value : NAN;
      s->text = NULL;
      if (v->type == TBE_VALUE_TENSOR && v->tensor.nstrings == 1)
        s->text = strndup((const char *)v->tensor.strings[0].data, v->tensor.strings[0].size);
    }
  }
  assert_int_equal(rc, 0);
  tbe_reader_close(r);
  return n;
}

static const seen *find_tag(const seen *s, int n, const char *tag, int64_t step) {
  for (int i = 0; i < n; i++)
    if (strcmp(s[i].tag, tag) == 0 && s[i].step == step) return &s[i];
  return NULL;
}

static void test_export_events(void **state) {
  (void)state;
  tbe_trace *t = import("kineto/h200_cnn_fp32.pt.trace.json");
  tbe_analysis *an;
  assert_int_equal(tbe_analysis_create(&an, t, NULL), 0);
  char *dir = tu_mkdtemp();
  /* The output writes into the file it is handed (export_run.c places it). */
  char *rundir = tu_join(dir, "fp32");
  assert_int_equal(mkdir(rundir, 0755), 0);
  char *file = tu_join(rundir, "events.out.tfevents.1.testhost");
  int fd = open(file, O_WRONLY | O_CREAT | O_EXCL, 0644);
  assert_true(fd >= 0);
  tbe__export_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.trace = t;
  ctx.host = "testhost";
  assert_string_equal(tbe__exporter_events.name, "events");
  assert_int_equal(tbe__exporter_events.bit, TBE_OUT_EVENTS);
  tbe__sink out;
  tbe__sink_file(&out, fd);
  assert_int_equal(tbe__exporter_events.write(&ctx, &out), 0);
  assert_int_equal(close(fd), 0);
  free(file);
  free(rundir);
  char *run = tu_join(dir, "fp32");
  static seen s[512];
  int n = read_back(run, s, 512);
  assert_true(n > 20);
  const seen *x = find_tag(s, n, "summary/wall_time_ms", 0);
  assert_non_null(x);
  assert_true(fabs(x->value - (double)an->wall_ns / 1e6) < 1e-3);
  x = find_tag(s, n, "summary/gpu_busy_pct", 0);
  assert_non_null(x);
  assert_true(fabs(x->value - 100.0 * (double)an->all.busy_ns / (double)an->wall_ns) < 1e-3);
  x = find_tag(s, n, "summary/kernel_count", 0);
  assert_non_null(x);
  assert_int_equal((int)x->value, 111);
  assert_non_null(find_tag(s, n, "summary/memset_time_ms", 0));
  assert_non_null(find_tag(s, n, "summary/sync_time_ms", 0));
  assert_non_null(find_tag(s, n, "profiler/dropped_records", 0));
  assert_non_null(find_tag(s, n, "profiler/out_of_range_records", 0));
  /* Steps 2..4 on the x axis. */
  for (int64_t st = 2; st <= 4; st++) {
    x = find_tag(s, n, "steps/step_time_ms", st);
    assert_non_null(x);
    assert_true(fabs(x->value - (double)an->steps[st - 2].dur_ns / 1e6) < 1e-3);
  }
  assert_null(find_tag(s, n, "steps/step_time_ms", 1));
  /* The top kernel's total time. */
  tbe_analysis_sort(an, TBE_GROUP_KERNEL, TBE_SORT_TOTAL);
  /* Its name is longer than a tag: the short form cut, then the hash of
   * the full name (FNV-1a, low 32 bits; test_names tests the scheme). */
  assert_string_equal(an->groups[TBE_GROUP_KERNEL][0].label,
                      "sm80_xmma_wgrad_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nhwc_"
                      "tilesize64x64x64_stage4_warpsize2x2x1_g1_tensor16x8x8_execute_kernel__5x_cudnn");
  x = find_tag(s, n,
               "kernels/sm80_xmma_wgrad_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nhwc_"
               "tilesize64x64x64_st.fb0e4655",
               0);
  assert_non_null(x);
  assert_true(fabs(x->value - (double)an->groups[TBE_GROUP_KERNEL][0].total_ns / 1e6) < 1e-3);
  /* 20 kernel tags, all distinct. */
  int nk = 0;
  for (int i = 0; i < n; i++) {
    if (strncmp(s[i].tag, "kernels/", 8) != 0) continue;
    nk++;
    for (int j = 0; j < i; j++) assert_string_not_equal(s[i].tag, s[j].tag);
  }
  assert_int_equal(nk, 20);
  /* The Markdown table. */
  x = find_tag(s, n, "summary/top_kernels/text_summary", 0);
  assert_non_null(x);
  assert_non_null(x->text);
  assert_non_null(strstr(x->text, "| kernel | calls | total |"));
  assert_non_null(strstr(x->text, "sm80\\_xmma\\_wgrad"));
  for (int i = 0; i < n; i++) free(s[i].text);
  /* A file that cannot take the bytes fails cleanly. */
  fd = open("/dev/full", O_WRONLY);
  assert_true(fd >= 0);
  tbe__sink_file(&out, fd);
  assert_int_equal(tbe__exporter_events.write(&ctx, &out), -ENOSPC);
  close(fd);
  free(run);
  tu_rmrf(dir);
  free(dir);
  tbe_analysis_free(an);
  tbe_trace_free(t);
}

static void test_diff_events(void **state) {
  (void)state;
  tbe_trace *a = import("kineto/h200_cnn_fp32.pt.trace.json");
  tbe_trace *b = import("kineto/h200_cnn_bf16.pt.trace.json");
  tbe_analysis *aa, *ab;
  assert_int_equal(tbe_analysis_create(&aa, a, NULL), 0);
  assert_int_equal(tbe_analysis_create(&ab, b, NULL), 0);
  tbe_diff *d;
  assert_int_equal(tbe_diff_create(&d, aa, ab, NULL), 0);
  char *dir = tu_mkdtemp();
  char *run = tu_join(dir, "bf16");
  char path[4096];
  assert_int_equal(tbe_diff_write_events(d, run, "fp32", "bf16", 10, "h", path, sizeof path), 0);
  assert_non_null(strstr(path, "/bf16/events.out.tfevents."));
  static seen s[256];
  int n = read_back(run, s, 256);
  const seen *x = find_tag(s, n, "diff/fp32/kernel_time_ratio", 0);
  assert_non_null(x);
  assert_true(fabs(x->value - (double)ab->all.kernel_ns / (double)aa->all.kernel_ns) < 1e-5);
  assert_non_null(find_tag(s, n, "diff/fp32/step_time_ratio", 0));
  x = find_tag(s, n, "diff/fp32/report/text_summary", 0);
  assert_non_null(x);
  assert_non_null(strstr(x->text, "# Diff: fp32 → bf16"));
  for (int i = 0; i < n; i++) free(s[i].text);
  assert_int_equal(tbe_diff_write_events(d, run, "../x", "bf16", 10, NULL, NULL, 0), TBE_ENAME);
  assert_int_equal(tbe_diff_write_events(NULL, run, "fp32", "bf16", 10, NULL, NULL, 0), TBE_EINVAL);
  free(run);
  tu_rmrf(dir);
  free(dir);
  tbe_diff_free(d);
  tbe_analysis_free(aa);
  tbe_analysis_free(ab);
  tbe_trace_free(a);
  tbe_trace_free(b);
}

/* ---- runs of many ranks ---- */

/* One rank of a synthetic run, as test/bench/gen_run.c writes them but with
 * exact figures: `nsteps` steps, each a compute kernel then an NCCL
 * all-reduce of `comm_us` on the one GPU, the step lasting `step_us`. */
static tbe_trace *rank_trace(int rank, int world, int64_t step_us, int64_t comm_us, int nsteps) {
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  uint32_t s7, s13, dev;
  assert_int_equal(tbe_trace_device(t, 0, &dev), 0);
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_STREAM, 100 + rank, 7, 0, &s7), 0);
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_STREAM, 100 + rank, 13, 0, &s13), 0);
  char host[32];
  snprintf(host, sizeof host, "node.rank%d", rank);
  t->host = tbe_trace_str_id(t, host);
  t->rank = rank;
  t->world_size = world;
  tbe_str gemm = tbe_trace_str_id(t, "void gemm_kernel<128>(float const*, float*)");
  tbe_str ar = tbe_trace_str_id(t, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
  tbe_kernel k;
  memset(&k, 0, sizeof k);
  for (int s = 0; s < nsteps; s++) {
    int64_t start = 1000000000000LL + (int64_t)s * 20000000LL;
    tbe_event e;
    memset(&e, 0, sizeof e);
    e.kind = TBE_EV_KERNEL;
    e.link = e.detail = TBE_NONE;
    e.start_ns = start;
    e.dur_ns = (step_us - comm_us) * 1000;
    e.name = gemm;
    e.track = s7;
    assert_int_equal(tbe_trace_add_event(t, &e, &k, NULL, 0, NULL), 0);
    e.start_ns = start + (step_us - comm_us) * 1000;
    e.dur_ns = comm_us * 1000;
    e.name = ar;
    e.track = s13;
    assert_int_equal(tbe_trace_add_event(t, &e, &k, NULL, 0, NULL), 0);
    char sn[32];
    snprintf(sn, sizeof sn, "ProfilerStep#%d", s);
    assert_int_equal(tbe_trace_add_step(t, s, start, start + step_us * 1000, tbe_trace_str_id(t, sn)), 0);
  }
  assert_int_equal(tbe_trace_finish(t), 0);
  return t;
}

/* A run of n ranks: rank r's step takes 10 ms + r us (13 ms on the slow
 * rank), its all-reduce 1 ms + r us per step; hosts given in reverse. */
typedef struct ranks_run {
  size_t n;
  tbe_trace **t;
  tbe_analysis **an;
  const char **labels;
  tbe_run_analysis *r;
} ranks_run;

static void ranks_make(ranks_run *x, size_t n, int slow) {
  x->n = n;
  x->t = calloc(n, sizeof *x->t);
  x->an = calloc(n, sizeof *x->an);
  x->labels = calloc(n, sizeof *x->labels);
  for (size_t i = 0; i < n; i++) {
    int rank = (int)(n - 1 - i);
    x->t[i] = rank_trace(rank, (int)n, rank == slow ? 13000 : 10000 + rank, 1000 + rank, 6);
    assert_int_equal(tbe_analysis_create(&x->an[i], x->t[i], NULL), 0);
    x->labels[i] = tbe_trace_str(x->t[i], x->t[i]->host);
  }
  assert_int_equal(tbe_run_analysis_create(&x->r, x->an, x->labels, n, NULL), 0);
}

static void ranks_free(ranks_run *x) {
  tbe_run_analysis_free(x->r);
  for (size_t i = 0; i < x->n; i++) {
    tbe_analysis_free(x->an[i]);
    tbe_trace_free(x->t[i]);
  }
  free(x->t);
  free(x->an);
  free(x->labels);
}

static void render_run(tbe_run_analysis *r, int format, int width, char **txt) {
  tbe_report_options o;
  tbe_report_options_init(&o);
  o.format = format;
  o.width = width;
  o.label[0] = "ranks";
  size_t n;
  assert_int_equal(tbe_report_run(r, &o, txt, &n), 0);
}

static size_t count(const char *s, const char *what) {
  size_t k = 0;
  for (const char *p = s; (p = strstr(p, what)) != NULL; p++) k++;
  return k;
}

static yajl_val json_of(const char *txt) {
  char err[256];
  yajl_val v = yajl_tree_parse(txt, err, sizeof err);
  if (!v) fail_msg("JSON: %s", err);
  return v;
}

static long long jint(yajl_val v, const char *const *path) {
  yajl_val x = yajl_tree_get(v, (const char **)path, yajl_t_number);
  if (!x) fail_msg("JSON: no number at %s", path[0]);
  return YAJL_GET_INTEGER(x);
}

/* 8 ranks: every rank a row in rank order, the slow one the slowest by
 * value; the spread, the distribution and the outliers by value; every
 * format holds every rank. */
static void test_ranks_full(void **state) {
  (void)state;
  ranks_run x;
  ranks_make(&x, 8, 5);
  tbe_run_analysis *r = x.r;
  assert_true(r->by_rank);
  for (size_t i = 0; i < 8; i++) assert_int_equal(r->hosts[i].an->rank, (int)i);
  assert_int_equal(r->figure, TBE_RUN_BY_STEP_MEDIAN);
  assert_int_equal(r->hosts[r->slowest].an->rank, 5);
  assert_int_equal(r->hosts[r->fastest].an->rank, 0);
  assert_int_equal(r->slowest_ns, 13000000);
  assert_int_equal(r->fastest_ns, 10000000);
  assert_int_equal(r->spread_ns, 3000000);
  /* 10.000 .. 10.007 ms without 10.005, and 13 ms: nearest ranks 4th and 8th */
  assert_int_equal(r->figure_dist.n, 8);
  assert_int_equal(r->figure_dist.min_ns, 10000000);
  assert_int_equal(r->figure_dist.p50_ns, 10003000);
  assert_int_equal(r->figure_dist.p90_ns, 13000000);
  assert_int_equal(r->figure_dist.max_ns, 13000000);
  assert_int_equal(r->comm_dist.min_ns, 6 * 1000000);
  assert_int_equal(r->comm_dist.max_ns, 6 * 1007000);
  assert_int_equal(r->noutliers, 1);
  assert_true(r->hosts[5].outlier);
  assert_int_equal(r->hosts[r->order[0]].an->rank, 5);
  assert_int_equal(r->hosts[r->order[7]].an->rank, 0);

  char *txt;
    render_run(r, TBE_REPORT_TABLE, 100, &txt);
  check_width(txt, 100);
  assert_non_null(strstr(txt, "\nRanks (8; slowest and fastest by median step time)\n"));
  const char *prev = txt;
  for (int k = 0; k < 8; k++) {
    char row[64];
    snprintf(row, sizeof row, "\n%6d node.rank%d ", k, k);
    const char *at = strstr(txt, row);
    if (!at) fail_msg("no row for rank %d", k);
    assert_true(at > prev);
    prev = at;
  }
  assert_non_null(strstr(txt, " 13.000ms    69.0%    78.000ms     6.030ms  slowest\n"));
  assert_non_null(strstr(txt, "\nslowest rank 5 (node.rank5), fastest rank 0 (node.rank0) by median step time: "
                              "spread 3.000ms (30.0%\nof the fastest)\n"));
  assert_non_null(strstr(txt, "\nMedian step time over 8 ranks: min 10.000ms, p50 10.003ms, p90 13.000ms, "
                              "max 13.000ms\n"));
  assert_non_null(strstr(txt, "\nComm time over 8 ranks: min 6.000ms, p50 6.018ms, p90 6.042ms, max 6.042ms\n"));
  assert_non_null(strstr(txt, "beyond 3 scaled MADs and 2% of the median): rank 5 (13.000ms).\n"));
  assert_null(strstr(txt, "more ranks"));
  tbe_report_free(txt, strlen(txt), NULL);
  render_run(r, TBE_REPORT_TABLE, 80, &txt);
  check_width(txt, 80);
  tbe_report_free(txt, strlen(txt), NULL);

  render_run(r, TBE_REPORT_MARKDOWN, 100, &txt);
  assert_int_equal(count(txt, "| node.rank"), 8);
  assert_non_null(strstr(txt, "\n| 5 | node.rank5 | 13.000ms | 69.0 | 78.000ms | 6.030ms | slowest |\n"));
  tbe_report_free(txt, strlen(txt), NULL);

  render_run(r, TBE_REPORT_CSV, 100, &txt);
  assert_int_equal(count(txt, "\nhost,node.rank"), 8);
  assert_non_null(strstr(txt, ",6030000,slowest\n"));
  assert_non_null(strstr(txt, "\nspread,step_median,8,10000000,10003000,13000000,13000000\n"));
  tbe_report_free(txt, strlen(txt), NULL);

  render_run(r, TBE_REPORT_JSON, 100, &txt);
  yajl_val v = json_of(txt);
  const char *ph[] = {"hosts", NULL}, *ps[] = {"slowest", "rank", NULL},
             *pf[] = {"fastest", "rank", NULL}, *pp[] = {"spread_ns", NULL},
             *pd[] = {"figure_dist", "p50_ns", NULL}, *po[] = {"outliers", NULL};
  assert_int_equal(YAJL_GET_ARRAY(yajl_tree_get(v, ph, yajl_t_array))->len, 8);
  assert_int_equal(jint(v, ps), 5);
  assert_int_equal(jint(v, pf), 0);
  assert_int_equal(jint(v, pp), 3000000);
  assert_int_equal(jint(v, pd), 10003000);
  yajl_val out = yajl_tree_get(v, po, yajl_t_array);
  assert_int_equal(YAJL_GET_ARRAY(out)->len, 1);
  const char *prank[] = {"rank", NULL};
  assert_int_equal(jint(YAJL_GET_ARRAY(out)->values[0], prank), 5);
  yajl_tree_free(v);
  tbe_report_free(txt, strlen(txt), NULL);
  ranks_free(&x);
}

/* 64 ranks: the compact form (5 slowest, 5 fastest, the outlier, a gap
 * line), the distribution by value; CSV and JSON hold all 64. */
static void test_ranks_compact(void **state) {
  (void)state;
  ranks_run x;
  ranks_make(&x, 64, 21);
  tbe_run_analysis *r = x.r;
  assert_int_equal(r->hosts[r->slowest].an->rank, 21);
  assert_int_equal(r->hosts[r->fastest].an->rank, 0);
  assert_int_equal(r->spread_ns, 3000000);
  assert_int_equal(r->figure_dist.p50_ns, 10032000);
  assert_int_equal(r->figure_dist.p90_ns, 10058000);
  assert_int_equal(r->noutliers, 1);
  static const int widths[] = {100, 80};
  for (int w = 0; w < 2; w++) {
    char *txt;
    render_run(r, TBE_REPORT_TABLE, widths[w], &txt);
    check_width(txt, widths[w]);
    assert_int_equal(count(txt, " node.rank"), 10); /* the rows */
    assert_non_null(strstr(txt, "\n  ... 54 more ranks (every one: --format csv or json)\n"));
    /* slowest first: 21, then 63..60; ... then 4..0 */
    const char *a = strstr(txt, "    21 node.rank21 "), *b = strstr(txt, "    60 node.rank60 "),
               *c = strstr(txt, "  ... 54 more"), *d = strstr(txt, "     4 node.rank4 "),
               *e = strstr(txt, "     0 node.rank0 ");
    assert_true(a && b && c && d && e && a < b && b < c && c < d && d < e);
    assert_null(strstr(txt, "node.rank59 "));
    assert_non_null(strstr(txt, "rank 21 (13.000ms)."));
    tbe_report_free(txt, strlen(txt), NULL);
  }
  char *txt;
    render_run(r, TBE_REPORT_TABLE, 100, &txt);
  assert_non_null(strstr(txt, "\nMedian step time over 64 ranks: min 10.000ms, p50 10.032ms, p90 10.058ms, "
                              "max 13.000ms\n"));
  tbe_report_free(txt, strlen(txt), NULL);
  render_run(r, TBE_REPORT_MARKDOWN, 100, &txt);
  assert_int_equal(count(txt, "| node.rank"), 10);
  assert_non_null(strstr(txt, "| … | 54 more ranks |"));
  tbe_report_free(txt, strlen(txt), NULL);
  render_run(r, TBE_REPORT_CSV, 100, &txt);
  assert_int_equal(count(txt, "\nhost,node.rank"), 64);
  tbe_report_free(txt, strlen(txt), NULL);
  render_run(r, TBE_REPORT_JSON, 100, &txt);
  yajl_val v = json_of(txt);
  const char *ph[] = {"hosts", NULL};
  assert_int_equal(YAJL_GET_ARRAY(yajl_tree_get(v, ph, yajl_t_array))->len, 64);
  yajl_tree_free(v);
  tbe_report_free(txt, strlen(txt), NULL);
  ranks_free(&x);
}

/* Two runs of 8 ranks whose slow rank moved from 5 to 2: rank by rank,
 * the change of each rank's median step time by value, the pairs ordered
 * by it; 64 ranks: the compact form. */
static void test_ranks_diff(void **state) {
  (void)state;
  ranks_run a, b;
  ranks_make(&a, 8, 5);
  ranks_make(&b, 8, 2);
  tbe_run_diff *d;
  assert_int_equal(tbe_run_diff_create(&d, a.r, b.r, NULL), 0);
  assert_true(d->by_rank);
  assert_int_equal(d->matched, 8);
  for (size_t i = 0; i < d->nhosts; i++) {
    const tbe_host_diff *p = &d->hosts[i];
    int rank = a.r->hosts[p->host[0]].an->rank;
    assert_int_equal(b.r->hosts[p->host[1]].an->rank, rank);
    assert_true(p->has_change);
    int64_t want = rank == 5 ? 10005000 - 13000000 : rank == 2 ? 13000000 - 10002000 : 0;
    assert_int_equal(p->step_change_ns, want);
    assert_int_equal(p->comm_ns[0], 6 * (1000000 + rank * 1000));
  }
  /* rank 2 changed most (+2.998 ms), then rank 5 (-2.995 ms) */
  assert_int_equal(a.r->hosts[d->hosts[d->order[0]].host[0]].an->rank, 2);
  assert_int_equal(a.r->hosts[d->hosts[d->order[1]].host[0]].an->rank, 5);
  assert_int_equal(d->change_dist.min_ns, -2995000);
  assert_int_equal(d->change_dist.max_ns, 2998000);
  tbe_report_options o;
  tbe_report_options_init(&o);
  char *txt;
  size_t n;
  assert_int_equal(tbe_report_run_diff(d, &o, &txt, &n), 0);
  check_width(txt, 100);
  assert_non_null(strstr(txt, "\nRanks: 8 matched by rank, 0 only in base (-), 0 only in new (+)\n"));
  const char *r2 = strstr(txt, "\n     2 node.rank2 "), *r5 = strstr(txt, "\n     5 node.rank5 ");
  assert_true(r2 && r5 && r2 < r5); /* rank order */
  assert_non_null(strstr(r2, " 10.002ms  13.000ms   +2.998ms  +30.0%   6.012ms   6.012ms !\n"));
  assert_non_null(strstr(r5, " 13.000ms  10.005ms   -2.995ms  -23.0%   6.030ms   6.030ms !\n"));
  tbe_report_free(txt, n, NULL);
  o.format = TBE_REPORT_CSV;
  assert_int_equal(tbe_report_run_diff(d, &o, &txt, &n), 0);
  assert_int_equal(count(txt, "\nhost,node.rank"), 8);
  assert_non_null(strstr(txt, ",6012000,6012000,2998000,29.974,2,2\n"));
  assert_non_null(strstr(txt, "\nstep_change,8,-2995000,0,2998000,2998000\n"));
  tbe_report_free(txt, n, NULL);
  o.format = TBE_REPORT_JSON;
  assert_int_equal(tbe_report_run_diff(d, &o, &txt, &n), 0);
  yajl_val v = json_of(txt);
  const char *pm[] = {"step_change", "max_ns", NULL};
  assert_int_equal(jint(v, pm), 2998000);
  yajl_tree_free(v);
  tbe_report_free(txt, n, NULL);
  tbe_run_diff_free(d);
  ranks_free(&a);
  ranks_free(&b);

  ranks_make(&a, 64, 21);
  ranks_make(&b, 64, 40);
  assert_int_equal(tbe_run_diff_create(&d, a.r, b.r, NULL), 0);
  o.format = TBE_REPORT_TABLE;
  assert_int_equal(tbe_report_run_diff(d, &o, &txt, &n), 0);
  check_width(txt, 100);
  assert_non_null(strstr(txt, "\n  ... 54 more pairs (every one: --format csv or json)\n"));
  const char *r40 = strstr(txt, "\n    40 node.rank40 "), *r21 = strstr(txt, "\n    21 node.rank21 ");
  assert_true(r40 && r21 && r21 < r40); /* by |change|: -2.979 ms, then +2.960 ms */
  tbe_report_free(txt, n, NULL);
  o.format = TBE_REPORT_CSV;
  assert_int_equal(tbe_report_run_diff(d, &o, &txt, &n), 0);
  assert_int_equal(count(txt, "\nhost,node.rank"), 64);
  tbe_report_free(txt, n, NULL);
  tbe_run_diff_free(d);
  ranks_free(&a);
  ranks_free(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fmt_dur),
      cmocka_unit_test(test_shorten),       cmocka_unit_test(test_escapes),
      cmocka_unit_test(test_table_width),   cmocka_unit_test(test_export_events),
      cmocka_unit_test(test_diff_events),   cmocka_unit_test(test_run_reports),
      cmocka_unit_test(test_wrap),          cmocka_unit_test(test_alike_names),
      cmocka_unit_test(test_ranks_full),    cmocka_unit_test(test_ranks_compact),
      cmocka_unit_test(test_ranks_diff),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
