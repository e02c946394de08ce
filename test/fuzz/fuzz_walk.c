/* fuzz_walk.c: libFuzzer target for the directory walk of the event
 * reader (tbe_reader_open with TBE_READER_RECURSIVE, what `tbexport
 * inspect` lists).
 *
 * The input describes a tree, three bytes per entry (op, a, b), built in a
 * fresh temporary directory: a subdirectory, an event file (a valid record,
 * or empty), a symbolic link to a directory of the tree (relative or
 * absolute), a link "." or "..", a link to a directory outside the tree, a
 * FIFO named like an event file, a link to an event file or a dangling one.
 * Then the tree is opened and every file read.  What must hold whatever the
 * tree:
 *  - the walk ends (no loop; libFuzzer's timeout catches a slow one), and
 *    no path is listed twice;
 *  - it lists no more files than there are event-file entries that are, or
 *    lead to, regular files (each directory read once: nothing repeats);
 *  - every regular event file of the real tree (reached without a link,
 *    within the depth limit) is listed under its own path;
 *  - every listed path is a regular file; a FIFO is never listed (reading
 *    one would block the run), and the reader reads all files to the end;
 *  - the skipped entries are FIFOs or links, no more than were made.
 * Any failure aborts with what differed. */
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz_util.h"
#include "tbexport/reader.h"

#define MAX_OPS 48
#define MAX_DIRS 24

/* snprintf that aborts on truncation (paths here are short by design). */
#define FMT(buf, size, ...)                                      \
  do {                                                           \
    if (snprintf(buf, size, __VA_ARGS__) >= (int)(size)) abort(); \
  } while (0)

static void fail(const char *what) {
  fprintf(stderr, "fuzz_walk: %s\n", what);
  abort();
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  return remove(p);
}

/* One record holding an Event with wall_time 1.0 (field 1, fixed64). */
static const uint8_t record[] = {
    0x09, 0, 0, 0, 0, 0, 0, 0,       /* length 9 */
    0x00, 0x00, 0x00, 0x00,          /* length CRC, patched in */
    0x09, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, /* wall_time = 1.0 */
    0x00, 0x00, 0x00, 0x00};         /* data CRC, patched in */

static uint32_t crc32c(const uint8_t *p, size_t n) {
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
  }
  return ~c;
}

static uint32_t masked(uint32_t c) { return ((c >> 15) | (c << 17)) + 0xa282ead8u; }

static void put32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

typedef struct tree {
  char root[160];
  char dirs[MAX_DIRS][400]; /* relative to root; "" is the root */
  int depth[MAX_DIRS];
  size_t ndirs;
  char real[MAX_OPS][480]; /* regular event files of the real tree, relative */
  size_t nreal;
  size_t nentries; /* event-file entries that are or lead to regular files */
  size_t nlinks, nfifos;
} tree;

static void abs_path(const tree *t, const char *rel, char *out, size_t size) {
  FMT(out, size, "%s%s%s", t->root, rel[0] ? "/" : "", rel);
}

/* A relative path from directory `from` to directory `to` (both relative
 * to the root). */
