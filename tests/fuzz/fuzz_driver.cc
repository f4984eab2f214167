// A short, seeded, bounded fuzz run for the test suite (any compiler): seeds, then random and
// structure-aware mutations of them. libFuzzer builds run the same targets for as long as
// you like (README.md here).
//
//   fuzz_driver TARGET SEEDS ITERATIONS [SEED]   seeds: a directory of golden vectors (.vec,
//                                                the frame targets) or of files (any target);
//                                                several joined with ':'
//   fuzz_driver TARGET --replay DIR              every file in DIR once, as it is (a corpus)
//   TARGET: decode_frame | uet_rx | uet_tss_rx | roce_rx | htsim_cm | htsim_topo | cdf | ab_config
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_targets.h"

namespace {

using Bytes = std::vector<uint8_t>;

Bytes hex_to_bytes(const std::string& hex) {
  Bytes out;
  int hi = -1;
  for (char ch : hex) {
    int v;
    if (ch >= '0' && ch <= '9') v = ch - '0';
    else if (ch >= 'a' && ch <= 'f') v = ch - 'a' + 10;
    else if (ch >= 'A' && ch <= 'F') v = ch - 'A' + 10;
    else continue;
    if (hi < 0) {
      hi = v;
    } else {
      out.push_back(static_cast<uint8_t>(hi << 4 | v));
      hi = -1;
    }
  }
  return out;
}

Bytes read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Every regular file of the ':'-separated directories, in name order (the same on every
// machine): a golden vector (.vec) gives its frame, any other file its bytes.
std::vector<Bytes> load_seeds(const std::string& dirs) {
  std::vector<std::filesystem::path> files;
  for (size_t at = 0; at <= dirs.size();) {
    const size_t end = std::min(dirs.find(':', at), dirs.size());
    const std::string dir = dirs.substr(at, end - at);
    at = end + 1;
    if (dir.empty() || !std::filesystem::is_directory(dir)) continue;
    std::vector<std::filesystem::path> in_dir, vectors;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      if (!e.is_regular_file()) continue;
      in_dir.push_back(e.path());
      if (e.path().extension() == ".vec") vectors.push_back(e.path());
    }
    // A directory of golden vectors gives only its vectors (not its README or generator).
    const auto& take = vectors.empty() ? in_dir : vectors;
    files.insert(files.end(), take.begin(), take.end());
  }
  std::sort(files.begin(), files.end());
  std::vector<Bytes> seeds;
  for (const auto& path : files) {
    if (path.extension() != ".vec") {
      seeds.push_back(read_file(path));
      continue;
    }
    std::ifstream in(path);
    std::string line, hex;
    while (std::getline(in, line))
      if (line.rfind("frame:", 0) == 0) hex += line.substr(6);
    if (!hex.empty()) seeds.push_back(hex_to_bytes(hex));
  }
  return seeds;
}

Bytes as_sequence(const std::vector<const Bytes*>& frames) {
  Bytes out;
  for (const Bytes* f : frames) {
    out.push_back(static_cast<uint8_t>(f->size() >> 8));
    out.push_back(static_cast<uint8_t>(f->size()));
    out.insert(out.end(), f->begin(), f->end());
  }
  return out;
}

void mutate(Bytes& b, std::mt19937_64& rng) {
  const int ops = 1 + static_cast<int>(rng() % 4);
  for (int i = 0; i < ops && !b.empty(); ++i) {
    switch (rng() % 6) {
      case 0:  // flip a bit anywhere
        b[rng() % b.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
        break;
      case 1: {  // overwrite a header byte (the first 128) with an interesting value
        static constexpr uint8_t kInteresting[] = {0x00, 0x01, 0x7F, 0x80, 0xFF};
        const uint64_t pick = rng() % 6;
        b[rng() % std::min<size_t>(b.size(), 128)] =
            pick < 5 ? kInteresting[pick] : static_cast<uint8_t>(rng());
        break;
      }
      case 2:  // truncate
        b.resize(rng() % (b.size() + 1));
        break;
      case 3:  // grow with random bytes
        for (size_t n = rng() % 64; n > 0; --n) b.push_back(static_cast<uint8_t>(rng()));
        break;
      case 4: {  // overwrite a 16- or 32-bit word: PSNs, PDC ids, lengths, offsets
        const size_t at = rng() % b.size();
        for (size_t k = 0; k < (rng() % 2 ? 2u : 4u) && at + k < b.size(); ++k)
          b[at + k] = static_cast<uint8_t>(rng());
        break;
      }
      default:  // duplicate a run of bytes in place
        if (b.size() > 8) {
          const size_t from = rng() % (b.size() - 4), n = 1 + rng() % 4;
          b.insert(b.begin() + static_cast<std::ptrdiff_t>(from), b.begin() + static_cast<std::ptrdiff_t>(from),
                   b.begin() + static_cast<std::ptrdiff_t>(from + n));
        }
    }
  }
}

struct Target {
  const char* name;
  void (*fn)(const uint8_t*, size_t);
  bool sequences;  // inputs are [u16 length][frame]... sequences (the receive paths)
};

constexpr Target kTargets[] = {
    {"decode_frame", uet::fuzz::decode_frame_target, false},
    {"uet_rx", uet::fuzz::uet_rx_target, true},
    {"roce_rx", uet::fuzz::roce_rx_target, true},
    {"uet_tss_rx", uet::fuzz::uet_tss_rx_target, true},
    {"htsim_cm", uet::fuzz::htsim_cm_target, false},
    {"htsim_topo", uet::fuzz::htsim_topo_target, false},
    {"cdf", uet::fuzz::cdf_target, false},
    {"ab_config", uet::fuzz::ab_config_target, false},
};

// A corpus (libFuzzer's inputs, kept in tests/fuzz/corpus/TARGET) once each, unmutated.
int replay(const Target& t, const std::string& dir) {
  const std::vector<Bytes> inputs = load_seeds(dir);
  if (inputs.empty()) {
    std::fprintf(stderr, "fuzz_driver: no inputs in %s\n", dir.c_str());
    return 2;
  }
  for (const Bytes& in : inputs) t.fn(in.data(), in.size());
  std::printf("fuzz %s: replayed %zu inputs of %s, no crash\n1 passed, 0 failed\n", t.name,
              inputs.size(), dir.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr,
                 "usage: fuzz_driver TARGET SEEDS ITERATIONS [SEED] | TARGET --replay DIR\n");
    return 2;
  }
  const std::string target = argv[1];
  const Target* t = nullptr;
  for (const Target& k : kTargets)
    if (target == k.name) t = &k;
  if (t == nullptr) {
    std::fprintf(stderr, "fuzz_driver: unknown target %s\n", target.c_str());
    return 2;
  }
  if (std::string(argv[2]) == "--replay") return replay(*t, argv[3]);
  void (*fn)(const uint8_t*, size_t) = t->fn;
  const std::vector<Bytes> seeds = load_seeds(argv[2]);
  const long iterations = std::strtol(argv[3], nullptr, 10);
  std::mt19937_64 rng(argc > 4 ? std::strtoull(argv[4], nullptr, 10) : 20261129);
  if (seeds.empty() || iterations < 1) {
    std::fprintf(stderr, "fuzz_driver: no seeds in %s or bad iteration count\n", argv[2]);
    return 2;
  }
  const bool sequences = t->sequences;
  long runs = 0;
  for (const Bytes& s : seeds) {  // every seed once, unmutated
    const Bytes in = sequences ? as_sequence({&s}) : s;
    fn(in.data(), in.size());
    ++runs;
  }
  for (long i = 0; i < iterations; ++i) {
    Bytes in;
    if (sequences) {  // 1..4 frames, each mutated or not, some repeated (duplicates, floods)
      std::vector<Bytes> frames;
      for (size_t n = 1 + rng() % 4; n > 0; --n) {
        frames.push_back(seeds[rng() % seeds.size()]);
        if (rng() % 3) mutate(frames.back(), rng);
        if (rng() % 8 == 0) frames.push_back(frames.back());
      }
      std::vector<const Bytes*> ptrs;
      for (const Bytes& f : frames) ptrs.push_back(&f);
      in = as_sequence(ptrs);
    } else {
      in = seeds[rng() % seeds.size()];
      mutate(in, rng);
    }
    fn(in.data(), in.size());
    ++runs;
  }
  std::printf("fuzz %s: %ld inputs from %zu seeds, no crash\n", target.c_str(), runs, seeds.size());
  const uet::fuzz::Reach& r = uet::fuzz::reach();
  if (target == "uet_rx" || target == "uet_tss_rx") {
    std::printf("reached: %lu requests accepted, %lu ACKs, %lu NACKs, %lu frames answered, "
                "%lu tagged messages, %lu requests refused by job, PID or resource, %lu atomics "
                "executed or refused, %lu rendezvous requests taken or refused, %lu deferrable "
                "sends deferred or restarted and RTRs taken\n",
                r.uet_data, r.uet_acks, r.uet_nacks, r.uet_answers, r.uet_tagged,
                r.uet_access_refused, r.uet_atomic, r.uet_rendezvous, r.uet_deferrable);
    if (r.uet_data == 0 || r.uet_answers == 0 || r.uet_tagged == 0 ||
        r.uet_access_refused == 0 || r.uet_atomic == 0 || r.uet_rendezvous == 0 ||
        r.uet_deferrable == 0) {
      std::printf("0 passed, 1 failed: mutations never reached the engine\n");
      return 1;
    }
  }
  if (target == "roce_rx") {
    std::printf("reached: %lu requests accepted, %lu frames answered\n", r.roce_data, r.roce_answers);
    if (r.roce_answers == 0) {
      std::printf("0 passed, 1 failed: mutations never reached the engine\n");
      return 1;
    }
  }
  std::printf("1 passed, 0 failed\n");
  return 0;
}
