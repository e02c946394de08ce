/* cmd_import.c: `tbexport import FILE... --logdir DIR`: turns existing
 * traces (Chrome/Kineto JSON, XSpace, Nsight Systems SQLite; detected by
 * content) into a TensorBoard run.
 *
 * Every FILE is imported into one trace (several files merge), then the
 * requested outputs are written under the log directory and each file
 * written is printed on its own line.  Nothing is written when an input is
 * bad (exit 2, the importer's one-line error), when a name is refused or
 * one file is named twice (exit 2: it would count its events twice), or
 * when an output file already exists without --force (exit 1).  Writing is
 * all or nothing (tbe_export_run): with --force a failure (a full disk)
 * leaves the run's previous files as they were, and a symlink below the
 * log dir is refused with one line naming it.
 *
 * Spool files (*.spool, left under a log dir's hidden .tbexport-spool-*
 * folder when `tbexport -- CMD` was killed or could not write its run) are
 * converted like the end of a profiled session: one host entry per process
 * when there are several.  They are imported on their own, not merged with
 * other traces, and are not removed.
 *
 * --steps nvtx:NAME[@DOMAIN] replaces the steps after the import (of the
 * merged trace; of each spool's process): how Nsight Systems exports and
 * runs collected without steps get them.  No match is a warning (in the
 * run and on stderr), not an error. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/input_limits.h"
#include "cli/progress.h"
#include "cli/run_options.h"
#include "tbexport.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: tbexport import FILE... --logdir DIR [--run NAME] [--host NAME]\n"
          "                       [--format xplane,json,events] [--steps nvtx:NAME[@DOMAIN]]\n"
          "                       [--force] [--quiet]\n"
          "\n"
          "Imports traces (PyTorch/Kineto or other Chrome JSON, plain or gzip; XSpace\n"
          ".xplane.pb; Nsight Systems SQLite exports) and writes them as one run:\n"
          "  DIR/plugins/profile/RUN/HOST.xplane.pb      TensorBoard profile plugin, xprof\n"
          "  DIR/plugins/profile/RUN/HOST.trace.json.gz  Perfetto, chrome://tracing\n"
          "  DIR/RUN/events.out.tfevents.*               TensorBoard scalars, text, and its\n"
          "                                              HParams session\n"
          "  DIR/RUN/HOST.pt.trace.json.gz               PyTorch's TensorBoard plugin (a link)\n"
          "A run of several hosts (ranks) has a TensorBoard run per host, DIR/RUN/rank<N>.HOST/\n"
          "(or DIR/RUN/HOST/), and the job's series in DIR/RUN/.\n"
          "Several FILEs are merged into one trace.  Prints each file written.\n"
          "Spool files (DIR/.tbexport-spool-*/PID.spool, left when `tbexport -- CMD` was\n"
          "killed or could not write its run) are converted on their own, one host per\n"
          "process, and kept.\n"
          "\n"
          "options:\n"
          "  --logdir DIR    TensorBoard log directory (created if missing); required\n"
          "  --run NAME      run name (default: local time, YYYY_MM_DD_HH_MM_SS);\n"
          "                  no '/', '..', leading dot, control characters, <= 200 bytes\n"
          "  --host NAME     host name for the file names (default: the trace's host,\n"
          "                  else this machine's)\n"
          "  --format LIST   outputs to write, comma-separated: xplane, json, events\n"
          "                  (default: all three)\n"
          "  --steps nvtx:NAME[@DOMAIN]\n"
          "                  the run's steps are the NVTX ranges (or record_function\n"
          "                  annotations) named NAME, in DOMAIN if given: the outermost\n"
          "                  ones of the thread with the most, numbered from 0 or by\n"
          "                  their integer payload (replaces steps found by name)\n"
          "  --force         replace all of the run's outputs of this host together\n"
          "                  (XSpace, JSON, summary events; those of a format not\n"
          "                  written now go); if writing fails they all stay\n" TBE_CLI_RUN_USAGE
          "  --quiet         no progress bar\n"
          "  --help          this text\n"
          "FILE may be - for standard input (not for an Nsight Systems export).\n"
          "\n" TBE_CLI_LIMIT_USAGE
          "\n"
          "exit status: 0 success; 1 failure while working, or an output exists\n"
          "(use --force); 2 bad usage or bad input.\n");
}

