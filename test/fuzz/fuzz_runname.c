/* fuzz_runname.c: libFuzzer target for run/host name checking and the
 * collector's option parsing (the strings `tbexport -- CMD` takes from the
 * command line and passes to the profiled process).
 *
 * The input, cut at its first NUL, goes to tbe_name_check, whose verdict is
 * checked against an independent reading of its contract (1..200 bytes of
 * valid UTF-8, no '/', no control character, no leading dot; "." and ".."
 * follow from the last rule): a name accepted against the contract, or a
 * good name refused, aborts.  The same string then goes to the option
 * parsers: capture-range and seconds parsing, and option-string decoding,
 * whose result must survive an encode/decode round trip unchanged. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collect/options.h"
#include "tbexport/export.h"
#include "tbexport/profiler.h"

/* Strict UTF-8 (no overlongs, surrogates or code points above U+10FFFF). */
static int utf8_ok(const unsigned char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    unsigned c = s[i];
    if (c < 0x80) {
      i++;
      continue;
    }
    size_t len;
    uint32_t cp;
    if ((c & 0xE0) == 0xC0) len = 2, cp = c & 0x1F;
    else if ((c & 0xF0) == 0xE0) len = 3, cp = c & 0x0F;
    else if ((c & 0xF8) == 0xF0) len = 4, cp = c & 0x07;
    else return 0;
    if (i + len > n) return 0;
    for (size_t k = 1; k < len; k++) {
      if ((s[i + k] & 0xC0) != 0x80) return 0;
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000)) return 0;
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    i += len;
  }
  return 1;
}

static int name_ok(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > 200 || s[0] == '.') return 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '/' || c < 0x20 || c == 0x7F) return 0;
  }
  return utf8_ok((const unsigned char *)s, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  if (!s) return 0;
  memcpy(s, data, size);
  s[size] = '\0';

  const char *why = NULL;
  int rc = tbe_name_check(s, &why);
  if ((rc == 0) != name_ok(s)) abort();
  if (rc != 0 && (!why || !*why)) abort();

  int mode = -1;
  const char *name = NULL, *domain = NULL;
  char *names = malloc(size + 1);
  if (!names) abort();
  if (tbe_profiler_parse_range(s, &mode, names, size + 1, &name, &domain) == 0) {
    if (mode == 1 && (!name || !*name)) abort(); /* nvtx: needs a name */
    if (domain && !*domain) abort();
  }
  /* one byte short of the whole argument never overflows: refused */
  if (size > 0 && tbe_profiler_parse_range(s, &mode, names, size - 1, &name, &domain) == 0 &&
      mode == 1 && strlen(name) + (domain ? strlen(domain) + 1 : 0) + 1 > size - 1)
    abort();
  free(names);

  double secs = -1;
  if (tbe_profiler_parse_seconds(s, &secs) == 0 && !(secs >= 0)) abort();

  tbe__collect_opts o, o2;
  tbe__opts_default(&o);
  if (tbe__opts_decode(s, &o) == 0) {
    char e1[512], e2[512];
    if (tbe__opts_encode(&o, e1, sizeof e1) == 0) {
      tbe__opts_default(&o2);
      if (tbe__opts_decode(e1, &o2) != 0) abort();
      if (tbe__opts_encode(&o2, e2, sizeof e2) != 0 || strcmp(e1, e2) != 0) abort();
    }
  }
  free(s);
  return 0;
}
