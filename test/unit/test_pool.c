/* test_pool.c: the ordered worker pool of common/pool.h (also run under
 * ThreadSanitizer by scripts/test).
 *
 * What must never happen:
 *  - an item consumed out of order, twice, or not at all, whatever the
 *    threads, the ring size and the timing (each work spins a random
 *    while, so items finish out of order);
 *  - more items in flight than the ring has slots (the memory bound);
 *  - two threads on one slot at once;
 *  - an item after a failed one reaching the consumer, or a consumer left
 *    waiting for good when something failed, stopped, or no thread could
 *    start;
 *  - in hold mode, a cancelled item reaching the consumer, or the replay
 *    of a failed item coming out of place;
 *  - a block leaked, also when creation fails (sweep). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/pool.h"
#include "tbexport/error.h"
#include "testutil.h"

typedef struct item {
  uint64_t input;  /* what the producer put in */
  uint64_t output; /* what the work (or the producer, direct) made of it */
  int busy;        /* a thread is on it */
  int bad;         /* the work fails on it */
} item;

typedef struct wstate {
  uint64_t rng;
  int inited;
  long done;
} wstate;

typedef struct ctx {
  int fail_init;       /* worker_init fails */
  long fini, slot_fini;
  long inflight, max_inflight; /* claimed, not yet released */
} ctx;

static uint64_t f(uint64_t x) { return x * 0x9e3779b97f4a7c15ull ^ (x >> 7); }

static int work(void *c, void *w, void *slot, uint64_t seq) {
  (void)c;
  (void)seq;
  wstate *ws = w;
  item *it = slot;
  assert_true(ws->inited);
  assert_int_equal(__atomic_exchange_n(&it->busy, 1, __ATOMIC_ACQ_REL), 0);
  ws->rng = ws->rng * 6364136223846793005ull + 1442695040888963407ull;
  for (volatile unsigned spin = (unsigned)(ws->rng >> 52); spin; spin--) {
  }
  it->output = f(it->input);
  ws->done++;
  __atomic_store_n(&it->busy, 0, __ATOMIC_RELEASE);
  return it->bad ? TBE_EIO : 0;
}

static int winit(void *c, void *w) {
  ctx *x = c;
  wstate *ws = w;
  if (__atomic_load_n(&x->fail_init, __ATOMIC_RELAXED)) return TBE_ENOMEM;
  ws->rng = (uint64_t)(uintptr_t)w;
  ws->inited = 1;
  return 0;
}

static void wfini(void *c, void *w) {
  (void)w;
  __atomic_fetch_add(&((ctx *)c)->fini, 1, __ATOMIC_RELAXED);
}

static void sfini(void *c, void *s) {
  (void)s;
  ((ctx *)c)->slot_fini++;
}

static tbe__pool *make(ctx *x, int threads, uint32_t slots, int hold, const tbe_allocator *a) {
  tbe__pool_config cfg = {.threads = threads,
                          .slots = slots,
                          .slot_size = sizeof(item),
                          .worker_size = sizeof(wstate),
                          .work = work,
                          .worker_init = winit,
                          .worker_fini = wfini,
                          .slot_fini = sfini,
                          .ctx = x,
                          .hold_failed = hold,
                          .allocator = a};
  tbe__pool *p = NULL;
  assert_int_equal(tbe__pool_create(&p, &cfg), 0);
  return p;
}

/* ---- a producer on its own thread ---- */

typedef struct producer {
  tbe__pool *p;
  ctx *x;
  uint64_t n;       /* items to make */
  uint64_t bad_at;  /* the input whose work fails (UINT64_MAX: none) */
  int replay;       /* hold mode: replay failed items directly */
  uint64_t *input_of; /* seq -> input (replays shift them) */
  uint64_t made;
  int replays;
} producer;

static void put(producer *pr, item *it, uint64_t seq, uint64_t input, int direct) {
  long now = __atomic_add_fetch(&pr->x->inflight, 1, __ATOMIC_RELAXED);
  long m = __atomic_load_n(&pr->x->max_inflight, __ATOMIC_RELAXED);
  while (now > m && !__atomic_compare_exchange_n(&pr->x->max_inflight, &m, now, 0, __ATOMIC_RELAXED,
                                                  __ATOMIC_RELAXED)) {
  }
  it->input = input;
  it->bad = input == pr->bad_at && !direct;
  it->output = direct ? f(input) : 0;
  pr->input_of[seq] = input;
  tbe__pool_submit(pr->p, seq, !direct);
}

