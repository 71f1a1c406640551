// The routers of transformers 5's MoE families, op by op (calibration/research/
// hf-moe-inventory.md section 2; models/*/modeling_*.py): how each turns a token's
// hidden state into its top-k experts and their weights. All are T x E small beside the
// experts; what matters is their kernel count and the weights' dtype.
#include "workloads/modelcode/HfModules.hpp"

namespace memwall::hf {
namespace {

constexpr KernelFamily generic  = KernelFamily::generic;
constexpr KernelFamily binary   = KernelFamily::residual;
constexpr KernelFamily activate = KernelFamily::activation;

// topk over `cols` of each of `rows` rows, k kept: gatherTopK, then (sorted) the bitonic
// sort of the k; backward the gradient scattered into zeros of the input's shape.
void topk(EagerOps& ops, const std::string& name, double rows, double cols, double k, double e, bool sorted, bool grad)
{
  std::vector<EagerKernel> fwd{{name, rows * cols * e + rows * k * (e + 8), 0, generic}};
  if (sorted)
    fwd.push_back({name + "_sort", 2 * rows * k * (e + 8), 0, generic});
  std::vector<EagerKernel> bwd;
  if (grad)
    bwd = {{name + ".bwd.zeros", rows * cols * e, 0, generic}, {name + ".bwd.scatter", rows * k * (e + 8), 0, generic}};
  ops.op(fwd, bwd, grad ? rows * k * 8 : 0.0);
}

// Mixtral's and Qwen's: softmax(logits, dtype=float) over the E experts, top-k, the k
// weights divided by their sum where the model says so; Qwen casts them back to the
// logits' dtype.
double softmax_topk(EagerOps& ops, const ModelSpec& m, double T, double E, double k, const Precision& p)
{
  const double S = T * k, c = p.compute;
  ops.op({{"moe.router.softmax", T * E * (c + 4), 4 * T * E, generic}},
         {{"moe.router.bwd.softmax", T * E * (4 + 4 + c), 4 * T * E, generic}}, 4 * T * E);
  topk(ops, "moe.router.topk", T, E, k, 4, true, true);
  if (m.moe.normalized_top_k)
    ops.op({{"moe.router.sum", 4 * S + 4 * T, 0, generic}, {"moe.router.div", 12 * S, S, binary}},
           {{"moe.router.bwd.div_other", 16 * S, 2 * S, binary},
            {"moe.router.bwd.div_sum", 4 * S + 4 * T, 0, generic},
            {"moe.router.bwd.div_self", 12 * S, S, binary}},
           4 * S + 4 * T);
  if (m.family == "mixtral")
    return 4;
  ops.op({{"moe.router.cast_weights", S * (4 + c), 0, generic}},
         {{"moe.router.bwd.cast_weights", S * (4 + c), 0, generic}});
  return c;
}

// gpt-oss's GptOssTopKRouter: top-k of the biased Linear's logits (in the compute
// dtype), softmax over those k in the same dtype.
double topk_softmax(EagerOps& ops, double T, double E, double k, const Precision& p)
{
  const double S = T * k, c = p.compute;
  topk(ops, "moe.router.topk", T, E, k, c, true, true);
  ops.op({{"moe.router.softmax", 2 * S * c, 4 * S, generic}}, {{"moe.router.bwd.softmax", 3 * S * c, 3 * S, generic}},
         S * c);
  return c;
}

// DeepSeek-V3's DeepseekV3TopkRouter: sigmoid of the logits; plus the correction bias
// (an fp32 buffer: promotes) for the choice only; each group's two best summed, the best
// groups kept (topk unsorted, a zeros mask scattered, expanded to the experts, negated),
// the others' scores filled with -inf, top-k of what is left (unsorted); the weights are
// the sigmoid's at those experts (a gather), divided by their sum where the model says
// so, times routed_scaling_factor.
double sigmoid_group_topk(EagerOps& ops, const ModelSpec& m, double T, double E, double k, const Precision& p)
{
  const double S = T * k, c = p.compute, G = static_cast<double>(m.moe.expert_groups);
  const double g = static_cast<double>(m.moe.groups_per_token);
  ops.op({{"moe.router.sigmoid", 2 * T * E * c, 4 * T * E, activate}},
         {{"moe.router.bwd.sigmoid", 3 * T * E * c, 3 * T * E, activate}}, T * E * c);
  ops.op({{"moe.router.add_bias", T * E * (c + 4) + 4 * E, T * E, binary}}, {});
  if (G > 1) {
    topk(ops, "moe.router.group_top2", T * G, E / G, 2, 4, true, false);
    ops.op({{"moe.router.group_sum", 8 * T * G + 4 * T * G, T * G, generic}}, {});
    topk(ops, "moe.router.group_topk", T, G, g, 4, false, false);
    ops.op({{"moe.router.group_mask_zeros", 4 * T * G, 0, generic},
            {"moe.router.group_mask_scatter", 8 * T * g + 4 * T * g, 0, generic},
            {"moe.router.score_mask_expand", 4 * T * G + 4 * T * E, 0, generic},
            {"moe.router.score_mask_bool", 5 * T * E, 0, generic},
            {"moe.router.score_mask_not", 2 * T * E, 0, generic},
            {"moe.router.masked_fill", 9 * T * E, 0, generic}},
           {});
  }
  topk(ops, "moe.router.topk", T, E, k, 4, false, false);
  // scores.gather(1, topk_indices): backward its gradient scattered into zeros of T x E.
  ops.op({{"moe.router.gather", S * (2 * c + 8), 0, generic}},
         {{"moe.router.bwd.gather_zeros", T * E * c, 0, generic},
          {"moe.router.bwd.gather_scatter", S * (2 * c + 8), 0, generic}},
         8 * S);
  if (m.moe.normalized_top_k)
    ops.op({{"moe.router.sum", S * c + T * c, 0, generic},
            {"moe.router.add_eps", 2 * T * c, T, binary},
            {"moe.router.div", 3 * S * c, S, binary}},
           {{"moe.router.bwd.div_other", 4 * S * c, 2 * S, binary},
            {"moe.router.bwd.div_sum", S * c + T * c, 0, generic},
            {"moe.router.bwd.div_self", 3 * S * c, S, binary}},
           S * c + T * c);
  ops.op({{"moe.router.scale", 2 * S * c, S, binary}}, {{"moe.router.bwd.scale", 2 * S * c, S, binary}});
  return c;
}

} // namespace

double moe_router(EagerOps& ops, const ModelSpec& m, double T, const Precision& p)
{
  const double h = static_cast<double>(m.hidden), E = static_cast<double>(m.moe.experts);
  const double k = static_cast<double>(m.moe.top_k);
  if (m.family == "deepseek_v3") {
    // F.linear(x.type(float32), W.type(float32)): under autocast the logits come in the
    // compute dtype all the same; without it (a bf16 model in generate()) the input and
    // weight are cast up and the routing runs in fp32.
    Precision route = p;
    if (!p.autocast()) {
      route.compute       = 4;
      route.compute_dtype = Dtype::fp32;
    }
    linear(ops, "moe.router", T, h, E, true, route);
    return sigmoid_group_topk(ops, m, T, E, k, route);
  }
  // The router's Linear under autocast: logits in the compute dtype.
  projection(ops, "moe.router", T, h, E, true, m.family == "gpt_oss" && m.moe.router_bias, p);
  if (m.family == "gpt_oss")
    return topk_softmax(ops, T, E, k, p);
  return softmax_topk(ops, m, T, E, k, p);
}

} // namespace memwall::hf
