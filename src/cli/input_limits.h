/* input_limits.h: the input-limit flags of the commands that read traces
 * (import, summary, diff), one set, parsed in one place.
 *
 *   --max-token SIZE       tbe_import_options.max_token_bytes
 *   --max-event-size SIZE  max_event_bytes
 *   --max-depth N          max_depth
 *   --max-events N         max_events
 *   --max-input SIZE       max_input_bytes
 *
 * SIZE is a byte count with an optional K, M, G or T suffix (powers of
 * 1024, "KiB" and "MB" spellings accepted); N a count; "none" lifts a
 * limit.  The defaults and what each bounds: tbexport/import.h.  A
 * refusal names the flag that raises it. */
#ifndef TBE_CLI_INPUT_LIMITS_H
#define TBE_CLI_INPUT_LIMITS_H

#include <getopt.h>

#include "tbexport/import.h"

/* getopt_long codes (beyond any short option). */
enum {
  TBE_CLI_OPT_MAX_TOKEN = 0x1100,
  TBE_CLI_OPT_MAX_EVENT_SIZE,
  TBE_CLI_OPT_MAX_DEPTH,
  TBE_CLI_OPT_MAX_EVENTS,
  TBE_CLI_OPT_MAX_INPUT
};

/* Entries for a command's struct option table. */
#define TBE_CLI_LIMIT_OPTIONS                                           \
  {"max-token", required_argument, 0, TBE_CLI_OPT_MAX_TOKEN},           \
      {"max-event-size", required_argument, 0, TBE_CLI_OPT_MAX_EVENT_SIZE}, \
      {"max-depth", required_argument, 0, TBE_CLI_OPT_MAX_DEPTH},       \
      {"max-events", required_argument, 0, TBE_CLI_OPT_MAX_EVENTS},     \
      {"max-input", required_argument, 0, TBE_CLI_OPT_MAX_INPUT}

/* Lines for a command's --help. */
#define TBE_CLI_LIMIT_USAGE                                                                   \
  "input limits (refusals name the one to raise; SIZE: bytes or with K/M/G/T; none = no "   \
  "limit):\n"                                                                               \
  "  --max-token SIZE    longest JSON string, key or number (default 64M)\n"               \
  "  --max-event-size SIZE  largest single trace event (default 16M)\n"                    \
  "  --max-depth N       deepest JSON nesting (default 1000)\n"                             \
  "  --max-events N      trace events per file (default 50000000)\n"                        \
  "  --max-input SIZE    bytes read per file after decompression (default 32G; for\n"        \
  "                      stdin and gzip at most half the memory the process may use)\n"

/* Handles getopt code `c` with `arg` when it is a limit flag: returns 0
 * (taken), an exit code after printing the error (bad value), or -1 (not
 * a limit flag). */
int tbe_cli_limit_option(const char *cmd, int c, const char *arg);

/* Zeroes `o` and sets the limits the flags chose (the rest 0: defaults). */
void tbe_cli_import_limits(tbe_import_options *o);

#endif
