/* step_keys.h: finding, for steps whose thread is not known, the host
 * events that carry them, in one pass over the host tracks (the XSpace and
 * Chrome JSON outputs both mark a step on the event that carries it).
 *
 * Looking on every host track for every such step was quadratic (steps x
 * tracks: 80,000 of each in a file of our own JSON).  Here the steps are
 * sorted by (start, name, end, step) once, and each host event is looked up
 * among them by binary search: O((steps + events) log steps). */
#ifndef TBE_TRACE_EXPORT_STEP_KEYS_H
#define TBE_TRACE_EXPORT_STEP_KEYS_H

#include <stddef.h>
#include <stdint.h>

#include "tbexport/trace.h"

/* One step, as the carrier must match it: its span and marker name. */
typedef struct tbe__step_key {
  int64_t start, end;
  tbe_str name;
  uint32_t step; /* its index in the trace's steps */
} tbe__step_key;

/* Sorts k[0, nk) (nk > 0), then calls found(ctx, step, event) for every
 * event of a host track (no GPU stream) whose kind `accept` takes and whose
 * start, name and end are a key's, in track order then event order (for
 * each, the keys in their sorted order). */
void tbe__step_keys_match(const tbe_trace *t, tbe__step_key *k, size_t nk,
                          int (*accept)(uint8_t kind),
                          void (*found)(void *ctx, uint32_t step, uint32_t event), void *ctx);

#endif
