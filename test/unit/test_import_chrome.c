/* test_import_chrome.c: the Chrome-trace / Kineto JSON importer.
 *
 * Golden files first: the real Kineto traces in test/data/kineto and JAX's
 * trace.json.gz are imported and every count is checked against an
 * independent reading of the same file by a tiny recursive-descent JSON
 * parser written here (no yajl, no shared code with the importer).  Then
 * synthetic edge cases: empty traces, one event, clamped durations,
 * control characters and invalid UTF-8 in names, the truncated array form,
 * gzip, exact error offsets, unterminated strings, deep nesting, exact
 * microsecond-to-nanosecond conversion. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

#include "import/importer.h"
#include "import/input.h"
#include "tbexport/analysis.h"
#include "tbexport/error.h"
#include "tbexport/import.h"
#include "tbexport/trace.h"
#include "testutil.h"

/* ---- a tiny independent JSON reader (DOM) ---- */

typedef enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } jtype;

typedef struct jval {
  jtype type;
  char *text; /* number text or decoded string (NUL-terminated) */
  size_t len;
  struct jval *items; /* arrays and objects (values) */
  char **keys;        /* objects */
  size_t n;
  int b;
} jval;

typedef struct jp {
  const char *s;
  size_t i, n;
  int bad;
} jp;

static void jws(jp *p) {
  while (p->i < p->n && strchr(" \t\r\n", p->s[p->i])) p->i++;
}

static void jparse(jp *p, jval *v);

static char *jstring(jp *p, size_t *len) {
  /* assumes p->s[p->i] == '"' */
  p->i++;
  size_t cap = 16, n = 0;
  char *out = malloc(cap);
  while (p->i < p->n && p->s[p->i] != '"') {
    char ch = p->s[p->i++];
    unsigned cp = 0;
    int is_cp = 0;
    if (ch == '\\') {
      char e = p->s[p->i++];
      switch (e) {
        case 'n': ch = '\n'; break;
        case 't': ch = '\t'; break;
        case 'r': ch = '\r'; break;
        case 'b': ch = '\b'; break;
        case 'f': ch = '\f'; break;
        case 'u': {
          char hex[5] = {0};
          memcpy(hex, p->s + p->i, 4);
          p->i += 4;
          cp = (unsigned)strtoul(hex, NULL, 16);
          is_cp = 1;
          break;
        }
        default: ch = e;
      }
    }
    if (n + 5 > cap) out = realloc(out, cap *= 2);
    if (is_cp) {
      if (cp < 0x80) out[n++] = (char)cp;
      else if (cp < 0x800) out[n++] = (char)(0xC0 | (cp >> 6)), out[n++] = (char)(0x80 | (cp & 63));
      else out[n++] = (char)(0xE0 | (cp >> 12)), out[n++] = (char)(0x80 | ((cp >> 6) & 63)),
           out[n++] = (char)(0x80 | (cp & 63));
    } else {
      out[n++] = ch;
    }
  }
  p->i++;
  out[n] = 0;
  *len = n;
  return out;
}

static void jparse(jp *p, jval *v) {
  memset(v, 0, sizeof *v);
  jws(p);
  if (p->i >= p->n) {
    p->bad = 1;
    return;
  }
  char ch = p->s[p->i];
  if (ch == '{' || ch == '[') {
    int obj = ch == '{';
    v->type = obj ? J_OBJ : J_ARR;
    p->i++;
    size_t cap = 0;
    for (;;) {
      jws(p);
      if (p->i < p->n && p->s[p->i] == (obj ? '}' : ']')) {
        p->i++;
        break;
      }
      if (v->n == cap) {
        cap = cap ? cap * 2 : 8;
        v->items = realloc(v->items, cap * sizeof *v->items);
        if (obj) v->keys = realloc(v->keys, cap * sizeof *v->keys);
      }
      if (obj) {
        size_t kl;
        v->keys[v->n] = jstring(p, &kl);
        jws(p);
        p->i++; /* ':' */
      }
      jparse(p, &v->items[v->n++]);
      if (p->bad) return;
      jws(p);
      if (p->i < p->n && p->s[p->i] == ',') p->i++;
    }
  } else if (ch == '"') {
    v->type = J_STR;
    v->text = jstring(p, &v->len);
  } else if (ch == 't' || ch == 'f') {
    v->type = J_BOOL;
    v->b = ch == 't';
    p->i += ch == 't' ? 4 : 5;
  } else if (ch == 'n') {
    v->type = J_NULL;
    p->i += 4;
  } else {
    size_t st = p->i;
    while (p->i < p->n && strchr("+-0123456789.eE", p->s[p->i])) p->i++;
    v->type = J_NUM;
    v->len = p->i - st;
    v->text = strndup(p->s + st, v->len);
  }
}

static void jfree(jval *v) {
  for (size_t i = 0; i < v->n; i++) {
    jfree(&v->items[i]);
    if (v->keys) free(v->keys[i]);
  }
  free(v->items);
  free(v->keys);
  free(v->text);
}

static const jval *jget(const jval *o, const char *key) {
  if (!o || o->type != J_OBJ) return NULL;
  for (size_t i = 0; i < o->n; i++)
    if (!strcmp(o->keys[i], key)) return &o->items[i];
  return NULL;
}

static const char *jstr(const jval *o, const char *key) {
  const jval *v = jget(o, key);
  return v && v->type == J_STR ? v->text : NULL;
}

static long long jint(const jval *o, const char *key, long long dflt) {
  const jval *v = jget(o, key);
  if (!v) return dflt;
  if (v->type == J_NUM || v->type == J_STR) return strtoll(v->text, NULL, 10);
  return dflt;
}

static jval *jload(const char *path) {
  size_t len = 0;
  uint8_t *data = NULL;
  gzFile gz = gzopen(path, "rb");
  assert_non_null(gz);
  size_t cap = 1 << 20;
  data = malloc(cap);
  int r;
  while ((r = gzread(gz, data + len, (unsigned)(cap - len))) > 0) {
    len += (size_t)r;
    if (len == cap) data = realloc(data, cap *= 2);
  }
  gzclose(gz);
  jp p = {(const char *)data, 0, len, 0};
  jval *v = malloc(sizeof *v);
  jparse(&p, v);
  assert_false(p.bad);
  free(data);
  return v;
}

/* Decimal µs text to ns by string manipulation (independent of the
 * importer's arithmetic): integer part, then exactly three fraction digits
 * (the Kineto files print three). */
static int64_t text_us_to_ns(const char *t) {
  const char *dot = strchr(t, '.');
  int64_t ip = strtoll(t, NULL, 10);
  int64_t frac = 0;
  if (dot) {
    char f[4] = {'0', '0', '0', 0};
    for (int i = 0; i < 3 && dot[1 + i] >= '0' && dot[1 + i] <= '9'; i++) f[i] = dot[1 + i];
    frac = strtoll(f, NULL, 10);
  }
  return ip * 1000 + (t[0] == '-' ? -frac : frac);
}

/* ---- helpers ---- */

static tbe_trace *import_ok(const char *path) {
  tbe_trace *t = NULL;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  tbe_import_error err;
  int rc = tbe_import_file(t, path, NULL, &err);
  if (rc) fprintf(stderr, "import failed: %s\n", err.message);
  assert_int_equal(rc, 0);
  return t;
}

static size_t count_kind(const tbe_trace *t, tbe_event_kind k) {
  size_t n = 0;
  for (size_t i = 0; i < t->nevents; i++) n += t->events[i].kind == k;
  return n;
}

static char *tmpdir;

static char *write_tmp(const char *name, const void *data, size_t len) {
  char *p = tu_join(tmpdir, name);
  assert_int_equal(tu_write_file(p, data, len), 0);
  return p;
}

static tbe_trace *import_text(const char *json, int expect_rc, tbe_import_error *err) {
  char *p = write_tmp("t.json", json, strlen(json));
  tbe_trace *t = NULL;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  tbe_import_error e2;
  if (!err) err = &e2;
  int rc = tbe_import_file(t, p, NULL, err);
  if (rc != expect_rc) fprintf(stderr, "rc %d: %s\n", rc, err->message);
  assert_int_equal(rc, expect_rc);
  free(p);
  return t;
}

static const tbe_arg *find_arg(const tbe_trace *t, const tbe_event *e, const char *key) {
  for (uint32_t i = 0; i < e->nargs; i++)
    if (!strcmp(tbe_trace_str(t, t->args[e->args + i].key), key)) return &t->args[e->args + i];
  return NULL;
}

/* ---- golden Kineto traces ---- */

typedef struct expect {
  size_t kind[TBE_EV__COUNT];
  size_t fwdbwd_pairs;
  size_t steps_named; /* ProfilerStep#N user annotations */
  int64_t first_x_ns; /* start of the first X event, from its ts text */
  const char *first_x_name;
  long long regs_sum, grid_x_sum, bytes_sum_memset;
} expect;

static void independent_count(const jval *root, expect *x) {
  memset(x, 0, sizeof *x);
  const jval *evs = jget(root, "traceEvents");
  assert_non_null(evs);
  int64_t base = jint(root, "baseTimeNanoseconds", 0);
  /* fwdbwd: ids with both an s and an f */
  size_t ns = 0;
  long long *sids = calloc(evs->n + 1, sizeof *sids);
  long long *fids = calloc(evs->n + 1, sizeof *fids);
  size_t nf = 0;
  for (size_t i = 0; i < evs->n; i++) {
    const jval *e = &evs->items[i];
    const char *ph = jstr(e, "ph"), *cat = jstr(e, "cat"), *name = jstr(e, "name");
    if (!ph) continue;
    if (!strcmp(ph, "X")) {
      static const struct {
        const char *cat;
        tbe_event_kind k;
      } map[] = {{"kernel", TBE_EV_KERNEL},         {"gpu_memcpy", TBE_EV_MEMCPY},
                 {"gpu_memset", TBE_EV_MEMSET},     {"cuda_runtime", TBE_EV_RUNTIME},
                 {"cuda_driver", TBE_EV_DRIVER},    {"cuda_sync", TBE_EV_SYNC},
                 {"cpu_op", TBE_EV_CPU_OP},         {"user_annotation", TBE_EV_USER_ANNOTATION},
                 {"gpu_user_annotation", TBE_EV_GPU_ANNOTATION},
                 {"python_function", TBE_EV_PYTHON}, {"overhead", TBE_EV_OVERHEAD}};
      tbe_event_kind k = TBE_EV_GENERIC;
      for (size_t m = 0; m < sizeof map / sizeof map[0]; m++)
        if (cat && !strcmp(cat, map[m].cat)) k = map[m].k;
      x->kind[k]++;
      if (k == TBE_EV_USER_ANNOTATION && name && !strncmp(name, "ProfilerStep#", 13)) x->steps_named++;
      const jval *args = jget(e, "args");
      if (k == TBE_EV_KERNEL) {
        x->regs_sum += jint(args, "registers per thread", 0);
        const jval *g = jget(args, "grid");
        if (g && g->n) x->grid_x_sum += strtoll(g->items[0].text, NULL, 10);
      }
      if (k == TBE_EV_MEMSET) x->bytes_sum_memset += jint(args, "bytes", 0);
      if (!x->first_x_name) {
        x->first_x_name = name;
        x->first_x_ns = base + text_us_to_ns(jget(e, "ts")->text);
      }
    } else if (!strcmp(ph, "i")) {
      x->kind[name && !strcmp(name, "[memory]") ? TBE_EV_MEMORY : TBE_EV_INSTANT]++;
    } else if (cat && !strcmp(cat, "fwdbwd") && (!strcmp(ph, "s") || !strcmp(ph, "f"))) {
      long long id = jint(e, "id", -1);
      if (ph[0] == 's') sids[ns++] = id;
      else fids[nf++] = id;
    }
  }
  for (size_t i = 0; i < ns; i++)
    for (size_t k = 0; k < nf; k++)
      if (sids[i] == fids[k]) {
        x->fwdbwd_pairs++;
        break;
      }
  free(sids);
  free(fids);
}

