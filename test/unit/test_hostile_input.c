/* test_hostile_input.c: inputs made to hurt, through tbe_import_file.
 *
 * What must never happen, whatever the input:
 *   - a token, an event, a nesting or a stream larger than its limit is
 *     held in memory or parsed for long: a gzip bomb of one 1 GB JSON
 *     string (as a value, a key, a number) is refused at the token limit
 *     with bounded memory (the peak RSS of a child that imports it is
 *     measured with getrusage; no time is asserted);
 *   - a FIFO (with no writer, or one that stalls), a device or a directory
 *     hangs the caller or is read to the end: refused at once;
 *   - standard input ("-") loses the bytes detection looked at;
 *   - a refusal takes more than one line or fails to name the input, the
 *     byte, the limit and the flag that raises it.
 * A hang would stop the test: SIGALRM turns it into a failure. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "events/spool.h"
#include "testutil.h"
#include "tbexport/analysis.h"
#include "tbexport/error.h"
#include "tbexport/export.h"
#include "tbexport/import.h"
#include "tbexport/reader.h"
#include "tbexport/trace.h"

#if defined(__SANITIZE_ADDRESS__)
#define ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ASAN 1
#endif
#endif
#ifndef ASAN
#define ASAN 0
#endif

static char *dir;

static int setup(void **s) {
  (void)s;
  dir = tu_mkdtemp();
  return dir ? 0 : -1;
}

static int teardown(void **s) {
  (void)s;
  tu_rmrf(dir);
  free(dir);
  return 0;
}

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "test_hostile_input: a call hung (SIGALRM)\n";
  (void)!write(2, msg, sizeof msg - 1);
  _exit(99);
}

/* Imports `path` with `o`, expecting `rc`; the error message in err. */
static void import_expect(const char *path, const tbe_import_options *o, int rc,
                          tbe_import_error *err) {
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  alarm(20);
  int got = tbe_import_file(t, path, o, err);
  alarm(0);
  if (got != rc) fprintf(stderr, "rc %d (want %d): %s\n", got, rc, err->message);
  assert_int_equal(got, rc);
  if (rc) {
    assert_null(strchr(err->message, '\n'));
    assert_non_null(strstr(err->message, path));
  }
  tbe_trace_free(t);
}

/* ---- gzip bombs ---- */

/* Appends one gzip member holding `n` bytes of `s` (repeated). */
static void gz_member(FILE *f, const char *s, size_t slen, size_t n) {
  z_stream z;
  memset(&z, 0, sizeof z);
  assert_int_equal(deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY), Z_OK);
  uint8_t in[65536], out[65536];
  for (size_t i = 0; i < sizeof in; i++) in[i] = (uint8_t)s[i % slen];
  size_t left = n;
  int flush;
  do {
    size_t k = left < sizeof in - sizeof in % slen ? left : sizeof in - sizeof in % slen;
    z.next_in = in;
    z.avail_in = (uInt)k;
    left -= k;
    flush = left ? Z_NO_FLUSH : Z_FINISH;
    do {
      z.next_out = out;
      z.avail_out = sizeof out;
      deflate(&z, flush);
      fwrite(out, 1, sizeof out - z.avail_out, f);
    } while (z.avail_out == 0);
  } while (flush != Z_FINISH);
  deflateEnd(&z);
}

/* A .json.gz of `head`, then `mib` MiB of `fill`, then `tail`: a 1 GB
 * token from about 1 MB of file (one 1 MiB member, repeated: concatenated
 * members read as one stream). */
static char *make_bomb(const char *name, const char *head, char fill, size_t mib, const char *tail) {
  char *p = tu_join(dir, name);
  FILE *f = fopen(p, "wb");
  assert_non_null(f);
  gz_member(f, head, strlen(head), strlen(head));
  char *one = tu_join(dir, "member.gz");
  FILE *m = fopen(one, "wb+");
  assert_non_null(m);
  gz_member(m, &fill, 1, (size_t)1 << 20);
  long ml = ftell(m);
  uint8_t *mb = malloc((size_t)ml);
  rewind(m);
  assert_int_equal(fread(mb, 1, (size_t)ml, m), (size_t)ml);
  fclose(m);
  unlink(one);
  free(one);
  for (size_t i = 0; i < mib; i++) fwrite(mb, 1, (size_t)ml, f);
  free(mb);
  gz_member(f, tail, strlen(tail), strlen(tail));
  assert_int_equal(fclose(f), 0);
  return p;
}

/* Imports `path` in a child and returns how much the child's peak RSS
 * grew during the import, in KiB (getrusage before and after: the child
 * starts with its parent's pages); the child checks the refusal (rc,
 * offset, message parts). */
static long child_import_rss(const char *path, int want_rc, const char *want_msg,
                             uint64_t want_off) {
  int pfd[2];
  assert_int_equal(pipe(pfd), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    tbe_trace *t;
    tbe_import_error err;
    alarm(60);
    if (tbe_trace_create(&t, NULL)) _exit(2);
    struct rusage r0, r1;
    getrusage(RUSAGE_SELF, &r0);
    int rc = tbe_import_file(t, path, NULL, &err);
    getrusage(RUSAGE_SELF, &r1);
    long grew = r1.ru_maxrss - r0.ru_maxrss;
    (void)!write(pfd[1], &grew, sizeof grew);
    int ok = rc == want_rc && strstr(err.message, want_msg) && err.offset == want_off &&
             strstr(err.message, "raise it with --max-token") && !strchr(err.message, '\n');
    if (!ok) fprintf(stderr, "bomb %s: rc %d, offset %llu: %s\n", path, rc,
                     (unsigned long long)err.offset, err.message);
    tbe_trace_free(t);
    _exit(ok ? 0 : 1);
  }
  close(pfd[1]);
  long grew = -1;
  assert_int_equal(read(pfd[0], &grew, sizeof grew), (ssize_t)sizeof grew);
  close(pfd[0]);
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 0);
  return grew;
}

