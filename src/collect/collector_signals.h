/* collector_signals.h: the collector's fatal-signal handler
 * (collector_signals.c; catch_signals in collector.h), and the requests it
 * makes of the background thread.
 *
 * Private to src/collect.  Knows nothing of the collector's state: the
 * collector hands it, when it arms the handler, the thread that serves
 * requests and the async-signal-safe call that wakes that thread; the
 * thread reads the requests (tbe__fatal_requests, tbe__fatal_signal) and
 * answers each (tbe__fatal_answer) once everything the forced flush
 * returned is in the spool.  A request is a sequence number: the handler
 * waits for an answer that reaches it, TBE__CRASH_WAIT_MS at most. */
#ifndef TBE_COLLECT_COLLECTOR_SIGNALS_H
#define TBE_COLLECT_COLLECTOR_SIGNALS_H

#include <pthread.h>

/* Installs the handler for each fatal signal the program does not ignore
 * (keeping the one saved before where ours is installed already: a forked
 * child starting again), gives the calling thread an alternate signal
 * stack when it has none, then arms the handler: from here a fatal signal
 * on any thread but `served_by` posts a request and calls `wake`
 * (async-signal-safe), then waits for the answer. */
void tbe__fatal_catch(pthread_t served_by, void (*wake)(void));

/* Stops posting requests: a fatal signal goes on at once to what was
 * there before.  The handlers stay installed. */
void tbe__fatal_disarm(void);

/* Puts back the handlers found at tbe__fatal_catch, where ours is still
 * installed (handlers the program installed since stay). */
void tbe__fatal_remove(void);

/* In a forked child (pthread_atfork): no thread serves requests there, and
 * no flush is under way. */
void tbe__fatal_atfork_child(void);

/* The sequence number of the last request (0 before any), the signal it
 * was made for, and the answer to requests up to `seq`. */
unsigned tbe__fatal_requests(void);
int tbe__fatal_signal(void);
void tbe__fatal_answer(unsigned seq);

#endif
