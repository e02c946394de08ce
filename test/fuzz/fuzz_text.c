/* fuzz_text.c: libFuzzer target for the text forms of common/text.h.
 *
 * The input is any text a file could hold (a kernel name, a host, a tag, a
 * file name).  For each form, what must hold whatever the input:
 *  - safe: no byte below 0x20 (except none at all), no DEL, valid UTF-8, no
 *    C1 control and no invisible or reordering character left raw (checked
 *    with a UTF-8 decoder written here, independent of the library's);
 *  - terminal form: reversible, decoded back here to exactly the input;
 *  - line form: idempotent (its own line form is itself);
 *  - Markdown: no raw '<' or '>', every '|' backslash-escaped, and read
 *    back the way Python-Markdown does (backslash escapes of its
 *    characters, the entities &lt; &gt; &amp;) it is the terminal form;
 *  - JSON: decoded here, the input with each byte of invalid UTF-8
 *    replaced by U+FFFD;
 *  - CSV: unquoted, the terminal form;
 *  - widths: tbe__text_fit gives a prefix of the terminal form (plus
 *    "...") no wider than asked, cut between characters.
 * Any failure aborts with what differed. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/text.h"

static void fail(const char *what) {
  fprintf(stderr, "fuzz_text: %s\n", what);
  abort();
}

/* Unicode table 3-7, written out again: length of the valid sequence at
 * s[0..n) and its code point, 0 if invalid. */
static size_t dec(const uint8_t *s, size_t n, uint32_t *cp) {
  uint8_t c = s[0];
  if (c < 0x80) return *cp = c, 1;
  size_t k;
  uint8_t lo = 0x80, hi = 0xbf;
  if (c >= 0xc2 && c <= 0xdf) k = 2;
  else if (c >= 0xe0 && c <= 0xef) k = 3;
  else if (c >= 0xf0 && c <= 0xf4) k = 4;
  else return 0;
  if (c == 0xe0) lo = 0xa0;
  if (c == 0xed) hi = 0x9f;
  if (c == 0xf0) lo = 0x90;
  if (c == 0xf4) hi = 0x8f;
  if (n < k || s[1] < lo || s[1] > hi) return 0;
  for (size_t i = 2; i < k; i++)
    if (s[i] < 0x80 || s[i] > 0xbf) return 0;
  uint32_t v = c & (k == 2 ? 0x1f : k == 3 ? 0x0f : 0x07);
  for (size_t i = 1; i < k; i++) v = v << 6 | (s[i] & 0x3f);
  return *cp = v, k;
}

static void put_utf8(uint8_t *o, size_t *n, uint32_t v) {
  if (v < 0x80) o[(*n)++] = (uint8_t)v;
  else if (v < 0x800) o[(*n)++] = (uint8_t)(0xc0 | v >> 6), o[(*n)++] = (uint8_t)(0x80 | (v & 63));
  else if (v < 0x10000)
    o[(*n)++] = (uint8_t)(0xe0 | v >> 12), o[(*n)++] = (uint8_t)(0x80 | (v >> 6 & 63)),
    o[(*n)++] = (uint8_t)(0x80 | (v & 63));
  else
    o[(*n)++] = (uint8_t)(0xf0 | v >> 18), o[(*n)++] = (uint8_t)(0x80 | (v >> 12 & 63)),
    o[(*n)++] = (uint8_t)(0x80 | (v >> 6 & 63)), o[(*n)++] = (uint8_t)(0x80 | (v & 63));
}

/* No raw control, DEL, C1, invisible character or invalid UTF-8. */
static void check_safe(const uint8_t *s, size_t n, const char *form) {
  for (size_t i = 0; i < n;) {
    uint32_t cp;
    size_t k = dec(s + i, n - i, &cp);
    if (!k || cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f) || tbe__text_invisible(cp)) {
      char msg[96];
      snprintf(msg, sizeof msg, "%s form: unsafe byte 0x%02x at %zu", form, s[i], i);
      fail(msg);
    }
    i += k;
  }
}

