/* options.c: parsing and encoding of the collector's options (options.h,
 * tbexport/profiler.h).  Built in every configuration; pure string work
 * with no allocation. */
#include "collect/options.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/optsize.h"
#include "tbexport/error.h"
#include "tbexport/profiler.h"

void tbe__opts_default(tbe__collect_opts *o) {
  memset(o, 0, sizeof *o);
  o->trace = TBE_TRACE_DEFAULT;
  o->buffer_mb = 64;
  o->flush_ms = 1000;
}

/* Appends ";key=" and v escaped; 0 or TBE_ETOOBIG. */
static int put_name(char *buf, size_t size, size_t *at, const char *key, const char *v) {
  static const char hex[] = "0123456789ABCDEF";
  int n = snprintf(buf + *at, size - *at, ";%s=", key);
  if (n < 0 || (size_t)n >= size - *at) return TBE_ETOOBIG;
  *at += (size_t)n;
  for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
    int esc = *p == '%' || *p == ';' || *p == '=' || *p <= ' ' || *p >= 0x7f;
    if (*at + (esc ? 3 : 1) >= size) return TBE_ETOOBIG;
    if (esc) {
      buf[(*at)++] = '%';
      buf[(*at)++] = hex[*p >> 4];
      buf[(*at)++] = hex[*p & 15];
    } else {
      buf[(*at)++] = (char)*p;
    }
  }
  buf[*at] = '\0';
  return 0;
}

