/* export_json_esc.h: the escape cache of the Chrome JSON output
 * (export_json_esc.c): every string of the trace escaped once (common/
 * utf8.h: JSON strings as data) into one cache that the event formatters,
 * on several threads, only read.  Apart from export_json_int.h so that
 * the shared header's inline writers call nothing outside it. */
#ifndef TBE_TRACE_EXPORT_JSON_ESC_H
#define TBE_TRACE_EXPORT_JSON_ESC_H

#include "trace/export/export_json_int.h"

/* Escapes string `id` into the cache.  0, or TBE_ENOMEM / TBE_ETOOBIG
 * (sticky in the writer). */
int tbe__jw_esc_fill(jctx *c, tbe_str id);
/* Fills the cache for every interned string, so that the event formatters
 * (on several threads) only ever read it. */
int tbe__jw_esc_all(jctx *c);

/* The JSON text of an interned string (escaped, without quotes) through
 * the escape cache.  Returns 0, or TBE_ENOMEM / TBE_ETOOBIG (sticky in the
 * writer). */
static inline int esc_get(jctx *c, tbe_str id, const char **out, size_t *out_len) {
  uint64_t e = c->esc[id];
  if (e == 0) {
    int rc = tbe__jw_esc_fill(c, id);
    if (rc) return rc;
    e = c->esc[id];
  }
  if (e == 1) {
    *out = tbe_trace_str(c->t, id);
    *out_len = tbe_trace_strlen(c->t, id);
  } else {
    uint32_t l;
    memcpy(&l, c->escbuf.data + (e - 2), 4);
    *out = (const char *)c->escbuf.data + (e - 2) + 4;
    *out_len = l;
  }
  return 0;
}

/* Writes an interned string, quoted, through the escape cache. */
void tbe__jw_str(jctx *c, tbe_str id);

#endif