static void check_kineto(const char *rel, int expect_steps) {
  const char *path = tu_data(rel);
  jval *root = jload(path);
  expect x;
  independent_count(root, &x);
  tbe_trace *t = import_ok(path);

  for (int k = 0; k < TBE_EV__COUNT; k++) {
    if (k == TBE_EV_COUNTER || k == TBE_EV_NVTX_RANGE || k == TBE_EV_NVTX_MARK) continue;
    if (count_kind(t, (tbe_event_kind)k) != x.kind[k])
      fprintf(stderr, "%s: kind %s: model %zu, json %zu\n", rel, tbe_event_kind_name((tbe_event_kind)k),
              count_kind(t, (tbe_event_kind)k), x.kind[k]);
    assert_int_equal(count_kind(t, (tbe_event_kind)k), x.kind[k]);
  }
  assert_true(x.kind[TBE_EV_KERNEL] > 0);
  assert_int_equal(t->nflows, x.fwdbwd_pairs);
  assert_int_equal(t->source, TBE_SRC_KINETO);
  assert_int_equal(t->base_time_ns, jint(root, "baseTimeNanoseconds", 0));
  assert_string_equal(tbe_trace_str(t, t->trace_name), jstr(root, "traceName"));

  /* correlation: every kernel/memset with a correlation id links to an API
   * call with the same id */
  size_t linked = 0;
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_event *e = &t->events[i];
    if (e->kind != TBE_EV_KERNEL && e->kind != TBE_EV_MEMSET && e->kind != TBE_EV_MEMCPY) continue;
    assert_true(e->correlation != 0);
    assert_int_not_equal(e->link, TBE_NONE);
    const tbe_event *api = &t->events[e->link];
    assert_true(api->kind == TBE_EV_RUNTIME || api->kind == TBE_EV_DRIVER);
    assert_int_equal(api->correlation, e->correlation);
    assert_int_equal(t->tracks[e->track].type, TBE_TRACK_STREAM);
    linked++;
  }
  assert_true(linked > 0);

  /* kernel details against the JSON args */
  long long regs = 0, gx = 0, msb = 0;
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_event *e = &t->events[i];
    if (e->kind == TBE_EV_KERNEL) {
      const tbe_kernel *k = tbe_trace_kernel(t, e);
      assert_non_null(k);
      regs += k->registers;
      gx += k->grid[0];
      assert_true(k->block[0] > 0);
      assert_null(find_arg(t, e, "grid"));
      assert_null(find_arg(t, e, "correlation"));
    }
    if (e->kind == TBE_EV_MEMSET) msb += (long long)tbe_trace_memset(t, e)->bytes;
  }
  assert_int_equal(regs, x.regs_sum);
  assert_int_equal(gx, x.grid_x_sum);
  assert_int_equal(msb, x.bytes_sum_memset);

  /* memory events carry their details */
  for (size_t i = 0; i < t->nevents; i++)
    if (t->events[i].kind == TBE_EV_MEMORY) {
      const tbe_memory *m = tbe_trace_memory(t, &t->events[i]);
      assert_non_null(m);
      assert_true(m->total_allocated >= 0);
    }

  /* exact start of the first X event */
  int found = 0;
  for (size_t i = 0; i < t->nevents && !found; i++)
    if (!strcmp(tbe_trace_str(t, t->events[i].name), x.first_x_name) &&
        t->events[i].start_ns == x.first_x_ns)
      found = 1;
  assert_true(found);

  /* steps */
  assert_int_equal(x.steps_named, (size_t)expect_steps);
  assert_int_equal(t->nsteps, (size_t)expect_steps);
  for (size_t i = 0; i < t->nsteps; i++) {
    assert_int_equal(t->steps[i].num, (int64_t)i + 2);
    assert_true(t->steps[i].end_ns > t->steps[i].start_ns);
  }

  /* device properties */
  const jval *props = jget(root, "deviceProperties");
  assert_non_null(props);
  assert_int_equal(t->ndevices, props->n);
  for (size_t i = 0; i < props->n; i++) {
    const jval *p = &props->items[i];
    uint32_t di;
    assert_int_equal(tbe_trace_device(t, (int32_t)jint(p, "id", -1), &di), 0);
    const tbe_device *d = &t->devices[di];
    assert_string_equal(tbe_trace_str(t, d->name), jstr(p, "name"));
    assert_int_equal(d->sm_count, jint(p, "numSms", -1));
    assert_int_equal(d->memory_bytes, jint(p, "totalGlobalMem", -1));
    assert_int_equal(d->cc_major, jint(p, "computeMajor", -1));
    assert_int_equal(d->cc_minor, jint(p, "computeMinor", -1));
    assert_int_equal(d->shared_per_block_optin, jint(p, "sharedMemPerBlockOptin", -1));
  }

  /* thread and stream names from M events */
  int named_stream = 0, named_thread = 0;
  for (size_t i = 0; i < t->ntracks; i++) {
    const char *nm = tbe_trace_str(t, t->tracks[i].name);
    if (t->tracks[i].type == TBE_TRACK_STREAM && !strncmp(nm, "stream ", 7)) named_stream++;
    if (t->tracks[i].type == TBE_TRACK_THREAD && !strncmp(nm, "thread ", 7)) named_thread++;
  }
  assert_true(named_stream > 0 && named_thread > 0);
  assert_int_equal(t->nwarnings, 0);

  tbe_trace_free(t);
  jfree(root);
  free(root);
}

static void test_kineto_cnn_fp32(void **s) {
  (void)s;
  check_kineto("kineto/h200_cnn_fp32.pt.trace.json", 3);
}
static void test_kineto_cnn_bf16(void **s) {
  (void)s;
  check_kineto("kineto/h200_cnn_bf16.pt.trace.json", 3);
}
static void test_kineto_add_loop(void **s) {
  (void)s;
  check_kineto("kineto/h200_add_loop.trace.json", 0);
}

/* JAX's trace.json.gz: no categories; the GPU pid is named /device:GPU:0. */
static void test_jax_trace(void **s) {
  (void)s;
  const char *path = tu_data("jax/h200_matmul.trace.json.gz");
  jval *root = jload(path);
  const jval *evs = jget(root, "traceEvents");
  long long gpu_pid = -1;
  for (size_t i = 0; i < evs->n; i++) {
    const char *nm = jstr(&evs->items[i], "name");
    const char *pn = jstr(jget(&evs->items[i], "args"), "name");
    if (nm && !strcmp(nm, "process_name") && pn && !strcmp(pn, "/device:GPU:0"))
      gpu_pid = jint(&evs->items[i], "pid", -1);
  }
  assert_true(gpu_pid >= 0);
  size_t kernels = 0, copies = 0, memsets = 0, gpu_x = 0, host_api = 0, x_total = 0;
  for (size_t i = 0; i < evs->n; i++) {
    const jval *e = &evs->items[i];
    const char *ph = jstr(e, "ph");
    if (!ph || strcmp(ph, "X")) continue;
    x_total++;
    const jval *a = jget(e, "args");
    if (jint(e, "pid", -2) == gpu_pid) {
      gpu_x++;
      kernels += jget(a, "kernel_details") != NULL;
      copies += jget(a, "memcpy_details") != NULL;
      memsets += jget(a, "Memset_details") != NULL;
    } else if (jget(a, "correlation_id") && jget(a, "device_id")) {
      host_api++;
    }
  }
  tbe_trace *t = import_ok(path);
  assert_int_equal(t->nevents, x_total);
  assert_int_equal(count_kind(t, TBE_EV_KERNEL), kernels);
  assert_int_equal(count_kind(t, TBE_EV_MEMCPY), copies);
  assert_int_equal(count_kind(t, TBE_EV_MEMSET), memsets);
  assert_int_equal(count_kind(t, TBE_EV_DRIVER), host_api);
  size_t on_streams = 0, linked = 0;
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_event *e = &t->events[i];
    if (t->tracks[e->track].type == TBE_TRACK_STREAM) {
      on_streams++;
      assert_int_equal(t->tracks[e->track].device, 0);
    }
    if (e->kind == TBE_EV_KERNEL) {
      const tbe_kernel *k = tbe_trace_kernel(t, e);
      assert_true(k->block[0] > 0 && k->grid[0] > 0);
      linked += e->link != TBE_NONE;
    }
  }
  assert_int_equal(on_streams, gpu_x);
  assert_true(linked > 0);
  assert_int_equal(t->source, TBE_SRC_CHROME);
  /* thread names from metadata, stream names too */
  int streams_named = 0;
  for (size_t i = 0; i < t->ntracks; i++)
    if (t->tracks[i].type == TBE_TRACK_STREAM)
      streams_named += !strncmp(tbe_trace_str(t, t->tracks[i].name), "Stream #", 8);
  assert_true(streams_named > 0);
  tbe_trace_free(t);
  jfree(root);
  free(root);
}

/* ---- edge cases ---- */

static void test_empty(void **s) {
  (void)s;
  const char *cases[] = {"[]", "{\"traceEvents\":[]}", " \n[ ] \n", "[", "[\n  "};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tbe_trace *t = import_text(cases[i], 0, NULL);
    assert_int_equal(t->nevents, 0);
    tbe_trace_free(t);
  }
}

static void test_one_event(void **s) {
  (void)s;
  tbe_trace *t = import_text(
      "{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"op\",\"cat\":\"cpu_op\",\"pid\":7,\"tid\":8,"
      "\"ts\":1.5,\"dur\":2,\"args\":{\"External id\":42,\"n\":-3,\"u\":18446744073709551615,"
      "\"d\":0.25,\"s\":\"str\",\"b\":true,\"z\":null,\"o\":{\"a\":[1, 2,{}],\"k\":\"v\\\"\"}}}]}",
      0, NULL);
  assert_int_equal(t->nevents, 1);
  const tbe_event *e = &t->events[0];
  assert_int_equal(e->kind, TBE_EV_CPU_OP);
  assert_int_equal(e->start_ns, 1500);
  assert_int_equal(e->dur_ns, 2000);
  assert_int_equal(e->external_id, 42);
  assert_int_equal(e->cat, 0);
  assert_string_equal(tbe_trace_str(t, e->name), "op");
  const tbe_track *tr = &t->tracks[e->track];
  assert_int_equal(tr->type, TBE_TRACK_THREAD);
  assert_int_equal(tr->pid, 7);
  assert_int_equal(tr->tid, 8);
  assert_int_equal(e->nargs, 7);
  const tbe_arg *a = find_arg(t, e, "n");
  assert_int_equal(a->type, TBE_ARG_INT);
  assert_int_equal(a->v.i, -3);
  a = find_arg(t, e, "u");
  assert_int_equal(a->type, TBE_ARG_UINT);
  assert_true(a->v.u == UINT64_MAX);
  a = find_arg(t, e, "d");
  assert_int_equal(a->type, TBE_ARG_DOUBLE);
  assert_true(a->v.d == 0.25);
  a = find_arg(t, e, "s");
  assert_int_equal(a->type, TBE_ARG_STR);
  assert_string_equal(tbe_trace_str(t, a->v.s), "str");
  a = find_arg(t, e, "b");
  assert_int_equal(a->type, TBE_ARG_JSON);
  assert_string_equal(tbe_trace_str(t, a->v.s), "true");
  a = find_arg(t, e, "z");
  assert_string_equal(tbe_trace_str(t, a->v.s), "null");
  a = find_arg(t, e, "o");
  assert_int_equal(a->type, TBE_ARG_JSON);
  assert_string_equal(tbe_trace_str(t, a->v.s), "{\"a\":[1,2,{}],\"k\":\"v\\\"\"}");
  assert_null(find_arg(t, e, "External id"));
  tbe_trace_free(t);
}

static void test_durations(void **s) {
  (void)s;
  tbe_trace *t = import_text(
      "[{\"ph\":\"X\",\"name\":\"neg\",\"ts\":10,\"dur\":-5,\"pid\":1,\"tid\":1},"
      "{\"ph\":\"X\",\"name\":\"zero\",\"ts\":20,\"dur\":0,\"pid\":1,\"tid\":1},"
      "{\"ph\":\"X\",\"name\":\"none\",\"ts\":30,\"pid\":1,\"tid\":1}]",
      0, NULL);
  assert_int_equal(t->nevents, 3);
  for (size_t i = 0; i < 3; i++) {
    const tbe_event *e = &t->events[i];
    const char *nm = tbe_trace_str(t, e->name);
    assert_int_equal(e->dur_ns, 0);
    assert_int_equal(!!(e->flags & TBE_EVF_CLAMPED), !strcmp(nm, "neg"));
    assert_int_equal(e->kind, TBE_EV_GENERIC);
  }
  tbe_trace_free(t);
}

static void test_exact_times(void **s) {
  (void)s;
  /* Values a double cannot hold exactly. */
  tbe_trace *t = import_text(
      "[{\"ph\":\"i\",\"name\":\"a\",\"ts\":1700000000123456.789,\"pid\":1,\"tid\":1},"
      "{\"ph\":\"i\",\"name\":\"b\",\"ts\":1234.567,\"pid\":1,\"tid\":1},"
      "{\"ph\":\"i\",\"name\":\"c\",\"ts\":1.2345e3,\"pid\":1,\"tid\":1},"
      "{\"ph\":\"i\",\"name\":\"d\",\"ts\":0.0004,\"pid\":1,\"tid\":1},"
      "{\"ph\":\"i\",\"name\":\"e\",\"ts\":0.0005,\"pid\":1,\"tid\":1},"
      "{\"ph\":\"i\",\"name\":\"f\",\"ts\":9.9999999999999995e-07,\"pid\":1,\"tid\":1},"
      "{\"ph\":\"i\",\"name\":\"g\",\"ts\":-2.5,\"pid\":1,\"tid\":1}]",
      0, NULL);
  struct {
    const char *name;
    int64_t ns;
  } want[] = {{"a", INT64_C(1700000000123456789)}, {"b", 1234567}, {"c", 1234500}, {"d", 0},
              {"e", 1}, {"f", 0}, {"g", -2500}};
  assert_int_equal(t->nevents, 7);
  for (size_t k = 0; k < 7; k++) {
    int found = 0;
    for (size_t i = 0; i < t->nevents; i++)
      if (!strcmp(tbe_trace_str(t, t->events[i].name), want[k].name)) {
        assert_int_equal(t->events[i].start_ns, want[k].ns);
        found = 1;
      }
    assert_true(found);
  }
  tbe_trace_free(t);
  /* baseTimeNanoseconds after the events still applies to them. */
  t = import_text("{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"x\",\"ts\":1.001,\"dur\":1,\"pid\":1,"
                  "\"tid\":1}],\"baseTimeNanoseconds\":1000000000000000000}",
                  0, NULL);
  assert_int_equal(t->events[0].start_ns, INT64_C(1000000000000001001));
  tbe_trace_free(t);
  /* out of range */
  tbe_import_error err;
  t = import_text("[{\"ph\":\"i\",\"ts\":1e30,\"pid\":1,\"tid\":1}]", TBE_EPARSE, &err);
  assert_non_null(strstr(err.message, "ts is out of range"));
  assert_int_equal(err.offset, 1);
  tbe_trace_free(t);
}

