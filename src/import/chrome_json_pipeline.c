/* chrome_json_pipeline.c: the threaded parse of the Chrome JSON importer.
 *
 * The driver thread reads the input (produce, also the one-thread path),
 * cuts the traceEvents array into chunks with a boundary scanner and
 * hands them to the workers of an ordered pool (common/pool.h), each with
 * a yajl handle of its own; the calling thread applies the items in order
 * (consume).  The pool owns the ring, the threads and their hand-overs;
 * this file only says what an item holds and when a chunk is replayed. */
#include "import/chrome_json_int.h"

#include <pthread.h>

#include "common/pool.h"

/* ---- pipeline (threaded mode) ----
 *
 * Three kinds of threads share the pool's ring of nw + 4 slots, each
 * holding a buffer of records in file order:
 *  - the driver (tbe__cj_produce), the pool's producer, reads the input,
 *    runs the boundary scanner and feeds everything outside the
 *    traceEvents array to the main yajl handle, whose records go into a
 *    "direct" item (claimed, filled, submitted without work); the array's
 *    contents are cut at top-level commas into chunks of about
 *    chunk_target bytes, each an item of its own for the workers;
 *  - N workers parse chunks ('[' + chunk + ']') with yajl handles of their
 *    own into the same records (raw text, nothing interned);
 *  - the calling thread, the pool's consumer, applies the items strictly
 *    in seq order (and parses a chunk itself when no worker took it).
 * A chunk a worker cannot parse (or anything unusual: empty elements, a
 * missing ']') fails its item, and the pool holds it (hold_failed): it is
 * not reported from the worker: the driver cancels the items from the
 * lowest failed one on, replays their bytes through the main yajl handle,
 * serially, and goes on serially, so errors, truncations and tails behave
 * exactly as in the one-thread parse.  The ring bounds memory: at most
 * nw + 4 chunks and their records exist at once.
 *
 * Ownership: the driver's fields of `cj` (the scanner, the fill, tail,
 * direct) are the driver's alone; a slot's contents pass between threads
 * only through the pool's hand-overs; the profile counters the workers
 * add to are atomic. */

typedef struct slot {
  int chunk;          /* a chunk for the workers (else direct records) */
  int first;          /* the chunk begins right after the array's '[' */
  uint64_t off;       /* file offset of the chunk's first byte */
  tbe__buf in, out;   /* '[' chunk ']'; records */
  uint64_t prog_done, prog_total;
} slot;

#define SLOT(c, seq) ((slot *)tbe__pool_slot((c)->pool, (seq)))

/* Claims the next item's slot (waiting for the consumer to free one).
 * NULL when the pool is stopped (the consumer failed) or a chunk failed
 * (then the driver replays: par_fallback). */
static slot *alloc_slot(cj *c) {
  uint64_t t0 = c->prof ? mono_ns() : 0;
  uint64_t seq;
  slot *s = tbe__pool_claim(c->pool, &seq);
  if (c->prof) c->p_drv_wait += mono_ns() - t0;
  if (!s) return NULL;
  c->tail = seq + 1;
  s->chunk = 0;
  tbe__buf_clear(&s->out);
  return s;
}

static void close_direct(cj *c) {
  slot *s = c->direct;
  if (!s) return;
  s->prog_done = c->prog_done;
  s->prog_total = c->prog_total;
  tbe__pool_submit(c->pool, c->direct_seq, 0);
  c->direct = NULL;
}

/* Where records go (c->rec_out): the worker's slot, the one-thread batch,
 * or the driver's direct slot (opened on demand).  NULL when stopped. */
static tbe__buf *out_buf(cj *c) {
  if (c->worker) return c->out;
  if (!c->threaded) return &c->batch;
  if (!c->direct) {
    c->direct = alloc_slot(c);
    if (!c->direct) return NULL;
    c->direct_seq = c->tail - 1;
  }
  return &c->direct->out;
}

/* Applies the batch (one thread) or hands the direct slot over
 * (c->rec_flush). */
