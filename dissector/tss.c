/* dissector/tss.c: opening sealed frames (spec/uet.md §5) with keys from a key file.
 *
 * A sealed frame is the TSS header, then the AES-256-GCM ciphertext of the PDS header, SES
 * header and payload, then a 16-byte tag (§5.1). With the key of the frame's (SDI, AN), read
 * from the file the preference uetref.tss_key_file names (tss_keys.c), this file derives the
 * packet key and IV mask (§5.3: cluster mode over the sender; server mode over the client, who
 * is the source or the destination, whichever tag matches; direct and client modes use the key
 * as it is), builds the IV and the AAD (§5.2), decrypts into a new data source "Decrypted TSS"
 * and checks the tag; uet.c dissects the plaintext as it dissects a clear frame. A trimmed
 * sealed frame has lost its tag: its prefix is decrypted without authentication and marked so
 * (§5.5).
 *
 * Keys never enter the tree, the log or an expert text; what held them is wiped. The crypto is
 * libgcrypt's (Wireshark's own dependency); nothing here implements a cipher.
 */
#include <epan/expert.h>
#include <epan/prefs.h>
#include <string.h>
#include <wsutil/pint.h>
#include <wsutil/wsgcrypt.h>

#include "tss_keys.h"
#include "uetref.h"

#define TAG_BYTES UET_TSS_TAG_BYTES
#define KEY_BYTES UET_TSS_KEY_BYTES
#define IV_BYTES UET_TSS_IV_BYTES
#define KDF_BYTES (UET_TSS_KDF_BITS / 8) /* packet key, then IV mask */
#define COUNTER_MASK ((G_GUINT64_CONSTANT(1) << UET_TSS_COUNTER_BITS) - 1)

static const value_string mode_vals[] = {
    {MODE_CLUSTER, "cluster (packet key from the KDF over the sender)"},
    {MODE_DIRECT, "direct (the domain key, no IV mask)"},
    {MODE_SERVER, "server (the client's key from the KDF over the client)"},
    {MODE_CLIENT, "client (a client's derived key and IV mask)"},
    {0, NULL}};

static int hf_ciphertext = -1;
static int hf_tag = -1;
static int hf_tag_status = -1;
static int hf_epoch = -1;
static int hf_counter = -1;
static int hf_rekey = -1;
static int hf_mode = -1;
static int hf_key_line = -1;
static int hf_client = -1;

static expert_field ei_bad_tag = EI_INIT;
static expert_field ei_no_key = EI_INIT;
static expert_field ei_unverified = EI_INIT;
static expert_field ei_short = EI_INIT;
static expert_field ei_key_file = EI_INIT;
static expert_field ei_crypto = EI_INIT;

/* -------------------------------------------------------------------- crypto */
static void put_be16(guint8 *p, guint16 v) {
  p[0] = (guint8)(v >> 8);
  p[1] = (guint8)v;
}

static void put_be32(guint8 *p, guint32 v) {
  for (int i = 0; i < 4; i++) p[i] = (guint8)(v >> (24 - 8 * i));
}

/* §5.3: NIST SP 800-108 counter mode, PRF AES-256-CMAC. Block i (i = 1, 2, 3) is
 * CMAC(master, i || label || 0x00 || context || L), L = 352 in two bytes, the label "U1"
 * (cluster) or "U2" (server); the first 44 bytes are the packet key and the IV mask. */
