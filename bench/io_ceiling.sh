#!/bin/bash
# io_ceiling.sh: what the device path carries (dpdk-testpmd, txonly -> rxonly) next to what
# uet-perf moves over it, UET and RoCEv2, on the same device, run alternately in one go, with
# the ratios per round and their medians (bench/README.md, "Against the device's
# ceiling"). Devices: memif (two processes, --no-huge) and af_packet on a veth pair between two
# network namespaces the script creates and removes (root). Every uet-perf run checks its bytes
# at the server; a run that fails the check, or does not finish, is reported as such.
#
#   bench/io_ceiling.sh [--build=DIR] [--rounds=N] [--seconds=S] [--writes=N] [--size=BYTES]
#                       [--dev=memif,af_packet] [--lanes=1,2] [--lat] [--out=FILE.jsonl]
#
# --lat adds the latency rows: the device's round trip (uet-perf --pingpong through a testpmd
# macswap reflector, 64-byte frames) against uet-perf --lat (one 64-byte write in flight) for
# each transport, as the ratio of their p50s.
# --lanes=1,2 adds a uet-perf --lcores-io=2 row per transport (two engines per process, one
# per lcore, two queue pairs; the ceiling row stays testpmd with one queue). Frames on memif:
# 4 KiB payloads (--size writes cut into --mtu=4096 packets) against testpmd's 4160-byte
# frames; on af_packet, whose PMD reports a 1518-byte maximum, 1 KiB payloads (--mtu=1024)
# against 1088-byte frames.
set -u
BUILD=build; ROUNDS=3; SECONDS_TP=4; WRITES=3000; SIZE=1048576; DEVS=memif; LANES=1; OUT=""; LAT=""
for a in "$@"; do
  case "$a" in
    --build=*) BUILD=${a#*=} ;;
    --rounds=*) ROUNDS=${a#*=} ;;
    --seconds=*) SECONDS_TP=${a#*=} ;;
    --writes=*) WRITES=${a#*=} ;;
    --size=*) SIZE=${a#*=} ;;
    --dev=*) DEVS=${a#*=} ;;
    --lanes=*) LANES=${a#*=} ;;
    --out=*) OUT=${a#*=} ;;
    --lat) LAT=1 ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "io_ceiling.sh: unknown argument $a (see --help)" >&2; exit 2 ;;
  esac
done
for v in ROUNDS SECONDS_TP WRITES SIZE; do
  if ! [[ ${!v} =~ ^[0-9]+$ ]] || [ "${!v}" -lt 1 ]; then
    echo "io_ceiling.sh: --${v,,} must be a positive integer (got ${!v})" >&2; exit 2
  fi
done
UET_PERF=$BUILD/bin/uet-perf
TESTPMD=$(command -v dpdk-testpmd || true)
[ -x "$UET_PERF" ] || { echo "io_ceiling.sh: $UET_PERF not built (cmake --build $BUILD)" >&2; exit 2; }
[ -n "$TESTPMD" ] || { echo "io_ceiling.sh: dpdk-testpmd not found (apt install dpdk)" >&2; exit 2; }
WORK=$(mktemp -d /tmp/io_ceiling.XXXXXX)
NS_A=ceil_a$$; NS_B=ceil_b$$
cleanup() {
  pkill -P $$ 2>/dev/null
  ip netns del "$NS_A" 2>/dev/null; ip netns del "$NS_B" 2>/dev/null
  [ -n "${IO_CEILING_KEEP:-}" ] && echo "io_ceiling: logs kept in $WORK" >&2 || rm -rf "$WORK"
}
trap cleanup EXIT
EAL="--no-huge -m 1024 --no-pci --no-telemetry"

