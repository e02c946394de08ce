/* run_options.c: --label and --no-pt-link (run_options.h).  The flags are
 * kept in this file until the command applies them: a command parses its
 * options once per process. */
#include "cli/run_options.h"

#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

#define MAX_LABELS 64

static const char *g_labels[MAX_LABELS];
static size_t g_nlabels;
static int g_no_pt_link;

static const char *const RESERVED[] = {"run", "host", "gpu", "source", "kinds", "steps",
                                       "command"};

/* Whether `s` is well-formed UTF-8 (shortest forms, no surrogates). */
static int utf8_ok(const unsigned char *s) {
  while (*s) {
    unsigned c = *s, n = c < 0x80 ? 0 : (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2
                                       : (c & 0xf8) == 0xf0 ? 3 : 9;
    if (n == 9 || (n == 1 && c < 0xc2)) return 0;
    unsigned cp = n == 0 ? c : c & (0x3fu >> n);
    for (unsigned i = 1; i <= n; i++) {
      if ((s[i] & 0xc0) != 0x80) return 0;
      cp = cp << 6 | (s[i] & 0x3f);
    }
    if ((n == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
        (n == 3 && (cp < 0x10000 || cp > 0x10ffff)))
      return 0;
    s += n + 1;
  }
  return 1;
}

int tbe_cli_run_option(const char *cmd, int c, const char *arg) {
  if (c == TBE_CLI_OPT_NO_PT_LINK) {
    g_no_pt_link = 1;
    return 0;
  }
  if (c != TBE_CLI_OPT_LABEL) return -1;
  const char *eq = strchr(arg, '=');
  size_t kl = eq ? (size_t)(eq - arg) : 0;
  if (!eq || kl == 0 || kl > 100 || strspn(arg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                 "0123456789_.-") != kl) {
    tbe_cli_error(cmd, "--label: expected KEY=VALUE with KEY of letters, digits, '_', '.', '-' "
                       "(at most 100), got '%.80s'", arg);
    return TBE_EXIT_USAGE;
  }
  if (!utf8_ok((const unsigned char *)eq + 1)) {
    tbe_cli_error(cmd, "--label %.*s: the value is not valid UTF-8", (int)kl, arg);
    return TBE_EXIT_USAGE;
  }
  for (size_t i = 0; i < sizeof RESERVED / sizeof *RESERVED; i++)
    if (strlen(RESERVED[i]) == kl && memcmp(RESERVED[i], arg, kl) == 0) {
      tbe_cli_error(cmd, "--label: '%s' is set by tbexport itself; choose another key",
                    RESERVED[i]);
      return TBE_EXIT_USAGE;
    }
  for (size_t i = 0; i < g_nlabels; i++)
    if (strncmp(g_labels[i], arg, kl + 1) == 0) {
      tbe_cli_error(cmd, "--label: key '%.*s' given twice", (int)kl, arg);
      return TBE_EXIT_USAGE;
    }
  if (g_nlabels == MAX_LABELS) {
    tbe_cli_error(cmd, "--label: more than %d labels", MAX_LABELS);
    return TBE_EXIT_USAGE;
  }
  g_labels[g_nlabels++] = arg;
  return 0;
}

void tbe_cli_run_options_apply(tbe_export_options *o, const char *command) {
  o->labels = g_nlabels ? g_labels : NULL;
  o->nlabels = g_nlabels;
  o->no_pt_link = g_no_pt_link;
  o->command = command;
}

/* Appends `s` to buf at *at (bounded; *at may pass size - 1: cut). */
static void put(char *buf, size_t size, size_t *at, const char *s, size_t n) {
  for (size_t i = 0; i < n && *at + 1 < size; i++) buf[(*at)++] = s[i];
}

void tbe_cli_command_line(char *const *argv, size_t n, char *buf, size_t size) {
  if (!size) return;
  size_t at = 0;
  for (size_t i = 0; i < n; i++) {
    const char *w = argv[i];
    if (i) put(buf, size, &at, " ", 1);
    int plain = *w && strspn(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                "0123456789_.,:=/+-@%") == strlen(w);
    if (plain) {
      put(buf, size, &at, w, strlen(w));
      continue;
    }
    put(buf, size, &at, "'", 1);
    for (const char *p = w; *p; p++) {
      if (*p == '\'') put(buf, size, &at, "'\\''", 4);
      /* control bytes, and any non-ASCII byte (the text must stay valid
       * UTF-8 however it is cut) */
      else if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f) put(buf, size, &at, "?", 1);
      else put(buf, size, &at, p, 1);
    }
    put(buf, size, &at, "'", 1);
  }
  if (at + 1 >= size && size > 4) memcpy(buf + size - 4, "...", 3), at = size - 1;
  buf[at < size ? at : size - 1] = '\0';
}
