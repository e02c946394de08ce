/* analysis_files.h: summary and diff read persisted analyses
 * (tbexport/analysis.h) instead of re-importing traces.
 *
 * A run: each host's <host>.analysis.pb, written by the export beside the
 * host's trace files, is used when it is of this format and analysis
 * version (computed by code that gives today's figures) and names the
 * trace file the summary would otherwise import with that file's current
 * key (size and the CRC32C of its head and tail; not its mtime, so a
 * copied log dir keeps its analyses).  Files are read as the library reads
 * every file below a log dir (tbe_analysis_read): no symlink followed
 * below the log dir, no blocking open (a FIFO is refused), nothing over
 * TBE_ANALYSIS_FILE_MAX read.  The N hosts' files are read and checked by
 * a few threads at once.  A file that is present but not used says why in
 * one line (the caller prints it) and the trace is imported instead; an
 * absent file says nothing.
 *
 * A raw FILE argument: a cache of persisted analyses under
 * $TBEXPORT_CACHE_DIR, else $XDG_CACHE_HOME/tbexport, else
 * ~/.cache/tbexport, one file per input named by a hash of the input's
 * real path, device and inode, holding its base name and key and the
 * analysis version (checked on every read, like a run's).  Only inputs of
 * at least TBE_CLI_CACHE_MIN_BYTES (TBEXPORT_CACHE_MIN_BYTES overrides)
 * are cached; at most TBE_CLI_CACHE_ENTRIES files and TBE_CLI_CACHE_BYTES
 * bytes are kept (the least recently used go first).  Every cache failure
 * is silent: the cache only ever saves work. */
#ifndef TBE_CLI_ANALYSIS_FILES_H
#define TBE_CLI_ANALYSIS_FILES_H

#include <stddef.h>

#include "tbexport.h"
#include "tbexport/analysis.h"

#define TBE_CLI_CACHE_MIN_BYTES ((long long)8 << 20)
#define TBE_CLI_CACHE_ENTRIES 64
#define TBE_CLI_CACHE_BYTES ((long long)64 << 20)

/* One host of a run. */
typedef struct tbe_cli_host_analysis {
  const char *logdir; /* the log dir (the user's: symlinks in it are followed) */
  const char *rel;    /* the run's folder below it: plugins/profile/<run> */
  const char *stem;   /* the host: <logdir>/<rel>/<stem>.analysis.pb */
  const char *trace;  /* the trace file's name in the folder (the one imported otherwise) */
  tbe_analysis *an;   /* out: the loaded analysis, or NULL */
  char why[512];      /* out when an is NULL: why a present file was not used ("" absent) */
} tbe_cli_host_analysis;

/* Reads the n hosts' analyses, on up to `threads` threads.  Never fails:
 * each host ends with an analysis or not. */
void tbe_cli_read_analyses(tbe_cli_host_analysis *h, size_t n, unsigned threads);

/* The cached analysis of the file `path`, or NULL (absent, stale, too
 * small to be cached, no cache).  `why` gets a line when a cache file was
 * there but not used ("" otherwise). */
tbe_analysis *tbe_cli_cache_get(const char *path, char *why, size_t size);
/* Stores the analysis of `path` (silently does nothing when it cannot). */
void tbe_cli_cache_put(const char *path, const tbe_analysis *an);

#endif
