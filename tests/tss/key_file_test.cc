// transport/tss/key_file.h: the dissector's key file format read into TssConfig domains, every
// problem refused with the file, the line and what is wrong (never a key), files written from
// a config read back the same, and the key file the dissector's vector test gives tshark
// opens every sealed golden vector through the sublayer.
#include "transport/tss/key_file.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "transport/wire/decode.h"

namespace uet::tss {
namespace {

constexpr const char* kKeyA = "34448a064292601b11a0978f56a2d34cf3fc35ede1a6bc04f8db3e5243a2b0ca";
constexpr const char* kKeyB = "ac0b2a3425e3bd8f40cb6a1ede53cf3fc43d2a65f8790a11b106292460a84443";

Key key_of(const char* hex) {
  Key k{};
  EXPECT_TRUE(parse_key(hex, &k));
  return k;
}

std::string temp_path(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/uet_key_file_test_" +
         std::to_string(::getpid()) + "_" + name;
}

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = temp_path(name);
  std::ofstream(path) << text;
  return path;
}

// The example of dissector/README.md "TSS keys", verbatim.
constexpr const char* kReadmeExample =
    "# sdi=<N> an=<0|1> mode=<cluster|direct> key=<64 hex digits> [rekey_mask=<N>] "
    "[rekey_shift=<N>] [job=<N>]\n"
    "sdi=48879 an=0 mode=cluster "
    "key=34448a064292601b11a0978f56a2d34cf3fc35ede1a6bc04f8db3e5243a2b0ca\n"
    "sdi=0xbeef an=1 mode=cluster "
    "key=34448a064292601b11a0978f56a2d34cf3fc35ede1a6bc04f8db3e5243a2b0ca "
    "rekey_mask=0xffff00000000 rekey_shift=32\n"
    "sdi=7 an=0 mode=direct key=ac0b2a3425e3bd8f40cb6a1ede53cf3fc43d2a65f8790a11b106292460a84443\n";

TEST(ParseKeyFile_Good, ReadmeExampleGivesOneDomainPerSdiWithBothAns) {
  auto d = parse_key_file(kReadmeExample, "readme");
  ASSERT_TRUE(d.ok()) << d.status();
  // Expect: 0xbeef is 48879, so its two lines are one domain with AN 0 and AN 1 installed.
  ASSERT_EQ(d->size(), 2u);
  EXPECT_EQ((*d)[0].sdi, 48879u);
  EXPECT_EQ((*d)[0].mode, Mode::kCluster);
  EXPECT_TRUE((*d)[0].installed[0]);
  EXPECT_TRUE((*d)[0].installed[1]);
  EXPECT_EQ((*d)[0].key[0], key_of(kKeyA));
  EXPECT_EQ((*d)[0].key[1], key_of(kKeyA));
  EXPECT_EQ((*d)[0].rekey_mask, 0x0000FFFF00000000u);
  EXPECT_EQ((*d)[0].rekey_shift, 32);
  EXPECT_EQ((*d)[1].sdi, 7u);
  EXPECT_EQ((*d)[1].mode, Mode::kDirect);
  EXPECT_TRUE((*d)[1].installed[0]);
  EXPECT_FALSE((*d)[1].installed[1]);
  EXPECT_EQ((*d)[1].key[0], key_of(kKeyB));
}

TEST(ParseKeyFile_Good, FieldsInAnyOrderTabsCrLfCommentsAndHexNumbers) {
  const std::string text = std::string("\r\n   # only a comment\n\t\n") + "key=" + kKeyB +
                           "\tmode=cluster an=0x1 sdi=0x10 rekey_shift=8 " +
                           "rekey_mask=0XFF00 # trailing comment\r\n" + "sdi=16 an=0 key=" + kKeyA +
                           " mode=cluster rekey_mask=65280 rekey_shift=0x8";
  auto d = parse_key_file(text, "mixed");
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->size(), 1u);
  EXPECT_EQ((*d)[0].sdi, 16u);
  EXPECT_EQ((*d)[0].key[1], key_of(kKeyB));
  EXPECT_EQ((*d)[0].key[0], key_of(kKeyA));
  EXPECT_EQ((*d)[0].rekey_mask, 0xFF00u);
  EXPECT_EQ((*d)[0].rekey_shift, 8);
  EXPECT_EQ((*d)[0].job_id, kAnyJob);
}

