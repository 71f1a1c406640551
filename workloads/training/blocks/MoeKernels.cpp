// The mixture-of-experts half of a layer as one tp rank of the busiest ep rank runs it
// (Megatron-Core's all-to-all token dispatcher; Shazeer et al. 2017, Lepikhin et al. 2021):
//
//   ln2 -> [shared experts] -> router -> top-k -> permute == all-to-all ==> sort
//       -> (etp all-gather) -> experts.up -> act -> experts.down -> (etp reduce-scatter)
//       -> unsort == all-to-all ==> unpermute (weighted sum of the k outputs) -> residual
//
// Each rank dispatches its T/tp tokens' top_k copies to the ranks holding their experts
// and gets back as many: an all-to-all of T/tp x top_k x h elements among the ep ranks,
// (ep-1)/ep of them leaving the GPU, each way. Each expert is split over etp ranks
// (default tp), which all-gather the pairs they received before the experts' GEMMs and
// reduce-scatter the outputs after; with etp = 1 the experts are whole and there is no
// collective but the all-to-alls. The busiest rank (ExpertLoad) receives
// and computes more when routing is uneven; it sets the pace, so it is the one modelled.
// Its experts run as one grouped GEMM: all their weights read, FLOPs for the pairs it
// received. Activations are saved for routed pairs only.
#include "workloads/model/ExpertLoad.hpp"
#include "workloads/training/blocks/KernelBuilders.hpp"
#include "workloads/training/dispatch/TokenDispatcher.hpp"

