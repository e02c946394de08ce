/* path_hint.h: what to say when summary or diff cannot use the input it
 * was given: one line that names what the input is (a missing path, a log
 * dir, a run's folder, a folder of traces, a run with event files only)
 * and the command that would read it. */
#ifndef TBE_CLI_PATH_HINT_H
#define TBE_CLI_PATH_HINT_H

/* `arg` is neither a trace file nor a run of `logdir` with a trace: prints
 * the one line for command `cmd` and returns TBE_EXIT_USAGE.  `run_ok`:
 * whether `arg` is a valid run name (a run of that name was looked for). */
int tbe_cli_explain_input(const char *cmd, const char *arg, const char *logdir, int run_ok);

#endif
