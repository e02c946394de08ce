/* cli.h: what the subcommands of the tbexport program share.
 *
 * Exit codes (documented in `tbexport --help`):
 *   0  success
 *   1  failure while working (I/O error, out of memory)
 *   2  bad usage or bad input (unknown option, corrupt or malformed file)
 *   3  diff --fail-if: a condition fired (a change past its threshold and
 *      beyond the steps' own noise)
 *   4  diff --fail-if: none fired, but one passed its threshold where too
 *      few steps could tell it from noise
 *   127 the command to profile was not found (profiling only; otherwise the
 *       profiled command's own exit status is returned)
 * Errors are one line on stderr: "tbexport <cmd>: <what>: <why>", whatever
 * the input: every message goes through the printers below, which show
 * control characters, invalid UTF-8 and invisible or reordering Unicode as
 * escapes (common/text.h, the line form), so a file name holding a newline
 * or an escape sequence can neither add a line nor act on the terminal.
 * Text from an input printed on stdout is escaped where it is printed (the
 * reports, inspect). */
#ifndef TBE_CLI_H
#define TBE_CLI_H

#include <stdio.h>

#include "tbexport.h"

#define TBE_EXIT_OK 0
#define TBE_EXIT_FAIL 1
#define TBE_EXIT_USAGE 2
#define TBE_EXIT_FIRED 3    /* diff --fail-if: a condition fired */
#define TBE_EXIT_UNJUDGED 4 /* diff --fail-if: none fired, one could not be judged */
#define TBE_EXIT_NOCMD 127

typedef struct tbe_cli_cmd {
  const char *name;
  const char *summary;
  int (*run)(int argc, char **argv); /* argv[0] is the subcommand name */
} tbe_cli_cmd;

/* The printer and the exit codes live in cli.c.
 *
 * Print "tbexport <cmd>: <message>\n", "tbexport <cmd>: warning:
 * <message>\n" (cmd NULL: "tbexport: ...") and "<message>\n" to stderr,
 * the message made one line of safe text, in one write.  Pass text from
 * inputs as it is (the line form is idempotent, so text already in line
 * form reads the same; text in terminal form would show its backslashes
 * doubled). */
void tbe_cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tbe_cli_warn(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tbe_cli_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The library's messages (a tbe_message_fn): "tbexport: <line>" on
 * stderr through the printer above; `quiet` points to an int, and when
 * it is non-zero only errors are printed. */
void tbe_cli_on_message(void *quiet, tbe_message_level level, const char *line);

/* The thread counts the library takes as options, from the environment
 * (the program reads it; the library never does): TBE_IMPORT_THREADS for
 * tbe_import_options.threads (0: the calling thread only, N: N parse
 * workers) and TBE_EXPORT_THREADS for tbe_export_options.threads (N
 * formatting threads).  0 when unset or not a number: the default. */
unsigned tbe_cli_import_threads(void);
unsigned tbe_cli_export_threads(void);

/* Maps a library error code to an exit status (corrupt/parse -> 2, else 1). */
int tbe_cli_exit_for(int err);

/* Profiling (cmd_profile.c): `tbexport [OPTIONS] -- CMD`, also `profile`.
 * tbe_cmd_profile_wants is 1 when argv[1] is "--" or a profile option. */
int tbe_cmd_profile(int argc, char **argv);
int tbe_cmd_profile_wants(int argc, char **argv);

/* Subcommands (one file each: src/cli/cmd_<name>.c). */
int tbe_cmd_inspect(int argc, char **argv);
int tbe_cmd_import(int argc, char **argv);
int tbe_cmd_summary(int argc, char **argv);
int tbe_cmd_diff(int argc, char **argv);

/* Shared by summary and diff (cmd_summary.c): loads FILE, or every host
 * file of RUN (in `logdir`), each into its own analysis (from the host's
 * persisted analysis when it is current, else from its finished trace:
 * traces[i] is NULL for a host read from its analysis file), and
 * aggregates them; prints one error line and returns an exit
 * code on failure (then `r` holds nothing).  Free with tbe_cli_run_free. */
struct tbe_trace;
struct tbe_analysis;
struct tbe_run_analysis;
struct tbe_report_options;
typedef struct tbe_cli_run {
  char label[512];              /* the run name or the file's name */
  int is_run;
  size_t n;                     /* host files */
  struct tbe_trace **traces;
  struct tbe_analysis **an;
  char **hosts;                 /* their labels: the host part of the file names */
  struct tbe_run_analysis *run;
} tbe_cli_run;
/* How to load (analysis_files.h): `from_traces` imports every trace even
 * where a current persisted analysis is there; `no_cache` neither reads
 * nor writes the cache of raw files' analyses. */
typedef struct tbe_cli_load_options {
  int quiet;
  int from_traces;
  int no_cache;
} tbe_cli_load_options;
int tbe_cli_load_run(const char *cmd, const char *logdir, const char *arg,
                     const tbe_cli_load_options *lo, tbe_cli_run *r);
void tbe_cli_run_free(tbe_cli_run *r);
/* --format/--sort/--top/--width (c = 'f', 's', 'n', 'w'); 0 or an exit code. */
int tbe_cli_report_option(const char *cmd, int c, const char *arg, struct tbe_report_options *o);
/* Writes a report to stdout; 0 or TBE_EXIT_FAIL after printing the error. */
int tbe_cli_print(const char *cmd, const char *s, size_t len);

#endif
