#include "workloads/training/blocks/TeFp8Linears.hpp"

#include "workloads/training/blocks/KernelBuilders.hpp"

namespace memwall {

using kernels::backward_only;
using kernels::forward_only;

namespace {

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// TE's Linear modules of a Megatron-Core layer: not the router (a plain BF16 linear in
// TopKRouter), not the routed experts (TEGroupedLinear, not modelled here).
bool fp8_linear(const KernelPlan& k)
{
  return k.kclass == KernelClass::gemm && k.dtype == Dtype::fp8 && k.shape.known() &&
         !starts_with(k.name, "moe.router") && !starts_with(k.name, "moe.experts");
}

// The GEMMs Megatron-Core builds as te.LayerNormLinear, fusing the norm before them:
// linear_qkv, a dense MLP's linear_fc1, MLA's up-projections after their latent norms.
// The layer's input norm before MLA's down-projections and an MoE layer's pre-MLP norm
// are TENorm modules of their own.
bool fused_norm_before(const std::vector<KernelPlan>& ks, size_t i)
{
  const std::string& n = ks[i].name;
  bool fusable         = n == "qkv" || n == "mlp.up" || n == "attn.q_up" || n == "attn.kv_up";
  return fusable && i > 0 && ks[i - 1].kclass == KernelClass::elementwise && ks[i - 1].family == KernelFamily::norm;
}

bool tp_collective(const TpComm& c, CollectiveKind kind)
{
  return c.group == CommGroup::tp && c.kind == kind && c.bytes > 0;
}

} // namespace

void te_fp8_linears(BlockPlan& b, const StepShape& s)
{
  auto& ks       = b.kernels;
  const double e = s.act_bytes; // the BF16 activations' bytes
  for (size_t i = ks.size(); i-- > 0;) {
    if (starts_with(ks[i].name, "moe.router"))
      ks[i].dtype = Dtype::bf16;
    if (!fp8_linear(ks[i]))
      continue;
    KernelPlan& k  = ks[i];
    const double m = k.shape.m, in = k.shape.k, out = k.shape.n;
    const double x = m * in, dy = m * out, w = in * out; // the GEMM's input, output gradient, weight elements
    const bool row_sp = s.sp && tp_collective(k.fwd_after, CollectiveKind::reduce_scatter);
    // A column-parallel GEMM under sequence parallelism sees its input gathered from the
    // tp ranks' shards; it saves (and casts) its own shard.
    const bool gathered = s.sp && tp_collective(k.bwd_before, CollectiveKind::all_gather) && !row_sp;
    const double local  = gathered ? x / static_cast<double>(s.tp) : x;
    const bool ln       = fused_norm_before(ks, i);
    const std::string n = k.name;

    // The GEMMs: FP8 operands (the weight's transpose in dgrad, the input's and the
    // gradient's in wgrad), BF16 outputs, the weight gradient into the fp32 main grad.
    k.fwd_bytes = w + x + dy * e;
    k.bwd_bytes = w + dy + x * e + x + dy + 2.0 * 4 * w;
    // The input saved in FP8. A GEMM that shared another's saved BF16 input (MLA's
    // kv_down reads the queries' input) keeps an FP8 copy of its own in TE.
    if (k.saved_bytes >= local * e)
      k.saved_bytes -= local * (e - 1);
    else
      k.saved_bytes += local;
    if (gathered) // backward all-gathers the saved FP8 shard again
      k.bwd_before.bytes /= e;

    // Backward, listed after the GEMM so that it runs before the GEMM's backward: the
    // output gradient to E5M2 (cast + transpose, the bias gradient fused), or under
    // sequence parallelism on a row-parallel GEMM cast, gathered in FP8 and transposed.
    std::vector<KernelPlan> after;
    if (row_sp) {
      after.push_back(backward_only(n + ".fp8_cast_grad", 3 * dy / static_cast<double>(s.tp) + 2 * dy, 0));
      k.bwd_before.bytes /= e;
    } else {
      after.push_back(backward_only(n + ".fp8_cast_transpose_grad", 4 * dy, 0));
      // The bias gradient's kernel runs no more; a collective it carries (context
      // parallelism's K and V after the QKV bias) still runs.
      size_t bias = kernels::index_of(ks, n + ".bias_grad");
      if (bias < ks.size())
        ks[bias].bwd_bytes = ks[bias].bwd_flops = ks[bias].bwd_model_flops = 0;
    }
    // The input's FP8 transpose for the weight gradient, where forward did not make it.
    if (ln || gathered)
      after.push_back(backward_only(n + ".fp8_transpose_input", 2 * x, 0));

    // Forward, before the GEMM: the weight's cached cast once a step, and the input's cast.
    std::vector<KernelPlan> before;
    KernelPlan weight             = forward_only(n + ".fp8_cast_weight", 4 * w, 0);
    weight.first_micro_batch_only = true;
    before.push_back(weight);
    if (ln) {
      // The norm writes FP8, which sequence parallelism all-gathers in FP8.
      KernelPlan& norm = ks[i - 1];
      norm.fwd_bytes -= local * (e - 1);
      if (tp_collective(norm.fwd_after, CollectiveKind::all_gather))
        norm.fwd_after.bytes /= e;
    } else {
      // Cast and transpose (R 2, W 1 + 1); gathered, only the row-wise cast of the shard.
      before.push_back(forward_only(n + ".fp8_cast_transpose", gathered ? 3 * local : 4 * local, 0));
    }
    b.cached_weight_bytes += 2 * w;
    ks.insert(ks.begin() + static_cast<std::ptrdiff_t>(i) + 1, after.begin(), after.end());
    ks.insert(ks.begin() + static_cast<std::ptrdiff_t>(i), before.begin(), before.end());
  }
}

} // namespace memwall
