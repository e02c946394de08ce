/* test_reader.c: the event reader on TensorBoard's own files, on every
 * truncation and every damaged byte of small files, and round trips of
 * every add_* through the writer and back. */
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
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "events/tfrecord.h"
#include "tbexport.h"
#include "tensorboard/custom_scalar.pb-c.h"
#include "tensorboard/event.pb-c.h"
#include "tensorboard/plugins.pb-c.h"
#include "testutil.h"

#define RUN1 "tensorboard/run1"
#define SCALARS_ONLY "tensorboard/scalars_only/events.out.tfevents.1796205392.vm.580.4.golden"
#define HP_FILE "tensorboard/run1/hp/events.out.tfevents.1796205392.vm.580.3"

/* ---- golden files ---- */

typedef struct tagcount {
  char run[32];
  char tag[64];
  int type;
  int n;
} tagcount;

static void test_golden_run1(void **state) {
  (void)state;
  tbe_reader *r;
  assert_int_equal(tbe_reader_open(&r, tu_data(RUN1), TBE_READER_RECURSIVE, NULL), 0);
  assert_int_equal(tbe_reader_file_count(r), 4);
  tagcount tc[32];
  size_t ntc = 0;
  const tbe_tb_event *ev;
  int rc, nev = 0, nver = 0;
  const char *runs_seen[8];
  size_t nruns = 0;
  while ((rc = tbe_reader_next(r, &ev)) == 1) {
    nev++;
    if (nruns == 0 || strcmp(runs_seen[nruns - 1], ev->run) != 0) {
      assert_true(nruns < 8);
      runs_seen[nruns++] = strdup(ev->run);
    }
    if (ev->kind == TBE_TB_FILE_VERSION) {
      assert_string_equal(ev->file_version, "brain.Event:2");
      assert_string_equal(ev->source_writer, "tensorboard.summary.writer.event_file_writer");
      assert_int_equal(ev->offset, 0);
      nver++;
      continue;
    }
    assert_int_equal(ev->kind, TBE_TB_SUMMARY);
    for (size_t i = 0; i < ev->nvalues; i++) {
      const tbe_summary_value *v = &ev->values[i];
      size_t k;
      for (k = 0; k < ntc; k++)
        if (strcmp(tc[k].run, ev->run) == 0 && strcmp(tc[k].tag, v->tag) == 0) break;
      if (k == ntc) {
        assert_true(ntc < 32);
        snprintf(tc[k].run, sizeof tc[k].run, "%s", ev->run);
        snprintf(tc[k].tag, sizeof tc[k].tag, "%s", v->tag);
        tc[k].type = v->type;
        tc[k].n = 0;
        ntc++;
      }
      tc[k].n++;
      if (strcmp(v->tag, "loss/train") == 0) {
        assert_true(v->simple_value == (float)(1.0 / (ev->step + 1)));
        assert_true(ev->wall_time == 1700000000.0 + (double)ev->step);
      }
      if (strcmp(v->tag, "lr") == 0) assert_true(v->simple_value == 0.1f);
      if (strcmp(v->tag, "multi") == 0)
        assert_true(v->simple_value == (strcmp(ev->run, "multi_a") == 0 ? 1.0f : 2.0f));
      if (strcmp(v->tag, "hparam/acc") == 0) assert_true(v->simple_value == 0.9f);
      if (strcmp(v->tag, "notes/text_summary") == 0) {
        assert_string_equal(v->plugin_name, "text");
        assert_int_equal(v->tensor.dtype, TBE_DT_STRING);
        assert_int_equal(v->tensor.nstrings, 1);
        assert_int_equal(v->tensor.strings[0].size, 12);
        assert_memory_equal(v->tensor.strings[0].data, "hello **tb**", 12);
      }
      if (strcmp(v->tag, "pr") == 0) {
        assert_string_equal(v->plugin_name, "pr_curves");
        assert_int_equal(v->tensor.dtype, TBE_DT_FLOAT);
        assert_int_equal(v->tensor.rank, 2);
        assert_int_equal(v->tensor.shape[0], 6);
        assert_int_equal(v->tensor.shape[1], 127);
        assert_int_equal(v->tensor.nfloats, 6 * 127);
        assert_true(v->tensor.floats[0] == 3.0f); /* TP at threshold 0: 3 positives */
        assert_true(v->tensor.floats[127] == 2.0f); /* FP at threshold 0 */
      }
      if (strcmp(v->tag, "weights") == 0) {
        assert_true(v->histo.num == 1000.0 && v->histo.min == -1.0 && v->histo.max == 1.0);
        double total = 0;
        for (size_t b = 0; b < v->histo.nbuckets; b++) total += v->histo.bucket[b];
        assert_true(total == 1000.0);
      }
      if (strcmp(v->tag, "img") == 0) {
        assert_int_equal(v->image.width, 8);
        assert_int_equal(v->image.height, 8);
        assert_int_equal(v->image.colorspace, 3);
        assert_memory_equal(v->image.encoded.data, "\x89PNG", 4);
      }
      if (strcmp(v->tag, "custom_scalars__config__") == 0) {
        assert_string_equal(v->plugin_name, "custom_scalars");
        assert_int_equal(v->tensor.nstrings, 1);
        Tensorboard__Layout *l = tensorboard__layout__unpack(NULL, v->tensor.strings[0].size,
                                                             v->tensor.strings[0].data);
        assert_non_null(l);
        assert_int_equal(l->n_category, 1);
        assert_string_equal(l->category[0]->title, "Train");
        assert_string_equal(l->category[0]->chart[0]->multiline->tag[0], "loss/train");
        tensorboard__layout__free_unpacked(l, NULL);
      }
      if (strncmp(v->tag, "_hparams_/", 10) == 0) {
        assert_string_equal(v->plugin_name, "hparams");
        assert_int_equal(v->type, TBE_VALUE_NONE);
        assert_true(v->plugin_content.size > 0);
      }
    }
  }
  assert_int_equal(rc, 0);
  assert_int_equal(nver, 4);
  assert_int_equal(nruns, 4);
  assert_string_equal(runs_seen[0], ".");
  assert_string_equal(runs_seen[1], "hp");
  assert_string_equal(runs_seen[2], "multi_a");
  assert_string_equal(runs_seen[3], "multi_b");
  for (size_t i = 0; i < nruns; i++) free((void *)runs_seen[i]);
  /* exactly the tags TensorBoard's EventAccumulator lists */
  struct {
    const char *run, *tag;
    int type, n;
  } want[] = {{".", "loss/train", TBE_VALUE_SIMPLE, 50},
              {".", "lr", TBE_VALUE_SIMPLE, 50},
              {".", "weights", TBE_VALUE_HISTO, 1},
              {".", "notes/text_summary", TBE_VALUE_TENSOR, 1},
              {".", "img", TBE_VALUE_IMAGE, 1},
              {".", "pr", TBE_VALUE_TENSOR, 1},
              {".", "custom_scalars__config__", TBE_VALUE_TENSOR, 1},
              {"hp", "_hparams_/experiment", TBE_VALUE_NONE, 1},
              {"hp", "_hparams_/session_start_info", TBE_VALUE_NONE, 1},
              {"hp", "_hparams_/session_end_info", TBE_VALUE_NONE, 1},
              {"hp", "hparam/acc", TBE_VALUE_SIMPLE, 1},
              {"multi_a", "multi", TBE_VALUE_SIMPLE, 1},
              {"multi_b", "multi", TBE_VALUE_SIMPLE, 1}};
  size_t nwant = sizeof want / sizeof want[0];
  assert_int_equal(ntc, nwant);
  for (size_t i = 0; i < nwant; i++) {
    size_t k;
    for (k = 0; k < ntc; k++)
      if (strcmp(tc[k].run, want[i].run) == 0 && strcmp(tc[k].tag, want[i].tag) == 0) break;
    assert_true(k < ntc);
    assert_int_equal(tc[k].type, want[i].type);
    assert_int_equal(tc[k].n, want[i].n);
  }
  tbe_reader_close(r);
  /* non-recursive: only the root file */
  assert_int_equal(tbe_reader_open(&r, tu_data(RUN1), 0, NULL), 0);
  assert_int_equal(tbe_reader_file_count(r), 1);
  tbe_reader_close(r);
}

