// libuet_chakra.so's entry point (sim/trace/chakra_module.h).
#include "sim/trace/chakra_module.h"

extern "C" __attribute__((visibility("default"))) const uet::sim::ChakraReader*
uet_chakra_reader() {
  static constexpr uet::sim::ChakraReader kReader{&uet::sim::read_chakra,
                                                  &uet::sim::read_comm_groups};
  return &kReader;
}
