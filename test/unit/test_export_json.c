/* test_export_json.c: the Chrome-trace JSON output (src/trace/export/export_json.c).
 *
 * Every output is checked by a strict JSON validator written here (RFC 8259:
 * no trailing commas, no control characters in strings, valid escapes and
 * UTF-8, numbers in JSON's grammar), then by targeted string checks: exact
 * microsecond timestamps, escaping, Kineto's arg names, flows with both
 * ends.  With the Kineto importer present, the golden traces round-trip:
 * JSON -> model -> JSON -> model gives the same events. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

#include "tbexport/error.h"
#include "tbexport/export.h"
#include "tbexport/import.h"
#include "tbexport/trace.h"
#include "testutil.h"
#include "trace/export/export_json.h"

/* ---- a strict JSON validator ---- */

typedef struct jv {
  const unsigned char *p, *e;
  const char *err;
  int depth;
} jv;

static void jv_ws(jv *v) {
  while (v->p < v->e && (*v->p == ' ' || *v->p == '\n' || *v->p == '\r' || *v->p == '\t')) v->p++;
}

static int jv_value(jv *v);

static int jv_string(jv *v) {
  if (v->p >= v->e || *v->p != '"') return v->err = "expected string", 0;
  v->p++;
  while (v->p < v->e) {
    unsigned c = *v->p;
    if (c == '"') {
      v->p++;
      return 1;
    }
    if (c < 0x20) return v->err = "raw control character in string", 0;
    if (c == '\\') {
      v->p++;
      if (v->p >= v->e) break;
      c = *v->p++;
      if (c == 'u') {
        for (int i = 0; i < 4; i++, v->p++)
          if (v->p >= v->e || !strchr("0123456789abcdefABCDEF", *v->p) || !*v->p)
            return v->err = "bad \\u escape", 0;
      } else if (!strchr("\"\\/bfnrt", (int)c) || !c) {
        return v->err = "bad escape", 0;
      }
      continue;
    }
    if (c < 0x80) {
      v->p++;
      continue;
    }
    /* UTF-8 */
    size_t len = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    if (!len || (size_t)(v->e - v->p) < len) return v->err = "invalid UTF-8", 0;
    unsigned cp = c & (len == 2 ? 0x1F : len == 3 ? 0x0F : 0x07);
    for (size_t i = 1; i < len; i++) {
      if ((v->p[i] & 0xC0) != 0x80) return v->err = "invalid UTF-8", 0;
      cp = (cp << 6) | (v->p[i] & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
      return v->err = "invalid UTF-8", 0;
    v->p += len;
  }
  return v->err = "unterminated string", 0;
}

static int jv_digits(jv *v) {
  const unsigned char *s = v->p;
  while (v->p < v->e && *v->p >= '0' && *v->p <= '9') v->p++;
  return v->p > s;
}

static int jv_number(jv *v) {
  if (v->p < v->e && *v->p == '-') v->p++;
  if (v->p < v->e && *v->p == '0') {
    v->p++;
  } else if (!jv_digits(v)) {
    return v->err = "bad number", 0;
  }
  if (v->p < v->e && *v->p == '.') {
    v->p++;
    if (!jv_digits(v)) return v->err = "bad fraction", 0;
  }
  if (v->p < v->e && (*v->p == 'e' || *v->p == 'E')) {
    v->p++;
    if (v->p < v->e && (*v->p == '+' || *v->p == '-')) v->p++;
    if (!jv_digits(v)) return v->err = "bad exponent", 0;
  }
  return 1;
}

static int jv_lit(jv *v, const char *s) {
  size_t n = strlen(s);
  if ((size_t)(v->e - v->p) < n || memcmp(v->p, s, n)) return v->err = "bad literal", 0;
  v->p += n;
  return 1;
}

static int jv_value(jv *v) {
  jv_ws(v);
  if (v->p >= v->e) return v->err = "unexpected end", 0;
  if (++v->depth > 64) return v->err = "too deep", 0;
  int ok = 1;
  switch (*v->p) {
    case '{':
      v->p++;
      jv_ws(v);
      if (v->p < v->e && *v->p == '}') {
        v->p++;
        break;
      }
      for (;;) {
        jv_ws(v);
        if (!jv_string(v)) return 0;
        jv_ws(v);
        if (v->p >= v->e || *v->p++ != ':') return v->err = "expected ':'", 0;
        if (!jv_value(v)) return 0;
        jv_ws(v);
        if (v->p < v->e && *v->p == ',') {
          v->p++;
          continue;
        }
        if (v->p < v->e && *v->p == '}') {
          v->p++;
          break;
        }
        return v->err = "expected ',' or '}'", 0;
      }
      break;
    case '[':
      v->p++;
      jv_ws(v);
      if (v->p < v->e && *v->p == ']') {
        v->p++;
        break;
      }
      for (;;) {
        if (!jv_value(v)) return 0;
        jv_ws(v);
        if (v->p < v->e && *v->p == ',') {
          v->p++;
          continue;
        }
        if (v->p < v->e && *v->p == ']') {
          v->p++;
          break;
        }
        return v->err = "expected ',' or ']'", 0;
      }
      break;
    case '"': ok = jv_string(v); break;
    case 't': ok = jv_lit(v, "true"); break;
    case 'f': ok = jv_lit(v, "false"); break;
    case 'n': ok = jv_lit(v, "null"); break;
    default: ok = jv_number(v); break;
  }
  v->depth--;
  return ok;
}

/* Returns NULL if `s` is one valid JSON document, else the reason. */
static const char *json_check(const char *s, size_t n) {
  jv v = {(const unsigned char *)s, (const unsigned char *)s + n, NULL, 0};
  if (!jv_value(&v)) return v.err;
  jv_ws(&v);
  if (v.p != v.e) return "trailing data";
  return NULL;
}

/* ---- helpers ---- */

static char *read_gz(const char *path, size_t *len) {
  gzFile g = gzopen(path, "rb");
  if (!g) return NULL;
  size_t cap = 1 << 16, n = 0;
  char *b = malloc(cap + 1);
  int r;
  while ((r = gzread(g, b + n, (unsigned)(cap - n))) > 0) {
    n += (size_t)r;
    if (n == cap) b = realloc(b, (cap *= 2) + 1);
  }
  gzclose(g);
  b[n] = 0;
  *len = n;
  return b;
}

static size_t count_sub(const char *s, const char *sub) {
  size_t n = 0, l = strlen(sub);
  for (const char *p = strstr(s, sub); p; p = strstr(p + l, sub)) n++;
  return n;
}

static tbe_str S(tbe_trace *t, const char *s) { return tbe_trace_str_id(t, s); }

/* A small model: a host thread with a cpu op, a runtime launch and a memcpy
 * call; a stream with the kernel and the copy; a step; a fwdbwd flow. */
static tbe_trace *small_trace(void) {
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  const int64_t T0 = 1790857026000000000LL + 5348360164949717LL;
  uint32_t host, stream, dev, proc;
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_THREAD, 580, 609, -1, &host), 0);
  t->tracks[host].name = S(t, "pt_autograd_0");
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_STREAM, 580, 7, 0, &stream), 0);
  assert_int_equal(tbe_trace_device(t, 0, &dev), 0);
  t->devices[dev].name = S(t, "NVIDIA H200");
  t->devices[dev].sm_count = 132;
  t->devices[dev].cc_major = 9;
  t->devices[dev].memory_bytes = 150109880320LL;
  t->devices[dev].clock_khz = 1980000;
  t->devices[dev].memory_bandwidth = 4814304000000LL;
  assert_int_equal(tbe_trace_process(t, 580, &proc), 0);
  t->processes[proc].name = S(t, "python3");
  t->host = S(t, "h200:node");

  tbe_event e;
  memset(&e, 0, sizeof e);
  e.kind = TBE_EV_USER_ANNOTATION;
  e.track = host;
  e.name = S(t, "ProfilerStep#2");
  e.start_ns = T0;
  e.dur_ns = 3114325;
  assert_int_equal(tbe_trace_add_event(t, &e, NULL, NULL, 0, NULL), 0);

  memset(&e, 0, sizeof e);
  e.kind = TBE_EV_CPU_OP;
  e.track = host;
  e.name = S(t, "aten::fill_");
  e.start_ns = T0 + 1000;
  e.dur_ns = 33718;
  e.external_id = 517;
  tbe_arg args[3];
  args[0].key = S(t, "Input Dims");
  args[0].type = TBE_ARG_JSON;
  args[0].v.s = S(t, "[[32, 10], []]");
  args[1].key = S(t, "Sequence number");
  args[1].type = TBE_ARG_INT;
  args[1].v.i = -29;
  args[2].key = S(t, "ratio");
  args[2].type = TBE_ARG_DOUBLE;
  args[2].v.d = 0.1;
  assert_int_equal(tbe_trace_add_event(t, &e, NULL, args, 3, NULL), 0);

  memset(&e, 0, sizeof e);
  e.kind = TBE_EV_RUNTIME;
  e.track = host;
  e.name = S(t, "cudaLaunchKernel");
  e.start_ns = T0 + 2000;
  e.dur_ns = 20811;
  e.correlation = 668;
  e.external_id = 517;
  tbe_arg cb = {S(t, "cbid"), TBE_ARG_INT, {.i = 211}};
  assert_int_equal(tbe_trace_add_event(t, &e, NULL, &cb, 1, NULL), 0);

  memset(&e, 0, sizeof e);
  e.kind = TBE_EV_KERNEL;
  e.track = stream;
  e.name = S(t, "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int)");
  e.start_ns = T0 + 30000;
  e.dur_ns = 768;
  e.correlation = 668;
  e.external_id = 517;
  tbe_kernel k;
  memset(&k, 0, sizeof k);
  k.grid[0] = 1;
  k.grid[1] = 1;
  k.grid[2] = 1;
  k.block[0] = 128;
  k.block[1] = 1;
  k.block[2] = 1;
  k.registers = 16;
  k.context = 1;
  k.queued_ns = 0;
  k.blocks_per_sm = 0.007576f;
  k.warps_per_sm = 0.030303f;
  k.occupancy_pct = 0;
  assert_int_equal(tbe_trace_add_event(t, &e, &k, NULL, 0, NULL), 0);

  memset(&e, 0, sizeof e);
  e.kind = TBE_EV_RUNTIME;
  e.track = host;
  e.name = S(t, "cudaMemcpyAsync");
  e.start_ns = T0 + 40000;
  e.dur_ns = 5000;
  e.correlation = 700;
  assert_int_equal(tbe_trace_add_event(t, &e, NULL, NULL, 0, NULL), 0);

  memset(&e, 0, sizeof e);
  e.kind = TBE_EV_MEMCPY;
  e.track = stream;
  e.start_ns = T0 + 50000;
  e.dur_ns = 1920;
  e.correlation = 700;
  tbe_memcpy m;
  memset(&m, 0, sizeof m);
  m.bytes = 4015255;
  m.copy_kind = TBE_COPY_HTOD;
  m.src_kind = TBE_MEM_PAGEABLE;
  m.dst_kind = TBE_MEM_DEVICE;
  m.src_device = -1;
  m.dst_device = 0;
  m.context = 1;
  assert_int_equal(tbe_trace_add_event(t, &e, &m, NULL, 0, NULL), 0);

  tbe_flow f;
  memset(&f, 0, sizeof f);
  f.id = 1;
  f.cat = S(t, "fwdbwd");
  f.name = S(t, "fwdbwd");
  f.src_track = host;
  f.dst_track = host;
  f.src_ns = T0 + 1000;
  f.dst_ns = T0 + 2000;
  f.dst_enclosing = 1;
  assert_int_equal(tbe_trace_add_flow(t, &f), 0);
  assert_int_equal(tbe_trace_finish(t), 0);
  return t;
}

