/* dissector/rocev2.c: what Wireshark 4.0's InfiniBand dissector does not do for RoCEv2
 * (spec/rocev2.md): verify the ICRC (§6), decode the CNP (opcode 0x81, §5), FECN/BECN, and the
 * decoder rules of §7 as expert info.
 *
 * We take UDP port 4791 in the handoff (plugins hand off after the built-in dissectors), keep the
 * handle that had it (InfiniBand's RRoCE entry) and call it first, so every infiniband.* field
 * stays as it was. Then our own subtree follows, with the headers of spec/rocev2.def under
 * uetref.rocev2.*, the ICRC and its status.
 *
 * Caveat: changing the infiniband.rroce.port preference re-runs InfiniBand's handoff, which
 * takes the port back (dissector_delete_uint ignores the handle); leave that preference alone.
 */
#include <epan/exceptions.h>
#include <epan/expert.h>
#include <epan/ipproto.h>
#include <epan/prefs.h>
#include <epan/proto_data.h>
#include <epan/show_exception.h>
#include <wsutil/crc32.h>

#include "uetref.h"

static int hf_icrc = -1;
static int hf_icrc_status = -1;
static int hf_payload_len = -1;
static int hf_cnp_qp = -1;
static int hf_cnp_becn = -1;
static int hf_aeth_nak = -1;
static int hf_aeth_credits = -1;
static int hf_aeth_rnr_us = -1;
static gint ett_roce = -1;

static expert_field ei_icrc_bad = EI_INIT;
static expert_field ei_icrc_unverified = EI_INIT;
static expert_field ei_cnp = EI_INIT;
static expert_field ei_fecn = EI_INIT;
static expert_field ei_unknown_opcode = EI_INIT;
static expert_field ei_bad_tver = EI_INIT;
static expert_field ei_bad_pad = EI_INIT;
static expert_field ei_unexpected_payload = EI_INIT;
static expert_field ei_nak = EI_INIT;
static expert_field ei_rnr = EI_INIT;

static dissector_handle_t roce_handle;
static dissector_handle_t ib_handle; /* whatever had UDP 4791 before us: InfiniBand's RRoCE */
static gboolean pref_verify_icrc = TRUE;

/* spec/rocev2.md §6: the CRC register after the eight 0xFF bytes of the masked LRH. */
#define ICRC_SEED 0xDEBB20E3u

/* ------------------------------------------------------------- §4 layouts */
typedef struct {
  gboolean known;
  guint32 ext; /* ROCEV2_X_* */
  gboolean payload;
} roce_layout;

static roce_layout layout_of(guint64 opcode) {
  roce_layout l = {FALSE, 0, FALSE};
  switch (opcode) {
#define LAYOUT_CASE_(k, ext_bits, pay) \
  case UETREF_ROCE_##k:                \
    l.known = TRUE;                    \
    l.ext = (ext_bits);                \
    l.payload = (pay);                 \
    break;
    ROCEV2_OPCODE_LAYOUT(LAYOUT_CASE_)
#undef LAYOUT_CASE_
    default:
      break;
  }
  return l;
}

/* §4: extended headers follow the BTH in the order of their ROCEV2_X_* bits. */
static const struct {
  guint32 bit;
  uetref_hdr hdr;
} ext_order[] = {
    {ROCEV2_X_DETH, UETREF_H_deth},
    {ROCEV2_X_RETH, UETREF_H_reth},
    {ROCEV2_X_ATOMIC, UETREF_H_atomic_eth},
    {ROCEV2_X_AETH, UETREF_H_aeth},
    {ROCEV2_X_ATOMIC_ACK, UETREF_H_atomic_ack_eth},
    {ROCEV2_X_IMM, UETREF_H_immdt},
    {ROCEV2_X_IETH, UETREF_H_ieth},
    {ROCEV2_X_CNP, UETREF_H_cnp},
};

/* §3.2 tables: credit count codes and RNR timer codes. */
#define CREDIT_ROW_(code, credits) {code, credits},
#define RNR_ROW_(code, us) {code, us},
static const struct {
  guint32 code, value;
} credit_table[] = {ROCEV2_AETH_CREDITS(CREDIT_ROW_)},
  rnr_table[] = {ROCEV2_RNR_TIMER_US(RNR_ROW_)};

