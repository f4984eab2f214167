#include "transport/module.h"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace uet {
namespace {

// The folder of `path`, with its slash; "" when it has none.
std::string folder(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

// Where to look before the loader's path: beside the shared object holding this code when it is
// not the program (a library loaded by another program, e.g. a libfabric provider), then
// BIN/../lib/FILE for the program at BIN/NAME.
std::vector<std::string> candidates(const std::string& file) {
  std::vector<std::string> out;
  char exe[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  const std::string program = n > 0 ? std::string(exe, static_cast<size_t>(n)) : "";
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&module_symbol), &info) != 0 && info.dli_fname != nullptr &&
      info.dli_fname[0] == '/' && program != info.dli_fname) {
    out.push_back(folder(info.dli_fname) + file);
  }
  if (const std::string dir = folder(program); !dir.empty())
    out.push_back(absl::StrCat(dir, "../lib/", file));
  return out;
}

}  // namespace

absl::StatusOr<void*> module_symbol(const std::string& file, const char* symbol,
                                    const std::string& what) {
  void* handle = nullptr;
  std::string why;
  for (const std::string& path : candidates(file)) {
    handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) break;
    absl::StrAppend(&why, dlerror(), "; ");
  }
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

}  // namespace uet
