/* fsutil.c: directory creation, name checks, atomic files (see fsutil.h),
 * and the test side of the I/O seam (iofault.h; here rather than in a file
 * of its own because every build of the common code, the injection library
 * included, already links this file).  All writes below go through the
 * seam's tbe__io_* wrappers. */
#include "common/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/iofault.h"
#include "tbexport/error.h"

int tbe__mkdir_p(const char *path, mode_t mode) {
  if (!path || !*path) return TBE_EINVAL;
  size_t n = strlen(path);
  char *tmp = malloc(n + 1);
  if (!tmp) return TBE_ENOMEM;
  memcpy(tmp, path, n + 1);
  int rc = 0;
  for (size_t i = 1; i <= n && rc == 0; i++) {
    if (tmp[i] != '/' && tmp[i] != '\0') continue;
    char save = tmp[i];
    tmp[i] = '\0';
    if (mkdir(tmp, mode) != 0 && errno != EEXIST) rc = -errno;
    tmp[i] = save;
  }
  if (rc == 0) {
    struct stat st;
    if (stat(path, &st) != 0) rc = -errno;
    else if (!S_ISDIR(st.st_mode)) rc = -ENOTDIR;
  }
  free(tmp);
  return rc;
}

int tbe__mkdir_under(const char *base, const char *rel, mode_t mode) {
  if (!base || !*base || !rel || !*rel || rel[0] == '/') return TBE_EINVAL;
  int rc = tbe__mkdir_p(base, mode);
  if (rc) return rc;
  int dfd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return -errno;
  char comp[256];
  const char *p = rel;
  while (*p && rc == 0) {
    const char *e = strchr(p, '/');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if (n == 0 || n >= sizeof comp || (p[0] == '.' && (n == 1 || (n == 2 && p[1] == '.')))) {
      rc = TBE_EINVAL;
      break;
    }
    memcpy(comp, p, n);
    comp[n] = 0;
    if (mkdirat(dfd, comp, mode) != 0 && errno != EEXIST) {
      rc = -errno;
      break;
    }
    /* O_NOFOLLOW: a symlink planted here fails with ELOOP (or ENOTDIR
     * for a file) instead of taking our files elsewhere. */
    int nfd = openat(dfd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (nfd < 0) {
      rc = -errno;
      struct stat st;
      if (fstatat(dfd, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) rc = -ELOOP;
    }
    close(dfd);
    dfd = nfd;
    p = e ? e + 1 : p + n;
  }
  if (dfd >= 0) close(dfd);
  return rc;
}

int tbe__fsync_dir(const char *path) {
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -errno;
  int rc = tbe__io_fsync(fd) == 0 ? 0 : -errno;
  close(fd);
  return rc;
}

int tbe__utf8_valid(const char *s, size_t n) {
  const unsigned char *p = (const unsigned char *)s, *e = p + n;
  while (p < e) {
    unsigned c = *p;
    if (c < 0x80) {
      p++;
      continue;
    }
    int len;
    unsigned cp;
    if (c >= 0xC2 && c <= 0xDF) len = 2, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, cp = c & 0x07;
    else return 0;
    if (e - p < len) return 0;
    for (int i = 1; i < len; i++) {
      if ((p[i] & 0xC0) != 0x80) return 0;
      cp = (cp << 6) | (p[i] & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF))) return 0;
    if (cp >= 0xD800 && cp <= 0xDFFF) return 0;
    p += len;
  }
  return 1;
}

int tbe__name_check(const char *name, const char **why) {
  const char *reason = NULL;
  size_t n = name ? strlen(name) : 0;
  if (!name || n == 0) reason = "is empty";
  else if (n > TBE_NAME_MAX) reason = "is longer than 200 bytes";
  else if (name[0] == '.') reason = "starts with a dot";
  else if (strchr(name, '/')) reason = "contains '/'";
  else if (!tbe__utf8_valid(name, n)) reason = "is not valid UTF-8";
  else {
    for (size_t i = 0; i < n; i++) {
      unsigned char c = (unsigned char)name[i];
      if (c < 0x20 || c == 0x7F) {
        reason = "contains a control character";
        break;
      }
    }
  }
  if (why) *why = reason;
  return reason ? TBE_ENAME : 0;
}

void tbe__hostname(char *buf, size_t size) {
  if (size == 0) return;
  if (gethostname(buf, size) != 0 || !buf[0]) snprintf(buf, size, "localhost");
  buf[size - 1] = '\0';
  for (char *p = buf; *p; p++)
    if (*p == ':' || *p == '/' || (unsigned char)*p < 0x20) *p = '_';
  if (buf[0] == '.') buf[0] = '_';
}

int tbe__write_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n > 0) {
    ssize_t w = tbe__io_write(fd, c, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    if (w == 0) return TBE_EIO;
    c += w;
    n -= (size_t)w;
  }
  return 0;
}