static void test_control_chars_and_utf8(void **s) {
  (void)s;
  /* A name with every control character escaped, and a name with invalid
   * UTF-8 bytes (raw in the file) and an escaped NUL. */
  char json[2048];
  size_t n = 0;
  n += (size_t)snprintf(json + n, sizeof json - n, "[{\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":1,\"name\":\"");
  for (int ch = 1; ch < 0x20; ch++) n += (size_t)snprintf(json + n, sizeof json - n, "\\u%04x", ch);
  n += (size_t)snprintf(json + n, sizeof json - n, "\\\"\\\\\"},{\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":2,\"name\":\"a");
  json[n++] = (char)0xff;
  json[n++] = 'b';
  json[n++] = (char)0xC3; /* truncated 2-byte sequence */
  n += (size_t)snprintf(json + n, sizeof json - n, "\\u0000c\xC3\xA9\"},");
  /* E2 82 is one maximal subpart (a 3-byte sequence cut short): one U+FFFD,
   * as every output repairs it (common/utf8.h), not one per byte. */
  n += (size_t)snprintf(json + n, sizeof json - n,
                        "{\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":3,\"name\":\"x\xE2\x82y\"}]");
  tbe_trace *t = import_text(json, 0, NULL);
  assert_int_equal(t->nevents, 3);
  char want1[64];
  size_t w = 0;
  for (int ch = 1; ch < 0x20; ch++) want1[w++] = (char)ch;
  want1[w++] = '"';
  want1[w++] = '\\';
  want1[w] = 0;
  const char *want2 = "a\xEF\xBF\xBD" "b\xEF\xBF\xBD\xEF\xBF\xBD" "c\xC3\xA9";
  int got1 = 0, got2 = 0, got3 = 0;
  for (size_t i = 0; i < 3; i++) {
    const char *nm = tbe_trace_str(t, t->events[i].name);
    got1 |= !strcmp(nm, want1) && tbe_trace_strlen(t, t->events[i].name) == w;
    got2 |= !strcmp(nm, want2);
    got3 |= !strcmp(nm, "x\xEF\xBF\xBDy");
  }
  assert_true(got1);
  assert_true(got2);
  assert_true(got3);
  tbe_trace_free(t);
}

static void test_truncated_array(void **s) {
  (void)s;
  const char *ev = "{\"ph\":\"X\",\"name\":\"k\",\"ts\":1,\"dur\":1,\"pid\":1,\"tid\":1}";
  char buf[512];
  const char *forms[] = {"[%s,%s", "[%s,%s,", "[%s,%s,\n  ", "[%s,%s,]", "[%s,%s , ]\n"};
  for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
    snprintf(buf, sizeof buf, forms[i], ev, ev);
    tbe_trace *t = import_text(buf, 0, NULL);
    assert_int_equal(t->nevents, 2);
    tbe_trace_free(t);
  }
  /* cut inside an event: an error at the end of the input */
  snprintf(buf, sizeof buf, "[%s,{\"ph\":\"X\",\"na", ev);
  tbe_import_error err;
  tbe_trace *t = import_text(buf, TBE_EPARSE, &err);
  assert_int_equal(err.offset, strlen(buf));
  assert_non_null(strstr(err.message, "end of input"));
  tbe_trace_free(t);
  /* the object form must be complete */
  snprintf(buf, sizeof buf, "{\"traceEvents\":[%s,", ev);
  t = import_text(buf, TBE_EPARSE, &err);
  assert_int_equal(err.offset, strlen(buf));
  tbe_trace_free(t);
  /* text after a closing "]" of a trailing-comma array is an error */
  snprintf(buf, sizeof buf, "[%s,] x", ev);
  t = import_text(buf, TBE_EPARSE, &err);
  assert_int_equal(err.offset, strlen(ev) + 2);
  tbe_trace_free(t);
}

static void test_gzip(void **s) {
  (void)s;
  size_t len;
  uint8_t *plain = tu_read_file(tu_data("kineto/h200_cnn_fp32.pt.trace.json"), &len);
  assert_non_null(plain);
  char *gzp = tu_join(tmpdir, "t.json.gz");
  gzFile gz = gzopen(gzp, "wb");
  assert_non_null(gz);
  assert_int_equal(gzwrite(gz, plain, (unsigned)len), (int)len);
  assert_int_equal(gzclose(gz), Z_OK);
  tbe_trace *a = import_ok(tu_data("kineto/h200_cnn_fp32.pt.trace.json"));
  tbe_trace *b = import_ok(gzp);
  assert_int_equal(a->nevents, b->nevents);
  assert_int_equal(a->nargs, b->nargs);
  assert_int_equal(a->nflows, b->nflows);
  for (size_t i = 0; i < a->nevents; i++) {
    assert_int_equal(a->events[i].start_ns, b->events[i].start_ns);
    assert_int_equal(a->events[i].dur_ns, b->events[i].dur_ns);
    assert_int_equal(a->events[i].kind, b->events[i].kind);
  }
  tbe_trace_free(a);
  tbe_trace_free(b);
  /* a gzip stream cut in the middle of the object form: a parse error */
  uint8_t *gzdata = tu_read_file(gzp, &len);
  char *cut = write_tmp("cut.json.gz", gzdata, len / 2);
  tbe_trace *t = NULL;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  tbe_import_error err;
  assert_int_equal(tbe_import_file(t, cut, NULL, &err), TBE_EPARSE);
  assert_non_null(strstr(err.message, "truncated"));
  assert_true(err.offset > 0);
  tbe_trace_free(t);
  free(cut);
  free(gzdata);
  /* a bare array whose gzip stream was cut between two events (a killed
   * writer): the events before the cut are kept, with a warning */
  const char *ev = "{\"ph\":\"X\",\"name\":\"k\",\"ts\":1,\"dur\":1,\"pid\":1,\"tid\":1},\n";
  gz = gzopen(gzp, "wb");
  gzwrite(gz, "[", 1);
  gzwrite(gz, ev, (unsigned)strlen(ev));
  gzwrite(gz, ev, (unsigned)strlen(ev));
  assert_int_equal(gzflush(gz, Z_FULL_FLUSH), Z_OK);
  long at = (long)gzoffset(gz);
  for (int i = 0; i < 100; i++) gzwrite(gz, ev, (unsigned)strlen(ev));
  gzwrite(gz, "]", 1);
  gzclose(gz);
  gzdata = tu_read_file(gzp, &len);
  assert_true(at > 0 && (size_t)at < len);
  cut = write_tmp("killed.json.gz", gzdata, (size_t)at);
  t = import_ok(cut);
  assert_int_equal(t->nevents, 2);
  assert_int_equal(t->ended_early, 1);
  assert_int_equal(t->nwarnings, 1);
  assert_non_null(strstr(tbe_trace_str(t, t->warnings[0]), "truncated"));
  tbe_trace_free(t);
  free(cut);
  free(gzdata);
  free(gzp);
  free(plain);
}

static void test_malformed_offsets(void **s) {
  (void)s;
  tbe_import_error err;
  /* a doubled comma on line 2 */
  const char *j1 = "{\"traceEvents\": [\n  {\"ph\": \"X\",, \"ts\": 1}]}";
  tbe_trace *t = import_text(j1, TBE_EPARSE, &err);
  uint64_t off = (uint64_t)(strstr(j1, ",,") - j1) + 1;
  assert_int_equal(err.offset, off);
  assert_int_equal(err.line, 2);
  assert_int_equal(err.column, off - (uint64_t)(strchr(j1, '\n') - j1));
  char want[64];
  snprintf(want, sizeof want, "byte %llu (line 2, column %llu)", (unsigned long long)off,
           (unsigned long long)err.column);
  assert_non_null(strstr(err.message, want));
  assert_null(strchr(err.message, '\n'));
  tbe_trace_free(t);
  /* an invalid character */
  const char *j2 = "[\n{\"ph\":\"X\"},\n{\"ph\": X}]";
  t = import_text(j2, TBE_EPARSE, &err);
  assert_int_equal(err.offset, (uint64_t)(strrchr(j2, 'X') - j2));
  assert_int_equal(err.line, 3);
  assert_int_equal(err.column, 8);
  tbe_trace_free(t);
  /* a missing comma between events */
  const char *j3 = "[{\"ph\":\"X\"} {\"ph\":\"X\"}]";
  t = import_text(j3, TBE_EPARSE, &err);
  assert_int_equal(err.offset, 12);
  assert_int_equal(err.line, 1);
  assert_int_equal(err.column, 13);
  tbe_trace_free(t);
  /* semantic errors point at the event */
  const char *j4 = "[{\"ph\":\"X\"},\n {\"ph\":\"X\",\"ts\":\"soon\"}]";
  t = import_text(j4, TBE_EPARSE, &err);
  assert_int_equal(err.offset, 14);
  assert_int_equal(err.line, 2);
  assert_int_equal(err.column, 2);
  assert_non_null(strstr(err.message, "ts is not a number"));
  tbe_trace_free(t);
  const char *j5 = "{\"traceEvents\": 5}";
  t = import_text(j5, TBE_EPARSE, &err);
  assert_non_null(strstr(err.message, "traceEvents is not an array"));
  tbe_trace_free(t);
  const char *j6 = "[1]";
  t = import_text(j6, TBE_EPARSE, &err);
  assert_non_null(strstr(err.message, "not an object"));
  tbe_trace_free(t);
  /* an error beyond the first input chunk: exact offset still */
  size_t big = 600 * 1024;
  char *j7 = malloc(big + 64);
  size_t n = 0;
  j7[n++] = '[';
  while (n < big) n += (size_t)sprintf(j7 + n, "{\"ph\":\"X\",\"ts\":%zu,\"pid\":1,\"tid\":1},\n", n);
  size_t bad = n;
  n += (size_t)sprintf(j7 + n, "}]");
  char *p = write_tmp("big.json", j7, n);
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  assert_int_equal(tbe_import_file(t, p, NULL, &err), TBE_EPARSE);
  assert_int_equal(err.offset, bad);
  uint64_t lines = 1;
  for (size_t i = 0; i < bad; i++) lines += j7[i] == '\n';
  assert_int_equal(err.line, lines);
  assert_int_equal(err.column, 1);
  tbe_trace_free(t);
  free(p);
  free(j7);
}

static void test_unterminated_string(void **s) {
  (void)s;
  tbe_import_error err;
  const char *j = "[{\"ph\":\"X\",\"name\":\"abc";
  tbe_trace *t = import_text(j, TBE_EPARSE, &err);
  assert_int_equal(err.offset, strlen(j));
  assert_int_equal(err.line, 1);
  assert_int_equal(err.column, strlen(j) + 1);
  assert_non_null(strstr(err.message, "inside a trace event"));
  tbe_trace_free(t);
  /* a raw control character inside a string is not JSON */
  const char *j2 = "[{\"ph\":\"X\",\"name\":\"a\tb\"}]";
  t = import_text(j2, TBE_EPARSE, &err);
  assert_int_equal(err.offset, (uint64_t)(strchr(j2, '\t') - j2));
  tbe_trace_free(t);
}

static tbe_trace *import_text_opts(const char *json, size_t len, const tbe_import_options *o,
                                   int expect_rc, tbe_import_error *err) {
  char *p = write_tmp("t.json", json, len);
  tbe_trace *t = NULL;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  tbe_import_error e2;
  if (!err) err = &e2;
  int rc = tbe_import_file(t, p, o, err);
  if (rc != expect_rc) fprintf(stderr, "rc %d: %s\n", rc, err->message);
  assert_int_equal(rc, expect_rc);
  free(p);
  return t;
}

/* Flow ends of one (id, cat) wait in order: each end meets the oldest
 * waiting end of the other side (s/f pairs with ids reused while earlier
 * ones are open, as in long traces), and a pair of another cat or id
 * never meets them. */
static void test_flow_order(void **s) {
  (void)s;
  const char *j =
      "[{\"ph\":\"s\",\"cat\":\"fb\",\"id\":7,\"ts\":1,\"pid\":1,\"tid\":1},"
      "{\"ph\":\"s\",\"cat\":\"fb\",\"id\":7,\"ts\":2,\"pid\":1,\"tid\":1},"
      "{\"ph\":\"s\",\"cat\":\"other\",\"id\":7,\"ts\":3,\"pid\":1,\"tid\":1},"
      "{\"ph\":\"f\",\"cat\":\"fb\",\"id\":7,\"ts\":10,\"pid\":1,\"tid\":2},"
      "{\"ph\":\"s\",\"cat\":\"fb\",\"id\":7,\"ts\":4,\"pid\":1,\"tid\":1},"
      "{\"ph\":\"f\",\"cat\":\"fb\",\"id\":7,\"ts\":20,\"pid\":1,\"tid\":2},"
      "{\"ph\":\"f\",\"cat\":\"fb\",\"id\":\"0x7\",\"ts\":30,\"pid\":1,\"tid\":2},"
      "{\"ph\":\"f\",\"cat\":\"fb\",\"id\":8,\"ts\":40,\"pid\":1,\"tid\":2}]";
  tbe_trace *t = import_text_opts(j, strlen(j), NULL, 0, NULL);
  /* f@10 meets s@1, f@20 s@2, f@30 ("0x7" is id 7) s@4; s@3 (other cat)
   * and f@40 (id 8) stay unpaired. */
  assert_int_equal(t->nflows, 3);
  int64_t want[3][2] = {{1000, 10000}, {2000, 20000}, {4000, 30000}};
  for (int k = 0; k < 3; k++) {
    int found = 0;
    for (size_t i = 0; i < t->nflows; i++)
      found |= t->flows[i].src_ns == want[k][0] && t->flows[i].dst_ns == want[k][1];
    assert_true(found);
  }
  int warned = 0;
  for (size_t i = 0; i < t->nwarnings; i++)
    warned |= strstr(tbe_trace_str(t, t->warnings[i]), "2 flow ends (s/f) without") != NULL;
  assert_true(warned);
  tbe_trace_free(t);
}

