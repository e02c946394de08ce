/* cmd_summary.c: `tbexport summary [--logdir DIR] [RUN | FILE]`: where the
 * time goes in one trace or in a whole run, as a table, CSV, JSON or
 * Markdown.
 *
 * Also holds the loader `summary` and `diff` share (tbe_cli_load_run): an
 * argument naming an existing file is imported as it is (the format is
 * detected from its content); otherwise it is a run name, looked up as
 * <logdir>/plugins/profile/<RUN>/, and every host file of the run is
 * loaded, each into its own trace and analysis (a run of a multi-process
 * program has one file per process, <host>_pid<N>.*; of a multi-host job,
 * one per host), then aggregated by tbe_run_analysis_create.  A host file
 * is the set of files sharing a stem (the name without .trace.json.gz,
 * .trace.json, .xplane.pb, and a .pt before them); of those the Chrome
 * trace is preferred to the XSpace.  A host whose persisted analysis
 * (<host>.analysis.pb, analysis_files.h) is current is read from it, the
 * hosts' files on a few threads at once; one that is there but stale,
 * corrupt or of another version says so in one line and its trace is
 * imported.  A FILE is looked up in the cache of analyses first
 * (analysis_files.h) and stored there after its import.  --from-traces
 * imports every trace all the same.  Without RUN, the run whose newest
 * trace file was written last.  Run names are checked before they become
 * paths.  Imports that take more than a second show the shared progress
 * bar (progress.h) on stderr when it is a terminal, unless --quiet. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/analysis_files.h"
#include "cli/cli.h"
#include "cli/input_limits.h"
#include "cli/path_hint.h"
#include "cli/progress.h"
#include "tbexport.h"
#include "tbexport/analysis.h"

#define DEFAULT_LOGDIR "log_dir"

/* ---- locating ---- */

static int run_name_ok(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > 200 || s[0] == '.') return 0;
  for (size_t i = 0; i < n; i++)
    if (s[i] == '/' || (unsigned char)s[i] < 0x20 || s[i] == 0x7f) return 0;
  return 1;
}

/* A run's hosts and their trace files, and the latest run, come from the
 * library's reading of the run layout (tbexport/export.h: tbe_run_list,
 * tbe_run_latest), which owns the layout: no folder or suffix is spelled
 * here. */

/* ---- loading ---- */

/* Imports `path` and analyses it into slot i of `r`.  Returns 0 or an exit
 * code after printing the error. */
static int load_one(const char *cmd, const char *path, const char *base, const char *shown,
                    int quiet, tbe_cli_run *r, size_t i) {
  int rc = tbe_trace_create(&r->traces[i], NULL);
  if (rc) {
    tbe_cli_error(cmd, "%s", tbe_strerror(rc));
    return TBE_EXIT_FAIL;
  }
  tbe_progress pb;
  tbe_progress_start(&pb, shown, TBE_PROGRESS_BYTES, quiet);
  tbe_import_options io;
  tbe_cli_import_limits(&io);
  io.progress = tbe_progress_cb;
  io.progress_ctx = &pb;
  io.base_dir = base; /* a run's trace: no symlink followed below its log dir */
  tbe_import_error err;
  rc = tbe_import_file(r->traces[i], path, &io, &err);
  tbe_progress_end(&pb);
  if (rc) {
    tbe_cli_error(cmd, "%s", err.message[0] ? err.message : tbe_strerror(rc));
    return tbe_cli_exit_for(rc);
  }
  rc = tbe_analysis_create(&r->an[i], r->traces[i], NULL);
  if (rc) {
    tbe_cli_error(cmd, "%s: %s", path, tbe_strerror(rc));
    return tbe_cli_exit_for(rc);
  }
  return 0;
}

static int alloc_slots(tbe_cli_run *r, size_t n) {
  r->traces = calloc(n, sizeof *r->traces);
  r->an = calloc(n, sizeof *r->an);
  r->hosts = calloc(n, sizeof *r->hosts);
  if (!r->traces || !r->an || !r->hosts) return TBE_ENOMEM;
  r->n = n;
  return 0;
}

void tbe_cli_run_free(tbe_cli_run *r) {
  tbe_run_analysis_free(r->run);
  for (size_t i = 0; i < r->n; i++) {
    if (r->an) tbe_analysis_free(r->an[i]);
    if (r->traces) tbe_trace_free(r->traces[i]);
    if (r->hosts) free(r->hosts[i]);
  }
  free(r->traces);
  free(r->an);
  free(r->hosts);
  memset(r, 0, sizeof *r);
}

