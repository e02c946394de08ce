/* test_writer.c: the event writer against TensorBoard's own files, the
 * hand-encoded scalar against protobuf-c, bad input, sticky errors,
 * bounded-delay flushing, concurrent writers, and fork(): what the parent
 * buffered is written once, by the parent, whatever the child does (exits,
 * closes, writes, or forks while another thread holds the writer's lock). */
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

#include "common/alloc.h"
#include "events/event_enc.h"
#include "events/histo.h"
#include "events/tfrecord.h"
#include "events/writer_internal.h"
#include "tbexport.h"
#include "tensorboard/event.pb-c.h"
#include "tensorboard/summary.pb-c.h"
#include "testutil.h"

/* ---- helpers ---- */

typedef struct recs {
  uint8_t *file;
  size_t size;
  size_t n;
  size_t off[4096];
  size_t len[4096]; /* data length */
} recs;

/* Splits a whole file into records (asserting the framing is intact). */
static void split(const char *path, recs *r) {
  memset(r, 0, sizeof *r);
  r->file = tu_read_file(path, &r->size);
  assert_non_null(r->file);
  size_t o = 0;
  while (o < r->size) {
    uint64_t len;
    uint32_t g, wnt;
    assert_int_equal(tbe__tfr_check(r->file + o, r->size - o, &len, &g, &wnt), TBE__TFR_OK);
    assert_true(r->n < 4096);
    r->off[r->n] = o;
    r->len[r->n] = (size_t)len;
    r->n++;
    o += (size_t)len + 16;
  }
}

static const uint8_t *rdata(const recs *r, size_t i) { return r->file + r->off[i] + 12; }

/* The only event file in `dir` (asserted). */
static char *only_file(const char *dir) {
  tbe_reader *rd;
  assert_int_equal(tbe_reader_open(&rd, dir, 0, NULL), 0);
  assert_int_equal(tbe_reader_file_count(rd), 1);
  const tbe_tb_event *ev;
  assert_int_equal(tbe_reader_next(rd, &ev), 1);
  char *p = strdup(ev->path);
  tbe_reader_close(rd);
  return p;
}

static tbe_writer *open_w(const char *dir, double interval) {
  tbe_writer_options o;
  tbe_writer_options_init(&o);
  o.flush_interval_s = interval;
  tbe_writer *w = NULL;
  assert_int_equal(tbe_writer_open(&w, dir, &o), 0);
  return w;
}

/* ---- golden comparisons ---- */

static void test_golden_scalars_bytes(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  tbe_writer *w = open_w(dir, 1.0);
  for (int s = 0; s < 5; s++)
    assert_int_equal(tbe_writer_add_scalar(w, "x", 0.5 * s, s, 1700000000.0 + s), 0);
  char *path = strdup(tbe_writer_path(w));
  assert_int_equal(tbe_writer_close(w), 0);
  recs *ours = malloc(sizeof *ours), *gold = malloc(sizeof *gold);
  split(path, ours);
  split(tu_data("tensorboard/scalars_only/events.out.tfevents.1796205392.vm.580.4.golden"), gold);
  assert_int_equal(ours->n, 6);
  assert_int_equal(gold->n, 6);
  /* records 2..N byte for byte (framing included) */
  size_t o1 = ours->off[1], g1 = gold->off[1];
  assert_int_equal(ours->size - o1, gold->size - g1);
  assert_memory_equal(ours->file + o1, gold->file + g1, gold->size - g1);
  /* the first record: file_version and our writer name */
  Tensorboard__Event *ev = tensorboard__event__unpack(NULL, ours->len[0], rdata(ours, 0));
  assert_non_null(ev);
  assert_int_equal(ev->what_case, TENSORBOARD__EVENT__WHAT_FILE_VERSION);
  assert_string_equal(ev->file_version, "brain.Event:2");
  assert_non_null(ev->source_metadata);
  assert_non_null(strstr(ev->source_metadata->writer, "tbexport"));
  assert_true(ev->wall_time > 1.6e9);
  tensorboard__event__free_unpacked(ev, NULL);
  free(ours->file);
  free(gold->file);
  free(ours);
  free(gold);
  free(path);
  tu_rmrf(dir);
  free(dir);
}

/* Finds the record of golden run1 whose first value has `tag`. */
static int find_tag(const recs *r, const char *tag, Tensorboard__Event **out) {
  for (size_t i = 0; i < r->n; i++) {
    Tensorboard__Event *ev = tensorboard__event__unpack(NULL, r->len[i], rdata(r, i));
    assert_non_null(ev);
    if (ev->what_case == TENSORBOARD__EVENT__WHAT_SUMMARY && ev->summary->n_value &&
        strcmp(ev->summary->value[0]->tag, tag) == 0) {
      *out = ev;
      return (int)i;
    }
    tensorboard__event__free_unpacked(ev, NULL);
  }
  return -1;
}

/* text, PR curve, custom scalars layout and histogram against torch's
 * SummaryWriter output in golden run1. */
