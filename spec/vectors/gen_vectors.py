#!/usr/bin/env python3
"""Golden vectors for the wire codec: an independent second encoder.

Writes one file per vector, spec/vectors/NAME.vec (format: spec/vectors/README.md), each a
complete Ethernet frame in hex and the value of every field of every header it carries.

This encoder is written from the prose of spec/uet.md /
spec/rocev2.md, with the .def tables read as documentation only: it does not parse them and
shares no code with transport/wire/. Headers are packed with `struct` and explicit shifts
(the "packers" below); the field lists (LAYOUT) exist only to print the expect lines and are
cross-checked against what the packers were asked to write, so a slip in either shows up
here before it reaches a .vec file. Only the Python 3.11 standard library is used, and for the
sealed TSS vectors (uet.md §5) the `cryptography` package (Debian: python3-cryptography), whose
AES-GCM and CMAC are OpenSSL's but whose use here (KDF, IV, AAD) is written from the prose.

  python3 spec/vectors/gen_vectors.py          # rewrite every .vec file
  python3 spec/vectors/gen_vectors.py --check  # exit 1 if a committed file differs
"""

import argparse
import pathlib
import struct
import sys
import zlib

HERE = pathlib.Path(__file__).resolve().parent

# ======================================================================= constants
ETH_IPV4, ETH_IPV6, ETH_VLAN = 0x0800, 0x86DD, 0x8100
IPPROTO_UDP = 17
UET_UDP_PORT = 4793     # uet.md §2.1
UET_IP_PROTO = 253      # uet.md §2.2 [choice]: RFC 3692 experimental
ROCE_UDP_PORT = 4791    # rocev2.md §1

# uet.md §3.2 PDS types.
ENC, RUD_REQ, ROD_REQ, RUDI_REQ, RUDI_RESP, UUD_REQ = 1, 2, 3, 4, 5, 6
ACK, ACK_CC, ACK_CCX, NACK, CTRL, NACK_CCX, RUD_CC_REQ, ROD_CC_REQ = 7, 8, 9, 10, 11, 12, 13, 14
# uet.md §3.13 next header.
NH_NONE, NH_SMALL, NH_MEDIUM, NH_STD, NH_RSP, NH_RSP_DATA, NH_RSP_DATA_SMALL = range(7)
# uet.md §3.12 control types.
CTL_REQ_ACK, CTL_PROBE, CTL_CREDIT = 1, 6, 7
# uet.md §4.1 SES opcodes.
OP_WRITE, OP_READ, OP_ATOMIC, OP_FETCHING_ATOMIC, OP_SEND = 1, 2, 3, 4, 5
OP_RENDEZVOUS_SEND, OP_DGRAM_SEND, OP_TAGGED_SEND, OP_RENDEZVOUS_TSEND = 6, 7, 9, 10
OP_DEFERRABLE_SEND, OP_DEFERRABLE_TSEND, OP_DEFERRABLE_RTR = 0x08, 0x0B, 0x0C
OP_MSG_ERROR = 0x0F
# uet.md §4.6 response opcodes, §4.9 return codes.
RSP_RESPONSE, RSP_WITH_DATA = 1, 2
RC_OK = 1
RC_BAD_GENERATION, RC_BAD_PID, RC_BAD_JOB_ID = 0x02, 0x1A, 0x1B
RC_AMO_UNALIGNED = 0x12
RC_NO_MATCH = 0x05

# rocev2.md §4 opcodes -> extended headers after the BTH, in wire order, and whether a
# payload follows (spec/rocev2.md §4).
ROCE_OPCODES = {
    0x00: ([], True), 0x01: ([], True), 0x02: ([], True), 0x03: (["immdt"], True),
    0x04: ([], True), 0x05: (["immdt"], True), 0x06: (["reth"], True), 0x07: ([], True),
    0x08: ([], True), 0x09: (["immdt"], True), 0x0A: (["reth"], True),
    0x0B: (["reth", "immdt"], True), 0x0C: (["reth"], False), 0x0D: (["aeth"], True),
    0x0E: ([], True), 0x0F: (["aeth"], True), 0x10: (["aeth"], True), 0x11: (["aeth"], False),
    0x12: (["aeth", "atomic_ack_eth"], False), 0x13: (["atomic_eth"], False),
    0x14: (["atomic_eth"], False), 0x16: (["ieth"], True), 0x17: (["ieth"], True),
    0x20: ([], True), 0x21: ([], True), 0x22: ([], True), 0x23: (["immdt"], True),
    0x24: ([], True), 0x25: (["immdt"], True), 0x26: (["reth"], True), 0x27: ([], True),
    0x28: ([], True), 0x29: (["immdt"], True), 0x2A: (["reth"], True),
    0x2B: (["reth", "immdt"], True), 0x64: (["deth"], True),
    0x65: (["deth", "immdt"], True), 0x81: (["cnp"], False),
}

# ==================================================================== field lists
# Every field of every header, named as in the spec tables: (name, offset, width, mask, kind).
# mask 0 = every bit of the width. Overlays (SYN form, SOM=0 form, NSCC/credit state) are
# listed too: a vector states what each of them reads as.
U, X, S, FL, R, B = "UDEC", "UHEX", "SDEC", "FLAG", "RSVD", "BYTES"

_TSS_WORD0 = [("type", 0, 4, 0xF8000000, U), ("sp", 0, 4, 0x04000000, FL),
              ("rsvd", 0, 4, 0x02000000, R), ("an", 0, 4, 0x01000000, U),
              ("sdi", 0, 4, 0x00FFFFFF, U)]
_PDS_TYPE_NH = [("type", 0, 2, 0xF800, U), ("next_hdr", 0, 2, 0x0780, U)]
_REQ_FLAGS = [("retx", 0, 2, 0x0010, FL), ("ar", 0, 2, 0x0008, FL), ("syn", 0, 2, 0x0004, FL),
              ("flags_rsvd", 0, 2, 0x0063, R)]
_REQ_BODY = [("clear_psn_offset", 2, 2, 0, S), ("psn", 4, 4, 0, U), ("spdcid", 8, 2, 0, U),
             ("dpdcid", 10, 2, 0, U), ("use_rsv_pdc", 10, 2, 0x8000, FL),
             ("pdc_info_rsvd", 10, 2, 0x7000, X), ("psn_offset", 10, 2, 0x0FFF, U)]
_ACK = _PDS_TYPE_NH + [
    ("m", 0, 2, 0x0020, FL), ("retx", 0, 2, 0x0010, FL), ("p", 0, 2, 0x0008, FL),
    ("req", 0, 2, 0x0006, U), ("flags_rsvd", 0, 2, 0x0041, R), ("ack_psn_offset", 2, 2, 0, S),
    ("cack_psn", 4, 4, 0, U), ("spdcid", 8, 2, 0, U), ("dpdcid", 10, 2, 0, U)]
_ACK_EXT = [("cc_type", 12, 1, 0xF0, U), ("cc_flags", 12, 1, 0x0F, X), ("mpr", 13, 1, 0, U),
            ("sack_psn_offset", 14, 2, 0, U), ("sack_bitmap", 16, 8, 0, X)]
_NACK = _PDS_TYPE_NH + [
    ("m", 0, 2, 0x0020, FL), ("retx", 0, 2, 0x0010, FL), ("nt", 0, 2, 0x0008, FL),
    ("flags_rsvd", 0, 2, 0x0047, R), ("nack_code", 2, 1, 0, X), ("vendor_code", 3, 1, 0, X),
    ("nack_psn", 4, 4, 0, U), ("spdcid", 8, 2, 0, U), ("dpdcid", 10, 2, 0, U),
    ("nack_payload", 12, 4, 0, U)]
_SES_OPFLAGS = [("rsvd_op", 0, 1, 0xC0, R), ("opcode", 0, 1, 0x3F, X), ("ver", 1, 1, 0xC0, U),
                ("dc", 1, 1, 0x20, FL), ("ie", 1, 1, 0x10, FL), ("rel", 1, 1, 0x08, FL)]
_SES_SOM_EOM = [("eom", 1, 1, 0x02, FL), ("som", 1, 1, 0x01, FL)]
_SES_ADDR = [("ri_generation", 4, 1, 0, U), ("job_id", 5, 3, 0, U), ("rsvd_pid", 8, 2, 0xF000, R),
             ("pid_on_fep", 8, 2, 0x0FFF, U), ("rsvd_ri", 10, 2, 0xF000, R),
             ("resource_index", 10, 2, 0x0FFF, U)]
_SES_ATOMIC = [("atomic_opcode", 0, 1, 0, X), ("data_type", 1, 1, 0, X), ("sem_ctl", 2, 1, 0, X),
               ("rsvd", 3, 1, 0, R)]
_SES_RSP_HEAD = [("list", 0, 1, 0xC0, U), ("opcode", 0, 1, 0x3F, U), ("ver", 1, 1, 0xC0, U),
                 ("return_code", 1, 1, 0x3F, X)]

LAYOUT = {
    # ---- net.def: IEEE 802.3 / 802.1Q, RFC 791, RFC 8200, RFC 768
    "eth": [("dst", 0, 6, 0, B), ("src", 6, 6, 0, B), ("ethertype", 12, 2, 0, X)],
    "vlan": [("pcp", 0, 2, 0xE000, U), ("dei", 0, 2, 0x1000, FL), ("vid", 0, 2, 0x0FFF, U),
             ("ethertype", 2, 2, 0, X)],
    "ipv4": [("version", 0, 1, 0xF0, U), ("ihl", 0, 1, 0x0F, U), ("dscp", 1, 1, 0xFC, U),
             ("ecn", 1, 1, 0x03, U), ("total_length", 2, 2, 0, U), ("id", 4, 2, 0, X),
             ("flag_rsvd", 6, 2, 0x8000, R), ("df", 6, 2, 0x4000, FL), ("mf", 6, 2, 0x2000, FL),
             ("frag_offset", 6, 2, 0x1FFF, U), ("ttl", 8, 1, 0, U), ("protocol", 9, 1, 0, U),
             ("checksum", 10, 2, 0, X), ("src", 12, 4, 0, X), ("dst", 16, 4, 0, X)],
    "ipv6": [("version", 0, 4, 0xF0000000, U), ("dscp", 0, 4, 0x0FC00000, U),
             ("ecn", 0, 4, 0x00300000, U), ("flow_label", 0, 4, 0x000FFFFF, X),
             ("payload_length", 4, 2, 0, U), ("next_header", 6, 1, 0, U),
             ("hop_limit", 7, 1, 0, U), ("src", 8, 16, 0, B), ("dst", 24, 16, 0, B)],
    "udp": [("sport", 0, 2, 0, U), ("dport", 2, 2, 0, U), ("length", 4, 2, 0, U),
            ("checksum", 6, 2, 0, X)],
    # ---- uet.def: uet.md §2.2, §5, §3, §4
    "uet_entropy": [("entropy", 0, 2, 0, X), ("rsvd", 2, 2, 0, R)],
    "tss": _TSS_WORD0 + [("tsc", 4, 8, 0, X)],
    "tss_sp": _TSS_WORD0 + [("ssi", 4, 4, 0, X), ("tsc", 8, 8, 0, X)],
    "pds_rud_rod": _PDS_TYPE_NH + _REQ_FLAGS + _REQ_BODY,
    "pds_rud_rod_cc": _PDS_TYPE_NH + _REQ_FLAGS + _REQ_BODY + [
        ("ccc_id", 12, 1, 0, U), ("credit_target", 13, 3, 0, U)],
    "pds_rudi": _PDS_TYPE_NH + [("m", 0, 2, 0x0020, FL), ("retx", 0, 2, 0x0010, FL),
                                ("flags_rsvd", 0, 2, 0x004F, R), ("rudi_rsvd", 2, 2, 0, R),
                                ("pkt_id", 4, 4, 0, U)],
    "pds_uud": _PDS_TYPE_NH + [("flags_rsvd", 0, 2, 0x007F, R), ("uud_rsvd", 2, 2, 0, R)],
    "pds_ack": _ACK,
    "pds_ack_cc": _ACK + _ACK_EXT + [
        ("service_time", 24, 2, 0, U), ("rc", 26, 1, 0x80, FL), ("rcv_cwnd_pend", 26, 1, 0x7F, U),
        ("rcvd_bytes", 27, 3, 0, U), ("credit", 24, 3, 0, U), ("credit_rsvd", 27, 3, 0, X),
        ("ooo_count", 30, 2, 0, U)],
    "pds_ack_ccx": _ACK + _ACK_EXT + [("ccx_state", 24, 16, 0, B)],
    "pds_nack": _NACK,
    "pds_nack_ccx": _NACK + [("ccx_state", 16, 16, 0, B)],
    "pds_ctrl": [("type", 0, 2, 0xF800, U), ("ctl_type", 0, 2, 0x0780, U)] + _REQ_FLAGS + [
        ("probe_opaque", 2, 2, 0, X), ("psn", 4, 4, 0, U), ("spdcid", 8, 2, 0, U),
        ("dpdcid", 10, 2, 0, U), ("ctrl_payload", 12, 4, 0, X)],
    "ses_std": _SES_OPFLAGS + [("hd", 1, 1, 0x04, FL)] + _SES_SOM_EOM + [
        ("message_id", 2, 2, 0, U)] + _SES_ADDR + [
        ("buffer_offset", 12, 8, 0, X), ("initiator", 20, 4, 0, X), ("match_bits", 24, 8, 0, X),
        ("header_data", 32, 8, 0, X), ("cont_rsvd", 32, 4, 0xFFFFC000, X),
        ("payload_length", 32, 4, 0x00003FFF, U), ("message_offset", 36, 4, 0, U),
        ("request_length", 40, 4, 0, U)],
    "ses_medium": _SES_OPFLAGS + [("hd", 1, 1, 0x04, FL)] + _SES_SOM_EOM + [
        ("rsvd_len", 2, 2, 0xC000, R), ("request_length", 2, 2, 0x3FFF, U)] + _SES_ADDR + [
        ("buffer_offset", 12, 8, 0, X), ("header_data", 12, 8, 0, X), ("initiator", 20, 4, 0, X),
        ("match_bits", 24, 8, 0, X)],
    "ses_small": _SES_OPFLAGS + [("rsvd_hd", 1, 1, 0x04, R)] + _SES_SOM_EOM + [
        ("rsvd_len", 2, 2, 0xC000, R), ("request_length", 2, 2, 0x3FFF, U)] + _SES_ADDR + [
        ("buffer_offset", 12, 8, 0, X)],
    "ses_atomic": _SES_ATOMIC,
    "ses_cas": _SES_ATOMIC + [("compare", 4, 16, 0, B), ("swap", 20, 16, 0, B)],
    "ses_rendezvous": [
        ("eager_length", 0, 4, 0, U), ("rsvd_pid", 4, 2, 0xC000, R),
        ("read_pid_on_fep", 4, 2, 0x3FFF, U), ("rsvd_ri", 6, 2, 0xF000, R),
        ("read_resource_index", 6, 2, 0x0FFF, U), ("read_offset", 8, 8, 0, X),
        ("read_match_bits", 16, 8, 0, X)],
    "ses_rsp": _SES_RSP_HEAD + [
        ("message_id", 2, 2, 0, U), ("ri_generation", 4, 1, 0, U), ("job_id", 5, 3, 0, U),
        ("modified_length", 8, 4, 0, U)],
    "ses_rsp_data": _SES_RSP_HEAD + [
        ("message_id", 2, 2, 0, U), ("rsvd_gen", 4, 1, 0, R), ("job_id", 5, 3, 0, U),
        ("read_req_message_id", 8, 2, 0, U), ("rsvd_len", 10, 2, 0xC000, R),
        ("payload_length", 10, 2, 0x3FFF, U), ("modified_length", 12, 4, 0, U),
        ("message_offset", 16, 4, 0, U)],
    "ses_rsp_data_small": _SES_RSP_HEAD + [("rsvd_len", 2, 2, 0xC000, R),
                                           ("payload_length", 2, 2, 0x3FFF, U)],
    # ---- rocev2.def: rocev2.md §2, §3, §5
    "bth": [("opcode", 0, 1, 0, X), ("se", 1, 1, 0x80, FL), ("mig", 1, 1, 0x40, FL),
            ("pad_cnt", 1, 1, 0x30, U), ("tver", 1, 1, 0x0F, U), ("pkey", 2, 2, 0, X),
            ("fecn", 4, 1, 0x80, FL), ("becn", 4, 1, 0x40, FL), ("rsvd6", 4, 1, 0x3F, R),
            ("dest_qp", 5, 3, 0, X), ("ack_req", 8, 1, 0x80, FL), ("rsvd7", 8, 1, 0x7F, R),
            ("psn", 9, 3, 0, U)],
    "reth": [("va", 0, 8, 0, X), ("rkey", 8, 4, 0, X), ("dma_length", 12, 4, 0, U)],
    "aeth": [("syndrome_rsvd", 0, 1, 0x80, R), ("syndrome_type", 0, 1, 0x60, U),
             ("syndrome_value", 0, 1, 0x1F, U), ("msn", 1, 3, 0, U)],
    "atomic_eth": [("va", 0, 8, 0, X), ("rkey", 8, 4, 0, X), ("swap_add", 12, 8, 0, X),
                   ("compare", 20, 8, 0, X)],
    "atomic_ack_eth": [("orig_data", 0, 8, 0, X)],
    "immdt": [("imm", 0, 4, 0, X)],
    "ieth": [("rkey", 0, 4, 0, X)],
    "deth": [("qkey", 0, 4, 0, X), ("rsvd", 4, 1, 0, R), ("src_qp", 5, 3, 0, X)],
    "cnp": [("rsvd", 0, 16, 0, B)],
}