static char *export_plain(const tbe_trace *t, size_t *len) {
  char *dir = tu_mkdtemp();
  char *path = tu_join(dir, "out.json");
  assert_int_equal(tbe_export_chrome_json(t, path, 0, 0), 0);
  char *s = (char *)tu_read_file(path, len);
  assert_non_null(s);
  tu_rmrf(dir);
  free(path);
  free(dir);
  return s;
}

/* ---- tests ---- */

static void test_small_layout(void **state) {
  (void)state;
  tbe_trace *t = small_trace();
  size_t n;
  char *s = export_plain(t, &n);
  const char *why = json_check(s, n);
  if (why) fail_msg("invalid JSON: %s", why);
  /* Kineto's top-level keys, in order; distributedInfo only with a rank,
   * as PyTorch writes it. */
  const char *keys[] = {"\"schemaVersion\": 1", "\"deviceProperties\"", "\"displayTimeUnit\"",
                        "\"baseTimeNanoseconds\": 1790857026000000000", "\"traceEvents\"",
                        "\"traceName\""};
  const char *prev = s;
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    const char *p = strstr(s, keys[i]);
    if (!p || p < prev) fail_msg("missing or misplaced %s", keys[i]);
    prev = p;
  }
  assert_null(strstr(s, "\"distributedInfo\""));
  {
    t->rank = 3;
    t->world_size = 8;
    size_t n2;
    char *s2 = export_plain(t, &n2);
    const char *d = strstr(s2, "  \"distributedInfo\": {\"rank\": 3, \"world_size\": 8},\n");
    const char *dp = strstr(s2, "\"deviceProperties\"");
    const char *du = strstr(s2, "\"displayTimeUnit\"");
    assert_true(d && dp && du && dp < d && d < du);
    free(s2);
    t->rank = -1;
    t->world_size = 0;
  }
  /* exact µs with three decimals relative to the base */
  assert_non_null(strstr(s, "\"name\":\"ProfilerStep#2\",\"pid\":580,\"tid\":609,\"ts\":5348360164949.717,\"dur\":3114.325"));
  /* kernel row and Kineto arg names */
  assert_non_null(strstr(s, "\"ph\":\"X\",\"cat\":\"kernel\""));
  assert_non_null(strstr(s, "\"pid\":0,\"tid\":7,\"ts\":5348360164979.717,\"dur\":0.768,\"args\":{\"External id\":517,\"queued\":0,\"device\":0,\"context\":1,\"stream\":7,\"correlation\":668,\"registers per thread\":16,\"shared memory\":0,\"blocks per SM\":0.007576,\"warps per SM\":0.030303,\"grid\":[1,1,1],\"block\":[128,1,1],\"est. achieved occupancy %\":0}"));
  assert_non_null(strstr(s, "\"name\":\"Memcpy HtoD (Pageable -> Device)\""));
  assert_non_null(strstr(s, "\"bytes\":4015255,\"memory bandwidth (GB/s)\":2091.279"));
  assert_non_null(strstr(s, "\"cbid\":211"));
  assert_non_null(strstr(s, "\"Input Dims\":[[32, 10], []]"));
  assert_non_null(strstr(s, "\"Sequence number\":-29"));
  assert_non_null(strstr(s, "\"ratio\":0.1"));
  /* flows: two ac2g pairs, one fwdbwd pair */
  assert_int_equal(count_sub(s, "\"ph\":\"s\",\"id\":668,"), 1);
  assert_int_equal(count_sub(s, "\"ph\":\"f\",\"id\":668,"), 1);
  assert_int_equal(count_sub(s, "\"ph\":\"s\",\"id\":700,"), 1);
  assert_int_equal(count_sub(s, "\"ph\":\"f\",\"id\":700,"), 1);
  assert_non_null(strstr(s, "\"ph\":\"f\",\"id\":668,\"pid\":0,\"tid\":7,\"ts\":5348360164979.717,\"cat\":\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\"}"));
  assert_non_null(strstr(s, "\"cat\":\"fwdbwd\",\"name\":\"fwdbwd\",\"bp\":\"e\"}"));
  /* metadata rows */
  assert_non_null(strstr(s, "\"args\":{\"name\":\"thread 609 (pt_autograd_0)\"}"));
  /* Kineto's "stream 7 " row, without the space its empty postfix left */
  assert_non_null(strstr(s, "\"args\":{\"name\":\"stream 7\"}"));
  assert_null(strstr(s, "\"name\":\"stream 7 \""));
  assert_non_null(strstr(s, "\"args\":{\"labels\":\"GPU 0\"}"));
  assert_non_null(strstr(s, "\"numSms\":132"));
  /* every X event has a cat */
  assert_int_equal(count_sub(s, "\"ph\":\"X\","), count_sub(s, "\"ph\":\"X\",\"cat\":"));
  /* collection counters only for what the collector recorded */
  assert_null(strstr(s, "tbexportCollection"));
  free(s);
  t->source = TBE_SRC_CUPTI;
  t->dropped_records = 7;
  t->dropped_out_of_range = 2;
  t->overhead_ns = 8084000;
  s = export_plain(t, &n);
  why = json_check(s, n);
  if (why) fail_msg("invalid JSON: %s", why);
  assert_non_null(strstr(s, "\"tbexportCollection\": {\"droppedRecords\": 7, \"outOfRangeRecords\": 2, "
                            "\"cuptiOverheadNs\": 8084000, \"endedEarly\": false}"));
  free(s);
  tbe_trace_free(t);
}

