#include "transport/wire/pcap.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace uet::wire {

namespace {
constexpr uint32_t kMagicNanos = 0xA1B23C4D;
constexpr uint32_t kLinkTypeEthernet = 1;

void put32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }  // host order, as pcap wants
void put16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }
}  // namespace

absl::StatusOr<PcapWriter> PcapWriter::open(const std::string& path, uint32_t snaplen) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("pcap: cannot open ", path, ": ", std::strerror(errno)));
  }
  PcapWriter w(f, snaplen);
  uint8_t hdr[24];
  put32(hdr, kMagicNanos);
  put16(hdr + 4, 2);  // version 2.4
  put16(hdr + 6, 4);
  put32(hdr + 8, 0);   // thiszone
  put32(hdr + 12, 0);  // sigfigs
  put32(hdr + 16, snaplen);
  put32(hdr + 20, kLinkTypeEthernet);
  if (std::fwrite(hdr, sizeof(hdr), 1, f) != 1) {
    return absl::InternalError(absl::StrCat("pcap: write to ", path, " failed"));
  }
  return w;
}

absl::Status PcapWriter::write(std::span<const uint8_t> frame, uint64_t time_ns,
                               uint32_t wire_len) {
  if (!file_) return absl::FailedPreconditionError("pcap: writer is closed");
  const uint32_t caplen = frame.size() < snaplen_ ? static_cast<uint32_t>(frame.size()) : snaplen_;
  uint8_t rec[16];
  put32(rec, static_cast<uint32_t>(time_ns / 1'000'000'000));
  put32(rec + 4, static_cast<uint32_t>(time_ns % 1'000'000'000));
  put32(rec + 8, caplen);
  put32(rec + 12, std::max(wire_len, static_cast<uint32_t>(frame.size())));
  if (std::fwrite(rec, sizeof(rec), 1, file_.get()) != 1 ||
      (caplen > 0 && std::fwrite(frame.data(), caplen, 1, file_.get()) != 1)) {
    return absl::InternalError("pcap: write failed");
  }
  return absl::OkStatus();
}

absl::Status PcapWriter::close() {
  if (!file_) return absl::OkStatus();
  const int rc = std::fclose(file_.release());
  return rc == 0 ? absl::OkStatus() : absl::InternalError("pcap: close failed");
}

}  // namespace uet::wire