static gcry_error_t kdf(const guint8 *master, const char *label, const guint8 *context,
                        size_t context_len, guint8 *key, guint8 *mask) {
  guint8 msg[1 + 2 + 1 + 26 + 2];
  guint8 out[48];
  size_t n = 1;
  const size_t label_len = strlen(label);
  DISSECTOR_ASSERT(context_len <= 26 && label_len == 2);
  memcpy(msg + n, label, label_len);
  n += label_len;
  msg[n++] = 0x00;
  memcpy(msg + n, context, context_len);
  n += context_len;
  put_be16(msg + n, UET_TSS_KDF_BITS);
  n += 2;

  gcry_mac_hd_t h;
  gcry_error_t e = gcry_mac_open(&h, GCRY_MAC_CMAC_AES, 0, NULL);
  if (e) return e;
  e = gcry_mac_setkey(h, master, KEY_BYTES);
  for (guint i = 0; !e && i < 3; i++) {
    size_t got = 16;
    msg[0] = (guint8)(i + 1);
    if (i) e = gcry_mac_reset(h);
    if (!e) e = gcry_mac_write(h, msg, n);
    if (!e) e = gcry_mac_read(h, out + 16 * i, &got);
  }
  gcry_mac_close(h);
  G_STATIC_ASSERT(KDF_BYTES == KEY_BYTES + IV_BYTES);
  if (!e) {
    memcpy(key, out, KEY_BYTES);
    memcpy(mask, out + KEY_BYTES, IV_BYTES);
  }
  wipe(out, sizeof out);
  return e;
}

/* AES-256-GCM, in place. With a tag: the AAD is authenticated and *tag_ok says whether the
 * tag matched. Without: the bytes are only decrypted (GCM is a counter mode, §5.5). */
static gcry_error_t gcm_open(const guint8 *key, const guint8 *iv, const guint8 *aad, size_t aad_len,
                             guint8 *data, size_t len, const guint8 *tag, gboolean *tag_ok) {
  gcry_cipher_hd_t h;
  gcry_error_t e = gcry_cipher_open(&h, GCRY_CIPHER_AES256, GCRY_CIPHER_MODE_GCM, 0);
  if (e) return e;
  e = gcry_cipher_setkey(h, key, KEY_BYTES);
  if (!e) e = gcry_cipher_setiv(h, iv, IV_BYTES);
  if (!e && tag) e = gcry_cipher_authenticate(h, aad, aad_len);
  if (!e && len) e = gcry_cipher_decrypt(h, data, len, NULL, 0);
  if (!e && tag) {
    const gcry_error_t t = gcry_cipher_checktag(h, tag, TAG_BYTES);
    *tag_ok = t == 0;
    if (t && gcry_err_code(t) != GPG_ERR_CHECKSUM) e = t;
  }
  gcry_cipher_close(h);
  return e;
}

/* What a frame's crypto needs besides the key: the sender's 4-byte identity, the IV's first
 * word, the KDF context and the AAD (§5.2, §5.3). */
typedef struct {
  guint8 aad[32 + 4 + 16];
  size_t aad_len;
  guint8 context[26];
  size_t context_len;
  guint32 iv_source;
} frame_inputs;

/* by_dst: the KDF context names the destination (server mode, a frame to the client). */
static gboolean frame_crypto_inputs(tvbuff_t *tvb, packet_info *pinfo, const uetref_hdr_vals *tss,
                                    gboolean ip_only, guint64 tsc, guint32 rekey, gboolean by_dst,
                                    frame_inputs *in) {
  const address *src = &pinfo->net_src, *dst = &pinfo->net_dst;
  const gboolean v4 =
      src->type == AT_IPv4 && src->len == 4 && dst->type == AT_IPv4 && dst->len == 4;
  const gboolean v6 =
      src->type == AT_IPv6 && src->len == 16 && dst->type == AT_IPv6 && dst->len == 16;
  const guint hdr_size = uetref_headers[tss->hdr].size;
  if (!v4 && !v6) return FALSE;
  /* AAD 1: the IP source and destination addresses. */
  memcpy(in->aad, src->data, (size_t)src->len);
  memcpy(in->aad + src->len, dst->data, (size_t)dst->len);
  in->aad_len = (size_t)(2 * src->len);
  /* AAD 2: the 4 bytes after the IP header: the entropy header, or the UDP ports [choice]. */
  if (ip_only) {
    if (!tvb_bytes_exist(tvb, 0, 4)) return FALSE;
    tvb_memcpy(tvb, in->aad + in->aad_len, 0, 4);
  } else {
    put_be16(in->aad + in->aad_len, (guint16)pinfo->srcport);
    put_be16(in->aad + in->aad_len + 2, (guint16)pinfo->destport);
  }
  in->aad_len += 4;
  /* AAD 3: the TSS header. */
  tvb_memcpy(tvb, in->aad + in->aad_len, tss->offset, hdr_size);
  in->aad_len += hdr_size;

  /* The sender: its SSI when sp is set, else its IPv4 address; IPv6 without an SSI keys on
   * the address (context) and starts the IV with the SDI. In server mode the context names
   * the client, who may be the destination. */
  const guint16 epoch = (guint16)(tsc >> UET_TSS_COUNTER_BITS);
  const gboolean sp = uetref_get(tss, UETREF_N_sp) != 0;
  const address *named = by_dst ? dst : src;
  guint32 addr4 = 0;
  if (sp)
    addr4 = (guint32)uetref_get(tss, UETREF_N_ssi);
  else if (v4)
    addr4 = pntoh32(named->data);
  in->iv_source = sp ? addr4 : v4 ? pntoh32(src->data) : (guint32)uetref_get(tss, UETREF_N_sdi);
  if (sp || v4) { /* epoch (2) || rekey (4) || address (4) */
    put_be16(in->context, epoch);
    put_be32(in->context + 2, rekey);
    put_be32(in->context + 6, addr4);
    in->context_len = 10;
  } else { /* 0 (4) || epoch (2) || rekey (4) || address (16) */
    memset(in->context, 0, 4);
    put_be16(in->context + 4, epoch);
    put_be32(in->context + 6, rekey);
    memcpy(in->context + 10, named->data, 16);
    in->context_len = 26;
  }
  return TRUE;
}

