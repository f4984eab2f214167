#!/usr/bin/env bash
# A libFuzzer campaign: builds the targets with clang under ASan + UBSan, runs each for a
# number of executions from its kept corpus (tests/fuzz/corpus/TARGET) plus its seeds, and
# prints one row per target: executions, coverage edges, features, corpus, crashes, peak RSS.
#
#   tests/fuzz/campaign.sh [--runs=N] [--keep] [TARGET ...]     (default: every target, 10^7)
#
# --keep merges what the run found into the kept corpus, minimised (libFuzzer -merge=1): the
# fast tier replays it (ctest fuzz_corpus_*). A crash leaves its input in
# BUILD/campaign/TARGET/ (crash-*, timeout-*, oom-*, leak-*): make it a regression test.
# BUILD defaults to build-fuzz; CC/CXX default to clang-16 if installed, else clang.
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=10000000
keep=0
targets=()
for a in "$@"; do
  case "$a" in
    --runs=*) runs="${a#--runs=}" ;;
    --keep) keep=1 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    -*) echo "campaign.sh: unknown option $a (--runs=N, --keep)" >&2; exit 2 ;;
    *) targets+=("$a") ;;
  esac
done
all=(decode_frame uet_rx uet_tss_rx roce_rx htsim_cm htsim_topo cdf ab_config)
[ ${#targets[@]} -eq 0 ] && targets=("${all[@]}")
for t in "${targets[@]}"; do
  [[ " ${all[*]} " == *" $t "* ]] || { echo "campaign.sh: unknown target $t (${all[*]})" >&2; exit 2; }
done
[[ "$runs" =~ ^[0-9]+$ ]] && [ "$runs" -ge 1 ] || { echo "campaign.sh: --runs must be >= 1" >&2; exit 2; }

build="${BUILD:-build-fuzz}"
# clang 16 when installed (apt install clang-16): Debian 12's default clang 14 does not take the
# _Float16 that transport/atomic.cc computes FP16 atomics with.
if command -v clang-16 > /dev/null; then cc=clang-16 cxx=clang++-16; else cc=clang cxx=clang++; fi
CC="${CC:-$cc}" CXX="${CXX:-$cxx}" cmake -S . -B "$build" -G Ninja -DUET_LIBFUZZER=ON \
  -DUET_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo > "$build.configure.log"
cmake --build "$build" --target "${targets[@]/%/_fuzz}" > "$build.build.log" || {
  tail -20 "$build.build.log"; exit 1; }

seeds="$build/campaign/seeds"
python3 tests/fuzz/make_corpus.py spec/vectors "$seeds" > /dev/null
mkdir -p "$seeds/texts"
cp sim/data/*.cdf tests/ab/*.cm tests/ab/*.topo "$seeds/texts/"

printf '%-13s %12s %8s %8s %7s %8s %9s %8s\n' target executions edges features corpus crashes \
  "peak MiB" "wall s"
status=0
for t in "${targets[@]}"; do
  work="$build/campaign/$t"
  kept="tests/fuzz/corpus/$t"
  mkdir -p "$work/found" "$kept" "$work/earlier"
  # Inputs of an earlier run's crashes move aside: only this run's count.
  find "$work" -maxdepth 1 \( -name 'crash-*' -o -name 'timeout-*' -o -name 'oom-*' \
       -o -name 'leak-*' \) -exec mv -t "$work/earlier" {} +
  case "$t" in
    decode_frame) from=("$seeds/frames") ;;
    uet_rx|uet_tss_rx|roce_rx) from=("$seeds/sequences") ;;
    *) from=("$seeds/texts") ;;
  esac
  dict=()
  [ -f "tests/fuzz/dict/$t.dict" ] && dict=("-dict=tests/fuzz/dict/$t.dict")
  start=$(date +%s)
  # The run stops at the first crash (its input is written to $work/); -timeout and
  # -rss_limit_mb make a hang or a runaway allocation a finding too.
  set +e
  "$build/bin/${t}_fuzz" -runs="$runs" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$work/" "${dict[@]}" "$work/found" "$kept" "${from[@]}" > "$work/log" 2>&1
  rc=$?
  set -e
  wall=$(( $(date +%s) - start ))
  execs=$(grep -a -o 'stat::number_of_executed_units: *[0-9]*' "$work/log" | grep -o '[0-9]*$' | tail -1)
  rss=$(grep -a -o 'stat::peak_rss_mb: *[0-9]*' "$work/log" | grep -o '[0-9]*$' | tail -1)
  last=$(grep -a -E '^#[0-9]+' "$work/log" | tail -1)
  edges=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<< "$last")
  feats=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<< "$last")
  corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<< "$last")
  crashes=$(find "$work" -maxdepth 1 -name 'crash-*' -o -maxdepth 1 -name 'timeout-*' \
            -o -maxdepth 1 -name 'oom-*' -o -maxdepth 1 -name 'leak-*' | wc -l)
  if [ "$rc" -ne 0 ] && [ "$crashes" -eq 0 ]; then crashes="exit $rc"; fi
  printf '%-13s %12s %8s %8s %7s %8s %9s %8s\n' "$t" "${execs:-?}" "${edges:-?}" "${feats:-?}" \
    "${corp:-?}" "$crashes" "${rss:-?}" "$wall"
  [ "$crashes" != 0 ] && status=1
  if [ "$keep" -eq 1 ] && [ "$crashes" = 0 ]; then
    # Minimised by edges alone (-use_counters=0): each kept input reaches an edge no other
    # does. Regression inputs (regress-*) stay whatever they cover.
    rm -rf "$work/merged" && mkdir -p "$work/merged"
    if "$build/bin/${t}_fuzz" -merge=1 -use_counters=0 "$work/merged" "$kept" "$work/found" \
         > "$work/merge.log" 2>&1; then
      find "$kept" -maxdepth 1 -type f ! -name 'regress-*' -delete
      cp "$work/merged"/* "$kept/"
      for f in "$kept"/regress-*; do  # a merged copy of a regression input is a duplicate
        [ -e "$f" ] && rm -f "$kept/$(sha1sum "$f" | cut -d' ' -f1)"
      done
    else
      echo "campaign.sh: merging $t failed (see $work/merge.log); corpus left as it was" >&2
    fi
  fi
done
exit $status