/* 1 GB in one string (a value), one key, one number: each refused at the
 * 64 MiB token limit at the token's first byte.  Memory: about one token
 * (the guard carries it once; yajl never buffers it again), so the child's
 * peak grows far less than the 1 GB it would take to hold (bounds: 160 MiB,
 * 640 MiB under ASan, whose quarantine keeps freed blocks). */
static void test_gzip_bombs(void **s) {
  (void)s;
  const long bound_kib = (ASAN ? 640L : 160L) * 1024;
  struct {
    const char *name, *head, *tail, *msg;
    char fill;
  } bombs[] = {
      {"string.json.gz", "{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"", "\"}]}",
       "a JSON string or key longer than the limit", 'a'},
      {"key.json.gz", "{\"", "\":1}", "a JSON string or key longer than the limit", 'k'},
      {"number.json.gz", "{\"traceEvents\":[{\"ph\":\"X\",\"ts\":1", "}]}",
       "a JSON number longer than the limit", '7'},
  };
  for (size_t i = 0; i < sizeof bombs / sizeof bombs[0]; i++) {
    char *p = make_bomb(bombs[i].name, bombs[i].head, bombs[i].fill, 1024, bombs[i].tail);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_true(st.st_size < 2 * 1024 * 1024); /* a 1 GB token in under 2 MB */
    uint64_t off = strlen(bombs[i].head) - 1; /* the quote, or the number's first digit */
    long rss = child_import_rss(p, TBE_ETOOBIG, bombs[i].msg, off);
    printf("bomb %s: the import's peak RSS growth %ld KiB\n", bombs[i].name, rss);
    assert_true(rss < bound_kib);
    unlink(p);
    free(p);
  }
}

/* The token limit is the one we say: a 3 MiB name imports under the
 * default and is refused under --max-token 1M at its quote, and a
 * number's limit counts its digits. */
static void test_token_limit_exact(void **s) {
  (void)s;
  size_t big = 3u << 20;
  char *j = malloc(big + 256);
  size_t n = (size_t)sprintf(j, "[{\"ph\":\"X\",\"ts\":1,\"dur\":1,\"pid\":1,\"tid\":1,\"name\":\"");
  size_t quote = n - 1;
  memset(j + n, 'x', big);
  n += big;
  n += (size_t)sprintf(j + n, "\"}]");
  char *p = tu_join(dir, "bigname.json");
  assert_int_equal(tu_write_file(p, j, n), 0);
  tbe_trace *t;
  tbe_import_error err;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  assert_int_equal(tbe_import_file(t, p, NULL, &err), 0);
  assert_int_equal(tbe_trace_strlen(t, t->events[0].name), big);
  tbe_trace_free(t);
  tbe_import_options o = {.size = sizeof o, .max_token_bytes = 1u << 20};
  import_expect(p, &o, TBE_ETOOBIG, &err);
  assert_int_equal(err.offset, quote);
  assert_non_null(strstr(err.message, "the limit is 1 MiB; raise it with --max-token"));
  /* an event larger than --max-event-size, refused at its '{' */
  o = (tbe_import_options){.size = sizeof o, .max_event_bytes = 1u << 20};
  import_expect(p, &o, TBE_ETOOBIG, &err);
  assert_int_equal(err.offset, 1);
  assert_non_null(strstr(err.message, "a trace event larger than the limit"));
  assert_non_null(strstr(err.message, "--max-event-size"));
  free(p);
  free(j);
}

/* --max-events and --max-input: refused past the count, at the event. */
static void test_event_and_input_limits(void **s) {
  (void)s;
  char j[4096];
  size_t n = 0;
  j[n++] = '[';
  size_t fourth = 0; /* the '{' of the fourth event */
  for (int i = 0; i < 5; i++) {
    if (i) j[n++] = ',';
    if (i == 3) fourth = n;
    n += (size_t)sprintf(j + n, "{\"ph\":\"X\",\"ts\":%d,\"dur\":1,\"pid\":1,\"tid\":1}", i);
  }
  j[n++] = ']';
  char *p = tu_join(dir, "five.json");
  assert_int_equal(tu_write_file(p, j, n), 0);
  tbe_import_error err;
  tbe_import_options o = {.size = sizeof o, .max_events = 3};
  import_expect(p, &o, TBE_ETOOBIG, &err);
  assert_int_equal(err.offset, fourth);
  assert_non_null(strstr(err.message, "the limit is 3 events; raise it with --max-events"));
  o = (tbe_import_options){.size = sizeof o, .max_events = 5};
  import_expect(p, &o, 0, &err);
  o = (tbe_import_options){.size = sizeof o, .max_input_bytes = 100};
  import_expect(p, &o, TBE_ETOOBIG, &err);
  assert_int_equal(err.offset, 100);
  assert_non_null(strstr(err.message, "--max-input"));
  o = (tbe_import_options){.size = sizeof o, .max_input_bytes = n};
  import_expect(p, &o, 0, &err);
  free(p);
}

/* ---- special files ---- */