static void test_golden_run1(void **state) {
  (void)state;
  recs *gold = malloc(sizeof *gold), *ours = malloc(sizeof *ours);
  split(tu_data("tensorboard/run1/events.out.tfevents.1796205392.vm.580.0.golden"), gold);
  Tensorboard__Event *gt, *gp, *gc, *gh;
  int it = find_tag(gold, "notes/text_summary", &gt);
  int ip = find_tag(gold, "pr", &gp);
  int ic = find_tag(gold, "custom_scalars__config__", &gc);
  int ih = find_tag(gold, "weights", &gh);
  assert_true(it > 0 && ip > 0 && ic > 0 && ih > 0);

  char *dir = tu_mkdtemp();
  tbe_writer *w = open_w(dir, 1.0);
  assert_int_equal(tbe_writer_add_text(w, "notes", "hello **tb**", gt->step, gt->wall_time), 0);
  const uint8_t labels[5] = {0, 1, 1, 0, 1};
  const float preds[5] = {.1f, .9f, .8f, .3f, .6f};
  assert_int_equal(tbe_writer_add_pr_curve(w, "pr", labels, preds, 5, 0, gp->step, gp->wall_time),
                   0);
  const char *tags[] = {"loss/train"};
  tbe_chart chart = {"loss", 0, tags, 1};
  tbe_category cat = {"Train", &chart, 1, 0};
  assert_int_equal(tbe_writer_set_custom_scalars_layout(w, &cat, 1), 0);
  /* torch.linspace(-1, 1, 1000) in float32, as torch computes it */
  double *vals = malloc(1000 * sizeof *vals);
  float step = 2.0f / 999.0f;
  for (int i = 0; i < 1000; i++)
    vals[i] = i < 500 ? (double)(-1.0f + step * (float)i) : (double)(1.0f - step * (float)(999 - i));
  assert_int_equal(tbe_writer_add_histogram(w, "weights", vals, 1000, gh->step, gh->wall_time), 0);
  free(vals);
  char *path = strdup(tbe_writer_path(w));
  assert_int_equal(tbe_writer_close(w), 0);
  split(path, ours);
  assert_int_equal(ours->n, 5);
  /* text and PR curve: the whole record equals torch's */
  assert_int_equal(ours->len[1], gold->len[it]);
  assert_memory_equal(rdata(ours, 1), rdata(gold, it), gold->len[it]);
  assert_int_equal(ours->len[2], gold->len[ip]);
  assert_memory_equal(rdata(ours, 2), rdata(gold, ip), gold->len[ip]);
  /* layout: equal after the 9-byte wall_time field (torch used the clock) */
  assert_int_equal(ours->len[3], gold->len[ic]);
  assert_memory_equal(rdata(ours, 3) + 9, rdata(gold, ic) + 9, gold->len[ic] - 9);
  /* histogram: same buckets; min/max/num exact */
  Tensorboard__Event *oh = tensorboard__event__unpack(NULL, ours->len[4], rdata(ours, 4));
  assert_non_null(oh);
  const Tensorboard__HistogramProto *a = oh->summary->value[0]->histo, *b = gh->summary->value[0]->histo;
  assert_int_equal(a->n_bucket, b->n_bucket);
  assert_int_equal(a->n_bucket_limit, b->n_bucket_limit);
  for (size_t i = 0; i < a->n_bucket; i++) {
    assert_true(a->bucket_limit[i] == b->bucket_limit[i]);
    assert_true(a->bucket[i] == b->bucket[i]);
  }
  assert_true(a->min == b->min && a->max == b->max && a->num == b->num);
  assert_true(fabs(a->sum - b->sum) < 1e-9);
  /* our linspace differs from torch's in the last float bits */
  assert_true(fabs(a->sum_squares - b->sum_squares) < 1e-6 * b->sum_squares);
  tensorboard__event__free_unpacked(oh, NULL);
  tensorboard__event__free_unpacked(gt, NULL);
  tensorboard__event__free_unpacked(gp, NULL);
  tensorboard__event__free_unpacked(gc, NULL);
  tensorboard__event__free_unpacked(gh, NULL);
  free(path);
  free(ours->file);
  free(gold->file);
  free(ours);
  free(gold);
  tu_rmrf(dir);
  free(dir);
}

/* hparams against torch's sub-run in golden run1/hp. */
static void test_golden_hparams(void **state) {
  (void)state;
  recs *gold = malloc(sizeof *gold), *ours = malloc(sizeof *ours);
  split(tu_data("tensorboard/run1/hp/events.out.tfevents.1796205392.vm.580.3"), gold);
  assert_int_equal(gold->n, 5);
  char *dir = tu_mkdtemp();
  tbe_writer *w = open_w(dir, 1.0);
  tbe_hparam hp[3] = {{"lr", TBE_HPARAM_NUMBER, 0.1, NULL, 0},
                      {"bs", TBE_HPARAM_NUMBER, 32, NULL, 0},
                      {"opt", TBE_HPARAM_STRING, 0, "sgd", 0}};
  tbe_metric m = {"hparam/acc", 0.9};
  assert_int_equal(tbe_writer_add_hparams(w, hp, 3, &m, 1, "hp", 0, 1700000000.0), 0);
  assert_int_equal(tbe_writer_close(w), 0);
  char *sub = tu_join(dir, "hp");
  char *path = only_file(sub);
  split(path, ours);
  assert_int_equal(ours->n, 5);
  /* experiment, session end and the metric: equal after wall_time */
  size_t same[3] = {1, 3, 4};
  for (int k = 0; k < 3; k++) {
    size_t i = same[k];
    assert_int_equal(ours->len[i], gold->len[i]);
    assert_memory_equal(rdata(ours, i) + 9, rdata(gold, i) + 9, gold->len[i] - 9);
  }
  /* session start: same length (its map order is Python's, not ours) */
  assert_int_equal(ours->len[2], gold->len[2]);
  tbe_hparam hp2[3] = {hp[2], hp[1], hp[0]};
  char *dir2 = tu_mkdtemp();
  w = open_w(dir2, 1.0);
  assert_int_equal(tbe_writer_add_hparams(w, hp2, 3, &m, 1, "hp", 0, 1700000000.0), 0);
  assert_int_equal(tbe_writer_close(w), 0);
  char *sub2 = tu_join(dir2, "hp");
  char *path2 = only_file(sub2);
  free(ours->file);
  split(path2, ours);
  assert_memory_equal(rdata(ours, 2) + 9, rdata(gold, 2) + 9, gold->len[2] - 9);
  free(ours->file);
  free(gold->file);
  free(ours);
  free(gold);
  free(path);
  free(path2);
  free(sub);
  free(sub2);
  tu_rmrf(dir);
  tu_rmrf(dir2);
  free(dir);
  free(dir2);
}

/* ---- the hand-written scalar encoder equals protobuf-c ---- */

static void test_scalar_encoder_matches_protobuf_c(void **state) {
  (void)state;
  const double walls[] = {0.0, -0.0, 1700000000.0, 1700000000.123456, 1e-300, 4e9};
  const int64_t steps[] = {0, 1, 127, 128, 16383, 16384, -1, INT64_MIN, INT64_MAX, 1ll << 40};
  const float values[] = {0.0f, -0.0f, 1.0f, NAN, INFINITY, -INFINITY, 1e-30f, 3.4e38f, 1e-45f};
  size_t taglens[] = {1, 5, 100, 116, 117, 118, 125, 126, 127, 128, 200, 16000, 20000};
  char *tag = malloc(20001);
  uint8_t *mine = malloc(21000), *theirs = malloc(21000);
  for (size_t ti = 0; ti < sizeof taglens / sizeof taglens[0]; ti++) {
    size_t tl = taglens[ti];
    for (size_t i = 0; i < tl; i++) tag[i] = (char)('a' + i % 26);
    tag[tl] = 0;
    for (size_t wi = 0; wi < sizeof walls / sizeof walls[0]; wi++)
      for (size_t si = 0; si < sizeof steps / sizeof steps[0]; si++)
        for (size_t vi = 0; vi < sizeof values / sizeof values[0]; vi++) {
          size_t n = tbe__encode_scalar_event(mine, walls[wi], steps[si], tag, tl, values[vi]);
          assert_true(n <= tbe__scalar_event_max(tl));
          Tensorboard__Summary__Value v = TENSORBOARD__SUMMARY__VALUE__INIT;
          v.tag = tag;
          v.value_case = TENSORBOARD__SUMMARY__VALUE__VALUE_SIMPLE_VALUE;
          v.simple_value = values[vi];
          Tensorboard__Summary__Value *pv = &v;
          Tensorboard__Summary s = TENSORBOARD__SUMMARY__INIT;
          s.n_value = 1;
          s.value = &pv;
          Tensorboard__Event ev = TENSORBOARD__EVENT__INIT;
          ev.wall_time = walls[wi];
          ev.step = steps[si];
          ev.what_case = TENSORBOARD__EVENT__WHAT_SUMMARY;
          ev.summary = &s;
          size_t m = tensorboard__event__pack(&ev, theirs);
          assert_int_equal(n, m);
          assert_memory_equal(mine, theirs, n);
        }
  }
  free(tag);
  free(mine);
  free(theirs);
}