static int flush_batch(cj *c) {
  if (!c->threaded) {
    uint64_t t0 = c->prof ? mono_ns() : 0, u0 = c->prof ? thread_cpu_ns() : 0;
    tbe__cj_apply_batch(c, &c->batch);
    if (c->prof) c->p_apply += mono_ns() - t0, c->p_apply_cpu += thread_cpu_ns() - u0;
    tbe__buf_clear(&c->batch);
    if (c->o->progress && !c->crc) c->o->progress(c->o->progress_ctx, c->prog_done, c->prog_total);
    return c->crc ? 0 : 1;
  }
  close_direct(c);
  return stopped(c) ? 0 : 1;
}

/* A worker's parser state (never the model's). */
static void worker_free(const tbe_allocator *a, cj *w) {
  if (!w) return;
  if (w->h) yajl_free(w->h);
  tbe__buf_deinit(&w->pe.text);
  tbe__buf_deinit(&w->capbuf);
  tbe__buf_deinit(&w->tmp);
  tbe__free(a, w->capst);
  tbe__free(a, w->pe.args);
  tbe__index_deinit(&w->argix);
  tbe__free(a, w);
}

static cj *worker_new(cj *c) {
  cj *w = tbe__calloc(c->a, 1, sizeof *w);
  if (!w) return NULL;
  w->a = c->a;
  w->o = c->o;
  w->parent = c;
  w->worker = 1;
  w->rec_out = out_buf;
  w->rec_flush = flush_batch;
  tbe__buf_init(&w->pe.text, c->a);
  tbe__buf_init(&w->capbuf, c->a);
  tbe__buf_init(&w->tmp, c->a);
  tbe__index_init(&w->argix, c->a, TBE__SEED_PROCESS);
  return w;
}

/* ---- the driver's side of the pipeline ---- */

/* Waits until no chunk is queued or being parsed (or one failed). */
static void settle(cj *c) { tbe__pool_wait_idle(c->pool); }

static int chunk_failed(cj *c) {
  uint64_t seq;
  return tbe__pool_failed(c->pool, &seq);
}

/* Hands the fill (the bytes since the last cut) to the workers as one
 * chunk.  Returns 0, or -1 when no slot came (stop, or a chunk failed). */
static int dispatch(cj *c) {
  close_direct(c);
  tbe__buf_putc(&c->fill, ']');
  if (tbe__buf_error(&c->fill)) return -1;
  slot *s = alloc_slot(c);
  if (!s) {
    c->fill.len--;
    return -1;
  }
  tbe__buf tmp = s->in;
  s->in = c->fill;
  c->fill = tmp;
  s->chunk = 1;
  s->off = c->fill_off;
  s->first = c->fill_first;
  s->prog_done = c->prog_done;
  s->prog_total = c->prog_total;
  tbe__pool_submit(c->pool, c->tail - 1, 1);
  tbe__buf_clear(&c->fill);
  tbe__buf_putc(&c->fill, '[');
  return 0;
}

/* Cancels the chunks from the lowest failed one on, once no chunk before
 * it is queued or running (a chunk before a failed one may fail too,
 * later: the lowest wins).  Returns that seq, or c->tail with none. */
static uint64_t cancel_failed(cj *c) {
  uint64_t k = c->tail, seq;
  for (;;) {
    tbe__pool_wait_idle(c->pool);
    if (!tbe__pool_failed(c->pool, &seq)) break;
    tbe__pool_cancel_from(c->pool, seq);
    if (seq < k) k = seq;
  }
  return k;
}

/* Gives up the parallel parse from the first failed chunk (or, with none,
 * from the fill): the bytes from there to the scan position go through the
 * main yajl handle, and everything after too.  Returns 0 or -1 as
 * tbe__cj_feed_main. */