static void rel_path(const tree *t, size_t from, size_t to, char *out, size_t size) {
  out[0] = '\0';
  size_t o = 0;
  for (int i = 0; i < t->depth[from] && o + 4 < size; i++) o += (size_t)snprintf(out + o, size - o, "../");
  FMT(out + o, size - o, "%s", t->dirs[to][0] ? t->dirs[to] : ".");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  (void)fz_write;
  static uint8_t rec[sizeof record];
  static int init;
  if (!init) {
    memcpy(rec, record, sizeof record);
    put32(rec + 8, masked(crc32c(rec, 8)));
    put32(rec + 21, masked(crc32c(rec + 12, 9)));
    init = 1;
  }
  tree t;
  memset(&t, 0, sizeof t);
  snprintf(t.root, sizeof t.root, "%s/wXXXXXX", fz_tmpdir());
  if (!mkdtemp(t.root)) abort();
  char outside[200];
  FMT(outside, sizeof outside, "%s-out", t.root);
  if (mkdir(outside, 0755) != 0) abort();
  char p[1024], q[1024];
  FMT(p, sizeof p, "%s/events.out.tfevents.outside", outside);
  FILE *f = fopen(p, "wb");
  if (!f || fwrite(rec, 1, sizeof rec, f) != sizeof rec || fclose(f) != 0) abort();
  t.ndirs = 1;
  size_t nops = size / 3 < MAX_OPS ? size / 3 : MAX_OPS;
  for (size_t i = 0; i < nops; i++) {
    uint8_t op = data[3 * i] % 8, a = data[3 * i + 1], b = data[3 * i + 2];
    size_t d = a % t.ndirs, e = b % t.ndirs;
    char name[64];
    switch (op) {
      case 0: /* a subdirectory */
        if (t.ndirs == MAX_DIRS || t.depth[d] >= 40) break;
        snprintf(q, sizeof q, "%s", t.dirs[d]);
        FMT(t.dirs[t.ndirs], sizeof t.dirs[0], "%s%sd%zu", q, q[0] ? "/" : "", i);
        abs_path(&t, t.dirs[t.ndirs], p, sizeof p);
        if (mkdir(p, 0755) != 0) abort();
        t.depth[t.ndirs] = t.depth[d] + 1;
        t.ndirs++;
        break;
      case 1: /* an event file: a record, or empty */
        snprintf(name, sizeof name, "events.out.tfevents.%zu", i);
        FMT(q, sizeof q, "%s%s%s", t.dirs[d], t.dirs[d][0] ? "/" : "", name);
        abs_path(&t, q, p, sizeof p);
        f = fopen(p, "wb");
        if (!f || ((b & 1) && fwrite(rec, 1, sizeof rec, f) != sizeof rec) || fclose(f) != 0) abort();
        if (t.depth[d] <= 32) FMT(t.real[t.nreal++], sizeof t.real[0], "%s", q);
        t.nentries++;
        break;
      case 2: /* a link to a directory of the tree, relative or absolute */
      case 3: /* a link "." or ".." (or the root) */
      case 4: /* a link out of the tree */
        snprintf(name, sizeof name, "l%zu", i);
        if (op == 2 && (b & 0x80)) abs_path(&t, t.dirs[e], q, sizeof q);
        else if (op == 2) rel_path(&t, d, e, q, sizeof q);
        else if (op == 3) FMT(q, sizeof q, "%s", b % 3 == 0 ? "." : b % 3 == 1 ? ".." : t.root);
        else FMT(q, sizeof q, "%s", outside);
        FMT(p, sizeof p, "%s%s%s/%s", t.root, t.dirs[d][0] ? "/" : "", t.dirs[d], name);
        if (symlink(q, p) != 0) abort();
        t.nlinks++;
        /* the outside file, through a link out or ".." at the top (the
         * temporary directory holds the outside one) */
        if (op == 4 || (op == 3 && b % 3 == 1 && d == 0)) t.nentries++;
        break;
      case 5: /* a FIFO named like an event file */
        FMT(p, sizeof p, "%s%s%s/events.out.tfevents.fifo%zu", t.root, t.dirs[d][0] ? "/" : "",
            t.dirs[d], i);
        if (mkfifo(p, 0644) != 0) abort();
        t.nfifos++;
        break;
      case 6: /* a link named like an event file, to one of the real files */
      case 7: /* or dangling */
        FMT(p, sizeof p, "%s%s%s/events.out.tfevents.link%zu", t.root, t.dirs[d][0] ? "/" : "",
            t.dirs[d], i);
        if (op == 6 && t.nreal) abs_path(&t, t.real[b % t.nreal], q, sizeof q);
        else snprintf(q, sizeof q, "missing%zu", i);
        if (symlink(q, p) != 0) abort();
        if (op == 6 && t.nreal) t.nentries++;
        break;
    }
  }

  tbe_reader *r;
  int rc = tbe_reader_open(&r, t.root, TBE_READER_RECURSIVE, NULL);
  if (rc != 0) fail("open failed");
  size_t n = tbe_reader_file_count(r);
  /* Outside links all lead to one directory: count its file once per
   * distinct way in, at most once per link. */
  if (n > t.nentries) fail("more files listed than there are");
  size_t nskip = tbe_reader_skipped(r, 0, NULL, NULL);
  if (nskip > t.nlinks + t.nfifos) fail("more entries skipped than links and FIFOs");
  for (size_t i = 0; i < nskip; i++) {
    const char *sp, *why;
    struct stat st;
    tbe_reader_skipped(r, i, &sp, &why);
    if (!sp || !why || lstat(sp, &st) != 0 || !(S_ISLNK(st.st_mode) || S_ISFIFO(st.st_mode)))
      fail("a skipped entry is neither a link nor a FIFO");
  }
  /* Read everything: the paths, once each; every real file among them. */
  char **seen = calloc(n + 1, sizeof *seen);
  size_t nseen = 0;
  const tbe_tb_event *ev;
  size_t guard = 0;
  for (;;) {
    rc = tbe_reader_next(r, &ev);
    if (rc == 0) break;
    if (++guard > 10 * (n + 1) + 100) fail("reader does not end");
    if (rc < 0) fail("a listed file could not be read");
    int known = 0;
    for (size_t k = 0; k < nseen && !known; k++) known = strcmp(seen[k], ev->path) == 0;
    if (!known) {
      struct stat st;
      if (stat(ev->path, &st) != 0 || !S_ISREG(st.st_mode)) fail("listed a path that is no file");
      if (nseen == n) fail("more paths than files");
      seen[nseen++] = strdup(ev->path);
    }
  }
  /* The empty files have no events: walk the rest of the listing through
   * the run names instead (a path holds the run and the file name). */
  for (size_t i = 0; i < t.nreal; i++) {
    abs_path(&t, t.real[i], p, sizeof p);
    struct stat st;
    if (stat(p, &st) != 0) abort();
    if (st.st_size == 0) continue;
    int found = 0;
    for (size_t k = 0; k < nseen && !found; k++) found = strcmp(seen[k], p) == 0;
    if (!found) fail("a regular event file of the tree is not listed");
  }
  for (size_t k = 0; k < nseen; k++) free(seen[k]);
  free(seen);
  tbe_reader_close(r);
  nftw(t.root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
  nftw(outside, rm_one, 16, FTW_DEPTH | FTW_PHYS);
  return 0;
}
