/* analysis_files.c: persisted analyses for summary and diff (the contract
 * is in analysis_files.h).
 *
 * A persisted analysis is used only when it stands for exactly what the
 * trace would give: decodable by this tbexport (format version), computed
 * by code that gives today's figures (analysis version), and naming the
 * very file the trace path would import with that file's current key:
 * size and the CRC32C of its first and last 64 KiB (tbe_analysis_source).
 * Then the report is the same bytes either way (test/cli/test_persist.sh
 * checks it for every format).  The key is the file's bytes, not its
 * mtime: a copy of a log dir (cp -r, tar, rsync) keeps its analyses, and
 * a rewrite of the same size is seen when its head or tail differ.  Not
 * seen: a change of the same size confined to the middle of a plain JSON
 * or XSpace over 128 KiB (a gzip trace ends with the CRC of all of its
 * content); tbexport's own rewrites replace the analysis with the trace.
 *
 * Every file is read through the library (tbe_analysis_read,
 * tbe_analysis_source_key): under the log dir no symlink is followed, no
 * open blocks (a FIFO at the name is refused at once) and nothing past
 * TBE_ANALYSIS_FILE_MAX is read; each refusal is the one line that says
 * why the analysis was not used.
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

/* ---- checking one file ---- */

/* The trace names `st` records, comma-separated, into buf. */
static void source_names(const tbe_analysis_stamp *st, char *buf, size_t size) {
  size_t n = 0;
  buf[0] = 0;
  for (size_t i = 0; i < st->nsources && n < size; i++) {
    int k = snprintf(buf + n, size - n, "%s%s", i ? ", " : "", st->sources[i].name);
    if (k < 0) break;
    n += (size_t)k;
  }
}

/* Loads the analysis base/rel (shown as `path`) and checks that it stands
 * for the trace file `name` in the same folder, whose key is `now`.
 * Returns the analysis, or NULL with `why` set ("" when there is no such
 * file). */
static tbe_analysis *load_checked(const char *base, const char *rel, const char *path,
                                  const char *name, const tbe_analysis_source *now, char *why,
                                  size_t size) {
  why[0] = 0;
  tbe_analysis *an = NULL;
  tbe_analysis_stamp stamp;
  tbe_analysis_load_error err;
  int rc = tbe_analysis_read(&an, &stamp, base, rel, NULL, &err);
  if (rc == -ENOENT) return NULL;
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
  if (rc == TBE_ECORRUPT || rc == TBE_ENOMEM) {
    snprintf(why, size, "%s is corrupt: %s", path, err.message[0] ? err.message : tbe_strerror(rc));
    return NULL;
  }
  if (rc) { /* the file itself was refused: the message names it */
    snprintf(why, size, "%s", err.message[0] ? err.message : tbe_strerror(rc));
    return NULL;
  }
  if (stamp.analysis_version != tbe_analysis_version()) {
    snprintf(why, size, "%s is from another analysis version (%u, this tbexport computes %u)", path,
             stamp.analysis_version, tbe_analysis_version());
    tbe_analysis_free(an);
    return NULL;
  }
  for (size_t i = 0; i < stamp.nsources; i++) {
    const tbe_analysis_source *s = &stamp.sources[i];
    if (strcmp(s->name, name) != 0) continue;
    if (s->size == now->size && s->head_crc32c == now->head_crc32c &&
        s->tail_crc32c == now->tail_crc32c)
      return an;
    snprintf(why, size, "%s is stale: its trace %s changed since it was written", path, name);
    tbe_analysis_free(an);
    return NULL;
  }
  /* The trace was not written with this analysis: it is the odd one (a
   * file of an earlier export, or put there by hand), so the line names it
   * first. */
  char names[256];
  source_names(&stamp, names, sizeof names);
  snprintf(why, size, "%s is not a trace of the export that wrote %s (%s)", name, path,
           names[0] ? names : "no trace");
  tbe_analysis_free(an);
  return NULL;
}

/* ---- the hosts of a run ---- */

