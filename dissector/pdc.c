/* dissector/pdc.c: one conversation per PDC (spec/uet.md §3.3, §3.7), and the analysis that
 * needs it: retransmissions (RETX flag and duplicate PSNs per direction), the request an ACK or
 * NACK names, PSNs outside the window the peer advertised (ACK_CC MPR, §3.8), and per-PDC
 * entropy (path) statistics (§2.4).
 *
 * Pairing. A PDC has two IDs, one per end. A packet names its sender's ID in SPDCID and, once
 * known, its receiver's in DPDCID (the SYN form carries PDC info instead, §3.3). A PDC is found
 * by the sender's "half" (sender address, receiver address, SPDCID) or, failing that, by the
 * receiver's half (receiver, sender, DPDCID), and then learns the sender's half.
 *
 * State. The map of halves and the PDCs live in wmem file scope and change only on the first
 * pass over a frame; what a frame shows is frozen then (p_add_proto_data), so a second pass
 * or the GUI re-dissecting shows the same thing.
 */
#include <epan/address.h>
#include <epan/expert.h>
#include <epan/proto_data.h>
#include <string.h>

#include "uetref.h"

typedef struct {
  address from;
  address to;
  guint16 id;
} half_key;

typedef struct {
  wmem_map_t *psn_frame; /* PSN -> first frame carrying it (requests) */
  wmem_map_t *ev_count;  /* EV -> packets */
  guint32 n_ev;
  gboolean win_known; /* the peer's last advertised window (ACK_CC/ACK_CCX) */
  guint32 win_cack;
  guint32 win_mpr;
} dir_state;

typedef struct {
  guint32 number;
  guint32 first_frame;
  address init_addr;
  guint16 init_pdcid;
  gboolean tgt_known;
  guint16 tgt_pdcid;
  gboolean start_known;
  guint32 start_psn;
  dir_state dir[2]; /* 0: initiator to target, 1: target to initiator */
} pdc_state;

/* What one frame shows; filled on the first pass. */
typedef struct {
  guint32 number;
  guint32 first_frame;
  guint16 init_pdcid;
  guint16 tgt_pdcid;
  gboolean tgt_known;
  guint8 dir;
  gboolean new_pdc;
  gboolean dup;
  guint32 orig_frame;
  gboolean oow;
  guint32 win_cack;
  guint32 win_mpr;
  guint32 ref_frame; /* the request an ACK (ACK PSN) or NACK (NACK PSN) names */
  guint32 ev_distinct;
  guint32 ev_packets;
} frame_result;

static int proto_pdc = -1;
static int hf_pdc = -1;
static int hf_pdc_init = -1;
static int hf_pdc_tgt = -1;
static int hf_pdc_dir = -1;
static int hf_pdc_first = -1;
static int hf_retx = -1;
static int hf_dup = -1;
static int hf_orig = -1;
static int hf_oow = -1;
static int hf_acked_frame = -1;
static int hf_nacked_frame = -1;
static int hf_ev_distinct = -1;
static int hf_ev_packets = -1;
static gint ett_pdc = -1;
static expert_field ei_retx = EI_INIT;
static expert_field ei_dup = EI_INIT;
static expert_field ei_oow = EI_INIT;
static expert_field ei_new_pdc = EI_INIT;

static wmem_map_t *halves; /* half_key -> pdc_state, file scope */
static guint32 n_pdcs;

static const value_string dir_vals[] = {
    {0, "initiator to target"}, {1, "target to initiator"}, {0, NULL}};

static guint half_hash(gconstpointer k) {
  const half_key *h = (const half_key *)k;
  guint v = h->id;
  v = add_address_to_hash(v, &h->from);
  return add_address_to_hash(v, &h->to);
}

static gboolean half_equal(gconstpointer a, gconstpointer b) {
  const half_key *x = (const half_key *)a, *y = (const half_key *)b;
  return x->id == y->id && addresses_equal(&x->from, &y->from) && addresses_equal(&x->to, &y->to);
}

static void remember_half(const address *from, const address *to, guint16 id, pdc_state *p) {
  half_key *k = wmem_new(wmem_file_scope(), half_key);
  copy_address_wmem(wmem_file_scope(), &k->from, from);
  copy_address_wmem(wmem_file_scope(), &k->to, to);
  k->id = id;
  wmem_map_insert(halves, k, p);
}

