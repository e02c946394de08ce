/* cmd_inspect.c: `tbexport inspect PATH [--dump]`, like `tensorboard
 * --inspect`: reads a log directory (every run below it), a run directory
 * or one event file with the public reader, and prints the runs, the tags
 * of each plugin with their counts, first/last step and wall time.  With
 * --dump it prints one JSON object per event instead (JSON Lines).
 *
 * A truncated tail is a warning (a writer may still be appending); a
 * corrupt record (bad CRC, not an Event) is reported with its file and
 * byte offset, the rest of that file is skipped, the other files are still
 * read, and the exit status is 2.  One file that does not start with a
 * TFRecord is recognized by its first bytes when it is one of the other
 * files we read or write (XSpace, Chrome trace JSON plain or gzip, SQLite,
 * a spool): one line says so and which command reads it, exit 2.  A
 * directory without event files that holds such a file (a run's folder
 * under plugins/profile) is answered the same way, naming that file.
 *
 * Whatever the files hold, the output stays inert text: run names, plugin
 * names, tags and paths are printed in the terminal form of tbexport/text.h
 * and padded by their width after escaping; --dump's JSON escapes controls
 * and invisible characters.  The walk itself (each directory once,
 * symbolic links to a directory already read listed as skipped, FIFOs and
 * devices listed, never opened) is the reader's (tbexport/reader.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "tbexport.h"

typedef struct tagstat {
  char *run;
  char *plugin;
  char *tag;
  uint64_t count;
  int64_t first_step, last_step, min_step, max_step;
  uint64_t out_of_order;
  double first_wall, last_wall;
} tagstat;

typedef struct runstat {
  char *run;
  uint64_t events, files_seen;
  char *last_path;
} runstat;

typedef struct stats {
  tagstat *tags;
  size_t ntags, cap;
  /* `tags` by (run, plugin, tag): libc's balanced search tree (tsearch),
   * so tags chosen to collide cost log n each, never a scan. */
  void *index;
  runstat *runs;
  size_t nruns, rcap;
  uint64_t events;
} stats;

static void usage(FILE *f) {
  fprintf(f,
          "usage: tbexport inspect [--dump] PATH\n"
          "\n"
          "Lists what TensorBoard event files hold.  PATH is a log directory (every\n"
          "run below it is read), a run directory, or one event file.  Each directory\n"
          "is read once: symbolic links to one already read, and FIFOs or devices\n"
          "named like event files, are listed as skipped, never followed or opened.\n"
          "\n"
          "  --dump    print one JSON object per event (JSON Lines) instead of the summary\n"
          "  -h, --help  this help\n"
          "\n"
          "exit status: 0 ok (a truncated last record is only a warning); 1 I/O error;\n"
          "2 bad usage, no event files, or a corrupt record (its byte offset is printed).\n");
}

static const char *plugin_of(const tbe_summary_value *v) {
  if (v->plugin_name && v->plugin_name[0]) return v->plugin_name;
  switch (v->type) {
    case TBE_VALUE_SIMPLE: return "scalars";
    case TBE_VALUE_HISTO: return "histograms";
    case TBE_VALUE_IMAGE: return "images";
    case TBE_VALUE_AUDIO: return "audio";
    case TBE_VALUE_TENSOR: return "tensors";
    default: return "(none)";
  }
}

static char *xstrdup(const char *s) {
  char *p = strdup(s ? s : "");
  if (!p) {
    tbe_cli_error("inspect", "out of memory");
    exit(TBE_EXIT_FAIL);
  }
  return p;
}

static void *xrealloc(void *p, size_t n) {
  void *q = realloc(p, n);
  if (!q) {
    tbe_cli_error("inspect", "out of memory");
    exit(TBE_EXIT_FAIL);
  }
  return q;
}

/* Prints `s` (a name from an event file, a path) in terminal form, then
 * spaces up to `w` columns. */
static void put_text(const char *s, int w) {
  char small[512], *big = NULL, *out = small;
  size_t n = tbe_text_escape(TBE_TEXT_TERMINAL, s, strlen(s), small, sizeof small);
  if (n >= sizeof small) {
    out = big = xrealloc(NULL, n + 1);
    if (tbe_text_escape(TBE_TEXT_TERMINAL, s, strlen(s), big, n + 1) != n) {
      tbe_cli_error("inspect", "out of memory");
      exit(TBE_EXIT_FAIL);
    }
  }
  fwrite(out, 1, n, stdout);
  for (int i = (int)tbe_text_width(out, n); i < w; i++) putchar(' ');
  free(big);
}