static void test_gzip_matches_plain(void **state) {
  (void)state;
  tbe_trace *t = small_trace();
  size_t n = 0, gn = 0;
  char *plain = export_plain(t, &n);
  char *dir = tu_mkdtemp();
  char *path = tu_join(dir, "out.json.gz");
  assert_int_equal(tbe_export_chrome_json(t, path, 1, 0), 0);
  size_t rawn;
  unsigned char *raw = tu_read_file(path, &rawn);
  assert_true(rawn > 2 && raw[0] == 0x1f && raw[1] == 0x8b);
  free(raw);
  char *g = read_gz(path, &gn);
  /* identical up to traceName, which is the file's name */
  const char *tp = strstr(plain, "\"traceName\": \"out.json\"");
  assert_non_null(tp);
  assert_non_null(strstr(g, "\"traceName\": \"out.json.gz\""));
  assert_int_equal(gn, n + 3);
  assert_memory_equal(g, plain, (size_t)(tp - plain));
  /* an existing file is not replaced without force */
  assert_int_equal(tbe_export_chrome_json(t, path, 1, 0), TBE_EEXIST);
  assert_int_equal(tbe_export_chrome_json(t, path, 1, 1), 0);
  free(g);
  free(plain);
  tu_rmrf(dir);
  free(path);
  free(dir);
  tbe_trace_free(t);
}

