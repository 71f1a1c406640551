// ZeRO-3 / FSDP parameter gathering. Every use of a block (its forward, or its
// backward, in each micro-batch) needs the block's full parameters: a workspace buffer
// is allocated on the gather stream and all-gathered from the dp shards (after an
// NVMe -> host -> GPU fetch of this rank's shard under ZeRO-Infinity), and freed after
// the use. With prefetch depth k the gather for use i waits only for use i-1-k to free
// its buffer, so it overlaps use i-1's compute when k >= 1 and at most k + 1 buffers
// are alive; with k = 0 it starts when use i-1 is done and is exposed.
#include "workloads/training/TrainingStepGenerator.hpp"
#include "workloads/training/schedule/PipelineSchedule.hpp"

#include <algorithm>
#include <stdexcept>

namespace memwall {

void TrainingStepGenerator::plan_gathers()
{
  if (cfg_.zero != 3)
    return;
  // ZeRO-3 runs without pipeline parallelism (checked when the spec is read): one stage.
  const auto& schedule = cfg_.pipeline_schedule;
  const auto& chunk    = stages_.at(0).chunks.at(0);
  for (const PipelineSlot& s : schedule->order(0, 1, 1, cfg_.micro_batches())) {
    if (s.forward)
      uses_.insert(uses_.end(), chunk.begin(), chunk.end());
    else
      uses_.insert(uses_.end(), chunk.rbegin(), chunk.rend());
    use_forward_.resize(uses_.size(), s.forward);
  }
  gathers_.resize(uses_.size());
  if (per_tensor_gathers())
    plan_tensor_fetches();
}

OpId TrainingStepGenerator::gathered(int b)
{
  if (cfg_.zero != 3)
    return OpDag::none;
  size_t upto = std::min(uses_.size() - 1, next_use_ + static_cast<size_t>(cfg_.zero_prefetch));
  for (; gathers_emitted_ <= upto; ++gathers_emitted_) {
    size_t j         = gathers_emitted_;
    Gather& g        = gathers_[j];
    int blk_index    = uses_[j];
    const Block& blk = blocks_[blk_index];
    if (blk.plan.params <= 0)
      continue;
    Stage& s    = stage_of(blk_index);
    size_t k    = static_cast<size_t>(cfg_.zero_prefetch);
    OpId after  = j >= k + 1 ? gathers_[j - 1 - k].freed : OpDag::none;
    double full = (blk.plan.params - persistent_params(blk_index)) *
                  (state_bytes_.gathered > 0 ? state_bytes_.gathered : weight_bytes_per_param());
    if (full <= 0) // every tensor persistent (TensorFetch.cpp): nothing to gather
      continue;
    // "L3.use41.all_gather": numbered names, so that uses add none to the table.
    const std::string prefix = blk.plan.name + ".use";
    auto name                = [&](const char* what) { return OpName(prefix, static_cast<uint64_t>(j), what); };
    StreamKind stream        = zero_stream(StreamKind::gather);
    g.buffer  = dag_.alloc(s.gpu, stream, s.gpu, MemCategory::workspace, full, name(".gathered_params"), {after});
    OpId last = dag_.last_alloc_or_free();
    double shard_bytes = full / static_cast<double>(cfg_.replicas());
    if (cfg_.offload_params == OffloadTarget::nvme)
      last = dag_.add(copy_op(s.gpu, stream, s.nvme, s.host, shard_bytes, name(".shard_from_nvme")), {last});
    if (cfg_.offload_params != OffloadTarget::none)
      last = dag_.add(host_copy_op(s.gpu, stream, s.host, s.gpu, shard_bytes, name(".shard_h2d"), cfg_.offload_pinned),
                      {last});
    if (s.dp_group >= 0 && !fetches_.empty())
      last = gather_tensors(s, j, last);
    else if (s.dp_group >= 0)
      last = dag_.add(
          collective_op(s.gpu, StreamKind::gather, CollectiveKind::all_gather, s.dp_group, full, name(".all_gather")),
          {last});
    g.ready = last;
  }
  if (uses_.at(next_use_) != b)
    throw std::logic_error("ZeRO-3 gather order does not follow the schedule");
  return gathers_[next_use_].ready;
}

void TrainingStepGenerator::release_gather()
{
  if (cfg_.zero != 3)
    return;
  Gather& g = gathers_[next_use_++];
  if (g.buffer.id != 0)
    g.freed = dag_.free(g.buffer, stage_of(uses_[next_use_ - 1]).gpu, StreamKind::compute,
                        blocks_[uses_[next_use_ - 1]].plan.name + ".free_gathered_params");
}

} // namespace memwall
