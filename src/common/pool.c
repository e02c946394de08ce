/* pool.c: the ordered worker pool of pool.h.
 *
 * Everything shared sits under one mutex: the ring's states, head (the
 * next item to consume), tail (the next seq to claim), the counts and the
 * flags.  Slot contents are not: the producer fills a slot between claim
 * and submit, one worker (or the consumer) works on it while it is
 * RUNNING, the consumer reads it between next and release; each hand-over
 * passes through the mutex, which orders the accesses.
 *
 * An item's life: FREE -> CLAIMED -> (PENDING -> RUNNING ->) DONE -> FREE,
 * or -> CANCELLED -> FREE.  Invariants: head <= tail <= head + nslots; the
 * items [head, tail) are the only ones not FREE; `pending` and `running`
 * count the PENDING and RUNNING ones; `failed` is set exactly when a DONE
 * item in [head, tail) has a non-zero code, and fail_seq is the lowest.
 *
 * Condition variables: work_cv wakes workers (an item is PENDING, or
 * stop), done_cv the consumer and a producer in wait_idle/cancel_from (an
 * item finished, was submitted or cancelled), free_cv a producer in claim
 * (a slot was released). */
#include "common/pool.h"

#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "common/alloc.h"
#include "tbexport/error.h"

enum { FREE, CLAIMED, PENDING, RUNNING, DONE, CANCELLED };

typedef struct pstate {
  int state;
  int rc;
} pstate;

typedef struct pworker {
  tbe__pool *p;
  unsigned char *mem; /* its worker_size bytes */
  int init;           /* worker_init's code (the consumer's: 1 = not yet run) */
} pworker;

struct tbe__pool {
  tbe__pool_config cfg;
  tbe_allocator al;
  pthread_mutex_t mu;
  pthread_cond_t work_cv, done_cv, free_cv;
  uint32_t nslots;
  size_t sstride, wstride;
  pstate *st;
  unsigned char *slots, *wmem;
  pworker *w;  /* threads + 1: the last is the consumer's */
  pthread_t *th;
  int nth, live; /* threads started; those still taking items */
  uint64_t head, tail, fail_seq;
  size_t pending, running;
  int failed, closed, stop, quit;
};

/* Strides rounded to 64 bytes: no two threads' states share a cache line. */
static size_t stride(size_t n) { return (n + 63) & ~(size_t)63; }

static pstate *ST(tbe__pool *p, uint64_t seq) { return &p->st[seq % p->nslots]; }

void *tbe__pool_slot(const tbe__pool *p, uint64_t seq) {
  return p->slots + (size_t)(seq % p->nslots) * p->sstride;
}

int tbe__pool_cpus(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : n > 4096 ? 4096 : (int)n;
}

/* ---- doing an item (worker or consumer), mutex held on entry and exit ---- */

static void note_failure(tbe__pool *p, uint64_t seq) {
  if (!p->failed || seq < p->fail_seq) p->fail_seq = seq;
  p->failed = 1;
  pthread_cond_broadcast(&p->free_cv); /* claims return NULL now */
}

static void run_item(tbe__pool *p, pworker *w, uint64_t seq) {
  pstate *s = ST(p, seq);
  s->state = RUNNING;
  p->pending--;
  p->running++;
  pthread_mutex_unlock(&p->mu);
  int rc = p->cfg.work(p->cfg.ctx, w->mem, tbe__pool_slot(p, seq), seq);
  pthread_mutex_lock(&p->mu);
  p->running--;
  s->state = DONE; /* (cancel_from waits for running items: still ours) */
  s->rc = rc;
  if (rc) note_failure(p, seq);
  pthread_cond_broadcast(&p->done_cv);
}

/* The lowest PENDING item a worker may start, or 0 with none.  After a
 * failure (without hold_failed) nothing past the failed item starts. */
static int pick(tbe__pool *p, uint64_t *seq) {
  if (p->stop || !p->pending) return 0;
  for (uint64_t q = p->head; q < p->tail; q++) {
    if (p->failed && !p->cfg.hold_failed && q > p->fail_seq) return 0;
    if (ST(p, q)->state == PENDING) {
      *seq = q;
      return 1;
    }
  }
  return 0;
}

static void *worker_main(void *arg) {
  pworker *w = arg;
  tbe__pool *p = w->p;
  w->init = p->cfg.worker_init ? p->cfg.worker_init(p->cfg.ctx, w->mem) : 0;
  pthread_mutex_lock(&p->mu);
  while (!w->init && !p->quit) {
    uint64_t seq;
    if (pick(p, &seq)) run_item(p, w, seq);
    else pthread_cond_wait(&p->work_cv, &p->mu);
  }
  p->live--;
  pthread_cond_broadcast(&p->done_cv); /* the consumer may be counting on it */
  pthread_mutex_unlock(&p->mu);
  if (!w->init && p->cfg.worker_fini) p->cfg.worker_fini(p->cfg.ctx, w->mem);
  return NULL;
}

/* ---- creation ---- */

