#include "sim/trace/chakra_module.h"

#include "transport/module.h"

namespace uet::sim {

absl::StatusOr<const ChakraReader*> chakra_reader() {
  static const absl::StatusOr<const ChakraReader*> reader =
      []() -> absl::StatusOr<const ChakraReader*> {
    auto entry = module_symbol("libuet_chakra.so", "uet_chakra_reader", "reading Chakra traces");
    if (!entry.ok()) return entry.status();
    return reinterpret_cast<decltype(&uet_chakra_reader)>(*entry)();
  }();
  return reader;
}

}  // namespace uet::sim