TEST(ParseKeyFile_Good, AJobBindsTheDomain) {
  const std::string text = std::string("sdi=3 an=0 mode=cluster job=0x42 key=") + kKeyA +
                           "\nsdi=3 an=1 mode=cluster key=" + kKeyB + " job=66\n" +
                           "sdi=4 an=0 mode=direct key=" + kKeyB + "\n";
  auto d = parse_key_file(text, "jobs");
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->size(), 2u);
  EXPECT_EQ((*d)[0].job_id, 66u);
  EXPECT_EQ((*d)[1].job_id, kAnyJob);
}

TEST(ReadKeyFile_Tx, DefaultsToTheFirstDomainAndAnZero) {
  const std::string path =
      write_temp("tx.txt", std::string("sdi=9 an=1 mode=cluster key=") + kKeyA +
                               "\nsdi=9 an=0 mode=cluster key=" + kKeyB +
                               "\nsdi=3 an=0 mode=direct key=" + kKeyA + "\n");
  auto c = read_key_file(path);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->enabled);
  EXPECT_EQ(c->tx_sdi, 9u);
  EXPECT_EQ(c->tx_an, 0);
  EXPECT_EQ(c->domains.size(), 2u);
  EXPECT_TRUE(Sublayer::create(*c, 0x0A000001).ok());
  auto chosen = read_key_file(path, 3, 0);
  ASSERT_TRUE(chosen.ok()) << chosen.status();
  EXPECT_EQ(chosen->tx_sdi, 3u);
  // Expect: a domain or AN the file has no key for is refused, naming what it has.
  auto no_an = read_key_file(path, 3, 1);
  ASSERT_EQ(no_an.status().code(), absl::StatusCode::kOutOfRange) << no_an.status();
  EXPECT_NE(no_an.status().message().find("no key for sdi 3 an 1"), std::string::npos);
  EXPECT_NE(no_an.status().message().find("sdi 9 an 0, sdi 9 an 1, sdi 3 an 0"), std::string::npos)
      << no_an.status();
  auto no_sdi = read_key_file(path, 4, 0);
  EXPECT_EQ(no_sdi.status().code(), absl::StatusCode::kOutOfRange);
  std::remove(path.c_str());
}

struct BadCase {
  const char* what;
  std::string text;
  int line;
  const char* message;
};