# Header sizes (spec/uet.md §2, spec/rocev2.md §1).
SIZES = {
    "eth": 14, "vlan": 4, "ipv4": 20, "ipv6": 40, "udp": 8, "uet_entropy": 4, "tss": 12,
    "tss_sp": 16, "pds_rud_rod": 12, "pds_rud_rod_cc": 16, "pds_rudi": 8, "pds_uud": 4,
    "pds_ack": 12, "pds_ack_cc": 32, "pds_ack_ccx": 40, "pds_nack": 16, "pds_nack_ccx": 32,
    "pds_ctrl": 16, "ses_std": 44, "ses_medium": 32, "ses_small": 20, "ses_atomic": 4,
    "ses_cas": 36, "ses_rendezvous": 24, "ses_rsp": 12, "ses_rsp_data": 20,
    "ses_rsp_data_small": 4, "bth": 12, "reth": 16, "aeth": 4, "atomic_eth": 28,
    "atomic_ack_eth": 8, "immdt": 4, "ieth": 4, "deth": 8, "cnp": 16,
}

# Where each header is specified, for the spec: line.
SECTIONS = {
    "uet_entropy": ("uet.md", "2.2"), "tss": ("uet.md", "5"), "tss_sp": ("uet.md", "5"),
    "pds_rud_rod": ("uet.md", "3.3"), "pds_rud_rod_cc": ("uet.md", "3.4"),
    "pds_rudi": ("uet.md", "3.5"), "pds_uud": ("uet.md", "3.6"), "pds_ack": ("uet.md", "3.7"),
    "pds_ack_cc": ("uet.md", "3.8"), "pds_ack_ccx": ("uet.md", "3.9"),
    "pds_nack": ("uet.md", "3.10"), "pds_nack_ccx": ("uet.md", "3.11"),
    "pds_ctrl": ("uet.md", "3.12"), "ses_std": ("uet.md", "4.2"),
    "ses_medium": ("uet.md", "4.3"), "ses_small": ("uet.md", "4.4"),
    "ses_atomic": ("uet.md", "4.5.1"), "ses_cas": ("uet.md", "4.5.2"),
    "ses_rendezvous": ("uet.md", "4.5.3"), "ses_rsp": ("uet.md", "4.6"),
    "ses_rsp_data": ("uet.md", "4.7"), "ses_rsp_data_small": ("uet.md", "4.8"),
    "bth": ("rocev2.md", "2"), "reth": ("rocev2.md", "3.1"), "aeth": ("rocev2.md", "3.2"),
    "atomic_eth": ("rocev2.md", "3.3"), "atomic_ack_eth": ("rocev2.md", "3.4"),
    "immdt": ("rocev2.md", "3.5"), "ieth": ("rocev2.md", "3.6"), "deth": ("rocev2.md", "3.7"),
    "cnp": ("rocev2.md", "5"),
}


def read_field(hdr, f):
    """The value of field f of header bytes hdr: an int, or bytes for BYTES fields."""
    name, off, width, mask, kind = f
    raw = hdr[off:off + width]
    if kind == B:
        return bytes(raw)
    v = int.from_bytes(raw, "big")
    if mask:
        v = (v & mask) >> ((mask & -mask).bit_length() - 1)
        bits = bin(mask).count("1")
    else:
        bits = 8 * width
    if kind == S and v >> (bits - 1):
        v -= 1 << bits
    return v


