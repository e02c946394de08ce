/* input.c: streaming byte source over a plain or gzip input (see input.h).
 *
 * Opening decides what an input may be: a regular file, or standard input
 * given as "-"; everything else is refused before a byte is read (opened
 * with O_NONBLOCK, so a FIFO without a writer cannot block the open, then
 * checked with fstat on the descriptor itself).  The first bytes are read
 * once into `raw`: gzip's magic selects zlib (those bytes are its first
 * input), otherwise they are the first plain bytes handed out, so a pipe
 * loses nothing to the check.
 *
 * Plain files are read with read(2) straight into the caller's buffer.
 * gzip files are read into `raw` and inflated with zlib (windowBits 15+32:
 * automatic gzip/zlib header detection); after the end of one member the
 * stream is reset so concatenated members read as one.  A member cut
 * short is reported as TBE_ETRUNCATED after every byte before the cut has
 * been handed out, so callers can still say where the data ended; the same
 * holds for TBE_ETOOBIG at max_input.
 *
 * Peeking fills `look`, which the reads hand out before anything else.
 * Invariants: `offset` counts exactly the bytes produced (handed out or
 * waiting in look); the bytes handed out are offset - (look_len -
 * look_pos); offset never exceeds max_input. */
#include "import/input.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/alloc.h"
#include "tbexport/error.h"

static int read_some(tbe__input *in, uint8_t *buf, size_t cap, size_t *got);

/* The descriptor of `path`, refused unless a regular file ("-": a
 * duplicate of standard input, whatever it is but a directory). */
static int open_fd(tbe__input *in, const char *path, int *out) {
  int fd;
  if (strcmp(path, "-") == 0) {
    fd = fcntl(0, F_DUPFD_CLOEXEC, 3);
    if (fd < 0) return -errno;
    in->stream = 1;
  } else {
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) return -errno;
  }
  struct stat st;
  int rc = 0;
  if (fstat(fd, &st) != 0) rc = -errno;
  else if (S_ISDIR(st.st_mode)) rc = -EISDIR;
  else if (!in->stream && !S_ISREG(st.st_mode)) rc = TBE_ENOTREG;
  if (!rc && !in->stream) {
    /* Blocking reads again: a regular file never blocks anyway. */
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) rc = -errno;
    in->file_size = (uint64_t)st.st_size;
  }
  if (rc) {
    close(fd);
    return rc;
  }
  *out = fd;
  return 0;
}

static voidpf z_alloc(voidpf opaque, uInt items, uInt size) {
  return tbe__calloc((const tbe_allocator *)opaque, items, size);
}

static void z_free(voidpf opaque, voidpf p) { tbe__free((const tbe_allocator *)opaque, p); }

