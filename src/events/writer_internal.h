/* writer_internal.h: seams of the event writer for tests and in-tree users. */
#ifndef TBE_EVENTS_WRITER_INTERNAL_H
#define TBE_EVENTS_WRITER_INTERNAL_H

#include <protobuf-c/protobuf-c.h>

#include "tbexport/writer.h"

/* Replaces the writer's file descriptor by `fd` (the old one is closed; the
 * writer owns `fd` afterwards).  Tests point it at /dev/full to provoke
 * ENOSPC.  Returns 0 or TBE_EINVAL. */
int tbe__writer_replace_fd(tbe_writer *w, int fd);

/* Packs `msg` (an Event) and appends it as one record. */
int tbe__writer_write_message(tbe_writer *w, const ProtobufCMessage *msg);

/* Adapter from a tbe_allocator to protobuf-c's allocator.  protobuf-c
 * returns NULL both for bad input and for a failed allocation; `oom` is set
 * on the latter so callers do not report ENOMEM as corruption. */
typedef struct tbe__pbctx {
  const tbe_allocator *a;
  int oom;
} tbe__pbctx;
void tbe__pb_allocator(ProtobufCAllocator *out, tbe__pbctx *ctx);

#endif