/* Many MiB of JSON: the gzip output is cut into chunks deflated in
 * parallel; it must decompress (zlib, and gzip -t when installed) to exactly
 * the plain output. */
static void test_gzip_many_chunks(void **state) {
  (void)state;
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  uint32_t h;
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_THREAD, 1, 1, -1, &h), 0);
  char name[64];
  for (int i = 0; i < 120000; i++) {
    tbe_event e;
    memset(&e, 0, sizeof e);
    e.kind = TBE_EV_CPU_OP;
    e.track = h;
    snprintf(name, sizeof name, "op_%d", i % 5000);
    e.name = S(t, name);
    e.start_ns = 1000000 + (int64_t)i * 100;
    e.dur_ns = i % 97;
    e.external_id = (uint64_t)i * 2654435761u;
    assert_int_equal(tbe_trace_add_event(t, &e, NULL, NULL, 0, NULL), 0);
  }
  assert_int_equal(tbe_trace_finish(t), 0);
  size_t n = 0, gn = 0;
  char *plain = export_plain(t, &n);
  assert_true(n > 9u << 20); /* more than a batch of eight 1 MiB chunks */
  char *dir = tu_mkdtemp();
  char *path = tu_join(dir, "big.json.gz");
  assert_int_equal(tbe_export_chrome_json(t, path, 1, 0), 0);
  char *g = read_gz(path, &gn);
  assert_int_equal(gn, n + 3);
  const char *tp = strstr(plain, "\"traceName\"");
  assert_non_null(tp);
  assert_memory_equal(g, plain, (size_t)(tp - plain));
  const char *why = json_check(g, gn);
  if (why) fail_msg("invalid JSON: %s", why);
  if (system("command -v gzip >/dev/null 2>&1") == 0) {
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "gzip -t '%s'", path);
    assert_int_equal(system(cmd), 0);
  }
  free(g);
  free(plain);
  tu_rmrf(dir);
  free(path);
  free(dir);
  tbe_trace_free(t);
}

