#!/usr/bin/env bash
# libfabric's own fi_pingpong (Debian's libfabric-bin, unmodified) over the uetref provider:
# fi_info lists it, then a server and a client ping-pong every size of `-S all` (0 B .. 6 MiB)
# with fi_pingpong's data check (-c), as FI_MSG and as FI_TAGGED, on loopback; FI_TAGGED again
# without the UDP offloads (GSO, GRO, gathered payloads), over 16 source ports.
# Usage: fi_pingpong_test.sh PROVIDER_DIR
set -euo pipefail
export FI_PROVIDER_PATH="$1"
export FI_LOG_LEVEL=warn
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

fi_info -p uetref > "$work/info"
grep -q "provider: uetref" "$work/info" || { echo "fi_info does not list uetref"; cat "$work/info"; exit 1; }
grep -q "type: FI_EP_RDM" "$work/info" || { echo "uetref offers no FI_EP_RDM"; exit 1; }

# A control port of our own (fi_pingpong's side channel), so parallel runs do not collide.
port=$((20000 + $$ % 20000))
for run in "msg 1 4" "tagged 1 4" "tagged 0 16"; do
  read -r mode offload sockets <<< "$run"
  export FI_UETREF_UDP_OFFLOAD=$offload FI_UETREF_EV_SOCKETS=$sockets
  port=$((port + 1))
  timeout 120 fi_pingpong -p uetref -e rdm -m "$mode" -S all -c -B "$port" > "$work/server" 2>&1 &
  server=$!
  # The client connects once the server listens: retry the connection, not a sleep.
  ok=0
  for _ in $(seq 1 100); do
    if timeout 120 fi_pingpong -p uetref -e rdm -m "$mode" -S all -c -P "$port" 127.0.0.1 \
        > "$work/client" 2>&1; then ok=1; break; fi
    grep -q "Connection refused" "$work/client" || break
  done
  wait "$server" || { echo "$mode: server failed"; cat "$work/server"; exit 1; }
  [ "$ok" = 1 ] || { echo "$mode: client failed"; cat "$work/client"; exit 1; }
  # Every size of -S all, 0 B to 6 MiB, completed its 10 round trips on both sides.
  for f in server client; do
    rows=$(grep -cE '^[0-9]+[km]?\s+10\s+=10\s' "$work/$f" || true)
    [ "$rows" -ge 40 ] || { echo "$mode: $f reported $rows sizes"; cat "$work/$f"; exit 1; }
    grep -qE '^6m\s+10\s+=10' "$work/$f" || { echo "$mode: $f lacks 6 MiB"; exit 1; }
  done
  echo "$mode, udp_offload $offload, ev_sockets $sockets: $(grep -cE '^[0-9]+[km]?\s+10\s+=10\s' "$work/client") sizes, data checked"
  sed -n '1p;/^4k /p;/^1m /p' "$work/client"
done