/* The importer's fallback: cancel from the failed item k, then make its
 * input and the later ones again.  Returns the input to go on with. */
static uint64_t replay(producer *pr, uint64_t k) {
  uint64_t tail = k;
  while (pr->input_of[tail] != UINT64_MAX) tail++;
  tbe__pool_cancel_from(pr->p, k);
  __atomic_sub_fetch(&pr->x->inflight, (long)(tail - k), __ATOMIC_RELAXED);
  /* the failed item's slot still holds what it held */
  assert_true(((item *)tbe__pool_slot(pr->p, k))->input == pr->input_of[k]);
  uint64_t next = pr->input_of[k];
  for (uint64_t q = k; q < tail; q++) pr->input_of[q] = UINT64_MAX - 1; /* cancelled */
  pr->bad_at = UINT64_MAX; /* the inputs made again do not fail */
  pr->replays++;
  return next;
}

static void *produce(void *arg) {
  producer *pr = arg;
  uint64_t next = 0, k; /* the next input */
  for (;;) {
    while (next < pr->n) {
      uint64_t seq;
      item *it = tbe__pool_claim(pr->p, &seq);
      if (!it) break; /* stopped, or an item failed */
      put(pr, it, seq, next, next % 7 == 3);
      next++;
    }
    if (!pr->replay) break;
    /* Hold mode: a failure may come after the last claim; settle first
     * (the importer's settle at the end of the events array). */
    tbe__pool_wait_idle(pr->p);
    if (!tbe__pool_failed(pr->p, &k)) break;
    next = replay(pr, k);
  }
  pr->made = next;
  tbe__pool_close(pr->p);
  return NULL;
}

/* Consumes everything; checks order and results.  Returns the inputs
 * seen in order in `seen` (count in *ns) and the first error. */
static int consume(tbe__pool *p, ctx *x, uint64_t *seen, uint64_t *ns) {
  void *slot;
  uint64_t seq, last = UINT64_MAX;
  int rc;
  *ns = 0;
  while ((rc = tbe__pool_next(p, &slot, &seq)) == 0) {
    item *it = slot;
    assert_true(last == UINT64_MAX || seq > last);
    last = seq;
    assert_true(it->output == f(it->input));
    seen[(*ns)++] = it->input;
    __atomic_sub_fetch(&x->inflight, 1, __ATOMIC_RELAXED);
    tbe__pool_release(p);
  }
  return rc == TBE__POOL_END ? 0 : rc;
}

static void run_config(int threads, uint32_t slots, uint64_t n) {
  ctx x = {0};
  tbe__pool *p = make(&x, threads, slots, 0, NULL);
  assert_int_equal(tbe__pool_threads(p), threads);
  producer pr = {p, &x, n, UINT64_MAX, 0, malloc((n + 1) * sizeof(uint64_t)), 0, 0};
  uint64_t *seen = malloc(n * sizeof *seen), ns;
  assert_true(pr.input_of && seen);
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, produce, &pr), 0);
  assert_int_equal(consume(p, &x, seen, &ns), 0);
  pthread_join(th, NULL);
  assert_int_equal(ns, n);
  for (uint64_t i = 0; i < n; i++) assert_true(seen[i] == i);
  assert_true(x.max_inflight <= (long)slots);
  tbe__pool_destroy(p);
  assert_int_equal(x.slot_fini, slots);
  assert_true(x.fini >= threads); /* the workers, and the consumer if it helped */
  free(pr.input_of);
  free(seen);
}

static void test_order(void **state) {
  (void)state;
  static const int th[] = {0, 1, 2, 4, 8};
  static const uint32_t sl[] = {1, 2, 3, 16};
  for (size_t i = 0; i < sizeof th / sizeof th[0]; i++)
    for (size_t j = 0; j < sizeof sl / sizeof sl[0]; j++) run_config(th[i], sl[j], 1500);
}

