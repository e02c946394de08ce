/* iofault.h: the seam under every file write of the library.
 *
 * All calls that create, write, sync, close or rename an output file go
 * through the tbe__io_* wrappers below instead of calling the system
 * directly.  In production `tbe__io_armed` is 0 and each wrapper is the
 * system call behind one well-predicted branch.  A test arms a plan
 * (tbe__io_fault_arm): the k-th call of one kind then fails with ENOSPC or
 * EIO, or (short write) writes only part of its bytes, after which every
 * later write of the plan fails with ENOSPC, as a full disk does; or the
 * process is killed there (SIGKILL), or the call waits before it proceeds
 * (another process acts meanwhile).  The
 * seam is deterministic and works under sanitizers and valgrind, unlike an
 * LD_PRELOAD shim.
 *
 * Kinds: OPEN (open/openat creating a file), WRITE (write, writev and
 * pwrite), FSYNC (fsync, also of directories), CLOSE (close of a written
 * file: the descriptor is released even when it fails, as on Linux),
 * RENAME (renameat and linkat putting a file under its final name). */
/* The test side (arming, counting) lives in iofault.c. */
#ifndef TBE_COMMON_IOFAULT_H
#define TBE_COMMON_IOFAULT_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

typedef enum tbe__io_kind {
  TBE__IO_OPEN,
  TBE__IO_WRITE,
  TBE__IO_FSYNC,
  TBE__IO_CLOSE,
  TBE__IO_RENAME,
  TBE__IO_NKINDS
} tbe__io_kind;

typedef enum tbe__io_mode {
  TBE__IOF_ENOSPC, /* the call fails with ENOSPC */
  TBE__IOF_EIO,    /* the call fails with EIO */
  TBE__IOF_SHORT,  /* WRITE only: writes half (at least 1 byte less), then
                      every later write fails with ENOSPC */
  TBE__IOF_KILL,   /* the process gets SIGKILL at that call (crash tests,
                      in a forked child) */
  TBE__IOF_DELAY   /* the call waits 0.4 s, then succeeds (races made
                      certain: another process acts meanwhile) */
} tbe__io_mode;

/* Nonzero only while a test plan is armed. */
extern int tbe__io_armed;

/* Arms a plan: the k-th (1-based) call of `kind` fails as `mode` says.
 * Resets the counters.  Not thread-safe against calls in flight: arm and
 * disarm while no other thread writes. */
void tbe__io_fault_arm(tbe__io_kind kind, long k, tbe__io_mode mode);
/* Disarms; returns how many faults the plan injected (0 or 1, plus the
 * ENOSPC writes that follow a short write). */
long tbe__io_fault_disarm(void);
/* Calls of `kind` seen since the plan was armed. */
long tbe__io_fault_calls(tbe__io_kind kind);

/* The slow path: counts the call; returns 0 to proceed (with *n possibly
 * cut for a short write) or the errno value to fail with. */
int tbe__io_fault_hit(tbe__io_kind kind, size_t *n);

#define TBE__IO_UNLIKELY(x) __builtin_expect(!!(x), 0)

static inline int tbe__io_check(tbe__io_kind kind, size_t *n) {
  if (TBE__IO_UNLIKELY(tbe__io_armed)) {
    int e = tbe__io_fault_hit(kind, n);
    if (e) {
      errno = e;
      return -1;
    }
  }
  return 0;
}

static inline int tbe__io_open(const char *path, int flags, mode_t mode) {
  if (tbe__io_check(TBE__IO_OPEN, NULL)) return -1;
  return open(path, flags, mode);
}

static inline int tbe__io_openat(int dfd, const char *path, int flags, mode_t mode) {
  if (tbe__io_check(TBE__IO_OPEN, NULL)) return -1;
  return openat(dfd, path, flags, mode);
}

static inline ssize_t tbe__io_write(int fd, const void *p, size_t n) {
  if (tbe__io_check(TBE__IO_WRITE, &n)) return -1;
  return write(fd, p, n);
}

static inline ssize_t tbe__io_pwrite(int fd, const void *p, size_t n, off_t off) {
  if (tbe__io_check(TBE__IO_WRITE, &n)) return -1;
  return pwrite(fd, p, n, off);
}

/* A short write of a vector writes only from the first element. */
static inline ssize_t tbe__io_writev(int fd, const struct iovec *v, int nv) {
  if (TBE__IO_UNLIKELY(tbe__io_armed) && nv > 0) {
    size_t total = 0;
    for (int i = 0; i < nv; i++) total += v[i].iov_len;
    size_t n = total;
    if (tbe__io_check(TBE__IO_WRITE, &n)) return -1;
    if (n < total) return write(fd, v[0].iov_base, n < v[0].iov_len ? n : v[0].iov_len);
  }
  return writev(fd, v, nv);
}

static inline int tbe__io_fsync(int fd) {
  if (tbe__io_check(TBE__IO_FSYNC, NULL)) return -1;
  return fsync(fd);
}

static inline int tbe__io_close(int fd) {
  if (TBE__IO_UNLIKELY(tbe__io_armed)) {
    int e = tbe__io_fault_hit(TBE__IO_CLOSE, NULL);
    if (e) {
      close(fd); /* Linux releases the descriptor even when close fails */
      errno = e;
      return -1;
    }
  }
  return close(fd);
}

static inline int tbe__io_renameat(int od, const char *o, int nd, const char *n) {
  if (tbe__io_check(TBE__IO_RENAME, NULL)) return -1;
  return renameat(od, o, nd, n);
}

static inline int tbe__io_linkat(int od, const char *o, int nd, const char *n, int flags) {
  if (tbe__io_check(TBE__IO_RENAME, NULL)) return -1;
  return linkat(od, o, nd, n, flags);
}

#endif