static void test_golden_scalars_only(void **state) {
  (void)state;
  tbe_reader *r;
  assert_int_equal(tbe_reader_open(&r, tu_data(SCALARS_ONLY), 0, NULL), 0);
  const tbe_tb_event *ev;
  assert_int_equal(tbe_reader_next(r, &ev), 1);
  assert_int_equal(ev->kind, TBE_TB_FILE_VERSION);
  assert_string_equal(ev->run, ".");
  uint64_t expect_off = 88;
  for (int s = 0; s < 5; s++) {
    assert_int_equal(tbe_reader_next(r, &ev), 1);
    assert_int_equal(ev->offset, expect_off);
    expect_off += ev->record.size + 16;
    assert_int_equal(ev->step, s);
    assert_true(ev->wall_time == 1700000000.0 + s);
    assert_int_equal(ev->nvalues, 1);
    assert_string_equal(ev->values[0].tag, "x");
    assert_true(ev->values[0].simple_value == 0.5f * s);
    assert_string_equal(ev->values[0].plugin_name, "");
  }
  assert_int_equal(tbe_reader_next(r, &ev), 0);
  assert_int_equal(tbe_reader_next(r, &ev), 0);
  tbe_reader_close(r);
}

/* ---- damage ---- */

static size_t count_records(const uint8_t *d, size_t n, size_t *bounds) {
  size_t o = 0, k = 0;
  while (o < n) {
    bounds[k++] = o;
    o += 16 + (size_t)tbe__get_le64(d + o);
  }
  bounds[k] = o;
  return k;
}

