// The sparse MoE block of Mixtral, Qwen2-MoE, Qwen3-MoE, gpt-oss and DeepSeek-V3 as
// transformers 5 runs it in eager PyTorch (calibration/research/hf-moe-inventory.md, read
// from integrations/moe.py and the models' modeling files against the H200 steps of
// hf-families.csv).
//
// The router (HfMoeRouter.cpp) gives each token its top-k experts and weights. The experts run through
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
// passes: as many bits as S needs; one for the E expert ids a bias gather indexes by),
// the S gathered rows' gradients added in.
std::vector<EagerKernel> index_backward(const std::string& name, double rows, double S, double width, double e,
                                        int sort_passes = 2)
{
  std::vector<EagerKernel> ks{{name + ".zeros", rows * width * e, 0, generic}};
  for (const EagerKernel& k : radix_sort(name + ".sort", S, sort_passes))
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

// A biased expert GEMM's bias (gpt-oss): bias[expert of each row] gathered (S x width),
// added to the output in place; backward the gathered rows' gradient indexed back into
// the E x width bias gradient.
void expert_bias(EagerOps& ops, const std::string& name, double S, double E, double width, double x)
{
  ops.op({{name + ".gather", 2 * S * width * x + 8 * S, 0, generic},
          {name + ".add", 3 * S * width * x, S * width, binary}},
         index_backward(name + ".bwd", E, S, width, x, 1));
}

// _apply_gate's act(gate) * up on the chunks of gate_up's output (kept whole: both are
// views), the product kept by down.
void silu_gate(EagerOps& ops, double S, double F, double x)
{
  ops.op({{"moe.experts.silu", 2 * S * F * x, 4 * S * F, activate}},
         {{"moe.experts.bwd.silu", 3 * S * F * x, 8 * S * F, activate}}, 2 * S * F * x);
  ops.op({{"moe.experts.mul", 3 * S * F * x, S * F, binary}},
         {{"moe.experts.bwd.mul_up", 3 * S * F * x, S * F, binary},
          {"moe.experts.bwd.mul_act", 3 * S * F * x, S * F, binary}},
         S * F * x); // act's output
}

// gpt-oss's _apply_gate on the interleaved gate and up: gate.clamp(max=7),
// up.clamp(-7, 7), glu = gate * sigmoid(gate * 1.702), (up + 1) * glu. Kept: gate_up's
// output (the clamps' input), the clamped gate, the sigmoid, up + 1 and glu (the product
// is down's, kept there): 28 S F bytes in fp32 with it, as the inventory counts.
void clamped_swiglu(EagerOps& ops, double S, double F, double x)
{
  const double E = S * F;
  ops.op({{"moe.experts.clamp_gate", 2 * E * x, E, generic}}, {{"moe.experts.bwd.clamp_gate", 3 * E * x, E, generic}},
         2 * E * x);
  ops.op({{"moe.experts.clamp_up", 2 * E * x, E, generic}}, {{"moe.experts.bwd.clamp_up", 3 * E * x, E, generic}});
  ops.op({{"moe.experts.mul_alpha", 2 * E * x, E, binary}}, {{"moe.experts.bwd.mul_alpha", 2 * E * x, E, binary}});
  ops.op({{"moe.experts.sigmoid", 2 * E * x, 4 * E, activate}},
         {{"moe.experts.bwd.sigmoid", 3 * E * x, 3 * E, activate}}, E * x);
  ops.op({{"moe.experts.mul_glu", 3 * E * x, E, binary}},
         {{"moe.experts.bwd.glu_sig", 3 * E * x, E, binary},
          {"moe.experts.bwd.glu_gate", 3 * E * x, E, binary},
          {"moe.experts.bwd.gate_grad_sum", 3 * E * x, E, binary}},
         E * x);
  ops.op({{"moe.experts.add_one", 2 * E * x, E, binary}}, {});
  ops.op({{"moe.experts.mul_out", 3 * E * x, E, binary}},
         {{"moe.experts.bwd.mul_out_up", 3 * E * x, E, binary}, {"moe.experts.bwd.mul_out_glu", 3 * E * x, E, binary}},
         2 * E * x);
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
  // Qwen2-MoE runs its shared expert (a LlamaMLP on the same input, gated) before the
  // experts, DeepSeek-V3 its (ungated) after them; backward reaches the first one last.
  const bool shared       = m.moe.shared_experts > 0;
  const bool shared_first = shared && m.moe.shared_expert_gate;
  const double shared_ffn = static_cast<double>(m.moe.shared_ffn * m.moe.shared_experts);

  // The input's users: the router's cast and the experts' gather (and a shared expert's
  // gate's and up's casts, and its gate's): their gradients summed.
  const int users = 2 + (shared ? 2 : 0) + (m.moe.shared_expert_gate ? 1 : 0);
  for (int i = 1; i < users; ++i)
    grad_accumulate(ops, "moe.grad_sum" + std::to_string(i), T * h, x);
  if (shared_first)
    gated_mlp(ops, "moe.shared", T, h, shared_ffn, false, p);
  const double w = moe_router(ops, m, T, p); // the routing weights' element bytes

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
  grouped_forward(ops, gate_up);
  if (m.moe.expert_biases)
    expert_bias(ops, "moe.experts.gate_up_bias", S, E, 2 * F, x);
  // The gate's two views of gate_up's output: their gradients assembled before the bias's
  // and the GEMM's backward read them.
  if (m.family == "gpt_oss") { // gate and up interleaved: two strided slices' gradients, summed
    ops.op({}, {{"moe.experts.bwd.slice_gate_zeros", 2 * S * F * x, 0, generic},
                {"moe.experts.bwd.slice_gate_copy", 2 * S * F * x, 0, generic},
                {"moe.experts.bwd.slice_up_zeros", 2 * S * F * x, 0, generic},
                {"moe.experts.bwd.slice_up_copy", 2 * S * F * x, 0, generic},
                {"moe.experts.bwd.slices_sum", 6 * S * F * x, 2 * S * F, binary}});
  } else { // chunk's backward: the gate's and up's gradients catted into gate_up's layout
    ops.op({}, {{"moe.experts.bwd.chunk_cat", 4 * S * F * x, 0, generic}});
  }
  if (m.family == "gpt_oss")
    clamped_swiglu(ops, S, F, x);
  else
    silu_gate(ops, S, F, x);
  grouped_backward(ops, down, E, S * F * x);
  grouped_forward(ops, down);
  if (m.moe.expert_biases)
    expert_bias(ops, "moe.experts.down_bias", S, E, h, x);
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

  if (shared) {
    // Qwen2-MoE: the shared expert's output times sigmoid of its own Linear(h, 1); either
    // way added to the experts' output.
    if (!shared_first)
      gated_mlp(ops, "moe.shared", T, h, shared_ffn, false, p);
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