/* Nesting is bounded by max_depth (default 1000) everywhere in the
 * document, skipped values included: refused at the exact bracket that
 * passes it, with the flag that raises it; raised, the same input reads. */
static void test_deep_nesting(void **s) {
  (void)s;
  const char *pre = "[{\"ph\":\"i\",\"ts\":1,\"pid\":1,\"tid\":1,\"args\":{\"deep\":";
  for (int depth = 1; depth <= 5000; depth += 4999) {
    size_t cap = (size_t)depth * 2 + 256;
    char *j = malloc(cap), *want = malloc(cap);
    size_t n = (size_t)sprintf(j, "%s", pre);
    size_t w = 0;
    for (int i = 0; i < depth; i++) j[n++] = '[', want[w++] = '[';
    j[n++] = '7', want[w++] = '7';
    for (int i = 0; i < depth; i++) j[n++] = ']', want[w++] = ']';
    want[w] = 0;
    n += (size_t)sprintf(j + n, "}}]");
    tbe_trace *t;
    tbe_import_error err;
    if (depth < 990) {
      t = import_text(j, 0, NULL);
    } else {
      t = import_text(j, TBE_ETOOBIG, &err);
      assert_non_null(strstr(err.message, "nested deeper than the limit"));
      assert_non_null(strstr(err.message, "raise it with --max-depth"));
      /* levels: '[' 1, '{' 2, args '{' 3, then the k-th '[' is 3 + k */
      assert_int_equal(err.offset, strlen(pre) + (1001 - 3) - 1); /* level 1001: k = 998 */
      assert_null(strchr(err.message, '\n'));
      tbe_trace_free(t);
      tbe_import_options o = {.size = sizeof o, .max_depth = 6000};
      t = import_text_opts(j, n, &o, 0, NULL);
    }
    const tbe_arg *a = find_arg(t, &t->events[0], "deep");
    assert_non_null(a);
    assert_int_equal(a->type, TBE_ARG_JSON);
    assert_string_equal(tbe_trace_str(t, a->v.s), want);
    tbe_trace_free(t);
    free(j);
    free(want);
  }
  /* in a skipped top-level value too: a bracket bomb never reaches yajl */
  char *j = malloc(20000);
  size_t n = (size_t)sprintf(j, "{\"other\":");
  for (int i = 0; i < 9000; i++) j[n++] = '[';
  for (int i = 0; i < 9000; i++) j[n++] = ']';
  n += (size_t)sprintf(j + n, ",\"traceEvents\":[]}");
  j[n] = 0;
  tbe_import_error err;
  tbe_trace *t = import_text(j, TBE_ETOOBIG, &err);
  assert_int_equal(err.offset, 9 + 999);
  tbe_trace_free(t);
  tbe_import_options o = {.size = sizeof o, .max_depth = 9001};
  t = import_text_opts(j, n, &o, 0, NULL);
  tbe_trace_free(t);
  free(j);
}

/* B/E pairs, counters, flows, metadata, string pids: other producers. */
static void test_generic_producers(void **s) {
  (void)s;
  tbe_trace *t = import_text(
      "{\"traceEvents\":["
      "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":5,\"args\":{\"name\":\"trainer\"}},"
      "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":5,\"tid\":6,\"args\":{\"name\":\"main\"}},"
      "{\"ph\":\"B\",\"name\":\"outer\",\"cat\":\"c\",\"pid\":5,\"tid\":6,\"ts\":10,\"args\":{\"k\":1}},"
      "{\"ph\":\"B\",\"name\":\"inner\",\"pid\":5,\"tid\":6,\"ts\":11},"
      "{\"ph\":\"E\",\"pid\":5,\"tid\":6,\"ts\":12},"
      "{\"ph\":\"E\",\"pid\":5,\"tid\":6,\"ts\":20,\"args\":{\"r\":\"done\"}},"
      "{\"ph\":\"E\",\"pid\":5,\"tid\":6,\"ts\":21},"
      "{\"ph\":\"B\",\"name\":\"open\",\"pid\":5,\"tid\":6,\"ts\":25},"
      "{\"ph\":\"C\",\"name\":\"mem\",\"pid\":5,\"ts\":30,\"args\":{\"used\":10,\"free\":2.5}},"
      "{\"ph\":\"C\",\"name\":\"mem\",\"pid\":5,\"ts\":31,\"args\":{\"used\":11,\"free\":1.5}},"
      "{\"ph\":\"s\",\"id\":\"0x10\",\"cat\":\"fwdbwd\",\"name\":\"fb\",\"pid\":5,\"tid\":6,\"ts\":10},"
      "{\"ph\":\"f\",\"id\":16,\"cat\":\"fwdbwd\",\"name\":\"fb\",\"pid\":5,\"tid\":7,\"ts\":40,\"bp\":\"e\"},"
      "{\"ph\":\"f\",\"id\":99,\"cat\":\"fwdbwd\",\"pid\":5,\"tid\":7,\"ts\":41},"
      "{\"ph\":\"X\",\"name\":\"span\",\"pid\":\"Spans\",\"tid\":\"Profiler\",\"ts\":1,\"dur\":50},"
      "{\"ph\":\"P\",\"name\":\"sample\",\"pid\":5,\"tid\":6,\"ts\":3},"
      "{}"
      "]}",
      0, NULL);
  assert_int_equal(count_kind(t, TBE_EV_GENERIC), 4); /* outer, inner, open, span */
  assert_int_equal(count_kind(t, TBE_EV_COUNTER), 4);
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_event *e = &t->events[i];
    const char *nm = tbe_trace_str(t, e->name);
    if (!strcmp(nm, "outer")) {
      assert_int_equal(e->start_ns, 10000);
      assert_int_equal(e->dur_ns, 10000);
      assert_string_equal(tbe_trace_str(t, e->cat), "c");
      assert_int_equal(e->nargs, 2);
      assert_string_equal(tbe_trace_str(t, find_arg(t, e, "r")->v.s), "done");
      assert_string_equal(tbe_trace_str(t, t->tracks[e->track].name), "main");
    } else if (!strcmp(nm, "inner")) {
      assert_int_equal(e->dur_ns, 1000);
    } else if (!strcmp(nm, "open")) {
      assert_int_equal(e->dur_ns, 51000 - 25000); /* to the end of the trace (span ends at 51) */
    } else if (!strcmp(nm, "span")) {
      assert_int_equal(t->tracks[e->track].type, TBE_TRACK_OTHER);
      assert_string_equal(tbe_trace_str(t, t->tracks[e->track].name), "Profiler");
      int found = 0;
      for (size_t p = 0; p < t->nprocesses; p++)
        found |= t->processes[p].pid == t->tracks[e->track].pid &&
                 !strcmp(tbe_trace_str(t, t->processes[p].name), "Spans");
      assert_true(found);
    } else if (e->kind == TBE_EV_COUNTER) {
      assert_string_equal(tbe_trace_str(t, t->tracks[e->track].name), "mem");
      double v = tbe_trace_counter(t, e)->value;
      if (!strcmp(nm, "used")) assert_true(v == (e->start_ns == 30000 ? 10 : 11));
      else assert_true(v == (e->start_ns == 30000 ? 2.5 : 1.5));
    }
  }
  assert_int_equal(t->nflows, 1);
  assert_int_equal(t->flows[0].id, 16);
  assert_int_equal(t->flows[0].src_ns, 10000);
  assert_int_equal(t->flows[0].dst_ns, 40000);
  assert_int_equal(t->flows[0].dst_enclosing, 1);
  assert_string_equal(tbe_trace_str(t, t->flows[0].cat), "fwdbwd");
  int p5 = 0;
  for (size_t p = 0; p < t->nprocesses; p++)
    p5 |= t->processes[p].pid == 5 && !strcmp(tbe_trace_str(t, t->processes[p].name), "trainer");
  assert_true(p5);
  /* warnings: 1 unmatched E, 1 open B, 1 unpaired flow end, 1 unsupported phase */
  assert_int_equal(t->nwarnings, 4);
  tbe_trace_free(t);
}

/* Kineto GPU kinds from synthetic events: memcpy names, sync, distributedInfo. */
static void test_kineto_gpu_kinds(void **s) {
  (void)s;
  tbe_trace *t = import_text(
      "{\"schemaVersion\":1,\"distributedInfo\":{\"backend\":\"nccl\",\"rank\":3,\"world_size\":8},"
      "\"traceEvents\":["
      "{\"ph\":\"X\",\"cat\":\"gpu_memcpy\",\"name\":\"Memcpy HtoD (Pageable -> Device)\",\"pid\":1,"
      "\"tid\":7,\"ts\":1,\"dur\":2,\"args\":{\"device\":1,\"context\":1,\"stream\":7,"
      "\"correlation\":5,\"bytes\":4096,\"memory bandwidth (GB/s)\":2.0}},"
      "{\"ph\":\"X\",\"cat\":\"gpu_memset\",\"name\":\"Memset (Device)\",\"pid\":1,\"tid\":7,\"ts\":4,"
      "\"dur\":1,\"args\":{\"device\":1,\"stream\":7,\"correlation\":6,\"bytes\":64}},"
      "{\"ph\":\"X\",\"cat\":\"cuda_sync\",\"name\":\"Stream Wait Event\",\"pid\":1,\"tid\":7,\"ts\":6,"
      "\"dur\":1,\"args\":{\"cuda_sync_kind\":\"Stream Wait Event\",\"stream\":7,\"correlation\":7,"
      "\"device\":1,\"wait_on_stream\":9,\"wait_on_cuda_event_id\":12}},"
      "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaMemcpyAsync\",\"pid\":100,\"tid\":101,"
      "\"ts\":0.5,\"dur\":1,\"args\":{\"cbid\":41,\"correlation\":5}},"
      "{\"ph\":\"X\",\"cat\":\"python_function\",\"name\":\"f\",\"pid\":100,\"tid\":101,\"ts\":0,\"dur\":9},"
      "{\"ph\":\"X\",\"cat\":\"overhead\",\"name\":\"Activity Buffer Request\",\"pid\":-1,\"tid\":0,\"ts\":0,\"dur\":9}"
      "]}",
      0, NULL);
  assert_int_equal(t->rank, 3);
  assert_int_equal(t->world_size, 8);
  assert_string_equal(tbe_trace_str(t, t->dist_backend), "nccl");
  assert_int_equal(count_kind(t, TBE_EV_PYTHON), 1);
  assert_int_equal(count_kind(t, TBE_EV_OVERHEAD), 1);
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_event *e = &t->events[i];
    const tbe_track *tr = &t->tracks[e->track];
    if (e->kind == TBE_EV_MEMCPY) {
      const tbe_memcpy *m = tbe_trace_memcpy(t, e);
      assert_int_equal(m->bytes, 4096);
      assert_int_equal(m->copy_kind, TBE_COPY_HTOD);
      assert_int_equal(m->src_kind, TBE_MEM_PAGEABLE);
      assert_int_equal(m->dst_kind, TBE_MEM_DEVICE);
      assert_int_equal(tr->type, TBE_TRACK_STREAM);
      assert_int_equal(tr->device, 1);
      assert_int_equal(tr->tid, 7);
      assert_int_equal(e->nargs, 0);
      assert_int_not_equal(e->link, TBE_NONE);
    } else if (e->kind == TBE_EV_MEMSET) {
      assert_int_equal(tbe_trace_memset(t, e)->bytes, 64);
      assert_int_equal(tbe_trace_memset(t, e)->mem_kind, TBE_MEM_DEVICE);
    } else if (e->kind == TBE_EV_SYNC) {
      const tbe_sync *sy = tbe_trace_sync(t, e);
      assert_int_equal(sy->sync_kind, TBE_SYNC_STREAM_WAIT);
      assert_int_equal(sy->stream, 7);
      assert_int_equal(sy->cuda_event, 12);
      assert_int_equal(e->correlation, 7);
      assert_non_null(find_arg(t, e, "wait_on_stream"));
    } else if (e->kind == TBE_EV_RUNTIME) {
      assert_int_equal(find_arg(t, e, "cbid")->v.i, 41);
      assert_int_equal(tr->type, TBE_TRACK_THREAD);
    } else if (e->kind == TBE_EV_OVERHEAD) {
      assert_int_equal(tr->type, TBE_TRACK_OTHER);
    }
  }
  tbe_trace_free(t);
}


/* Older Kineto: GPU rows with "tid": "stream 7", absolute epoch µs. */
static void test_old_kineto(void **s) {
  (void)s;
  tbe_trace *t = import_text(
      "{\"traceEvents\":["
      "{\"ph\":\"X\",\"cat\":\"Kernel\",\"name\":\"k\",\"pid\":0,\"tid\":\"stream 7\","
      "\"ts\":1650000000000000.5,\"dur\":3,\"args\":{\"device\":0,\"correlation\":9}},"
      "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k2\",\"pid\":0,\"tid\":\"stream 7\","
      "\"ts\":1650000000000004,\"dur\":1,\"args\":{\"device\":0,\"correlation\":10}},"
      "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":\"stream 7\","
      "\"args\":{\"name\":\"stream 7\"}}]}",
      0, NULL);
  assert_int_equal(t->nevents, 2);
  size_t kern = 0;
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_event *e = &t->events[i];
    if (e->kind != TBE_EV_KERNEL) continue;
    kern++;
    assert_int_equal(t->tracks[e->track].type, TBE_TRACK_STREAM);
    assert_int_equal(t->tracks[e->track].tid, 7);
    assert_string_equal(tbe_trace_str(t, t->tracks[e->track].name), "stream 7");
    assert_int_equal(e->start_ns, INT64_C(1650000000000004000));
  }
  assert_int_equal(kern, 1); /* "Kernel" is not Kineto's category: generic */
  tbe_trace_free(t);
}

