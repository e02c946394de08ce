/* export_xplane_wire.c: the XSpace output's byte buffer
 * (export_xplane_wire.h).  Invariant: `flushed` counts every byte handed
 * to the sink, so that a length patched later (tbe__sink_patch) is found
 * at its offset whether or not it is still in the buffer. */
#include "trace/export/export_xplane_wire.h"

void tbe__xw_flush(xw *w) {
  if (!w->err && w->len) {
    tbe__sink_write(w->out, w->buf, w->len);
    w->err = tbe__sink_error(w->out);
  }
  w->flushed += w->len;
  w->len = 0;
}