static runstat *run_of(stats *st, const char *run) {
  if (st->nruns && strcmp(st->runs[st->nruns - 1].run, run) == 0) return &st->runs[st->nruns - 1];
  for (size_t i = 0; i < st->nruns; i++)
    if (strcmp(st->runs[i].run, run) == 0) return &st->runs[i];
  if (st->nruns == st->rcap) {
    st->rcap = st->rcap ? 2 * st->rcap : 8;
    st->runs = xrealloc(st->runs, st->rcap * sizeof *st->runs);
  }
  runstat *r = &st->runs[st->nruns++];
  memset(r, 0, sizeof *r);
  r->run = xstrdup(run);
  return r;
}

/* A node of the tag index: the key's three parts (the tag's own copies)
 * and the tag's position in `tags`. */
typedef struct tagkey {
  const char *run, *plugin, *tag;
  size_t idx;
} tagkey;

static int cmp_key(const void *x, const void *y) {
  const tagkey *a = x, *b = y;
  int c = strcmp(a->tag, b->tag);
  if (!c) c = strcmp(a->run, b->run);
  if (!c) c = strcmp(a->plugin, b->plugin);
  return c;
}

static void count_value(stats *st, const tbe_tb_event *ev, const tbe_summary_value *v) {
  const char *plugin = plugin_of(v);
  const char *tag = v->tag && v->tag[0] ? v->tag : v->node_name;
  tagstat *t = NULL;
  tagkey probe = {ev->run, plugin, tag, 0};
  void **found = tfind(&probe, &st->index, cmp_key);
  if (found) t = &st->tags[((const tagkey *)*found)->idx];
  if (!t) {
    if (st->ntags == st->cap) {
      st->cap = st->cap ? 2 * st->cap : 16;
      st->tags = xrealloc(st->tags, st->cap * sizeof *st->tags);
    }
    t = &st->tags[st->ntags];
    memset(t, 0, sizeof *t);
    t->run = xstrdup(ev->run);
    t->plugin = xstrdup(plugin);
    t->tag = xstrdup(tag);
    tagkey *k = malloc(sizeof *k);
    if (k) *k = (tagkey){t->run, t->plugin, t->tag, st->ntags++};
    if (!k || !tsearch(k, &st->index, cmp_key)) {
      tbe_cli_error("inspect", "out of memory");
      exit(TBE_EXIT_FAIL);
    }
    t->first_step = t->min_step = t->max_step = ev->step;
    t->first_wall = ev->wall_time;
  } else if (ev->step < t->last_step) {
    t->out_of_order++;
  }
  t->count++;
  t->last_step = ev->step;
  t->last_wall = ev->wall_time;
  if (ev->step < t->min_step) t->min_step = ev->step;
  if (ev->step > t->max_step) t->max_step = ev->step;
}

