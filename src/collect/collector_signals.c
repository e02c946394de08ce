/* collector_signals.c: the collector's fatal-signal handler
 * (collector_signals.h).
 *
 * Fatal signals (catch_signals).  start installs a handler for SIGSEGV,
 * SIGBUS, SIGABRT, SIGFPE, SIGILL, SIGTERM and SIGINT (Ctrl-C), except
 * where the program ignores the signal.  The handler is async-signal-safe:
 * it posts a request to the background thread and polls (nanosleep) for
 * its answer, TBE__CRASH_WAIT_MS at most.  The background thread, an
 * ordinary thread, notes the signal in the spool, forces a CUPTI flush and
 * decodes and writes every buffer that returns.  Should the signalled
 * thread hold a lock the flush needs (it died inside CUPTI, malloc or the
 * collector), the wait runs out.  Then the handler chains to the handler that
 * was installed before it (same arguments; SA_SIGINFO, SA_RESETHAND,
 * SA_NODEFER and its mask honoured), or, where that was the default,
 * restores the default and raises the signal again, so the program dies of
 * it as it would have (same exit status, same core dump).  No END item is
 * written: the spool still says the capture ended early, and holds every
 * record completed before the signal.  A program that handles the signal
 * itself (SIGTERM, say) keeps running and collecting.  A second fatal
 * signal while a flush is under way gets the default action at once.
 * Handlers the program installs after start replace ours; we never
 * re-install.  SIGSEGV runs on an alternate stack: start gives its own
 * thread a TBE__ALTSTACK one when it has none, so a stack overflow there
 * is flushed too (on other threads the kernel kills the program, as it
 * would without us).  SIGKILL cannot be caught: the periodic flush bounds
 * its loss.
 *
 * The handler's side is lock-free atomics only (S), and what it reads of
 * the collector is what tbe__fatal_catch was given (the serving thread
 * and its wake-up), written before `armed` is set. */
#include "collect/collector_signals.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define TBE__CRASH_WAIT_MS 2000   /* a forced flush takes 1-55 ms (H200) */
#define TBE__ALTSTACK (64u << 10) /* signal stack given to start's thread */

/* ---- fatal signals ---- */

/* The fatal-signal handler's side (see the essay); lock-free atomics only. */
static struct {
  atomic_int armed;      /* a background thread serves requests */
  atomic_int busy;       /* a handler is flushing */
  atomic_int sig;        /* the signal of the last request */
  atomic_uint req, done; /* request and answer sequence numbers */
} S;

/* The thread that serves requests and its wake-up (tbe__fatal_catch). */
static pthread_t served_by;
static void (*wake_bg)(void);

static const int fatal_sigs[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL, SIGTERM, SIGINT};
#define NFATAL (sizeof fatal_sigs / sizeof fatal_sigs[0])
static struct sigaction old_act[NFATAL]; /* what each was before we came */
static int have_old[NFATAL];             /* old_act[i] is valid */

static int fatal_index(int sig) {
  for (size_t i = 0; i < NFATAL; i++)
    if (fatal_sigs[i] == sig) return (int)i;
  return -1;
}

static void set_default(int sig) {
  struct sigaction d;
  memset(&d, 0, sizeof d);
  d.sa_handler = SIG_DFL;
  sigemptyset(&d.sa_mask);
  sigaction(sig, &d, NULL);
}

/* Hands the signal on as if we had never been there (async-signal-safe). */
static void chain(int sig, siginfo_t *si, void *uc) {
  int k = fatal_index(sig);
  const struct sigaction *o = k >= 0 && have_old[k] ? &old_act[k] : NULL;
  if (!o || o->sa_handler == SIG_DFL) {
    /* The default: dies of the signal on return (it is blocked here). */
    set_default(sig);
    raise(sig);
    return;
  }
  if (o->sa_handler == SIG_IGN) return;
  if (o->sa_flags & SA_RESETHAND) set_default(sig); /* as the kernel would have */
  sigset_t m = o->sa_mask;
  if (o->sa_flags & SA_NODEFER) {
    pthread_sigmask(SIG_BLOCK, &m, NULL);
    sigemptyset(&m);
    sigaddset(&m, sig);
    pthread_sigmask(SIG_UNBLOCK, &m, NULL);
  } else {
    pthread_sigmask(SIG_BLOCK, &m, NULL);
  }
  if (o->sa_flags & SA_SIGINFO)
    o->sa_sigaction(sig, si, uc);
  else
    o->sa_handler(sig);
  /* (the mask is restored when this handler returns) */
}