/* A FIFO with no writer, then one whose writer sends half a trace and
 * stalls: both refused at once (the open does not wait, the path is no
 * regular file).  A character device and a directory too. */
static void test_special_files(void **s) {
  (void)s;
  signal(SIGALRM, on_alarm);
  char *fifo = tu_join(dir, "trace.json");
  assert_int_equal(mkfifo(fifo, 0600), 0);
  tbe_import_error err;
  import_expect(fifo, NULL, TBE_ENOTREG, &err);
  assert_non_null(strstr(err.message, "not a regular file"));
  tbe_import_format fmt;
  alarm(20);
  assert_int_equal(tbe_import_detect(fifo, &fmt), TBE_ENOTREG);
  alarm(0);
  pid_t w = fork();
  assert_true(w >= 0);
  if (w == 0) {
    int fd = open(fifo, O_WRONLY); /* waits for a reader, then stalls */
    if (fd >= 0) (void)!write(fd, "[{\"ph\":\"X\",", 11);
    sleep(30);
    _exit(0);
  }
  usleep(100000);
  import_expect(fifo, NULL, TBE_ENOTREG, &err);
  /* the event reader (tbexport inspect) refuses it too */
  tbe_reader *r = NULL;
  alarm(20);
  assert_int_equal(tbe_reader_open(&r, fifo, 0, NULL), -ESPIPE); /* reader.h: not a file to read */
  alarm(0);
  kill(w, SIGKILL);
  waitpid(w, NULL, 0);
  import_expect("/dev/zero", NULL, TBE_ENOTREG, &err);
  if (access("/dev/urandom", R_OK) == 0) import_expect("/dev/urandom", NULL, TBE_ENOTREG, &err);
  import_expect(dir, NULL, -EISDIR, &err);
  unlink(fifo);
  free(fifo);
}

/* Runs tbe_import_file("-") with standard input fed `n` bytes of `data`
 * by a child through a pipe; returns the rc and leaves the trace in *out. */
static int import_stdin(const void *data, size_t n, const tbe_import_options *o, tbe_trace **out,
                        tbe_import_error *err) {
  int pfd[2];
  assert_int_equal(pipe(pfd), 0);
  pid_t w = fork();
  assert_true(w >= 0);
  if (w == 0) {
    close(pfd[0]);
    const uint8_t *p = data;
    while (n) { /* in small writes: detection must wait for them */
      size_t k = n < 1000 ? n : 1000;
      ssize_t got = write(pfd[1], p, k);
      if (got <= 0) _exit(1);
      p += got, n -= (size_t)got;
    }
    _exit(0);
  }
  close(pfd[1]);
  int saved = dup(0);
  dup2(pfd[0], 0);
  close(pfd[0]);
  assert_int_equal(tbe_trace_create(out, NULL), 0);
  alarm(20);
  int rc = tbe_import_file(*out, "-", o, err);
  alarm(0);
  dup2(saved, 0);
  close(saved);
  int st;
  waitpid(w, &st, 0);
  return rc;
}

static uint8_t *gzip_buf(const void *d, size_t n, size_t *out_n) {
  uLongf cap = compressBound((uLong)n) + 64;
  uint8_t *out = malloc(cap);
  z_stream z;
  memset(&z, 0, sizeof z);
  deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  z.next_in = (Bytef *)(uintptr_t)d;
  z.avail_in = (uInt)n;
  z.next_out = out;
  z.avail_out = (uInt)cap;
  assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
  *out_n = cap - z.avail_out;
  deflateEnd(&z);
  return out;
}

/* Standard input: a trace piped in is detected from bytes the importer
 * then reads again (nothing lost), plain, gzip and XSpace; an nsys
 * database cannot come that way; an endless stream stops at --max-input. */
static void test_stdin(void **s) {
  (void)s;
  signal(SIGALRM, on_alarm);
  const char *j =
      "\xEF\xBB\xBF  {\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":5,"
      "\"dur\":2,\"pid\":0,\"tid\":7},{\"ph\":\"X\",\"name\":\"op\",\"ts\":1,\"dur\":9,\"pid\":3,"
      "\"tid\":3}]}";
  tbe_trace *t;
  tbe_import_error err;
  assert_int_equal(import_stdin(j, strlen(j), NULL, &t, &err), 0);
  assert_int_equal(t->nevents, 2);
  tbe_trace_free(t);
  size_t gn;
  uint8_t *gz = gzip_buf(j, strlen(j), &gn);
  assert_int_equal(import_stdin(gz, gn, NULL, &t, &err), 0);
  assert_int_equal(t->nevents, 2);
  tbe_trace_free(t);
  free(gz);
  size_t xn;
  uint8_t *xs = tu_read_file(tu_data("jax/h200_matmul.xplane.pb"), &xn);
  assert_non_null(xs);
  assert_int_equal(import_stdin(xs, xn, NULL, &t, &err), 0);
  size_t from_pipe = t->nevents;
  tbe_trace_free(t);
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  assert_int_equal(tbe_import_file(t, tu_data("jax/h200_matmul.xplane.pb"), NULL, &err), 0);
  assert_int_equal(t->nevents, from_pipe);
  assert_true(from_pipe > 0);
  tbe_trace_free(t);
  free(xs);
  size_t sn;
  uint8_t *db = tu_read_file(tu_data("nsys/h100_2gpu_1s.sqlite"), &sn);
  if (db) {
    assert_int_equal(import_stdin(db, sn < 65536 ? sn : 65536, NULL, &t, &err), TBE_EFORMAT);
    assert_non_null(strstr(err.message, "standard input"));
    tbe_trace_free(t);
    free(db);
  }
  /* random bytes through a pipe: refused from the first bytes */
  uint8_t rnd[8192];
  uint32_t x = 1;
  for (size_t i = 0; i < sizeof rnd; i++) x = x * 1103515245u + 12345u, rnd[i] = (uint8_t)(x >> 24);
  rnd[0] = 0x01;
  assert_int_equal(import_stdin(rnd, sizeof rnd, NULL, &t, &err), TBE_EFORMAT);
  tbe_trace_free(t);
  /* an XSpace-looking stream whose first field claims more than the
   * input limit: refused before it is read */
  uint8_t claim[64] = {0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f};
  tbe_import_options o = {.size = sizeof o, .max_input_bytes = 1u << 20};
  assert_int_equal(import_stdin(claim, sizeof claim, &o, &t, &err), TBE_ETOOBIG);
  assert_non_null(strstr(err.message, "--max-input"));
  tbe_trace_free(t);
  /* a long stream of blanks and skipped values stops at --max-input */
  size_t ln = 300000;
  char *longj = malloc(ln);
  memcpy(longj, "{\"x\":[", 6);
  for (size_t i = 6; i < ln; i += 2) longj[i] = '1', longj[i + 1] = ',';
  o = (tbe_import_options){.size = sizeof o, .max_input_bytes = 100000};
  assert_int_equal(import_stdin(longj, ln, &o, &t, &err), TBE_ETOOBIG);
  assert_int_equal(err.offset, 100000);
  tbe_trace_free(t);
  free(longj);
}