/* ---- file naming ---- */

static void test_file_names_unique(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  char *sub = tu_join(dir, "a/b/c"); /* created with parents */
  regex_t re;
  assert_int_equal(regcomp(&re, "/events\\.out\\.tfevents\\.[0-9]{10}\\.[^/.]+\\.[0-9]+\\.[0-9]+\\.v2$",
                           REG_EXTENDED | REG_NOSUB),
                   0);
  enum { N = 40 };
  tbe_writer *ws[N];
  tbe_writer_options o;
  tbe_writer_options_init(&o);
  o.filename_suffix = ".v2";
  for (int i = 0; i < N; i++) assert_int_equal(tbe_writer_open(&ws[i], sub, &o), 0);
  for (int i = 0; i < N; i++) {
    assert_int_equal(regexec(&re, tbe_writer_path(ws[i]), 0, NULL, 0), 0);
    for (int j = 0; j < i; j++) assert_string_not_equal(tbe_writer_path(ws[i]), tbe_writer_path(ws[j]));
    struct stat st;
    assert_int_equal(stat(tbe_writer_path(ws[i]), &st), 0);
    assert_int_equal(st.st_mode & 0022, 0); /* no group/other write */
  }
  for (int i = 0; i < N; i++) assert_int_equal(tbe_writer_close(ws[i]), 0);
  tbe_reader *r;
  assert_int_equal(tbe_reader_open(&r, sub, 0, NULL), 0);
  assert_int_equal(tbe_reader_file_count(r), N);
  tbe_reader_close(r);
  /* a host name given explicitly; a bad one is refused */
  o.host = "myhost";
  tbe_writer *w;
  assert_int_equal(tbe_writer_open(&w, sub, &o), 0);
  assert_non_null(strstr(tbe_writer_path(w), ".myhost."));
  assert_int_equal(tbe_writer_close(w), 0);
  o.host = "a/b";
  assert_int_equal(tbe_writer_open(&w, sub, &o), TBE_ENAME);
  o.host = NULL;
  o.filename_suffix = "/x";
  assert_int_equal(tbe_writer_open(&w, sub, &o), TBE_ENAME);
  regfree(&re);
  tu_rmrf(dir);
  free(sub);
  free(dir);
}

/* ---- bad input ---- */

static void test_bad_input(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  tbe_writer *w = open_w(dir, 1.0);
  double v[3] = {1, 2, 3};
  uint8_t px[12] = {0};
  uint8_t lab[2] = {0, 1};
  float pr[2] = {0.2f, 0.8f}, badpr[2] = {0.2f, 1.5f}, nanpr[2] = {NAN, 0.5f};
  assert_int_equal(tbe_writer_open(NULL, dir, NULL), TBE_EINVAL);
  tbe_writer *x;
  assert_int_equal(tbe_writer_open(&x, NULL, NULL), TBE_EINVAL);
  assert_int_equal(tbe_writer_open(&x, "", NULL), TBE_EINVAL);
  assert_int_equal(tbe_writer_add_scalar(NULL, "t", 1, 0, 1), TBE_EINVAL);
  assert_int_equal(tbe_writer_add_scalar(w, NULL, 1, 0, 1), TBE_EINVAL);
  assert_int_equal(tbe_writer_add_scalar(w, "", 1, 0, 1), TBE_EINVAL);
  assert_int_equal(tbe_writer_add_scalar(w, "bad\xff", 1, 0, 1), TBE_EUTF8);
  assert_int_equal(tbe_writer_add_scalar(w, "over\xc0\xaf", 1, 0, 1), TBE_EUTF8);
  assert_int_equal(tbe_writer_add_scalar(w, "t", 1, 0, NAN), TBE_EINVAL);
  assert_int_equal(tbe_writer_add_scalar(w, "t", 1, 0, INFINITY), TBE_EINVAL);
  assert_int_equal(tbe_writer_add_histogram(w, "h", v, 0, 0, 1), TBE_EINVAL);
  assert_int_equal(tbe_writer_add_histogram(w, "h", NULL, 3, 0, 1), TBE_EINVAL);
  double nanv[2] = {1, NAN};
  assert_int_equal(tbe_writer_add_histogram(w, "h", nanv, 2, 0, 1), TBE_EINVAL);
  double lim[2] = {2, 1}, cnt[2] = {1, 1};
  assert_int_equal(tbe_writer_add_histogram_raw(w, "h", 0, 1, 2, 1, 1, lim, cnt, 2, 0, 1), TBE_EINVAL);
  assert_int_equal(tbe_writer_add_histogram_raw(w, "h", 0, 1, 2, 1, 1, lim, cnt, 0, 0, 1), TBE_EINVAL);
  assert_int_equal(tbe_writer_add_text(w, "t", NULL, 0, 1), TBE_EINVAL);
  assert_int_equal(tbe_writer_add_text(w, "t", "\xfe", 0, 1), TBE_EUTF8);
  assert_int_equal(tbe_writer_add_image(w, "i", px, 12, 2, 2, 3, 0, 1), 0);
  assert_int_equal(tbe_writer_add_image(w, "i", px, 11, 2, 2, 3, 0, 1), TBE_EINVAL);
  assert_int_equal(tbe_writer_add_image(w, "i", px, 12, 2, 2, 5, 0, 1), TBE_EINVAL);
  assert_int_equal(tbe_writer_add_image(w, "i", px, 12, 0, 2, 3, 0, 1), TBE_EINVAL);
  assert_int_equal(tbe_writer_add_image(w, "i", px, 12, -2, -2, 3, 0, 1), TBE_EINVAL);
  assert_int_equal(tbe_writer_add_image(w, "i", NULL, 12, 2, 2, 3, 0, 1), TBE_EINVAL);
  assert_int_equal(tbe_writer_add_pr_curve(w, "p", lab, pr, 0, 0, 0, 1), TBE_EINVAL);
  assert_int_equal(tbe_writer_add_pr_curve(w, "p", lab, badpr, 2, 0, 0, 1), TBE_EINVAL);
  assert_int_equal(tbe_writer_add_pr_curve(w, "p", lab, nanpr, 2, 0, 0, 1), TBE_EINVAL);
  assert_int_equal(tbe_writer_add_pr_curve(w, "p", lab, pr, 2, 1, 0, 1), TBE_EINVAL);
  tbe_hparam hp = {"lr", TBE_HPARAM_STRING, 0, NULL, 0};
  assert_int_equal(tbe_writer_add_hparams(w, &hp, 1, NULL, 0, "s", 0, 1), TBE_EINVAL);
  assert_int_equal(tbe_writer_add_hparams(w, NULL, 0, NULL, 0, "s", 0, 1), TBE_EINVAL);
  hp.type = TBE_HPARAM_NUMBER;
  assert_int_equal(tbe_writer_add_hparams(w, &hp, 1, NULL, 0, "../escape", 0, 1), TBE_ENAME);
  assert_int_equal(tbe_writer_set_custom_scalars_layout(w, NULL, 1), TBE_EINVAL);
  const char *three[] = {"a", "b"};
  tbe_chart ch = {"c", 1, three, 2}; /* margin needs triples */
  tbe_category cat = {"k", &ch, 1, 0};
  assert_int_equal(tbe_writer_set_custom_scalars_layout(w, &cat, 1), TBE_EINVAL);
  assert_int_equal(tbe_writer_write_event(w, "\xff\xff\xff", 3), TBE_EPARSE);
  assert_int_equal(tbe_writer_flush(NULL, 0), TBE_EINVAL);
  assert_string_not_equal(tbe_strerror(TBE_EUTF8), "unknown error");
  /* the writer is still healthy */
  assert_int_equal(tbe_writer_add_scalar(w, "ok", 1, 0, 1), 0);
  /* finished: every call reports it, none crashes */
  assert_int_equal(tbe_writer_finish(w), 0);
  assert_int_equal(tbe_writer_add_scalar(w, "ok", 1, 0, 1), TBE_ECLOSED);
  assert_int_equal(tbe_writer_add_histogram(w, "h", v, 3, 0, 1), TBE_ECLOSED);
  assert_int_equal(tbe_writer_add_text(w, "t", "x", 0, 1), TBE_ECLOSED);
  assert_int_equal(tbe_writer_add_image(w, "i", px, 12, 2, 2, 3, 0, 1), TBE_ECLOSED);
  assert_int_equal(tbe_writer_add_hparams(w, &hp, 1, NULL, 0, "s2", 0, 1), TBE_ECLOSED);
  assert_int_equal(tbe_writer_flush(w, 1), TBE_ECLOSED);
  assert_int_equal(tbe_writer_finish(w), 0);
  assert_int_equal(tbe_writer_close(w), 0);
  assert_int_equal(tbe_writer_close(NULL), 0);
  tu_rmrf(dir);
  free(dir);
}

