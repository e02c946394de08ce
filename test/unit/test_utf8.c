/* test_utf8.c: UTF-8 checking and repair and the JSON data form of
 * common/utf8.h.
 *
 * What must never happen:
 *  - a sequence judged valid that Unicode's table 3-7 calls ill-formed, or
 *    the reverse (every sequence of up to 3 bytes is tried, and random
 *    longer ones, against a second decoder written here);
 *  - a repair that differs from "one U+FFFD per maximal subpart";
 *  - JSON bytes that differ from what the exporter and the importer wrote
 *    before they shared this module: their functions are kept below,
 *    verbatim, as the references (export_json.c's escape_into and
 *    json_clean, chrome_json.c's cap_escape);
 *  - a word-at-a-time scan that misses a byte at some alignment. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/alloc.h"
#include "common/text.h"
#include "common/utf8.h"
#include "tbexport/error.h"
#include "testutil.h"

static tbe_allocator g_malloc;
static int setup(void **state) {
  (void)state;
  tbe__allocator_init(&g_malloc, NULL);
  return 0;
}

static uint64_t rng_state;
static uint64_t rnd(void) {
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Bytes that make interesting text: ASCII, JSON specials, controls, DEL,
 * lead and continuation bytes, bytes that never occur in UTF-8. */
static void fill(uint8_t *s, size_t n) {
  static const uint8_t pick[] = {'a', 'Z', ' ', '"', '\\', 0, '\n', '\t', 0x1f, 0x7f, 0x80, 0xbf,
                                 0xc0, 0xc2, 0xdf, 0xe0, 0xe2, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff,
                                 0x9f, 0xa0, 0x8f, 0x90, '/', 0x08, 0x0c, '\r'};
  for (size_t i = 0; i < n; i++)
    s[i] = rnd() % 3 ? (uint8_t)('a' + rnd() % 26) : pick[rnd() % sizeof pick];
}

/* ---- references ---- */

/* Unicode 3-7 as a list of allowed byte ranges per position. */
static size_t ref_valid_at(const uint8_t *s, size_t n) {
  static const struct {
    uint8_t lo[4], hi[4];
    int len;
  } rows[] = {
      {{0x00}, {0x7f}, 1},
      {{0xc2, 0x80}, {0xdf, 0xbf}, 2},
      {{0xe0, 0xa0, 0x80}, {0xe0, 0xbf, 0xbf}, 3},
      {{0xe1, 0x80, 0x80}, {0xec, 0xbf, 0xbf}, 3},
      {{0xed, 0x80, 0x80}, {0xed, 0x9f, 0xbf}, 3},
      {{0xee, 0x80, 0x80}, {0xef, 0xbf, 0xbf}, 3},
      {{0xf0, 0x90, 0x80, 0x80}, {0xf0, 0xbf, 0xbf, 0xbf}, 4},
      {{0xf1, 0x80, 0x80, 0x80}, {0xf3, 0xbf, 0xbf, 0xbf}, 4},
      {{0xf4, 0x80, 0x80, 0x80}, {0xf4, 0x8f, 0xbf, 0xbf}, 4},
  };
  for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
    if ((size_t)rows[r].len > n) continue;
    int ok = 1;
    for (int k = 0; k < rows[r].len && ok; k++) ok = s[k] >= rows[r].lo[k] && s[k] <= rows[r].hi[k];
    if (ok) return (size_t)rows[r].len;
  }
  return 0;
}

static int ref_valid(const uint8_t *s, size_t n) {
  for (size_t i = 0; i < n;) {
    size_t k = ref_valid_at(s + i, n - i);
    if (!k) return 0;
    i += k;
  }
  return 1;
}

/* The longest prefix of s that some valid sequence starts with (>= 1):
 * only the second byte's range depends on the first, so a prefix extends
 * to a valid sequence exactly when it does with 0x80s after it. */
static size_t ref_subpart(const uint8_t *s, size_t n) {
  size_t best = 1;
  for (size_t k = 2; k <= 3 && k <= n; k++) {
    uint8_t u[4] = {0x80, 0x80, 0x80, 0x80};
    memcpy(u, s, k);
    if (ref_valid_at(u, 4) > k) best = k;
    else break;
  }
  return best;
}

