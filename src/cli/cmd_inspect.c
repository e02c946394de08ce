/* cmd_inspect.c: `tbexport inspect` (filled in by the event reader work). */
#include "cli/cli.h"
int tbe_cmd_inspect(int argc, char **argv) {
  (void)argc;
  (void)argv;
  tbe_cli_error("inspect", "not yet available");
  return TBE_EXIT_FAIL;
}
