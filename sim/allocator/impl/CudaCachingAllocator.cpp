// `caching`: PyTorch's CUDA caching allocator with its default settings, as
// c10/cuda/CUDACachingAllocator.cpp implements it (PyTorch 2.x, no PYTORCH_CUDA_ALLOC_CONF):
//
// - sizes round up to 512 B; requests of up to 1 MiB come from the small pool, whose
//   segments are 2 MiB, larger ones from the large pool: under 10 MiB a 20 MiB segment,
//   from 10 MiB the size rounded up to 2 MiB;
// - a request takes the smallest cached free block that holds it (ties: the lowest
//   address), and splits it when what remains is at least 512 B (small pool) or more
//   than 1 MiB (large pool); with none, it cudaMallocs a new segment;
// - a freed block merges with free neighbours of its segment and stays cached;
// - when cudaMalloc fails, every cached segment with no live block is freed
//   (release_cached_blocks) and the cudaMalloc tried again; only then is it out of memory.
//
// One stream's pool: the replay's tensors all live on the compute stream's pool, as a
// step's do in eager PyTorch (tensors a side stream frees are record_stream'ed back).
#include "sim/allocator/DeviceAllocator.hpp"

#include <cmath>
#include <deque>
#include <set>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace memwall {
namespace {

constexpr int64_t kMinBlockSize  = 512;
constexpr int64_t kSmallSize     = 1 << 20;
constexpr int64_t kSmallBuffer   = 2 << 20;
constexpr int64_t kLargeBuffer   = 20 << 20;
constexpr int64_t kMinLargeAlloc = 10 << 20;
constexpr int64_t kRoundLarge    = 2 << 20;

int64_t round_size(double bytes)
{
  int64_t b = static_cast<int64_t>(std::ceil(bytes));
  return b < kMinBlockSize ? kMinBlockSize : kMinBlockSize * ((b + kMinBlockSize - 1) / kMinBlockSize);
}

int64_t allocation_size(int64_t size)
{
  if (size <= kSmallSize)
    return kSmallBuffer;
  if (size < kMinLargeAlloc)
    return kLargeBuffer;
  return kRoundLarge * ((size + kRoundLarge - 1) / kRoundLarge);
}

class CudaCachingAllocator : public DeviceAllocator {
public:
  double needs(double bytes) const override
  {
    if (bytes <= 0)
      return 0;
    int64_t size = round_size(bytes);
    return find(size) >= 0 ? 0.0 : static_cast<double>(allocation_size(size));
  }

  void alloc(uint32_t tensor, double bytes) override
  {
    if (bytes <= 0)
      return; // torch hands out no memory for an empty tensor
    int64_t size = round_size(bytes);
    int b        = find(size);
    if (b >= 0) {
      pool(blocks_[b].small).erase(key(b));
    } else {
      b = make_block(next_address_, allocation_size(size), size <= kSmallSize);
      next_address_ += blocks_[b].size;
      reserved_ += static_cast<double>(blocks_[b].size);
    }
    if (should_split(blocks_[b], size)) {
      int rest           = make_block(blocks_[b].address + size, blocks_[b].size - size, blocks_[b].small);
      blocks_[rest].prev = b;
      blocks_[rest].next = blocks_[b].next;
      if (blocks_[b].next >= 0)
        blocks_[blocks_[b].next].prev = rest;
      blocks_[b].next = rest;
      blocks_[b].size = size;
      pool(blocks_[rest].small).insert(key(rest));
    }
    blocks_[b].live = true;
    allocated_ += static_cast<double>(blocks_[b].size);
    live_[tensor].push_back(b);
  }

  void free(uint32_t tensor, double bytes) override
  {
    if (bytes <= 0)
      return;
    auto it = live_.find(tensor);
    if (it == live_.end() || it->second.empty())
      return; // freed without an alloc: nothing this allocator served
    int b = it->second.front();
    it->second.pop_front();
    if (it->second.empty())
      live_.erase(it);
    allocated_ -= static_cast<double>(blocks_[b].size);
    blocks_[b].live = false;
    for (int n : {blocks_[b].prev, blocks_[b].next})
      if (n >= 0 && !blocks_[n].live)
        b = merge(b, n);
    pool(blocks_[b].small).insert(key(b));
  }

  void release_cached() override
  {
    for (auto* p : {&small_, &large_})
      for (auto it = p->begin(); it != p->end();) {
        int b = std::get<2>(*it);
        if (blocks_[b].prev < 0 && blocks_[b].next < 0) { // a whole segment, free
          reserved_ -= static_cast<double>(blocks_[b].size);
          spare_.push_back(b);
          it = p->erase(it);
        } else {
          ++it;
        }
      }
  }

  double reserved() const override { return reserved_; }
  double allocated() const override { return allocated_; }

private:
  struct Block {
    int64_t address = 0, size = 0;
    int prev = -1, next = -1; // neighbours in the segment
    bool small = false, live = false;
  };
  using Key = std::tuple<int64_t, int64_t, int>; // size, address, block

  std::set<Key>& pool(bool small) { return small ? small_ : large_; }
  Key key(int b) const { return {blocks_[b].size, blocks_[b].address, b}; }

  // The smallest cached block of the request's pool that holds `size`; -1 if none.
  int find(int64_t size) const
  {
    const std::set<Key>& p = size <= kSmallSize ? small_ : large_;
    auto it                = p.lower_bound({size, INT64_MIN, -1});
    return it == p.end() ? -1 : std::get<2>(*it);
  }

  static bool should_split(const Block& b, int64_t size)
  {
    int64_t remaining = b.size - size;
    return b.small ? remaining >= kMinBlockSize : remaining > kSmallSize;
  }

  int make_block(int64_t address, int64_t size, bool small)
  {
    int b;
    if (!spare_.empty()) {
      b = spare_.back();
      spare_.pop_back();
    } else {
      b = static_cast<int>(blocks_.size());
      blocks_.emplace_back();
    }
    blocks_[b]         = Block{};
    blocks_[b].address = address;
    blocks_[b].size    = size;
    blocks_[b].small   = small;
    return b;
  }

  // Joins free neighbour `n` (cached: out of its pool) into `b`; returns the survivor.
  int merge(int b, int n)
  {
    pool(blocks_[n].small).erase(key(n));
    int first  = blocks_[b].address < blocks_[n].address ? b : n;
    int second = first == b ? n : b;
    blocks_[first].size += blocks_[second].size;
    blocks_[first].next = blocks_[second].next;
    if (blocks_[second].next >= 0)
      blocks_[blocks_[second].next].prev = first;
    spare_.push_back(second);
    return first;
  }

  std::vector<Block> blocks_;
  std::vector<int> spare_;
  std::set<Key> small_, large_;
  std::unordered_map<uint32_t, std::deque<int>> live_;
  int64_t next_address_ = 0;
  double reserved_ = 0, allocated_ = 0;
};

const bool registered = allocator_registry().add(
    "caching",
    "PyTorch's CUDA caching allocator with default settings: 2 MiB segments for requests up to 1 MiB, 20 MiB up to "
    "10 MiB, larger rounded to 2 MiB; best fit, split, merged on free, kept until a cudaMalloc fails",
    [] { return std::make_unique<CudaCachingAllocator>(); });

} // namespace
} // namespace memwall
