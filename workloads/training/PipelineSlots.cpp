#include "workloads/training/PipelineSlots.hpp"

#include "workloads/training/schedule/PipelineSchedule.hpp"

#include <stdexcept>

namespace memwall {

void PipelineSlots::emit()
{
  const TrainingConfig& cfg = step_.cfg;
  const auto& schedule      = cfg.pipeline_schedule;
  int64_t m                 = cfg.micro_batches();
  std::vector<std::vector<PipelineSlot>> order;
  for (int64_t p = 0; p < cfg.pp; ++p)
    order.push_back(schedule->order(p, cfg.pp, cfg.virtual_stages, m));
  // Emit stage by stage, each as far as its cross-stage inputs have been emitted, so
  // every dependency exists before the op that waits on it.
  std::vector<size_t> pos(order.size(), 0);
  int64_t last_vs = cfg.pp * cfg.virtual_stages - 1;
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t p = 0; p < order.size(); ++p) {
      while (pos[p] < order[p].size()) {
        const PipelineSlot& s = order[p][pos[p]];
        int64_t vs            = s.chunk * cfg.pp + static_cast<int64_t>(p);
        bool ready            = s.forward ? (vs == 0 || fwd_sent_.count(slot_key(vs - 1, s.micro_batch)))
                                          : (vs == last_vs || bwd_sent_.count(slot_key(vs + 1, s.micro_batch)));
        if (!ready)
          break;
        emit_slot(static_cast<int>(p), s.micro_batch, s.chunk, s.forward);
        ++pos[p];
        progress = true;
      }
    }
  }
  for (size_t p = 0; p < order.size(); ++p)
    if (pos[p] != order[p].size())
      throw std::logic_error("pipeline schedule '" + schedule->name() + "' deadlocks at stage " + std::to_string(p));
}

void PipelineSlots::emit_slot(int stage, int64_t mb, int64_t chunk, bool forward)
{
  const TrainingConfig& cfg = step_.cfg;
  OpDag& dag                = step_.dag;
  const StepStage& s        = step_.stages[stage];
  int64_t vs                = chunk * cfg.pp + stage;
  OpId mark                 = static_cast<OpId>(dag.size());
  dag.set_phase(forward ? StepPhase::forward : StepPhase::backward);
  // Most micro-batches' passes are the same ops as the one before (OpDag::end_capture
  // stores them once); the first backward (gradients allocated) and the last (buckets
  // reduced) differ, and ZeRO-2/3's per-micro-batch reductions leave the stream.
  uint64_t key = static_cast<uint64_t>(vs) * 2 + (forward ? 1 : 0);
  bool steady  = steady_slot(stage, chunk, forward);
  if (steady && repeats_[key].verified)
    repeat_slot(stage, mb, chunk, forward, key);
  else
    capture_slot(stage, mb, chunk, forward, key, steady);
  // The slot's first compute op waits for the activation (or gradient) from the neighbour.
  auto& inbox = forward ? fwd_sent_ : bwd_sent_;
  auto in     = inbox.find(slot_key(forward ? vs - 1 : vs + 1, mb));
  if (in != inbox.end()) {
    for (OpId v = mark; v < dag.size(); ++v)
      if (dag.op(v).device == s.gpu && dag.op(v).stream == StreamKind::compute) {
        dag.depend(v, in->second);
        break;
      }
    inbox.erase(in); // received: this slot was its one reader
  }
  int64_t next = forward ? vs + 1 : vs - 1;
  if (next < 0 || next >= cfg.pp * cfg.virtual_stages)
    return;
  // Megatron sends 1/t of the activation from each tp rank and all-gathers it on arrival
  // (scatter_gather_tensors_in_pipeline); under sp the activation is already split. A
  // context-parallel rank holds seq_len / cp tokens (shape.seq_len) and sends those.
  double bytes = static_cast<double>(cfg.micro_batch * step_.shape.seq_len) * step_.model.hidden *
                 step_.shape.act_bytes / static_cast<double>(cfg.tp);
  // "pp.send_act.vs3.mb17", the micro-batch a number beside its pattern (OpName).
  size_t which = static_cast<size_t>(key);
  if (which >= send_names_.size())
    send_names_.resize(which + 1);
  if (send_names_[which] == OpName())
    send_names_[which] =
        OpName(std::string(forward ? "pp.send_act." : "pp.send_grad.") + "vs" + std::to_string(vs) + ".mb", 0, "");
  OpName name = send_names_[which].numbered(static_cast<uint64_t>(mb));
  inbox[slot_key(vs, mb)] =
      dag.add(copy_op(s.gpu, StreamKind::p2p, s.gpu, step_.stages[next % cfg.pp].gpu, bytes, name),
              {dag.stream_tail(s.gpu, StreamKind::compute)});
}

bool PipelineSlots::steady_slot(int stage, int64_t chunk, bool forward) const
{
  if (step_.dag.tracks_accesses() || step_.cfg.zero >= 2)
    return false;
  if (forward)
    return true;
  for (int b : step_.stages[stage].chunks[chunk]) {
    int64_t done = step_.blocks[b].backwards;
    if (done == 0 || done + 1 >= step_.cfg.micro_batches())
      return false;
  }
  return true;
}

void PipelineSlots::capture_slot(int stage, int64_t mb, int64_t chunk, bool forward, uint64_t key, bool steady)
{
  OpDag& dag         = step_.dag;
  const auto& blocks = step_.stages[stage].chunks[chunk];
  SlotRepeat& repeat = repeats_[key];
  size_t stored      = dag.chain_count();
  dag.begin_capture();
  if (forward)
    for (int b : blocks)
      passes_.forward(b, mb);
  else
    for (auto it = blocks.rbegin(); it != blocks.rend(); ++it)
      passes_.backward(*it, mb);
  bool chained       = dag.end_capture(key);
  bool same          = chained && dag.chain_count() == stored; // equal to the last under the key
  repeat.verified    = steady && repeat.last_steady && same;
  repeat.last_steady = steady && chained;
  if (repeat.verified && forward) {
    repeat.saved.clear();
    repeat.checkpoints.clear();
    for (int b : blocks) {
      repeat.saved.push_back(saved_.of(b, mb));
      repeat.checkpoints.push_back(saved_.checkpoint(b, mb));
    }
  }
}

void PipelineSlots::repeat_slot(int stage, int64_t mb, int64_t chunk, bool forward, uint64_t key)
{
  const auto& blocks       = step_.stages[stage].chunks[chunk];
  const SlotRepeat& repeat = repeats_.at(key);
  for (size_t j = 0; j < blocks.size(); ++j) {
    int b = blocks[j];
    if (forward)
      saved_.repeat(b, mb, &repeat.saved[j], repeat.checkpoints[j]);
    else {
      saved_.forget(b, mb);
      step_.blocks[b].backwards++;
    }
  }
  step_.dag.repeat_chain(key);
}

} // namespace memwall
