// Plain unified memory: every page a kernel touches away from the GPU is faulted in.
#include "sim/paging/PrefetchPolicy.hpp"

namespace memwall {
namespace {

class NoPrefetch : public PrefetchPolicy {
public:
  bool at_alloc() const override { return false; }
  int kernels_ahead() const override { return 0; }
};

const bool registered = prefetch_registry().add("none", "no hints: kernels fault pages in on demand (default)",
                                                [] { return std::make_unique<NoPrefetch>(); });

} // namespace
} // namespace memwall
