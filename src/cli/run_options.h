/* run_options.h: the flags of the commands that write a run (import and
 * `tbexport -- CMD`) about how the run sits in TensorBoard, one set,
 * parsed in one place.
 *
 *   --label KEY=VALUE  (repeatable) a hyper-parameter of the run in the
 *                      HParams dashboard (tbe_export_options.labels): KEY
 *                      letters, digits, '_', '.', '-', not one of run,
 *                      host, gpu, source, kinds, steps, command; each KEY
 *                      once; a VALUE that reads as a number is a number
 *   --no-pt-link       no <run>/<host>.pt.trace.json.gz (the link PyTorch's
 *                      TensorBoard plugin finds runs by) */
#ifndef TBE_CLI_RUN_OPTIONS_H
#define TBE_CLI_RUN_OPTIONS_H

#include <getopt.h>
#include <stddef.h>

#include "tbexport/export.h"

/* getopt_long codes (beyond any short option and the limit flags). */
enum { TBE_CLI_OPT_LABEL = 0x1200, TBE_CLI_OPT_NO_PT_LINK };

/* Entries for a command's struct option table. */
#define TBE_CLI_RUN_OPTIONS                                 \
  {"label", required_argument, 0, TBE_CLI_OPT_LABEL},       \
      {"no-pt-link", no_argument, 0, TBE_CLI_OPT_NO_PT_LINK}

/* Lines for a command's --help. */
#define TBE_CLI_RUN_USAGE                                                                     \
  "  --label KEY=VALUE  a hyper-parameter of the run in TensorBoard's HParams\n"             \
  "                  dashboard (repeatable; a numeric VALUE is a number)\n"                   \
  "  --no-pt-link    no RUN/HOST.pt.trace.json.gz (a hard link to the JSON, where\n"         \
  "                  PyTorch's TensorBoard plugin finds runs)\n"

/* Handles getopt code `c` with `arg` when it is one of these flags:
 * returns 0 (taken), an exit code after printing the error (bad value),
 * or -1 (not one of them). */
int tbe_cli_run_option(const char *cmd, int c, const char *arg);

/* Sets the labels and the link choice of the flags in `o`, and `command`
 * (kept by pointer; may be NULL). */
void tbe_cli_run_options_apply(tbe_export_options *o, const char *command);

/* The words of argv[0..n) joined by spaces, each with shell quoting where
 * it needs it, cut to fit `size` bytes ("..." at the end). */
void tbe_cli_command_line(char *const *argv, size_t n, char *buf, size_t size);

#endif
