/* chrome_json_parse.c: the yajl callbacks of the Chrome JSON importer.
 *
 * Parser side (the driver's main handle, or a worker's): the callbacks
 * track the roles of the containers walked into, build the event being
 * parsed (`c->pe`) from its keys, capture nested values as compact JSON
 * and hand each finished event or top-level value to the record stream
 * (chrome_json_records.c).  They also check the limits only they see:
 * numbers, the event's size, a worker's strings and depth. */
#include "import/chrome_json_int.h"

/* ---- capture of nested arg values as compact JSON ----
 *
 * Strings are re-quoted as yajl gave them: controls escaped (the short
 * forms where JSON has them), bytes from 0x80 copied (the model repairs
 * UTF-8 when it interns the value). */
#define CJ_JSON (TBE__JSON_SHORT | TBE__JSON_RAW8)

/* Before a value inside the capture: a comma between array elements. */
static void cap_sep(cj *c) {
  uint8_t *st = &c->capst[c->cap];
  if (*st & 1) {
    if (*st & 2) tbe__buf_putc(&c->capbuf, ',');
    *st |= 2;
  }
}

/* Starts capturing a value: an empty buffer and the outer level's state. */
static int cap_begin(cj *c) {
  tbe__buf_clear(&c->capbuf);
  if (c->cap_capst < 2) {
    void *p = c->capst;
    if (tbe__grow(c->a, &p, &c->cap_capst, 2, 1)) return tbe__cj_nomem(c);
    c->capst = p;
  }
  c->capst[0] = 0;
  return 1;
}

static int cap_open(cj *c, int is_map) {
  cap_sep(c);
  /* One state byte per level; the nesting itself is bounded by max_depth
   * (the guard, or on_open in a worker). */
  if ((size_t)c->cap + 2 > c->cap_capst) {
    void *p = c->capst;
    if (tbe__grow(c->a, &p, &c->cap_capst, (size_t)c->cap + 2, 1)) return tbe__cj_nomem(c);
    c->capst = p;
  }
  tbe__buf_putc(&c->capbuf, is_map ? '{' : '[');
  c->cap++;
  c->capst[c->cap] = is_map ? 0 : 1;
  return 1;
}

static int add_scratch_arg(cj *c, span key, uint8_t type, const void *val, size_t n);

static int cap_close(cj *c, int is_map) {
  tbe__buf_putc(&c->capbuf, is_map ? '}' : ']');
  c->cap--;
  if (c->cap == 0) {
    if (tbe__buf_error(&c->capbuf)) return tbe__cj_nomem(c);
    if (c->cap_top) {
      uint32_t key = (uint32_t)c->cap_top;
      c->cap_top = 0;
      return tbe__cj_emit_record(c, REC_TBE, &key, sizeof key, c->capbuf.data, c->capbuf.len);
    }
    return add_scratch_arg(c, c->cap_key, V_JSON, c->capbuf.data, c->capbuf.len);
  }
  return 1;
}

/* ---- duplicate keys ----
 *
 * {"dur":10,"dur":5000000} is valid JSON whose meaning JSON leaves open;
 * JSON.parse (Chrome's trace viewer, Perfetto's UI) and Python's json
 * (HTA, torch-tb-profiler) keep the last value, and so do we, also for a
 * key of args repeated (the earlier args of that key are dropped before
 * the event goes to the model).  What a file means must not be silent: the
 * first duplicate key of a file is named in a warning of the trace, with
 * its byte offset and the count of all (tbe__cj_note_dup).  Checked: the
 * fields of an event we read (name, cat, ph, ts, dur, pid, tid, id, bp,
 * s, args), the keys of its args, and those of a deviceProperties entry
 * and of distributedInfo.  Cost: a bit per event field; an args key sets a
 * bit of a 256-bit filter by the hash taken with it (which the model side
 * needs anyway), and only a key whose bit is set already is compared with
 * the event's earlier args, through an index of them once the event has
 * CJ_ARGIX_MIN, so an event of a million keys stays linear.  The offset is
 * computed only for a duplicate.  Measured (cachegrind, bench_import's
 * 150k-event trace, one thread): +1.05% instructions; 24 args an event:
 * +1.65%. */
#define CJ_ARGIX_MIN 64

/* The byte offset of the key yajl just gave (its opening quote: the key
 * is whole in c->wbuf, the guard and the chunks hand yajl whole tokens). */
