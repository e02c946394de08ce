/* import.c: the input, format detection, limits and dispatch of
 * tbe_import_file.
 *
 * One open per import: tbe__input_open decides what an input may be (a
 * regular file or "-"), detection peeks at its first bytes (kept for the
 * importer, so a pipe loses nothing) and the importer reads on from the
 * same source.
 *
 * Detection looks at content only, and never at one byte: an XSpace is a
 * protobuf whose top-level framing holds (for a plain regular file every
 * field header is walked to the exact end of the file; through gzip or a
 * pipe, every field that starts in the first 64 KiB); only then JSON,
 * which must begin a JSON object or array after an optional UTF-8 BOM
 * (a plane of 91 or 123 bytes puts '[' or '{' right after XSpace's first
 * tag, and the tag 0x0a is a newline); then the SQLite header; last, a
 * start that is an XSpace field tag whose framing breaks later is still
 * an XSpace, cut or corrupt, so its importer names the byte.
 *
 * The limits of tbe_import_options are resolved here (0 means the
 * default) and every refusal names the limit and its flag
 * (tbe__import_limit). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/text.h"
#include "import/importers.h"
#include "tbexport/error.h"
#include "trace/exporter.h"

const char *tbe_import_format_name(tbe_import_format f) {
  switch (f) {
    case TBE_FORMAT_CHROME_JSON: return "chrome-json";
    case TBE_FORMAT_XSPACE: return "xspace";
    case TBE_FORMAT_NSYS_SQLITE: return "nsys-sqlite";
    default: return "unknown";
  }
}

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
  char msg[256];
  tbe__import_limit_msg(msg, sizeof msg, which, o, what);
  return tbe__import_fail(err, TBE_ETOOBIG, path, offset, 0, 0, "%s", msg);
}

int tbe__import_input_fail(tbe_import_error *err, int rc, const char *path, const tbe__input *in,
                           const tbe_import_options *o) {
  uint64_t off = in ? tbe__input_offset(in) : UINT64_MAX;
  switch (rc) {
    case TBE_ETOOBIG:
      return tbe__import_limit(err, path, off, TBE__LIM_INPUT, o,
                               in && in->gzip ? "more input than the limit, after decompression"
                                              : "more input than the limit");
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

/* The options with every limit resolved: 0 becomes the default. */
static tbe_import_options resolve(const tbe_import_options *o) {
  tbe_import_options r;
  memset(&r, 0, sizeof r);
  if (o) r = *o;
  if (!r.max_token_bytes) r.max_token_bytes = TBE_IMPORT_DEFAULT_MAX_TOKEN_BYTES;
  if (!r.max_event_bytes) r.max_event_bytes = TBE_IMPORT_DEFAULT_MAX_EVENT_BYTES;
  if (!r.max_depth) r.max_depth = TBE_IMPORT_DEFAULT_MAX_DEPTH;
  if (!r.max_events) r.max_events = TBE_IMPORT_DEFAULT_MAX_EVENTS;
  if (!r.max_input_bytes) r.max_input_bytes = TBE_IMPORT_DEFAULT_MAX_INPUT_BYTES;
  return r;
}

/* ---- detection ---- */

static int rd_varint(const uint8_t *b, size_t n, size_t *pos, uint64_t *v) {
  uint64_t r = 0;
  for (unsigned shift = 0; shift < 64 && *pos < n; shift += 7) {
    uint8_t c = b[(*pos)++];
    r |= (uint64_t)(c & 0x7f) << shift;
    if (!(c & 0x80)) {
      *v = r;
      return 0;
    }
  }
  return -1;
}

/* One top-level XSpace field header at b[0..n): its tag and the bytes it
 * spans from its first byte (header + payload).  Returns 1, 0 when it is
 * not a valid header, -1 when `n` is too short to tell. */
static int xs_field(const uint8_t *b, size_t n, int first, uint64_t *span) {
  size_t pos = 0;
  uint64_t tag, v;
  if (rd_varint(b, n, &pos, &tag)) return n >= 10 ? 0 : -1;
  uint64_t f = tag >> 3, wt = tag & 7;
  if (f == 0 || f > 0x1fffffff) return 0;
  /* XSpace: planes (1), errors (2), warnings (3), hostnames (4): all
   * length-delimited; the first field is one of them.  Other field numbers
   * are skipped by readers (newer schemas), with any valid wire type. */
  if (f <= 4 ? wt != 2 : first) return 0;
  switch (wt) {
    case 0:
      if (rd_varint(b, n, &pos, &v)) return n - pos >= 10 ? 0 : -1;
      *span = pos;
      return 1;
    case 1: *span = pos + 8; return 1;
    case 5: *span = pos + 4; return 1;
    case 2:
      if (rd_varint(b, n, &pos, &v)) return n - pos >= 10 ? 0 : -1;
      if (v > UINT64_MAX - pos) return 0;
      *span = pos + v;
      return 1;
    default: return 0;
  }
}