static int hexv(uint8_t c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Decodes the terminal form; returns the length, or SIZE_MAX for text the
 * form never produces. */
static size_t unterm(const uint8_t *s, size_t n, uint8_t *out) {
  size_t o = 0;
  for (size_t i = 0; i < n;) {
    if (s[i] != '\\') {
      out[o++] = s[i++];
      continue;
    }
    if (i + 1 >= n) return SIZE_MAX;
    uint8_t c = s[i + 1];
    if (c == '\\') out[o++] = '\\', i += 2;
    else if (c == 'n') out[o++] = '\n', i += 2;
    else if (c == 'r') out[o++] = '\r', i += 2;
    else if (c == 't') out[o++] = '\t', i += 2;
    else if (c == 'x' || c == 'u' || c == 'U') {
      int digits = c == 'x' ? 2 : c == 'u' ? 4 : 8;
      if (i + 2 + (size_t)digits > n) return SIZE_MAX;
      uint32_t v = 0;
      for (int k = 0; k < digits; k++) {
        int h = hexv(s[i + 2 + k]);
        if (h < 0) return SIZE_MAX;
        v = v << 4 | (uint32_t)h;
      }
      if (c == 'x') out[o++] = (uint8_t)v;
      else put_utf8(out, &o, v);
      i += 2 + (size_t)digits;
    } else {
      return SIZE_MAX;
    }
  }
  return o;
}

/* Reads Markdown back as Python-Markdown does; SIZE_MAX when a '<', '>'
 * or an unescaped '|' is raw. */
static size_t unmd(const uint8_t *s, size_t n, uint8_t *out) {
  static const char escapable[] = "\\`*_{}[]()>#+-.!|";
  size_t o = 0;
  for (size_t i = 0; i < n;) {
    if (s[i] == '<' || s[i] == '>' || s[i] == '|') return SIZE_MAX;
    if (s[i] == '\\' && i + 1 < n && strchr(escapable, s[i + 1])) {
      out[o++] = s[i + 1];
      i += 2;
    } else if (s[i] == '&') {
      static const char *ent[3] = {"&lt;", "&gt;", "&amp;"};
      static const char ch[3] = {'<', '>', '&'};
      int k = 0;
      while (k < 3 && !(n - i >= strlen(ent[k]) && memcmp(s + i, ent[k], strlen(ent[k])) == 0)) k++;
      if (k == 3) return SIZE_MAX; /* a raw '&' could start an entity */
      out[o++] = (uint8_t)ch[k];
      i += strlen(ent[k]);
    } else {
      out[o++] = s[i++];
    }
  }
  return o;
}

/* Decodes a JSON string literal (quotes included); SIZE_MAX if malformed. */
static size_t unjson(const uint8_t *s, size_t n, uint8_t *out) {
  if (n < 2 || s[0] != '"' || s[n - 1] != '"') return SIZE_MAX;
  size_t o = 0;
  for (size_t i = 1; i + 1 < n;) {
    if (s[i] == '"') return SIZE_MAX;
    if (s[i] != '\\') {
      out[o++] = s[i++];
      continue;
    }
    uint8_t c = s[i + 1];
    if (c == '"' || c == '\\' || c == '/') out[o++] = c, i += 2;
    else if (c == 'n') out[o++] = '\n', i += 2;
    else if (c == 't') out[o++] = '\t', i += 2;
    else if (c == 'r') out[o++] = '\r', i += 2;
    else if (c == 'u' && i + 6 < n) {
      uint32_t v = 0;
      for (int k = 0; k < 4; k++) {
        int h = hexv(s[i + 2 + k]);
        if (h < 0) return SIZE_MAX;
        v = v << 4 | (uint32_t)h;
      }
      i += 6;
      if (v >= 0xd800 && v <= 0xdbff) {
        uint32_t lo = 0;
        if (i + 6 > n - 1 || s[i] != '\\' || s[i + 1] != 'u') return SIZE_MAX;
        for (int k = 0; k < 4; k++) {
          int h = hexv(s[i + 2 + k]);
          if (h < 0) return SIZE_MAX;
          lo = lo << 4 | (uint32_t)h;
        }
        if (lo < 0xdc00 || lo > 0xdfff) return SIZE_MAX;
        v = 0x10000 + ((v - 0xd800) << 10) + (lo - 0xdc00);
        i += 6;
      }
      put_utf8(out, &o, v);
    } else {
      return SIZE_MAX;
    }
  }
  return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 4096) return 0;
  tbe_allocator al;
  tbe__allocator_init(&al, NULL);
  const char *s = (const char *)data;
  uint8_t *back = malloc(4 * size + 16);
  if (!back) return 0;
  tbe__buf t, l, l2, m, j, c;
  tbe__buf *all[6] = {&t, &l, &l2, &m, &j, &c};
  for (int i = 0; i < 6; i++) tbe__buf_init(all[i], &al);

  /* terminal form: safe, and decodes to the input */
  tbe__text_term(&t, s, size);
  check_safe(t.data, t.len, "terminal");
  size_t bn = unterm(t.data, t.len, back);
  if (bn != size || (size && memcmp(back, data, size) != 0)) fail("terminal form does not decode back");
  if (tbe__text_width((const char *)t.data, t.len) > t.len) fail("width above the byte count");

  /* line form: safe and idempotent */
  tbe__text_line(&l, s, size);
  check_safe(l.data, l.len, "line");
  tbe__text_line(&l2, (const char *)l.data, l.len);
  if (l2.len != l.len || (l.len && memcmp(l2.data, l.data, l.len) != 0)) fail("line form not idempotent");

  /* Markdown: safe, one cell, and reads back as the terminal form */
  tbe__text_md(&m, s, size);
  check_safe(m.data, m.len, "markdown");
  bn = unmd(m.data, m.len, back);
  if (bn == SIZE_MAX) fail("markdown form holds a raw < > | or &");
  if (bn != t.len || (bn && memcmp(back, t.data, bn) != 0)) fail("markdown does not read back");

  /* JSON: safe, and the input with invalid bytes replaced by U+FFFD */
  tbe__text_json(&j, s, size);
  check_safe(j.data, j.len, "json");
  bn = unjson(j.data, j.len, back);
  if (bn == SIZE_MAX) fail("malformed JSON string");
  {
    uint8_t *want = malloc(3 * size + 1);
    if (!want) abort();
    size_t wn = 0;
    for (size_t i = 0; i < size;) {
      uint32_t cp;
      size_t k = dec(data + i, size - i, &cp);
      if (!k) {
        memcpy(want + wn, "\xef\xbf\xbd", 3), wn += 3, i++;
      } else {
        memcpy(want + wn, data + i, k), wn += k, i += k;
      }
    }
    if (wn != bn || (wn && memcmp(want, back, wn) != 0)) fail("JSON does not decode to the text");
    free(want);
  }

  /* CSV: safe, and unquoted the terminal form */
  tbe__text_csv(&c, s, size);
  check_safe(c.data, c.len, "csv");
  {
    const uint8_t *p = c.data;
    size_t n = c.len, o = 0;
    if (n && p[0] == '"') {
      if (n < 2 || p[n - 1] != '"') fail("CSV quote not closed");
      for (size_t i = 1; i + 1 < n; i++) {
        if (p[i] == '"' && (i + 2 >= n || p[i + 1] != '"')) fail("lone quote in a CSV field");
        back[o++] = p[i];
        if (p[i] == '"') i++;
      }
    } else if (n) {
      if (memchr(p, ',', n) || memchr(p, '"', n)) fail("CSV field needs quotes");
      memcpy(back, p, n), o = n;
    }
    if (o != t.len || (o && memcmp(back, t.data, o) != 0)) fail("CSV field is not the terminal form");
  }

  /* fit: a prefix of the terminal form, as wide as asked at most */
  if (size >= 1 && memchr(data, 0, size) == NULL) {
    char *z = malloc(size + 1), out[160];
    if (!z) abort();
    memcpy(z, data, size);
    z[size] = '\0';
    size_t cols = data[0] % 48;
    size_t w = tbe__text_fit(out, sizeof out, z, cols);
    size_t on = strlen(out);
    check_safe((const uint8_t *)out, on, "fit");
    if (w != tbe__text_width(out, on)) fail("fit: reported width differs");
    if (cols && w > cols) fail("fit: wider than asked");
    int prefix = on <= t.len && memcmp(out, t.data, on) == 0;
    int dotted = on >= 3 && memcmp(out + on - 3, "...", 3) == 0 && on - 3 <= t.len &&
                 memcmp(out, t.data, on - 3) == 0;
    if (!prefix && !dotted) fail("fit: not a prefix of the terminal form");
    free(z);
  }

  for (int i = 0; i < 6; i++) tbe__buf_deinit(all[i]);
  free(back);
  return 0;
}
