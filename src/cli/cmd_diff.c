/* cmd_diff.c: `tbexport diff [--logdir DIR] BASE NEW`: which kernels, CPU
 * operators and ranges got faster or slower between two traces or runs.
 *
 * BASE and NEW are run names in the log_dir or trace files (loaded by
 * tbe_cli_load_run, cmd_summary.c: every host file of a run).  Runs of
 * several hosts are compared in total and host by host
 * (tbe_run_diff_create).  The report goes to stdout.  When NEW is a run,
 * the comparison is also written into TensorBoard, as an event file in
 * <logdir>/<NEW>/ with tags under diff/<BASE>/ that replaces the one an
 * earlier diff against the same BASE wrote (its path is printed on
 * stderr); --no-events skips that.  It is placed like every output
 * (tbe_run_diff_write_events): never through a symlink below the log dir,
 * complete or not at all.  Each side's hosts are read from their
 * persisted analyses where current (--from-traces: from the traces).
 *
 * --fail-if COND (repeatable) makes the comparison a gate for CI: each
 * condition is parsed before anything is read (a malformed one is exit 2),
 * evaluated on the comparison (of the runs' totals) before anything is
 * printed or written (a NAME that matches nothing on either side is exit
 * 2, one line, no report), then the report goes out as usual and each
 * condition says on stderr what it found; the exit status is 3 when any
 * fired, else 4 when any passed its threshold but could not be judged for
 * too few steps, else 0 (tbe_gate_eval has the rule, cli.h the codes). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/input_limits.h"
#include "tbexport.h"
#include "tbexport/analysis.h"

#define DEFAULT_LOGDIR "log_dir"
/* The most --fail-if conditions of one command. */
#define GATES_MAX 64

static void usage(FILE *f) {
  fprintf(f,
          "usage: tbexport diff [--logdir DIR] [options] BASE NEW\n"
          "\n"
          "Compares two traces or runs (run names in the log_dir, or trace files): wall,\n"
          "GPU busy, kernel and median step time of each side, then per kernel, CPU\n"
          "operator and range: calls, total and average (or median per step) on each\n"
          "side, delta and ratio, sorted by |delta| (operators whose GPU work is known:\n"
          "by their CUDA total's); names found on one side only are\n"
          "listed as added or removed.  With steps on both sides, the step times (and\n"
          "each name's time per step) are compared by a rank test and the change is\n"
          "called within or beyond the steps' own noise (4 steps per side needed).\n"
          "Runs of several hosts are compared in total and host by host (matched by\n"
          "rank, else by host name).  When NEW is a run, the comparison is also written\n"
          "to <logdir>/<NEW>/ (tags diff/<BASE>/...), replacing the one of an earlier\n"
          "diff against the same BASE.\n"
          "\n"
          "options:\n"
          "  --logdir DIR        log directory holding the runs (default " DEFAULT_LOGDIR ")\n"
          "  --format FMT        table (default), csv, json or markdown\n"
          "  --group-by WHAT     name (default) or shape: the operators per name and\n"
          "                      input shapes (when both sides recorded shapes)\n"
          "  --top N             rows per table (default 10; 0 = all)\n"
          "  --wide              full names instead of shortened ones\n"
          "  --width N           table width (default 100)\n"
          "  --no-events         do not write the comparison into TensorBoard\n"
          "  --from-traces       import the traces even where a current analysis file\n"
          "                      (<host>.analysis.pb, written with them) is there\n"
          "  --no-cache          a FILE's analysis is neither read from nor stored in\n"
          "                      the cache ($XDG_CACHE_HOME/tbexport)\n"
          "  --fail-if COND      a gate for CI: exit 3 when COND holds beyond the steps'\n"
          "                      own noise (repeatable: any that fires); one line per\n"
          "                      COND on stderr says what it found\n"
          "  --quiet             no progress line\n"
          "\n"
          "COND is FIGURE OP CHANGE, e.g. 'step_median > +5%%', 'kernel:nvjet* > +10%%',\n"
          "'class:gemm > +2ms', 'op:aten::mm >= +10%%', 'gpu_busy < -3pp':\n"
          "  FIGURE  step_median, kernel_time, gpu_busy (the step's busy share),\n"
          "          kernel:NAME, class:CLASS, op:NAME, range:NAME; each is the median\n"
          "          over steps of its time per step (NAME: a full or short name, or a\n"
          "          pattern with * and ?; the names it matches add up);\n"
          "          peak_allocated, peak_reserved: the memory curve's peak per step\n"
          "  OP      > fires on a change above CHANGE, < below it (>=, <= likewise)\n"
          "  CHANGE  +5%% or -3%% of base, or an absolute +2ms (ns, us, ms, s);\n"
          "          gpu_busy also in percentage points, -3pp; the peaks also in\n"
          "          bytes, +512MiB (B, KiB, MiB, GiB)\n"
          "A COND fires only when the change passes CHANGE and the per-step values of\n"
          "the two sides differ by a Mann-Whitney test at 5%%; a change within the\n"
          "steps' noise passes (said on its line).\n"
          "\n"
          "exit status: 0 success, no COND fired; 3 a COND fired; 4 none fired, but one\n"
          "passed its CHANGE with fewer than 4 steps on a side (or none) to judge it;\n"
          "1 failure while working; 2 bad usage or input, a malformed COND, or a NAME\n"
          "that matches nothing on either side.\n"
          "\n" TBE_CLI_LIMIT_USAGE);
}

