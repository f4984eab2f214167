/* dissector/uet.c: the UET dissector (spec/uet.md), on UDP port 4793 and, through Decode As
 * on ip.proto, the IP-only form with its entropy header (§2.2).
 *
 * The headers come from the spec tables (fields.c); this file chooses which header follows
 * which (§2.3), applies the decoder rules of §6 as expert info instead of dropping the frame,
 * and derives what the tables cannot say: ACK PSN, clear PSN, start PSN, the SACK bitmap as
 * PSNs and gaps, trimmed requests (§3.14). PDC tracking is in pdc.c.
 *
 * Nothing here throws: every header is checked against the bytes left before it is read.
 */
#include <epan/expert.h>
#include <epan/ipproto.h>
#include <epan/prefs.h>
#include <epan/tap.h>

#include "uetref.h"

int proto_uetref = -1;
int proto_uetref_rocev2 = -1;

static int hf_ev = -1;
static int hf_payload_len = -1;
static int hf_ack_psn = -1;
static int hf_clear_psn = -1;
static int hf_start_psn = -1;
static int hf_sack_base = -1;
static int hf_sack_psn = -1;
static int hf_sack_gap = -1;
static int hf_sack_acked = -1;
static int hf_sack_missing = -1;
static int hf_trimmed = -1;

static gint ett_uetref = -1;
static gint ett_sack = -1;

static expert_field ei_unknown_pds_type = EI_INIT;
static expert_field ei_enc_after_tss = EI_INIT;
static expert_field ei_tss = EI_INIT;
static expert_field ei_bad_next_hdr = EI_INIT;
static expert_field ei_unknown_ctrl_type = EI_INIT;
static expert_field ei_unknown_ses_opcode = EI_INIT;
static expert_field ei_bad_ses_version = EI_INIT;
static expert_field ei_bad_rsp_opcode = EI_INIT;
static expert_field ei_ses_length = EI_INIT;
static expert_field ei_trimmed = EI_INIT;
static expert_field ei_nack = EI_INIT;
static expert_field ei_sack_gap = EI_INIT;
static expert_field ei_unknown_cc_type = EI_INIT;

static dissector_handle_t uet_udp_handle;
static dissector_handle_t uet_ip_handle;

static guint pref_trim_dscp = UET_DSCP_TRIMMED; /* spec/uet.md §3.14 [choice] */

/* ------------------------------------------------------ which header follows */
/* A value of a selector field and what it selects, one row of a spec/uet.def table. */
typedef struct {
  guint64 value;
  int choice;
} choice_row;

/* The choice of `value` in `rows`, or `none` when no row has it. */
static int choose(const choice_row *rows, guint n, guint64 value, int none) {
  for (guint i = 0; i < n; i++)
    if (rows[i].value == value) return rows[i].choice;
  return none;
}

/* §3.2: the header each PDS type selects. */
#define PDS_ROW_(k, id, Name) {UETREF_PDS_##k, UETREF_H_##id},
static const choice_row pds_headers[] = {UET_PDS_TYPE_HEADERS(PDS_ROW_)};
#undef PDS_ROW_

/* §3.13: the SES header each next-header value selects. */
#define NH_ROW_(k, id, Name) {UETREF_NH_##k, UETREF_H_##id},
static const choice_row ses_headers[] = {UET_NEXT_HDR_HEADERS(NH_ROW_)};
#undef NH_ROW_

typedef enum { EXT_NONE, EXT_ATOMIC, EXT_RENDEZVOUS } ses_ext;

/* §4.5: the extension header a request opcode carries. */
#define EXT_ROW_(k, ext) {UETREF_SES_##k, EXT_##ext},
static const choice_row ses_extensions[] = {UET_SES_OPCODE_EXTENSIONS(EXT_ROW_)};
#undef EXT_ROW_

/* UETREF_H_COUNT: the value selects no header. */
static uetref_hdr header_of(const choice_row *rows, guint n, guint64 value) {
  return (uetref_hdr)choose(rows, n, value, UETREF_H_COUNT);
}

/* §3.2: requests, which carry request SES headers (§6 rule 4). */
#define REQUEST_(id, on_pdc) t == UETREF_PDS_##id ||
static gboolean is_request_type(guint64 t) { return UET_PDS_REQUESTS(REQUEST_) FALSE; }
#undef REQUEST_

/* Requests on a PDC, which consume a PSN and may be trimmed (§3.3, §3.14). */
#define PDC_REQUEST_(id, on_pdc) (on_pdc && t == UETREF_PDS_##id) ||
static gboolean is_pdc_request_type(guint64 t) { return UET_PDS_REQUESTS(PDC_REQUEST_) FALSE; }
#undef PDC_REQUEST_

#define REQUEST_SES_(id) nh == UETREF_NH_##id ||
static gboolean is_request_ses(guint64 nh) { return UET_NEXT_HDR_REQUESTS(REQUEST_SES_) FALSE; }
#undef REQUEST_SES_

