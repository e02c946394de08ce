/* fsutil.c: directories under the symlink rule, name checks, temporary
 * and atomic files, the stage that places files below the log dir, locks
 * (see fsutil.h).  All writes below go through the I/O seam's tbe__io_*
 * wrappers (iofault.h; its test side is iofault.c).
 *
 * Invariant of the temporary files: a file named TBE__TMP_PREFIX* that
 * still has a link is flock'ed by a live writer, or its writer is gone.
 * The writer creates it and takes the lock before it trusts it (a cleaner
 * may have removed it in between: then it has no link left, and the
 * writer tries another name); the cleaner removes only a file it holds
 * the lock of. */
#include "common/fsutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/iofault.h"
#include "common/map.h"
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

/* ---- directories under the symlink rule ---- */

/* `where` = base/rel[0..n) (the component concerned), cut to fit. */
static void where_at(char *where, size_t wsize, const char *base, const char *rel, size_t n) {
  if (!where || !wsize) return;
  if (n == 0) snprintf(where, wsize, "%s", base);
  else snprintf(where, wsize, "%s/%.*s", base, (int)n, rel);
}

int tbe__dir_open(const char *base, const char *rel, unsigned flags, mode_t mode, char *where,
                  size_t wsize) {
  if (where && wsize) where[0] = 0;
  if (!base || !*base || !rel || rel[0] == '/') return TBE_EINVAL;
  int rc = 0;
  if ((flags & TBE__DIR_CREATE) && (rc = tbe__mkdir_p(base, 0755))) {
    where_at(where, wsize, base, rel, 0);
    return rc;
  }
  int dfd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) {
    rc = -errno;
    where_at(where, wsize, base, rel, 0);
    return rc;
  }
  char comp[256];
  const char *p = rel;
  while (*p && rc == 0) {
    const char *e = strchr(p, '/');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    size_t upto = (size_t)(p - rel) + n; /* rel[0..upto) names this component */
    int last = !e || !e[1];
    if (n == 0 || n >= sizeof comp || (p[0] == '.' && (n == 1 || (n == 2 && p[1] == '.')))) {
      rc = TBE_EINVAL;
      where_at(where, wsize, base, rel, upto);
      break;
    }
    memcpy(comp, p, n);
    comp[n] = 0;
    int made = 0;
    if (flags & TBE__DIR_CREATE) {
      if (mkdirat(dfd, comp, mode) == 0) made = 1;
      else if (errno != EEXIST) rc = -errno;
    }
    struct stat st;
    if (!rc && !made && last && (flags & TBE__DIR_EXCL))
      rc = fstatat(dfd, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode) ? -ELOOP
                                                                                   : -EEXIST;
    int nfd = -1;
    if (!rc) {
      /* O_NOFOLLOW: a symlink planted here fails (ELOOP, or ENOTDIR with
       * O_DIRECTORY) instead of taking our files elsewhere. */
      nfd = openat(dfd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (nfd < 0) {
        rc = -errno;
        if (fstatat(dfd, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) rc = -ELOOP;
      }
    }
    if (rc) {
      where_at(where, wsize, base, rel, upto);
      break;
    }
    close(dfd);
    dfd = nfd;
    p = e ? e + 1 : p + n;
  }
  if (rc) {
    close(dfd);
    return rc;
  }
  return dfd;
}

int tbe__mkdir_under(const char *base, const char *rel, mode_t mode) {
  if (!rel || !*rel) return TBE_EINVAL;
  int fd = tbe__dir_open(base, rel, TBE__DIR_CREATE, mode, NULL, 0);
  if (fd < 0) return fd;
  close(fd);
  return 0;
}

int tbe__fsync_dir(const char *path) {
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -errno;
  int rc = tbe__io_fsync(fd) == 0 ? 0 : -errno;
  close(fd);
  return rc;
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

int tbe__pread_all(int fd, void *p, size_t n, uint64_t off) {
  char *c = p;
  while (n > 0) {
    ssize_t r = pread(fd, c, n, (off_t)off);
    if (r < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    if (r == 0) return TBE_ETRUNCATED;
    c += r;
    off += (uint64_t)r;
    n -= (size_t)r;
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

/* ---- reading under the same rules ---- */

int tbe__read_open(const char *base, const char *rel, struct stat *st, char *where, size_t wsize) {
  if (where && wsize) where[0] = 0;
  if (!base || !*base || !st) return TBE_EINVAL;
  int fd, rc = 0;
  size_t rl = rel ? strlen(rel) : 0;
  if (rl == 0) {
    fd = open(base, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) rc = -errno;
  } else {
    const char *slash = strrchr(rel, '/');
    const char *name = slash ? slash + 1 : rel;
    size_t dl = slash ? (size_t)(slash - rel) : 0;
    char dir[4096];
    if (dl >= sizeof dir || !*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
      where_at(where, wsize, base, rel, rl);
      return TBE_EINVAL;
    }
    memcpy(dir, rel, dl);
    dir[dl] = 0;
    int dfd = tbe__dir_open(base, dir, 0, 0, where, wsize);
    if (dfd < 0) return dfd;
    /* O_NOFOLLOW: a symlink at the name is refused (ELOOP), never read
     * through; O_NONBLOCK: a FIFO there does not block the open. */
    fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
      struct stat ls;
      rc = -errno;
      if (fstatat(dfd, name, &ls, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(ls.st_mode)) rc = -ELOOP;
    }
    close(dfd);
  }
  if (!rc) {
    if (fstat(fd, st) != 0) rc = -errno;
    else if (S_ISDIR(st->st_mode)) rc = -EISDIR;
    else if (!S_ISREG(st->st_mode)) rc = TBE_ENOTREG;
    if (rc) close(fd);
  }
  if (rc) {
    where_at(where, wsize, base, rel ? rel : "", rl);
    return rc;
  }
  return fd;
}

int tbe__read_file(const tbe_allocator *a, const char *base, const char *rel, uint64_t max,
                   void **buf, size_t *len, uint64_t *size, char *where, size_t wsize) {
  *buf = NULL;
  *len = 0;
  if (size) *size = 0;
  struct stat st;
  int fd = tbe__read_open(base, rel, &st, where, wsize);
  if (fd < 0) return fd;
  uint64_t n = (uint64_t)st.st_size;
  if (size) *size = n;
  int rc = 0;
  unsigned char *b = NULL;
  if (n > max || n >= SIZE_MAX) rc = TBE_ETOOBIG;
  else if (!(b = tbe__alloc(a, n ? (size_t)n : 1))) rc = TBE_ENOMEM;
  size_t got = 0;
  while (!rc && got < n) {
    ssize_t r = read(fd, b + got, (size_t)n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) rc = -errno;
    else if (r == 0) break; /* shrank since the fstat: what it had */
    else got += (size_t)r;
  }
  close(fd);
  if (rc) {
    tbe__free(a, b);
    if (rc != TBE_ENOMEM) where_at(where, wsize, base, rel ? rel : "", rel ? strlen(rel) : 0);
    return rc;
  }
  *buf = b;
  *len = got;
  return 0;
}

/* ---- temporary files ---- */

static atomic_uint tmp_counter;

/* A fresh temporary name in `name` (TBE__TMP_NAME_MAX bytes). */
static void tmp_name(char *name) {
  static atomic_uint salt;
  unsigned z = atomic_load(&salt);
  if (!z) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    z = (unsigned)(ts.tv_nsec ^ (ts.tv_sec << 10)) | 1u;
    atomic_store(&salt, z);
  }
  unsigned n = atomic_fetch_add(&tmp_counter, 1u);
  snprintf(name, TBE__TMP_NAME_MAX, TBE__TMP_PREFIX "%ld-%08x-%u", (long)getpid(), z, n);
}

static int lock_wait(int fd, int op) {
  while (flock(fd, op) != 0)
    if (errno != EINTR) return -errno;
  return 0;
}

/* Creates a temporary file in `dfd`, locked (see the file's invariant):
 * its name in `name`, the descriptor to write in *fd and a duplicate that
 * holds the lock in *lockfd.  Returns 0 or a negative code. */
static int tmp_create(int dfd, char *name, int *fd, int *lockfd) {
  *fd = *lockfd = -1;
  for (int attempt = 0; attempt < 100; attempt++) {
    tmp_name(name);
    /* O_EXCL|O_NOFOLLOW: never opens what a planted file or symlink at the
     * temporary name points to.  O_RDWR: a writer may read back what it
     * wrote (the export keys a trace by its head and tail). */
    int f = tbe__io_openat(dfd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (f < 0) {
      if (errno == EEXIST) continue;
      return -errno;
    }
    int rc = lock_wait(f, LOCK_EX);
    struct stat st;
    if (!rc && fstat(f, &st) != 0) rc = -errno;
    if (!rc && st.st_nlink == 0) {
      /* A cleaner took it between our open and our lock: try again. */
      close(f);
      continue;
    }
    int l = rc ? -1 : fcntl(f, F_DUPFD_CLOEXEC, 0);
    if (!rc && l < 0) rc = -errno;
    if (rc) {
      unlinkat(dfd, name, 0);
      close(f);
      return rc;
    }
    *fd = f;
    *lockfd = l;
    return 0;
  }
  return TBE_EEXIST;
}

size_t tbe__dir_clean(int dfd) {
  int d2 = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (d2 < 0) return 0;
  DIR *d = fdopendir(d2);
  if (!d) {
    close(d2);
    return 0;
  }
  size_t removed = 0, pl = strlen(TBE__TMP_PREFIX);
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    const char *n = de->d_name;
    if (strncmp(n, TBE__TMP_PREFIX, pl) != 0) continue;
    struct stat st, st2;
    if (fstatat(dfd, n, &st, AT_SYMLINK_NOFOLLOW) != 0 || S_ISDIR(st.st_mode)) continue;
    if (!S_ISREG(st.st_mode)) {
      if (unlinkat(dfd, n, 0) == 0) removed++;
      continue;
    }
    /* Read-write: on NFS flock is emulated by a POSIX write lock. */
    int fd = openat(dfd, n, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) continue;
    if (flock(fd, LOCK_EX | LOCK_NB) == 0 && fstat(fd, &st2) == 0 &&
        fstatat(dfd, n, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_ino == st2.st_ino &&
        st.st_dev == st2.st_dev && unlinkat(dfd, n, 0) == 0)
      removed++;
    close(fd); /* releases the lock after the unlink: see the invariant */
  }
  closedir(d);
  return removed;
}

/* ---- atomic files ---- */

static void afile_release(tbe__afile *f) {
  if (f->fd >= 0) close(f->fd);
  if (f->lockfd >= 0) close(f->lockfd);
  if (f->dfd >= 0) close(f->dfd);
  f->fd = f->lockfd = f->dfd = -1;
  if (f->a) {
    tbe__free(f->a, f->dir);
    tbe__free(f->a, f->name);
  }
  f->dir = f->name = NULL;
  f->tmp_name[0] = 0;
}

int tbe__afile_openat(tbe__afile *f, const tbe_allocator *a, int dfd, const char *dir,
                      const char *name, int force) {
  memset(f, 0, sizeof *f);
  f->fd = f->lockfd = f->dfd = -1;
  f->a = a;
  /* The directory is held from here to the commit: every later step works
   * relative to this descriptor, so a directory swapped for a symlink in
   * between cannot redirect the file. */
  f->dfd = fcntl(dfd, F_DUPFD_CLOEXEC, 0);
  if (f->dfd < 0) return -errno;
  struct stat st;
  if (!force && fstatat(f->dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
    afile_release(f);
    return TBE_EEXIST;
  }
  f->dir = dir ? tbe__strdup(a, dir) : NULL;
  f->name = tbe__strdup(a, name);
  if ((dir && !f->dir) || !f->name) {
    afile_release(f);
    return TBE_ENOMEM;
  }
  int rc = tmp_create(f->dfd, f->tmp_name, &f->fd, &f->lockfd);
  if (rc) afile_release(f);
  return rc;
}

int tbe__afile_open(tbe__afile *f, const tbe_allocator *a, const char *dir, const char *name,
                    int force) {
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) {
    memset(f, 0, sizeof *f);
    f->fd = f->lockfd = f->dfd = -1;
    return -errno;
  }
  int rc = tbe__afile_openat(f, a, dfd, dir, name, force);
  close(dfd);
  return rc;
}

int tbe__afile_commit(tbe__afile *f, int durable, int force) {
  int rc = 0;
  if (f->fd < 0 || f->dfd < 0) return TBE_ECLOSED;
  if (durable && tbe__io_fsync(f->fd) != 0) rc = -errno;
  /* Closed before the rename (NFS reports write-back errors here); the
   * lock stays on lockfd until the file is in place. */
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
  if (f->dfd >= 0 && f->tmp_name[0]) unlinkat(f->dfd, f->tmp_name, 0);
  afile_release(f);
}

/* ---- the stage ---- */

void tbe__stage_init(tbe__stage *s, const tbe_allocator *a, const char *base) {
  memset(s, 0, sizeof *s);
  s->a = a;
  s->base = base;
}

/* s->where = base/rel/name (name may be NULL). */
static void stage_where(tbe__stage *s, size_t dir, const char *name) {
  const char *rel = s->dirs[dir].rel;
  snprintf(s->where, sizeof s->where, "%s%s%s%s%s", s->base, *rel ? "/" : "", rel,
           name ? "/" : "", name ? name : "");
}

/* The index of base/rel among the stage's directories, opened on first
 * use.  Returns 0 or a negative code. */
static int stage_dir_index(tbe__stage *s, const char *rel, int create, size_t *idx) {
  for (size_t i = 0; i < s->ndirs; i++)
    if (strcmp(s->dirs[i].rel, rel) == 0) {
      *idx = i;
      return 0;
    }
  if (tbe__grow(s->a, (void **)&s->dirs, &s->capdirs, s->ndirs + 1, sizeof *s->dirs))
    return TBE_ENOMEM;
  char *copy = tbe__strdup(s->a, rel);
  if (!copy) return TBE_ENOMEM;
  int fd = tbe__dir_open(s->base, rel, create ? TBE__DIR_CREATE : 0, 0755, s->where,
                         sizeof s->where);
  if (fd < 0) {
    tbe__free(s->a, copy);
    return fd;
  }
  /* "The next write into that folder": what dead writers left goes now. */
  tbe__dir_clean(fd);
  s->dirs[s->ndirs].rel = copy;
  s->dirs[s->ndirs].fd = fd;
  *idx = s->ndirs++;
  return 0;
}

int tbe__stage_dir(tbe__stage *s, const char *rel, int create) {
  size_t i;
  int rc = stage_dir_index(s, rel, create, &i);
  return rc ? rc : s->dirs[i].fd;
}

/* A new entry for base/rel/name; returns it in *out or a negative code. */
static int stage_entry(tbe__stage *s, const char *rel, const char *name, int create,
                       tbe__stage_entry **out) {
  size_t di;
  int rc = stage_dir_index(s, rel, create, &di);
  if (rc) return rc;
  if (tbe__grow(s->a, (void **)&s->e, &s->cap, s->n + 1, sizeof *s->e)) return TBE_ENOMEM;
  tbe__stage_entry *e = &s->e[s->n];
  memset(e, 0, sizeof *e);
  e->dir = di;
  e->fd = e->lockfd = e->oldfd = -1;
  e->name = tbe__strdup(s->a, name);
  if (!e->name) return TBE_ENOMEM;
  *out = e;
  return 0;
}

int tbe__stage_file(tbe__stage *s, const char *rel, const char *name, int *fd) {
  s->where[0] = 0;
  if (!name || !*name || strchr(name, '/')) return TBE_EINVAL;
  tbe__stage_entry *e;
  int rc = stage_entry(s, rel, name, 1, &e);
  if (rc) return rc;
  rc = tmp_create(s->dirs[e->dir].fd, e->tmp, &e->fd, &e->lockfd);
  if (rc) {
    stage_where(s, e->dir, NULL);
    tbe__free(s->a, e->name);
    return rc;
  }
  s->n++;
  *fd = e->fd;
  return 0;
}

int tbe__stage_link(tbe__stage *s, int src_fd, const char *rel, const char *name,
                    const char *symlink_target) {
  s->where[0] = 0;
  if (!name || !*name || strchr(name, '/')) return TBE_EINVAL;
  const tbe__stage_entry *src = NULL;
  for (size_t i = 0; i < s->n && !src; i++)
    if (!s->e[i].remove && s->e[i].fd == src_fd && s->e[i].tmp[0]) src = &s->e[i];
  if (!src) return TBE_EINVAL;
  size_t src_dir = src->dir;
  char src_tmp[TBE__TMP_NAME_MAX];
  memcpy(src_tmp, src->tmp, sizeof src_tmp);
  int src_lock = src->lockfd;
  tbe__stage_entry *e; /* may move s->e: src is not used below */
  int rc = stage_entry(s, rel, name, 1, &e);
  if (rc) return rc;
  int sdfd = s->dirs[src_dir].fd, dfd = s->dirs[e->dir].fd;
  rc = TBE_EEXIST;
  int made = 0;
  for (int attempt = 0; attempt < 100 && rc == TBE_EEXIST; attempt++) {
    tmp_name(e->tmp);
    if (tbe__io_linkat(sdfd, src_tmp, dfd, e->tmp, 0) == 0) rc = 0;
    else if (errno == EEXIST) continue;
    else if (errno != EPERM && errno != EOPNOTSUPP && errno != EXDEV) rc = -errno;
    /* No hard links here: a symbolic link, or the error. */
    else if (!symlink_target) rc = -errno;
    else rc = symlinkat(symlink_target, dfd, e->tmp) == 0 ? 0 : errno == EEXIST ? TBE_EEXIST : -errno;
    made = rc == 0;
  }
  /* The entry shares the source's file: its own descriptors are
   * duplicates, so committing it syncs and closes nothing the source
   * still needs, and the source's lock keeps cleaners off the link. */
  if (!rc) {
    e->fd = fcntl(src_fd, F_DUPFD_CLOEXEC, 0);
    e->lockfd = src_lock >= 0 ? fcntl(src_lock, F_DUPFD_CLOEXEC, 0) : -1;
    if (e->fd < 0 || (src_lock >= 0 && e->lockfd < 0)) rc = -errno;
  }
  if (rc) {
    if (e->fd >= 0) close(e->fd);
    if (e->lockfd >= 0) close(e->lockfd);
    if (made) unlinkat(dfd, e->tmp, 0);
    stage_where(s, e->dir, name);
    tbe__free(s->a, e->name);
    return rc;
  }
  s->n++;
  return 0;
}

int tbe__stage_remove(tbe__stage *s, const char *rel, const char *name) {
  s->where[0] = 0;
  if (!name || !*name || strchr(name, '/')) return TBE_EINVAL;
  tbe__stage_entry *e;
  int rc = stage_entry(s, rel, name, 0, &e);
  if (rc == -ENOENT) {
    s->where[0] = 0;
    return 0; /* no directory: nothing to remove */
  }
  if (rc) return rc;
  e->remove = 1;
  s->n++;
  return 0;
}

/* Step 2: gives the file at e's final name a second, hidden name (a hard
 * link; a rename where the file system has no hard links), flock'ed like
 * a temporary file.  0 when there is none.  Returns 0 or a negative code. */
static int stage_hide_old(tbe__stage *s, tbe__stage_entry *e) {
  int dfd = s->dirs[e->dir].fd;
  struct stat st;
  if (fstatat(dfd, e->name, &st, AT_SYMLINK_NOFOLLOW) != 0) return errno == ENOENT ? 0 : -errno;
  if (S_ISDIR(st.st_mode)) return -EISDIR;
  if (S_ISREG(st.st_mode)) {
    /* The lock keeps cleaners off the hidden name (best effort: a file we
     * cannot open or lock is still hidden and put back). */
    int fd = openat(dfd, e->name, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) fd = openat(dfd, e->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) != 0) { /* unlocked: still hidden */ }
    e->oldfd = fd;
  }
  for (int attempt = 0; attempt < 100; attempt++) {
    char hidden[TBE__TMP_NAME_MAX];
    tmp_name(hidden);
    if (tbe__io_linkat(dfd, e->name, dfd, hidden, 0) == 0) {
      memcpy(e->old, hidden, sizeof hidden);
      return 0;
    }
    if (errno == EEXIST) continue;
    if (errno != EPERM && errno != EOPNOTSUPP) return -errno;
    /* No hard links here: the old file leaves its name for the commit. */
    if (tbe__io_renameat(dfd, e->name, dfd, hidden) != 0) return -errno;
    memcpy(e->old, hidden, sizeof hidden);
    return 0;
  }
  return TBE_EEXIST;
}

/* Step 3 for one entry.  Returns 0 or a negative code. */
static int stage_switch(tbe__stage *s, tbe__stage_entry *e, int force) {
  int dfd = s->dirs[e->dir].fd;
  if (e->remove) {
    if (e->old[0] && unlinkat(dfd, e->name, 0) != 0 && errno != ENOENT) return -errno;
    return 0;
  }
  if (force) {
    /* rename() replaces the final name itself, never what a planted
     * symlink points to. */
    if (tbe__io_renameat(dfd, e->tmp, dfd, e->name) != 0) return -errno;
  } else {
    /* link() fails on an existing name (or a symlink planted meanwhile). */
    if (tbe__io_linkat(dfd, e->tmp, dfd, e->name, 0) != 0)
      return errno == EEXIST ? TBE_EEXIST : -errno;
    unlinkat(dfd, e->tmp, 0);
  }
  e->tmp[0] = 0;
  return 0;
}

/* Releases every entry: open files closed, temporary and hidden names
 * removed.  No allocation. */
static void stage_release(tbe__stage *s) {
  for (size_t i = 0; i < s->n; i++) {
    tbe__stage_entry *e = &s->e[i];
    int dfd = s->dirs[e->dir].fd;
    if (e->fd >= 0) close(e->fd);
    if (e->tmp[0]) unlinkat(dfd, e->tmp, 0);
    if (e->old[0]) unlinkat(dfd, e->old, 0);
    if (e->lockfd >= 0) close(e->lockfd);
    if (e->oldfd >= 0) close(e->oldfd);
    tbe__free(s->a, e->name);
  }
  s->n = 0;
}

int tbe__stage_commit(tbe__stage *s, int force, int durable) {
  int rc = 0;
  size_t at = 0; /* the entry an error is about */
  int replacing = 0;
  struct stat st;
  s->where[0] = 0;
  for (size_t i = 0; i < s->n && !rc; i++) {
    tbe__stage_entry *e = &s->e[i];
    at = i;
    if (fstatat(s->dirs[e->dir].fd, e->name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
      if (!e->remove && !force) rc = TBE_EEXIST;
      replacing = 1;
    } else if (errno != ENOENT) {
      rc = -errno;
    }
  }
  /* 1. complete: synced when anything old is at stake */
  for (size_t i = 0; i < s->n && !rc; i++) {
    tbe__stage_entry *e = &s->e[i];
    if (e->remove) continue;
    at = i;
    if ((durable || replacing) && tbe__io_fsync(e->fd) != 0) rc = -errno;
    if (tbe__io_close(e->fd) != 0 && !rc) rc = -errno;
    e->fd = -1;
  }
  /* 2. the old files get hidden names */
  for (size_t i = 0; i < s->n && !rc; i++) {
    at = i;
    rc = stage_hide_old(s, &s->e[i]);
  }
  /* 3. switch */
  for (size_t i = 0; i < s->n && !rc; i++) {
    at = i;
    rc = stage_switch(s, &s->e[i], force);
    if (!rc) s->e[i].done = 1;
  }
  /* 4. durable */
  int dir_failed = 0;
  for (size_t d = 0; d < s->ndirs && !rc && durable; d++)
    if (tbe__io_fsync(s->dirs[d].fd) != 0) {
      rc = -errno;
      dir_failed = 1;
      snprintf(s->where, sizeof s->where, "%s%s%s", s->base, *s->dirs[d].rel ? "/" : "",
               s->dirs[d].rel);
    }
  if (rc && s->n && !dir_failed) stage_where(s, s->e[at].dir, s->e[at].name);
  /* Put back what step 3 changed, from the hidden names. */
  for (size_t i = s->n; rc && i-- > 0;) {
    tbe__stage_entry *e = &s->e[i];
    if (!e->done) continue;
    int dfd = s->dirs[e->dir].fd;
    if (e->old[0]) {
      /* Put back, or (a second failure) left under its hidden name rather
       * than removed: not ours to lose. */
      renameat(dfd, e->old, dfd, e->name);
      e->old[0] = 0;
    } else if (!e->remove) {
      unlinkat(dfd, e->name, 0);
    }
  }
  /* Step 2 alone (a failure before any switch) leaves hard links only;
   * a hidden name made by rename must go back too. */
  for (size_t i = 0; rc && i < s->n; i++) {
    tbe__stage_entry *e = &s->e[i];
    int dfd = s->dirs[e->dir].fd;
    if (!e->done && e->old[0] && fstatat(dfd, e->name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      renameat(dfd, e->old, dfd, e->name);
      e->old[0] = 0;
    }
  }
  /* 5. */
  stage_release(s);
  return rc;
}

void tbe__stage_abort(tbe__stage *s) { stage_release(s); }

void tbe__stage_drop_last(tbe__stage *s) {
  if (s->n == 0) return;
  tbe__stage_entry *e = &s->e[s->n - 1];
  int dfd = s->dirs[e->dir].fd;
  if (e->fd >= 0) close(e->fd);
  if (e->tmp[0]) unlinkat(dfd, e->tmp, 0);
  if (e->lockfd >= 0) close(e->lockfd);
  tbe__free(s->a, e->name);
  s->n--;
}

void tbe__stage_free(tbe__stage *s) {
  stage_release(s);
  for (size_t i = 0; i < s->ndirs; i++) {
    close(s->dirs[i].fd);
    tbe__free(s->a, s->dirs[i].rel);
  }
  tbe__free(s->a, s->dirs);
  tbe__free(s->a, s->e);
  s->dirs = NULL;
  s->e = NULL;
  s->ndirs = s->capdirs = s->cap = 0;
}

/* ---- locks ---- */

int tbe__lock_take(tbe__lock *l, const char *base, const char *key, char *where, size_t wsize) {
  l->fd = -1;
  l->dfd = tbe__dir_open(base, "", TBE__DIR_CREATE, 0755, where, wsize);
  if (l->dfd < 0) return l->dfd;
  uint32_t h = tbe__fnv1a32(key, strlen(key), TBE__FNV32_BASIS); /* picks the byte */
  int rc = 0;
  for (int attempt = 0; attempt < 1000; attempt++) {
    /* O_NOFOLLOW with O_CREAT: a planted symlink (even a dangling one) is
     * refused, never created through; O_NONBLOCK: a planted FIFO does not
     * block the open. */
    int fd = openat(l->dfd, TBE__LOCK_FILE,
                    O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0644);
    struct stat st, st2;
    if (fd < 0) {
      rc = -errno;
      if (fstatat(l->dfd, TBE__LOCK_FILE, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
        rc = -ELOOP;
      break;
    }
    if (fstat(fd, &st) != 0) rc = -errno;
    else if (!S_ISREG(st.st_mode)) rc = S_ISDIR(st.st_mode) ? -EISDIR : TBE_EINVAL;
    if (rc) {
      close(fd);
      break;
    }
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    fl.l_start = (off_t)(h & 0x3fffffffu);
    fl.l_len = 1;
    int locked = 1;
    while (fcntl(fd, F_OFD_SETLKW, &fl) != 0) {
      if (errno == EINTR) continue;
      if (errno != ENOLCK && errno != EOPNOTSUPP && errno != EINVAL) rc = -errno;
      locked = 0; /* no locks on this file system: go on unlocked */
      break;
    }
    if (rc) {
      close(fd);
      break;
    }
    /* Locked a file the last one out has removed meanwhile: again. */
    if (locked && (fstatat(l->dfd, TBE__LOCK_FILE, &st2, AT_SYMLINK_NOFOLLOW) != 0 ||
                   st2.st_ino != st.st_ino || st2.st_dev != st.st_dev)) {
      close(fd);
      continue;
    }
    l->fd = fd;
    return 0;
  }
  if (!rc) rc = TBE_EBUSY;
  if (where && wsize) snprintf(where, wsize, "%s/%s", base, TBE__LOCK_FILE);
  close(l->dfd);
  l->dfd = -1;
  return rc;
}

void tbe__lock_release(tbe__lock *l) {
  if (l->fd >= 0) {
    /* The whole file lockable: no one else holds or waits on a byte of
     * it (a waiter that opened it already finds it gone and retries). */
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    struct stat st, st2;
    if (fcntl(l->fd, F_OFD_SETLK, &fl) == 0 && fstat(l->fd, &st) == 0 &&
        fstatat(l->dfd, TBE__LOCK_FILE, &st2, AT_SYMLINK_NOFOLLOW) == 0 &&
        st.st_ino == st2.st_ino && st.st_dev == st2.st_dev)
      unlinkat(l->dfd, TBE__LOCK_FILE, 0);
    close(l->fd);
  }
  if (l->dfd >= 0) close(l->dfd);
  l->fd = l->dfd = -1;
}
