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
# A retry budget of seconds for a loaded machine, as fi_pingpong_test.sh gives its runs.
export FI_UETREF_TIMEOUT_MS=1000
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
source "$(dirname "$0")/pingpong.sh"
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
  pingpong "MTU $mtu" tagged "$port" "$net.1" \
    -- env FI_UETREF_ADDR="$net.1" ip netns exec "$na" \
    -- env FI_UETREF_ADDR="$net.2" ip netns exec "$nb"
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
