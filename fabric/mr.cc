// Memory registration: an MR is a region in the engine's table, its key the engine's.
#include <string>

#include "fabric/uetref.h"

namespace uet::fabric {

namespace {

// The region's key is withdrawn from the engine first: a peer's later WRITE or READ with it
// is refused (the peer's operation completes in error), and nothing lands in memory the
// application may free next. While an operation of ours still uses the memory the MR stays
// open (-FI_EBUSY, as fi_close(3) allows).
int mr_close(fid* f) {
  Mr* mr = of<Mr>(f);
  Domain* d = mr->domain;
  std::lock_guard lock(d->mu);
  if (mr->fid.key != 0) {
    if (absl::Status s = d->engine->deregister_memory(static_cast<uint32_t>(mr->fid.key));
        !s.ok()) {
      FI_INFO(&kProvider, FI_LOG_MR, "fi_close(mr): %s\n", std::string(s.message()).c_str());
      return absl::IsFailedPrecondition(s) ? -FI_EBUSY : to_fi_errno(s);
    }
  }
  --d->children;
  delete mr;
  return 0;
}

fi_ops kMrFiOps = fid_ops(mr_close);

int mr_regv(fid* f, const iovec* iov, size_t count, uint64_t access, uint64_t offset,
            uint64_t key, uint64_t flags, fid_mr** mr, void* context) {
  if (count != 1) return -FI_EINVAL;
  return mr_reg(f, iov->iov_base, iov->iov_len, access, offset, key, flags, mr, context);
}

int mr_regattr(fid* f, const fi_mr_attr* attr, uint64_t flags, fid_mr** mr) {
  if (attr == nullptr || attr->iov_count != 1) return -FI_EINVAL;
  return mr_reg(f, attr->mr_iov->iov_base, attr->mr_iov->iov_len, attr->access, attr->offset,
                attr->requested_key, flags, mr, attr->context);
}

}  // namespace

int mr_reg(fid* f, const void* buf, size_t len, uint64_t access, uint64_t offset,
           uint64_t requested_key, uint64_t flags, fid_mr** out, void* context) {
  (void)access;
  (void)requested_key;  // FI_MR_PROV_KEY: the engine's region table chooses
  if (f->fclass != FI_CLASS_DOMAIN || flags != 0 || offset != 0) return -FI_EINVAL;
  Domain* d = of<Domain>(f);
  std::lock_guard lock(d->mu);
  uint64_t key = 0;
  if (len > 0) {
    auto k = d->engine->register_memory(static_cast<uint8_t*>(const_cast<void*>(buf)), len);
    if (!k.ok()) return to_fi_errno(k.status());
    key = *k;
  }
  auto* mr = open_child<Mr>(d, FI_CLASS_MR, context, &kMrFiOps);
  mr->fid.mem_desc = mr;
  mr->fid.key = key;
  *out = &mr->fid;
  return 0;
}

fi_ops_mr kMrOps = {
    .size = sizeof(fi_ops_mr),
    .reg = mr_reg,
    .regv = mr_regv,
    .regattr = mr_regattr,
};

}  // namespace uet::fabric
