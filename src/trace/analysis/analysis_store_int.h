/* analysis_store_int.h: what saving (analysis_save.c) and loading
 * (analysis_store.c) of the analysis file share: the generated messages'
 * short names, the checksum field, text as protobuf bytes, and the
 * figures by key (the rows of figures.h found in their messages).
 * Internal to src/trace/analysis. */
#ifndef TBE_TRACE_ANALYSIS_STORE_INT_H
#define TBE_TRACE_ANALYSIS_STORE_INT_H

#include <stdint.h>
#include <string.h>

#include "tbexport/analysis.pb-c.h"
#include "trace/analysis/figures.h"

/* The checksum field (AnalysisFile.crc32c = 5, fixed32): its tag and its
 * size with the tag. */
#define CRC_TAG ((5 << 3) | 5)
#define CRC_FIELD 5

typedef Tbexport__AnalysisFile PFile;
typedef Tbexport__Analysis PAnalysis;
typedef Tbexport__Device PDevice;
typedef Tbexport__NameStats PName;
typedef Tbexport__NameTable PTable;
typedef Tbexport__Step PStep;
typedef Tbexport__StepDist PDist;
typedef Tbexport__Advice PAdvice;
typedef Tbexport__SourceFile PSource;
typedef Tbexport__OpKernel POpKernel;
typedef Tbexport__Figure PFigure;

static inline ProtobufCBinaryData text_of(const char *s) {
  ProtobufCBinaryData b;
  b.len = s ? strlen(s) : 0;
  b.data = (uint8_t *)(uintptr_t)(s ? s : "");
  return b;
}

/* ---- figures, by key ----
 * The figures of a Device, Step and Analysis message are the rows of
 * figures.h of that scope (analysis.proto's rules).  A row is found in its
 * message by its key, the generated descriptor's field of that name; a row
 * without one (a figure newer than the schema) is an entry of the
 * message's `figures` list under its key.  Save, checks and load loop over
 * the rows; the identity fields around them (ordinal, names, the step
 * number's window, the step hint's text) keep code of their own. */

static inline const ProtobufCMessageDescriptor *scope_msg(uint32_t scope) {
  return scope == TBE__FS_DEVICE ? &tbexport__device__descriptor
         : scope == TBE__FS_STEP ? &tbexport__step__descriptor
                                 : &tbexport__analysis__descriptor;
}

/* The field of row f in its message; NULL: it is kept in `figures`. */
static inline const ProtobufCFieldDescriptor *fig_field(const tbe__figure *f) {
  return protobuf_c_message_descriptor_get_field_by_name(scope_msg(f->scope), f->key);
}

static inline void *msg_at(const void *m, unsigned off) { return (char *)(uintptr_t)m + off; }

/* The `figures` list of message m of `scope`: its count and array. */
static inline size_t *keyed_n(const void *m, uint32_t scope) {
  const ProtobufCFieldDescriptor *fd =
      protobuf_c_message_descriptor_get_field_by_name(scope_msg(scope), "figures");
  return msg_at(m, fd->quantifier_offset);
}
static inline PFigure ***keyed_v(const void *m, uint32_t scope) {
  const ProtobufCFieldDescriptor *fd =
      protobuf_c_message_descriptor_get_field_by_name(scope_msg(scope), "figures");
  return msg_at(m, fd->offset);
}

/* Rows of `scope` kept in the `figures` list (none of the figures written
 * before the table existed). */
static inline size_t keyed_rows(uint32_t scope) {
  size_t n = 0;
  for (size_t i = 0; i < TBE__FIG__COUNT; i++)
    n += tbe__figures[i].scope == scope && !fig_field(&tbe__figures[i]);
  return n;
}

/* The entry of key f->key in message m's list, NULL when the file has
 * none. */
static inline const PFigure *keyed_find(const void *m, const tbe__figure *f) {
  size_t n = *keyed_n(m, f->scope), klen = strlen(f->key);
  PFigure *const *v = *keyed_v(m, f->scope);
  for (size_t i = 0; i < n; i++)
    if (v[i]->key.len == klen && memcmp(v[i]->key.data, f->key, klen) == 0) return v[i];
  return NULL;
}

#endif
