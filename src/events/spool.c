/* spool.c: writing and scanning the collector's spool file (see spool.h).
 *
 * Writing is append-only: the background thread builds a payload of items
 * in a tbe__buf and hands it to tbe__spool_write_frame, which prefixes the
 * length and checksum and issues a single write.  Scanning never trusts a
 * length: a frame is accepted only when it lies wholly inside the file, is
 * at most TBE__SPOOL_FRAME_MAX bytes and its checksum matches; items inside
 * an accepted frame are bounds-checked too.  The checksum is CRC32C
 * (src/common/crc32c.c, hardware-accelerated where the CPU allows); the
 * header records the checksum kind, so a spool of another build is refused
 * rather than misread.  The collector writes (src/collect), the spool
 * importer scans (src/import/spool.c). */
#include "events/spool.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/crc32c.h"
#include "common/iofault.h"
#include "tbexport/error.h"

const uint32_t tbe__spool_checksum_kind = 1;

uint32_t tbe__spool_checksum(const void *p, size_t n, uint32_t seed) {
  return tbe__crc32c_extend(seed, p, n);
}

static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static uint32_t get32(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

void tbe__spool_header(uint8_t out[TBE__SPOOL_HEADER], int64_t created_ns) {
  memset(out, 0, TBE__SPOOL_HEADER);
  memcpy(out, TBE__SPOOL_MAGIC, 8);
  put32(out + 8, TBE__SPOOL_VERSION);
  put32(out + 12, TBE__SPOOL_BOM);
  put32(out + 16, tbe__spool_checksum_kind);
  memcpy(out + 24, &created_ns, 8);
}

void tbe__spool_item(tbe__buf *b, unsigned type, const void *body, size_t len) {
  if (len > UINT16_MAX) len = UINT16_MAX; /* callers never exceed this */
  uint8_t *p = tbe__buf_reserve(b, 4 + len);
  if (!p) return;
  uint16_t t = (uint16_t)type, l = (uint16_t)len;
  memcpy(p, &t, 2);
  memcpy(p + 2, &l, 2);
  if (len) memcpy(p + 4, body, len);
  b->len += 4 + len;
}

void tbe__spool_str(tbe__buf *b, uint32_t id, const char *s, size_t len) {
  if (len > UINT16_MAX - 4) len = UINT16_MAX - 4; /* names longer than 64 KiB are cut */
  uint8_t *p = tbe__buf_reserve(b, 8 + len);
  if (!p) return;
  uint16_t t = TBE__SP_STR, l = (uint16_t)(4 + len);
  memcpy(p, &t, 2);
  memcpy(p + 2, &l, 2);
  memcpy(p + 4, &id, 4);
  if (len) memcpy(p + 8, s, len);
  b->len += 8 + len;
}

/* A frame that failed after part of it was written (a short write, then
 * ENOSPC) is cut off again, so that a later frame never follows a torn one
 * (the reader stops at the first bad frame).  Best effort: `fd` is opened
 * with O_APPEND, so its offset is the end of the file. */
static void cut_back(int fd, size_t done) {
  off_t end = lseek(fd, 0, SEEK_CUR);
  if (end >= (off_t)done && ftruncate(fd, end - (off_t)done) != 0) {
    /* the torn frame stays; the reader stops there */
  }
}

int tbe__spool_write_frame(int fd, const uint8_t *payload, size_t len) {
  if (len > TBE__SPOOL_FRAME_MAX) return TBE_ETOOBIG;
  uint8_t head[8];
  put32(head, (uint32_t)len);
  uint32_t c = tbe__spool_checksum(head, 4, 0);
  c = tbe__spool_checksum(payload, len, c);
  put32(head + 4, c);
  struct iovec iov[2] = {{head, 8}, {(void *)payload, len}};
  size_t total = 8 + len, done = 0;
  /* One writev in the common case; finish short writes piecewise. */
  while (done < total) {
    struct iovec v[2];
    int nv = 0;
    size_t skip = done;
    for (int i = 0; i < 2; i++) {
      if (skip >= iov[i].iov_len) {
        skip -= iov[i].iov_len;
        continue;
      }
      v[nv].iov_base = (uint8_t *)iov[i].iov_base + skip;
      v[nv].iov_len = iov[i].iov_len - skip;
      skip = 0;
      nv++;
    }
    ssize_t w = tbe__io_writev(fd, v, nv);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      int rc = w < 0 ? -errno : TBE_EIO;
      if (done > 0) cut_back(fd, done);
      return rc;
    }
    done += (size_t)w;
  }
  return 0;
}

