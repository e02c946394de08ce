/* cmd_summary.c: `tbexport summary [--logdir DIR] [RUN | FILE]`: where the
 * time goes in one trace, as a table, CSV, JSON or Markdown.
 *
 * Also holds the trace loader `summary` and `diff` share
 * (tbe_cli_load_trace): an argument naming an existing file is imported as
 * it is (the format is detected from its content); otherwise it is a run
 * name, looked up as <logdir>/plugins/profile/<RUN>/, where the Chrome
 * trace (*.trace.json.gz, *.trace.json) is preferred to the XSpace
 * (*.xplane.pb).  Run names are checked before they become paths.
 * Imports that take more than a second show the shared progress bar
 * (progress.h) on stderr when it is a terminal, unless --quiet. */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/progress.h"
#include "tbexport.h"
#include "tbexport/analysis.h"

#define DEFAULT_LOGDIR "log_dir"

/* ---- locating and loading ---- */

static int run_name_ok(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > 200 || s[0] == '.') return 0;
  for (size_t i = 0; i < n; i++)
    if (s[i] == '/' || (unsigned char)s[i] < 0x20 || s[i] == 0x7f) return 0;
  return 1;
}

static int ends_with(const char *s, const char *suf) {
  size_t n = strlen(s), m = strlen(suf);
  return n >= m && strcmp(s + n - m, suf) == 0;
}

static int rank_of(const char *name) {
  if (ends_with(name, ".trace.json.gz")) return 3;
  if (ends_with(name, ".trace.json")) return 2;
  if (ends_with(name, ".xplane.pb")) return 1;
  return 0;
}

/* Finds the trace file of `run` (the first by name of the preferred kind)
 * and in *nhosts how many files of that kind (hosts) the run holds;
 * returns 0 and the path, -errno, or 1 when the run has no trace file. */
static int run_file(const char *logdir, const char *run, char *out, size_t size, int *nhosts) {
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s/plugins/profile/%s", logdir, run);
  DIR *d = opendir(dir);
  if (!d) return -errno;
  struct dirent *e;
  char best[NAME_MAX + 1] = "";
  int best_rank = 0, n = 0; /* n: files of the best kind, one per host */
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    int r = rank_of(e->d_name);
    if (!r || r < best_rank) continue;
    if (r > best_rank) n = 0;
    n++;
    if (r > best_rank || strcmp(e->d_name, best) < 0) {
      best_rank = r;
      snprintf(best, sizeof best, "%s", e->d_name);
    }
  }
  closedir(d);
  *nhosts = n;
  if (!best_rank) return 1; /* the run exists but holds no trace file */
  if ((size_t)snprintf(out, size, "%s/%s", dir, best) >= size) return TBE_EINVAL;
  return 0;
}

/* The latest run (greatest name: default run names are timestamps) under
 * <logdir>/plugins/profile that holds a trace file.  Returns 0, -errno or
 * 1 when there is none. */
static int latest_run(const char *logdir, char *out, size_t size) {
  char dir[PATH_MAX], path[PATH_MAX];
  snprintf(dir, sizeof dir, "%s/plugins/profile", logdir);
  DIR *d = opendir(dir);
  if (!d) return -errno;
  struct dirent *e;
  out[0] = '\0';
  while ((e = readdir(d)) != NULL) {
    int nh;
    if (e->d_name[0] == '.' || strcmp(e->d_name, out) <= 0 || strlen(e->d_name) >= size) continue;
    if (run_file(logdir, e->d_name, path, sizeof path, &nh) == 0)
      snprintf(out, size, "%s", e->d_name);
  }
  closedir(d);
  return out[0] ? 0 : 1;
}