/* §5.3: the KDF's rekey value; only cluster mode rekeys (server mode's context has 0). */
static guint32 rekey_of(const tss_key *k, guint64 tsc) {
  if (k->mode != MODE_CLUSTER) return 0;
  return (guint32)(((tsc & COUNTER_MASK) & k->rekey_mask) >> k->rekey_shift);
}

/* ---------------------------------------------------------------- dissection */
static void add_generated(proto_item *it) {
  if (it) proto_item_set_generated(it);
}

/* What opening found: where the tag is and what was decrypted. */
typedef struct {
  gboolean has_tag;       /* the last 16 bytes are the tag (§5.1); not after a trim (§5.5) */
  const char *unverified; /* why the plaintext is not authenticated (UETREF_TSS_UNVERIFIED) */
  const char *error;      /* why nothing was decrypted (UETREF_TSS_FAILED) */
  guint8 *plain;
  gint plain_captured, plain_reported;
} opened;

/* Decrypts the `reported` sealed bytes at `off` (of which `captured` are in the capture) with
 * the packet key and IV. The tag is checked whenever the frame is whole: a frame with the
 * trimmed DSCP whose tag matches was not cut. Otherwise what there is is decrypted without
 * authentication: after a trim all of it is ciphertext; past a snapshot the tag is lost. */
static uetref_tss_result decrypt(tvbuff_t *tvb, packet_info *pinfo, const guint8 *key,
                                 const guint8 *iv, const frame_inputs *in, int off, gint reported,
                                 gint captured, opened *o) {
  gcry_error_t e = 0;
  o->plain = (guint8 *)wmem_alloc(pinfo->pool, (size_t)MAX(captured, 1));
  if (reported >= TAG_BYTES && captured == reported) {
    gboolean tag_ok = FALSE;
    o->plain_captured = o->plain_reported = reported - TAG_BYTES;
    tvb_memcpy(tvb, o->plain, off, (size_t)o->plain_captured);
    e = gcm_open(key, iv, in->aad, in->aad_len, o->plain, (size_t)o->plain_captured,
                 tvb_get_ptr(tvb, off + o->plain_captured, TAG_BYTES), &tag_ok);
    if (!e && tag_ok) {
      o->has_tag = TRUE;
      return UETREF_TSS_GOOD;
    }
    if (!e && o->has_tag) return UETREF_TSS_BAD_TAG;
  } else if (o->has_tag && reported < TAG_BYTES) {
    return UETREF_TSS_FAILED; /* too short: reported as such by the caller */
  }
  if (!e && o->has_tag) { /* the tag is past the snapshot */
    o->plain_reported = reported - TAG_BYTES;
    o->plain_captured = MIN(captured, o->plain_reported);
    o->unverified = "the tag was not captured";
  } else if (!e) {
    o->plain_reported = reported;
    o->plain_captured = captured;
    o->unverified = "trimmed";
  }
  if (!e) {
    tvb_memcpy(tvb, o->plain, off, (size_t)o->plain_captured);
    e = gcm_open(key, iv, NULL, 0, o->plain, (size_t)o->plain_captured, NULL, NULL);
  }
  if (e) {
    o->error = gcry_strerror(e);
    return UETREF_TSS_FAILED;
  }
  return UETREF_TSS_UNVERIFIED;
}

