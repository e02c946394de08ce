/* chrome_json_records.c: the record stream from the parser to the model.
 *
 * The parser side appends a record per event (its fields, its args and the
 * event's text, 8-byte aligned) and per top-level value the model needs
 * (the base time, trace name, a device, the backend, our exporter's keys),
 * after doing the parser's share of the model work (prepass: string hashes
 * and numbers), so the model's thread neither hashes nor parses numbers.
 * apply_batch, on the model side, walks a batch of them in order.  Records
 * are raw text: nothing is interned before the model side applies them, so
 * records made on any thread apply to the same model to the byte. */
#include "import/chrome_json_int.h"

/* ---- records: parser -> model ---- */

typedef struct rec {
  uint32_t kind;
  uint32_t size;    /* the whole record, a multiple of 8 */
  uint32_t fixed;   /* bytes of the fixed part after this header */
  uint32_t textlen; /* bytes of text after the fixed part */
} rec;

/* An event's fields; followed by sarg[nargs] and the text. */
typedef struct rec_ev {
  uint32_t have, nargs;
  span name, cat, ph, bp, s;
  uint64_t hname, hcat;
  uint8_t pname, pcat;
  xid pid, tid, id;
  int64_t ts, dur;
  uint64_t start_off;
  uint32_t ndup;    /* duplicate keys of the event, and the first: */
  int32_t dup_field;
  span dup_key;
  uint64_t dup_off;
} rec_ev;

/* Appends a record of a fixed part (`p1`, `n1` then `p2`, `n2`) and a text. */
static int emit_parts(cj *c, uint32_t kind, const void *p1, size_t n1, const void *p2, size_t n2,
                      const void *text, size_t tn) {
  size_t fixed = n1 + n2;
  size_t size = (sizeof(rec) + fixed + tn + 7) & ~(size_t)7;
  if (size > UINT32_MAX) return tbe__cj_fail_at(c, tbe__cj_pos(c), TBE_ETOOBIG, "trace event too large");
  tbe__buf *b = c->rec_out(c);
  if (!b) return 0; /* stopped */
  uint8_t *d = tbe__buf_reserve(b, size);
  if (!d) return tbe__cj_nomem(c);
  rec r = {kind, (uint32_t)size, (uint32_t)fixed, (uint32_t)tn};
  memcpy(d, &r, sizeof r);
  if (n1) memcpy(d + sizeof r, p1, n1);
  if (n2) memcpy(d + sizeof r + n1, p2, n2);
  if (tn) memcpy(d + sizeof r + fixed, text, tn);
  memset(d + sizeof r + fixed + tn, 0, size - sizeof r - fixed - tn);
  b->len += size;
  if (!c->worker && b->len >= CJ_BATCH) return c->rec_flush(c);
  return 1;
}

int tbe__cj_emit_record(cj *c, uint32_t kind, const void *fixed, size_t fn, const void *text,
                       size_t tn) {
  return emit_parts(c, kind, fixed, fn, NULL, 0, text, tn);
}

/* The parser side's share of the model work: string hashes and numbers
 * (see sarg). */
static void prepass(scratch *e) {
  int plain;
  e->hname = e->hcat = 0;
  e->pname = e->pcat = 0;
  if (e->have & F_NAME) e->hname = hash_check(sp(e, e->name), e->name.len, &plain), e->pname = (uint8_t)plain;
  if (e->have & F_CAT) e->hcat = hash_check(sp(e, e->cat), e->cat.len, &plain), e->pcat = (uint8_t)plain;
  for (size_t i = 0; i < e->nargs; i++) {
    sarg *a = &e->args[i];
    a->num = NUM_NONE;
    a->is_u = 0;
    a->nv.u = 0;
    a->vplain = 0;
    const char *v = sp(e, a->val);
    if (a->type == V_NUM) {
      int is_u = 0;
      int64_t iv;
      uint64_t uv;
      double d;
      if (tbe__cj_parse_int(v, a->val.len, &iv, &uv, &is_u) == 0) {
        a->num = NUM_INT;
        a->is_u = (uint8_t)is_u;
        if (is_u) a->nv.u = uv;
        else a->nv.i = iv;
        continue;
      }
      if (tbe__cj_parse_double(v, a->val.len, &d) == 0) {
        a->num = NUM_DBL;
        a->nv.d = d;
        continue;
      }
      a->num = NUM_BAD;
    }
    a->nv.vh = hash_check(v, a->val.len, &plain);
    a->vplain = (uint8_t)plain;
  }
}

int tbe__cj_emit_event_record(cj *c) {
  scratch *e = &c->pe;
  if (tbe__buf_error(&e->text)) return tbe__cj_nomem(c);
  if (e->ndup) { /* the last value of a repeated args key is kept */
    size_t k = 0;
    for (size_t i = 0; i < e->nargs; i++)
      if (!e->args[i].gone) e->args[k++] = e->args[i];
    e->nargs = k;
  }
  prepass(e);
  rec_ev v;
  memset(&v, 0, sizeof v);
  v.have = e->have;
  v.nargs = (uint32_t)e->nargs;
  v.name = e->name, v.cat = e->cat, v.ph = e->ph, v.bp = e->bp, v.s = e->s;
  v.hname = e->hname, v.hcat = e->hcat, v.pname = e->pname, v.pcat = e->pcat;
  v.pid = e->pid, v.tid = e->tid, v.id = e->id;
  v.ts = e->ts, v.dur = e->dur;
  v.start_off = e->start_off;
  v.ndup = e->ndup;
  v.dup_field = e->dup_field;
  v.dup_key = e->dup_key;
  v.dup_off = e->dup_off;
  return emit_parts(c, REC_EVENT, &v, sizeof v, e->args, e->nargs * sizeof *e->args, e->text.data,
                    e->text.len);
}

