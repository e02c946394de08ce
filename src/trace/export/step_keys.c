/* step_keys.c: see step_keys.h. */
#include "trace/export/step_keys.h"

#include <stdlib.h>

#include "common/checked.h"

static int cmp_key(const void *a, const void *b) {
  const tbe__step_key *x = a, *y = b;
  if (x->start != y->start) return x->start < y->start ? -1 : 1;
  if (x->name != y->name) return x->name < y->name ? -1 : 1;
  if (x->end != y->end) return x->end < y->end ? -1 : 1;
  return x->step < y->step ? -1 : x->step > y->step;
}

void tbe__step_keys_match(const tbe_trace *t, tbe__step_key *k, size_t nk,
                          int (*accept)(uint8_t kind),
                          void (*found)(void *ctx, uint32_t step, uint32_t event), void *ctx) {
  qsort(k, nk, sizeof *k, cmp_key);
  for (size_t tk = 0; tk < t->ntracks; tk++) {
    const tbe_track *tr = &t->tracks[tk];
    if (tr->type == TBE_TRACK_STREAM) continue;
    for (uint32_t i = tr->first; i < tr->first + tr->count; i++) {
      const tbe_event *e = &t->events[i];
      if (e->start_ns < k[0].start || e->start_ns > k[nk - 1].start || !accept(e->kind)) continue;
      size_t lo = 0, hi = nk; /* the first key >= (start, name) */
      while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (k[mid].start < e->start_ns || (k[mid].start == e->start_ns && k[mid].name < e->name))
          lo = mid + 1;
        else
          hi = mid;
      }
      int64_t end = tbe__end_ns(e->start_ns, e->dur_ns);
      for (; lo < nk && k[lo].start == e->start_ns && k[lo].name == e->name; lo++)
        if (k[lo].end == end) found(ctx, k[lo].step, i);
    }
  }
}