TEST(ParseKeyFile_Bad, EachProblemNamesTheFileTheLineAndNeverAKey) {
  const std::string a = kKeyA, b = kKeyB;
  const std::string good = "sdi=5 an=0 mode=cluster key=" + a + "\n";
  const std::vector<BadCase> cases = {
      {"bad hex", "sdi=5 an=0 mode=cluster key=" + a.substr(0, 62) + "zz\n", 1,
       "key must be 64 hex digits"},
      {"short key", "sdi=5 an=0 mode=cluster key=" + a.substr(0, 60) + "\n", 1,
       "key must be 64 hex digits"},
      {"unknown name", good + "sdi=6 an=0 mode=cluster key=" + b + " colour=blue\n", 2,
       "unknown name \"colour\""},
      {"a key as a name", good + b + "=1 sdi=6 an=0 mode=cluster key=" + b + "\n", 2,
       "unknown name (not shown)"},
      {"not name=value", good + "\nsdi=6 an=0 mode=cluster " + b + "\n", 3,
       "expected name=value pairs"},
      {"field twice", "sdi=5 sdi=6 an=0 mode=cluster key=" + a + "\n", 1, "sdi given twice"},
      {"duplicate sdi/an", good + "# again\nsdi=0x5 an=0 mode=cluster key=" + b + "\n", 3,
       "sdi 5 an 0 already has a key (line 1)"},
      {"mode mismatch", good + "sdi=5 an=1 mode=direct key=" + b + "\n", 2,
       "sdi 5 is mode=direct here but mode=cluster on line 1"},
      {"rekey mismatch", good + "sdi=5 an=1 mode=cluster key=" + b + " rekey_shift=8\n", 2,
       "rekey_mask/rekey_shift differ from line 1"},
      {"job mismatch", "sdi=5 an=0 mode=cluster job=1 key=" + a + "\nsdi=5 an=1 mode=cluster key=" +
           b + "\n", 2, "sdi 5: job differs from line 1"},
      {"epoch mismatch", "sdi=5 an=0 mode=cluster epoch=2 key=" + a + "\nsdi=5 an=1 mode=cluster key=" +
           b + "\n", 2, "sdi 5: epoch differs from line 1"},
      {"epoch out of range", "sdi=5 an=0 mode=cluster epoch=65536 key=" + a + "\n", 1,
       "epoch must be a number from 0 to 65535"},
      {"job out of range", "sdi=5 an=0 mode=cluster job=16777216 key=" + a + "\n", 1,
       "job must be a number from 0 to 16777215"},
      {"sdi out of range", "sdi=16777216 an=0 mode=cluster key=" + a + "\n", 1,
       "sdi must be a number from 0 to 16777215"},
      {"sdi not a number", "sdi=-1 an=0 mode=cluster key=" + a + "\n", 1,
       "sdi must be a number from 0 to 16777215"},
      {"an out of range", "sdi=5 an=2 mode=cluster key=" + a + "\n", 1, "an must be 0 or 1"},
      {"unknown mode", "sdi=5 an=0 mode=peer key=" + a + "\n", 1,
       "mode must be cluster, direct, server or client"},
      {"client without its IV mask", "sdi=5 an=0 mode=client key=" + a + "\n", 1,
       "iv_mask= missing (mode=client)"},
      {"IV mask outside client mode",
       "sdi=5 an=0 mode=server key=" + a + " iv_mask=" + std::string(24, '0') + "\n", 1,
       "iv_mask= is for mode=client only"},
      {"short IV mask", "sdi=5 an=0 mode=client key=" + a + " iv_mask=00\n", 1,
       "iv_mask must be 24 hex digits"},
      {"rekey_mask past the counter",
       "sdi=5 an=0 mode=cluster key=" + a + " rekey_mask=0x1000000000000\n", 1,
       "rekey_mask must be a number with bits 0..47 only"},
      {"rekey_shift too large", "sdi=5 an=0 mode=cluster key=" + a + " rekey_shift=48\n", 1,
       "rekey_shift must be a number from 0 to 47"},
      {"empty hex number", "sdi=0x an=0 mode=cluster key=" + a + "\n", 1, "sdi must be a number"},
      {"key missing", "sdi=5 an=0 mode=cluster\n", 1, "key= missing"},
      {"mode missing", "sdi=5 an=0 key=" + a + "\n", 1, "mode= missing"},
  };
  for (const BadCase& c : cases) {
    auto d = parse_key_file(c.text, "keys.txt");
    ASSERT_FALSE(d.ok()) << c.what;
    const std::string m(d.status().message());
    EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument) << c.what;
    EXPECT_EQ(m.rfind("key file keys.txt line " + std::to_string(c.line) + ": ", 0), 0u)
        << c.what << ": " << m;
    EXPECT_NE(m.find(c.message), std::string::npos) << c.what << ": " << m;
    for (const std::string& k : {a, b}) {
      EXPECT_EQ(m.find(k.substr(0, 16)), std::string::npos) << c.what << ": key in " << m;
      EXPECT_EQ(m.find(k.substr(40, 16)), std::string::npos) << c.what << ": key in " << m;
    }
  }
}

TEST(ParseKeyFile_Bad, NoKeyAtAll) {
  auto d = parse_key_file("# nothing\n\n", "empty.txt");
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(d.status().message().find("key file empty.txt: no key"), std::string::npos)
      << d.status();
}

TEST(ReadKeyFile_Bad, MissingFileIsNotFoundNamingThePath) {
  const std::string path = temp_path("does-not-exist.txt");
  auto c = read_key_file(path);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(c.status().message().find("key file " + path + ": cannot be read"), std::string::npos)
      << c.status();
}

TEST(ReadKeyFile_Bad, ABadLineInAFileNamesThePath) {
  const std::string path = write_temp("bad.txt", "sdi=1 an=0 mode=cluster key=00\n");
  auto c = read_key_file(path);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("key file " + path + " line 1: key must be"),
            std::string::npos)
      << c.status();
  std::remove(path.c_str());
}