/* ---- sticky errors: a full disk ---- */

static void test_sticky_enospc(void **state) {
  (void)state;
  int full = open("/dev/full", O_WRONLY);
  if (full < 0) skip();
  char *dir = tu_mkdtemp();
  tbe_writer *w = open_w(dir, 1.0);
  assert_int_equal(tbe__writer_replace_fd(w, full), 0);
  assert_int_equal(tbe_writer_add_scalar(w, "a", 1, 0, 1), 0); /* buffered */
  assert_int_equal(tbe_writer_flush(w, 0), -ENOSPC);
  assert_int_equal(tbe_writer_add_scalar(w, "a", 1, 1, 1), -ENOSPC);
  assert_int_equal(tbe_writer_add_text(w, "t", "x", 1, 1), -ENOSPC);
  assert_int_equal(tbe_writer_flush(w, 1), -ENOSPC);
  assert_int_equal(tbe_writer_close(w), -ENOSPC);
  /* unbuffered: the very call that fails reports it */
  int full2 = open("/dev/full", O_WRONLY);
  w = open_w(dir, 0.0);
  assert_int_equal(tbe__writer_replace_fd(w, full2), 0);
  assert_int_equal(tbe_writer_add_scalar(w, "a", 1, 0, 1), -ENOSPC);
  assert_int_equal(tbe_writer_add_scalar(w, "a", 1, 0, 1), -ENOSPC);
  assert_int_equal(tbe_writer_close(w), -ENOSPC);
  tu_rmrf(dir);
  free(dir);
}

/* ---- buffering and bounded delay ---- */

static size_t file_size(const char *p) {
  struct stat st;
  assert_int_equal(stat(p, &st), 0);
  return (size_t)st.st_size;
}

static void test_bounded_delay(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  tbe_writer *w = open_w(dir, 0.05);
  size_t s0 = file_size(tbe_writer_path(w)); /* file_version is out at once */
  assert_true(s0 > 0);
  assert_int_equal(tbe_writer_add_scalar(w, "a", 1, 0, 1), 0);
  assert_int_equal(file_size(tbe_writer_path(w)), s0); /* buffered */
  usleep(80 * 1000);
  assert_int_equal(tbe_writer_add_scalar(w, "a", 2, 1, 1), 0); /* too old: flushed */
  size_t s1 = file_size(tbe_writer_path(w));
  assert_true(s1 > s0);
  assert_int_equal(tbe_writer_add_scalar(w, "a", 3, 2, 1), 0);
  assert_int_equal(file_size(tbe_writer_path(w)), s1);
  assert_int_equal(tbe_writer_flush(w, 1), 0);
  assert_true(file_size(tbe_writer_path(w)) > s1);
  assert_int_equal(tbe_writer_close(w), 0);
  /* a small buffer forces writes of whole records */
  tbe_writer_options o;
  tbe_writer_options_init(&o);
  o.buffer_size = 100;
  o.durable = 1;
  assert_int_equal(tbe_writer_open(&w, dir, &o), 0);
  size_t b0 = file_size(tbe_writer_path(w));
  for (int i = 1; i <= 10; i++) assert_int_equal(tbe_writer_add_scalar(w, "abc", i, i, 1), 0);
  size_t b1 = file_size(tbe_writer_path(w));
  assert_true(b1 > b0);
  uint8_t one[64];
  size_t evlen = tbe__encode_scalar_event(one, 1, 1, "abc", 3, 1.0f);
  assert_int_equal((b1 - b0) % (16 + evlen), 0); /* whole records only */
  assert_int_equal(tbe_writer_close(w), 0);
  tu_rmrf(dir);
  free(dir);
}

/* ---- threads ---- */

typedef struct targ {
  tbe_writer *w;
  int id;
} targ;

#define PER_THREAD 20000
#define NTHREADS 4

static void *thread_main(void *p) {
  targ *a = p;
  char tag[16];
  snprintf(tag, sizeof tag, "thread%d", a->id);
  for (int i = 0; i < PER_THREAD; i++)
    if (tbe_writer_add_scalar(a->w, tag, i, i, 1700000000.0 + i) != 0) return (void *)1;
  return NULL;
}

