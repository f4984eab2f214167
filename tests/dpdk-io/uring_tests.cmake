# The io_uring backend's tests: real UDP sockets on loopback (127.0.<k>.1/.2), unprivileged.
if(TARGET uet_uring)
  add_executable(uring_io_test uring_io_test.cc)
  target_link_libraries(uring_io_test PRIVATE uet_uring uet_io uet_engine uet_rocev2 uet_wire
                        GTest::gtest_main)
  uet_gtest(uring_io_test fast io uring)
endif()
