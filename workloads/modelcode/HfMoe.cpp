// The sparse MoE block of Mixtral, Qwen2-MoE and Qwen3-MoE as transformers 5 runs it in
// eager PyTorch (calibration/research/hf-moe-inventory.md, read from integrations/moe.py
// and the models' modeling files against the H200 steps of hf-families.csv).
//
// The router is a Linear under autocast (bf16 logits), softmax in fp32, top-k, the
// weights renormalised where the model says so. The experts run through
// grouped_mm_experts_forward: the S = T k token-expert pairs sorted by expert (a full
// 64-bit radix sort), the tokens gathered into S rows, two grouped GEMMs around the gated
// activation, the weighted rows gathered back and summed over k. torch's _grouped_mm is
// not autocast-listed, so with fp32 parameters the input is cast to fp32 and ATen's
// fallback runs it: the group offsets copied to the host (a blocking sync) and one fp32
// mm per expert hit, issued from a C++ loop; backward two more such loops per grouped
// GEMM (its input and its weight gradient), so six syncs a layer. With bf16 weights
// (a bf16 model, the serving engine) CUTLASS's grouped GEMM runs each in one bf16
// kernel and nothing syncs.
#include "workloads/modelcode/HfModules.hpp"

#include <cmath>

namespace memwall::hf {
namespace {

constexpr KernelFamily generic  = KernelFamily::generic;
constexpr KernelFamily binary   = KernelFamily::residual;
constexpr KernelFamily activate = KernelFamily::activation;

// cub's onesweep radix sort of `rows` int64 keys with int64 values: a histogram, a scan,
// one pass per 8 bits of key (each reads and writes keys and values).
std::vector<EagerKernel> radix_sort(const std::string& name, double rows, int passes)
{
  std::vector<EagerKernel> ks{{name + ".histogram", 8 * rows, 0, generic}, {name + ".scan", 0, 0, generic}};
  for (int i = 0; i < passes; ++i)
    ks.push_back({name + ".onesweep" + std::to_string(i), 32 * rows, 0, generic});
  return ks;
}

// An index's backward (a gather's: tokens or weights indexed by a permutation): the
// source's gradient zeroed (`rows` x `width` of `e` bytes), the S indices sorted (two
// passes: as many bits as S needs), the S gathered rows' gradients added in.
std::vector<EagerKernel> index_backward(const std::string& name, double rows, double S, double width, double e)
{
  std::vector<EagerKernel> ks{{name + ".zeros", rows * width * e, 0, generic}};
  for (const EagerKernel& k : radix_sort(name + ".sort", S, 2))
    ks.push_back(k);
  ks.push_back({name + ".indexing_backward", 2 * S * width * e + rows * width * e + 8 * S, 0, generic});
  return ks;
}

// Experts hit by S pairs routed evenly at random over E (a balanced router): E (1 - (1 - 1/E)^S).
double experts_hit(double E, double S) { return std::max(1.0, std::round(E * (1 - std::pow(1 - 1 / E, S)))); }

// One of the experts' grouped GEMMs, `in` -> `out` for S pairs over `hit` experts.
// ATen's fallback: a loop of per-expert GEMMs a pass, each loop after a blocking sync;
// forward here, its two backward loops after the ops between (`backward`).
struct GroupedGemm {
  std::string name;
  double S, in, out, hit;
  Dtype dtype;
  bool fallback;
};

void grouped_forward(EagerOps& ops, const GroupedGemm& g)
{
  if (!g.fallback) {
    // CUTLASS's grouped GEMM: one kernel a pass, every hit expert's weights read once.
    ops.gemm(g.name, g.S, g.in, g.out, g.dtype);
    KernelPlan& k  = ops.back();
    const double w = (g.hit - 1) * g.in * g.out * dtype_bytes(g.dtype); // the other experts' weights
    k.fwd_bytes += w;
    k.bwd_bytes += 2 * w; // read by the input gradient, written by the weight gradient
    return;
  }
  const double rows = g.S / g.hit;
  for (int i = 0; i < static_cast<int>(g.hit); ++i) {
    ops.gemm_pass(g.name + ".e" + std::to_string(i), rows, g.in, g.out, g.dtype, GemmPass::forward);
    ops.back().host_loop         = true;
    ops.back().host_sync_forward = i == 0;
  }
}

// The fallback's two backward loops: _grouped_mm_mat1_backward (the input gradient) then
// _grouped_mm_mat2_backward (the weight gradient), each after its sync. The list is
// walked backward from its end: the input-gradient loop goes last.
void grouped_backward(EagerOps& ops, const GroupedGemm& g, double experts, double input_kept)
{
  // AccumulateGrad adds the [E, out, in] weight gradient into .grad from the second
  // micro-batch on, once the weight-gradient loop has written it. The GEMM's input
  // (`input_kept` bytes, saved by _grouped_mm) goes with it.
  const double W = experts * g.in * g.out;
  ops.op({}, {{g.name + ".bwd.accumulate_weight_grad", 3 * W * dtype_bytes(g.dtype), W, KernelFamily::residual, true}},
         input_kept);
  if (!g.fallback)
    return;
  const double rows = g.S / g.hit;
  for (GemmPass pass : {GemmPass::weight_grad, GemmPass::input_grad})
    for (int i = static_cast<int>(g.hit) - 1; i >= 0; --i) {
      ops.gemm_pass(g.name + (pass == GemmPass::input_grad ? ".dgrad.e" : ".wgrad.e") + std::to_string(i), rows, g.in,
                    g.out, g.dtype, pass);
      ops.back().host_loop          = true;
      ops.back().host_sync_backward = i == 0;
    }
}

} // namespace

double sparse_moe_block(EagerOps& ops, const ModelSpec& m, const Tokens& t, const Precision& p)
{
  const double T = t.T(), h = static_cast<double>(m.hidden), F = static_cast<double>(m.moe.expert_ffn);
  const double E = static_cast<double>(m.moe.experts), k = static_cast<double>(m.moe.top_k), S = T * k;
  const double c = p.compute, x = p.param; // x: the stream's and the experts' element bytes
  // The experts compute in their weights' dtype: fp32 parameters keep them in fp32, and
  // only bf16 takes CUTLASS's grouped kernel.
  const Dtype xdt     = x == 4 ? Dtype::fp32 : p.compute_dtype;
  const bool fallback = xdt != Dtype::bf16;
  const double hit    = experts_hit(E, S);
  // Mixtral keeps the routing weights in fp32; Qwen's routers cast them to the logits' dtype.
  const bool qwen = m.family != "mixtral";
  const double w  = qwen ? c : 4;

  // The input's users: the router's cast and the experts' gather (and Qwen2-MoE's shared
  // expert: its gate's and up's casts and its gate's): their gradients summed.
  const int users = 2 + (m.moe.shared_experts > 0 ? 3 : 0);
  for (int i = 1; i < users; ++i)
    grad_accumulate(ops, "moe.grad_sum" + std::to_string(i), T * h, x);
  // Qwen2MoeSparseMoeBlock runs its shared expert (a LlamaMLP on the same input) first;
  // backward reaches it last.
  if (m.moe.shared_experts > 0)
    gated_mlp(ops, "moe.shared", T, h, static_cast<double>(m.moe.shared_ffn), false, p);

  // Router: logits = gate(x) in bf16; softmax(logits, dtype=float); topk; renormalise.
  linear(ops, "moe.router", T, h, E, true, p);
  ops.op({{"moe.router.softmax", T * E * (c + 4), 4 * T * E, generic}},
         {{"moe.router.bwd.softmax", T * E * (4 + 4 + c), 4 * T * E, generic}}, 4 * T * E);
  ops.op({{"moe.router.topk", 4 * T * E + 12 * S, 0, generic}, {"moe.router.topk_sort", 24 * S, 0, generic}},
         {{"moe.router.bwd.topk_zeros", 4 * T * E, 0, generic}, {"moe.router.bwd.topk_scatter", 12 * S, 0, generic}},
         8 * S);
  if (m.moe.normalized_top_k)
    ops.op({{"moe.router.sum", 4 * S + 4 * T, 0, generic}, {"moe.router.div", 12 * S, S, binary}},
           {{"moe.router.bwd.div_other", 16 * S, 2 * S, binary},
            {"moe.router.bwd.div_sum", 4 * S + 4 * T, 0, generic},
            {"moe.router.bwd.div_self", 12 * S, S, binary}},
           4 * S + 4 * T);
  if (qwen)
    ops.op({{"moe.router.cast_weights", S * (4 + c), 0, generic}},
           {{"moe.router.bwd.cast_weights", S * (4 + c), 0, generic}});

  // grouped_mm_experts_forward: pairs sorted by expert, the tokens gathered (kept for
  // gate_up's weight gradient), their weights in that order.
  ops.op(radix_sort("moe.sort", S, 8), {}, 8 * S); // perm, kept for the weights' index backward
  ops.op({{"moe.sort.reverse_indices", 8 * S, 0, generic}}, {});
  ops.op({{"moe.token_index", 16 * S, 0, generic}}, {}, 8 * S);
  ops.op({{"moe.gather_tokens", 2 * S * h * x + 8 * S, 0, generic}},
         index_backward("moe.bwd.gather_tokens", T, S, h, x)); // the copies: kept by gate_up (below)
  // sample_weights[perm] over the T k weights: one element a row.
  ops.op({{"moe.gather_weights", 2 * S * w + 8 * S, 0, generic}}, index_backward("moe.bwd.gather_weights", S, S, 1, w));
  // Group offsets: ids as int32, histc over E bins, cumsum; the sentinel mask (expert
  // parallelism's, run without it too) and the clamp.
  ops.op({{"moe.ids_int", 12 * S, 0, generic},
          {"moe.histc_zeros", 4 * E, 0, generic},
          {"moe.histc", 4 * S + 4 * E, 0, generic},
          {"moe.offsets_cumsum", 8 * E, 0, generic},
          {"moe.sentinel_compare", 9 * S, 0, generic},
          {"moe.sentinel_clamp", 16 * S, 0, generic}},
         {}, S);
  ops.op({{"moe.masked_fill_tokens", 2 * S * h * x, 0, generic}},
         {{"moe.bwd.masked_fill_tokens", 2 * S * h * x, 0, generic}});

  const GroupedGemm gate_up{"moe.experts.gate_up", S, h, 2 * F, hit, xdt, fallback};
  const GroupedGemm down{"moe.experts.down", S, F, h, hit, xdt, fallback};
  grouped_backward(ops, gate_up, E, S * h * x); // the gathered tokens
  // chunk's backward: the gate's and up's gradients catted into gate_up's layout.
  ops.op({}, {{"moe.experts.bwd.chunk_cat", 4 * S * F * x, 0, generic}});
  grouped_forward(ops, gate_up);
  // _apply_gate: act(gate) * up on chunks of gate_up's output (kept whole: both are views).
  ops.op({{"moe.experts.silu", 2 * S * F * x, 4 * S * F, activate}},
         {{"moe.experts.bwd.silu", 3 * S * F * x, 8 * S * F, activate}}, 2 * S * F * x);
  ops.op({{"moe.experts.mul", 3 * S * F * x, S * F, binary}},
         {{"moe.experts.bwd.mul_up", 3 * S * F * x, S * F, binary},
          {"moe.experts.bwd.mul_act", 3 * S * F * x, S * F, binary}},
         S * F * x); // act's output (the product: kept by down, below)
  grouped_backward(ops, down, E, S * F * x);
  grouped_forward(ops, down);
  // proj_out * weights (keeps both for their gradients), the sentinels' fill, back to the
  // tokens' order, summed over each token's k rows.
  ops.op({{"moe.weigh", 2 * S * h * x + S * w, S * h, binary}},
         {{"moe.bwd.weigh_rows", 2 * S * h * x + S * w, S * h, binary},
          {"moe.bwd.weigh_weights", 3 * S * h * x, S * h, binary}, // the gradient times the rows, then summed
          {"moe.bwd.weigh_weights_sum", S * h * x + S * w, S * h, generic}},
         S * h * x + S * w);
  ops.op({{"moe.masked_fill_rows", 2 * S * h * x, 0, generic}},
         {{"moe.bwd.masked_fill_rows", 2 * S * h * x, 0, generic}});
  ops.op({{"moe.inverse_arange", 8 * S, 0, generic}, {"moe.inverse_index_put", 24 * S, 0, generic}}, {}, 8 * S);
  ops.op({{"moe.gather_rows", 2 * S * h * x + 8 * S, 0, generic}}, index_backward("moe.bwd.gather_rows", S, S, h, x));
  ops.op({{"moe.combine_sum", (S + T) * h * x, S * h, generic}}, {});

  if (m.moe.shared_experts > 0) {
    // The shared expert's output times sigmoid of its own Linear(h, 1), added to the
    // experts' output.
    if (m.moe.shared_expert_gate) {
      linear(ops, "moe.shared_gate", T, h, 1, true, p);
      ops.op({{"moe.shared_gate.sigmoid", 2 * T * c, T, activate}},
             {{"moe.shared_gate.bwd.sigmoid", 3 * T * c, T, activate}}, T * c);
      ops.op({{"moe.shared_gate.mul", (2 * h + 1) * T * c, T * h, binary}},
             {{"moe.shared_gate.bwd.mul_shared", (2 * h + 1) * T * c, T * h, binary},
              {"moe.shared_gate.bwd.mul_gate", 2 * T * h * c + T * c, T * h, binary}},
             T * h * c); // the shared expert's output
    }
    residual_add_of(ops, "moe.shared_add", T, h, x, c, false);
  }
  // Most held in the block's backward is at down's input gradient: everything kept still
  // there, plus the gradients of down's output (S h) and of its input (S F). Later ones
  // are larger (chunk's cat: 4 S F) but come after the 2 S F of gate_up's output and the
  // 2 S F act and product have gone.
  return S * F * x + S * h * x;
}

} // namespace memwall::hf
