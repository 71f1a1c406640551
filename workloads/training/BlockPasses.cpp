#include "workloads/training/BlockPasses.hpp"

#include "workloads/training/SavedActivations.hpp"

#include <algorithm>

namespace memwall {

const OpName& BlockPasses::name(int b, size_t i, Role role)
{
  const BlockPlan& plan = step_.blocks[b].plan;
  auto& names           = names_[b];
  if (names.empty())
    names.resize(plan.kernels.size());
  OpName& n = names[i][static_cast<size_t>(role)];
  if (n == OpName()) {
    static const std::array<std::pair<const char*, const char*>, 17> parts{{{".fwd.", ""},
                                                                            {".fwd.", ".saved"},
                                                                            {".fwd.", ".tp"},
                                                                            {".recompute.", ""},
                                                                            {".recompute.", ".saved"},
                                                                            {".recompute.", ".tp"},
                                                                            {".bwd.", ""},
                                                                            {".bwd.", ".tp_in"},
                                                                            {".bwd.", ".tp"},
                                                                            {".bwd.", ".free_saved"},
                                                                            {".bwd.", ".free_regenerated"},
                                                                            {".fwd.", ".held"},
                                                                            {".fwd.", ".free_held"},
                                                                            {".fwd.", ".out"},
                                                                            {".fwd.", ".free_out"},
                                                                            {".bwd.", ".grad"},
                                                                            {".bwd.", ".free_grad"}}};
    const auto& [infix, suffix] = parts[static_cast<size_t>(role)];
    n                           = OpName(plan.name + infix + plan.kernels[i].name + suffix);
  }
  return n;
}

OpId BlockPasses::kernel(const DeviceRef& gpu, const OpName& name, const KernelPlan& k, bool forward, bool recompute)
{
  // Elementwise FLOPs and recomputation do not count toward MFU.
  double model = k.kclass != KernelClass::elementwise && !recompute ? (forward ? k.fwd_flops : k.bwd_model_flops) : 0.0;
  Op op    = kernel_op(gpu, k.kclass, k.dtype, forward ? k.fwd_flops : k.bwd_flops, forward ? k.fwd_bytes : k.bwd_bytes,
                       model, name);
  op.shape = k.shape;
  op.family = k.family;
  if (!forward)
    op.pass = k.bwd_pass;
  // A GEMM's backward launches its input and its weight gradient: two kernels.
  OpId launched =
      launch(gpu, forward, !forward && k.kclass == KernelClass::gemm && k.bwd_pass == GemmPass::backward ? 2 : 1, k);
  OpId id = compute(std::move(op));
  if (launched != OpDag::none)
    step_.dag.depend(id, launched);
  return id;
}

OpId BlockPasses::launch(const DeviceRef& gpu, bool forward, int kernels, const KernelPlan& k)
{
  const double per = forward ? host_.forward_s_per_kernel : host_.backward_s_per_kernel;
  if (per <= 0) // the host keeps ahead: no launches and no syncs modelled
    return OpDag::none;
  static const OpName name("host.launch");
  // The host stream's order chains the launches (OpDag::add): each after the one before.
  OpId id = step_.dag.add(host_delay_op(gpu, kernels * (k.host_loop ? host_.loop_s_per_kernel : per), name));
  // A blocking copy to the host first: the host goes on once the GPU has run everything
  // launched before (the compute stream's order: its last kernel).
  if (forward ? k.host_sync_forward : k.host_sync_backward)
    if (auto t = tails_.find(gpu); t != tails_.end() && t->second.last != OpDag::none)
      step_.dag.depend(id, t->second.last);
  return id;
}

OpId BlockPasses::compute(Op op)
{
  ComputeTail& t = tails_[op.device];
  OpId id        = step_.dag.add(std::move(op));
  for (OpId j : t.joins)
    step_.dag.depend(id, j);
  t.joins.clear();
  t.last = id;
  return id;
}

void BlockPasses::tp_collective(int b, size_t i, Role role, const TpComm& c)
{
  const StepStage& s = step_.stage_of(b);
  int32_t group      = c.group == CommGroup::ep        ? s.ep_group
                       : c.group == CommGroup::cp      ? s.cp_group
                       : c.group == CommGroup::etp     ? s.etp_group
                       : c.group == CommGroup::ep_node ? s.ep_node_group
                                                       : s.tp_group;
  if (c.bytes <= 0 || group < 0)
    return;
  // Megatron's tp collectives (and MoE all-to-alls) block the compute stream.
  compute(collective_op(s.gpu, StreamKind::compute, c.kind, group, c.bytes, name(b, i, role)));
}

void BlockPasses::forward(int b, int64_t mb)
{
  grads_.settle(step_.blocks[b].stage);
  OpDag& dag         = step_.dag;
  StepBlock& blk     = step_.blocks[b];
  const StepStage& s = step_.stage_of(b);
  const auto& ks     = blk.plan.kernels;
  const SavedActivations policy(step_.cfg.recompute);
  bool full   = policy.checkpoints(blk.plan);
  OpId params = gathers_.gathered(b);
  auto& saved = saved_.start(b, mb, ks.size());
  Tensor checkpoint;
  if (full) {
    checkpoint = dag.alloc(s.gpu, StreamKind::compute, s.gpu, MemCategory::activations, blk.plan.input_bytes,
                           blk.plan.name + ".fwd.checkpoint", {params});
    saved_.keep_checkpoint(b, mb, checkpoint);
  }
  std::pair<Tensor, size_t> out{}; // a forward output read by the next kernel alone, and its kernel
  for (size_t i = 0; i < ks.size(); ++i) {
    const KernelPlan& k = ks[i];
    double keep         = policy.kept(blk.plan, k);
    if (keep > 0)
      saved[i] =
          dag.alloc(s.gpu, StreamKind::compute, s.gpu, k.saved_category, keep, name(b, i, Role::fwd_saved), {params});
    if (k.forward_held_bytes > 0 && k.runs(true))
      held_[{s.gpu, mb}].push_back({dag.alloc(s.gpu, StreamKind::compute, s.gpu, MemCategory::activations,
                                              k.forward_held_bytes, name(b, i, Role::fwd_held), {params}),
                                    b, i});
    const bool runs = k.runs(true) && !(k.first_micro_batch_only && blk.forwards > 0);
    Tensor mine;
    if (runs && k.out_bytes > 0)
      mine = dag.alloc(s.gpu, StreamKind::compute, s.gpu, MemCategory::activations, k.out_bytes,
                       name(b, i, Role::fwd_out), {params});
    if (runs)
      touches_.touch_kernel(forward_kernel(b, i, params, false), b, i, true, i == 0 && full ? checkpoint : saved[i]);
    if (runs && out.first.id != 0) { // its reader has run
      dag.free(out.first, s.gpu, StreamKind::compute, name(b, out.second, Role::free_out));
      out = {};
    }
    if (mine.id != 0)
      out = {mine, i};
    forward_collective(b, i, false);
  }
  if (out.first.id != 0)
    dag.free(out.first, s.gpu, StreamKind::compute, name(b, out.second, Role::free_out));
  // The model's forward returns after its last block (this GPU's last, where the layers
  // are split over GPUs): what it held goes, inside the same pass, so that a repeated
  // forward repeats both.
  const bool last = static_cast<size_t>(b) + 1 == step_.blocks.size() || step_.stage_of(b + 1).gpu != s.gpu;
  if (auto h = held_.find({s.gpu, mb}); last && h != held_.end()) {
    for (const Held& t : h->second)
      dag.free(t.tensor, s.gpu, StreamKind::compute, name(t.block, t.kernel, Role::free_held));
    held_.erase(h);
  }
  blk.forwards++;
  gathers_.release(b);
}

OpId BlockPasses::forward_kernel(int b, size_t i, OpId params, bool recompute)
{
  const StepStage& s  = step_.stage_of(b);
  const KernelPlan& k = step_.blocks[b].plan.kernels[i];
  ComputeTail& tail   = tails_[s.gpu];
  if (tail.ring_ahead && k.kclass == KernelClass::gemm) {
    OpId id         = ring_exchange_forward(b, i, *tail.ring_ahead, params, recompute);
    tail.ring_ahead = nullptr;
    return id;
  }
  if (k.fwd_after.overlap == TpOverlap::pipeline)
    return pipelined_forward(b, i, params, recompute);
  OpId id = kernel(s.gpu, name(b, i, recompute ? Role::rc : Role::fwd), k, true, recompute);
  if (!recompute) // a rerun follows backward's own wait for the parameters on the stream
    step_.dag.depend(id, params);
  return id;
}

void BlockPasses::forward_collective(int b, size_t i, bool recompute)
{
  const KernelPlan& k = step_.blocks[b].plan.kernels[i];
  if (k.fwd_after.overlap == TpOverlap::ring_exchange)
    tails_[step_.stage_of(b).gpu].ring_ahead = &k.fwd_after; // gathered chunk by chunk beside the next GEMM
  else if (k.fwd_after.overlap == TpOverlap::none || !k.runs(true))
    tp_collective(b, i, recompute ? Role::rc_tp : Role::fwd_tp, k.fwd_after);
}

void BlockPasses::recompute(int b, int64_t mb, OpId params)
{
  const StepBlock& blk = step_.blocks[b];
  const StepStage& s   = step_.stage_of(b);
  auto& saved          = saved_.of(b, mb);
  ComputeTail& tail    = tails_[s.gpu];
  const SavedActivations policy(step_.cfg.recompute);
  const size_t n         = blk.plan.kernels.size();
  const bool checkpoints = policy.checkpoints(blk.plan);
  const size_t stop = checkpoints && blk.plan.checkpoint_stop >= 0 ? static_cast<size_t>(blk.plan.checkpoint_stop) : n;
  for (size_t i = 0; i < std::min(n, stop); ++i) {
    const KernelPlan& k = blk.plan.kernels[i];
    // What backward needs of this kernel and forward did not keep comes back now; a
    // reentrant checkpoint's output (the last kernel's) stays until the block's backward
    // ends, as kernel 0's second tensor (its backward runs last).
    const bool held   = checkpoints && blk.plan.checkpoint_output > 0;
    const bool output = held && i + 1 == n;
    // The last op's own bytes stand for the next layer's norm keeping this output.
    const bool last_op = held && k.op_first >= 0 && k.op_first == blk.plan.kernels.back().op_first;
    double back        = output ? blk.plan.checkpoint_output : last_op ? 0.0 : policy.regenerated(blk.plan, k);
    if (back > 0) {
      Tensor t = step_.dag.alloc(s.gpu, StreamKind::compute, s.gpu, k.saved_category, back, name(b, i, Role::rc_saved));
      if (output)
        saved_.regenerated(b, mb, 0, n) = t;
      else if (saved[i].id == 0) // else a per-op policy kept this kernel's output: its saved inputs come back beside it
        saved[i] = t;
      else
        saved_.regenerated(b, mb, i, n) = t;
    }
    if (!policy.reruns(blk.plan, k) || k.first_micro_batch_only)
      continue;
    // A whole forward again, its collectives with it, overlapped as in forward (every
    // GEMM reruns, the one a ring exchange feeds among them). A per-op policy keeps the
    // outputs of reduce-scatters but not of tp all-gathers (torchtitan's save list), so a
    // rerun kernel's tp all-gather runs again, whole: the GEMM it fed may be one whose
    // output was kept. Context parallelism's K and V are gathered again by attention's
    // backward itself (TpComm bwd_before), not here.
    const bool whole    = policy.checkpoints(blk.plan);
    const bool regather = k.fwd_after.kind == CollectiveKind::all_gather && k.fwd_after.group == CommGroup::tp;
    if (k.runs(true))
      touches_.touch_kernel(whole ? forward_kernel(b, i, params, true)
                                  : kernel(s.gpu, name(b, i, Role::rc), k, true, true),
                            b, i, true, saved[i]);
    if (whole)
      forward_collective(b, i, true);
    else if (regather)
      tp_collective(b, i, Role::rc_tp, k.fwd_after);
  }
  tail.ring_ahead = nullptr; // no ring outlives the recompute that started it
}

void BlockPasses::backward(int b, int64_t mb)
{
  grads_.settle(step_.blocks[b].stage);
  OpDag& dag         = step_.dag;
  StepBlock& blk     = step_.blocks[b];
  const StepStage& s = step_.stage_of(b);
  if (blk.plan.grads_at < 0)
    grads_.alloc_gradients(b);
  OpId params              = gathers_.gathered(b);
  const std::string prefix = blk.plan.name + ".bwd.";
  struct Alive {
    Tensor grad; // KernelPlan::grad_bytes of kernel `from`
    int until;   // the kernel whose backward reads it last
    size_t from;
  };
  std::vector<Alive> grads_alive;

  Tensor ws;
  if (blk.plan.backward_workspace > 0)
    ws = dag.alloc(s.gpu, StreamKind::compute, s.gpu, MemCategory::workspace, blk.plan.backward_workspace,
                   prefix + "activation_grads", {params});
  if (SavedActivations(step_.cfg.recompute).recomputes(blk.plan))
    recompute(b, mb, params);
  auto& saved                      = saved_.of(b, mb);
  const std::vector<Tensor>* again = saved_.regenerated_of(b, mb);
  for (size_t i = blk.plan.kernels.size(); i-- > 0;) {
    const KernelPlan& k = blk.plan.kernels[i];
    if (static_cast<int>(i) == blk.plan.grads_at)
      grads_.alloc_gradients(b);
    if (k.grad_bytes > 0 && k.runs(false))
      grads_alive.push_back({dag.alloc(s.gpu, StreamKind::compute, s.gpu, MemCategory::workspace, k.grad_bytes,
                                       name(b, i, Role::bwd_grad), {params}),
                             k.grad_until, i});
    if (k.bwd_before.overlap != TpOverlap::none && k.runs(false)) {
      touches_.touch_kernel(overlapped_backward(b, i, params), b, i, false, saved[i]);
    } else {
      tp_collective(b, i, Role::bwd_tp_in, k.bwd_before);
      if (k.runs(false) && !(k.accumulates && blk.backwards == 0)) {
        OpId id = kernel(s.gpu, name(b, i, Role::bwd), k, false, false);
        dag.depend(id, params);
        touches_.touch_kernel(id, b, i, false, saved[i]);
      }
      tp_collective(b, i, Role::bwd_tp, k.bwd_after);
    }
    if (saved[i].id != 0)
      dag.free(saved[i], s.gpu, StreamKind::compute, name(b, i, Role::bwd_free_saved));
    if (again && (*again)[i].id != 0)
      dag.free((*again)[i], s.gpu, StreamKind::compute, name(b, i, Role::bwd_free_regenerated));
    for (auto g = grads_alive.begin(); g != grads_alive.end();) // read by this kernel's backward: gone
      if (g->until >= static_cast<int>(i)) {
        dag.free(g->grad, s.gpu, StreamKind::compute, name(b, g->from, Role::bwd_free_grad));
        g = grads_alive.erase(g);
      } else {
        ++g;
      }
  }
  for (const Alive& g : grads_alive) // a gradient no earlier kernel of the block reads
    dag.free(g.grad, s.gpu, StreamKind::compute, name(b, g.from, Role::bwd_free_grad));
  if (ws.id != 0)
    dag.free(ws, s.gpu, StreamKind::compute, prefix + "free_activation_grads");
  if (Tensor c = saved_.checkpoint(b, mb); c.id != 0)
    dag.free(c, s.gpu, StreamKind::compute, prefix + "free_checkpoint");
  saved_.forget(b, mb);
  gathers_.release(b);
  blk.backwards++;
  grads_.reduce_gradients(b, mb);
}

} // namespace memwall
