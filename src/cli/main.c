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
          "2 bad usage or bad input (corrupt or malformed file); diff --fail-if: 3 a\n"
          "condition fired beyond the steps' noise, 4 a side had too few steps to judge.\n");
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