/* §5.2, §5.3: the packet key and IV of this frame under key file entry `k` (server mode: the
 * client's key, the client named by the source, or by_dst by the destination), then
 * decrypt(). */
static uetref_tss_result open_with_key(tvbuff_t *tvb, packet_info *pinfo,
                                       const uetref_hdr_vals *tss, const tss_key *k,
                                       gboolean ip_only, gboolean by_dst, int off, gint reported,
                                       gint captured, opened *o) {
  const guint64 tsc = uetref_get(tss, UETREF_N_tsc);
  frame_inputs in;
  if (!frame_crypto_inputs(tvb, pinfo, tss, ip_only, tsc, rekey_of(k, tsc), by_dst, &in)) {
    o->error = "no IPv4 or IPv6 addresses for the AAD";
    return UETREF_TSS_FAILED;
  }
  guint8 key[KEY_BYTES], mask[IV_BYTES], iv[IV_BYTES];
  gcry_error_t e = 0;
  if (k->mode == MODE_CLUSTER || k->mode == MODE_SERVER) {
    e = kdf(k->key, k->mode == MODE_SERVER ? UET_TSS_LABEL_SERVER : UET_TSS_LABEL_CLUSTER,
            in.context, in.context_len, key, mask);
  } else {
    memcpy(key, k->key, KEY_BYTES);
    if (k->mode == MODE_CLIENT)
      memcpy(mask, k->iv_mask, IV_BYTES);
    else
      memset(mask, 0, IV_BYTES);
  }
  /* §5.2: IV = source (4) || TSC (8), XOR the IV mask. */
  put_be32(iv, in.iv_source);
  put_be32(iv + 4, (guint32)(tsc >> 32));
  put_be32(iv + 8, (guint32)tsc);
  for (guint i = 0; i < IV_BYTES; i++) iv[i] ^= mask[i];
  uetref_tss_result r = UETREF_TSS_FAILED;
  if (e)
    o->error = gcry_strerror(e);
  else
    r = decrypt(tvb, pinfo, key, iv, &in, off, reported, captured, o);
  wipe(key, sizeof key);
  wipe(mask, sizeof mask);
  wipe(iv, sizeof iv);
  wipe(&in, sizeof in);
  return r;
}

/* Tries the (SDI, AN)'s key file entries, and in server mode the client as the source and
 * then as the destination, until a tag matches (§5.3). Without a match, what the first try
 * found stands (a trimmed frame, having no tag, is read with the first try's key). *used and
 * *by_dst say which try that was. */
static uetref_tss_result open_with_keys(tvbuff_t *tvb, packet_info *pinfo,
                                        const uetref_hdr_vals *tss, const GPtrArray *list,
                                        gboolean ip_only, int off, gint reported, gint captured,
                                        opened *o, const tss_key **used, gboolean *by_dst) {
  const gboolean sp = uetref_get(tss, UETREF_N_sp) != 0;
  const opened start = *o;
  uetref_tss_result kept = UETREF_TSS_FAILED;
  for (guint i = 0; i < list->len; i++) {
    const tss_key *k = (const tss_key *)g_ptr_array_index(list, i);
    /* With an SSI, the SSI names the client either way. */
    const guint tries = k->mode == MODE_SERVER && !sp ? 2 : 1;
    for (guint t = 0; t < tries; t++) {
      const gboolean first = i == 0 && t == 0;
      opened attempt = start;
      const uetref_tss_result r =
          open_with_key(tvb, pinfo, tss, k, ip_only, t == 1, off, reported, captured, &attempt);
      if (!first && r != UETREF_TSS_GOOD) {
        if (attempt.plain) wipe(attempt.plain, (size_t)MAX(captured, 1));
        continue;
      }
      if (!first && o->plain) wipe(o->plain, (size_t)MAX(captured, 1));
      *o = attempt;
      *used = k;
      *by_dst = t == 1;
      kept = r;
      if (r == UETREF_TSS_GOOD) return r;
    }
  }
  return kept;
}