static const char *val_name(guint64 v, const value_string *vs) {
  const char *s = v <= G_MAXUINT32 ? try_val_to_str((guint32)v, vs) : NULL;
  return s ? s : "unknown";
}

static void add_data(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, int offset) {
  if (tvb_reported_length_remaining(tvb, offset) > 0)
    call_data_dissector(tvb_new_subset_remaining(tvb, offset), pinfo, tree);
}

/* ----------------------------------------------------------------- SACK §3.8 */
/* Bit i of the bitmap set: PSN (CACK PSN + sack_psn_offset + i) arrived [choice]. A gap is a
 * PSN after the CACK PSN and before the highest SACKed one that did not. */
static void add_sack(tvbuff_t *tvb, packet_info *pinfo, const uetref_hdr_vals *pds) {
  const guint32 cack = (guint32)uetref_get(pds, UETREF_N_cack_psn);
  const guint32 base = cack + (guint32)uetref_get(pds, UETREF_N_sack_psn_offset);
  const guint64 bm = uetref_get(pds, UETREF_N_sack_bitmap);
  proto_item *bi = uetref_item(pds, UETREF_N_sack_bitmap);
  proto_tree *st = bi ? proto_item_add_subtree(bi, ett_sack) : pds->tree;
  guint32 acked = 0, missing = 0, listed = 0, top = 0, first_gap = 0;

  uetref_add_generated_uint(st, hf_sack_base, tvb, base);
  for (guint i = 0; i < 64; i++) {
    if (!((bm >> i) & 1)) continue;
    uetref_add_generated_uint(st, hf_sack_psn, tvb, base + i);
    acked++;
    top = i;
  }
  if (bm) {
    const guint32 highest = base + top;
    /* PSNs between CACK and the bitmap's base: not covered, so missing. */
    if ((gint32)(base - cack) > 1) {
      for (guint32 p = cack + 1; p != base; p++) {
        if (listed < 64) uetref_add_generated_uint(st, hf_sack_gap, tvb, p);
        if (!missing) first_gap = p;
        listed++;
        missing++;
      }
    }
    for (guint i = 0; i < top; i++) {
      const guint32 p = base + i;
      if ((bm >> i) & 1) continue;
      if ((gint32)(p - cack) <= 0) continue; /* at or below the cumulative ACK */
      if (listed < 128) uetref_add_generated_uint(st, hf_sack_gap, tvb, p);
      if (!missing) first_gap = p;
      listed++;
      missing++;
    }
    uetref_add_generated_uint(st, hf_sack_acked, tvb, acked);
    uetref_add_generated_uint(st, hf_sack_missing, tvb, missing);
    if (missing)
      expert_add_info_format(pinfo, bi, &ei_sack_gap,
                             "SACK: %u PSN(s) missing between CACK %u and %u (first %u)", missing,
                             cack, highest, first_gap);
  } else {
    uetref_add_generated_uint(st, hf_sack_acked, tvb, 0);
    uetref_add_generated_uint(st, hf_sack_missing, tvb, 0);
  }
}

