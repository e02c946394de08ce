/* run_scan.c: reading a log dir's runs back (run_scan.h), and the public
 * readers of tbexport/export.h's experimental tier (tbe_run_list,
 * tbe_run_latest, tbe_run_profile_dir, tbe_run_of_path).
 *
 * Invariants: a name read from a directory reaches a path only when it is
 * a name run_layout.c recognises (our suffixes and marks, tbe__name_check
 * on the host); hidden entries (a writer's ".tbexport-tmp-*") are never
 * taken for a run's file; a listing that fails to allocate fails whole,
 * never returns part of a run. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/fsutil.h"
#include "common/intern.h"
#include "common/vec.h"
#include "tbexport/error.h"
#include "tbexport/export.h"
#include "trace/run/run_layout.h"
#include "trace/run/run_scan.h"

/* ---- listings under the symlink rule ---- */

DIR *tbe__run_listing(const char *logdir, const char *rel, int *rc, char *where, size_t wsize) {
  *rc = 0;
  int fd = tbe__dir_open(logdir, rel, 0, 0755, where, wsize);
  if (fd < 0) {
    if (fd != -ENOENT) *rc = fd;
    return NULL;
  }
  DIR *d = fdopendir(fd);
  if (!d) {
    *rc = -errno;
    close(fd);
  }
  return d;
}