static void on_fatal(int sig, siginfo_t *si, void *uc) {
  int saved_errno = errno;
  int idle = 0;
  if (!atomic_compare_exchange_strong(&S.busy, &idle, 1)) {
    /* A second fatal signal while a flush is under way: the default. */
    set_default(sig);
    raise(sig);
    errno = saved_errno;
    return;
  }
  if (atomic_load(&S.armed) && !pthread_equal(pthread_self(), served_by)) {
    atomic_store(&S.sig, sig);
    unsigned seq = atomic_fetch_add(&S.req, 1) + 1;
    wake_bg();
    struct timespec t0, now, nap = {0, 1000000};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
      if ((int)(atomic_load(&S.done) - seq) >= 0) break;
      clock_gettime(CLOCK_MONOTONIC, &now);
      long long ms =
          (long long)(now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000;
      if (ms >= TBE__CRASH_WAIT_MS) break;
      nanosleep(&nap, NULL);
    }
  }
  atomic_store(&S.busy, 0);
  chain(sig, si, uc);
  errno = saved_errno;
}

static int is_ours(const struct sigaction *a) {
  return (a->sa_flags & SA_SIGINFO) && a->sa_sigaction == on_fatal;
}

/* Gives the calling thread an alternate signal stack when it has none, so
 * that SIGSEGV from a stack overflow can still run the handler.  Never
 * freed: the thread keeps it after stop (one per thread that starts a
 * session without a signal stack of its own). */
static void give_altstack(void) {
  stack_t cur;
  if (sigaltstack(NULL, &cur) != 0 || !(cur.ss_flags & SS_DISABLE)) return;
  void *p = mmap(NULL, TBE__ALTSTACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return;
  stack_t ss;
  memset(&ss, 0, sizeof ss);
  ss.ss_sp = p;
  ss.ss_size = TBE__ALTSTACK;
  if (sigaltstack(&ss, NULL) != 0) munmap(p, TBE__ALTSTACK);
}

/* Installs on_fatal for each fatal signal the program does not ignore,
 * then arms it for `thread`.  Where on_fatal is installed already (a
 * forked child starting again) the handler saved then is kept. */
void tbe__fatal_catch(pthread_t thread, void (*wake)(void)) {
  give_altstack();
  for (size_t i = 0; i < NFATAL; i++) {
    struct sigaction cur;
    if (sigaction(fatal_sigs[i], NULL, &cur) != 0) continue;
    if (is_ours(&cur)) continue;
    if (cur.sa_handler == SIG_IGN) continue; /* (sa_handler shares sa_sigaction's storage) */
    old_act[i] = cur;
    have_old[i] = 1;
    struct sigaction a;
    memset(&a, 0, sizeof a);
    a.sa_sigaction = on_fatal;
    a.sa_mask = cur.sa_mask;
    a.sa_flags = SA_SIGINFO | (cur.sa_flags & (SA_RESTART | SA_ONSTACK)) |
                 (fatal_sigs[i] == SIGSEGV ? SA_ONSTACK : 0);
    sigaction(fatal_sigs[i], &a, NULL);
  }
  served_by = thread;
  wake_bg = wake;
  atomic_store(&S.armed, 1);
}

/* Puts back what was there before, where ours is still installed. */
void tbe__fatal_remove(void) {
  for (size_t i = 0; i < NFATAL; i++) {
    struct sigaction cur;
    if (!have_old[i] || sigaction(fatal_sigs[i], NULL, &cur) != 0) continue;
    if (is_ours(&cur)) sigaction(fatal_sigs[i], &old_act[i], NULL);
    have_old[i] = 0;
  }
}

/* ---- the requests (the background thread's side) ---- */

void tbe__fatal_disarm(void) { atomic_store(&S.armed, 0); }

void tbe__fatal_atfork_child(void) {
  atomic_store(&S.armed, 0);
  atomic_store(&S.busy, 0);
}

unsigned tbe__fatal_requests(void) { return atomic_load(&S.req); }

int tbe__fatal_signal(void) { return atomic_load(&S.sig); }

void tbe__fatal_answer(unsigned seq) { atomic_store(&S.done, seq); }