static void test_threads(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  tbe_writer_options o;
  tbe_writer_options_init(&o);
  o.buffer_size = 4096; /* many flushes while threads append */
  tbe_writer *w;
  assert_int_equal(tbe_writer_open(&w, dir, &o), 0);
  pthread_t th[NTHREADS];
  targ args[NTHREADS];
  for (int i = 0; i < NTHREADS; i++) {
    args[i].w = w;
    args[i].id = i;
    assert_int_equal(pthread_create(&th[i], NULL, thread_main, &args[i]), 0);
  }
  for (int i = 0; i < NTHREADS; i++) {
    void *ret;
    pthread_join(th[i], &ret);
    assert_null(ret);
  }
  assert_int_equal(tbe_writer_close(w), 0);
  tbe_reader *r;
  assert_int_equal(tbe_reader_open(&r, dir, 0, NULL), 0);
  int next[NTHREADS] = {0};
  const tbe_tb_event *ev;
  int rc, total = 0;
  while ((rc = tbe_reader_next(r, &ev)) == 1) {
    if (ev->kind != TBE_TB_SUMMARY) continue;
    assert_int_equal(ev->nvalues, 1);
    int id = ev->values[0].tag[6] - '0';
    assert_true(id >= 0 && id < NTHREADS);
    assert_int_equal(ev->step, next[id]); /* per-thread order kept */
    assert_true(ev->values[0].simple_value == (float)next[id]);
    next[id]++;
    total++;
  }
  assert_int_equal(rc, 0);
  assert_int_equal(total, NTHREADS * PER_THREAD);
  tbe_reader_close(r);
  tu_rmrf(dir);
  free(dir);
}

/* ---- PNG ---- */

/* Decodes our own PNG output (8-bit, non-interlaced, single IDAT or many)
 * and checks the pixels. */
static void check_png(const tbe_bytes *png, const uint8_t *px, int w, int h, int ch) {
  static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  assert_true(png->size > 8 + 25 + 12);
  assert_memory_equal(png->data, sig, 8);
  const uint8_t *p = png->data + 8, *end = png->data + png->size;
  uint8_t *z = malloc(png->size);
  size_t zl = 0;
  int saw_end = 0;
  while (p + 12 <= end) {
    uint32_t len = (uint32_t)p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3];
    assert_true(p + 12 + len <= end);
    uint32_t crc = (uint32_t)p[8 + len] << 24 | p[9 + len] << 16 | p[10 + len] << 8 | p[11 + len];
    assert_int_equal(crc, (uint32_t)crc32(crc32(0, NULL, 0), p + 4, len + 4));
    if (memcmp(p + 4, "IHDR", 4) == 0) {
      const uint8_t *d = p + 8;
      assert_int_equal((uint32_t)d[0] << 24 | d[1] << 16 | d[2] << 8 | d[3], (uint32_t)w);
      assert_int_equal((uint32_t)d[4] << 24 | d[5] << 16 | d[6] << 8 | d[7], (uint32_t)h);
      static const int ct[5] = {0, 0, 4, 2, 6};
      assert_int_equal(d[8], 8);
      assert_int_equal(d[9], ct[ch]);
    } else if (memcmp(p + 4, "IDAT", 4) == 0) {
      memcpy(z + zl, p + 8, len);
      zl += len;
    } else if (memcmp(p + 4, "IEND", 4) == 0) {
      saw_end = 1;
    }
    p += 12 + len;
  }
  assert_true(saw_end);
  size_t stride = (size_t)w * ch;
  uLongf rawlen = (uLongf)((stride + 1) * h);
  uint8_t *raw = malloc(rawlen);
  assert_int_equal(uncompress(raw, &rawlen, z, zl), Z_OK);
  assert_int_equal(rawlen, (stride + 1) * h);
  uint8_t *img = malloc(stride * h);
  for (int y = 0; y < h; y++) {
    uint8_t f = raw[y * (stride + 1)];
    const uint8_t *in = raw + y * (stride + 1) + 1;
    uint8_t *out = img + y * stride;
    const uint8_t *up = y ? out - stride : NULL;
    for (size_t i = 0; i < stride; i++) {
      int a = i >= (size_t)ch ? out[i - ch] : 0, b = up ? up[i] : 0,
          c = (up && i >= (size_t)ch) ? up[i - ch] : 0, pred = 0;
      switch (f) {
        case 0: pred = 0; break;
        case 1: pred = a; break;
        case 2: pred = b; break;
        case 3: pred = (a + b) / 2; break;
        case 4: {
          int pp = a + b - c, pa = abs(pp - a), pb = abs(pp - b), pc = abs(pp - c);
          pred = (pa <= pb && pa <= pc) ? a : (pb <= pc ? b : c);
          break;
        }
        default: fail();
      }
      out[i] = (uint8_t)(in[i] + pred);
    }
  }
  assert_memory_equal(img, px, stride * h);
  free(img);
  free(raw);
  free(z);
}

static void test_images_roundtrip(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  tbe_writer *w = open_w(dir, 1.0);
  int dims[][2] = {{1, 1}, {8, 8}, {37, 5}, {3, 64}, {300, 200}};
  uint64_t s = 12345;
  uint8_t *px[5][4];
  for (int d = 0; d < 5; d++)
    for (int ch = 1; ch <= 4; ch++) {
      size_t n = (size_t)dims[d][0] * dims[d][1] * ch;
      px[d][ch - 1] = malloc(n);
      for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        /* half smooth, half noise, to exercise every filter */
        px[d][ch - 1][i] = (uint8_t)(d % 2 ? (s >> 56) : (i * 7 / (size_t)ch));
      }
      assert_int_equal(tbe_writer_add_image(w, "img", px[d][ch - 1], n, dims[d][0], dims[d][1], ch,
                                            d * 4 + ch, 1),
                       0);
    }
  assert_int_equal(tbe_writer_close(w), 0);
  tbe_reader *r;
  assert_int_equal(tbe_reader_open(&r, dir, 0, NULL), 0);
  const tbe_tb_event *ev;
  int seen = 0;
  while (tbe_reader_next(r, &ev) == 1) {
    if (ev->kind != TBE_TB_SUMMARY) continue;
    const tbe_summary_value *v = &ev->values[0];
    assert_int_equal(v->type, TBE_VALUE_IMAGE);
    assert_string_equal(v->plugin_name, "images");
    int d = (int)(ev->step - 1) / 4, ch = (int)(ev->step - 1) % 4 + 1;
    assert_int_equal(v->image.width, dims[d][0]);
    assert_int_equal(v->image.height, dims[d][1]);
    assert_int_equal(v->image.colorspace, ch);
    check_png(&v->image.encoded, px[d][ch - 1], dims[d][0], dims[d][1], ch);
    seen++;
  }
  assert_int_equal(seen, 20);
  tbe_reader_close(r);
  for (int d = 0; d < 5; d++)
    for (int ch = 0; ch < 4; ch++) free(px[d][ch]);
  tu_rmrf(dir);
  free(dir);
}