static int par_fallback(cj *c) {
  uint64_t k = cancel_failed(c);
  c->sc_mode = 2;
  uint64_t off0 = k < c->tail ? SLOT(c, k)->off : c->fill_off;
  int first0 = k < c->tail ? SLOT(c, k)->first : c->fill_first;
  tbe__buf rp;
  tbe__buf_init(&rp, c->a);
  for (uint64_t q = k; q < c->tail; q++) {
    const slot *s = SLOT(c, q);
    if (q > k) tbe__buf_putc(&rp, ',');
    tbe__buf_append(&rp, s->in.data + 1, s->in.len - 2);
  }
  int fill_err = tbe__buf_error(&c->fill);
  if (c->fill_open && c->fill.len) {
    if (k < c->tail) tbe__buf_putc(&rp, ',');
    tbe__buf_append(&rp, c->fill.data + 1, c->fill.len - 1);
  }
  c->fill_open = 0;
  int r = 0;
  if (tbe__buf_error(&rp) || fill_err) {
    c->rc = TBE_ENOMEM;
    c->err_off = off0;
    snprintf(c->emsg, sizeof c->emsg, "out of memory");
    r = -1;
  } else {
    /* After a comma the main handle must expect a value: a placeholder
     * event (dropped by on_close) and the real comma put it there. */
    if (!first0) {
      c->dummy = 1;
      r = tbe__cj_feed_main(c, (const uint8_t *)"{}", 2, off0 - 1);
      if (!r) r = tbe__cj_feed_main(c, (const uint8_t *)",", 1, off0 - 1);
    }
    if (!r) r = tbe__cj_feed_main(c, rp.data, rp.len, off0);
  }
  tbe__buf_deinit(&rp);
  return r;
}

enum { T_NONE, T_OPEN, T_CLOSE, T_COMMA, T_COLON, T_KEY, T_VAL };

/* One byte of the events array's contents; returns 1 at a top-level ','
 * (*hit 1), ']' (*hit 2) or unbalanced '}' (*hit 3). */
static inline int region_byte(unsigned char ch, int *in_str, int *esc, int *dep, int *hit) {
  if (*in_str) {
    if (*esc) *esc = 0;
    else if (ch == '\\') *esc = 1;
    else if (ch == '"') *in_str = 0;
    return 0;
  }
  if (ch == '"') {
    *in_str = 1;
  } else if (ch == '{' || ch == '[') {
    (*dep)++;
  } else if (ch == '}' || ch == ']') {
    if (*dep == 0) {
      *hit = ch == ']' ? 2 : 3;
      return 1;
    }
    (*dep)--;
  } else if (ch == ',' && *dep == 0) {
    *hit = 1;
    return 1;
  }
  return 0;
}

/* Scans d[i..n) for the next top-level ',' / ']' of the events array and
 * returns its position (n when none; the state carries over).  Exact for
 * any valid JSON: strings (with escapes) are skipped whole.  With SSE2,
 * 16 bytes at a time: a bit mask of quotes, backslashes and structural
 * characters, visited bit by bit (only backslashes and quotes inside a
 * string, only quotes and structure outside). */
static size_t region_scan(const uint8_t *d, size_t i, size_t n, int *in_str, int *esc, int *dep,
                          int *hit) {
#ifdef __SSE2__
  const __m128i vq = _mm_set1_epi8('"'), vb = _mm_set1_epi8('\\'), vc = _mm_set1_epi8(',');
  const __m128i vo1 = _mm_set1_epi8('{'), vo2 = _mm_set1_epi8('['), vc1 = _mm_set1_epi8('}');
  const __m128i vc2 = _mm_set1_epi8(']');
  int s = *in_str, e = *esc, dp = *dep;
  while (i + 16 <= n) {
    if (e) { /* the byte after a backslash */
      e = 0;
      i++;
      continue;
    }
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(d + i));
    unsigned q = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, vq));
    unsigned bs = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, vb));
    __m128i st = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, vc), _mm_cmpeq_epi8(v, vo1)),
                              _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, vo2), _mm_cmpeq_epi8(v, vc1)),
                                           _mm_cmpeq_epi8(v, vc2)));
    unsigned sm = (unsigned)_mm_movemask_epi8(st);
    unsigned pos = 0;
    for (;;) {
      unsigned m = (s ? (q | bs) : (q | sm)) & (0xFFFFu << pos) & 0xFFFFu;
      if (!m) break;
      unsigned b = (unsigned)__builtin_ctz(m);
      unsigned char ch = d[i + b];
      pos = b + 1;
      if (s) {
        if (ch == '\\') {
          if (b == 15) e = 1;
          else pos = b + 2;
        } else {
          s = 0;
        }
      } else if (ch == '"') {
        s = 1;
      } else if (ch == '{' || ch == '[') {
        dp++;
      } else if (ch == '}' || ch == ']') {
        if (dp == 0) {
          *hit = ch == ']' ? 2 : 3;
          *in_str = s, *esc = e, *dep = dp;
          return i + b;
        }
        dp--;
      } else if (dp == 0) { /* ',' */
        *hit = 1;
        *in_str = s, *esc = e, *dep = dp;
        return i + b;
      }
      if (pos >= 16) break;
    }
    i += 16;
  }
  *in_str = s, *esc = e, *dep = dp;