int tbe__input_open(tbe__input *in, const char *path, const tbe_allocator *a) {
  memset(in, 0, sizeof *in);
  in->fd = -1;
  in->max_input = UINT64_MAX;
  tbe__allocator_init(&in->alloc, a);
  in->a = &in->alloc;
  int fd = -1, rc = open_fd(in, path, &fd);
  if (rc) return rc;
#ifdef POSIX_FADV_SEQUENTIAL
  if (!in->stream) (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
  in->fd = fd;
  in->out = tbe__alloc(in->a, TBE__INPUT_CHUNK);
  in->raw = tbe__alloc(in->a, TBE__INPUT_CHUNK);
  if (!in->out || !in->raw) {
    tbe__input_close(in);
    return TBE_ENOMEM;
  }
  /* The first bytes (a pipe may deliver them one at a time). */
  size_t n = 0;
  while (n < 2) {
    size_t got = 0;
    if ((rc = read_some(in, in->raw + n, TBE__INPUT_CHUNK - n, &got))) {
      tbe__input_close(in);
      return rc;
    }
    if (!got) break;
    n += got;
  }
  if (n >= 2 && in->raw[0] == 0x1f && in->raw[1] == 0x8b) {
    in->gzip = 1;
    memset(&in->zs, 0, sizeof in->zs);
    in->zs.zalloc = z_alloc; /* zlib's state through the import's allocator */
    in->zs.zfree = z_free;
    in->zs.opaque = (voidpf)(uintptr_t)in->a;
    if (inflateInit2(&in->zs, 15 + 32) != Z_OK) {
      tbe__input_close(in);
      return TBE_ENOMEM;
    }
    in->zinit = 1;
    in->zs.next_in = in->raw;
    in->zs.avail_in = (uInt)n;
  } else {
    in->raw_len = n;
    if (n == 0) in->eof = 1;
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

static int fill_raw(tbe__input *in, uint8_t *buf, size_t cap, size_t *got);

/* Hands out at most max_input bytes in all: the bytes up to the limit
 * first, TBE_ETOOBIG with the next call. */
static int fill(tbe__input *in, uint8_t *buf, size_t cap, size_t *got) {
  *got = 0;
  if (in->broken) return in->broken;
  if (in->eof || in->fd < 0) return 0;
  if (in->offset >= in->max_input) {
    /* At the limit: one byte more decides between a clean end and too
     * much input. */
    uint8_t probe;
    size_t n = 0;
    int rc = fill_raw(in, &probe, 1, &n);
    if (rc) return rc;
    if (n) {
      in->offset--; /* that byte is never handed out */
      in->broken = TBE_ETOOBIG;
      in->eof = 1;
      return TBE_ETOOBIG;
    }
    return 0;
  }
  if (cap > in->max_input - in->offset) cap = (size_t)(in->max_input - in->offset);
  return fill_raw(in, buf, cap, got);
}

/* Fills `buf` with up to `cap` decompressed bytes (at least one unless the
 * input ended).  A corrupt stream first hands out what inflated cleanly and
 * reports the error on the next call. */
static int fill_raw(tbe__input *in, uint8_t *buf, size_t cap, size_t *got) {
  *got = 0;
  if (in->eof) return 0;
  if (cap > UINT32_MAX) cap = UINT32_MAX;
  if (!in->gzip) {
    if (in->raw_pos < in->raw_len) { /* the bytes read at open */
      size_t n = in->raw_len - in->raw_pos < cap ? in->raw_len - in->raw_pos : cap;
      memcpy(buf, in->raw + in->raw_pos, n);
      in->raw_pos += n;
      *got = n;
      in->offset += n;
      return 0;
    }
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

int tbe__input_peek(tbe__input *in, size_t want, const uint8_t **data, size_t *len) {
  if (want > TBE__INPUT_PEEK) want = TBE__INPUT_PEEK;
  if (!in->look) {
    in->look = tbe__alloc(in->a, TBE__INPUT_PEEK);
    if (!in->look) return TBE_ENOMEM;
  }
  int rc = 0;
  while (in->look_len < want) {
    size_t got;
    rc = fill(in, in->look + in->look_len, want - in->look_len, &got);
    if (rc) {
      /* Kept for the read that reaches it, after the peeked bytes. */
      in->broken = rc;
      in->eof = 1;
      break;
    }
    if (!got) break;
    in->look_len += got;
  }
  *data = in->look;
  *len = in->look_len;
  return in->look_len ? 0 : rc;
}

int tbe__input_next(tbe__input *in, const uint8_t **data, size_t *len) {
  if (in->look_pos < in->look_len) {
    *data = in->look + in->look_pos;
    *len = in->look_len - in->look_pos;
    in->look_pos = in->look_len;
    return 0;
  }
  *data = in->out;
  return fill(in, in->out, TBE__INPUT_CHUNK, len);
}

int tbe__input_read(tbe__input *in, void *buf, size_t cap, size_t *got) {
  if (in->look_pos < in->look_len) {
    size_t n = in->look_len - in->look_pos < cap ? in->look_len - in->look_pos : cap;
    memcpy(buf, in->look + in->look_pos, n);
    in->look_pos += n;
    *got = n;
    return 0;
  }
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
  tbe__free(in->a, in->look);
  in->raw = in->out = in->look = NULL;
}
