// uet-tss-keys: writes TSS key files (transport/tss/key_file.h, dissector/README.md "TSS keys")
// for the tools, the provider and the Wireshark plugin. Keys are configuration here (spec/uet.md
// §5.8); this is the step a key manager would do by hand.
//
//   uet-tss-keys --new --mode=cluster --sdi=0x5e1 --out=keys.txt        # fresh keys, both ANs
//   uet-tss-keys --new --mode=server --sdi=9 --out=server.txt
//   uet-tss-keys --key_file=server.txt --client=10.0.0.2 --out=client.txt   # §5.3 server mode
//
// A server-mode client is given only the key and IV mask derived for its address (and epoch),
// never the domain key. Files are written readable by their owner only; no key is ever printed.
#include <arpa/inet.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "bench/tool_main.h"
#include "transport/tss/key_file.h"

ABSL_FLAG(bool, new, false, "write a key file with fresh random keys (--mode, --sdi, --ans)");
ABSL_FLAG(std::string, mode, "cluster", "--new: cluster, direct or server");
ABSL_FLAG(uint32_t, sdi, 1, "--new: the secure domain index, 0..16777215");
ABSL_FLAG(uint32_t, ans, 2, "--new: keys for AN 0 only (1) or for AN 0 and 1 (2)");
ABSL_FLAG(int64_t, job, -1, "--new: bind the domain to this JobID, 0..16777215 (-1: any job)");
ABSL_FLAG(std::string, key_file, "", "--client: the server's key file (its mode=server domains)");
ABSL_FLAG(std::string, client, "", "the client's IPv4 address: write its key file (§5.3)");
ABSL_FLAG(int32_t, epoch, -1,
          "--client: the epoch to derive in, 0..65535 (-1: the server domain's); a client "
          "rotates by moving to a newer one");
ABSL_FLAG(std::string, out, "", "the key file to write (created or replaced, mode 0600)");

namespace {

int refuse(const std::string& why) { return uet::bench::tool_error("uet-tss-keys", why, 2); }

void wipe(std::vector<uet::tss::DomainConfig>& domains) {
  for (uet::tss::DomainConfig& d : domains) {
    OPENSSL_cleanse(d.key.data(), sizeof d.key);
    OPENSSL_cleanse(d.iv_mask.data(), sizeof d.iv_mask);
  }
}

int write(const std::string& out, std::vector<uet::tss::DomainConfig>& domains,
          const std::string& what) {
  const absl::Status s = uet::tss::write_key_file(out, domains);
  wipe(domains);
  if (!s.ok()) return refuse(std::string(s.message()));
  std::printf("uet-tss-keys: wrote %s: %s\n", out.c_str(), what.c_str());
  return 0;
}

int fresh(const std::string& out) {
  using uet::tss::Mode;
  const std::string mode = absl::GetFlag(FLAGS_mode);
  const uint32_t sdi = absl::GetFlag(FLAGS_sdi), ans = absl::GetFlag(FLAGS_ans);
  const int64_t job = absl::GetFlag(FLAGS_job);
  uet::tss::DomainConfig d;
  if (mode == "cluster") {
    d.mode = Mode::kCluster;
  } else if (mode == "direct") {
    d.mode = Mode::kDirect;
  } else if (mode == "server") {
    d.mode = Mode::kServer;
  } else {
    return refuse("--mode=" + mode + ": cluster, direct or server (a client's file comes from "
                  "--client)");
  }
  if (sdi > 0xFFFFFF) return refuse(absl::StrCat("--sdi=", sdi, " out of range: 0..16777215"));
  if (ans < 1 || ans > 2) return refuse(absl::StrCat("--ans=", ans, " out of range: 1..2"));
  if (job < -1 || job > 0xFFFFFF) {
    return refuse(absl::StrCat("--job=", job, " out of range: 0..16777215, or -1"));
  }
  d.sdi = sdi;
  d.job_id = job < 0 ? uet::tss::kAnyJob : static_cast<uint32_t>(job);
  for (uint32_t an = 0; an < ans; ++an) {
    if (RAND_bytes(d.key[an].data(), static_cast<int>(d.key[an].size())) != 1) {
      std::vector<uet::tss::DomainConfig> gone{d};
      wipe(gone);
      return refuse("OpenSSL's RAND_bytes failed: no key written");
    }
    d.installed[an] = true;
  }
  std::vector<uet::tss::DomainConfig> domains{d};
  OPENSSL_cleanse(d.key.data(), sizeof d.key);
  return write(out, domains,
               absl::StrCat("sdi ", sdi, ", mode=", mode, ", ", ans == 2 ? "AN 0 and 1" : "AN 0",
                            job < 0 ? "" : absl::StrCat(", job ", job)));
}

int client(const std::string& out) {
  const std::string ip = absl::GetFlag(FLAGS_client), file = absl::GetFlag(FLAGS_key_file);
  const int32_t epoch = absl::GetFlag(FLAGS_epoch);
  in_addr a{};
  if (::inet_pton(AF_INET, ip.c_str(), &a) != 1) {
    return refuse("--client=" + ip + ": not an IPv4 address (server mode names clients by "
                  "their IPv4 address, spec/uet.md §5.3)");
  }
  if (epoch < -1 || epoch > 0xFFFF) {
    return refuse(absl::StrCat("--epoch=", epoch, " out of range: 0..65535, or -1"));
  }
  if (file.empty()) return refuse("--client needs --key_file=PATH (the server's key file)");
  auto server = uet::tss::read_key_file(file);
  if (!server.ok()) return refuse(std::string(server.status().message()));
  auto domains = uet::tss::client_domains(
      server->domains, ntohl(a.s_addr),
      epoch < 0 ? std::nullopt : std::optional<uint16_t>(static_cast<uint16_t>(epoch)));
  wipe(server->domains);
  if (!domains.ok()) return refuse(absl::StrCat(file, ": ", domains.status().message()));
  std::string what = absl::StrCat("client ", ip, ", ", domains->size(), " server-mode domain",
                                  domains->size() == 1 ? "" : "s");
  for (const uet::tss::DomainConfig& d : *domains) absl::StrAppend(&what, ", sdi ", d.sdi, " epoch ", d.epoch);
  return write(out, *domains, what);
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "uet-tss-keys --new [--mode=cluster|direct|server] [--sdi=N] [--ans=1|2] [--job=N] "
      "--out=PATH, or uet-tss-keys --key_file=SERVER --client=IPv4 [--epoch=N] --out=PATH");
  absl::ParseCommandLine(argc, argv);
  const std::string out = absl::GetFlag(FLAGS_out);
  const bool make = absl::GetFlag(FLAGS_new), derive = !absl::GetFlag(FLAGS_client).empty();
  if (make == derive) return refuse("say --new or --client=IPv4 (one of them)");
  if (out.empty()) return refuse("--out=PATH is required (the key file to write)");
  return make ? fresh(out) : client(out);
}
