/* input.h: a streaming byte source over a plain or gzip-compressed input.
 *
 * Importers read their input in chunks through this source instead of
 * loading whole files: memory stays constant (a few buffers of
 * TBE__INPUT_CHUNK bytes) whatever the input size.  gzip is detected from
 * the magic bytes, not the name; concatenated gzip members are read as one
 * stream.  The source tracks the offset of the decompressed bytes handed
 * out so far (for error messages) and the compressed bytes read and the
 * file size (for progress).
 *
 * What an input may be (the one place that decides, for every importer):
 *   - a regular file;
 *   - "-": standard input, a stream read once (`stream` is set): nothing
 *     can be re-read or sought, so detection peeks (tbe__input_peek) at
 *     bytes the importer then receives again;
 *   - anything else is refused by tbe__input_open: a directory with
 *     -EISDIR, a FIFO, device or socket with TBE_ENOTREG.  The path is
 *     opened with O_NONBLOCK (a FIFO without a writer would block open(2)
 *     forever) and checked with fstat on the open descriptor, so a path
 *     swapped after a stat cannot slip through.
 * `max_input` bounds the decompressed bytes handed out: past it a read
 * fails with TBE_ETOOBIG (an endless stream, a decompression bomb).
 *
 * Thread safety: none; one source is used by one thread. */
#ifndef TBE_IMPORT_INPUT_H
#define TBE_IMPORT_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include <zlib.h>

#include "tbexport/common.h"

#define TBE__INPUT_CHUNK (256u * 1024u)
/* The most tbe__input_peek keeps (detection needs far less). */
#define TBE__INPUT_PEEK (64u * 1024u)

/* A source must not be copied or moved once opened (zlib keeps a pointer
 * to its stream). */
typedef struct tbe__input {
  int fd;
  int stream;           /* standard input: read once, no size, no pread */
  int gzip;             /* 1 if the input is gzip-compressed */
  int eof;              /* no more data will come */
  int zinit;            /* zs is initialized */
  int member_done;      /* the last gzip member ended (a clean end) */
  int broken;           /* error to report on the next call, or 0 */
  uint64_t file_size;   /* bytes on disk (0 if unknown) */
  uint64_t raw_read;    /* file bytes read so far */
  uint64_t offset;      /* decompressed bytes produced so far (peeked included) */
  uint64_t max_input;   /* decompressed bytes allowed (UINT64_MAX: no limit) */
  int max_input_mem;    /* max_input is the default for an input of unknown size, from
                           the memory this process may use (import.c), for messages */
  uint8_t *raw;         /* file bytes: gzip input, or plain bytes read ahead */
  size_t raw_len;       /* plain: bytes read ahead, handed out from raw_pos */
  size_t raw_pos;
  uint8_t *out;         /* bytes handed out by tbe__input_next */
  uint8_t *look;        /* peeked bytes not yet handed out: look[look_pos..look_len) */
  size_t look_len, look_pos;
  z_stream zs;
  const tbe_allocator *a;
  tbe_allocator alloc;
} tbe__input;

/* Opens `path` ("-": standard input).  `a` may be NULL.  Reads the first
 * bytes to tell gzip from plain.  Returns 0, -errno (-EISDIR for a
 * directory), TBE_ENOTREG (not a regular file), or TBE_ENOMEM; on failure
 * nothing needs closing. */
int tbe__input_open(tbe__input *in, const char *path, const tbe_allocator *a);

/* Makes the first up to `want` (<= TBE__INPUT_PEEK) decompressed bytes
 * available at *data without consuming them: the next reads hand them out
 * again.  Only before any other read.  *len < want means the input is
 * shorter.  Returns 0 or an error as tbe__input_next (an error after some
 * bytes is kept for the read that reaches it). */
int tbe__input_peek(tbe__input *in, size_t want, const uint8_t **data, size_t *len);

/* Hands out the next chunk of (decompressed) bytes: *data points into the
 * source's buffer and stays valid until the next call.  *len is 0 at the
 * end of the input.  Returns 0, -errno for read errors, TBE_ECORRUPT for a
 * corrupt gzip stream, TBE_ETRUNCATED when a gzip stream ends early (the
 * bytes before the cut were handed out already), or TBE_ETOOBIG past
 * max_input. */
int tbe__input_next(tbe__input *in, const uint8_t **data, size_t *len);

/* Copies up to `cap` bytes into `buf`; *got is 0 at the end.  Same returns
 * as tbe__input_next.  Do not mix with tbe__input_next on one source. */
int tbe__input_read(tbe__input *in, void *buf, size_t cap, size_t *got);

/* Reads the whole rest of the input into a new buffer (freed with the
 * source's allocator: tbe__free(in->a, *data)).  Returns as above, or
 * TBE_ETOOBIG when it would exceed `max` bytes. */
int tbe__input_read_all(tbe__input *in, uint8_t **data, size_t *len, size_t max);

/* Decompressed bytes handed out so far. */
static inline uint64_t tbe__input_offset(const tbe__input *in) {
  return in->offset - (in->look_len - in->look_pos);
}
/* File bytes read so far and the file size, for progress reports. */
static inline uint64_t tbe__input_done(const tbe__input *in) { return in->raw_read; }
static inline uint64_t tbe__input_size(const tbe__input *in) { return in->file_size; }

/* Closes the file and frees the buffers (safe on a zeroed source). */
void tbe__input_close(tbe__input *in);

#endif
