#include "workloads/training/ParamGather.hpp"

#include "workloads/training/SavedActivations.hpp"
#include "workloads/training/schedule/PipelineSchedule.hpp"

#include <stdexcept>
#include <utility>

namespace memwall {

double ParamGather::persistent_params(int b) const
{
  return step_.cfg.zero == 3 ? step_.stack->persistent_elements(step_.blocks[b].plan.tensors) : 0.0;
}

void ParamGather::plan()
{
  const TrainingConfig& cfg = step_.cfg;
  if (step_.weights_gathered_in_forward())
    plan_updated_weights();
  if (cfg.zero != 3)
    return;
  const SavedActivations policy(cfg.recompute);
  bool by_tensor = false;
  for (const StepBlock& b : step_.blocks)
    by_tensor = by_tensor || !b.plan.tensors.empty(); // gathered tensor by tensor, as the stack plans it
  stage_uses_.assign(step_.stages.size(), {});
  for (size_t p = 0; p < step_.stages.size(); ++p) {
    StageUses& u = stage_uses_[p];
    const auto order =
        cfg.pipeline_schedule->order(static_cast<int64_t>(p), cfg.pp, cfg.virtual_stages, cfg.micro_batches());
    for (size_t slot = 0; slot < order.size(); ++slot) {
      const PipelineSlot& s = order[slot];
      const auto& chunk     = step_.stages[p].chunks.at(static_cast<size_t>(s.chunk));
      auto add              = [&](int b) {
        const BlockPlan& pl = step_.blocks[b].plan;
        u.uses.push_back(
                         {&pl.tensors, b, s.forward, !s.forward && policy.checkpoints(pl), pl.params - persistent_params(b), slot});
      };
      if (s.forward)
        for (int b : chunk)
          add(b);
      else
        for (auto it = chunk.rbegin(); it != chunk.rend(); ++it)
          add(*it);
    }
    u.plan = step_.stack->plan_gathers(u.uses, cfg);
    check_plan(u);
    u.buffers.resize(u.uses.size());
    if (by_tensor)
      u.fetches = step_.stack->plan_fetches(u.uses);
  }
}

void ParamGather::plan_updated_weights()
{
  chains_.assign(step_.stages.size(), {});
  in_chain_.assign(step_.blocks.size(), {Chain::none, Chain::none});
  for (size_t p = 0; p < step_.stages.size(); ++p) {
    const StepStage& s                  = step_.stages[p];
    auto& chains                        = chains_[p];
    const std::vector<GradBucket>& plan = s.buckets;
    // Megatron's order (DistributedOptimizer._get_model_param_buffer_dp_views): model
    // chunk by chunk, a buffer's buckets reversed (bucket 0 holds the last layers). The
    // routed experts' buffers are another optimizer's (get_megatron_optimizer chains
    // two), with a chain of their own.
    for (int64_t c = 0; c < static_cast<int64_t>(s.chunks.size()); ++c)
      for (size_t lane = 0; lane < 2; ++lane)
        for (auto it = plan.rbegin(); it != plan.rend(); ++it)
          if (it->chunk == c && it->lane == lane && s.reduce_groups[lane] >= 0) {
            for (int blk : it->blocks)
              in_chain_[static_cast<size_t>(blk)][lane] = chains[lane].buckets.size();
            chains[lane].buckets.push_back(&*it);
          }
    // The first all-gather of each chain is issued by zero_grad, before the forward.
    for (size_t lane = 0; lane < 2; ++lane)
      if (!chains[lane].buckets.empty())
        issue_updated(static_cast<int>(p), lane);
  }
}

void ParamGather::issue_updated(int stage, size_t lane)
{
  Chain& c             = chains_[static_cast<size_t>(stage)][lane];
  const GradBucket& b  = *c.buckets[c.issued.size()];
  const StepStage& s   = step_.stages[static_cast<size_t>(stage)];
  const double weights = b.bytes * step_.state_bytes.weights / step_.state_bytes.gradients;
  OpDag& dag           = step_.dag;
  // After the one before it, and after what the compute stream has been given so far:
  // ProcessGroupNCCL makes its stream wait for the current stream when it is issued.
  OpId after = c.issued.empty() ? OpDag::none : c.issued.back();
  OpId tail  = dag.stream_tail(s.gpu, StreamKind::compute);
  c.issued.push_back(dag.add(collective_op(s.gpu, StreamKind::comm, CollectiveKind::all_gather, s.reduce_groups[lane],
                                           weights, bucket_name(step_, stage, b) + ".updated_weights.all_gather"),
                             {after, tail}));
  c.sequence.push_back(++issued_updates_);
}

OpId ParamGather::updated_weights(int b)
{
  std::array<size_t, 2>& where = in_chain_[static_cast<size_t>(b)];
  const int stage              = step_.blocks[static_cast<size_t>(b)].stage;
  OpId wait                    = OpDag::none;
  uint64_t latest              = 0;
  for (size_t lane = 0; lane < 2; ++lane) {
    const size_t k = std::exchange(where[lane], Chain::none);
    if (k == Chain::none)
      continue;
    Chain& c = chains_[static_cast<size_t>(stage)][lane];
    // The bucket's first block to run forward: its pre-hook waits for this bucket's
    // all-gather and issues the next bucket's.
    if (c.issued.size() == k + 1 && k + 1 < c.buckets.size())
      issue_updated(stage, lane);
    // Both chains run on the one comm stream: the one issued last follows the other.
    if (c.sequence[k] > latest) {
      latest = c.sequence[k];
      wait   = c.issued[k];
    }
  }
  return wait;
}

void ParamGather::check_plan(const StageUses& u) const
{
  const GatherPlan& plan            = u.plan;
  const std::vector<ParamUse>& uses = u.uses;
  auto refuse                       = [&](const std::string& why) {
    throw std::logic_error("training stack " + step_.stack->name() + "'s ZeRO-3 gather plan: " + why);
  };
  if (plan.size() != uses.size())
    refuse(std::to_string(plan.size()) + " entries for " + std::to_string(uses.size()) + " uses");
  size_t issued = 0;
  for (size_t j = 0; j < plan.size(); ++j) {
    const UseGather& g = plan[j];
    const size_t from  = g.buffer;
    auto at            = [&](const char* why) { refuse("use " + std::to_string(j) + why); };
    if (from == UseGather::none)
      continue;
    if (from != j) { // reads the buffer an earlier use of its block keeps
      if (from > j || plan[from].buffer != from || plan[from].freed_after < j || uses[from].block != uses[j].block)
        at(" reads no buffer of its block alive");
      continue;
    }
    // Gathers are issued in the order of uses, each by its own use at the latest, after
    // the free it waits for, and freed once it has run.
    if (uses[j].elements <= 0 || g.issued_at > j || g.issued_at < issued || g.freed_after < j ||
        g.freed_after >= plan.size())
      at(" gathers out of order, nothing, or into a buffer freed before it runs");
    const size_t w = g.waits_for;
    if (w != UseGather::none && (w >= j || plan[w].buffer != w || plan[w].freed_after >= g.issued_at))
      at(" waits for a free not issued before its gather");
    issued = g.issued_at;
  }
}

OpId ParamGather::gathered(int b)
{
  if (!in_chain_.empty()) // only the block's first use, its first forward, waits
    return updated_weights(b);
  if (step_.cfg.zero != 3)
    return OpDag::none;
  StageUses& u = stage_uses_[static_cast<size_t>(step_.blocks[b].stage)];
  for (; u.issued < u.plan.size(); ++u.issued)
    if (u.plan[u.issued].buffer == u.issued) {
      if (u.plan[u.issued].issued_at > u.next_use)
        break;
      emit(u, u.issued);
    }
  if (u.uses.at(u.next_use).block != b)
    throw std::logic_error("ZeRO-3 gather order does not follow the schedule");
  const size_t from = u.plan[u.next_use].buffer;
  return from == UseGather::none ? OpDag::none : u.buffers[from].ready;
}

void ParamGather::emit(StageUses& u, size_t j)
{
  const TrainingConfig& cfg = step_.cfg;
  OpDag& dag                = step_.dag;
  const int b               = static_cast<int>(u.uses[j].block);
  const StepBlock& blk      = step_.blocks[b];
  const StepStage& s        = step_.stage_of(b);
  const size_t w            = u.plan[j].waits_for;
  Buffer& g                 = u.buffers[j];
  OpId after                = w == UseGather::none ? OpDag::none : u.buffers[w].freed;
  OpId compute              = u.plan[j].after_compute ? dag.stream_tail(s.gpu, StreamKind::compute) : OpDag::none;
  double full               = u.uses[j].elements * step_.gathered_bytes_per_param();
  // "L3.use41.all_gather": numbered names, so that uses add none to the table.
  const std::string prefix = blk.plan.name + ".use";
  auto name                = [&](const char* what) { return OpName(prefix, static_cast<uint64_t>(j), what); };
  StreamKind stream        = step_.zero_stream(StreamKind::gather);
  g.buffer  = dag.alloc(s.gpu, stream, s.gpu, MemCategory::workspace, full, name(".gathered_params"), {after, compute});
  OpId last = dag.last_alloc_or_free();
  double shard_bytes = full / static_cast<double>(cfg.replicas());
  if (cfg.offload_params == OffloadTarget::nvme)
    last = dag.add(copy_op(s.gpu, stream, s.nvme, s.host, shard_bytes, name(".shard_from_nvme")), {last});
  if (cfg.offload_params != OffloadTarget::none)
    last = dag.add(host_copy_op(s.gpu, stream, s.host, s.gpu, shard_bytes, name(".shard_h2d"), cfg.offload_pinned),
                   {last});
  if (s.dp_group >= 0 && !u.fetches.empty())
    last = gather_tensors(u, s, j, last);
  else if (s.dp_group >= 0)
    last = dag.add(
        collective_op(s.gpu, StreamKind::gather, CollectiveKind::all_gather, s.dp_group, full, name(".all_gather")),
        {last});
  g.ready = last;
  u.held.push_back(j);
}

OpId ParamGather::gather_tensors(const StageUses& u, const StepStage& s, size_t use, OpId after)
{
  const StepBlock& blk = step_.blocks[static_cast<size_t>(u.uses[use].block)];
  const double gb      = step_.gathered_bytes_per_param();
  StreamKind stream    = step_.zero_stream(StreamKind::gather);
  OpId last            = after;
  for (const auto& [t, elements] : u.fetches[use])
    last = calls_.issue(s, stream, CollectiveKind::all_gather, elements * gb,
                        {blk.plan.name + ".use", static_cast<uint64_t>(use), ".t" + std::to_string(t) + ".all_gather"},
                        last);
  return last;
}

void ParamGather::release(int b)
{
  if (step_.cfg.zero != 3)
    return;
  StageUses& u     = stage_uses_[static_cast<size_t>(step_.blocks[b].stage)];
  const size_t use = u.next_use++;
  for (size_t k = 0; k < u.held.size();) {
    const size_t j = u.held[k];
    if (u.plan[j].freed_after != use) {
      ++k;
      continue;
    }
    const StepBlock& blk = step_.blocks[static_cast<size_t>(u.uses[j].block)];
    u.buffers[j].freed   = step_.dag.free(u.buffers[j].buffer, step_.stages[blk.stage].gpu, StreamKind::compute,
                                          blk.plan.name + ".free_gathered_params");
    u.held.erase(u.held.begin() + static_cast<std::ptrdiff_t>(k));
  }
}

Tensor ParamGather::in_use(int b) const
{
  const StageUses& u = stage_uses_.at(static_cast<size_t>(step_.blocks[b].stage));
  const size_t from  = u.plan.at(u.next_use).buffer;
  return from == UseGather::none ? Tensor{} : u.buffers[from].buffer;
}

} // namespace memwall