/* §3.2: what the syndrome says. */
static void aeth_details(tvbuff_t *tvb, packet_info *pinfo, const uetref_hdr_vals *aeth) {
  const guint64 type = uetref_get(aeth, UETREF_N_syndrome_type);
  const guint32 value = (guint32)uetref_get(aeth, UETREF_N_syndrome_value);
  proto_item *it = uetref_item(aeth, UETREF_N_syndrome_value);
  if (type == UETREF_AETH_kNak) {
    uetref_add_generated_uint(aeth->tree, hf_aeth_nak, tvb, value);
    expert_add_info_format(pinfo, it, &ei_nak, "NAK %s (%u), MSN %" PRIu64,
                           val_to_str_const(value, uetref_vs_aeth_nak, "unknown"), value,
                           uetref_get(aeth, UETREF_N_msn));
    col_append_fstr(pinfo->cinfo, COL_INFO, " [NAK %s]",
                    val_to_str_const(value, uetref_vs_aeth_nak, "unknown"));
  } else if (type == UETREF_AETH_kRnrNak) {
    for (guint i = 0; i < G_N_ELEMENTS(rnr_table); i++)
      if (rnr_table[i].code == value)
        uetref_add_generated_uint(aeth->tree, hf_aeth_rnr_us, tvb, rnr_table[i].value);
    expert_add_info_format(pinfo, it, &ei_rnr, "RNR NAK: receiver not ready, timer code %u", value);
  } else if (type == UETREF_AETH_kAck) {
    for (guint i = 0; i < G_N_ELEMENTS(credit_table); i++)
      if (credit_table[i].code == value)
        uetref_add_generated_uint(aeth->tree, hf_aeth_credits, tvb, credit_table[i].value);
  }
}

/* §6: CRC-32 over the masked IP header, UDP header, BTH, extended headers, payload and pad. */
static void add_icrc(tvbuff_t *tvb, packet_info *pinfo, proto_tree *rt, int icrc_off) {
  guint32 computed = 0;
  guint flags = PROTO_CHECKSUM_NO_FLAGS;
  uetref_ip_header ip;
  if (!tvb_bytes_exist(tvb, icrc_off, 4)) {
    proto_tree_add_checksum(rt, tvb, icrc_off, hf_icrc, hf_icrc_status, &ei_icrc_bad, pinfo, 0,
                            ENC_LITTLE_ENDIAN, PROTO_CHECKSUM_NOT_PRESENT);
    return;
  }
  if (pref_verify_icrc) {
    if (uetref_find_ip_header(tvb, pinfo, 8, IP_PROTO_UDP, &ip)) {
      const int start = ip.offset;
      const int n = tvb_raw_offset(tvb) + icrc_off - start;
      if (n > ip.length + 8 + 12 && tvb_bytes_exist(ip.ds, start, n)) {
        guint8 *b = (guint8 *)tvb_memdup(pinfo->pool, ip.ds, start, n);
        if (ip.version == 4) {
          b[1] = 0xFF;  /* DSCP, ECN */
          b[8] = 0xFF;  /* TTL */
          b[10] = 0xFF; /* header checksum */
          b[11] = 0xFF;
        } else {
          b[0] |= 0x0F; /* traffic class and flow label */
          b[1] = 0xFF;
          b[2] = 0xFF;
          b[3] = 0xFF;
          b[7] = 0xFF; /* hop limit */
        }
        b[ip.length + 6] = 0xFF; /* UDP checksum */
        b[ip.length + 7] = 0xFF;
        b[ip.length + 8 + 4] = 0xFF; /* BTH byte 4: FECN, BECN, reserved */
        computed = crc32_ccitt_seed(b, (guint)n, ICRC_SEED);
        flags = PROTO_CHECKSUM_VERIFY;
      }
    }
    if (!(flags & PROTO_CHECKSUM_VERIFY))
      expert_add_info(pinfo, rt ? proto_tree_get_parent(rt) : NULL, &ei_icrc_unverified);
  }
  proto_item *ci = proto_tree_add_checksum(rt, tvb, icrc_off, hf_icrc, hf_icrc_status, &ei_icrc_bad,
                                           pinfo, computed, ENC_LITTLE_ENDIAN, flags);
  if ((flags & PROTO_CHECKSUM_VERIFY) && tvb_get_letohl(tvb, icrc_off) != computed) {
    proto_item_append_text(ci, " (should be 0x%08x)", computed);
    col_append_str(pinfo->cinfo, COL_INFO, " [ICRC bad]");
  }
}

