/* run_layout.c: the table of a run's files and the names and paths built
 * from it (run_layout.h, which gives the layout), and the public checks
 * of run and host names (tbe_name_check, tbe_run_name_default:
 * tbexport/export.h).
 *
 * Invariants: a name that came from outside (the caller's, a directory
 * entry, a trace) goes into a path only after tbe__name_check; a path
 * that does not fit is an error, never a shorter path. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/fsutil.h"
#include "tbexport/error.h"
#include "tbexport/export.h"
#include "trace/run/run_layout.h"

/* ---- the table ---- */

static const tbe__run_file_row ROWS[TBE__RUN_NFILES] = {
#define TBE__RUN_FILE_ROW(id, name, place, suffix) [TBE__RUN_##id] = {name, place, suffix},
    TBE__RUN_FILES(TBE__RUN_FILE_ROW)
#undef TBE__RUN_FILE_ROW
};

const tbe__run_file_row *tbe__run_file_row_of(tbe__run_file f) {
  return f < TBE__RUN_NFILES ? &ROWS[f] : NULL;
}

const char *tbe__run_suffix(tbe__run_file f) { return f < TBE__RUN_NFILES ? ROWS[f].suffix : ""; }

/* snprintf that cuts silently (names checked by the caller). */
static void cut(char *buf, size_t size, const char *f, ...) __attribute__((format(printf, 3, 4)));
static void cut(char *buf, size_t size, const char *f, ...) {
  va_list ap;
  va_start(ap, f);
  vsnprintf(buf, size, f, ap);
  va_end(ap);
}

/* ---- names ---- */

int tbe_name_check(const char *name, const char **why) { return tbe__name_check(name, why); }

int tbe_run_name_default(char *buf, size_t size) {
  if (!buf || size < 20) return TBE_EINVAL;
  time_t now = time(NULL);
  struct tm tm;
  if (!localtime_r(&now, &tm)) return TBE_EINVAL;
  if (strftime(buf, size, "%Y_%m_%d_%H_%M_%S", &tm) == 0) return TBE_EINVAL;
  return 0;
}

/* ---- paths ---- */

