// The uetref libfabric provider (libuetref-fi.so): the objects behind libfabric's fids, shared
// by the files of this folder. An application opens them through libfabric's public API; each
// object is a C struct libfabric knows (fid_domain, fid_ep, ...) as its first member, so a fid
// pointer and the object pointer are one (the cast in `of`).
//
// One domain is one address: one packet host (dpdk-io/: io_uring UDP) driven by one HostLoop,
// and engines (UET or RoCEv2 Endpoints of transport/) behind it, one per libfabric endpoint
// (each a PIDonFEP, spec/uet.md §4.1), joined by an EngineMux (engine_mux.h). Engine 0, PID 0,
// is the domain's own: it holds the MRs (RMA and atomics of every endpoint address PID 0) and
// serves the first endpoint; every further endpoint gets an engine and a PID of its own.
// Everything the application calls runs under the domain's lock (FI_THREAD_SAFE). Under
// FI_PROGRESS_MANUAL the engine only moves when the application calls in (reading a CQ or a
// counter, or posting); under FI_PROGRESS_AUTO a thread of the domain's own runs the host.
#pragma once

#include <netinet/in.h>
#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

#include <cstddef>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "dpdk-io/host_loop.h"
#include "dpdk-io/uring_io.h"
#include "fabric/engine_mux.h"
#include "transport/api.h"

namespace uet::io {
class DpdkIo;
}

namespace uet::fabric {

extern fi_provider kProvider;

inline constexpr const char* kProviderName = "uetref";
inline constexpr uint32_t kProviderVersion = FI_VERSION(0, 1);
inline constexpr uint32_t kApiVersion = FI_VERSION(1, 17);
inline constexpr uint16_t kUetPort = 4793;    // spec/uet.md §2.1
inline constexpr uint16_t kRocePort = 4791;   // spec/rocev2.md §1

// What the provider offers (fi_getinfo narrows it to the hints).
inline constexpr uint64_t kCaps = FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_SEND | FI_RECV |
                                  FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE |
                                  FI_DIRECTED_RECV | FI_SOURCE | FI_LOCAL_COMM | FI_REMOTE_COMM;
inline constexpr size_t kInjectSize = 256;   // bytes fi_inject copies
inline constexpr size_t kTxSize = 1024;      // operations in flight per endpoint, each way
inline constexpr size_t kRxSize = 1024;
inline constexpr size_t kCqSize = 4096;      // default entries of a CQ
inline constexpr uint64_t kMaxMsgSize = uint64_t{1} << 30;

// Provider variables (FI_UETREF_*; `fi_info -e` lists them), read once per domain.
struct Params {
  std::string transport = "uet";  // uet | rocev2
  std::string addr;               // IPv4 to bind; empty: the hint's, else a free 127/8 address
  uint32_t payload_bytes = 4096;
  uint64_t window_bytes = 256 * 1024;
  uint64_t rendezvous_bytes = 64 * 1024;
  std::string rendezvous = "write";  // UET: write (the sender pushes on the CTS) | read
  uint32_t base_rtt_us = 50;  // NSCC's unloaded round trip: loopback through the kernel
  bool stats = false;         // print the engine's counters when the domain closes
  bool udp_offload = true;    // GSO, GRO, payloads gathered from registered memory
  uint32_t ev_sockets = 4;    // wire source ports the EVs map onto
  std::string tss_key_file;   // TSS keys (transport/tss/key_file.h): every frame sealed
  std::string host = "uring";  // uring | dpdk
  std::string eal;             // dpdk: the EAL's arguments, separated by spaces
  uint32_t dpdk_port = 0;      // dpdk: the ethdev port
  // The longest wait for an answer before a packet goes again (UET: the RTO's ceiling;
  // RoCEv2: the ACK timeout); 0: the transport's own (uet_max_rto, rocev2_ack_timeout_exp).
  uint32_t timeout_ms = 0;
  // The longest a closing domain keeps answering its peers (Domain::linger); 0: not at all.
  uint32_t linger_ms = 300;
};
Params read_params();

struct Domain;
struct Cq;
struct Cntr;
struct Av;
struct Ep;

template <typename T>
T* of(void* fid) noexcept {
  return static_cast<T*>(fid);
}

// Maps an engine's refusal to libfabric's error numbers (negative, as the calls return them).
int to_fi_errno(const absl::Status& s) noexcept;

// One posted operation, from post to completion: wr_id is its index.
struct OpCtx {
  void* context = nullptr;  // the application's
  uint64_t flags = 0;       // FI_SEND | FI_MSG, ... as the completion reports it
  void* buf = nullptr;
  Cq* cq = nullptr;         // nullptr: completes silently (inject, selective completion)
  Cntr* cntr = nullptr;
  Ep* ep = nullptr;         // the endpoint that posted it; nullptr once it closed
  bool in_use = false;
  bool inject = false;      // fi_inject*: no completion, not even an error one (no context)
  bool discard = false;     // FI_DISCARD: a message received into nothing, truncation expected
};

struct CqEntry {
  fi_cq_tagged_entry e;  // the other formats are prefixes of it
  fi_addr_t src;
};

struct Cq {
  fid_cq fid;
  Domain* domain = nullptr;
  fi_cq_format format = FI_CQ_FORMAT_CONTEXT;
  size_t entry_size = 0;
  std::vector<CqEntry> ring;  // capacity = the CQ's size; posting reserves a place first
  size_t head = 0, count = 0, reserved = 0;
  std::vector<fi_cq_err_entry> errs;  // bounded by the operations that can fail
  size_t err_head = 0, err_count = 0;
  int bound = 0;  // endpoints bound to it