static void dissect_ours(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree) {
  proto_item *ti = proto_tree_add_item(tree, proto_uetref_rocev2, tvb, 0, -1, ENC_NA);
  proto_tree *rt = proto_item_add_subtree(ti, ett_roce);
  const gint len = (gint)tvb_reported_length(tvb);

  /* §7 rule 1: BTH and ICRC must fit; the headers end where the ICRC starts. */
  if (len < (gint)uetref_headers[UETREF_H_bth].size + ROCEV2_ICRC_SIZE) {
    uetref_add_header(tvb, pinfo, rt, 0, UETREF_H_bth, NULL);
    return;
  }
  const int icrc_off = len - ROCEV2_ICRC_SIZE;
  tvbuff_t *hdrs = tvb_new_subset_length(tvb, 0, icrc_off);
  uetref_hdr_vals bth;
  int off = 0;
  if (!uetref_add_header(hdrs, pinfo, rt, 0, UETREF_H_bth, &bth)) return;
  off += (int)uetref_headers[UETREF_H_bth].size;
  const guint64 op = uetref_get(&bth, UETREF_N_opcode);
  const guint32 qp = (guint32)uetref_get(&bth, UETREF_N_dest_qp);
  if (uetref_get(&bth, UETREF_N_tver) != 0) /* §7 rule 3 */
    expert_add_info_format(pinfo, uetref_item(&bth, UETREF_N_tver), &ei_bad_tver,
                           "BTH transport version %" PRIu64
                           ", expected 0 (spec/rocev2.md §7 rule 3)",
                           uetref_get(&bth, UETREF_N_tver));
  if (uetref_get(&bth, UETREF_N_fecn))
    expert_add_info(pinfo, uetref_item(&bth, UETREF_N_fecn), &ei_fecn);

  const roce_layout l = layout_of(op);
  gboolean complete = l.known;
  if (!l.known) { /* §7 rule 4 */
    expert_add_info_format(
        pinfo, uetref_item(&bth, UETREF_N_opcode), &ei_unknown_opcode,
        "BTH opcode 0x%02" PRIx64 " is not in the table (spec/rocev2.md §7 rule 4)", op);
  } else {
    for (guint i = 0; i < G_N_ELEMENTS(ext_order) && complete; i++) { /* §7 rule 5 */
      if (!(l.ext & ext_order[i].bit)) continue;
      uetref_hdr_vals hv;
      if (!uetref_add_header(hdrs, pinfo, rt, off, ext_order[i].hdr, &hv)) {
        complete = FALSE;
        break;
      }
      off += (int)uetref_headers[ext_order[i].hdr].size;
      if (ext_order[i].hdr == UETREF_H_aeth) aeth_details(tvb, pinfo, &hv);
      if (ext_order[i].hdr == UETREF_H_cnp) { /* §5 */
        const gboolean becn = uetref_get(&bth, UETREF_N_becn) != 0;
        proto_item_append_text(hv.item, ": congestion notification for QP 0x%06x%s", qp,
                               becn ? ", BECN" : "");
        uetref_add_generated_uint(hv.tree, hf_cnp_qp, tvb, qp);
        uetref_add_generated_boolean(hv.tree, hf_cnp_becn, tvb, becn);
        expert_add_info_format(pinfo, hv.item, &ei_cnp,
                               "CNP: congestion notification for QP 0x%06x", qp);
        col_append_fstr(pinfo->cinfo, COL_INFO, " CNP QP=0x%06x%s", qp, becn ? " BECN" : "");
      }
    }
  }
  if (complete) {
    const int rest = icrc_off - off;
    const int pad = (int)uetref_get(&bth, UETREF_N_pad_cnt);
    if (!l.payload && rest != 0) /* §7 rule 6 */
      expert_add_info_format(
          pinfo, ti, &ei_unexpected_payload,
          "%d bytes between the last header and the ICRC of an opcode without payload "
          "(spec/rocev2.md §7 rule 6)",
          rest);
    if (pad > rest) /* §7 rule 7 */
      expert_add_info_format(
          pinfo, uetref_item(&bth, UETREF_N_pad_cnt), &ei_bad_pad,
          "Pad count %d but only %d bytes before the ICRC (spec/rocev2.md §7 rule 7)", pad, rest);
    else
      uetref_add_generated_uint(rt, hf_payload_len, tvb, (guint32)(rest - pad));
  }
  add_icrc(tvb, pinfo, rt, icrc_off);
}

