// What each kernel of a serving iteration touches, for unified memory (OpDag::touch).
// The weights tensor holds the layers one after another, then the embedding and head:
//
//   weights  [ L0 | L1 | ... | L(n-1) | embedding / head ]
//
// A layer's GEMMs read their slice of its weights, sized by their share of its GEMM
// FLOPs (2 x tokens x parameters each); the embedding reads its rows (the kernel's
// traffic), the head its matrix at the end. Every kernel reads and writes the part of
// the iteration's activation workspace that its traffic beyond weights covers.
#include "workloads/inference/ServingDriver.hpp"

#include <algorithm>

namespace memwall {

void ServingDriver::touch_weights(OpId k, double offset, double bytes)
{
  dag_.touch(k, weights_, std::min(bytes, weights_.bytes - offset), false, offset);
}

void ServingDriver::touch_activations(OpId k, double bytes) { dag_.touch(k, act_, std::min(bytes, act_.bytes), true); }

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
  // Attention reads its layer's keys and values from every slab of a managed KV cache
  // (each slab holds all layers of its tokens) and writes the new tokens'.
  double kv_read = 0;
  if (part == 1)
    for (const Tensor& slab : kv_slabs_) {
      double slice = slab.bytes / static_cast<double>(model_.layers);
      dag_.touch(k, slab, slice, true, slice * static_cast<double>(layer));
      kv_read += slice;
    }
  touch_activations(k, std::max(0.0, c.bytes - read - kv_read));
}

void ServingDriver::resize_managed_kv(double gpu_bytes, OpId after)
{
  kv_gpu_bytes_ = std::max(0.0, gpu_bytes);
  double held   = kv_slab_bytes * static_cast<double>(kv_slabs_.size());
  while (held < kv_gpu_bytes_) {
    kv_slabs_.push_back(
        dag_.alloc(gpu_, StreamKind::compute, gpu_, MemCategory::kv_cache, kv_slab_bytes, "kv.slab", {after}));
    held += kv_slab_bytes;
  }
  while (!kv_slabs_.empty() && held - kv_slab_bytes >= kv_gpu_bytes_) {
    dag_.free(kv_slabs_.back(), gpu_, StreamKind::compute, "kv.slab", {after});
    kv_slabs_.pop_back();
    held -= kv_slab_bytes;
  }
}

} // namespace memwall
