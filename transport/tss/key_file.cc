#include "transport/tss/key_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace uet::tss {

namespace {

// The dissector's defaults (dissector/tss_keys.c) are DomainConfig's: one file, one meaning.
constexpr DomainConfig kDefaults{};

enum Field { kSdi, kAn, kMode, kKey, kRekeyMask, kRekeyShift, kJob, kIvMask, kEpoch, kFields };
constexpr std::array<const char*, kFields> kNames = {
    "sdi", "an", "mode", "key", "rekey_mask", "rekey_shift", "job", "iv_mask", "epoch"};
constexpr std::array<const char*, kFields> kWant = {
    "a number from 0 to 16777215",
    "0 or 1",
    "cluster, direct, server or client",
    "64 hex digits",
    "a number with bits 0..47 only (the TSC counter, spec/uet.md §5.1)",
    "a number from 0 to 47",
    "a number from 0 to 16777215 (the job the domain is bound to, spec/uet.md §5.7)",
    "24 hex digits (a client's IV mask, given with its key: mode=client only)",
    "a number from 0 to 65535 (the domain's epoch, TSC bits 63..48, spec/uet.md §5.1)"};

// One key line, parsed.
struct Line {
  uint32_t sdi = 0;
  uint8_t an = 0;
  Mode mode = Mode::kCluster;
  Key key{};
  uint64_t rekey_mask = kDefaults.rekey_mask;
  uint8_t rekey_shift = kDefaults.rekey_shift;
  uint32_t job_id = kAnyJob;
  Iv iv_mask{};
  bool has_iv_mask = false;
  uint16_t epoch = 0;
};

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Decimal or 0x hex, at most `max` (as the dissector reads numbers).
bool parse_number(std::string_view s, uint64_t max, uint64_t* out) {
  uint64_t base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s.remove_prefix(2);
  }
  if (s.empty()) return false;
  uint64_t v = 0;
  for (char c : s) {
    const int d = hex_digit(c);
    if (d < 0 || static_cast<uint64_t>(d) >= base) return false;
    if (static_cast<uint64_t>(d) > max || v > (max - static_cast<uint64_t>(d)) / base) return false;
    v = v * base + static_cast<uint64_t>(d);
  }
  *out = v;
  return true;
}

// parse_number into a field `max` fits (0 when the number is bad).
template <typename T>
bool parse_field(std::string_view s, uint64_t max, T* out) {
  uint64_t v = 0;
  const bool ok = parse_number(s, max, &v);
  *out = static_cast<T>(v);
  return ok;
}

// A name worth echoing: short lowercase words only, so a stray key is never printed.
std::string shown_name(std::string_view name) {
  if (name.empty() || name.size() > 32) return "(not shown)";
  for (char c : name)
    if (!(c >= 'a' && c <= 'z') && c != '_') return "(not shown)";
  return absl::StrCat("\"", std::string(name), "\"");
}

