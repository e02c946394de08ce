/* analysis_files.c: persisted analyses for summary and diff (the contract
 * is in analysis_files.h).
 *
 * A persisted analysis is used only when it stands for exactly what the
 * trace would give: written by this tbexport (format version and
 * producer), and naming the very file the trace path would import with
 * that file's current size and mtime (ns; or the same whole second when
 * a copy kept times in seconds only: tar, cp -p).  Then the report is the same
 * bytes either way (test/cli/test_persist.sh checks it for every format).
 * A rewrite of a trace within one mtime tick that keeps its size is not
 * seen (as make and git's index do not); tbexport's own rewrites replace
 * the analysis with the trace.
 *
 * Threads: the hosts of a run are read by up to `threads` workers taking
 * the next host from a shared counter; each host's slot is written by the
 * one worker that took it, nothing else is shared.
 *
 * The cache (raw FILE arguments) is best effort: created 0700, entries
 * written to a temporary name and renamed, trimmed to its bounds after each
 * store (oldest mtime first; a hit refreshes the entry's mtime). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/analysis_files.h"

/* ---- reading one file ---- */

/* Reads a whole regular file.  Returns 0 (*buf malloc'd) or -errno. */
static int read_all(const char *path, unsigned char **buf, size_t *len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return -errno;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    int e = S_ISREG(st.st_mode) ? -errno : -EINVAL;
    close(fd);
    return e;
  }
  size_t n = (size_t)st.st_size, got = 0;
  unsigned char *b = malloc(n ? n : 1);
  if (!b) {
    close(fd);
    return -ENOMEM;
  }
  while (got < n) {
    ssize_t r = read(fd, b + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
  close(fd);
  *buf = b;
  *len = got;
  return 0;
}

static int64_t mtime_ns(const struct stat *st) {
  return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

static void our_producer(char *buf, size_t size) {
  snprintf(buf, size, "tbexport %s", tbe_version_string());
}

/* Whether a trace whose size matched is the one the analysis at `path`
 * recorded with mtime `rec` (ns): the same mtime, or one a copy that keeps
 * times at a coarser resolution gives (tar, cp -p and rsync -a to a file
 * system of whole seconds: the same second) on a trace no newer than the
 * analysis file itself, which tbexport writes after the traces. */
static int fresh(int64_t rec, const struct stat *st, const char *path) {
  int64_t now = mtime_ns(st);
  if (rec == now) return 1;
  struct stat ast;
  if (stat(path, &ast) != 0 || now > mtime_ns(&ast)) return 0;
  return now % 1000000000 == 0 && rec / 1000000000 == now / 1000000000;
}

/* Loads the analysis at `path` and checks that it describes the file
 * `name` as `st` says it is now.  Returns the analysis, or NULL with `why`
 * set ("" when there is no such file). */
static tbe_analysis *load_checked(const char *path, const char *name, const struct stat *st,
                                  char *why, size_t size) {
  why[0] = 0;
  unsigned char *buf = NULL;
  size_t len = 0;
  int rc = read_all(path, &buf, &len);
  if (rc == -ENOENT) return NULL;
  if (rc) {
    snprintf(why, size, "%s cannot be read (%s)", path, strerror(-rc));
    return NULL;
  }
  tbe_analysis *an = NULL;
  tbe_analysis_stamp stamp;
  tbe_analysis_load_error err;
  rc = tbe_analysis_load(&an, &stamp, buf, len, NULL, &err);
  free(buf);
  if (rc == TBE_EFORMAT) {
    snprintf(why, size, "%s is from another version (format %u, this tbexport reads %d)", path,
             stamp.version, TBE_ANALYSIS_FORMAT_VERSION);
    return NULL;
  }
  if (rc == TBE_ECORRUPT && err.offset != UINT64_MAX) {
    snprintf(why, size, "%s is corrupt at byte %llu: %s", path, (unsigned long long)err.offset,
             err.message);
    return NULL;
  }
  if (rc) {
    snprintf(why, size, "%s is corrupt: %s", path, err.message[0] ? err.message : tbe_strerror(rc));
    return NULL;
  }
  char mine[64];
  our_producer(mine, sizeof mine);
  if (strcmp(stamp.producer, mine) != 0) {
    snprintf(why, size, "%s is from another version (%s, this is %s)", path, stamp.producer, mine);
    tbe_analysis_free(an);
    return NULL;
  }
  for (size_t i = 0; i < stamp.nsources; i++) {
    const tbe_analysis_source *s = &stamp.sources[i];
    if (strcmp(s->name, name) != 0) continue;
    if (s->size == (uint64_t)st->st_size && fresh(s->mtime_ns, st, path)) return an;
    snprintf(why, size, "%s is older than its trace %s", path, name);
    tbe_analysis_free(an);
    return NULL;
  }
  snprintf(why, size, "%s does not describe %s", path, name);
  tbe_analysis_free(an);
  return NULL;
}

/* ---- the hosts of a run ---- */

static void read_host(tbe_cli_host_analysis *h) {
  char path[PATH_MAX], trace[PATH_MAX];
  h->an = NULL;
  h->why[0] = 0;
  if ((size_t)snprintf(path, sizeof path, "%s/%s%s", h->dir, h->stem, TBE_ANALYSIS_SUFFIX) >=
          sizeof path ||
      (size_t)snprintf(trace, sizeof trace, "%s/%s", h->dir, h->trace) >= sizeof trace)
    return;
  struct stat st;
  if (stat(trace, &st) != 0) return; /* the import will say what is wrong */
  h->an = load_checked(path, h->trace, &st, h->why, sizeof h->why);
}

typedef struct pool {
  tbe_cli_host_analysis *h;
  size_t n;
  atomic_size_t next;
} pool;

static void *worker(void *arg) {
  pool *p = arg;
  for (size_t i; (i = atomic_fetch_add(&p->next, 1)) < p->n;) read_host(&p->h[i]);
  return NULL;
}

void tbe_cli_read_analyses(tbe_cli_host_analysis *h, size_t n, unsigned threads) {
  pool p = {h, n, 0};
  pthread_t tid[16];
  unsigned nt = threads > 16 ? 16 : threads, started = 0;
  if (nt > n) nt = (unsigned)n;
  for (unsigned i = 1; i < nt; i++)
    if (pthread_create(&tid[started], NULL, worker, &p) == 0) started++;
  worker(&p); /* this thread works too, so a refused thread costs nothing */
  for (unsigned i = 0; i < started; i++) pthread_join(tid[i], NULL);
}

/* ---- the cache of raw files ---- */

static long long env_ll(const char *name, long long dflt) {
  const char *s = getenv(name);
  if (!s || !*s) return dflt;
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  return errno || *end || v < 0 ? dflt : v;
}

/* The cache folder (made as needed).  Returns 0 or -1. */
static int cache_dir(char *buf, size_t size, int create) {
  const char *d = getenv("TBEXPORT_CACHE_DIR"), *x = getenv("XDG_CACHE_HOME"),
             *home = getenv("HOME");
  int n;
  if (d && *d) n = snprintf(buf, size, "%s", d);
  else if (x && *x == '/') n = snprintf(buf, size, "%s/tbexport", x);
  else if (home && *home) n = snprintf(buf, size, "%s/.cache/tbexport", home);
  else return -1;
  if (n < 0 || (size_t)n >= size) return -1;
  if (!create) return 0;
  /* mkdir -p, each level 0700 when made */
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    if (mkdir(buf, 0700) != 0 && errno != EEXIST) return -1;
    *p = '/';
  }
  if (mkdir(buf, 0700) != 0 && errno != EEXIST) return -1;
  return 0;
}

/* The entry of a file: <cache>/<hash of real path, device, inode>.analysis.pb,
 * and the file's base name.  Returns 0, or -1 for a file not cached. */
static int cache_entry(const char *path, int create, struct stat *st, char *entry, size_t esize,
                       char *base, size_t bsize) {
  char real[PATH_MAX];
  if (strcmp(path, "-") == 0 || !realpath(path, real) || stat(real, st) != 0 ||
      !S_ISREG(st->st_mode))
    return -1;
  if ((long long)st->st_size < env_ll("TBEXPORT_CACHE_MIN_BYTES", TBE_CLI_CACHE_MIN_BYTES))
    return -1;
  uint64_t h = 1469598103934665603ULL; /* FNV-1a, 64 bits */
  char key[PATH_MAX + 64];
  int kn = snprintf(key, sizeof key, "%s%c%llu%c%llu", real, 0, (unsigned long long)st->st_dev, 0,
                    (unsigned long long)st->st_ino);
  for (int i = 0; i < kn && i < (int)sizeof key; i++) {
    h ^= (unsigned char)key[i];
    h *= 1099511628211ULL;
  }
  char dir[PATH_MAX];
  if (cache_dir(dir, sizeof dir, create)) return -1;
  if ((size_t)snprintf(entry, esize, "%s/%016llx%s", dir, (unsigned long long)h,
                       TBE_ANALYSIS_SUFFIX) >= esize)
    return -1;
  const char *b = strrchr(real, '/');
  b = b ? b + 1 : real;
  if (strlen(b) >= bsize) return -1;
  memcpy(base, b, strlen(b) + 1);
  return 0;
}

tbe_analysis *tbe_cli_cache_get(const char *path, char *why, size_t size) {
  why[0] = 0;
  struct stat st;
  char entry[PATH_MAX], base[NAME_MAX + 1];
  if (cache_entry(path, 0, &st, entry, sizeof entry, base, sizeof base)) return NULL;
  tbe_analysis *an = load_checked(entry, base, &st, why, size);
  if (an) utimensat(AT_FDCWD, entry, NULL, 0); /* recently used */
  else if (why[0]) unlink(entry);              /* stale or broken: it goes */
  return an;
}

typedef struct cache_file {
  char name[NAME_MAX + 1];
  struct timespec mtime;
  long long size;
} cache_file;

static int cmp_newest_first(const void *x, const void *y) {
  const cache_file *a = x, *b = y;
  if (a->mtime.tv_sec != b->mtime.tv_sec) return a->mtime.tv_sec > b->mtime.tv_sec ? -1 : 1;
  if (a->mtime.tv_nsec != b->mtime.tv_nsec) return a->mtime.tv_nsec > b->mtime.tv_nsec ? -1 : 1;
  return strcmp(a->name, b->name);
}

/* Keeps the newest entries within the bounds. */
static void cache_trim(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  cache_file *v = NULL;
  size_t n = 0, cap = 0;
  struct dirent *e;
  size_t sl = strlen(TBE_ANALYSIS_SUFFIX);
  while ((e = readdir(d)) != NULL) {
    size_t l = strlen(e->d_name);
    struct stat st;
    if (l != 16 + sl || strcmp(e->d_name + 16, TBE_ANALYSIS_SUFFIX) != 0 ||
        fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
      continue;
    if (n == cap) {
      size_t nc = cap ? 2 * cap : 64;
      cache_file *nv = realloc(v, nc * sizeof *nv);
      if (!nv) break;
      v = nv;
      cap = nc;
    }
    snprintf(v[n].name, sizeof v[n].name, "%s", e->d_name);
    v[n].mtime = st.st_mtim;
    v[n].size = (long long)st.st_size;
    n++;
  }
  if (n > 1) qsort(v, n, sizeof *v, cmp_newest_first);
  long long bytes = 0, max_bytes = env_ll("TBEXPORT_CACHE_MAX_BYTES", TBE_CLI_CACHE_BYTES);
  long long max_entries = env_ll("TBEXPORT_CACHE_MAX_ENTRIES", TBE_CLI_CACHE_ENTRIES);
  for (size_t i = 0; i < n; i++) {
    bytes += v[i].size;
    if ((long long)i >= max_entries || bytes > max_bytes) unlinkat(dirfd(d), v[i].name, 0);
  }
  closedir(d);
  free(v);
}

void tbe_cli_cache_put(const char *path, const tbe_analysis *an) {
  struct stat st;
  char entry[PATH_MAX], base[NAME_MAX + 1], tmp[PATH_MAX + 16];
  if (!an || cache_entry(path, 1, &st, entry, sizeof entry, base, sizeof base)) return;
  tbe_analysis_source src = {base, (uint64_t)st.st_size, mtime_ns(&st)};
  void *buf = NULL;
  size_t len = 0;
  if (tbe_analysis_save(an, &src, 1, &buf, &len, NULL)) return;
  snprintf(tmp, sizeof tmp, "%s.XXXXXX", entry);
  int fd = mkstemp(tmp);
  int ok = fd >= 0;
  for (size_t done = 0; ok && done < len;) {
    ssize_t w = write(fd, (const char *)buf + done, len - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) ok = 0;
    else done += (size_t)w;
  }
  if (fd >= 0 && close(fd) != 0) ok = 0;
  if (ok && rename(tmp, entry) != 0) ok = 0;
  if (!ok && fd >= 0) unlink(tmp);
  tbe_analysis_save_free(buf, len, NULL);
  char *slash = strrchr(entry, '/');
  if (ok && slash) {
    *slash = 0;
    cache_trim(entry);
  }
}
