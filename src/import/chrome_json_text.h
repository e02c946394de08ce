/* chrome_json_text.h: the intern front cache of the Chrome JSON importer.
 *
 * Trace strings repeat endlessly (the same kernel names, arg keys and
 * shapes), so a direct-mapped table keyed by a word-at-a-time hash
 * (hash_check in chrome_json_int.h, taken on the parser side) answers most
 * lookups with one memcmp instead of the model's byte-wise hash.  Misses
 * go to the model and refill the slot.  Inline (every name, category and
 * arg of every event comes through here), and here rather than in
 * chrome_json_int.h: the slow path calls chrome_json_text.c, and the
 * shared header calls nothing of the files that include it. */
#ifndef TBE_IMPORT_CHROME_JSON_TEXT_H
#define TBE_IMPORT_CHROME_JSON_TEXT_H

#include "import/chrome_json_int.h"

static inline int intern_cached(cj *c, const char *s, size_t n, uint64_t h, tbe_str *out) {
  struct icache *e = &c->icache[h & (CJ_ICACHE - 1)];
  if (e->h == h && e->len == n && e->id) {
    const char *have = tbe_trace_str(c->t, e->id);
    if (memcmp(have, s, n) == 0) {
      *out = e->id;
      return 0;
    }
  }
  int rc = tbe_trace_intern(c->t, s, n, out);
  if (rc) return rc;
  e->h = h;
  e->len = (uint32_t)n;
  e->id = *out;
  return 0;
}

/* tbe__cj_intern_text with the hash and the plain flag computed beforehand (by
 * hash_check, in prepass): the same result, without touching the text
 * twice on the model's thread. */
static inline int intern_pre(cj *c, const char *s, size_t n, uint64_t h, int plain, tbe_str *out) {
  if (n == 0) {
    *out = 0;
    return 0;
  }
  if (plain && n < UINT32_MAX) return intern_cached(c, s, n, h, out);
  return tbe__cj_intern_text(c, s, n, out);
}

#endif
