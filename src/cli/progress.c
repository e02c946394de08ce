/* progress.c: the progress bar of progress.h.
 *
 * The bar is one line redrawn with '\r' and erased with "\r\033[K" at the
 * end.  Nothing at all is written when stderr is not a terminal, so logs
 * and pipes never see control characters. */
#include "cli/progress.h"

#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "tbexport.h"

#define SHOW_AFTER_S 1.0
#define REDRAW_S 0.125

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void tbe_progress_start(tbe_progress *p, const char *label, tbe_progress_unit unit, int quiet) {
  memset(p, 0, sizeof *p);
  /* a file name: one line, inert */
  tbe_text_escape(TBE_TEXT_LINE, label, strlen(label), p->label, sizeof p->label);
  p->unit = unit;
  p->enabled = !quiet && isatty(STDERR_FILENO);
  p->start_s = now_s();
  p->width = 80;
  struct winsize ws;
  if (p->enabled && ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40)
    p->width = ws.ws_col;
}

void tbe_progress_format(char *buf, size_t size, double v, tbe_progress_unit unit) {
  if (unit == TBE_PROGRESS_BYTES) {
    const char *u[] = {"B", "kB", "MB", "GB", "TB"};
    int i = 0;
    while (v >= 1000 && i < 4) v /= 1000, i++;
    snprintf(buf, size, i ? "%.1f %s" : "%.0f %s", v, u[i]);
  } else {
    const char *u[] = {"", "k", "M", "G"};
    int i = 0;
    while (v >= 1000 && i < 3) v /= 1000, i++;
    snprintf(buf, size, i ? "%.2f%s" : "%.0f%s", v, u[i]);
  }
}

void tbe_progress_update(tbe_progress *p, uint64_t done, uint64_t total) {
  if (!p || !p->enabled) return;
  double t = now_s(), el = t - p->start_s;
  if (el < SHOW_AFTER_S || t - p->last_draw_s < REDRAW_S) return;
  p->last_draw_s = t;
  char d[32], tot[32], rate[32], eta[32] = "";
  double r = el > 0 ? (double)done / el : 0;
  tbe_progress_format(d, sizeof d, (double)done, p->unit);
  tbe_progress_format(rate, sizeof rate, r, p->unit);
  char line[512], text[256];
  int n;
  if (total && done <= total) {
    tbe_progress_format(tot, sizeof tot, (double)total, p->unit);
    if (r > 0) {
      double left = (double)(total - done) / r;
      if (left < 60) snprintf(eta, sizeof eta, " ETA %.0fs", left);
      else snprintf(eta, sizeof eta, " ETA %dm%02ds", (int)(left / 60), (int)left % 60);
    }
    double frac = (double)done / (double)total;
    const char *what = p->unit == TBE_PROGRESS_EVENTS ? " events" : "";
    const char *per = p->unit == TBE_PROGRESS_EVENTS ? " ev/s" : "/s";
    int tl = snprintf(text, sizeof text, " %s/%s%s %s%s%s", d, tot, what, rate, per, eta);
    /* The bar takes what is left of the line (8..30 columns), or is left
     * out on narrow terminals. */
    int room = p->width - 1 - (int)strlen(p->label) - 6 - 3 - (tl > 0 ? tl : 0);
    int bw = room > 30 ? 30 : room;
    char bar[34] = "";
    if (bw >= 8) {
      int fill = (int)(frac * bw);
      bar[0] = ' ';
      bar[1] = '[';
      for (int i = 0; i < bw; i++) bar[2 + i] = i < fill ? '#' : '.';
      bar[2 + bw] = ']';
      bar[3 + bw] = 0;
    }
    n = snprintf(line, sizeof line, "%s %3.0f%%%s%s", p->label, frac * 100, bar, text);
  } else {
    n = snprintf(line, sizeof line, "%s %s%s %s%s", p->label, d,
                 p->unit == TBE_PROGRESS_EVENTS ? " events" : "", rate,
                 p->unit == TBE_PROGRESS_EVENTS ? " ev/s" : "/s");
  }
  if (n > p->width - 1) n = p->width - 1;
  if (n < 0) return;
  fprintf(stderr, "\r%.*s\033[K", n, line);
  fflush(stderr);
  p->shown = 1;
}

void tbe_progress_cb(void *ctx, uint64_t done, uint64_t total) {
  tbe_progress_update((tbe_progress *)ctx, done, total);
}

void tbe_progress_end(tbe_progress *p) {
  if (!p || !p->shown) return;
  fputs("\r\033[K", stderr);
  fflush(stderr);
  p->shown = 0;
}