/* Copies `s` for display: control characters become '?'. */
static const char *printable(const char *s, char *buf, size_t size) {
  size_t i = 0;
  for (; s[i] && i + 1 < size; i++) buf[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7F ? '?' : s[i];
  buf[i] = 0;
  if (s[i]) snprintf(buf + (i > 3 ? i - 3 : 0), 4, "...");
  return buf;
}

static int parse_formats(const char *list, unsigned *out) {
  unsigned m = 0;
  const char *p = list;
  while (*p) {
    const char *e = strchr(p, ',');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if (n == 6 && !strncmp(p, "xplane", 6)) m |= TBE_OUT_XPLANE;
    else if (n == 4 && !strncmp(p, "json", 4)) m |= TBE_OUT_JSON;
    else if (n == 6 && !strncmp(p, "events", 6)) m |= TBE_OUT_EVENTS;
    else if (n != 0) return -1;
    p += n;
    if (*p == ',') p++;
  }
  if (!m) return -1;
  *out = m;
  return 0;
}

static void print_file(void *ctx, const char *path) {
  (void)ctx;
  char shown[4200]; /* a path is one line, whatever the log dir is called */
  tbe_text_escape(TBE_TEXT_LINE, path, strlen(path), shown, sizeof shown);
  printf("%s\n", shown);
}

/* An input named twice (the same path, or two paths of one file: a
 * link, "./x" and "x") would be imported twice and count its events
 * twice: refused with one line.  Returns 0 or 1 after the error. */
static int named_twice(char **files, int n) {
  struct stat *st = calloc((size_t)n, sizeof *st);
  int *ok = calloc((size_t)n, sizeof *ok);
  int bad = 0;
  if (st && ok) {
    for (int i = 0; i < n && !bad; i++) {
      ok[i] = stat(files[i], &st[i]) == 0 && S_ISREG(st[i].st_mode);
      for (int j = 0; j < i && ok[i] && !bad; j++)
        if (ok[j] && st[j].st_dev == st[i].st_dev && st[j].st_ino == st[i].st_ino) {
          if (strcmp(files[i], files[j]) == 0)
            tbe_cli_error("import", "%s is named twice: importing it twice would count its "
                                    "events twice", files[i]);
          else
            tbe_cli_error("import", "%s and %s are the same file: importing it twice would "
                                    "count its events twice", files[j], files[i]);
          bad = 1;
        }
    }
  }
  free(st);
  free(ok);
  return bad;
}

/* The one line for a failure of tbe_export_run about `path`. */
static void write_error(const char *run, const char *logdir, int rc, const char *path) {
  char line[4400];
  tbe_export_strerror(rc, path, line, sizeof line);
  if (rc == TBE_EEXIST)
    tbe_cli_error("import", "%s (use --force to replace it)", path && *path ? line :
                  "an output file of the run already exists");
  else if (path && *path)
    tbe_cli_error("import", "writing run '%s': %s", run, line);
  else
    tbe_cli_error("import", "writing run '%s' in %s: %s", run, logdir, line);
}

/* Converts the spool files FILES[0..n) into run o->run (see above). */
static int import_spools(char **files, size_t n, const tbe_export_options *o,
                         const char *steps_name, const char *steps_domain, int quiet) {
  tbe_session_options s;
  tbe_session_options_init(&s);
  s.files = (const char *const *)files;
  s.nfiles = n;
  s.export_options = o;
  s.steps_name = steps_name;
  s.steps_domain = steps_domain;
  s.keep = 1;
  int loud = 0; /* not quiet: --quiet only drops the progress line */
  s.on_message = tbe_cli_on_message;
  s.message_ctx = &loud;
  tbe_session_result sr;
  int rc = tbe_session_convert(&s, &sr);
  const tbe_profiler_result r = sr.total;
  size_t np = sr.processes;
  /* (the session has said which file failed and why, with its offset) */
  if (rc) return rc == TBE_EFORMAT || rc == TBE_ECORRUPT ? TBE_EXIT_USAGE : TBE_EXIT_FAIL;
  if (!quiet && isatty(2))
    tbe_cli_note(
            "tbexport: %zu process%s; kernels %llu, copies %llu, memsets %llu, API calls %llu, "
            "NVTX ranges %llu; dropped records %llu",
            np, np == 1 ? "" : "es", (unsigned long long)r.kernels, (unsigned long long)r.copies,
            (unsigned long long)r.memsets, (unsigned long long)r.api_calls,
            (unsigned long long)r.nvtx_ranges, (unsigned long long)r.dropped_records);
  return TBE_EXIT_OK;
}

static int import_files(int argc, char **argv, const char *logdir, const char *run,
                        const char *host, unsigned outputs, int force, int quiet,
                        const char *steps_name, const char *steps_domain);

int tbe_cmd_import(int argc, char **argv) {
  static const struct option opts[] = {
      {"logdir", required_argument, 0, 'l'}, {"run", required_argument, 0, 'r'},
      {"host", required_argument, 0, 'H'},   {"format", required_argument, 0, 'f'},
      {"force", no_argument, 0, 'F'},        {"quiet", no_argument, 0, 'q'},
      {"steps", required_argument, 0, 's'},  {"help", no_argument, 0, 'h'},
      TBE_CLI_LIMIT_OPTIONS,                 TBE_CLI_RUN_OPTIONS,
      {0, 0, 0, 0}};
  const char *logdir = NULL, *run = NULL, *host = NULL;
  const char *steps_arg = NULL;
  unsigned outputs = TBE_OUT_ALL;
  int force = 0, quiet = 0, c;
  char shown[256];
  opterr = 0;
  while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    switch (c) {
      case 'l': logdir = optarg; break;
      case 'r': run = optarg; break;
      case 'H': host = optarg; break;
      case 'f':
        if (parse_formats(optarg, &outputs)) {
          tbe_cli_error("import", "unknown --format '%s' (use xplane, json, events)",
                        printable(optarg, shown, sizeof shown));
          return TBE_EXIT_USAGE;
        }
        break;
      case 'F': force = 1; break;
      case 'q': quiet = 1; break;
      case 's': steps_arg = optarg; break;
      case 'h': usage(stdout); return TBE_EXIT_OK;
      case TBE_CLI_OPT_MAX_TOKEN:
      case TBE_CLI_OPT_MAX_EVENT_SIZE:
      case TBE_CLI_OPT_MAX_DEPTH:
      case TBE_CLI_OPT_MAX_EVENTS:
      case TBE_CLI_OPT_MAX_INPUT: {
        int lrc = tbe_cli_limit_option("import", c, optarg);
        if (lrc) return lrc;
        break;
      }
      case TBE_CLI_OPT_LABEL:
      case TBE_CLI_OPT_NO_PT_LINK: {
        int rrc = tbe_cli_run_option("import", c, optarg);
        if (rrc) return rrc;
        break;
      }
      default:
        tbe_cli_error("import", "unknown or incomplete option '%s' (try --help)", argv[optind - 1]);
        return TBE_EXIT_USAGE;
    }
  }
  if (optind >= argc) {
    tbe_cli_error("import", "no trace file given (try --help)");
    return TBE_EXIT_USAGE;
  }
  if (!logdir || !*logdir) {
    tbe_cli_error("import", "--logdir DIR is required (try --help)");
    return TBE_EXIT_USAGE;
  }
  const char *why;
  if (run && tbe_name_check(run, &why)) {
    tbe_cli_error("import", "run name '%s' refused: it %s", printable(run, shown, sizeof shown), why);
    return TBE_EXIT_USAGE;
  }
  if (host && tbe_name_check(host, &why)) {
    tbe_cli_error("import", "host name '%s' refused: it %s", printable(host, shown, sizeof shown), why);
    return TBE_EXIT_USAGE;
  }

  /* --steps: checked like --capture-range (the same syntax). */
  const char *steps_name = NULL, *steps_domain = NULL;
  char *steps_buf = NULL;
  if (steps_arg) {
    int mode;
    size_t size = strlen(steps_arg) + 1;
    if (!(steps_buf = malloc(size))) {
      tbe_cli_error("import", "out of memory");
      return TBE_EXIT_FAIL;
    }
    if (tbe_profiler_parse_range(steps_arg, &mode, steps_buf, size, &steps_name, &steps_domain) ||
        mode != TBE_CAPTURE_NVTX) {
      tbe_cli_error("import", "--steps: expected nvtx:NAME[@DOMAIN], got '%s'",
                    printable(steps_arg, shown, sizeof shown));
      free(steps_buf);
      return TBE_EXIT_USAGE;
    }
  }
  int ret = import_files(argc, argv, logdir, run, host, outputs, force, quiet, steps_name,
                         steps_domain);
  free(steps_buf);
  return ret;
}