int tbe__run_entry_is_dir(DIR *d, const struct dirent *de) {
  if (de->d_type != DT_UNKNOWN) return de->d_type == DT_DIR;
  struct stat st;
  return fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

int tbe__run_holds_summary(const char *logdir, const char *rel) {
  int rc;
  DIR *d = tbe__run_listing(logdir, rel, &rc, NULL, 0);
  if (!d) return 0;
  struct dirent *de;
  char who[TBE_NAME_MAX + 1];
  int hit = 0;
  while (!hit && (de = readdir(d)) != NULL)
    hit = tbe__events_who(de->d_name, TBE__SUMMARY_MARK, who, sizeof who);
  closedir(d);
  return hit;
}

int tbe__run_is(const tbe_allocator *a, const char *run_dir, const char *run,
                const char *const *hosts, size_t n, char *dir, size_t size) {
  char *logdir;
  const char *rname;
  if (!run_dir || !run || tbe__name_check(run, NULL) != 0) return 0;
  int rc = tbe__path_split(a, run_dir, &logdir, &rname);
  if (rc) return rc;
  char prel[TBE_NAME_MAX + 32], h[TBE_NAME_MAX + 1];
  tbe__run_profile_dir(prel, sizeof prel, NULL, run);
  size_t found = 0;
  int lrc;
  DIR *d = n ? tbe__run_listing(logdir, prel, &lrc, NULL, 0) : NULL;
  tbe__intern seen;
  tbe__intern_init(&seen, a, TBE__SEED_PROCESS);
  struct dirent *de;
  while (d && (de = readdir(d)) != NULL)
    if (tbe__run_profile_host(de->d_name, h, sizeof h)) {
      uint32_t id;
      int added = 0;
      if (tbe__intern_add(&seen, h, strlen(h), &id, &added) < 0) break;
    }
  if (d) closedir(d);
  for (size_t i = 0; i < n; i++) {
    uint32_t id;
    int added = 0;
    if (!hosts[i] || tbe__intern_add(&seen, hosts[i], strlen(hosts[i]), &id, &added) < 0) break;
    if (!added) found++;
  }
  tbe__intern_deinit(&seen);
  int is = n && found == n;
  if (is) snprintf(dir, size, "%s/%s", logdir, run);
  tbe__free(a, logdir);
  return is;
}

/* ---- a profiled session's run naming (plain opendir) ---- */

int tbe__run_exists(const char *logdir, const char *run) {
  char p[4400];
  struct stat st;
  snprintf(p, sizeof p, "%s/" TBE__PROFILE_ROOT "/%s", logdir, run);
  if (lstat(p, &st) == 0) return 1;
  snprintf(p, sizeof p, "%s/%s", logdir, run);
  return lstat(p, &st) == 0;
}

int tbe__run_has_host(const char *logdir, const char *run, const char *host, char *found,
                      size_t size) {
  char dir[4400];
  if (snprintf(dir, sizeof dir, "%s/" TBE__PROFILE_ROOT "/%s", logdir, run) >= (int)sizeof dir)
    return 0;
  DIR *d = opendir(dir);
  if (!d) return 0;
  struct dirent *e;
  int hit = 0;
  while (!hit && (e = readdir(d))) {
    hit = tbe__run_host_output(e->d_name, host);
    if (hit && found && size) snprintf(found, size, "%s/%s", dir, e->d_name);
  }
  closedir(d);
  return hit;
}

/* ---- the readers' listing (tbexport/export.h) ---- */

int tbe_run_profile_dir(char *buf, size_t size, const char *logdir, const char *run) {
  return tbe__run_profile_dir(buf, size, logdir, run);
}

int tbe_run_of_path(const char *path, char *logdir, size_t lsize, char *run, size_t rsize) {
  return tbe__run_split_profile_path(path, logdir, lsize, run, rsize);
}

/* A host being listed: the kind of its preferred trace so far. */
typedef struct listed {
  tbe_run_listing h;
  int kind;
} listed;

static int cmp_listed(const void *x, const void *y) {
  return strcmp(((const listed *)x)->h.host, ((const listed *)y)->h.host);
}

/* Adds entry `name` (a trace file of kind k, host part `stem` bytes) to
 * the hosts `v`: a new host, or a more preferred file of a known one. */
static int list_entry(tbe__vec *v, const tbe_allocator *a, const char *name, size_t stem, int k) {
  size_t n = tbe__vec_len(v), i = 0;
  listed *l = v->data;
  while (i < n && !(strlen(l[i].h.host) == stem && strncmp(l[i].h.host, name, stem) == 0)) i++;
  if (i < n) {
    if (k <= l[i].kind) return 0;
    char *nm = tbe__strdup(a, name);
    if (!nm) return TBE_ENOMEM;
    tbe__free(a, l[i].h.trace);
    l[i].h.trace = nm;
    l[i].kind = k;
    return 0;
  }
  listed *e = TBE__VEC_PUSH(v, listed);
  if (!e) return TBE_ENOMEM;
  memset(e, 0, sizeof *e);
  e->kind = k;
  e->h.host = tbe__alloc(a, stem + 1);
  e->h.trace = tbe__strdup(a, name);
  if (!e->h.host || !e->h.trace) return TBE_ENOMEM;
  memcpy(e->h.host, name, stem);
  e->h.host[stem] = 0;
  return 0;
}

void tbe_run_list_free(tbe_run_listing *hosts, size_t n) {
  tbe_allocator a;
  tbe__allocator_init(&a, NULL);
  for (size_t i = 0; hosts && i < n; i++) {
    tbe__free(&a, hosts[i].host);
    tbe__free(&a, hosts[i].trace);
  }
  tbe__free(&a, hosts);
}

int tbe_run_list(const char *logdir, const char *run, tbe_run_listing **hosts, size_t *nout) {
  if (!hosts || !nout) return TBE_EINVAL;
  *hosts = NULL;
  *nout = 0;
  char dir[PATH_MAX];
  int rc = tbe__run_profile_dir(dir, sizeof dir, logdir ? logdir : ".", run);
  if (rc) return rc;
  DIR *d = opendir(dir);
  if (!d) return -errno;
  tbe_allocator a;
  tbe__allocator_init(&a, NULL);
  tbe__vec v;
  tbe__vec_init(&v, &a, sizeof(listed));
  struct dirent *e;
  while (!rc && (e = readdir(d)) != NULL) {
    size_t stem;
    int k;
    if (e->d_name[0] == '.' || !(k = tbe__run_trace_kind(e->d_name, &stem))) continue;
    rc = list_entry(&v, &a, e->d_name, stem, k);
  }
  closedir(d);
  size_t n = tbe__vec_len(&v);
  listed *l = v.data;
  if (rc) {
    for (size_t i = 0; i < n; i++) {
      tbe__free(&a, l[i].h.host);
      tbe__free(&a, l[i].h.trace);
    }
    tbe__vec_deinit(&v);
    return rc;
  }
  if (n > 1) qsort(l, n, sizeof *l, cmp_listed);
  /* the kinds are the listing's business: hand over the hosts alone */
  tbe_run_listing *out = n ? tbe__calloc(&a, n, sizeof *out) : NULL;
  if (n && !out) {
    for (size_t i = 0; i < n; i++) {
      tbe__free(&a, l[i].h.host);
      tbe__free(&a, l[i].h.trace);
    }
    tbe__vec_deinit(&v);
    return TBE_ENOMEM;
  }
  for (size_t i = 0; i < n; i++) out[i] = l[i].h;
  tbe__vec_deinit(&v);
  *hosts = out;
  *nout = n;
  return 0;
}

/* The newest modification time of a trace file in folder `dir`; 0 when it
 * holds none. */
static int newest_trace(const char *dir, struct timespec *newest) {
  DIR *rd = opendir(dir);
  if (!rd) return 0;
  char path[PATH_MAX];
  struct dirent *f;
  int any = 0;
  while ((f = readdir(rd)) != NULL) {
    size_t stem;
    struct stat st;
    if (f->d_name[0] == '.' || !tbe__run_trace_kind(f->d_name, &stem)) continue;
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, f->d_name) >= sizeof path ||
        stat(path, &st) != 0)
      continue;
    if (!any || st.st_mtim.tv_sec > newest->tv_sec ||
        (st.st_mtim.tv_sec == newest->tv_sec && st.st_mtim.tv_nsec > newest->tv_nsec))
      *newest = st.st_mtim;
    any = 1;
  }
  closedir(rd);
  return any;
}

int tbe_run_latest(const char *logdir, char *out, size_t size) {
  if (!out || !size) return TBE_EINVAL;
  char dir[PATH_MAX], path[PATH_MAX];
  snprintf(dir, sizeof dir, "%s/" TBE__PROFILE_ROOT, logdir ? logdir : ".");
  DIR *d = opendir(dir);
  if (!d) return -errno;
  struct dirent *e;
  out[0] = '\0';
  struct timespec best = {0, 0};
  while ((e = readdir(d)) != NULL) {
    if (strlen(e->d_name) >= size || tbe__name_check(e->d_name, NULL) != 0) continue;
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= sizeof path) continue;
    struct timespec newest = {0, 0};
    if (!newest_trace(path, &newest)) continue;
    int later = !out[0] || newest.tv_sec > best.tv_sec ||
                (newest.tv_sec == best.tv_sec &&
                 (newest.tv_nsec > best.tv_nsec ||
                  (newest.tv_nsec == best.tv_nsec && strcmp(e->d_name, out) > 0)));
    if (later) {
      best = newest;
      snprintf(out, size, "%s", e->d_name);
    }
  }
  closedir(d);
  return out[0] ? 0 : 1;
}