TEST(WriteKeyFile_RoundTrip, WhatIsWrittenFromAConfigReadsBackTheSame) {
  std::vector<DomainConfig> domains(4);
  domains[0].sdi = 0xABCDEF;  // both ANs, default rekey
  domains[0].key[0] = key_of(kKeyA);
  domains[0].key[1] = key_of(kKeyB);
  domains[0].installed = {true, true};
  domains[1].sdi = 0;  // AN 1 only, its own rekey interval
  domains[1].key[1] = key_of(kKeyB);
  domains[1].installed = {false, true};
  domains[1].rekey_mask = 0xFF00;
  domains[1].rekey_shift = 8;
  domains[2].sdi = 7;  // direct
  domains[2].mode = Mode::kDirect;
  domains[2].key[0] = key_of(kKeyB);
  domains[2].installed = {true, false};
  domains[2].job_id = 0xFFFFFF;  // bound to a job
  domains[1].mode = Mode::kClient;  // a server-mode client: its key and IV mask, its epoch
  domains[1].epoch = 0x1DC0;
  for (size_t i = 0; i < kIvBytes; ++i) domains[1].iv_mask[1][i] = static_cast<uint8_t>(i * 17);
  domains[3].sdi = 0xFFFFFF;
  for (size_t i = 0; i < kKeyBytes; ++i) domains[3].key[0][i] = static_cast<uint8_t>(255 - i);
  domains[3].installed = {true, false};
  const std::string path = temp_path("roundtrip.txt");
  ASSERT_TRUE(write_key_file(path, domains).ok());
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u) << "a key file is its owner's only";
  auto c = read_key_file(path, 7, 0);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->domains.size(), domains.size());
  for (size_t i = 0; i < domains.size(); ++i) {
    const DomainConfig &w = domains[i], &r = c->domains[i];
    EXPECT_EQ(r.sdi, w.sdi) << i;
    EXPECT_EQ(r.mode, w.mode) << i;
    EXPECT_EQ(r.installed, w.installed) << i;
    for (int an = 0; an < 2; ++an) {
      if (w.installed[an]) {
        EXPECT_EQ(r.key[an], w.key[an]) << i << " an " << an;
      }
    }
    EXPECT_EQ(r.rekey_mask, w.rekey_mask) << i;
    EXPECT_EQ(r.rekey_shift, w.rekey_shift) << i;
    EXPECT_EQ(r.job_id, w.job_id) << i;
    EXPECT_EQ(r.epoch, w.epoch) << i;
    for (int an = 0; an < 2; ++an) {
      if (w.installed[an] && w.mode == Mode::kClient) {
        EXPECT_EQ(r.iv_mask[an], w.iv_mask[an]) << i << " an " << an;
      }
    }
  }
  std::remove(path.c_str());
}

// Server mode (spec/uet.md §5.3): a client's domains from a server's file hold only what
// client_key() derives for that client, in the epoch asked for (the server's by default), and
// read back from their key file unchanged.
TEST(ClientDomains, AClientIsGivenItsDerivedKeysAndNothingElse) {
  const std::string text = std::string("sdi=9 an=0 mode=server job=5 epoch=3 key=") + kKeyA +
                           "\nsdi=9 an=1 mode=server job=5 epoch=3 key=" + kKeyB +
                           "\nsdi=4 an=0 mode=cluster key=" + kKeyB + "\n";
  auto server = parse_key_file(text, "server.txt");
  ASSERT_TRUE(server.ok()) << server.status();
  constexpr uint32_t kClient = 0x0A000002;
  for (const std::optional<uint16_t> epoch : {std::optional<uint16_t>(), std::optional<uint16_t>(4)}) {
    auto c = client_domains(*server, kClient, epoch);
    ASSERT_TRUE(c.ok()) << c.status();
    ASSERT_EQ(c->size(), 1u);  // the cluster domain is not the client's business
    const DomainConfig& d = (*c)[0];
    EXPECT_EQ(d.sdi, 9u);
    EXPECT_EQ(d.mode, Mode::kClient);
    EXPECT_EQ(d.job_id, 5u);
    EXPECT_EQ(d.epoch, epoch.value_or(3));
    for (uint8_t an = 0; an < 2; ++an) {
      DerivedKey k;
      ASSERT_TRUE(client_key((*server)[0].key[an], d.epoch, kClient, &k));
      EXPECT_EQ(d.key[an], k.key) << int(an);
      EXPECT_EQ(d.iv_mask[an], k.iv_mask) << int(an);
      EXPECT_NE(d.key[an], (*server)[0].key[an]) << "the domain key itself";
    }
    // Written and read back as the client's key file.
    auto back = parse_key_file(key_file_text(*c), "client.txt");
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ((*back)[0].key, d.key);
    EXPECT_EQ((*back)[0].iv_mask, d.iv_mask);
    EXPECT_EQ((*back)[0].epoch, d.epoch);
  }
  auto none = client_domains(std::span<const DomainConfig>(*server).subspan(1), kClient, {});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no mode=server domain"), std::string::npos);
}

