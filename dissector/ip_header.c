/* dissector/ip_header.c: the IP header in front of a UET or RoCEv2 packet.
 *
 * Two things need bytes of the IP header that the UDP and IP dissectors do not hand on: the
 * trimmed DSCP (spec/uet.md §3.14) and the RoCEv2 ICRC, which covers the IP header
 * (spec/rocev2.md §6). The header sits right before our tvb in the frame's top-level tvb; we
 * look for it there and check it against the addresses the IP dissector recorded, so a
 * reassembled or tunnelled payload that does not line up is reported as "not found".
 */
#include <string.h>

#include "uetref.h"

gboolean uetref_find_ip_header(tvbuff_t *tvb, packet_info *pinfo, int gap, int proto,
                               uetref_ip_header *out) {
  tvbuff_t *ds = tvb_get_ds_tvb(tvb);
  const address *src = &pinfo->net_src;
  if (!ds) return FALSE;
  const int end = tvb_raw_offset(tvb) - gap; /* where the IP header ends in ds */
  if (end <= 0) return FALSE;

  if (src->type == AT_IPv4 && src->len == 4) {
    for (int ihl = 5; ihl <= 15; ihl++) {
      const int off = end - 4 * ihl;
      if (off < 0) break;
      if (!tvb_bytes_exist(ds, off, 4 * ihl)) continue;
      if (tvb_get_guint8(ds, off) != (0x40 | ihl)) continue;
      if (proto >= 0 && tvb_get_guint8(ds, off + 9) != proto) continue;
      if (tvb_memeql(ds, off + 12, (const guint8 *)src->data, 4) != 0) continue;
      out->ds = ds;
      out->offset = off;
      out->length = 4 * ihl;
      out->version = 4;
      out->dscp = (guint8)(tvb_get_guint8(ds, off + 1) >> 2);
      return TRUE;
    }
  } else if (src->type == AT_IPv6 && src->len == 16) {
    const int off = end - 40; /* spec/uet.md §2.3: no extension headers */
    if (off < 0 || !tvb_bytes_exist(ds, off, 40)) return FALSE;
    if ((tvb_get_guint8(ds, off) >> 4) != 6) return FALSE;
    if (proto >= 0 && tvb_get_guint8(ds, off + 6) != proto) return FALSE;
    if (tvb_memeql(ds, off + 8, (const guint8 *)src->data, 16) != 0) return FALSE;
    out->ds = ds;
    out->offset = off;
    out->length = 40;
    out->version = 6;
    const guint8 tc =
        (guint8)(((tvb_get_guint8(ds, off) & 0x0F) << 4) | (tvb_get_guint8(ds, off + 1) >> 4));
    out->dscp = (guint8)(tc >> 2);
    return TRUE;
  }
  return FALSE;
}
