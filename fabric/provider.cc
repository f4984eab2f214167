// The provider's entry (fi_prov_ini), its variables, fi_getinfo and the fabric object.
#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstdlib>
#include <cstring>

#include <rdma/fi_eq.h>

#include "fabric/uetref.h"

namespace uet::fabric {

namespace {

void cleanup() {}

// ---------------------------------------------------------------------------------------------
// Variables.

// The variables, in the order `fi_info -e` lists them.
struct ParamDef {
  const char* name;
  fi_param_type type;
  const char* help;
};
constexpr ParamDef kParamDefs[] = {
    {"transport", FI_PARAM_STRING,
     "Engine under the provider: uet (UET RUD/ROD, the default) or rocev2 (RC "
     "queue pairs, one per peer; tag matching and rendezvous in the provider)"},
    {"addr", FI_PARAM_STRING,
     "IPv4 address the endpoint binds (UDP port 4793); default: the node given "
     "with FI_SOURCE, else a free address in 127.128.0.0/9"},
    {"payload_bytes", FI_PARAM_SIZE_T, "Payload bytes per packet, 256..8192 (default 4096)"},
    {"window_bytes", FI_PARAM_SIZE_T, "Bytes in flight per peer at most (default 262144)"},
    {"base_rtt_us", FI_PARAM_SIZE_T,
     "The unloaded round trip NSCC measures queueing against, in microseconds, "
     "1..100000 (default 50: loopback through the kernel)"},
    {"stats", FI_PARAM_BOOL,
     "Print the engine's counters (retransmissions, rendezvous, deferrals, kernel "
     "drops) to stderr when a domain closes (default no)"},
    {"udp_offload", FI_PARAM_BOOL,
     "UDP segmentation offload (GSO) on send, coalesced receive (GRO) and payloads "
     "the kernel gathers from registered memory, where the kernel offers them "
     "(default yes)"},
    {"ev_sockets", FI_PARAM_SIZE_T,
     "Source ports (sockets) the entropy values map onto, 1..1024 (default 4); "
     "fewer make longer GSO sends, more spread a fabric's ECMP wider"},
    {"tss_key_file", FI_PARAM_STRING,
     "TSS key file (the format the Wireshark plugin reads, dissector/README.md): "
     "every frame is sealed in its first domain (AES-256-GCM, spec/uet.md §5) and "
     "only sealed frames are taken; the same file on every rank (default: none, "
     "frames in the clear)"},
    {"host", FI_PARAM_STRING,
     "Packet host: uring (kernel UDP sockets through io_uring, any user; the "
     "default) or dpdk (an ethdev port of DPDK: FI_UETREF_EAL, FI_UETREF_DPDK_PORT, "
     "FI_UETREF_ADDR)"},
    {"eal", FI_PARAM_STRING,
     "FI_UETREF_HOST=dpdk: the EAL's arguments, separated by spaces, e.g. \"-l 0 "
     "--no-huge -m 512 --vdev=net_memif0,role=server,socket=/tmp/m.sock\" (read "
     "once per process)"},
    {"dpdk_port", FI_PARAM_SIZE_T,
     "FI_UETREF_HOST=dpdk: the ethdev port the domain owns (default 0)"},
    {"rendezvous_bytes", FI_PARAM_SIZE_T,
     "Messages longer than this go by rendezvous, 0: never (default 65536)"},
    {"rendezvous", FI_PARAM_STRING,
     "UET rendezvous, the receiver's choice once it has matched the request: write "
     "(it answers with a CTS naming the receive and the sender WRITEs the rest into "
     "it; the default) or read (it READs the rest from the sender, UET 1.0's way)"},
    {"timeout_ms", FI_PARAM_SIZE_T,
     "The longest wait for an answer before a packet goes again, 50..60000 ms, which "
     "sets the retry budget: UET's RTO ceiling (the RTO starts at 50 ms and doubles up "
     "to it; 9 timeouts of a packet with the peer silent fail its operations; default "
     "200), RoCEv2's ACK timeout (rounded up to 4.096 us x 2^n; 7 without progress fail "
     "the QP; default 67). Raise it where processes are descheduled for seconds"},
    {"linger_ms", FI_PARAM_SIZE_T,
     "How long a closing domain answers its peers at most, 0..60000 ms (default 300; 0: "
     "not at all): it runs on until none of its operations waits on a peer and no frame "
     "has come for as long as a peer waits before it resends (UET: the RTO's ceiling; "
     "RoCEv2: twice the ACK timeout), so that a peer that lost our last ACK has it again "
     "when it retransmits"},
};

void define_params() {
  for (const ParamDef& d : kParamDefs) fi_param_define(&kProvider, d.name, d.type, "%s", d.help);
}

// ---------------------------------------------------------------------------------------------
// fi_getinfo.

bool subset(uint64_t want, uint64_t have) { return (want & ~have) == 0; }

// What an fi_info offers: the provider's defaults, narrowed by the hints.
struct Offer {
  uint64_t caps = kCaps;
  uint64_t mr_mode = FI_MR_PROV_KEY;
  fi_threading threading = FI_THREAD_SAFE;
  fi_av_type av_type = FI_AV_TABLE;
  fi_progress control_progress = FI_PROGRESS_MANUAL, data_progress = FI_PROGRESS_MANUAL;
  uint64_t msg_order = 0;
};

// Narrows `o` to what `hints` ask; false when a hint asks for something the provider does not
// offer.
bool narrow(const fi_info* hints, Offer& o) {
  if (hints == nullptr) return true;
  if (hints->ep_attr != nullptr && hints->ep_attr->type != FI_EP_UNSPEC &&
      hints->ep_attr->type != FI_EP_RDM) {
    return false;
  }
  if (hints->caps != 0) {
    if (!subset(hints->caps & ~(FI_SOURCE_ERR | FI_LOCAL_COMM | FI_REMOTE_COMM), kCaps))
      return false;
    // Secondary capabilities are offered whether asked or not; primary ones as asked.
    o.caps = hints->caps | (kCaps & (FI_SOURCE | FI_DIRECTED_RECV | FI_LOCAL_COMM |
                                     FI_REMOTE_COMM));
    if (o.caps & (FI_MSG | FI_TAGGED)) o.caps |= FI_SEND | FI_RECV;
    if (o.caps & (FI_RMA | FI_ATOMIC))
      o.caps |= FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
    o.caps &= kCaps;
  }
  if (hints->addr_format != FI_FORMAT_UNSPEC && hints->addr_format != FI_SOCKADDR_IN)
    return false;
  if (const fi_domain_attr* d = hints->domain_attr; d != nullptr) {
    if (d->name != nullptr && std::strcmp(d->name, "uet") != 0) return false;
    // The engine chooses the keys (its region table) and offsets are relative to a region.
    const bool prov_key = d->mr_mode == FI_MR_UNSPEC || d->mr_mode == FI_MR_BASIC ||
                          (d->mr_mode & FI_MR_PROV_KEY) != 0;
    if (!prov_key) {
      if (hints->caps & (FI_RMA | FI_ATOMIC)) return false;
      o.caps &= ~(FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE);
      o.mr_mode = 0;
    }
    if (d->threading != FI_THREAD_UNSPEC) o.threading = d->threading;
    if (d->av_type != FI_AV_UNSPEC) o.av_type = d->av_type;
    if (d->control_progress == FI_PROGRESS_AUTO || d->data_progress == FI_PROGRESS_AUTO) {
      if (read_params().host == "dpdk") return false;  // domain.cc: no thread to spin
      if (d->control_progress != FI_PROGRESS_UNSPEC) o.control_progress = d->control_progress;
      if (d->data_progress != FI_PROGRESS_UNSPEC) o.data_progress = d->data_progress;
    }
  }
  if (hints->fabric_attr != nullptr && hints->fabric_attr->name != nullptr &&
      std::strcmp(hints->fabric_attr->name, kProviderName) != 0) {
    return false;
  }
  // FI_ORDER_SAS (sends processed in order) is UET's ROD (spec/uet.md §3.3).
  const uint64_t kOrders = FI_ORDER_SAS | FI_ORDER_RAR | FI_ORDER_RAW | FI_ORDER_WAR |
                           FI_ORDER_WAW | FI_ORDER_SAR | FI_ORDER_SAW | FI_ORDER_RAS |
                           FI_ORDER_WAS;
  if (hints->tx_attr != nullptr) o.msg_order |= hints->tx_attr->msg_order;
  if (hints->rx_attr != nullptr) o.msg_order |= hints->rx_attr->msg_order;
  if (!subset(o.msg_order, kOrders)) return false;
  if (hints->tx_attr != nullptr && hints->tx_attr->inject_size > kInjectSize) return false;
  return true;
}

// Fills `info` with what the provider offers, narrowed to `hints`; false when a hint asks for
// something it does not offer.
bool fill(fi_info* info, const fi_info* hints) {
  Offer o;
  if (!narrow(hints, o)) return false;
  info->caps = o.caps;
  info->mode = 0;
  info->addr_format = FI_SOCKADDR_IN;
  info->ep_attr->type = FI_EP_RDM;
  info->ep_attr->protocol = FI_PROTO_UNSPEC;
  info->ep_attr->max_msg_size = kMaxMsgSize;
  info->ep_attr->msg_prefix_size = 0;
  info->ep_attr->mem_tag_format = 0xaaaaaaaaaaaaaaaa;  // fi_endpoint(3): 64 tag bits in one field
  info->ep_attr->tx_ctx_cnt = 1;
  info->ep_attr->rx_ctx_cnt = 1;

  info->tx_attr->caps =
      o.caps & (FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_SEND | FI_READ | FI_WRITE);
  info->tx_attr->msg_order = o.msg_order;
  info->tx_attr->comp_order = FI_ORDER_NONE;
  info->tx_attr->inject_size = kInjectSize;
  info->tx_attr->size = kTxSize;
  info->tx_attr->iov_limit = 1;
  info->tx_attr->rma_iov_limit = 1;
  info->rx_attr->caps = o.caps & (FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_RECV |
                                  FI_REMOTE_READ | FI_REMOTE_WRITE | FI_DIRECTED_RECV | FI_SOURCE);
  info->rx_attr->msg_order = o.msg_order;
  // The default flags of the data calls (FI_COMPLETION under FI_SELECTIVE_COMPLETION) are the
  // application's to choose.
  if (hints != nullptr && hints->tx_attr != nullptr) info->tx_attr->op_flags = hints->tx_attr->op_flags;
  if (hints != nullptr && hints->rx_attr != nullptr) info->rx_attr->op_flags = hints->rx_attr->op_flags;
  info->rx_attr->comp_order = FI_ORDER_NONE;
  info->rx_attr->size = kRxSize;
  info->rx_attr->iov_limit = 1;

  fi_domain_attr* d = info->domain_attr;
  d->name = strdup("uet");
  d->threading = o.threading;
  d->control_progress = o.control_progress;
  d->data_progress = o.data_progress;
  d->resource_mgmt = FI_RM_ENABLED;
  d->av_type = o.av_type;
  d->mr_mode = static_cast<int>(o.mr_mode);
  d->mr_key_size = 4;
  d->cq_data_size = 4;  // a SEND's immediate: 32 bits (tagged sends carry 64)
  d->cq_cnt = 64;
  // UET: an endpoint per PIDonFEP behind the domain's address (engine_mux.h); RoCEv2: one.
  d->ep_cnt = read_params().transport == "rocev2" ? 1 : EngineMux::kMaxEngines;
  d->tx_ctx_cnt = 1;
  d->rx_ctx_cnt = 1;
  d->max_ep_tx_ctx = 1;
  d->max_ep_rx_ctx = 1;
  d->mr_cnt = 65535;
  d->mr_iov_limit = 1;
  d->caps = FI_LOCAL_COMM | FI_REMOTE_COMM;

  info->fabric_attr->name = strdup(kProviderName);
  info->fabric_attr->prov_version = kProviderVersion;
  info->fabric_attr->api_version = kApiVersion;
  return true;
}

// A dotted IPv4 node name, host order; 0 if `node` is not one.
uint32_t parse_ip4(const char* node) {
  in_addr a{};
  if (node == nullptr || inet_pton(AF_INET, node, &a) != 1) return 0;
  return ntohl(a.s_addr);
}

void* sockaddr_of(uint32_t ip4, size_t* len) {
  auto* sin = static_cast<sockaddr_in*>(calloc(1, sizeof(sockaddr_in)));
  sin->sin_family = AF_INET;
  sin->sin_port = htons(port_of(read_params()));
  sin->sin_addr.s_addr = htonl(ip4);
  *len = sizeof(sockaddr_in);
  return sin;
}

}  // namespace

int getinfo(uint32_t version, const char* node, const char* service, uint64_t flags,
            const fi_info* hints, fi_info** info) {
  (void)version;
  (void)service;  // every endpoint listens on UDP 4793 (spec/uet.md §2.1)
  fi_info* out = fi_allocinfo();
  if (out == nullptr) return -FI_ENOMEM;
  if (!fill(out, hints)) {
    fi_freeinfo(out);
    return -FI_ENODATA;
  }
  if (node != nullptr) {
    const uint32_t ip = parse_ip4(node);
    if (ip == 0) {
      FI_INFO(&kProvider, FI_LOG_CORE, "node %s is not a dotted IPv4 address\n", node);
      fi_freeinfo(out);
      return -FI_ENODATA;
    }
    if (flags & FI_SOURCE) {
      out->src_addr = sockaddr_of(ip, &out->src_addrlen);
    } else {
      out->dest_addr = sockaddr_of(ip, &out->dest_addrlen);
    }
  } else if (hints != nullptr && hints->src_addr != nullptr &&
             hints->src_addrlen == sizeof(sockaddr_in)) {
    out->src_addr = malloc(sizeof(sockaddr_in));
    std::memcpy(out->src_addr, hints->src_addr, sizeof(sockaddr_in));
    out->src_addrlen = sizeof(sockaddr_in);
  }
  // auth_key is the UET JobID (§4.1): kept for fi_domain, which checks it.
  if (hints != nullptr && hints->domain_attr != nullptr && hints->domain_attr->auth_key_size > 0) {
    const size_t n = hints->domain_attr->auth_key_size;
    out->domain_attr->auth_key = static_cast<uint8_t*>(malloc(n));
    std::memcpy(out->domain_attr->auth_key, hints->domain_attr->auth_key, n);
    out->domain_attr->auth_key_size = n;
  }
  *info = out;
  return 0;
}

// ---------------------------------------------------------------------------------------------
// The fabric.

namespace {

// fi_close of the fabric or an event queue: libfabric's own struct, nothing held beside it.
template <typename T>
int delete_fid(fid* f) {
  delete reinterpret_cast<T*>(f);
  return 0;
}

fi_ops kFabricFiOps = fid_ops(delete_fid<fid_fabric>);

int no_pep(fid_fabric*, fi_info*, fid_pep**, void*) { return -FI_ENOSYS; }

// The event queue: RDM endpoints raise no events, but applications open one regardless.
ssize_t eq_read(fid_eq*, uint32_t*, void*, size_t, uint64_t) { return -FI_EAGAIN; }
ssize_t eq_readerr(fid_eq*, fi_eq_err_entry*, uint64_t) { return -FI_EAGAIN; }
ssize_t eq_write(fid_eq*, uint32_t, const void*, size_t, uint64_t) { return -FI_ENOSYS; }
ssize_t eq_sread(fid_eq*, uint32_t*, void*, size_t, int, uint64_t) { return -FI_EAGAIN; }
const char* eq_strerror(fid_eq*, int, const void*, char* buf, size_t len) {
  if (buf != nullptr && len > 0) buf[0] = '\0';
  return buf;
}

fi_ops_eq kEqOps = {
    .size = sizeof(fi_ops_eq),
    .read = eq_read,
    .readerr = eq_readerr,
    .write = eq_write,
    .sread = eq_sread,
    .strerror = eq_strerror,
};

fi_ops kEqFiOps = fid_ops(delete_fid<fid_eq>);

int eq_open(fid_fabric*, fi_eq_attr* attr, fid_eq** eq, void* context) {
  if (attr != nullptr && !no_wait_object(attr->wait_obj)) return -FI_ENOSYS;
  auto* q = new fid_eq{};
  q->fid.fclass = FI_CLASS_EQ;
  q->fid.context = context;
  q->fid.ops = &kEqFiOps;
  q->ops = &kEqOps;
  *eq = q;
  return 0;
}

int no_wait(fid_fabric*, fi_wait_attr*, fid_wait**) { return -FI_ENOSYS; }
int trywait(fid_fabric*, fid**, int) { return 0; }  // nothing to wait on: never blocks
int domain2(fid_fabric* f, fi_info* info, fid_domain** dom, uint64_t flags, void* ctx) {
  return flags == 0 ? domain_open(f, info, dom, ctx) : -FI_EINVAL;
}

fi_ops_fabric kFabricOps = {
    .size = sizeof(fi_ops_fabric),
    .domain = domain_open,
    .passive_ep = no_pep,
    .eq_open = eq_open,
    .wait_open = no_wait,
    .trywait = trywait,
    .domain2 = domain2,
};

}  // namespace

int fabric_open(fi_fabric_attr* attr, fid_fabric** fabric, void* context) {
  if (attr != nullptr && attr->name != nullptr && std::strcmp(attr->name, kProviderName) != 0)
    return -FI_ENODATA;
  auto* f = new fid_fabric{};
  f->fid.fclass = FI_CLASS_FABRIC;
  f->fid.context = context;
  f->fid.ops = &kFabricFiOps;
  f->ops = &kFabricOps;
  f->api_version = kApiVersion;
  *fabric = f;
  return 0;
}

int no_bind(fid*, fid*, uint64_t) { return -FI_ENOSYS; }
int no_control(fid*, int, void*) { return -FI_ENOSYS; }
int no_ops_open(fid*, const char*, uint64_t, void**, void*) { return -FI_ENOSYS; }

Params read_params() {
  Params p;
  for (auto [name, field] :
       {std::pair{"transport", &Params::transport}, std::pair{"addr", &Params::addr},
        std::pair{"tss_key_file", &Params::tss_key_file}, std::pair{"host", &Params::host},
        std::pair{"eal", &Params::eal}, std::pair{"rendezvous", &Params::rendezvous}}) {
    char* s = nullptr;
    if (fi_param_get_str(&kProvider, name, &s) == 0 && s != nullptr) p.*field = s;
  }
  size_t v = 0;
  if (fi_param_get_size_t(&kProvider, "payload_bytes", &v) == 0) p.payload_bytes = static_cast<uint32_t>(v);
  if (fi_param_get_size_t(&kProvider, "window_bytes", &v) == 0) p.window_bytes = v;
  if (fi_param_get_size_t(&kProvider, "rendezvous_bytes", &v) == 0) p.rendezvous_bytes = v;
  int b = 0;
  if (fi_param_get_bool(&kProvider, "stats", &b) == 0) p.stats = b != 0;
  if (fi_param_get_bool(&kProvider, "udp_offload", &b) == 0) p.udp_offload = b != 0;
  if (fi_param_get_size_t(&kProvider, "ev_sockets", &v) == 0) p.ev_sockets = static_cast<uint32_t>(std::min<size_t>(v, UINT32_MAX));
  if (fi_param_get_size_t(&kProvider, "base_rtt_us", &v) == 0) p.base_rtt_us = static_cast<uint32_t>(v);
  if (fi_param_get_size_t(&kProvider, "timeout_ms", &v) == 0)
    p.timeout_ms = static_cast<uint32_t>(std::min<size_t>(v, UINT32_MAX));
  if (fi_param_get_size_t(&kProvider, "linger_ms", &v) == 0)
    p.linger_ms = static_cast<uint32_t>(std::min<size_t>(v, UINT32_MAX));
  if (fi_param_get_size_t(&kProvider, "dpdk_port", &v) == 0)
    p.dpdk_port = static_cast<uint32_t>(std::min<size_t>(v, UINT32_MAX));
  return p;
}

int to_fi_errno(const absl::Status& s) noexcept {
  switch (s.code()) {
    case absl::StatusCode::kOk: return 0;
    case absl::StatusCode::kResourceExhausted: return -FI_EAGAIN;
    case absl::StatusCode::kUnimplemented: return -FI_EOPNOTSUPP;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange: return -FI_EINVAL;
    case absl::StatusCode::kFailedPrecondition: return -FI_EOPBADSTATE;
    case absl::StatusCode::kNotFound: return -FI_ENOENT;  // e.g. an FI_CLAIM of nothing claimed
    default: return -FI_EOTHER;
  }
}

fi_provider kProvider = {
    .version = kProviderVersion,
    .fi_version = kApiVersion,
    .context = {},
    .name = kProviderName,
    .getinfo = getinfo,
    .fabric = fabric_open,
    .cleanup = cleanup,
};

}  // namespace uet::fabric

extern "C" FI_EXT_INI {
  uet::fabric::define_params();
  return &uet::fabric::kProvider;
}