/* ------------------------------------------------------------------ PDS §3 */
/* Sets the column, the generated PSNs and the analysis input for one PDS header. */
static void pds_details(tvbuff_t *tvb, packet_info *pinfo, guint64 type, const uetref_hdr_vals *pds,
                        uetref_pkt *pkt) {
  proto_tree *pt = pds->tree;
  col_add_str(pinfo->cinfo, COL_INFO, val_name(type, uetref_vs_pds_type));
  pkt->pds_type = (int)type;
  if (uetref_has(pds->hdr, UETREF_N_spdcid)) {
    pkt->has_pdc = TRUE;
    pkt->spdcid = (guint16)uetref_get(pds, UETREF_N_spdcid);
    pkt->dpdcid = (guint16)uetref_get(pds, UETREF_N_dpdcid);
    pkt->dpdcid_known = TRUE;
  }
  pkt->retx = uetref_get(pds, UETREF_N_retx) != 0;

  if (is_pdc_request_type(type)) { /* §3.3 */
    const guint32 psn = (guint32)uetref_get(pds, UETREF_N_psn);
    pkt->is_request = TRUE;
    pkt->from_initiator = TRUE;
    pkt->psn = psn;
    pkt->syn = uetref_get(pds, UETREF_N_syn) != 0;
    uetref_add_generated_uint(pt, hf_clear_psn, tvb,
                              psn + (guint32)uetref_get_signed(pds, UETREF_N_clear_psn_offset));
    col_append_fstr(pinfo->cinfo, COL_INFO, " PSN=%u SPDCID=%u", psn, pkt->spdcid);
    if (pkt->syn) { /* bytes 10-11 are PDC info: start PSN = PSN - psn_offset */
      pkt->dpdcid_known = FALSE;
      pkt->start_psn = psn - (guint32)uetref_get(pds, UETREF_N_psn_offset);
      uetref_add_generated_uint(pt, hf_start_psn, tvb, pkt->start_psn);
      col_append_fstr(pinfo->cinfo, COL_INFO, " SYN start=%u", pkt->start_psn);
    } else {
      col_append_fstr(pinfo->cinfo, COL_INFO, " DPDCID=%u", pkt->dpdcid);
    }
  } else if (type == UETREF_PDS_kRudiReq || type == UETREF_PDS_kRudiResp) { /* §3.5 */
    col_append_fstr(pinfo->cinfo, COL_INFO, " ID=%" PRIu64, uetref_get(pds, UETREF_N_pkt_id));
  } else if (uetref_has(pds->hdr, UETREF_N_cack_psn)) { /* §3.7-3.9 */
    const guint32 cack = (guint32)uetref_get(pds, UETREF_N_cack_psn);
    pkt->is_ack = TRUE;
    pkt->cack_psn = cack;
    pkt->ack_psn = cack + (guint32)uetref_get_signed(pds, UETREF_N_ack_psn_offset);
    uetref_add_generated_uint(pt, hf_ack_psn, tvb, pkt->ack_psn);
    col_append_fstr(pinfo->cinfo, COL_INFO, " CACK=%u ACK=%u", cack, pkt->ack_psn);
    if (uetref_has(pds->hdr, UETREF_N_sack_bitmap)) {
      pkt->has_window = TRUE;
      pkt->mpr = (guint32)uetref_get(pds, UETREF_N_mpr);
      add_sack(tvb, pinfo, pds);
      if (uetref_has(pds->hdr, UETREF_N_cc_type) &&
          !try_val_to_str((guint32)uetref_get(pds, UETREF_N_cc_type), uetref_vs_cc_type) &&
          pds->hdr == UETREF_H_pds_ack_cc)
        expert_add_info_format(pinfo, uetref_item(pds, UETREF_N_cc_type), &ei_unknown_cc_type,
                               "CC type %" PRIu64
                               " has no known state layout; bytes 24-29 not decoded (§3.8)",
                               uetref_get(pds, UETREF_N_cc_type));
    }
  } else if (uetref_has(pds->hdr, UETREF_N_nack_code)) { /* §3.10-3.11 */
    const guint32 code = (guint32)uetref_get(pds, UETREF_N_nack_code);
    const guint32 npsn = (guint32)uetref_get(pds, UETREF_N_nack_psn);
    const gboolean nt = uetref_get(pds, UETREF_N_nt) != 0;
    pkt->is_nack = TRUE;
    pkt->nack_is_psn = !nt;
    pkt->nack_psn = npsn;
    /* §3.10: TRIMMED_ACK comes from the initiator that received a trimmed ACK. */
    pkt->from_initiator = code == UETREF_NACK_kTrimmedAck;
    col_append_fstr(pinfo->cinfo, COL_INFO, " %s %s=%u", val_name(code, uetref_vs_nack_code),
                    nt ? "ID" : "PSN", npsn);
    expert_add_info_format(pinfo, uetref_item(pds, UETREF_N_nack_code), &ei_nack,
                           "NACK %s (0x%02x): %s, %s %u", val_name(code, uetref_vs_nack_code), code,
                           val_name(code, uetref_vs_nack_code_meaning),
                           nt ? "RUDI packet ID" : "PSN", npsn);
  } else if (uetref_has(pds->hdr, UETREF_N_ctl_type)) { /* §3.12 */
    const guint64 ct = uetref_get(pds, UETREF_N_ctl_type);
    /* REQ_CLEAR, REQ_CLOSE and CREDIT come from the target; the rest from the initiator. */
    pkt->from_initiator =
        !(ct == UETREF_CTRL_kReqClear || ct == UETREF_CTRL_kReqClose || ct == UETREF_CTRL_kCredit);
    pkt->syn = uetref_get(pds, UETREF_N_syn) != 0;
    col_append_fstr(pinfo->cinfo, COL_INFO, " %s PSN=%" PRIu64 " payload=0x%" PRIx64,
                    val_name(ct, uetref_vs_ctrl_type), uetref_get(pds, UETREF_N_psn),
                    uetref_get(pds, UETREF_N_ctrl_payload));
    if (!try_val_to_str((guint32)ct, uetref_vs_ctrl_type))
      expert_add_info_format(pinfo, uetref_item(pds, UETREF_N_ctl_type), &ei_unknown_ctrl_type,
                             "Unknown control type %" PRIu64 " (spec/uet.md §6 rule 5)", ct);
  }
  if (pkt->retx) col_append_str(pinfo->cinfo, COL_INFO, " RETX");
}

/* ------------------------------------------------------------------ SES §4 */
typedef struct {
  gboolean sealed;       /* the PDS header and what follows came out of a TSS (§5) */
  gboolean unverified;   /* ... decrypted without a tag to check (§5.5) */
  gboolean trimmed_dscp; /* the IP header carries the trimmed code point (§3.14) */
  gboolean has_pds;      /* a PDS header was dissected (of type pds_type) */
  guint64 pds_type;
} ses_ctx;

