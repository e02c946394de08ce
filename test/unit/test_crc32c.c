/* test_crc32c.c: CRC32C vectors, masking, and portable vs hardware paths. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/crc32c.h"

static uint32_t bitwise(const uint8_t *p, size_t n) {
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
  }
  return ~c;
}

static void test_vectors(void **state) {
  (void)state;
  uint8_t buf[32];
  assert_int_equal(tbe__crc32c("123456789", 9), 0xE3069283u);
  assert_int_equal(tbe__crc32c_portable(0, "123456789", 9), 0xE3069283u);
  assert_int_equal(tbe__crc32c_hw(0, "123456789", 9), 0xE3069283u);
  assert_int_equal(tbe__crc32c_mask(0xE3069283u), 0xC78AB0E5u);
  assert_int_equal(tbe__crc32c_unmask(0xC78AB0E5u), 0xE3069283u);
  memset(buf, 0, 32);
  assert_int_equal(tbe__crc32c(buf, 32), 0x8A9136AAu);
  assert_int_equal(tbe__crc32c_mask(0x8A9136AAu), 0x0FD7FFFAu);
  memset(buf, 0xff, 32);
  assert_int_equal(tbe__crc32c(buf, 32), 0x62A8AB43u);
  assert_int_equal(tbe__crc32c_mask(0x62A8AB43u), 0xF909B029u);
  for (int i = 0; i < 32; i++) buf[i] = (uint8_t)i;
  assert_int_equal(tbe__crc32c(buf, 32), 0x46DD794Eu);
  assert_int_equal(tbe__crc32c_mask(0x46DD794Eu), 0x951F7892u);
  assert_int_equal(tbe__crc32c(buf, 0), 0u);
  assert_int_equal(tbe__crc32c_mask(0), 0xA282EAD8u);
  uint8_t z8[8] = {0};
  assert_int_equal(tbe__crc32c_mask(tbe__crc32c(z8, 8)), 0x07980329u);
  uint8_t l24[8] = {0x18, 0, 0, 0, 0, 0, 0, 0};
  assert_int_equal(tbe__crc32c_mask(tbe__crc32c(l24, 8)), 0x224B7FA3u);
  const char ev[] = "\x1a\x11" "CRC test, one two";
  assert_int_equal(tbe__crc32c_mask(tbe__crc32c(ev, 19)), 0x5794D08Au);
}

static uint64_t rng = 88172645463325252ull;
static uint8_t rnd(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uint8_t)rng;
}

/* Every length 0..4096 at several alignments: both paths equal the bitwise
 * reference. */
static void test_cross_check_small(void **state) {
  (void)state;
  enum { N = 4096 + 16 };
  uint8_t *buf = malloc(N);
  assert_non_null(buf);
  for (size_t i = 0; i < N; i++) buf[i] = rnd();
  for (size_t len = 0; len <= 4096; len++) {
    size_t off = len % 8;
    uint32_t ref = bitwise(buf + off, len);
    assert_int_equal(tbe__crc32c_portable(0, buf + off, len), ref);
    assert_int_equal(tbe__crc32c_hw(0, buf + off, len), ref);
    assert_int_equal(tbe__crc32c(buf + off, len), ref);
  }
  free(buf);
}

/* Large buffers exercise the three-stream blocks (3 x 8 KiB and 3 x 256 B)
 * and their combination; extending in pieces equals one pass. */
static void test_cross_check_large(void **state) {
  (void)state;
  size_t lens[] = {767, 768, 769, 24575, 24576, 24577, 65536, 65536 + 771, 200003};
  size_t maxn = 200003 + 8;
  uint8_t *buf = malloc(maxn);
  assert_non_null(buf);
  for (size_t i = 0; i < maxn; i++) buf[i] = rnd();
  for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
    for (size_t off = 0; off < 3; off++) {
      uint32_t ref = bitwise(buf + off, lens[k]);
      assert_int_equal(tbe__crc32c_portable(0, buf + off, lens[k]), ref);
      assert_int_equal(tbe__crc32c_hw(0, buf + off, lens[k]), ref);
      size_t cut = lens[k] / 3 + off;
      uint32_t c = tbe__crc32c_extend(0, buf + off, cut);
      c = tbe__crc32c_extend(c, buf + off + cut, lens[k] - cut);
      assert_int_equal(c, ref);
      c = tbe__crc32c_portable(0, buf + off, cut);
      assert_int_equal(tbe__crc32c_hw(c, buf + off + cut, lens[k] - cut), ref);
    }
  }
  free(buf);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_vectors),
      cmocka_unit_test(test_cross_check_small),
      cmocka_unit_test(test_cross_check_large),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
