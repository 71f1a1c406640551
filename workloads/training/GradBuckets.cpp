#include "workloads/training/GradBuckets.hpp"

#include "workloads/training/StepBuild.hpp"

#include <array>

namespace memwall {

std::vector<GradBucket> grad_buckets(const StepBuild& step, int stage)
{
  const StepStage& s = step.stages[static_cast<size_t>(stage)];
  std::vector<GradBucket> out;
  std::array<int, 2> next_index{0, 0};
  for (size_t c = s.chunks.size(); c-- > 0;) {
    const bool bucketed = step.stack->buckets_gradients(stage, static_cast<int64_t>(c));
    std::array<GradBucket, 2> open;
    auto close = [&](size_t lane) {
      GradBucket& b = open[lane];
      if (b.blocks.empty())
        return;
      b.lane  = lane;
      b.chunk = static_cast<int64_t>(c);
      b.index = next_index[lane]++;
      out.push_back(std::move(b));
      b = GradBucket{};
    };
    const auto& blocks = s.chunks[c];
    for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) {
      const StepBlock& blk = step.blocks[static_cast<size_t>(*it)];
      if (blk.plan.params <= 0)
        continue;
      auto [dense, experts] = step.dense_and_experts(*it, blk.plan.params * step.state_bytes.gradients);
      const double parts[2] = {dense, experts};
      for (size_t l = 0; l < 2; ++l) {
        if (parts[l] <= 0)
          continue;
        open[l].bytes += parts[l];
        open[l].blocks.push_back(*it);
        if (bucketed && open[l].bytes >= step.cfg.bucket_bytes)
          close(l);
      }
    }
    close(0);
    close(1);
  }
  return out;
}

std::string bucket_name(const StepBuild& step, int stage, const GradBucket& bucket)
{
  return (step.cfg.pp > 1 ? "stage" + std::to_string(stage) + "." : std::string()) +
         (step.cfg.zero == 0 ? "ddp" : "zero1") + (bucket.lane == 1 ? ".expert_bucket" : ".bucket") +
         std::to_string(bucket.index);
}

} // namespace memwall
