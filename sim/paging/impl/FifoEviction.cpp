// The driver's order (nvidia-uvm, uvm_pmm_gpu.c): root chunks are listed as they are
// allocated and the oldest is evicted first; a kernel using a chunk does not move it.
#include "sim/paging/ChunkQueue.hpp"
#include "sim/paging/EvictionPolicy.hpp"

namespace memwall {
namespace {

class FifoEviction : public EvictionPolicy {
public:
  void resident(int chunk) override { order_.push_back(chunk); }
  void touched(int) override {}
  void gone(int chunk) override { order_.erase(chunk); }
  int victim() const override { return order_.front(); }

private:
  ChunkQueue order_;
};

const bool registered = eviction_registry().add(
    "fifo", "the CUDA driver's: oldest chunk made resident leaves first, use does not count (default)",
    [] { return std::make_unique<FifoEviction>(); });

} // namespace
} // namespace memwall
