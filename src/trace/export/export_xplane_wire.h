/* export_xplane_wire.h: the XSpace output's byte buffer (export_xplane_
 * wire.c): protobuf bytes gathered in memory and handed to the output's
 * sink (export/sink.h) a buffer at a time.  A module of its own so that
 * the inline helpers of export_xplane_int.h call nothing in the files
 * that include them. */
#ifndef TBE_TRACE_EXPORT_XPLANE_WIRE_H
#define TBE_TRACE_EXPORT_XPLANE_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "tbexport/error.h"
#include "trace/export/sink.h"

typedef struct xw {
  uint8_t *buf;
  size_t len, cap;
  tbe__sink *out; /* where the bytes go (exporter.h) */
  int err;
  uint64_t flushed; /* bytes already handed to out */
  tbe__buf fix;     /* a string field's text with its invalid UTF-8 replaced */
  const tbe_allocator *a;
} xw;

/* Writes the buffered bytes to the file (sticky error in w->err). */
void tbe__xw_flush(xw *w);

static inline uint8_t *xw_room(xw *w, size_t n) {
  if (w->cap - w->len < n) {
    tbe__xw_flush(w);
    if (w->cap < n) {
      void *p = w->buf;
      if (tbe__grow(w->a, &p, &w->cap, n, 1)) {
        if (!w->err) w->err = TBE_ENOMEM;
        return NULL;
      }
      w->buf = p;
    }
  }
  return w->buf + w->len;
}

#endif