int tbe__pool_create(tbe__pool **out, const tbe__pool_config *cfg) {
  *out = NULL;
  if (!cfg || !cfg->work || cfg->slots < 1 || cfg->threads < 0) return TBE_EINVAL;
  tbe_allocator al;
  tbe__allocator_init(&al, cfg->allocator);
  tbe__pool *p = tbe__calloc(&al, 1, sizeof *p);
  if (!p) return TBE_ENOMEM;
  p->cfg = *cfg;
  p->al = al;
  p->nslots = cfg->slots;
  p->sstride = stride(cfg->slot_size);
  p->wstride = stride(cfg->worker_size);
  size_t nw = (size_t)cfg->threads + 1;
  p->st = tbe__calloc(&al, p->nslots, sizeof *p->st);
  p->slots = tbe__calloc(&al, p->nslots, p->sstride ? p->sstride : 1);
  p->wmem = tbe__calloc(&al, nw, p->wstride ? p->wstride : 1);
  p->w = tbe__calloc(&al, nw, sizeof *p->w);
  p->th = tbe__calloc(&al, nw, sizeof *p->th);
  int rc = p->st && p->slots && p->wmem && p->w && p->th ? 0 : TBE_ENOMEM;
  int mu = 0, cv = 0;
  if (!rc && (rc = -pthread_mutex_init(&p->mu, NULL)) == 0) mu = 1;
  if (!rc && (rc = -pthread_cond_init(&p->work_cv, NULL)) == 0) cv = 1;
  if (!rc && (rc = -pthread_cond_init(&p->done_cv, NULL)) == 0) cv = 2;
  if (!rc && (rc = -pthread_cond_init(&p->free_cv, NULL)) == 0) cv = 3;
  if (rc) {
    if (cv >= 1) pthread_cond_destroy(&p->work_cv);
    if (cv >= 2) pthread_cond_destroy(&p->done_cv);
    if (mu) pthread_mutex_destroy(&p->mu);
    tbe__free(&al, p->st);
    tbe__free(&al, p->slots);
    tbe__free(&al, p->wmem);
    tbe__free(&al, p->w);
    tbe__free(&al, p->th);
    tbe__free(&al, p);
    return rc;
  }
  for (size_t i = 0; i < nw; i++) {
    p->w[i].p = p;
    p->w[i].mem = p->wmem + i * p->wstride;
  }
  p->w[nw - 1].init = 1; /* the consumer's: set up on first use */
  pthread_mutex_lock(&p->mu);
  for (int i = 0; i < cfg->threads; i++) {
    if (pthread_create(&p->th[p->nth], NULL, worker_main, &p->w[p->nth]) != 0) break;
    p->nth++;
    p->live++;
  }
  pthread_mutex_unlock(&p->mu);
  *out = p;
  return 0;
}

int tbe__pool_threads(const tbe__pool *p) { return p->nth; }

void tbe__pool_stop(tbe__pool *p) {
  pthread_mutex_lock(&p->mu);
  p->stop = 1;
  pthread_cond_broadcast(&p->work_cv);
  pthread_cond_broadcast(&p->done_cv);
  pthread_cond_broadcast(&p->free_cv);
  pthread_mutex_unlock(&p->mu);
}

int tbe__pool_stopped(tbe__pool *p) {
  pthread_mutex_lock(&p->mu);
  int s = p->stop;
  pthread_mutex_unlock(&p->mu);
  return s;
}

void tbe__pool_destroy(tbe__pool *p) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  p->stop = p->quit = 1;
  pthread_cond_broadcast(&p->work_cv);
  pthread_cond_broadcast(&p->done_cv);
  pthread_cond_broadcast(&p->free_cv);
  pthread_mutex_unlock(&p->mu);
  for (int i = 0; i < p->nth; i++) pthread_join(p->th[i], NULL);
  pworker *cw = &p->w[p->cfg.threads];
  if (cw->init == 0 && p->cfg.worker_fini) p->cfg.worker_fini(p->cfg.ctx, cw->mem);
  if (p->cfg.slot_fini)
    for (uint32_t i = 0; i < p->nslots; i++)
      p->cfg.slot_fini(p->cfg.ctx, p->slots + i * p->sstride);
  pthread_cond_destroy(&p->work_cv);
  pthread_cond_destroy(&p->done_cv);
  pthread_cond_destroy(&p->free_cv);
  pthread_mutex_destroy(&p->mu);
  tbe_allocator al = p->al;
  tbe__free(&al, p->st);
  tbe__free(&al, p->slots);
  tbe__free(&al, p->wmem);
  tbe__free(&al, p->w);
  tbe__free(&al, p->th);
  tbe__free(&al, p);
}

/* ---- the producer ---- */

static void *claim(tbe__pool *p, uint64_t *seq, int wait) {
  pthread_mutex_lock(&p->mu);
  while (wait && !p->stop && !p->failed && p->tail - p->head >= p->nslots)
    pthread_cond_wait(&p->free_cv, &p->mu);
  void *s = NULL;
  if (!p->stop && !p->failed && p->tail - p->head < p->nslots) {
    *seq = p->tail++;
    ST(p, *seq)->state = CLAIMED;
    ST(p, *seq)->rc = 0;
    s = tbe__pool_slot(p, *seq);
  }
  pthread_mutex_unlock(&p->mu);
  return s;
}

