/* cli.c: what the subcommands share (cli.h): the one printer of messages
 * and the exit status of a library error.  main.c and every cmd_<name>.c
 * call into this file; it calls none of them. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "tbexport.h"

/* ---- the one printer of messages ---- */

/* Formats the message, puts it in line form (tbexport/text.h: every control
 * character, invalid UTF-8 byte and invisible or reordering character
 * shown as an escape; idempotent, so a library message already made safe
 * reads the same) after `prefix`, and writes the line with one call.
 * Without memory for a long message, the part that fits a stack buffer. */
static void say(const char *prefix, const char *fmt, va_list ap) {
  char small[1024], *msg = small;
  va_list aq;
  va_copy(aq, ap);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  if (n < 0) n = 0;
  if ((size_t)n >= sizeof small) {
    char *big = malloc((size_t)n + 1);
    if (big && vsnprintf(big, (size_t)n + 1, fmt, aq) >= 0) msg = big;
    else n = (int)sizeof small - 1, free(big);
  }
  va_end(aq);
  size_t pl = strlen(prefix), need = tbe_text_escape(TBE_TEXT_LINE, msg, (size_t)n, NULL, 0);
  char cut[sizeof small + 64], *line = malloc(pl + need + 2);
  size_t len;
  if (line && (need || !n)) {
    memcpy(line, prefix, pl);
    len = pl + tbe_text_escape(TBE_TEXT_LINE, msg, (size_t)n, line + pl, need + 1);
  } else {
    /* no memory for the whole line: the part that fits on the stack */
    free(line);
    line = NULL;
    snprintf(cut, sizeof cut, "%s", prefix);
    len = strlen(cut);
    tbe_text_escape(TBE_TEXT_LINE, msg, (size_t)n, cut + len, sizeof cut - len - 1);
    len = strlen(cut);
  }
  char *out = line ? line : cut;
  out[len++] = '\n';
  fwrite(out, 1, len, stderr);
  free(line);
  if (msg != small) free(msg);
}

void tbe_cli_error(const char *cmd, const char *fmt, ...) {
  char prefix[64];
  snprintf(prefix, sizeof prefix, "tbexport%s%s: ", cmd ? " " : "", cmd ? cmd : "");
  va_list ap;
  va_start(ap, fmt);
  say(prefix, fmt, ap);
  va_end(ap);
}

void tbe_cli_warn(const char *cmd, const char *fmt, ...) {
  char prefix[64];
  snprintf(prefix, sizeof prefix, "tbexport%s%s: warning: ", cmd ? " " : "", cmd ? cmd : "");
  va_list ap;
  va_start(ap, fmt);
  say(prefix, fmt, ap);
  va_end(ap);
}

void tbe_cli_note(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  say("", fmt, ap);
  va_end(ap);
}

void tbe_cli_on_message(void *quiet, tbe_message_level level, const char *line) {
  if (level < TBE_MSG_ERROR && quiet && *(const int *)quiet) return;
  tbe_cli_error(NULL, "%s", line);
}

/* ---- thread counts from the environment ---- */

/* A count >= 0 from variable `name`; -1 when unset or not a number. */
static long env_count(const char *name) {
  const char *v = getenv(name);
  if (!v || !*v) return -1;
  char *end;
  long n = strtol(v, &end, 10);
  return *end || n < 0 ? -1 : n;
}

unsigned tbe_cli_import_threads(void) {
  long n = env_count("TBE_IMPORT_THREADS");
  if (n < 0) return 0;
  return n <= 1 ? 1 : n > 64 ? 64 : (unsigned)n; /* 0 (none) and 1: one thread */
}

unsigned tbe_cli_export_threads(void) {
  long n = env_count("TBE_EXPORT_THREADS");
  return n < 1 ? 0 : n > 32 ? 32 : (unsigned)n;
}

int tbe_cli_exit_for(int err) {
  switch (err) {
    case 0: return TBE_EXIT_OK;
    case TBE_ECORRUPT:
    case TBE_ECHECKSUM:
    case TBE_ETRUNCATED:
    case TBE_EPARSE:
    case TBE_EFORMAT:
    case TBE_EUTF8:
    case TBE_ENAME:
    case TBE_EINVAL:
    case TBE_ENOTREG:
    case TBE_ETOOBIG: /* input past a limit (tbexport/import.h) */
      return TBE_EXIT_USAGE;
    default: return TBE_EXIT_FAIL;
  }
}