/* With a key: which line of the key file opened the frame, its mode, the rekey value (cluster
 * mode) and the client (server mode, IPv4 without an SSI). */
static void add_key_fields(tvbuff_t *tvb, packet_info *pinfo, const uetref_hdr_vals *tss,
                           const tss_key *k, guint64 tsc, gboolean by_dst) {
  proto_tree *tt = tss->tree;
  add_generated(proto_tree_add_uint(tt, hf_key_line, tvb, tss->offset, 0, k->line));
  add_generated(proto_tree_add_uint(tt, hf_mode, tvb, tss->offset, 0, k->mode));
  if (k->mode == MODE_CLUSTER)
    add_generated(proto_tree_add_uint(tt, hf_rekey, tvb, tss->offset, 0, rekey_of(k, tsc)));
  const address *client = by_dst ? &pinfo->net_dst : &pinfo->net_src;
  if (k->mode == MODE_SERVER && uetref_get(tss, UETREF_N_sp) == 0 && client->type == AT_IPv4 &&
      client->len == 4) {
    ws_in4_addr a; /* network order, as the address holds it */
    memcpy(&a, client->data, 4);
    add_generated(proto_tree_add_ipv4(tt, hf_client, tvb, tss->offset, 0, a));
  }
}

/* The expert info on the tag status that says why a frame was not opened, or not verified. */
static void add_verdict_note(packet_info *pinfo, proto_item *status, uetref_tss_result r,
                             guint32 sdi, guint32 an, const tss_key *k, const opened *o,
                             gint reported) {
  switch (r) {
    case UETREF_TSS_NO_KEY:
      expert_add_info_format(pinfo, status, &ei_no_key,
                             "No key for SDI %u AN %u in the TSS key file (preference "
                             "uetref.tss_key_file): not decrypted (spec/uet.md §5)",
                             sdi, an);
      break;
    case UETREF_TSS_BAD_TAG:
      expert_add_info_format(pinfo, status, &ei_bad_tag,
                             "TSS tag does not match (SDI %u AN %u, key file line %u): the frame "
                             "was altered or sealed with another key (spec/uet.md §5.2)",
                             sdi, an, k ? k->line : 0);
      break;
    case UETREF_TSS_UNVERIFIED:
      expert_add_info_format(pinfo, status, &ei_unverified,
                             "Decrypted but unverified (%s): nothing of it is authenticated "
                             "(spec/uet.md §5.5)",
                             o->unverified);
      break;
    case UETREF_TSS_FAILED:
      if (o->error)
        expert_add_info_format(pinfo, status, &ei_crypto, "Not decrypted: %s", o->error);
      else
        expert_add_info_format(pinfo, status, &ei_short,
                               "Sealed part of %d bytes, shorter than the %d-byte tag "
                               "(spec/uet.md §5.1)",
                               reported, TAG_BYTES);
      break;
    case UETREF_TSS_GOOD:
      break;
  }
}