/* ---- bad input that used to read as a trace ---- */

static void test_not_a_trace(void **s) {
  (void)s;
  tbe_import_error err;
  char *p = tu_join(dir, "package.json");
  const char *pkg = "{\"name\": \"left-pad\", \"version\": \"1.3.0\", \"main\": \"index.js\"}";
  assert_int_equal(tu_write_file(p, pkg, strlen(pkg)), 0);
  import_expect(p, NULL, TBE_EFORMAT, &err);
  assert_non_null(strstr(err.message, "without a traceEvents array"));
  assert_int_equal(tu_write_file(p, "{}", 2), 0);
  import_expect(p, NULL, TBE_EFORMAT, &err);
  /* fields of the wrong JSON type name the field and the event's byte */
  const char *bad[] = {"[{\"ph\":\"X\",\"ts\":{}}]", "[{\"ph\":\"X\",\"dur\":[1]}]",
                       "[{\"ph\":{},\"ts\":1}]", "[{\"ph\":\"X\",\"pid\":[]}]"};
  const char *field[] = {"event field ts is an object, not a number",
                         "event field dur is an array, not a number",
                         "event field ph is an object, not a string",
                         "event field pid is an array, not a number or a string"};
  for (size_t i = 0; i < 4; i++) {
    assert_int_equal(tu_write_file(p, bad[i], strlen(bad[i])), 0);
    import_expect(p, NULL, TBE_EPARSE, &err);
    assert_non_null(strstr(err.message, field[i]));
    assert_int_equal(err.offset, 1);
  }
  free(p);
}

/* A negative duration is kept as 0 and said: one warning, every output. */
static void test_negative_duration_warned(void **s) {
  (void)s;
  char *p = tu_join(dir, "neg.json");
  const char *j = "[{\"ph\":\"X\",\"name\":\"a\",\"ts\":10,\"dur\":-5,\"pid\":1,\"tid\":1},"
                  "{\"ph\":\"X\",\"name\":\"b\",\"ts\":20,\"dur\":-1,\"pid\":1,\"tid\":1},"
                  "{\"ph\":\"X\",\"name\":\"c\",\"ts\":30,\"dur\":1,\"pid\":1,\"tid\":1}]";
  assert_int_equal(tu_write_file(p, j, strlen(j)), 0);
  tbe_trace *t;
  tbe_import_error err;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  assert_int_equal(tbe_import_file(t, p, NULL, &err), 0);
  assert_int_equal(t->nwarnings, 1);
  assert_non_null(strstr(tbe_trace_str(t, t->warnings[0]), "2 events had a negative duration"));
  tbe_analysis *an;
  assert_int_equal(tbe_analysis_create(&an, t, NULL), 0);
  tbe_report_options o;
  tbe_report_options_init(&o);
  /* the reports that carry warnings (the table and JSON; CSV is rows) */
  int formats[] = {TBE_REPORT_TABLE, TBE_REPORT_JSON};
  for (int f = 0; f < 2; f++) {
    o.format = formats[f];
    char *r;
    size_t n;
    assert_int_equal(tbe_report_summary(an, &o, &r, &n), 0);
    assert_non_null(strstr(r, "2 events had a negative duration"));
    tbe_report_free(r, n, NULL);
  }
  tbe_analysis_free(an);
  /* and the files: the Chrome JSON and the XSpace read back say it too */
  const char *outs[] = {"neg.trace.json", "neg.xplane.pb"};
  for (int k = 0; k < 2; k++) {
    char *q = tu_join(dir, outs[k]);
    assert_int_equal(k ? tbe_export_xplane(t, q, 1) : tbe_export_chrome_json(t, q, 0, 1), 0);
    tbe_trace *b;
    assert_int_equal(tbe_trace_create(&b, NULL), 0);
    assert_int_equal(tbe_import_file(b, q, NULL, &err), 0);
    int seen = 0;
    for (size_t i = 0; i < b->nwarnings; i++)
      seen += strstr(tbe_trace_str(b, b->warnings[i]), "2 events had a negative duration") != NULL;
    assert_int_equal(seen, 1);
    tbe_trace_free(b);
    unlink(q);
    free(q);
  }
  tbe_trace_free(t);
  free(p);
}

