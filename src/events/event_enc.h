/* event_enc.h: hand-written encoders for the hot Event layouts.
 *
 * The scalar Event is a fixed tiny layout; encoding it by hand avoids
 * building protobuf-c structs on every add_scalar.  The bytes equal
 * protobuf-c's serialization of the same message (test_writer checks it):
 *   09 <wall_time f64>      omitted when wall_time == 0.0 (also -0.0)
 *   10 <step varint>        omitted when step == 0
 *   2a <len> 0a <len> 0a <taglen> <tag> 15 <f32>   (Summary{Value{tag, simple_value}})
 * Tags are never empty (the writer rejects them). */
#ifndef TBE_EVENTS_EVENT_ENC_H
#define TBE_EVENTS_EVENT_ENC_H

#include <stddef.h>
#include <stdint.h>

/* Upper bound of the encoded size for a tag of `taglen` bytes. */
static inline size_t tbe__scalar_event_max(size_t taglen) { return 9 + 11 + 3 * 10 + taglen + 5; }

/* Encodes the scalar event into `out` (at least tbe__scalar_event_max
 * bytes); returns the length. */
size_t tbe__encode_scalar_event(uint8_t *out, double wall_time, int64_t step, const char *tag,
                                size_t taglen, float value);

#endif
