/* utf8.c: the checks, the repair and the JSON writer of utf8.h.
 *
 * Each function skips plain bytes a word at a time (ascii_run, json_run)
 * and handles the rest with the one decoder, tbe__utf8_decode, and the
 * one replacement rule, tbe__utf8_bad_len. */
#include "common/utf8.h"

#include <string.h>

static const char hex[] = "0123456789abcdef";
static const char fffd[3] = {(char)0xef, (char)0xbf, (char)0xbd};

#define ONES 0x0101010101010101ull
#define HIGHS 0x8080808080808080ull

static inline uint64_t load64(const uint8_t *p) {
  uint64_t w;
  memcpy(&w, p, 8);
  return w;
}

/* Bytes from p[0] on that are below 0x80, counted 8 at a time. */
static inline size_t ascii_run(const uint8_t *p, size_t n) {
  size_t i = 0;
  while (i + 8 <= n && !(load64(p + i) & HIGHS)) i += 8;
  while (i < n && p[i] < 0x80) i++;
  return i;
}

/* A word's bytes that are < 0x20, '"' or '\\' (or >= 0x80) have their high
 * bit set in the result: the classic "has a byte below x" test per byte
 * class, exact for 7-bit bytes. */
static inline uint64_t json_special(uint64_t w) {
  uint64_t lo = (w - 0x2020202020202020ull) & ~w;           /* byte < 0x20 */
  uint64_t q = w ^ 0x2222222222222222ull, bs = w ^ 0x5c5c5c5c5c5c5c5cull;
  uint64_t eq = ((q - ONES) & ~q) | ((bs - ONES) & ~bs);    /* byte == '"' or '\\' */
  return (lo | eq | w) & HIGHS;
}

/* Bytes from p[0] on that JSON takes as they are and that are ASCII. */
static inline size_t json_run(const uint8_t *p, size_t n) {
  size_t i = 0;
  while (i + 8 <= n && !json_special(load64(p + i))) i += 8;
  while (i < n && p[i] >= 0x20 && p[i] < 0x80 && p[i] != '"' && p[i] != '\\') i++;
  return i;
}

/* ---- checking and repair ---- */

size_t tbe__utf8_bad_len(const uint8_t *s, size_t n) {
  uint8_t c = s[0];
  size_t len;
  uint8_t lo = 0x80, hi = 0xbf;
  if (c >= 0xc2 && c <= 0xdf) len = 2;
  else if (c >= 0xe0 && c <= 0xef) len = 3;
  else if (c >= 0xf0 && c <= 0xf4) len = 4;
  else return 1;
  if (c == 0xe0) lo = 0xa0;
  else if (c == 0xed) hi = 0x9f;
  else if (c == 0xf0) lo = 0x90;
  else if (c == 0xf4) hi = 0x8f;
  size_t i = 1;
  if (n > 1 && s[1] >= lo && s[1] <= hi) {
    i = 2;
    while (i < len && i < n && (s[i] & 0xc0) == 0x80) i++;
  }
  /* i == len cannot happen here: that would have been a valid sequence. */
  return i;
}

int tbe__utf8_valid(const char *s, size_t n) {
  const uint8_t *p = (const uint8_t *)s;
  size_t i = 0;
  uint32_t cp;
  while (i < n) {
    i += ascii_run(p + i, n - i);
    if (i == n) break;
    size_t k = tbe__utf8_decode(p + i, n - i, &cp);
    if (!k) return 0;
    i += k;
  }
  return 1;
}

void tbe__utf8_repair(tbe__buf *b, const char *s, size_t n, unsigned flags) {
  const uint8_t *p = (const uint8_t *)s;
  size_t i = 0;
  uint32_t cp;
  while (i < n) {
    size_t run = ascii_run(p + i, n - i);
    if (flags & TBE__UTF8_NUL) {
      const uint8_t *z = run ? memchr(p + i, 0, run) : NULL;
      if (z) run = (size_t)(z - (p + i));
    }
    tbe__buf_append(b, p + i, run);
    i += run;
    if (i == n) break;
    if (p[i] == 0) { /* only with TBE__UTF8_NUL: ascii_run passes it otherwise */
      tbe__buf_append(b, fffd, 3);
      i++;
      continue;
    }
    size_t k = tbe__utf8_decode(p + i, n - i, &cp);
    if (k) {
      tbe__buf_append(b, p + i, k);
      i += k;
    } else {
      tbe__buf_append(b, fffd, 3);
      i += tbe__utf8_bad_len(p + i, n - i);
    }
  }
}

/* ---- JSON ---- */

int tbe__json_plain(const char *s, size_t n) {
  const uint8_t *p = (const uint8_t *)s;
  size_t i = 0;
  uint32_t cp;
  while (i < n) {
    i += json_run(p + i, n - i);
    if (i == n) break;
    if (p[i] < 0x80) return 0; /* a control, '"' or '\\' */
    size_t k = tbe__utf8_decode(p + i, n - i, &cp);
    if (!k) return 0;
    i += k;
  }
  return 1;
}

size_t tbe__json_escape(char *d, const char *s, size_t n, unsigned flags) {
  const uint8_t *p = (const uint8_t *)s;
  char *o = d;
  size_t i = 0;
  uint32_t cp;
  while (i < n) {
    size_t run = json_run(p + i, n - i);
    memcpy(o, p + i, run);
    o += run;
    i += run;
    if (i == n) break;
    uint8_t c = p[i];
    if (c == '"' || c == '\\') {
      *o++ = '\\';
      *o++ = (char)c;
      i++;
    } else if (c < 0x20) {
      char sh = 0;
      if (flags & TBE__JSON_SHORT) {
        switch (c) {
          case '\b': sh = 'b'; break;
          case '\f': sh = 'f'; break;
          case '\n': sh = 'n'; break;
          case '\r': sh = 'r'; break;
          case '\t': sh = 't'; break;
          default: break;
        }
      }
      if (sh) {
        *o++ = '\\';
        *o++ = sh;
      } else {
        memcpy(o, "\\u00", 4);
        o[4] = hex[c >> 4];
        o[5] = hex[c & 15];
        o += 6;
      }
      i++;
    } else if (flags & TBE__JSON_RAW8) { /* (DEL is data: json_run copies it) */
      *o++ = (char)c;
      i++;
    } else {
      size_t k = tbe__utf8_decode(p + i, n - i, &cp);
      if (k) {
        memcpy(o, p + i, k);
        o += k;
        i += k;
      } else {
        memcpy(o, fffd, 3);
        o += 3;
        i += tbe__utf8_bad_len(p + i, n - i);
      }
    }
  }
  return (size_t)(o - d);
}

void tbe__json_quote(tbe__buf *b, const char *s, size_t n, unsigned flags) {
  if (n > (SIZE_MAX - 2) / 6) {
    tbe__buf_reserve(b, SIZE_MAX); /* sets the buffer's sticky TBE_ENOMEM */
    return;
  }
  char *d = (char *)tbe__buf_reserve(b, TBE__JSON_ROOM(n) + 2);
  if (!d) return;
  d[0] = '"';
  size_t l = tbe__json_escape(d + 1, s, n, flags);
  d[l + 1] = '"';
  b->len += l + 2;
}
