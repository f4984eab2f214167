// Bitmap (pathsel/bitmap.h): oblivious spraying that skips penalised EVs and forgives them
// one step each time it passes them.
#include "pathsel/bitmap.h"

#include <gtest/gtest.h>

#include <vector>

#include "pathsel/oblivious.h"

namespace uet::pathsel {
namespace {

PathSelConfig bitmap_config(uint32_t n = 8) {
  return {.algorithm = Algorithm::kBitmap, .ev_count = n};
}

// Packets (0-based) until `ev` is next used, out of at most `limit`; -1 if never.
int first_use(Bitmap& b, uint16_t ev, int limit) {
  for (int i = 0; i < limit; ++i)
    if (b.next_ev(0) == ev) return i;
  return -1;
}

TEST(Bitmap_NextEv, WithoutPenaltiesItIsObliviousSpraying) {
  Bitmap b(bitmap_config(16), 5);
  Oblivious o(bitmap_config(16), 5);
  for (int i = 0; i < 1000; ++i) {
    const uint16_t ev = o.next_ev(i);
    ASSERT_EQ(b.next_ev(i), ev);
    b.on_ack(ev, /*ecn=*/false, i);  // unmarked ACKs add nothing
  }
}

TEST(Bitmap_OnNack, SkipsTheEvForFourPassesThenForgivesIt) {
  Bitmap b(bitmap_config(8), 1);
  b.on_nack(3, 0);
  EXPECT_EQ(b.penalty(3), 4);
  // Expect: each round of the walk passes EV 3 once and forgives one step; it is skipped in
  // four rounds (at least 4 x 7 packets) and used in the fifth (within 36 packets).
  const int used = first_use(b, 3, 100);
  EXPECT_GE(used, 28);
  EXPECT_LT(used, 36);
  EXPECT_EQ(b.penalty(3), 0);
}

TEST(Bitmap_OnAck, AnEcnMarkSkipsTheEvOnce) {
  Bitmap b(bitmap_config(8), 2);
  b.on_ack(6, /*ecn=*/true, 0);
  EXPECT_EQ(b.penalty(6), 1);
  const int used = first_use(b, 6, 100);
  EXPECT_GE(used, 7);   // skipped in its first round
  EXPECT_LT(used, 15);  // used in its second
}

TEST(Bitmap_OnTimeout, SetsTheMaximumPenaltyAndPenaltiesCap) {
  Bitmap b(bitmap_config(8), 3);
  b.on_timeout(2, 0);
  EXPECT_EQ(b.penalty(2), 15);
  b.on_nack(2, 0);
  EXPECT_EQ(b.penalty(2), 15);
  const int used = first_use(b, 2, 200);
  EXPECT_GE(used, 15 * 7);
  EXPECT_LT(used, 16 * 8);
}

TEST(Bitmap_NextEv, EveryEvPenalisedStillSendsAndForgives) {
  Bitmap b(bitmap_config(4), 4);
  for (uint16_t ev = 0; ev < 4; ++ev) b.on_nack(ev, 0);
  int total_before = 0;
  for (uint16_t ev = 0; ev < 4; ++ev) total_before += b.penalty(ev);
  const uint16_t ev = b.next_ev(0);
  EXPECT_LT(ev, 4);
  int total_after = 0;
  for (uint16_t e = 0; e < 4; ++e) total_after += b.penalty(e);
  // Expect: one step forgiven per packet, so the selector works its way back to clean EVs.
  EXPECT_EQ(total_after, total_before - 1);
  for (int i = 0; i < 200; ++i) b.next_ev(0);
  for (uint16_t e = 0; e < 4; ++e) EXPECT_EQ(b.penalty(e), 0) << "ev " << e;
}

TEST(Bitmap_Loop, AvoidsEvsThatKeepGettingMarked) {
  // EVs 0..3 of 16 always come back ECN-marked: each mark buys one skip, so they carry about
  // half their oblivious share.
  Bitmap b(bitmap_config(16), 6);
  int marked = 0, sent = 0;
  for (int i = 0; i < 16000; ++i) {
    const uint16_t ev = b.next_ev(i);
    b.on_ack(ev, ev < 4, i);
    ++sent;
    marked += ev < 4;
  }
  EXPECT_LT(static_cast<double>(marked) / sent, 0.2);
}

}  // namespace
}  // namespace uet::pathsel