static uint64_t key_offset(cj *c, size_t n) {
  size_t end = yajl_get_bytes_consumed(c->h); /* just past the closing quote */
  if (c->wbuf && end >= 2)
    for (size_t i = end - 1; i-- > 0;) {
      if (c->wbuf[i] != '"') continue;
      size_t k = i;
      while (k > 0 && c->wbuf[k - 1] == '\\') k--;
      if ((i - k) % 2 == 0) return c->chunk_start + i;
    }
  return tbe__cj_pos(c) - (n + 2 < end ? n + 2 : end);
}

/* Counts a duplicate key of the event being parsed; the first is kept for
 * the record (`field`: E_*, or -1 for the args key c->arg_key). */
static void event_dup(cj *c, int field, size_t n) {
  scratch *e = &c->pe;
  if (!e->ndup++) {
    e->dup_off = key_offset(c, n);
    e->dup_field = field;
    e->dup_key = c->arg_key;
  }
}

/* A duplicate key of the main handle's (deviceProperties, distributedInfo):
 * the parser side's own first, merged at the end (tbe__cj_finish_import). */
static void main_dup(cj *c, const char *what, const unsigned char *k, size_t n) {
  if (!c->pdup_n++) {
    c->pdup_off = key_offset(c, n);
    snprintf(c->pdup_name, sizeof c->pdup_name, "%s%.*s", what, (int)(n > 60 ? 60 : n), (const char *)k);
  }
}

/* The args key `k` (c->arg_key, hashed into c->arg_kh): earlier args of
 * the event with the same key are marked gone (the last value is kept). */
static int args_dup(cj *c, const unsigned char *k, size_t n) {
  scratch *e = &c->pe;
  int dup = 0;
  if (e->nargs < CJ_ARGIX_MIN) {
    for (size_t i = 0; i < e->nargs; i++) {
      sarg *a = &e->args[i];
      if (a->kh == c->arg_kh && a->key.len == n && memcmp(sp(e, a->key), k, n) == 0) a->gone = 1, dup = 1;
    }
  } else {
    tbe__iprobe pr;
    uint64_t h = tbe__hash_bytes(k, n, c->argix.seed);
    for (uint32_t i = tbe__index_first(&c->argix, h, &pr); i != TBE__NOIDX;
         i = tbe__index_next(&c->argix, &pr)) {
      sarg *a = &e->args[i];
      if (a->key.len == n && memcmp(sp(e, a->key), k, n) == 0) a->gone = 1, dup = 1;
    }
  }
  if (dup) event_dup(c, -1, n);
  return 1;
}

/* Indexes arg `i` of the event (i + 1 >= CJ_ARGIX_MIN; the first time,
 * the earlier ones too).  1, or 0 after an allocation failure (the parse
 * stops). */
static int args_index(cj *c, size_t i) {
  scratch *e = &c->pe;
  for (size_t j = i + 1 == CJ_ARGIX_MIN ? 0 : i; j <= i; j++)
    tbe__index_add(&c->argix, tbe__hash_bytes(sp(e, e->args[j].key), e->args[j].key.len, c->argix.seed),
                   (uint32_t)j);
  return tbe__index_error(&c->argix) ? tbe__cj_nomem(c) : 1;
}

/* ---- yajl callbacks ---- */

static int add_scratch_arg(cj *c, span key, uint8_t type, const void *val, size_t n) {
  scratch *e = &c->pe;
  if (e->nargs == e->cap_args) {
    void *p = e->args;
    if (tbe__grow(c->a, &p, &e->cap_args, e->nargs + 1, sizeof *e->args)) return tbe__cj_nomem(c);
    e->args = p;
  }
  sarg *a = &e->args[e->nargs++];
  a->key = key;
  a->type = type;
  a->val = put_text(c, val, n);
  /* the key's hash, taken with it (a nested value's key stays c->arg_kh:
   * the keys inside the value are captured, never args keys) */
  a->kh = c->arg_kh;
  a->kplain = c->arg_kplain;
  a->gone = 0;
  return e->nargs < CJ_ARGIX_MIN ? 1 : args_index(c, e->nargs - 1);
}

/* An id (pid, tid, id) as a number or a string.  A number beyond the
 * int64 range is 0 for an id, and refused for a pid or tid (`field`, NULL
 * for an id): it used to become process 0. */