# Device arguments per side: "server" or "client".
vdev() {  # dev side
  case "$1" in
    memif) echo "--vdev=net_memif0,role=$2,socket=$WORK/m.sock,socket-abstract=no,bsize=9216" ;;
    af_packet) [ "$2" = server ] && echo "--vdev=net_af_packet0,iface=ca$$" \
                                 || echo "--vdev=net_af_packet0,iface=cb$$" ;;
  esac
}
prefix() {  # dev side: the command prefix (the namespace for af_packet)
  [ "$1" = af_packet ] && { [ "$2" = server ] && echo "ip netns exec $NS_A" || echo "ip netns exec $NS_B"; }
}
setup_af_packet() {
  [ "$(id -u)" = 0 ] || { echo "io_ceiling.sh: af_packet needs root (network namespaces)" >&2; return 1; }
  ip netns add "$NS_A" && ip netns add "$NS_B" &&
    ip link add ca$$ type veth peer name cb$$ &&
    ip link set ca$$ netns "$NS_A" && ip link set cb$$ netns "$NS_B" &&
    ip -n "$NS_A" link set ca$$ mtu 9000 up && ip -n "$NS_B" link set cb$$ mtu 9000 up &&
    ip -n "$NS_A" link set lo up && ip -n "$NS_B" link set lo up &&
    ip -n "$NS_A" addr add 192.168.78.1/24 dev ca$$ && ip -n "$NS_B" addr add 192.168.78.2/24 dev cb$$
}

payload() { [ "$1" = af_packet ] && echo 1024 || echo 4096; }  # dev -> payload bytes per packet

wait_for() {  # file pattern timeout_s
  local i
  for ((i = 0; i < $3 * 20; i++)); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done
  return 1
}

# testpmd txonly (client side) -> rxonly (server side): the median Rx-pps of the server's
# stats lines once both run. (--mbuf-size must come before --txpkts, which it bounds.)
run_testpmd() {  # dev -> prints Mpps or "failed"
  local dev=$1 log=$WORK/tp_server.log
  rm -f "$WORK/m.sock"
  $(prefix $dev server) timeout -s INT $((SECONDS_TP + 6)) "$TESTPMD" --lcores=0@0,1@0 $EAL \
      --file-prefix=tps$$ $(vdev $dev server) -- --forward-mode=rxonly --auto-start \
      --stats-period=1 --total-num-mbufs=16384 --mbuf-size=9344 \
      --no-mlockall </dev/null >"$log" 2>&1 &
  local srv=$!
  wait_for "$log" "Checking link statuses" 10
  if [ "$dev" = memif ]; then
    for ((i = 0; i < 200; i++)); do [ -S "$WORK/m.sock" ] && break; sleep 0.05; done
  fi
  $(prefix $dev client) timeout -s INT $((SECONDS_TP + 2)) "$TESTPMD" --lcores=0@1,1@1 $EAL \
      --file-prefix=tpc$$ $(vdev $dev client) -- --mbuf-size=9344 --forward-mode=txonly \
      --txpkts=$(($(payload $dev) + 64)) --auto-start --stats-period=1 --total-num-mbufs=16384 --no-mlockall \
      </dev/null >"$WORK/tp_client.log" 2>&1
  wait $srv
  python3 - "$log" <<'EOF'
import re, statistics, sys
pps = [int(x) for x in re.findall(r"Rx-pps:\s+(\d+)", open(sys.argv[1]).read())]
pps = [p for p in pps if p > 0]
print(f"{statistics.median(pps) / 1e6:.3f}" if len(pps) >= 2 else "failed")
EOF
}