/* The byte source: plain, gzip, concatenated members, corrupt data. */
static void test_input(void **s) {
  (void)s;
  const char *text = "{\"traceEvents\": []}\n";
  char *plain = write_tmp("in.json", text, strlen(text));
  char *gzp = tu_join(tmpdir, "in.json.gz");
  gzFile gz = gzopen(gzp, "wb");
  gzwrite(gz, text, 10);
  gzclose(gz);
  gz = gzopen(gzp, "ab"); /* a second member */
  gzwrite(gz, text + 10, (unsigned)strlen(text) - 10);
  gzclose(gz);
  const char *paths[] = {plain, gzp};
  for (int i = 0; i < 2; i++) {
    tbe__input in;
    assert_int_equal(tbe__input_open(&in, paths[i], NULL), 0);
    assert_int_equal(in.gzip, i);
    uint8_t *d;
    size_t n;
    assert_int_equal(tbe__input_read_all(&in, &d, &n, 1 << 20), 0);
    assert_int_equal(n, strlen(text));
    assert_memory_equal(d, text, n);
    assert_int_equal(tbe__input_offset(&in), n);
    assert_int_equal(tbe__input_done(&in), tbe__input_size(&in));
    free(d);
    tbe__input_close(&in);
    /* the whole thing also imports */
    tbe_trace *t = import_ok(paths[i]);
    tbe_trace_free(t);
  }
  /* too big for the limit */
  tbe__input in;
  uint8_t *d;
  size_t n;
  assert_int_equal(tbe__input_open(&in, plain, NULL), 0);
  assert_int_equal(tbe__input_read_all(&in, &d, &n, 5), TBE_ETOOBIG);
  tbe__input_close(&in);
  /* corrupt deflate data */
  size_t gl;
  uint8_t *g = tu_read_file(gzp, &gl);
  for (size_t i = 12; i < 18 && i < gl; i++) g[i] ^= 0x5a;
  char *bad = write_tmp("bad.json.gz", g, gl);
  assert_int_equal(tbe__input_open(&in, bad, NULL), 0);
  int rc = tbe__input_read_all(&in, &d, &n, 1 << 20);
  assert_true(rc == TBE_ECORRUPT || rc == TBE_ETRUNCATED);
  tbe__input_close(&in);
  tbe_trace *t = NULL;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  tbe_import_error err;
  assert_int_not_equal(tbe_import_file(t, bad, NULL, &err), 0);
  assert_true(err.message[0] != 0);
  tbe_trace_free(t);
  /* a missing file */
  assert_int_equal(tbe__input_open(&in, "/nonexistent/x.json", NULL), -ENOENT);
  free(bad);
  free(g);
  free(gzp);
  free(plain);
}

static void progress_cb(void *ctx, uint64_t done, uint64_t total) {
  uint64_t *v = ctx;
  v[0]++;
  v[1] = done;
  v[2] = total;
}

static void test_progress(void **s) {
  (void)s;
  uint64_t v[3] = {0, 0, 0};
  tbe_import_options o = {.size = sizeof o, .progress = progress_cb, .progress_ctx = v};
  tbe_trace *t = NULL;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  const char *path = tu_data("jax/h200_matmul.trace.json.gz");
  assert_int_equal(tbe_import_file(t, path, &o, NULL), 0);
  size_t len;
  uint8_t *d = tu_read_file(path, &len);
  free(d);
  assert_true(v[0] >= 1);
  assert_int_equal(v[1], len);
  assert_int_equal(v[2], len);
  tbe_trace_free(t);
}

/* Allocation failures anywhere in the model while importing: TBE_ENOMEM
 * with a message, never a crash or a leak. */
static void test_alloc_failures(void **s) {
  (void)s;
  tu_import_alloc_sweep(tu_data("kineto/h200_cnn_fp32.pt.trace.json"), 64);
}

/* The threaded (parallel chunked) and one-thread imports build the same
 * model: same events in the same order, same string ids, same args. */
extern int tbe__chrome_json_threads;
extern int tbe__chrome_json_workers;
extern size_t tbe__chrome_json_chunk;
extern size_t tbe__chrome_json_piece;

static void same_model(const tbe_trace *a, const tbe_trace *b) {
  assert_int_equal(a->nevents, b->nevents);
  assert_int_equal(a->nargs, b->nargs);
  assert_int_equal(a->ntracks, b->ntracks);
  assert_int_equal(a->nflows, b->nflows);
  assert_int_equal(a->ndevices, b->ndevices);
  assert_int_equal(a->nsteps, b->nsteps);
  assert_int_equal(a->nkernels, b->nkernels);
  assert_int_equal(a->nmemcpys, b->nmemcpys);
  assert_int_equal(a->nmemsets, b->nmemsets);
  assert_int_equal(a->nsyncs, b->nsyncs);
  assert_int_equal(a->ncounters, b->ncounters);
  assert_int_equal(a->nmemory, b->nmemory);
  assert_int_equal(a->nprocesses, b->nprocesses);
  assert_int_equal(a->nwarnings, b->nwarnings);
  assert_int_equal(a->base_time_ns, b->base_time_ns);
  assert_int_equal(a->trace_name, b->trace_name);
  assert_int_equal(a->ended_early, b->ended_early);
  /* Every string, by id: interning happened in the same order. */
  size_t ns = tbe_trace_nstrings(a);
  assert_int_equal(ns, tbe_trace_nstrings(b));
  for (size_t i = 0; i < ns; i++)
    assert_string_equal(tbe_trace_str(a, (tbe_str)i), tbe_trace_str(b, (tbe_str)i));
  /* tbe_event has no padding: every field at once. */
  if (a->nevents) assert_memory_equal(a->events, b->events, a->nevents * sizeof *a->events);
  for (size_t k = 0; k < a->nargs; k++) {
    const tbe_arg *p = &a->args[k], *q = &b->args[k];
    assert_int_equal(p->key, q->key);
    assert_int_equal(p->type, q->type);
    if (p->type == TBE_ARG_STR || p->type == TBE_ARG_JSON) assert_int_equal(p->v.s, q->v.s);
    else assert_memory_equal(&p->v, &q->v, sizeof p->v);
  }
  if (a->nkernels) assert_memory_equal(a->kernels, b->kernels, a->nkernels * sizeof *a->kernels);
  if (a->nmemcpys) assert_memory_equal(a->memcpys, b->memcpys, a->nmemcpys * sizeof *a->memcpys);
  if (a->nmemsets) assert_memory_equal(a->memsets, b->memsets, a->nmemsets * sizeof *a->memsets);
  if (a->ncounters) assert_memory_equal(a->counters, b->counters, a->ncounters * sizeof *a->counters);
  for (size_t i = 0; i < a->ntracks; i++) {
    assert_int_equal(a->tracks[i].type, b->tracks[i].type);
    assert_int_equal(a->tracks[i].pid, b->tracks[i].pid);
    assert_int_equal(a->tracks[i].tid, b->tracks[i].tid);
    assert_int_equal(a->tracks[i].device, b->tracks[i].device);
    assert_int_equal(a->tracks[i].name, b->tracks[i].name);
  }
  for (size_t i = 0; i < a->nflows; i++) {
    assert_int_equal(a->flows[i].id, b->flows[i].id);
    assert_int_equal(a->flows[i].src_ns, b->flows[i].src_ns);
    assert_int_equal(a->flows[i].dst_ns, b->flows[i].dst_ns);
    assert_int_equal(a->flows[i].name, b->flows[i].name);
  }
  for (size_t i = 0; i < a->nprocesses; i++) assert_int_equal(a->processes[i].name, b->processes[i].name);
  for (size_t i = 0; i < a->nwarnings; i++)
    assert_string_equal(tbe_trace_str(a, a->warnings[i]), tbe_trace_str(b, b->warnings[i]));
}

typedef struct knobs {
  int threads, workers;
  size_t chunk, piece;
} knobs;

static knobs set_knobs(knobs k) {
  knobs old = {tbe__chrome_json_threads, tbe__chrome_json_workers, tbe__chrome_json_chunk,
               tbe__chrome_json_piece};
  tbe__chrome_json_threads = k.threads;
  tbe__chrome_json_workers = k.workers;
  tbe__chrome_json_chunk = k.chunk;
  tbe__chrome_json_piece = k.piece;
  return old;
}

/* Imports `path` with knobs `k`: the model (also on failure) and the
 * return code and error. */
static tbe_trace *import_with(const char *path, knobs k, int *rc, tbe_import_error *err) {
  knobs old = set_knobs(k);
  tbe_trace *t = NULL;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  memset(err, 0, sizeof *err);
  *rc = tbe_import_file(t, path, NULL, err);
  set_knobs(old);
  return t;
}

/* One thread vs threaded with `k`: the same result, to the byte. */
static void same_as_serial(const char *path, knobs k) {
  knobs one = {0, 0, 0, 0};
  int ra, rb;
  tbe_import_error ea, eb;
  tbe_trace *a = import_with(path, one, &ra, &ea);
  tbe_trace *b = import_with(path, k, &rb, &eb);
  if (ra != rb || strcmp(ea.message, eb.message))
    fprintf(stderr, "workers %d chunk %zu piece %zu:\n  one: %d %s\n  par: %d %s\n", k.workers,
            k.chunk, k.piece, ra, ea.message, rb, eb.message);
  assert_int_equal(ra, rb);
  if (ra) {
    assert_string_equal(ea.message, eb.message);
    assert_int_equal(ea.offset, eb.offset);
    assert_int_equal(ea.line, eb.line);
    assert_int_equal(ea.column, eb.column);
  } else {
    same_model(a, b);
  }
  tbe_trace_free(a);
  tbe_trace_free(b);
}

static const char *const golden[] = {"kineto/h200_cnn_fp32.pt.trace.json",
                                     "kineto/h200_cnn_bf16.pt.trace.json",
                                     "kineto/h200_add_loop.trace.json", "jax/h200_matmul.trace.json.gz"};

/* Under a sanitizer the one-byte-chunk cases (a thread handoff per event)
 * take minutes; there they run on the first golden trace only. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TU_SANITIZED 1
#else
#define TU_SANITIZED 0
#endif

static void test_threads_same_model(void **s) {
  (void)s;
  for (size_t i = 0; i < sizeof golden / sizeof golden[0]; i++) {
    /* default chunks, 1/2/4 workers; small chunks and odd scan pieces */
    for (int w = 1; w <= 4; w *= 2) same_as_serial(tu_data(golden[i]), (knobs){1, w, 0, 0});
    same_as_serial(tu_data(golden[i]), (knobs){1, 3, 4096, 0});
    if (!TU_SANITIZED || i == 0) same_as_serial(tu_data(golden[i]), (knobs){1, 2, 1, 4093});
    same_as_serial(tu_data(golden[i]), (knobs){1, 4, 20000, 777});
  }
}

/* A small trace with every kind of awkward text: braces, brackets, commas,
 * quotes and backslashes inside strings, \u escapes (also surrogate
 * pairs), nested args, escaped keys, E/B pairs, metadata, flows. */
