#!/usr/bin/env bash
# Scale table: uet-ab permutations on k-ary fat-trees, one transport at a time, each run under
# /usr/bin/time -v; prints one markdown row per run: hosts, transport, wall, CPU (user +
# system: steadier than wall on a shared machine), events, events/s, peak RSS and RSS per host.
# bench/NOTES.md ("Scale") has the table this prints. EXTRA adds uet-ab flags to every run (a
# fabric beyond MemAvailable: --max_memory_gb=N; the progress line on stderr: --progress; stderr is the terminal's).
#
#   bench/scale.sh [BIN_DIR] [K...]      # default: build/bin, k = 8 16 24 32 52
#   BYTES=262144 TRANSPORTS="uet rocev2" bench/scale.sh build/bin 16 32
#   BYTES=65536 EXTRA="--progress" bench/scale.sh build/bin 64 160
set -euo pipefail
bin="${1:-build/bin}"
shift || true
ks=("$@")
[ "${#ks[@]}" -eq 0 ] && ks=(8 16 24 32 52)
bytes="${BYTES:-262144}"
transports="${TRANSPORTS:-uet rocev2}"
read -r -a extra <<< "${EXTRA:-}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

echo "| hosts | transport | wall (s) | CPU (s) | events (M) | M events/s | peak RSS (MiB) | KiB per host |"
echo "|---|---|---|---|---|---|---|---|"
for k in "${ks[@]}"; do
  for t in $transports; do
    /usr/bin/time -v -o "$tmp/time" "$bin/uet-ab" --scenario=permutation --topology=fattree \
      --k="$k" --bytes="$bytes" --transport="$t" --json="$tmp/run.json" "${extra[@]}" \
      > "$tmp/out"
    python3 - "$tmp/run.json" "$tmp/time" "$t" <<'EOF'
import json, re, sys
run = json.load(open(sys.argv[1]))[0]
time = open(sys.argv[2]).read()
rss_kib = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", time).group(1))
wall = time.split("Elapsed (wall clock) time (h:mm:ss or m:ss): ")[1].split()[0].split(":")
wall_s = sum(float(x) * 60 ** i for i, x in enumerate(reversed(wall)))
cpu_s = sum(float(re.search(rf"{w} time \(seconds\): ([0-9.]+)", time).group(1))
            for w in ("User", "System"))
hosts = run["params"]["hosts"]
print(f"| {hosts} | {sys.argv[3]} | {wall_s:.2f} | {cpu_s:.2f} | {run['events'] / 1e6:.1f} | "
      f"{run['events'] / 1e6 / wall_s:.2f} | {rss_kib / 1024:.0f} | {rss_kib / hosts:.1f} |")
EOF
  done
done