/* ---- histogram bucketing ---- */

static void test_histogram_buckets(void **state) {
  (void)state;
  tbe_allocator al;
  tbe__allocator_init(&al, NULL);
  size_t ne;
  const double *e = tbe__histo_default_edges(&ne);
  assert_int_equal(ne, 2 * 774 + 1);
  assert_true(e[774] == 0.0 && e[775] == 1e-12 && e[773] == -1e-12);
  double v[] = {0.0, 1.0, -1.0, 1.0, 5e20, -5e20};
  tbe__histo h;
  assert_int_equal(tbe__histo_default(&al, v, 6, &h), 0);
  double total = 0;
  for (size_t i = 0; i < h.n; i++) {
    total += h.counts[i];
    if (i) assert_true(h.limits[i] > h.limits[i - 1]);
  }
  assert_true(total == 6.0);
  assert_true(h.counts[0] == 0.0);
  assert_true(h.min == -5e20 && h.max == 5e20 && h.num == 6);
  tbe__histo_free(&al, &h);
  /* one value: two buckets, the value counted in (e[j], e[j+1]] style bin */
  double one = 0.5;
  assert_int_equal(tbe__histo_default(&al, &one, 1, &h), 0);
  assert_int_equal(h.n, 2);
  assert_true(h.limits[0] <= 0.5 && h.limits[1] > 0.5 && h.counts[1] == 1.0);
  tbe__histo_free(&al, &h);
  double inf = INFINITY;
  assert_int_equal(tbe__histo_default(&al, &inf, 1, &h), TBE_EINVAL);
}

/* add_hparams without a sub-run name: like torch, the current time. */
static void test_hparams_default_subrun(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  tbe_writer *w = open_w(dir, 1.0);
  tbe_hparam hp = {"x", TBE_HPARAM_BOOL, 0, NULL, 0};
  double before = (double)time(NULL);
  assert_int_equal(tbe_writer_add_hparams(w, &hp, 1, NULL, 0, NULL, 0, TBE_WALL_NOW), 0);
  assert_int_equal(tbe_writer_close(w), 0);
  tbe_reader *r;
  assert_int_equal(tbe_reader_open(&r, dir, TBE_READER_RECURSIVE, NULL), 0);
  assert_int_equal(tbe_reader_file_count(r), 2);
  const tbe_tb_event *ev;
  int found = 0;
  while (tbe_reader_next(r, &ev) == 1) {
    if (strcmp(ev->run, ".") == 0) continue;
    char *end;
    double t = strtod(ev->run, &end);
    assert_true(*end == '\0' && t >= before && t < before + 60);
    found++;
  }
  assert_int_equal(found, 4); /* file_version + experiment, start, end */
  tbe_reader_close(r);
  tu_rmrf(dir);
  free(dir);
}

/* ---- duplicate names ---- */

static int exists_in(const char *dir, const char *name) {
  char *p = tu_join(dir, name);
  struct stat st;
  int e = lstat(p, &st) == 0;
  free(p);
  return e;
}

/* A name given twice is refused before anything is written: no sub-run. */
static void test_hparams_duplicates(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  tbe_writer *w = open_w(dir, 1.0);
  tbe_hparam two[2] = {{"lr", TBE_HPARAM_NUMBER, 0.1, NULL, 0},
                       {"lr", TBE_HPARAM_BOOL, 0, NULL, 1}};
  assert_int_equal(tbe_writer_add_hparams(w, two, 2, NULL, 0, "dup", 0, 1), TBE_EINVAL);
  tbe_metric m2[2] = {{"loss", 1}, {"loss", 2}};
  assert_int_equal(tbe_writer_add_hparams(w, two, 1, m2, 2, "dupm", 0, 1), TBE_EINVAL);
  /* the last of many repeats the first */
  enum { N = 300 };
  tbe_hparam many[N];
  char names[N][16];
  for (int i = 0; i < N; i++) {
    snprintf(names[i], sizeof names[i], "p%d", i == N - 1 ? 0 : i);
    many[i] = (tbe_hparam){names[i], TBE_HPARAM_NUMBER, i, NULL, 0};
  }
  assert_int_equal(tbe_writer_add_hparams(w, many, N, NULL, 0, "dupn", 0, 1), TBE_EINVAL);
  assert_int_equal(tbe__writer_hparams_session(w, two, 2, NULL, 0, NULL, 0, 0, 1), TBE_EINVAL);
  assert_false(exists_in(dir, "dup"));
  assert_false(exists_in(dir, "dupm"));
  assert_false(exists_in(dir, "dupn"));
  /* distinct names (an hparam and a metric may share one) still go */
  snprintf(names[N - 1], sizeof names[N - 1], "p%d", N - 1);
  assert_int_equal(tbe_writer_add_hparams(w, many, N, NULL, 0, "ok", 0, 1), 0);
  tbe_metric lr = {"lr", 3};
  assert_int_equal(tbe_writer_add_hparams(w, two, 1, &lr, 1, "ok2", 0, 1), 0);
  assert_int_equal(tbe_writer_close(w), 0);
  /* the writer's own file: only its file_version (refusals wrote nothing) */
  tbe_reader *r;
  assert_int_equal(tbe_reader_open(&r, dir, 0, NULL), 0);
  const tbe_tb_event *ev;
  int n = 0;
  while (tbe_reader_next(r, &ev) == 1) n++;
  assert_int_equal(n, 1);
  tbe_reader_close(r);
  tu_rmrf(dir);
  free(dir);
}

/* ---- fork ---- */

/* The scalars of tag `tag` in the event files directly in `dir`, file
 * `path_has` (a substring of the path; NULL: any): their steps into
 * steps[0..max), the count returned; *files gets the count of files. */
static int read_scalars(const char *dir, const char *tag, const char *path_has, int64_t *steps,
                        int max, long *files) {
  tbe_reader *r;
  assert_int_equal(tbe_reader_open(&r, dir, 0, NULL), 0);
  if (files) *files = (long)tbe_reader_file_count(r);
  const tbe_tb_event *ev;
  int n = 0;
  int rc;
  while ((rc = tbe_reader_next(r, &ev)) == 1) {
    if (path_has && !strstr(ev->path, path_has)) continue;
    if (ev->kind != TBE_TB_SUMMARY) continue;
    for (size_t i = 0; i < ev->nvalues; i++)
      if (strcmp(ev->values[i].tag, tag) == 0) {
        assert_true(n < max);
        steps[n++] = ev->step;
      }
  }
  assert_int_equal(rc, 0); /* clean end: no torn or corrupt record */
  tbe_reader_close(r);
  return n;
}