/* ---- timestamps at the edges ---- */

static void test_json_time_range(void **s) {
  (void)s;
  char *p = tu_join(dir, "times.json");
  struct {
    const char *json, *msg;
  } c[] = {
      {"[{\"ph\":\"X\",\"ts\":9223372036854775,\"dur\":1}]", "event field ts is out of range"},
      {"[{\"ph\":\"X\",\"ts\":1e300,\"dur\":1}]", "event field ts is out of range"},
      {"[{\"ph\":\"X\",\"ts\":-9223372036854775,\"dur\":1}]", "event field ts is out of range"},
      {"[{\"ph\":\"X\",\"ts\":1,\"dur\":9223372036854775}]", "event field dur is out of range"},
      {"[{\"ph\":\"X\",\"ts\":4611686018427387,\"dur\":1000}]", "dur ends the event out of range"},
      {"{\"traceEvents\":[{\"ph\":\"X\",\"ts\":4611686018427,\"dur\":1}],"
       "\"baseTimeNanoseconds\":4611686018427387000}",
       "baseTimeNanoseconds puts events out of range"},
      {"{\"baseTimeNanoseconds\":4611686018427387000,\"traceEvents\":[{\"ph\":\"X\","
       "\"ts\":4611686018427,\"dur\":1}]}",
       "ts + baseTimeNanoseconds is out of range"},
      {"{\"traceEvents\":[],\"baseTimeNanoseconds\":9223372036854775807}",
       "baseTimeNanoseconds is out of range"},
  };
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    assert_int_equal(tu_write_file(p, c[i].json, strlen(c[i].json)), 0);
    tbe_import_error err;
    import_expect(p, NULL, TBE_EPARSE, &err);
    if (!strstr(err.message, c[i].msg)) fprintf(stderr, "case %zu: %s\n", i, err.message);
    assert_non_null(strstr(err.message, c[i].msg));
  }
  /* the edges themselves are fine: 146 years either side of 1970 */
  const char *ok = "[{\"ph\":\"X\",\"ts\":-4611686018427387,\"dur\":1},"
                   "{\"ph\":\"X\",\"ts\":4611686018427386,\"dur\":1}]";
  assert_int_equal(tu_write_file(p, ok, strlen(ok)), 0);
  tbe_trace *t;
  tbe_import_error err;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  assert_int_equal(tbe_import_file(t, p, NULL, &err), 0);
  tbe_analysis *an;
  assert_int_equal(tbe_analysis_create(&an, t, NULL), 0);
  assert_true(an->wall_ns > 0); /* 292 years, not a wrapped negative */
  tbe_analysis_free(an);
  tbe_trace_free(t);
  free(p);
}

/* The model saturates what a library user gives it (common/checked.h). */
static void test_model_saturates(void **s) {
  (void)s;
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  uint32_t tr;
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_THREAD, 1, 1, -1, &tr), 0);
  tbe_event ev;
  memset(&ev, 0, sizeof ev);
  ev.kind = TBE_EV_CPU_OP;
  ev.track = tr;
  ev.detail = ev.link = TBE_NONE;
  ev.start_ns = INT64_MAX;
  ev.dur_ns = INT64_MAX;
  assert_int_equal(tbe_trace_add_event(t, &ev, NULL, NULL, 0, NULL), 0);
  ev.start_ns = INT64_MIN;
  ev.dur_ns = INT64_MAX;
  assert_int_equal(tbe_trace_add_event(t, &ev, NULL, NULL, 0, NULL), 0);
  assert_int_equal(tbe_trace_add_step(t, 1, INT64_MIN, INT64_MAX, 0), 0);
  assert_int_equal(tbe_trace_finish(t), 0);
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_event *e = &t->events[i];
    assert_true(e->flags & TBE_EVF_CLAMPED);
    assert_true(e->dur_ns >= 0);
    assert_true(e->start_ns + e->dur_ns >= e->start_ns); /* no overflow left */
  }
  /* the analysis of a trace whose public fields hold anything */
  t->start_ns = INT64_MIN;
  t->stop_ns = INT64_MAX;
  tbe_analysis *an;
  assert_int_equal(tbe_analysis_create(&an, t, NULL), 0);
  assert_int_equal(an->wall_ns, INT64_MAX);
  assert_true(an->steps[0].dur_ns > 0);
  tbe_analysis_free(an);
  tbe_trace_free(t);
}

/* ---- the XSpace exporter ---- */

/* A nameless event (name 0: "") was a memcpy from NULL (UBSan aborted the
 * export and left its temporary file); now the export succeeds, leaves
 * exactly its file, and reads back. */
