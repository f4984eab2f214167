#!/usr/bin/env bash
# Independent decoders: Wireshark's own IP, UDP and InfiniBand dissectors (tshark from Debian)
# read the frames our codecs build. Usage: tshark_test.sh BUILD_BIN_DIR
#  - UET frames: tshark validates every IPv4 header checksum and UDP checksum as Good.
#  - RoCEv2 frames: the InfiniBand dissector decodes each RDMA WRITE with the opcode, QP, PSN
#    and RETH we wrote, pad count and no malformed-packet or expert warnings.
set -euo pipefail
bin="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export WIRESHARK_CONFIG_DIR="$work/ws"   # no user preferences
mkdir -p "$WIRESHARK_CONFIG_DIR"

fail() { echo "FAIL: $*" >&2; exit 1; }

# 10 packets of each transport, the last one shorter (5000 = 9*512 + 392).
"$bin/uet-wire-ab" --size=5000 --mtu=512 --reps=1 --pcap="$work" > "$work/ab.txt"

ts() { tshark -n -r "$@" 2>/dev/null; }

# --- UET: checksums as Wireshark computes them.
status=$(ts "$work/uet.pcap" -o ip.check_checksum:TRUE -o udp.check_checksum:TRUE \
  -T fields -e ip.checksum.status -e udp.checksum.status -e udp.dstport | sort | uniq -c)
echo "UET checksum status (count ip udp dport):"; echo "$status"
[ "$(echo "$status" | wc -l)" -eq 1 ] || fail "UET frames disagree on checksum status"
echo "$status" | grep -Eq '^ *10[[:space:]]+1[[:space:]]+1[[:space:]]+4793$' || fail "UET: expected 10 frames with Good IP and UDP checksums"

# --- RoCEv2: fields as the InfiniBand dissector reads them.
ts "$work/rocev2.pcap" -T fields -E separator=, -e infiniband.bth.opcode -e infiniband.bth.destqp \
  -e infiniband.bth.psn -e infiniband.bth.padcnt -e infiniband.bth.a -e infiniband.reth.va \
  -e infiniband.reth.r_key -e infiniband.reth.dmalen -e _ws.malformed -e _ws.expert > "$work/roce.csv"
cat "$work/roce.csv"
[ "$(wc -l < "$work/roce.csv")" -eq 10 ] || fail "RoCEv2: expected 10 frames"
head -1 "$work/roce.csv" | grep -q '^6,0x000011,15728640,0,0,0x00007f0000000000,0x000002b8,5000,,$' \
  || fail "RoCEv2: first frame should be WRITE FIRST with our BTH and RETH"
for i in $(seq 2 9); do
  sed -n "${i}p" "$work/roce.csv" | grep -q "^7,0x000011,$((15728640 + i - 1)),0,0,,,,,$" \
    || fail "RoCEv2: frame $i should be WRITE MIDDLE with PSN $((15728640 + i - 1))"
done
tail -1 "$work/roce.csv" | grep -q '^8,0x000011,15728649,0,1,,,,,$' \
  || fail "RoCEv2: last frame should be WRITE LAST with AckReq set"
if grep -q '[^,]' <<< "$(cut -d, -f9- "$work/roce.csv")"; then fail "RoCEv2: malformed or expert info"; fi
echo "PASS: tshark agrees with our UET checksums and RoCEv2 headers"