static const char nasty[] =
    "{\"schemaVersion\": 1, \"deviceProperties\": [{\"id\": 0, \"name\": \"GPU \\\"0\\\" {x}\", "
    "\"numSms\": 132}],\n \"traceEvents\": [\n"
    "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"a},{\\\"ph\\\":\\\"X\\\"]\", \"pid\": 1, "
    "\"tid\": 2, \"ts\": 10.5, \"dur\": 2, \"args\": {\"k]\": \"v,}\", \"n\\\\\": [1, {\"x\": "
    "\"]]\"}], \"u\": \"\\u00e9\\ud83d\\ude00\\u005d\"}},\n"
    "{\"ph\": \"B\", \"name\": \"\\\\\", \"pid\": 1, \"tid\": 2, \"ts\": 11},"
    "{\"ph\": \"E\", \"pid\": 1, \"tid\": 2, \"ts\": 12, \"args\": {\"e\": \"\\\"}\"}},\n"
    "  {\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 1, \"tid\": 2, \"args\": {\"name\": "
    "\"th [1]\"}} ,{\"ph\": \"s\", \"id\": 7, \"cat\": \"fwdbwd\", \"pid\": 1, \"tid\": 2, \"ts\": "
    "10.5}, {\"ph\": \"f\", \"id\": 7, \"cat\": \"fwdbwd\", \"pid\": 1, \"tid\": 2, \"ts\": 13, "
    "\"bp\": \"e\"},\n"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k<{[\\\"]}>\\t\", \"pid\": 0, \"tid\": 7, "
    "\"ts\": 12.25, \"dur\": 1.125, \"args\": {\"grid\": [1, 2, 3], \"block\": [4, 5, 6], "
    "\"correlation\": 9, \"device\": 0, \"stream\": 7, \"x\": null, \"y\": true, \"z\": -1.5e3}},"
    "{\"ph\": \"C\", \"name\": \"mem\", \"pid\": 1, \"ts\": 14, \"args\": {\"a\": 1, \"b\": 2.5}},"
    "{\"ph\": \"i\", \"name\": \"[memory]\", \"pid\": 1, \"tid\": 2, \"ts\": 15, \"args\": "
    "{\"Bytes\": 64, \"Addr\": 1234}}\n"
    "], \"traceName\": \"t,]\\\"\", \"baseTimeNanoseconds\": 1000000000}\n";

static void test_parallel_nasty(void **s) {
  (void)s;
  char *p = write_tmp("nasty.json", nasty, sizeof nasty - 1);
  /* Sanity: the one-thread import works and keeps the strings. */
  int rc;
  tbe_import_error e;
  tbe_trace *t = import_with(p, (knobs){0, 0, 0, 0}, &rc, &e);
  assert_int_equal(rc, 0);
  assert_int_equal(t->nevents, 6); /* X, B/E, kernel, 2 counters, [memory] */
  assert_string_equal(tbe_trace_str(t, t->events[0].name), "a},{\"ph\":\"X\"]");
  tbe_trace_free(t);
  /* Chunk cuts after every element combination, scan pieces split at
   * every byte position (inside strings, escapes, \u sequences). */
  size_t n = sizeof nasty - 1;
  for (size_t c = 1; c <= n; c += 1 + c / 8)
    same_as_serial(p, (knobs){1, 1 + (int)(c % 4), c, 1 + c % 13});
  for (size_t piece = 1; piece <= n; piece += TU_SANITIZED ? 5 : 1)
    same_as_serial(p, (knobs){1, 2, 1, piece});
  free(p);
}

/* Malformed, truncated and odd inputs: the threaded path reports exactly
 * what the one-thread path reports (message, offset, line, column), or
 * builds the same model, for cuts at every chunk size. */
static void test_parallel_errors(void **s) {
  (void)s;
  static const char *const cases[] = {
      "[{\"ph\":\"X\",\"ts\":1,\"pid\":1,\"tid\":1},{\"ph\":\"X\",\"ts\":2,\"pid\":1,\"tid\":1}",
      "[{\"ph\":\"X\",\"ts\":1,\"pid\":1,\"tid\":1},{\"ph\":\"X\",\"ts\":2,\"pid\":1,\"tid\":1},",
      "[{\"ph\":\"X\",\"ts\":1,\"pid\":1,\"tid\":1},{\"ph\":\"X\",\"ts\":2,\"pid\":1,\"tid\":1},]\n",
      "[{\"ph\":\"X\",\"ts\":1,\"pid\":1,\"tid\":1},{\"ph\":\"X\",\"ts\":2,\"pid\":1,\"tid\":1},] x",
      "[{\"ph\":\"X\",\"ts\":1,\"pid\":1,\"tid\":1},{\"ph\":\"X\",\"ts\":2,\"pid\":1,\"ti",
      "{\"traceEvents\":[{\"ph\":\"X\",\"ts\":1},{\"ph\":\"X\",\"ts\":2},]}",
      "{\"traceEvents\":[{\"ph\":\"X\",\"ts\":1},,{\"ph\":\"X\",\"ts\":2}]}",
      "{\"traceEvents\":[{\"ph\":\"X\",\"ts\":1},{\"ph\":\"X\",\"ts\":\"2\"},{\"ph\":\"X\"}]}",
      "{\"traceEvents\":[{\"ph\":\"X\",\"ts\":1},3,{\"ph\":\"X\"}]}",
      "{\"traceEvents\":[{\"ph\":\"X\",\"ts\":1},{\"ph\":\"X\",\"ts\":2}}]}",
      "{\"traceEvents\":[{\"ph\":\"X\",\"ts\":1},{\"ph\":\"X\",\"ts\":2 \"x\"}]}",
      "{\"traceEvents\":[{\"ph\":\"X\",\"ts\":1},{\"ph\":\"X\",\"ts\":2}]",
      "{\"traceEvents\":[{\"ph\":\"X\",\"ts\":1},{\"ph\":\"X\",\"ts\":2}],}",
      ("{\"traceEvents\":[{\"ph\":\"X\",\"ts\":1}],\"traceEvents\":[{\"ph\":\"X\",\"ts\":3}],"
       "\"baseTimeNanoseconds\":5}"),
      "{\"trace\\u0045vents\":[{\"ph\":\"X\",\"ts\":1},{\"ph\":\"X\",\"ts\":2}]}",
      "{\"a\":{\"traceEvents\":[1,2]},\"traceEvents\":[ ]}",
      "{\"traceEvents\":{\"ph\":\"X\"}}",
      "{\"traceEvents\":[{\"ph\":\"X\",\"ts\":1,\"args\":{\"a\":[{]}}},{\"ph\":\"X\",\"ts\":2}]}",
      "[]",
      "[ {\"ph\":\"i\",\"ts\":1,\"s\":\"g\"} ]  ",
      "{\"traceEvents\":[{\"ph\":\"X\",\"ts\":1},{\"ph\":\"X\",\"ts\":2}]} {",
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *p = write_tmp("e.json", cases[i], strlen(cases[i]));
    size_t n = strlen(cases[i]);
    for (size_t c = 1; c <= n + 1; c += 3)
      same_as_serial(p, (knobs){1, 1 + (int)(c % 3), c, 1 + c % 11});
    free(p);
  }
}

static int setup(void **s) {
  (void)s;
  tmpdir = tu_mkdtemp();
  return tmpdir ? 0 : -1;
}
static int teardown(void **s) {
  (void)s;
  tu_rmrf(tmpdir);
  free(tmpdir);
  return 0;
}

/* The ac2g check: flow ends whose ids name no API call (starts) or no
 * correlation id at all (ends) are counted in a warning, whether the ids
 * come in order (merge walk) or not (binary search). */
static int has_warning(const tbe_trace *t, const char *text) {
  for (size_t i = 0; i < t->nwarnings; i++)
    if (strstr(tbe_trace_str(t, t->warnings[i]), text)) return 1;
  return 0;
}

static void test_ac2g_check(void **s) {
  (void)s;
  static const char head[] =
      "{\"traceEvents\":["
      "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":1,"
      "\"ts\":1,\"dur\":1,\"args\":{\"correlation\":5}},"
      "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":1,"
      "\"ts\":3,\"dur\":1,\"args\":{\"correlation\":3}},"
      "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaGetErrorString\",\"pid\":1,\"tid\":1,"
      "\"ts\":5,\"dur\":1,\"args\":{\"correlation\":7}},"
      "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":6,\"dur\":1,"
      "\"args\":{\"correlation\":5,\"device\":0,\"stream\":7}},"
      "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":8,\"dur\":1,"
      "\"args\":{\"correlation\":3,\"device\":0,\"stream\":7}}";
  static const char *const flows[2] = {
      /* starts out of order, ends in order */
      "{\"ph\":\"s\",\"id\":5,\"pid\":1,\"tid\":1,\"ts\":1,\"cat\":\"ac2g\",\"name\":\"ac2g\"},"
      "{\"ph\":\"s\",\"id\":3,\"pid\":1,\"tid\":1,\"ts\":3,\"cat\":\"ac2g\",\"name\":\"ac2g\"},"
      "{\"ph\":\"s\",\"id\":99,\"pid\":1,\"tid\":1,\"ts\":3,\"cat\":\"ac2g\",\"name\":\"ac2g\"},"
      "{\"ph\":\"f\",\"id\":3,\"pid\":0,\"tid\":7,\"ts\":8,\"cat\":\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\"},"
      "{\"ph\":\"f\",\"id\":5,\"pid\":0,\"tid\":7,\"ts\":6,\"cat\":\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\"},"
      "{\"ph\":\"f\",\"id\":7,\"pid\":1,\"tid\":1,\"ts\":5,\"cat\":\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\"},"
      "{\"ph\":\"f\",\"id\":8,\"pid\":0,\"tid\":7,\"ts\":9,\"cat\":\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\"}",
      /* starts in order, ends out of order */
      "{\"ph\":\"s\",\"id\":3,\"pid\":1,\"tid\":1,\"ts\":3,\"cat\":\"ac2g\",\"name\":\"ac2g\"},"
      "{\"ph\":\"s\",\"id\":5,\"pid\":1,\"tid\":1,\"ts\":1,\"cat\":\"ac2g\",\"name\":\"ac2g\"},"
      "{\"ph\":\"s\",\"id\":99,\"pid\":1,\"tid\":1,\"ts\":3,\"cat\":\"ac2g\",\"name\":\"ac2g\"},"
      "{\"ph\":\"f\",\"id\":8,\"pid\":0,\"tid\":7,\"ts\":9,\"cat\":\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\"},"
      "{\"ph\":\"f\",\"id\":5,\"pid\":0,\"tid\":7,\"ts\":6,\"cat\":\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\"},"
      "{\"ph\":\"f\",\"id\":7,\"pid\":1,\"tid\":1,\"ts\":5,\"cat\":\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\"},"
      "{\"ph\":\"f\",\"id\":3,\"pid\":0,\"tid\":7,\"ts\":8,\"cat\":\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\"}"};
  for (int k = 0; k < 2; k++) {
    char doc[4096];
    snprintf(doc, sizeof doc, "%s,%s]}", head, flows[k]);
    tbe_trace *t = import_text(doc, 0, NULL);
    assert_true(has_warning(t, "1 of 3 ac2g flow starts name no CUDA API call's correlation id"));
    assert_true(has_warning(t, "1 of 4 ac2g flow ends name no correlation id of the trace"));
    tbe_trace_free(t);
  }
  /* all good: no warning */
  char doc[4096];
  snprintf(doc, sizeof doc,
           "%s,{\"ph\":\"s\",\"id\":5,\"pid\":1,\"tid\":1,\"ts\":1,\"cat\":\"ac2g\",\"name\":\"ac2g\"},"
           "{\"ph\":\"f\",\"id\":5,\"pid\":0,\"tid\":7,\"ts\":6,\"cat\":\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\"}]}",
           head);
  tbe_trace *t = import_text(doc, 0, NULL);
  assert_false(has_warning(t, "ac2g"));
  tbe_trace_free(t);
}

/* Tokens cut by the reads (256 KiB) and by the parallel chunks: a name of
 * 600 KB full of escapes, an arg key of 300 KB, a number of 300 KB digits
 * and a string ending exactly at a read boundary all read back whole and
 * exact (the guard hands yajl each token once, whole). */
static void test_tokens_across_reads(void **s) {
  (void)s;
  size_t big = 600 * 1024;
  char *name = malloc(big + 1), *want = malloc(big + 1);
  size_t nn = 0, wn = 0;
  while (nn < big - 8) {
    switch ((nn / 7) % 4) {
      case 0: memcpy(name + nn, "\\\"", 2), nn += 2, want[wn++] = '"'; break;
      case 1: memcpy(name + nn, "\\\\", 2), nn += 2, want[wn++] = '\\'; break;
      case 2: memcpy(name + nn, "\\u00e9", 6), nn += 6, want[wn++] = (char)0xC3, want[wn++] = (char)0xA9; break;
      default: name[nn++] = 'n', want[wn++] = 'n';
    }
  }
  name[nn] = 0;
  want[wn] = 0;
  size_t kl = 300 * 1024;
  char *key = malloc(kl + 1), *num = malloc(kl + 1);
  memset(key, 'k', kl);
  key[kl] = 0;
  memset(num, '7', kl);
  num[kl] = 0;
  size_t cap = big + 3 * kl + 4096;
  char *j = malloc(cap);
  int n = snprintf(j, cap,
                   "[{\"ph\":\"X\",\"ts\":1,\"dur\":1,\"pid\":1,\"tid\":1,\"name\":\"%s\","
                   "\"args\":{\"%s\":1,\"n\":%s}},",
                   name, key, num);
  /* pad so that the next event's name ends right at a multiple of 256 KiB */
  size_t boundary = ((size_t)n + 200) / (256 * 1024) * (256 * 1024) + 256 * 1024;
  while ((size_t)n + 60 < boundary) n += snprintf(j + n, cap - (size_t)n, " ");
  size_t room = boundary - (size_t)n;
  const char *pre = "{\"ph\":\"X\",\"ts\":2,\"dur\":1,\"pid\":1,\"tid\":1,\"name\":\"";
  n += snprintf(j + n, cap - (size_t)n, "%s", pre);
  size_t fill = room - strlen(pre) - 1;
  memset(j + n, 'z', fill);
  n += (int)fill;
  j[n++] = '"'; /* the closing quote is the read's last byte */
  n += snprintf(j + n, cap - (size_t)n, "}]");
  tbe_trace *t = import_text(j, 0, NULL);
  assert_int_equal(t->nevents, 2);
  const tbe_event *e = NULL;
  for (size_t i = 0; i < t->nevents; i++)
    if (t->events[i].start_ns == 1000) e = &t->events[i];
  assert_non_null(e);
  assert_string_equal(tbe_trace_str(t, e->name), want);
  const tbe_arg *a = find_arg(t, e, key);
  assert_non_null(a);
  assert_int_equal(a->v.i, 1);
  a = find_arg(t, e, "n");
  assert_non_null(a);
  assert_int_equal(a->type, TBE_ARG_JSON); /* too long for a number type: verbatim */
  assert_string_equal(tbe_trace_str(t, a->v.s), num);
  for (size_t i = 0; i < t->nevents; i++)
    if (t->events[i].start_ns == 2000) assert_int_equal(tbe_trace_strlen(t, t->events[i].name), fill);
  tbe_trace_free(t);
  free(j);
  free(name);
  free(want);
  free(key);
  free(num);
}

/* Tens of thousands of distinct device ids, GPU pids, string pids and
 * thread names: every one is kept (lookups are hashed or sorted; each was
 * a linear scan, 80k device ids took 106 s). */
static void test_many_ids(void **s) {
  (void)s;
  const int n = 20000;
  size_t cap = (size_t)n * 400 + 256;
  char *j = malloc(cap);
  size_t len = 0;
  j[len++] = '[';
  for (int i = 0; i < n; i++)
    len += (size_t)snprintf(j + len, cap - len,
                            "%s{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":%d,\"dur\":1,"
                            "\"pid\":%d,\"tid\":7,\"args\":{\"device\":%d,\"stream\":7}},"
                            "{\"ph\":\"X\",\"name\":\"h\",\"ts\":%d,\"dur\":1,\"pid\":\"p%d\",\"tid\":\"t%d\"},"
                            "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,"
                            "\"args\":{\"name\":\"T%d\"}}",
                            i ? "," : "", i, 100000 + i, i, i, i, i, 200000 + i, i, i);
  len += (size_t)snprintf(j + len, cap - len, "%s",
                          ",{\"ph\":\"X\",\"name\":\"x\",\"ts\":1,\"dur\":1,\"pid\":200005,\"tid\":5}]");
  j[len] = 0;
  tbe_trace *t = import_text(j, 0, NULL);
  assert_int_equal(t->ndevices, (size_t)n);
  size_t named = 0, str_procs = 0;
  for (size_t i = 0; i < t->ntracks; i++)
    if (t->tracks[i].pid == 200005 && t->tracks[i].tid == 5)
      assert_string_equal(tbe_trace_str(t, t->tracks[i].name), "T5");
  for (size_t i = 0; i < t->ntracks; i++) named += t->tracks[i].name != 0;
  for (size_t i = 0; i < t->nprocesses; i++) str_procs += t->processes[i].pid <= -2;
  assert_int_equal(str_procs, (size_t)n);
  assert_true(named >= (size_t)n); /* the string tids name their tracks */
  tbe_analysis *an;
  assert_int_equal(tbe_analysis_create(&an, t, NULL), 0);
  assert_int_equal(an->ndevices, (size_t)n);
  assert_int_equal(an->all.kernel_count, (uint64_t)n);
  tbe_analysis_free(an);
  tbe_trace_free(t);
  free(j);
}

/* Device ordinals (importer.h): every one the input gives is checked
 * before it is narrowed to the model's int32_t.  -1 where Kineto means
 * "none" maps to none (args.device -1: the pid's GPU; a copy's end, a host
 * allocation: -1); any other value out of 0..2^31-1 is refused with one
 * line naming the field and the event's byte (it was cast: -1 made a GPU
 * of its own, 2^32 became GPU 0). */
static void expect_refused(const char *json, const char *want) {
  tbe_import_error err;
  tbe_trace *t = import_text(json, TBE_EPARSE, &err);
  if (!strstr(err.message, want)) fprintf(stderr, "message: %s\nwant: %s\n", err.message, want);
  assert_non_null(strstr(err.message, want));
  assert_null(strchr(err.message, '\n'));
  tbe_trace_free(t);
}

static void test_device_ordinals(void **s) {
  (void)s;
  char j[1024];
  /* args.device: in range, -1 (none: the pid's GPU), and out of range */
  static const char kern[] = "[{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":1,\"dur\":1,\"pid\":3,"
                             "\"tid\":7,\"args\":{\"device\":%s,\"stream\":7}}]";
  static const struct {
    const char *v;
    int32_t want;
  } ok[] = {{"0", 0}, {"-1", 3}, {"2147483647", INT32_MAX}, {"\"5\"", 5}, {"2.0", 2}};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    snprintf(j, sizeof j, kern, ok[i].v);
    tbe_trace *t = import_text(j, 0, NULL);
    assert_int_equal(t->ndevices, 1);
    assert_int_equal(t->devices[0].id, ok[i].want);
    assert_int_equal(t->tracks[t->events[0].track].device, ok[i].want);
    assert_null(find_arg(t, &t->events[0], "device"));
    tbe_trace_free(t);
  }
  static const char *const bad[] = {"-2", "2147483648", "4294967296", "18446744073709551615",
                                    "99999999999999999999999", "1e300", "1.5", "-9223372036854775808"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    snprintf(j, sizeof j, kern, bad[i]);
    char want[256];
    snprintf(want, sizeof want,
             "t.json: byte 1 (line 1, column 2): event field args.device is not a GPU ordinal (0 to "
             "2147483647, or -1 for none): %s",
             bad[i]);
    expect_refused(j, want);
  }
  /* the pid standing for the GPU of an event without args.device */
  expect_refused("[{\"ph\":\"X\",\"ts\":1,\"dur\":1,\"pid\":1,\"tid\":1},"
                 "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":1,\"dur\":1,\"pid\":4294967296,"
                 "\"tid\":7}]",
                 "byte 43 (line 1, column 44): event field pid (the GPU of an event without "
                 "args.device) is not a GPU ordinal (0 to 2147483647): 4294967296");
  expect_refused("[{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":1,\"dur\":1,\"pid\":-1,\"tid\":7}]",
                 "event field pid (the GPU of an event without args.device) is not a GPU ordinal");
  tbe_trace *t = import_text("[{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":1,\"dur\":1,"
                             "\"pid\":2147483647,\"tid\":7}]",
                             0, NULL);
  assert_int_equal(t->devices[0].id, INT32_MAX);
  tbe_trace_free(t);
  /* a pid beyond int64 is refused, whatever the event */
  expect_refused("[{\"ph\":\"X\",\"ts\":1,\"dur\":1,\"pid\":1e30,\"tid\":1}]",
                 "byte 1 (line 1, column 2): event field pid is out of range (a 64-bit integer): 1e30");
  expect_refused("[{\"ph\":\"X\",\"ts\":1,\"dur\":1,\"pid\":1,\"tid\":18446744073709551615}]",
                 "event field tid is out of range (a 64-bit integer): 18446744073709551615");
  /* the names of GPU pids */
  t = import_text("[{\"ph\":\"M\",\"name\":\"process_labels\",\"pid\":9,\"args\":{\"labels\":\"GPU 2\"}},"
                  "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":1,\"dur\":1,\"pid\":9,\"tid\":7}]",
                  0, NULL);
  assert_int_equal(t->ndevices, 1);
  assert_int_equal(t->devices[0].id, 2);
  tbe_trace_free(t);
  expect_refused("[{\"ph\":\"M\",\"name\":\"process_labels\",\"pid\":9,\"args\":{\"labels\":\"GPU 4294967296\"}}]",
                 "byte 1 (line 1, column 2): event field args.labels of process_labels is not a GPU "
                 "ordinal (0 to 2147483647): 4294967296");
  expect_refused("[{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":9,\"args\":{\"name\":\"/device:GPU:-1\"}}]",
                 "event field args.name of process_name is not a GPU ordinal (0 to 2147483647): -1");
  t = import_text("[{\"ph\":\"M\",\"name\":\"process_labels\",\"pid\":9,\"args\":{\"labels\":\"GPU x\"}}]", 0,
                  NULL);
  tbe_trace_free(t);
  /* deviceProperties ids: at the number */
  t = import_text("{\"deviceProperties\":[{\"id\":2147483647,\"name\":\"G\"}],\"traceEvents\":[]}", 0, NULL);
  assert_int_equal(t->ndevices, 1);
  assert_int_equal(t->devices[0].id, INT32_MAX);
  tbe_trace_free(t);
  expect_refused("{\"deviceProperties\":[{\"id\":4294967296,\"name\":\"G\"}],\"traceEvents\":[]}",
                 "byte 27 (line 1, column 28): deviceProperties id is not a GPU ordinal (0 to "
                 "2147483647): 4294967296");
  expect_refused("{\"deviceProperties\":[{\"name\":\"G\",\"id\":-1}],\"traceEvents\":[]}",
                 "deviceProperties id is not a GPU ordinal (0 to 2147483647): -1");
  /* a copy's ends and an allocation's device: -1 is none */
  static const char copy[] =
      "[{\"ph\":\"X\",\"cat\":\"gpu_memcpy\",\"name\":\"Memcpy DtoD\",\"ts\":1,\"dur\":1,\"pid\":0,"
      "\"tid\":7,\"args\":{\"device\":0,\"stream\":7,\"fromDevice\":%s,\"toDevice\":%s}}]";
  snprintf(j, sizeof j, copy, "-1", "2147483647");
  t = import_text(j, 0, NULL);
  const tbe_memcpy *m = tbe_trace_memcpy(t, &t->events[0]);
  assert_non_null(m);
  assert_int_equal(m->src_device, -1);
  assert_int_equal(m->dst_device, INT32_MAX);
  tbe_trace_free(t);
  snprintf(j, sizeof j, copy, "0", "2147483648");
  expect_refused(j, "byte 1 (line 1, column 2): event field args.toDevice is not a GPU ordinal (0 to "
                    "2147483647, or -1 for none): 2147483648");
  snprintf(j, sizeof j, copy, "-4294967297", "0");
  expect_refused(j, "event field args.fromDevice is not a GPU ordinal");
  static const char mem[] = "[{\"ph\":\"i\",\"name\":\"[memory]\",\"ts\":1,\"pid\":1,\"tid\":1,\"s\":\"t\","
                            "\"args\":{\"Device Id\":%s,\"Device Type\":%s,\"Addr\":1,\"Bytes\":8}}]";
  snprintf(j, sizeof j, mem, "-1", "0");
  t = import_text(j, 0, NULL);
  const tbe_memory *mm = tbe_trace_memory(t, &t->events[0]);
  assert_non_null(mm);
  assert_int_equal(mm->device, -1);
  tbe_trace_free(t);
  snprintf(j, sizeof j, mem, "4294967296", "1");
  expect_refused(j, "event field args.Device Id is not a GPU ordinal (0 to 2147483647, or -1 for none): "
                    "4294967296");
  snprintf(j, sizeof j, mem, "0", "4294967297");
  expect_refused(j, "event field args.Device Type is out of range (a 32-bit kind): 4294967297");
  /* XLA's memcpy_details on a GPU pid */
  static const char xla[] =
      "[{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":5,\"args\":{\"name\":\"/device:GPU:1\"}},"
      "{\"ph\":\"X\",\"name\":\"MemcpyD2D\",\"ts\":1,\"dur\":1,\"pid\":5,\"tid\":3,"
      "\"args\":{\"memcpy_details\":\"size:8 dest:%s\"}}]";
  snprintf(j, sizeof j, xla, "0");
  t = import_text(j, 0, NULL);
  m = tbe_trace_memcpy(t, &t->events[0]);
  assert_non_null(m);
  assert_int_equal(m->dst_device, 0);
  assert_int_equal(t->tracks[t->events[0].track].device, 1);
  tbe_trace_free(t);
  snprintf(j, sizeof j, xla, "4294967296");
  expect_refused(j, "byte 74 (line 1, column 75): event field args.memcpy_details dest is not a GPU "
                    "ordinal (0 to 2147483647, or -1 for none): 4294967296");
  /* distributedInfo: narrowed to int32 too */
  t = import_text("{\"distributedInfo\":{\"rank\":-1,\"world_size\":4},\"traceEvents\":[]}", 0, NULL);
  assert_int_equal(t->rank, -1);
  tbe_trace_free(t);
  expect_refused("{\"distributedInfo\":{\"rank\":4294967296},\"traceEvents\":[]}",
                 "byte 27 (line 1, column 28): distributedInfo rank is out of range (0 to 2147483647, "
                 "or -1 for none): 4294967296");
}

/* An endless stream on standard input is refused at the default
 * --max-input of an input of unknown size: half the memory this process may
 * use (the test knob tbe__import_memory_bytes stands for a machine of 8 MiB
 * here), with one line naming the limit and the flag; before, the default
 * was 32 GiB, more than the machine, and the XSpace importer holds all it
 * reads.  A limit the caller chose is kept; a gzip file is an input of
 * unknown size too; a plain file is not (it has an end). */
typedef struct feeder {
  int fd;
  const char *head, *body; /* written once, then forever */
  size_t hn, bn;
} feeder;

/* "Forever" is 64 MiB, 16 times the limit: should the limit not hold, the
 * import ends (badly) instead of the test hanging. */
static void *feed(void *arg) {
  feeder *f = arg;
  const char *p = f->head;
  size_t n = f->hn, left = 64u << 20;
  while (left) {
    ssize_t w = write(f->fd, p, n < left ? n : left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break; /* EPIPE: the reader is gone */
    p += w, n -= (size_t)w, left -= (size_t)w;
    if (!n) p = f->body, n = f->bn;
  }
  close(f->fd);
  return NULL;
}

/* Imports "-" fed by `head` then `body` forever; returns the import's rc. */
static int import_endless(const char *head, size_t hn, const char *body, size_t bn,
                          const tbe_import_options *o, tbe_import_error *err) {
  int pfd[2];
  assert_int_equal(pipe(pfd), 0);
  int saved = dup(0);
  assert_true(saved >= 0);
  assert_true(dup2(pfd[0], 0) == 0);
  close(pfd[0]);
  feeder f = {pfd[1], head, body, hn, bn};
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, feed, &f), 0);
  tbe_trace *t = NULL;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  int rc = tbe_import_file(t, "-", o, err);
  tbe_trace_free(t);
  assert_true(dup2(saved, 0) == 0); /* the pipe's last reader closes: the feeder stops */
  close(saved);
  pthread_join(th, NULL);
  return rc;
}

static void test_endless_stdin(void **s) {
  (void)s;
  signal(SIGPIPE, SIG_IGN);
  tbe__import_memory_bytes = 8 << 20;
  assert_int_equal(tbe__import_stream_default(), 4 << 20);
  char body[4096];
  for (size_t i = 0; i < sizeof body; i += 2) body[i] = '1', body[i + 1] = ',';
  tbe_import_error err;
  int rc = import_endless("{\"x\":[", 6, body, sizeof body, NULL, &err);
  assert_int_equal(rc, TBE_ETOOBIG);
  assert_string_equal(err.message, "-: byte 4194304: more input than the limit for an input of unknown "
                                   "size: half the memory this process may use (the limit is 4 MiB; "
                                   "raise it with --max-input)");
  /* the caller's limit is the limit, even above the memory's */
  tbe_import_options o;
  tbe_import_options_init(&o);
  o.max_input_bytes = 6 << 20;
  rc = import_endless("{\"x\":[", 6, body, sizeof body, &o, &err);
  assert_int_equal(rc, TBE_ETOOBIG);
  assert_string_equal(err.message, "-: byte 6291456: more input than the limit (the limit is 6 MiB; "
                                   "raise it with --max-input)");
  /* XSpace holds what it reads: an endless run of empty planes */
  static const char planes[4] = {0x0a, 0x00, 0x0a, 0x00};
  rc = import_endless(planes, 4, planes, 4, NULL, &err);
  assert_int_equal(rc, TBE_ETOOBIG);
  assert_non_null(strstr(err.message, "more input than the limit for an input of unknown size: half the "
                                      "memory this process may use (the limit is 4 MiB; raise it with "
                                      "--max-input)"));
  /* a gzip file: its size after decompression is unknown too */
  char *gzp = tu_join(tmpdir, "long.json.gz");
  gzFile gz = gzopen(gzp, "wb");
  gzwrite(gz, "{\"x\":[", 6);
  for (int i = 0; i < 1280; i++) gzwrite(gz, body, sizeof body); /* 5 MiB */
  gzwrite(gz, "1]}", 3);
  gzclose(gz);
  tbe_trace *t = NULL;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  assert_int_equal(tbe_import_file(t, gzp, NULL, &err), TBE_ETOOBIG);
  assert_non_null(strstr(err.message, ": byte 4194304: more input than the limit after decompression, for "
                                      "an input of unknown size: half the memory this process may use "
                                      "(the limit is 4 MiB; raise it with --max-input)"));
  tbe_trace_free(t);
  /* a plain file of the same text: its size is known, the default is not
   * the memory's */
  char *plain = tu_join(tmpdir, "long.json");
  FILE *fp = fopen(plain, "wb");
  assert_non_null(fp);
  fputs("{\"x\":[", fp);
  for (int i = 0; i < 1280; i++) fwrite(body, 1, sizeof body, fp);
  fputs("1],\"traceEvents\":[]}", fp);
  fclose(fp);
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  rc = tbe_import_file(t, plain, NULL, &err);
  if (rc) fprintf(stderr, "%s\n", err.message);
  assert_int_equal(rc, 0);
  tbe_trace_free(t);
  tbe__import_memory_bytes = 0;
  free(plain);
  free(gzp);
}

/* Duplicate keys: JSON leaves {"dur":10,"dur":5000000} open; the last value
 * is kept (as JSON.parse and Python's json keep it), also for args keys
 * (the earlier args of that key are dropped), and the first repeated key
 * of the file is named in one warning with its byte offset, whatever the
 * thread configuration cuts the file into. */
static size_t count_warnings(const tbe_trace *t, const char *text) {
  size_t n = 0;
  for (size_t i = 0; i < t->nwarnings; i++) n += strstr(tbe_trace_str(t, t->warnings[i]), text) != NULL;
  return n;
}

static void test_duplicate_keys(void **s) {
  (void)s;
  /* an event field */
  tbe_trace *t = import_text("[{\"ph\":\"X\",\"name\":\"k\",\"ts\":1,\"dur\":10,\"dur\":5000000,\"pid\":1,\"tid\":1}]",
                             0, NULL);
  assert_int_equal(t->nevents, 1);
  assert_int_equal(t->events[0].dur_ns, 5000000000LL);
  assert_int_equal(count_warnings(t, "is repeated"), 1);
  assert_int_equal(count_warnings(t, "t.json: byte 38: the key \"dur\" is repeated in an object; the last "
                                     "value is kept, as JSON.parse and Python's json keep it"),
                   1);
  tbe_trace_free(t);
  /* args keys: the last value, the earlier arg gone; typed args too */
  t = import_text("[{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":1,\"dur\":1,\"pid\":0,\"tid\":7,"
                  "\"args\":{\"a\":1,\"device\":0,\"b\":2,\"a\":3,\"stream\":7,\"device\":1}}]",
                  0, NULL);
  assert_int_equal(t->nevents, 1);
  assert_int_equal(t->events[0].nargs, 2);
  const tbe_arg *a = find_arg(t, &t->events[0], "a");
  assert_non_null(a);
  assert_int_equal(a->v.i, 3);
  assert_int_equal(t->tracks[t->events[0].track].device, 1);
  assert_int_equal(t->ndevices, 1);
  assert_int_equal(count_warnings(t, "byte 99: the key \"args.a\" is repeated in an object (2 repeated keys "
                                     "in all); the last value is kept"),
                   1);
  tbe_trace_free(t);
  /* deviceProperties */
  t = import_text("{\"deviceProperties\":[{\"id\":0,\"numSms\":10,\"numSms\":20}],\"traceEvents\":[]}", 0, NULL);
  assert_int_equal(t->devices[0].sm_count, 20);
  assert_int_equal(count_warnings(t, "byte 41: the key \"deviceProperties.numSms\" is repeated"), 1);
  tbe_trace_free(t);
  /* none: no warning; a key repeated in a nested value is the value's text */
  t = import_text("[{\"ph\":\"X\",\"name\":\"k\",\"ts\":1,\"dur\":1,\"pid\":1,\"tid\":1,\"args\":{\"x\":{\"a\":1,"
                  "\"a\":2}}},{\"ph\":\"X\",\"name\":\"k\",\"ts\":1,\"dur\":1,\"pid\":1,\"tid\":1,\"args\":{\"a\":1}}]",
                  0, NULL);
  assert_int_equal(count_warnings(t, "is repeated"), 0);
  tbe_trace_free(t);
  /* many events, repeats in several (one with many args: the index), one
   * warning naming the first in the file */
  size_t cap = 2 << 20, len = 0;
  char *j = malloc(cap);
  assert_non_null(j);
  j[len++] = '[';
  size_t first = 0;
  for (int i = 0; i < 3000; i++) {
    if (i) j[len++] = ',';
    len += (size_t)snprintf(j + len, cap - len, "{\"ph\":\"X\",\"name\":\"k%d\",\"ts\":%d,\"dur\":1,\"pid\":1,"
                            "\"tid\":1,\"args\":{", i, i);
    int nargs = i == 1700 ? 100 : 3; /* 100: past CJ_ARGIX_MIN, the index */
    for (int k = 0; k < nargs; k++) len += (size_t)snprintf(j + len, cap - len, "%s\"k%d\":%d", k ? "," : "", k, k);
    if (i == 1700) {
      first = len + 1;
      len += (size_t)snprintf(j + len, cap - len, ",\"k33\":\"last\",\"k7\":\"last\"");
    }
    if (i == 2500) len += (size_t)snprintf(j + len, cap - len, ",\"k1\":\"last\"");
    j[len++] = '}';
    if (i == 2900) len += (size_t)snprintf(j + len, cap - len, ",\"tid\":1");
    j[len++] = '}';
  }
  j[len++] = ']';
  j[len] = 0;
  t = import_text(j, 0, NULL);
  assert_int_equal(t->nevents, 3000);
  char want[160];
  snprintf(want, sizeof want, "t.json: byte %zu: the key \"args.k33\" is repeated in an object (4 repeated "
                              "keys in all); the last value is kept", first);
  if (count_warnings(t, want) != 1)
    for (size_t i = 0; i < t->nwarnings; i++) fprintf(stderr, "%s\n", tbe_trace_str(t, t->warnings[i]));
  assert_int_equal(count_warnings(t, want), 1);
  assert_int_equal(count_warnings(t, "is repeated"), 1);
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_event *e = &t->events[i];
    const char *nm = tbe_trace_str(t, e->name);
    if (strcmp(nm, "k1700") == 0) {
      assert_int_equal(e->nargs, 100);
      const tbe_arg *k33 = find_arg(t, e, "k33"), *k7 = find_arg(t, e, "k7");
      assert_string_equal(tbe_trace_str(t, k33->v.s), "last");
      assert_string_equal(tbe_trace_str(t, k7->v.s), "last");
    } else if (strcmp(nm, "k2500") == 0) {
      assert_int_equal(e->nargs, 3);
      assert_string_equal(tbe_trace_str(t, find_arg(t, e, "k1")->v.s), "last");
    }
  }
  tbe_trace_free(t);
  /* one event of 100,000 keys, the last repeating the first: found through
   * the index (a comparison with every earlier key was quadratic) */
  len = 0;
  len += (size_t)snprintf(j + len, cap - len, "[{\"ph\":\"X\",\"name\":\"big\",\"ts\":1,\"dur\":1,\"pid\":1,"
                          "\"tid\":1,\"args\":{");
  for (int k = 0; k < 100000; k++) len += (size_t)snprintf(j + len, cap - len, "\"%d\":0,", k);
  first = len;
  len += (size_t)snprintf(j + len, cap - len, "\"0\":1}}]");
  t = import_text(j, 0, NULL);
  assert_int_equal(t->events[0].nargs, 65535); /* the model's most (a warning says so) */
  snprintf(want, sizeof want, "t.json: byte %zu: the key \"args.0\" is repeated in an object; the last", first);
  assert_int_equal(count_warnings(t, want), 1);
  tbe_trace_free(t);
  free(j);
}

