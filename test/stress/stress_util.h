/* stress_util.h: small helpers shared by the stress programs in test/stress/
 * (header-only: each program is one .c file plus this).
 *
 * A seeded generator (splitmix64) so every random schedule can be replayed
 * from the seed it prints, monotonic time, a scratch directory under
 * $TMPDIR (or /tmp) and its recursive removal, and a failure counter that
 * prints one line per problem and lets the program carry on to print its
 * figures. */
#ifndef TBE_STRESS_UTIL_H
#define TBE_STRESS_UTIL_H

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static unsigned long st_failures __attribute__((unused));

static inline void st_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void st_fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("FAIL: ", stdout);
  vprintf(fmt, ap);
  fputc('\n', stdout);
  fflush(stdout);
  va_end(ap);
  st_failures++;
}

typedef struct st_rng {
  uint64_t s;
} st_rng;

static inline uint64_t st_next(st_rng *r) {
  uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Uniform in [0, n). */
static inline uint64_t st_below(st_rng *r, uint64_t n) { return n ? st_next(r) % n : 0; }

static inline double st_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static inline void st_sleep_us(uint64_t us) {
  struct timespec t = {(time_t)(us / 1000000u), (long)(us % 1000000u) * 1000L};
  while (nanosleep(&t, &t) != 0 && errno == EINTR) {
  }
}

/* The seed: $TBE_STRESS_SEED if set, else from the clock.  Printed by the
 * caller so a failure can be replayed. */
static inline uint64_t st_seed(void) {
  const char *e = getenv("TBE_STRESS_SEED");
  if (e && *e) return strtoull(e, NULL, 0);
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return ((uint64_t)t.tv_sec * 1000000007ull) ^ (uint64_t)t.tv_nsec ^ ((uint64_t)getpid() << 32);
}

/* A positive integer from the environment, or `def`. */
static inline long st_env_long(const char *name, long def) {
  const char *e = getenv(name);
  if (!e || !*e) return def;
  char *end;
  long v = strtol(e, &end, 10);
  return (*end || v <= 0) ? def : v;
}

/* A fresh directory under $TMPDIR (or /tmp); returns a malloc'd path or
 * exits. */
static inline char *st_mkdtemp(const char *prefix) {
  const char *base = getenv("TMPDIR");
  if (!base || !*base) base = "/tmp";
  size_t n = strlen(base) + strlen(prefix) + 16;
  char *p = malloc(n);
  if (!p) exit(2);
  snprintf(p, n, "%s/%s.XXXXXX", base, prefix);
  if (!mkdtemp(p)) {
    perror(p);
    exit(2);
  }
  return p;
}

/* rm -r `path` (no symlinks followed: lstat). */
static inline void st_rmtree(const char *path) {
  struct stat st;
  if (lstat(path, &st) != 0) return;
  if (S_ISDIR(st.st_mode)) {
    DIR *d = opendir(path);
    if (d) {
      struct dirent *e;
      while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        size_t n = strlen(path) + strlen(e->d_name) + 2;
        char *c = malloc(n);
        if (!c) break;
        snprintf(c, n, "%s/%s", path, e->d_name);
        st_rmtree(c);
        free(c);
      }
      closedir(d);
    }
    rmdir(path);
  } else {
    unlink(path);
  }
}

/* Reads everything available from a pipe whose writer is gone; returns the
 * last complete little 8-byte value written (0 if none). */
static inline uint64_t st_last_ack(int fd) {
  uint8_t buf[4096];
  uint64_t last = 0;
  size_t have = 0;
  uint8_t part[8];
  for (;;) {
    ssize_t r = read(fd, buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    for (ssize_t i = 0; i < r; i++) {
      part[have++] = buf[i];
      if (have == 8) {
        memcpy(&last, part, 8);
        have = 0;
      }
    }
  }
  return last;
}

/* Writes an 8-byte acknowledgement (one write: atomic on a pipe). */
static inline void st_ack(int fd, uint64_t v) {
  ssize_t r;
  do r = write(fd, &v, sizeof v);
  while (r < 0 && errno == EINTR);
}

/* Forks a child that runs FN(CTX, write end of a pipe) and exits (FN should
 * not return; if it does the child exits with status 4).  The child reports
 * progress with st_ack on that pipe.  Returns the child's pid with the read
 * end in *ACK_FD, or -1 after st_fail. */
static inline pid_t st_spawn(void (*fn)(void *ctx, int ack_fd), void *ctx, int *ack_fd) {
  int pfd[2];
  if (pipe(pfd) != 0) {
    st_fail("pipe: %s", strerror(errno));
    return -1;
  }
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) {
    st_fail("fork: %s", strerror(errno));
    close(pfd[0]);
    close(pfd[1]);
    return -1;
  }
  if (pid == 0) {
    close(pfd[0]);
    fn(ctx, pfd[1]);
    _exit(4);
  }
  close(pfd[1]);
  *ack_fd = pfd[0];
  return pid;
}

/* SIGKILLs the child PID, reaps it, reads its last acknowledgement from
 * ACK_FD (into *ACKED) and closes ACK_FD.  Returns 1 if the kill ended it,
 * 0 if it had ended by itself (its wait status in *STATUS). */
static inline int st_kill_reap(pid_t pid, int ack_fd, uint64_t *acked, int *status) {
  kill(pid, SIGKILL);
  while (waitpid(pid, status, 0) < 0 && errno == EINTR) {
  }
  *acked = st_last_ack(ack_fd);
  close(ack_fd);
  return WIFSIGNALED(*status) && WTERMSIG(*status) == SIGKILL;
}

#endif