static int set_xid(cj *c, xid *x, int is_num, const char *s, size_t n, const char *field) {
  if (is_num) {
    int64_t v;
    double d;
    x->is_str = 0;
    if (tbe__cj_parse_int(s, n, &v, NULL, NULL) == 0) x->num = v;
    else if (tbe__cj_parse_double(s, n, &d) == 0 && d > -9.2e18 && d < 9.2e18) x->num = (int64_t)d;
    else if (field)
      return tbe__cj_fail_at(c, c->pe.start_off, TBE_EPARSE,
                             "event field %s is out of range (a 64-bit integer): %.*s", field,
                             (int)(n > 40 ? 40 : n), s);
    else x->num = 0;
  } else {
    x->is_str = 1;
    x->str = put_text(c, s, n);
  }
  return 1;
}

/* ---- limits seen from the callbacks ----
 *
 * The main handle's guard (tbe__cj_feed_main) measures strings and keys in the
 * file's text and refuses nesting before yajl reads it; what remains for
 * the callbacks: numbers (their text is the token), the size of the event
 * being parsed (checked at every token, so the scratch never holds more
 * than about one event of max_event_bytes), and in workers, strings whose
 * decoded length leaves their raw length in doubt. */

static const char *ev_key_type(int k) {
  switch (k) {
    case E_TS:
    case E_DUR: return "a number";
    case E_PID:
    case E_TID:
    case E_ID: return "a number or a string";
    case E_ARGS: return "an object";
    default: return "a string";
  }
}

/* The size of the event being parsed, from its '{' to the token just
 * read: checked at every token of more than 4 KiB, every 32nd token and
 * at the event's end (ev_size_end), so the scratch never holds more than
 * max_event_bytes plus 31 small tokens (and the parse makes few calls into
 * yajl for it). */
static int ev_size_check(cj *c) {
  c->ev_tick = 32;
  if (tbe__cj_pos(c) - c->pe.start_off <= c->o->max_event_bytes) return 1;
  return tbe__cj_limit(c, c->pe.start_off, TBE__LIM_EVENT, "a trace event larger than the limit");
}

static inline int ev_size_ok(cj *c, size_t n) {
  if (!c->in_event || (n <= 4096 && --c->ev_tick > 0)) return 1;
  return ev_size_check(c);
}

/* A worker's string or key of decoded length `n`, just lexed: its length
 * in the chunk's text, quotes included (escapes make it up to 6n + 2). */
static uint64_t worker_raw_len(const cj *c, size_t n) {
  size_t end = yajl_get_bytes_consumed(c->h); /* just past the closing quote */
  if ((uint64_t)n * 6 + 2 <= c->o->max_token_bytes || end < 2) return n + 2;
  for (size_t i = end - 1; i-- > 0;) {
    if (c->wbuf[i] != '"') continue;
    size_t k = i;
    while (k > 0 && c->wbuf[k - 1] == '\\') k--;
    if ((i - k) % 2 == 0) return end - i;
  }
  return end;
}

static int token_ok(cj *c, int type, size_t n) {
  uint64_t raw = type == V_NUM ? n : type == V_STR && c->worker ? worker_raw_len(c, n) : 0;
  if (raw <= c->o->max_token_bytes) return 1;
  return tbe__cj_limit(c, tbe__cj_pos(c) - raw, TBE__LIM_TOKEN,
                  type == V_NUM ? "a JSON number longer than the limit"
                                : "a JSON string longer than the limit");
}

