// Counters (or any state) that a fault-free run never touches, made at their first use so an
// endpoint that never sees such an event does not carry them (../shared/DESIGN.md "Memory
// follows live state"). Both engines keep their rarely moved counters here; the per-packet
// ones live in the endpoint itself.
#pragma once

#include <memory>

namespace uet {

// T: value-initialisable as a constant expression (the all-zero counters read before any use).
template <typename T>
class Rare {
 public:
  // For writing: made on the first call (control path, or the first rare event on the data path).
  T& get() {
    if (p_ == nullptr) [[unlikely]] return make();
    return *p_;
  }
  // For reading: all-default until made.
  const T& get() const noexcept {
    static constexpr T kNone{};
    return p_ != nullptr ? *p_ : kNone;
  }
  const T* get_if() const noexcept { return p_.get(); }  // nullptr until made

 private:
  // Out of line and opaque to its callers (noipa: as a function of another file would be), so
  // that get() stays small and the data path compiles as if the maker were not visible.
  [[gnu::cold, gnu::noipa]] T& make() {
    p_ = std::make_unique<T>();
    return *p_;
  }
  std::unique_ptr<T> p_;
};

}  // namespace uet
