// Consistency of the spec/ tables themselves (spec/README.md "Table format"): what the
// generated codec and the dissector both rely on.
#include <gtest/gtest.h>

#include <bit>
#include <map>
#include <string>

#include "transport/wire/registry.h"
#include "transport/wire/roce_headers.h"
#include "transport/wire/uet_headers.h"

namespace uet::wire {
namespace {

TEST(SpecTables_Fields, LieInsideTheirHeaderAndMasksFitTheWidth) {
  for (const HeaderDesc* h : all_headers()) {
    ASSERT_FALSE(h->fields.empty()) << h->id;
    for (const FieldDesc& f : h->fields) {
      EXPECT_LE(f.offset + f.width, h->size) << h->id << "." << f.name;
      if (f.kind == Kind::BYTES) {
        EXPECT_EQ(f.mask, 0u) << h->id << "." << f.name;
      } else {
        ASSERT_LE(f.width, 8) << h->id << "." << f.name;
        EXPECT_NE(f.mask, 0u) << h->id << "." << f.name;
        EXPECT_EQ(f.mask & ~width_mask(f.width), 0u) << h->id << "." << f.name;
        if (f.kind == Kind::FLAG) {
          EXPECT_EQ(std::popcount(f.mask), 1) << h->id << "." << f.name;
        }
        // A value field is one contiguous run of bits (reserved bits may be scattered).
        const uint64_t shifted = f.mask >> std::countr_zero(f.mask);
        if (f.kind != Kind::RSVD) {
          EXPECT_EQ(shifted & (shifted + 1), 0u) << h->id << "." << f.name;
        }
      }
    }
  }
}

// Bit coverage of a header: bit i of byte j is (j, 7-i). Returns per-byte masks.
std::vector<uint8_t> bits_of(const FieldDesc& f, size_t header_size) {
  std::vector<uint8_t> m(header_size, 0);
  for (size_t i = 0; i < f.width; ++i) {
    const uint64_t byte_mask =
        f.kind == Kind::BYTES ? 0xFF : (f.mask >> (8 * (f.width - 1 - i))) & 0xFF;
    m[f.offset + i] = static_cast<uint8_t>(byte_mask);
  }
  return m;
}

TEST(SpecTables_Fields, EveryBitOfEveryHeaderIsDescribed) {
  for (const HeaderDesc* h : all_headers()) {
    std::vector<uint8_t> covered(h->size, 0);
    for (const FieldDesc& f : h->fields) {
      const auto m = bits_of(f, h->size);
      for (size_t i = 0; i < h->size; ++i) covered[i] |= m[i];
    }
    for (size_t i = 0; i < h->size; ++i)
      EXPECT_EQ(covered[i], 0xFF) << h->id << " byte " << i << " has undescribed bits";
  }
}

TEST(SpecTables_Fields, ReservedBitsAreNotAlsoNamedFields) {
  for (const HeaderDesc* h : all_headers()) {
    for (const FieldDesc& r : h->fields) {
      if (r.kind != Kind::RSVD) continue;
      const auto rm = bits_of(r, h->size);
      for (const FieldDesc& f : h->fields) {
        if (&f == &r) continue;
        if (h->id == "pds_prologue") continue;
        const auto fm = bits_of(f, h->size);
        for (size_t i = 0; i < h->size; ++i)
          EXPECT_EQ(rm[i] & fm[i], 0) << h->id << "." << r.name << " overlaps " << f.name;
      }
    }
  }
}

// Wireshark requires fields sharing a filter name to have one type.
TEST(SpecTables_Fields, SameFilterNameMeansSameWidthAndKind) {
  std::map<std::string, const FieldDesc*> seen;
  for (const HeaderDesc* h : all_headers()) {
    for (const FieldDesc& f : h->fields) {
      const std::string abbrev = std::string(h->prefix) + "." + std::string(f.name);
      auto [it, inserted] = seen.emplace(abbrev, &f);
      if (inserted) continue;
      EXPECT_EQ(it->second->width, f.width) << abbrev << " in " << h->id;
      const bool same_kind = it->second->kind == f.kind ||
                             (it->second->kind != Kind::SDEC && f.kind != Kind::SDEC &&
                              it->second->kind != Kind::BYTES && f.kind != Kind::BYTES &&
                              it->second->kind != Kind::FLAG && f.kind != Kind::FLAG);
      EXPECT_TRUE(same_kind) << abbrev << " in " << h->id;
    }
  }
}

TEST(SpecTables_Fields, NamesAreUniqueWithinAHeader) {
  for (const HeaderDesc* h : all_headers()) {
    std::map<std::string_view, int> n;
    for (const FieldDesc& f : h->fields) EXPECT_EQ(++n[f.name], 1) << h->id << "." << f.name;
  }
}

TEST(SpecTables_Fields, ValueTablesNamedByFieldsExist) {
  for (const HeaderDesc* h : all_headers())
    for (const FieldDesc& f : h->fields)
      if (f.vals != "none") {
        EXPECT_FALSE(find_values(f.vals).empty()) << h->id << "." << f.name;
      }
}

TEST(SpecTables_Values, SortedAndUniqueWithNames) {
  for (std::string_view id : {"pds_type", "next_hdr", "ctrl_type", "ack_req", "cc_type",
                              "nack_code", "ses_opcode", "ses_rsp_opcode", "ses_return_code",
                              "atomic_opcode", "atomic_data_type", "roce_opcode", "aeth_type",
                              "aeth_nak"}) {
    const auto vals = find_values(id);
    ASSERT_FALSE(vals.empty()) << id;
    for (size_t i = 0; i < vals.size(); ++i) {
      EXPECT_FALSE(vals[i].name.empty()) << id;
      if (i > 0) {
        EXPECT_LT(vals[i - 1].value, vals[i].value) << id << " " << vals[i].name;
      }
    }
  }
}

// Sizes from spec/uet.md and spec/rocev2.md (and upstream packet-uet.c's constants).
TEST(SpecTables_Layout, HeaderSizes) {
  EXPECT_EQ(sizeof(PdsRudRod), 12u);
  EXPECT_EQ(sizeof(PdsRudRodCc), 16u);
  EXPECT_EQ(sizeof(PdsRudi), 8u);
  EXPECT_EQ(sizeof(PdsUud), 4u);
  EXPECT_EQ(sizeof(PdsAck), 12u);
  EXPECT_EQ(sizeof(PdsAckCc), 12u + 20u);
  EXPECT_EQ(sizeof(PdsAckCcx), 12u + 28u);
  EXPECT_EQ(sizeof(PdsNack), 16u);
  EXPECT_EQ(sizeof(PdsNackCcx), 32u);
  EXPECT_EQ(sizeof(PdsCtrl), 16u);
  EXPECT_EQ(sizeof(SesStandardRequest), 44u);
  EXPECT_EQ(sizeof(SesMediumRequest), 32u);
  EXPECT_EQ(sizeof(SesSmallRequest), 20u);
  EXPECT_EQ(sizeof(SesAtomic), 4u);
  EXPECT_EQ(sizeof(SesCompareSwap), 36u);
  EXPECT_EQ(sizeof(SesRendezvous), 24u);
  EXPECT_EQ(sizeof(SesResponse), 12u);
  EXPECT_EQ(sizeof(SesResponseData), 20u);
  EXPECT_EQ(sizeof(SesResponseDataSmall), 4u);
  EXPECT_EQ(sizeof(Tss), 12u);
  EXPECT_EQ(sizeof(TssSp), 16u);
  EXPECT_EQ(sizeof(Bth), 12u);
  EXPECT_EQ(sizeof(Reth), 16u);
  EXPECT_EQ(sizeof(Aeth), 4u);
  EXPECT_EQ(sizeof(AtomicEth), 28u);
  EXPECT_EQ(sizeof(AtomicAckEth), 8u);
  EXPECT_EQ(sizeof(Deth), 8u);
  EXPECT_EQ(sizeof(Cnp), 16u);
}

// Bit positions of the prologue and a few fields, written out by hand from spec/uet.md.
TEST(SpecTables_Layout, PdsPrologueBits) {
  PdsAck a{};
  a.set_type(PdsType::kAckCc);  // 8 << 11
  EXPECT_EQ(a.raw[0], 0x40);
  a.set_next_hdr(NextHeader::kRspData);  // 5 << 7
  EXPECT_EQ(a.raw[0], 0x42);
  EXPECT_EQ(a.raw[1], 0x80);
  a.set_m(true);
  a.set_req(AckReq::kClosePdc);
  EXPECT_EQ(a.raw[1], 0x80 | 0x20 | 0x04);
  a.set_ack_psn_offset(-2);
  EXPECT_EQ(a.raw[2], 0xFF);
  EXPECT_EQ(a.raw[3], 0xFE);
  EXPECT_EQ(a.ack_psn_offset(), -2);
}

TEST(SpecTables_Layout, SynFormOverlaysDpdcid) {
  PdsRudRod r{};
  r.set_syn(true);
  r.set_use_rsv_pdc(true);
  r.set_psn_offset(0xABC);
  EXPECT_EQ(r.raw[10], 0x8A);
  EXPECT_EQ(r.raw[11], 0xBC);
  EXPECT_EQ(r.dpdcid(), 0x8ABC);
  EXPECT_EQ(r.raw[1], 0x04);
}

TEST(SpecTables_Layout, RoceHelpers) {
  EXPECT_EQ(aeth_credits(0x05), 6);
  EXPECT_EQ(aeth_credits(0x1E), 32768);
  EXPECT_EQ(aeth_credits(0x1F), -1);
  EXPECT_EQ(rnr_timer_us(0), 655360u);
  EXPECT_EQ(rnr_timer_us(25), 61440u);  // not rxe's 61410 typo
  EXPECT_TRUE(roce_layout(0x0B).ext & ROCEV2_X_RETH);
  EXPECT_TRUE(roce_layout(0x0B).ext & ROCEV2_X_IMM);
  EXPECT_FALSE(roce_layout(0x15).known);
  EXPECT_FALSE(roce_layout(0x0C).payload);
}

}  // namespace
}  // namespace uet::wire
