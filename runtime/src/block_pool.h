// Memory blocks kept between runs (see BlockPool).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

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
        // The map's node is kept for the next Give: taking and giving back do not allocate.
        auto node = free_.extract(it);
        Block b{std::move(node.mapped()), node.key()};
        free_bytes_ -= b.size;
        spare_.push_back(std::move(node));
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
    if (spare_.empty()) {
      free_.emplace(b.size, std::move(b.mem));
      return;
    }
    auto node = std::move(spare_.back());
    spare_.pop_back();
    node.key() = b.size;
    node.mapped() = std::move(b.mem);
    free_.insert(std::move(node));
  }

 private:
  static constexpr size_t kMaxFreeBytes = size_t{1} << 30;
  std::mutex mu_;
  std::multimap<size_t, Memory> free_;
  std::vector<std::multimap<size_t, Memory>::node_type> spare_;  // emptied nodes of free_
  size_t free_bytes_ = 0;
};

}  // namespace quilt::rt
