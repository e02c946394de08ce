/* options.h: collector options shared by the tbexport command (which
 * encodes them into the environment of the profiled program) and the
 * injection library (which decodes them).  No CUDA types here: this part
 * is built in every configuration. */
#ifndef TBE_COLLECT_OPTIONS_H
#define TBE_COLLECT_OPTIONS_H

#include <stddef.h>

/* Environment variables between tbexport and the injected library. */
#define TBE__ENV_SPOOL_DIR "TBEXPORT_SPOOL_DIR"
#define TBE__ENV_OPTIONS "TBEXPORT_OPTIONS"

/* Bytes of an NVTX capture name or domain, its NUL included. */
#define TBE__OPT_NAME_MAX 256

typedef struct tbe__collect_opts {
  unsigned trace;      /* TBE_TRACE_* */
  double delay_s, duration_s;
  unsigned capture;    /* tbe_capture_mode */
  size_t buffer_mb;    /* cap on buffer memory; 0 = default */
  unsigned flush_ms;   /* periodic flush of CUPTI's buffers (--flush-period) */
  int keep_noisy;
  unsigned gpu_metrics_hz;  /* PM sampling rate; 0 = off */
  unsigned kernel_metrics;  /* TBE_KMETRICS_*; 0 = off */
  unsigned kernel_launches; /* first N launches per kernel name; 0 = 3 */
  /* The NVTX capture range's name and domain ("" = none, any domain):
   * the range profiler measures only launches inside it (the capture
   * itself is applied when the spool is read). */
  char capture_name[TBE__OPT_NAME_MAX], capture_domain[TBE__OPT_NAME_MAX];
} tbe__collect_opts;

/* Defaults: cuda,nvtx; no delay/duration; 64 MiB; flush every 1000 ms. */
void tbe__opts_default(tbe__collect_opts *o);

/* Encodes as "trace=3;delay=0;duration=0;capture=0;buffer_mb=64;flush_ms=1000;
 * noisy=0;pm_hz=0;kmetrics=0;klaunches=0" into buf, then ";cname=...;cdomain=..."
 * when set, with '%', ';', '=' and bytes outside printable ASCII as %XX.
 * Returns 0 or TBE_ETOOBIG. */
int tbe__opts_encode(const tbe__collect_opts *o, char *buf, size_t size);
/* Decodes such a string over the current values of `o` (unknown keys are
 * ignored; a bad value, a bad escape or a name too long is TBE_EINVAL). */
int tbe__opts_decode(const char *s, tbe__collect_opts *o);

#endif