int tbe_cli_load_trace(const char *cmd, const char *logdir, const char *arg, int quiet,
                       tbe_trace **out, char *label, size_t label_size, int *is_run) {
  *out = NULL;
  *is_run = 0;
  char path[PATH_MAX], run[256];
  struct stat st;
  if (arg && stat(arg, &st) == 0 && !S_ISDIR(st.st_mode)) {
    snprintf(path, sizeof path, "%s", arg);
    const char *base = strrchr(arg, '/');
    snprintf(label, label_size, "%s", base ? base + 1 : arg);
  } else {
    if (!logdir) logdir = DEFAULT_LOGDIR;
    if (!arg) {
      int rc = latest_run(logdir, run, sizeof run);
      if (rc) {
        tbe_cli_error(cmd, "%s: no runs under %s/plugins/profile", logdir, logdir);
        return TBE_EXIT_USAGE;
      }
      arg = run;
    } else if (!run_name_ok(arg)) {
      tbe_cli_error(cmd, "%s: not a file, and not a valid run name", arg);
      return TBE_EXIT_USAGE;
    }
    int nhosts = 0;
    int rc = run_file(logdir, arg, path, sizeof path, &nhosts);
    if (rc == -ENOENT || rc == -ENOTDIR) {
      tbe_cli_error(cmd, "%s: no such file, and no run '%s' in %s", arg, arg, logdir);
      return TBE_EXIT_USAGE;
    }
    if (rc == 1) {
      tbe_cli_error(cmd, "%s/plugins/profile/%s: no trace file (*.trace.json.gz, *.xplane.pb)",
                    logdir, arg);
      return TBE_EXIT_USAGE;
    }
    if (rc) {
      tbe_cli_error(cmd, "%s/plugins/profile/%s: %s", logdir, arg, tbe_strerror(rc));
      return tbe_cli_exit_for(rc);
    }
    snprintf(label, label_size, "%s", arg);
    *is_run = 1;
    if (nhosts > 1 && !quiet)
      fprintf(stderr, "tbexport %s: note: run '%s' holds traces of %d hosts; using %s\n", cmd, arg,
              nhosts, strrchr(path, '/') + 1);
  }
  tbe_trace *t = NULL;
  int rc = tbe_trace_create(&t, NULL);
  if (rc) {
    tbe_cli_error(cmd, "%s", tbe_strerror(rc));
    return TBE_EXIT_FAIL;
  }
  tbe_progress pb;
  tbe_progress_start(&pb, label, TBE_PROGRESS_BYTES, quiet);
  tbe_import_options io = {tbe_progress_cb, &pb};
  tbe_import_error err;
  rc = tbe_import_file(t, path, &io, &err);
  tbe_progress_end(&pb);
  if (rc) {
    tbe_cli_error(cmd, "%s", err.message[0] ? err.message : tbe_strerror(rc));
    tbe_trace_free(t);
    return tbe_cli_exit_for(rc);
  }
  *out = t;
  return 0;
}

/* Parses the options summary and diff share.  Returns 0, or an exit code
 * after printing the error. */
int tbe_cli_report_option(const char *cmd, int c, const char *arg, tbe_report_options *o) {
  char *end;
  switch (c) {
    case 'f':
      if (strcmp(arg, "table") == 0) o->format = TBE_REPORT_TABLE;
      else if (strcmp(arg, "csv") == 0) o->format = TBE_REPORT_CSV;
      else if (strcmp(arg, "json") == 0) o->format = TBE_REPORT_JSON;
      else if (strcmp(arg, "markdown") == 0 || strcmp(arg, "md") == 0) o->format = TBE_REPORT_MARKDOWN;
      else {
        tbe_cli_error(cmd, "--format: '%s' is not table, csv, json or markdown", arg);
        return TBE_EXIT_USAGE;
      }
      return 0;
    case 's':
      if (strcmp(arg, "total") == 0) o->sort = TBE_SORT_TOTAL;
      else if (strcmp(arg, "avg") == 0) o->sort = TBE_SORT_AVG;
      else if (strcmp(arg, "calls") == 0) o->sort = TBE_SORT_CALLS;
      else if (strcmp(arg, "max") == 0) o->sort = TBE_SORT_MAX;
      else {
        tbe_cli_error(cmd, "--sort: '%s' is not total, avg, calls or max", arg);
        return TBE_EXIT_USAGE;
      }
      return 0;
    case 'n': {
      errno = 0;
      unsigned long long v = strtoull(arg, &end, 10);
      if (errno || end == arg || *end || arg[0] == '-') {
        tbe_cli_error(cmd, "--top: '%s' is not a count (0 = all)", arg);
        return TBE_EXIT_USAGE;
      }
      o->top = (size_t)v;
      return 0;
    }
    case 'w': {
      errno = 0;
      long v = strtol(arg, &end, 10);
      if (errno || end == arg || *end || v < 40 || v > 10000) {
        tbe_cli_error(cmd, "--width: '%s' is not a width between 40 and 10000", arg);
        return TBE_EXIT_USAGE;
      }
      o->width = (int)v;
      return 0;
    }
    default: return TBE_EXIT_USAGE;
  }
}

