/* export_json_num.c: the numbers of the Chrome JSON output
 * (export_json_num.h).  Invariant: a double prints as the shortest
 * %.Ng (N = 15..17) that strtod reads back as the same bits, so that a
 * re-import gets every value exactly. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/export/export_json_num.h"

const char tbe__jw_digits2[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

size_t tbe__jw_fmt_double(char *out, double v) {
  if (!isfinite(v)) {
    memcpy(out, "null", 4);
    return 4;
  }
  if (v == floor(v) && fabs(v) < 1e15) {
    size_t n = put_i64(out, (int64_t)v);
    if (v == 0 && signbit(v)) {
      memcpy(out, "-0.0", 4);
      return 4;
    }
    memcpy(out + n, ".0", 2);
    return n + 2;
  }
  int n = 0;
  for (int prec = 15; prec <= 17; prec++) {
    n = snprintf(out, 32, "%.*g", prec, v);
    if (strtod(out, NULL) == v) break;
  }
  return (size_t)n;
}