# One uet-perf pair; prints "Mpps Gbps timeouts resent verify" of the client's JSON, Mpps being
# payload packets delivered per second (goodput: resent packets not counted).
run_perf() {  # dev transport lanes
  local dev=$1 t=$2 lanes=$3 port=$((20000 + RANDOM % 12000)) slog=$WORK/perf_server.log
  local cj=$WORK/perf_client.json lc0=0 lc1=1 extra="--mtu=$(payload $dev)"
  rm -f "$WORK/m.sock" "$cj"
  [ "$lanes" -gt 1 ] && { lc0=0-1; lc1=0-1; }
  local ctl=127.0.0.1
  [ "$dev" = af_packet ] && ctl=192.168.78.1
  $(prefix $dev server) "$UET_PERF" --server --oob_port=$port --ip=10.0.0.1 --mbufs=8191 \
      --timeout_s=60 --transport=$t --lcores_io=$lanes $extra -- $EAL -l $lc0 \
      --file-prefix=ups$$ $(vdev $dev server) >"$slog" 2>&1 &
  local srv=$!
  wait_for "$slog" ready 20 || { kill $srv 2>/dev/null; echo "failed - - - server-not-ready"; return; }
  if [ "$dev" = memif ]; then
    for ((i = 0; i < 200; i++)); do [ -S "$WORK/m.sock" ] && break; sleep 0.05; done
  fi
  $(prefix $dev client) "$UET_PERF" --client=$ctl --oob_port=$port --ip=10.0.0.2 --mbufs=8191 \
      --timeout_s=60 --transport=$t --lcores_io=$lanes -s "$SIZE" -n "$WRITES" $extra \
      --json="$cj" -- $EAL -l $lc1 --file-prefix=upc$$ $(vdev $dev client) \
      >"$WORK/perf_client.log" 2>&1
  wait $srv
  python3 - "$cj" "$(payload $dev)" <<'EOF'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception:
    print("failed - - - no-result"); sys.exit()
# Goodput in data packets per second: resent packets are not counted.
mpps = d["total_bytes"] / int(sys.argv[2]) / d["seconds"] / 1e6
print(f"{mpps:.3f} {d['bw_gbps']:.2f} {d['timeouts']} {d['retransmitted']} {d['verify']}")
EOF
}

# The device's round trip: testpmd reflects (macswap) what uet-perf --pingpong sends; prints
# the p50 in us, or "failed".
run_pingpong() {  # dev
  local dev=$1 log=$WORK/pp_server.log pj=$WORK/pp.json
  rm -f "$WORK/m.sock" "$pj"
  $(prefix $dev server) timeout -s INT 60 "$TESTPMD" --lcores=0@0,1@0 $EAL --file-prefix=tpp$$ \
      $(vdev $dev server) -- --mbuf-size=9344 --forward-mode=macswap --auto-start \
      --stats-period=10 --total-num-mbufs=16384 --no-mlockall </dev/null >"$log" 2>&1 &
  local srv=$!
  wait_for "$log" "Checking link statuses" 10
  if [ "$dev" = memif ]; then
    for ((i = 0; i < 200; i++)); do [ -S "$WORK/m.sock" ] && break; sleep 0.05; done
  fi
  $(prefix $dev client) "$UET_PERF" --client=127.0.0.1 --pingpong --ip=10.0.0.2 \
      --neigh=10.0.0.1=02:00:00:00:00:01 -s 64 -n "$WRITES" --timeout_s=20 --json="$pj" -- \
      $EAL -l 1 --file-prefix=upp$$ $(vdev $dev client) >"$WORK/pp_client.log" 2>&1
  kill -INT $srv 2>/dev/null; wait $srv
  python3 -c "import json; print(f\"{json.load(open('$pj'))['p50_us']:.2f}\")" 2>/dev/null || echo failed
}

# uet-perf --lat, 64-byte writes; prints "p50 p99" in us, or "failed".
run_lat() {  # dev transport
  local dev=$1 t=$2 port=$((20000 + RANDOM % 12000)) slog=$WORK/lat_server.log cj=$WORK/lat.json
  rm -f "$WORK/m.sock" "$cj"
  local ctl=127.0.0.1
  [ "$dev" = af_packet ] && ctl=192.168.78.1
  $(prefix $dev server) "$UET_PERF" --server --oob_port=$port --ip=10.0.0.1 --timeout_s=60 \
      --transport=$t -- $EAL -l 0 --file-prefix=uls$$ $(vdev $dev server) >"$slog" 2>&1 &
  local srv=$!
  wait_for "$slog" ready 20 || { kill $srv 2>/dev/null; echo "failed -"; return; }
  if [ "$dev" = memif ]; then
    for ((i = 0; i < 200; i++)); do [ -S "$WORK/m.sock" ] && break; sleep 0.05; done
  fi
  $(prefix $dev client) "$UET_PERF" --client=$ctl --oob_port=$port --ip=10.0.0.2 --timeout_s=60 \
      --transport=$t --lat -s 64 -n "$WRITES" --json="$cj" -- $EAL -l 1 --file-prefix=ulc$$ \
      $(vdev $dev client) >"$WORK/lat_client.log" 2>&1
  wait $srv
  python3 -c "import json; l=json.load(open('$cj'))['latency_us']; print(f\"{l['p50']:.2f} {l['p99']:.2f}\")" \
      2>/dev/null || echo "failed -"
}