/* Every prefix of a small file: whole records read, then TBE_ETRUNCATED
 * at the start of the cut record (or a clean end at a boundary). */
static void cut_points(const char *rel) {
  size_t n;
  uint8_t *d = tu_read_file(tu_data(rel), &n);
  assert_non_null(d);
  size_t bounds[64];
  size_t nrec = count_records(d, n, bounds);
  char *dir = tu_mkdtemp();
  char *path = tu_join(dir, "events.out.tfevents.cut");
  for (size_t cut = 0; cut < n; cut++) {
    assert_int_equal(tu_write_file(path, d, cut), 0);
    tbe_reader *r;
    assert_int_equal(tbe_reader_open(&r, path, 0, NULL), 0);
    size_t whole = 0;
    while (whole < nrec && bounds[whole + 1] <= cut) whole++;
    const tbe_tb_event *ev;
    for (size_t i = 0; i < whole; i++) {
      assert_int_equal(tbe_reader_next(r, &ev), 1);
      assert_int_equal(ev->offset, bounds[i]);
    }
    int rc = tbe_reader_next(r, &ev);
    if (cut == bounds[whole]) {
      assert_int_equal(rc, 0);
    } else {
      assert_int_equal(rc, TBE_ETRUNCATED);
      tbe_reader_error_info info;
      tbe_reader_error(r, &info);
      assert_int_equal(info.code, TBE_ETRUNCATED);
      assert_int_equal(info.offset, bounds[whole]);
      assert_string_equal(info.path, path);
      assert_int_equal(tbe_reader_next(r, &ev), 0);
    }
    tbe_reader_close(r);
  }
  tu_rmrf(dir);
  free(path);
  free(dir);
  free(d);
}

static void test_every_cut_point(void **state) {
  (void)state;
  cut_points(SCALARS_ONLY);
  cut_points(HP_FILE);
}

/* Every flipped bit of a small file: records before the damaged one read
 * fine, then a checksum (or parse) error at that record's offset. */
static void flips(const char *rel) {
  size_t n;
  uint8_t *d = tu_read_file(tu_data(rel), &n);
  assert_non_null(d);
  size_t bounds[64];
  size_t nrec = count_records(d, n, bounds);
  char *dir = tu_mkdtemp();
  char *path = tu_join(dir, "events.out.tfevents.flip");
  uint8_t *c = malloc(n);
  for (size_t i = 0; i < n; i++) {
    size_t rec = 0;
    while (bounds[rec + 1] <= i) rec++;
    for (int bit = 0; bit < 8; bit++) {
      memcpy(c, d, n);
      c[i] ^= (uint8_t)(1u << bit);
      assert_int_equal(tu_write_file(path, c, n), 0);
      tbe_reader *r;
      assert_int_equal(tbe_reader_open(&r, path, 0, NULL), 0);
      const tbe_tb_event *ev;
      for (size_t k = 0; k < rec; k++) assert_int_equal(tbe_reader_next(r, &ev), 1);
      int rc = tbe_reader_next(r, &ev);
      assert_true(rc == TBE_ECHECKSUM || rc == TBE_EPARSE);
      tbe_reader_error_info info;
      tbe_reader_error(r, &info);
      assert_int_equal(info.code, rc);
      assert_int_equal(info.offset, bounds[rec]);
      assert_true(strlen(info.message) > 0);
      assert_int_equal(tbe_reader_next(r, &ev), 0); /* the file is given up */
      tbe_reader_close(r);
    }
  }
  (void)nrec;
  free(c);
  tu_rmrf(dir);
  free(path);
  free(dir);
  free(d);
}