static void test_empty_trace(void **state) {
  (void)state;
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  assert_int_equal(tbe_trace_finish(t), 0);
  size_t n;
  char *s = export_plain(t, &n);
  const char *why = json_check(s, n);
  if (why) fail_msg("invalid JSON: %s\n%s", why, s);
  assert_non_null(strstr(s, "\"traceEvents\": [\n  ]"));
  assert_non_null(strstr(s, "\"baseTimeNanoseconds\": 0"));
  free(s);
  tbe_trace_free(t);
}

static void test_escaping(void **state) {
  (void)state;
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  uint32_t tr;
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_THREAD, 1, 1, -1, &tr), 0);
  /* every control character 1..31 (NUL cannot be interned), quote,
   * backslash, DEL, valid 2/3/4-byte UTF-8, and invalid sequences: a lone
   * continuation byte, an overlong, a surrogate, a truncated sequence */
  char name[128];
  size_t n = 0;
  for (int c = 1; c < 32; c++) name[n++] = (char)c;
  const char tail[] = "\"\\\x7f" "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80" "|\x80|\xc0\xaf|\xed\xa0\x80|\xe2\x82";
  memcpy(name + n, tail, sizeof tail - 1);
  n += sizeof tail - 1;
  tbe_str id;
  assert_int_equal(tbe_trace_intern(t, name, n, &id), 0);
  tbe_event e;
  memset(&e, 0, sizeof e);
  e.kind = TBE_EV_CPU_OP;
  e.track = tr;
  e.name = id;
  e.start_ns = 1000;
  e.dur_ns = -5; /* clamped by the model */
  assert_int_equal(tbe_trace_add_event(t, &e, NULL, NULL, 0, NULL), 0);
  e.start_ns = 500;
  e.dur_ns = 0;
  assert_int_equal(tbe_trace_add_event(t, &e, NULL, NULL, 0, NULL), 0);
  t->tracks[tr].name = id;
  assert_int_equal(tbe_trace_finish(t), 0);
  size_t len;
  char *s = export_plain(t, &len);
  const char *why = json_check(s, len);
  if (why) fail_msg("invalid JSON: %s", why);
  char expect[512];
  size_t k = 0;
  for (int c = 1; c < 32; c++) k += (size_t)sprintf(expect + k, "\\u%04x", c);
  strcpy(expect + k,
         "\\\"\\\\\x7f\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80|\xef\xbf\xbd|\xef\xbf\xbd\xef\xbf\xbd|"
         "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd|\xef\xbf\xbd\"");
  assert_non_null(strstr(s, expect));
  /* zero durations print as 0.000; the clamped one too */
  assert_int_equal(count_sub(s, "\"dur\":0.000"), 2);
  assert_non_null(strstr(s, "\"ts\":0.500"));
  free(s);
  tbe_trace_free(t);
}

