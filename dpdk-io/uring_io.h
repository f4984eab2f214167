// The io_uring UDP backend of PacketIo (packet_io.h): the same engines over kernel UDP sockets,
// for hosts without DPDK or hugepages. Works unprivileged, on loopback and between network
// namespaces. Only dpdk-io/ includes liburing (DESIGN.md); this header does not.
//
// What goes on the wire
// - tx: the engine's frame is Ethernet [802.1Q] / IPv4 / UDP / (UET | BTH...ICRC). The
//   backend reads the IPv4 and UDP headers in place and sends the UDP payload (no copy: the
//   iovec points into the frame) with IORING_OP_SENDMSG to ip.dst:udp.dport, with the
//   frame's TOS byte (DSCP + ECN) and TTL as IP_TOS / IP_TTL cmsgs, so ECN-capable marking
//   (ECT, CE) and the traffic class survive. One io_uring_submit per tx_burst. Frames the
//   backend cannot express as a UDP datagram (not IPv4/UDP, fragments, lengths that lie,
//   payload carried by length only) are dropped and counted (tx_dropped). IPv4 options are
//   not sent.
// - Zero-copy transmit (zero_copy_send): where the kernel has IORING_OP_SENDMSG_ZC (probed at
//   create(), Linux 6.1+), the same sendmsg goes out without the kernel copying the payload
//   into its socket buffer; it pins the frame's pages instead. Such a send completes twice
//   (io_uring_prep_sendmsg_zc(3)): the result, flagged IORING_CQE_F_MORE, then a notification
//   (IORING_CQE_F_NOTIF) once the kernel no longer reads the buffer; only then does the buffer
//   return to the free list. Where the packet must be copied anyway (loopback delivery, a
//   device without scatter-gather or checksum offload) the kernel says so in the notification,
//   counted as tx_zc_copied (needs Linux 6.2+; on 6.1 the first zero-copy send fails EINVAL,
//   and the rest go without the report). The transmit buffers are not registered with
//   io_uring_register_buffers: see uring_io.cc.
// - EV (UET §2.1: the entropy value rides in the UDP source port). A UDP socket cannot send
//   from an arbitrary source port, so the EV is mapped onto a pool of `ev_sockets` sockets
//   bound to local_ip4, each on its own source port (`ev_port_base` + i, or kernel-chosen
//   ephemeral ports when ev_port_base is 0): the frame goes out of socket
//   `udp.sport % ev_sockets`. So the wire source port is the pool socket's port, not the
//   engine's EV: a given EV always leaves on the same port (per-flow order is kept), and the
//   fabric's ECMP hash sees up to `ev_sockets` distinct 5-tuples per peer pair. The receiver
//   (engine) sees the pool port as the EV/source port: UET's receiver does not echo it and
//   RoCEv2 uses one port per QP, so both work unchanged (UET's path selector keys its feedback
//   on the EV it recorded per PSN, not on the port the receiver saw). With more EVs than
//   sockets, several EVs share a wire port, i.e. a path. No raw socket, no privilege. (A raw
//   socket could send the engine's own source port, but needs CAP_NET_RAW.)
// - rx: one socket bound to local_ip4:udp_port receives, through a multishot IORING_OP_RECVMSG
//   that draws from a kernel-registered buffer ring (re-armed when it stops, e.g. when every
//   buffer is lent out). IP_RECVTOS and IP_RECVTTL give the TOS byte and TTL, the sockaddr
//   the source. The backend then writes Ethernet / IPv4 / UDP headers in place in front of
//   the payload (the buffer reserves the room; no copy), so the engine sees what a NIC would
//   deliver:
//     Ethernet  dst = local_mac, src = 02:00:<source IPv4 bytes>, type IPv4
//     IPv4      IHL 5, TOS as received, total length, id 0, DF, TTL as received, UDP,
//               valid header checksum, src = sender, dst = local_ip4
//     UDP       sport = the sender's pool port, dport = udp_port, length, checksum 0 (the
//               kernel has verified the real one; 0 means "not computed" for IPv4, RFC 768,
//               which decode_frame accepts)
// - RoCEv2 ICRC (spec/rocev2.md §6) covers the IP and UDP headers except TOS, TTL and the
//   checksums: in particular the IP id, flags, source address and the UDP source port. The
//   receiver can only synthesise id 0, DF and the wire source port, so for frames to UDP port
//   4791 the backend does what a RoCE NIC does: it (re)computes the ICRC over the headers as
//   they go on the wire (pool source port, local_ip4, id 0, DF). When only fixed-size fields
//   differ (always, for our engines) this is an O(log n) incremental update (CRC linearity
//   and zlib's crc32_combine), not a pass over the payload. RoCEv2 engines then accept the
//   synthesised frames' ICRC.
//
// - UDP GSO (gso): consecutive frames of a burst that leave from the same pool socket for the
//   same destination with the same TOS and TTL, all of one payload size but the last, go in
//   one IORING_OP_SENDMSG with a UDP_SEGMENT cmsg (udp(7)): one pass through the kernel's
//   stack for up to 64 datagrams (65507 bytes), which the kernel (or the NIC) cuts into the
//   same datagrams it would have sent one by one. Grouping keeps the order of the frames of
//   one socket (one EV) and of one destination; frames of different sockets may leave in
//   another order than the engine wrote them, as different paths reorder them anyway. Where a
//   grouped send is refused (EINVAL or EMSGSIZE: a segment longer than the route's MTU
//   allows, which a single datagram would have been fragmented for) its datagrams are counted
//   lost and GSO is switched off for this UringIo (setup().gso, tx_gso_refused); the
//   transports retransmit. Grouped sends are always copied by the kernel, even where
//   zero_copy_send is on (see uring_io.cc).
// - UDP GRO (gro): the receiving socket accepts coalesced datagrams (UDP_GRO): the loopback
//   device hands a GSO send over whole, and a NIC's GRO merges a flow's datagrams, so one
//   receive completion carries up to 64 of them and the UDP_GRO cmsg says where they split.
//   A datagram that came alone is lent in place as above; the segments of a coalesced one are
//   copied, each behind its own synthesised headers, into frames of a second pool (`frames` / 2
//   of frame_capacity), one memcpy per segment in exchange for one kernel receive per 64.
//   The kernel's buffer ring then holds fewer, larger buffers (frames / 16, at least 8, of
//   65549 bytes), so a coalesced datagram never truncates.
//
// Buffers, bounds, ownership
// - One fixed pool of `frames` buffers, carved at create(): the receive buffer ring gets the
//   largest power of two <= frames / 2 (the kernel needs a power of two), transmit the rest.
//   No allocation after create(). Receive buffers are lent by rx_burst() until release_rx();
//   transmit buffers are lent by alloc_tx() and, once sent, stay owned by the kernel until
//   their send completes (reaped in any later call; a zero-copy send's at its notification),
//   then return to the free list. The destructor waits, bounded, for every send's completions.
// - Counters: datagrams larger than frame_capacity - 42 (MSG_TRUNC) and datagrams the kernel
//   dropped because the socket buffer overflowed while the pool was exhausted (SO_RXQ_OVFL)
//   are rx_dropped; unparseable frames and failed sends are tx_dropped. UringCounters says why.
// - Threads: a UringIo is driven by one thread (PacketIo's contract); it owns its ring and
//   sockets, closed in the destructor.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dpdk-io/free_stack.h"
#include "dpdk-io/packet_io.h"
#include "transport/wire/builder.h"

