/* sink.c: the file backend of tbe__sink (sink.h): a file that the run
 * room staged or export_run.c opened, written through the I/O seam
 * (common/iofault.h).  The backend never opens, names or closes a file:
 * the caller owns the descriptor. */
#include <errno.h>
#include <string.h>

#include "common/fsutil.h"
#include "trace/export/sink.h"

static int file_write(tbe__sink *s, const void *p, size_t n) { return tbe__write_all(s->fd, p, n); }

static int file_patch(tbe__sink *s, uint64_t at, const void *p, size_t n) {
  return tbe__pwrite_all(s->fd, p, n, at);
}

static const tbe__sink_ops FILE_SINK = {file_write, file_patch};

void tbe__sink_file(tbe__sink *s, int fd) {
  memset(s, 0, sizeof *s);
  s->ops = &FILE_SINK;
  s->fd = fd;
}
