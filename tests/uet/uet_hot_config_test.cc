// HotConfig: the UetConfig fields the per-packet paths read, copied into each endpoint
// (uet_endpoint.h). Each must equal its source in the shared config after create. The
// structured binding names every field in order, so a field added to HotConfig (or taken
// from it) stops this file compiling until it is checked here too.
#include <gtest/gtest.h>

#include "transport/uet/uet_endpoint.h"

namespace uet {
namespace {

// Every source field set to a valid value other than its default: a field copied from the
// wrong source (or left out of the constructor) then differs from what is checked.
UetConfig non_default_config() {
  UetConfig c;
  c.local_ip4 = 0x0A000001;
  c.window_bytes = 300'000;
  c.ack_delay = 3 * kMicrosecond;
  c.idle_timeout = 2 * kMillisecond;
  c.base_rtt = 13 * kMicrosecond;
  c.reorder_window = 21 * kMicrosecond;
  c.rto = 60 * kMicrosecond;
  c.min_rto = 11 * kMicrosecond;
  c.max_rto = 11 * kMillisecond;
  c.hold_probe_after = 5 * kMillisecond;
  c.payload_bytes = 2048;
  c.mpr = 512;
  c.rod_window = 128;
  c.max_pdcs = 100;
  c.ack_every = 3;
  c.reorder_threshold = 9;
  c.reorder_srtt_pct = 90;
  c.rto_srtt_pct = 150;
  c.rto_rtt_max_pct = 120;
  c.reorder_adapt_recoveries = 7;
  c.max_retries = 5;
  c.udp_source_port = 4321;
  c.cc = CcMode::kNsccRccc;
  c.tx_by_reference = true;
  c.ack_out_of_order = false;
  c.tlp = false;
  c.rack = false;
  c.udp_checksum = false;
  return c;
}

TEST(HotConfig, EveryFieldEqualsItsSourceInTheConfig) {
  const UetConfig c = non_default_config();
  auto shared = UetShared::create(c);
  ASSERT_TRUE(shared.ok()) << shared.status();
  auto ep = UetEndpoint::create(*shared, UetHost{c.local_ip4, c.local_mac, c.seed});
  ASSERT_TRUE(ep.ok()) << ep.status();
  const UetConfig& source = (*shared)->config();  // as validated (rod_window 0 would be mpr)
  const UetConfig defaults;

  const auto& [window_bytes, ack_delay, idle_timeout, base_rtt, reorder_window, rto, min_rto,
               max_rto, hold_probe_after, payload_bytes, mpr, rod_window, max_pdcs, ack_every,
               reorder_threshold, reorder_srtt_pct, rto_srtt_pct, rto_rtt_max_pct,
               reorder_adapt_recoveries, max_retries, udp_source_port, cc, tx_by_reference,
               ack_out_of_order, tlp, rack, udp_checksum] = (*ep)->hot_config();
  // Expect: the copy equals the config's field, which the test set away from its default.
#define EXPECT_HOT(field)                                     \
  EXPECT_EQ(field, source.field) << "HotConfig::" #field;     \
  EXPECT_NE(source.field, defaults.field) << "set " #field " in non_default_config()"
  EXPECT_HOT(window_bytes);
  EXPECT_HOT(ack_delay);
  EXPECT_HOT(idle_timeout);
  EXPECT_HOT(base_rtt);
  EXPECT_HOT(reorder_window);
  EXPECT_HOT(rto);
  EXPECT_HOT(min_rto);
  EXPECT_HOT(max_rto);
  EXPECT_HOT(hold_probe_after);
  EXPECT_HOT(payload_bytes);
  EXPECT_HOT(mpr);
  EXPECT_HOT(rod_window);
  EXPECT_HOT(max_pdcs);
  EXPECT_HOT(ack_every);
  EXPECT_HOT(reorder_threshold);
  EXPECT_HOT(reorder_srtt_pct);
  EXPECT_HOT(rto_srtt_pct);
  EXPECT_HOT(rto_rtt_max_pct);
  EXPECT_HOT(reorder_adapt_recoveries);
  EXPECT_HOT(max_retries);
  EXPECT_HOT(udp_source_port);
  EXPECT_HOT(cc);
  EXPECT_HOT(tx_by_reference);
  EXPECT_HOT(ack_out_of_order);
  EXPECT_HOT(tlp);
  EXPECT_HOT(rack);
  EXPECT_HOT(udp_checksum);
#undef EXPECT_HOT
}

}  // namespace
}  // namespace uet