/* One event of every kind, including instants and counters. */
static void test_all_kinds(void **state) {
  (void)state;
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  uint32_t h, st;
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_THREAD, 10, 11, -1, &h), 0);
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_STREAM, 10, 3, 1, &st), 0);
  for (int k = 0; k < TBE_EV__COUNT; k++) {
    tbe_event e;
    memset(&e, 0, sizeof e);
    e.kind = (uint8_t)k;
    e.track = tbe_event_kind_is_gpu((tbe_event_kind)k) ? st : h;
    e.name = S(t, tbe_event_kind_name((tbe_event_kind)k));
    e.start_ns = 1000000 + k * 1000;
    e.dur_ns = k == TBE_EV_NVTX_MARK || k == TBE_EV_COUNTER || k == TBE_EV_MEMORY || k == TBE_EV_INSTANT ? 0 : 500;
    union {
      tbe_kernel k;
      tbe_memcpy m;
      tbe_memset s;
      tbe_sync y;
      tbe_nvtx n;
      tbe_counter c;
      tbe_memory mem;
    } d;
    memset(&d, 0, sizeof d);
    const void *dp = NULL;
    switch (k) {
      case TBE_EV_KERNEL: d.k.occupancy_pct = -1; d.k.blocks_per_sm = -1; d.k.warps_per_sm = -1; d.k.queued_ns = -1; dp = &d; break;
      case TBE_EV_MEMCPY: d.m.copy_kind = TBE_COPY_PTOP; d.m.src_device = 1; d.m.dst_device = 2; dp = &d; break;
      case TBE_EV_MEMSET: d.s.bytes = 64; d.s.mem_kind = TBE_MEM_DEVICE; dp = &d; break;
      case TBE_EV_SYNC: d.y.sync_kind = TBE_SYNC_STREAM; d.y.stream = 3; dp = &d; break;
      case TBE_EV_NVTX_RANGE:
      case TBE_EV_NVTX_MARK: d.n.domain = S(t, "dom"); d.n.color = 0xff00ff00u; d.n.payload_type = TBE_PAYLOAD_DOUBLE; d.n.payload.d = 2.5; dp = &d; break;
      case TBE_EV_COUNTER: d.c.value = 1e300; dp = &d; break;
      case TBE_EV_MEMORY: d.mem.bytes = -4096; d.mem.total_allocated = -1; d.mem.total_reserved = 8192; d.mem.device = -1; dp = &d; break;
      default: break;
    }
    assert_int_equal(tbe_trace_add_event(t, &e, dp, NULL, 0, NULL), 0);
  }
  assert_int_equal(tbe_trace_finish(t), 0);
  size_t n;
  char *s = export_plain(t, &n);
  const char *why = json_check(s, n);
  if (why) fail_msg("invalid JSON: %s", why);
  assert_non_null(strstr(s, "\"ph\":\"C\",\"cat\":\"counter\",\"name\":\"counter\""));
  assert_non_null(strstr(s, "\"value\":1e+300"));
  assert_non_null(strstr(s, "\"ph\":\"i\",\"cat\":\"cpu_instant_event\",\"name\":\"memory\""));
  /* the allocated total the source left unknown: filled at finish (memory.c) */
  assert_non_null(
      strstr(s, "\"Total Reserved\":8192,\"Total Allocated\":0,\"Bytes\":-4096,\"Device Id\":-1"));
  assert_non_null(strstr(s, "\"fromDevice\":1,\"toDevice\":2"));
  assert_non_null(strstr(s, "\"cuda_sync_kind\":\"Stream Sync\",\"stream\":3"));
  assert_non_null(strstr(s, "\"domain\":\"dom\",\"color\":4278255360,\"payload\":2.5"));
  assert_non_null(strstr(s, "\"cat\":\"generic\""));
  assert_int_equal(count_sub(s, "\"ph\":\"X\","), count_sub(s, "\"ph\":\"X\",\"cat\":"));
  free(s);
  tbe_trace_free(t);
}

/* ---- round trip through the importer (golden Kineto traces) ---- */

typedef struct kinds {
  size_t n[TBE_EV__COUNT];
} kinds;

static void compare_models(const tbe_trace *a, const tbe_trace *b) {
  assert_int_equal(a->nevents, b->nevents);
  kinds ka, kb;
  memset(&ka, 0, sizeof ka);
  memset(&kb, 0, sizeof kb);
  for (size_t i = 0; i < a->nevents; i++) ka.n[a->events[i].kind]++;
  for (size_t i = 0; i < b->nevents; i++) kb.n[b->events[i].kind]++;
  for (int k = 0; k < TBE_EV__COUNT; k++)
    if (ka.n[k] != kb.n[k]) fail_msg("kind %s: %zu vs %zu", tbe_event_kind_name((tbe_event_kind)k), ka.n[k], kb.n[k]);
  assert_int_equal(a->ntracks, b->ntracks);
  for (size_t i = 0; i < a->nevents; i++) {
    const tbe_event *x = &a->events[i], *y = &b->events[i];
    if (x->start_ns != y->start_ns || x->dur_ns != y->dur_ns || x->kind != y->kind ||
        x->correlation != y->correlation || x->external_id != y->external_id ||
        strcmp(tbe_trace_str(a, x->name), tbe_trace_str(b, y->name)) != 0 ||
        (x->link == TBE_NONE) != (y->link == TBE_NONE))
      fail_msg("event %zu differs: %s %lld+%lld vs %s %lld+%lld", i, tbe_trace_str(a, x->name),
               (long long)x->start_ns, (long long)x->dur_ns, tbe_trace_str(b, y->name),
               (long long)y->start_ns, (long long)y->dur_ns);
    if (x->kind == TBE_EV_KERNEL) {
      const tbe_kernel *ka2 = tbe_trace_kernel(a, x), *kb2 = tbe_trace_kernel(b, y);
      assert_non_null(ka2);
      assert_non_null(kb2);
      assert_memory_equal(ka2->grid, kb2->grid, sizeof ka2->grid);
      assert_memory_equal(ka2->block, kb2->block, sizeof ka2->block);
      assert_int_equal(ka2->registers, kb2->registers);
      assert_int_equal(ka2->static_shared + ka2->dynamic_shared, kb2->static_shared + kb2->dynamic_shared);
      assert_true(ka2->blocks_per_sm == kb2->blocks_per_sm);
    }
    if (x->kind == TBE_EV_MEMSET || x->kind == TBE_EV_MEMCPY) {
      const tbe_memset *ma = tbe_trace_memset(a, x), *mb = tbe_trace_memset(b, y);
      if (ma && mb) assert_int_equal(ma->bytes, mb->bytes);
    }
    if (x->nargs != y->nargs) fail_msg("event %zu (%s): %u args vs %u", i, tbe_trace_str(a, x->name), x->nargs, y->nargs);
  }
  assert_int_equal(a->nsteps, b->nsteps);
  for (size_t i = 0; i < a->nsteps; i++) {
    assert_int_equal(a->steps[i].num, b->steps[i].num);
    assert_int_equal(a->steps[i].start_ns, b->steps[i].start_ns);
  }
  assert_int_equal(a->ndevices, b->ndevices);
  assert_int_equal(a->nflows, b->nflows);
}