// Parses one line (comment cut). Returns "" and sets *any when it held a key, "" with *any
// false when it held nothing, else what is wrong.
std::string parse_line(std::string_view text, Line* out, bool* any) {
  std::array<bool, kFields> seen{};
  *any = false;
  size_t i = 0;
  while (i < text.size()) {
    const size_t start = text.find_first_not_of(" \t\r", i);
    if (start == std::string_view::npos) break;
    size_t end = text.find_first_of(" \t\r", start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view token = text.substr(start, end - start);
    i = end;
    const size_t eq = token.find('=');
    if (eq == std::string_view::npos) return "expected name=value pairs";
    const std::string_view name = token.substr(0, eq), value = token.substr(eq + 1);
    size_t f = 0;
    while (f < kFields && kNames[f] != name) ++f;
    if (f == kFields) {
      return absl::StrCat("unknown name ", shown_name(name),
                          " (valid: ", absl::StrJoin(kNames, ", "), ")");
    }
    if (seen[f]) return absl::StrCat(kNames[f], " given twice");
    seen[f] = true;
    *any = true;
    bool ok = true;
    switch (f) {
      case kSdi:
        ok = parse_field(value, 0xFFFFFF, &out->sdi);
        break;
      case kAn:
        ok = parse_field(value, 1, &out->an);
        break;
      case kMode:
        ok = value == "cluster" || value == "direct" || value == "server" || value == "client";
        out->mode = value == "direct"   ? Mode::kDirect
                    : value == "server" ? Mode::kServer
                    : value == "client" ? Mode::kClient
                                        : Mode::kCluster;
        break;
      case kIvMask:
        ok = value.size() == 2 * kIvBytes;
        for (size_t b = 0; ok && b < kIvBytes; ++b) {
          const int hi = hex_digit(value[2 * b]), lo = hex_digit(value[2 * b + 1]);
          ok = hi >= 0 && lo >= 0;
          out->iv_mask[b] = static_cast<uint8_t>(hi << 4 | lo);
        }
        out->has_iv_mask = ok;
        break;
      case kKey:
        ok = parse_key(value, &out->key);
        break;
      case kRekeyMask:
        ok = parse_number(value, kCounterMask, &out->rekey_mask);
        break;
      case kRekeyShift:
        ok = parse_field(value, kCounterBits - 1, &out->rekey_shift);
        break;
      case kJob:
        ok = parse_field(value, 0xFFFFFF, &out->job_id);
        break;
      case kEpoch:
        ok = parse_field(value, 0xFFFF, &out->epoch);
        break;
    }
    if (!ok) return absl::StrCat(kNames[f], " must be ", kWant[f]);
  }
  if (*any) {
    for (size_t f = kSdi; f <= kKey; ++f)
      if (!seen[f]) return absl::StrCat(kNames[f], "= missing");
    // §5.3: a client is given its key with the IV mask derived beside it; no other mode has one.
    if (out->mode == Mode::kClient && !seen[kIvMask]) return "iv_mask= missing (mode=client)";
    if (out->mode != Mode::kClient && seen[kIvMask]) return "iv_mask= is for mode=client only";
  }
  return "";
}

const char* mode_name(Mode m) {
  switch (m) {
    case Mode::kDirect: return "direct";
    case Mode::kServer: return "server";
    case Mode::kClient: return "client";
    case Mode::kCluster: break;
  }
  return "cluster";
}

absl::Status bad_line(std::string_view name, size_t line, std::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("key file ", std::string(name), " line ", line, ": ", std::string(what)));
}

// Wipes the keys and IV masks of domains an error leaves unused.
void cleanse_keys(std::span<DomainConfig> domains) {
  for (DomainConfig& c : domains) {
    explicit_bzero(c.key.data(), sizeof c.key);
    explicit_bzero(c.iv_mask.data(), sizeof c.iv_mask);
  }
}

// The domains a key file gives, as its lines come: per domain and AN, the line its key came
// from; per domain, the line that set its mode.
struct KeyFileDomains {
  std::vector<DomainConfig> domains;
  std::vector<std::array<size_t, 2>> key_line;
  std::vector<size_t> first_line;

  // The index of l's domain, added from l (line `number`) if it is the first of its sdi.
  size_t find_or_add(const Line& l, size_t number) {
    size_t d = 0;
    while (d < domains.size() && domains[d].sdi != l.sdi) ++d;
    if (d < domains.size()) return d;
    DomainConfig dom;
    dom.sdi = l.sdi;
    dom.mode = l.mode;
    dom.rekey_mask = l.rekey_mask;
    dom.rekey_shift = l.rekey_shift;
    dom.job_id = l.job_id;
    dom.epoch = l.epoch;
    domains.push_back(dom);
    key_line.push_back({0, 0});
    first_line.push_back(number);
    return d;
  }