int tbe__run_profile_dir(char *buf, size_t size, const char *logdir, const char *run) {
  if (!buf || !size || !run || tbe__name_check(run, NULL) != 0) return TBE_ENAME;
  int n = logdir ? snprintf(buf, size, "%s/" TBE__PROFILE_ROOT "/%s", logdir, run)
                 : snprintf(buf, size, TBE__PROFILE_ROOT "/%s", run);
  return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

int tbe__run_host_file(char *buf, size_t size, const char *host, tbe__run_file f) {
  if (!buf || !size || !host || tbe__name_check(host, NULL) != 0 || f >= TBE__RUN_NFILES ||
      (ROWS[f].place != TBE__AT_PROFILE && f != TBE__RUN_PT_LINK))
    return TBE_ENAME;
  int n = snprintf(buf, size, "%s%s", host, ROWS[f].suffix);
  return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

void tbe__run_host_folder(const char *host, int32_t rank, int32_t world, char *buf, size_t size) {
  snprintf(buf, size, "%s", host);
  if (rank < 0) {
    /* not the sub-run older versions kept sessions in */
    if (strcmp(host, TBE__HPARAMS_RUN) == 0) snprintf(buf, size, "%s_", host);
    return;
  }
  int32_t top = world - 1 > rank ? world - 1 : rank;
  int width = 1;
  for (int32_t v = top; v >= 10; v /= 10) width++;
  size_t hl = strlen(host), bl = hl;
  const char *rest = "";
  for (const char *p = strstr(host, ".rank"); p; p = strstr(p + 1, ".rank")) {
    const char *d = p + 5;
    long v = 0;
    int nd = 0;
    while (*d >= '0' && *d <= '9' && nd < 10) v = v * 10 + (*d++ - '0'), nd++;
    if (nd && v == rank && (*d == '\0' || *d == '_')) {
      bl = (size_t)(p - host);
      rest = d;
    }
  }
  char f[2 * TBE_NAME_MAX + 32];
  if (bl)
    cut(f, sizeof f, "rank%0*d.%.*s%s", width, (int)rank, (int)bl, host, rest);
  else
    cut(f, sizeof f, "rank%0*d%s", width, (int)rank, rest);
  if (tbe__name_check(f, NULL) == 0) cut(buf, size, "%s", f);
}

/* ---- event file names ---- */

int tbe__events_name(char *buf, size_t size, long long ts, const char *who, const char *mark) {
  if (ts < 0 || ts > 9999999999LL) ts = 0;
  int n = snprintf(buf, size, TBE__EVENTS_PREFIX "%010lld.%s%s", ts, who, mark);
  return n < 0 || (size_t)n >= size ? TBE_EINVAL : 0;
}

int tbe__events_name_is(const char *name, const char *who, const char *mark) {
  size_t pl = strlen(TBE__EVENTS_PREFIX), wl = strlen(who), ml = strlen(mark), n = strlen(name);
  if (n != pl + 11 + wl + ml || strncmp(name, TBE__EVENTS_PREFIX, pl) != 0) return 0;
  for (size_t i = pl; i < pl + 10; i++)
    if (name[i] < '0' || name[i] > '9') return 0;
  return name[pl + 10] == '.' && memcmp(name + pl + 11, who, wl) == 0 &&
         memcmp(name + pl + 11 + wl, mark, ml) == 0;
}

int tbe__events_who(const char *name, const char *mark, char *who, size_t size) {
  size_t pl = strlen(TBE__EVENTS_PREFIX), ml = strlen(mark), n = strlen(name);
  if (n <= pl + 11 + ml || strncmp(name, TBE__EVENTS_PREFIX, pl) != 0 || name[pl + 10] != '.' ||
      strcmp(name + n - ml, mark) != 0)
    return 0;
  for (size_t i = pl; i < pl + 10; i++)
    if (name[i] < '0' || name[i] > '9') return 0;
  size_t wl = n - ml - pl - 11;
  if (wl >= size) return 0;
  memcpy(who, name + pl + 11, wl);
  who[wl] = 0;
  return tbe__name_check(who, NULL) == 0;
}

/* ---- reading names back ---- */

int tbe__run_profile_host(const char *name, char *host, size_t size) {
  static const tbe__run_file kinds[] = {TBE__RUN_XSPACE, TBE__RUN_JSON, TBE__RUN_ANALYSIS};
  size_t n = strlen(name);
  if (name[0] == '.') return 0;
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    const char *suffix = ROWS[kinds[i]].suffix;
    size_t l = strlen(suffix);
    if (n > l && n - l < size && strcmp(name + n - l, suffix) == 0) {
      memcpy(host, name, n - l);
      host[n - l] = 0;
      return tbe__name_check(host, NULL) == 0;
    }
  }
  return 0;
}

int tbe__run_trace_kind(const char *name, size_t *stem_len) {
  /* preferred first; the plain JSON is what tbe_export_chrome_json writes
   * without gzip, read when a run holds one */
  const char *const suffixes[3] = {ROWS[TBE__RUN_JSON].suffix, ".trace.json",
                                   ROWS[TBE__RUN_XSPACE].suffix};
  size_t n = strlen(name);
  for (int k = 0; k < 3; k++) {
    size_t m = strlen(suffixes[k]);
    if (n > m && strcmp(name + n - m, suffixes[k]) == 0) {
      size_t stem = n - m;
      if (stem > 3 && strncmp(name + stem - 3, ".pt", 3) == 0) stem -= 3;
      *stem_len = stem;
      return 3 - k;
    }
  }
  return 0;
}

int tbe__run_host_output(const char *n, const char *host) {
  size_t hl = strlen(host);
  if (strncmp(n, host, hl) != 0) return 0;
  const char *p = n + hl;
  if (strncmp(p, "_pid", 4) == 0 && p[4] >= '0' && p[4] <= '9') {
    p += 4;
    while (*p >= '0' && *p <= '9') p++;
    if (p[0] == '_' && p[1] >= '0' && p[1] <= '9')
      for (p++; *p >= '0' && *p <= '9';) p++;
  }
  return strcmp(p, ROWS[TBE__RUN_XSPACE].suffix) == 0 || strcmp(p, ROWS[TBE__RUN_JSON].suffix) == 0;
}

int tbe__run_split_profile_path(const char *path, char *logdir, size_t lsize, char *run,
                                size_t rsize) {
  char dir[PATH_MAX];
  const char *part[3];
  size_t n = path ? strlen(path) : sizeof dir;
  if (n >= sizeof dir) return 0;
  memcpy(dir, path, n + 1);
  for (int i = 0; i < 3; i++) {
    char *sl = strrchr(dir, '/');
    if (!sl) return 0;
    *sl = '\0';
    part[i] = sl + 1;
  }
  /* part[0] is the file, part[1] the run, part[2] "profile"; then "plugins" */
  char *sl = strrchr(dir, '/');
  if (!sl || strcmp(sl + 1, "plugins") != 0 || strcmp(part[2], "profile") != 0) return 0;
  *sl = '\0';
  const char *ld = dir[0] ? dir : "/";
  if (strlen(ld) >= lsize || strlen(part[1]) >= rsize) return 0;
  memcpy(logdir, ld, strlen(ld) + 1);
  memcpy(run, part[1], strlen(part[1]) + 1);
  return 1;
}