/* Evaluates every condition on `d`; 0, or an exit code after printing
 * the one error line. */
static int gates_eval(const tbe_gate *g, size_t n, const tbe_diff *d, tbe_gate_result *r) {
  static const char *const WORD[] = {"", "", "", "kernel", "class", "operator", "range"};
  for (size_t i = 0; i < n; i++) {
    int err = tbe_gate_eval(&g[i], d, &r[i], NULL);
    if (err == TBE_ENAME) {
      tbe_cli_error("diff", "--fail-if '%s': no %s named '%s' on either side", g[i].text,
                    WORD[g[i].figure], g[i].name);
      return TBE_EXIT_USAGE;
    }
    if (err) {
      tbe_cli_error("diff", "--fail-if '%s': %s", g[i].text, tbe_strerror(err));
      return tbe_cli_exit_for(err);
    }
  }
  return 0;
}

/* One line per condition on stderr; the exit status they make. */
static int gates_say(const tbe_gate *g, size_t n, const tbe_gate_result *r) {
  int fired = 0, unjudged = 0;
  for (size_t i = 0; i < n; i++) {
    char line[1024];
    tbe_gate_describe(&g[i], &r[i], line, sizeof line);
    tbe_cli_note("tbexport diff: --fail-if %s", line);
    fired |= r[i].outcome == TBE_GATE_FIRE;
    unjudged |= r[i].outcome == TBE_GATE_UNJUDGED;
  }
  return fired ? TBE_EXIT_FIRED : unjudged ? TBE_EXIT_UNJUDGED : TBE_EXIT_OK;
}

/* A tag-safe label for a side: the run name, or the file's base name up
 * to its first dot. */
static void side_label(const char *label, int is_run, char *out, size_t size) {
  size_t n = strlen(label) < size - 1 ? strlen(label) : size - 1;
  memcpy(out, label, n);
  out[n] = '\0';
  if (!is_run) {
    char *dot = strchr(out, '.');
    if (dot && dot != out) *dot = '\0';
  }
  for (char *p = out; *p; p++)
    if ((unsigned char)*p < 0x20 || *p == '/') *p = '_';
  if (!out[0] || out[0] == '.') snprintf(out, size, "base");
}

