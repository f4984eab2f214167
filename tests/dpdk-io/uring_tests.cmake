# The io_uring backend's tests: real UDP sockets on loopback (127.0.<k>.1/.2), unprivileged.
if(TARGET uet_uring)
  add_executable(uring_io_test uring_io_test.cc)
  target_link_libraries(uring_io_test PRIVATE uet_uring uet_io uet_engine uet_rocev2 uet_wire
                        GTest::gtest_main)
  uet_gtest(uring_io_test fast io uring)
endif()

# uet-perf end to end over io_uring: a server and a client process on loopback (127.77.K.1/.2),
# both transports, the server checking every byte (perf_pair_test.py --dev=uring).
if(Python3_Interpreter_FOUND AND TARGET uet-perf)
  foreach(_transport uet rocev2)
    add_test(NAME perf_pair_uring_${_transport}
             COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/perf_pair_test.py
                     $<TARGET_FILE:uet-perf> --dev=uring --transport=${_transport})
    set_tests_properties(perf_pair_uring_${_transport} PROPERTIES LABELS "fast;io;uring"
                         TIMEOUT 60 SKIP_RETURN_CODE 77)
  endforeach()
endif()

# READ and SEND through uet-perf (the client reads the server's region / sends into its posted
# receive buffers; both sides check the bytes).
if(Python3_Interpreter_FOUND AND TARGET uet-perf)
  foreach(_transport uet rocev2)
    foreach(_op read send)
      add_test(NAME perf_pair_uring_${_transport}_${_op}
               COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/perf_pair_test.py
                       $<TARGET_FILE:uet-perf> --dev=uring --transport=${_transport} --op=${_op})
      set_tests_properties(perf_pair_uring_${_transport}_${_op} PROPERTIES LABELS "fast;io;uring"
                           TIMEOUT 90 SKIP_RETURN_CODE 77)
    endforeach()
  endforeach()
endif()

# Bidirectional (perftest -b): both sides write at once and each checks what it received.
if(Python3_Interpreter_FOUND AND TARGET uet-perf)
  foreach(_transport uet rocev2)
    add_test(NAME perf_pair_uring_${_transport}_bidir
             COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/perf_pair_test.py
                     $<TARGET_FILE:uet-perf> --dev=uring --transport=${_transport} --bidir)
    set_tests_properties(perf_pair_uring_${_transport}_bidir PROPERTIES LABELS "fast;io;uring"
                         TIMEOUT 90 SKIP_RETURN_CODE 77)
  endforeach()
endif()