/* The import proper, once the options are checked. */
static int import_files(int argc, char **argv, const char *logdir, const char *run,
                        const char *host, unsigned outputs, int force, int quiet,
                        const char *steps_name, const char *steps_domain) {
  tbe_export_options o;
  tbe_export_options_init(&o);
  o.threads = tbe_cli_export_threads();
  o.logdir = logdir;
  o.run = run;
  o.host = host;
  o.outputs = outputs;
  o.force = force;
  o.on_file = print_file;
  /* The HParams "command": what the run was made from. */
  char command[1024] = "import ";
  tbe_cli_command_line(argv + optind, (size_t)(argc - optind), command + 7, sizeof command - 7);
  tbe_cli_run_options_apply(&o, command);

  if (named_twice(argv + optind, argc - optind)) return TBE_EXIT_USAGE;
  /* Spools: recognised by their first bytes; nothing is written when one
   * of them cannot be read. */
  int nspool = 0;
  static tbe_import_error serr; /* 512+ bytes: keep it off the stack */
  for (int i = optind; i < argc; i++) nspool += tbe_session_spool_check(argv[i], NULL) != 0;
  if (nspool && nspool != argc - optind) {
    tbe_cli_error("import",
                  "spool files cannot be merged with other traces: import them on their own");
    return TBE_EXIT_USAGE;
  }
  for (int i = optind; i < argc && nspool; i++)
    if (tbe_session_spool_check(argv[i], &serr) < 0) {
      tbe_cli_error("import", "%s", serr.message);
      return TBE_EXIT_USAGE;
    }
  if (nspool)
    return import_spools(argv + optind, (size_t)(argc - optind), &o, steps_name, steps_domain,
                         quiet);

  tbe_trace *t = NULL;
  int rc = tbe_trace_create(&t, NULL);
  if (rc) {
    tbe_cli_error("import", "%s", tbe_strerror(rc));
    return TBE_EXIT_FAIL;
  }
  static tbe_import_error err; /* 512+ bytes: keep it off the stack */
  tbe_progress pb;
  for (int i = optind; i < argc; i++) {
    const char *path = argv[i];
    const char *base = strrchr(path, '/');
    char label[64];
    snprintf(label, sizeof label, "importing %s", base ? base + 1 : path);
    tbe_progress_start(&pb, label, TBE_PROGRESS_BYTES, quiet);
    tbe_import_options io;
    tbe_cli_import_limits(&io);
    io.progress = tbe_progress_cb;
    io.progress_ctx = &pb;
    memset(&err, 0, sizeof err);
    rc = tbe_import_file(t, path, &io, &err);
    tbe_progress_end(&pb);
    if (rc) {
      if (err.message[0]) tbe_cli_error("import", "%s", err.message);
      else tbe_cli_error("import", "%s: %s", path, tbe_strerror(rc));
      tbe_trace_free(t);
      return rc == TBE_ENOMEM || rc == TBE_EIO ? TBE_EXIT_FAIL : TBE_EXIT_USAGE;
    }
  }

  if (steps_name) {
    char line[640];
    rc = tbe_trace_steps_apply(t, steps_name, steps_domain, line, sizeof line);
    if (rc < 0) {
      tbe_cli_error("import", "--steps: %s", tbe_strerror(rc));
      tbe_trace_free(t);
      return TBE_EXIT_FAIL;
    }
    if (line[0]) tbe_cli_warn("import", "%s", line);
  }

  char run_buf[256], host_buf[256];
  rc = tbe_export_resolve(t, &o, run_buf, sizeof run_buf, host_buf, sizeof host_buf);
  if (rc) {
    tbe_cli_error("import", "cannot name the run: %s", tbe_strerror(rc));
    tbe_trace_free(t);
    return TBE_EXIT_USAGE;
  }
  o.run = run_buf; /* the default run name is fixed once, here */
  o.host = host_buf;
  if (!force) {
    char existing[4200];
    rc = tbe_export_conflict(t, &o, existing, sizeof existing);
    if (rc == 1) {
      tbe_cli_error("import", "%s already exists (use --force to replace it)", existing);
      tbe_trace_free(t);
      return TBE_EXIT_FAIL;
    }
  }
  tbe_progress_start(&pb, "writing outputs", TBE_PROGRESS_EVENTS, quiet);
  o.progress = tbe_progress_cb;
  o.progress_ctx = &pb;
  char where[4200];
  o.error_path = where;
  o.error_path_size = sizeof where;
  rc = tbe_export_run(t, &o);
  tbe_progress_end(&pb);
  if (rc) {
    write_error(run_buf, logdir, rc, where);
    tbe_trace_free(t);
    return TBE_EXIT_FAIL;
  }
  tbe_trace_free(t);
  return TBE_EXIT_OK;
}
