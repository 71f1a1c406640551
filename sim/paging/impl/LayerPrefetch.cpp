// cudaMemPrefetchAsync of a kernel's tensors before it runs and of the next kernel's
// while it runs: the layer-by-layer prefetch a framework issues ahead of use.
#include "sim/paging/PrefetchPolicy.hpp"

namespace memwall {
namespace {

class LayerPrefetch : public PrefetchPolicy {
public:
  bool at_alloc() const override { return false; }
  int kernels_ahead() const override { return 2; }
};

const bool registered = prefetch_registry().add(
    "layer", "each kernel's tensors migrated in bulk before it, the next kernel's while it runs",
    [] { return std::make_unique<LayerPrefetch>(); });

} // namespace
} // namespace memwall