/* §6 rules 10, 11 and §3.14: the payload against the length the SES header announces. */
static void check_payload_length(tvbuff_t *tvb, packet_info *pinfo, proto_tree *ut,
                                 const ses_ctx *cx, int offset, const uetref_hdr_vals *ses,
                                 const char *rule) {
  const guint64 want = uetref_get(ses, UETREF_N_payload_length);
  gint have = tvb_reported_length_remaining(tvb, offset);
  if (have < 0) have = 0;
  if ((guint64)have == want) return; /* §6 rules 10, 11: an opened frame's tag is not here */
  proto_item *it = uetref_item(ses, UETREF_N_payload_length);
  if ((guint64)have < want && (cx->trimmed_dscp || have == 0)) {
    uetref_add_generated_boolean(ut, hf_trimmed, tvb, TRUE);
    expert_add_info_format(pinfo, it, &ei_trimmed,
                           "Trimmed: %d of %" PRIu64 " payload bytes (spec/uet.md §3.14%s)", have,
                           want, cx->trimmed_dscp ? ", trimmed DSCP" : ", no trimmed DSCP seen");
    col_append_str(pinfo->cinfo, COL_INFO, " [TRIMMED]");
    return;
  }
  expert_add_info_format(pinfo, it, &ei_ses_length,
                         "payload_length %" PRIu64 " but %d payload bytes follow (%s)%s", want,
                         have, rule, (guint64)have < want ? ": trimmed (§3.14) or malformed" : "");
}

/* §3.14: a request on a PDC under the trimmed DSCP whose headers announce no payload length to
 * check it against: trimmed, as far as we can tell. */
static void flag_trimmed_request(tvbuff_t *tvb, packet_info *pinfo, proto_tree *ut,
                                 proto_item *hdr_item) {
  uetref_add_generated_boolean(ut, hf_trimmed, tvb, TRUE);
  expert_add_info_format(pinfo, hdr_item, &ei_trimmed,
                         "Trimmed request: trimmed DSCP %u (spec/uet.md §3.14)", pref_trim_dscp);
}

/* §6 rule 8, after the opcode's own checks (the expert infos keep that order). */
static void check_ses_version(packet_info *pinfo, const uetref_hdr_vals *ses) {
  const guint64 ver = uetref_get(ses, UETREF_N_ver);
  if (ver != UET_SES_VERSION)
    expert_add_info_format(pinfo, uetref_item(ses, UETREF_N_ver), &ei_bad_ses_version,
                           "SES version %" PRIu64 ", expected %d (spec/uet.md §6 rule 8)", ver,
                           UET_SES_VERSION);
}

/* A request header (§4.1-4.4) `ses`, and its extension (§4.5) at `offset`, right after it.
 * Returns the offset after them, or -1 when the extension did not fit. */
static int dissect_ses_request(tvbuff_t *tvb, packet_info *pinfo, proto_tree *ut, int offset,
                               const uetref_hdr_vals *ses, const ses_ctx *cx) {
  const uetref_hdr sh = ses->hdr;
  const guint64 op = uetref_get(ses, UETREF_N_opcode);
  if (uetref_get(ses, UETREF_N_som)) col_append_str(pinfo->cinfo, COL_INFO, " SOM");
  if (uetref_get(ses, UETREF_N_eom)) col_append_str(pinfo->cinfo, COL_INFO, " EOM");
  if (!try_val_to_str((guint32)op, uetref_vs_ses_opcode))
    expert_add_info_format(pinfo, uetref_item(ses, UETREF_N_opcode), &ei_unknown_ses_opcode,
                           "Unknown SES opcode 0x%02" PRIx64 " (spec/uet.md §6 rule 7)", op);
  check_ses_version(pinfo, ses);

  ses_ext ext = (ses_ext)choose(ses_extensions, G_N_ELEMENTS(ses_extensions), op, EXT_NONE);
  if (ext == EXT_RENDEZVOUS && sh != UETREF_H_ses_std) ext = EXT_NONE; /* §4.5: as WS */
  if (ext == EXT_ATOMIC) {
    guint64 aop = 0;
    uetref_hdr xh = UETREF_H_ses_atomic;
    if (uetref_peek(tvb, offset, UETREF_H_ses_atomic, UETREF_N_atomic_opcode, &aop) &&
        aop >= UET_ATOMIC_CAS_FIRST && aop <= UET_ATOMIC_CAS_LAST)
      xh = UETREF_H_ses_cas;
    if (!uetref_add_header(tvb, pinfo, ut, offset, xh, NULL)) return -1;
    offset += (int)uetref_headers[xh].size;
  } else if (ext == EXT_RENDEZVOUS) {
    if (!uetref_add_header(tvb, pinfo, ut, offset, UETREF_H_ses_rendezvous, NULL)) return -1;
    offset += (int)uetref_headers[UETREF_H_ses_rendezvous].size;
  }
  if (sh == UETREF_H_ses_std && !uetref_get(ses, UETREF_N_som))
    check_payload_length(tvb, pinfo, ut, cx, offset, ses, "spec/uet.md §6 rule 10");
  else if (cx->trimmed_dscp && is_pdc_request_type(cx->pds_type)) {
    flag_trimmed_request(tvb, pinfo, ut, ses->item);
    col_append_str(pinfo->cinfo, COL_INFO, " [TRIMMED]");
  }
  return offset;
}