static void test_every_flipped_bit(void **state) {
  (void)state;
  flips(SCALARS_ONLY);
  flips(HP_FILE);
}

static void test_parse_error(void **state) {
  (void)state;
  tbe_allocator a;
  tbe__allocator_init(&a, NULL);
  tbe__buf b;
  tbe__buf_init(&b, &a);
  size_t n;
  uint8_t *d = tu_read_file(tu_data(SCALARS_ONLY), &n);
  tbe__buf_append(&b, d, 88); /* the file_version record */
  tbe__tfr_append(&b, "\x0a\xff\xff\xff\xff\x0f", 6); /* valid CRCs, bad protobuf */
  char *dir = tu_mkdtemp();
  char *path = tu_join(dir, "x.tfevents");
  assert_int_equal(tu_write_file(path, b.data, b.len), 0);
  tbe_reader *r;
  assert_int_equal(tbe_reader_open(&r, path, 0, NULL), 0);
  const tbe_tb_event *ev;
  assert_int_equal(tbe_reader_next(r, &ev), 1);
  assert_int_equal(tbe_reader_next(r, &ev), TBE_EPARSE);
  tbe_reader_error_info info;
  tbe_reader_error(r, &info);
  assert_int_equal(info.offset, 88);
  tbe_reader_close(r);
  tbe__buf_deinit(&b);
  free(d);
  tu_rmrf(dir);
  free(path);
  free(dir);
}

/* A writer still appending: the reader reports the torn tail once, then
 * picks up the record when the rest arrives. */
static void test_tail_follow(void **state) {
  (void)state;
  size_t n;
  uint8_t *d = tu_read_file(tu_data(SCALARS_ONLY), &n);
  char *dir = tu_mkdtemp();
  char *path = tu_join(dir, "events.out.tfevents.follow");
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, d, 100), 100); /* record 0 (88 B) + 12 B of record 1 */
  tbe_reader *r;
  assert_int_equal(tbe_reader_open(&r, path, 0, NULL), 0);
  const tbe_tb_event *ev;
  assert_int_equal(tbe_reader_next(r, &ev), 1);
  assert_int_equal(tbe_reader_next(r, &ev), TBE_ETRUNCATED);
  assert_int_equal(tbe_reader_next(r, &ev), 0);
  assert_int_equal(write(fd, d + 100, n - 100), (ssize_t)(n - 100));
  for (int s = 0; s < 5; s++) {
    assert_int_equal(tbe_reader_next(r, &ev), 1);
    assert_int_equal(ev->step, s);
  }
  assert_int_equal(tbe_reader_next(r, &ev), 0);
  close(fd);
  tbe_reader_close(r);
  free(d);
  tu_rmrf(dir);
  free(path);
  free(dir);
}

/* Damage in one file of a run does not hide the others. */
static void test_directory_damage(void **state) {
  (void)state;
  size_t n;
  uint8_t *d = tu_read_file(tu_data(SCALARS_ONLY), &n);
  char *dir = tu_mkdtemp();
  char *a = tu_join(dir, "events.out.tfevents.1.a");
  char *b = tu_join(dir, "events.out.tfevents.2.b");
  char *c = tu_join(dir, "events.out.tfevents.3.c");
  char *other = tu_join(dir, "notes.txt");
  assert_int_equal(tu_write_file(a, d, n - 5), 0);  /* truncated */
  d[200] ^= 1;
  assert_int_equal(tu_write_file(b, d, n), 0);      /* corrupt: record 3 (164..202) */
  d[200] ^= 1;
  assert_int_equal(tu_write_file(c, d, n), 0);      /* fine */
  assert_int_equal(tu_write_file(other, "x", 1), 0);
  tbe_reader *r;
  assert_int_equal(tbe_reader_open(&r, dir, 0, NULL), 0);
  assert_int_equal(tbe_reader_file_count(r), 3);
  const tbe_tb_event *ev;
  tbe_reader_error_info info;
  for (int i = 0; i < 5; i++) assert_int_equal(tbe_reader_next(r, &ev), 1);
  assert_int_equal(tbe_reader_next(r, &ev), TBE_ETRUNCATED);
  tbe_reader_error(r, &info);
  assert_string_equal(info.path, a);
  for (int i = 0; i < 3; i++) {
    assert_int_equal(tbe_reader_next(r, &ev), 1);
    assert_string_equal(ev->path, b);
  }
  assert_int_equal(tbe_reader_next(r, &ev), TBE_ECHECKSUM);
  tbe_reader_error(r, &info);
  assert_string_equal(info.path, b);
  assert_int_equal(info.offset, 164);
  for (int i = 0; i < 6; i++) {
    assert_int_equal(tbe_reader_next(r, &ev), 1);
    assert_string_equal(ev->path, c);
  }
  assert_int_equal(tbe_reader_next(r, &ev), 0);
  tbe_reader_close(r);
  tbe_reader *r2;
  assert_int_equal(tbe_reader_open(&r2, "/nonexistent/dir", 0, NULL), -ENOENT);
  assert_int_equal(tbe_reader_open(&r2, NULL, 0, NULL), TBE_EINVAL);
  assert_int_equal(tbe_reader_next(NULL, &ev), TBE_EINVAL);
  tbe_reader_close(NULL);
  free(d);
  tu_rmrf(dir);
  free(a);
  free(b);
  free(c);
  free(other);
  free(dir);
}

