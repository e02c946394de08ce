/* import_error.c: the one-line errors of every importer.
 *
 * "<path>: byte <offset>[ (line L, column C)]: <message>", made inert for
 * a terminal (common/text.h's line form), the refusals of the input
 * limits, each naming its option's flag (--max-input's also when its
 * default came from the memory), and of device ordinals out of range.
 * Importers call these; they call nothing back (importer.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/text.h"
#include "import/importer.h"
#include "tbexport/error.h"

int tbe__import_fail(tbe_import_error *err, int code, const char *path, uint64_t offset,
                     uint64_t line, uint64_t column, const char *fmt, ...) {
  if (!err) return code;
  char what[384], at[96];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  err->offset = offset == UINT64_MAX ? 0 : offset;
  err->line = line;
  err->column = column;
  if (offset == UINT64_MAX)
    snprintf(at, sizeof at, ": ");
  else if (line)
    snprintf(at, sizeof at, ": byte %llu (line %llu, column %llu): ", (unsigned long long)offset,
             (unsigned long long)line, (unsigned long long)column);
  else
    snprintf(at, sizeof at, ": byte %llu: ", (unsigned long long)offset);
  /* One line of inert text whatever the input and its name hold (the line
   * form of common/text.h: controls and invisible characters as escapes);
   * the name is cut first, so the reason always shows. */
  char *m = err->message;
  size_t cap = sizeof err->message, o = tbe__text_term_z(m, cap - 128, path, 1);
  o += tbe__text_term_z(m + o, cap - o, at, 1);
  tbe__text_term_z(m + o, cap - o, what, 1);
  return code;
}

/* ---- limits ---- */

void tbe__import_size_str(uint64_t bytes, char *buf, size_t size) {
  static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) {
    snprintf(buf, size, "%llu bytes", (unsigned long long)bytes);
    return;
  }
  double v = (double)bytes;
  int u = -1;
  while (v >= 1024.0 && u < 5) v /= 1024.0, u++;
  if (v == (double)(uint64_t)v) snprintf(buf, size, "%llu %s", (unsigned long long)v, units[u]);
  else snprintf(buf, size, "%.1f %s", v, units[u]);
}

void tbe__import_limit_msg(char *buf, size_t size, tbe__limit which, const tbe_import_options *o,
                           const char *what) {
  char lim[48];
  const char *flag = "";
  switch (which) {
    case TBE__LIM_TOKEN:
      tbe__import_size_str(o->max_token_bytes, lim, sizeof lim);
      flag = "--max-token";
      break;
    case TBE__LIM_EVENT:
      tbe__import_size_str(o->max_event_bytes, lim, sizeof lim);
      flag = "--max-event-size";
      break;
    case TBE__LIM_DEPTH:
      snprintf(lim, sizeof lim, "%u levels", o->max_depth);
      flag = "--max-depth";
      break;
    case TBE__LIM_EVENTS:
      snprintf(lim, sizeof lim, "%llu events", (unsigned long long)o->max_events);
      flag = "--max-events";
      break;
    case TBE__LIM_INPUT:
      tbe__import_size_str(o->max_input_bytes, lim, sizeof lim);
      flag = "--max-input";
      break;
  }
  snprintf(buf, size, "%s (the limit is %s; raise it with %s)", what, lim, flag);
}

int tbe__import_limit(tbe_import_error *err, const char *path, uint64_t offset, tbe__limit which,
                      const tbe_import_options *o, const char *what) {
  char msg[320];
  tbe__import_limit_msg(msg, sizeof msg, which, o, what);
  return tbe__import_fail(err, TBE_ETOOBIG, path, offset, 0, 0, "%s", msg);
}

const char *tbe__import_input_limit_what(const tbe__input *in) {
  if (in && in->max_input_mem)
    return in->gzip ? "more input than the limit after decompression, for an input of unknown "
                      "size: half the memory this process may use"
                    : "more input than the limit for an input of unknown size: half the memory "
                      "this process may use";
  return in && in->gzip ? "more input than the limit, after decompression" : "more input than the limit";
}

int tbe__import_input_fail(tbe_import_error *err, int rc, const char *path, const tbe__input *in,
                           const tbe_import_options *o) {
  uint64_t off = in ? tbe__input_offset(in) : UINT64_MAX;
  switch (rc) {
    case TBE_ETOOBIG:
      return tbe__import_limit(err, path, off, TBE__LIM_INPUT, o, tbe__import_input_limit_what(in));
    case TBE_ECORRUPT:
      return tbe__import_fail(err, rc, path, off, 0, 0, "corrupt gzip data");
    case TBE_ETRUNCATED:
      return tbe__import_fail(err, rc, path, off, 0, 0, "the gzip stream is truncated");
    case TBE_ENOTREG:
      return tbe__import_fail(err, rc, path, UINT64_MAX, 0, 0,
                              "not a regular file (a FIFO, device or socket): give a trace file, "
                              "or - to read standard input");
    case -EISDIR:
      return tbe__import_fail(err, rc, path, UINT64_MAX, 0, 0, "is a directory, not a trace file");
    default:
      return tbe__import_fail(err, rc, path, off == 0 ? UINT64_MAX : off, 0, 0, "%s",
                              tbe_strerror(rc));
  }
}

/* ---- device ordinals ---- */

void tbe__import_device_msg(char *buf, size_t size, const char *field, int none_ok,
                            const char *value, size_t vlen) {
  snprintf(buf, size, "%s is not a GPU ordinal (0 to %d%s): %.*s", field, (int)TBE__DEVICE_MAX,
           none_ok ? ", or -1 for none" : "", (int)(vlen > 40 ? 40 : vlen), value);
}
