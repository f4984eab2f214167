#!/usr/bin/env bash
# UET against RoCEv2 on the AI/HPC fabrics beyond the Clos: a ~1,000-host dragonfly, an 8x8x8
# torus and a rail-optimised fabric of 128 8-GPU servers, each with every link up and with
# FAILED links down (picked by the seed from the failure scenario's set: the dragonfly's global
# links, the torus's switch-to-switch links, the rail fabric's leaf-spine links). Per fabric it
# prints one markdown table: permutation min / p99 / max FCT, all-to-all and ring all-reduce
# busbw (nccl-tests' definition), UET, RoCEv2 and UET/RoCEv2, from one uet-ab process per
# workload that runs both transports on the same seed. A RoCEv2 run that the PFC watchdog
# stopped at a deadlock says so in its cell instead of a number. bench/NOTES.md
# ("Beyond the Clos") has the tables this prints.
#
#   bench/topologies.sh [BIN_DIR] [FABRIC...]    # default: build/bin, dragonfly torus rail
#   PERM_BYTES=1048576 A2A_RANKS=256 A2A_SIZE=32M AR_SIZE=16M FAILED=8 SEED=1 bench/topologies.sh
#   KEEP=DIR bench/topologies.sh     # also keeps each run's JSON and stdout as DIR/FABRIC_*
#
# Sizes are picked so that each uet-ab process (both transports) ends within about a minute on
# a 2-core machine: a 1 MiB permutation over every host, an all-to-all among A2A_RANKS ranks
# placed at random (every host's all-to-all is a million flows), a ring all-reduce over every
# host (hierarchical per rail on the rail fabric: 8 GPUs a server).
set -euo pipefail
bin="${1:-build/bin}"
shift || true
fabrics=("$@")
[ "${#fabrics[@]}" -eq 0 ] && fabrics=(dragonfly torus rail)
perm_bytes="${PERM_BYTES:-1048576}"
a2a_ranks="${A2A_RANKS:-256}"
a2a_size="${A2A_SIZE:-32M}"
ar_size="${AR_SIZE:-16M}"
failed="${FAILED:-8}"
seed="${SEED:-1}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

fabric_flags() {
  case "$1" in
    dragonfly) echo "--topology=dragonfly --df_p=4 --df_a=8 --df_h=4 --df_g=33" ;;
    torus) echo "--topology=torus --torus=8x8x8 --hosts_per_switch=2" ;;
    rail) echo "--topology=rail --rail_servers=128 --gpus_per_server=8 --rail_servers_per_leaf=32 --rail_spines=32" ;;
    *) echo "unknown fabric $1: dragonfly, torus or rail" >&2; exit 2 ;;
  esac
}

# run NAME FLAGS...: one uet-ab process, its JSON in $tmp/NAME.json and stdout in $tmp/NAME.out.
run() {
  local name="$1"
  shift
  "$bin/uet-ab" --seed="$seed" --json="$tmp/$name.json" "$@" > "$tmp/$name.out"
}

for fabric in "${fabrics[@]}"; do
  read -r -a flags <<< "$(fabric_flags "$fabric")"
  for down in 0 "$failed"; do
    if [ "$down" -eq 0 ]; then
      run "perm$down" --scenario=permutation --bytes="$perm_bytes" "${flags[@]}"
    else
      run "perm$down" --scenario=failure --failed_links="$down" --degrade=0 \
        --bytes="$perm_bytes" "${flags[@]}"
    fi
    run "a2a$down" --scenario=collective --coll=alltoall --ranks="$a2a_ranks" \
      --placement=random --sizes="$a2a_size" --coll_failed_links="$down" --degrade=0 "${flags[@]}"
    run "ar$down" --scenario=collective --coll=allreduce --algo=ring --sizes="$ar_size" \
      --coll_failed_links="$down" --degrade=0 "${flags[@]}"
  done
  python3 - "$tmp" "$fabric" "$failed" "$perm_bytes" "$a2a_ranks" "$a2a_size" "$ar_size" \
    "${flags[*]}" <<'EOF'
import json, re, sys
tmp, fabric, failed, perm_bytes, a2a_ranks, a2a_size, ar_size, flags = sys.argv[1:]
max_us = 200_000  # uet-ab's --max_ms default

def load(name):
    runs = {r["transport"]: r for r in json.load(open(f"{tmp}/{name}.json"))}
    out = open(f"{tmp}/{name}.out").read()
    return runs, out

def stopped(run, out, transport):
    """Why a run has no figure: the PFC watchdog's deadlock, or flows not done in time."""
    if run["completed"] == run["flows"]:
        return None
    m = re.search(rf"{transport} PFC watchdog: .* (\d+) deadlocks.*the first at ([0-9.]+) us", out)
    if m or run["sim_us"] < max_us:  # only a deadlock (or Ctrl-C) stops a run before --max_ms
        at = float(m.group(2)) if m else run["sim_us"]
        return f"**PFC deadlock** at {at / 1000:.1f} ms, {run['completed']} of {run['flows']} flows done"
    return f"{run['completed']} of {run['flows']} flows done at {run['sim_us'] / 1000:.0f} ms"

def fcts(run):
    return " / ".join(f"{run['fct_us'][k]:.1f}" for k in ("min", "p99", "max"))

def ratios(u, r):
    return " / ".join(f"{u['fct_us'][k] / r['fct_us'][k]:.2f}" for k in ("min", "p99", "max"))

def resent(run):
    return f"{run['retransmits']} ({run['drops'] + run['trims']})"

print(f"\n#### {fabric}: `{flags}`\n")
print("| workload | links down | UET | RoCEv2 | UET/RoCEv2 | UET resent (frames lost) | "
      "RoCEv2 PFC pauses |")
print("|---|---|---|---|---|---|---|")
for down in ("0", failed):
    runs, out = load(f"perm{down}")
    u, r = runs["uet"], runs["rocev2"]
    why = {t: stopped(runs[t], out, t) for t in runs}
    cells = {t: why[t] + (f" (these: {fcts(runs[t])})" if runs[t]["completed"] else "")
             if why[t] else fcts(runs[t]) for t in runs}
    print(f"| permutation {int(perm_bytes) >> 10} KiB, FCT min / p99 / max (us) | {down} | "
          f"{cells['uet']} | {cells['rocev2']} | {'-' if any(why.values()) else ratios(u, r)} | "
          f"{resent(u)} | {r['pfc_pauses']} |")
    for name, label in ((f"a2a{down}", f"all-to-all {a2a_size}, {a2a_ranks} ranks, busbw (GB/s)"),
                        (f"ar{down}", f"ring all-reduce {ar_size}, busbw (GB/s)")):
        runs, out = load(name)
        why = {t: stopped(row["run"], out, t) for t, row in runs.items()}
        cells = {t: why[t] or f"{row['busbw_gbytes']:.2f}" for t, row in runs.items()}
        u, r = runs["uet"], runs["rocev2"]
        ratio = "-" if any(why.values()) else f"{u['busbw_gbytes'] / r['busbw_gbytes']:.2f}"
        print(f"| {label} | {down} | {cells['uet']} | {cells['rocev2']} | {ratio} | "
              f"{resent(u)} | {r['pfc_pauses']} |")
EOF
  if [ -n "${KEEP:-}" ]; then
    mkdir -p "$KEEP"
    for f in "$tmp"/*.json "$tmp"/*.out; do cp "$f" "$KEEP/${fabric}_$(basename "$f")"; done
  fi
done