/* ---- round trips ---- */

static void test_roundtrip_all(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  tbe_writer *w;
  assert_int_equal(tbe_writer_open(&w, dir, NULL), 0);
  const float edge[] = {NAN, INFINITY, -INFINITY, 1e-30f, 3.4e38f, -0.0f, 0.0f, -1.5f};
  const double edged[] = {NAN, INFINITY, -INFINITY, 1e-30, 3.4e38, -0.0, 0.0, -1.5};
  const int64_t steps[] = {5, 3, 9, -1, INT64_MAX, 0, INT64_MIN, 7};
  const char *utag = "损失/训练 é 🎉";
  for (int i = 0; i < 8; i++)
    assert_int_equal(tbe_writer_add_scalar(w, utag, edged[i], steps[i], 1700000000.25 + i), 0);
  enum { NH = 200000 };
  double *hv = malloc(NH * sizeof *hv);
  for (int i = 0; i < NH; i++) hv[i] = sin(i * 0.001) * (1 + i % 7) * 1e3;
  assert_int_equal(tbe_writer_add_histogram(w, "big", hv, NH, 1, 1700000000.0), 0);
  const double lim[3] = {-1, 0, 1}, cnt[3] = {0, 4, 5};
  assert_int_equal(tbe_writer_add_histogram_raw(w, "raw", -0.5, 0.9, 9, 2, 3, lim, cnt, 3, 2, 1700000000.0), 0);
  assert_int_equal(tbe_writer_add_text(w, "notes", "# Überschrift\n\n*x*", 3, 1700000000.0), 0);
  uint8_t labels[10];
  float preds[10];
  for (int i = 0; i < 10; i++) {
    labels[i] = (uint8_t)(i & 1);
    preds[i] = (float)i / 9.0f;
  }
  assert_int_equal(tbe_writer_add_pr_curve(w, "pr", labels, preds, 10, 11, 4, 1700000000.0), 0);
  const char *mt[] = {"a.*"};
  const char *mg[] = {"v", "lo", "hi", "v2", "lo2", "hi2"};
  tbe_chart charts[2] = {{"multi", 0, mt, 1}, {"margin", 1, mg, 6}};
  tbe_category cats[2] = {{"A", charts, 1, 1}, {"B", charts + 1, 1, 0}};
  assert_int_equal(tbe_writer_set_custom_scalars_layout(w, cats, 2), 0);
  Tensorboard__SessionLog sl = TENSORBOARD__SESSION_LOG__INIT;
  sl.status = TENSORBOARD__SESSION_LOG__SESSION_STATUS__START;
  Tensorboard__Event raw = TENSORBOARD__EVENT__INIT;
  raw.wall_time = 1700000001.0;
  raw.step = 42;
  raw.what_case = TENSORBOARD__EVENT__WHAT_SESSION_LOG;
  raw.session_log = &sl;
  uint8_t rawbuf[64];
  size_t rawlen = tensorboard__event__pack(&raw, rawbuf);
  assert_int_equal(tbe_writer_write_event(w, rawbuf, rawlen), 0);
  double before = (double)time(NULL);
  assert_int_equal(tbe_writer_add_scalar(w, "now", 1, 0, TBE_WALL_NOW), 0);
  tbe_hparam hp[2] = {{"flag", TBE_HPARAM_BOOL, 0, NULL, 1}, {"name", TBE_HPARAM_STRING, 0, "x", 0}};
  tbe_metric m = {"m", 0.5};
  assert_int_equal(tbe_writer_add_hparams(w, hp, 2, &m, 1, "trial-1", 0, 1700000000.0), 0);
  assert_int_equal(tbe_writer_close(w), 0);

  tbe_reader *r;
  assert_int_equal(tbe_reader_open(&r, dir, TBE_READER_RECURSIVE, NULL), 0);
  assert_int_equal(tbe_reader_file_count(r), 2);
  const tbe_tb_event *ev;
  assert_int_equal(tbe_reader_next(r, &ev), 1);
  assert_int_equal(ev->kind, TBE_TB_FILE_VERSION);
  for (int i = 0; i < 8; i++) {
    assert_int_equal(tbe_reader_next(r, &ev), 1);
    assert_int_equal(ev->step, steps[i]);
    assert_true(ev->wall_time == 1700000000.25 + i);
    assert_string_equal(ev->values[0].tag, utag);
    float got = ev->values[0].simple_value;
    if (isnan(edge[i]))
      assert_true(isnan(got));
    else
      assert_memory_equal(&got, &edge[i], 4); /* bit-exact, -0.0 included */
  }
  assert_int_equal(tbe_reader_next(r, &ev), 1);
  const tbe_summary_value *v = &ev->values[0];
  assert_int_equal(v->type, TBE_VALUE_HISTO);
  assert_true(v->histo.num == NH);
  double total = 0, mn = hv[0], mx = hv[0];
  for (int i = 0; i < NH; i++) {
    mn = hv[i] < mn ? hv[i] : mn;
    mx = hv[i] > mx ? hv[i] : mx;
  }
  for (size_t b = 0; b < v->histo.nbuckets; b++) total += v->histo.bucket[b];
  assert_true(total == NH);
  assert_true(v->histo.min == mn && v->histo.max == mx);
  assert_true(v->histo.bucket_limit[0] <= mn && v->histo.bucket_limit[v->histo.nbuckets - 1] >= mx);
  assert_int_equal(tbe_reader_next(r, &ev), 1);
  v = &ev->values[0];
  assert_int_equal(v->histo.nbuckets, 3);
  assert_true(v->histo.bucket[2] == 5 && v->histo.bucket_limit[0] == -1 && v->histo.sum_squares == 3);
  assert_int_equal(tbe_reader_next(r, &ev), 1);
  v = &ev->values[0];
  assert_string_equal(v->tag, "notes/text_summary");
  assert_string_equal(v->plugin_name, "text");
  assert_int_equal(v->tensor.rank, 1);
  assert_int_equal(v->tensor.shape[0], 1);
  assert_int_equal(v->tensor.strings[0].size, strlen("# Überschrift\n\n*x*"));
  assert_int_equal(tbe_reader_next(r, &ev), 1);
  v = &ev->values[0];
  assert_string_equal(v->plugin_name, "pr_curves");
  assert_int_equal(v->tensor.shape[1], 11);
  Tensorboard__PrCurvePluginData *pd =
      tensorboard__pr_curve_plugin_data__unpack(NULL, v->plugin_content.size, v->plugin_content.data);
  assert_non_null(pd);
  assert_int_equal(pd->num_thresholds, 11);
  tensorboard__pr_curve_plugin_data__free_unpacked(pd, NULL);
  assert_true(v->tensor.floats[0] == 5.0f && v->tensor.floats[11] == 5.0f); /* TP, FP at 0 */
  assert_true(v->tensor.floats[5 * 11] == 1.0f);                            /* recall at 0 */
  assert_int_equal(tbe_reader_next(r, &ev), 1);
  v = &ev->values[0];
  assert_string_equal(v->tag, "custom_scalars__config__");
  Tensorboard__Layout *l =
      tensorboard__layout__unpack(NULL, v->tensor.strings[0].size, v->tensor.strings[0].data);
  assert_non_null(l);
  assert_int_equal(l->n_category, 2);
  assert_true(l->category[0]->closed);
  assert_int_equal(l->category[1]->chart[0]->content_case, TENSORBOARD__CHART__CONTENT_MARGIN);
  assert_int_equal(l->category[1]->chart[0]->margin->n_series, 2);
  assert_string_equal(l->category[1]->chart[0]->margin->series[1]->upper, "hi2");
  tensorboard__layout__free_unpacked(l, NULL);
  assert_int_equal(tbe_reader_next(r, &ev), 1);
  assert_int_equal(ev->kind, TBE_TB_SESSION_LOG);
  assert_int_equal(ev->session_status, 1);
  assert_int_equal(ev->record.size, rawlen);
  assert_memory_equal(ev->record.data, rawbuf, rawlen);
  assert_int_equal(tbe_reader_next(r, &ev), 1);
  assert_true(ev->wall_time >= before && ev->wall_time < before + 60);
  assert_int_equal(tbe_reader_next(r, &ev), 1);
  assert_string_equal(ev->run, "trial-1");
  assert_int_equal(ev->kind, TBE_TB_FILE_VERSION);
  const char *hpt[] = {"_hparams_/experiment", "_hparams_/session_start_info",
                       "_hparams_/session_end_info", "m"};
  for (int i = 0; i < 4; i++) {
    assert_int_equal(tbe_reader_next(r, &ev), 1);
    assert_string_equal(ev->values[0].tag, hpt[i]);
  }
  assert_true(ev->values[0].simple_value == 0.5f);
  assert_int_equal(tbe_reader_next(r, &ev), 0);
  tbe_reader_close(r);
  free(hv);
  tu_rmrf(dir);
  free(dir);
}