static pdc_state *lookup_half(const address *from, const address *to, guint16 id) {
  half_key k;
  k.from = *from; /* shallow: only for the lookup */
  k.to = *to;
  k.id = id;
  return (pdc_state *)wmem_map_lookup(halves, &k);
}

static pdc_state *new_pdc(packet_info *pinfo) {
  pdc_state *p = wmem_new0(wmem_file_scope(), pdc_state);
  p->number = ++n_pdcs;
  p->first_frame = pinfo->num;
  for (int d = 0; d < 2; d++) {
    p->dir[d].psn_frame = wmem_map_new(wmem_file_scope(), g_direct_hash, g_direct_equal);
    p->dir[d].ev_count = wmem_map_new(wmem_file_scope(), g_direct_hash, g_direct_equal);
  }
  return p;
}

/* First pass: find or create the PDC and update it. */
static frame_result *analyse_first_pass(packet_info *pinfo, const uetref_pkt *pkt) {
  const address *src = &pinfo->net_src, *dst = &pinfo->net_dst;
  frame_result *r = wmem_new0(wmem_file_scope(), frame_result);
  pdc_state *p = lookup_half(src, dst, pkt->spdcid);
  gboolean learned = FALSE;

  /* A SYN request with a start PSN other than the PDC's opens a new PDC on reused IDs. */
  if (p && pkt->is_request && pkt->syn && p->start_known && p->start_psn != pkt->start_psn)
    p = NULL;
  if (!p && pkt->dpdcid_known) {
    p = lookup_half(dst, src, pkt->dpdcid);
    learned = p != NULL;
  }
  if (!p) {
    p = new_pdc(pinfo);
    r->new_pdc = TRUE;
    if (pkt->from_initiator) {
      copy_address_wmem(wmem_file_scope(), &p->init_addr, src);
      p->init_pdcid = pkt->spdcid;
      if (pkt->dpdcid_known) {
        p->tgt_known = TRUE;
        p->tgt_pdcid = pkt->dpdcid;
        remember_half(dst, src, pkt->dpdcid, p);
      }
    } else {
      copy_address_wmem(wmem_file_scope(), &p->init_addr, dst);
      p->init_pdcid = pkt->dpdcid;
      p->tgt_known = TRUE;
      p->tgt_pdcid = pkt->spdcid;
      remember_half(dst, src, pkt->dpdcid, p);
    }
    remember_half(src, dst, pkt->spdcid, p);
  } else if (learned) {
    remember_half(src, dst, pkt->spdcid, p);
  }

  /* Direction: the initiator sends with its own ID. */
  const int dir = (addresses_equal(src, &p->init_addr) && pkt->spdcid == p->init_pdcid) ? 0 : 1;
  if (dir == 1 && !p->tgt_known) {
    p->tgt_known = TRUE;
    p->tgt_pdcid = pkt->spdcid;
  }
  if (pkt->is_request && pkt->syn && !p->start_known) {
    p->start_known = TRUE;
    p->start_psn = pkt->start_psn;
  }
  dir_state *ds = &p->dir[dir];
  dir_state *peer = &p->dir[1 - dir];

  if (pkt->is_request) {
    gpointer orig = wmem_map_lookup(ds->psn_frame, GUINT_TO_POINTER(pkt->psn));
    if (orig) {
      r->dup = TRUE;
      r->orig_frame = GPOINTER_TO_UINT(orig);
    } else {
      wmem_map_insert(ds->psn_frame, GUINT_TO_POINTER(pkt->psn), GUINT_TO_POINTER(pinfo->num));
    }
    /* §3.8: the receiver tracks PSNs up to MPR past its CACK PSN. */
    if (ds->win_known && ds->win_mpr && (gint32)(pkt->psn - ds->win_cack) > (gint32)ds->win_mpr) {
      r->oow = TRUE;
      r->win_cack = ds->win_cack;
      r->win_mpr = ds->win_mpr;
    }
  }
  if (pkt->is_ack) {
    r->ref_frame =
        GPOINTER_TO_UINT(wmem_map_lookup(peer->psn_frame, GUINT_TO_POINTER(pkt->ack_psn)));
    if (pkt->has_window) {
      peer->win_known = TRUE;
      peer->win_cack = pkt->cack_psn;
      peer->win_mpr = pkt->mpr;
    }
  }
  if (pkt->is_nack && pkt->nack_is_psn)
    r->ref_frame =
        GPOINTER_TO_UINT(wmem_map_lookup(peer->psn_frame, GUINT_TO_POINTER(pkt->nack_psn)));

  /* §2.4: how many paths (EVs) this direction of the PDC has used so far. */
  guint32 n = GPOINTER_TO_UINT(wmem_map_lookup(ds->ev_count, GUINT_TO_POINTER(pkt->ev)));
  if (n == 0) ds->n_ev++;
  wmem_map_insert(ds->ev_count, GUINT_TO_POINTER(pkt->ev), GUINT_TO_POINTER(n + 1));
  r->ev_distinct = ds->n_ev;
  r->ev_packets = n + 1;

  r->number = p->number;
  r->first_frame = p->first_frame;
  r->init_pdcid = p->init_pdcid;
  r->tgt_known = p->tgt_known;
  r->tgt_pdcid = p->tgt_pdcid;
  r->dir = (guint8)dir;
  return r;
}

