#pragma once
// The tensors each (block, micro-batch) keeps from its forward until its backward frees
// them: per kernel what its forward saved (SavedActivations says how much), what a
// recompute brings back beside it, and under full recompute the layer's kept input.
// A repeated forward (PipelineSlots: a slot added again as a stored chain) keeps its
// stored slot's tensors, which a verified repeat never changes: they are pointed to,
// and copied only for a backward that is emitted op by op (of); a repeated backward
// just forgets them.
#include "workloads/dag/OpDag.hpp"

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace memwall {

class SavedTensors {
public:
  // Block b's forward in micro-batch mb: one empty entry per kernel, to fill.
  std::vector<Tensor>& start(int b, int64_t mb, size_t kernels);
  // What that forward saved.
  std::vector<Tensor>& of(int b, int64_t mb);
  // Kernel i's saved inputs that a recompute brings back beside what a per-op policy kept.
  Tensor& regenerated(int b, int64_t mb, size_t i, size_t kernels);
  const std::vector<Tensor>* regenerated_of(int b, int64_t mb) const; // null: none
  // Full recompute: the layer's kept input ({} when none).
  void keep_checkpoint(int b, int64_t mb, const Tensor& t);
  Tensor checkpoint(int b, int64_t mb) const;
  // A repeated forward's tensors: its stored slot's.
  void repeat(int b, int64_t mb, const std::vector<Tensor>* saved, const Tensor& checkpoint);
  // After the backward (which freed what it had to): nothing is kept any more.
  void forget(int b, int64_t mb);

private:
  // One (block, micro-batch)'s tensors: one entry, so that a pass looks it up once and
  // forgets it with one erase (65,536 passes in Megatron 1T's step).
  struct Kept {
    std::vector<Tensor> saved;                     // per kernel
    const std::vector<Tensor>* repeated = nullptr; // a repeated forward's, not yet copied into `saved`
    std::vector<Tensor> regenerated;               // per kernel, or none
    Tensor checkpoint;
  };
  std::unordered_map<uint64_t, Kept> kept_;
};

} // namespace memwall