tvbuff_t *uetref_tss_open(tvbuff_t *tvb, packet_info *pinfo, const uetref_hdr_vals *tss,
                          gboolean ip_only, gboolean trimmed, uetref_tss_result *result) {
  proto_tree *tt = tss->tree;
  const int off = tss->offset + (int)uetref_headers[tss->hdr].size; /* the ciphertext */
  const guint64 tsc = uetref_get(tss, UETREF_N_tsc);
  const guint32 sdi = (guint32)uetref_get(tss, UETREF_N_sdi);
  const guint32 an = (guint32)uetref_get(tss, UETREF_N_an);
  gint reported = tvb_reported_length_remaining(tvb, off);
  gint captured = tvb_captured_length_remaining(tvb, off);
  if (reported < 0) reported = 0;
  if (captured < 0) captured = 0;

  /* §5.1: the TSC is the epoch (bits 63-48) and the sender's counter (bits 47-0). */
  add_generated(proto_tree_add_uint(tt, hf_epoch, tvb, tss->offset, 0,
                                    (guint32)(tsc >> UET_TSS_COUNTER_BITS)));
  add_generated(proto_tree_add_uint64(tt, hf_counter, tvb, tss->offset, 0, tsc & COUNTER_MASK));

  const GPtrArray *list = uetref_tss_find_keys(sdi, an);
  const char *first_problem = NULL;
  const guint problems = uetref_tss_key_problems(&first_problem);
  if (problems)
    expert_add_info_format(pinfo, tss->item, &ei_key_file,
                           "TSS key file %s: %u problem(s); first: %s", uetref_tss_key_file,
                           problems, first_problem);

  /* Without a key, a frame with the trimmed DSCP is taken as trimmed (§5.5): no tag. */
  opened o;
  memset(&o, 0, sizeof o);
  o.has_tag = !trimmed;
  uetref_tss_result r = UETREF_TSS_NO_KEY;
  const tss_key *k = NULL;
  gboolean by_dst = FALSE;
  if (list)
    r = open_with_keys(tvb, pinfo, tss, list, ip_only, off, reported, captured, &o, &k, &by_dst);
  else if (o.has_tag && reported < TAG_BYTES)
    r = UETREF_TSS_FAILED;
  if (k) add_key_fields(tvb, pinfo, tss, k, tsc, by_dst);

  /* The sealed bytes as they are on the wire. */
  const gint ct_len = o.has_tag ? MAX(reported - TAG_BYTES, 0) : reported;
  if (MIN(ct_len, captured) > 0)
    proto_tree_add_item(tt, hf_ciphertext, tvb, off, MIN(ct_len, captured), ENC_NA);
  int status_at = tss->offset;
  if (o.has_tag && reported >= TAG_BYTES && tvb_bytes_exist(tvb, off + ct_len, TAG_BYTES)) {
    proto_tree_add_item(tt, hf_tag, tvb, off + ct_len, TAG_BYTES, ENC_NA);
    status_at = off + ct_len;
  }
  const guint32 st = r == UETREF_TSS_GOOD      ? PROTO_CHECKSUM_E_GOOD
                     : r == UETREF_TSS_BAD_TAG ? PROTO_CHECKSUM_E_BAD
                     : !o.has_tag              ? PROTO_CHECKSUM_E_NOT_PRESENT
                                               : PROTO_CHECKSUM_E_UNVERIFIED;
  proto_item *status = proto_tree_add_uint(tt, hf_tag_status, tvb, status_at, 0, st);
  add_generated(status);

  add_verdict_note(pinfo, status, r, sdi, an, k, &o, reported);
  *result = r;
  if (r != UETREF_TSS_GOOD && r != UETREF_TSS_UNVERIFIED) {
    if (o.plain) wipe(o.plain, (size_t)MAX(captured, 1));
    return NULL;
  }
  tvbuff_t *ptvb = tvb_new_child_real_data(tvb, o.plain, (guint)o.plain_captured, o.plain_reported);
  add_new_data_source(pinfo, ptvb, "Decrypted TSS");
  return ptvb;
}

/* ------------------------------------------------------------- registration */
void uetref_tss_prefs_applied(void) { uetref_tss_free_keys(); }

