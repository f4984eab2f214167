/* dissector/uetref.h: what the files of the UET (uet-ref) Wireshark plugin share.
 *
 * Ownership: every table here is built once at registration (proto_register_*) and only read
 * while dissecting. Per-capture analysis state lives in pdc.c (wmem file scope); nothing else
 * keeps state between packets. Wireshark calls a dissector from one thread at a time.
 *
 * The header and field tables are expanded from spec/uet.def and spec/rocev2.def
 * (format: spec/README.md), so a row added there shows up here after a rebuild.
 */
#ifndef UETREF_DISSECTOR_UETREF_H_
#define UETREF_DISSECTOR_UETREF_H_

#include <epan/expert.h>
#include <epan/packet.h>
#include <epan/prefs.h>
#include <wireshark.h>

#include "spec/rocev2.def"
#include "spec/uet.def"

/* ----------------------------------------------------------------- protocols */
/* Our names never clash with Wireshark's own "uet" (4.6+) or "infiniband". */
#define UETREF_PROTO_NAME "UET (uet-ref)"
#define UETREF_PROTO_SHORT "UETREF"
#define UETREF_FILTER "uetref"
#define UETREF_ROCE_PROTO_NAME "RoCEv2 checks (uet-ref)"
#define UETREF_ROCE_PROTO_SHORT "UETREF-RoCEv2"
#define UETREF_ROCE_FILTER "uetref.rocev2"

extern int proto_uetref;
extern int proto_uetref_rocev2;

/* ------------------------------------------------------------------- headers */
/* One enumerator per H row of both tables: UETREF_H_pds_rud_rod, UETREF_H_bth, ... */
#define UETREF_HDR_ENUM_(id, Name, size, prefix, section, title) UETREF_H_##id,
typedef enum {
  UET_HEADERS(UETREF_HDR_ENUM_) ROCEV2_HEADERS(UETREF_HDR_ENUM_) UETREF_H_COUNT
} uetref_hdr;
#undef UETREF_HDR_ENUM_

/* The field kinds of spec/README.md. */
typedef enum {
  UETREF_UDEC,
  UETREF_UHEX,
  UETREF_SDEC,
  UETREF_FLAG,
  UETREF_RSVD,
  UETREF_BYTES
} uetref_kind;

/* One F row. */
typedef struct {
  const char *name;
  guint offset;
  guint width;
  guint64 mask; /* 0: all bits */
  uetref_kind kind;
  const value_string *vals; /* uetref_vs_none when the row names no table */
  const char *title;
} uetref_row;

/* One H row and its F rows. */
typedef struct {
  const char *id;
  const char *prefix; /* full filter prefix, e.g. "uetref.pds" */
  guint size;
  const char *section; /* e.g. "spec/uet.md §3.3" */
  const char *title;
  const uetref_row *rows;
  guint n_rows;
} uetref_header_desc;

extern const uetref_header_desc uetref_headers[UETREF_H_COUNT];

/* ------------------------------------------------------------ value tables */
/* uetref_vs_<table id> for every value table, plus uetref_vs_none (empty). */
#define UETREF_VS_DECL_(id, Name, title) extern const value_string uetref_vs_##id[];
UET_VALUE_TABLES(UETREF_VS_DECL_)
ROCEV2_VALUE_TABLES(UETREF_VS_DECL_)
#undef UETREF_VS_DECL_
extern const value_string uetref_vs_none[];
/* The meanings (fourth V column) of the NACK codes, for expert texts. */
extern const value_string uetref_vs_nack_code_meaning[];

/* Enumerators of the value tables the code branches on: UETREF_PDS_kAck, ... */
#define UETREF_ENUM_PDS_(k, v, n, d) UETREF_PDS_##k = v,
enum { UET_VALS_pds_type(UETREF_ENUM_PDS_) };
#undef UETREF_ENUM_PDS_
#define UETREF_ENUM_NH_(k, v, n, d) UETREF_NH_##k = v,
enum { UET_VALS_next_hdr(UETREF_ENUM_NH_) };
#undef UETREF_ENUM_NH_
#define UETREF_ENUM_SES_(k, v, n, d) UETREF_SES_##k = v,
enum { UET_VALS_ses_opcode(UETREF_ENUM_SES_) };
#undef UETREF_ENUM_SES_
#define UETREF_ENUM_RSP_(k, v, n, d) UETREF_RSP_##k = v,
enum { UET_VALS_ses_rsp_opcode(UETREF_ENUM_RSP_) };
#undef UETREF_ENUM_RSP_
#define UETREF_ENUM_CTRL_(k, v, n, d) UETREF_CTRL_##k = v,
enum { UET_VALS_ctrl_type(UETREF_ENUM_CTRL_) };
#undef UETREF_ENUM_CTRL_
#define UETREF_ENUM_NACK_(k, v, n, d) UETREF_NACK_##k = v,
enum { UET_VALS_nack_code(UETREF_ENUM_NACK_) };
#undef UETREF_ENUM_NACK_
#define UETREF_ENUM_ROCE_(k, v, n, d) UETREF_ROCE_##k = v,
enum { ROCEV2_VALS_roce_opcode(UETREF_ENUM_ROCE_) };
#undef UETREF_ENUM_ROCE_
#define UETREF_ENUM_AETH_(k, v, n, d) UETREF_AETH_##k = v,
enum { ROCEV2_VALS_aeth_type(UETREF_ENUM_AETH_) };
#undef UETREF_ENUM_AETH_