/* Whether the whole regular file `fd` of `size` bytes is a sequence of
 * valid top-level XSpace fields ending exactly at its end.  Headers are
 * read through a window, so small fields cost one sequential read of the
 * file and big ones a seek each. */
static int xs_framing_file(int fd, uint64_t size) {
  uint8_t win[4096];
  uint64_t pos = 0, wstart = 0;
  size_t wlen = 0;
  int first = 1;
  while (pos < size) {
    if (pos < wstart || pos + 20 > wstart + wlen) {
      ssize_t r;
      do r = pread(fd, win, sizeof win, (off_t)pos);
      while (r < 0 && errno == EINTR);
      if (r <= 0) return 0;
      wstart = pos;
      wlen = (size_t)r;
    }
    uint64_t span;
    int ok = xs_field(win + (pos - wstart), wlen - (size_t)(pos - wstart), first, &span);
    if (ok != 1 || span > size - pos) return 0;
    pos += span;
    first = 0;
  }
  return size > 0;
}

/* The same over the first bytes of a stream: every field that starts in
 * the window is valid (one that ends past it cannot be checked here; the
 * importer checks it). */
static int xs_framing_head(const uint8_t *b, size_t n, int at_end) {
  size_t pos = 0;
  int first = 1;
  while (pos < n) {
    uint64_t span;
    int ok = xs_field(b + pos, n - pos, first, &span);
    if (ok == 0) return 0;
    if (ok < 0) return !at_end;
    if (span > n - pos) return !at_end;
    pos += (size_t)span;
    first = 0;
  }
  return n > 0;
}

/* Whether the first plane (when the input starts with one) begins like an
 * XPlane message, as far as the window shows: fields id (1, varint), name,
 * lines, event and stat metadata, stats (2..6, length-delimited), or later
 * fields of a plain wire type.  Text that happens to frame as a field
 * (JSON after a newline) fails here. */
static int xs_first_plane_ok(const uint8_t *b, size_t n) {
  size_t pos = 0;
  uint64_t tag, len;
  if (rd_varint(b, n, &pos, &tag) || tag != ((1u << 3) | 2)) return 1; /* not a plane first */
  if (rd_varint(b, n, &pos, &len)) return 1;
  size_t end = len < n - pos ? pos + (size_t)len : n;
  while (pos < end) {
    uint64_t v;
    if (rd_varint(b, end, &pos, &tag)) return 1; /* cut by the window */
    uint64_t f = tag >> 3, wt = tag & 7;
    if (f == 0 || (f == 1 && wt != 0) || (f >= 2 && f <= 6 && wt != 2)) return 0;
    switch (wt) {
      case 0:
        if (rd_varint(b, end, &pos, &v)) return 1;
        break;
      case 1: pos += 8; break;
      case 5: pos += 4; break;
      case 2:
        if (rd_varint(b, end, &pos, &v)) return 1;
        if (v > end - pos) return 1; /* runs past the window */
        pos += (size_t)v;
        break;
      default: return 0;
    }
  }
  return 1;
}