/* A response header (§4.6-4.8) `ses`; its payload starts at `offset`. */
static void dissect_ses_response(tvbuff_t *tvb, packet_info *pinfo, proto_tree *ut, int offset,
                                 const uetref_hdr_vals *ses, const ses_ctx *cx) {
  const uetref_hdr sh = ses->hdr;
  const guint64 op = uetref_get(ses, UETREF_N_opcode);
  const gboolean with_data = sh != UETREF_H_ses_rsp;
  /* §6 rule 9 */
  const gboolean ok = with_data ? op == UETREF_RSP_kResponseWithData
                                : (op == UETREF_RSP_kDefaultResponse ||
                                   op == UETREF_RSP_kResponse || op == UETREF_RSP_kNoResponse);
  if (!ok)
    expert_add_info_format(pinfo, uetref_item(ses, UETREF_N_opcode), &ei_bad_rsp_opcode,
                           "Response opcode %" PRIu64
                           " (%s) does not belong in %s (spec/uet.md §6 rule 9)",
                           op, val_name(op, uetref_vs_ses_rsp_opcode), uetref_headers[sh].title);
  check_ses_version(pinfo, ses);
  if (with_data) check_payload_length(tvb, pinfo, ut, cx, offset, ses, "spec/uet.md §6 rule 11");
}

/* §4: the SES header `sh` at `offset`, its opcode in the info column, then what a request
 * (§4.1-4.5) or a response (§4.6-4.8) header is checked for. Returns the offset after the last
 * header, or -1 when a header did not fit. */
static int dissect_ses(tvbuff_t *tvb, packet_info *pinfo, proto_tree *ut, int offset, uetref_hdr sh,
                       gboolean request, const ses_ctx *cx) {
  uetref_hdr_vals ses;
  if (!uetref_add_header(tvb, pinfo, ut, offset, sh, &ses)) return -1;
  offset += (int)uetref_headers[sh].size;
  col_append_fstr(pinfo->cinfo, COL_INFO, " %s",
                  val_name(uetref_get(&ses, UETREF_N_opcode),
                           request ? uetref_vs_ses_opcode : uetref_vs_ses_rsp_opcode));
  if (request) return dissect_ses_request(tvb, pinfo, ut, offset, &ses, cx);
  dissect_ses_response(tvb, pinfo, ut, offset, &ses, cx);
  return offset;
}

/* ------------------------------------------------------------------- §2.3 */
/* §3.2-§4: the PDS header at `offset`, its SES header and the payload, in a clear frame or in
 * the plaintext of an opened one. Returns the offset after the last header, or -1 when a
 * header did not fit. */
static int dissect_pds(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, proto_tree *ut,
                       int offset, guint64 type, ses_ctx *cx, uetref_pkt *pkt) {
  /* §3.2: the type selects the header (ENC names none: after a TSS header it is refused). */
  const uetref_hdr ph = header_of(pds_headers, G_N_ELEMENTS(pds_headers), type);
  if (ph == UETREF_H_COUNT) {
    uetref_hdr_vals pro;
    uetref_add_header(tvb, pinfo, ut, offset, UETREF_H_pds_prologue, &pro);
    if (type == UETREF_PDS_kEnc)
      expert_add_info(pinfo, uetref_item(&pro, UETREF_N_type), &ei_enc_after_tss);
    else
      expert_add_info_format(pinfo, uetref_item(&pro, UETREF_N_type), &ei_unknown_pds_type,
                             "PDS type %" PRIu64 " names no PDS header (spec/uet.md §6 rule 3)",
                             type);
    col_add_fstr(pinfo->cinfo, COL_INFO, "Unknown PDS type %" PRIu64, type);
    add_data(tvb, pinfo, tree, offset);
    return -1;
  }
  uetref_hdr_vals pds;
  if (!uetref_add_header(tvb, pinfo, ut, offset, ph, &pds)) {
    col_add_fstr(pinfo->cinfo, COL_INFO, "%s [truncated]", val_name(type, uetref_vs_pds_type));
    return -1;
  }
  offset += (int)uetref_headers[ph].size;
  pds_details(tvb, pinfo, type, &pds, pkt);
  cx->has_pds = TRUE;
  cx->pds_type = type;

  /* §3.13, §6 rule 4: the SES header; a CTRL packet has none. */
  if (uetref_has(ph, UETREF_N_next_hdr)) {
    const guint64 nh = uetref_get(&pds, UETREF_N_next_hdr);
    const uetref_hdr sh = header_of(ses_headers, G_N_ELEMENTS(ses_headers), nh);
    if (nh != UETREF_NH_kNone && sh == UETREF_H_COUNT) {
      expert_add_info_format(pinfo, uetref_item(&pds, UETREF_N_next_hdr), &ei_bad_next_hdr,
                             "Next header %" PRIu64 " names no SES header (spec/uet.md §6 rule 4)",
                             nh);
    } else if (sh != UETREF_H_COUNT) {
      if (is_request_type(type) != is_request_ses(nh))
        expert_add_info_format(
            pinfo, uetref_item(&pds, UETREF_N_next_hdr), &ei_bad_next_hdr,
            "A %s carries a %s: requests carry request headers, responses response headers "
            "(spec/uet.md §6 rule 4)",
            val_name(type, uetref_vs_pds_type), uetref_headers[sh].title);
      offset = dissect_ses(tvb, pinfo, ut, offset, sh, is_request_ses(nh), cx);
      if (offset < 0) return -1;
    } else if (cx->trimmed_dscp && is_pdc_request_type(type)) {
      flag_trimmed_request(tvb, pinfo, ut, pds.item);
    }
  }

  gint left = tvb_reported_length_remaining(tvb, offset);
  uetref_add_generated_uint(ut, hf_payload_len, tvb, left > 0 ? (guint32)left : 0);
  add_data(tvb, pinfo, tree, offset);
  return offset;
}