/* -------------------------------------------------------------- named fields */
/* The fields the code reads by name. Each is looked up in every header at registration, so
 * uetref_get(hv, UETREF_N_psn) reads the psn row of whichever header hv holds. A name missing
 * from a header reads as 0 (uetref_has() says whether it is there). */
#define UETREF_NAMES(X)                                                                           \
  X(type)                                                                                         \
  X(sp) X(next_hdr) X(ctl_type) X(retx) X(ar) X(syn) X(clear_psn_offset) X(psn) X(spdcid)         \
      X(dpdcid) X(use_rsv_pdc) X(psn_offset) X(pkt_id) X(ack_psn_offset) X(cack_psn) X(cc_type)   \
          X(mpr) X(sack_psn_offset) X(sack_bitmap) X(nack_code) X(nack_psn) X(nt) X(nack_payload) \
              X(ctrl_payload) X(opcode) X(ver) X(som) X(eom) X(payload_length) X(message_id)      \
                  X(request_length) X(atomic_opcode) X(entropy) X(pad_cnt) X(tver) X(dest_qp)     \
                      X(fecn) X(becn) X(syndrome_type) X(syndrome_value) X(msn) X(credit)         \
                          X(an) X(sdi) X(ssi) X(tsc) UETREF_NAME_PROBE_(X)
/* Registration refuses a name no header has (fields.c); the self-check build of the plugin
 * adds one on purpose (tests/dissector). */
#ifdef UETREF_MISSING_NAME_PROBE
#define UETREF_NAME_PROBE_(X) UETREF_NAME_PROBE_EXPANDED_(X, UETREF_MISSING_NAME_PROBE)
#define UETREF_NAME_PROBE_EXPANDED_(X, name) X(name)
#else
#define UETREF_NAME_PROBE_(X)
#endif
#define UETREF_NAME_ENUM_(n) UETREF_N_##n,
typedef enum { UETREF_NAMES(UETREF_NAME_ENUM_) UETREF_N_COUNT } uetref_name;
#undef UETREF_NAME_ENUM_

/* ------------------------------------------------------- fields.c: the rows */
#define UETREF_MAX_ROWS 64

/* A header as dissected: every row's value (BYTES rows read 0), where it sits and its tree. */
typedef struct {
  uetref_hdr hdr;
  int offset;
  guint64 v[UETREF_MAX_ROWS];
  proto_item *items[UETREF_MAX_ROWS]; /* NULL for rows not shown */
  proto_tree *tree;
  proto_item *item;
} uetref_hdr_vals;

/* Registers one hf per (filter prefix, field name) of every table, one FT_NONE item per filter
 * prefix, the subtrees and the shared expert infos, for both protocols. */
void uetref_fields_register(void);

/* Adds header `hdr` at `offset`: a subtree with the rows whose overlay condition holds, expert
 * info on non-zero reserved rows. Returns FALSE, with expert info, when the header does not
 * fit; then nothing of it is read. `out` may be NULL. */
gboolean uetref_add_header(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, int offset,
                           uetref_hdr hdr, uetref_hdr_vals *out);

/* Reads one named field of header `hdr` at `offset` without adding anything. Returns FALSE
 * when the header has no such field or its bytes are not there. */
gboolean uetref_peek(tvbuff_t *tvb, int offset, uetref_hdr hdr, uetref_name name, guint64 *value);

gboolean uetref_has(uetref_hdr hdr, uetref_name name);
guint64 uetref_get(const uetref_hdr_vals *hv, uetref_name name);
/* Two's complement value of an SDEC row. */
gint64 uetref_get_signed(const uetref_hdr_vals *hv, uetref_name name);
/* The tree item of a named row (NULL when not shown), to hang expert info on. */
proto_item *uetref_item(const uetref_hdr_vals *hv, uetref_name name);

/* ----------------------------------------------------------- generated items */
/* A value the dissector worked out rather than read: shown in brackets, covering no bytes. */
static inline proto_item *uetref_add_generated_uint(proto_tree *tree, int hf, tvbuff_t *tvb,
                                                    guint32 value) {
  proto_item *it = proto_tree_add_uint(tree, hf, tvb, 0, 0, value);
  proto_item_set_generated(it);
  return it;
}

static inline proto_item *uetref_add_generated_boolean(proto_tree *tree, int hf, tvbuff_t *tvb,
                                                       gboolean value) {
  proto_item *it = proto_tree_add_boolean(tree, hf, tvb, 0, 0, value);
  proto_item_set_generated(it);
  return it;
}

