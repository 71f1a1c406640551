#pragma once
// One tier of a Clos fabric, from a vendor's design: the nodes below one switch layer.
// The leaf (or top-of-rack) switches join the first tier's groups of `nodes` nodes, the
// next layer the second tier's groups, and so on; one layer above the last tier joins
// its groups. The links leaving a group for the layer above carry 1 / `oversubscription`
// of what the group's NICs can send: 1:7 between Llama 3's 3,072-GPU pods (Dubey et al.
// 2024, section 3.3.1), 1 in a DGX SuperPOD's non-blocking spine. Groups nest: a tier's
// group size is a multiple of the one below.
//
// A flow between nodes of different groups climbs its source's group links to the
// lowest layer that joins both and comes down the destination's: each layer below that
// one is crossed twice (once on each side), that one once, so a group link carries half
// of the layer it leaves and half of the layer it reaches.
#include <string>

namespace memwall {

struct NetworkTier {
  std::string name;               // "rack", "pod": how links and errors name it
  int nodes               = 1;    // nodes in one group of this tier
  double oversubscription = 1.0;  // of the links from a group to the layer above
  double switch_latency_s = 1e-6; // a switch of the layer above this tier's groups
};

} // namespace memwall