  bool reserve() noexcept;
  void unreserve() noexcept { --reserved; }
  void push(const CqEntry& e) noexcept;
  void push_error(const fi_cq_err_entry& e);
};

struct Cntr {
  fid_cntr fid;
  Domain* domain = nullptr;
  uint64_t value = 0, errors = 0;
  int bound = 0;
};

struct Mr {
  fid_mr fid;
  Domain* domain = nullptr;
};

struct Av {
  fid_av fid;
  Domain* domain = nullptr;
  fi_av_type type = FI_AV_TABLE;
  std::vector<uint32_t> peers;                      // fi_addr -> IPv4 (host order); 0: removed
  std::vector<SesAddress> ses;                      // fi_addr -> the peer endpoint's PID, RI
  absl::flat_hash_map<uint32_t, fi_addr_t> by_ip;   // FI_SOURCE: IPv4 -> fi_addr
  int bound = 0;

  uint32_t ip(fi_addr_t a) const noexcept {
    return a < peers.size() ? peers[a] : 0;
  }
  SesAddress to(fi_addr_t a) const noexcept {
    return a < ses.size() ? ses[a] : SesAddress{};
  }
};

struct Ep {
  fid_ep fid;
  Domain* domain = nullptr;
  Endpoint* engine = nullptr;          // the domain's (PID 0) or `own`
  std::unique_ptr<Endpoint> own;       // PID > 0: its engine
  uint16_t pid = 0;                    // its PIDonFEP and its resource index's generation:
  uint8_t generation = 0;              // what its name carries
  fi_info* info = nullptr;  // a copy: caps, op flags, order
  Av* av = nullptr;
  Cq* tx_cq = nullptr;
  Cq* rx_cq = nullptr;
  bool tx_selective = false, rx_selective = false;
  Cntr* send_cntr = nullptr;
  Cntr* recv_cntr = nullptr;
  Cntr* read_cntr = nullptr;
  Cntr* write_cntr = nullptr;
  bool enabled = false;
  DeliveryMode mode = DeliveryMode::kRud;  // ROD where the application asked FI_ORDER_SAS
  size_t tx_in_flight = 0, rx_in_flight = 0;
};

// What a data call hands the engine once it holds an op slot: wr_id is the slot, `local` the
// bytes to send (the application's, or the inject copy).
enum class Dir : uint8_t { kTx, kRx };
using Post = absl::FunctionRef<absl::Status(uint64_t wr_id, const uint8_t* local)>;

// One data call: checks the endpoint, reserves the completion and an op slot, posts, and runs
// the engine once so the request leaves now. `len` bytes of `buf` are copied when `inject`.
ssize_t post(Ep* ep, Dir dir, uint64_t op_flags, uint64_t flags, void* context, void* buf,
             size_t len, bool inject, Post fn);

// The peer's IPv4 address for an fi_addr, 0 for none; and where its messages go there
// (spec/uet.md §4.1: the peer endpoint's PIDonFEP, resource index 0 at the generation its
// name carries).
uint32_t peer_of(const Ep* ep, fi_addr_t a);
SesAddress ses_of(const Ep* ep, fi_addr_t a);
// RMA and atomics address the peer domain's memory: its MRs are engine 0's, served at
// resource index 1, which no endpoint's closing disables.
inline constexpr SesAddress kDomainMemory{.pid_on_fep = 0, .resource_index = 1};

// An endpoint's name (fi_getname) and an AV entry: FI_SOCKADDR_IN, the PIDonFEP in the first
// two bytes of sin_zero (big-endian) and the generation in the third (0s in an address that
// carries none: PID 0, generation 0).
void name_of(uint32_t ip, uint16_t port, SesAddress to, sockaddr_in* sin);
SesAddress ses_in(const sockaddr_in& sin);

// FI_ATOMIC's calls (atomic.cc) and fi_query_atomic: whether the engine runs `op` on
// `datatype` for the call family `flags` names (0: fi_atomic; FI_FETCH_ATOMIC;
// FI_COMPARE_ATOMIC), and in how many elements at most.
extern fi_ops_atomic kAtomicOps;
int query_atomic(fid_domain* domain, fi_datatype datatype, fi_op op, fi_atomic_attr* attr,
                 uint64_t flags);

// FI_SOURCE: the fi_addr of the sender at `peer` (IPv4, host order) in the endpoint's AV, or
// FI_ADDR_NOTAVAIL (no FI_SOURCE, no AV, or a sender it does not hold).
fi_addr_t source_of(const Ep* ep, uint32_t peer);

class RcMessaging;

struct Domain {
  fid_domain fid;
  fid_fabric* fabric = nullptr;
  std::recursive_mutex mu;
  Params params;
  uint32_t local_ip4 = 0;  // host order
  std::unique_ptr<io::UringIo> uring;  // FI_UETREF_HOST=uring (the default)
  std::unique_ptr<io::PacketIo> dpdk;  // FI_UETREF_HOST=dpdk (dpdk-io/dpdk_io.h)
  io::PacketIo* io = nullptr;          // the one of them in use
  io::DpdkIo* ethdev = nullptr;        // FI_UETREF_HOST=dpdk: `dpdk`, as what it is
  bool link_up = false;                // DPDK: the port's link was seen up
  std::unique_ptr<Endpoint> engine;
  RcMessaging* rc = nullptr;  // FI_UETREF_TRANSPORT=rocev2: the engine, as what it is
  uint32_t job = 0;  // auth_key: the engines' JobID
  EngineMux mux;     // the engines, as the host loop drives them
  std::unique_ptr<io::HostLoop> loop;
  std::vector<Ep*> eps;
  uint32_t next_pid = 1;
  // UET: PID 0's resource index 0 refuses messages (DISABLED, §4.1) while no endpoint holds
  // PID 0; the next to take it starts its next generation, which its name carries.
  bool pid0_disabled = false;
  uint8_t pid0_generation = 0;  // PIDs are not reused: a peer's PDCs to a closed one die with it
  int children = 0;  // open AVs, CQs, counters, MRs, endpoints
  std::vector<OpCtx> ops;
  std::vector<uint32_t> free_ops;
  std::vector<uint8_t> inject_bufs;  // kInjectSize per op
  // FI_PROGRESS_AUTO: the progress thread opened the io_uring host and is the only thread
  // that enters it (its completions run in the submitter's context: io_uring_setup(2),
  // SINGLE_ISSUER); the application's calls only touch the engine, and wake the thread.
  bool auto_progress = false;
  bool stopping = false;                   // under mu: the progress thread ends
  std::condition_variable_any progressed;  // the thread moved completions into CQs
  std::thread progress_thread;

