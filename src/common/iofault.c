/* iofault.c: the test side of the I/O seam (iofault.h): arming a plan,
 * counting calls, and the slow path every wrapper takes while a plan is
 * armed.  Its own file, so that the seam's header and its code are one
 * module that every writer of files (fsutil.c, the event writer, the
 * collector's spool) depends on, and that depends on nothing of theirs. */
#include "common/iofault.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

/* ---- the plan ----
 *
 * One plan at a time: a kind, the 1-based index of the call that fails and
 * how.  Counters are atomics so that threads writing while a plan is armed
 * count correctly; production code only ever reads `tbe__io_armed`. */

int tbe__io_armed;

static struct {
  tbe__io_kind kind;
  long k;
  tbe__io_mode mode;
  atomic_long calls[TBE__IO_NKINDS];
  atomic_long injected;
  atomic_int full; /* after a short write: the device is full */
} plan;

void tbe__io_fault_arm(tbe__io_kind kind, long k, tbe__io_mode mode) {
  plan.kind = kind;
  plan.k = k;
  plan.mode = mode;
  for (int i = 0; i < TBE__IO_NKINDS; i++) atomic_store(&plan.calls[i], 0);
  atomic_store(&plan.injected, 0);
  atomic_store(&plan.full, 0);
  tbe__io_armed = 1;
}

long tbe__io_fault_disarm(void) {
  tbe__io_armed = 0;
  return atomic_load(&plan.injected);
}

long tbe__io_fault_calls(tbe__io_kind kind) {
  return kind < TBE__IO_NKINDS ? atomic_load(&plan.calls[kind]) : 0;
}

int tbe__io_fault_hit(tbe__io_kind kind, size_t *n) {
  long c = atomic_fetch_add(&plan.calls[kind], 1) + 1;
  if (kind == TBE__IO_WRITE && atomic_load(&plan.full)) {
    atomic_fetch_add(&plan.injected, 1);
    return ENOSPC;
  }
  if (kind != plan.kind || c != plan.k) return 0;
  if (plan.mode == TBE__IOF_KILL) kill(getpid(), SIGKILL);
  if (plan.mode == TBE__IOF_DELAY) {
    struct timespec ts = {0, 400000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
    atomic_fetch_add(&plan.injected, 1);
    return 0;
  }
  if (plan.mode == TBE__IOF_SHORT && n && *n > 1) {
    *n /= 2;
    atomic_store(&plan.full, 1);
    atomic_fetch_add(&plan.injected, 1);
    return 0;
  }
  atomic_fetch_add(&plan.injected, 1);
  return plan.mode == TBE__IOF_EIO ? EIO : ENOSPC;
}