/* A scalar value (number text, string, or true/false/null as JSON text). */
static int on_scalar(cj *c, int type, const char *s, size_t n) {
  if (!token_ok(c, type, n) || !ev_size_ok(c, n)) return 0;
  if (c->skip) return 1;
  if (c->cap) {
    cap_sep(c);
    if (type == V_STR) tbe__json_quote(&c->capbuf, s, n, CJ_JSON);
    else tbe__buf_append(&c->capbuf, s, n);
    return 1;
  }
  switch (c->depth ? c->role[c->depth] : R_NONE) {
    case R_NONE:
      return tbe__cj_fail_at(c, tbe__cj_pos(c), TBE_EPARSE, "the top-level value is not an object or array");
    case R_TOP:
      if (c->top_key == K_BASE) {
        int64_t v[2];
        if (type != V_NUM || tbe__cj_parse_int(s, n, &v[0], NULL, NULL) != 0)
          return tbe__cj_fail_at(c, tbe__cj_pos(c), TBE_EPARSE, "baseTimeNanoseconds is not an integer");
        if (!tbe__time_ok(v[0]))
          return tbe__cj_fail_at(c, tbe__cj_pos(c) - n, TBE_EPARSE,
                            "baseTimeNanoseconds is out of range (more than 146 years from 1970)");
        v[1] = (int64_t)(tbe__cj_pos(c) - n); /* its offset, for messages */
        return tbe__cj_emit_record(c, REC_BASE, v, sizeof v, NULL, 0);
      } else if (c->top_key == K_NAME && type == V_STR) {
        return tbe__cj_emit_record(c, REC_TRACENAME, NULL, 0, s, n);
      } else if (c->top_key == K_EVENTS) {
        return tbe__cj_fail_at(c, tbe__cj_pos(c), TBE_EPARSE, "traceEvents is not an array");
      }
      return 1;
    case R_EVENTS:
      return tbe__cj_fail_at(c, tbe__cj_pos(c), TBE_EPARSE, "a trace event is not an object");
    case R_EVENT: {
      scratch *e = &c->pe;
      switch (c->ev_key) {
        case E_NAME:
          e->name = put_text(c, s, n);
          e->have |= F_NAME;
          break;
        case E_CAT:
          e->cat = put_text(c, s, n);
          e->have |= F_CAT;
          break;
        case E_PH:
          if (type != V_STR)
            return tbe__cj_fail_at(c, e->start_off, TBE_EPARSE, "event field ph is not a string");
          e->ph = put_text(c, s, n);
          e->have |= F_PH;
          break;
        case E_TS:
        case E_DUR: {
          int64_t v;
          if (type == V_JSON && n == 4 && !memcmp(s, "null", 4)) break;
          if (type != V_NUM)
            return tbe__cj_fail_at(c, e->start_off, TBE_EPARSE, "event field %s is not a number",
                              c->ev_key == E_TS ? "ts" : "dur");
          /* Refused, not saturated (common/checked.h): a time beyond
           * +-146 years of 1970 is no clock's. */
          if (tbe__cj_us_to_ns(s, n, &v) || !tbe__time_ok(v))
            return tbe__cj_fail_at(c, e->start_off, TBE_EPARSE,
                              "event field %s is out of range (more than 146 years from 1970): %.*s",
                              c->ev_key == E_TS ? "ts" : "dur", (int)(n > 40 ? 40 : n), s);
          if (c->ev_key == E_TS) e->ts = v, e->have |= F_TS;
          else e->dur = v, e->have |= F_DUR;
          break;
        }
        case E_PID:
          if (!set_xid(c, &e->pid, type == V_NUM, s, n, "pid")) return 0;
          e->have |= F_PID;
          break;
        case E_TID:
          if (!set_xid(c, &e->tid, type == V_NUM, s, n, "tid")) return 0;
          e->have |= F_TID;
          break;
        case E_ID:
          set_xid(c, &e->id, type == V_NUM, s, n, NULL);
          e->have |= F_ID;
          break;
        case E_BP:
          e->bp = put_text(c, s, n);
          e->have |= F_BP;
          break;
        case E_S:
          e->s = put_text(c, s, n);
          e->have |= F_S;
          break;
        default:
          break;
      }
      return 1;
    }
    case R_ARGS:
      return add_scratch_arg(c, c->arg_key, (uint8_t)type, s, n);
    case R_DEVICE: {
      tbe_device *d = &c->dev;
      if (c->dev_key == 1 && type == V_STR) {
        tbe__buf_clear(&c->devname);
        tbe__buf_append(&c->devname, s, n);
        return 1;
      }
      int64_t v;
      int whole = type == V_NUM && tbe__cj_parse_int(s, n, &v, NULL, NULL) == 0;
      if (c->dev_key == 2 && type == V_NUM && !(whole && tbe__device_ok(v))) {
        /* Checked before it is narrowed (importer.h: device ordinals). */
        char msg[192];
        tbe__import_device_msg(msg, sizeof msg, "id", 0, s, n);
        return tbe__cj_fail_at(c, tbe__cj_pos(c) - n, TBE_EPARSE, "deviceProperties %s", msg);
      }
      if (!whole) return 1;
      switch (c->dev_key) {
        case 2: d->id = (int32_t)v, c->dev_have_id = 1; break;
        case 3: d->memory_bytes = v; break;
        case 4: d->cc_major = (int32_t)v; break;
        case 5: d->cc_minor = (int32_t)v; break;
        case 6: d->max_threads_per_block = (int32_t)v; break;
        case 7: d->max_threads_per_sm = (int32_t)v; break;
        case 8: d->regs_per_block = (int32_t)v; break;
        case 9: d->regs_per_sm = (int32_t)v; break;
        case 10: d->warp_size = (int32_t)v; break;
        case 11: d->shared_per_block = v; break;
        case 12: d->shared_per_sm = v; break;
        case 13: d->sm_count = (int32_t)v; break;
        case 14: d->shared_per_block_optin = v; break;
        case 15: d->clock_khz = (int32_t)v; break;
        case 16: d->memory_bandwidth = v; break;
      }
      return 1;
    }
    case R_DIST: {
      int64_t v;
      if (c->dist_key == 1 && type == V_STR) {
        tbe__buf_clear(&c->distname);
        tbe__buf_append(&c->distname, s, n);
        c->dist_have_backend = 1;
      } else if ((c->dist_key == 2 || c->dist_key == 3) && type == V_NUM) {
        /* Narrowed to the model's int32_t: checked first; a rank of -1 is
         * none (the model's own value for it). */
        int rank = c->dist_key == 2;
        if (tbe__cj_parse_int(s, n, &v, NULL, NULL) != 0 || v < (rank ? -1 : 0) || v > INT32_MAX)
          return tbe__cj_fail_at(c, tbe__cj_pos(c) - n, TBE_EPARSE,
                                 "distributedInfo %s is out of range (0 to %d%s): %.*s",
                                 rank ? "rank" : "world_size", (int)INT32_MAX,
                                 rank ? ", or -1 for none" : "", (int)(n > 40 ? 40 : n), s);
        if (rank) c->dist_rank = v, c->dist_have_rank = v >= 0;
        else c->dist_world = v, c->dist_have_world = 1;
      }
      return 1;
    }
    default:
      return 1;
  }
}