#endif
  for (; i < n; i++)
    if (region_byte(d[i], in_str, esc, dep, hit)) return i;
  return n;
}

/* Scans one piece of input at file offset `off`: the top level goes to
 * the main yajl handle, the events array's elements to the workers.
 * Returns 0, or -1 when the parse is over. */
static int scan_piece(cj *c, const uint8_t *d, size_t n, uint64_t off) {
  size_t i = 0, seg = 0; /* d[seg..i) not yet fed to the main handle */
  while (i < n) {
    if (c->sc_mode == 2) break;
    if (c->sc_mode == 0) {
      /* The top level, byte by byte (small): find "traceEvents": [ at
       * depth 1 of an object, or the '[' of a bare array. */
      int enter = 0;
      for (; i < n && !enter; i++) {
        unsigned char ch = d[i];
        if (c->sc_in_str) {
          if (c->sc_esc) {
            c->sc_esc = 0;
          } else if (ch == '\\') {
            c->sc_esc = 1;
            c->sc_kbad = 1;
          } else if (ch == '"') {
            c->sc_in_str = 0;
            if (c->sc_kcap) {
              c->sc_kcap = 0;
              c->sc_tok = T_KEY;
              c->sc_te = !c->sc_kbad && c->sc_klen == 11 && !memcmp(c->sc_key, "traceEvents", 11);
            } else {
              c->sc_tok = T_VAL;
            }
          } else if (c->sc_kcap) {
            if (c->sc_klen < 11) c->sc_key[c->sc_klen++] = (char)ch;
            else c->sc_kbad = 1;
          }
          continue;
        }
        switch (ch) {
          case '"':
            c->sc_in_str = 1;
            c->sc_kcap = c->sc_depth == 1 && (c->sc_tok == T_OPEN || c->sc_tok == T_COMMA);
            c->sc_klen = 0;
            c->sc_kbad = 0;
            c->sc_te = 0;
            break;
          case ':':
            if (c->sc_tok != T_KEY) c->sc_te = 0;
            c->sc_tok = T_COLON;
            break;
          case '[':
          case '{':
            if (c->sc_depth == 0) enter = ch == '[' && c->sc_tok == T_NONE;
            else if (c->sc_depth == 1 && ch == '[' && c->sc_te && c->sc_tok == T_COLON) enter = 1;
            c->sc_depth++;
            c->sc_tok = T_OPEN;
            c->sc_te = 0;
            break;
          case ']':
          case '}':
            c->sc_depth--;
            c->sc_tok = T_CLOSE;
            c->sc_te = 0;
            break;
          case ',':
            c->sc_tok = T_COMMA;
            c->sc_te = 0;
            break;
          case ' ': case '\t': case '\r': case '\n':
            break;
          default:
            c->sc_tok = T_VAL;
            c->sc_te = 0;
        }
      }
      if (!enter) break;
      if (tbe__cj_feed_main(c, d + seg, i - seg, off + seg)) return -1;
      seg = i;
      /* The main handle decides: only a real events array is farmed out. */
      if (c->depth >= 1 && c->role[c->depth] == R_EVENTS && !c->skip && !c->cap && !c->rc &&
          !c->tail_ok) {
        c->sc_mode = 1;
        c->r_depth = c->r_in_str = c->r_esc = 0;
        tbe__buf_clear(&c->fill);
        tbe__buf_putc(&c->fill, '[');
        c->fill_off = off + i;
        c->fill_first = 1;
        c->fill_open = 1;
        c->region_seq0 = c->tail;
      } else {
        c->sc_mode = 2;
      }
      continue;
    }
    /* Inside the events array: find the next top-level ',' or ']'.  Exact
     * for any valid JSON: strings (with escapes) are skipped whole. */
    size_t start = i;
    int hit = 0;
    int in_str = c->r_in_str, esc = c->r_esc, dep = c->r_depth;
    i = region_scan(d, i, n, &in_str, &esc, &dep, &hit);
    c->r_in_str = in_str, c->r_esc = esc, c->r_depth = dep;
    tbe__buf_append(&c->fill, d + start, i - start);
    if (!hit) {
      /* An element far larger than a chunk (or unbalanced input): stop
       * buffering and go serial. */
      if (c->fill.len > 16 * c->chunk_target + (16u << 20) || tbe__buf_error(&c->fill)) {
        if (par_fallback(c)) return -1;
        seg = i;
      }
      break;
    }
    if (hit == 1) {
      if (c->fill.len - 1 >= c->chunk_target) {
        if (dispatch(c)) {
          if (stopped(c)) return -1;
          if (par_fallback(c)) return -1;
          seg = i;
          continue;
        }
        c->fill_off = off + i + 1;
        c->fill_first = 0;
        c->fill_open = 1;
      } else {
        tbe__buf_putc(&c->fill, ',');
      }
      i++;
      continue;
    }
    /* The array's end (hit 2), or an unbalanced '}' (hit 3: serial). */
    if (hit == 2 && (c->tail != c->region_seq0 || !tbe__cj_only_space(c->fill.data + 1, c->fill.len - 1))) {
      if (dispatch(c)) {
        if (stopped(c)) return -1;
        if (par_fallback(c)) return -1;
        seg = i;
        continue;
      }
      c->fill_open = 0;
    }
    settle(c);
    if (stopped(c)) return -1;
    if (chunk_failed(c) || hit == 3) {
      if (par_fallback(c)) return -1;
      seg = i;
      continue;
    }
    c->fill_open = 0;
    c->sc_mode = 0;
    c->sc_depth--;
    c->sc_tok = T_CLOSE;
    seg = i; /* the ']' goes to the main handle */
    i++;
  }
  if (c->sc_mode != 1 && seg < n) return tbe__cj_feed_main(c, d + seg, n - seg, off + seg);
  return 0;
}

