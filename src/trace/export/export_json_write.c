/* export_json_write.c: the sink of the Chrome JSON output
 * (export_json_int.h), which takes the document's parts in order (numbers
 * are export_json_num.c's, the escape cache export_json_esc.c's).
 *
 * The sink writes the parts plain, or compressed as below, into the
 * output's sink (exporter.h), which export_run.c points at the file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "common/alloc.h"
#include "tbexport/error.h"
#include "trace/export/export_json_int.h"

#define GZ_LEVEL 1  /* measured (bench_export): level 1 is ~2.5x faster than 6 for ~25% more bytes */

/* ---- the sink: the parts in document order, plain or gzip ----
 *
 * gzip output is compressed in parallel like pigz's independent mode: each
 * part (the head, every chunk of events, the tail) is deflated as a fresh
 * raw deflate stream ending with a sync flush (the tail with the final
 * block), so the concatenation is one valid deflate stream with no
 * back-reference across parts.  The parts' CRC-32s are combined in order
 * (crc32_combine), and one gzip header and trailer wrap the whole: a
 * single-member .gz every reader accepts.  The parts depend only on the
 * chunk size, never on the number of threads, so the compressed bytes are
 * the same whatever the thread count.  Independent parts cost ~1% in size. */

static void sink_write(jsink *k, const void *p, size_t n) {
  if (k->err) return;
  tbe__sink_write(k->out, p, n);
  k->err = tbe__sink_error(k->out);
}

void tbe__jw_gz_compress(const tbe_allocator *a, const char *in, size_t len, int last,
                         gzpart *z) {
  z->rc = 0;
  z->out_len = 0;
  z->crc = crc32(0L, (const Bytef *)in, (uInt)len);
  /* room for incompressible input: stored blocks plus the flush marker */
  size_t need = len + len / 1000 + 64 + 5 * (len / 16000 + 1);
  if (z->out_cap < need) {
    void *o = z->out;
    if (tbe__grow(a, &o, &z->out_cap, need, 1)) {
      z->rc = TBE_ENOMEM;
      return;
    }
    z->out = o;
  }
  z_stream zs;
  memset(&zs, 0, sizeof zs);
  if (deflateInit2(&zs, GZ_LEVEL, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    z->rc = TBE_ENOMEM;
    return;
  }
  zs.next_in = (Bytef *)(uintptr_t)in;
  zs.avail_in = (uInt)len;
  zs.next_out = z->out;
  zs.avail_out = (uInt)z->out_cap;
  int zr = deflate(&zs, last ? Z_FINISH : Z_SYNC_FLUSH);
  if ((last ? zr != Z_STREAM_END : zr != Z_OK) || zs.avail_in != 0) z->rc = TBE_EIO;
  z->out_len = z->out_cap - zs.avail_out;
  deflateEnd(&zs);
}

void tbe__jw_sink_part(jsink *k, const char *text, size_t len, const gzpart *z, int last) {
  if (k->err) return;
  if (!k->gzip) {
    k->total += len;
    sink_write(k, text, len);
    return;
  }
  gzpart own = {0};
  if (!z) {
    tbe__jw_gz_compress(k->a, text, len, last, &own);
    z = &own;
  }
  if (z->rc) {
    k->err = z->rc;
  } else {
    k->crc = crc32_combine(k->crc, z->crc, (z_off_t)len);
    k->total += len;
    sink_write(k, z->out, z->out_len);
  }
  tbe__free(k->a, own.out);
}

void tbe__jw_sink_start(jsink *k) {
  if (!k->gzip) return;
  k->crc = crc32(0L, Z_NULL, 0);
  /* gzip header: magic, deflate, no flags, no mtime, no extra flags, OS unix */
  static const unsigned char hdr[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3};
  sink_write(k, hdr, sizeof hdr);
}

/* The gzip trailer: CRC-32 and size mod 2^32, little-endian. */
void tbe__jw_sink_end(jsink *k) {
  if (!k->gzip) return;
  unsigned char tr[8];
  uint32_t crc = (uint32_t)k->crc, isize = (uint32_t)k->total;
  for (int i = 0; i < 4; i++) {
    tr[i] = (unsigned char)(crc >> (8 * i));
    tr[4 + i] = (unsigned char)(isize >> (8 * i));
  }
  sink_write(k, tr, 8);
}