void uetref_tss_register(int proto, module_t *prefs, expert_module_t *expert) {
  static hf_register_info hf[] = {
      {&hf_ciphertext,
       {"Ciphertext", "uetref.tss.ciphertext", FT_BYTES, BASE_NONE, NULL, 0,
        "The sealed PDS header, SES header and payload (spec/uet.md §5.1)", HFILL}},
      {&hf_tag,
       {"TSS tag", "uetref.tss.tag", FT_BYTES, BASE_NONE, NULL, 0,
        "AES-256-GCM authentication tag after the ciphertext (spec/uet.md §5.1, §5.2)", HFILL}},
      {&hf_tag_status,
       {"TSS tag status", "uetref.tss.tag_status", FT_UINT8, BASE_NONE, VALS(proto_checksum_vals),
        0,
        "Good: the tag matched; Bad: it did not; Unverified: no key or not captured; Not "
        "present: trimmed (spec/uet.md §5.5)",
        HFILL}},
      {&hf_epoch,
       {"Epoch", "uetref.tss.epoch", FT_UINT16, BASE_HEX, NULL, 0,
        "TSC bits 63-48 (spec/uet.md §5)", HFILL}},
      {&hf_counter,
       {"Counter", "uetref.tss.counter", FT_UINT64, BASE_DEC, NULL, 0,
        "TSC bits 47-0, the sender's frame counter under this key (spec/uet.md §5)", HFILL}},
      {&hf_rekey,
       {"Rekey value", "uetref.tss.rekey", FT_UINT32, BASE_HEX, NULL, 0,
        "(counter & rekey_mask) >> rekey_shift, in the KDF context (spec/uet.md §5.3)", HFILL}},
      {&hf_mode,
       {"Key mode", "uetref.tss.mode", FT_UINT8, BASE_DEC, VALS(mode_vals), 0,
        "How the key file's key for this SDI and AN keys the frame (spec/uet.md §5.3)", HFILL}},
      {&hf_key_line,
       {"Key file line", "uetref.tss.key_line", FT_UINT32, BASE_DEC, NULL, 0,
        "The line of the TSS key file whose key opened this frame", HFILL}},
      {&hf_client,
       {"Client", "uetref.tss.client", FT_IPv4, BASE_NONE, NULL, 0,
        "Server mode: the client whose derived key opened this frame, its source or its "
        "destination (spec/uet.md §5.3)",
        HFILL}},
  };
  static ei_register_info ei[] = {
      {&ei_bad_tag,
       {"uetref.expert.tss_bad_tag", PI_SECURITY, PI_ERROR,
        "TSS tag does not match: the plaintext is not shown (spec/uet.md §5.2)", EXPFILL}},
      {&ei_no_key,
       {"uetref.expert.tss_no_key", PI_SECURITY, PI_NOTE,
        "No key for this SDI and AN: the ciphertext is not decrypted (spec/uet.md §5)", EXPFILL}},
      {&ei_unverified,
       {"uetref.expert.tss_unverified", PI_SECURITY, PI_WARN,
        "Decrypted without authentication: unverified (trimmed) (spec/uet.md §5.5)", EXPFILL}},
      {&ei_short,
       {"uetref.expert.tss_short", PI_MALFORMED, PI_ERROR,
        "Sealed part shorter than the 16-byte tag (spec/uet.md §5.1)", EXPFILL}},
      {&ei_key_file,
       {"uetref.expert.tss_key_file", PI_UNDECODED, PI_WARN,
        "The TSS key file has lines that do not parse; they were skipped", EXPFILL}},
      {&ei_crypto,
       {"uetref.expert.tss_crypto", PI_UNDECODED, PI_WARN, "Sealed frame not decrypted", EXPFILL}},
  };
  proto_register_field_array(proto, hf, array_length(hf));
  expert_register_field_array(expert, ei, array_length(ei));
  register_shutdown_routine(uetref_tss_free_keys); /* wipes the keys at exit */
  prefs_register_filename_preference(
      prefs, "tss_key_file", "TSS key file",
      "Keys to open sealed frames (spec/uet.md §5), one a line: sdi=<N> an=<0|1> "
      "mode=<cluster|direct|server|client> key=<64 hex digits> [iv_mask=<24 hex digits>, "
      "client only] [rekey_mask=<N>] [rekey_shift=<N>] [job=<N>] [epoch=<N>]; # starts a comment "
      "(dissector/README.md)",
      &uetref_tss_key_file, FALSE);
}