/* ------------------------------------------------------------- ip_header.c */
/* The IP header right before this layer, found in the frame's top-level tvb. */
typedef struct {
  tvbuff_t *ds; /* the frame's data source */
  int offset;   /* of the IP header in ds */
  int length;   /* IPv4: IHL * 4; IPv6: 40 */
  int version;  /* 4 or 6 */
  guint8 dscp;
} uetref_ip_header;

/* `gap` is the number of bytes between the end of the IP header and the start of `tvb` (8 when
 * tvb is a UDP payload, 0 when it is the IP payload); `proto` the IP protocol it must name (-1:
 * any). */
gboolean uetref_find_ip_header(tvbuff_t *tvb, packet_info *pinfo, int gap, int proto,
                               uetref_ip_header *out);

/* ------------------------------------------------------------------ pdc.c */
/* What uet.c hands the PDC analysis for one packet. */
typedef struct {
  int pds_type;
  guint16 ev;
  gboolean has_pdc;        /* carries SPDCID/DPDCID (RUD/ROD requests, ACK*, NACK*, CTRL) */
  gboolean from_initiator; /* sent by the PDC's initiator (spec/uet.md §3.7 PDC IDs) */
  guint16 spdcid;
  guint16 dpdcid;
  gboolean dpdcid_known; /* FALSE in the SYN form (§3.3): bytes 10-11 hold PDC info */
  gboolean is_request;   /* consumes a PSN: RUD/ROD/RUD_CC/ROD_CC request */
  gboolean syn;
  gboolean retx;
  guint32 psn;
  guint32 start_psn; /* SYN form only */
  gboolean is_ack;   /* ACK, ACK_CC, ACK_CCX */
  guint32 cack_psn;
  guint32 ack_psn;
  gboolean has_window; /* ACK_CC/ACK_CCX: MPR */
  guint32 mpr;
  gboolean is_nack;
  gboolean nack_is_psn; /* NT clear */
  guint32 nack_psn;
} uetref_pkt;

/* The PDC a packet belongs to, as the analysis found it. */
typedef struct {
  guint32 number; /* 1.. in capture order; 0: no PDC */
  guint8 dir;     /* 0: initiator to target, 1: target to initiator */
  guint16 init_pdcid;
  guint16 tgt_pdcid; /* 0 while unknown */
} uetref_pdc_ref;

void uetref_pdc_register(int proto, expert_module_t *expert);
/* Finds or creates the packet's PDC (first pass) and adds the analysis subtree. */
void uetref_pdc_analyse(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, const uetref_pkt *pkt,
                        uetref_pdc_ref *out);

/* ------------------------------------------------------------------ stats.c */
/* What the "uetref" tap carries for each UET packet. */
typedef struct {
  int pds_type;
  guint16 ev;
  uetref_pdc_ref pdc;
} uetref_tap_info;

extern int uetref_tap;
/* Registers the statistics tree (tshark -z uetref_ev,tree; Statistics menu). */
void uetref_register_stats(void);

/* -------------------------------------------------------------------- tss.c */
/* What became of a sealed frame (spec/uet.md §5). */
typedef enum {
  UETREF_TSS_NO_KEY,     /* the key file has no key for its SDI and AN: ciphertext only */
  UETREF_TSS_GOOD,       /* the tag matched: the plaintext is the sender's */
  UETREF_TSS_BAD_TAG,    /* the tag did not match: nothing of the plaintext is shown */
  UETREF_TSS_UNVERIFIED, /* trimmed (§5.5) or the tag not captured: decrypted, not authenticated */
  UETREF_TSS_FAILED      /* too short for a tag, no IP addresses, or libgcrypt failed */
} uetref_tss_result;

/* Registers the key file preference (in `prefs`), the TSS fields and expert infos. */
void uetref_tss_register(int proto, module_t *prefs, expert_module_t *expert);
/* The preferences were applied: read the key file again before the next sealed frame. */
void uetref_tss_prefs_applied(void);
/* Shows what follows the TSS header `tss` (ciphertext, tag) in its subtree and, with the key of
 * its SDI and AN, opens it. Returns the plaintext (PDS header, SES header, payload; tag
 * excluded) as a new data source "Decrypted TSS" when the result is UETREF_TSS_GOOD or
 * UETREF_TSS_UNVERIFIED, NULL otherwise. `ip_only`: tvb starts with the entropy header (§2.2);
 * `trimmed`: the IP header carries the trimmed DSCP, so the tag may be gone (§5.5). */
tvbuff_t *uetref_tss_open(tvbuff_t *tvb, packet_info *pinfo, const uetref_hdr_vals *tss,
                          gboolean ip_only, gboolean trimmed, uetref_tss_result *result);

/* ---------------------------------------------------------------- rocev2.c */
void uetref_rocev2_register(void);
void uetref_rocev2_handoff(void);

/* ------------------------------------------------- uet.c: the plugin's parts */
void proto_register_uetref(void);
void proto_reg_handoff_uetref(void);

#endif /* UETREF_DISSECTOR_UETREF_H_ */
