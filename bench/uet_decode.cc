// uet-decode: prints every header field of UET and RoCEv2 frames by its spec name, or the
// typed reason a frame is malformed. Reads a pcap file (Ethernet link type) or hex text, one
// frame per line ('#' starts a comment), from a file or '-' for standard input.
//
//   build/bin/uet-decode out/uet.pcap
//   echo 0200...  | build/bin/uet-decode -
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "transport/wire/decode.h"
#include "transport/wire/registry.h"

namespace uet::wire {
namespace {

void print_frame(size_t index, std::span<const uint8_t> frame) {
  Decoded d;
  const WireError err = decode_frame(frame, &d);
  std::printf("frame %zu: %zu bytes: %s\n", index, frame.size(),
              err == WireError::kOk ? (d.protocol == Protocol::kUet ? "UET" : "RoCEv2")
                                    : absl::StrFormat("malformed (%s: %s)", std::string(name(err)),
                                                      std::string(to_string(err)))
                                          .c_str());
  for (size_t i = 0; i < d.depth; ++i) {
    const HeaderRef& h = d.stack[i];
    std::printf("  %s (%s, spec %s) at %u\n", std::string(h.desc->id).c_str(),
                std::string(h.desc->title).c_str(), std::string(h.desc->section).c_str(),
                h.offset);
    const uint8_t* base = frame.data() + h.offset;
    for (const FieldDesc& f : h.desc->fields) {
      std::string value;
      if (f.kind == Kind::BYTES) {
        value = absl::BytesToHexString(
            absl::string_view(reinterpret_cast<const char*>(base + f.offset), f.width));
      } else {
        const uint64_t v = read_field(base, f);
        value = f.kind == Kind::SDEC ? absl::StrFormat("%d", static_cast<int64_t>(v))
                : f.kind == Kind::UHEX || f.kind == Kind::RSVD ? absl::StrFormat("0x%x", v)
                                                                : absl::StrFormat("%u", v);
        if (f.vals != "none") {
          const std::string_view n = value_name(f.vals, v);
          value += absl::StrFormat(" (%s)", n.empty() ? std::string("unknown") : std::string(n));
        }
      }
      std::printf("    %-22s %s\n", std::string(f.name).c_str(), value.c_str());
    }
  }
  if (err == WireError::kOk) std::printf("  payload %zu bytes\n", d.payload.size());
}

bool read_pcap(const std::vector<uint8_t>& file) {
  if (file.size() < 24) return false;
  uint32_t magic;
  std::memcpy(&magic, file.data(), 4);
  if (magic != 0xA1B2C3D4 && magic != 0xA1B23C4D) return false;
  size_t at = 24, n = 0;
  while (at + 16 <= file.size()) {
    uint32_t caplen;
    std::memcpy(&caplen, file.data() + at + 8, 4);
    at += 16;
    if (caplen > file.size() - at) {
      std::printf("pcap record %zu truncated\n", n);
      break;
    }
    print_frame(n++, std::span<const uint8_t>(file.data() + at, caplen));
    at += caplen;
  }
  return true;
}

int run(const char* path) {
  std::string text;
  if (std::strcmp(path, "-") == 0) {
    std::stringstream ss;
    ss << std::cin.rdbuf();
    text = ss.str();
  } else {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "uet-decode: cannot open %s\n", path);
      return 2;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  if (read_pcap(std::vector<uint8_t>(text.begin(), text.end()))) return 0;

  std::istringstream lines(text);
  std::string line;
  size_t n = 0;
  while (std::getline(lines, line)) {
    line = line.substr(0, line.find('#'));
    line = absl::StrReplaceAll(line, {{" ", ""}, {"\t", ""}, {"\r", ""}});
    if (line.empty()) continue;
    if (line.size() % 2 != 0 ||
        line.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) {
      std::fprintf(stderr, "uet-decode: line %zu is not hex\n", n);
      return 2;
    }
    const std::string bytes = absl::HexStringToBytes(line);
    print_frame(n++, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()),
                                              bytes.size()));
  }
  return 0;
}

}  // namespace
}  // namespace uet::wire

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: uet-decode FILE.pcap|FILE.hex|-\n");
    return 2;
  }
  return uet::wire::run(argv[1]);
}
