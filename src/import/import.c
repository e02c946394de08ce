/* import.c: format detection and dispatch for tbe_import_file.
 *
 * Detection looks at content only: gzip magic (then the first non-space
 * byte of the decompressed stream), '{' or '[' for JSON, the SQLite header
 * string, and otherwise a protobuf whose first field is XSpace.planes
 * (field 1, length-delimited) or another XSpace field. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "common/text.h"
#include "import/importers.h"
#include "tbexport/error.h"

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

static tbe_import_format classify(const unsigned char *b, size_t n) {
  size_t i = 0;
  if (n >= 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF) i = 3; /* UTF-8 BOM */
  while (i < n && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n')) i++;
  if (i < n && (b[i] == '{' || b[i] == '[')) return TBE_FORMAT_CHROME_JSON;
  if (n >= 16 && memcmp(b, "SQLite format 3", 16) == 0) return TBE_FORMAT_NSYS_SQLITE;
  /* XSpace: a protobuf starting with field 1..4, wire type 2 (length-
   * delimited): tag bytes 0x0a, 0x12, 0x1a or 0x22. */
  if (n >= 2 && (b[0] == 0x0a || b[0] == 0x12 || b[0] == 0x1a || b[0] == 0x22))
    return TBE_FORMAT_XSPACE;
  return TBE_FORMAT_UNKNOWN;
}

int tbe_import_detect(const char *path, tbe_import_format *fmt) {
  if (!path || !fmt) return TBE_EINVAL;
  *fmt = TBE_FORMAT_UNKNOWN;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -errno;
  unsigned char head[64];
  ssize_t n = read(fd, head, sizeof head);
  int rc = n < 0 ? -errno : 0;
  close(fd);
  if (rc) return rc;
  if (n >= 2 && head[0] == 0x1f && head[1] == 0x8b) {
    gzFile gz = gzopen(path, "rb");
    if (!gz) return TBE_ENOMEM;
    unsigned char dh[64];
    int dn = gzread(gz, dh, sizeof dh);
    gzclose(gz);
    if (dn > 0 && classify(dh, (size_t)dn) == TBE_FORMAT_CHROME_JSON)
      *fmt = TBE_FORMAT_CHROME_JSON;
    return 0;
  }
  *fmt = classify(head, (size_t)n);
  return 0;
}

int tbe_import_file(tbe_trace *t, const char *path, const tbe_import_options *opts,
                    tbe_import_error *err) {
  if (err) memset(err, 0, sizeof *err);
  if (!t || !path) return TBE_EINVAL;
  static const tbe_import_options none = {0};
  if (!opts) opts = &none;
  tbe_import_format fmt;
  int rc = tbe_import_detect(path, &fmt);
  if (rc) return tbe__import_fail(err, rc, path, UINT64_MAX, 0, 0, "%s", tbe_strerror(rc));
  switch (fmt) {
    case TBE_FORMAT_CHROME_JSON: rc = tbe__import_chrome_json(t, path, opts, err); break;
    case TBE_FORMAT_XSPACE: rc = tbe__import_xspace(t, path, opts, err); break;
    case TBE_FORMAT_NSYS_SQLITE: rc = tbe__import_nsys(t, path, opts, err); break;
    default:
      return tbe__import_fail(err, TBE_EFORMAT, path, 0, 0, 0,
                              "not a Chrome trace JSON, XSpace or Nsight Systems SQLite file");
  }
  if (rc == 0) rc = tbe_trace_finish(t);
  if (rc && err && !err->message[0])
    tbe__import_fail(err, rc, path, UINT64_MAX, 0, 0, "%s", tbe_strerror(rc));
  return rc;
}