/* §5: the TSS header at `offset` and what it seals. Returns the plaintext to go on with (the
 * PDS header at 0), or NULL when the frame stays sealed (no key, bad tag, too short); the info
 * column then says why. */
static tvbuff_t *dissect_tss(tvbuff_t *tvb, packet_info *pinfo, proto_tree *ut, proto_item *ti,
                             int offset, gboolean ip_only, ses_ctx *cx) {
  guint64 sp = 0;
  uetref_hdr th = UETREF_H_tss;
  if (uetref_peek(tvb, offset, UETREF_H_tss, UETREF_N_sp, &sp) && sp) th = UETREF_H_tss_sp;
  uetref_hdr_vals tss;
  if (!uetref_add_header(tvb, pinfo, ut, offset, th, &tss)) {
    col_set_str(pinfo->cinfo, COL_INFO, "Truncated TSS header");
    return NULL;
  }
  expert_add_info(pinfo, ti, &ei_tss);
  uetref_tss_result r;
  tvbuff_t *plain = uetref_tss_open(tvb, pinfo, &tss, ip_only, cx->trimmed_dscp, &r);
  cx->sealed = TRUE;
  cx->unverified = r == UETREF_TSS_UNVERIFIED;
  if (!plain)
    col_add_fstr(pinfo->cinfo, COL_INFO,
                 "Sealed SDI=%" PRIu64 " AN=%" PRIu64 " TSC=0x%016" PRIx64 " [%s]",
                 uetref_get(&tss, UETREF_N_sdi), uetref_get(&tss, UETREF_N_an),
                 uetref_get(&tss, UETREF_N_tsc),
                 r == UETREF_TSS_NO_KEY    ? "no key"
                 : r == UETREF_TSS_BAD_TAG ? "BAD TAG"
                                           : "not decrypted");
  return plain;
}