int tbe_cmd_diff(int argc, char **argv) {
  static const struct option opts[] = {
      {"logdir", required_argument, 0, 'L'}, {"format", required_argument, 0, 'f'},
      {"top", required_argument, 0, 'n'},    {"wide", no_argument, 0, 'W'},
      {"width", required_argument, 0, 'w'},  {"no-events", no_argument, 0, 'E'},
      {"quiet", no_argument, 0, 'q'},        {"help", no_argument, 0, 'h'},
      {"from-traces", no_argument, 0, 'T'},  {"no-cache", no_argument, 0, 'C'},
      {"group-by", required_argument, 0, 'g'}, {"fail-if", required_argument, 0, 'F'},
      TBE_CLI_LIMIT_OPTIONS, {0, 0, 0, 0}};
  tbe_report_options o;
  tbe_report_options_init(&o);
  const char *logdir = NULL;
  tbe_cli_load_options lo = {0, 0, 0};
  int no_events = 0, c;
  tbe_gate *gates = NULL;
  size_t ngates = 0;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":hq", opts, NULL)) != -1) {
    switch (c) {
      case 'F': {
        char why[512];
        if (ngates == GATES_MAX) {
          tbe_cli_error("diff", "more than %d --fail-if conditions", GATES_MAX);
          free(gates);
          return TBE_EXIT_USAGE;
        }
        if (!gates && !(gates = malloc(GATES_MAX * sizeof *gates))) {
          tbe_cli_error("diff", "%s", tbe_strerror(TBE_ENOMEM));
          return TBE_EXIT_FAIL;
        }
        if (tbe_gate_parse(&gates[ngates], optarg, why, sizeof why)) {
          tbe_cli_error("diff", "--fail-if: %s", why);
          free(gates);
          return TBE_EXIT_USAGE;
        }
        ngates++;
        break;
      }
      case 'L': logdir = optarg; break;
      case 'W': o.wide = 1; break;
      case 'E': no_events = 1; break;
      case 'q': lo.quiet = 1; break;
      case 'T': lo.from_traces = 1; break;
      case 'C': lo.no_cache = 1; break;
      case 'h':
        usage(stdout);
        free(gates);
        return TBE_EXIT_OK;
      case 'f':
      case 'g':
      case 'n':
      case 'w': {
        int rc = tbe_cli_report_option("diff", c, optarg, &o);
        if (rc) {
          free(gates);
          return rc;
        }
        break;
      }
      case ':':
        tbe_cli_error("diff", "option '%s' needs a value", argv[optind - 1]);
        free(gates);
        return TBE_EXIT_USAGE;
      case TBE_CLI_OPT_MAX_TOKEN:
      case TBE_CLI_OPT_MAX_EVENT_SIZE:
      case TBE_CLI_OPT_MAX_DEPTH:
      case TBE_CLI_OPT_MAX_EVENTS:
      case TBE_CLI_OPT_MAX_INPUT: {
        int rc = tbe_cli_limit_option("diff", c, optarg);
        if (rc) {
          free(gates);
          return rc;
        }
        break;
      }
      default:
        tbe_cli_error("diff", "unknown option '%s' (try --help)", argv[optind - 1]);
        free(gates);
        return TBE_EXIT_USAGE;
    }
  }
  if (argc - optind != 2) {
    tbe_cli_error("diff", "expected BASE and NEW, got %d argument%s", argc - optind,
                  argc - optind == 1 ? "" : "s");
    free(gates);
    return TBE_EXIT_USAGE;
  }
  tbe_cli_run side[2];
  memset(side, 0, sizeof side);
  int rc = 0;
  for (int s = 0; s < 2 && !rc; s++)
    rc = tbe_cli_load_run("diff", logdir, argv[optind + s], &lo, &side[s]);
  tbe_run_diff *d = NULL;
  char *text = NULL;
  size_t len = 0;
  int err = 0;
  tbe_gate_result *res = NULL;
  if (!rc && ngates && !(res = calloc(ngates, sizeof *res))) {
    tbe_cli_error("diff", "%s", tbe_strerror(TBE_ENOMEM));
    rc = TBE_EXIT_FAIL;
  }
  if (!rc) {
    err = tbe_run_diff_create(&d, side[0].run, side[1].run, NULL);
    if (err) {
      tbe_cli_error("diff", "%s", tbe_strerror(err));
      rc = tbe_cli_exit_for(err);
    }
  }
  /* The conditions before any report or event file: a NAME that matches
   * nothing is an error with nothing else said. */
  if (!rc && ngates) rc = gates_eval(gates, ngates, d->total, res);
  if (!rc) {
    o.label[0] = side[0].label;
    o.label[1] = side[1].label;
    err = tbe_report_run_diff(d, &o, &text, &len);
    if (err) {
      tbe_cli_error("diff", "%s", tbe_strerror(err));
      rc = tbe_cli_exit_for(err);
    }
  }
  if (!rc && side[1].is_run && !no_events) {
    char dir[4096], base[201], path[4096];
    snprintf(dir, sizeof dir, "%s/%s", logdir ? logdir : DEFAULT_LOGDIR, side[1].label);
    side_label(side[0].label, side[0].is_run, base, sizeof base);
    err = tbe_run_diff_write_events(d, dir, base, side[1].label, o.top, NULL, path, sizeof path);
    if (err) {
      char line[4400];
      if (path[0]) tbe_cli_error("diff", "writing the comparison: %s",
                                 tbe_export_strerror(err, path, line, sizeof line));
      else tbe_cli_error("diff", "writing the comparison into %s: %s", dir, tbe_strerror(err));
      rc = tbe_cli_exit_for(err);
    } else if (!lo.quiet) {
      tbe_cli_note("wrote %s", path);
    }
  }
  if (!rc) rc = tbe_cli_print("diff", text, len);
  if (!rc && ngates) rc = gates_say(gates, ngates, res);
  free(gates);
  free(res);
  tbe_report_free(text, len, NULL);
  tbe_run_diff_free(d);
  for (int s = 0; s < 2; s++) tbe_cli_run_free(&side[s]);
  return rc;
}