namespace memwall::kernels {
namespace {

// The local experts' GEMMs as one grouped GEMM over `pairs` tokens: each expert's
// weights read once (forward) or three times (backward: read twice, gradient written).
KernelPlan grouped_gemm(const std::string& name, double pairs, double in, double out, double experts,
                        const StepShape& s, double saved)
{
  KernelPlan k = gemm(name, pairs, in, out, s, saved);
  double more  = (experts - 1) * in * out * s.weight_bytes;
  k.fwd_bytes += more;
  k.bwd_bytes += 3 * more;
  k.shape = gemm_shape(pairs / experts, out, in, experts); // each expert's share of the pairs, one launch
  return k;
}

// A permutation of `rows` rows of width h (read and written once each way).
KernelPlan shuffle(const std::string& name, double rows, double h, const StepShape& s, double saved)
{
  KernelPlan k  = forward_only(name, 2 * rows * h * s.act_bytes, 0);
  k.bwd_bytes   = k.fwd_bytes;
  k.saved_bytes = saved;
  return k;
}

void shared_experts(std::vector<KernelPlan>& ks, const ModelSpec& m, const StepShape& s, double T)
{
  double h = m.hidden, e = s.act_bytes, t = tp(s), r = rep_div(s);
  double f  = static_cast<double>(m.moe.shared_experts * m.moe.shared_ffn);
  double up = m.mlp == MlpKind::swiglu ? 2 * f : f;
  ks.push_back(gemm("moe.shared.up", T, h, up / t, s, T * h * e / r));
  ks.push_back(pointwise("moe.shared.act", KernelFamily::activation, T * up / t, T * f / t, 8, s, T * up * e / t));
  ks.push_back(gemm("moe.shared.down", T, f / t, h, s, T * f * e / t));
}

} // namespace

void moe_mlp_half(BlockPlan& b, const ModelSpec& m, const StepShape& s, double T)
{
  const MoeSpec& moe = m.moe;
  double h = m.hidden, e = s.act_bytes, t = static_cast<double>(s.etp), r = rep_div(s);
  double E = static_cast<double>(moe.experts), k = static_cast<double>(moe.top_k);
  double fe = static_cast<double>(moe.expert_ffn), up = m.mlp == MlpKind::swiglu ? 2 * fe : fe;
  const ExpertLoad load = expert_load(moe, s.ep);
  const double Tr       = T / r;                   // tokens this tp rank routes
  const double sent     = Tr * load.busiest_pairs; // pairs it receives from its ep group
  const double pairs    = sent * t;                // pairs it computes (its etp group's after the gather)
  auto& ks              = b.kernels;
  const double stream   = T * h / r;
  ks.push_back(grad_sum("ln2.grad_sum", stream, e));
  ks.push_back(pointwise("ln2", KernelFamily::norm, stream, stream, 8, s, T * h * e / r));
  if (moe.shared_experts > 0) {
    shared_experts(ks, m, s, T);
    tp_pair(ks[index_of(ks, "ln2")], ks[index_of(ks, "moe.shared.up")], ks[index_of(ks, "moe.shared.down")], T * h * e,
            s);
  }
  // Router: replicated weights, fp32 scores kept for the gate's backward.
  ks.push_back(gemm("moe.router", Tr, h, E, s, Tr * h * e));
  ks.push_back(pointwise("moe.topk", KernelFamily::generic, Tr * E, Tr * E, 10, s, Tr * E * 4));
  // The dispatcher's hops (TokenDispatcher): the first after the permute, a second (a
  // node's NVLink forwarding) after the forwarding rank rearranges what it received;
  // the combine runs them back, the forwarding rank summing its node's outputs between.
  const double fp8_row = s.gemm_dtype == Dtype::fp8 ? h * fp8_block_scaled_bytes : h * e;
  const DispatchShape shape{moe, Tr, h * e, fp8_row, load.busiest_pairs, s.ep, s.ep_nodes};
  const auto dispatcher               = s.moe_dispatcher ? s.moe_dispatcher : default_token_dispatcher();
  const std::vector<DispatchHop> hops = dispatcher->hops(shape);
  // Toward the experts (the forward dispatch, the combine's gradient) and back.
  auto a2a = [&](const DispatchHop& hop, bool out) {
    return TpComm{CollectiveKind::all_to_all, out ? hop.dispatch_bytes : hop.bytes,
                  hop.group == DispatchGroup::ep_node ? CommGroup::ep_node : CommGroup::ep};
  };
  const double forwarded = hops.front().bytes / (h * e);                     // rows a forwarding rank receives
  KernelPlan permute     = shuffle("moe.permute", Tr * k, h, s, Tr * k * 4); // int32 routing map
  permute.fwd_after      = a2a(hops.front(), true);
  permute.bwd_before     = a2a(hops.front(), false);
  ks.push_back(permute);
  if (hops.size() > 1) {
    KernelPlan forward = shuffle("moe.forward", forwarded, h, s, 0);
    forward.fwd_after  = a2a(hops.back(), true);
    forward.bwd_before = a2a(hops.back(), false);
    ks.push_back(forward);
  }
  KernelPlan sort = shuffle("moe.sort", sent, h, s, 0); // received pairs grouped by local expert
  if (s.etp > 1) {
    sort.fwd_after  = {CollectiveKind::all_gather, pairs * h * e, CommGroup::etp};
    sort.bwd_before = {CollectiveKind::reduce_scatter, pairs * h * e, CommGroup::etp};
  }
  ks.push_back(sort);
  double local = load.local_experts;
  ks.push_back(grouped_gemm("moe.experts.up", pairs, h, up / t, local, s, pairs * h * e));
  ks.push_back(
      pointwise("moe.experts.act", KernelFamily::activation, pairs * up / t, pairs * fe / t, 8, s, pairs * up * e / t));
  KernelPlan down = grouped_gemm("moe.experts.down", pairs, fe / t, h, local, s, pairs * fe * e / t);
  if (s.etp > 1) {
    down.fwd_after  = {CollectiveKind::reduce_scatter, pairs * h * e, CommGroup::etp};
    down.bwd_before = {CollectiveKind::all_gather, pairs * h * e, CommGroup::etp};
  }
  ks.push_back(down);
  KernelPlan unsort = shuffle("moe.unsort", sent, h, s, 0);
  unsort.fwd_after  = a2a(hops.back(), false);
  unsort.bwd_before = a2a(hops.back(), true);
  ks.push_back(unsort);
  if (hops.size() > 1) {
    KernelPlan reduce = shuffle("moe.reduce", forwarded, h, s, 0);
    reduce.fwd_after  = a2a(hops.front(), false);
    reduce.bwd_before = a2a(hops.front(), true);
    ks.push_back(reduce);
  }
  // The k outputs of each token weighted by its gates and summed; the outputs are kept
  // for the gates' gradient.
  KernelPlan combine = pointwise("moe.unpermute", KernelFamily::generic, Tr * k * h, Tr * h, 2, s, Tr * k * h * e);
  ks.push_back(combine);
  if (m.norms_per_layer == 4)
    ks.push_back(pointwise("mlp.post_ln", KernelFamily::norm, stream, stream, 8, s, stream * e));
  ks.push_back(residual_add("mlp.residual", m, stream, e));
  b.backward_workspace = 2 * pairs * std::max(h, up / t) * e;
}

} // namespace memwall::kernels