static void fmt_time(char *buf, size_t n, double wall) {
  if (!isfinite(wall) || wall < 0 || wall > 253402300799.0) {
    snprintf(buf, n, "%g", wall);
    return;
  }
  time_t secs = (time_t)wall;
  int ms = (int)((wall - (double)secs) * 1000.0);
  struct tm tm;
  gmtime_r(&secs, &tm);
  char d[32];
  strftime(d, sizeof d, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(buf, n, "%s.%03dZ", d, ms);
}

static int cmp_tag(const void *x, const void *y) {
  const tagstat *a = x, *b = y;
  int c = strcmp(a->run, b->run);
  if (!c) c = strcmp(a->plugin, b->plugin);
  if (!c) c = strcmp(a->tag, b->tag);
  return c;
}

static void print_summary(stats *st, const char *path, const tbe_reader *rd) {
  if (st->ntags > 1) {
    qsort(st->tags, st->ntags, sizeof *st->tags, cmp_tag);
    /* The index holds positions: give each key its tag's new one. */
    for (size_t i = 0; i < st->ntags; i++) {
      tagkey probe = {st->tags[i].run, st->tags[i].plugin, st->tags[i].tag, 0};
      void **found = tfind(&probe, &st->index, cmp_key);
      if (found) ((tagkey *)*found)->idx = i;
    }
  }
  put_text(path, 0);
  printf(": %zu run%s, %" PRIu64 " events\n", st->nruns, st->nruns == 1 ? "" : "s", st->events);
  const char *sp, *why;
  for (size_t i = 0, n = tbe_reader_skipped(rd, 0, NULL, NULL); i < n; i++) {
    tbe_reader_skipped(rd, i, &sp, &why);
    fputs("skipped ", stdout);
    put_text(sp, 0);
    printf(": %s\n", why);
  }
  for (size_t i = 0; i < st->nruns; i++) {
    runstat *r = &st->runs[i];
    fputs("\nrun ", stdout);
    put_text(r->run, 0);
    printf("  (%" PRIu64 " file%s, %" PRIu64 " events)\n", r->files_seen,
           r->files_seen == 1 ? "" : "s", r->events);
    const char *plugin = NULL;
    for (size_t k = 0; k < st->ntags; k++) {
      tagstat *t = &st->tags[k];
      if (strcmp(t->run, r->run) != 0) continue;
      if (!plugin || strcmp(plugin, t->plugin) != 0) {
        plugin = t->plugin;
        fputs("  ", stdout);
        put_text(plugin, 0);
        putchar('\n');
      }
      char fw[40], lw[40];
      fmt_time(fw, sizeof fw, t->first_wall);
      fmt_time(lw, sizeof lw, t->last_wall);
      fputs("    ", stdout);
      put_text(t->tag, 32);
      printf(" count %-7" PRIu64 " steps %" PRId64 "..%" PRId64, t->count, t->first_step,
             t->last_step);
      if (t->min_step != t->first_step || t->max_step != t->last_step)
        printf(" (min %" PRId64 ", max %" PRId64 ")", t->min_step, t->max_step);
      if (t->out_of_order) printf(" [%" PRIu64 " out of order]", t->out_of_order);
      printf("  wall %s .. %s\n", fw, lw);
    }
  }
}

/* ---- JSON output ---- */

/* A JSON string literal (tbexport/text.h: controls, DEL, C1 and invisible
 * characters escaped, invalid UTF-8 replaced by U+FFFD). */
static void json_str(FILE *f, const uint8_t *s, size_t n) {
  char small[512], *big = NULL, *out = small;
  size_t len = tbe_text_escape(TBE_TEXT_JSON, (const char *)s, n, small, sizeof small);
  if (len >= sizeof small) {
    out = big = xrealloc(NULL, len + 1);
    if (tbe_text_escape(TBE_TEXT_JSON, (const char *)s, n, big, len + 1) != len) len = 0;
  }
  if (!len) { /* even "" is 2 bytes: the form could not be built */
    tbe_cli_error("inspect", "out of memory");
    exit(TBE_EXIT_FAIL);
  }
  fwrite(out, 1, len, f);
  free(big);
}

static void json_cstr(FILE *f, const char *s) { json_str(f, (const uint8_t *)(s ? s : ""), s ? strlen(s) : 0); }

static void json_num(FILE *f, double v, int prec) {
  if (isnan(v))
    fputs("\"NaN\"", f);
  else if (isinf(v))
    fputs(v > 0 ? "\"Infinity\"" : "\"-Infinity\"", f);
  else
    fprintf(f, "%.*g", prec, v);
}

static const char *kind_name(tbe_tb_kind k) {
  switch (k) {
    case TBE_TB_FILE_VERSION: return "file_version";
    case TBE_TB_GRAPH: return "graph_def";
    case TBE_TB_SUMMARY: return "summary";
    case TBE_TB_LOG_MESSAGE: return "log_message";
    case TBE_TB_SESSION_LOG: return "session_log";
    case TBE_TB_RUN_METADATA: return "tagged_run_metadata";
    case TBE_TB_META_GRAPH: return "meta_graph_def";
    default: return "empty";
  }
}

static const char *dtype_name(int dt) {
  switch (dt) {
    case TBE_DT_FLOAT: return "DT_FLOAT";
    case TBE_DT_DOUBLE: return "DT_DOUBLE";
    case TBE_DT_INT32: return "DT_INT32";
    case TBE_DT_UINT8: return "DT_UINT8";
    case TBE_DT_STRING: return "DT_STRING";
    case TBE_DT_INT64: return "DT_INT64";
    case TBE_DT_BOOL: return "DT_BOOL";
    case TBE_DT_HALF: return "DT_HALF";
    default: return NULL;
  }
}

static void dump_value(FILE *f, const tbe_summary_value *v) {
  fputs("{\"tag\":", f);
  json_cstr(f, v->tag);
  fputs(",\"plugin\":", f);
  json_cstr(f, v->plugin_name);
  switch (v->type) {
    case TBE_VALUE_SIMPLE:
      fputs(",\"type\":\"simple_value\",\"value\":", f);
      json_num(f, v->simple_value, 9);
      break;
    case TBE_VALUE_HISTO:
      fputs(",\"type\":\"histogram\",\"min\":", f);
      json_num(f, v->histo.min, 17);
      fputs(",\"max\":", f);
      json_num(f, v->histo.max, 17);
      fputs(",\"num\":", f);
      json_num(f, v->histo.num, 17);
      fputs(",\"sum\":", f);
      json_num(f, v->histo.sum, 17);
      fputs(",\"sum_squares\":", f);
      json_num(f, v->histo.sum_squares, 17);
      fputs(",\"buckets\":[", f);
      for (size_t i = 0; i < v->histo.nbuckets; i++) {
        fputs(i ? ",[" : "[", f);
        json_num(f, v->histo.bucket_limit[i], 17);
        fputc(',', f);
        json_num(f, v->histo.bucket[i], 17);
        fputc(']', f);
      }
      fputc(']', f);
      break;
    case TBE_VALUE_IMAGE:
      fprintf(f, ",\"type\":\"image\",\"width\":%d,\"height\":%d,\"colorspace\":%d,\"bytes\":%zu",
              v->image.width, v->image.height, v->image.colorspace, v->image.encoded.size);
      break;
    case TBE_VALUE_AUDIO:
      fputs(",\"type\":\"audio\",\"sample_rate\":", f);
      json_num(f, v->audio.sample_rate, 9);
      fprintf(f, ",\"bytes\":%zu", v->audio.encoded.size);
      break;
    case TBE_VALUE_TENSOR: {
      const tbe_tensor_view *t = &v->tensor;
      const char *dn = dtype_name(t->dtype);
      fputs(",\"type\":\"tensor\",\"dtype\":", f);
      if (dn)
        fprintf(f, "\"%s\"", dn);
      else
        fprintf(f, "%d", t->dtype);
      fputs(",\"shape\":[", f);
      for (size_t i = 0; i < t->rank; i++) fprintf(f, "%s%" PRId64, i ? "," : "", t->shape[i]);
      fputs("],\"values\":[", f);
      size_t k = 0;
      for (size_t i = 0; i < t->nfloats; i++, k++) {
        if (k) fputc(',', f);
        json_num(f, t->floats[i], 9);
      }
      for (size_t i = 0; i < t->ndoubles; i++, k++) {
        if (k) fputc(',', f);
        json_num(f, t->doubles[i], 17);
      }
      for (size_t i = 0; i < t->nints; i++, k++) fprintf(f, "%s%" PRId64, k ? "," : "", t->ints[i]);
      for (size_t i = 0; i < t->nstrings; i++, k++) {
        if (k) fputc(',', f);
        json_str(f, t->strings[i].data, t->strings[i].size);
      }
      fputc(']', f);
      break;
    }
    case TBE_VALUE_OLD_HISTOGRAM: fputs(",\"type\":\"old_histogram\"", f); break;
    default: fputs(",\"type\":\"none\"", f); break;
  }
  if (v->plugin_content.size) fprintf(f, ",\"plugin_content_bytes\":%zu", v->plugin_content.size);
  fputc('}', f);
}

static void dump_event(FILE *f, const tbe_tb_event *ev) {
  fputs("{\"run\":", f);
  json_cstr(f, ev->run);
  fputs(",\"file\":", f);
  json_cstr(f, ev->path);
  fprintf(f, ",\"offset\":%" PRIu64 ",\"wall_time\":", ev->offset);
  json_num(f, ev->wall_time, 17);
  fprintf(f, ",\"step\":%" PRId64 ",\"kind\":\"%s\"", ev->step, kind_name(ev->kind));
  if (ev->file_version) {
    fputs(",\"file_version\":", f);
    json_cstr(f, ev->file_version);
  }
  if (ev->source_writer && ev->source_writer[0]) {
    fputs(",\"source_writer\":", f);
    json_cstr(f, ev->source_writer);
  }
  if (ev->kind == TBE_TB_SESSION_LOG) fprintf(f, ",\"status\":%d", ev->session_status);
  if (ev->text && ev->text[0]) {
    fputs(",\"text\":", f);
    json_cstr(f, ev->text);
  }
  if (ev->payload.size) fprintf(f, ",\"payload_bytes\":%zu", ev->payload.size);
  if (ev->kind == TBE_TB_SUMMARY) {
    fputs(",\"values\":[", f);
    for (size_t i = 0; i < ev->nvalues; i++) {
      if (i) fputc(',', f);
      dump_value(f, &ev->values[i]);
    }
    fputc(']', f);
  }
  fputs("}\n", f);
}

/* ---- files that are not event files ---- */

/* `path` quoted for the shell when it needs it (for the command we
 * suggest; the printer makes it inert). */
static const char *shell_quoted(const char *path, char *buf, size_t size) {
  size_t o = 0;
  int plain = *path != '\0';
  for (const char *p = path; *p && plain; p++)
    plain = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:@%+=,-", *p) != NULL;
  if (plain) return path;
  buf[o++] = '\'';
  for (const char *p = path; *p && o + 6 < size; p++) {
    if (*p == '\'') {
      memcpy(buf + o, "'\\''", 4);
      o += 4;
    } else {
      buf[o++] = *p;
    }
  }
  buf[o++] = '\'';
  buf[o] = '\0';
  return buf;
}

/* What the regular file `path` is when it does not start with a TFRecord
 * and is one of the other files we read or write: sets *what (its
 * description) and *cmd (the command that reads it, or NULL) and returns
 * 1; returns 0 when it starts like an event file (or is empty, or cannot
 * be read: the reader says why) and -1 when it is something we do not
 * know. */
static int is_analysis_file(const char *path);

static int describe_other(const char *path, const char **what, const char **cmd) {
  if (is_analysis_file(path)) {
    *what = "a tbexport analysis file (the figures of a run's host that summary and diff read "
            "instead of its traces)";
    *cmd = "summary-run";
    return 1;
  }
  uint8_t head[16];
  ssize_t n = -1;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd >= 0) {
    n = pread(fd, head, sizeof head, 0);
    close(fd);
  }
  if (n < 0) return 0;
  if (tbe_reader_probe(head, (size_t)n)) return 0;
  if (tbe_session_spool_check(path, NULL) != 0) {
    *what = "a tbexport spool (a profile not converted yet)";
    *cmd = "import";
    return 1;
  }
  tbe_import_format fmt = TBE_FORMAT_UNKNOWN;
  if (tbe_import_detect(path, &fmt) != 0) fmt = TBE_FORMAT_UNKNOWN;
  int gz = n >= 2 && head[0] == 0x1f && head[1] == 0x8b;
  *what = fmt == TBE_FORMAT_XSPACE ? "an XSpace file"
          : fmt == TBE_FORMAT_NSYS_SQLITE ? "an SQLite database (as Nsight Systems exports)"
          : fmt == TBE_FORMAT_CHROME_JSON && gz ? "a gzip-compressed Chrome trace JSON file"
          : fmt == TBE_FORMAT_CHROME_JSON ? "a Chrome trace JSON file"
          : gz ? "a gzip file"
          : NULL;
  *cmd = fmt == TBE_FORMAT_UNKNOWN ? NULL : "summary";
  return *what ? 1 : -1;
}