/* The token guard scans 64 bytes at a time and falls back to bytes where
 * that could differ: a string with runs of backslashes (1 to 5) placed at
 * every alignment across a block, measured exactly: refused one byte over
 * the token limit at its quote, accepted at the limit, and decoded right. */
static void test_guard_alignments(void **s) {
  (void)s;
  char j[1024], want[256], str[256];
  for (int run = 1; run <= 5; run++)
    for (int align = 0; align < 70; align++) {
      /* the string: "ab" then `run` backslashes (an odd run escapes the
       * next byte) then "\"" padding */
      size_t sl = 0, wl = 0;
      for (int k = 0; k < 40; k++) str[sl++] = 'a' + (k % 26), want[wl++] = 'a' + (k % 26);
      for (int k = 0; k < run / 2; k++) str[sl++] = '\\', str[sl++] = '\\', want[wl++] = '\\';
      if (run % 2) str[sl++] = '\\', str[sl++] = '"', want[wl++] = '"';
      for (int k = 0; k < 30; k++) str[sl++] = 'z', want[wl++] = 'z';
      str[sl] = want[wl] = 0;
      int n = snprintf(j, sizeof j, "[{\"ph\":\"X\",\"ts\":1,\"dur\":1,\"pid\":1,\"tid\":1,\"cat\":\"%*s\"},"
                       "{\"ph\":\"X\",\"ts\":2,\"dur\":1,\"pid\":1,\"tid\":1,\"name\":\"",
                       align, "");
      size_t quote = (size_t)n - 1;
      n += snprintf(j + n, sizeof j - (size_t)n, "%s\"}]", str);
      uint64_t raw = sl + 2; /* quotes included */
      tbe_import_options o = {.size = sizeof o, .max_token_bytes = raw - 1};
      tbe_import_error err;
      tbe_trace *t = import_text_opts(j, (size_t)n, &o, TBE_ETOOBIG, &err);
      assert_int_equal(err.offset, quote);
      tbe_trace_free(t);
      o.max_token_bytes = raw;
      t = import_text_opts(j, (size_t)n, &o, 0, NULL);
      int found = 0;
      for (size_t i = 0; i < t->nevents; i++)
        if (t->events[i].start_ns == 2000) {
          assert_string_equal(tbe_trace_str(t, t->events[i].name), want);
          found = 1;
        }
      assert_true(found);
      tbe_trace_free(t);
    }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kineto_cnn_fp32),
      cmocka_unit_test(test_kineto_cnn_bf16),
      cmocka_unit_test(test_kineto_add_loop),
      cmocka_unit_test(test_jax_trace),
      cmocka_unit_test(test_empty),
      cmocka_unit_test(test_one_event),
      cmocka_unit_test(test_durations),
      cmocka_unit_test(test_exact_times),
      cmocka_unit_test(test_control_chars_and_utf8),
      cmocka_unit_test(test_truncated_array),
      cmocka_unit_test(test_gzip),
      cmocka_unit_test(test_malformed_offsets),
      cmocka_unit_test(test_unterminated_string),
      cmocka_unit_test(test_deep_nesting),
      cmocka_unit_test(test_flow_order),
      cmocka_unit_test(test_generic_producers),
      cmocka_unit_test(test_kineto_gpu_kinds),
      cmocka_unit_test(test_alloc_failures),
      cmocka_unit_test(test_old_kineto),
      cmocka_unit_test(test_input),
      cmocka_unit_test(test_progress),
      cmocka_unit_test(test_threads_same_model),
      cmocka_unit_test(test_parallel_nasty),
      cmocka_unit_test(test_parallel_errors),
      cmocka_unit_test(test_ac2g_check),
      cmocka_unit_test(test_tokens_across_reads),
      cmocka_unit_test(test_many_ids),
      cmocka_unit_test(test_guard_alignments),
      cmocka_unit_test(test_device_ordinals),
      cmocka_unit_test(test_endless_stdin),
      cmocka_unit_test(test_duplicate_keys),
  };
  /* Every test on the calling thread alone, then threaded (driver, N parse
   * workers, model on the calling thread) with N = 1, 2 and 4, whatever
   * the input size; the last run also with small chunks. */
  tbe__chrome_json_threads = 0;
  int failed = cmocka_run_group_tests_name("one thread", tests, setup, teardown);
  tbe__chrome_json_threads = 1;
  tbe__chrome_json_workers = 1;
  failed += cmocka_run_group_tests_name("threaded, 1 worker", tests, setup, teardown);
  tbe__chrome_json_workers = 2;
  failed += cmocka_run_group_tests_name("threaded, 2 workers", tests, setup, teardown);
  tbe__chrome_json_workers = 4;
  tbe__chrome_json_chunk = 8192;
  failed += cmocka_run_group_tests_name("threaded, 4 workers, 8 KB chunks", tests, setup, teardown);
  return failed;
}