  // "" if l's key may join domain d, else why not.
  std::string conflict(size_t d, const Line& l) const {
    const DomainConfig& dom = domains[d];
    if (dom.installed[l.an]) {
      return absl::StrFormat("sdi %u an %u already has a key (line %u)", l.sdi, l.an,
                             key_line[d][l.an]);
    }
    if (dom.mode != l.mode) {
      // §5.3: the mode is the domain's, so both ANs of one sdi derive keys alike.
      return absl::StrFormat("sdi %u is mode=%s here but mode=%s on line %u", l.sdi,
                             mode_name(l.mode), mode_name(dom.mode), first_line[d]);
    }
    if (dom.rekey_mask != l.rekey_mask || dom.rekey_shift != l.rekey_shift) {
      return absl::StrFormat("sdi %u: rekey_mask/rekey_shift differ from line %u "
                             "(one rekey interval per domain, spec/uet.md §5.3)",
                             l.sdi, first_line[d]);
    }
    if (dom.job_id != l.job_id) {
      return absl::StrFormat("sdi %u: job differs from line %u (one job per domain, "
                             "spec/uet.md §5.7)",
                             l.sdi, first_line[d]);
    }
    if (dom.epoch != l.epoch) {
      return absl::StrFormat("sdi %u: epoch differs from line %u (one epoch per "
                             "domain, spec/uet.md §5.4)",
                             l.sdi, first_line[d]);
    }
    return "";
  }

  void install(size_t d, const Line& l, size_t number) {
    DomainConfig& dom = domains[d];
    dom.key[l.an] = l.key;
    dom.iv_mask[l.an] = l.iv_mask;
    dom.installed[l.an] = true;
    key_line[d][l.an] = number;
  }
};

}  // namespace

absl::StatusOr<std::vector<DomainConfig>> parse_key_file(std::string_view text,
                                                         std::string_view name) {
  KeyFileDomains file;
  size_t number = 0;
  size_t pos = 0;
  Line l;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++number;
    if (const size_t hash = line.find('#'); hash != std::string_view::npos)
      line.remove_suffix(line.size() - hash);
    l = Line{};
    bool any = false;
    if (std::string err = parse_line(line, &l, &any); !err.empty()) {
      explicit_bzero(&l, sizeof l);
      return bad_line(name, number, err);
    }
    if (!any) continue;
    const size_t d = file.find_or_add(l, number);
    if (std::string why = file.conflict(d, l); !why.empty()) {
      explicit_bzero(&l, sizeof l);
      cleanse_keys(file.domains);
      return bad_line(name, number, why);
    }
    file.install(d, l, number);
  }
  explicit_bzero(&l, sizeof l);
  if (file.domains.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("key file ", std::string(name), ": no key in it"));
  }
  return std::move(file.domains);
}

absl::StatusOr<TssConfig> read_key_file(const std::string& path, std::optional<uint32_t> tx_sdi,
                                        uint8_t tx_an) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::NotFoundError(
        absl::StrCat("key file ", path, ": cannot be read (", std::strerror(errno), ")"));
  }
  std::string text(kMaxKeyFileBytes + 1, '\0');
  size_t got = 0;
  int err = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) err = errno;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  absl::StatusOr<std::vector<DomainConfig>> domains;
  if (err != 0) {
    domains = absl::NotFoundError(
        absl::StrCat("key file ", path, ": cannot be read (", std::strerror(err), ")"));
  } else if (got > kMaxKeyFileBytes) {
    domains = absl::InvalidArgumentError(
        absl::StrCat("key file ", path, ": larger than ", kMaxKeyFileBytes, " bytes"));
  } else {
    domains = parse_key_file(std::string_view(text.data(), got), path);
  }
  explicit_bzero(text.data(), text.size());
  if (!domains.ok()) return domains.status();

  TssConfig c;
  c.enabled = true;
  c.domains = std::move(*domains);
  c.tx_sdi = tx_sdi.value_or(c.domains.front().sdi);
  c.tx_an = tx_an;
  const DomainConfig* tx = nullptr;
  for (const DomainConfig& d : c.domains)
    if (d.sdi == c.tx_sdi) tx = &d;
  if (tx == nullptr || tx_an > 1 || !tx->installed[tx_an]) {
    std::vector<std::string> have;
    for (const DomainConfig& d : c.domains)
      for (uint8_t an = 0; an < 2; ++an)
        if (d.installed[an]) have.push_back(absl::StrFormat("sdi %u an %u", d.sdi, an));
    const std::string want = absl::StrFormat("sdi %u an %u", c.tx_sdi, tx_an);
    cleanse_keys(c.domains);
    return absl::OutOfRangeError(absl::StrCat("key file ", path, " has no key for ", want,
                                              " to send with (it has: ", absl::StrJoin(have, ", "),
                                              ")"));
  }
  if (absl::Status s = c.validate(); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("key file ", path, ": ", s.message()));
  }
  return c;
}

