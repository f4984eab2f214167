/* dissector/plugin.c: the symbols Wireshark looks for in a plugin.
 *
 * Wireshark 4.0 (Debian 12) loads a plugin through four exported symbols: plugin_version,
 * plugin_want_major, plugin_want_minor and plugin_register. Later releases add
 * plugin_describe() (WS_PLUGIN_DESC_DISSECTOR) and then replace all of them with
 * WIRESHARK_PLUGIN_REGISTER_EPAN; the #ifdefs pick whichever the headers provide.
 */
#define WS_BUILD_DLL
#include <epan/packet.h>
#include <epan/proto.h>
#include <epan/tap.h>
#include <wireshark.h>
#if defined(__has_include)
#if __has_include(<wsutil/plugins.h>) /* not installed with 4.0's headers */
#include <wsutil/plugins.h>
#endif
#endif

#include "uetref.h"

#ifndef UETREF_PLUGIN_VERSION
#define UETREF_PLUGIN_VERSION "0.1.0"
#endif

#ifdef WIRESHARK_PLUGIN_REGISTER /* the newer single-symbol API */
static void plugin_register(void)
#else
WS_DLL_PUBLIC_DEF const gchar plugin_version[] = UETREF_PLUGIN_VERSION;
WS_DLL_PUBLIC_DEF const int plugin_want_major = WIRESHARK_VERSION_MAJOR;
WS_DLL_PUBLIC_DEF const int plugin_want_minor = WIRESHARK_VERSION_MINOR;
WS_DLL_PUBLIC void plugin_register(void);
void plugin_register(void)
#endif
{
  static proto_plugin plugin;
  plugin.register_protoinfo = proto_register_uetref;
  plugin.register_handoff = proto_reg_handoff_uetref;
  proto_register_plugin(&plugin);
  static tap_plugin stats; /* the statistics tree of stats.c */
  stats.register_tap_listener = uetref_register_stats;
  tap_register_plugin(&stats);
}

#ifdef WIRESHARK_PLUGIN_REGISTER
static struct ws_module module = {
    .flags = WS_PLUGIN_DESC_DISSECTOR | WS_PLUGIN_DESC_TAP_LISTENER,
    .version = UETREF_PLUGIN_VERSION,
    .spdx_id = "GPL-2.0-or-later", /* it links libwireshark */
    .home_url = "",
    .blurb = "UET (uet-ref) and RoCEv2 ICRC/CNP dissector",
    .register_cb = &plugin_register,
};
WIRESHARK_PLUGIN_REGISTER_EPAN(&module, 0)
#elif defined(WS_PLUGIN_DESC_DISSECTOR)
WS_DLL_PUBLIC uint32_t plugin_describe(void);
uint32_t plugin_describe(void) { return WS_PLUGIN_DESC_DISSECTOR | WS_PLUGIN_DESC_TAP_LISTENER; }
#endif
