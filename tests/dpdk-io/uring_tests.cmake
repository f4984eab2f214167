# The io_uring backend's tests: real UDP sockets on loopback (127.0.<k>.1/.2), unprivileged.
if(TARGET uet_uring)
  add_executable(uring_io_test uring_io_test.cc)
  target_link_libraries(uring_io_test PRIVATE uet_uring uet_io uet_engine uet_rocev2 uet_wire
                        GTest::gtest_main)
  uet_gtest(uring_io_test fast io uring)
endif()

# uet-perf end to end over io_uring: a server and a client process on loopback (127.77.K.1/.2),
# both transports, every byte checked (perf_pair_test.py --dev=uring): writes, reads (the
# client reads the server's region), sends (into receive buffers the server posts) and
# bidirectional writes (perftest -b: both sides write and each checks what it received).
if(Python3_Interpreter_FOUND AND TARGET uet-perf)
  foreach(_transport uet rocev2)
    foreach(_variant write read send bidir)
      set(_name perf_pair_uring_${_transport}_${_variant})
      set(_args --op=${_variant})
      set(_timeout 90)
      if(_variant STREQUAL "write")
        set(_name perf_pair_uring_${_transport})
        set(_timeout 60)
      elseif(_variant STREQUAL "bidir")
        set(_args --bidir)
      endif()
      add_test(NAME ${_name}
               COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/perf_pair_test.py
                       $<TARGET_FILE:uet-perf> --dev=uring --transport=${_transport} ${_args})
      set_tests_properties(${_name} PROPERTIES LABELS "fast;io;uring" TIMEOUT ${_timeout}
                           SKIP_RETURN_CODE 77)
    endforeach()
  endforeach()
  # Loss-free runs of uet-perf's io_uring defaults (bench/README.md "io_uring on loopback"):
  # 64 MB each way checked, 0 timeouts, 0 resends, 0 receive-socket drops; no rate asserted.
  foreach(_transport uet rocev2)
    set(_name perf_pair_uring_${_transport}_lossless)
    add_test(NAME ${_name}
             COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/perf_pair_test.py
                     $<TARGET_FILE:uet-perf> --dev=uring --transport=${_transport} --lossless)
    set_tests_properties(${_name} PROPERTIES LABELS "fast;io;uring" TIMEOUT 90
                         SKIP_RETURN_CODE 77)
  endforeach()
  # Zero-copy transmit forced on (IORING_OP_SENDMSG_ZC; bench/README.md "--uring_zc"): every
  # byte checked, every send's buffer back at its notification; skipped on kernels without it.
  foreach(_transport uet rocev2)
    set(_name perf_pair_uring_${_transport}_zc)
    add_test(NAME ${_name}
             COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/perf_pair_test.py
                     $<TARGET_FILE:uet-perf> --dev=uring --transport=${_transport} --uring-zc=on)
    set_tests_properties(${_name} PROPERTIES LABELS "fast;io;uring" TIMEOUT 60
                         SKIP_RETURN_CODE 77)
  endforeach()
  # Faults (perf_fault_test.py --uring, bench/README.md "Faults on real I/O"): the server
  # killed mid-transfer, and the client stalled so that the server never gets DONE.
  foreach(_fault kill ctrl-done)
    foreach(_transport uet rocev2)
      string(REPLACE "-" "_" _name perf_fault_uring_${_fault}_${_transport})
      add_test(NAME ${_name}
               COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/perf_fault_test.py
                       $<TARGET_FILE:uet-perf> --uring --transport=${_transport} --fault=${_fault})
      set_tests_properties(${_name} PROPERTIES LABELS "io;uring;fault" TIMEOUT 60
                           SKIP_RETURN_CODE 77)
    endforeach()
  endforeach()
  # TSS (spec/uet.md §5): every frame sealed with keys from one file; peers whose files hold
  # different keys, which must fail (bad tags at the server) within --timeout_s; server mode,
  # the client holding only its derived key (§5.3).
  foreach(_variant tss tss-wrong-key tss-server)
    string(REPLACE "-" "_" _name perf_pair_uring_uet_${_variant})
    add_test(NAME ${_name}
             COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/perf_pair_test.py
                     $<TARGET_FILE:uet-perf> --dev=uring --transport=uet --${_variant})
    set_tests_properties(${_name} PROPERTIES LABELS "fast;io;uring;tss" TIMEOUT 60
                         SKIP_RETURN_CODE 77)
  endforeach()
endif()