/* The command line that reads `path` (`tbexport import PATH --logdir DIR`
 * for a spool, `tbexport summary PATH` otherwise), with PATH quoted for
 * the shell, into buf. */
static const char *command_for(const char *cmd, const char *path, char *buf, size_t size) {
  char q[4200];
  const char *qp = shell_quoted(path, q, sizeof q);
  if (strcmp(cmd, "summary-run") == 0) {
    /* a run's analysis file: `tbexport summary --logdir DIR RUN` (the
     * library reads the layout, tbe_run_of_path) */
    char dir[PATH_MAX], run[PATH_MAX], qd[4200], qr[600];
    if (tbe_run_of_path(path, dir, sizeof dir, run, sizeof run)) {
      snprintf(buf, size, "tbexport summary --logdir %s %s", shell_quoted(dir, qd, sizeof qd),
               shell_quoted(run, qr, sizeof qr));
      return buf;
    }
    snprintf(buf, size, "tbexport summary --logdir DIR RUN");
    return buf;
  }
  if (strcmp(cmd, "import") == 0)
    snprintf(buf, size, "tbexport import %s --logdir DIR", qp);
  else
    snprintf(buf, size, "tbexport %s %s", cmd, qp);
  return buf;
}

/* Whether `path` is a run's analysis file (HOST.analysis.pb that
 * tbe_analysis_load accepts; such files are small: 16 MiB read at most). */