static void test_xplane_nameless_event(void **s) {
  (void)s;
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  uint32_t tr;
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_STREAM, -1, 7, 0, &tr), 0);
  tbe_event ev;
  memset(&ev, 0, sizeof ev);
  ev.kind = TBE_EV_GENERIC;
  ev.track = tr;
  ev.detail = ev.link = TBE_NONE;
  ev.start_ns = 1700000000000000000LL;
  ev.dur_ns = 5;
  assert_int_equal(tbe_trace_add_event(t, &ev, NULL, NULL, 0, NULL), 0);
  assert_int_equal(tbe_trace_finish(t), 0);
  char *sub = tu_join(dir, "nameless");
  assert_int_equal(mkdir(sub, 0755), 0);
  char *p = tu_join(sub, "h.xplane.pb");
  assert_int_equal(tbe_export_xplane(t, p, 0), 0);
  assert_int_equal(tu_count_files(sub), 1);
  tbe_trace *back;
  tbe_import_error err;
  assert_int_equal(tbe_trace_create(&back, NULL), 0);
  assert_int_equal(tbe_import_file(back, p, NULL, &err), 0);
  assert_int_equal(back->nevents, 1);
  tbe_trace_free(back);
  tbe_trace_free(t);
  free(p);
  free(sub);
}

/* ---- spools whose counts multiply ----
 *
 * The collector's spool (events/spool.h) names things by the writer's own
 * ids and counts, so every count in it is the input's.  Each spool below
 * is built in code at the size of a hostile one and imported through
 * tbe_import_file with a counting allocator for the trace and the import
 * (the spool importer's scratch is on it: test_import_alloc):
 *   - replayed kernels x kernel-metric values x metric definitions (each
 *     replayed kernel looked its duration up by scanning the values, and
 *     each value the definitions: this 1 MB spool took 151 s);
 *   - metric-status items compared pairwise, and as many distinct warning
 *     lines and kernel-figure entries, each checked against all before it
 *     (this 14 MB spool of 200,000 status items and 200,000 figures took
 *     15 s of CPU);
 *   - a string id of 2^26 in a 97-byte spool (the id was an array index:
 *     256 MB).
 * What is asserted: the import's result, its peak bytes within a multiple
 * of the input's size (of a 97-byte spool's with string id 1 for the
 * last), and its CPU time under SPOOL_SECS: more than ten times what the
 * ASan build takes on a 2-core machine (0.23 s at most, 0.09 s plain),
 * and a third of what one of the old quadratic paths alone takes plain. */

#define SPOOL_T0 1700000000000000000ll
#define SPOOL_SECS 2.5

static tbe_allocator g_mal; /* malloc, for the images */

typedef struct spimg {
  tbe__buf img, p; /* the file, the frame being filled */
} spimg;

static void sp_begin(spimg *m) {
  tbe__allocator_init(&g_mal, NULL);
  tbe__buf_init(&m->img, &g_mal);
  tbe__buf_init(&m->p, &g_mal);
  uint8_t head[TBE__SPOOL_HEADER];
  tbe__spool_header(head, SPOOL_T0);
  tbe__buf_append(&m->img, head, sizeof head);
  tbe__sp_info info;
  memset(&info, 0, sizeof info);
  info.start_ns = SPOOL_T0;
  info.pid = 77;
  info.trace = 3;
  tbe__spool_item(&m->p, TBE__SP_INFO, &info, sizeof info);
}

/* Closes the frame being filled (one write(2) of the collector). */
static void sp_frame(spimg *m) {
  if (!m->p.len) return;
  uint8_t head[8];
  uint32_t len = (uint32_t)m->p.len;
  memcpy(head, &len, 4);
  uint32_t c = tbe__spool_checksum(head, 4, 0);
  c = tbe__spool_checksum(m->p.data, m->p.len, c);
  memcpy(head + 4, &c, 4);
  tbe__buf_append(&m->img, head, 8);
  tbe__buf_append(&m->img, m->p.data, m->p.len);
  tbe__buf_clear(&m->p);
}

/* Ends the spool (END item), writes it to DIR/name; returns the path and
 * the file's size in *n. */
static char *sp_write(spimg *m, const char *name, int with_end, size_t *n) {
  if (with_end) {
    tbe__sp_end e = {SPOOL_T0 + 1000000000000ll};
    tbe__spool_item(&m->p, TBE__SP_END, &e, sizeof e);
  }
  sp_frame(m);
  assert_int_equal(tbe__buf_error(&m->img), 0);
  char *path = tu_join(dir, name);
  assert_int_equal(tu_write_file(path, m->img.data, m->img.len), 0);
  *n = m->img.len;
  tbe__buf_deinit(&m->p);
  tbe__buf_deinit(&m->img);
  return path;
}

/* The process's CPU time (the import runs on the calling thread): what
 * other processes take of a loaded machine does not count. */
static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Imports the spool at `path` (`n` bytes) with the counting allocator
 * `c` for the trace and the import; returns the trace (the caller frees
 * it), the seconds it took in *secs.  Says its figures on one line. */
static tbe_trace *sp_import(const char *path, size_t n, tu_countalloc *c, tbe_allocator *a,
                            double *secs) {
  *a = tu_countalloc_init(c);
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, a), 0);
  tbe_import_options o;
  tbe_import_options_init(&o);
  o.allocator = a;
  tbe_import_error err;
  alarm(600);
  double t0 = now_s();
  int rc = tbe_import_file(t, path, &o, &err);
  *secs = now_s() - t0;
  alarm(0);
  if (rc) fprintf(stderr, "%s: %s\n", path, err.message);
  assert_int_equal(rc, 0);
  fprintf(stderr, "spool %s: %zu bytes, imported in %.3f s (CPU), peak %zu bytes (%.1fx)\n",
          strrchr(path, '/') + 1, n, *secs, c->peak, (double)c->peak / (double)n);
  return t;
}

