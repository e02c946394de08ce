/* import.c: tbe_import_file: the input, the limits, detection, and the
 * table of importers.
 *
 * Inputs are a table, as outputs are (trace/exporter.h): one entry per
 * format (importer.h), in the order detection asks them.  One open per
 * import: tbe__input_open decides what an input may be (a regular file or
 * "-"), every entry's sniff test looks at the same peeked first bytes
 * (kept for the importer, so a pipe loses nothing) and the importer that
 * claims them reads on from the same source.
 *
 * Detection looks at content only, and never at one byte.  The first
 * entry whose test is sure wins: XSpace when its protobuf framing holds
 * (for a plain regular file every field header is walked to the exact end
 * of the file; through gzip or a pipe, every field that starts in the
 * first 64 KiB), then Chrome JSON, which must begin a JSON object or array
 * after an optional UTF-8 BOM (a plane of 91 or 123 bytes puts '[' or '{'
 * right after XSpace's first tag, and the tag 0x0a is a newline), then the
 * SQLite header, then the collector's spool magic ("TBESPL01").  When none is sure, the first that finds its format
 * likely takes it: a start that is an XSpace field tag whose framing
 * breaks later is still an XSpace, cut or corrupt, so its importer names
 * the byte.
 *
 * The limits of tbe_import_options are resolved here (0 means the
 * default), and the allocator (NULL: the trace's), so importers see no
 * zeros and no NULL.  The default of --max-input depends on the input: an
 * input whose size is not known before it is read (standard input, a gzip
 * stream) may be endless, and the XSpace and spool importers hold all of
 * it, so its default is also at most half the memory this process may use
 * (tbe__import_stream_default): an endless pipe is refused with one line
 * naming the limit and --max-input instead of running the machine out of
 * memory.  A regular file keeps the fixed default (it has an end, and the
 * JSON importer, which streams, reads files larger than the memory). */
#include <fcntl.h>
#include <stdio.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "common/optsize.h"
#include "import/importer.h"
#include "tbexport/error.h"
#include "trace/model/vocab.h"

/* In the order detection asks them (see above). */
static const tbe__importer *const importers[] = {
    &tbe__importer_xspace,
    &tbe__importer_chrome_json,
    &tbe__importer_nsys,
    &tbe__importer_spool,
};
#define NIMPORTERS (sizeof importers / sizeof importers[0])

const char *tbe_import_format_name(tbe_import_format f) {
  for (size_t i = 0; i < NIMPORTERS; i++)
    if (importers[i]->format == f) return importers[i]->name;
  return "unknown";
}

/* The options with every limit resolved: 0 becomes the default. */
static void import_defaults(tbe_import_options *o) { memset(o, 0, sizeof *o); }
TBE__OPTIONS_INIT_SIZED(tbe_import_options, import_defaults)

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

/* ---- the default --max-input of an input of unknown size ---- */

uint64_t tbe__import_memory_bytes;

/* The integer in file `path` (a cgroup's memory.max), or UINT64_MAX when
 * it says "max" or cannot be read. */
static uint64_t read_limit(const char *path) {
  char buf[32];
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return UINT64_MAX;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0 || buf[0] < '0' || buf[0] > '9') return UINT64_MAX;
  uint64_t v = 0;
  for (ssize_t i = 0; i < n && buf[i] >= '0' && buf[i] <= '9'; i++) {
    if (v > (UINT64_MAX - 9) / 10) return UINT64_MAX;
    v = v * 10 + (uint64_t)(buf[i] - '0');
  }
  return v;
}

/* The least limit in `file` of cgroup `dir` (under `root`) and of its
 * ancestors (a container sees the host's path of its cgroup, whose own
 * limit is at its root).  Cuts `dir`. */
static uint64_t walk_limit(const char *root, char *dir, const char *file) {
  char path[700];
  uint64_t m = UINT64_MAX;
  for (;;) {
    snprintf(path, sizeof path, "%s%s/%s", root, strcmp(dir, "/") == 0 ? "" : dir, file);
    uint64_t v = read_limit(path);
    if (v < m) m = v;
    char *slash = strrchr(dir, '/');
    if (!slash) break;
    if (slash == dir) {
      if (!dir[1]) break;
      dir[1] = 0; /* the root last */
    } else {
      *slash = 0;
    }
  }
  return m;
}

