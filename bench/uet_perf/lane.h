// uet-perf (bench/uet_perf/main.cc): one lane (engine, backend, control connection), and
// --pingpong.
#pragma once

#include "bench/uet_perf/perf.h"
#include "bench/uet_perf/report.h"

namespace uet::perf {

// One lane: the control connection, one engine over one backend, the writes (client) or the
// check (server). `o` is the lane's copy of the options (ip, oob_port and seed offset by the
// lane); `listen_fd` the server's bound control socket.
int run_lane(const Options& o, Io& io, int listen_fd, LaneOut& out);
// --pingpong: raw frames bounced by a reflector (pingpong.cc).
int run_pingpong(const Options& o, Io& io);

}  // namespace uet::perf
