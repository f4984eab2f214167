// The benchmark tools' flag checks (bench/flag_check.h).
#include "bench/flag_check.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace uet::bench {

void FlagCheck::range(absl::string_view flag, double v, double lo, double hi) {
  if (error.empty() && !(v >= lo && v <= hi)) {
    error = absl::StrFormat("--%s%s out of range: %.*g..%.*g", flag,
                            quote_ == Quote::kValue ? absl::StrFormat("=%.*g", digits_, v) : "",
                            digits_, lo, digits_, hi);
  }
}

void FlagCheck::one_of(const char* flag, absl::string_view v,
                       std::initializer_list<absl::string_view> names) {
  if (!error.empty()) return;
  std::string listed;
  size_t i = 0;
  for (absl::string_view name : names) {
    if (v == name) return;
    absl::StrAppend(&listed, i == 0 ? "" : i + 1 == names.size() ? " or " : ", ", name);
    ++i;
  }
  error = absl::StrCat("--", flag, quote_ == Quote::kValue ? absl::StrCat("=", v) : "",
                       " unknown: ", listed);
}

void FlagCheck::fail(std::string e) {
  if (error.empty()) error = std::move(e);
}

std::string tss_backend_refusal(const std::string& name, bool tss_on, tss::Backend* backend) {
  if (!tss::parse_backend(name, backend)) {
    return absl::StrCat("--tss_backend=", name, ": auto, ipsec-mb or openssl");
  }
  if (!tss_on && *backend != tss::Backend::kAuto) return "--tss_backend needs --tss";
  if (!tss_on) return "";  // without TSS the crypto module is never opened
  if (absl::Status s = tss::crypto_status(); !s.ok()) return absl::StrCat("--tss: ", s.message());
  if (!tss::backend_available(*backend)) {
    return absl::StrCat("--tss_backend=", name,
                        " is not available here (built without it, or the CPU lacks AES-NI): "
                        "auto or openssl");
  }
  return "";
}

}  // namespace uet::bench