/* ---- robustness: mutated records with valid framing ---- */

static uint64_t rs = 0x243F6A8885A308D3ull;
static uint32_t rnd32(void) {
  rs ^= rs << 13;
  rs ^= rs >> 7;
  rs ^= rs << 17;
  return (uint32_t)(rs >> 11);
}

/* Takes every record of the golden run1 files, damages its Event bytes
 * (flips, inserted/deleted bytes, truncation), frames it with correct CRCs
 * and reads it back: the reader must return an event or TBE_EPARSE, never
 * crash; every view it builds must be self-consistent. */
static void test_mutated_events(void **state) {
  (void)state;
  const char *files[] = {"tensorboard/run1/events.out.tfevents.1796205392.vm.580.0.golden",
                         HP_FILE, SCALARS_ONLY};
  char *dir = tu_mkdtemp();
  char *path = tu_join(dir, "events.out.tfevents.mut");
  tbe_allocator a;
  tbe__allocator_init(&a, NULL);
  int parsed = 0, rejected = 0;
  for (size_t fi = 0; fi < 3; fi++) {
    size_t n;
    uint8_t *d = tu_read_file(tu_data(files[fi]), &n);
    assert_non_null(d);
    size_t bounds[256];
    size_t nrec = count_records(d, n, bounds);
    for (size_t ri = 0; ri < nrec; ri++) {
      const uint8_t *ev = d + bounds[ri] + 12;
      size_t len = bounds[ri + 1] - bounds[ri] - 16;
      for (int trial = 0; trial < 40; trial++) {
        uint8_t *m = malloc(len + 8);
        memcpy(m, ev, len);
        size_t ml = len;
        int kind = (int)(rnd32() % 4);
        if (kind == 0 || ml == 0) {
          for (int k = 0; k < 1 + (int)(rnd32() % 3) && ml; k++) m[rnd32() % ml] ^= (uint8_t)(1 + rnd32() % 255);
        } else if (kind == 1) {
          ml = rnd32() % ml;
        } else if (kind == 2) {
          size_t at = rnd32() % (ml + 1);
          memmove(m + at + 1, m + at, ml - at);
          m[at] = (uint8_t)rnd32();
          ml++;
        } else {
          size_t at = rnd32() % ml;
          memmove(m + at, m + at + 1, ml - at - 1);
          ml--;
        }
        tbe__buf b;
        tbe__buf_init(&b, &a);
        tbe__tfr_append(&b, m, ml);
        assert_int_equal(tu_write_file(path, b.data, b.len), 0);
        tbe__buf_deinit(&b);
        free(m);
        tbe_reader *r;
        assert_int_equal(tbe_reader_open(&r, path, 0, NULL), 0);
        const tbe_tb_event *e;
        int rc = tbe_reader_next(r, &e);
        if (rc == 1) {
          parsed++;
          assert_int_equal(e->record.size, ml);
          for (size_t i = 0; i < e->nvalues; i++) {
            const tbe_summary_value *v = &e->values[i];
            assert_non_null(v->tag);
            assert_non_null(v->plugin_name);
            /* touch every element the view claims to have */
            volatile double sink = 0;
            for (size_t k = 0; k < v->tensor.nfloats; k++) sink += v->tensor.floats[k];
            for (size_t k = 0; k < v->tensor.ndoubles; k++) sink += v->tensor.doubles[k];
            for (size_t k = 0; k < v->tensor.nints; k++) sink += (double)v->tensor.ints[k];
            for (size_t k = 0; k < v->tensor.nstrings; k++)
              if (v->tensor.strings[k].size) sink += v->tensor.strings[k].data[0];
            for (size_t k = 0; k < v->tensor.rank; k++) sink += (double)v->tensor.shape[k];
            for (size_t k = 0; k < v->histo.nbuckets; k++)
              sink += v->histo.bucket[k] + v->histo.bucket_limit[k];
            if (v->image.encoded.size) sink += v->image.encoded.data[v->image.encoded.size - 1];
            (void)sink;
          }
          assert_int_equal(tbe_reader_next(r, &e), 0);
        } else {
          assert_int_equal(rc, TBE_EPARSE);
          rejected++;
        }
        tbe_reader_close(r);
      }
    }
    free(d);
  }
  assert_true(parsed > 0 && rejected > 0);
  tu_rmrf(dir);
  free(path);
  free(dir);
}

