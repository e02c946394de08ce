/* analysis_store.h: what the export needs of the persisted analysis
 * beyond the public API (tbexport/analysis.h): the key of a trace file it
 * has open. */
#ifndef TBE_TRACE_ANALYSIS_STORE_H
#define TBE_TRACE_ANALYSIS_STORE_H

#include "tbexport/analysis.h"

/* The key of the open regular file `fd` (tbe_analysis_source: size,
 * mtime, the CRC32C of its first and last TBE_ANALYSIS_KEY_SPAN bytes),
 * read with pread (the file offset does not move); src->name is left as
 * it is.  Returns 0 or a negative code. */
int tbe__analysis_key_fd(int fd, tbe_analysis_source *src);

#endif