static int is_analysis_file(const char *path) {
  size_t n = strlen(path), sl = strlen(TBE_ANALYSIS_SUFFIX);
  if (n <= sl || strcmp(path + n - sl, TBE_ANALYSIS_SUFFIX) != 0) return 0;
  FILE *f = fopen(path, "rbe");
  if (!f) return 0;
  size_t cap = 16u << 20, len = 0;
  unsigned char *buf = malloc(cap);
  if (buf) len = fread(buf, 1, cap, f);
  fclose(f);
  int ok = 0;
  if (buf && len > 0 && len < cap) {
    tbe_analysis *an = NULL;
    if (tbe_analysis_load(&an, NULL, buf, len, NULL, NULL) == 0) {
      ok = 1;
      tbe_analysis_free(an);
    }
  }
  free(buf);
  return ok;
}

/* When the regular file `path` does not start with a TFRecord and is one
 * of the other files we read or write, says so in one line and returns
 * TBE_EXIT_USAGE; returns 0 when it starts like an event file (or is
 * empty) and -1 when it is something we do not know. */
static int other_format(const char *path) {
  const char *what = NULL, *cmd = NULL;
  int k = describe_other(path, &what, &cmd);
  if (k <= 0) return k;
  char line[4400];
  if (!cmd)
    tbe_cli_error("inspect", "%s is %s, not a TensorBoard event file", path, what);
  else
    tbe_cli_error("inspect", "%s is %s, not a TensorBoard event file; use `%s`", path, what,
                  command_for(cmd, path, line, sizeof line));
  return TBE_EXIT_USAGE;
}