static int json_space(uint8_t c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

/* Whether b[0..n) begins a JSON trace: an optional UTF-8 BOM, whitespace,
 * then '{' followed by a key or '}', or '[' followed by the start of a
 * value or ']' (the window may end anywhere in between). */
static int json_start(const uint8_t *b, size_t n) {
  size_t i = 0;
  if (n >= 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF) i = 3;
  while (i < n && json_space(b[i])) i++;
  if (i == n || (b[i] != '{' && b[i] != '[')) return 0;
  uint8_t open = b[i++];
  while (i < n && json_space(b[i])) i++;
  if (i == n) return 1;
  if (open == '{') return b[i] == '"' || b[i] == '}';
  return strchr("{[]\"-0123456789tfn", b[i]) != NULL && b[i];
}

/* Detects the format of an open input from its peeked head and, for a
 * plain regular file, its whole protobuf framing. */
static int detect_open(tbe__input *in, tbe_import_format *fmt) {
  const uint8_t *b;
  size_t n;
  *fmt = TBE_FORMAT_UNKNOWN;
  int rc = tbe__input_peek(in, TBE__INPUT_PEEK, &b, &n);
  if (rc && rc != TBE_ETRUNCATED && rc != TBE_ECORRUPT) return rc;
  int whole = n < TBE__INPUT_PEEK; /* the window holds the whole input */
  int xs = !in->gzip && !in->stream ? xs_framing_file(in->fd, in->file_size)
                                    : xs_framing_head(b, n, whole);
  if (xs && !xs_first_plane_ok(b, n)) xs = 0;
  if (xs) *fmt = TBE_FORMAT_XSPACE;
  else if (json_start(b, n)) *fmt = TBE_FORMAT_CHROME_JSON;
  else if (!in->gzip && n >= 16 && memcmp(b, "SQLite format 3", 16) == 0)
    *fmt = TBE_FORMAT_NSYS_SQLITE;
  else if (n >= 2 && (b[0] == 0x0a || b[0] == 0x12 || b[0] == 0x1a || b[0] == 0x22))
    *fmt = TBE_FORMAT_XSPACE; /* none of the others, and starts like XSpace: cut or
                                 corrupt, its importer says where */
  return 0;
}

int tbe_import_detect(const char *path, tbe_import_format *fmt) {
  if (!path || !fmt) return TBE_EINVAL;
  *fmt = TBE_FORMAT_UNKNOWN;
  if (strcmp(path, "-") == 0) return TBE_EINVAL; /* would consume standard input */
  tbe__input in;
  int rc = tbe__input_open(&in, path, NULL);
  if (rc) return rc;
  rc = detect_open(&in, fmt);
  tbe__input_close(&in);
  return rc;
}

/* ---- import ---- */

/* Counts the events of this import kept with duration 0 because their
 * source gave a negative one (the model flags them), and says so: a
 * warning every output shows. */
static int warn_clamped(tbe_trace *t, size_t first, const char *path) {
  uint64_t n = 0;
  for (size_t i = first; i < t->nevents; i++) n += (t->events[i].flags & TBE_EVF_CLAMPED) != 0;
  if (!n) return 0;
  return tbe_trace_warn(t, "%s: %llu event%s had a negative duration (kept with duration 0)", path,
                        (unsigned long long)n, n == 1 ? "" : "s");
}

int tbe_import_file(tbe_trace *t, const char *path, const tbe_import_options *opts,
                    tbe_import_error *err) {
  if (err) memset(err, 0, sizeof *err);
  if (!t || !path) return TBE_EINVAL;
  tbe_import_options o = resolve(opts);
  if (!o.allocator) o.allocator = tbe__trace_allocator(t);
  tbe__input in;
  int rc = tbe__input_open(&in, path, o.allocator);
  if (rc) return tbe__import_input_fail(err, rc, path, NULL, &o);
  in.max_input = o.max_input_bytes;
  tbe_import_format fmt;
  rc = detect_open(&in, &fmt);
  if (rc) {
    tbe__import_input_fail(err, rc, path, &in, &o);
    tbe__input_close(&in);
    return rc;
  }
  size_t first = t->nevents;
  switch (fmt) {
    case TBE_FORMAT_CHROME_JSON: rc = tbe__import_chrome_json(t, &in, path, &o, err); break;
    case TBE_FORMAT_XSPACE: rc = tbe__import_xspace(t, &in, path, &o, err); break;
    case TBE_FORMAT_NSYS_SQLITE:
      if (in.stream) {
        rc = tbe__import_fail(err, TBE_EFORMAT, path, 0, 0, 0,
                              "an Nsight Systems SQLite export cannot be read from standard input "
                              "(SQLite needs the file): give its path");
        break;
      }
      tbe__input_close(&in);
      rc = tbe__import_nsys(t, path, &o, err);
      break;
    default:
      rc = tbe__import_fail(err, TBE_EFORMAT, path, 0, 0, 0,
                            "not a Chrome trace JSON, XSpace or Nsight Systems SQLite file");
  }
  tbe__input_close(&in);
  if (rc == 0) rc = warn_clamped(t, first, path);
  if (rc == 0) rc = tbe_trace_finish(t);
  if (rc && err && !err->message[0])
    tbe__import_fail(err, rc, path, UINT64_MAX, 0, 0, "%s", tbe_strerror(rc));
  return rc;
}