struct io_uring_sqe;  // liburing's, declared only (DESIGN.md: liburing stays in dpdk-io/*.cc)

namespace uet::io {

// Whether transmit uses IORING_OP_SENDMSG_ZC (see above).
enum class ZeroCopySend : uint8_t {
  kAuto,  // where the kernel offers it and local_ip4 is not loopback (127/8)
  kOn,    // always; create() fails if the kernel lacks it
  kOff,   // plain IORING_OP_SENDMSG
};
const char* to_string(ZeroCopySend z) noexcept;  // "auto", "on", "off"
// Parses "auto", "on" or "off"; the error names the valid values.
absl::StatusOr<ZeroCopySend> parse_zero_copy_send(std::string_view s);

struct UringIoConfig {
  uint32_t local_ip4 = 0;          // address to bind (host order, like UetConfig::local_ip4),
                                   // e.g. 127.0.0.1; must not be 0 (the synthesised frames and
                                   // the ICRC name it)
  uint16_t udp_port = 4793;        // the transport's port: 4793 UET, 4791 RoCEv2; 1..65535
  wire::MacAddr local_mac{};       // destination MAC written into synthesised received frames
  uint32_t frames = 1024;          // buffers in the pool (rx + tx), 64..65536
  uint32_t frame_capacity = 9216;  // bytes per buffer incl. the synthesised Eth/IPv4/UDP
                                   // headers, 256..65549 (largest UDP payload + 42)
  uint32_t queue_depth = 256;      // io_uring SQ entries, 8..4096
  uint16_t ev_sockets = 16;        // size of the source-port socket pool (see above), 1..1024
  // First source port of the pool: 0 = ephemeral ports chosen by the kernel (the default);
  // else the pool uses ev_port_base .. ev_port_base + ev_sockets - 1, which must lie in
  // 1024..65535 and must not contain udp_port.
  uint16_t ev_port_base = 0;
  // Socket buffer asked of the kernel: SO_RCVBUF of the receiving socket and SO_SNDBUF of the
  // pool sockets (SO_*BUFFORCE when privileged, else capped by net.core.[rw]mem_max; setup()
  // says what the receiving socket got), 65536..1 GiB.
  uint32_t socket_buffer_bytes = 4u << 20;
  ZeroCopySend zero_copy_send = ZeroCopySend::kAuto;  // auto, on or off
  // DEFER_TASKRUN | SINGLE_ISSUER (Linux 6.1+; the cooperative mode where refused): completion
  // work runs only when this ring is entered, never by flagging the thread, so the process's
  // own blocking socket calls with timeouts are not cut short with EINTR. For hosts inside
  // someone else's process (fabric/); every call must then come from the thread that created
  // the UringIo.
  bool defer_taskrun = false;
  // wake() from any thread cuts a wait() short (an eventfd the ring polls): for a progress
  // thread that sleeps in wait() while the application posts work (fabric/, FI_PROGRESS_AUTO).
  bool wakeable = false;
  // UDP segmentation offload on transmit and coalesced receive (see above), where the kernel
  // offers them (Linux 4.18 / 5.0+); setup() says what was granted.
  bool gso = false;
  bool gro = false;