int tbe_cli_load_run(const char *cmd, const char *logdir, const char *arg,
                     const tbe_cli_load_options *lo, tbe_cli_run *r) {
  memset(r, 0, sizeof *r);
  char path[PATH_MAX], run[256];
  struct stat st;
  int rc = 0;
  if (arg && (strcmp(arg, "-") == 0 || (stat(arg, &st) == 0 && !S_ISDIR(st.st_mode)))) {
    const char *base = strrchr(arg, '/');
    snprintf(r->label, sizeof r->label, "%s", base ? base + 1 : arg);
    if (alloc_slots(r, 1) || !(r->hosts[0] = strdup(r->label))) {
      tbe_cli_error(cmd, "%s", tbe_strerror(TBE_ENOMEM));
      rc = TBE_EXIT_FAIL;
    }
    char why[600];
    if (!rc && !lo->from_traces && !lo->no_cache) r->an[0] = tbe_cli_cache_get(arg, why, sizeof why);
    if (!rc && !r->an[0]) {
      rc = load_one(cmd, arg, NULL, r->label, lo->quiet, r, 0);
      if (!rc && !lo->no_cache) tbe_cli_cache_put(arg, r->an[0]);
    }
  } else {
    if (!logdir) logdir = DEFAULT_LOGDIR;
    if (!arg) {
      if (tbe_run_latest(logdir, run, sizeof run)) {
        tbe_cli_error(cmd, "%s: no runs under %s/plugins/profile", logdir, logdir);
        return TBE_EXIT_USAGE;
      }
      arg = run;
    } else if (!run_name_ok(arg)) {
      return tbe_cli_explain_input(cmd, arg, logdir, 0);
    }
    tbe_run_listing *hf = NULL;
    size_t n = 0;
    int err = tbe_run_list(logdir, arg, &hf, &n);
    if (err == -ENOENT || err == -ENOTDIR) return tbe_cli_explain_input(cmd, arg, logdir, 1);
    if (err) {
      tbe_cli_error(cmd, "%s/plugins/profile/%s: %s", logdir, arg, tbe_strerror(err));
      return tbe_cli_exit_for(err);
    }
    if (n == 0) {
      tbe_cli_error(cmd, "%s/plugins/profile/%s: no trace file (*.trace.json.gz, *.xplane.pb)",
                    logdir, arg);
      return TBE_EXIT_USAGE;
    }
    snprintf(r->label, sizeof r->label, "%s", arg);
    r->is_run = 1;
    if (alloc_slots(r, n)) {
      tbe_cli_error(cmd, "%s", tbe_strerror(TBE_ENOMEM));
      rc = TBE_EXIT_FAIL;
    }
    char dir[PATH_MAX], rel[PATH_MAX];
    tbe_run_profile_dir(dir, sizeof dir, logdir, arg);
    tbe_run_profile_dir(rel, sizeof rel, NULL, arg);
    tbe_cli_host_analysis *ha = rc ? NULL : calloc(n, sizeof *ha);
    if (!rc && !ha) {
      tbe_cli_error(cmd, "%s", tbe_strerror(TBE_ENOMEM));
      rc = TBE_EXIT_FAIL;
    }
    if (!rc && !lo->from_traces) {
      for (size_t i = 0; i < n; i++) {
        ha[i].logdir = logdir;
        ha[i].rel = rel;
        ha[i].stem = hf[i].host;
        ha[i].trace = hf[i].trace;
      }
      tbe_cli_read_analyses(ha, n, 4);
    }
    for (size_t i = 0; !rc && i < n; i++) {
      if (!(r->hosts[i] = strdup(hf[i].host))) {
        tbe_cli_error(cmd, "%s", tbe_strerror(TBE_ENOMEM));
        rc = TBE_EXIT_FAIL;
        break;
      }
      if (ha[i].an) {
        r->an[i] = ha[i].an;
        ha[i].an = NULL;
        continue;
      }
      if (ha[i].why[0]) tbe_cli_warn(cmd, "%s; reading the trace", ha[i].why);
      if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, hf[i].trace) >= sizeof path) {
        tbe_cli_error(cmd, "%s/%s: %s", dir, hf[i].trace, tbe_strerror(TBE_EINVAL));
        rc = TBE_EXIT_USAGE;
        break;
      }
      rc = load_one(cmd, path, logdir, hf[i].trace, lo->quiet, r, i);
    }
    for (size_t i = 0; ha && i < n; i++) tbe_analysis_free(ha[i].an);
    free(ha);
    tbe_run_list_free(hf, n);
  }
  if (!rc) {
    int err = tbe_run_analysis_create(&r->run, r->an, (const char *const *)r->hosts, r->n, NULL);
    if (err) {
      tbe_cli_error(cmd, "%s: %s", r->label, tbe_strerror(err));
      rc = tbe_cli_exit_for(err);
    }
  }
  if (rc) tbe_cli_run_free(r);
  return rc;
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
      else if (strcmp(arg, "cuda") == 0) o->sort = TBE_SORT_CUDA_TOTAL;
      else if (strcmp(arg, "self-cuda") == 0) o->sort = TBE_SORT_SELF_CUDA;
      else if (strcmp(arg, "self-cpu") == 0) o->sort = TBE_SORT_SELF;
      else {
        tbe_cli_error(
            cmd, "--sort: '%s' is not total, avg, calls, max, cuda, self-cuda or self-cpu", arg);
        return TBE_EXIT_USAGE;
      }
      return 0;
    case 'g':
      if (strcmp(arg, "name") == 0) o->group_by = TBE_GROUP_BY_NAME;
      else if (strcmp(arg, "shape") == 0) o->group_by = TBE_GROUP_BY_SHAPE;
      else {
        tbe_cli_error(cmd, "--group-by: '%s' is not name or shape", arg);
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
          "memsets, synchronization, launch overhead (the median time in the API call\n"
          "that launched GPU work) and queue delay (from its return to the GPU start);\n"
          "the top kernels, CPU operators (with the GPU time of the work each launched,\n"
          "its own and its children's: self CUDA and CUDA total, as torch.profiler's\n"
          "tables) and ranges; per-step times; advice.  Without steps, which NVTX range looks\n"
          "like the iteration (give it as --steps nvtx:NAME).  FILE is any trace\n"
          "tbexport imports (Chrome/Kineto JSON, XSpace, Nsight Systems SQLite, a\n"
          "collector's spool); RUN is a run in the log_dir (default: the one written\n"
          "last).  A run of several hosts\n"
          "or processes is summarized in total (names merged, steps matched by number)\n"
          "and host by host, with the slowest and the fastest host.\n"
          "\n"
          "options:\n"
          "  --logdir DIR        log directory holding the runs (default " DEFAULT_LOGDIR ")\n"
          "  --format FMT        table (default), csv, json or markdown\n"
          "  --sort KEY          total, avg, calls, max, cuda (CUDA total), self-cuda or\n"
          "                      self-cpu (default: the operators by CUDA total when\n"
          "                      their GPU work is known, every other table by total)\n"
          "  --group-by WHAT     name (default) or shape: the operator table per name\n"
          "                      and input shapes (traces recorded with shapes)\n"
          "  --top N             rows per table (default 10; 0 = all)\n"
          "  --wide              full names instead of shortened ones\n"
          "  --width N           table width (default 100)\n"
          "  --from-traces       import the traces even where a current analysis file\n"
          "                      (<host>.analysis.pb, written with them) is there\n"
          "  --no-cache          a FILE's analysis is neither read from nor stored in\n"
          "                      the cache ($XDG_CACHE_HOME/tbexport)\n"
          "  --quiet             no progress line\n"
          "\n" TBE_CLI_LIMIT_USAGE);
}