static int cb_null(void *ctx) { return on_scalar(ctx, V_JSON, "null", 4); }
static int cb_bool(void *ctx, int v) {
  return v ? on_scalar(ctx, V_JSON, "true", 4) : on_scalar(ctx, V_JSON, "false", 5);
}
static int cb_number(void *ctx, const char *s, size_t n) { return on_scalar(ctx, V_NUM, s, n); }
static int cb_string(void *ctx, const unsigned char *s, size_t n) {
  return on_scalar(ctx, V_STR, (const char *)s, n);
}

static void push_role(cj *c, uint8_t r) {
  c->depth++;
  c->role[c->depth] = r;
}

static void scratch_reset(cj *c, scratch *e) {
  e->have = 0;
  e->seen = e->ndup = 0;
  memset(e->kfilter, 0, sizeof e->kfilter);
  size_t ix = tbe__index_count(&c->argix);
  if (ix) { /* the last event had the index: emptied at its own cost */
    if (c->argix.cap > 1024 && c->argix.cap > 8 * ix) {
      tbe__index_deinit(&c->argix);
      tbe__index_init(&c->argix, c->a, TBE__SEED_PROCESS);
    } else {
      tbe__index_clear(&c->argix);
    }
  }
  e->nargs = 0;
  e->ts = e->dur = 0;
  e->pid.is_str = e->tid.is_str = e->id.is_str = 0;
  e->pid.num = e->tid.num = e->id.num = 0;
  tbe__buf_clear(&e->text);
}