/* The parent's file: exactly steps 0..n-1 of tag "p", once each, in order,
 * and nothing of the child's ("c"). */
static void assert_parent_file(const char *dir, const char *pid_part, int n) {
  int64_t steps[64];
  int got = read_scalars(dir, "p", pid_part, steps, 64, NULL);
  assert_int_equal(got, n);
  for (int i = 0; i < n; i++) assert_int_equal(steps[i], i);
  assert_int_equal(read_scalars(dir, "c", pid_part, steps, 64, NULL), 0);
}

/* Child outcomes, as bits of the exit status (cmocka's asserts are the
 * parent's). */
#define CHILD_BAD_ADD 1
#define CHILD_BAD_FLUSH 2
#define CHILD_BAD_CLOSE 4
#define CHILD_BAD_OWN 8

/* What a child does with the parent's writer: 0 leaves it (exits), 1
 * closes it, 2 writes into it and then into a writer of its own; 3 (a
 * child of a raw clone, which no atfork handler saw) adds to its copy of
 * the buffer, then flushes and closes: refused at the write. */
static int child_body(tbe_writer *w, const char *dir, int mode) {
  int bad = 0;
  if (mode == 1) bad |= tbe_writer_close(w) == 0 ? 0 : CHILD_BAD_CLOSE;
  if (mode == 3) {
    (void)tbe_writer_add_scalar(w, "c", 9, 100, 1);
    bad |= tbe_writer_flush(w, 0) == TBE_ESTATE ? 0 : CHILD_BAD_FLUSH;
    bad |= tbe_writer_add_scalar(w, "c", 9, 101, 1) == TBE_ESTATE ? 0 : CHILD_BAD_ADD;
    bad |= tbe_writer_close(w) == TBE_ESTATE ? 0 : CHILD_BAD_CLOSE;
  }
  if (mode == 2) {
    bad |= tbe_writer_add_scalar(w, "c", 9, 100, 1) == TBE_ESTATE ? 0 : CHILD_BAD_ADD;
    bad |= tbe_writer_add_text(w, "c", "x", 101, 1) == TBE_ESTATE ? 0 : CHILD_BAD_ADD;
    bad |= tbe_writer_flush(w, 1) == TBE_ESTATE ? 0 : CHILD_BAD_FLUSH;
    tbe_hparam hp = {"h", TBE_HPARAM_NUMBER, 1, NULL, 0};
    bad |=
        tbe_writer_add_hparams(w, &hp, 1, NULL, 0, "child", 0, 1) == TBE_ESTATE ? 0 : CHILD_BAD_ADD;
    bad |= tbe_writer_close(w) == TBE_ESTATE ? 0 : CHILD_BAD_CLOSE;
    tbe_writer *own = NULL;
    tbe_writer_options o;
    tbe_writer_options_init(&o);
    o.flush_interval_s = 60;
    if (tbe_writer_open(&own, dir, &o) != 0) return bad | CHILD_BAD_OWN;
    for (int i = 0; i < 2; i++)
      if (tbe_writer_add_scalar(own, "c", i, i, 1) != 0) bad |= CHILD_BAD_OWN;
    if (tbe_writer_close(own) != 0) bad |= CHILD_BAD_OWN;
  }
  return bad;
}

/* 3 scalars buffered (a long flush interval), fork, the child does `mode`,
 * then the parent closes: its file holds its 3 scalars once, in order. */
static void fork_case(int mode, int raw) {
  char *dir = tu_mkdtemp();
  tbe_writer *w = open_w(dir, 60.0);
  for (int i = 0; i < 3; i++) assert_int_equal(tbe_writer_add_scalar(w, "p", i, i, 1), 0);
  fflush(NULL);
  /* raw: a clone system call that runs no atfork handler (the pid guard
   * before every write is what stops the child then) */
  pid_t pid = raw ? (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0) : fork();
  assert_true(pid >= 0);
  if (pid == 0) _exit(child_body(w, dir, mode));
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 0);
  char mine[32];
  snprintf(mine, sizeof mine, ".%ld.", (long)getpid());
  assert_int_equal(tbe_writer_close(w), 0);
  assert_parent_file(dir, mine, 3);
  long files;
  int64_t steps[8];
  if (mode == 2) {
    /* the child's own writer: its 2 scalars in a file of its own */
    char theirs[32];
    snprintf(theirs, sizeof theirs, ".%ld.", (long)pid);
    assert_int_equal(read_scalars(dir, "c", theirs, steps, 8, &files), 2);
    assert_int_equal(files, 2);
    assert_int_equal(steps[0], 0);
    assert_int_equal(steps[1], 1);
    assert_false(exists_in(dir, "child"));
  } else {
    read_scalars(dir, "p", NULL, steps, 8, &files);
    assert_int_equal(files, 1);
  }
  tu_rmrf(dir);
  free(dir);
}

static void test_fork_child_exits(void **state) {
  (void)state;
  fork_case(0, 0);
}

static void test_fork_child_closes(void **state) {
  (void)state;
  fork_case(1, 0);
}

static void test_fork_child_writes(void **state) {
  (void)state;
  fork_case(2, 0);
}

static void test_fork_raw_clone(void **state) {
  (void)state;
  fork_case(3, 1);
}

/* Another thread holds the writer's lock at the fork (blocked in the
 * allocator while it grows the buffer): the child's copy of the mutex
 * stays locked forever, so a child that took it would hang.  It gets
 * TBE_ESTATE at once instead; the parent's records, the blocked thread's
 * included, are written once. */
typedef struct gate {
  int armed;
  int entered[2], release[2]; /* pipes */
} gate;

static void *g_alloc(void *o, size_t n) {
  (void)o;
  return malloc(n);
}
static void *g_realloc(void *o, void *p, size_t old, size_t n) {
  gate *g = o;
  (void)old;
  if (n > 200000 && __atomic_exchange_n(&g->armed, 0, __ATOMIC_ACQ_REL)) {
    char c = 1;
    assert_int_equal(write(g->entered[1], &c, 1), 1);
    assert_int_equal(read(g->release[0], &c, 1), 1);
  }
  return realloc(p, n);
}
static void g_free(void *o, void *p) {
  (void)o;
  free(p);
}

typedef struct big_add {
  tbe_writer *w;
  char *tag;
  int rc;
} big_add;

static void *add_big(void *arg) {
  big_add *b = arg;
  b->rc = tbe_writer_add_scalar(b->w, b->tag, 5, 3, 1);
  return NULL;
}