std::string key_file_text(std::span<const DomainConfig> domains) {
  std::string out =
      "# TSS keys (spec/uet.md §5): sdi=<N> an=<0|1> mode=<cluster|direct|server|client> "
      "key=<64 hex digits> [iv_mask=<24 hex digits>] [rekey_mask=<N>] [rekey_shift=<N>] "
      "[job=<N>] [epoch=<N>]\n";
  for (const DomainConfig& d : domains) {
    for (uint8_t an = 0; an < 2; ++an) {
      if (!d.installed[an]) continue;
      absl::StrAppendFormat(&out, "sdi=%u an=%u mode=%s key=", d.sdi, an, mode_name(d.mode));
      for (uint8_t b : d.key[an]) absl::StrAppendFormat(&out, "%02x", b);
      if (d.rekey_mask != kDefaults.rekey_mask || d.rekey_shift != kDefaults.rekey_shift) {
        absl::StrAppendFormat(&out, " rekey_mask=0x%x rekey_shift=%u", d.rekey_mask, d.rekey_shift);
      }
      if (d.mode == Mode::kClient) {
        out += " iv_mask=";
        for (uint8_t b : d.iv_mask[an]) absl::StrAppendFormat(&out, "%02x", b);
      }
      if (d.job_id != kAnyJob) absl::StrAppendFormat(&out, " job=%u", d.job_id);
      if (d.epoch != 0) absl::StrAppendFormat(&out, " epoch=%u", d.epoch);
      out += "\n";
    }
  }
  return out;
}

absl::StatusOr<std::vector<DomainConfig>> client_domains(std::span<const DomainConfig> server,
                                                         uint32_t client_ip4,
                                                         std::optional<uint16_t> epoch) {
  std::vector<DomainConfig> out;
  for (const DomainConfig& s : server) {
    if (s.mode != Mode::kServer) continue;
    DomainConfig c = s;
    c.mode = Mode::kClient;
    c.epoch = epoch.value_or(s.epoch);
    for (uint8_t an = 0; an < 2; ++an) {
      c.key[an] = Key{};
      if (!s.installed[an]) continue;
      DerivedKey k;
      if (!client_key(s.key[an], c.epoch, client_ip4, &k)) {
        explicit_bzero(&k, sizeof k);
        for (DomainConfig& d : out) explicit_bzero(d.key.data(), sizeof d.key);
        explicit_bzero(c.key.data(), sizeof c.key);
        return absl::InternalError("client_domains: the key derivation failed");
      }
      c.key[an] = k.key;
      c.iv_mask[an] = k.iv_mask;
      explicit_bzero(&k, sizeof k);
    }
    out.push_back(c);
  }
  if (out.empty()) {
    return absl::InvalidArgumentError(
        "client_domains: no mode=server domain to derive a client's keys from (spec/uet.md "
        "§5.3)");
  }
  return out;
}

absl::Status write_key_file(const std::string& path, std::span<const DomainConfig> domains) {
  std::string text = key_file_text(domains);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  absl::Status s;
  if (fd < 0) {
    s = absl::PermissionDeniedError(
        absl::StrCat("key file ", path, ": cannot be written (", std::strerror(errno), ")"));
  } else {
    ::fchmod(fd, 0600);  // an existing file keeps its mode under O_CREAT
    size_t off = 0;
    while (off < text.size()) {
      const ssize_t n = ::write(fd, text.data() + off, text.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        s = absl::InternalError(
            absl::StrCat("key file ", path, ": write failed (", std::strerror(errno), ")"));
        break;
      }
      off += static_cast<size_t>(n);
    }
    if (::close(fd) != 0 && s.ok()) {
      s = absl::InternalError(
          absl::StrCat("key file ", path, ": close failed (", std::strerror(errno), ")"));
    }
  }
  explicit_bzero(text.data(), text.size());
  return s;
}

}  // namespace uet::tss