int tbe__pwrite_all(int fd, const void *p, size_t n, uint64_t off) {
  const char *c = p;
  while (n > 0) {
    ssize_t w = tbe__io_pwrite(fd, c, n, (off_t)off);
    if (w < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    if (w == 0) return TBE_EIO;
    c += w;
    off += (uint64_t)w;
    n -= (size_t)w;
  }
  return 0;
}

int tbe__path_split(const tbe_allocator *a, const char *path, char **dir, const char **name) {
  const char *slash = strrchr(path, '/');
  const char *base = slash ? slash + 1 : path;
  if (!*base) return TBE_EINVAL;
  if (slash) {
    size_t dl = slash == path ? 1 : (size_t)(slash - path);
    *dir = tbe__alloc(a, dl + 1);
    if (!*dir) return TBE_ENOMEM;
    memcpy(*dir, path, dl);
    (*dir)[dl] = 0;
  } else {
    *dir = tbe__strdup(a, ".");
    if (!*dir) return TBE_ENOMEM;
  }
  *name = base;
  return 0;
}

static void afile_release(tbe__afile *f) {
  if (f->fd >= 0) close(f->fd);
  if (f->dfd >= 0) close(f->dfd);
  f->fd = f->dfd = -1;
  if (f->a) {
    tbe__free(f->a, f->dir);
    tbe__free(f->a, f->tmp_name);
    tbe__free(f->a, f->name);
  }
  f->dir = f->tmp_name = f->name = NULL;
}

int tbe__afile_open(tbe__afile *f, const tbe_allocator *a, const char *dir, const char *name,
                    int force) {
  memset(f, 0, sizeof *f);
  f->fd = f->dfd = -1;
  f->a = a;
  /* The directory is held open from here to the commit: every later step
   * works relative to this descriptor, so a directory swapped for a
   * symlink in between cannot redirect the file. */
  f->dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (f->dfd < 0) return -errno;
  struct stat st;
  if (!force && fstatat(f->dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
    afile_release(f);
    return TBE_EEXIST;
  }
  f->dir = tbe__strdup(a, dir);
  f->name = tbe__strdup(a, name);
  size_t tl = strlen(name) + 48;
  f->tmp_name = tbe__alloc(a, tl);
  if (!f->dir || !f->name || !f->tmp_name) {
    afile_release(f);
    return TBE_ENOMEM;
  }
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  unsigned salt = (unsigned)(ts.tv_nsec ^ (ts.tv_sec << 10));
  int rc = 0;
  for (int attempt = 0; attempt < 100; attempt++) {
    snprintf(f->tmp_name, tl, ".%s.tmp.%d.%u", name, (int)getpid(), salt + (unsigned)attempt);
    /* O_EXCL|O_NOFOLLOW: never opens what a planted file or symlink at the
     * temporary name points to. */
    f->fd = tbe__io_openat(f->dfd, f->tmp_name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                           0644);
    if (f->fd >= 0 || errno != EEXIST) break;
  }
  if (f->fd < 0) rc = -errno;
  if (rc) afile_release(f);
  return rc;
}

int tbe__afile_commit(tbe__afile *f, int durable, int force) {
  int rc = 0;
  if (f->fd < 0 || f->dfd < 0) return TBE_ECLOSED;
  if (durable && tbe__io_fsync(f->fd) != 0) rc = -errno;
  if (tbe__io_close(f->fd) != 0 && rc == 0) rc = -errno;
  f->fd = -1;
  int dfd = f->dfd;
  if (rc == 0) {
    if (force) {
      /* rename() replaces the target name itself, never what a planted
       * symlink points to. */
      if (tbe__io_renameat(dfd, f->tmp_name, dfd, f->name) != 0) rc = -errno;
    } else {
      /* link() fails with EEXIST instead of replacing: no window in which
       * an existing file (or a symlink planted meanwhile) could be
       * replaced or written through. */
      if (tbe__io_linkat(dfd, f->tmp_name, dfd, f->name, 0) != 0)
        rc = errno == EEXIST ? TBE_EEXIST : -errno;
    }
  }
  if (rc != 0 || !force) unlinkat(dfd, f->tmp_name, 0);
  if (rc == 0 && durable && tbe__io_fsync(dfd) != 0) {
    /* The file is in place but not durably: a failed commit must leave
     * no file under the final name, so take it back out. */
    rc = -errno;
    unlinkat(dfd, f->name, 0);
  }
  afile_release(f);
  return rc;
}

void tbe__afile_abort(tbe__afile *f) {
  /* No allocation here: the abort must work when memory has run out. */
  if (f->dfd >= 0 && f->tmp_name) unlinkat(f->dfd, f->tmp_name, 0);
  afile_release(f);
}

/* ---- the I/O seam's test side (iofault.h) ----
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
  if (plan.mode == TBE__IOF_SHORT && n && *n > 1) {
    *n /= 2;
    atomic_store(&plan.full, 1);
    atomic_fetch_add(&plan.injected, 1);
    return 0;
  }
  atomic_fetch_add(&plan.injected, 1);
  return plan.mode == TBE__IOF_EIO ? EIO : ENOSPC;
}
