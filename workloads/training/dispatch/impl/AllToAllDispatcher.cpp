// `alltoall` (Megatron-Core's MoEAlltoAllTokenDispatcher): each of a rank's token-expert
// pairs goes to the rank holding the expert, one all-to-all over the ep group whose
// buffer is the pairs the busiest rank receives.
#include "workloads/training/dispatch/TokenDispatcher.hpp"

namespace memwall {
namespace {

class AllToAllDispatcher : public TokenDispatcher {
public:
  std::vector<DispatchHop> hops(const DispatchShape& s) const override
  {
    const double bytes = s.tokens * s.busiest_pairs * s.row_bytes;
    return {{DispatchGroup::ep, bytes, bytes}};
  }
};

const bool registered = token_dispatcher_registry().add(
    "alltoall", "every token-expert pair sent on its own: one all-to-all over the ep group (Megatron-Core)",
    [](ParamReader&) { return std::make_unique<AllToAllDispatcher>(); });

} // namespace
} // namespace memwall