static void read_host(tbe_cli_host_analysis *h) {
  char rel[PATH_MAX], trel[PATH_MAX], path[2 * PATH_MAX];
  h->an = NULL;
  h->why[0] = 0;
  if ((size_t)snprintf(rel, sizeof rel, "%s/%s%s", h->rel, h->stem, TBE_ANALYSIS_SUFFIX) >=
          sizeof rel ||
      (size_t)snprintf(trel, sizeof trel, "%s/%s", h->rel, h->trace) >= sizeof trel)
    return;
  snprintf(path, sizeof path, "%s/%s", h->logdir, rel);
  tbe_analysis_source now;
  memset(&now, 0, sizeof now);
  if (tbe_analysis_source_key(&now, h->logdir, trel) != 0) return; /* the import will say why */
  h->an = load_checked(h->logdir, rel, path, h->trace, &now, h->why, sizeof h->why);
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
 * as the cache folder `dir` and the entry's name, and the file's base
 * name.  Returns 0, or -1 for a file not cached. */
static int cache_entry(const char *path, int create, char *dir, size_t dsize, char *entry,
                       size_t esize, char *base, size_t bsize) {
  char real[PATH_MAX];
  struct stat st;
  if (strcmp(path, "-") == 0 || !realpath(path, real) || stat(real, &st) != 0 ||
      !S_ISREG(st.st_mode))
    return -1;
  if ((long long)st.st_size < env_ll("TBEXPORT_CACHE_MIN_BYTES", TBE_CLI_CACHE_MIN_BYTES))
    return -1;
  uint64_t h = 1469598103934665603ULL; /* FNV-1a, 64 bits */
  char key[PATH_MAX + 64];
  int kn = snprintf(key, sizeof key, "%s%c%llu%c%llu", real, 0, (unsigned long long)st.st_dev, 0,
                    (unsigned long long)st.st_ino);
  for (int i = 0; i < kn && i < (int)sizeof key; i++) {
    h ^= (unsigned char)key[i];
    h *= 1099511628211ULL;
  }
  if (cache_dir(dir, dsize, create)) return -1;
  if ((size_t)snprintf(entry, esize, "%016llx%s", (unsigned long long)h, TBE_ANALYSIS_SUFFIX) >=
      esize)
    return -1;
  const char *b = strrchr(real, '/');
  b = b ? b + 1 : real;
  if (strlen(b) >= bsize) return -1;
  memcpy(base, b, strlen(b) + 1);
  return 0;
}

tbe_analysis *tbe_cli_cache_get(const char *path, char *why, size_t size) {
  why[0] = 0;
  char dir[PATH_MAX], name[64], entry[PATH_MAX + 64], base[NAME_MAX + 1];
  if (cache_entry(path, 0, dir, sizeof dir, name, sizeof name, base, sizeof base)) return NULL;
  tbe_analysis_source now;
  memset(&now, 0, sizeof now);
  if (tbe_analysis_source_key(&now, path, NULL) != 0) return NULL;
  snprintf(entry, sizeof entry, "%s/%s", dir, name);
  tbe_analysis *an = load_checked(dir, name, entry, base, &now, why, size);
  if (an) utimensat(AT_FDCWD, entry, NULL, AT_SYMLINK_NOFOLLOW); /* recently used */
  else if (why[0]) unlink(entry);                                /* stale or broken: it goes */
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
  char dir[PATH_MAX], name[64], entry[PATH_MAX + 64], base[NAME_MAX + 1], tmp[PATH_MAX + 80];
  if (!an || cache_entry(path, 1, dir, sizeof dir, name, sizeof name, base, sizeof base)) return;
  tbe_analysis_source src;
  memset(&src, 0, sizeof src);
  if (tbe_analysis_source_key(&src, path, NULL) != 0) return;
  src.name = base;
  void *buf = NULL;
  size_t len = 0;
  if (tbe_analysis_save(an, &src, 1, &buf, &len, NULL)) return;
  snprintf(entry, sizeof entry, "%s/%s", dir, name);
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
  if (ok) cache_trim(dir);
}