int tbe_cli_print(const char *cmd, const char *s, size_t len) {
  if (fwrite(s, 1, len, stdout) != len || fflush(stdout) != 0) {
    tbe_cli_error(cmd, "writing the report: %s", strerror(errno));
    return TBE_EXIT_FAIL;
  }
  return TBE_EXIT_OK;
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: tbexport summary [--logdir DIR] [options] [RUN | FILE]\n"
          "\n"
          "Where the time goes in one trace: per GPU busy/idle time, kernels, copies,\n"
          "memsets, synchronization and launch latency; the top kernels, CPU operators\n"
          "and ranges; per-step times; advice.  FILE is any trace tbexport imports\n"
          "(Chrome/Kineto JSON, XSpace, Nsight Systems SQLite); RUN is a run in the\n"
          "log_dir (default: the latest).\n"
          "\n"
          "options:\n"
          "  --logdir DIR        log directory holding the runs (default " DEFAULT_LOGDIR ")\n"
          "  --format FMT        table (default), csv, json or markdown\n"
          "  --sort KEY          total (default), avg, calls or max\n"
          "  --top N             rows per table (default 10; 0 = all)\n"
          "  --wide              full names instead of shortened ones\n"
          "  --width N           table width (default 100)\n"
          "  --quiet             no progress line\n");
}

int tbe_cmd_summary(int argc, char **argv) {
  static const struct option opts[] = {
      {"logdir", required_argument, 0, 'L'}, {"format", required_argument, 0, 'f'},
      {"sort", required_argument, 0, 's'},   {"top", required_argument, 0, 'n'},
      {"wide", no_argument, 0, 'W'},         {"width", required_argument, 0, 'w'},
      {"quiet", no_argument, 0, 'q'},        {"help", no_argument, 0, 'h'},
      {0, 0, 0, 0}};
  tbe_report_options o;
  tbe_report_options_init(&o);
  const char *logdir = NULL;
  int quiet = 0, c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":hq", opts, NULL)) != -1) {
    switch (c) {
      case 'L': logdir = optarg; break;
      case 'W': o.wide = 1; break;
      case 'q': quiet = 1; break;
      case 'h': usage(stdout); return TBE_EXIT_OK;
      case 'f':
      case 's':
      case 'n':
      case 'w': {
        int rc = tbe_cli_report_option("summary", c, optarg, &o);
        if (rc) return rc;
        break;
      }
      case ':':
        tbe_cli_error("summary", "option '%s' needs a value", argv[optind - 1]);
        return TBE_EXIT_USAGE;
      default:
        tbe_cli_error("summary", "unknown option '%s' (try --help)", argv[optind - 1]);
        return TBE_EXIT_USAGE;
    }
  }
  if (argc - optind > 1) {
    tbe_cli_error("summary", "expected one RUN or FILE, got %d arguments", argc - optind);
    return TBE_EXIT_USAGE;
  }
  const char *arg = optind < argc ? argv[optind] : NULL;
  tbe_trace *t = NULL;
  char label[512];
  int is_run = 0;
  int rc = tbe_cli_load_trace("summary", logdir, arg, quiet, &t, label, sizeof label, &is_run);
  if (rc) return rc;
  tbe_analysis *an = NULL;
  int err = tbe_analysis_create(&an, t, NULL);
  char *text = NULL;
  size_t len = 0;
  if (!err) {
    o.label[0] = label;
    err = tbe_report_summary(an, &o, &text, &len);
  }
  if (err) {
    tbe_cli_error("summary", "%s: %s", label, tbe_strerror(err));
    rc = tbe_cli_exit_for(err);
  } else {
    rc = tbe_cli_print("summary", text, len);
  }
  tbe_report_free(text, len, NULL);
  tbe_analysis_free(an);
  tbe_trace_free(t);
  return rc;
}
