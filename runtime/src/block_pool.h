// Memory blocks kept between runs (see BlockPool).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>

namespace quilt::rt {

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using Memory = std::unique_ptr<uint8_t, FreeDeleter>;

// Memory blocks kept between runs: a run takes blocks from its session's pool and gives them
// back as values die and when it ends, so a session in steady state allocates nothing. Blocks
// are 64-byte aligned; a request takes the smallest free block of at least its size (and at most
// twice it), else a new one.
class BlockPool {
 public:
  struct Block {
    Memory mem;
    size_t size = 0;
  };

  Block Take(size_t bytes) {
    size_t rounded = std::max<size_t>(64, (bytes + 63) / 64 * 64);
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = free_.lower_bound(rounded);
      if (it != free_.end() && it->first <= 2 * rounded) {
        Block b{std::move(it->second), it->first};
        free_bytes_ -= it->first;
        free_.erase(it);
        return b;
      }
    }
    return Block{Memory(static_cast<uint8_t*>(std::aligned_alloc(64, rounded))), rounded};
  }

  void Give(Block b) {
    if (!b.mem) return;
    std::lock_guard<std::mutex> lock(mu_);
    if (free_bytes_ + b.size > kMaxFreeBytes) return;  // dropped: freed here
    free_bytes_ += b.size;
    free_.emplace(b.size, std::move(b.mem));
  }

 private:
  static constexpr size_t kMaxFreeBytes = size_t{1} << 30;
  std::mutex mu_;
  std::multimap<size_t, Memory> free_;
  size_t free_bytes_ = 0;
};

}  // namespace quilt::rt