static size_t ref_repair(const uint8_t *s, size_t n, int nul, uint8_t *out) {
  size_t o = 0;
  for (size_t i = 0; i < n;) {
    size_t k = ref_valid_at(s + i, n - i);
    if (k && !(nul && s[i] == 0)) {
      memcpy(out + o, s + i, k);
      o += k;
      i += k;
    } else {
      memcpy(out + o, "\xef\xbf\xbd", 3);
      o += 3;
      i += s[i] == 0 ? 1 : ref_subpart(s + i, n - i);
    }
  }
  return o;
}

/* export_json.c before the toolbox, verbatim (utf8_seq, utf8_bad_len,
 * escape_into, json_clean). */
static inline size_t old_utf8_seq(const unsigned char *p, size_t n) {
  unsigned c = p[0];
  if (c < 0x80) return 1;
  if (c < 0xC2 || c > 0xF4) return 0;
  size_t len = c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
  unsigned lo = 0x80, hi = 0xBF;
  if (c == 0xE0) lo = 0xA0;
  else if (c == 0xED) hi = 0x9F;
  else if (c == 0xF0) lo = 0x90;
  else if (c == 0xF4) hi = 0x8F;
  if (n < 2 || p[1] < lo || p[1] > hi) return 0;
  for (size_t i = 2; i < len; i++)
    if (i >= n || (p[i] & 0xC0) != 0x80) return 0;
  return len;
}

static inline size_t old_utf8_bad_len(const unsigned char *p, size_t n) {
  unsigned c = p[0];
  if (c < 0xC2 || c > 0xF4) return 1;
  size_t len = c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
  unsigned lo = 0x80, hi = 0xBF;
  if (c == 0xE0) lo = 0xA0;
  else if (c == 0xED) hi = 0x9F;
  else if (c == 0xF0) lo = 0x90;
  else if (c == 0xF4) hi = 0x8F;
  size_t i = 1;
  if (i < n && p[1] >= lo && p[1] <= hi) {
    i = 2;
    while (i < len && i < n && (p[i] & 0xC0) == 0x80) i++;
  }
  return i;
}

static size_t old_escape_into(char *d, const char *s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char *p = (const unsigned char *)s, *e = p + n;
  char *o = d;
  while (p < e) {
    unsigned c = *p;
    if (c >= 0x20 && c < 0x80) {
      if (c == '"' || c == '\\') *o++ = '\\';
      *o++ = (char)c;
      p++;
    } else if (c < 0x20) {
      memcpy(o, "\\u00", 4);
      o[4] = hex[c >> 4];
      o[5] = hex[c & 15];
      o += 6;
      p++;
    } else {
      size_t l = old_utf8_seq(p, (size_t)(e - p));
      if (l) {
        memcpy(o, p, l);
        o += l;
        p += l;
      } else {
        memcpy(o, "\xEF\xBF\xBD", 3);
        o += 3;
        p += old_utf8_bad_len(p, (size_t)(e - p));
      }
    }
  }
  return (size_t)(o - d);
}

static int old_json_clean(const char *s, size_t n) {
  const unsigned char *p = (const unsigned char *)s, *e = p + n;
  while (p < e) {
    unsigned c = *p;
    if (c >= 0x80) {
      size_t l = old_utf8_seq(p, (size_t)(e - p));
      if (!l) return 0;
      p += l;
      continue;
    }
    if (c < 0x20 || c == '"' || c == '\\') return 0;
    p++;
  }
  return 1;
}

/* chrome_json.c's cap_escape before the toolbox, verbatim. */
static void old_cap_escape(tbe__buf *b, const unsigned char *s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  tbe__buf_putc(b, '"');
  size_t run = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = s[i];
    if (ch >= 0x20 && ch != '"' && ch != '\\') continue;
    tbe__buf_append(b, s + run, i - run);
    run = i + 1;
    switch (ch) {
      case '"': tbe__buf_append(b, "\\\"", 2); break;
      case '\\': tbe__buf_append(b, "\\\\", 2); break;
      case '\n': tbe__buf_append(b, "\\n", 2); break;
      case '\t': tbe__buf_append(b, "\\t", 2); break;
      case '\r': tbe__buf_append(b, "\\r", 2); break;
      case '\b': tbe__buf_append(b, "\\b", 2); break;
      case '\f': tbe__buf_append(b, "\\f", 2); break;
      default: {
        char u[6] = {'\\', 'u', '0', '0', hex[ch >> 4], hex[ch & 15]};
        tbe__buf_append(b, u, 6);
      }
    }
  }
  tbe__buf_append(b, s + run, n - run);
  tbe__buf_putc(b, '"');
}

