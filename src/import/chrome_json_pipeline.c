/* chrome_json_pipeline.c: the threaded parse of the Chrome JSON importer.
 *
 * The driver thread reads the input (produce, also the one-thread path),
 * cuts the traceEvents array into chunks with a boundary scanner and
 * farms them out to workers with yajl handles of their own; the calling
 * thread applies the slots in order (consume).  The ring's protocol is in
 * the essay below; every field it shares is read and written under c->mu. */
#include "import/chrome_json_int.h"

/* ---- pipeline (threaded mode) ----
 *
 * Three kinds of threads share a ring of `nslots` slots, each holding a
 * buffer of records in file order (slot seq % nslots; head = the
 * consumer's next, tail = the driver's next):
 *  - the driver (tbe__cj_produce) reads the input, runs the boundary scanner and
 *    feeds everything outside the traceEvents array to the main yajl
 *    handle, whose records go into a "direct" slot; the array's contents
 *    are cut at top-level commas into chunks of about chunk_target bytes,
 *    each put into a slot of its own for the workers;
 *  - N workers parse chunks ('[' + chunk + ']') with yajl handles of their
 *    own into the same records (raw text, nothing interned);
 *  - the calling thread (consume) applies the slots strictly in seq order.
 * A chunk a worker cannot parse (or anything unusual: empty elements, a
 * missing ']') is not reported from the worker: the driver replays the
 * bytes from that chunk on through the main yajl handle, serially, and
 * goes on serially, so errors, truncations and tails behave exactly as in
 * the one-thread parse.  The ring bounds memory: at most nslots chunks
 * and their records exist at once. */

enum { S_FREE, S_FILL, S_PENDING, S_WORKING, S_READY, S_FAILED, S_DISCARD };

typedef struct slot {
  int state;
  int chunk;          /* a chunk for the workers (else direct records) */
  int first;          /* the chunk begins right after the array's '[' */
  uint64_t off;       /* file offset of the chunk's first byte */
  tbe__buf in, out;   /* '[' chunk ']'; records */
  uint64_t prog_done, prog_total;
} slot;

#define SLOT(c, seq) (&(c)->slots[(seq) % (c)->nslots])

/* Takes the next slot (waiting for the consumer to free one).  NULL when
 * the consumer failed, or (`failable`) when a chunk failed meanwhile. */
static slot *alloc_slot(cj *c, int failable) {
  pthread_mutex_lock(&c->mu);
  uint64_t t0 = c->prof ? mono_ns() : 0;
  while (c->tail - c->head >= c->nslots && !stopped(c) && !(failable && c->fail_pending))
    pthread_cond_wait(&c->cv, &c->mu);
  if (c->prof) c->p_drv_wait += mono_ns() - t0;
  slot *s = NULL;
  if (!stopped(c) && !(failable && c->fail_pending)) {
    s = SLOT(c, c->tail);
    s->state = S_FILL;
    s->chunk = 0;
    c->tail++;
  }
  pthread_mutex_unlock(&c->mu);
  if (s) tbe__buf_clear(&s->out);
  return s;
}

static void close_direct(cj *c) {
  slot *s = c->direct;
  if (!s) return;
  pthread_mutex_lock(&c->mu);
  s->prog_done = c->prog_done;
  s->prog_total = c->prog_total;
  s->state = S_READY;
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  c->direct = NULL;
}

/* Where records go: the worker's slot, the one-thread batch, or the
 * driver's direct slot (opened on demand).  NULL when stopped. */
tbe__buf *tbe__cj_out_buf(cj *c) {
  if (c->worker) return c->out;
  if (!c->threaded) return &c->batch;
  if (!c->direct) {
    c->direct = alloc_slot(c, 0);
    if (!c->direct) return NULL;
  }
  return &c->direct->out;
}

/* Applies the batch (one thread) or hands the direct slot over. */
int tbe__cj_flush_batch(cj *c) {
  if (!c->threaded) {
    uint64_t t0 = c->prof ? mono_ns() : 0, u0 = c->prof ? thread_cpu_ns() : 0;
    tbe__cj_apply_batch(c, &c->batch);
    if (c->prof) c->p_apply += mono_ns() - t0, c->p_apply_cpu += thread_cpu_ns() - u0;
    tbe__buf_clear(&c->batch);
    if (c->o->progress && !c->crc) c->o->progress(c->o->progress_ctx, c->prog_done, c->prog_total);
    return c->crc ? 0 : 1;
  }
  close_direct(c);
  return __atomic_load_n(&c->stop, __ATOMIC_RELAXED) ? 0 : 1;
}

