#include "sim/module.h"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace uet::sim {
namespace {

// BIN/../lib/FILE for the program at BIN/NAME; "" when /proc/self/exe cannot be read.
std::string beside_program(const std::string& file) {
  char exe[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0) return "";
  std::string dir(exe, static_cast<size_t>(n));
  const size_t slash = dir.rfind('/');
  if (slash == std::string::npos) return "";
  dir.resize(slash);
  return absl::StrCat(dir, "/../lib/", file);
}

}  // namespace

absl::StatusOr<void*> module_symbol(const std::string& file, const char* symbol,
                                    const std::string& what) {
  const std::string local = beside_program(file);
  void* handle = local.empty() ? nullptr : dlopen(local.c_str(), RTLD_NOW | RTLD_LOCAL);
  std::string why;
  if (handle == nullptr && !local.empty()) why = absl::StrCat(dlerror(), "; ");
  if (handle == nullptr) {
    handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat(what, " needs the module ", file, ", which did not load (", why,
                       dlerror(), ")"));
    }
  }
  void* sym = dlsym(handle, symbol);
  if (sym == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": the module ", file, " has no ", symbol));
  }
  return sym;
}

}  // namespace uet::sim