int tbe__cj_emit_device_record(cj *c) {
  if (!c->dev_have_id) return 1;
  if (tbe__buf_error(&c->devname)) return tbe__cj_nomem(c);
  return tbe__cj_emit_record(c, REC_DEVICE, &c->dev, sizeof c->dev, c->devname.data, c->devname.len);
}

int tbe__cj_emit_dist_record(cj *c) {
  if (!c->dist_have_backend) return 1;
  if (tbe__buf_error(&c->distname)) return tbe__cj_nomem(c);
  return tbe__cj_emit_record(c, REC_BACKEND, NULL, 0, c->distname.data, c->distname.len);
}

/* Consumer side: a deviceProperties entry into the model. */
static int apply_device(cj *c, const tbe_device *s, const char *name, size_t nlen) {
  uint32_t idx;
  int rc = tbe_trace_device(c->t, s->id, &idx);
  if (rc) return rc;
  tbe_device *d = &c->t->devices[idx];
  if (nlen && (rc = tbe__cj_intern_text(c, name, nlen, &d->name))) return rc;
#define TAKE(f) \
  if (s->f) d->f = s->f
  TAKE(sm_count);
  TAKE(clock_khz);
  TAKE(memory_bytes);
  TAKE(memory_bandwidth);
  TAKE(cc_major);
  TAKE(cc_minor);
  TAKE(max_threads_per_block);
  TAKE(max_threads_per_sm);
  TAKE(regs_per_block);
  TAKE(regs_per_sm);
  TAKE(warp_size);
  TAKE(shared_per_block);
  TAKE(shared_per_sm);
  TAKE(shared_per_block_optin);
#undef TAKE
  return 0;
}
/* The model side: applies the records of one batch in order. */
void tbe__cj_apply_batch(cj *c, tbe__buf *b) {
  size_t off = 0;
  while (off + sizeof(rec) <= b->len && !c->crc) {
    rec r;
    memcpy(&r, b->data + off, sizeof r);
    const uint8_t *fixed = b->data + off + sizeof r;
    const char *text = (const char *)fixed + r.fixed;
    int rc = 0;
    switch (r.kind) {
      case REC_EVENT: {
        const rec_ev *v = (const rec_ev *)(const void *)fixed;
        scratch *e = &c->e;
        e->have = v->have;
        e->name = v->name, e->cat = v->cat, e->ph = v->ph, e->bp = v->bp, e->s = v->s;
        e->hname = v->hname, e->hcat = v->hcat, e->pname = v->pname, e->pcat = v->pcat;
        e->pid = v->pid, e->tid = v->tid, e->id = v->id;
        e->ts = v->ts, e->dur = v->dur;
        e->start_off = v->start_off;
        e->nargs = v->nargs;
        e->args = (sarg *)(uintptr_t)(fixed + sizeof *v);
        e->text.data = (uint8_t *)(uintptr_t)text;
        e->text.len = r.textlen;
        if (v->ndup) {
          const char *dn = v->dup_field >= 0 ? tbe__cj_ev_key_name(v->dup_field) : text + v->dup_key.off;
          tbe__cj_note_dup(c, v->ndup, v->dup_off, v->dup_field >= 0 ? "" : "args.", dn,
                           v->dup_field >= 0 ? strlen(dn) : v->dup_key.len);
        }
        tbe__cj_finish_event(c);
        break;
      }
      case REC_BASE: {
        int64_t v, boff;
        memcpy(&v, fixed, sizeof v);
        memcpy(&boff, fixed + sizeof v, sizeof boff);
        c->base = v;
        c->base_off = (uint64_t)boff;
        c->base_known = 1;
        c->ev_mark = c->t->nevents;
        c->flow_mark = c->t->nflows;
        c->t->base_time_ns = v;
        c->kineto = 1;
        break;
      }
      case REC_TRACENAME: rc = tbe__cj_intern_text(c, text, r.textlen, &c->t->trace_name); break;
      case REC_BACKEND: rc = tbe__cj_intern_text(c, text, r.textlen, &c->t->dist_backend); break;
      case REC_TBE: {
        uint32_t key;
        memcpy(&key, fixed, sizeof key);
        if (key >= K_TBE_FIRST && key < K_TBE_FIRST + K_TBE_N) {
          tbe__buf *m = &c->tbe_meta[key - K_TBE_FIRST];
          tbe__buf_clear(m);
          tbe__buf_append(m, text, r.textlen);
          tbe__buf_putc(m, '\0');
          if (tbe__buf_error(m)) rc = TBE_ENOMEM;
        }
        break;
      }
      case REC_DEVICE: {
        tbe_device d;
        memcpy(&d, fixed, sizeof d);
        rc = apply_device(c, &d, text, r.textlen);
        break;
      }
    }
    if (rc) tbe__cj_cfail(c, UINT64_MAX, rc);
    off += r.size;
  }
}