/* ---- tests ---- */

static void test_decode_vectors(void **state) {
  (void)state;
  uint32_t cp;
  struct {
    const char *s;
    size_t len;
    uint32_t cp;
  } ok[] = {{"\x7f", 1, 0x7f},         {"\xc2\x80", 2, 0x80},          {"\xdf\xbf", 2, 0x7ff},
            {"\xe0\xa0\x80", 3, 0x800}, {"\xed\x9f\xbf", 3, 0xd7ff},    {"\xee\x80\x80", 3, 0xe000},
            {"\xef\xbf\xbf", 3, 0xffff}, {"\xf0\x90\x80\x80", 4, 0x10000},
            {"\xf4\x8f\xbf\xbf", 4, 0x10ffff}};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    assert_int_equal(tbe__utf8_decode((const uint8_t *)ok[i].s, ok[i].len, &cp), ok[i].len);
    assert_int_equal(cp, ok[i].cp);
    assert_int_equal(tbe__utf8_decode((const uint8_t *)ok[i].s, ok[i].len - 1, &cp), 0); /* cut */
  }
  const char *bad[] = {"\xc0\x80", "\xc1\xbf", "\xe0\x9f\xbf", "\xed\xa0\x80", "\xf0\x8f\xbf\xbf",
                       "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\x80", "\xff"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    assert_int_equal(tbe__utf8_decode((const uint8_t *)bad[i], strlen(bad[i]), &cp), 0);
  /* maximal subparts */
  assert_int_equal(tbe__utf8_bad_len((const uint8_t *)"\xe2\x82" "A", 3), 2);
  assert_int_equal(tbe__utf8_bad_len((const uint8_t *)"\xf0\x90\x80", 3), 3);
  assert_int_equal(tbe__utf8_bad_len((const uint8_t *)"\xe0\x80\x80", 3), 1); /* overlong */
  assert_int_equal(tbe__utf8_bad_len((const uint8_t *)"\xed\xa0\x80", 3), 1); /* surrogate */
  assert_int_equal(tbe__utf8_bad_len((const uint8_t *)"\x80\x80", 2), 1);
}

/* Every string of 1 to 3 bytes, and random ones up to 40 bytes at every
 * alignment, against the reference. */
static void test_valid_exhaustive(void **state) {
  (void)state;
  uint8_t s[4];
  for (uint32_t v = 0; v < (1u << 24); v++) {
    s[0] = (uint8_t)(v >> 16), s[1] = (uint8_t)(v >> 8), s[2] = (uint8_t)v;
    if (v < 256) assert_int_equal(tbe__utf8_valid((char *)s + 2, 1), ref_valid(s + 2, 1));
    if (v < 65536) assert_int_equal(tbe__utf8_valid((char *)s + 1, 2), ref_valid(s + 1, 2));
    if (tbe__utf8_valid((char *)s, 3) != ref_valid(s, 3)) fail_msg("3 bytes %06x", v);
  }
  rng_state = 5;
  uint8_t buf[64];
  for (int it = 0; it < 200000; it++) {
    size_t off = rnd() % 8, n = rnd() % 41;
    fill(buf + off, n);
    assert_int_equal(tbe__utf8_valid((char *)buf + off, n), ref_valid(buf + off, n));
  }
}

static void test_repair(void **state) {
  (void)state;
  rng_state = 9;
  tbe__buf b;
  tbe__buf_init(&b, &g_malloc);
  uint8_t in[80], want[300];
  for (int it = 0; it < 100000; it++) {
    size_t off = rnd() % 8, n = rnd() % 64;
    fill(in + off, n);
    for (int nul = 0; nul < 2; nul++) {
      tbe__buf_clear(&b);
      tbe__utf8_repair(&b, (char *)in + off, n, nul ? TBE__UTF8_NUL : 0);
      size_t wn = ref_repair(in + off, n, nul, want);
      assert_int_equal(b.len, wn);
      assert_memory_equal(b.data, want, wn);
      assert_true(tbe__utf8_valid((char *)b.data, b.len));
      if (nul) assert_null(memchr(b.data, 0, b.len));
    }
  }
  assert_int_equal(tbe__buf_error(&b), 0);
  tbe__buf_deinit(&b);
}

/* The data form is byte for byte what export_json.c wrote, and the
 * SHORT|RAW8 form what chrome_json.c's capture wrote. */
