/* pool.h: the ordered worker pool.
 *
 * A producer hands over numbered items (seq 0, 1, 2, ...), worker threads
 * process them in any order and at the same time, and one consumer takes
 * the results strictly in seq order.  The Chrome JSON exporter (chunks of
 * events formatted, and deflated, in parallel, written in order) and the
 * Chrome JSON importer (chunks of the events array parsed in parallel,
 * applied to the model in order) are this pattern; both run on it.
 *
 * The ring.  Items live in a ring of `slots` slots of `slot_size` bytes
 * of the caller's own state (buffers, offsets), zeroed at creation and
 * reused: item seq uses slot seq % slots.  A slot is claimed by the
 * producer, filled, submitted, worked on, consumed and released; only then
 * can seq + slots claim it.  So at most `slots` items exist at once
 * whatever the input's size (the memory bound), and a producer that runs
 * ahead waits (tbe__pool_claim) for the consumer.  Each worker, and the
 * consumer, has `worker_size` bytes of state of its own (a parser, a
 * formatter's copy of a context), set up by worker_init on its thread.
 *
 * Who does what:
 *  - producer (one thread): tbe__pool_claim or tbe__pool_try_claim, fill
 *    the slot, tbe__pool_submit (with `work`: for a worker; without: the
 *    item is finished as it is, a direct result), ...; tbe__pool_close
 *    after the last item;
 *  - workers (the pool's threads): take the lowest submitted item and
 *    call work(ctx, worker, slot, seq) on it;
 *  - consumer (one thread): tbe__pool_next gives the next item in order
 *    once it is finished; tbe__pool_release hands its slot back.  When the
 *    next item is still waiting for a worker (none was started, or all
 *    are busy) the consumer works on it itself, with its own state: an
 *    item never waits for a thread that does not exist.
 * The producer and the consumer may be one thread (use try_claim then:
 * claim would wait for itself), and with 0 threads everything runs on it.
 *
 * Errors stop it cleanly.  work returns 0 or a negative code.  By default
 * the first failed item (in seq order) is handed to the consumer with its
 * code (tbe__pool_next returns it) after every item before it, and the
 * pool stops: no later item is started, claims return NULL.  With
 * hold_failed (the importer: it replays a failed chunk itself), a failed
 * item is held instead: the consumer waits in front of it, claims return
 * NULL, tbe__pool_failed tells the producer where, and the producer calls
 * tbe__pool_cancel_from(seq): every unconsumed item from seq on is
 * cancelled (never handed to the consumer; its slot keeps what the work
 * left in it until the producer claims that slot again) and the pool goes
 * on with the next claim.  tbe__pool_stop, from any thread (the consumer
 * failing, the producer's input failing), ends everything at once: no new
 * item starts, running ones finish, claims return NULL and tbe__pool_next
 * returns TBE__POOL_END.
 *
 * Threads: `threads` is the caller's choice (an option of the API that
 * uses the pool; this library never reads the environment for it);
 * tbe__pool_cpus gives the online CPUs to choose from.  A thread that
 * cannot be created, or whose worker_init fails, is simply not there: the
 * others and the consumer do its share (tbe__pool_threads).
 *
 * Cost: one mutex and three condition variables; per item a few lock
 * round trips and at most two wake-ups, so items should be chunks of work
 * (the exporter's are 2048 events, the importer's 128 KB), not events.
 * Memory: slots * slot_size + (threads + 1) * worker_size, allocated at
 * creation through the caller's tbe_allocator, nothing per item.
 *
 * Thread safety: as above, one producer thread and one consumer thread
 * (possibly the same); tbe__pool_stop and tbe__pool_stopped from any. */
#ifndef TBE_COMMON_POOL_H
#define TBE_COMMON_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "tbexport/common.h"

typedef struct tbe__pool tbe__pool;

typedef struct tbe__pool_config {
  int threads;          /* worker threads (0: all work on the consumer) */
  uint32_t slots;       /* ring size (>= 1; the callers use 2 to 4 per thread) */
  size_t slot_size;     /* bytes of caller state per slot */
  size_t worker_size;   /* bytes of caller state per worker and the consumer */
  /* Works on item `seq` in `slot`; 0 or a negative error code.  Called on
   * a worker thread or on the consumer's. */
  int (*work)(void *ctx, void *worker, void *slot, uint64_t seq);
  /* Optional: prepares a worker's state on its thread (0 or an error: the
   * worker then takes no item); undone by worker_fini on the same thread. */
  int (*worker_init)(void *ctx, void *worker);
  void (*worker_fini)(void *ctx, void *worker);
  /* Optional: frees what a slot holds, at tbe__pool_destroy. */
  void (*slot_fini)(void *ctx, void *slot);
  void *ctx;
  int hold_failed;      /* see "Errors" above */
  const tbe_allocator *allocator; /* NULL: malloc; must outlive the pool */
} tbe__pool_config;

/* tbe__pool_next: nothing more will come (closed and drained, or stopped). */
#define TBE__POOL_END 1

/* Creates the pool and starts its threads.  0, TBE_EINVAL (no work, no
 * slot), TBE_ENOMEM or -errno of the mutex. */
int tbe__pool_create(tbe__pool **out, const tbe__pool_config *cfg);
/* Stops the pool, joins the threads, runs worker_fini and slot_fini, frees
 * everything.  NULL is fine. */
void tbe__pool_destroy(tbe__pool *p);
/* Worker threads actually running (<= cfg.threads). */
int tbe__pool_threads(const tbe__pool *p);
/* The online CPUs (at least 1). */
int tbe__pool_cpus(void);

/* ---- the producer ---- */

/* The slot for the next item (*seq its number), waiting for one to be
 * free.  NULL when the pool is stopped or an item failed. */
void *tbe__pool_claim(tbe__pool *p, uint64_t *seq);
/* The same without waiting: NULL also when the ring is full. */
void *tbe__pool_try_claim(tbe__pool *p, uint64_t *seq);
/* Hands the claimed item over: to a worker when `work`, else finished as
 * it is (tbe__pool_next gives it with 0). */
void tbe__pool_submit(tbe__pool *p, uint64_t seq, int work);
/* No item after those claimed so far. */
void tbe__pool_close(tbe__pool *p);
/* Waits until no item is waiting or being worked on (or one failed, or
 * the pool stopped). */
void tbe__pool_wait_idle(tbe__pool *p);
/* 1 and the lowest failed item's seq when one failed (and is not
 * cancelled), else 0. */
int tbe__pool_failed(tbe__pool *p, uint64_t *seq);
/* Cancels every item from `seq` on that was not consumed (claimed ones
 * too: do not submit those), after waiting for the running ones to end;
 * clears the failures among them.  Claims continue after them. */
void tbe__pool_cancel_from(tbe__pool *p, uint64_t seq);
/* The slot of item `seq`: its contents stay until seq + slots is claimed. */
void *tbe__pool_slot(const tbe__pool *p, uint64_t seq);

/* ---- the consumer ---- */

/* The next item in order: 0 with *slot and *seq set when it is finished;
 * its work's error code (also with *slot and *seq) when it failed, after
 * which the pool is stopped; TBE__POOL_END when nothing more will come. */
int tbe__pool_next(tbe__pool *p, void **slot, uint64_t *seq);
/* The item tbe__pool_next gave is done with: its slot is free again. */
void tbe__pool_release(tbe__pool *p);

/* ---- any thread ---- */

void tbe__pool_stop(tbe__pool *p);
int tbe__pool_stopped(tbe__pool *p);

#endif
