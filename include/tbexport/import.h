/* tbexport/import.h: reading existing traces into the trace model.
 *
 * The format is detected from the file's content, never its name:
 *   - Chrome trace JSON (PyTorch/Kineto, JAX, any producer), plain or gzip
 *   - XSpace protobuf (.xplane.pb from JAX, TensorFlow, XLA, tbexport)
 *   - Nsight Systems SQLite export (nsys export --type sqlite)
 *   - tbexport's own spool (`<pid>.spool`, left unconverted by a profiled
 *     process), as one process without capture range or steps
 * Importing adds to a trace created with tbe_trace_create; call
 * tbe_trace_finish afterwards (tbe_import_file does so itself).
 *
 * Inputs.  `path` names a regular file, or is "-" for standard input (a
 * pipe: the format is sniffed from bytes kept for the importer, so nothing
 * is lost; an Nsight Systems database cannot come through a pipe, SQLite
 * needs the file).  Any other non-regular path (a FIFO, a character or
 * block device such as /dev/urandom, a socket, a directory) is refused at
 * once with TBE_ENOTREG (EISDIR for a directory): it is opened without
 * blocking, so a FIFO with no writer, or one whose writer stalls, never
 * hangs the caller.
 *
 * Limits.  Every input is someone else's: the importers hold bounded
 * memory and take time linear in the input whatever its shape, and refuse
 * what goes past the limits of tbe_import_options with TBE_ETOOBIG and one
 * line naming the input, the byte offset, the limit and the tbexport flag
 * that raises it.  The defaults stop a gzip bomb (1 GB of one JSON string
 * in a 1 MB file) in a fraction of a second and let every real trace we
 * know through with a wide margin (docs/reliability.md has the figures).
 *
 * Errors: a negative TBE_E* code, and in `err` a one-line message that
 * names the input and the byte offset (and line/column for JSON, table and
 * row for SQLite).  On error the trace may hold part of the input: free
 * it, do not export it. */
#ifndef TBEXPORT_IMPORT_H
#define TBEXPORT_IMPORT_H

#include <stdint.h>

#include "tbexport/common.h"
#include "tbexport/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tbe_import_format {
  TBE_FORMAT_UNKNOWN = 0,
  TBE_FORMAT_CHROME_JSON = 1,
  TBE_FORMAT_XSPACE = 2,
  TBE_FORMAT_NSYS_SQLITE = 3,
  TBE_FORMAT_SPOOL = 4 /* the collector's spool (`<pid>.spool`), converted as
                          `tbexport import` does, without capture or steps */
} tbe_import_format;

typedef struct tbe_import_error {
  /* "<path>: byte <offset> (line L, column C): <what>", NUL-terminated. */
  char message[512];
  uint64_t offset;  /* byte offset in the (decompressed) input; 0 if n/a */
  uint64_t line;    /* 1-based, 0 if n/a */
  uint64_t column;  /* 1-based, 0 if n/a */
} tbe_import_error;

/* Default limits (see tbe_import_options). */
#define TBE_IMPORT_DEFAULT_MAX_TOKEN_BYTES ((uint64_t)64 << 20)   /* 64 MiB */
#define TBE_IMPORT_DEFAULT_MAX_EVENT_BYTES ((uint64_t)16 << 20)   /* 16 MiB */
#define TBE_IMPORT_DEFAULT_MAX_DEPTH 1000u
#define TBE_IMPORT_DEFAULT_MAX_EVENTS ((uint64_t)50000000)        /* 50 million */
#define TBE_IMPORT_DEFAULT_MAX_INPUT_BYTES ((uint64_t)32 << 30)   /* 32 GiB */

/* Initialise with tbe_import_options_init(&o) (common.h: the size rule)
 * and set what you need: a limit of 0 means its default, UINT64_MAX
 * (UINT32_MAX for max_depth) no limit.  Each limit is named in a refusal
 * by its tbexport flag. */