/* Wireshark 4.0's RPC-over-RDMA heuristic, which InfiniBand runs on RC payloads, revisits an RC
 * SEND Last (with or without Invalidate) by asking its reassembly for the message; when the
 * message was not completed in that frame the answer is NULL, which it then measures
 * (tvbuff.c:748 assertion): every second pass (tshark -2, a click in Wireshark) over such a frame
 * is a dissector bug, with or without this plugin. So a revisit of such a frame runs InfiniBand
 * with that heuristic off, unless the first pass saw a reassembled message appear there. */
static heur_dtbl_entry_t *rpcrdma_heur;

static gboolean is_rc_send_last(tvbuff_t *tvb) {
  if (tvb_captured_length(tvb) < 1) return FALSE;
  const guint8 op = tvb_get_guint8(tvb, 0);
  return op == UETREF_ROCE_kRcSendLast || op == UETREF_ROCE_kRcSendLastInv;
}

static void call_infiniband(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data) {
  const gboolean guard = rpcrdma_heur && is_rc_send_last(tvb);
  const guint32 key = (guint32)pinfo->curr_layer_num;
  const guint sources = guard ? g_slist_length(pinfo->data_src) : 0;
  const gboolean switch_off = guard && pinfo->fd->visited &&
                              !p_get_proto_data(wmem_file_scope(), pinfo, proto_uetref_rocev2, key);
  const gboolean was_on = switch_off ? rpcrdma_heur->enabled : FALSE;
  if (switch_off) rpcrdma_heur->enabled = FALSE;
  TRY { call_dissector_with_data(ib_handle, tvb, pinfo, tree, data); }
  CATCH_NONFATAL_ERRORS { show_exception(tvb, pinfo, tree, EXCEPT_CODE, GET_MESSAGE); }
  FINALLY {
    if (switch_off) rpcrdma_heur->enabled = was_on; /* the user's setting, whatever it was */
  }
  ENDTRY;
  /* A payload dissector that completed a reassembly here added its message as a data source. */
  if (guard && !pinfo->fd->visited && g_slist_length(pinfo->data_src) > sources)
    p_add_proto_data(wmem_file_scope(), pinfo, proto_uetref_rocev2, key, GUINT_TO_POINTER(1));
}

static int dissect_rocev2(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data) {
  if (ib_handle) {
    call_infiniband(tvb, pinfo, tree, data);
  } else {
    col_set_str(pinfo->cinfo, COL_PROTOCOL, "RoCEv2");
    col_clear(pinfo->cinfo, COL_INFO);
  }
  dissect_ours(tvb, pinfo, tree);
  return tvb_captured_length(tvb);
}