/* Scanner test knob: pieces of input are scanned in steps of at most this
 * many bytes (0: whole pieces). */
size_t tbe__chrome_json_piece = 0;

/* The parser side: reads the input and runs yajl (threaded: the driver,
 * with the scanner); the callbacks append records to the current batch.
 * Everything here touches only the producer's state (yajl, input, roles,
 * pe, capture, the scanner), never the model. */
void tbe__cj_produce(cj *c) {
  c->rec_out = out_buf;
  c->rec_flush = flush_batch;
  tbe__input *in = c->in;
  int in_rc = 0;
  int over = 0;
  const uint8_t *d = NULL;
  size_t n = 0;
  for (;;) {
    if (stopped(c)) break;
    in_rc = tbe__input_next(in, &d, &n);
    if (n == 0) break;
    uint64_t start = tbe__input_offset(in) - n;
    if (c->par) {
      size_t step = tbe__chrome_json_piece ? tbe__chrome_json_piece : n;
      for (size_t p = 0; p < n && !over; p += step)
        over = scan_piece(c, d + p, n - p < step ? n - p : step, start + p) != 0;
    } else {
      over = tbe__cj_feed_main(c, d, n, start) != 0;
    }
    if (over) break;
    c->prog_done = tbe__input_done(in);
    c->prog_total = tbe__input_size(in);
    if (in_rc) break;
  }
  /* The input ended (or failed) inside the events array: the bytes since
   * the last good chunk go through the main handle as in one thread. */
  if (c->par && c->sc_mode == 1 && !over && !stopped(c)) {
    settle(c);
    if (!stopped(c)) par_fallback(c);
  }
  if (stopped(c)) {
    /* the consumer failed; its error is the one reported */
  } else if (!c->rc && in_rc && in_rc != TBE_ETRUNCATED) {
    c->rc = in_rc;
    c->err_off = tbe__input_offset(in);
    if (in_rc == TBE_ETOOBIG)
      tbe__import_limit_msg(c->emsg, sizeof c->emsg, TBE__LIM_INPUT, c->o,
                            tbe__import_input_limit_what(in));
    else
      snprintf(c->emsg, sizeof c->emsg, "%s",
               in_rc == TBE_ECORRUPT ? "corrupt gzip data" : tbe_strerror(in_rc));
  } else if (!c->rc && !c->tail_ok && tbe__cj_feed_main_end(c) == 0) {
    yajl_status st = yajl_complete_parse(c->h);
    if (c->ynomem && !c->rc) {
      c->rc = TBE_ENOMEM;
      c->err_off = tbe__input_offset(in);
      snprintf(c->emsg, sizeof c->emsg, "out of memory");
    } else if (st != yajl_status_ok && !c->rc) {
      if (c->form == 2 && c->depth == 1 && !c->skip && !c->cap) {
        /* a bare array ended without its ']' */
      } else {
        c->rc = TBE_EPARSE;
        c->err_off = tbe__input_offset(in);
        snprintf(c->emsg, sizeof c->emsg, "%s",
                 c->form == 0 ? "empty input: no JSON value"
                 : in_rc == TBE_ETRUNCATED
                     ? "unexpected end of input: the gzip stream is truncated"
                 : c->depth >= 2 && (c->role[c->depth] == R_EVENT || c->role[c->depth] == R_ARGS)
                     ? "unexpected end of input inside a trace event"
                     : "unexpected end of input");
      }
    }
  }
  if (!c->rc && in_rc == TBE_ETRUNCATED) c->truncated = 1;
  if (!c->threaded) {
    if (!c->rc && c->batch.len) flush_batch(c);
    return;
  }
  if (!c->rc) close_direct(c);
  /* After an error or a stop nothing more is parsed: the items from the
   * open direct one (its records are past the error) or the first failed
   * chunk on are dropped; the consumer applies those before. */
  if (c->direct) {
    tbe__pool_cancel_from(c->pool, c->direct_seq);
    c->direct = NULL;
  }
  cancel_failed(c);
  tbe__pool_close(c->pool);
}