/* The exporter's way: one thread produces (without waiting) and consumes. */
static void test_same_thread(void **state) {
  (void)state;
  for (int threads = 0; threads <= 3; threads++) {
    ctx x = {0};
    tbe__pool *p = make(&x, threads, (uint32_t)(2 * threads + 1), 0, NULL);
    enum { N = 3000 };
    uint64_t submitted = 0, consumed = 0;
    while (consumed < N) {
      uint64_t seq;
      item *it;
      while (submitted < N && (it = tbe__pool_try_claim(p, &seq))) {
        assert_true(seq == submitted);
        it->input = submitted++;
        it->bad = 0;
        tbe__pool_submit(p, seq, 1);
      }
      if (submitted == N) tbe__pool_close(p);
      void *slot;
      assert_int_equal(tbe__pool_next(p, &slot, &seq), 0);
      assert_true(seq == consumed);
      assert_true(((item *)slot)->output == f(consumed));
      consumed++;
      tbe__pool_release(p);
    }
    void *slot;
    uint64_t seq;
    assert_int_equal(tbe__pool_next(p, &slot, &seq), TBE__POOL_END);
    tbe__pool_destroy(p);
  }
}

/* Default mode: the failed item comes after all before it, then the end. */
static void test_stop_on_error(void **state) {
  (void)state;
  for (int threads = 0; threads <= 4; threads += 2) {
    ctx x = {0};
    tbe__pool *p = make(&x, threads, 8, 0, NULL);
    enum { N = 2000, BAD = 501 }; /* 501 % 7 != 3: worked on, not direct */
    producer pr = {p, &x, N, BAD, 0, malloc((N + 1) * sizeof(uint64_t)), 0, 0};
    uint64_t *seen = malloc(N * sizeof *seen), ns;
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, produce, &pr), 0);
    void *slot;
    uint64_t seq;
    int rc;
    ns = 0;
    while ((rc = tbe__pool_next(p, &slot, &seq)) == 0) {
      assert_true(seq == ns);
      seen[ns++] = ((item *)slot)->input;
      tbe__pool_release(p);
    }
    assert_int_equal(rc, TBE_EIO);
    assert_true(seq == BAD && ns == BAD);
    assert_true(((item *)slot)->input == BAD);
    assert_int_equal(tbe__pool_next(p, &slot, &seq), TBE__POOL_END); /* stopped */
    pthread_join(th, NULL);                                           /* claims ended */
    assert_true(pr.made < N);
    assert_true(tbe__pool_stopped(p));
    tbe__pool_destroy(p);
    free(pr.input_of);
    free(seen);
  }
}

/* Hold mode (the importer): the producer cancels from the failed item and
 * redoes the inputs from there; the consumer sees every input once, in
 * order, none of the cancelled items. */
static void test_hold_and_replay(void **state) {
  (void)state;
  for (int threads = 0; threads <= 4; threads++) {
    for (uint64_t bad = 0; bad < 40; bad += 13) {
      ctx x = {0};
      tbe__pool *p = make(&x, threads, 6, 1, NULL);
      enum { N = 400 };
      producer pr = {p, &x, N, bad, 1, malloc((2 * N + 8) * sizeof(uint64_t)), 0, 0};
      for (size_t i = 0; i < 2 * N + 8; i++) pr.input_of[i] = UINT64_MAX;
      uint64_t *seen = malloc(2 * N * sizeof *seen), ns;
      pthread_t th;
      assert_int_equal(pthread_create(&th, NULL, produce, &pr), 0);
      assert_int_equal(consume(p, &x, seen, &ns), 0);
      pthread_join(th, NULL);
      assert_int_equal(ns, N);
      for (uint64_t i = 0; i < N; i++) assert_true(seen[i] == i);
      assert_int_equal(pr.replays, 1); /* the failure did happen, once */
      tbe__pool_destroy(p);
      free(pr.input_of);
      free(seen);
    }
  }
}