static int on_open(cj *c, int is_map) {
  if (!ev_size_ok(c, 0)) return 0;
  /* The main handle's guard refuses nesting past max_depth before yajl
   * sees it; a worker gives its chunk back (one level early: its '[' stands
   * for an array that is at depth 2 in the object form) and the serial
   * replay refuses it at the exact byte. */
  if (c->worker && (uint64_t)c->depth + c->skip + (uint64_t)c->cap + 2 > c->o->max_depth)
    return tbe__cj_fail_at(c, tbe__cj_pos(c) - 1, TBE_ETOOBIG, "nested too deep");
  if (c->skip) {
    c->skip++;
    return 1;
  }
  if (c->cap) return cap_open(c, is_map);
  switch (c->depth ? c->role[c->depth] : R_NONE) {
    case R_NONE:
      if (is_map) {
        c->form = 1;
        push_role(c, R_TOP);
      } else {
        c->form = 2;
        c->saw_events = 1;
        push_role(c, R_EVENTS);
      }
      return 1;
    case R_TOP:
      if (c->top_key == K_EVENTS) {
        if (is_map) return tbe__cj_fail_at(c, tbe__cj_pos(c) - 1, TBE_EPARSE, "traceEvents is not an array");
        c->saw_events = 1;
        push_role(c, R_EVENTS);
      } else if (c->top_key == K_DEVPROPS && !is_map) {
        push_role(c, R_DEVPROPS);
      } else if (c->top_key == K_DIST && is_map) {
        c->dist_have_backend = 0;
        c->dist_seen = 0;
        push_role(c, R_DIST);
      } else if (c->top_key >= K_TBE_FIRST) {
        c->cap_top = c->top_key;
        if (!cap_begin(c)) return 0;
        return cap_open(c, is_map);
      } else {
        c->skip = 1;
      }
      return 1;
    case R_EVENTS:
      if (!is_map) return tbe__cj_fail_at(c, tbe__cj_pos(c) - 1, TBE_EPARSE, "a trace event is not an object");
      scratch_reset(c, &c->pe);
      c->pe.start_off = tbe__cj_pos(c) - 1;
      c->in_event = 1;
      push_role(c, R_EVENT);
      return 1;
    case R_EVENT:
      if (c->ev_key == E_ARGS && is_map) push_role(c, R_ARGS);
      else if (c->ev_key != E_OTHER && c->ev_key != E_ARGS)
        return tbe__cj_fail_at(c, c->pe.start_off, TBE_EPARSE, "event field %s is %s, not %s",
                               tbe__cj_ev_key_name(c->ev_key), is_map ? "an object" : "an array",
                               ev_key_type(c->ev_key));
      else c->skip = 1;
      return 1;
    case R_ARGS:
      c->cap_key = c->arg_key;
      if (!cap_begin(c)) return 0;
      return cap_open(c, is_map);
    case R_DEVPROPS:
      if (is_map) {
        memset(&c->dev, 0, sizeof c->dev);
        c->dev_have_id = 0;
        c->dev_seen = 0;
        tbe__buf_clear(&c->devname);
        push_role(c, R_DEVICE);
      } else {
        c->skip = 1;
      }
      return 1;
    default:
      c->skip = 1;
      return 1;
  }
}

static int cb_start_map(void *ctx) { return on_open(ctx, 1); }
static int cb_start_array(void *ctx) { return on_open(ctx, 0); }

static int on_close(cj *c, int is_map) {
  if (c->in_event) { /* the event's own '}' always checks its size */
    int end = !c->skip && !c->cap && c->role[c->depth] == R_EVENT;
    if (end ? !ev_size_check(c) : !ev_size_ok(c, 0)) return 0;
  }
  if (c->skip) {
    c->skip--;
    return 1;
  }
  if (c->cap) return cap_close(c, is_map);
  uint8_t r = c->depth ? c->role[c->depth] : R_NONE;
  c->depth--;
  switch (r) {
    case R_EVENT:
      c->in_event = 0;
      if (c->dummy) { /* the placeholder before a replay (see par_fallback) */
        c->dummy = 0;
        return 1;
      }
      return tbe__cj_emit_event_record(c);
    case R_DEVICE: return tbe__cj_emit_device_record(c);
    case R_DIST: return tbe__cj_emit_dist_record(c);
    case R_EVENTS: c->done_events = 1; return 1;
    default: return 1;
  }
}

static int cb_end_map(void *ctx) { return on_close(ctx, 1); }
static int cb_end_array(void *ctx) { return on_close(ctx, 0); }

static int key_is(const unsigned char *k, size_t n, const char *lit) {
  return strlen(lit) == n && memcmp(k, lit, n) == 0;
}

