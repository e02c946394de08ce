/* export_xplane_ntab.h: the XSpace output's per-plane name tables
 * (export_xplane_ntab.c): the event and stat metadata of one plane, each
 * name once, ids from 1, with a cache per trace string.  A module of its
 * own so that the inline helpers of export_xplane_int.h call nothing in
 * the files that include them. */
#ifndef TBE_TRACE_EXPORT_XPLANE_NTAB_H
#define TBE_TRACE_EXPORT_XPLANE_NTAB_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/intern.h"
#include "tbexport/trace.h"

typedef struct ntab {
  tbe__intern in;  /* the plane's names: metadata id = interner id + 1 */
  uint32_t *cache; /* per trace string id: metadata id, 0 = not yet */
  size_t ncache;
  uint32_t *touched; /* the string ids cached in this plane (ncache at most), */
  size_t ntouched;   /* so a plane's reset costs its own names, not ncache */
  tbe__buf fix;      /* a name with its invalid UTF-8 replaced */
  int err;           /* sticky */
} ntab;

void tbe__ntab_init(ntab *t, const tbe_allocator *a);
void tbe__ntab_free(ntab *t);
/* Forgets the plane's names at a cost of the plane's own names: only the
 * cache entries it set are cleared, and an index that an earlier, larger
 * plane grew is let go rather than cleared (clearing costs its capacity:
 * one plane of a million names then 80,000 small ones was quadratic). */
void tbe__ntab_reset(ntab *t);

/* Returns the id (>= 1) of `name`, adding it; 0 after an allocation
 * failure (sticky in t->err). */
uint32_t tbe__ntab_get(ntab *t, const char *s, size_t n);

/* The number of names of the plane (their ids are 1..count). */
static inline size_t ntab_count(const ntab *t) { return tbe__intern_count(&t->in); }

/* The id of an interned trace string, through the per-string cache. */
static inline uint32_t ntab_str(ntab *t, const tbe_trace *tr, tbe_str s) {
  if (s < t->ncache && t->cache[s]) return t->cache[s];
  uint32_t id = tbe__ntab_get(t, tbe_trace_str(tr, s), tbe_trace_strlen(tr, s));
  if (s < t->ncache && id) {
    t->cache[s] = id;
    t->touched[t->ntouched++] = s;
  }
  return id;
}

#endif
