#!/usr/bin/env bash
# Installs exactly the Debian 12 packages this project builds and tests with.
# Idempotent: when every package is already installed it touches nothing and
# does not even refresh the package lists. Runs as root, or through sudo.
set -euo pipefail

# One line per package, with the part of the tree that needs it.
PACKAGES=(
  build-essential   # g++ 12, make
  cmake             # build system (3.25 on Debian 12)
  ninja-build       # fast parallel builds on 2 cores
  pkg-config        # finds libdpdk / liburing in later folders
  libabsl-dev       # Abseil: status, strings, flat_hash_map, flags
  libgtest-dev      # GoogleTest
  libgmock-dev      # GoogleMock (comes with GoogleTest)
  libbenchmark-dev  # Google Benchmark: bench/
  zlib1g-dev        # crc32() as the ICRC reference in tests, crc32_combine in dpdk-io/uring_io.cc
  libisal-dev       # ISA-L: the CRC-32 of the RoCEv2 ICRC, transport/wire/icrc.cc
  libssl-dev        # OpenSSL 3: CMAC (and the AES-256-GCM fallback) for TSS: transport/tss/
  libipsec-mb-dev   # Intel ipsec-mb: TSS's AES-256-GCM at line rate: transport/tss/
  libprotobuf-dev   # protobuf: Chakra execution traces, sim/trace/
  protobuf-compiler # protoc: sim/trace/chakra.proto
  python3           # spec/vectors/gen_vectors.py, the independent vector encoder
  python3-cryptography  # spec/vectors/gen_tss_vectors.py seals TSS vectors independently
  tshark            # independent decoder of our RoCEv2 frames: tests/wire/tshark_test.sh
  wireshark-dev     # Wireshark plugin API and WiresharkConfig.cmake: dissector/
  libwireshark-dev  # libwireshark (epan) headers and library: dissector/
  libglib2.0-dev    # GLib headers the Wireshark headers include: dissector/
  libgcrypt20-dev   # libgcrypt, Wireshark's crypto library: TSS decryption in dissector/tss.c
  dpdk              # dpdk-testpmd (the I/O ceiling in bench/) and the PMDs: dpdk-io/
  dpdk-dev          # DPDK 22.11 headers: dpdk-io/
  libdpdk-dev       # libdpdk.pc and the libraries: dpdk-io/
  liburing-dev      # io_uring UDP backend: dpdk-io/
  iproute2          # network namespaces, veth pairs and tc redirects in the dpdk-io tests
  gnuplot-nox       # uet-ab --plot renders its charts (SVG)
  libopenmpi-dev    # Open MPI: the simulator split over ranks, sim/mpi_ranks.cc
  openmpi-bin       # mpirun: tests/ab/mpi_test.py, uet-ab on several cores or machines
  libfabric-dev     # libfabric's provider headers (rdma/providers/fi_prov.h): fabric/
  libfabric-bin     # fi_info and fi_pingpong, real clients of the provider: tests/fabric/
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages already installed"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
  else
    echo "setup: need root or sudo to install: ${missing[*]}" >&2
    exit 1
  fi
fi

echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# wireshark-common asks whether non-root users may capture; answer no.
echo "wireshark-common wireshark-common/install-setuid boolean false" | $SUDO debconf-set-selections
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