static int dissect_uet_common(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree,
                              gboolean ip_only) {
  col_set_str(pinfo->cinfo, COL_PROTOCOL, UETREF_PROTO_SHORT);
  col_clear(pinfo->cinfo, COL_INFO);
  proto_item *ti = proto_tree_add_item(tree, proto_uetref, tvb, 0, -1, ENC_NA);
  proto_tree *ut = proto_item_add_subtree(ti, ett_uetref);
  uetref_pkt pkt;
  memset(&pkt, 0, sizeof pkt);
  ses_ctx cx;
  memset(&cx, 0, sizeof cx);
  int offset = 0;

  uetref_ip_header ip;
  const gboolean have_ip =
      uetref_find_ip_header(tvb, pinfo, ip_only ? 0 : 8, ip_only ? -1 : IP_PROTO_UDP, &ip);
  if (have_ip && ip.dscp == pref_trim_dscp) cx.trimmed_dscp = TRUE;

  /* §2.1: the EV is the UDP source port; §2.2: or the entropy header. */
  if (ip_only) {
    uetref_hdr_vals ent;
    if (!uetref_add_header(tvb, pinfo, ut, offset, UETREF_H_uet_entropy, &ent)) {
      col_set_str(pinfo->cinfo, COL_INFO, "Truncated entropy header");
      return tvb_captured_length(tvb);
    }
    pkt.ev = (guint16)uetref_get(&ent, UETREF_N_entropy);
    offset += (int)uetref_headers[UETREF_H_uet_entropy].size;
  } else {
    pkt.ev = (guint16)pinfo->srcport;
  }
  uetref_add_generated_uint(ut, hf_ev, tvb, pkt.ev);

  /* §5: a TSS header first when the leading type is ENC; the PDS header is in its plaintext. */
  guint64 type = 0;
  if (!uetref_peek(tvb, offset, UETREF_H_pds_prologue, UETREF_N_type, &type)) {
    uetref_add_header(tvb, pinfo, ut, offset, UETREF_H_pds_prologue, NULL);
    col_set_str(pinfo->cinfo, COL_INFO, "Truncated PDS header");
    return tvb_captured_length(tvb);
  }
  tvbuff_t *body = tvb; /* where the PDS header is: the frame, or a sealed frame's plaintext */
  if (type == UETREF_PDS_kEnc) {
    body = dissect_tss(tvb, pinfo, ut, ti, offset, ip_only, &cx);
    offset = 0;
    if (body && !uetref_peek(body, offset, UETREF_H_pds_prologue, UETREF_N_type, &type)) {
      uetref_add_header(body, pinfo, ut, offset, UETREF_H_pds_prologue, NULL);
      col_set_str(pinfo->cinfo, COL_INFO, "Truncated PDS header after TSS");
      return tvb_captured_length(tvb);
    }
  }

  uetref_tap_info *tap = wmem_new0(pinfo->pool, uetref_tap_info);
  tap->ev = pkt.ev;
  if (!body) { /* still sealed: counted as ENC */
    tap->pds_type = UETREF_PDS_kEnc;
    tap_queue_packet(uetref_tap, pinfo, tap);
    return tvb_captured_length(tvb);
  }
  const int end = dissect_pds(body, pinfo, tree, ut, offset, type, &cx, &pkt);
  if (cx.sealed)
    col_append_str(pinfo->cinfo, COL_INFO, cx.unverified ? " [sealed, UNVERIFIED]" : " [sealed]");
  if (!cx.has_pds) return tvb_captured_length(tvb);
  proto_item_set_len(ti, end >= 0 && !cx.sealed ? end : (gint)tvb_captured_length(tvb));
  tap->pds_type = pkt.pds_type;
  if (pkt.has_pdc) uetref_pdc_analyse(body, pinfo, ut, &pkt, &tap->pdc);
  tap_queue_packet(uetref_tap, pinfo, tap);
  return tvb_captured_length(tvb);
}

static int dissect_uet_udp(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data _U_) {
  return dissect_uet_common(tvb, pinfo, tree, FALSE);
}

static int dissect_uet_ip(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data _U_) {
  return dissect_uet_common(tvb, pinfo, tree, TRUE);
}

