/* export_json_esc.c: the escape cache of the Chrome JSON output
 * (export_json_esc.h).  esc[id] is 1 for a string that needs no escaping,
 * else 2 + the offset of [u32 len][escaped bytes] in escbuf; filled for
 * every string before the events are formatted (tbe__jw_esc_all), so
 * that the workers only read it. */
#include <stdint.h>
#include <string.h>

#include "common/buf.h"
#include "common/utf8.h"
#include "tbexport/error.h"
#include "trace/export/export_json_esc.h"

/* ---- strings ---- */

int tbe__jw_esc_fill(jctx *c, tbe_str id) {
  const char *s = tbe_trace_str(c->t, id);
  size_t n = tbe_trace_strlen(c->t, id);
  uint64_t e = 1;
  if (!tbe__json_plain(s, n)) {
    tbe__buf *eb = &c->escbuf;
    uint8_t *d = n <= (UINT32_MAX - 4) / 6 ? tbe__buf_reserve(eb, 4 + TBE__JSON_ROOM(n)) : NULL;
    if (!d) {
      if (!c->w.err) c->w.err = eb->err ? eb->err : TBE_ETOOBIG;
      return c->w.err;
    }
    uint32_t l = (uint32_t)tbe__json_escape((char *)d + 4, s, n, 0);
    memcpy(d, &l, 4);
    e = 2 + eb->len;
    eb->len += 4 + l;
  }
  c->esc[id] = e;
  return 0;
}

int tbe__jw_esc_all(jctx *c) {
  for (size_t id = 0; id < c->nesc; id++) {
    const char *s;
    size_t n;
    int rc = esc_get(c, (tbe_str)id, &s, &n);
    if (rc) return rc;
  }
  return 0;
}

void tbe__jw_str(jctx *c, tbe_str id) {
  jw *w = &c->w;
  const char *s;
  size_t n;
  if (id >= c->nesc) {
    jw_qstr(w, tbe_trace_str(c->t, id), tbe_trace_strlen(c->t, id));
    return;
  }
  if (esc_get(c, id, &s, &n)) return;
  char *d = jw_room(w, n + 2);
  if (!d) return;
  d[0] = '"';
  memcpy(d + 1, s, n);
  d[n + 1] = '"';
  w->len += n + 2;
}
