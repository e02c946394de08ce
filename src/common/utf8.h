/* utf8.h: UTF-8 checking and repair, and JSON strings as data.
 *
 * One decoder for the library (tbe__utf8_decode, Unicode's table 3-7:
 * overlong forms, surrogates, code points above U+10FFFF and cut
 * sequences are invalid) and one rule for invalid input: every maximal
 * subpart of an ill-formed sequence (its lead byte plus the continuation
 * bytes that could still have completed it) becomes one U+FFFD, as the
 * Unicode standard recommends and as Python's and the browsers' (WHATWG)
 * decoders do.  So "\xe2\x82A" is U+FFFD then "A" (one replacement, not
 * two), and a lone "\x80" is one.  Outputs that must hold valid UTF-8
 * (XSpace's proto3 strings, JSON files) and importers that hand text on
 * use tbe__utf8_repair or the JSON writer below, which repair the same
 * way; test/fuzz/fuzz_json_escape.c checks the whole round trip (export,
 * then our importer) against an independent statement of this rule.
 *
 * JSON strings here are data, the form the Chrome-trace exporter writes
 * and readers (Perfetto, HTA, json.loads) give back unchanged: '"' and
 * '\' are escaped, control characters below U+0020 become \u00XX, and
 * everything else, DEL and invisible characters included, is copied as
 * is (those are part of the name).  Text shown to a person (reports,
 * `inspect --dump`) uses the display form of common/text.h instead,
 * tbe__text_json, which also escapes DEL, C1 and invisible characters
 * and replaces each invalid byte by itself (its rule, \xHH per byte in
 * the terminal form, is per byte): the two forms differ on purpose.
 *
 * Flags of the JSON writer:
 *   TBE__JSON_SHORT  \b \f \n \r \t as two-character escapes (the form of
 *                    re-serialised nested values), others as \u00XX;
 *   TBE__JSON_RAW8   bytes >= 0x80 copied unchecked, for text whose UTF-8
 *                    is checked later (the importer repairs it when it
 *                    interns); without it they are checked and repaired.
 *
 * Cost: runs of plain ASCII are scanned 8 bytes at a time and copied
 * whole; only the bytes that need work are looked at one by one.
 * Nothing here allocates except through the caller's tbe__buf.  All
 * functions are pure and thread-safe. */
#ifndef TBE_COMMON_UTF8_H
#define TBE_COMMON_UTF8_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

/* The valid UTF-8 sequence at s[0..n): its length (1..4) and code point in
 * *cp, or 0 when s does not start one (n = 0 included). */
static inline size_t tbe__utf8_decode(const uint8_t *s, size_t n, uint32_t *cp) {
  if (n == 0) return 0;
  uint32_t c = s[0];
  if (c < 0x80) {
    *cp = c;
    return 1;
  }
  size_t k;
  uint32_t v, lo = 0x80, hi = 0xbf;
  if (c >= 0xc2 && c <= 0xdf) k = 2, v = c & 0x1f;
  else if (c >= 0xe0 && c <= 0xef) k = 3, v = c & 0x0f;
  else if (c >= 0xf0 && c <= 0xf4) k = 4, v = c & 0x07;
  else return 0;
  /* The second byte's range excludes overlong forms, surrogates and code
   * points above U+10FFFF (table 3-7). */
  if (c == 0xe0) lo = 0xa0;
  else if (c == 0xed) hi = 0x9f;
  else if (c == 0xf0) lo = 0x90;
  else if (c == 0xf4) hi = 0x8f;
  if (n < k || s[1] < lo || s[1] > hi) return 0;
  v = (v << 6) | (s[1] & 0x3f);
  for (size_t i = 2; i < k; i++) {
    if ((s[i] & 0xc0) != 0x80) return 0;
    v = (v << 6) | (s[i] & 0x3f);
  }
  *cp = v;
  return k;
}

/* The bytes one U+FFFD replaces at s[0..n), n >= 1, where no valid
 * sequence starts: the maximal subpart (1..3). */
size_t tbe__utf8_bad_len(const uint8_t *s, size_t n);

/* 1 when s[0..n) is valid UTF-8 (NUL is valid). */
int tbe__utf8_valid(const char *s, size_t n);

#define TBE__UTF8_NUL 0x1 /* tbe__utf8_repair: NUL becomes U+FFFD too */

/* Appends s[0..n) with each maximal invalid subpart replaced by U+FFFD
 * (and NUL, with TBE__UTF8_NUL). */
void tbe__utf8_repair(tbe__buf *b, const char *s, size_t n, unsigned flags);

#define TBE__JSON_SHORT 0x1
#define TBE__JSON_RAW8 0x2

/* Bytes tbe__json_escape may write for n input bytes (an overflow-safe
 * bound for n <= SIZE_MAX / 6). */
#define TBE__JSON_ROOM(n) (6 * (n))

/* 1 when s[0..n) may stand between quotes as it is: valid UTF-8, no '"',
 * '\' or control character below 0x20. */
int tbe__json_plain(const char *s, size_t n);

/* Writes s[0..n) escaped (no quotes) into d, which has room for
 * TBE__JSON_ROOM(n) bytes; returns the length written. */
size_t tbe__json_escape(char *d, const char *s, size_t n, unsigned flags);

/* Appends s[0..n) as a JSON string literal, quotes included (a length
 * too large to bound is the buffer's TBE_ENOMEM). */
void tbe__json_quote(tbe__buf *b, const char *s, size_t n, unsigned flags);

#endif