/* Random bytes as a file: no crash, only the documented results. */
static void test_random_files(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  char *path = tu_join(dir, "events.out.tfevents.rnd");
  uint8_t buf[512];
  for (int trial = 0; trial < 1500; trial++) {
    size_t n = rnd32() % sizeof buf;
    for (size_t i = 0; i < n; i++) buf[i] = (uint8_t)rnd32();
    if (n >= 12 && trial % 2) { /* a valid header sometimes, so the data CRC path runs */
      size_t dl = rnd32() % (n - 11);
      tbe__tfr_header(buf, dl);
    }
    assert_int_equal(tu_write_file(path, buf, n), 0);
    tbe_reader *r;
    assert_int_equal(tbe_reader_open(&r, path, 0, NULL), 0);
    const tbe_tb_event *e;
    int rc, guard = 0;
    while ((rc = tbe_reader_next(r, &e)) != 0 && guard++ < 100)
      assert_true(rc == 1 || rc == TBE_ETRUNCATED || rc == TBE_ECHECKSUM || rc == TBE_EPARSE);
    tbe_reader_close(r);
  }
  tu_rmrf(dir);
  free(path);
  free(dir);
}

/* ---- allocation failures ---- */


/* Reading the golden log directory with the n-th allocation failing, for
 * every n: TBE_ENOMEM somewhere, never a crash or a leak. */
