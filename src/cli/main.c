/* main.c: the tbexport program's entry point: global options and the
 * subcommand table.  Each subcommand lives in its own cmd_<name>.c and uses
 * only the public headers plus cli.h. */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/alloc.h"
#include "common/text.h"
#include "tbexport.h"

static const tbe_cli_cmd commands[] = {
    {"profile", "run a program and collect its GPU activity (also: tbexport -- CMD)", tbe_cmd_profile},
    {"inspect", "list runs, tags and counts of TensorBoard event files", tbe_cmd_inspect},
    {"import", "turn trace files into a TensorBoard run (xplane, trace JSON, scalars)", tbe_cmd_import},
    {"summary", "where the time goes in a trace: GPUs, top kernels, steps, advice", tbe_cmd_summary},
    {"diff", "compare two traces: which kernels and operators got faster or slower", tbe_cmd_diff},
};

/* ---- the one printer of messages ---- */

/* Formats the message, puts it in line form (common/text.h: every control
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
  tbe_allocator al;
  tbe__allocator_init(&al, NULL);
  tbe__buf line;
  tbe__buf_init(&line, &al);
  tbe__buf_puts(&line, prefix);
  tbe__text_line(&line, msg, (size_t)n);
  tbe__buf_putc(&line, '\n');
  if (!tbe__buf_error(&line)) {
    fwrite(line.data, 1, line.len, stderr);
  } else {
    char cut[sizeof small];
    tbe__text_term_z(cut, sizeof cut, msg, 1);
    fprintf(stderr, "%s%s\n", prefix, cut);
  }
  tbe__buf_deinit(&line);
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

static void usage(FILE *f) {
  fprintf(f,
          "usage: tbexport [--help] [--version] <command> [args]\n"
          "\n"
          "Turns GPU activity into files TensorBoard and trace viewers read.\n"
          "\n"
          "commands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
  fprintf(f,
          "\n"
          "Run 'tbexport <command> --help' for a command's options.\n"
          "\n"
          "exit status: 0 success; 1 failure while working (I/O, memory);\n"
          "2 bad usage or bad input (corrupt or malformed file).\n");
}

int main(int argc, char **argv) {
  static const struct option opts[] = {
      {"help", no_argument, 0, 'h'}, {"version", no_argument, 0, 'V'}, {0, 0, 0, 0}};
  int c;
  /* `tbexport [--logdir DIR ...] -- CMD ARGS` is the profiling form. */
  if (tbe_cmd_profile_wants(argc, argv)) return tbe_cmd_profile(argc, argv);
  opterr = 0;
  /* '+' stops at the first non-option: the subcommand. */
  while ((c = getopt_long(argc, argv, "+hV", opts, NULL)) != -1) {
    switch (c) {
      case 'h': usage(stdout); return TBE_EXIT_OK;
      case 'V': printf("tbexport %s\n", tbe_version_string()); return TBE_EXIT_OK;
      default:
        tbe_cli_error(NULL, "unknown option '%s' (try --help)", argv[optind - 1]);
        return TBE_EXIT_USAGE;
    }
  }
  if (optind >= argc) {
    usage(stderr);
    return TBE_EXIT_USAGE;
  }
  const char *name = argv[optind];
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
    if (strcmp(commands[i].name, name) == 0) {
      int sub_argc = argc - optind;
      char **sub_argv = argv + optind;
      optind = 0; /* glibc: 0 re-initializes getopt for the subcommand */
      opterr = 1;
      return commands[i].run(sub_argc, sub_argv);
    }
  }
  tbe_cli_error(NULL, "unknown command '%s' (try --help)", name);
  return TBE_EXIT_USAGE;
}
