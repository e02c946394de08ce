/* test_tfrecord.c: TFRecord framing against the reference vectors, and the
 * checker's statuses on every prefix and every damaged byte of a record. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "events/tfrecord.h"

/* Record 1 of a real TF 2 file (tensorboard's rs/tf_record.rs test). */
static const uint8_t tf_rec1[40] = {
    0x18, 0, 0, 0, 0, 0, 0, 0, 0xa3, 0x7f, 0x4b, 0x22,                         /* len, crc */
    0x09, 0x00, 0x00, 0x80, 0x38, 0x99, 0xd6, 0xd7, 0x41, 0x1a, 0x0d,           /* wall, tag */
    'b', 'r', 'a', 'i', 'n', '.', 'E', 'v', 'e', 'n', 't', ':', '2', 0x12, 0x4b, 0x36, 0xab};

static void test_reference_record(void **state) {
  (void)state;
  tbe_allocator a;
  tbe__allocator_init(&a, NULL);
  tbe__buf b;
  tbe__buf_init(&b, &a);
  tbe__tfr_append(&b, tf_rec1 + 12, 24);
  assert_int_equal(b.err, 0);
  assert_int_equal(b.len, 40);
  assert_memory_equal(b.data, tf_rec1, 40);
  uint64_t len;
  uint32_t g, w;
  assert_int_equal(tbe__tfr_check(tf_rec1, 40, &len, &g, &w), TBE__TFR_OK);
  assert_int_equal(len, 24);
  tbe__buf_deinit(&b);
}

static void test_prefixes_and_flips(void **state) {
  (void)state;
  uint64_t len;
  uint32_t g, w;
  assert_int_equal(tbe__tfr_check(tf_rec1, 0, &len, &g, &w), TBE__TFR_END);
  for (size_t n = 1; n < 40; n++)
    assert_int_equal(tbe__tfr_check(tf_rec1, n, &len, &g, &w), TBE__TFR_TRUNCATED);
  uint8_t c[40];
  for (size_t i = 0; i < 40; i++) {
    for (int bit = 0; bit < 8; bit++) {
      memcpy(c, tf_rec1, 40);
      c[i] ^= (uint8_t)(1u << bit);
      tbe__tfr_status st = tbe__tfr_check(c, 40, &len, &g, &w);
      if (i < 12)
        assert_int_equal(st, TBE__TFR_BAD_LENGTH_CRC);
      else
        assert_int_equal(st, TBE__TFR_BAD_DATA_CRC);
      assert_int_not_equal(g, w);
    }
  }
}

static void test_empty_and_big(void **state) {
  (void)state;
  tbe_allocator a;
  tbe__allocator_init(&a, NULL);
  tbe__buf b;
  tbe__buf_init(&b, &a);
  tbe__tfr_append(&b, "", 0);
  assert_int_equal(b.len, 16);
  uint64_t len;
  uint32_t g, w;
  assert_int_equal(tbe__tfr_check(b.data, b.len, &len, &g, &w), TBE__TFR_OK);
  assert_int_equal(len, 0);
  /* a length field claiming 2^60 bytes with a valid CRC is just truncated */
  uint8_t hdr[12];
  tbe__tfr_header(hdr, 1ull << 60);
  assert_int_equal(tbe__tfr_check(hdr, 12, &len, &g, &w), TBE__TFR_TRUNCATED);
  assert_int_equal(len, 1ull << 60);
  tbe__buf_deinit(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reference_record),
      cmocka_unit_test(test_prefixes_and_flips),
      cmocka_unit_test(test_empty_and_big),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