/* (The importer is in every build: a golden file it cannot read fails.) */
static void round_trip(const char *rel) {
  tbe_trace *a, *b, *c;
  tbe_import_error err;
  assert_int_equal(tbe_trace_create(&a, NULL), 0);
  int rc = tbe_import_file(a, tu_data(rel), NULL, &err);
  if (rc) fail_msg("import: %s", err.message);
  char *dir = tu_mkdtemp();
  char *p1 = tu_join(dir, "one.json.gz"), *p2 = tu_join(dir, "two.json");
  assert_int_equal(tbe_export_chrome_json(a, p1, 1, 0), 0);
  size_t n = 0;
  char *s = read_gz(p1, &n);
  const char *why = json_check(s, n);
  if (why) fail_msg("invalid JSON: %s", why);
  /* every flow has both ends */
  for (const char *p = strstr(s, "\"ph\":\"s\",\"id\":"); p; p = strstr(p + 1, "\"ph\":\"s\",\"id\":")) {
    char key[96];
    unsigned long long id = strtoull(p + 14, NULL, 10);
    const char *cat = strstr(p, "\"cat\":\"");
    assert_non_null(cat);
    snprintf(key, sizeof key, "\"ph\":\"f\",\"id\":%llu,", id);
    if (!strstr(s, key)) fail_msg("flow %llu has no end", id);
  }
  assert_int_equal(count_sub(s, "\"ph\":\"s\","), count_sub(s, "\"ph\":\"f\","));
  free(s);
  assert_int_equal(tbe_trace_create(&b, NULL), 0);
  rc = tbe_import_file(b, p1, NULL, &err);
  if (rc) fail_msg("re-import: %s", err.message);
  compare_models(a, b);
  assert_int_equal(tbe_export_chrome_json(b, p2, 0, 0), 0);
  assert_int_equal(tbe_trace_create(&c, NULL), 0);
  rc = tbe_import_file(c, p2, NULL, &err);
  if (rc) fail_msg("re-import 2: %s", err.message);
  compare_models(b, c);
  tbe_trace_free(a);
  tbe_trace_free(b);
  tbe_trace_free(c);
  tu_rmrf(dir);
  free(p1);
  free(p2);
  free(dir);
}

static void test_round_trip_fp32(void **state) {
  (void)state;
  round_trip("kineto/h200_cnn_fp32.pt.trace.json");
}
static void test_round_trip_bf16(void **state) {
  (void)state;
  round_trip("kineto/h200_cnn_bf16.pt.trace.json");
}
static void test_round_trip_add_loop(void **state) {
  (void)state;
  round_trip("kineto/h200_add_loop.trace.json");
}

/* The bytes `t` gives through the internal writer with `threads`
 * formatting threads and `chunk` events per chunk (0: default). */
static unsigned char *write_with(const tbe_trace *t, int gzip, int threads, uint32_t chunk,
                                 const char *dir, size_t *len) {
  char *path = tu_join(dir, "w.out");
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  tbe__json_chunk_events = chunk;
  int rc = tbe__json_write_fd(t, fileno(f), gzip, threads, "w");
  tbe__json_chunk_events = 0;
  assert_int_equal(rc, 0);
  assert_int_equal(fclose(f), 0);
  unsigned char *b = tu_read_file(path, len);
  assert_non_null(b);
  unlink(path);
  free(path);
  return b;
}

/* The events are formatted in chunks on several threads: the output must
 * be the same bytes as the whole document formatted in one piece on one
 * thread, for any chunk size and thread count.  gzip: the same bytes on
 * any number of threads for one chunk size (the deflate parts follow the
 * chunks), decompressing to the plain document.  The public exporter
 * writes the same document too. */