/* How many warnings of `t` begin with `prefix`. */
static size_t warnings_with(const tbe_trace *t, const char *prefix) {
  size_t k = 0;
  for (size_t i = 0; i < t->nwarnings; i++)
    k += strncmp(tbe_trace_str(t, t->warnings[i]), prefix, strlen(prefix)) == 0;
  return k;
}

/* About 1 MB: `nd` metric definitions (the last one "duration_ns"), `nv`
 * figures of kernel "gemm" on GPU 0 (every metric but the duration,
 * round, then its duration: 1000 ns), and `nk` launches the range
 * profiler replayed (TBE__SP_REPLAYED and a kernel record without
 * times), each of which looks its duration up. */
static char *spool_replayed(size_t nk, size_t nd, size_t nv, size_t *n) {
  spimg m;
  sp_begin(&m);
  tbe__spool_str(&m.p, 1, "gemm", 4);
  for (uint32_t d = 1; d <= nd; d++) {
    char nm[32];
    int l = d == nd ? snprintf(nm, sizeof nm, "duration_ns") : snprintf(nm, sizeof nm, "m%u", d);
    tbe__spool_str(&m.p, 1 + d, nm, (size_t)l);
    tbe__sp_metric_def def = {d, 1 + d, 0, TBE__MU_COUNT};
    tbe__spool_item(&m.p, TBE__SP_METRIC_DEF, &def, sizeof def);
  }
  sp_frame(&m);
  /* the figures, 1,000 values an item */
  uint8_t body[sizeof(tbe__sp_kernel_metrics) + 1000 * 16];
  for (size_t v = 0; v < nv;) {
    uint32_t k = nv - v < 1000 ? (uint32_t)(nv - v) : 1000;
    tbe__sp_kernel_metrics h = {1, 0, 1, k};
    memcpy(body, &h, sizeof h);
    for (uint32_t j = 0; j < k; j++, v++) {
      uint32_t id = v + 1 == nv ? (uint32_t)nd : (uint32_t)(1 + v % (nd - 1)), zero = 0;
      double x = v + 1 == nv ? 1000.0 : 5.0;
      memcpy(body + sizeof h + 16 * j, &id, 4);
      memcpy(body + sizeof h + 16 * j + 4, &zero, 4);
      memcpy(body + sizeof h + 16 * j + 8, &x, 8);
    }
    tbe__spool_item(&m.p, TBE__SP_KERNEL_METRICS, body, sizeof h + 16 * (size_t)k);
  }
  sp_frame(&m);
  for (uint32_t i = 0; i < nk; i++) {
    int64_t at = SPOOL_T0 + 10000 * (int64_t)i + 100;
    tbe__sp_replayed r = {i + 1, 0, at, at + 5000};
    tbe__spool_item(&m.p, TBE__SP_REPLAYED, &r, sizeof r);
    tbe__sp_kernel k;
    memset(&k, 0, sizeof k);
    k.corr = i + 1;
    k.stream = 7;
    k.name = 1;
    k.grid[0] = k.block[0] = 1;
    tbe__spool_item(&m.p, TBE__SP_KERNEL, &k, sizeof k);
    if (m.p.len > (256u << 10)) sp_frame(&m);
  }
  return sp_write(&m, "replayed.spool", 1, n);
}

static void test_spool_replayed_kernels(void **s) {
  (void)s;
  size_t n, nk = 4000, nd = 4000, nv = 25000;
  char *path = spool_replayed(nk, nd, nv, &n);
  tu_countalloc c;
  tbe_allocator a;
  double secs;
  tbe_trace *t = sp_import(path, n, &c, &a, &secs);
  /* every launch placed with the profiler's duration */
  size_t kernels = 0;
  for (size_t i = 0; i < t->nevents; i++) {
    if (t->events[i].kind != TBE_EV_KERNEL) continue;
    kernels++;
    assert_int_equal(t->events[i].dur_ns, 1000);
    assert_string_equal(tbe_trace_str(t, t->events[i].name), "gemm");
  }
  assert_int_equal(kernels, nk);
  assert_int_equal(warnings_with(t, "4000 kernel launches replayed by the range profiler"), 1);
  /* one name on one GPU: one entry, the last item's (its first 64
   * figures, as for every item: the duration, its last, is not one) */
  assert_int_equal(t->nkernel_metrics, 1);
  double v;
  assert_int_equal(tbe_kernel_metrics_get(t, &t->kernel_metrics[0], "duration_ns", &v), 1);
  assert_true(secs < SPOOL_SECS);
  assert_true(c.peak < 16 * n);
  tbe_trace_free(t);
  assert_int_equal(c.live, 0);
  free(path);
}

/* 36 bytes an item: a status item for each of `ndev` GPUs (PM sampling
 * fine, or refused on every tenth), the first three GPUs having been
 * refused before (the last one counts); PM samples with a gap on the last
 * three GPUs, whose gap warnings look their status up; and kernel
 * "gemm"'s figures on each of `nkm` GPUs (one (name, device) entry
 * each). */