  // Checks every field; the message names the field and its valid range.
  absl::Status validate() const;
};

// Why datagrams or frames were dropped, and ring events; always on.
struct UringCounters {
  uint64_t rx_truncated = 0;       // datagram larger than a buffer (MSG_TRUNC)
  uint64_t rx_kernel_dropped = 0;  // dropped by the kernel: socket buffer full (SO_RXQ_OVFL)
  uint64_t rx_bad = 0;             // completion without a usable source address
  uint64_t rx_rearms = 0;          // multishot receive re-armed after it stopped
  uint64_t rx_errors = 0;          // receive completions with an error (last_rx_errno);
                                   // one the kernel will not get over stops the receive
  uint64_t tx_unparseable = 0;     // not IPv4/UDP, fragment, bad lengths, payload by length
  uint64_t tx_send_errors = 0;     // sendmsg completed with an error (last_send_errno says which)
  uint64_t tx_no_sqe = 0;          // submission queue full even after a submit
  uint64_t tx_icrc_updates = 0;    // RoCEv2 ICRCs recomputed for the wire headers
  uint64_t tx_zc_sends = 0;        // sends submitted as IORING_OP_SENDMSG_ZC
  uint64_t tx_zc_notifs = 0;       // their notifications (IORING_CQE_F_NOTIF): buffers freed
  uint64_t tx_zc_copied = 0;       // ... of which the kernel copied the payload anyway
  uint64_t tx_gso_sends = 0;       // sends carrying more than one datagram (UDP_SEGMENT)
  uint64_t tx_gso_datagrams = 0;   // ... the datagrams they carried
  uint64_t tx_gso_refused = 0;     // a group refused for the route's MTU: GSO switched off
  uint64_t rx_gro_receives = 0;    // receive completions carrying coalesced datagrams
  uint64_t rx_gro_datagrams = 0;   // ... the datagrams they carried
  uint64_t rx_split_waits = 0;     // rx_burst() calls that found the split pool lent out
  int last_send_errno = 0;
  int last_rx_errno = 0;
};

// What the kernel granted at create().
struct UringSetup {
  // SO_RCVBUF of the receiving socket as granted: the bytes of datagrams (counted with the
  // kernel's per-datagram overhead, about as large again) it may hold before it drops.
  uint32_t rx_socket_bytes = 0;
  bool rx_socket_capped = false;  // net.core.rmem_max granted less than socket_buffer_bytes
  bool coop_taskrun = false;      // the ring runs completion work at our entries (see .cc)
  bool defer_taskrun = false;     // ... and only then (defer_taskrun above)
  bool zero_copy_send = false;    // transmit uses IORING_OP_SENDMSG_ZC
  bool zc_usage_known = false;    // ... and each notification says if the kernel copied
  bool gso = false;               // transmit groups datagrams with UDP_SEGMENT
  bool gro = false;               // the receiving socket takes coalesced datagrams (UDP_GRO)
};

class UringIo final : public PacketIo {
 public:
  static absl::StatusOr<std::unique_ptr<UringIo>> create(const UringIoConfig& config);
  ~UringIo() override;
  UringIo(const UringIo&) = delete;
  UringIo& operator=(const UringIo&) = delete;

  // PacketIo.
  size_t rx_burst(std::span<Frame*> out) override;
  void release_rx(std::span<Frame* const> frames) override;
  size_t alloc_tx(std::span<Frame*> out) override;
  size_t tx_burst(std::span<Frame* const> filled, std::span<Frame* const> unused) override;
  void wait(Time deadline) override;
  // Ends the current or the next wait() at once; safe from any thread (config.wakeable only).
  void wake() noexcept;
  IoStats stats() const override { return stats_; }