int tbe__cj_only_space(const uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r' && p[i] != '\n') return 0;
  return 1;
}

void tbe__cj_free_slots(cj *c) {
  if (c->slots)
    for (size_t i = 0; i < c->nslots; i++) {
      tbe__buf_deinit(&c->slots[i].in);
      tbe__buf_deinit(&c->slots[i].out);
    }
  tbe__free(c->a, c->slots);
  c->slots = NULL;
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
  tbe__buf_init(&w->pe.text, c->a);
  tbe__buf_init(&w->capbuf, c->a);
  tbe__buf_init(&w->tmp, c->a);
  tbe__index_init(&w->argix, c->a, TBE__SEED_PROCESS);
  return w;
}

/* ---- the driver's side of the pipeline ---- */

/* Waits until no chunk is queued or being parsed. */
static void settle(cj *c) {
  pthread_mutex_lock(&c->mu);
  while (c->inflight && !stopped(c)) pthread_cond_wait(&c->cv, &c->mu);
  pthread_mutex_unlock(&c->mu);
}

/* Hands the fill (the bytes since the last cut) to the workers as one
 * chunk.  Returns 0, or -1 when no slot came (stop, or a chunk failed). */
static int dispatch(cj *c) {
  close_direct(c);
  tbe__buf_putc(&c->fill, ']');
  if (tbe__buf_error(&c->fill)) return -1;
  slot *s = alloc_slot(c, 1);
  if (!s) {
    c->fill.len--;
    return -1;
  }
  pthread_mutex_lock(&c->mu);
  tbe__buf tmp = s->in;
  s->in = c->fill;
  c->fill = tmp;
  s->chunk = 1;
  s->off = c->fill_off;
  s->first = c->fill_first;
  s->prog_done = c->prog_done;
  s->prog_total = c->prog_total;
  s->state = S_PENDING;
  c->inflight++;
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  tbe__buf_clear(&c->fill);
  tbe__buf_putc(&c->fill, '[');
  return 0;
}

/* Gives up the parallel parse from the first failed chunk (or, with none,
 * from the fill): the bytes from there to the scan position go through the
 * main yajl handle, and everything after too.  Returns 0 or -1 as
 * tbe__cj_feed_main. */
