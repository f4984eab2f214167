#include "transport/wire/field.h"

#include <bit>

namespace uet::wire {

uint64_t read_field(const uint8_t* hdr, const FieldDesc& f) noexcept {
  if (f.kind == Kind::BYTES || f.mask == 0) return 0;
  const int shift = std::countr_zero(f.mask);
  const uint64_t raw = (load_be(hdr + f.offset, f.width) & f.mask) >> shift;
  if (f.kind != Kind::SDEC) return raw;
  const int bits = std::popcount(f.mask);
  const uint64_t sign = uint64_t{1} << (bits - 1);
  return (raw ^ sign) - sign;
}

void write_field(uint8_t* hdr, const FieldDesc& f, uint64_t value) noexcept {
  if (f.kind == Kind::BYTES || f.mask == 0) return;
  const int shift = std::countr_zero(f.mask);
  const uint64_t word = load_be(hdr + f.offset, f.width);
  store_be(hdr + f.offset, f.width, (word & ~f.mask) | ((value << shift) & f.mask));
}

}  // namespace uet::wire