/* The memory limit of this process's cgroups: memory.max (v2) or
 * memory.limit_in_bytes of the memory controller (v1), the least of the
 * cgroup's and its ancestors'. */
static uint64_t cgroup_limit(void) {
  char buf[2048];
  int fd = open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return UINT64_MAX;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return UINT64_MAX;
  buf[n] = 0;
  uint64_t m = UINT64_MAX;
  /* Lines "ID:CONTROLLERS:PATH"; v2's is "0::PATH". */
  for (char *line = buf, *next; line && *line; line = next) {
    next = strchr(line, '\n');
    if (next) *next++ = 0;
    char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2 || c2[1] != '/') continue;
    *c2 = 0;
    const char *ctl = c1 + 1;
    uint64_t v = UINT64_MAX;
    if (!*ctl) v = walk_limit("/sys/fs/cgroup", c2 + 1, "memory.max");
    else if (strcmp(ctl, "memory") == 0) v = walk_limit("/sys/fs/cgroup/memory", c2 + 1, "memory.limit_in_bytes");
    if (v < m) m = v;
  }
  return m;
}

/* The memory this process may use: the least of the physical memory, the
 * cgroup's limit and RLIMIT_AS (UINT64_MAX when none is known). */
static uint64_t memory_bytes(void) {
  if (tbe__import_memory_bytes) return tbe__import_memory_bytes;
  uint64_t m = UINT64_MAX;
  long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && psize > 0 && (uint64_t)pages <= UINT64_MAX / (uint64_t)psize)
    m = (uint64_t)pages * (uint64_t)psize;
  struct rlimit rl;
  if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && (uint64_t)rl.rlim_cur < m)
    m = (uint64_t)rl.rlim_cur;
  uint64_t cg = cgroup_limit();
  return cg < m ? cg : m;
}

uint64_t tbe__import_stream_default(void) {
  uint64_t half = memory_bytes() / 2;
  return half < TBE_IMPORT_DEFAULT_MAX_INPUT_BYTES ? (half ? half : 1) : TBE_IMPORT_DEFAULT_MAX_INPUT_BYTES;
}

/* ---- detection ---- */

/* The importer of an open input, from its peeked head; NULL when no entry
 * knows it. */
static int detect_open(tbe__input *in, const tbe__importer **out) {
  const uint8_t *b;
  size_t n;
  *out = NULL;
  int rc = tbe__input_peek(in, TBE__INPUT_PEEK, &b, &n);
  if (rc && rc != TBE_ETRUNCATED && rc != TBE_ECORRUPT) return rc;
  tbe__sniff s = {in, b, n, n < TBE__INPUT_PEEK};
  const tbe__importer *likely = NULL;
  for (size_t i = 0; i < NIMPORTERS && !*out; i++) {
    int v = importers[i]->sniff(&s);
    if (v == TBE__SNIFF_SURE) *out = importers[i];
    else if (v == TBE__SNIFF_LIKELY && !likely) likely = importers[i];
  }
  if (!*out) *out = likely;
  return 0;
}