/* A directory without event files: the first file below it (three levels
 * at most, 4096 entries read at most, no symbolic link followed) that
 * describe_other knows and a command reads, into found; 1 if there is
 * one.  So `inspect log_dir/plugins/profile/RUN` names the profile. */
static int find_other(const char *dir, int depth, unsigned *budget, char *found, size_t size,
                      const char **what, const char **cmd) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  struct dirent *e;
  int hit = 0;
  char path[PATH_MAX];
  while (!hit && *budget > 0 && (e = readdir(d)) != NULL) {
    (*budget)--;
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= sizeof path) continue;
    struct stat st;
    if (lstat(path, &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      if (depth > 0) hit = find_other(path, depth - 1, budget, found, size, what, cmd);
    } else if (S_ISREG(st.st_mode) && describe_other(path, what, cmd) > 0 && *cmd &&
               strlen(path) < size) {
      memcpy(found, path, strlen(path) + 1);
      hit = 1;
    }
  }
  closedir(d);
  return hit;
}

/* What a path that is neither a directory nor a regular file is. */
static const char *special_name(mode_t m) {
  return S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) || S_ISBLK(m) ? "a device" : S_ISSOCK(m) ? "a socket"
                                                                                      : "not a file";
}

int tbe_cmd_inspect(int argc, char **argv) {
  static const struct option opts[] = {
      {"dump", no_argument, 0, 'd'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
  int dump = 0, c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "+dh", opts, NULL)) != -1) {
    switch (c) {
      case 'd': dump = 1; break;
      case 'h': usage(stdout); return TBE_EXIT_OK;
      default:
        tbe_cli_error("inspect", "unknown option '%s' (try --help)", argv[optind - 1]);
        return TBE_EXIT_USAGE;
    }
  }
  if (optind + 1 != argc) {
    tbe_cli_error("inspect", optind >= argc ? "missing PATH (try --help)"
                                            : "expected one PATH, got extra argument '%s'",
                  optind < argc ? argv[optind + 1] : "");
    return TBE_EXIT_USAGE;
  }
  const char *path = argv[optind];
  struct stat ps;
  if (stat(path, &ps) == 0 && !S_ISDIR(ps.st_mode) && !S_ISREG(ps.st_mode)) {
    tbe_cli_error("inspect", "%s is %s, not an event file or a directory: not read", path,
                  special_name(ps.st_mode));
    return TBE_EXIT_USAGE;
  }
  if (stat(path, &ps) == 0 && S_ISREG(ps.st_mode)) {
    int other = other_format(path);
    if (other > 0) return other;
    const char *base = strrchr(path, '/');
    if (other < 0 && !strstr(base ? base + 1 : path, "tfevents")) {
      tbe_cli_error("inspect", "%s: not a TensorBoard event file (it does not start with a "
                    "TFRecord, and is no other format tbexport knows)", path);
      return TBE_EXIT_USAGE;
    }
  }
  tbe_reader *r;
  int rc = tbe_reader_open(&r, path, TBE_READER_RECURSIVE, NULL);
  if (rc < 0) {
    tbe_cli_error("inspect", "%s: %s", path, tbe_strerror(rc));
    return rc == -ENOENT || rc == -ESPIPE ? TBE_EXIT_USAGE : tbe_cli_exit_for(rc);
  }
  if (tbe_reader_file_count(r) == 0 || dump) {
    const char *sp, *why;
    for (size_t i = 0, n = tbe_reader_skipped(r, 0, NULL, NULL); i < n; i++) {
      tbe_reader_skipped(r, i, &sp, &why);
      tbe_cli_warn("inspect", "skipped %s: %s", sp, why);
    }
  }
  if (tbe_reader_file_count(r) == 0) {
    char other[PATH_MAX], line[4400];
    const char *what = NULL, *cmd = NULL;
    unsigned budget = 4096;
    if (S_ISDIR(ps.st_mode) && find_other(path, 2, &budget, other, sizeof other, &what, &cmd))
      tbe_cli_error("inspect", "%s: no TensorBoard event files (names containing \"tfevents\") "
                    "found; %s is %s: use `%s`", path, other, what,
                    command_for(cmd, other, line, sizeof line));
    else
      tbe_cli_error("inspect", "%s: no event files (names containing \"tfevents\") found", path);
    tbe_reader_close(r);
    return TBE_EXIT_USAGE;
  }
  stats st;
  memset(&st, 0, sizeof st);
  int status = TBE_EXIT_OK;
  const tbe_tb_event *ev;
  for (;;) {
    rc = tbe_reader_next(r, &ev);
    if (rc == 0) break;
    if (rc < 0) {
      tbe_reader_error_info info;
      tbe_reader_error(r, &info);
      if (rc == TBE_ETRUNCATED) {
        tbe_cli_warn("inspect", "%s: byte offset %" PRIu64 ": %s", info.path, info.offset,
                     info.message);
        continue;
      }
      if (rc == TBE_ECHECKSUM || rc == TBE_EPARSE) {
        tbe_cli_error("inspect", "%s: corrupt record at byte offset %" PRIu64 ": %s", info.path,
                      info.offset, info.message);
        status = TBE_EXIT_USAGE;
        continue;
      }
      tbe_cli_error("inspect", "%s: %s", info.path && info.path[0] ? info.path : path,
                    info.message && info.message[0] ? info.message : tbe_strerror(rc));
      if (rc == TBE_ENOMEM) {
        status = TBE_EXIT_FAIL;
        break;
      }
      if (status == TBE_EXIT_OK) status = TBE_EXIT_FAIL;
      continue;
    }
    if (dump) {
      dump_event(stdout, ev);
      continue;
    }
    st.events++;
    runstat *rs = run_of(&st, ev->run);
    rs->events++;
    if (!rs->last_path || strcmp(rs->last_path, ev->path) != 0) {
      free(rs->last_path);
      rs->last_path = xstrdup(ev->path);
      rs->files_seen++;
    }
    if (ev->kind == TBE_TB_SUMMARY)
      for (size_t i = 0; i < ev->nvalues; i++) count_value(&st, ev, &ev->values[i]);
  }
  if (!dump) print_summary(&st, path, r);
  tbe_reader_close(r);
  for (size_t i = 0; i < st.ntags; i++) {
    free(st.tags[i].run);
    free(st.tags[i].plugin);
    free(st.tags[i].tag);
  }
  for (size_t i = 0; i < st.nruns; i++) {
    free(st.runs[i].run);
    free(st.runs[i].last_path);
  }
  free(st.tags);
  tdestroy(st.index, free);
  free(st.runs);
  if (fflush(stdout) != 0 && status == TBE_EXIT_OK) status = TBE_EXIT_FAIL;
  return status;
}