static int unhex(char c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                         : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* v (len bytes, %XX escaped) into out[TBE__OPT_NAME_MAX]. */
static int get_name(const char *v, size_t len, char *out) {
  size_t n = 0;
  for (size_t i = 0; i < len; i++) {
    int c = (unsigned char)v[i];
    if (c == '%') {
      int h = i + 2 < len ? unhex(v[i + 1]) : -1, l = h >= 0 ? unhex(v[i + 2]) : -1;
      if (l < 0 || (h == 0 && l == 0)) return TBE_EINVAL;
      c = h * 16 + l;
      i += 2;
    }
    if (n + 1 >= TBE__OPT_NAME_MAX) return TBE_EINVAL;
    out[n++] = (char)c;
  }
  out[n] = '\0';
  return 0;
}

int tbe__opts_encode(const tbe__collect_opts *o, char *buf, size_t size) {
  int n = snprintf(buf, size,
                   "trace=%u;delay=%.17g;duration=%.17g;capture=%u;buffer_mb=%zu;flush_ms=%u;"
                   "noisy=%d;pm_hz=%u;kmetrics=%u;klaunches=%u",
                   o->trace, o->delay_s, o->duration_s, o->capture, o->buffer_mb, o->flush_ms,
                   o->keep_noisy ? 1 : 0, o->gpu_metrics_hz, o->kernel_metrics, o->kernel_launches);
  if (n < 0 || (size_t)n >= size) return TBE_ETOOBIG;
  size_t at = (size_t)n;
  int rc = 0;
  if (o->capture_name[0]) rc = put_name(buf, size, &at, "cname", o->capture_name);
  if (!rc && o->capture_domain[0]) rc = put_name(buf, size, &at, "cdomain", o->capture_domain);
  return rc;
}

static int parse_u(const char *v, size_t len, unsigned long long *out) {
  if (len == 0 || len > 19) return TBE_EINVAL;
  unsigned long long x = 0;
  for (size_t i = 0; i < len; i++) {
    if (v[i] < '0' || v[i] > '9') return TBE_EINVAL;
    x = x * 10 + (unsigned)(v[i] - '0');
  }
  *out = x;
  return 0;
}

static int parse_d(const char *v, size_t len, double *out) {
  char tmp[64];
  if (len == 0 || len >= sizeof tmp) return TBE_EINVAL;
  memcpy(tmp, v, len);
  tmp[len] = '\0';
  char *end;
  double d = strtod(tmp, &end);
  if (*end || !isfinite(d) || d < 0) return TBE_EINVAL;
  *out = d;
  return 0;
}

int tbe__opts_decode(const char *s, tbe__collect_opts *o) {
  if (!s) return 0;
  while (*s) {
    const char *semi = strchr(s, ';');
    size_t len = semi ? (size_t)(semi - s) : strlen(s);
    const char *eq = memchr(s, '=', len);
    if (eq) {
      size_t kl = (size_t)(eq - s), vl = len - kl - 1;
      const char *v = eq + 1;
      unsigned long long u = 0;
      int rc = 0;
#define KEY(k) (kl == sizeof(k) - 1 && memcmp(s, k, kl) == 0)
      if (KEY("trace")) {
        if (!(rc = parse_u(v, vl, &u))) o->trace = (unsigned)u;
      } else if (KEY("delay")) {
        rc = parse_d(v, vl, &o->delay_s);
      } else if (KEY("duration")) {
        rc = parse_d(v, vl, &o->duration_s);
      } else if (KEY("capture")) {
        if (!(rc = parse_u(v, vl, &u))) o->capture = (unsigned)u;
      } else if (KEY("buffer_mb")) {
        if (!(rc = parse_u(v, vl, &u))) o->buffer_mb = (size_t)u;
      } else if (KEY("flush_ms")) {
        if (!(rc = parse_u(v, vl, &u))) o->flush_ms = (unsigned)u;
      } else if (KEY("noisy")) {
        if (!(rc = parse_u(v, vl, &u))) o->keep_noisy = u != 0;
      } else if (KEY("pm_hz")) {
        if (!(rc = parse_u(v, vl, &u))) rc = u > 1000000 ? TBE_EINVAL : 0;
        if (!rc) o->gpu_metrics_hz = (unsigned)u;
      } else if (KEY("kmetrics")) {
        if (!(rc = parse_u(v, vl, &u))) rc = u > TBE_KMETRICS_BRIEF ? TBE_EINVAL : 0;
        if (!rc) o->kernel_metrics = (unsigned)u;
      } else if (KEY("klaunches")) {
        if (!(rc = parse_u(v, vl, &u))) rc = u > 1000000 ? TBE_EINVAL : 0;
        if (!rc) o->kernel_launches = (unsigned)u;
      } else if (KEY("cname")) {
        rc = get_name(v, vl, o->capture_name);
      } else if (KEY("cdomain")) {
        rc = get_name(v, vl, o->capture_domain);
      }
#undef KEY
      if (rc) return rc;
    }
    s += len;
    if (*s == ';') s++;
  }
  return 0;
}

int tbe_profiler_parse_range(const char *arg, int *mode, char *buf, size_t size,
                             const char **name, const char **domain) {
  if (name) *name = NULL;
  if (domain) *domain = NULL;
  if (!arg || !mode || !name || !domain) return TBE_EINVAL;
  if (strcmp(arg, "cudaProfilerApi") == 0 || strcmp(arg, "cudaprofilerapi") == 0) {
    *mode = TBE_CAPTURE_PROFILER_API;
    return 0;
  }
  if (strcmp(arg, "none") == 0) {
    *mode = TBE_CAPTURE_ALL;
    return 0;
  }
  if (strncmp(arg, "nvtx:", 5) != 0 || !arg[5]) return TBE_EINVAL;
  const char *n = arg + 5;
  const char *at = strrchr(n, '@');
  size_t nl = at ? (size_t)(at - n) : strlen(n);
  if (nl == 0 || (at && !at[1])) return TBE_EINVAL;
  size_t dl = at ? strlen(at + 1) + 1 : 0;
  if (!buf || size < nl + 1 + dl) return TBE_ETOOBIG;
  memcpy(buf, n, nl);
  buf[nl] = '\0';
  *name = buf;
  if (at) {
    memcpy(buf + nl + 1, at + 1, dl);
    *domain = buf + nl + 1;
  }
  *mode = TBE_CAPTURE_NVTX;
  return 0;
}

int tbe_profiler_parse_kernel_metrics(const char *set, unsigned *out) {
  if (!set || !out) return TBE_EINVAL;
  if (strcmp(set, "default") == 0)
    *out = TBE_KMETRICS_DEFAULT;
  else if (strcmp(set, "brief") == 0)
    *out = TBE_KMETRICS_BRIEF;
  else
    return TBE_EINVAL;
  return 0;
}

int tbe_profiler_parse_seconds(const char *s, double *out) {
  if (!s || !*s || !out) return TBE_EINVAL;
  char *end;
  double d = strtod(s, &end);
  if (end == s || !isfinite(d) || d < 0) return TBE_EINVAL;
  if (strcmp(end, "ms") == 0)
    d /= 1000.0;
  else if (*end && strcmp(end, "s") != 0)
    return TBE_EINVAL;
  *out = d;
  return 0;
}

static void profiler_defaults(tbe_profiler_options *o) {
  memset(o, 0, sizeof *o);
  o->trace = TBE_TRACE_DEFAULT;
  o->buffer_mb = 64;
  o->flush_period_ms = 1000;
}
TBE__OPTIONS_INIT_SIZED(tbe_profiler_options, profiler_defaults)

int tbe_profiler_parse_trace(const char *list, unsigned *mask, size_t *bad_at) {
  if (bad_at) *bad_at = 0;
  if (!list || !mask) return TBE_EINVAL;
  unsigned m = 0;
  const char *s = list;
  for (;;) {
    const char *c = strchr(s, ',');
    size_t n = c ? (size_t)(c - s) : strlen(s);
#define W(w) (n == sizeof(w) - 1 && memcmp(s, w, n) == 0)
    if (W("cuda"))
      m |= TBE_TRACE_CUDA;
    else if (W("nvtx"))
      m |= TBE_TRACE_NVTX;
    else if (W("memory"))
      m |= TBE_TRACE_MEMORY;
    else if (W("driver"))
      m |= TBE_TRACE_DRIVER;
    else if (W("none"))
      ;
    else {
      if (bad_at) *bad_at = (size_t)(s - list);
      return TBE_EINVAL;
    }
#undef W
    if (!c) break;
    s = c + 1;
  }
  *mask = m;
  return 0;
}
