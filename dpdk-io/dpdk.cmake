# The DPDK ethdev backend (dpdk_io.h: set-up in dpdk_setup.cc, data path in dpdk_io.cc, their
# shared port state in the private dpdk_internal.h) and its neighbour/ARP table (dpdk_neigh.h).
# DPDK's pkg-config flags (-march=corei7, -include rte_config.h, its include dirs) stay PRIVATE
# to uet_dpdk: no other target sees a DPDK header or flag (DESIGN.md: only dpdk-io/ sees DPDK).
pkg_check_modules(DPDK IMPORTED_TARGET libdpdk)
if(DPDK_FOUND)
  add_library(uet_dpdk STATIC dpdk_setup.cc dpdk_io.cc dpdk_neigh.cc)
  target_compile_definitions(uet_dpdk PRIVATE UET_PRIVATE_DPDK_IO_DPDK)
  uet_headers(uet_dpdk PUBLIC dpdk-io/dpdk_*.h)
  target_link_libraries(uet_dpdk PUBLIC uet_io uet_wire absl::status absl::statusor
                        PRIVATE PkgConfig::DPDK absl::strings absl::str_format)
else()
  message(STATUS "libdpdk not found: uet_dpdk (the DPDK backend) is not built")
endif()
