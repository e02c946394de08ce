/* export_json_num.h: numbers as the Chrome JSON output prints them
 * (export_json_num.c): integers from a table of digit pairs, timestamps
 * as microseconds with three decimals, doubles in their shortest form
 * that reads back the same.  A module of its own so that the inline
 * writers of export_json_int.h call nothing in the files that include
 * them. */
#ifndef TBE_TRACE_EXPORT_JSON_NUM_H
#define TBE_TRACE_EXPORT_JSON_NUM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* "00" "01" ... "99". */
extern const char tbe__jw_digits2[201];

/* Writes the decimal form of v at p; returns the number of bytes (<= 20). */
static inline size_t put_u64(char *p, uint64_t v) {
  char tmp[24];
  char *e = tmp + sizeof tmp, *s = e;
  while (v >= 100) {
    unsigned r = (unsigned)(v % 100);
    v /= 100;
    s -= 2;
    memcpy(s, tbe__jw_digits2 + 2 * r, 2);
  }
  if (v >= 10) {
    s -= 2;
    memcpy(s, tbe__jw_digits2 + 2 * v, 2);
  } else {
    *--s = (char)('0' + v);
  }
  size_t n = (size_t)(e - s);
  memcpy(p, s, n);
  return n;
}

static inline size_t put_i64(char *p, int64_t v) {
  if (v < 0) {
    *p = '-';
    return 1 + put_u64(p + 1, (uint64_t)0 - (uint64_t)v);
  }
  return put_u64(p, (uint64_t)v);
}

/* Nanoseconds as microseconds with exactly three decimals ("12.345"). */
static inline size_t put_us(char *p, int64_t ns) {
  size_t n = 0;
  uint64_t u;
  if (ns < 0) {
    p[n++] = '-';
    u = (uint64_t)0 - (uint64_t)ns;
  } else {
    u = (uint64_t)ns;
  }
  n += put_u64(p + n, u / 1000);
  unsigned r = (unsigned)(u % 1000);
  p[n] = '.';
  p[n + 1] = (char)('0' + r / 100);
  memcpy(p + n + 2, tbe__jw_digits2 + 2 * (r % 100), 2);
  return n + 4;
}

/* Shortest "%.Ng" form that reads back as the same double (N = 15..17);
 * integral values keep a ".0" so they re-import as doubles.  Non-finite
 * values are not JSON: they become null.  At most 32 bytes. */
size_t tbe__jw_fmt_double(char *out, double v);

#endif