void uetref_pdc_analyse(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, const uetref_pkt *pkt,
                        uetref_pdc_ref *out) {
  const guint32 key = pinfo->curr_layer_num;
  frame_result *r = (frame_result *)p_get_proto_data(wmem_file_scope(), pinfo, proto_pdc, key);
  memset(out, 0, sizeof *out);
  if (!r) {
    if (pinfo->fd->visited) return; /* not seen on the first pass (should not happen) */
    r = analyse_first_pass(pinfo, pkt);
    p_add_proto_data(wmem_file_scope(), pinfo, proto_pdc, key, r);
  }
  out->number = r->number;
  out->dir = r->dir;
  out->init_pdcid = r->init_pdcid;
  out->tgt_pdcid = r->tgt_known ? r->tgt_pdcid : 0;

  proto_item *pi = NULL;
  proto_tree *t = proto_tree_add_subtree_format(tree, tvb, 0, 0, ett_pdc, &pi, "PDC %u (%s)",
                                                r->number, val_to_str_const(r->dir, dir_vals, "?"));
  proto_item_set_generated(pi);
  uetref_add_generated_uint(t, hf_pdc, tvb, r->number);
  uetref_add_generated_uint(t, hf_pdc_init, tvb, r->init_pdcid);
  if (r->tgt_known) uetref_add_generated_uint(t, hf_pdc_tgt, tvb, r->tgt_pdcid);
  uetref_add_generated_uint(t, hf_pdc_dir, tvb, r->dir);
  uetref_add_generated_uint(t, hf_pdc_first, tvb, r->first_frame);
  if (r->new_pdc)
    expert_add_info_format(pinfo, pi, &ei_new_pdc, "First packet of PDC %u", r->number);

  if (pkt->is_request) {
    if (pkt->retx || r->dup) uetref_add_generated_boolean(t, hf_retx, tvb, TRUE);
    if (r->dup) {
      uetref_add_generated_boolean(t, hf_dup, tvb, TRUE);
      uetref_add_generated_uint(t, hf_orig, tvb, r->orig_frame);
    }
    if (pkt->retx && r->dup)
      expert_add_info_format(pinfo, pi, &ei_retx,
                             "Retransmission of PSN %u (first sent in frame %u)", pkt->psn,
                             r->orig_frame);
    else if (pkt->retx)
      expert_add_info_format(pinfo, pi, &ei_retx,
                             "Retransmission of PSN %u (original not in the capture)", pkt->psn);
    else if (r->dup)
      expert_add_info_format(pinfo, pi, &ei_dup,
                             "Duplicate PSN %u without RETX (first sent in frame %u)", pkt->psn,
                             r->orig_frame);
    if (r->oow) {
      proto_item *wi = uetref_add_generated_boolean(t, hf_oow, tvb, TRUE);
      expert_add_info_format(
          pinfo, wi, &ei_oow,
          "PSN %u beyond the advertised window: CACK %u + MPR %u (spec/uet.md §3.8)", pkt->psn,
          r->win_cack, r->win_mpr);
    }
  }
  if (r->ref_frame)
    uetref_add_generated_uint(t, pkt->is_nack ? hf_nacked_frame : hf_acked_frame, tvb,
                              r->ref_frame);
  uetref_add_generated_uint(t, hf_ev_distinct, tvb, r->ev_distinct);
  uetref_add_generated_uint(t, hf_ev_packets, tvb, r->ev_packets);
}