/* The consumer gives up (its own failure): everything ends. */
static void test_stop_from_consumer(void **state) {
  (void)state;
  ctx x = {0};
  tbe__pool *p = make(&x, 3, 8, 0, NULL);
  enum { N = 100000 };
  producer pr = {p, &x, N, UINT64_MAX, 0, malloc((N + 1) * sizeof(uint64_t)), 0, 0};
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, produce, &pr), 0);
  void *slot;
  uint64_t seq;
  for (int i = 0; i < 100; i++) {
    assert_int_equal(tbe__pool_next(p, &slot, &seq), 0);
    tbe__pool_release(p);
  }
  tbe__pool_stop(p);
  assert_int_equal(tbe__pool_next(p, &slot, &seq), TBE__POOL_END);
  pthread_join(th, NULL);
  assert_true(pr.made < N);
  tbe__pool_destroy(p);
  assert_true(x.fini >= 3 && x.fini <= 4); /* each worker, the consumer if it helped */
  free(pr.input_of);
}

/* Workers that cannot set up leave their share to the consumer; with no
 * worker and a consumer that cannot either, the item fails (no hang). */
static void test_init_failures(void **state) {
  (void)state;
  ctx x = {.fail_init = 1};
  tbe__pool *p = make(&x, 4, 4, 0, NULL);
  uint64_t seq;
  item *it = tbe__pool_claim(p, &seq);
  assert_non_null(it);
  it->input = 5;
  tbe__pool_submit(p, seq, 1);
  void *slot;
  assert_int_equal(tbe__pool_next(p, &slot, &seq), TBE_ENOMEM);
  tbe__pool_destroy(p);
  assert_int_equal(x.fini, 0); /* nobody set up, nobody torn down */

  /* Workers fail, the consumer succeeds: all done by the consumer. */
  ctx y = {0};
  tbe__pool_config cfg = {.threads = 3, .slots = 4, .slot_size = sizeof(item),
                          .worker_size = sizeof(wstate), .work = work, .worker_init = winit,
                          .ctx = &y};
  assert_int_equal(tbe__pool_create(&p, &cfg), 0);
  __atomic_store_n(&y.fail_init, 1, __ATOMIC_RELAXED); /* some workers may fail, some not */
  for (uint64_t i = 0; i < 50; i++) {
    it = tbe__pool_claim(p, &seq);
    it->input = i;
    it->bad = 0;
    tbe__pool_submit(p, seq, 1);
    if (i == 0) __atomic_store_n(&y.fail_init, 0, __ATOMIC_RELAXED);
    assert_int_equal(tbe__pool_next(p, &slot, &seq), 0);
    assert_true(((item *)slot)->output == f(i));
    tbe__pool_release(p);
  }
  tbe__pool_destroy(p);

  /* Bad configurations. */
  cfg.work = NULL;
  assert_int_equal(tbe__pool_create(&p, &cfg), TBE_EINVAL);
  assert_null(p);
  cfg.work = work;
  cfg.slots = 0;
  assert_int_equal(tbe__pool_create(&p, &cfg), TBE_EINVAL);
  tbe__pool_destroy(NULL);
  assert_true(tbe__pool_cpus() >= 1);
}

static int pool_run(const tbe_allocator *a, void *c) {
  (void)c;
  ctx x = {0};
  tbe__pool_config cfg = {.threads = 2, .slots = 4, .slot_size = sizeof(item),
                          .worker_size = sizeof(wstate), .work = work, .worker_init = winit,
                          .ctx = &x, .allocator = a};
  tbe__pool *p;
  int rc = tbe__pool_create(&p, &cfg);
  if (rc) return rc;
  for (uint64_t i = 0; i < 10; i++) {
    uint64_t seq;
    item *it = tbe__pool_claim(p, &seq);
    it->input = i;
    tbe__pool_submit(p, seq, 1);
    void *slot;
    assert_int_equal(tbe__pool_next(p, &slot, &seq), 0);
    tbe__pool_release(p);
  }
  tbe__pool_destroy(p);
  return 0;
}

static void test_alloc_sweep(void **state) {
  (void)state;
  assert_true(tu_alloc_sweep(pool_run, NULL, 64) >= 5); /* five blocks at creation */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_order),          cmocka_unit_test(test_same_thread),
      cmocka_unit_test(test_stop_on_error),  cmocka_unit_test(test_hold_and_replay),
      cmocka_unit_test(test_stop_from_consumer), cmocka_unit_test(test_init_failures),
      cmocka_unit_test(test_alloc_sweep),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