static void *producer_main(void *arg) {
  cj *c = arg;
  tbe__cj_produce(c);
  if (c->prof) c->p_drv_cpu = thread_cpu_ns();
  return NULL;
}

/* A worker parses one chunk into its slot's records.  Returns 1 when the
 * chunk is a clean sequence of events. */
static int parse_chunk(cj *w, slot *s) {
  if (tbe__cj_only_space(s->in.data + 1, s->in.len - 2)) return 0;
  w->depth = 0;
  w->form = 0;
  w->skip = 0;
  w->cap = 0;
  w->rc = 0;
  w->done_events = 0;
  w->in_event = 0;
  w->wbuf = s->in.data;
  w->out = &s->out;
  tbe__buf_clear(&s->out);
  w->chunk_start = s->off - 1;
  w->ynomem = 0;
  w->h = tbe__cj_yajl_alloc(w);
  if (!w->h) return 0;
  yajl_config(w->h, yajl_dont_validate_strings, 1);
  yajl_status st = yajl_parse(w->h, s->in.data, s->in.len);
  if (st == yajl_status_ok) st = yajl_complete_parse(w->h);
  yajl_free(w->h);
  w->h = NULL;
  return st == yajl_status_ok && !w->rc && !w->ynomem && w->done_events &&
         !tbe__buf_error(&s->out);
}

/* ---- the pool's callbacks ---- */

/* An item: a chunk is parsed (a failed one is held for the driver's
 * replay); direct records are submitted without work and never come here. */
static int work_item(void *ctx, void *worker, void *sl, uint64_t seq) {
  (void)seq;
  cj *c = ctx, *w = *(cj **)worker;
  uint64_t t0 = c->prof ? mono_ns() : 0, u0 = c->prof ? thread_cpu_ns() : 0;
  int ok = parse_chunk(w, sl);
  if (c->prof) {
    __atomic_fetch_add(&c->p_parse, mono_ns() - t0, __ATOMIC_RELAXED);
    __atomic_fetch_add(&c->p_parse_cpu, thread_cpu_ns() - u0, __ATOMIC_RELAXED);
    __atomic_fetch_add(&c->p_chunks, 1, __ATOMIC_RELAXED);
  }
  return ok ? 0 : TBE_EPARSE;
}

static int worker_init(void *ctx, void *worker) {
  cj *w = worker_new(ctx);
  *(cj **)worker = w;
  return w ? 0 : TBE_ENOMEM;
}

