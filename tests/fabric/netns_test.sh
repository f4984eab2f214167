#!/usr/bin/env bash
# fi_pingpong (Debian's, unmodified) over the uetref provider between two network namespaces
# joined by a veth pair, each process bound to its end's address (FI_UETREF_ADDR): every size
# of `-S all` with the data check, FI_TAGGED. Twice: at MTU 9000, where a 4 KiB datagram fits
# and the UDP offloads (GSO over the veth, GRO at the socket) carry the bulk; and at MTU 1500,
# where it does not: the kernel fragments datagrams sent one by one, refuses a GSO send whose
# segments exceed the MTU, and the host must notice and go on without GSO. Then once more at
# MTU 9000 over RoCEv2 (FI_UETREF_TRANSPORT=rocev2): the RC engine between the namespaces.
# Needs CAP_NET_ADMIN to create namespaces: skipped (77) without it.
# Usage: netns_test.sh PROVIDER_DIR
set -euo pipefail
export FI_PROVIDER_PATH="$1"
export FI_LOG_LEVEL=warn FI_UETREF_STATS=1
tag=$$
na=uetfa$tag nb=uetfb$tag va=ufa$tag vb=ufb$tag
work=$(mktemp -d)
cleanup() {
  kill $(jobs -p) 2>/dev/null || true
  ip netns del "$na" 2>/dev/null || true
  ip netns del "$nb" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
if ! ip netns add "$na" 2>/dev/null; then
  echo "cannot create network namespaces (needs CAP_NET_ADMIN): skipped"
  exit 77
fi
ip netns add "$nb"
ip link add "$va" netns "$na" type veth peer name "$vb" netns "$nb"
# A subnet of 10/8 from the pid, so parallel runs do not share one.
net="10.$((90 + tag % 100)).$((tag / 100 % 250))"
ip -n "$na" addr add "$net.1/24" dev "$va"
ip -n "$nb" addr add "$net.2/24" dev "$vb"
ip -n "$na" link set lo up
ip -n "$nb" link set lo up

for run in "9000 uet" "1500 uet" "9000 rocev2"; do
  read -r mtu transport <<< "$run"
  export FI_UETREF_TRANSPORT=$transport
  ip -n "$na" link set "$va" mtu "$mtu" up
  ip -n "$nb" link set "$vb" mtu "$mtu" up
  port=$((20000 + (tag + mtu + ${#transport}) % 20000))
  FI_UETREF_ADDR="$net.1" timeout 120 ip netns exec "$na" \
    fi_pingpong -p uetref -e rdm -m tagged -S all -c -B "$port" > "$work/server" 2>&1 &
  server=$!
  # The client connects once the server listens: retry the connection, not a sleep.
  ok=0
  for _ in $(seq 1 100); do
    if FI_UETREF_ADDR="$net.2" timeout 120 ip netns exec "$nb" \
        fi_pingpong -p uetref -e rdm -m tagged -S all -c -P "$port" "$net.1" > "$work/client" 2>&1; then
      ok=1; break
    fi
    grep -q "Connection refused" "$work/client" || break
  done
  wait "$server" || { echo "MTU $mtu: server failed"; cat "$work/server"; exit 1; }
  [ "$ok" = 1 ] || { echo "MTU $mtu: client failed"; cat "$work/client"; exit 1; }
  for f in server client; do
    rows=$(grep -cE '^[0-9]+[km]?\s+10\s+=10\s' "$work/$f" || true)
    [ "$rows" -ge 40 ] || { echo "MTU $mtu: $f reported $rows sizes"; cat "$work/$f"; exit 1; }
    grep -qE '^6m\s+10\s+=10' "$work/$f" || { echo "MTU $mtu: $f lacks 6 MiB"; exit 1; }
  done
  # The host's counters at close (FI_UETREF_STATS): "gso SENDS/DATAGRAMS".
  gso=$(grep -ho 'gso [0-9]*/[0-9]*' "$work/client" | head -1)
  if [ "$transport" = rocev2 ]; then
    grep -q "(rocev2): " "$work/client" || { echo "rocev2: the client's domain was not RoCEv2"; cat "$work/client"; exit 1; }
  fi
  echo "MTU $mtu over $transport: $(grep -cE '^[0-9]+[km]?\s+10\s+=10\s' "$work/client") sizes, data checked; client $gso"
  sed -n '/^1m /p' "$work/client"
  sends=${gso#gso }; sends=${sends%/*}
  if [ "$mtu" = 9000 ]; then
    [ "$sends" -gt 100 ] || { echo "MTU 9000: GSO carried no bulk"; cat "$work/client"; exit 1; }
  else
    # The first group is refused (its segments exceed the MTU); then datagrams go one by one.
    [ "$sends" -le 1 ] || { echo "MTU 1500: GSO went on after the refusal"; cat "$work/client"; exit 1; }
  fi
done