static int cb_map_key(void *ctx, const unsigned char *k, size_t n) {
  cj *c = ctx;
  if (c->worker && !token_ok(c, V_STR, n)) return 0;
  if (!ev_size_ok(c, n)) return 0;
  if (c->skip) return 1;
  if (c->cap) {
    uint8_t *st = &c->capst[c->cap];
    if (*st & 2) tbe__buf_putc(&c->capbuf, ',');
    *st |= 2;
    tbe__json_quote(&c->capbuf, (const char *)k, n, CJ_JSON);
    tbe__buf_putc(&c->capbuf, ':');
    return 1;
  }
  switch (c->role[c->depth]) {
    case R_EVENT: {
      int key = E_OTHER;
      switch (n) {
        case 1:
          if (k[0] == 's') key = E_S;
          break;
        case 2:
          if (k[0] == 'p' && k[1] == 'h') key = E_PH;
          else if (k[0] == 't' && k[1] == 's') key = E_TS;
          else if (k[0] == 'i' && k[1] == 'd') key = E_ID;
          else if (k[0] == 'b' && k[1] == 'p') key = E_BP;
          break;
        case 3:
          if (!memcmp(k, "cat", 3)) key = E_CAT;
          else if (!memcmp(k, "dur", 3)) key = E_DUR;
          else if (!memcmp(k, "pid", 3)) key = E_PID;
          else if (!memcmp(k, "tid", 3)) key = E_TID;
          break;
        case 4:
          if (!memcmp(k, "name", 4)) key = E_NAME;
          else if (!memcmp(k, "args", 4)) key = E_ARGS;
          break;
      }
      c->ev_key = key;
      if (key != E_OTHER) {
        if (c->pe.seen & (1u << key)) event_dup(c, key, n);
        c->pe.seen |= 1u << key;
      }
      return 1;
    }
    case R_ARGS: {
      c->arg_key = put_text(c, k, n);
      int plain;
      c->arg_kh = hash_check((const char *)k, n, &plain);
      c->arg_kplain = (uint8_t)plain;
      uint64_t *w = &c->pe.kfilter[c->arg_kh >> 62], m = 1ull << (c->arg_kh >> 56 & 63);
      if (!(*w & m)) return *w |= m, 1; /* no earlier key has these 8 bits */
      return args_dup(c, k, n);
    }
    case R_TOP:
      c->top_key = key_is(k, n, "traceEvents")           ? K_EVENTS
                   : key_is(k, n, "deviceProperties")    ? K_DEVPROPS
                   : key_is(k, n, "distributedInfo")     ? K_DIST
                   : key_is(k, n, "baseTimeNanoseconds") ? K_BASE
                   : key_is(k, n, "traceName")           ? K_NAME
                   : key_is(k, n, "tbexportTrace")       ? K_TBE_TRACE
                   : key_is(k, n, "tbexportCollection")  ? K_TBE_COLLECTION
                   : key_is(k, n, "tbexportWarnings")    ? K_TBE_WARNINGS
                   : key_is(k, n, "tbexportSteps")       ? K_TBE_STEPS
                   : key_is(k, n, "tbexportKernelMetrics") ? K_TBE_KMETRICS
                                                         : K_OTHER;
      return 1;
    case R_DEVICE: {
      static const char *const keys[] = {
          "",  "name", "id", "totalGlobalMem", "computeMajor", "computeMinor", "maxThreadsPerBlock",
          "maxThreadsPerMultiprocessor", "regsPerBlock", "regsPerMultiprocessor", "warpSize",
          "sharedMemPerBlock", "sharedMemPerMultiprocessor", "numSms", "sharedMemPerBlockOptin",
          "clockRate", "memoryBandwidth"};
      c->dev_key = 0;
      for (int i = 1; i < (int)(sizeof keys / sizeof keys[0]); i++)
        if (key_is(k, n, keys[i])) c->dev_key = i;
      if (c->dev_key) {
        if (c->dev_seen & (1u << c->dev_key)) main_dup(c, "deviceProperties.", k, n);
        c->dev_seen |= 1u << c->dev_key;
      }
      return 1;
    }
    case R_DIST:
      c->dist_key = key_is(k, n, "backend")      ? 1
                    : key_is(k, n, "rank")       ? 2
                    : key_is(k, n, "world_size") ? 3
                                                 : 0;
      if (c->dist_key) {
        if (c->dist_seen & (1u << c->dist_key)) main_dup(c, "distributedInfo.", k, n);
        c->dist_seen |= 1u << c->dist_key;
      }
      return 1;
    default:
      return 1;
  }
}

const yajl_callbacks tbe__cj_callbacks = {cb_null,      cb_bool,   NULL,        NULL,
                                         cb_number,    cb_string, cb_start_map, cb_map_key,
                                         cb_end_map,   cb_start_array, cb_end_array};

/* A yajl handle on these callbacks whose memory comes from c->a (NULL, or
 * c->ynomem set, when there was none). */
yajl_handle tbe__cj_yajl_alloc(cj *c) {
  tbe__cj_yajl_funcs(c);
  return yajl_alloc(&tbe__cj_callbacks, &c->yfuncs, c);
}
