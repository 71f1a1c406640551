// cudaMemPrefetchAsync of every managed allocation as soon as it exists: what fits stays
// resident; what is evicted later is faulted back in on demand.
#include "sim/paging/PrefetchPolicy.hpp"

namespace memwall {
namespace {

class WholePrefetch : public PrefetchPolicy {
public:
  bool at_alloc() const override { return true; }
  int kernels_ahead() const override { return 0; }
};

const bool registered = prefetch_registry().add(
    "whole", "each managed allocation migrated in bulk when it is made; evicted pages fault back on demand",
    [] { return std::make_unique<WholePrefetch>(); });

} // namespace
} // namespace memwall