static int par_fallback(cj *c) {
  pthread_mutex_lock(&c->mu);
  uint64_t k = c->fail_pending ? c->fail_seq : c->tail;
  for (uint64_t q = k; q < c->tail; q++)
    if (SLOT(c, q)->state == S_PENDING) {
      SLOT(c, q)->state = S_DISCARD;
      c->inflight--;
    }
  while (c->inflight) pthread_cond_wait(&c->cv, &c->mu);
  pthread_mutex_unlock(&c->mu);
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
  pthread_mutex_lock(&c->mu);
  for (uint64_t q = k; q < c->tail; q++) SLOT(c, q)->state = S_DISCARD;
  c->fail_pending = 0;
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
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
    if (c->fail_pending || hit == 3) {
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
    if (c->threaded) pthread_mutex_lock(&c->mu);
    c->prog_done = tbe__input_done(in);
    c->prog_total = tbe__input_size(in);
    if (c->threaded) pthread_mutex_unlock(&c->mu);
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
    if (!c->rc && c->batch.len) tbe__cj_flush_batch(c);
    return;
  }
  if (!c->rc) close_direct(c);
  pthread_mutex_lock(&c->mu);
  /* After an error or a stop nothing more is parsed; slots left over are
   * dropped in order. */
  for (uint64_t q = c->head; q < c->tail; q++) {
    slot *s = SLOT(c, q);
    if (s->state == S_PENDING) {
      s->state = S_DISCARD;
      c->inflight--;
    }
  }
  while (c->inflight) pthread_cond_wait(&c->cv, &c->mu);
  for (uint64_t q = c->head; q < c->tail; q++) {
    slot *s = SLOT(c, q);
    if (s->state == S_FAILED || s->state == S_FILL) s->state = S_DISCARD;
  }
  c->producer_done = 1;
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
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

static void *worker_main(void *arg) {
  cj *w = arg, *c = w->parent;
  pthread_mutex_lock(&c->mu);
  for (;;) {
    if (c->wnext < c->head) c->wnext = c->head;
    /* Skip what is done; stop at a slot still being filled (a chunk
     * becomes PENDING there). */
    while (c->wnext < c->tail && SLOT(c, c->wnext)->state != S_PENDING &&
           SLOT(c, c->wnext)->state != S_FILL)
      c->wnext++;
    if (c->wnext < c->tail && SLOT(c, c->wnext)->state == S_PENDING) {
      uint64_t seq = c->wnext++;
      slot *s = SLOT(c, seq);
      s->state = S_WORKING;
      pthread_mutex_unlock(&c->mu);
      uint64_t t0 = c->prof ? mono_ns() : 0, u0 = c->prof ? thread_cpu_ns() : 0;
      int ok = parse_chunk(w, s);
      uint64_t t1 = c->prof ? mono_ns() : 0, u1 = c->prof ? thread_cpu_ns() : 0;
      pthread_mutex_lock(&c->mu);
      if (c->prof) c->p_parse += t1 - t0, c->p_parse_cpu += u1 - u0, c->p_chunks++;
      s->state = ok ? S_READY : S_FAILED;
      c->inflight--;
      if (!ok && (!c->fail_pending || seq < c->fail_seq)) {
        c->fail_pending = 1;
        c->fail_seq = seq;
      }
      pthread_cond_broadcast(&c->cv);
      continue;
    }
    if (c->quit) break;
    pthread_cond_wait(&c->cv, &c->mu);
  }
  pthread_mutex_unlock(&c->mu);
  return NULL;
}

/* The model side in threaded mode: applies slots in order until the
 * driver is done. */
static void consume(cj *c, const tbe_import_options *o) {
  pthread_mutex_lock(&c->mu);
  for (;;) {
    if (c->head < c->tail) {
      slot *s = SLOT(c, c->head);
      int st = s->state;
      if (st == S_READY || st == S_DISCARD) {
        pthread_mutex_unlock(&c->mu);
        if (st == S_READY) {
          uint64_t t0 = c->prof ? mono_ns() : 0, u0 = c->prof ? thread_cpu_ns() : 0;
          tbe__cj_apply_batch(c, &s->out);
          if (c->prof) c->p_apply += mono_ns() - t0, c->p_apply_cpu += thread_cpu_ns() - u0;
          if (o->progress && !c->crc) o->progress(o->progress_ctx, s->prog_done, s->prog_total);
        }
        tbe__buf_clear(&s->out);
        pthread_mutex_lock(&c->mu);
        s->state = S_FREE;
        c->head++;
        pthread_cond_broadcast(&c->cv);
        continue;
      }
    } else if (c->producer_done) {
      break;
    }
    uint64_t t0 = c->prof ? mono_ns() : 0;
    pthread_cond_wait(&c->cv, &c->mu);
    if (c->prof) c->p_wait += mono_ns() - t0;
  }
  pthread_mutex_unlock(&c->mu);
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
  if (pthread_mutex_init(&c->mu, NULL) != 0) return -1;
  if (pthread_cond_init(&c->cv, NULL) != 0) {
    pthread_mutex_destroy(&c->mu);
    return -1;
  }
  c->nslots = (size_t)nw + 4;
  c->slots = tbe__calloc(c->a, c->nslots, sizeof *c->slots);
  c->wcs = tbe__calloc(c->a, (size_t)nw, sizeof *c->wcs);
  c->wth = tbe__calloc(c->a, (size_t)nw, sizeof *c->wth);
  int started = 0, ok = c->slots && c->wcs && c->wth;
  if (ok) {
    for (size_t i = 0; i < c->nslots; i++) {
      tbe__buf_init(&c->slots[i].in, c->a);
      tbe__buf_init(&c->slots[i].out, c->a);
    }
    c->chunk_target = tbe__chrome_json_chunk ? tbe__chrome_json_chunk : CJ_CHUNK;
    c->par = 1;
    c->threaded = 1;
  }
  for (int i = 0; ok && i < nw; i++) {
    c->wcs[i] = worker_new(c);
    if (!c->wcs[i] || pthread_create(&c->wth[i], NULL, worker_main, c->wcs[i]) != 0) break;
    started++;
  }
  pthread_t th;
  int driver = 0;
  if (ok && started == nw) driver = pthread_create(&th, NULL, producer_main, c) == 0;
  if (driver) {
    consume(c, o);
    pthread_join(th, NULL);
  }
  pthread_mutex_lock(&c->mu);
  c->quit = 1;
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  for (int i = 0; i < started; i++) pthread_join(c->wth[i], NULL);
  if (c->wcs)
    for (int i = 0; i < nw; i++) worker_free(c->a, c->wcs[i]);
  tbe__free(c->a, c->wcs);
  tbe__free(c->a, c->wth);
  c->wcs = NULL;
  c->wth = NULL;
  pthread_cond_destroy(&c->cv);
  pthread_mutex_destroy(&c->mu);
  c->threaded = 0;
  c->par = 0;
  tbe__cj_free_slots(c);
  return driver ? 0 : -1;
}