void *tbe__pool_claim(tbe__pool *p, uint64_t *seq) { return claim(p, seq, 1); }
void *tbe__pool_try_claim(tbe__pool *p, uint64_t *seq) { return claim(p, seq, 0); }

void tbe__pool_submit(tbe__pool *p, uint64_t seq, int work) {
  pthread_mutex_lock(&p->mu);
  pstate *s = ST(p, seq);
  if (seq >= p->head && seq < p->tail && s->state == CLAIMED) {
    if (work) {
      s->state = PENDING;
      p->pending++;
      pthread_cond_signal(&p->work_cv);
    } else {
      s->state = DONE;
    }
    if (seq == p->head) pthread_cond_broadcast(&p->done_cv);
  }
  pthread_mutex_unlock(&p->mu);
}

void tbe__pool_close(tbe__pool *p) {
  pthread_mutex_lock(&p->mu);
  p->closed = 1;
  pthread_cond_broadcast(&p->done_cv);
  pthread_mutex_unlock(&p->mu);
}

void tbe__pool_wait_idle(tbe__pool *p) {
  pthread_mutex_lock(&p->mu);
  while (!p->stop && !p->failed && (p->pending || p->running))
    pthread_cond_wait(&p->done_cv, &p->mu);
  pthread_mutex_unlock(&p->mu);
}

int tbe__pool_failed(tbe__pool *p, uint64_t *seq) {
  pthread_mutex_lock(&p->mu);
  int f = p->failed;
  if (f) *seq = p->fail_seq;
  pthread_mutex_unlock(&p->mu);
  return f;
}

void tbe__pool_cancel_from(tbe__pool *p, uint64_t seq) {
  pthread_mutex_lock(&p->mu);
  uint64_t from = seq > p->head ? seq : p->head;
  for (uint64_t q = from; q < p->tail; q++)
    if (ST(p, q)->state == PENDING) {
      ST(p, q)->state = CANCELLED;
      p->pending--;
    }
  /* The running ones (any seq: simpler, and they end soon) finish first,
   * so that no work touches a slot the producer reads next. */
  while (p->running) pthread_cond_wait(&p->done_cv, &p->mu);
  from = seq > p->head ? seq : p->head; /* the consumer may have moved on */
  for (uint64_t q = from; q < p->tail; q++) ST(p, q)->state = CANCELLED;
  if (p->failed && p->fail_seq >= from) p->failed = 0;
  pthread_cond_broadcast(&p->done_cv);
  pthread_cond_broadcast(&p->free_cv);
  pthread_mutex_unlock(&p->mu);
}

/* ---- the consumer ---- */

int tbe__pool_next(tbe__pool *p, void **slot, uint64_t *seq) {
  pworker *cw = &p->w[p->cfg.threads];
  pthread_mutex_lock(&p->mu);
  int rc;
  for (;;) {
    if (p->stop) {
      rc = TBE__POOL_END;
      break;
    }
    if (p->head == p->tail) {
      if (p->closed) {
        rc = TBE__POOL_END;
        break;
      }
      pthread_cond_wait(&p->done_cv, &p->mu);
      continue;
    }
    pstate *s = ST(p, p->head);
    if (s->state == CANCELLED) {
      s->state = FREE;
      p->head++;
      pthread_cond_signal(&p->free_cv);
      continue;
    }
    if (s->state == DONE && (!s->rc || !p->cfg.hold_failed)) {
      rc = s->rc;
      *slot = tbe__pool_slot(p, p->head);
      *seq = p->head;
      if (rc) { /* the first failure in order: nothing after it counts */
        p->stop = 1;
        pthread_cond_broadcast(&p->work_cv);
        pthread_cond_broadcast(&p->free_cv);
      }
      break;
    }
    if (s->state == PENDING) { /* no worker took it: do it here */
      if (cw->init == 1) {
        pthread_mutex_unlock(&p->mu);
        cw->init = p->cfg.worker_init ? p->cfg.worker_init(p->cfg.ctx, cw->mem) : 0;
        if (cw->init == 1) cw->init = TBE_EINVAL; /* 1 is not an error code */
        pthread_mutex_lock(&p->mu);
        continue; /* things may have moved meanwhile */
      }
      if (!cw->init) {
        run_item(p, cw, p->head);
        continue;
      }
      if (!p->live) { /* nobody can ever do it: it fails with our reason */
        s->state = DONE;
        s->rc = cw->init;
        p->pending--;
        note_failure(p, p->head);
        continue;
      }
    }
    pthread_cond_wait(&p->done_cv, &p->mu);
  }
  pthread_mutex_unlock(&p->mu);
  return rc;
}

void tbe__pool_release(tbe__pool *p) {
  pthread_mutex_lock(&p->mu);
  if (p->head < p->tail && ST(p, p->head)->state == DONE) {
    ST(p, p->head)->state = FREE;
    p->head++;
    pthread_cond_signal(&p->free_cv);
  }
  pthread_mutex_unlock(&p->mu);
}