  const UringCounters& counters() const noexcept { return counters_; }
  const UringSetup& setup() const noexcept { return setup_; }
  const UringIoConfig& config() const noexcept { return config_; }
  // The pool's source ports (host order): a frame with UDP source port s leaves from
  // ev_ports()[s % ev_sockets].
  std::span<const uint16_t> ev_ports() const noexcept { return ev_ports_; }
  uint32_t rx_buffers() const noexcept { return rx_count_; }  // in the kernel's buffer ring
  uint32_t split_buffers() const noexcept { return split_count_; }  // for coalesced segments
  uint32_t tx_buffers() const noexcept { return tx_count_; }

 private:
  struct Ring;    // the io_uring and its buffer ring (liburing types stay in the .cc)
  struct TxSlot;  // per transmit buffer: msghdr, iovec, address, cmsgs of its send
  struct GsoSend;  // a send of several datagrams: their iovecs, cmsgs with UDP_SEGMENT
  struct RxSplit;  // a coalesced receive not yet split into frames

  explicit UringIo(const UringIoConfig& config);
  absl::Status init();
  absl::Status open_sockets();
  absl::Status carve_pool();
  absl::Status open_ring();

  void reap();  // drains the completion queue
  void on_tx_completion(uint32_t index, int32_t res, uint32_t flags);
  void on_gso_completion(uint32_t gi, int32_t res, uint32_t flags);
  bool send_zc_done(bool& result_seen, bool& notif_due, bool& notif_seen, int32_t res,
                    uint32_t flags);
  absl::Status probe_zero_copy();  // decides setup_.zero_copy_send
  void on_rx_completion(int32_t res, uint32_t flags);
  void synthesize(Frame& f, uint32_t src_ip, uint16_t sport, uint8_t tos, uint8_t ttl,
                  size_t payload_len) const noexcept;
  void recycle_rx(uint16_t bid);  // gives a receive buffer back to the kernel's ring
  io_uring_sqe* next_sqe();
  void arm_rx();                  // posts the multishot receive
  void maybe_arm_rx();            // ... again, once it has stopped and a buffer is free
  bool prepare_send(Frame& f, uint32_t tx_index);
  bool submit_one(uint32_t tx_index);
  uint32_t submit_group(uint32_t head, uint32_t count, uint32_t segment);
  size_t send_grouped(std::span<const uint32_t> ready);
  size_t lend_split(std::span<Frame*> out);  // segments of the coalesced receive at the head
  uint8_t* rx_buffer(uint32_t bid) const noexcept;

  UringIoConfig config_;
  std::unique_ptr<Ring> ring_;
  int rx_fd_ = -1;
  int wake_fd_ = -1;  // config.wakeable: the eventfd wake() writes
  std::vector<int> ev_fds_;
  std::vector<uint16_t> ev_ports_;

  uint32_t rx_count_ = 0, tx_count_ = 0;
  uint32_t rx_buf_len_ = 0;    // bytes per receive buffer (recvmsg_out, name, cmsgs, payload)
  uint8_t* memory_ = nullptr;  // mmap'd: receive buffers, then transmit buffers
  size_t memory_len_ = 0;

  std::vector<Frame> rx_frames_;   // the kernel ring's buffers, then the split pool
  std::vector<RxSplit> rx_split_;  // per kernel ring buffer (gro only)
  uint32_t split_count_ = 0;
  FreeStack<uint32_t> split_free_;
  std::vector<uint16_t> rx_ready_;  // ring of received buffer ids not yet handed out
  uint32_t rx_ready_head_ = 0, rx_ready_count_ = 0;
  uint32_t rx_in_kernel_ = 0;  // buffers in the kernel's ring, free to fill
  bool rx_armed_ = false;
  bool wake_armed_ = false;  // a poll of wake_fd_ is in the ring
  bool rx_failed_ = false;  // the receive ended with an error re-arming cannot cure
  uint32_t rxq_ovfl_seen_ = 0;

  std::vector<Frame> tx_frames_;
  std::vector<TxSlot> tx_slots_;
  FreeStack<uint32_t> tx_free_;
  uint32_t tx_in_flight_ = 0;  // sends submitted, not yet completed (the kernel reads them)
  uint16_t zc_flags_ = 0;      // IORING_SEND_ZC_* of every zero-copy send
  std::vector<GsoSend> gso_;   // tx_count_ / 2: a group holds two buffers or more
  FreeStack<uint32_t> gso_free_;

  IoStats stats_;
  UringCounters counters_;
  UringSetup setup_;
};

}  // namespace uet::io
