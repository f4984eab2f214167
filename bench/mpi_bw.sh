#!/usr/bin/env bash
# One run of the MPI 1 MiB bandwidth comparisons in README.md ("MPI over the libfabric
# provider"), 2 ranks of mpi_fabric bench (osu_bw's method) through Open MPI's ofi MTL:
#   mpi_bw.sh BUILD memif [VAR=VALUE ...]     over uetref on DPDK, one rank per end of a
#                                             net_memif pair; each VAR=VALUE
#                                             (FI_UETREF_RENDEZVOUS=read, ...) to both ranks
#   mpi_bw.sh BUILD perf [FLAG ...]           uet-perf's 1 MiB WRITEs (-s 1048576 -n 500) on
#                                             the same kind of pair, FLAGs to the client
#   mpi_bw.sh BUILD loopback PROVIDER [VAR=VALUE ...]   over PROVIDER (uetref, "tcp;ofi_rxm")
#                                             on loopback (uetref: io_uring), and the 8-byte
#                                             ping-pong latency; with SIZES="8 1048576" in the
#                                             environment, those rows alone (seconds, not minutes)
# Prints one line: "<what> 1 MiB: <MB/s> MB/s" (MB = 10^6 B), the figure the tables quote.
set -euo pipefail
build=$1 what=$2
shift 2
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
sock=$work/m.sock
V="socket=$sock,socket-abstract=no,bsize=9216"
EAL="--no-huge -m 512 --no-pci --no-telemetry"
tag=$$
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

if [ "$what" = perf ]; then
  "$build/bin/uet-perf" --server -- $EAL -l 0 --file-prefix=s$tag \
    --vdev=net_memif0,role=server,$V > "$work/server" 2>&1 &
  "$build/bin/uet-perf" --client=127.0.0.1 -s 1048576 -n 500 "$@" \
    -- $EAL -l 1 --file-prefix=c$tag --vdev=net_memif0,role=client,$V > "$work/client" 2>&1
  gbps=$(awk '/BW average/ {getline; print $3; exit}' "$work/client")
  [ -n "$gbps" ] || { cat "$work/client" "$work/server"; exit 1; }
  echo "uet-perf WRITE 1 MiB: $(awk -v g="$gbps" 'BEGIN {printf "%.0f", g * 1000 / 8}') MB/s"
  exit 0
fi

bandwidth() {  # the 1 MiB row of the uni-directional table
  awk '/uni-directional bandwidth/ {u = 1} /bi-directional/ {u = 0}
       u && $1 == 1048576 {print $2}' "$work/mpi"
}

if [ "$what" = loopback ]; then
  provider=$1
  shift
  xs=(-x FI_PROVIDER_PATH="$build/lib")
  for kv in "$@"; do xs+=(-x "$kv"); done
  mpirun -np 2 --bind-to none --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include "$provider" \
    --mca btl self,vader "${xs[@]}" "$build/bin/mpi_fabric" bench ${SIZES:-} > "$work/mpi" 2>&1 ||
    { cat "$work/mpi"; exit 1; }
  mbs=$(bandwidth)
  lat=$(awk '/ping-pong/ {p = 1} /bandwidth/ {p = 0} p && $1 == 8 {print $2}' "$work/mpi")
  [ -n "$mbs$lat" ] || { cat "$work/mpi"; exit 1; }
  echo "MPI over $provider ${*:-defaults} 1 MiB: ${mbs:--} MB/s, 8 B latency: ${lat:--} us"
  exit 0
fi

xs=(-x FI_PROVIDER_PATH="$build/lib" -x FI_UETREF_HOST=dpdk)
for kv in "$@"; do xs+=(-x "$kv"); done
mpirun --bind-to none --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include uetref \
  --mca btl self,vader \
  -np 1 "${xs[@]}" -x FI_UETREF_ADDR=10.0.0.1 \
  -x "FI_UETREF_EAL=$EAL -l 0 --file-prefix=r0$tag --vdev=net_memif0,role=server,$V" \
  "$build/bin/mpi_fabric" bench : \
  -np 1 "${xs[@]}" -x FI_UETREF_ADDR=10.0.0.2 \
  -x "FI_UETREF_EAL=$EAL -l 1 --file-prefix=r1$tag --vdev=net_memif0,role=client,$V" \
  "$build/bin/mpi_fabric" bench > "$work/mpi" 2>&1 || { cat "$work/mpi"; exit 1; }
mbs=$(bandwidth)
[ -n "$mbs" ] || { cat "$work/mpi"; exit 1; }
echo "MPI over uetref on memif ${*:-defaults} 1 MiB: $mbs MB/s"
