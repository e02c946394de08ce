/* progress.h: a progress bar on stderr for long imports and exports.
 *
 * Drawn only when stderr is a terminal, only once the work has taken more
 * than about a second (short jobs print nothing), at most ~8 times a second,
 * and never with --quiet.  Shows what is done (bytes or events), the total
 * and percentage when known, the rate and the time left.  tbe_progress_end
 * erases the bar so the lines printed afterwards stay clean. */
#ifndef TBE_CLI_PROGRESS_H
#define TBE_CLI_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

typedef enum tbe_progress_unit { TBE_PROGRESS_BYTES, TBE_PROGRESS_EVENTS } tbe_progress_unit;

typedef struct tbe_progress {
  char label[64];
  tbe_progress_unit unit;
  int enabled;      /* stderr is a tty and not quiet */
  int shown;        /* something was drawn */
  double start_s;   /* monotonic seconds */
  double last_draw_s;
  int width;        /* terminal columns */
} tbe_progress;

/* Starts a bar for one piece of work.  `quiet` silences it. */
void tbe_progress_start(tbe_progress *p, const char *label, tbe_progress_unit unit, int quiet);
/* Reports `done` out of `total` (0 = unknown).  Cheap when nothing is drawn. */
void tbe_progress_update(tbe_progress *p, uint64_t done, uint64_t total);
/* A callback for the library's progress hooks (ctx = tbe_progress *). */
void tbe_progress_cb(void *ctx, uint64_t done, uint64_t total);
/* Erases the bar, if one was drawn. */
void tbe_progress_end(tbe_progress *p);

/* Formats `v` into buf: bytes with their unit ("12.3 MB"), events with a
 * magnitude suffix only ("4.56M"). */
void tbe_progress_format(char *buf, size_t size, double v, tbe_progress_unit unit);

#endif