// The golden vectors' frames (spec/vectors/*.vec), the sealed ones only.
struct Sealed {
  std::string name;
  std::vector<uint8_t> frame;
  std::string client;  // server mode (tss_client:): the client, dotted
};

std::vector<Sealed> sealed_vectors(const std::string& dir) {
  std::vector<Sealed> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    if (n.size() > 4 && n.compare(n.size() - 4, 4, ".vec") == 0) names.push_back(n);
  }
  ::closedir(d);
  for (const std::string& n : names) {
    std::ifstream in(dir + "/" + n);
    std::string line, hex, client;
    bool sealed = false;
    while (std::getline(in, line)) {
      if (line.rfind("frame:", 0) == 0) {
        for (char ch : line.substr(6))
          if (ch != ' ') hex += ch;
      }
      if (line.rfind("tss_key:", 0) == 0) sealed = true;
      if (line.rfind("tss_client:", 0) == 0) client = line.substr(line.find_first_not_of(' ', 11));
    }
    if (!sealed) continue;
    Sealed s{n, {}, client};
    for (size_t i = 0; i + 1 < hex.size(); i += 2)
      s.frame.push_back(static_cast<uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    out.push_back(std::move(s));
  }
  return out;
}

TEST(ReadKeyFile_Dissector, TheVectorTestsKeyFileOpensEverySealedVector) {
#ifndef UET_DISSECTOR_KEY_FILE
  GTEST_SKIP() << "python3 was not found at configure time: no dissector key file generated";
#else
  auto c = read_key_file(UET_DISSECTOR_KEY_FILE);
  ASSERT_TRUE(c.ok()) << c.status();
  const std::vector<Sealed> vectors = sealed_vectors(UET_VECTORS_DIR);
  ASSERT_GE(vectors.size(), 5u) << "sealed vectors in " << UET_VECTORS_DIR;
  for (const Sealed& v : vectors) {
    std::vector<uint8_t> frame = v.frame;
    wire::Decoded d;
    ASSERT_EQ(wire::decode_frame(frame, &d), wire::WireError::kOk) << v.name;
    ASSERT_TRUE(d.tss != nullptr || d.tss_sp != nullptr) << v.name;
    // A server's key file opens what reaches the server; its frames to a client open at the
    // client, with the client's own key (tests/wire/vectors_test.cc opens those).
    if (!v.client.empty() && d.ipv4 != nullptr) {
      in_addr a{};
      ASSERT_EQ(::inet_pton(AF_INET, v.client.c_str(), &a), 1) << v.name;
      if (ntohl(a.s_addr) == d.ipv4->dst()) continue;
    }
    // The epoch is the sender's state, not the file's: receive in the vector's.
    TssConfig rc = *c;
    const uint64_t tsc = d.tss_sp != nullptr ? d.tss_sp->tsc() : d.tss->tsc();
    for (DomainConfig& dom : rc.domains) dom.epoch = static_cast<uint16_t>(tsc >> kCounterBits);
    // The local address matters for IPv4 only (§5.2: an IPv6 sender is keyed by its own).
    auto rx = Sublayer::create(rc, d.ipv4 != nullptr ? d.ipv4->dst() : 0);
    ASSERT_TRUE(rx.ok()) << rx.status();
    std::span<uint8_t> plain;
    Drop why = Drop::kCount;
    EXPECT_TRUE((*rx)->open(frame.data(), d, &plain, &why)) << v.name << ": " << drop_name(why);
    EXPECT_EQ((*rx)->counters().opened, 1u) << v.name;
  }
#endif
}

}  // namespace
}  // namespace uet::tss