static void test_fork_lock_held(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  gate g = {0};
  assert_int_equal(pipe(g.entered), 0);
  assert_int_equal(pipe(g.release), 0);
  tbe_allocator a = {g_alloc, g_realloc, g_free, &g};
  tbe_writer_options o;
  tbe_writer_options_init(&o);
  o.flush_interval_s = 60;
  o.buffer_size = 1 << 20;
  o.allocator = &a;
  tbe_writer *w = NULL;
  assert_int_equal(tbe_writer_open(&w, dir, &o), 0);
  for (int i = 0; i < 3; i++) assert_int_equal(tbe_writer_add_scalar(w, "p", i, i, 1), 0);
  /* a 300 KB tag makes the buffer grow under the lock */
  big_add b = {w, malloc(300001), -1};
  assert_non_null(b.tag);
  memset(b.tag, 'x', 300000);
  b.tag[300000] = '\0';
  __atomic_store_n(&g.armed, 1, __ATOMIC_RELEASE);
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, add_big, &b), 0);
  char c;
  assert_int_equal(read(g.entered[0], &c, 1), 1); /* the thread holds the lock now */
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    /* would hang on the inherited lock: the alarm makes that a failure */
    alarm(10);
    _exit(child_body(w, dir, 2));
  }
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 0);
  assert_int_equal(write(g.release[1], &c, 1), 1);
  assert_int_equal(pthread_join(th, NULL), 0);
  assert_int_equal(b.rc, 0);
  assert_int_equal(tbe_writer_close(w), 0);
  char mine[32];
  snprintf(mine, sizeof mine, ".%ld.", (long)getpid());
  assert_parent_file(dir, mine, 3);
  int64_t steps[4];
  assert_int_equal(read_scalars(dir, b.tag, mine, steps, 4, NULL), 1);
  assert_int_equal(steps[0], 3);
  free(b.tag);
  for (int i = 0; i < 2; i++) {
    close(g.entered[i]);
    close(g.release[i]);
  }
  tu_rmrf(dir);
  free(dir);
}

/* ---- allocation failures ---- */

typedef struct failalloc {
  long left; /* allocations that still succeed; then every one fails */
  long live;
} failalloc;

static void *fa_alloc(void *o, size_t n) {
  failalloc *f = o;
  if (f->left-- <= 0) return NULL;
  void *p = malloc(n);
  if (p) f->live++;
  return p;
}
static void *fa_realloc(void *o, void *p, size_t old, size_t n) {
  failalloc *f = o;
  (void)old;
  if (f->left-- <= 0) return NULL;
  void *q = realloc(p, n);
  if (q && !p) f->live++;
  return q;
}
static void fa_free(void *o, void *p) {
  failalloc *f = o;
  if (p) f->live--;
  free(p);
}

/* Runs every add_* with the n-th allocation failing, for every n until
 * all succeed: no crash, no leak (live count back to 0), and a writer that
 * met ENOMEM still writes whole records afterwards. */
static void test_alloc_failures(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  int done = 0;
  for (long n = 0; !done && n < 5000; n++) {
    failalloc f = {.left = n, .live = 0};
    tbe_allocator a = {fa_alloc, fa_realloc, fa_free, &f};
    tbe_writer_options o;
    tbe_writer_options_init(&o);
    o.allocator = &a;
    tbe_writer *w = NULL;
    int rc = tbe_writer_open(&w, dir, &o);
    if (rc < 0) {
      assert_int_equal(rc, TBE_ENOMEM);
      assert_int_equal(f.live, 0);
      continue;
    }
    double v[5] = {1, 2, 3, 4, 5};
    uint8_t px[48] = {0}, lab[2] = {0, 1};
    float pr[2] = {0.1f, 0.9f};
    const char *tags[] = {"a"};
    tbe_chart ch = {"c", 0, tags, 1};
    tbe_category cat = {"k", &ch, 1, 0};
    tbe_hparam hp = {"lr", TBE_HPARAM_NUMBER, 0.1, NULL, 0};
    tbe_metric m = {"acc", 1};
    char sub[32];
    snprintf(sub, sizeof sub, "hp%ld", n);
    int ok = 1;
#define TRY(call)                                  \
  do {                                             \
    int r_ = (call);                               \
    if (r_ != 0) {                                 \
      assert_int_equal(r_, TBE_ENOMEM);            \
      ok = 0;                                      \
    }                                              \
  } while (0)
    TRY(tbe_writer_add_scalar(w, "s", 1, 1, 1));
    TRY(tbe_writer_add_histogram(w, "h", v, 5, 1, 1));
    TRY(tbe_writer_add_text(w, "t", "x", 1, 1));
    TRY(tbe_writer_add_image(w, "i", px, 48, 4, 4, 3, 1, 1));
    TRY(tbe_writer_add_pr_curve(w, "p", lab, pr, 2, 0, 1, 1));
    TRY(tbe_writer_set_custom_scalars_layout(w, &cat, 1));
    TRY(tbe_writer_add_hparams(w, &hp, 1, &m, 1, sub, 1, 1));
    static const uint8_t raw_ev[] = {0x10, 0x05, 0x1a, 0x02, 'v', '1'}; /* step 5, file_version */
    TRY(tbe_writer_write_event(w, raw_ev, sizeof raw_ev));
#undef TRY
    f.left = 1000000; /* memory is back: the writer still works */
    assert_int_equal(tbe_writer_add_scalar(w, "after", 1, 2, 1), 0);
    assert_int_equal(tbe_writer_close(w), 0);
    assert_int_equal(f.live, 0);
    done = ok;
  }
  assert_true(done);
  /* everything written is readable, whole records only */
  tbe_reader *r;
  assert_int_equal(tbe_reader_open(&r, dir, TBE_READER_RECURSIVE, NULL), 0);
  const tbe_tb_event *ev;
  int rc;
  while ((rc = tbe_reader_next(r, &ev)) == 1) {
  }
  assert_int_equal(rc, 0);
  tbe_reader_close(r);
  tu_rmrf(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_golden_scalars_bytes),
      cmocka_unit_test(test_golden_run1),
      cmocka_unit_test(test_golden_hparams),
      cmocka_unit_test(test_scalar_encoder_matches_protobuf_c),
      cmocka_unit_test(test_file_names_unique),
      cmocka_unit_test(test_bad_input),
      cmocka_unit_test(test_sticky_enospc),
      cmocka_unit_test(test_bounded_delay),
      cmocka_unit_test(test_threads),
      cmocka_unit_test(test_images_roundtrip),
      cmocka_unit_test(test_histogram_buckets),
      cmocka_unit_test(test_hparams_default_subrun),
      cmocka_unit_test(test_hparams_duplicates),
      cmocka_unit_test(test_fork_child_exits),
      cmocka_unit_test(test_fork_child_closes),
      cmocka_unit_test(test_fork_child_writes),
      cmocka_unit_test(test_fork_raw_clone),
      cmocka_unit_test(test_fork_lock_held),
      cmocka_unit_test(test_alloc_failures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
