// uet-perf (bench/uet_perf/main.cc): one lane's run, phase by phase, and what its files share.
// hello.cc: the control connection, the handshake (PING, RXCAP, HELLO, WELCOME) and the
// barrier; lane.cc: the run, the operations (drive), the server's check (serve) and the
// client's end (write); engine.cc: the engine over the lane's backend.
//
// A Lane runs on its lane's thread alone (main.cc starts one per --lcores_io); it shares only
// the read-only options with the others.
#pragma once

#include "bench/uet_perf/control.h"
#include "bench/uet_perf/lane.h"
#include "bench/uet_perf/report.h"

namespace uet::perf {

// ---------------------------------------------------------------------------------------------
// The data pattern (main.cc, "Data pattern"): inline, as the checks run it per byte.

inline uint64_t mix(uint64_t z) {
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
inline uint8_t pattern_byte(uint64_t seed, uint64_t o) {
  return static_cast<uint8_t>(mix(seed + o / 8) >> (8 * (o % 8)));
}
inline void fill_pattern(std::vector<uint8_t>& v, uint64_t seed, bool complement) {
  const uint64_t x = complement ? ~uint64_t{0} : 0;
  size_t o = 0;
  for (; o + 8 <= v.size(); o += 8) {
    const uint64_t w = mix(seed + o / 8) ^ x;
    std::memcpy(v.data() + o, &w, 8);  // little-endian hosts: byte i = bits 8i..8i+7
  }
  for (; o < v.size(); ++o) v[o] = static_cast<uint8_t>(pattern_byte(seed, o) ^ x);
}

// ---------------------------------------------------------------------------------------------
// The engine (engine.cc).

// The lane's engine: UET or RoCEv2 as the options say, `mtu` bytes of payload a packet;
// peer_rx_payload: payload bytes the peer's receive socket holds (RXCAP), 0 = no bound.
absl::StatusOr<std::unique_ptr<Endpoint>> make_engine(const Options& o, const Io& io,
                                                      uint32_t mtu, uint64_t peer_rx_payload);
// Payloads sent by reference may still sit in the device's ring: waits until it has let go of
// them before their memory is freed.
void release_references(const Io& io);

// RXCAP: payload bytes a receive socket granted `granted` bytes holds with room to spare. The
// kernel charges each datagram its buffer's true size, about twice a payload (socket(7));
// half of the rest is left for the peer's other datagrams and for slack.
inline uint64_t rx_payload_bound(uint64_t granted) { return granted / 4; }

// ---------------------------------------------------------------------------------------------
// The lane.

// One lane's run, phase by phase; the members are what the phases share.
struct Lane {
  Lane(const Options& opts, Io& lane_io, TapIo& lane_tap, LaneOut& lane_out)
      : o(opts),
        io(lane_io),
        tap(lane_tap),
        out(lane_out),
        sq_psn(static_cast<uint32_t>(mix(o.seed ^ (o.server ? 0x11 : 0x22))) & 0xFFFFFF),
        size(o.size),
        iters(o.iters),
        duration_s(o.duration_s),
        seed(o.seed),
        mtu(o.mtu),
        lat(o.lat),
        op(o.op),
        bidir(o.bidir),
        base_rtt(o.base_rtt),
        cc(o.cc) {}

  int run(int listen_fd);
  // Ends the lane on an error before the report: said on stderr, the backlog freed.
  int fail(const absl::Status& s);

  // hello.cc.
  // The control connection, and the data link up.
  absl::Status connect(int listen_fd);
  // The client: the round trip and receive socket (PING, RXCAP), its engine, HELLO; the
  // server's WELCOME.
  absl::Status client_hello();
  // The server: answers PING and RXCAP, checks HELLO against its own flags, builds its engine
  // and region, and says WELCOME (or ERROR and why).
  absl::Status server_hello();
  // Both sides: ARP, the QP connected (RoCEv2), receive buffers posted (sends), the barrier.
  absl::Status meet();

  // lane.cc.
  // Posts operations to the peer (into its region `dst_rkey`, from `src`) and polls until
  // all are complete (or --timeout_s passes without progress); fills r. Used by the client,
  // and by the server too with --bidir.
  uint64_t drive(std::vector<uint8_t>& src, uint32_t dst_rkey, uint64_t pattern_seed, Result& r);
  // The server: serves until the client is done, then checks its region and says VERIFY.
  void serve(Result& r);
  // The client: the operations, DONE, the server's VERIFY, then BYE.
  void write(Result& r);

  const Options& o;
  Io& io;
  TapIo& tap;
  LaneOut& out;
  Oob oob;
  // Parameters: the client's win; the server checks what must match.
  const uint32_t sq_psn;
  uint64_t size, iters, slots = 0, duration_s, seed;
  uint32_t mtu;
  bool lat;
  std::string op;  // the client's choice; the server learns it from HELLO
  bool bidir;      // likewise
  Time base_rtt;   // UET: given, measured (client) or learnt from HELLO (server)
  uint32_t back_rkey = 0;  // --bidir: the client's region, the server's writes' target
  // --bidir: the server's writes carry a different pattern than the client's, so a write that
  // lands in the wrong direction cannot pass the check.
  static constexpr uint64_t kBackSalt = 0xB1D1;
  uint32_t peer_ip = 0, peer_qpn = 0, peer_psn = 0, rkey = 0;
  uint64_t peer_rx_socket = 0;  // RXCAP: the peer's receive socket as granted (0: no bound)
  CcMode cc;                    // UET: the client's, adopted by the server
  std::unique_ptr<Endpoint> ep;
  std::vector<uint8_t> region;
  std::unique_ptr<io::HostLoop> loop;
  std::function<void()> idle = [this] {
    if (loop) {
      loop->poll_once();
    } else {
      Frame* f[io::kMaxBurst];
      const size_t n = tap.rx_burst(f);
      tap.release_rx({f, n});
    }
  };
  uint64_t recv_posted = 0;  // sends: receive buffers the server posted before the first one

 private:
  // hello.cc: client_hello's and server_hello's steps.
  absl::Status measure_base_rtt(Options& eo);
  absl::Status client_rxcap();
  absl::Status client_engine(const Options& eo);
  absl::Status send_hello(const Options& eo);
  absl::Status read_welcome();
  absl::StatusOr<Fields> await_hello();
  bool read_hello(Fields& f);
  std::string hello_refusal(Fields& f, bool& ok) const;
  void adopt_client(Fields& f, Options& eo, std::string& why) const;
  std::string server_engine(const Options& eo);
  absl::Status send_welcome();
  // lane.cc: serve's steps.
  void check_received(Result& r, uint64_t& recvs);
  absl::StatusOr<Fields> await_done(const std::function<void()>& serve);
  void check_region(Fields& d, uint64_t& recvs, const std::function<void()>& serve, Result& r);
  void answer_verify(Fields& d, Result& r, Result& back, uint64_t back_posted);
};

}  // namespace uet::perf
