/* dissector/stats.c: the per-PDC entropy (path) statistics of a capture (spec/uet.md §2.4).
 *
 * A statistics tree fed by the "uetref" tap: packets by PDS type, and for each direction of
 * each PDC the packets sent with each EV. It shows at a glance whether a PDC sprayed its packets
 * over many paths or kept one (ROD does, §2.4).
 *   tshark -q -z uetref_ev,tree -r capture.pcap
 *   Wireshark: Statistics > UET (uet-ref) > PDCs and EVs
 */
#include <epan/stats_tree.h>
#include <epan/tap.h>

#include "uetref.h"

int uetref_tap = -1;

static int st_types = -1;
static int st_pdcs = -1;

static const char *const dir_names[2] = {"initiator to target", "target to initiator"};

static void stats_init(stats_tree *st) {
  st_types = stats_tree_create_pivot(st, "Packets by PDS type", 0);
  st_pdcs = stats_tree_create_node(st, "PDC directions by EV", 0, STAT_DT_INT, TRUE);
}

static tap_packet_status stats_packet(stats_tree *st, packet_info *pinfo _U_,
                                      epan_dissect_t *edt _U_, const void *data,
                                      tap_flags_t flags _U_) {
  const uetref_tap_info *t = (const uetref_tap_info *)data;
  char name[96];
  stats_tree_tick_pivot(st, st_types,
                        val_to_str_const((guint32)t->pds_type, uetref_vs_pds_type, "unknown"));
  if (t->pdc.number) {
    tick_stat_node(st, "PDC directions by EV", 0, TRUE);
    snprintf(name, sizeof name, "PDC %u %s (initiator's PDC ID %u)", t->pdc.number,
             dir_names[t->pdc.dir & 1], t->pdc.init_pdcid);
    const int node = tick_stat_node(st, name, st_pdcs, TRUE);
    snprintf(name, sizeof name, "EV 0x%04x", t->ev);
    tick_stat_node(st, name, node, FALSE);
  }
  return TAP_PACKET_REDRAW;
}

void uetref_register_stats(void) {
  stats_tree_register_plugin("uetref", "uetref_ev", UETREF_PROTO_NAME "/PDCs and EVs", 0,
                             stats_packet, stats_init, NULL);
}
