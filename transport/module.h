// Parts of a tool loaded only when a run asks for them (TSS's crypto libraries, the Chakra
// reader, MPI): a program that never uses them does not map their libraries, whose relocated
// data and symbol tables are resident from load otherwise.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace uet {

// The address of `symbol` in the module `file` (e.g. "libuet_chakra.so"), opened from the
// folder of the shared object this code is linked into (a provider in lib/), else from the lib
// folder beside the running program's bin folder (the build tree's layout), else from the
// dynamic loader's search path. Opened once and never closed. The error names `what` (the
// feature that needs it), the paths tried and dlerror()'s reason.
absl::StatusOr<void*> module_symbol(const std::string& file, const char* symbol,
                                    const std::string& what);

}  // namespace uet