static void test_json_same_bytes(void **state) {
  (void)state;
  rng_state = 11;
  tbe__buf b, ref;
  tbe__buf_init(&b, &g_malloc);
  tbe__buf_init(&ref, &g_malloc);
  uint8_t in[100];
  char got[600], want[600];
  for (int it = 0; it < 200000; it++) {
    size_t off = rnd() % 8, n = rnd() % 90;
    fill(in + off, n);
    const char *s = (const char *)in + off;
    size_t gn = tbe__json_escape(got, s, n, 0), wn = old_escape_into(want, s, n);
    assert_int_equal(gn, wn);
    assert_memory_equal(got, want, wn);
    assert_true(gn <= TBE__JSON_ROOM(n));
    assert_int_equal(tbe__json_plain(s, n), old_json_clean(s, n));
    if (tbe__json_plain(s, n)) assert_memory_equal(got, s, n);
    tbe__buf_clear(&b);
    tbe__buf_clear(&ref);
    tbe__json_quote(&b, s, n, TBE__JSON_SHORT | TBE__JSON_RAW8);
    old_cap_escape(&ref, in + off, n);
    assert_int_equal(b.len, ref.len);
    assert_memory_equal(b.data, ref.data, ref.len);
    tbe__buf_clear(&b);
    tbe__json_quote(&b, s, n, 0);
    assert_int_equal(b.len, wn + 2);
    assert_memory_equal(b.data + 1, want, wn);
  }
  /* The worst case fills the room exactly. */
  char ctl[16], out[TBE__JSON_ROOM(16)];
  memset(ctl, 1, sizeof ctl);
  assert_int_equal(tbe__json_escape(out, ctl, sizeof ctl, 0), TBE__JSON_ROOM(16));
  assert_memory_equal(out, "\\u0001\\u0001", 12);
  assert_int_equal(tbe__json_escape(out, "\n\x7f\"", 3, TBE__JSON_SHORT), 5);
  assert_memory_equal(out, "\\n\x7f\\\"", 5);
  tbe__buf_deinit(&b);
  tbe__buf_deinit(&ref);
}

/* The display form of text.h keeps its own rule (a replacement per
 * invalid byte, invisible characters escaped): the two forms differ on
 * purpose, and the decoder they share gives both. */
static void test_display_form_apart(void **state) {
  (void)state;
  tbe__buf b;
  tbe__buf_init(&b, &g_malloc);
  tbe__text_json(&b, "\xe2\x82" "A\xe2\x80\xae", 6);
  assert_int_equal(b.len, 15);
  assert_memory_equal(b.data, "\"\xef\xbf\xbd\xef\xbf\xbd" "A\\u202e\"", 15);
  tbe__buf_clear(&b);
  tbe__json_quote(&b, "\xe2\x82" "A\xe2\x80\xae", 6, 0);
  assert_int_equal(b.len, 9);
  assert_memory_equal(b.data, "\"\xef\xbf\xbd" "A\xe2\x80\xae\"", 9);
  tbe__buf_deinit(&b);
}

static int quote_run(const tbe_allocator *a, void *ctx) {
  (void)ctx;
  tbe__buf b;
  tbe__buf_init(&b, a);
  static char text[5000];
  memset(text, '\x01', sizeof text);
  for (int i = 0; i < 4; i++) tbe__json_quote(&b, text, sizeof text, 0);
  tbe__utf8_repair(&b, "\xff", 1, 0);
  int rc = tbe__buf_error(&b);
  if (!rc) assert_int_equal(b.len, 4 * (6 * sizeof text + 2) + 3);
  tbe__buf_deinit(&b);
  return rc;
}

static void test_alloc_sweep(void **state) {
  (void)state;
  assert_true(tu_alloc_sweep(quote_run, NULL, 64) > 2);
  /* A length whose room overflows is the buffer's sticky error. */
  tbe__buf b;
  tbe__buf_init(&b, &g_malloc);
  tbe__json_quote(&b, "", SIZE_MAX / 4, 0);
  assert_int_equal(tbe__buf_error(&b), TBE_ENOMEM);
  tbe__buf_deinit(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_decode_vectors),    cmocka_unit_test(test_valid_exhaustive),
      cmocka_unit_test(test_repair),            cmocka_unit_test(test_json_same_bytes),
      cmocka_unit_test(test_display_form_apart), cmocka_unit_test(test_alloc_sweep),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