echo "io_ceiling: $(nproc) vCPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $ROUNDS rounds;" \
     "uet-perf -s $SIZE -n $WRITES; testpmd txonly for ${SECONDS_TP} s"
[ -n "$OUT" ] && : >"$OUT"
for dev in ${DEVS//,/ }; do
  case "$dev" in memif|af_packet) ;; *) echo "io_ceiling.sh: --dev: memif or af_packet, not $dev" >&2; exit 2 ;; esac
  if [ "$dev" = af_packet ]; then setup_af_packet || continue; fi
  declare -A ratios=()
  printf '\n%-10s %-5s %-14s %9s %9s %9s %7s %8s\n' device round run Mpps Gb/s ratio timeouts resent
  for ((r = 1; r <= ROUNDS; r++)); do
    tp=$(run_testpmd $dev)
    printf '%-10s %-5s %-14s %9s %9s %9s %7s %8s\n' $dev $r testpmd "$tp" - 1 - -
    for lanes in ${LANES//,/ }; do
      for t in uet rocev2; do
        read -r mpps gbps to rtx verify <<<"$(run_perf $dev $t $lanes)"
        name=$t; [ "$lanes" -gt 1 ] && name="$t x$lanes"
        ratio=-
        if [ "$verify" = ok ] && [ "$tp" != failed ]; then
          ratio=$(python3 -c "print(f'{$mpps / $tp:.2f}')")
          ratios["$name / testpmd"]+="$ratio "
        fi
        printf '%-10s %-5s %-14s %9s %9s %9s %7s %8s%s\n' $dev $r "$name" "$mpps" "$gbps" \
            "$ratio" "$to" "$rtx" "$([ "$verify" = ok ] || echo "  ($verify)")"
        [ -n "$OUT" ] && echo "{\"device\":\"$dev\",\"round\":$r,\"run\":\"$name\",\"mpps\":\"$mpps\",\"testpmd_mpps\":\"$tp\",\"timeouts\":\"$to\",\"resent\":\"$rtx\",\"verify\":\"$verify\"}" >>"$OUT"
      done
    done
  done
  if [ -n "$LAT" ]; then
    printf '\n%-10s %-5s %-14s %9s %9s %9s\n' device round "latency" "p50 us" "p99 us" "p50 ratio"
    for ((r = 1; r <= ROUNDS; r++)); do
      pp=$(run_pingpong $dev)
      printf '%-10s %-5s %-14s %9s %9s %9s\n' $dev $r "raw pingpong" "$pp" - 1
      for t in uet rocev2; do
        read -r p50 p99 <<<"$(run_lat $dev $t)"
        ratio=-
        if [ "$p50" != failed ] && [ "$pp" != failed ]; then
          ratio=$(python3 -c "print(f'{$p50 / $pp:.2f}')")
          ratios["$t --lat p50 / pingpong"]+="$ratio "
        fi
        printf '%-10s %-5s %-14s %9s %9s %9s\n' $dev $r "$t --lat" "$p50" "$p99" "$ratio"
      done
    done
  fi
  for name in "${!ratios[@]}"; do
    python3 -c "import statistics as s; v=[float(x) for x in '${ratios[$name]}'.split()]; print(f'$dev: $name median {s.median(v):.2f} over {len(v)} rounds ({min(v):.2f}..{max(v):.2f})')"
  done | sort
  unset ratios
done
