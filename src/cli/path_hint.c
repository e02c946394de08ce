/* path_hint.c: see path_hint.h.  Reads only what it names: the input's
 * type, and the names of the run folders it points at (never a file's
 * contents).  Folders are listed with opendir, each at most once. */
#include "cli/path_hint.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"

static int by_name(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Puts into list[0..size) the names of the folders of `dir` that are not
 * hidden, sorted, ", "-separated, at most 6 and then ", ..."; returns how
 * many there are (the first 256 read are sorted). */
static int list_runs(const char *dir, char *list, size_t size) {
  list[0] = '\0';
  DIR *d = opendir(dir);
  if (!d) return 0;
  static char names[256][NAME_MAX + 1];
  const char *sorted[256];
  int n = 0, kept = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char p[PATH_MAX];
    struct stat st;
    if ((size_t)snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= sizeof p) continue;
    if (stat(p, &st) || !S_ISDIR(st.st_mode)) continue;
    if (kept < 256) {
      snprintf(names[kept], sizeof names[kept], "%s", e->d_name);
      sorted[kept] = names[kept];
      kept++;
    }
    n++;
  }
  closedir(d);
  qsort(sorted, (size_t)kept, sizeof sorted[0], by_name);
  size_t used = 0;
  for (int k = 0; k < kept && k < 7; k++) {
    used += (size_t)snprintf(list + used, size - used, "%s%s", k ? ", " : "",
                             k < 6 ? sorted[k] : "...");
    if (used >= size) used = size - 1;
  }
  return n;
}

static int is_dir(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* 1 if `name` ends like a trace file tbexport reads. */
static int trace_name(const char *name) {
  static const char *const ends[] = {".json", ".json.gz", ".xplane.pb", ".sqlite", ".spool"};
  size_t n = strlen(name);
  for (size_t i = 0; i < sizeof ends / sizeof ends[0]; i++) {
    size_t k = strlen(ends[i]);
    if (n > k && strcmp(name + n - k, ends[i]) == 0) return 1;
  }
  return 0;
}

/* The number of trace files in `dir` and the first one's name. */
static int count_traces(const char *dir, char *first, size_t size) {
  first[0] = '\0';
  DIR *d = opendir(dir);
  if (!d) return 0;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.' || !trace_name(e->d_name)) continue;
    if (!n) snprintf(first, size, "%s", e->d_name);
    n++;
  }
  closedir(d);
  return n;
}

int tbe_cli_explain_input(const char *cmd, const char *arg, const char *logdir, int run_ok) {
  char p[PATH_MAX], runs[400], first[256];
  struct stat st;
  /* The log dir's runs with a trace, to name them. */
  snprintf(p, sizeof p, "%s/plugins/profile", logdir);
  int nruns = list_runs(p, runs, sizeof runs);
  if (stat(arg, &st) != 0) {
    if (!run_ok || strchr(arg, '/'))
      tbe_cli_error(cmd, "%s: no such file", arg);
    else if ((snprintf(p, sizeof p, "%s/%s", logdir, arg), is_dir(p)))
      tbe_cli_error(cmd,
                    "%s: run '%s' of %s holds TensorBoard event files only, no trace (tbexport "
                    "inspect %s lists them); runs with a trace: %s",
                    arg, arg, logdir, p, nruns ? runs : "none");
    else if (nruns)
      tbe_cli_error(cmd, "%s: no such file, and no run '%s' in %s (its runs: %s)", arg, arg,
                    logdir, runs);
    else
      tbe_cli_error(cmd, "%s: no such file, and %s has no runs with a trace (--logdir DIR)", arg,
                    logdir);
    return TBE_EXIT_USAGE;
  }
  if (!S_ISDIR(st.st_mode)) {
    tbe_cli_error(cmd, "%s: not a trace file tbexport reads", arg);
    return TBE_EXIT_USAGE;
  }
  /* A log dir: it has plugins/profile. */
  snprintf(p, sizeof p, "%s/plugins/profile", arg);
  if (is_dir(p)) {
    int n = list_runs(p, runs, sizeof runs);
    if (n)
      tbe_cli_error(cmd, "%s is a log dir: name one of its runs (%s), e.g. tbexport %s --logdir %s RUN",
                    arg, runs, cmd, arg);
    else
      tbe_cli_error(cmd, "%s is a log dir without runs that hold a trace", arg);
    return TBE_EXIT_USAGE;
  }
  /* LOGDIR/plugins/profile/RUN, or LOGDIR/RUN beside LOGDIR/plugins/profile/RUN. */
  char real[PATH_MAX];
  if (realpath(arg, real)) {
    char *slash = strrchr(real, '/');
    const char *run = slash ? slash + 1 : real;
    if (slash && slash > real) {
      *slash = '\0';
      size_t l = strlen(real);
      if (l >= 16 && strcmp(real + l - 16, "/plugins/profile") == 0) {
        real[l - 16] = '\0';
        tbe_cli_error(cmd, "%s is the profile folder of run '%s': tbexport %s --logdir %s %s", arg,
                      run, cmd, real[0] ? real : "/", run);
        return TBE_EXIT_USAGE;
      }
      if ((size_t)snprintf(p, sizeof p, "%s/plugins/profile/%s", real, run) < sizeof p && is_dir(p)) {
        tbe_cli_error(cmd, "%s is the TensorBoard folder of run '%s': tbexport %s --logdir %s %s",
                      arg, run, cmd, real[0] ? real : "/", run);
        return TBE_EXIT_USAGE;
      }
    }
  }
  int n = count_traces(arg, first, sizeof first);
  if (n)
    tbe_cli_error(cmd, "%s is a folder of %d trace file%s: give one, e.g. %s/%s", arg, n,
                  n == 1 ? "" : "s", arg, first);
  else
    tbe_cli_error(cmd, "%s is a folder, not a trace file (and no log dir: no plugins/profile)", arg);
  return TBE_EXIT_USAGE;
}
