// Real RoCEv2 frames from other implementations, each with where it comes from.
// They are the independent check on our BTH/RETH/CNP layout and ICRC.
#pragma once

#include <string_view>

namespace uet::wire {

// CNP captured on a ConnectX-4 Lx (scapy test suite, test/contrib/roce.uts).
inline constexpr std::string_view kCx4CnpFrame =
    "e41d2dab2bc27cfe90643b32080045c2003c718c4000401191610a0011010a001201000012b700280000"
    "8100ffff40000118"
    "0000000000000000000000000000000000000000"
    "82fd002a";

// RC RDMA READ REQUEST sent by Linux rdma_rxe (PcapPlusPlus InfiniBandPacket.dat).
inline constexpr std::string_view kRxeReadRequestFrame =
    "000c29ae1ca4000c2989a2e508004500003cbe10400040118a4bc0a83881c0a83883df9412b7002800000c00"
    "ffff000000118054cb6300007fee260fb000000002b80001000008c6154a";

// UC SEND ONLY with 20 bytes of payload and pad 2, built by scapy (roce.uts "RoCE layer").
inline constexpr std::string_view kScapyUcSendOnlyFrame =
    "248a07a8fa22248a07a8fa22080045010040047840004011b4d5c0a80007c0a80007c00012b7002caca22460"
    "ffff000000d300cf17104630818be28935d90e9a95505401be885e50000078f353f3";

}  // namespace uet::wire