static void test_alloc_failures(void **state) {
  (void)state;
  int done = 0;
  for (long n = 0; !done && n < 20000; n += (n < 200 ? 1 : 37)) {
    tu_failalloc f;
    tbe_allocator a = tu_failalloc_init(&f, n);
    tbe_reader *r;
    int rc = tbe_reader_open(&r, tu_data(RUN1), TBE_READER_RECURSIVE, &a);
    if (rc == 0) {
      const tbe_tb_event *ev;
      int events = 0, failed = 0;
      while ((rc = tbe_reader_next(r, &ev)) != 0) {
        if (rc == 1)
          events++;
        else {
          assert_int_equal(rc, TBE_ENOMEM);
          failed = 1;
          break;
        }
      }
      tbe_reader_close(r);
      if (!failed) {
        assert_int_equal(events, 115);
        done = 1;
      }
    } else {
      assert_int_equal(rc, TBE_ENOMEM);
    }
    assert_int_equal(f.live, 0);
  }
  assert_true(done);
}

int main(void) {
  /* thousands of small scratch files: keep them in memory when we can
   * (an explicit TMPDIR wins) */
  if (access("/dev/shm", W_OK) == 0) setenv("TMPDIR", "/dev/shm", 0);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_golden_run1),
      cmocka_unit_test(test_golden_scalars_only),
      cmocka_unit_test(test_every_cut_point),
      cmocka_unit_test(test_every_flipped_bit),
      cmocka_unit_test(test_parse_error),
      cmocka_unit_test(test_tail_follow),
      cmocka_unit_test(test_directory_damage),
      cmocka_unit_test(test_roundtrip_all),
      cmocka_unit_test(test_mutated_events),
      cmocka_unit_test(test_random_files),
      cmocka_unit_test(test_alloc_failures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