int tbe_import_detect(const char *path, tbe_import_format *fmt) {
  if (!path || !fmt) return TBE_EINVAL;
  *fmt = TBE_FORMAT_UNKNOWN;
  if (strcmp(path, "-") == 0) return TBE_EINVAL; /* would consume standard input */
  tbe__input in;
  int rc = tbe__input_open(&in, path, NULL);
  if (rc) return rc;
  const tbe__importer *imp;
  rc = detect_open(&in, &imp);
  if (!rc && imp) *fmt = imp->format;
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

/* Runs importer `imp` on the open input. */
static int run_importer(const tbe__importer *imp, tbe_trace *t, tbe__input *in, const char *path,
                        const tbe_import_options *o, tbe_import_error *err) {
  if (!imp)
    return tbe__import_fail(err, TBE_EFORMAT, path, 0, 0, 0,
                            "not a Chrome trace JSON, XSpace, Nsight Systems SQLite or tbexport spool file");
  if (imp->by_path) {
    if (in->stream) return tbe__import_fail(err, TBE_EFORMAT, path, 0, 0, 0, "%s", imp->no_stream);
    tbe__input_close(in); /* the importer opens the file itself */
  }
  return imp->import(t, in, path, o, err);
}

/* A path below o->base_dir, checked under the read rule (fsutil.h): no
 * symbolic link below the base, a regular file.  *pin holds it open, so
 * the file opened next by its path can be checked to be the same one. */
static int check_below(const tbe_import_options *o, const char *path, int *pin, struct stat *st,
                       tbe_import_error *err) {
  *pin = -1;
  if (!o->base_dir) return 0;
  size_t bl = strlen(o->base_dir);
  while (bl > 1 && o->base_dir[bl - 1] == '/') bl--;
  if (strncmp(path, o->base_dir, bl) != 0 || path[bl] != '/')
    return tbe__import_fail(err, TBE_EINVAL, path, 0, 0, 0, "not below %s", o->base_dir);
  const char *rel = path + bl;
  while (*rel == '/') rel++;
  char where[4096] = "";
  int fd = tbe__read_open(o->base_dir, rel, st, where, sizeof where);
  if (fd < 0) {
    if (fd == -ELOOP)
      return tbe__import_fail(err, fd, path, UINT64_MAX, 0, 0,
                              "%s%sa symbolic link: not followed below %s",
                              where[0] && strcmp(where, path) ? where : "",
                              where[0] && strcmp(where, path) ? " is " : "", o->base_dir);
    return tbe__import_input_fail(err, fd, path, NULL, o);
  }
  *pin = fd;
  return 0;
}

int tbe_import_file(tbe_trace *t, const char *path, const tbe_import_options *opts,
                    tbe_import_error *err) {
  if (err) memset(err, 0, sizeof *err);
  if (!t || !path) return TBE_EINVAL;
  tbe_import_options oc; /* the caller's, completed to this version (its size) */
  if (opts && !(opts = TBE__OPTIONS_TAKE(tbe_import_options, &oc, opts))) return TBE_EINVAL;
  tbe_import_options o = resolve(opts);
  if (!o.allocator) o.allocator = tbe__trace_allocator(t);
  int pin;
  struct stat pst;
  int rc = check_below(&o, path, &pin, &pst, err);
  if (rc) return rc;
  tbe__input in;
  rc = tbe__input_open(&in, path, o.allocator);
  if (!rc && pin >= 0) {
    /* the file just opened by its path is the one checked (not swapped) */
    struct stat st;
    if (fstat(in.fd, &st) != 0 || st.st_dev != pst.st_dev || st.st_ino != pst.st_ino) {
      tbe__input_close(&in);
      rc = -ELOOP;
    }
  }
  if (rc) {
    if (pin >= 0) close(pin);
    return tbe__import_input_fail(err, rc, path, NULL, &o);
  }
  if (!(opts && opts->max_input_bytes) && (in.stream || in.gzip)) {
    uint64_t m = tbe__import_stream_default();
    if (m < o.max_input_bytes) o.max_input_bytes = m, in.max_input_mem = 1;
  }
  in.max_input = o.max_input_bytes;
  const tbe__importer *imp;
  rc = detect_open(&in, &imp);
  if (rc) {
    tbe__import_input_fail(err, rc, path, &in, &o);
    tbe__input_close(&in);
    if (pin >= 0) close(pin);
    return rc;
  }
  size_t first = t->nevents;
  rc = run_importer(imp, t, &in, path, &o, err);
  tbe__input_close(&in);
  if (pin >= 0) close(pin);
  if (rc == 0) rc = warn_clamped(t, first, path);
  if (rc == 0) rc = tbe_trace_finish(t);
  if (rc && err && !err->message[0])
    tbe__import_fail(err, rc, path, UINT64_MAX, 0, 0, "%s", tbe_strerror(rc));
  return rc;
}
