#pragma once
// How an MoE layer's tokens travel to the ranks holding their experts and back: the
// hops of the dispatch, each a collective among some of the ep group's ranks; the
// combine takes them in reverse. One interface, implementations in impl/ registered by
// name and chosen by `training.moe_dispatcher`:
//   alltoall  Megatron-Core's all-to-all dispatcher: every token-expert pair sent on
//             its own, one all-to-all over the ep group;
//   deepep    DeepEP's normal kernels (DeepSeek-V3 §3.2.2): a token crosses to each
//             node holding one of its experts once, then is forwarded over NVLink to
//             those experts' GPUs; with group-limited routing it touches at most
//             groups_per_token nodes. Tokens go out in FP8 when the experts compute
//             in FP8 and come back in 16 bits (§3.3.2).
#include "base/Registry.hpp"
#include "workloads/model/ModelSpec.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace memwall {

// Which ranks a hop's collective spans.
enum class DispatchGroup : uint8_t {
  ep,      // the whole ep group
  ep_node, // the ep ranks on this rank's node
};

struct DispatchHop {
  DispatchGroup group   = DispatchGroup::ep;
  double bytes          = 0; // the buffer each rank holds in the all-to-all, combine direction
  double dispatch_bytes = 0; // the same toward the experts (FP8 where the dispatcher quantizes)
};

struct DispatchShape {
  MoeSpec moe;
  double tokens    = 0; // tokens one rank routes (T / tp under sequence parallelism)
  double row_bytes = 0; // one token's hidden state: hidden x bytes per element
  // The same in FP8 with a 32-bit scale per 128 elements (1.03125 bytes each) when the
  // experts' GEMMs run in FP8, else row_bytes; for a dispatcher that quantizes.
  double fp8_row_bytes = 0;
  double busiest_pairs = 0; // token-expert pairs the busiest rank receives per token of a rank
  int64_t ep           = 1;
  int64_t ep_nodes     = 1; // nodes the ep group spans, as many ranks on each (1: inside one node)
};

class TokenDispatcher : public Implementation {
public:
  virtual std::vector<DispatchHop> hops(const DispatchShape& s) const = 0;
};

// Reads the dispatcher's own keys from the `training` section (none so far).
using TokenDispatcherFactory = std::function<std::unique_ptr<TokenDispatcher>(ParamReader& training)>;
Registry<TokenDispatcherFactory>& token_dispatcher_registry();
// The dispatcher called `name` (the registry's default when empty) with its defaults.
std::shared_ptr<const TokenDispatcher> default_token_dispatcher(const std::string& name = "");

} // namespace memwall
