/* analysis_version.h: the version of what an import and an analysis make
 * of a trace, stamped into every persisted analysis
 * (proto/tbexport/analysis.proto, AnalysisFile.analysis_version).
 *
 * A persisted analysis stands in for re-importing its trace only while
 * today's code would compute the same figures from it.  The format version
 * says whether a file can be decoded; this one says whether its figures
 * are still today's.  Raise it, by one, in any change that makes the
 * figures of some trace differ: an analysis rule (busy time, step windows,
 * advice thresholds), a new figure, an importer reading a field
 * differently.  Every file of another version is then stale: summary and
 * diff say so in one line and import the trace instead.
 *
 * test_analysis_version enforces it: it computes a digest of the complete
 * JSON summary (every row, full names) of every real trace in test/data
 * and compares it with the digest recorded for this version, the last row
 * of TBE__ANALYSIS_DIGESTS.  When they differ it fails with the one row to
 * add.  Rows are never edited or removed: each version names the figures
 * of one state of the code, and a version is never reused for others. */
#ifndef TBE_TRACE_ANALYSIS_VERSION_H
#define TBE_TRACE_ANALYSIS_VERSION_H

#define TBE__ANALYSIS_VERSION 8

/* X(version, digest): every version, oldest first; the last is
 * TBE__ANALYSIS_VERSION. */
#define TBE__ANALYSIS_DIGESTS(X)                                                              \
  X(1, 0xd241e6b8u)                                                                           \
  X(2, 0x9d2f6f4bu) /* nsys: PyTorch's operator ranges are operators */                       \
  X(3, 0x9388482du) /* operators' GPU figures, the by-shape table, advice on operators */     \
  X(4, 0xf6bc80e0u) /* launch overhead and queue delay; kernels' operator; launch sequence */ \
  X(5, 0x945fc3b2u) /* sync advice: says when its share of wall time sums threads */          \
  X(6, 0x3ea5e8f4u) /* advice: GPU idle and no traced host work explains it */                \
  X(7, 0xb3e3e03bu) /* memory: peaks, growth per step, never freed; step peaks; advice */ \
  X(8, 0x39d9cdfau) /* memory: the sampled peak (NVML), JAX's samples as a curve */

#endif