  ~Domain() { stop_progress(); }

  // MANUAL: runs the engine (a few passes of the host loop, then its completions into the
  // CQs). AUTO: takes the completions the thread left in the engine.
  void progress();
  // After a post: the request leaves now (MANUAL: progress(); AUTO: the thread is woken).
  void posted();
  // Waits (the caller holds no lock) for progress, at most until `deadline`: in the host
  // (MANUAL) or for the thread's next completions (AUTO).
  void idle(Time deadline);
  // AUTO: ends the progress thread, which closes the host; nothing under MANUAL.
  void stop_progress();
  // At close, as TCP's TIME_WAIT: runs the host on until none of our operations waits on a
  // peer and no frame has come for as long as a peer waits before it resends, at most
  // FI_UETREF_LINGER_MS, so that a peer whose last ACK from us was lost (a memif ring torn
  // down with the process) has it again when it retransmits (io::HostLoop::linger).
  void linger();
  // Moves the engines' completions into CQs and counters; returns how many.
  size_t drain();
  size_t drain(Endpoint& from);
  // DPDK: waits (once, at most 10 s) for the port's link, which drops what is sent before it
  // is up; then resolves `peer`'s MAC by ARP (at most 50 ms) so its first frames are not lost
  // to the neighbour table. Nothing on the io_uring host.
  void wait_for_link();
  void resolve(uint32_t peer);
  // Takes an op slot; -1 when every one is in flight.
  int64_t take_op() noexcept;
  void free_op(uint32_t i) noexcept;
  uint8_t* inject_buf(uint32_t i) noexcept { return inject_bufs.data() + size_t{i} * kInjectSize; }
  // The UDP port of the transport's endpoints: UET's or RoCEv2's.
  uint16_t port() const noexcept { return rc != nullptr ? kRocePort : kUetPort; }
};

// The port addresses carry under the transport FI_UETREF_TRANSPORT names.
uint16_t port_of(const Params& p) noexcept;

// A UET engine for PID `pid` of the domain (domain.cc); -FI_EINVAL with the reason logged.
int make_uet_engine(const Domain& d, uint32_t pid, std::unique_ptr<Endpoint>* out);

// The PIDonFEP and engine of a new endpoint: PID 0 and the domain's engine while no endpoint
// holds them, else the next PID with an engine of its own (`own`; PIDs past 0 are not reused:
// a peer's PDCs to a closed endpoint die with it rather than reach its successor).
int endpoint_engine(Domain& d, uint32_t* pid, std::unique_ptr<Endpoint>* own);
// An endpoint closes: its engine leaves the mux, or PID 0's messages are refused from now on.
void endpoint_closed(Domain& d, const Ep& ep);

// The domain's packet host and its progress (host.cc), as domain.cc opens the domain on it.
// Opens the host FI_UETREF_HOST names on `ip` (host order; 0: a free loopback address).
int open_host(Domain& d, const Params& p, uint32_t ip);
// FI_PROGRESS_AUTO: starts the progress thread, which opens the host; returns how that went.
int start_progress(Domain& d, uint32_t ip);
// The MAC the engines use for an address: stable, as the hosts write their own headers.
wire::MacAddr mac_of(uint32_t ip4);
// What a peer's receive socket holds in flight at most (half of it); a DPDK host has no socket.
uint64_t socket_window(const Domain& d);
// FI_UETREF_STATS: what the engine and the host counted, one line at close (domain.cc).
void print_stats(const Domain& d);

// Object constructors (fi_ops_* entries).
int fabric_open(fi_fabric_attr* attr, fid_fabric** fabric, void* context);
int domain_open(fid_fabric* fabric, fi_info* info, fid_domain** dom, void* context);
int cq_open(fid_domain* domain, fi_cq_attr* attr, fid_cq** cq, void* context);
int cntr_open(fid_domain* domain, fi_cntr_attr* attr, fid_cntr** cntr, void* context);
int av_open(fid_domain* domain, fi_av_attr* attr, fid_av** av, void* context);
int ep_open(fid_domain* domain, fi_info* info, fid_ep** ep, void* context);
int mr_reg(fid* fid, const void* buf, size_t len, uint64_t access, uint64_t offset,
           uint64_t requested_key, uint64_t flags, fid_mr** mr, void* context);
// The domain's memory registration calls (fid_domain::mr), mr.cc.
extern fi_ops_mr kMrOps;
int getinfo(uint32_t version, const char* node, const char* service, uint64_t flags,
            const fi_info* hints, fi_info** info);

// CQs, counters and the EQ offer no file descriptor or set to wait on (FI_WAIT_NONE, or
// FI_WAIT_UNSPEC for it): fi_cq_sread and fi_cntr_wait wait in the host.
inline bool no_wait_object(fi_wait_obj w) noexcept {
  return w == FI_WAIT_NONE || w == FI_WAIT_UNSPEC;
}

// A new object of the domain (AV, CQ, counter, MR, endpoint), counted among its children:
// its fid's class, context and fi_ops set; the caller holds d->mu and sets the rest.
template <typename T>
T* open_child(Domain* d, size_t fclass, void* context, fi_ops* ops) {
  auto* o = new T{};
  o->fid.fid.fclass = fclass;
  o->fid.fid.context = context;
  o->fid.fid.ops = ops;
  o->domain = d;
  ++d->children;
  return o;
}

// fi_close of a domain's AV, CQ or counter: refused while an endpoint is bound to it.
template <typename T>
int close_child(fid* f) {
  T* o = of<T>(f);
  Domain* d = o->domain;
  std::lock_guard lock(d->mu);
  if (o->bound > 0) return -FI_EBUSY;
  --d->children;
  delete o;
  return 0;
}

// Calls libfabric lets a provider leave out answer -FI_ENOSYS.
int no_bind(fid*, fid*, uint64_t);
int no_control(fid*, int, void*);
int no_ops_open(fid*, const char*, uint64_t, void**, void*);

// An object's fi_ops: its fi_close, and its fi_bind and fi_control where it has them.
constexpr fi_ops fid_ops(int (*close)(fid*), int (*bind)(fid*, fid*, uint64_t) = no_bind,
                         int (*control)(fid*, int, void*) = no_control) {
  return {
      .size = sizeof(fi_ops),
      .close = close,
      .bind = bind,
      .control = control,
      .ops_open = no_ops_open,
      .tostr = nullptr,
      .ops_set = nullptr,
  };
}

}  // namespace uet::fabric
