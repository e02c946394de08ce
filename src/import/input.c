/* input.c: streaming byte source over a plain or gzip file (see input.h).
 *
 * Plain files are read with read(2) straight into the output buffer.  gzip
 * files are read into `raw` and inflated into `out` with zlib (windowBits
 * 15+32: automatic gzip/zlib header detection); after the end of one member
 * the stream is reset so concatenated members read as one.  A member cut
 * short is reported as TBE_ETRUNCATED after every byte before the cut has
 * been handed out, so callers can still say where the data ended.
 * Invariant: `offset` counts exactly the bytes handed out. */
#include "import/input.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/alloc.h"
#include "tbexport/error.h"

int tbe__input_open(tbe__input *in, const char *path, const tbe_allocator *a) {
  memset(in, 0, sizeof *in);
  in->fd = -1;
  tbe__allocator_init(&in->alloc, a);
  in->a = &in->alloc;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -errno;
  struct stat st;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) in->file_size = (uint64_t)st.st_size;
#ifdef POSIX_FADV_SEQUENTIAL
  (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
  in->fd = fd;
  in->out = tbe__alloc(in->a, TBE__INPUT_CHUNK);
  if (!in->out) {
    tbe__input_close(in);
    return TBE_ENOMEM;
  }
  /* Sniff the gzip magic without consuming: read the first bytes into
   * `raw` when compressed, or keep them as the first plain chunk. */
  unsigned char head[2];
  ssize_t n;
  do n = pread(fd, head, 2, 0);
  while (n < 0 && errno == EINTR);
  if (n < 0) {
    int rc = -errno;
    tbe__input_close(in);
    return rc;
  }
  if (n == 2 && head[0] == 0x1f && head[1] == 0x8b) {
    in->gzip = 1;
    in->raw = tbe__alloc(in->a, TBE__INPUT_CHUNK);
    if (!in->raw) {
      tbe__input_close(in);
      return TBE_ENOMEM;
    }
    memset(&in->zs, 0, sizeof in->zs);
    if (inflateInit2(&in->zs, 15 + 32) != Z_OK) {
      tbe__input_close(in);
      return TBE_ENOMEM;
    }
    in->zinit = 1;
  }
  return 0;
}

static int read_some(tbe__input *in, uint8_t *buf, size_t cap, size_t *got) {
  for (;;) {
    ssize_t n = read(in->fd, buf, cap);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -errno;
    *got = (size_t)n;
    in->raw_read += (uint64_t)n;
    return 0;
  }
}

/* Fills `buf` with up to `cap` decompressed bytes (at least one unless the
 * input ended).  A corrupt stream first hands out what inflated cleanly and
 * reports the error on the next call. */
static int fill(tbe__input *in, uint8_t *buf, size_t cap, size_t *got) {
  *got = 0;
  if (in->broken) return in->broken;
  if (in->eof || in->fd < 0) return 0;
  if (cap > UINT32_MAX) cap = UINT32_MAX;
  if (!in->gzip) {
    int rc = read_some(in, buf, cap, got);
    if (rc) return rc;
    if (*got == 0) in->eof = 1;
    in->offset += *got;
    return 0;
  }
  in->zs.next_out = buf;
  in->zs.avail_out = (uInt)cap;
  int rc = 0;
  while (in->zs.avail_out == cap) {
    if (in->zs.avail_in == 0) {
      size_t n = 0;
      rc = read_some(in, in->raw, TBE__INPUT_CHUNK, &n);
      if (rc) break;
      if (n == 0) {
        in->eof = 1;
        /* A clean end is the end of a member (or an empty file). */
        if (!in->member_done && in->raw_read > 0) rc = TBE_ETRUNCATED;
        break;
      }
      in->zs.next_in = in->raw;
      in->zs.avail_in = (uInt)n;
    }
    if (in->member_done) {
      /* More bytes after a finished member: another member follows. */
      if (inflateReset(&in->zs) != Z_OK) {
        rc = TBE_ECORRUPT;
        break;
      }
      in->member_done = 0;
    }
    int zr = inflate(&in->zs, Z_NO_FLUSH);
    if (zr == Z_STREAM_END) {
      in->member_done = 1;
    } else if (zr == Z_MEM_ERROR) {
      rc = TBE_ENOMEM;
      break;
    } else if (zr != Z_OK && zr != Z_BUF_ERROR) {
      rc = TBE_ECORRUPT;
      break;
    }
  }
  *got = cap - in->zs.avail_out;
  in->offset += *got;
  if (rc && *got) {
    /* Hand out the good bytes now, the error with the next call. */
    in->broken = rc;
    in->eof = 1;
    return 0;
  }
  if (rc) in->eof = 1;
  return rc;
}

int tbe__input_next(tbe__input *in, const uint8_t **data, size_t *len) {
  *data = in->out;
  return fill(in, in->out, TBE__INPUT_CHUNK, len);
}

int tbe__input_read(tbe__input *in, void *buf, size_t cap, size_t *got) {
  return fill(in, buf, cap, got);
}

int tbe__input_read_all(tbe__input *in, uint8_t **data, size_t *len, size_t max) {
  *data = NULL;
  *len = 0;
  size_t cap = in->gzip ? 4 * TBE__INPUT_CHUNK : (size_t)in->file_size + 1;
  if (cap > max + 1) cap = max + 1;
  if (cap < 4096) cap = 4096;
  uint8_t *buf = tbe__alloc(in->a, cap);
  if (!buf) return TBE_ENOMEM;
  size_t n = 0;
  for (;;) {
    if (n == cap) {
      if (cap > max) {
        tbe__free(in->a, buf);
        return TBE_ETOOBIG;
      }
      size_t ncap = cap * 2 > max + 1 ? max + 1 : cap * 2;
      uint8_t *nb = tbe__realloc(in->a, buf, cap, ncap);
      if (!nb) {
        tbe__free(in->a, buf);
        return TBE_ENOMEM;
      }
      buf = nb;
      cap = ncap;
    }
    size_t got;
    int rc = tbe__input_read(in, buf + n, cap - n, &got);
    if (rc) {
      tbe__free(in->a, buf);
      return rc;
    }
    if (got == 0) break;
    n += got;
  }
  if (n > max) {
    tbe__free(in->a, buf);
    return TBE_ETOOBIG;
  }
  *data = buf;
  *len = n;
  return 0;
}

void tbe__input_close(tbe__input *in) {
  if (!in->a) return;
  if (in->zinit) inflateEnd(&in->zs);
  in->zinit = 0;
  if (in->fd >= 0) close(in->fd);
  in->fd = -1;
  tbe__free(in->a, in->raw);
  tbe__free(in->a, in->out);
  in->raw = in->out = NULL;
}
