/* main.c: the tbexport program's entry point: global options and the
 * subcommand table.  Each subcommand lives in its own cmd_<name>.c; what
 * they share (the printer of messages, exit codes) is cli.c.  Calls go one
 * way: main.c -> cmd_<name>.c -> cli.c. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "tbexport.h"

static const tbe_cli_cmd commands[] = {
    {"profile", "run a program and collect its GPU activity (also: tbexport -- CMD)", tbe_cmd_profile},
    {"inspect", "list runs, tags and counts of TensorBoard event files", tbe_cmd_inspect},
    {"import", "turn trace files into a TensorBoard run (xplane, trace JSON, scalars)", tbe_cmd_import},
    {"summary", "where the time goes in a trace: GPUs, top kernels, steps, advice", tbe_cmd_summary},
    {"diff", "compare two traces: which kernels and operators got faster or slower", tbe_cmd_diff},
};

#define NCOMMANDS (sizeof commands / sizeof commands[0])

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
          "Run 'tbexport <command> --help' (or 'tbexport help <command>') for a command's\n"
          "options.\n"
          "\n"
          "exit status: 0 success; 1 failure while working (I/O, memory);\n"
          "2 bad usage or bad input (corrupt or malformed file); diff --fail-if: 3 a\n"
          "condition fired beyond the steps' noise, 4 a side had too few steps to judge.\n");
}

/* The edit distance between a and b (insertions, deletions, substitutions
 * and swaps of neighbours each count 1), stopping at 3: enough to tell a
 * typo from another word.  Names longer than 31 bytes are never close. */
static int distance(const char *a, const char *b) {
  size_t n = strlen(a), m = strlen(b);
  if (n > 31 || m > 31) return 3;
  int d[33][33];
  for (size_t i = 0; i <= n; i++) d[i][0] = (int)i;
  for (size_t j = 0; j <= m; j++) d[0][j] = (int)j;
  for (size_t i = 1; i <= n; i++)
    for (size_t j = 1; j <= m; j++) {
      int v = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
      if (d[i - 1][j] + 1 < v) v = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < v) v = d[i][j - 1] + 1;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
        v = d[i - 2][j - 2] + 1;
      d[i][j] = v;
    }
  return d[n][m] < 3 ? d[n][m] : 3;
}

/* The command `name` most likely meant: the nearest within 2 edits (ties:
 * the first in the table), else the only one `name` is a prefix of; NULL
 * when none. */
static const char *nearest_command(const char *name) {
  const char *best = NULL, *prefixed = NULL;
  int bd = 3, nprefixed = 0;
  for (size_t i = 0; i < NCOMMANDS; i++) {
    int d = distance(name, commands[i].name);
    if (d < bd) {
      bd = d;
      best = commands[i].name;
    }
    if (*name && strncmp(commands[i].name, name, strlen(name)) == 0) {
      prefixed = commands[i].name;
      nprefixed++;
    }
  }
  if (best) return best;
  return nprefixed == 1 ? prefixed : NULL;
}

static const tbe_cli_cmd *find_command(const char *name) {
  for (size_t i = 0; i < NCOMMANDS; i++)
    if (strcmp(commands[i].name, name) == 0) return &commands[i];
  return NULL;
}

static int unknown_command(const char *name) {
  const char *near = nearest_command(name);
  if (near)
    tbe_cli_error(NULL, "unknown command '%s': did you mean 'tbexport %s'? (try --help)", name,
                  near);
  else {
    char list[128] = "";
    for (size_t i = 0; i < NCOMMANDS; i++) {
      size_t n = strlen(list);
      snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", commands[i].name);
    }
    tbe_cli_error(NULL, "unknown command '%s' (commands: %s; try --help)", name, list);
  }
  return TBE_EXIT_USAGE;
}

/* `tbexport help [COMMAND]`: the overview, or the command's own --help. */
static int help(int argc, char **argv) {
  if (argc < 2) {
    usage(stdout);
    return TBE_EXIT_OK;
  }
  const tbe_cli_cmd *c = find_command(argv[1]);
  if (!c) return unknown_command(argv[1]);
  char *sub[] = {argv[1], "--help", NULL};
  optind = 0;
  opterr = 1;
  return c->run(2, sub);
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
  if (strcmp(name, "help") == 0) return help(argc - optind, argv + optind);
  const tbe_cli_cmd *cmd = find_command(name);
  if (!cmd) return unknown_command(name);
  int sub_argc = argc - optind;
  char **sub_argv = argv + optind;
  optind = 0; /* glibc: 0 re-initializes getopt for the subcommand */
  opterr = 1;
  return cmd->run(sub_argc, sub_argv);
}
