# The io_uring UDP backend of dpdk-io/ (uring_io.h): kernel UDP sockets through liburing.
pkg_check_modules(URING REQUIRED IMPORTED_TARGET liburing)
add_library(uet_uring STATIC uring_setup.cc uring_io.cc uring_uapi.cc)
uet_headers(uet_uring PUBLIC dpdk-io/uring_*.h)
target_compile_definitions(uet_uring PRIVATE UET_PRIVATE_DPDK_IO_URING)
target_link_libraries(uet_uring PUBLIC uet_io uet_wire absl::status absl::statusor absl::strings
                      PRIVATE PkgConfig::URING ZLIB::ZLIB)