def fmt_value(f, v):
    name, off, width, mask, kind = f
    if kind == B:
        return v.hex()
    if kind in (X, R):
        bits = bin(mask).count("1") if mask else 8 * width
        return "0x%0*x" % ((bits + 3) // 4, v)
    return str(v)


# ========================================================================= packers
# Each returns a Seg: header id, its bytes, and the field values the caller chose (checked
# against the field lists once the frame is built).
class Seg:
    def __init__(self, hid, data, **given):
        self.hid, self.data, self.given = hid, bytes(data), given
        assert len(self.data) == SIZES[hid], (hid, len(self.data))


def u24(v):
    return v.to_bytes(3, "big")


def pds_word(pds_type, nh_or_ctl, flags):
    """uet.md §3.1: type 5 bits, next header 4 bits, flags 7 bits."""
    assert pds_type < 32 and nh_or_ctl < 16 and flags < 128
    return (pds_type << 11) | (nh_or_ctl << 7) | flags


def req_flags(retx, ar, syn, rsvd=0):
    return retx << 4 | ar << 3 | syn << 2 | rsvd


def pds_req(pds_type, next_hdr, psn, spdcid, dpdcid=0, clear_psn_offset=0, retx=0, ar=0, syn=0,
            use_rsv_pdc=0, psn_offset=0, ccc_id=None, credit_target=None, flags_rsvd=0,
            pdc_info_rsvd=0):
    """uet.md §3.3/§3.4: RUD/ROD requests, with CC state for the _CC types."""
    given = dict(type=pds_type, next_hdr=next_hdr, retx=retx, ar=ar, syn=syn,
                 clear_psn_offset=clear_psn_offset, psn=psn, spdcid=spdcid)
    if syn:  # the DPDCID slot carries PDC info
        last = use_rsv_pdc << 15 | pdc_info_rsvd << 12 | psn_offset
        given.update(use_rsv_pdc=use_rsv_pdc, psn_offset=psn_offset)
    else:
        last = dpdcid
        given.update(dpdcid=dpdcid)
    data = struct.pack(">HhIHH", pds_word(pds_type, next_hdr, req_flags(retx, ar, syn, flags_rsvd)),
                       clear_psn_offset, psn, spdcid, last)
    if pds_type in (RUD_CC_REQ, ROD_CC_REQ):
        data += struct.pack(">B", ccc_id) + u24(credit_target)
        given.update(ccc_id=ccc_id, credit_target=credit_target)
        return Seg("pds_rud_rod_cc", data, **given)
    return Seg("pds_rud_rod", data, **given)


def pds_rudi(pds_type, next_hdr, pkt_id, m=0, retx=0):
    """uet.md §3.5."""
    data = struct.pack(">HHI", pds_word(pds_type, next_hdr, m << 5 | retx << 4), 0, pkt_id)
    return Seg("pds_rudi", data, type=pds_type, next_hdr=next_hdr, m=m, retx=retx, pkt_id=pkt_id)


def pds_uud(next_hdr):
    """uet.md §3.6."""
    return Seg("pds_uud", struct.pack(">HH", pds_word(UUD_REQ, next_hdr, 0), 0),
               type=UUD_REQ, next_hdr=next_hdr)


def _ack_base(pds_type, next_hdr, cack_psn, ack_psn_offset, spdcid, dpdcid, m, retx, p, req):
    flags = m << 5 | retx << 4 | p << 3 | req << 1
    data = struct.pack(">HhIHH", pds_word(pds_type, next_hdr, flags), ack_psn_offset, cack_psn,
                       spdcid, dpdcid)
    given = dict(type=pds_type, next_hdr=next_hdr, m=m, retx=retx, p=p, req=req,
                 ack_psn_offset=ack_psn_offset, cack_psn=cack_psn, spdcid=spdcid, dpdcid=dpdcid)
    return data, given


def pds_ack(next_hdr, cack_psn, ack_psn_offset, spdcid, dpdcid, m=0, retx=0, p=0, req=0):
    """uet.md §3.7."""
    data, given = _ack_base(ACK, next_hdr, cack_psn, ack_psn_offset, spdcid, dpdcid, m, retx, p, req)
    return Seg("pds_ack", data, **given)


def _ack_ext(cc_type, cc_flags, mpr, sack_psn_offset, sack_bitmap):
    return struct.pack(">BBHQ", cc_type << 4 | cc_flags, mpr, sack_psn_offset, sack_bitmap), dict(
        cc_type=cc_type, cc_flags=cc_flags, mpr=mpr, sack_psn_offset=sack_psn_offset,
        sack_bitmap=sack_bitmap)


def pds_ack_cc_nscc(next_hdr, cack_psn, ack_psn_offset, spdcid, dpdcid, cc_flags, mpr,
                    sack_psn_offset, sack_bitmap, service_time, rc, rcv_cwnd_pend, rcvd_bytes,
                    ooo_count, m=0, retx=0, p=0, req=0):
    """uet.md §3.8, §3.8.1: NSCC state {service time, RC|pend at byte 2, rcvd bytes, ooo}."""
    data, given = _ack_base(ACK_CC, next_hdr, cack_psn, ack_psn_offset, spdcid, dpdcid, m, retx,
                            p, req)
    ext, g = _ack_ext(0, cc_flags, mpr, sack_psn_offset, sack_bitmap)
    state = struct.pack(">HB", service_time, rc << 7 | rcv_cwnd_pend) + u24(rcvd_bytes) + \
        struct.pack(">H", ooo_count)
    given.update(g, service_time=service_time, rc=rc, rcv_cwnd_pend=rcv_cwnd_pend,
                 rcvd_bytes=rcvd_bytes, ooo_count=ooo_count)
    return Seg("pds_ack_cc", data + ext + state, **given)


def pds_ack_cc_credit(next_hdr, cack_psn, ack_psn_offset, spdcid, dpdcid, cc_flags, mpr,
                      sack_psn_offset, sack_bitmap, credit, ooo_count, m=0, retx=0, p=0, req=0):
    """uet.md §3.8, §3.8.2: credit state {credit u24, reserved u24, ooo}."""
    data, given = _ack_base(ACK_CC, next_hdr, cack_psn, ack_psn_offset, spdcid, dpdcid, m, retx,
                            p, req)
    ext, g = _ack_ext(1, cc_flags, mpr, sack_psn_offset, sack_bitmap)
    state = u24(credit) + bytes(3) + struct.pack(">H", ooo_count)
    given.update(g, credit=credit, credit_rsvd=0, ooo_count=ooo_count)
    return Seg("pds_ack_cc", data + ext + state, **given)


def pds_ack_ccx(next_hdr, cack_psn, ack_psn_offset, spdcid, dpdcid, cc_type, cc_flags, mpr,
                sack_psn_offset, sack_bitmap, ccx_state, m=0, retx=0, p=0, req=0):
    """uet.md §3.9: as ACK_CC with a 16-byte CC state."""
    data, given = _ack_base(ACK_CCX, next_hdr, cack_psn, ack_psn_offset, spdcid, dpdcid, m, retx,
                            p, req)
    ext, g = _ack_ext(cc_type, cc_flags, mpr, sack_psn_offset, sack_bitmap)
    assert len(ccx_state) == 16
    given.update(g, ccx_state=ccx_state)
    return Seg("pds_ack_ccx", data + ext + ccx_state, **given)


def pds_nack(nack_code, nack_psn, spdcid, dpdcid, nack_payload, vendor_code=0, m=0, retx=0, nt=0,
             next_hdr=NH_NONE, ccx_state=None):
    """uet.md §3.10/§3.11."""
    pds_type = NACK if ccx_state is None else NACK_CCX
    data = struct.pack(">HBBIHHI", pds_word(pds_type, next_hdr, m << 5 | retx << 4 | nt << 3),
                       nack_code, vendor_code, nack_psn, spdcid, dpdcid, nack_payload)
    given = dict(type=pds_type, next_hdr=next_hdr, m=m, retx=retx, nt=nt, nack_code=nack_code,
                 vendor_code=vendor_code, nack_psn=nack_psn, spdcid=spdcid, dpdcid=dpdcid,
                 nack_payload=nack_payload)
    if ccx_state is None:
        return Seg("pds_nack", data, **given)
    assert len(ccx_state) == 16
    return Seg("pds_nack_ccx", data + ccx_state, ccx_state=ccx_state, **given)


def pds_ctrl(ctl_type, probe_opaque, psn, spdcid, dpdcid, ctrl_payload, retx=0, ar=0, syn=0):
    """uet.md §3.12: the next-header slot is the control type."""
    data = struct.pack(">HHIHHI", pds_word(CTRL, ctl_type, req_flags(retx, ar, syn)), probe_opaque,
                       psn, spdcid, dpdcid, ctrl_payload)
    return Seg("pds_ctrl", data, type=CTRL, ctl_type=ctl_type, retx=retx, ar=ar, syn=syn,
               probe_opaque=probe_opaque, psn=psn, spdcid=spdcid, dpdcid=dpdcid,
               ctrl_payload=ctrl_payload)


def tss(an, sdi, tsc, ssi=None):
    """uet.md §5: {type=ENC 5b, SP, rsvd, AN, SDI 24b}, [SSI u32], TSC u64."""
    sp = 0 if ssi is None else 1
    word = ENC << 27 | sp << 26 | an << 24 | sdi
    if ssi is None:
        return Seg("tss", struct.pack(">IQ", word, tsc), type=ENC, sp=0, an=an, sdi=sdi, tsc=tsc)
    return Seg("tss_sp", struct.pack(">IIQ", word, ssi, tsc), type=ENC, sp=1, an=an, sdi=sdi,
               ssi=ssi, tsc=tsc)


def _ses_opflags(opcode, flags_byte_low, dc, ie, rel, ver=0):
    return bytes([opcode & 0x3F, ver << 6 | dc << 5 | ie << 4 | rel << 3 | flags_byte_low])


def _ses_addr(ri_generation, job_id, pid_on_fep, resource_index):
    assert pid_on_fep < 4096 and resource_index < 4096
    return bytes([ri_generation]) + u24(job_id) + struct.pack(">HH", pid_on_fep, resource_index)


def ses_std(opcode, message_id, ri_generation, job_id, pid_on_fep, resource_index, buffer_offset,
            initiator, match_bits, request_length, som, eom, hd=0, header_data=0,
            payload_length=0, message_offset=0, dc=0, ie=0, rel=0, ver=0):
    """uet.md §4.2: bytes 32-39 are header data (SOM=1) or {rsvd 18b, payload length 14b,
    message offset u32} (SOM=0)."""
    given = dict(opcode=opcode, ver=ver, dc=dc, ie=ie, rel=rel, hd=hd, eom=eom, som=som,
                 message_id=message_id, ri_generation=ri_generation, job_id=job_id,
                 pid_on_fep=pid_on_fep, resource_index=resource_index,
                 buffer_offset=buffer_offset, initiator=initiator, match_bits=match_bits,
                 request_length=request_length)
    if som:
        tail = struct.pack(">Q", header_data)
        given.update(header_data=header_data)
    else:
        assert payload_length < (1 << 14)
        tail = struct.pack(">II", payload_length, message_offset)
        given.update(cont_rsvd=0, payload_length=payload_length, message_offset=message_offset)
    data = (_ses_opflags(opcode, hd << 2 | eom << 1 | som, dc, ie, rel, ver) +
            struct.pack(">H", message_id) +
            _ses_addr(ri_generation, job_id, pid_on_fep, resource_index) +
            struct.pack(">QIQ", buffer_offset, initiator, match_bits) + tail +
            struct.pack(">I", request_length))
    return Seg("ses_std", data, **given)


def ses_medium(opcode, request_length, ri_generation, job_id, pid_on_fep, resource_index,
               initiator, match_bits, som, eom, hd=0, buffer_offset=0, header_data=0, dc=0, ie=0,
               rel=0):
    """uet.md §4.3: bytes 12-19 are the buffer offset (HD=0) or header data (HD=1)."""
    word = header_data if hd else buffer_offset
    data = (_ses_opflags(opcode, hd << 2 | eom << 1 | som, dc, ie, rel) +
            struct.pack(">H", request_length) +
            _ses_addr(ri_generation, job_id, pid_on_fep, resource_index) +
            struct.pack(">QIQ", word, initiator, match_bits))
    given = dict(opcode=opcode, ver=0, dc=dc, ie=ie, rel=rel, hd=hd, eom=eom, som=som,
                 request_length=request_length, ri_generation=ri_generation, job_id=job_id,
                 pid_on_fep=pid_on_fep, resource_index=resource_index, initiator=initiator,
                 match_bits=match_bits)
    given["header_data" if hd else "buffer_offset"] = word
    return Seg("ses_medium", data, **given)


def ses_small(opcode, request_length, ri_generation, job_id, pid_on_fep, resource_index,
              buffer_offset, som, eom, dc=0, ie=0, rel=0):
    """uet.md §4.4: no HD flag, no initiator, no match bits."""
    data = (_ses_opflags(opcode, eom << 1 | som, dc, ie, rel) + struct.pack(">H", request_length) +
            _ses_addr(ri_generation, job_id, pid_on_fep, resource_index) +
            struct.pack(">Q", buffer_offset))
    return Seg("ses_small", data, opcode=opcode, ver=0, dc=dc, ie=ie, rel=rel, eom=eom, som=som,
               request_length=request_length, ri_generation=ri_generation, job_id=job_id,
               pid_on_fep=pid_on_fep, resource_index=resource_index, buffer_offset=buffer_offset)


def ses_atomic(atomic_opcode, data_type, sem_ctl):
    """uet.md §4.5.1."""
    return Seg("ses_atomic", bytes([atomic_opcode, data_type, sem_ctl, 0]),
               atomic_opcode=atomic_opcode, data_type=data_type, sem_ctl=sem_ctl)


def ses_cas(atomic_opcode, data_type, sem_ctl, compare, swap):
    """uet.md §4.5.2: the atomic word, then 128-bit compare and swap operands."""
    assert len(compare) == 16 and len(swap) == 16
    return Seg("ses_cas", bytes([atomic_opcode, data_type, sem_ctl, 0]) + compare + swap,
               atomic_opcode=atomic_opcode, data_type=data_type, sem_ctl=sem_ctl,
               compare=compare, swap=swap)


def ses_rendezvous(eager_length, read_pid_on_fep, read_resource_index, read_offset,
                   read_match_bits):
    """uet.md §4.5.3."""
    assert read_pid_on_fep < (1 << 14) and read_resource_index < 4096
    data = struct.pack(">IHHQQ", eager_length, read_pid_on_fep, read_resource_index, read_offset,
                       read_match_bits)
    return Seg("ses_rendezvous", data, eager_length=eager_length,
               read_pid_on_fep=read_pid_on_fep, read_resource_index=read_resource_index,
               read_offset=read_offset, read_match_bits=read_match_bits)


def _rsp_head(opcode, return_code, lst=0, ver=0):
    return bytes([lst << 6 | opcode, ver << 6 | return_code])


def ses_rsp(opcode, return_code, message_id, ri_generation, job_id, modified_length, lst=0):
    """uet.md §4.6."""
    data = _rsp_head(opcode, return_code, lst) + struct.pack(">HB", message_id, ri_generation) + \
        u24(job_id) + struct.pack(">I", modified_length)
    return Seg("ses_rsp", data, list=lst, opcode=opcode, ver=0, return_code=return_code,
               message_id=message_id, ri_generation=ri_generation, job_id=job_id,
               modified_length=modified_length)


def ses_rsp_data(return_code, message_id, job_id, read_req_message_id, payload_length,
                 modified_length, message_offset, lst=0):
    """uet.md §4.7."""
    data = _rsp_head(RSP_WITH_DATA, return_code, lst) + struct.pack(">HB", message_id, 0) + \
        u24(job_id) + struct.pack(">HHII", read_req_message_id, payload_length, modified_length,
                                  message_offset)
    return Seg("ses_rsp_data", data, list=lst, opcode=RSP_WITH_DATA, ver=0,
               return_code=return_code, message_id=message_id, job_id=job_id,
               read_req_message_id=read_req_message_id, payload_length=payload_length,
               modified_length=modified_length, message_offset=message_offset)


def ses_rsp_data_small(return_code, payload_length, lst=0):
    """uet.md §4.8."""
    return Seg("ses_rsp_data_small",
               _rsp_head(RSP_WITH_DATA, return_code, lst) + struct.pack(">H", payload_length),
               list=lst, opcode=RSP_WITH_DATA, ver=0, return_code=return_code,
               payload_length=payload_length)


def bth(opcode, dest_qp, psn, pad_cnt=0, se=0, mig=0, pkey=0xFFFF, fecn=0, becn=0, ack_req=0,
        tver=0):
    """rocev2.md §2."""
    data = struct.pack(">BBHII", opcode, se << 7 | mig << 6 | pad_cnt << 4 | tver, pkey,
                       (fecn << 31) | (becn << 30) | dest_qp, (ack_req << 31) | psn)
    return Seg("bth", data, opcode=opcode, se=se, mig=mig, pad_cnt=pad_cnt, tver=tver, pkey=pkey,
               fecn=fecn, becn=becn, dest_qp=dest_qp, ack_req=ack_req, psn=psn)


def reth(va, rkey, dma_length):
    return Seg("reth", struct.pack(">QII", va, rkey, dma_length), va=va, rkey=rkey,
               dma_length=dma_length)


def aeth(syndrome_type, syndrome_value, msn):
    """rocev2.md §3.2: syndrome = {rsvd 1b, type 2b, value 5b}, MSN u24."""
    return Seg("aeth", bytes([syndrome_type << 5 | syndrome_value]) + u24(msn),
               syndrome_type=syndrome_type, syndrome_value=syndrome_value, msn=msn)


def atomic_eth(va, rkey, swap_add, compare):
    return Seg("atomic_eth", struct.pack(">QIQQ", va, rkey, swap_add, compare), va=va, rkey=rkey,
               swap_add=swap_add, compare=compare)


def atomic_ack_eth(orig_data):
    return Seg("atomic_ack_eth", struct.pack(">Q", orig_data), orig_data=orig_data)


def immdt(imm):
    return Seg("immdt", struct.pack(">I", imm), imm=imm)


def ieth(rkey):
    return Seg("ieth", struct.pack(">I", rkey), rkey=rkey)


def deth(qkey, src_qp):
    return Seg("deth", struct.pack(">IB", qkey, 0) + u24(src_qp), qkey=qkey, src_qp=src_qp)


def cnp():
    return Seg("cnp", bytes(16), rsvd=bytes(16))


# ================================================================== encapsulation
def mac(s):
    return bytes.fromhex(s.replace(":", ""))


def ip4(s):
    a, b, c, d = (int(x) for x in s.split("."))
    return a << 24 | b << 16 | c << 8 | d


def ip6(s):
    """A fully written-out IPv6 address (eight groups)."""
    return b"".join(int(g, 16).to_bytes(2, "big") for g in s.split(":"))


def csum16(data):
    """RFC 1071 ones'-complement sum of big-endian 16-bit words, complemented."""
    if len(data) % 2:
        data += b"\x00"
    s = sum(struct.unpack(">%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


class Encap:
    """Ethernet [802.1Q] / IPv4 | IPv6 / UDP | UET entropy header."""

    def __init__(self, **kw):
        self.src_mac = mac("02:00:5e:10:00:01")
        self.dst_mac = mac("02:00:5e:10:00:02")
        self.vlan = None  # (pcp, dei, vid)
        self.ipv6 = False
        self.src, self.dst = ip4("10.0.1.17"), ip4("10.0.2.34")
        self.dscp, self.ecn, self.ttl, self.ip_id, self.df = 24, 1, 64, 0x1000, 1
        self.flow_label = 0
        self.ip_only = False
        self.sport, self.dport = 0xC3A5, UET_UDP_PORT
        self.udp_checksum = True
        self.__dict__.update(kw)


def roce_encap(**kw):
    base = dict(src_mac=mac("02:00:c0:ff:ee:01"), dst_mac=mac("02:00:c0:ff:ee:02"),
                src=ip4("192.168.10.5"), dst=ip4("192.168.10.9"), dscp=26, ecn=2,
                sport=0xE29A, dport=ROCE_UDP_PORT, udp_checksum=False)
    base.update(kw)
    return Encap(**base)


def icrc(ip_hdr, ipv6, rest):
    """rocev2.md §6: CRC-32 over 8 bytes of 0xFF, then the IP header, UDP header and BTH with
    their variant fields set to ones, then the rest up to the ICRC. Stored little-endian."""
    ip_hdr = bytearray(ip_hdr)
    if ipv6:
        ip_hdr[0] |= 0x0F           # traffic class, high nibble of byte 0 is the version
        ip_hdr[1:4] = b"\xff" * 3   # traffic class low nibble and flow label
        ip_hdr[7] = 0xFF            # hop limit
    else:
        ip_hdr[1] = 0xFF            # TOS (DSCP and ECN)
        ip_hdr[8] = 0xFF            # TTL
        ip_hdr[10:12] = b"\xff\xff"  # header checksum
    rest = bytearray(rest)
    rest[6:8] = b"\xff\xff"         # UDP checksum
    rest[8 + 4] = 0xFF              # BTH byte 4: FECN, BECN, reserved
    crc = zlib.crc32(b"\xff" * 8 + bytes(ip_hdr) + bytes(rest)) & 0xFFFFFFFF
    return struct.pack("<I", crc)


class Frame:
    """A frame and the headers it is made of, with their offsets."""

    def __init__(self, data, segs, payload):
        self.data, self.segs, self.payload = bytearray(data), segs, payload  # segs: (off, Seg)
        self.seal, self.plain = None, self.data  # a sealed frame's bytes once opened

    def offset(self, hid):
        return next(off for off, s in self.segs if s.hid == hid)


class Seal:
    """uet.md §5: the secure domain key of the frame's association and the domain's mode.
    Server mode (§5.3) names the client (an IPv4 address, the frame's source or destination);
    sealing keeps the key and IV mask derived for it (what that client is given)."""

    def __init__(self, key, mode="cluster", rekey_mask=0x0000FFFF00000000, rekey_shift=32,
                 client=None):
        self.key, self.mode = bytes.fromhex(key), mode
        self.rekey_mask, self.rekey_shift = rekey_mask, rekey_shift
        self.client, self.client_key = client, None
        assert (mode == "server") == (client is not None)


def kdf(master, label, context):
    """uet.md §5.3: SP 800-108 counter mode, PRF AES-256-CMAC, an 8-bit counter from 1, then
    label || 0x00 || context || L (352, two bytes); 44 bytes: key, then IV mask."""
    from cryptography.hazmat.primitives import cmac
    from cryptography.hazmat.primitives.ciphers import algorithms
    out = b""
    for i in (1, 2, 3):
        c = cmac.CMAC(algorithms.AES(master))
        c.update(bytes([i]) + label + b"\x00" + context + struct.pack(">H", 352))
        out += c.finalize()
    return out[:32], out[32:44]


def seal_body(enc, tss_seg, plain, seal):
    """uet.md §5.2: AES-256-GCM over everything after the TSS header, the 16-byte tag after it.
    AAD: IP source and destination, the 4 bytes after the IP header (entropy header, or the UDP
    ports), the TSS header. IV: SSI, else the IPv4 source, || TSC, XOR the IV mask."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    g = tss_seg.given
    epoch, counter = g["tsc"] >> 48, g["tsc"] & (1 << 48) - 1
    rekey = (counter & seal.rekey_mask) >> seal.rekey_shift
    if g["sp"]:
        source, context = g["ssi"], struct.pack(">HII", epoch, rekey, g["ssi"])
    elif enc.ipv6:  # uet.md §5.2, §5.3: the IV starts with the SDI; the 26-byte context
        source, context = g["sdi"], bytes(4) + struct.pack(">HI", epoch, rekey) + enc.src
    else:
        source, context = enc.src, struct.pack(">HII", epoch, rekey, enc.src)
    if seal.mode == "direct":
        key, mask = seal.key, bytes(12)
    elif seal.mode == "server":  # U2 over the client, rekey 0; IPv4 without an SSI here
        assert not g["sp"] and not enc.ipv6 and seal.client in (enc.src, enc.dst)
        key, mask = kdf(seal.key, b"U2", struct.pack(">HII", epoch, 0, seal.client))
        seal.client_key = (key, mask)
    else:
        key, mask = kdf(seal.key, b"U1", context)
    iv = bytes(a ^ b for a, b in zip(struct.pack(">IQ", source, g["tsc"]), mask))
    four = struct.pack(">HH", enc.sport, 0 if enc.ip_only else enc.dport)
    addrs = enc.src + enc.dst if enc.ipv6 else struct.pack(">II", enc.src, enc.dst)
    aad = addrs + four + tss_seg.data
    return AESGCM(key).encrypt(iv, plain, aad)  # ciphertext || tag


def build(enc, transport, payload=b"", roce=False, pad=None, tail=b"", seal=None):
    """Assembles a frame; computes lengths, the IPv4 checksum, the ICRC and the UDP checksum.
    `tail` is appended after the headers and payload and counts as payload bytes (only used
    for a deliberately malformed frame). With `seal`, transport[0] is the TSS header and the
    rest is sealed (uet.md §5); Frame.plain keeps the bytes as they read once opened."""
    body = b"".join(s.data for s in transport) + payload + tail
    plain_body = body
    if seal is not None:
        assert transport[0].hid in ("tss", "tss_sp") and not roce and not tail
        inner = b"".join(s.data for s in transport[1:]) + payload
        body = transport[0].data + seal_body(enc, transport[0], inner, seal)
        plain_body = transport[0].data + inner + body[-16:]
    if roce:
        if pad is None:
            pad = (-len(payload)) % 4
        body += bytes(pad)
    l4_len = (4 if enc.ip_only else 8) + len(body) + (4 if roce else 0)
    proto = UET_IP_PROTO if enc.ip_only else IPPROTO_UDP

    l2 = []
    l3_type = ETH_IPV6 if enc.ipv6 else ETH_IPV4
    if enc.vlan:
        pcp, dei, vid = enc.vlan
        l2.append(Seg("eth", enc.dst_mac + enc.src_mac + struct.pack(">H", ETH_VLAN),
                      dst=enc.dst_mac, src=enc.src_mac, ethertype=ETH_VLAN))
        l2.append(Seg("vlan", struct.pack(">HH", pcp << 13 | dei << 12 | vid, l3_type),
                      pcp=pcp, dei=dei, vid=vid, ethertype=l3_type))
    else:
        l2.append(Seg("eth", enc.dst_mac + enc.src_mac + struct.pack(">H", l3_type),
                      dst=enc.dst_mac, src=enc.src_mac, ethertype=l3_type))

    if enc.ipv6:
        word0 = 6 << 28 | enc.dscp << 22 | enc.ecn << 20 | enc.flow_label
        ip = struct.pack(">IHBB", word0, l4_len, proto, enc.ttl) + enc.src + enc.dst
        l3 = Seg("ipv6", ip, version=6, dscp=enc.dscp, ecn=enc.ecn, flow_label=enc.flow_label,
                 payload_length=l4_len, next_header=proto, hop_limit=enc.ttl, src=enc.src,
                 dst=enc.dst)
    else:
        total = 20 + l4_len
        hdr = lambda c: struct.pack(">BBHHHBBHII", 0x45, enc.dscp << 2 | enc.ecn, total, enc.ip_id,
                                    enc.df << 14, enc.ttl, proto, c, enc.src, enc.dst)
        cs = csum16(hdr(0))
        ip = hdr(cs)
        l3 = Seg("ipv4", ip, version=4, ihl=5, dscp=enc.dscp, ecn=enc.ecn, total_length=total,
                 id=enc.ip_id, df=enc.df, mf=0, frag_offset=0, ttl=enc.ttl, protocol=proto,
                 checksum=cs, src=enc.src, dst=enc.dst)

    if enc.ip_only:
        l4 = Seg("uet_entropy", struct.pack(">HH", enc.sport, 0), entropy=enc.sport)
        segment = l4.data + body
    else:
        udp0 = struct.pack(">HHHH", enc.sport, enc.dport, l4_len, 0)
        segment = udp0 + body
        if roce:
            segment += icrc(ip, enc.ipv6, segment)
        cs = 0
        if enc.udp_checksum:
            if enc.ipv6:
                pseudo = enc.src + enc.dst + struct.pack(">IxxxB", l4_len, IPPROTO_UDP)
            else:
                pseudo = struct.pack(">IIxBH", enc.src, enc.dst, IPPROTO_UDP, l4_len)
            cs = csum16(pseudo + segment) or 0xFFFF  # RFC 768: 0 is sent as all ones
        segment = segment[:6] + struct.pack(">H", cs) + segment[8:]
        l4 = Seg("udp", segment[:8], sport=enc.sport, dport=enc.dport, length=l4_len, checksum=cs)

    headers = l2 + [l3, l4] + list(transport)
    data = b"".join(s.data for s in l2) + ip + segment
    segs, off = [], 0
    for s in headers:
        segs.append((off, s))
        off += len(s.data)
    f = Frame(data, segs, payload + tail)
    if seal is not None:
        f.seal = seal
        f.plain = bytearray(data[:len(data) - len(body)] + plain_body)
    return f


# ========================================================================= vectors
class Vector:
    def __init__(self, name, comment, frame, error="ok", spec=None):
        self.name, self.comment, self.frame, self.error, self.spec = name, comment, frame, error, spec


VECTORS = []


def vec(name, comment, frame, error="ok", spec=None):
    assert all(v.name != name for v in VECTORS), name
    VECTORS.append(Vector(name, comment, frame, error, spec))


def pattern(n, seed):
    """n bytes of a simple deterministic pattern, different per seed."""
    out, x = bytearray(), seed & 0xFFFFFFFF
    for _ in range(n):
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        out.append(x >> 16 & 0xFF)
    return bytes(out)


# A job and its endpoints, shared by several UET vectors.
# uet.md §5.3: the master key of the spec's KDF example, a published test key.
KDF_EXAMPLE_KEY = "34448a064292601b11a0978f56a2d34cf3fc35ede1a6bc04f8db3e5243a2b0ca"
JOB = dict(ri_generation=7, job_id=5913633, pid_on_fep=695, resource_index=317)
# uet.md §4.1: the default job, PID and resource index (all zero), as the engine sends them.
DEFAULT_JOB = dict(ri_generation=0, job_id=0, pid_on_fep=0, resource_index=0)
# Initiator to target (Encap's own addresses) and back.
FWD = dict(src=ip4("10.0.1.17"), dst=ip4("10.0.2.34"))
BACK = dict(src=ip4("10.0.2.34"), dst=ip4("10.0.1.17"))


def uet_vectors():
    # ---- PDS request types, with the SES request headers
    p = b"UET RUD write, first packet of 1 MiB"
    vec("uet_rud_req_std_write_first",
        "RUD_REQ (AR) carrying a standard SES WRITE, SOM=1 EOM=0 with header data.",
        build(Encap(ip_id=0x2F41), [
            pds_req(RUD_REQ, NH_STD, psn=305419896, spdcid=2620, dpdcid=7943,
                    clear_psn_offset=-37, ar=1),
            ses_std(OP_WRITE, message_id=40213, buffer_offset=0x00007F3A9C001000,
                    initiator=0x1D2E3F40, match_bits=0x8899AABBCCDDEEF1,
                    request_length=1048576, som=1, eom=0, hd=1, header_data=0x0123456789ABCDEF,
                    dc=1, **JOB)], p))

    p = b"first message on a new PDC"
    vec("uet_rud_req_syn_std_send",
        "RUD_REQ with SYN: the DPDCID slot holds PDC info (use reserved PDC, PSN offset 42).",
        build(Encap(ip_id=0x2F42, sport=0xD00D), [
            pds_req(RUD_REQ, NH_STD, psn=2654435769, spdcid=561, syn=1, ar=1, use_rsv_pdc=1,
                    psn_offset=42, clear_psn_offset=-42),
            ses_std(OP_SEND, message_id=1, ri_generation=3, job_id=41394, pid_on_fep=16,
                    resource_index=254, buffer_offset=0, initiator=0x00000042, match_bits=0,
                    request_length=len(p), som=1, eom=1)], p))

    p = pattern(64, 3)
    vec("uet_rod_req_std_tsend_middle",
        "Retransmitted ROD_REQ carrying a standard SES TAGGED_SEND, SOM=0: bytes 32-39 hold "
        "payload length and message offset.",
        build(Encap(ip_id=0x2F43, sport=0xC1C2, ecn=0), [
            pds_req(ROD_REQ, NH_STD, psn=180150001, spdcid=4099, dpdcid=12289,
                    clear_psn_offset=-1024, retx=1),
            ses_std(OP_TAGGED_SEND, message_id=777, buffer_offset=0x0000000000002000,
                    initiator=0x00ABCDEF, match_bits=0x00000000DEADBEEF, request_length=32768,
                    som=0, eom=0, payload_length=len(p), message_offset=8192, **JOB)], p))

    p = b"medium send with 8 bytes of header data"
    vec("uet_rud_cc_req_medium_send",
        "RUD_CC_REQ (CCC ID, credit target) carrying a medium SES SEND with HD=1.",
        build(Encap(ip_id=0x2F44, sport=0xE4E5), [
            pds_req(RUD_CC_REQ, NH_MEDIUM, psn=2147483632, spdcid=1000, dpdcid=2001,
                    clear_psn_offset=-5, ccc_id=44, credit_target=128000),
            ses_medium(OP_SEND, request_length=len(p), ri_generation=9, job_id=1193046,
                       pid_on_fep=1365, resource_index=2730, initiator=0x0BADF00D,
                       match_bits=0x1122334455667788, som=1, eom=1, hd=1,
                       header_data=0xFEEDFACECAFEBEEF)], p))

    p = pattern(24, 5)
    vec("uet_rod_cc_req_small_write",
        "ROD_CC_REQ carrying a small SES WRITE.",
        build(Encap(ip_id=0x2F45, sport=0xF00F, dscp=10), [
            pds_req(ROD_CC_REQ, NH_SMALL, psn=3735928559, spdcid=33000, dpdcid=60001,
                    clear_psn_offset=-3, ar=1, ccc_id=145, credit_target=40960),
            ses_small(OP_WRITE, request_length=len(p), ri_generation=12, job_id=8388607,
                      pid_on_fep=4095, resource_index=1, buffer_offset=0x00000000ABCD0040,
                      som=1, eom=1)], p))

    vec("uet_rudi_req_small_read",
        "RUDI_REQ (packet ID, no PDC) carrying a small SES READ of 20 bytes; no payload.",
        build(Encap(ip_id=0x2F46, sport=0xCAFE), [
            pds_rudi(RUDI_REQ, NH_SMALL, pkt_id=3235778100),
            ses_small(OP_READ, request_length=20, ri_generation=1, job_id=66051,
                      pid_on_fep=258, resource_index=771, buffer_offset=0x0000100000000200,
                      som=1, eom=1)]))

    p = pattern(20, 7)
    vec("uet_rudi_resp_rsp_data_small",
        "RUDI_RESP (ECN echo M) carrying a small SES response with data: the answer to "
        "uet_rudi_req_small_read.",
        build(Encap(ip_id=0x2F47, sport=0xBEAD, **BACK), [
            pds_rudi(RUDI_RESP, NH_RSP_DATA_SMALL, pkt_id=3235778100, m=1),
            ses_rsp_data_small(RC_OK, payload_length=len(p))], p))

    p = b"datagram"
    vec("uet_uud_req_std_dgram",
        "UUD_REQ carrying a standard SES DGRAM_SEND.",
        build(Encap(ip_id=0x2F48, sport=0xD1D2), [
            pds_uud(NH_STD),
            ses_std(OP_DGRAM_SEND, message_id=4242, buffer_offset=0, initiator=0x00000007,
                    match_bits=0x000000000000FFFF, request_length=len(p), som=1, eom=1, hd=1,
                    header_data=0x0000000000000ABC, **JOB)], p))

    # ---- ACK / NACK / CTRL
    vec("uet_ack_rsp",
        "ACK carrying a SES response (RESPONSE, OK) for the message of "
        "uet_rud_req_std_write_first.",
        build(Encap(ip_id=0x3A01, sport=0xA1B2, **BACK), [
            pds_ack(NH_RSP, cack_psn=305419900, ack_psn_offset=2, spdcid=7943, dpdcid=2620),
            ses_rsp(RSP_RESPONSE, RC_OK, message_id=40213, ri_generation=7, job_id=5913633,
                    modified_length=1048576)]))

    vec("uet_ack_clear_req",
        "Bare ACK echoing ECN (M) and a retransmission, asking for a clear (REQ=1).",
        build(Encap(ip_id=0x3A02, sport=0xA1B3, **BACK), [
            pds_ack(NH_NONE, cack_psn=180150000, ack_psn_offset=-2, spdcid=12289, dpdcid=4099,
                    m=1, retx=1, req=1)]))

    vec("uet_ack_cc_nscc",
        "ACK_CC with SACK bitmap and NSCC state (service time, RC, cwnd penalty, bytes, OOO). "
        "cc_flags is non-zero, as a peer may send it (uet.md §7.2: we send 0, ignore on receive).",
        build(Encap(ip_id=0x3A03, sport=0xA1B4, **BACK), [
            pds_ack_cc_nscc(NH_NONE, cack_psn=2147483000, ack_psn_offset=17, spdcid=2001,
                            dpdcid=1000, cc_flags=0x2, mpr=128, sack_psn_offset=8,
                            sack_bitmap=0xF0F00000FF00AB01, service_time=1234, rc=1,
                            rcv_cwnd_pend=42, rcvd_bytes=109517, ooo_count=9, m=1)]))

    vec("uet_ack_cc_credit",
        "ACK_CC with credit (RCCC) state, answering a probe (P).",
        build(Encap(ip_id=0x3A04, sport=0xA1B5, **BACK), [
            pds_ack_cc_credit(NH_NONE, cack_psn=3735928000, ack_psn_offset=300, spdcid=60001,
                              dpdcid=33000, cc_flags=0, mpr=64, sack_psn_offset=16,
                              sack_bitmap=0x00000000000F0F3D, credit=800000, ooo_count=3,
                              p=1)]))

    vec("uet_ack_ccx",
        "ACK_CCX with a 16-byte extended CC state.",
        build(Encap(ip_id=0x3A05, sport=0xA1B6, **BACK), [
            pds_ack_ccx(NH_NONE, cack_psn=99999999, ack_psn_offset=-1, spdcid=321, dpdcid=654,
                        cc_type=1, cc_flags=0, mpr=255, sack_psn_offset=24,
                        sack_bitmap=0x8000000000000001,
                        ccx_state=bytes.fromhex("00112233445566778899aabbccddeeff"), req=2)]))

    vec("uet_nack_trimmed",
        "NACK TRIMMED for the packet after uet_rud_req_std_write_first.",
        build(Encap(ip_id=0x3A06, sport=0xA1B7, **BACK), [
            pds_nack(0x01, nack_psn=305419897, spdcid=7943, dpdcid=2620,
                     nack_payload=305419899, m=1)]))

    vec("uet_nack_rudi_no_pkt_buffer",
        "NACK with NT set: the PSN slot holds a RUDI packet ID (NO_PKT_BUFFER).",
        build(Encap(ip_id=0x3A07, sport=0xA1B8, **BACK), [
            pds_nack(0x07, nack_psn=3235778100, spdcid=0, dpdcid=0, nack_payload=0, nt=1)]))

    vec("uet_nack_ccx",
        "NACK_CCX (RCVR_INFER_LOSS) with a 16-byte extended CC state, from a peer that fills "
        "in a vendor code (we send 0, uet.md §3.10).",
        build(Encap(ip_id=0x3A08, sport=0xA1B9, **BACK), [
            pds_nack(0x1A, nack_psn=2147483640, spdcid=2001, dpdcid=1000,
                     nack_payload=2147483645, vendor_code=0x5C, retx=1,
                     ccx_state=bytes.fromhex("f0e1d2c3b4a5968778695a4b3c2d1e0f"))]))

    vec("uet_ctrl_probe",
        "CTRL PROBE (AR): the payload is the SACK bitmap base PSN.",
        build(Encap(ip_id=0x3A09, sport=0xC0C1), [
            pds_ctrl(CTL_PROBE, probe_opaque=0x5EED, psn=305419910, spdcid=2620, dpdcid=7943,
                     ctrl_payload=305419896, ar=1)]))

    vec("uet_ctrl_credit",
        "CTRL CREDIT: the payload is the credit granted.",
        build(Encap(ip_id=0x3A0A, sport=0xC0C2, **BACK), [
            pds_ctrl(CTL_CREDIT, probe_opaque=0, psn=0x00A0B0C0, spdcid=60001, dpdcid=33000,
                     ctrl_payload=196608)]))

    vec("uet_ctrl_req_ack_retx",
        "Retransmitted CTRL REQ_ACK: the payload is a message ID in the low 16 bits.",
        build(Encap(ip_id=0x3A0B, sport=0xC0C3), [
            pds_ctrl(CTL_REQ_ACK, probe_opaque=0, psn=180150010, spdcid=4099, dpdcid=12289,
                     ctrl_payload=777, retx=1)]))

    # ---- SES extension headers and responses
    p = struct.pack(">Q", 0x0000000000000005)
    vec("uet_rud_req_std_atomic_sum",
        "Standard SES ATOMIC with the atomic extension header (SUM, UINT64); the operand is "
        "the payload.",
        build(Encap(ip_id=0x4B01, sport=0x9A9B), [
            pds_req(RUD_REQ, NH_STD, psn=305419911, spdcid=2620, dpdcid=7943,
                    clear_psn_offset=-52),
            ses_std(OP_ATOMIC, message_id=40230, buffer_offset=0x00007F3A9C0FF000,
                    initiator=0x1D2E3F40, match_bits=0x8899AABBCCDDEEF1, request_length=8,
                    som=1, eom=1, **JOB),
            ses_atomic(0x02, 0x07, 0x03)], p))

    vec("uet_rod_req_std_fetch_cswap",
        "Standard SES FETCHING_ATOMIC with the compare-and-swap extension (CSWAP, UINT32).",
        build(Encap(ip_id=0x4B02, sport=0x9A9C), [
            pds_req(ROD_REQ, NH_STD, psn=180150020, spdcid=4099, dpdcid=12289,
                    clear_psn_offset=-19, ar=1),
            ses_std(OP_FETCHING_ATOMIC, message_id=778, buffer_offset=0x0000000000004000,
                    initiator=0x00ABCDEF, match_bits=0x0000000012340000, request_length=4,
                    som=1, eom=1, **JOB),
            ses_cas(0x0D, 0x05, 0x01, compare=bytes(12) + bytes.fromhex("0000002a"),
                    swap=bytes(12) + bytes.fromhex("cafe0001"))]))

    p = pattern(32, 11)
    vec("uet_rud_req_std_rendezvous_send",
        "Standard SES RENDEZVOUS_SEND with the rendezvous extension; 32 eager bytes follow.",
        build(Encap(ip_id=0x4B03, sport=0x9A9D), [
            pds_req(RUD_REQ, NH_STD, psn=2654435800, spdcid=561, dpdcid=1717,
                    clear_psn_offset=-8, ar=1),
            ses_std(OP_RENDEZVOUS_SEND, message_id=2, ri_generation=3, job_id=41394,
                    pid_on_fep=16, resource_index=254, buffer_offset=0, initiator=0x00000042,
                    match_bits=0x0F0F0F0F0F0F0F0F, request_length=1 << 20, som=1, eom=1,
                    hd=1, header_data=0x000000000BADCAFE),
            ses_rendezvous(eager_length=len(p), read_pid_on_fep=6844, read_resource_index=165,
                           read_offset=0x0000100000000000, read_match_bits=0x5555AAAA0000FFFF)],
              p))

    p = pattern(40, 13)
    vec("uet_ack_rsp_data_read",
        "ACK carrying read response data: SES response with data (RESPONSE_W_DATA).",
        build(Encap(ip_id=0x4B04, sport=0x9A9E, **BACK), [
            pds_ack(NH_RSP_DATA, cack_psn=2654435801, ack_psn_offset=0, spdcid=1717, dpdcid=561),
            ses_rsp_data(RC_OK, message_id=3, job_id=41394, read_req_message_id=40214,
                         payload_length=len(p), modified_length=4096, message_offset=8192)], p))

    # ---- TSS: sealed frames, one per PDS type (uet.md §5). The key is the KDF example's
    # master key (uet.md §5.3), a published test key.
    kdf_key = KDF_EXAMPLE_KEY
    cluster, direct = Seal(kdf_key), Seal(kdf_key[::-1], mode="direct")
    p = pattern(48, 17)
    vec("uet_tss_rud_req_std",
        "Sealed (cluster mode, SP=0, AN=1): RUD_REQ and standard SES SEND, 48 payload bytes, "
        "the 16-byte tag after them.",
        build(Encap(ip_id=0x5C01, sport=0x8E8F), [
            tss(an=1, sdi=48879, tsc=0x0000000100000A2B),
            pds_req(RUD_REQ, NH_STD, psn=1234567890, spdcid=77, dpdcid=88, clear_psn_offset=-4),
            ses_std(OP_SEND, message_id=31, buffer_offset=0, initiator=0x00000099,
                    match_bits=0, request_length=48, som=1, eom=1, **JOB)], p, seal=cluster))

    vec("uet_tss_sp_ack",
        "Sealed with an SSI (cluster mode, SP=1, AN=0; the SSI keys and starts the IV): a bare "
        "ACK.",
        build(Encap(ip_id=0x5C02, sport=0x8E90, **BACK), [
            tss(an=0, sdi=1193046, tsc=0x00000000DEADC0DE, ssi=0x0A000111),
            pds_ack(NH_NONE, cack_psn=1234567891, ack_psn_offset=0, spdcid=88, dpdcid=77)],
              seal=cluster))

    p = pattern(24, 5)
    vec("uet_tss_rod_cc_req_small_write",
        "Sealed (direct mode: the domain key is the packet key, no IV mask): ROD_CC_REQ and a "
        "small SES WRITE.",
        build(Encap(ip_id=0x5C03, sport=0xF00F), [
            tss(an=0, sdi=7, tsc=0x0000000000000001),
            pds_req(ROD_CC_REQ, NH_SMALL, psn=3735928559, spdcid=33000, dpdcid=60001,
                    clear_psn_offset=-3, ar=1, ccc_id=145, credit_target=40960),
            ses_small(OP_WRITE, request_length=len(p), ri_generation=12, job_id=8388607,
                      pid_on_fep=4095, resource_index=1, buffer_offset=0x00000000ABCD0040,
                      som=1, eom=1)], p, seal=direct))

    vec("uet_tss_rudi_req_small_read",
        "Sealed RUDI_REQ with a small SES READ; epoch 0x1DC0 and a rekey value in the TSC "
        "(the KDF context of uet.md §5.3).",
        build(Encap(ip_id=0x5C04, sport=0xCAFE), [
            tss(an=0, sdi=48879, tsc=0x1DC074E500000023),
            pds_rudi(RUDI_REQ, NH_SMALL, pkt_id=3235778100),
            ses_small(OP_READ, request_length=20, ri_generation=1, job_id=66051,
                      pid_on_fep=258, resource_index=771, buffer_offset=0x0000100000000200,
                      som=1, eom=1)], seal=cluster))

    p = pattern(20, 7)
    vec("uet_tss_rudi_resp_rsp_data_small",
        "Sealed RUDI_RESP with a small SES response with data.",
        build(Encap(ip_id=0x5C05, sport=0xBEAD, **BACK), [
            tss(an=0, sdi=48879, tsc=0x0000000000000002),
            pds_rudi(RUDI_RESP, NH_RSP_DATA_SMALL, pkt_id=3235778100),
            ses_rsp_data_small(RC_OK, payload_length=len(p))], p, seal=cluster))

    p = b"datagram"
    vec("uet_tss_uud_req_std_dgram",
        "Sealed UUD_REQ with a standard SES DGRAM_SEND, in the IP-only form: the AAD takes the "
        "entropy header where UDP frames give their ports.",
        build(Encap(ip_id=0x5C06, ip_only=True, sport=0xD1D2), [
            tss(an=1, sdi=48879, tsc=0x0000000000000003),
            pds_uud(NH_STD),
            ses_std(OP_DGRAM_SEND, message_id=4242, buffer_offset=0, initiator=0x00000007,
                    match_bits=0x000000000000FFFF, request_length=len(p), som=1, eom=1, **JOB)],
              p, seal=cluster))

    vec("uet_tss_ack_cc_nscc",
        "Sealed ACK_CC with a SACK bitmap and NSCC state.",
        build(Encap(ip_id=0x5C07, sport=0xA1B4, **BACK), [
            tss(an=0, sdi=48879, tsc=0x0000000000000004),
            pds_ack_cc_nscc(NH_NONE, cack_psn=2147483000, ack_psn_offset=17, spdcid=2001,
                            dpdcid=1000, cc_flags=0, mpr=16, sack_psn_offset=8,
                            sack_bitmap=0x00000000000F00FF, service_time=120, rc=0,
                            rcv_cwnd_pend=0, rcvd_bytes=65536, ooo_count=3)], seal=cluster))

    vec("uet_tss_nack_trimmed",
        "Sealed NACK TRIMMED: the answer to a trimmed sealed request is sealed too.",
        build(Encap(ip_id=0x5C08, sport=0xA1B5, **BACK), [
            tss(an=0, sdi=48879, tsc=0x0000000000000005),
            pds_nack(0x01, nack_psn=1234567890, spdcid=88, dpdcid=77, nack_payload=1234567890)],
              seal=cluster))

    p = pattern(36, 23)
    vec("uet_tss_ipv6_rod_req_std",
        "Sealed over IPv6 without an SSI (cluster mode): the IV starts with the SDI, the KDF "
        "takes the 26-byte context with the source address, the AAD both 16-byte addresses.",
        build(Encap(ipv6=True, src=ip6("fd00:0:0:1:0:0:0:11"), dst=ip6("fd00:0:0:2:0:0:0:22"),
                    dscp=24, ecn=2, ttl=63, flow_label=0x5A3C1, sport=0xC6C7), [
            tss(an=0, sdi=48879, tsc=0x0000000000000007),
            pds_req(ROD_REQ, NH_STD, psn=777777777, spdcid=3030, dpdcid=4040,
                    clear_psn_offset=-100, ar=1),
            ses_std(OP_SEND, message_id=9090, buffer_offset=0, initiator=0x00001234,
                    match_bits=0, request_length=len(p), som=1, eom=1, rel=1, **JOB)], p,
              seal=cluster))

    p = b"medium send, sealed"
    vec("uet_tss_rud_cc_req_medium_send",
        "Sealed RUD_CC_REQ (RCCC credit target) with a medium SES SEND.",
        build(Encap(ip_id=0x5C0A, sport=0xE4E5), [
            tss(an=0, sdi=48879, tsc=0x0000000000000008),
            pds_req(RUD_CC_REQ, NH_MEDIUM, psn=2147483632, spdcid=1000, dpdcid=2001,
                    clear_psn_offset=-5, ccc_id=44, credit_target=128000),
            ses_medium(OP_SEND, request_length=len(p), ri_generation=9, job_id=1193046,
                       pid_on_fep=1365, resource_index=2730, initiator=0x0BADF00D,
                       match_bits=0x1122334455667788, som=1, eom=1, hd=0,
                       buffer_offset=0)], p, seal=cluster))

    vec("uet_tss_ack_ccx",
        "Sealed ACK_CCX: 16 bytes of extended CC state.",
        build(Encap(ip_id=0x5C0B, sport=0xA1B7, **BACK), [
            tss(an=1, sdi=48879, tsc=0x0000000000000009),
            pds_ack_ccx(NH_NONE, cack_psn=99999999, ack_psn_offset=-1, spdcid=321, dpdcid=654,
                        cc_type=1, cc_flags=0, mpr=255, sack_psn_offset=24,
                        sack_bitmap=0x8000000000000001,
                        ccx_state=bytes.fromhex("00112233445566778899aabbccddeeff"), req=2)],
              seal=cluster))

    vec("uet_tss_nack_ccx",
        "Sealed NACK_CCX, direct mode.",
        build(Encap(ip_id=0x5C0C, sport=0xA1B8, **BACK), [
            tss(an=0, sdi=7, tsc=0x000000000000000A),
            pds_nack(0x1A, nack_psn=2147483640, spdcid=2001, dpdcid=1000,
                     nack_payload=2147483645, vendor_code=0x5C, retx=1,
                     ccx_state=bytes.fromhex("f0e1d2c3b4a5968778695a4b3c2d1e0f"))],
              seal=direct))

    vec("uet_tss_ctrl_credit",
        "Sealed CTRL CREDIT (RCCC grant).",
        build(Encap(ip_id=0x5C09, sport=0xA1B6, **BACK), [
            tss(an=0, sdi=48879, tsc=0x0000000000000006),
            pds_ctrl(CTL_CREDIT, probe_opaque=0, psn=0x00A0B0C0, spdcid=60001, dpdcid=33000,
                     ctrl_payload=65536)], seal=cluster))

    # ---- encapsulation variants
    p = b"IP-only form: no UDP header"
    vec("uet_ip_only_rud_req",
        "IP-only form: IPv4 protocol 253 and the 4-byte entropy header instead of UDP.",
        build(Encap(ip_id=0x6D01, ip_only=True, sport=0x9A3F), [
            pds_req(RUD_REQ, NH_SMALL, psn=424242424, spdcid=1111, dpdcid=2222,
                    clear_psn_offset=-16),
            ses_small(OP_WRITE, request_length=len(p), buffer_offset=0x0000000000800000,
                      som=1, eom=1, **JOB)], p))

    p = pattern(36, 23)
    vec("uet_ipv6_rod_req_std",
        "UET over IPv6 (flow label, UDP checksum over the IPv6 pseudo-header).",
        build(Encap(ipv6=True, src=ip6("fd00:0:0:1:0:0:0:11"), dst=ip6("fd00:0:0:2:0:0:0:22"),
                    dscp=24, ecn=2, ttl=63, flow_label=0x5A3C1, sport=0xC6C7), [
            pds_req(ROD_REQ, NH_STD, psn=777777777, spdcid=3030, dpdcid=4040,
                    clear_psn_offset=-100, ar=1),
            ses_std(OP_SEND, message_id=9090, buffer_offset=0, initiator=0x00001234,
                    match_bits=0, request_length=len(p), som=1, eom=1, rel=1, **JOB)], p))

    p = pattern(28, 29)
    vec("uet_vlan_rud_req_medium_write",
        "UET behind an 802.1Q tag (PCP 3, VID 100) carrying a medium SES WRITE (HD=0).",
        build(Encap(vlan=(3, 0, 100), ip_id=0x6D02, sport=0xC8C9), [
            pds_req(RUD_REQ, NH_MEDIUM, psn=555555555, spdcid=5150, dpdcid=6160,
                    clear_psn_offset=-2),
            ses_medium(OP_WRITE, request_length=len(p), ri_generation=2, job_id=333333,
                       pid_on_fep=100, resource_index=200, initiator=0x00C0FFEE,
                       match_bits=0x0000AAAA0000BBBB, som=1, eom=1, hd=0,
                       buffer_offset=0x0000000000001F00, ie=1)], p))


def access_vectors():
    """uet.md §4.1 job-based access and tagged sends: the target address in every request,
    and the refusals it can earn (generated after the others, whose IP IDs run in order)."""
    p = pattern(64, 9)
    vec("uet_rud_req_std_tsend_first_rel",
        "RUD_REQ carrying the first packet of a standard SES TAGGED_SEND: the tag in match bits, "
        "64 bits of header data (HD=1), PID on FEP relative to the job (REL=1), resource index "
        "1 of generation 3.",
        build(Encap(ip_id=0x2F4A, sport=0xC3C4, **FWD), [
            pds_req(RUD_REQ, NH_STD, psn=900001, spdcid=17, dpdcid=33, clear_psn_offset=-2),
            ses_std(OP_TAGGED_SEND, message_id=12, ri_generation=3, job_id=0x00BEEF,
                    pid_on_fep=2, resource_index=1, buffer_offset=0, initiator=0,
                    match_bits=0x8000000000000042, request_length=9000, som=1, eom=0, hd=1,
                    header_data=0x0123456789ABCDEF, rel=1)], p))
    p = pattern(200, 11)
    vec("uet_rud_req_syn_std_tsend_only",
        "SYN RUD_REQ carrying a whole single-packet TAGGED_SEND (SOM=EOM=1) in the default "
        "job, PID and resource index (all zero): tag 0x42, no header data.",
        build(Encap(ip_id=0x2F4B, sport=0xC3C5, **FWD), [
            pds_req(RUD_REQ, NH_STD, psn=77, spdcid=5, syn=1, psn_offset=0),
            ses_std(OP_TAGGED_SEND, message_id=1, buffer_offset=0, initiator=0, match_bits=0x42,
                    request_length=len(p), som=1, eom=1, **DEFAULT_JOB)], p))
    for name, rc, what in (("uet_ack_rsp_bad_job_id", RC_BAD_JOB_ID, "another job"),
                           ("uet_ack_rsp_bad_pid", RC_BAD_PID, "a PID not on the FEP"),
                           ("uet_ack_rsp_bad_generation", RC_BAD_GENERATION,
                            "a stale resource index generation")):
        vec(name,
            f"ACK carrying a SES response refusing a request for {what} (uet.md §4.1, §4.9): "
            "nothing was placed; the response names the target's job.",
            build(Encap(ip_id=0x3A0A + rc, sport=0xA1C0, **BACK), [
                pds_ack(NH_RSP, cack_psn=900000, ack_psn_offset=1, spdcid=33, dpdcid=17),
                ses_rsp(RSP_RESPONSE, rc, message_id=12, ri_generation=0, job_id=0x00BEEF,
                        modified_length=0)]))


def atomic_vectors():
    """uet.md §4.5 atomics as the engine lays them out (transport/uet/uet_atomic.cc): operands
    in host order (little-endian), a narrow CAS operand in the first bytes of its 16-byte
    field; the fetched values answer in a response with data (generated last: IP IDs run on)."""
    swap, mask = struct.pack("<Q", 0x1122334455667788), struct.pack("<Q", 0xFFFFFFFF00000000)
    vec("uet_rud_req_syn_std_fetch_mswap",
        "SYN RUD_REQ with a standard SES FETCHING_ATOMIC MSWAP on one UINT64 (atomic "
        "extension, 4 bytes) in the default job, PID and resource index, memory key 1: the "
        "payload carries the swap value, then the mask, each little-endian as in memory.",
        build(Encap(ip_id=0x2F60, sport=0xC3D0, **FWD), [
            pds_req(RUD_REQ, NH_STD, psn=4100, spdcid=17, syn=1, psn_offset=0, ar=1),
            ses_std(OP_FETCHING_ATOMIC, message_id=300, buffer_offset=0x40, initiator=0,
                    match_bits=1, request_length=8, som=1, eom=1, **DEFAULT_JOB),
            ses_atomic(0x13, 0x07, 0x00)], swap + mask))
    vec("uet_rud_req_std_fetch_cswap_le",
        "Standard SES FETCHING_ATOMIC CSWAP_LE on one INT32 (compare-and-swap extension, 36 "
        "bytes): compare -5 and swap 1000 fill the first four bytes of their fields, "
        "little-endian, the rest zero; no payload.",
        build(Encap(ip_id=0x2F61, sport=0xC3D1, **FWD), [
            pds_req(RUD_REQ, NH_STD, psn=4101, spdcid=17, dpdcid=33, clear_psn_offset=-2, ar=1),
            ses_std(OP_FETCHING_ATOMIC, message_id=301, ri_generation=0, job_id=0x00BEEF,
                    pid_on_fep=2, resource_index=0, buffer_offset=0x48, initiator=0,
                    match_bits=3, request_length=4, som=1, eom=1),
            ses_cas(0x0F, 0x04, 0x00, compare=struct.pack("<i", -5) + bytes(12),
                    swap=struct.pack("<i", 1000) + bytes(12))]))
    old = struct.pack("<Q", 0x0000000000000029)
    vec("uet_ack_rsp_data_fetched",
        "ACK answering a fetching atomic: a response with data carrying the value the target "
        "held before (8 bytes), naming the request's message ID.",
        build(Encap(ip_id=0x2F62, sport=0xA1C1, **BACK), [
            pds_ack(NH_RSP_DATA, cack_psn=4099, ack_psn_offset=1, spdcid=33, dpdcid=17),
            ses_rsp_data(RC_OK, message_id=300, job_id=0x00BEEF, read_req_message_id=300,
                         payload_length=8, modified_length=8, message_offset=0)], old))
    vec("uet_ack_rsp_amo_unaligned",
        "ACK carrying a SES response refusing an atomic whose address is not aligned to its "
        "element (AMO_UNALIGNED, uet.md §4.9): nothing was changed.",
        build(Encap(ip_id=0x2F63, sport=0xA1C2, **BACK), [
            pds_ack(NH_RSP, cack_psn=4101, ack_psn_offset=1, spdcid=33, dpdcid=17),
            ses_rsp(RSP_RESPONSE, RC_AMO_UNALIGNED, message_id=302, ri_generation=0,
                    job_id=0x00BEEF, modified_length=0)]))


def rendezvous_vectors():
    """uet.md §4.5.3 as the engine lays it out (transport/uet/uet_rendezvous.cc), with
    payload_bytes 256: one request carrying payload_bytes - 24 eager bytes, read_offset =
    eager_length, the initiator's own key (bit 31, generation 1, source 0); the target's READ
    of the rest names that key."""
    eager = pattern(232, 17)
    vec("uet_rud_req_std_rendezvous_tsend_engine",
        "SYN RUD_REQ with a standard SES RENDEZVOUS_TSEND of a 10000-byte message as the "
        "engine sends it with payload_bytes 256, in the default job, PID and resource index: "
        "tag in match_bits, header data, 232 eager bytes after the rendezvous extension, "
        "which names the initiator's PID 5, resource index 0, read_offset 232 and the "
        "source's key 0x80010000.",
        build(Encap(ip_id=0x2F70, sport=0xC3E0, **FWD), [
            pds_req(RUD_REQ, NH_STD, psn=5200, spdcid=18, syn=1, psn_offset=0, ar=1),
            ses_std(OP_RENDEZVOUS_TSEND, message_id=40, buffer_offset=0, initiator=0,
                    match_bits=0x00000000000000A7, request_length=10000, som=1, eom=1,
                    hd=1, header_data=0x00000000FEEDF00D, **DEFAULT_JOB),
            ses_rendezvous(eager_length=232, read_pid_on_fep=5, read_resource_index=0,
                           read_offset=232, read_match_bits=0x80010000)], eager))
    vec("uet_rud_req_std_read_rendezvous_source",
        "The target's READ of the rest of that message's first chunk: a standard SES READ of "
        "256 bytes at buffer_offset 232 under the source's key, sent to the initiator's PID 5.",
        build(Encap(ip_id=0x2F71, sport=0xC3E1, **BACK), [
            pds_req(RUD_REQ, NH_STD, psn=9000, spdcid=35, syn=1, psn_offset=0, ar=1),
            ses_std(OP_READ, message_id=1, ri_generation=0, job_id=0, pid_on_fep=5,
                    resource_index=0, buffer_offset=232, initiator=0, match_bits=0x80010000,
                    request_length=256, som=1, eom=1)]))


def deferrable_vectors():
    """uet.md §4.2 deferrable sends as the engine lays them out (transport/uet/
    uet_deferrable.cc): the restart token (generation 1, slot 0) in buffer_offset and the
    initiator's PID in `initiator`; the target defers with NO_MATCH and later asks for the
    restart with the token in match_bits, on its own PDC, addressed to that PID."""
    vec("uet_rud_req_std_deferrable_tsend_engine",
        "SYN RUD_REQ with a standard SES DEFERRABLE_TSEND of a 200-byte message as the engine "
        "sends it, in the default job, PID and resource index: restart token 0x10000 in "
        "buffer_offset, the initiator's PID 5 in `initiator`, tag in match_bits, header data.",
        build(Encap(ip_id=0x2F80, sport=0xC3F0, **FWD), [
            pds_req(RUD_REQ, NH_STD, psn=6100, spdcid=19, syn=1, psn_offset=0, ar=1),
            ses_std(OP_DEFERRABLE_TSEND, message_id=50, buffer_offset=0x10000, initiator=5,
                    match_bits=0x00000000000001B3, request_length=200, som=1, eom=1,
                    hd=1, header_data=0x00000000C0FFEE00, **DEFAULT_JOB)], pattern(200, 19)))
    vec("uet_ack_rsp_no_match",
        "ACK carrying a SES response NO_MATCH (uet.md §4.9): the target had no receive for a "
        "deferrable send and deferred it; nothing was placed or staged.",
        build(Encap(ip_id=0x2F81, sport=0xA1D0, **BACK), [
            pds_ack(NH_RSP, cack_psn=6099, ack_psn_offset=1, spdcid=36, dpdcid=19),
            ses_rsp(RSP_RESPONSE, RC_NO_MATCH, message_id=50, ri_generation=0, job_id=0,
                    modified_length=0)]))
    vec("uet_rud_req_std_deferrable_rtr",
        "The target's DEFERRABLE_RTR once a receive is posted for that message: restart token "
        "0x10000 in match_bits, addressed to the initiator's PID 5, no payload.",
        build(Encap(ip_id=0x2F82, sport=0xC3F1, **BACK), [
            pds_req(RUD_REQ, NH_STD, psn=9100, spdcid=37, syn=1, psn_offset=0, ar=1),
            ses_std(OP_DEFERRABLE_RTR, message_id=1, ri_generation=0, job_id=0, pid_on_fep=5,
                    resource_index=0, buffer_offset=0, initiator=0, match_bits=0x10000,
                    request_length=0, som=1, eom=1)]))
    vec("uet_rud_req_std_msg_error",
        "A standard SES MSG_ERROR (uet.md §4.1, our reading): the initiator declares its "
        "message 51 on this PDC in error; no payload.",
        build(Encap(ip_id=0x2F83, sport=0xC3F2, **FWD), [
            pds_req(RUD_REQ, NH_STD, psn=6102, spdcid=19, dpdcid=36, clear_psn_offset=-1,
                    ar=1),
            ses_std(OP_MSG_ERROR, message_id=51, buffer_offset=0, initiator=0, match_bits=0,
                    request_length=0, som=1, eom=1, **DEFAULT_JOB)]))


def server_mode_vectors():
    """uet.md §5.3 server mode: both directions between a client (10.0.1.17) and its server,
    sealed with the client's key, derived with "U2" in epoch 3 from the KDF example's key."""
    kdf_key = KDF_EXAMPLE_KEY
    p = pattern(32, 29)
    vec("uet_tss_server_up_rud_req_std",
        "Sealed in a server-mode domain, client to server: the client's key and IV mask come "
        "from the KDF (label U2) over the client, the frame's source; the IV starts with it.",
        build(Encap(ip_id=0x5C0D, sport=0x9E01), [
            tss(an=0, sdi=49639, tsc=0x0003000000000015),
            pds_req(RUD_REQ, NH_STD, psn=424242, spdcid=12, dpdcid=34, clear_psn_offset=-2),
            ses_std(OP_WRITE, message_id=77, buffer_offset=0x1000, initiator=0x00000011,
                    match_bits=0, request_length=len(p), som=1, eom=1, **JOB)], p,
              seal=Seal(kdf_key, mode="server", client=ip4("10.0.1.17"))))

    vec("uet_tss_server_down_ack",
        "Sealed in a server-mode domain, server to client: the same client's key and IV mask "
        "(the KDF over the destination), the IV starting with the server's address.",
        build(Encap(ip_id=0x5C0E, sport=0x9E02, **BACK), [
            tss(an=0, sdi=49639, tsc=0x0003000000000740),
            pds_ack(NH_NONE, cack_psn=424242, ack_psn_offset=0, spdcid=34, dpdcid=12)],
              seal=Seal(kdf_key, mode="server", client=ip4("10.0.1.17"))))


def roce_vectors():
    qp, psn = 0x0004D2, 0x1A2B3C

    def qp_sport(qpn):
        """rocev2.md §1: one source port per QP, 0xC000 plus a 14-bit hash of the QPN (any
        hash will do for a vector; this is Knuth's multiplicative one)."""
        return 0xC000 | ((qpn * 2654435761) & 0xFFFFFFFF) >> 18

    def rc(name, comment, opcode, ext, payload=b"", enc=None, **bth_kw):
        pad = (-len(payload)) % 4
        vec(name, comment,
            build(enc or roce_encap(ip_id=0x7000 + len(VECTORS),
                                    sport=qp_sport(bth_kw["dest_qp"])),
                  [bth(opcode, pad_cnt=pad, **bth_kw)] + ext, payload, roce=True))

    rc("rocev2_rc_send_first", "RC SEND FIRST.", 0x00, [], pattern(64, 31), dest_qp=qp, psn=psn)
    rc("rocev2_rc_send_middle", "RC SEND MIDDLE.", 0x01, [], pattern(64, 32), dest_qp=qp,
       psn=psn + 1)
    rc("rocev2_rc_send_last", "RC SEND LAST (AckReq).", 0x02, [], pattern(28, 33), dest_qp=qp,
       psn=psn + 2, ack_req=1)
    rc("rocev2_rc_send_only", "RC SEND ONLY with solicited event.", 0x04, [], pattern(16, 34),
       dest_qp=qp, psn=psn + 3, ack_req=1, se=1)
    rc("rocev2_rc_send_only_imm", "RC SEND ONLY WITH IMMEDIATE.", 0x05, [immdt(0xCAFEF00D)],
       pattern(12, 35), dest_qp=qp, psn=psn + 4, ack_req=1)
    rc("rocev2_rc_send_only_pad3", "RC SEND ONLY with a 13-byte payload: pad count 3.", 0x04, [],
       b"thirteen byte", dest_qp=qp, psn=psn + 5, ack_req=1)
    rc("rocev2_rc_send_only_inv", "RC SEND ONLY WITH INVALIDATE (IETH).", 0x17,
       [ieth(0x00BEEF42)], pattern(8, 36), dest_qp=qp, psn=psn + 6, ack_req=1)

    wqp, wpsn = 0x00A1B2, 0x00FFFFFE  # PSN wraps within the write
    rc("rocev2_rc_write_first", "RC RDMA WRITE FIRST with RETH.", 0x06,
       [reth(0x00007F00DEAD0000, 0x00A1B2C3, 192)], pattern(64, 41), dest_qp=wqp, psn=wpsn)
    rc("rocev2_rc_write_middle", "RC RDMA WRITE MIDDLE.", 0x07, [], pattern(64, 42), dest_qp=wqp,
       psn=wpsn + 1)
    rc("rocev2_rc_write_last", "RC RDMA WRITE LAST; PSN wrapped to 0.", 0x08, [], pattern(64, 43),
       dest_qp=wqp, psn=0, ack_req=1)
    rc("rocev2_rc_write_only", "RC RDMA WRITE ONLY with RETH.", 0x0A,
       [reth(0x00007F00DEAE1000, 0x00A1B2C3, 24)], pattern(24, 44), dest_qp=wqp, psn=1,
       ack_req=1)
    rc("rocev2_rc_write_only_imm", "RC RDMA WRITE ONLY WITH IMMEDIATE: RETH then ImmDt.", 0x0B,
       [reth(0x00007F00DEAE2000, 0x00A1B2C4, 8), immdt(0x11223344)], pattern(8, 45),
       dest_qp=wqp, psn=2, ack_req=1)

    rqp, rpsn = 0x000118, 0x54CB63
    rc("rocev2_rc_read_request", "RC RDMA READ REQUEST for 160 bytes.", 0x0C,
       [reth(0x00007FEE260FB000, 0x000002B8, 160)], dest_qp=rqp, psn=rpsn, ack_req=1)
    resp = dict(enc=None, dest_qp=0x000117)
    rc("rocev2_rc_read_resp_first", "RC RDMA READ RESPONSE FIRST with AETH (ACK, credits "
       "unlimited).", 0x0D, [aeth(0, 0x1F, 0x000A01)], pattern(64, 51), psn=rpsn, **resp)
    rc("rocev2_rc_read_resp_middle", "RC RDMA READ RESPONSE MIDDLE.", 0x0E, [], pattern(64, 52),
       psn=rpsn + 1, **resp)
    rc("rocev2_rc_read_resp_last", "RC RDMA READ RESPONSE LAST with AETH.", 0x0F,
       [aeth(0, 0x1F, 0x000A01)], pattern(32, 53), psn=rpsn + 2, **resp)
    rc("rocev2_rc_read_resp_only", "RC RDMA READ RESPONSE ONLY, 10 bytes: pad count 2.", 0x10,
       [aeth(0, 0x0D, 0x000A02)], pattern(10, 54), psn=rpsn + 3, **resp)

    aqp = 0x0004D3
    rc("rocev2_rc_ack_credits", "RC ACKNOWLEDGE: ACK with credit code 0x0A (32 credits).", 0x11,
       [aeth(0, 0x0A, 0x00002F)], dest_qp=aqp, psn=psn + 6)
    rc("rocev2_rc_rnr_nak", "RC ACKNOWLEDGE: RNR NAK, timer code 14 (1.28 ms).", 0x11,
       [aeth(1, 14, 0x000030)], dest_qp=aqp, psn=psn + 7)
    rc("rocev2_rc_nak_psn_seq_err", "RC ACKNOWLEDGE: NAK, PSN sequence error; the PSN is the "
       "expected one.", 0x11, [aeth(3, 0, 0x000030)], dest_qp=aqp, psn=psn + 7)

    tqp = 0x0ABCDE
    rc("rocev2_rc_cmp_swap", "RC COMPARE SWAP with AtomicETH.", 0x13,
       [atomic_eth(0x00007F0012345678, 0x0000A5A5, 0x0000000000000001, 0x0000000000000000)],
       dest_qp=tqp, psn=0x300000, ack_req=1)
    rc("rocev2_rc_fetch_add", "RC FETCH ADD with AtomicETH (compare unused).", 0x14,
       [atomic_eth(0x00007F0012345680, 0x0000A5A5, 0x0000000000000010, 0)],
       dest_qp=tqp, psn=0x300001, ack_req=1)
    rc("rocev2_rc_atomic_ack", "RC ATOMIC ACKNOWLEDGE: AETH then AtomicAckETH.", 0x12,
       [aeth(0, 0x1F, 0x000101), atomic_ack_eth(0x0000000000000041)], dest_qp=0x0ABCDD,
       psn=0x300001)

    rc("rocev2_cnp", "CNP (opcode 0x81): BECN set, 16 reserved bytes.", 0x81, [cnp()],
       enc=roce_encap(ip_id=0x7F01, dscp=48, ecn=2, sport=0xC0DE), dest_qp=qp, psn=0, becn=1)
    rc("rocev2_ud_send_only", "UD SEND ONLY with DETH (Q_Key, source QP).", 0x64,
       [deth(0x1EE7C0DE, 0x000B62)], pattern(24, 61), dest_qp=0x000A51, psn=0x000123)
    rc("rocev2_ipv6_rc_send_only", "RC SEND ONLY over IPv6: the ICRC masks traffic class, "
       "flow label and hop limit.", 0x04, [], pattern(20, 62),
       enc=roce_encap(ipv6=True, src=ip6("fd00:0:0:10:0:0:0:5"), dst=ip6("fd00:0:0:10:0:0:0:9"),
                      flow_label=0x3A5C1, ttl=64, sport=0xE29B),
       dest_qp=qp, psn=0x0F0F0F, ack_req=1)


# ------------------------------------------------------------------- real frames
# Copied verbatim from tests/wire/real_frames.h.
REAL_FRAMES = {
    "rocev2_real_cx4_cnp": (
        "CNP captured on a ConnectX-4 Lx (scapy test suite, test/contrib/roce.uts).",
        "e41d2dab2bc27cfe90643b32080045c2003c718c4000401191610a0011010a001201000012b700280000"
        "8100ffff40000118"
        "0000000000000000000000000000000000000000"
        "82fd002a"),
    "rocev2_real_rxe_read_request": (
        "RC RDMA READ REQUEST sent by Linux rdma_rxe (PcapPlusPlus InfiniBandPacket.dat).",
        "000c29ae1ca4000c2989a2e508004500003cbe10400040118a4bc0a83881c0a83883df9412b7002800000c00"
        "ffff000000118054cb6300007fee260fb000000002b80001000008c6154a"),
    "rocev2_real_scapy_uc_send_only": (
        "UC SEND ONLY with pad 2, built by scapy (roce.uts \"RoCE layer\").",
        "248a07a8fa22248a07a8fa22080045010040047840004011b4d5c0a80007c0a80007c00012b7002caca22460"
        "ffff000000d300cf17104630818be28935d90e9a95505401be885e50000078f353f3"),
}


def split_real(hexstr):
    """Splits a captured IPv4 RoCEv2 frame into its headers (no checksums recomputed)."""
    data = bytes.fromhex(hexstr)
    segs, off = [], 0

    def take(hid, n):
        nonlocal off
        segs.append((off, Seg(hid, data[off:off + n])))
        off += n

    take("eth", 14)
    assert int.from_bytes(data[12:14], "big") == ETH_IPV4
    assert data[14] == 0x45
    take("ipv4", 20)
    take("udp", 8)
    assert int.from_bytes(data[36:38], "big") == ROCE_UDP_PORT
    take("bth", 12)
    opcode, pad = data[42], data[43] >> 4 & 3
    exts, _ = ROCE_OPCODES[opcode]
    for hid in exts:
        take(hid, SIZES[hid])
    payload = data[off:len(data) - 4 - pad]
    ip_end = 14 + int.from_bytes(data[16:18], "big")
    assert ip_end == len(data)
    assert icrc(data[14:34], False, data[34:-4]) == data[-4:], "real frame ICRC"
    return Frame(data, segs, payload)


def real_vectors():
    for name, (comment, hexstr) in REAL_FRAMES.items():
        vec(name, comment + " Hex copied verbatim.", split_real(hexstr))


# ---------------------------------------------------------------- negative vectors
def negative_vectors():
    def mutated(frame, fn):
        fn(frame)
        return frame

    # Bad IP checksum.
    f = build(Encap(ip_id=0x0E01), [pds_ack(NH_NONE, 1000, 0, 1, 2)])
    o = f.offset("ipv4")
    vec("neg_bad_ip_checksum", "Bare ACK whose IPv4 header checksum is off by one bit.",
        mutated(f, lambda fr: fr.data.__setitem__(o + 11, fr.data[o + 11] ^ 0x01)),
        "BadIpChecksum", "RFC 791")

    # Bad UDP checksum (still non-zero, so it must be verified).
    f = build(Encap(ip_id=0x0E02), [pds_ack(NH_NONE, 1001, 0, 1, 2)])
    o = f.offset("udp")
    vec("neg_bad_udp_checksum", "Bare ACK whose UDP checksum is wrong (and not zero).",
        mutated(f, lambda fr: fr.data.__setitem__(o + 6, fr.data[o + 6] ^ 0x10)),
        "BadUdpChecksum", "RFC 768; uet.md §2.1")

    # Bad ICRC.
    f = build(roce_encap(ip_id=0x0E03), [bth(0x04, 0x0004D2, 0x000777, ack_req=1)],
              pattern(16, 71), roce=True)
    vec("neg_rocev2_bad_icrc", "RC SEND ONLY whose last ICRC byte is flipped.",
        mutated(f, lambda fr: fr.data.__setitem__(len(fr.data) - 1, fr.data[-1] ^ 0xFF)),
        "BadIcrc", "rocev2.md §6")

    # Truncated PDS: a RUD_REQ cut after 8 of its 12 bytes (lengths and checksums consistent).
    full = pds_req(RUD_REQ, NH_NONE, psn=5, spdcid=6, dpdcid=7)
    vec("neg_truncated_pds", "RUD_REQ header cut after 8 of its 12 bytes.",
        build(Encap(ip_id=0x0E04), [], tail=full.data[:8]), "TruncatedUet", "uet.md §3.3")

    # Unknown PDS type 15.
    word = pds_word(15, 0, 0)
    vec("neg_unknown_pds_type_15", "A 12-byte PDS header with type 15 (reserved).",
        build(Encap(ip_id=0x0E05), [], tail=struct.pack(">HhIHH", word, 0, 9, 10, 11)),
        "UnknownPdsType", "uet.md §3.2")

    # Reserved flag set (0x40, the CRC flag of pre-1.0 drafts).
    vec("neg_reserved_flag_set", "RUD_REQ with reserved flag 0x40 set.",
        build(Encap(ip_id=0x0E06), [
            pds_req(RUD_REQ, NH_NONE, psn=12, spdcid=13, dpdcid=14, flags_rsvd=0x40)]),
        "ReservedBitsSet", "uet.md §3.3")

    vec("neg_syn_pdc_info_rsvd", "RUD_REQ with SYN whose reserved PDC-info bits are not zero.",
        build(Encap(ip_id=0x0E07), [
            pds_req(RUD_REQ, NH_NONE, psn=15, spdcid=16, syn=1, psn_offset=3,
                    pdc_info_rsvd=0x5)]),
        "ReservedBitsSet", "uet.md §3.3")

    # ACK carrying a request SES header.
    vec("neg_ack_with_request_ses", "ACK whose next header names a standard SES request.",
        build(Encap(ip_id=0x0E08), [
            pds_ack(NH_STD, 2000, 0, 3, 4),
            ses_std(OP_SEND, message_id=5, buffer_offset=0, initiator=0, match_bits=0,
                    request_length=0, som=1, eom=1, **JOB)]),
        "BadNextHeader", "uet.md §6")

    # Unknown SES opcode: 0x10 (INC_PUSH in a pre-1.0 draft, not in 1.0.1).
    vec("neg_unknown_ses_opcode", "Standard SES request with opcode 0x10.",
        build(Encap(ip_id=0x0E09), [
            pds_req(RUD_REQ, NH_STD, psn=17, spdcid=18, dpdcid=19),
            ses_std(0x10, message_id=6, buffer_offset=0, initiator=0, match_bits=0,
                    request_length=8, som=1, eom=1, **JOB)], b"12345678"),
        "UnknownSesOpcode", "uet.md §4.1")

    # SES payload_length disagrees with the bytes that follow.
    vec("neg_ses_payload_length_mismatch",
        "Standard SES request, SOM=0, announcing 100 payload bytes but carrying 64.",
        build(Encap(ip_id=0x0E0A), [
            pds_req(RUD_REQ, NH_STD, psn=20, spdcid=21, dpdcid=22),
            ses_std(OP_SEND, message_id=7, buffer_offset=0, initiator=0, match_bits=0,
                    request_length=4096, som=0, eom=0, payload_length=100,
                    message_offset=1024, **JOB)], pattern(64, 73)),
        "BadSesLength", "uet.md §4.2")

    # Unknown BTH opcode 0x15 (reserved), with a valid ICRC.
    vec("neg_rocev2_unknown_bth_opcode", "BTH opcode 0x15 (reserved in RC).",
        build(roce_encap(ip_id=0x0E0B), [bth(0x15, 0x0004D2, 0x000778)], roce=True),
        "UnknownRoceOpcode", "rocev2.md §4")

    # Pad count larger than the payload.
    vec("neg_rocev2_bad_pad_count", "RC ACKNOWLEDGE with pad count 3 and no payload.",
        build(roce_encap(ip_id=0x0E0C), [bth(0x11, 0x0004D2, 0x000779, pad_cnt=3),
                                         aeth(0, 0x1F, 1)], roce=True, pad=0),
        "BadPadCount", "rocev2.md §2")


# ========================================================================== output
def spec_line(v):
    if v.spec:
        return v.spec
    hids = [s.hid for _, s in v.frame.segs]
    refs = {}
    if "bth" in hids:
        refs.setdefault("rocev2.md", []).append("1")
    elif "udp" in hids:
        refs.setdefault("uet.md", []).append("2.1")
    for h in hids:
        if h in SECTIONS:
            doc, sec = SECTIONS[h]
            if sec not in refs.setdefault(doc, []):
                refs[doc].append(sec)
    if "bth" in hids:
        refs["rocev2.md"].append("6")
    return " ".join(doc + " " + " ".join("§" + s for s in secs) for doc, secs in refs.items())


def render(v):
    f = v.frame
    out = ["# " + v.comment,
           "# Generated by spec/vectors/gen_vectors.py; do not edit by hand."]
    out.append("name: " + v.name)
    out.append("spec: " + spec_line(v))
    # One frame: line per header, then the rest (payload, pad, ICRC) in 32-byte lines.
    data = bytes(f.data)
    pos = 0
    for off, s in f.segs:
        assert off == pos
        out.append("frame: " + data[off:off + len(s.data)].hex())
        pos = off + len(s.data)
    for i in range(pos, len(data), 32):
        out.append("frame: " + data[i:i + 32].hex())
    if f.seal is not None:
        out.append("tss_key: " + f.seal.key.hex())
        out.append("tss_mode: " + f.seal.mode)
        if f.seal.mode == "server":  # the client, and the key and IV mask it is given
            c = f.seal.client
            out.append("tss_client: %d.%d.%d.%d" % (c >> 24, c >> 16 & 255, c >> 8 & 255, c & 255))
            out.append("tss_client_key: " + f.seal.client_key[0].hex())
            out.append("tss_client_iv_mask: " + f.seal.client_key[1].hex())
    if v.error == "ok":
        plain = bytes(f.plain)
        for off, s in f.segs:
            hdr = plain[off:off + SIZES[s.hid]]
            names = {fl[0] for fl in LAYOUT[s.hid]}
            for k, want in s.given.items():  # the packer wrote what it was asked to
                assert k in names, (v.name, s.hid, k)
            for fl in LAYOUT[s.hid]:
                got = read_field(hdr, fl)
                if fl[0] in s.given:
                    want = s.given[fl[0]]
                    assert got == want, (v.name, s.hid, fl[0], got, want)
                elif fl[4] == R:
                    assert got == 0, (v.name, s.hid, fl[0])
                out.append("expect: %s.%s = %s" % (s.hid, fl[0], fmt_value(fl, got)))
        out.append("expect: payload = " + f.payload.hex() if f.payload else "expect: payload =")
    out.append("error: " + v.error)
    return "\n".join(out) + "\n"


def generate():
    VECTORS.clear()
    uet_vectors()
    roce_vectors()
    real_vectors()
    negative_vectors()
    access_vectors()
    atomic_vectors()
    rendezvous_vectors()
    deferrable_vectors()
    server_mode_vectors()
    return {v.name + ".vec": render(v) for v in VECTORS}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="compare with the committed files instead of writing them")
    args = ap.parse_args()
    files = generate()
    on_disk = {p.name for p in HERE.glob("*.vec")}
    if args.check:
        bad = sorted(n for n, text in files.items()
                     if n not in on_disk or (HERE / n).read_text() != text)
        stale = sorted(on_disk - files.keys())
        for n in bad:
            print("differs from the generator: spec/vectors/" + n)
        for n in stale:
            print("not produced by the generator: spec/vectors/" + n)
        if bad or stale:
            print("run: python3 spec/vectors/gen_vectors.py")
            return 1
        print("%d vectors in sync" % len(files))
        return 0
    for n in sorted(on_disk - files.keys()):
        (HERE / n).unlink()
    for n, text in files.items():
        (HERE / n).write_text(text)
    print("wrote %d vectors to %s" % (len(files), HERE))
    return 0


if __name__ == "__main__":
    sys.exit(main())
