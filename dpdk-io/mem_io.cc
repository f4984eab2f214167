#include "dpdk-io/mem_io.h"

#include <cstring>
#include <utility>

#include "dpdk-io/free_stack.h"

namespace uet::io {

class MemoryWire::End final : public PacketIo {
 public:
  End(MemoryWire& wire, int index, uint32_t frames, uint32_t capacity)
      : wire_(wire), index_(index), bytes_(size_t{frames} * capacity), frames_(frames),
        rx_(frames) {
    std::vector<Frame*> all(frames);
    for (uint32_t i = 0; i < frames; ++i) {
      frames_[i].data = bytes_.data() + size_t{i} * capacity;
      frames_[i].capacity = capacity;
      all[i] = &frames_[i];
    }
    free_.fill(std::move(all));
  }

  size_t rx_burst(std::span<Frame*> out) override {
    size_t n = 0;
    while (n < out.size() && rx_count_ > 0) {
      out[n++] = rx_[rx_head_];
      rx_head_ = (rx_head_ + 1) % rx_.size();
      --rx_count_;
    }
    for (size_t i = 0; i < n; ++i) {
      ++stats_.rx_packets;
      stats_.rx_bytes += out[i]->len;
    }
    return n;
  }

  void release_rx(std::span<Frame* const> frames) override {
    for (Frame* f : frames) give_back(f);
  }

  size_t alloc_tx(std::span<Frame*> out) override {
    size_t n = 0;
    while (n < out.size() && !free_.empty()) {
      Frame* f = free_.pop();
      f->len = 0;
      f->wire_len = 0;
      f->priority = Priority::kData;
      out[n++] = f;
    }
    if (n < out.size() && free_.empty()) ++stats_.tx_no_buffer;
    return n;
  }

  size_t tx_burst(std::span<Frame* const> filled, std::span<Frame* const> unused) override {
    End& peer = *wire_.ends_[1 - index_];
    size_t sent = 0;
    for (Frame* f : filled) {
      if (wire_.keep_ && !wire_.keep_(index_, *f)) {
        ++stats_.tx_dropped;
        give_back(f);
        continue;
      }
      Frame* g = peer.take_free();
      if (g == nullptr || f->len + f->ref_len > g->capacity) {
        ++stats_.tx_dropped;
        if (g != nullptr) peer.give_back(g);
        give_back(f);
        continue;
      }
      // The "wire": the peer owns its own buffers; a referenced payload is gathered (DMA).
      std::memcpy(g->data, f->data, f->ref_len > 0 ? f->ref_at : f->len);
      if (f->ref_len > 0) {
        std::memcpy(g->data + f->ref_at, f->ref, f->ref_len);
        std::memcpy(g->data + f->ref_at + f->ref_len, f->data + f->ref_at, f->len - f->ref_at);
      }
      g->len = f->len + f->ref_len;
      g->wire_len = f->wire_len;
      g->priority = f->priority;
      peer.enqueue_rx(g);
      ++stats_.tx_packets;
      stats_.tx_bytes += g->len;
      give_back(f);
      ++sent;
    }
    for (Frame* f : unused) give_back(f);
    return sent;
  }

  IoStats stats() const override { return stats_; }

 private:
  Frame* take_free() { return free_.empty() ? nullptr : free_.pop(); }
  void give_back(Frame* f) { free_.push(f); }
  void enqueue_rx(Frame* f) {
    rx_[(rx_head_ + rx_count_) % rx_.size()] = f;
    ++rx_count_;
  }

  MemoryWire& wire_;
  int index_;
  std::vector<uint8_t> bytes_;
  std::vector<Frame> frames_;
  FreeStack<Frame*> free_;
  std::vector<Frame*> rx_;  // ring; every frame of this end fits, so it never overflows
  size_t rx_head_ = 0, rx_count_ = 0;
  IoStats stats_;
};

MemoryWire::MemoryWire(uint32_t frames_per_end, uint32_t frame_capacity) {
  ends_[0] = std::make_unique<End>(*this, 0, frames_per_end, frame_capacity);
  ends_[1] = std::make_unique<End>(*this, 1, frames_per_end, frame_capacity);
}

MemoryWire::~MemoryWire() = default;

PacketIo& MemoryWire::end(int i) noexcept { return *ends_[i & 1]; }

}  // namespace uet::io