int tbe__spool_scan(const uint8_t *data, size_t n,
                    int (*on_item)(void *ctx, unsigned type, const uint8_t *body, size_t len),
                    void *ctx, tbe__spool_tail *tail) {
  tbe__spool_tail t = {0, 0, 0, NULL};
  if (tail) *tail = t;
  if (n < TBE__SPOOL_HEADER || memcmp(data, TBE__SPOOL_MAGIC, 8) != 0) {
    /* A header cut short by a crash before its first write completed. */
    if (n < TBE__SPOOL_HEADER && memcmp(data, TBE__SPOOL_MAGIC, n < 8 ? n : 8) == 0) {
      t.bytes = n;
      t.why = "truncated header";
      if (tail) *tail = t;
      return 0;
    }
    if (tail) tail->why = "not a spool file (no TBESPL01 magic)";
    return TBE_EFORMAT;
  }
  /* Fields of another build: said with their offset. */
  size_t at = 0;
  const char *odd = NULL;
  if (get32(data + 8) != TBE__SPOOL_VERSION)
    at = 8, odd = "unknown spool version";
  else if (get32(data + 12) != TBE__SPOOL_BOM)
    at = 12, odd = "other byte order";
  else if (get32(data + 16) != tbe__spool_checksum_kind)
    at = 16, odd = "other checksum kind";
  if (odd) {
    if (tail) tail->good_bytes = at, tail->why = odd;
    return TBE_ECORRUPT;
  }
  size_t off = TBE__SPOOL_HEADER;
  while (off < n) {
    if (n - off < 8) {
      t.why = "truncated frame header";
      break;
    }
    uint32_t len = get32(data + off);
    uint32_t want = get32(data + off + 4);
    if (len > TBE__SPOOL_FRAME_MAX) {
      t.why = "frame length out of range";
      break;
    }
    if (n - off - 8 < len) {
      t.why = "truncated frame";
      break;
    }
    uint32_t c = tbe__spool_checksum(data + off, 4, 0);
    c = tbe__spool_checksum(data + off + 8, len, c);
    if (c != want) {
      t.why = "checksum mismatch";
      break;
    }
    /* Check every item's bounds before reporting any of this frame. */
    const uint8_t *p = data + off + 8, *e = p + len;
    const char *bad = NULL;
    for (const uint8_t *q = p; q < e;) {
      if (e - q < 4) {
        bad = "item header past frame end";
        break;
      }
      uint16_t il;
      memcpy(&il, q + 2, 2);
      if ((size_t)(e - q - 4) < il) {
        bad = "item past frame end";
        break;
      }
      q += 4 + il;
    }
    if (bad) {
      t.why = bad;
      break;
    }
    for (const uint8_t *q = p; q < e;) {
      uint16_t it, il;
      memcpy(&it, q, 2);
      memcpy(&il, q + 2, 2);
      int rc = on_item(ctx, it, q + 4, il);
      if (rc) {
        t.good_bytes = off;
        if (tail) *tail = t;
        return rc;
      }
      q += 4 + il;
    }
    off += 8 + (size_t)len;
    t.frames++;
  }
  t.good_bytes = off <= n ? off : n;
  if (off < n) {
    t.good_bytes = off;
    t.bytes = n - off;
  }
  if (tail) *tail = t;
  return 0;
}
