// Arrays whose memory is the kernel's zero pages until written: a rank of a fabric split over
// processes (sim/partition.h) keeps every port's number but stores only its own ports, so the
// pages holding only other ranks' ports are never touched and cost no resident memory.
//
// PageAllocator maps each array with mmap (anonymous, private: zero-filled on first touch) and
// leaves an element constructed without arguments as it is (zero bytes), so resize() touches
// nothing. Only for types whose value-initialised state is all zero bytes, or whose elements
// are read only where they were constructed with a value (Network's ports). Control path: an
// array is mapped when it is sized or grows, never per frame.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace uet::sim {

template <typename T>
class PageAllocator {
 public:
  static_assert(std::is_trivially_destructible_v<T>);
  using value_type = T;

  PageAllocator() = default;
  template <typename U>
  explicit PageAllocator(const PageAllocator<U>&) noexcept {}

  T* allocate(size_t n) {
    void* p = mmap(nullptr, n * sizeof(T), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) noexcept { munmap(p, n * sizeof(T)); }

  // Without a value: the zero bytes the page holds (untouched, so not resident).
  template <typename U>
  void construct(U*) noexcept {}
  template <typename U, typename A0, typename... A>
  void construct(U* p, A0&& a0, A&&... a) {
    std::construct_at(p, std::forward<A0>(a0), std::forward<A>(a)...);
  }
  template <typename U>
  void destroy(U*) noexcept {}

  template <typename U>
  bool operator==(const PageAllocator<U>&) const noexcept {
    return true;
  }
};

}  // namespace uet::sim
