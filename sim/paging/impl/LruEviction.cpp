// Least recently used: what a driver tracking accesses would do; against the driver's
// FIFO it shows how much of a slowdown is the eviction order's.
#include "sim/paging/ChunkQueue.hpp"
#include "sim/paging/EvictionPolicy.hpp"

namespace memwall {
namespace {

class LruEviction : public EvictionPolicy {
public:
  void resident(int chunk) override { order_.push_back(chunk); }
  void touched(int chunk) override { order_.push_back(chunk); }
  void gone(int chunk) override { order_.erase(chunk); }
  int victim() const override { return order_.front(); }

private:
  ChunkQueue order_;
};

const bool registered = eviction_registry().add("lru", "least recently used chunk leaves first",
                                                [] { return std::make_unique<LruEviction>(); });

} // namespace
} // namespace memwall
