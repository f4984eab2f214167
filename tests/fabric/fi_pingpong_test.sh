#!/usr/bin/env bash
# libfabric's own fi_pingpong (Debian's libfabric-bin, unmodified) over the uetref provider:
# fi_info lists it, then a server and a client ping-pong every size of `-S all` (0 B .. 6 MiB)
# with fi_pingpong's data check (-c), as FI_MSG and as FI_TAGGED, on loopback; FI_TAGGED again
# without the UDP offloads (GSO, GRO, gathered payloads), over 16 source ports; and FI_TAGGED
# with every frame sealed (FI_UETREF_TSS_KEY_FILE, spec/uet.md §5), the engines' counters
# showing frames sealed and opened and none dropped; then FI_MSG and FI_TAGGED over RoCEv2
# (FI_UETREF_TRANSPORT=rocev2: the RC engine, messages eager and by rendezvous, the counters
# showing both). A missing key file and an FI_UETREF_TIMEOUT_MS out of range are refused by
# name.
# Usage: fi_pingpong_test.sh PROVIDER_DIR
set -euo pipefail
export FI_PROVIDER_PATH="$1"
export FI_LOG_LEVEL=warn
# A machine shared by parallel builds deschedules either process for longer than the default
# retry budget (RoCEv2's ~0.5 s ended a run "flushed" after its timeouts): each run gets a
# budget of seconds through the provider's variable (UET: RTO up to 1 s, ~5.5 s in all;
# RoCEv2: 1.07 s ACK timeouts, ~7.5 s), which the counters below confirm.
export FI_UETREF_TIMEOUT_MS=1000
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
source "$(dirname "$0")/pingpong.sh"

fi_info -p uetref > "$work/info"
grep -q "provider: uetref" "$work/info" || { echo "fi_info does not list uetref"; cat "$work/info"; exit 1; }
grep -q "type: FI_EP_RDM" "$work/info" || { echo "uetref offers no FI_EP_RDM"; exit 1; }

# A control port of our own (fi_pingpong's side channel), so parallel runs do not collide.
port=$((20000 + $$ % 20000))
printf 'sdi=0x5e1 an=0 mode=cluster key=%s\n' "$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')" \
  > "$work/keys.txt"
for run in "msg 1 4 - uet" "tagged 1 4 - uet" "tagged 0 16 - uet" "tagged 1 4 $work/keys.txt uet" \
           "msg 1 4 - rocev2" "tagged 1 4 - rocev2"; do
  read -r mode offload sockets keys transport <<< "$run"
  export FI_UETREF_UDP_OFFLOAD=$offload FI_UETREF_EV_SOCKETS=$sockets FI_UETREF_TRANSPORT=$transport
  if [ "$keys" = - ]; then
    unset FI_UETREF_TSS_KEY_FILE FI_UETREF_STATS
  else
    export FI_UETREF_TSS_KEY_FILE=$keys FI_UETREF_STATS=1
  fi
  [ "$transport" = rocev2 ] && export FI_UETREF_STATS=1
  port=$((port + 1))
  pingpong "$mode" "$mode" "$port" 127.0.0.1
  if [ "$keys" != - ]; then
    for f in server client; do
      line=$(grep -o 'tss sealed [0-9]* opened [0-9]* dropped [0-9]* clear refused [0-9]*' "$work/$f" | tail -1)
      read -r _ _ sealed _ opened _ dropped _ _ clear <<< "$line"
      if [ -z "$line" ] || [ "$sealed" -lt 1000 ] || [ "$opened" -lt 1000 ] || [ "$dropped" != 0 ] \
          || [ "$clear" != 0 ]; then
        echo "sealed: $f counters: '$line'"; cat "$work/$f"; exit 1
      fi
    done
    echo "sealed: client $(grep -o 'tss sealed [0-9]* opened [0-9]*' "$work/client" | tail -1)"
    grep -q "; max rto 1000 ms$" "$work/client" || { echo "uet: not FI_UETREF_TIMEOUT_MS's RTO"; exit 1; }
  fi
  if [ "$transport" = rocev2 ]; then
    # Both sides ran the RC engine, and -S all sent messages both eager and by rendezvous.
    for f in server client; do
      line=$(grep -o 'messages eager [0-9]*/[0-9]* rendezvous [0-9]*/[0-9]*' "$work/$f" | tail -1)
      read -r _ _ eager _ rdv <<< "$line"
      if [ -z "$line" ] || [ "${eager%%/*}" -lt 100 ] || [ "${rdv%%/*}" -lt 100 ]; then
        echo "rocev2: $f counters: '$line'"; cat "$work/$f"; exit 1
      fi
    done
    echo "rocev2: client $(grep -o 'messages eager [0-9/]* rendezvous [0-9/]*' "$work/client")"
    # 4.096 us x 2^18: the first ACK timeout of at least FI_UETREF_TIMEOUT_MS.
    grep -q "; ack timeout 1073 ms$" "$work/client" || { echo "rocev2: not FI_UETREF_TIMEOUT_MS's timeout"; exit 1; }
  fi
  echo "$mode over $transport, udp_offload $offload, ev_sockets $sockets, keys $keys: $(grep -cE '^[0-9]+[km]?\s+10\s+=10\s' "$work/client") sizes, data checked"
  sed -n '1p;/^4k /p;/^1m /p' "$work/client"
done
unset FI_UETREF_TRANSPORT FI_UETREF_STATS

# A variable the domain refuses: the server's domain fails (fi_pingpong opens it once
# connected) with a message naming the variable, and the client fails with it.
refused() {  # refused VAR=VALUE MESSAGE
  local server
  port=$((port + 1))
  timeout 60 env "$1" fi_pingpong -p uetref -e rdm -m tagged -S 64 -B "$port" \
    > "$work/refused_server" 2>&1 &
  server=$!
  for _ in $(seq 1 100); do
    if timeout 60 env "$1" fi_pingpong -p uetref -e rdm -m tagged -S 64 -P "$port" 127.0.0.1 \
        > "$work/refused_client" 2>&1; then
      echo "$1 was not refused"; cat "$work/refused_client"; exit 1
    fi
    grep -q "Connection refused" "$work/refused_client" || break
  done
  if wait "$server"; then echo "the server ran with $1"; exit 1; fi
  grep -qF "$2" "$work/refused_server" || { echo "no message '$2'"; cat "$work/refused_server"; exit 1; }
  echo "$1 refused: $2"
}
refused FI_UETREF_TSS_KEY_FILE="$work/no-such-keys.txt" \
  "FI_UETREF_TSS_KEY_FILE: key file $work/no-such-keys.txt: cannot be read"
refused FI_UETREF_TIMEOUT_MS=49 "FI_UETREF_TIMEOUT_MS=49 out of range: 50..60000"
