# The DPDK backend's tests (no NIC, no hugepages): dpdk_io_test in one process (neighbours,
# ARP, a UET write between two DpdkIo ports over a memif pair), and uet-perf end to end
# between two processes (perf_pair_test.py) over net_memif, over net_af_packet on a veth
# pair in two network namespaces and over net_tap in one (root only; skipped otherwise).
if(TARGET uet_dpdk)
  add_executable(dpdk_io_test dpdk_io_test.cc)
  target_link_libraries(dpdk_io_test PRIVATE uet_dpdk uet_io uet_engine uet_rocev2 uet_wire GTest::gtest_main)
  uet_gtest(dpdk_io_test fast io dpdk)

  # Several queue pairs per port, one FEP and one engine per queue, one lcore per lane.
  add_executable(dpdk_mq_test dpdk_mq_test.cc)
  target_link_libraries(dpdk_mq_test PRIVATE uet_dpdk uet_io uet_engine uet_wire GTest::gtest_main)
  uet_gtest(dpdk_mq_test fast io dpdk)

  if(Python3_Interpreter_FOUND AND TARGET uet-perf)
    set(_perf_cases
        "memif_uet\;--transport=uet\;--pcap"
        "memif_rocev2\;--transport=rocev2\;--pcap"
        "memif_uet_loss\;--transport=uet\;--loss=0.01"
        "memif_rocev2_loss\;--transport=rocev2\;--loss=0.01"
        "afpacket_uet\;--dev=afpacket\;--transport=uet"
        "afpacket_rocev2\;--dev=afpacket\;--transport=rocev2\;--pcap"
        # net_tap offers UDP TX checksum offload and verifies on receive (the DPDK backend's
        # offload path, as a NIC's).
        "tap_uet\;--dev=tap\;--transport=uet"
        "tap_rocev2\;--dev=tap\;--transport=rocev2"
        # Two queue pairs, engines and lcores per process (dpdk_io.h "Queues, lcores and FEPs").
        "memif_2q_uet\;--transport=uet\;--lcores-io=2\;--op=read"
        "memif_2q_rocev2\;--transport=rocev2\;--lcores-io=2"
        # TSS (spec/uet.md §5): sealed with one key file; different keys must fail in bounds.
        "memif_uet_tss\;--transport=uet\;--tss"
        "memif_uet_tss_wrong_key\;--transport=uet\;--tss-wrong-key"
        "memif_uet_tss_server\;--transport=uet\;--tss-server")
    foreach(_case IN LISTS _perf_cases)
      list(GET _case 0 _name)
      list(SUBLIST _case 1 -1 _args)
      add_test(NAME perf_pair_${_name}
               COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/perf_pair_test.py
                       $<TARGET_FILE:uet-perf> ${_args})
      # Each case pins its two processes to lcores 0 and 1: run them one at a time.
      set_tests_properties(perf_pair_${_name} PROPERTIES LABELS "io;dpdk;fast" TIMEOUT 120
                           SKIP_RETURN_CODE 77 RESOURCE_LOCK dpdk_lcores)
    endforeach()
    # Faults on real I/O (perf_fault_test.py, bench/README.md "Faults on real I/O"): a peer
    # killed (af_packet) or frozen (memif), a TX ring full for seconds, an af_packet link down
    # and up or down for good, a control connection stalled at DONE or at HELLO; the survivor ends its operations with an
    # error completion within its retry budget (or recovers and verifies), exits as it should,
    # and has every mbuf back in its pool.
    foreach(_fault kill memif-freeze stall linkflap linkdown ctrl-done ctrl-hello)
      foreach(_transport uet rocev2)
        string(REPLACE "-" "_" _name perf_fault_${_fault}_${_transport})
        add_test(NAME ${_name}
                 COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/perf_fault_test.py
                         $<TARGET_FILE:uet-perf> --transport=${_transport} --fault=${_fault})
        set_tests_properties(${_name} PROPERTIES LABELS "io;dpdk;fault" TIMEOUT 60
                             SKIP_RETURN_CODE 77 RESOURCE_LOCK dpdk_lcores)
      endforeach()
    endforeach()
  endif()
endif()
