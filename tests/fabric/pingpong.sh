# Sourced by the fabric tests: one fi_pingpong server and client over the uetref provider, every
# size of `-S all` with fi_pingpong's data check (-c), and both sides' sizes checked.
#
# pingpong LABEL MODE PORT SERVER_ADDR -- SERVER_PREFIX... -- CLIENT_PREFIX...
#   Each prefix is what runs before fi_pingpong on that side (env assignments through `env`,
#   `ip netns exec NS`); empty for none. Writes $work/server and $work/client, and the sizes
#   the client reported to $pingpong_sizes; exits the test with the reason and the output when
#   a side fails or misses a size.
pingpong() {
  local label=$1 mode=$2 port=$3 addr=$4
  shift 4
  [ $# -gt 0 ] && [ "$1" = -- ] && shift
  local srv=() cli=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do srv+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  cli=("$@")
  timeout 120 "${srv[@]}" fi_pingpong -p uetref -e rdm -m "$mode" -S all -c -B "$port" \
    > "$work/server" 2>&1 &
  local server=$! ok=0
  # The client connects once the server listens: retry the connection, not a sleep.
  for _ in $(seq 1 100); do
    if timeout 120 "${cli[@]}" fi_pingpong -p uetref -e rdm -m "$mode" -S all -c -P "$port" \
        "$addr" > "$work/client" 2>&1; then
      ok=1
      break
    fi
    grep -q "Connection refused" "$work/client" || break
  done
  wait "$server" || { echo "$label: server failed"; cat "$work/server"; exit 1; }
  [ "$ok" = 1 ] || { echo "$label: client failed"; cat "$work/client"; exit 1; }
  # Every size of -S all, 0 B to 6 MiB, completed its 10 round trips on both sides.
  local f rows
  for f in server client; do
    rows=$(grep -cE '^[0-9]+[km]?\s+10\s+=10\s' "$work/$f" || true)
    [ "$rows" -ge 40 ] || { echo "$label: $f reported $rows sizes"; cat "$work/$f"; exit 1; }
    grep -qE '^6m\s+10\s+=10' "$work/$f" || { echo "$label: $f lacks 6 MiB"; exit 1; }
  done
  pingpong_sizes=$rows
}
