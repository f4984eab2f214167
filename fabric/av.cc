// The address vector: fi_addr_t is an index into `peers` (FI_AV_TABLE and FI_AV_MAP alike).
#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "fabric/rc_messaging.h"
#include "fabric/uetref.h"

namespace uet::fabric {

namespace {

fi_ops kAvFiOps = fid_ops(close_child<Av>);

int av_insert(fid_av* f, const void* addr, size_t count, fi_addr_t* fi_addr, uint64_t flags,
              void* context) {
  (void)context;
  if (flags != 0) return -FI_EINVAL;
  Av* av = of<Av>(f);
  std::lock_guard lock(av->domain->mu);
  const auto* sin = static_cast<const sockaddr_in*>(addr);
  int inserted = 0;
  for (size_t i = 0; i < count; ++i) {
    if (sin[i].sin_family != AF_INET || ntohs(sin[i].sin_port) != av->domain->port() ||
        ses_in(sin[i]).pid_on_fep >= EngineMux::kMaxEngines) {
      if (fi_addr != nullptr) fi_addr[i] = FI_ADDR_NOTAVAIL;
      continue;
    }
    const uint32_t ip = ntohl(sin[i].sin_addr.s_addr);
    av->domain->resolve(ip);
    if (av->domain->rc != nullptr) {  // RC: the peer's QP, connected now
      if (absl::Status s = av->domain->rc->connect(ip); !s.ok()) {
        FI_WARN(&kProvider, FI_LOG_AV, "%s\n", std::string(s.message()).c_str());
        if (fi_addr != nullptr) fi_addr[i] = FI_ADDR_NOTAVAIL;
        continue;
      }
    }
    const auto a = static_cast<fi_addr_t>(av->peers.size());
    av->peers.push_back(ip);
    av->ses.push_back(ses_in(sin[i]));
    av->by_ip.try_emplace(ip, a);
    if (fi_addr != nullptr) fi_addr[i] = a;
    ++inserted;
  }
  return inserted;
}

int av_insertsvc(fid_av* f, const char* node, const char* service, fi_addr_t* fi_addr,
                 uint64_t flags, void* context) {
  (void)service;
  in_addr a{};
  if (node == nullptr || inet_pton(AF_INET, node, &a) != 1) return -FI_EINVAL;
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_port = htons(of<Av>(f)->domain->port());
  sin.sin_addr = a;
  return av_insert(f, &sin, 1, fi_addr, flags, context);
}

int av_insertsym(fid_av*, const char*, size_t, const char*, size_t, fi_addr_t*, uint64_t, void*) {
  return -FI_ENOSYS;
}

int av_remove(fid_av* f, fi_addr_t* fi_addr, size_t count, uint64_t flags) {
  if (flags != 0) return -FI_EINVAL;
  Av* av = of<Av>(f);
  std::lock_guard lock(av->domain->mu);
  for (size_t i = 0; i < count; ++i) {
    if (fi_addr[i] >= av->peers.size() || av->peers[fi_addr[i]] == 0) return -FI_EINVAL;
    auto it = av->by_ip.find(av->peers[fi_addr[i]]);
    if (it != av->by_ip.end() && it->second == fi_addr[i]) av->by_ip.erase(it);
    av->peers[fi_addr[i]] = 0;
  }
  return 0;
}


int av_lookup(fid_av* f, fi_addr_t fi_addr, void* addr, size_t* addrlen) {
  Av* av = of<Av>(f);
  std::lock_guard lock(av->domain->mu);
  const uint32_t ip = av->ip(fi_addr);
  if (ip == 0) return -FI_EINVAL;
  sockaddr_in sin;
  name_of(ip, av->domain->port(), av->to(fi_addr), &sin);
  std::memcpy(addr, &sin, std::min(*addrlen, sizeof(sin)));
  const bool fits = *addrlen >= sizeof(sin);
  *addrlen = sizeof(sin);
  return fits ? 0 : -FI_ETOOSMALL;
}

const char* av_straddr(fid_av*, const void* addr, char* buf, size_t* len) {
  const auto* sin = static_cast<const sockaddr_in*>(addr);
  char ip[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &sin->sin_addr, ip, sizeof(ip));
  const char* scheme = ntohs(sin->sin_port) == kRocePort ? "rocev2://" : "uet://";
  const std::string s = absl::StrCat(scheme, ip, ":", ntohs(sin->sin_port));
  if (*len > 0) {
    const size_t n = std::min(*len - 1, s.size());
    std::memcpy(buf, s.data(), n);
    buf[n] = '\0';
  }
  *len = s.size() + 1;
  return buf;
}

int no_av_set(fid_av*, fi_av_set_attr*, fid_av_set**, void*) { return -FI_ENOSYS; }

fi_ops_av kAvOps = {
    .size = sizeof(fi_ops_av),
    .insert = av_insert,
    .insertsvc = av_insertsvc,
    .insertsym = av_insertsym,
    .remove = av_remove,
    .lookup = av_lookup,
    .straddr = av_straddr,
    .av_set = no_av_set,
};

}  // namespace

int av_open(fid_domain* domain, fi_av_attr* attr, fid_av** out, void* context) {
  Domain* d = of<Domain>(domain);
  if (attr != nullptr && (attr->flags != 0 || attr->name != nullptr || attr->rx_ctx_bits != 0))
    return -FI_ENOSYS;  // no shared or named AVs, no scalable endpoints
  std::lock_guard lock(d->mu);
  auto* av = open_child<Av>(d, FI_CLASS_AV, context, &kAvFiOps);
  av->fid.ops = &kAvOps;
  if (attr != nullptr && attr->type != FI_AV_UNSPEC) av->type = attr->type;
  if (attr != nullptr && attr->count > 0) av->peers.reserve(attr->count);
  *out = &av->fid;
  return 0;
}

void name_of(uint32_t ip, uint16_t port, SesAddress to, sockaddr_in* sin) {
  *sin = sockaddr_in{};
  sin->sin_family = AF_INET;
  sin->sin_port = htons(port);
  sin->sin_addr.s_addr = htonl(ip);
  sin->sin_zero[0] = static_cast<char>(to.pid_on_fep >> 8);
  sin->sin_zero[1] = static_cast<char>(to.pid_on_fep);
  sin->sin_zero[2] = static_cast<char>(to.ri_generation);
}

SesAddress ses_in(const sockaddr_in& sin) {
  const auto* z = reinterpret_cast<const unsigned char*>(sin.sin_zero);
  return {.pid_on_fep = static_cast<uint16_t>(z[0] << 8 | z[1]), .ri_generation = z[2]};
}

fi_addr_t source_of(const Ep* ep, uint32_t peer) {
  if (ep == nullptr || ep->av == nullptr || (ep->info->caps & FI_SOURCE) == 0)
    return FI_ADDR_NOTAVAIL;
  auto it = ep->av->by_ip.find(peer);
  return it != ep->av->by_ip.end() ? it->second : FI_ADDR_NOTAVAIL;
}

}  // namespace uet::fabric
