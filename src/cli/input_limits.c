/* input_limits.c: the input-limit flags (see input_limits.h).
 *
 * The flags of one command line land in one process-wide options value
 * that the commands copy into each import: the CLI runs one command per
 * process, on one thread. */
#include "cli/input_limits.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/cli.h"

static tbe_import_options chosen = {.size = sizeof(tbe_import_options)};

/* A size or count: digits, an optional suffix (K/M/G/T, with an optional
 * "i" and "B"; counts take none), or "none".  Returns 0 or -1. */
static int parse_amount(const char *s, int size, uint64_t none, uint64_t *out) {
  if (strcmp(s, "none") == 0) {
    *out = none;
    return 0;
  }
  if (*s < '0' || *s > '9') return -1;
  errno = 0;
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || v == 0) return -1;
  unsigned shift = 0;
  if (*end && size) {
    switch (*end) {
      case 'k': case 'K': shift = 10; break;
      case 'm': case 'M': shift = 20; break;
      case 'g': case 'G': shift = 30; break;
      case 't': case 'T': shift = 40; break;
      default: return -1;
    }
    end++;
    if (*end == 'i') end++;
    if (*end == 'B' || *end == 'b') end++;
  } else if (*end == 'B' && size) {
    end++;
  }
  if (*end) return -1;
  if (shift && v > (UINT64_MAX >> shift)) return -1;
  *out = (uint64_t)v << shift;
  if (*out == none) return -1; /* reserved for "none" */
  return 0;
}

int tbe_cli_limit_option(const char *cmd, int c, const char *arg) {
  uint64_t v;
  const char *flag;
  int ok;
  switch (c) {
    case TBE_CLI_OPT_MAX_TOKEN:
      flag = "--max-token";
      if ((ok = parse_amount(arg, 1, UINT64_MAX, &v) == 0)) chosen.max_token_bytes = v;
      break;
    case TBE_CLI_OPT_MAX_EVENT_SIZE:
      flag = "--max-event-size";
      if ((ok = parse_amount(arg, 1, UINT64_MAX, &v) == 0)) chosen.max_event_bytes = v;
      break;
    case TBE_CLI_OPT_MAX_DEPTH:
      flag = "--max-depth";
      ok = parse_amount(arg, 0, UINT32_MAX, &v) == 0 && v <= UINT32_MAX;
      if (ok) chosen.max_depth = (uint32_t)v;
      break;
    case TBE_CLI_OPT_MAX_EVENTS:
      flag = "--max-events";
      if ((ok = parse_amount(arg, 0, UINT64_MAX, &v) == 0)) chosen.max_events = v;
      break;
    case TBE_CLI_OPT_MAX_INPUT:
      flag = "--max-input";
      if ((ok = parse_amount(arg, 1, UINT64_MAX, &v) == 0)) chosen.max_input_bytes = v;
      break;
    default: return -1;
  }
  if (ok) return 0;
  (void)arg; /* not echoed: it may hold anything */
  tbe_cli_error(cmd, "%s expects a positive %s, or none", flag,
                c == TBE_CLI_OPT_MAX_DEPTH || c == TBE_CLI_OPT_MAX_EVENTS
                    ? "count"
                    : "size (bytes, or with a K, M, G or T suffix)");
  return TBE_EXIT_USAGE;
}

static void print_profile(void *ctx, tbe_message_level level, const char *line) {
  (void)ctx;
  (void)level;
  tbe_cli_note("%s", line);
}

void tbe_cli_import_limits(tbe_import_options *o) {
  *o = chosen;
  o->progress = NULL;
  o->progress_ctx = NULL;
  o->threads = tbe_cli_import_threads();
  const char *prof = getenv("TBE_IMPORT_PROFILE"); /* the importer's phase times */
  if (prof && *prof && strcmp(prof, "0") != 0) o->on_profile = print_profile;
}