static void worker_fini(void *ctx, void *worker) {
  cj *c = ctx;
  worker_free(c->a, *(cj **)worker);
}

static void slot_fini(void *ctx, void *sl) {
  (void)ctx;
  slot *s = sl;
  tbe__buf_deinit(&s->in);
  tbe__buf_deinit(&s->out);
}

/* The model side in threaded mode: applies the items in order until the
 * driver closes the pool (or the consumer fails: tbe__cj_cfail stops it). */
static void consume(cj *c, const tbe_import_options *o) {
  for (;;) {
    void *sl;
    uint64_t seq;
    uint64_t t0 = c->prof ? mono_ns() : 0;
    int r = tbe__pool_next(c->pool, &sl, &seq);
    if (c->prof) c->p_wait += mono_ns() - t0;
    if (r) break; /* TBE__POOL_END (a failed chunk is held, never handed here) */
    slot *s = sl;
    t0 = c->prof ? mono_ns() : 0;
    uint64_t u0 = c->prof ? thread_cpu_ns() : 0;
    tbe__cj_apply_batch(c, &s->out);
    if (c->prof) c->p_apply += mono_ns() - t0, c->p_apply_cpu += thread_cpu_ns() - u0;
    if (o->progress && !c->crc) o->progress(o->progress_ctx, s->prog_done, s->prog_total);
    tbe__buf_clear(&s->out);
    tbe__pool_release(c->pool);
  }
}

/* Import threads: -1 decides by size, 0 never, 1 always (tests). */
int tbe__chrome_json_threads = -1;
/* Parse workers when threaded: 0 = tbe_import_options.threads or half the online
 * CPUs (2..16); tests set it. */
int tbe__chrome_json_workers = 0;
/* Target chunk size in bytes (0: the default); tests force tiny chunks. */
size_t tbe__chrome_json_chunk = 0;

#define CJ_CHUNK (128u * 1024u)
#define CJ_MAX_WORKERS 16

int tbe__cj_workers_wanted(const tbe_import_options *o) {
  if (tbe__chrome_json_workers > 0) return tbe__chrome_json_workers;
  if (o && o->threads == 1) return 0; /* the calling thread only */
  if (o && o->threads > 1) return o->threads > 64 ? 64 : (int)o->threads;
  /* Half the CPUs: the reading thread and the model builder need cores
   * too, and the builder is the serial limit.  On the 16-core H200 host 8
   * workers imported a 69 MB PyTorch trace in 0.122 s against 0.134 s with
   * 16; on 2 cores, 2 workers beat 1. */
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  long n = cpus / 2;
  if (n < 2) n = 2;
  return n > CJ_MAX_WORKERS ? CJ_MAX_WORKERS : (int)n;
}

/* Runs the pipeline with `nw` workers.  Returns 0, or -1 when the threads
 * could not be set up before anything was read (the caller then parses on
 * its own thread). */
int tbe__cj_run_threaded(cj *c, int nw, const tbe_import_options *o) {
  tbe__pool_config cfg = {
      .threads = nw,
      .slots = (uint32_t)nw + 4,
      .slot_size = sizeof(slot),
      .worker_size = sizeof(cj *),
      .work = work_item,
      .worker_init = worker_init,
      .worker_fini = worker_fini,
      .slot_fini = slot_fini,
      .ctx = c,
      .hold_failed = 1,
      .allocator = c->a,
  };
  if (tbe__pool_create(&c->pool, &cfg)) return -1;
  /* No thread touches a slot before its item is submitted. */
  for (uint64_t i = 0; i < cfg.slots; i++) {
    tbe__buf_init(&SLOT(c, i)->in, c->a);
    tbe__buf_init(&SLOT(c, i)->out, c->a);
  }
  c->chunk_target = tbe__chrome_json_chunk ? tbe__chrome_json_chunk : CJ_CHUNK;
  c->par = 1;
  c->threaded = 1;
  c->tail = 0;
  pthread_t th;
  int driver = pthread_create(&th, NULL, producer_main, c) == 0;
  if (driver) {
    consume(c, o);
    pthread_join(th, NULL);
  }
  tbe__pool_destroy(c->pool);
  c->pool = NULL;
  c->threaded = 0;
  c->par = 0;
  return driver ? 0 : -1;
}
