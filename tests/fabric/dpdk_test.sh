#!/usr/bin/env bash
# The provider on DPDK (FI_UETREF_HOST=dpdk): two processes joined by a net_memif pair (no
# hugepages), each owning its end as an ethdev port with its own address. Debian's unmodified
# fi_pingpong, every size of `-S all` with its data check, FI_TAGGED, over UET and over
# RoCEv2; then Open MPI's ofi MTL runs mpi_fabric (every byte checked) at 2 ranks over each,
# one rank per memif end (an MPMD command line gives each its EAL arguments). Each side's
# counters must name the DPDK host.
# Skipped (77) when the provider was built without DPDK.
# Usage: dpdk_test.sh PROVIDER_DIR MPI_FABRIC_BINARY
set -euo pipefail
export FI_PROVIDER_PATH="$1"
prog="$2"
# ldd's whole output first: under pipefail, `ldd | grep -q` can fail when grep exits at its
# first match and ldd dies of SIGPIPE.
if ! grep -q librte_ethdev <<< "$(ldd "$FI_PROVIDER_PATH/libuetref-fi.so")"; then
  echo "the provider was built without DPDK: skipped"
  exit 77
fi
export FI_LOG_LEVEL=warn FI_UETREF_STATS=1 FI_UETREF_HOST=dpdk
# A retry budget of seconds for a loaded machine, as fi_pingpong_test.sh gives its runs.
export FI_UETREF_TIMEOUT_MS=1000
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
source "$(dirname "$0")/pingpong.sh"
tag=$$
sock="$work/memif.sock"
vdev="socket=$sock,socket-abstract=no,bsize=9216"
eal() {  # ROLE LCORE
  echo "-l $2 --no-huge -m 512 --no-pci --no-telemetry --file-prefix=uetref$tag$1 --vdev=net_memif0,role=$1,$vdev"
}

# The host's counters at close name it: "host (dpdk) rx N tx N".
check_dpdk() {  # FILE WHAT
  local n
  n=$(grep -c 'host (dpdk) rx [1-9]' "$1" || true)
  [ "$n" -ge 1 ] || { echo "$2: no domain on the DPDK host moved frames"; cat "$1"; exit 1; }
}

port=$((20000 + tag % 20000))
for transport in uet rocev2; do
  export FI_UETREF_TRANSPORT=$transport
  rm -f "$sock"
  port=$((port + 1))
  pingpong "$transport" tagged "$port" 127.0.0.1 \
    -- env FI_UETREF_ADDR=10.0.0.1 FI_UETREF_EAL="$(eal server 0)" \
    -- env FI_UETREF_ADDR=10.0.0.2 FI_UETREF_EAL="$(eal client 1)"
  for f in server client; do
    check_dpdk "$work/$f" "fi_pingpong over $transport ($f)"
  done
  echo "fi_pingpong over $transport on memif: $pingpong_sizes sizes, data checked"
  sed -n '/^1m /p' "$work/client"

  rm -f "$sock"
  common=(-x FI_PROVIDER_PATH -x FI_LOG_LEVEL -x FI_UETREF_STATS -x FI_UETREF_HOST -x FI_UETREF_TRANSPORT
          -x FI_UETREF_TIMEOUT_MS)
  if ! timeout 300 mpirun --bind-to none --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include uetref \
      --mca btl self,vader \
      -np 1 "${common[@]}" -x FI_UETREF_ADDR=10.0.0.1 -x "FI_UETREF_EAL=$(eal server 0)" "$prog" check : \
      -np 1 "${common[@]}" -x FI_UETREF_ADDR=10.0.0.2 -x "FI_UETREF_EAL=$(eal client 1)" "$prog" check \
      > "$work/mpi" 2>&1; then
    cat "$work/mpi"; echo "mpi_fabric over $transport on memif failed"; exit 1
  fi
  grep -q "# 2 ranks: every byte checked, all correct" "$work/mpi" || { cat "$work/mpi"; exit 1; }
  n=$(grep -c 'host (dpdk) rx [1-9]' "$work/mpi" || true)
  [ "$n" = 2 ] || { cat "$work/mpi"; echo "MPI over $transport: $n ranks on the DPDK host, want 2"; exit 1; }
  echo "mpi_fabric over $transport on memif, 2 ranks: every byte checked"
  grep -E "^(8|65536|1048576) " "$work/mpi" | head -3
done
