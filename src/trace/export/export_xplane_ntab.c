/* export_xplane_ntab.c: the per-plane name tables of the XSpace output
 * (export_xplane_ntab.h).  Invariant: a name is stored as valid UTF-8
 * (invalid bytes replaced, common/utf8.h), so that every metadata name
 * the output writes is a valid protobuf string. */
#include <string.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "common/intern.h"
#include "common/utf8.h"
#include "trace/export/export_xplane_ntab.h"

void tbe__ntab_init(ntab *t, const tbe_allocator *a) {
  memset(t, 0, sizeof *t);
  tbe__intern_init(&t->in, a, TBE__SEED_PROCESS);
  tbe__buf_init(&t->fix, a);
}

void tbe__ntab_free(ntab *t) {
  tbe__intern_deinit(&t->in);
  tbe__buf_deinit(&t->fix);
  tbe__free(t->in.a, t->cache);
  tbe__free(t->in.a, t->touched);
}

/* Forgets the plane's names at a cost of the plane's own names: only the
 * cache entries it set are cleared, and an index that an earlier, larger
 * plane grew is let go rather than cleared (clearing costs its capacity:
 * one plane of a million names then 80,000 small ones was quadratic). */
void tbe__ntab_reset(ntab *t) {
  if (t->in.ix.cap > 1024 && t->in.ix.cap > 8 * tbe__intern_count(&t->in)) {
    const tbe_allocator *a = t->in.a;
    tbe__intern_deinit(&t->in);
    tbe__intern_init(&t->in, a, TBE__SEED_PROCESS);
  } else {
    tbe__intern_clear(&t->in);
  }
  for (size_t i = 0; i < t->ntouched; i++) t->cache[t->touched[i]] = 0;
  t->ntouched = 0;
}

uint32_t tbe__ntab_get(ntab *t, const char *s, size_t n) {
  if (t->err) return 0;
  if (!tbe__utf8_valid(s, n)) {
    tbe__buf_clear(&t->fix);
    tbe__utf8_repair(&t->fix, s, n, 0);
    if ((t->err = tbe__buf_error(&t->fix)) != 0) return 0;
    s = (const char *)t->fix.data;
    n = t->fix.len;
  }
  uint32_t id;
  if ((t->err = tbe__intern_add(&t->in, s, n, &id, NULL)) != 0) return 0;
  return id + 1;
}
