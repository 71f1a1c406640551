// What each kernel of a serving iteration touches, for unified memory (OpDag::touch).
// The weights tensor holds the layers one after another, then the embedding and head:
//
//   weights  [ L0 | L1 | ... | L(n-1) | embedding / head ]
//
// A layer's GEMMs read their slice of its weights, sized by their share of its GEMM
// FLOPs (2 x tokens x parameters each); the embedding reads its rows (the kernel's
// traffic), the head its matrix at the end. Every kernel reads and writes the part of
// the iteration's activation workspace that its traffic beyond weights covers.
#include "ServingDriver.hpp"

#include <algorithm>

namespace memwall {

void ServingDriver::touch_weights(OpId k, double offset, double bytes)
{
  dag_.touch(k, weights_, std::min(bytes, weights_.bytes - offset), false, offset);
}

void ServingDriver::touch_activations(OpId k, double bytes)
{
  dag_.touch(k, act_, std::min(bytes, act_.bytes), true);
}

void ServingDriver::touch_edge(OpId k, const KernelCost& c, bool head)
{
  if (!dag_.tracks_accesses())
    return;
  double layers = kernels_.layer_weight_bytes() * static_cast<double>(model_.layers);
  double rest   = std::max(0.0, weights_.bytes - layers);
  double read   = std::min(c.bytes, rest);
  touch_weights(k, head ? weights_.bytes - read : layers, read);
  touch_activations(k, std::max(0.0, c.bytes - read));
}

void ServingDriver::touch_layer(OpId k, const LayerKernels& lk, int64_t layer, const KernelCost& c, int part)
{
  if (!dag_.tracks_accesses())
    return;
  // part: 0 qkv, 1 attention (no weights), 2 proj, 3 mlp, 4 proj and mlp fused.
  double qkv = lk.qkv.flops, proj = lk.proj.flops, mlp = lk.mlp.flops, total = qkv + proj + mlp;
  double from = 0, share = 0;
  switch (part) {
    case 0: share = qkv; break;
    case 2: from = qkv, share = proj; break;
    case 3: from = qkv + proj, share = mlp; break;
    case 4: from = qkv, share = proj + mlp; break;
    default: break;
  }
  double layer_w = kernels_.layer_weight_bytes();
  double read    = total > 0 ? layer_w * share / total : 0.0;
  if (read > 0)
    touch_weights(k, layer_w * static_cast<double>(layer) + (total > 0 ? layer_w * from / total : 0.0), read);
  touch_activations(k, std::max(0.0, c.bytes - read));
}

} // namespace memwall