/* ------------------------------------------------------------- registration */
void proto_register_uetref(void) {
  static hf_register_info hf[] = {
      {&hf_ev,
       {"Entropy value (EV)", "uetref.ev", FT_UINT16, BASE_HEX, NULL, 0,
        "UDP source port, or the entropy header of the IP-only form (spec/uet.md §2.1, §2.2)",
        HFILL}},
      {&hf_payload_len,
       {"Payload length", "uetref.payload_len", FT_UINT32, BASE_DEC, NULL, 0,
        "Bytes after the last UET header", HFILL}},
      {&hf_ack_psn,
       {"ACK PSN", "uetref.pds.ack_psn", FT_UINT32, BASE_DEC, NULL, 0,
        "CACK PSN + ACK PSN offset: the packet that triggered this ACK (spec/uet.md §3.7)", HFILL}},
      {&hf_clear_psn,
       {"Clear PSN", "uetref.pds.clear_psn", FT_UINT32, BASE_DEC, NULL, 0,
        "PSN + clear PSN offset (spec/uet.md §3.3)", HFILL}},
      {&hf_start_psn,
       {"Start PSN", "uetref.pds.start_psn", FT_UINT32, BASE_DEC, NULL, 0,
        "PSN - PSN offset, SYN form (spec/uet.md §3.3)", HFILL}},
      {&hf_sack_base,
       {"SACK base PSN", "uetref.pds.sack.base", FT_UINT32, BASE_DEC, NULL, 0,
        "CACK PSN + SACK PSN offset (spec/uet.md §3.8)", HFILL}},
      {&hf_sack_psn,
       {"SACKed PSN", "uetref.pds.sack.psn", FT_UINT32, BASE_DEC, NULL, 0,
        "A PSN the SACK bitmap reports as received", HFILL}},
      {&hf_sack_gap,
       {"Missing PSN", "uetref.pds.sack.gap", FT_UINT32, BASE_DEC, NULL, 0,
        "A PSN after the CACK PSN and before the highest SACKed PSN that has not arrived", HFILL}},
      {&hf_sack_acked,
       {"SACKed PSNs", "uetref.pds.sack.count", FT_UINT32, BASE_DEC, NULL, 0,
        "Bits set in the SACK bitmap", HFILL}},
      {&hf_sack_missing,
       {"Missing PSNs", "uetref.pds.sack.gaps", FT_UINT32, BASE_DEC, NULL, 0,
        "PSNs between CACK and the highest SACKed PSN that have not arrived", HFILL}},
      {&hf_trimmed,
       {"Trimmed", "uetref.analysis.trimmed", FT_BOOLEAN, BASE_NONE, NULL, 0,
        "A request trimmed in the fabric (spec/uet.md §3.14)", HFILL}},
  };
  static gint *ett[] = {&ett_uetref, &ett_sack};
  static ei_register_info ei[] = {
      {&ei_unknown_pds_type,
       {"uetref.expert.unknown_pds_type", PI_PROTOCOL, PI_WARN,
        "Unknown PDS type (spec/uet.md §6 rule 3)", EXPFILL}},
      {&ei_enc_after_tss,
       {"uetref.expert.enc_after_tss", PI_PROTOCOL, PI_WARN,
        "PDS type ENC after a TSS header (spec/uet.md §6 rule 3)", EXPFILL}},
      {&ei_tss,
       {"uetref.expert.tss", PI_SECURITY, PI_NOTE,
        "TSS header: a sealed frame, AES-256-GCM (spec/uet.md §5)", EXPFILL}},
      {&ei_bad_next_hdr,
       {"uetref.expert.bad_next_hdr", PI_PROTOCOL, PI_WARN,
        "Next header not allowed here (spec/uet.md §6 rule 4)", EXPFILL}},
      {&ei_unknown_ctrl_type,
       {"uetref.expert.unknown_ctrl_type", PI_PROTOCOL, PI_WARN,
        "Unknown control type (spec/uet.md §6 rule 5)", EXPFILL}},
      {&ei_unknown_ses_opcode,
       {"uetref.expert.unknown_ses_opcode", PI_PROTOCOL, PI_WARN,
        "Unknown SES opcode (spec/uet.md §6 rule 7)", EXPFILL}},
      {&ei_bad_ses_version,
       {"uetref.expert.bad_ses_version", PI_PROTOCOL, PI_WARN,
        "SES version not 0 (spec/uet.md §6 rule 8)", EXPFILL}},
      {&ei_bad_rsp_opcode,
       {"uetref.expert.bad_rsp_opcode", PI_PROTOCOL, PI_WARN,
        "Response opcode does not match its header (spec/uet.md §6 rule 9)", EXPFILL}},
      {&ei_ses_length,
       {"uetref.expert.ses_length", PI_MALFORMED, PI_WARN,
        "SES payload_length disagrees with the packet (spec/uet.md §6 rules 10, 11)", EXPFILL}},
      {&ei_trimmed,
       {"uetref.expert.trimmed", PI_SEQUENCE, PI_WARN, "Trimmed request (spec/uet.md §3.14)",
        EXPFILL}},
      {&ei_nack, {"uetref.expert.nack", PI_SEQUENCE, PI_WARN, "NACK (spec/uet.md §3.10)", EXPFILL}},
      {&ei_sack_gap,
       {"uetref.expert.sack_gap", PI_SEQUENCE, PI_NOTE,
        "SACK bitmap reports missing PSNs (spec/uet.md §3.8)", EXPFILL}},
      {&ei_unknown_cc_type,
       {"uetref.expert.unknown_cc_type", PI_UNDECODED, PI_NOTE,
        "CC type without a known layout (spec/uet.md §3.8)", EXPFILL}},
  };

  proto_uetref = proto_register_protocol(UETREF_PROTO_NAME, UETREF_PROTO_SHORT, UETREF_FILTER);
  proto_uetref_rocev2 =
      proto_register_protocol(UETREF_ROCE_PROTO_NAME, UETREF_ROCE_PROTO_SHORT, UETREF_ROCE_FILTER);
  uetref_fields_register();
  proto_register_field_array(proto_uetref, hf, array_length(hf));
  proto_register_subtree_array(ett, array_length(ett));
  expert_module_t *em = expert_register_protocol(proto_uetref);
  expert_register_field_array(em, ei, array_length(ei));
  uetref_pdc_register(proto_uetref, em);
  uetref_tap = register_tap("uetref");

  module_t *m = prefs_register_protocol(proto_uetref, uetref_tss_prefs_applied);
  prefs_register_uint_preference(
      m, "trimmed_dscp", "Trimmed DSCP",
      "The DSCP a switch sets on a request it trims (spec/uet.md §3.14; the simulator's by default)", 10,
      &pref_trim_dscp);
  uetref_tss_register(proto_uetref, m, em);

  uet_udp_handle = register_dissector("uetref", dissect_uet_udp, proto_uetref);
  uet_ip_handle = register_dissector("uetref.ip", dissect_uet_ip, proto_uetref);
  uetref_rocev2_register();
}

void proto_reg_handoff_uetref(void) {
  /* §2.1: UDP 4793 (this replaces a built-in "uet" dissector of newer releases on that port;
   * Decode As switches back). §2.2: the IP-only form only through Decode As, like upstream. */
  dissector_add_uint_with_preference("udp.port", UET_UDP_DPORT, uet_udp_handle);
  dissector_add_for_decode_as("udp.port", uet_udp_handle);
  dissector_add_for_decode_as_with_preference("ip.proto", uet_ip_handle);
  uetref_rocev2_handoff();
}