typedef struct tbe_import_options {
  size_t size; /* sizeof the struct: set by tbe_import_options_init (common.h) */
  /* Called now and then with bytes (or rows) done and the total (0 if
   * unknown).  May be NULL. */
  void (*progress)(void *ctx, uint64_t done, uint64_t total);
  void *progress_ctx;

  /* --max-token: the longest JSON token (a string, an object key, a
   * number), in bytes of the file's text (decompressed).  A token is the
   * one thing the JSON parser must hold whole, so this bounds its memory
   * (about twice the limit) for a token of any length.  Default 64 MiB. */
  uint64_t max_token_bytes;
  /* --max-event-size: the largest single trace event (one element of
   * traceEvents, from '{' to '}'), in bytes of text.  Bounds what is held
   * per event while it is parsed: its text, its args and a nested arg value
   * re-serialized (a small multiple of the limit).  Default 16 MiB. */
  uint64_t max_event_bytes;
  /* --max-depth: the deepest nesting of JSON arrays and objects, counted
   * from the top-level value (a Kineto trace needs about 6).  Default
   * 1,000. */
  uint32_t max_depth;
  /* --max-events: trace events read from one file (JSON elements of
   * traceEvents, XSpace events, nsys rows that become events).  The
   * model's memory grows with it (64 bytes per event plus args and
   * details).  Default 50 million. */
  uint64_t max_events;
  /* --max-input: bytes read from one input after decompression: bounds the
   * time spent on an endless stream (stdin) or a decompression bomb of
   * skipped or blank text, and what an XSpace read from stdin may hold.
   * Default 32 GiB; for an input whose size is not known before it is read
   * (standard input, gzip) at most half the memory this process may use
   * (the least of the physical memory, the cgroup's limit and RLIMIT_AS). */
  uint64_t max_input_bytes;
  /* Parse workers of the Chrome JSON importer for a large file (the model
   * is the same for any number): 0 = half the online CPUs (at least 2, at
   * most 16); 1 = none, the calling thread parses; N = N workers (at most
   * 64).  Files under 8 MB (1 MB gzipped) are parsed on the calling thread
   * whatever it says.  The library reads no environment for it (the
   * tbexport program takes TBE_IMPORT_THREADS). */
  unsigned threads;
  /* For measuring the Chrome JSON importer: when not NULL, called at the
   * end of an import, one call per line (TBE_MSG_NOTE, line form), with
   * its phase times: wall and CPU time of model building, chunk parsing
   * and the driver, the end of the import, the number of parse workers.
   * The tbexport program prints them when TBE_IMPORT_PROFILE=1. */
  tbe_message_fn on_profile;
  void *profile_ctx;
  /* Memory of the import itself (input buffers, parser state and threads'
   * scratch, decoded XSpace planes, lookup tables), through this allocator
   * only; it must be thread-safe (the JSON importer's workers share it).
   * NULL: the trace's own allocator (tbe_trace_create's), so one allocator
   * given there covers everything an import allocates.  SQLite's own
   * memory, for nsys exports, is process-wide and not covered. */
  const tbe_allocator *allocator;
  /* When not NULL, tbe_import_file's `path` lies below this directory (a
   * log dir: the caller's, its symlinks followed) and is read under the
   * rule of every file below a log dir: no component of `path` below it,
   * the file's name included, may be a symbolic link (-ELOOP), and only a
   * regular file is read (a FIFO planted there is refused without
   * waiting).  `path` is the whole path (it names the file in messages). */
  const char *base_dir;
} tbe_import_options;

/* Fills `o` with the defaults above (every field 0: its default). */
TBE_API void tbe_import_options_init_sized(tbe_import_options *o, size_t size);
#define tbe_import_options_init(o) tbe_import_options_init_sized((o), sizeof(tbe_import_options))

/* Returns a static name: "chrome-json", "xspace", "nsys-sqlite", "spool",
 * "unknown". */
TBE_API const char *tbe_import_format_name(tbe_import_format f);

/* Detects the format of `path` from its content: an XSpace when its
 * protobuf framing holds (a walk of the top-level fields ends exactly at
 * the end of the file), else Chrome JSON when, after an optional UTF-8 BOM
 * and whitespace, it begins a JSON object or array, else an nsys export
 * when it has the SQLite header; gzip is looked through.  Never from one
 * byte and never from the name.  Reads only the first bytes and the
 * protobuf headers.  "-" (standard input) cannot be detected without
 * consuming it: TBE_EINVAL.  Returns 0 and sets *fmt (TBE_FORMAT_UNKNOWN
 * if not recognized), TBE_ENOTREG, or -errno. */
TBE_API int tbe_import_detect(const char *path, tbe_import_format *fmt);

/* Imports `path` ("-" for standard input) into `t` and finishes the trace.
 * `opts` (NULL: the defaults) and `err` may be NULL.  Returns 0,
 * TBE_EFORMAT (not a format we read, or JSON that is not a trace),
 * TBE_EINVAL (opts' size refused: common.h), TBE_EPARSE or TBE_ECORRUPT (bad
 * input; see err), TBE_ETOOBIG (past a limit), TBE_ENOTREG (not a regular
 * file), or another negative code.  Events with a negative duration are
 * kept with duration 0 and counted in a warning of the trace (every output
 * shows it). */
TBE_API int tbe_import_file(tbe_trace *t, const char *path, const tbe_import_options *opts,
                            tbe_import_error *err);

#ifdef __cplusplus
}
#endif

#endif