static void pdc_init(void) { n_pdcs = 0; }

void uetref_pdc_register(int proto, expert_module_t *expert) {
  static hf_register_info hf[] = {
      {&hf_pdc,
       {"PDC", "uetref.pdc", FT_UINT32, BASE_DEC, NULL, 0, "PDC number in this capture", HFILL}},
      {&hf_pdc_init,
       {"Initiator PDC ID", "uetref.pdc.initiator_pdcid", FT_UINT16, BASE_DEC, NULL, 0, NULL,
        HFILL}},
      {&hf_pdc_tgt,
       {"Target PDC ID", "uetref.pdc.target_pdcid", FT_UINT16, BASE_DEC, NULL, 0, NULL, HFILL}},
      {&hf_pdc_dir,
       {"Direction", "uetref.pdc.direction", FT_UINT8, BASE_DEC, VALS(dir_vals), 0, NULL, HFILL}},
      {&hf_pdc_first,
       {"First frame of the PDC", "uetref.pdc.first_frame", FT_FRAMENUM, BASE_NONE, NULL, 0, NULL,
        HFILL}},
      {&hf_retx,
       {"Retransmission", "uetref.analysis.retransmission", FT_BOOLEAN, BASE_NONE, NULL, 0,
        "RETX set, or a PSN this direction of the PDC already carried", HFILL}},
      {&hf_dup,
       {"Duplicate PSN", "uetref.analysis.duplicate_psn", FT_BOOLEAN, BASE_NONE, NULL, 0,
        "This direction of the PDC already carried this PSN", HFILL}},
      {&hf_orig,
       {"First sent in frame", "uetref.analysis.original_frame", FT_FRAMENUM, BASE_NONE,
        FRAMENUM_TYPE(FT_FRAMENUM_RETRANS_PREV), 0, NULL, HFILL}},
      {&hf_oow,
       {"Beyond the advertised window", "uetref.analysis.out_of_window", FT_BOOLEAN, BASE_NONE,
        NULL, 0, "PSN more than MPR past the peer's last CACK PSN (spec/uet.md §3.8)", HFILL}},
      {&hf_acked_frame,
       {"Acknowledges frame", "uetref.analysis.acked_frame", FT_FRAMENUM, BASE_NONE,
        FRAMENUM_TYPE(FT_FRAMENUM_ACK), 0, "The request carrying the ACK PSN", HFILL}},
      {&hf_nacked_frame,
       {"NACKs frame", "uetref.analysis.nacked_frame", FT_FRAMENUM, BASE_NONE,
        FRAMENUM_TYPE(FT_FRAMENUM_REQUEST), 0, "The request carrying the NACK PSN", HFILL}},
      {&hf_ev_distinct,
       {"EVs used so far", "uetref.analysis.ev_count", FT_UINT32, BASE_DEC, NULL, 0,
        "Distinct entropy values (paths) this direction of the PDC has used up to this packet",
        HFILL}},
      {&hf_ev_packets,
       {"Packets on this EV", "uetref.analysis.ev_packets", FT_UINT32, BASE_DEC, NULL, 0,
        "Packets this direction of the PDC has sent with this EV up to this one", HFILL}},
  };
  static gint *ett[] = {&ett_pdc};
  static ei_register_info ei[] = {
      {&ei_retx, {"uetref.expert.retransmission", PI_SEQUENCE, PI_NOTE, "Retransmission", EXPFILL}},
      {&ei_dup,
       {"uetref.expert.duplicate_psn", PI_SEQUENCE, PI_WARN, "Duplicate PSN without RETX",
        EXPFILL}},
      {&ei_oow,
       {"uetref.expert.out_of_window", PI_SEQUENCE, PI_WARN, "PSN beyond the advertised window",
        EXPFILL}},
      {&ei_new_pdc,
       {"uetref.expert.new_pdc", PI_SEQUENCE, PI_CHAT, "First packet of a PDC", EXPFILL}},
  };
  proto_pdc = proto;
  proto_register_field_array(proto, hf, array_length(hf));
  proto_register_subtree_array(ett, array_length(ett));
  expert_register_field_array(expert, ei, array_length(ei));
  halves = wmem_map_new_autoreset(wmem_epan_scope(), wmem_file_scope(), half_hash, half_equal);
  register_init_routine(pdc_init);
}