static void same_bytes(const tbe_trace *t) {
  char *dir = tu_mkdtemp();
  char *gzpath = tu_join(dir, "w.gz");
  size_t nref = 0, n = 0;
  unsigned char *ref = write_with(t, 0, 1, UINT32_MAX, dir, &nref);
  const char *why = json_check((const char *)ref, nref);
  if (why) fail_msg("invalid JSON: %s", why);
  static const uint32_t chunks[] = {1, 3, 7, 64, 0};
  static const int threads[] = {1, 2, 3, 8};
  for (size_t ci = 0; ci < sizeof chunks / sizeof chunks[0]; ci++) {
    size_t ngz1 = 0;
    unsigned char *gz1 = NULL;
    for (size_t ti = 0; ti < sizeof threads / sizeof threads[0]; ti++) {
      unsigned char *b = write_with(t, 0, threads[ti], chunks[ci], dir, &n);
      if (n != nref || memcmp(ref, b, n) != 0)
        fail_msg("plain, chunk=%u threads=%d: %zu bytes differ from the one-piece %zu", chunks[ci],
                 threads[ti], n, nref);
      free(b);
      b = write_with(t, 1, threads[ti], chunks[ci], dir, &n);
      if (!gz1) {
        gz1 = b, ngz1 = n;
        assert_int_equal(tu_write_file(gzpath, b, n), 0);
        size_t gn;
        char *g = read_gz(gzpath, &gn);
        assert_int_equal(gn, nref);
        assert_memory_equal(g, ref, nref);
        free(g);
        continue;
      }
      if (n != ngz1 || memcmp(gz1, b, n) != 0)
        fail_msg("gzip, chunk=%u threads=%d: differs from one thread", chunks[ci], threads[ti]);
      free(b);
    }
    free(gz1);
  }
  char *path = tu_join(dir, "w");
  assert_int_equal(tbe_export_chrome_json(t, path, 0, 1), 0);
  unsigned char *pub = tu_read_file(path, &n);
  assert_non_null(pub);
  assert_int_equal(n, nref);
  assert_memory_equal(pub, ref, n);
  free(pub);
  free(path);
  free(ref);
  free(gzpath);
  tu_rmrf(dir);
  free(dir);
}

static void test_parallel_same_bytes_small(void **state) {
  (void)state;
  tbe_trace *t = small_trace();
  same_bytes(t);
  tbe_trace_free(t);
}

static void test_parallel_same_bytes_golden(void **state) {
  (void)state;
  static const char *const golden[] = {"kineto/h200_cnn_fp32.pt.trace.json",
                                       "kineto/h200_cnn_bf16.pt.trace.json",
                                       "kineto/h200_add_loop.trace.json"};
  for (size_t i = 0; i < sizeof golden / sizeof golden[0]; i++) {
    tbe_trace *t;
    tbe_import_error err;
    assert_int_equal(tbe_trace_create(&t, NULL), 0);
    int rc = tbe_import_file(t, tu_data(golden[i]), NULL, &err);
    if (rc) fail_msg("import: %s", err.message);
    same_bytes(t);
    tbe_trace_free(t);
  }
}

/* A document with metadata but no events, and one with events but no
 * metadata (the first event's separator), through the chunked writer. */
static void test_parallel_edges(void **state) {
  (void)state;
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  uint32_t h;
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_OTHER, -5, 3, -1, &h), 0);
  assert_int_equal(tbe_trace_finish(t), 0);
  same_bytes(t);
  for (int i = 0; i < 10; i++) {
    tbe_event e;
    memset(&e, 0, sizeof e);
    e.kind = TBE_EV_GENERIC;
    e.track = h;
    e.start_ns = 1000 + i;
    e.dur_ns = 5;
    assert_int_equal(tbe_trace_add_event(t, &e, NULL, NULL, 0, NULL), 0);
  }
  assert_int_equal(tbe_trace_finish(t), 0);
  same_bytes(t);
  char *dir = tu_mkdtemp();
  size_t n;
  unsigned char *b = write_with(t, 0, 4, 3, dir, &n);
  const char *why = json_check((const char *)b, n);
  if (why) fail_msg("invalid JSON: %s", why);
  free(b);
  tu_rmrf(dir);
  free(dir);
  tbe_trace_free(t);
}

/* The validator itself must reject what it should. */
static void test_validator(void **state) {
  (void)state;
  const char *bad[] = {"{\"a\":1,}", "[1,]", "{\"a\" 1}", "\"\x01\"", "\"\\x\"", "01", "1.", "[1] 2",
                       "\"\xc0\xaf\"", "\"\xed\xa0\x80\"", "{\"a\":tru}", "-", "[\"a\"", "\"\\u12\""};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    if (!json_check(bad[i], strlen(bad[i]))) fail_msg("accepted %s", bad[i]);
  const char *good[] = {"{}", "[]", "{\"a\":[1,-2.5e3,true,false,null,\"\\u00e9\xc3\xa9\"]}", "0", "-0.0"};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
    if (json_check(good[i], strlen(good[i]))) fail_msg("rejected %s", good[i]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_validator),
      cmocka_unit_test(test_small_layout),
      cmocka_unit_test(test_gzip_matches_plain),
      cmocka_unit_test(test_gzip_many_chunks),
      cmocka_unit_test(test_empty_trace),
      cmocka_unit_test(test_escaping),
      cmocka_unit_test(test_all_kinds),
      cmocka_unit_test(test_round_trip_fp32),
      cmocka_unit_test(test_round_trip_bf16),
      cmocka_unit_test(test_round_trip_add_loop),
      cmocka_unit_test(test_parallel_same_bytes_small),
      cmocka_unit_test(test_parallel_same_bytes_golden),
      cmocka_unit_test(test_parallel_edges),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