void uetref_rocev2_register(void) {
  static hf_register_info hf[] = {
      {&hf_icrc,
       {"ICRC", "uetref.rocev2.icrc", FT_UINT32, BASE_HEX, NULL, 0,
        "Invariant CRC, little-endian on the wire (spec/rocev2.md §6)", HFILL}},
      {&hf_icrc_status,
       {"ICRC status", "uetref.rocev2.icrc.status", FT_UINT8, BASE_NONE, VALS(proto_checksum_vals),
        0, NULL, HFILL}},
      {&hf_payload_len,
       {"Payload length", "uetref.rocev2.payload_len", FT_UINT32, BASE_DEC, NULL, 0,
        "Bytes between the last header and the pad", HFILL}},
      {&hf_cnp_qp,
       {"Throttled QP", "uetref.rocev2.cnp.qp", FT_UINT24, BASE_HEX, NULL, 0,
        "The QP whose traffic was ECN-marked: the BTH destination QP (spec/rocev2.md §5)", HFILL}},
      {&hf_cnp_becn,
       {"BECN", "uetref.rocev2.cnp.becn", FT_BOOLEAN, BASE_NONE, NULL, 0,
        "BECN bit of the CNP's BTH", HFILL}},
      {&hf_aeth_nak,
       {"NAK code", "uetref.rocev2.aeth.nak", FT_UINT8, BASE_DEC, VALS(uetref_vs_aeth_nak), 0,
        "Syndrome value of a NAK (spec/rocev2.md §3.2)", HFILL}},
      {&hf_aeth_credits,
       {"Credits", "uetref.rocev2.aeth.credits", FT_UINT32, BASE_DEC, NULL, 0,
        "Credit count of an ACK syndrome (spec/rocev2.md §3.2)", HFILL}},
      {&hf_aeth_rnr_us,
       {"RNR timer (us)", "uetref.rocev2.aeth.rnr_timer_us", FT_UINT32, BASE_DEC, NULL, 0,
        "Delay an RNR NAK asks for (spec/rocev2.md §3.2)", HFILL}},
  };
  static gint *ett[] = {&ett_roce};
  static ei_register_info ei[] = {
      {&ei_icrc_bad,
       {"uetref.rocev2.icrc.bad", PI_CHECKSUM, PI_ERROR, "Bad ICRC (spec/rocev2.md §6)", EXPFILL}},
      {&ei_icrc_unverified,
       {"uetref.rocev2.icrc.unverified", PI_CHECKSUM, PI_NOTE,
        "ICRC not verified: the IP header in front of the UDP header was not found", EXPFILL}},
      {&ei_cnp,
       {"uetref.rocev2.expert.cnp", PI_SEQUENCE, PI_NOTE, "Congestion notification (CNP)",
        EXPFILL}},
      {&ei_fecn,
       {"uetref.rocev2.expert.fecn", PI_SEQUENCE, PI_NOTE,
        "FECN set: congestion on the forward path", EXPFILL}},
      {&ei_unknown_opcode,
       {"uetref.rocev2.expert.unknown_opcode", PI_PROTOCOL, PI_WARN,
        "Unknown BTH opcode (spec/rocev2.md §7 rule 4)", EXPFILL}},
      {&ei_bad_tver,
       {"uetref.rocev2.expert.bad_tver", PI_PROTOCOL, PI_WARN,
        "BTH version not 0 (spec/rocev2.md §7 rule 3)", EXPFILL}},
      {&ei_bad_pad,
       {"uetref.rocev2.expert.bad_pad", PI_MALFORMED, PI_ERROR,
        "Pad count larger than the payload (spec/rocev2.md §7 rule 7)", EXPFILL}},
      {&ei_unexpected_payload,
       {"uetref.rocev2.expert.unexpected_payload", PI_MALFORMED, PI_WARN,
        "Payload after an opcode that has none (spec/rocev2.md §7 rule 6)", EXPFILL}},
      {&ei_nak,
       {"uetref.rocev2.expert.nak", PI_SEQUENCE, PI_WARN, "NAK (spec/rocev2.md §3.2)", EXPFILL}},
      {&ei_rnr,
       {"uetref.rocev2.expert.rnr_nak", PI_SEQUENCE, PI_NOTE, "RNR NAK (spec/rocev2.md §3.2)",
        EXPFILL}},
  };
  proto_register_field_array(proto_uetref_rocev2, hf, array_length(hf));
  proto_register_subtree_array(ett, array_length(ett));
  expert_register_field_array(expert_register_protocol(proto_uetref_rocev2), ei, array_length(ei));
  module_t *m = prefs_register_protocol(proto_uetref_rocev2, NULL);
  prefs_register_bool_preference(m, "verify_icrc", "Verify the ICRC",
                                 "Compute the ICRC and compare (spec/rocev2.md §6)",
                                 &pref_verify_icrc);
  roce_handle = register_dissector("uetref.rocev2", dissect_rocev2, proto_uetref_rocev2);
}

void uetref_rocev2_handoff(void) {
  dissector_table_t udp = find_dissector_table("udp.port");
  dissector_handle_t cur = udp ? dissector_get_uint_handle(udp, ROCEV2_UDP_DPORT) : NULL;
  if (cur && cur != roce_handle) ib_handle = cur;
  rpcrdma_heur = find_heur_dissector_by_unique_short_name("rpcrdma_infiniband");
  dissector_add_uint_with_preference("udp.port", ROCEV2_UDP_DPORT, roce_handle);
}