int tbe_cmd_summary(int argc, char **argv) {
  static const struct option opts[] = {
      {"logdir", required_argument, 0, 'L'}, {"format", required_argument, 0, 'f'},
      {"sort", required_argument, 0, 's'},   {"top", required_argument, 0, 'n'},
      {"wide", no_argument, 0, 'W'},         {"width", required_argument, 0, 'w'},
      {"quiet", no_argument, 0, 'q'},        {"help", no_argument, 0, 'h'},
      {"from-traces", no_argument, 0, 'T'},  {"no-cache", no_argument, 0, 'C'},
      {"group-by", required_argument, 0, 'g'}, TBE_CLI_LIMIT_OPTIONS, {0, 0, 0, 0}};
  tbe_report_options o;
  tbe_report_options_init(&o);
  const char *logdir = NULL;
  tbe_cli_load_options lo = {0, 0, 0};
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":hq", opts, NULL)) != -1) {
    switch (c) {
      case 'L': logdir = optarg; break;
      case 'W': o.wide = 1; break;
      case 'q': lo.quiet = 1; break;
      case 'T': lo.from_traces = 1; break;
      case 'C': lo.no_cache = 1; break;
      case 'h': usage(stdout); return TBE_EXIT_OK;
      case 'f':
      case 's':
      case 'g':
      case 'n':
      case 'w': {
        int rc = tbe_cli_report_option("summary", c, optarg, &o);
        if (rc) return rc;
        break;
      }
      case ':':
        tbe_cli_error("summary", "option '%s' needs a value", argv[optind - 1]);
        return TBE_EXIT_USAGE;
      case TBE_CLI_OPT_MAX_TOKEN:
      case TBE_CLI_OPT_MAX_EVENT_SIZE:
      case TBE_CLI_OPT_MAX_DEPTH:
      case TBE_CLI_OPT_MAX_EVENTS:
      case TBE_CLI_OPT_MAX_INPUT: {
        int rc = tbe_cli_limit_option("summary", c, optarg);
        if (rc) return rc;
        break;
      }
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
  tbe_cli_run run;
  int rc = tbe_cli_load_run("summary", logdir, arg, &lo, &run);
  if (rc) return rc;
  char *text = NULL;
  size_t len = 0;
  o.label[0] = run.label;
  int err = tbe_report_run(run.run, &o, &text, &len);
  if (err) {
    tbe_cli_error("summary", "%s: %s", run.label, tbe_strerror(err));
    rc = tbe_cli_exit_for(err);
  } else {
    rc = tbe_cli_print("summary", text, len);
  }
  tbe_report_free(text, len, NULL);
  tbe_cli_run_free(&run);
  return rc;
}