static char *spool_metric_items(uint32_t ndev, uint32_t nkm, size_t *n) {
  spimg m;
  sp_begin(&m);
  tbe__spool_str(&m.p, 1, "sm_active_pct", 13);
  tbe__spool_str(&m.p, 2, "gemm", 4);
  tbe__sp_metric_def def = {1, 1, 0, TBE__MU_PCT};
  tbe__spool_item(&m.p, TBE__SP_METRIC_DEF, &def, sizeof def);
  for (uint32_t d = ndev - 3; d < ndev; d++) {
    /* 8 samples 1 us apart, the fifth 10 us late */
    uint8_t body[sizeof(tbe__sp_metric_samples) + 4 + 8 * 16];
    tbe__sp_metric_samples h = {d, 1, 8, 0};
    memcpy(body, &h, sizeof h);
    uint32_t id = 1;
    memcpy(body + sizeof h, &id, 4);
    for (int k = 0; k < 8; k++) {
      int64_t ts = SPOOL_T0 + 1000 * (k + 1) + (k >= 4 ? 10000 : 0);
      double x = 50.0;
      memcpy(body + sizeof h + 4 + 16 * k, &ts, 8);
      memcpy(body + sizeof h + 4 + 16 * k + 8, &x, 8);
    }
    tbe__spool_item(&m.p, TBE__SP_METRIC_SAMPLES, body, sizeof body);
  }
  for (int pass = 0; pass < 2; pass++)
    for (uint32_t d = 0; d < (pass ? ndev : 3); d++) {
      tbe__sp_metric_status st;
      memset(&st, 0, sizeof st);
      st.kind = TBE__MKIND_PM_SAMPLING;
      st.device = d;
      st.status = !pass || d % 10 == 0 ? TBE__MS_NO_PERMISSION : TBE__MS_OK;
      st.samples = 8;
      tbe__spool_item(&m.p, TBE__SP_METRIC_STATUS, &st, sizeof st);
    }
  sp_frame(&m);
  for (uint32_t d = 0; d < nkm; d++) {
    uint8_t body[sizeof(tbe__sp_kernel_metrics) + 16];
    tbe__sp_kernel_metrics h = {2, d, 1, 1};
    uint32_t id = 1, zero = 0;
    double x = 40.0;
    memcpy(body, &h, sizeof h);
    memcpy(body + sizeof h, &id, 4);
    memcpy(body + sizeof h + 4, &zero, 4);
    memcpy(body + sizeof h + 8, &x, 8);
    tbe__spool_item(&m.p, TBE__SP_KERNEL_METRICS, body, sizeof body);
  }
  return sp_write(&m, "metric_items.spool", 1, n);
}

static void test_spool_metric_items(void **s) {
  (void)s;
  size_t n;
  uint32_t ndev = 200000, nkm = 200000;
  char *path = spool_metric_items(ndev, nkm, &n);
  tu_countalloc c;
  tbe_allocator a;
  double secs;
  tbe_trace *t = sp_import(path, n, &c, &a, &secs);
  /* one line per refusing GPU (its last status), one gap warning per
   * sampled GPU, a figures entry per GPU */
  assert_int_equal(warnings_with(t, "GPU metrics (PM sampling) not collected on GPU "), ndev / 10);
  assert_int_equal(warnings_with(t, "PM sampling on GPU "), 3);
  assert_int_equal(t->nkernel_metrics, nkm);
  assert_true(secs < SPOOL_SECS);
  assert_true(c.peak < 16 * n);
  tbe_trace_free(t);
  assert_int_equal(c.live, 0);
  free(path);
}

/* 97 bytes: the header, a frame holding one string definition of id
 * `id`, named by 49 bytes. */
static char *spool_one_string(uint32_t id, const char *name, size_t *n) {
  spimg m;
  tbe__allocator_init(&g_mal, NULL);
  tbe__buf_init(&m.img, &g_mal);
  tbe__buf_init(&m.p, &g_mal);
  uint8_t head[TBE__SPOOL_HEADER];
  tbe__spool_header(head, SPOOL_T0);
  tbe__buf_append(&m.img, head, sizeof head);
  char s[50];
  memset(s, 'k', 49);
  s[49] = '\0';
  tbe__spool_str(&m.p, id, s, 49);
  return sp_write(&m, name, 0, n);
}

static void test_spool_string_id(void **s) {
  (void)s;
  size_t n, n1;
  char *p1 = spool_one_string(1, "id1.spool", &n1);
  char *path = spool_one_string(1u << 26, "id26.spool", &n);
  assert_int_equal(n, 97);
  assert_int_equal(n1, 97);
  tu_countalloc c1, c;
  tbe_allocator a1, a;
  double secs;
  tbe_trace *t1 = sp_import(p1, n1, &c1, &a1, &secs);
  tbe_trace *t = sp_import(path, n, &c, &a, &secs);
  /* the string is kept either way; the id costs nothing beyond the bytes
   * a string of id 1 costs, up to a multiple of the input */
  char k49[50];
  memset(k49, 'k', 49);
  k49[49] = '\0';
  assert_int_not_equal(tbe_trace_find_str(t, k49, 49), TBE_NONE);
  assert_true(c.peak <= c1.peak + 16 * n);
  assert_true(secs < SPOOL_SECS);
  tbe_trace_free(t);
  tbe_trace_free(t1);
  assert_int_equal(c.live, 0);
  free(path);
  free(p1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gzip_bombs),
      cmocka_unit_test(test_token_limit_exact),
      cmocka_unit_test(test_event_and_input_limits),
      cmocka_unit_test(test_special_files),
      cmocka_unit_test(test_stdin),
      cmocka_unit_test(test_not_a_trace),
      cmocka_unit_test(test_negative_duration_warned),
      cmocka_unit_test(test_json_time_range),
      cmocka_unit_test(test_model_saturates),
      cmocka_unit_test(test_xplane_nameless_event),
      cmocka_unit_test(test_spool_replayed_kernels),
      cmocka_unit_test(test_spool_metric_items),
      cmocka_unit_test(test_spool_string_id),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
