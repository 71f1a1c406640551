#include "workloads/modelcode/HfModules.hpp"

#include <algorithm>

namespace memwall::hf {
namespace {

constexpr KernelFamily generic  = KernelFamily::generic;
constexpr KernelFamily binary   = KernelFamily::residual; // adds and multiplies of two tensors
constexpr KernelFamily activate = KernelFamily::activation;

// AccumulateGrad's in-place add of a micro-batch's gradient of `elems` parameters of
// `bytes` each into .grad (from the second micro-batch on).
EagerKernel accumulate_grad(const std::string& name, double elems, double bytes)
{
  return {name, 3 * elems * bytes, elems, binary, true};
}

} // namespace

EagerKernel cast_kernel(const std::string& name, double elems, double from, double to)
{
  return {name, elems * (from + to), 0, generic};
}

BlockPlan layer_plan(const ModelSpec& m, int64_t layer, double input_bytes)
{
  BlockPlan b;
  b.name        = "L" + std::to_string(layer);
  b.layer       = true;
  b.params      = m.layer_params(layer);
  b.input_bytes = input_bytes;
  return b;
}

void rms_norm(EagerOps& ops, const std::string& name, double T, double h, const Precision& p)
{
  if (p.liger) {
    liger_rms_norm(ops, name, T, h, p);
    return;
  }
  rms_norm_of(ops, name, T, h, p.param, p.param, true, p.lora.enabled);
}

void head_rms_norm(EagerOps& ops, const std::string& name, double T, double heads, double D, const Precision& p)
{
  rms_norm_of(ops, name, T * heads, D, p.compute, p.param, false, p.lora.enabled);
}

void rms_norm_of(EagerOps& ops, const std::string& name, double T, double h, double e, double w, bool other_users,
                 bool frozen)
{
  const double E = T * h;
  // LlamaRMSNorm: hidden.to(float32) ; pow(2).mean(-1, keepdim) ; + eps ; rsqrt ;
  // hidden * rsqrt ; .to(input_dtype) ; weight * hidden. The casts launch only for a
  // stream that is not fp32 already (a model in bf16 or fp16, no autocast).
  const bool casts = e != 4;
  std::vector<EagerKernel> fwd;
  if (casts)
    fwd.push_back(cast_kernel(name + ".to_fp32", E, e, 4));
  for (const EagerKernel& k : std::vector<EagerKernel>{{name + ".pow", 2 * E * 4, E, generic},
                                                       {name + ".mean", (E + T) * 4, E, generic},
                                                       {name + ".add_eps", 2 * T * 4, T, generic},
                                                       {name + ".rsqrt", 2 * T * 4, T, generic},
                                                       {name + ".mul_rsqrt", (2 * E + T) * 4, E, binary}})
    fwd.push_back(k);
  if (casts)
    fwd.push_back(cast_kernel(name + ".to_input_dtype", E, 4, e));
  fwd.push_back({name + ".mul_weight", E * e + (E + h) * w, E, binary}); // the weight's dtype promotes
  // MulBackward (weight: grad * weight, grad * normed summed over tokens, after a
  // memset), MulBackward (x * rsqrt: grad * rsqrt, grad * x summed over the hidden
  // dimension), added to the residual stream's gradient of x, RsqrtBackward (3 small),
  // MeanBackward (expand / h), PowBackward (pow(x, 1) copied, times 2, times the
  // gradient), added. With the casts, ToCopyBackward casts the gradient up to fp32 after
  // the weight's MulBackward and back down at the end; between them every gradient is
  // fp32 (f) and belongs to the fp32 copy of x, whose two users' gradients are added
  // there; the residual stream's is added to x's after the cast back, in x's dtype.
  const double f = casts ? 4 : e;
  // A frozen weight (PEFT) has no gradient: no product with the normed input, which
  // autograd then does not keep.
  std::vector<EagerKernel> bwd{{name + ".bwd.mul_weight", (2 * E + h) * w, E, binary}};
  if (!frozen)
    for (const EagerKernel& k : {EagerKernel{name + ".bwd.mul_normed", E * (2 * w + e), E, binary},
                                 EagerKernel{name + ".bwd.memset", h * e, 0, generic},
                                 EagerKernel{name + ".bwd.sum_weight", (E + h) * w, E, generic},
                                 accumulate_grad(name + ".bwd.accumulate_weight_grad", h, w)})
      bwd.push_back(k);
  if (casts)
    bwd.push_back(cast_kernel(name + ".bwd.to_fp32", E, e, 4));
  for (const EagerKernel& k : std::vector<EagerKernel>{{name + ".bwd.mul_rsqrt", (2 * E + T) * f, E, binary},
                                                       {name + ".bwd.mul_x", 3 * E * f, E, binary},
                                                       {name + ".bwd.sum_hidden", (E + T) * f, E, generic},
                                                       {name + ".bwd.rsqrt_pow", 2 * T * f, T, generic},
                                                       {name + ".bwd.rsqrt_mul", 2 * T * f, T, generic},
                                                       {name + ".bwd.rsqrt_mul2", 3 * T * f, T, generic},
                                                       {name + ".bwd.mean_div", (E + T) * f, E, generic},
                                                       {name + ".bwd.pow_copy", 2 * E * f, 0, generic},
                                                       {name + ".bwd.pow_mul2", 2 * E * f, E, generic},
                                                       {name + ".bwd.pow_mul", 3 * E * f, E, binary},
                                                       {name + ".bwd.add_x", 3 * E * f, E, binary}})
    bwd.push_back(k);
  EagerKernel residual{name + ".bwd.add", 3 * E * e, E, binary};
  if (casts) {
    bwd.push_back(cast_kernel(name + ".bwd.to_input_dtype", E, 4, e));
    if (other_users)
      bwd.push_back(residual);
  } else if (other_users) { // x's own gradients: the residual stream's first, then the product's (the order recorded)
    bwd.insert(bwd.begin() + (frozen ? 4 : 8), residual);
  }
  // x * rsqrt and rsqrt in fp32; with the casts also the fp32 x and the cast-back output
  // (mul_weight's input) instead of x * rsqrt. A frozen weight's product keeps neither
  // normed input (x * rsqrt's own backward reads x and rsqrt).
  const double normed = frozen ? 0.0 : casts ? E * e : E * 4;
  ops.op(fwd, bwd, (casts ? E * 4 : 0.0) + T * 4 + normed);
}

void linear(EagerOps& ops, const std::string& name, double T, double in, double out, bool cast_input,
            const Precision& p)
{
  if (p.lora.enabled) {
    peft_linear(ops, name, T, in, out, cast_input, p);
    return;
  }
  const double W = in * out;
  // The weight's gradient: cast back to the parameter's dtype under autocast (the cast
  // weight kept for backward: autocast's cache), added to .grad from the second micro-batch on.
  std::vector<EagerKernel> weight_fwd, weight_bwd;
  if (p.autocast()) {
    weight_fwd.push_back(cast_kernel(name + ".cast_weight", W, p.param, p.compute));
    weight_bwd.push_back(cast_kernel(name + ".bwd.cast_weight_grad", W, p.compute, p.param));
  }
  weight_bwd.push_back(accumulate_grad(name + ".bwd.accumulate_weight_grad", W, p.param));
  ops.op(weight_fwd, weight_bwd, p.autocast() ? W * p.compute : 0.0, MemCategory::weights);
  if (p.autocast() && cast_input)
    ops.op({cast_kernel(name + ".cast_input", T * in, p.param, p.compute)},
           {cast_kernel(name + ".bwd.cast_input_grad", T * in, p.compute, p.param)}, T * in * p.compute);
  // Without autocast the input itself is kept for the weight gradient (no cast to keep).
  ops.gemm(name, T, in, out, p.compute_dtype, true, !p.autocast() && cast_input ? T * in * p.param : 0.0);
}

void rotary(EagerOps& ops, const std::string& name, double T, double width, const Precision& p)
{
  const double E = T * width, c = p.compute;
  // LlamaRotaryEmbedding returns cos and sin in the hidden stream's dtype: fp32 under
  // autocast with fp32 parameters, where x * cos and rotate_half(x) * sin promote to
  // fp32; the model's own dtype otherwise.
  const double f = p.param;
  std::vector<EagerKernel> fwd{{name + ".mul_cos", E * (c + f), E, binary},
                               {name + ".neg", E * c, E / 2, generic},
                               {name + ".cat", 2 * E * c, 0, generic},
                               {name + ".mul_sin", E * (c + f), E, binary},
                               {name + ".add", 3 * E * f, E, binary}};
  std::vector<EagerKernel> bwd{{name + ".bwd.mul_sin", 2 * E * f, E, binary}};
  if (p.autocast())
    bwd.push_back(cast_kernel(name + ".bwd.cast_sin", E, f, c));
  for (const EagerKernel& k : std::vector<EagerKernel>{{name + ".bwd.neg", E * c, E / 2, generic},
                                                       {name + ".bwd.zeros", E * c, 0, generic},
                                                       {name + ".bwd.slice", E * c, 0, generic},
                                                       {name + ".bwd.zeros2", E * c, 0, generic},
                                                       {name + ".bwd.slice2", E * c, 0, generic},
                                                       {name + ".bwd.add_halves", 3 * E * c, E, binary},
                                                       {name + ".bwd.mul_cos", 2 * E * f, E, binary}})
    bwd.push_back(k);
  if (p.autocast())
    bwd.push_back(cast_kernel(name + ".bwd.cast_cos", E, f, c));
  bwd.push_back({name + ".bwd.add", 3 * E * c, E, binary});
  ops.op(fwd, bwd);
}

// _apply_rotary_emb on one of q or k (T x width): first, second = chunk(x, 2);
// first * cos - second * sin, second * cos + first * sin, catted (DeepSeek's
// apply_rotary_pos_emb_interleave does the same on the even and odd elements). cos and sin, half a
// head wide, come in the hidden stream's dtype (fp32 under autocast: the products
// promote). Backward: the subtraction's negation, the four products' gradients (each
// cast back to x's dtype under autocast), each half's two summed, the halves catted.
void halves_rotary(EagerOps& ops, const std::string& name, double T, double width, const Precision& p)
{
  const double E = T * width, half = E / 2, c = p.compute, f = p.param;
  std::vector<EagerKernel> fwd;
  for (const char* k : {".mul_first_cos", ".mul_second_sin", ".mul_second_cos", ".mul_first_sin"})
    fwd.push_back({name + k, half * (c + 2 * f), half, binary});
  fwd.insert(fwd.begin() + 2, {name + ".sub", 3 * half * f, half, binary});
  fwd.push_back({name + ".add", 3 * half * f, half, binary});
  fwd.push_back({name + ".cat", 2 * E * f, 0, generic});
  std::vector<EagerKernel> bwd{{name + ".bwd.neg", 2 * half * f, half, generic}};
  for (const char* k : {".bwd.mul_first_sin", ".bwd.mul_second_cos", ".bwd.mul_second_sin", ".bwd.mul_first_cos"}) {
    bwd.push_back({name + k, 2 * half * f, half, binary});
    if (p.autocast())
      bwd.push_back(cast_kernel(name + k + "_cast", half, f, c));
  }
  bwd.push_back({name + ".bwd.sum_first", 3 * half * c, half, binary});
  bwd.push_back({name + ".bwd.sum_second", 3 * half * c, half, binary});
  bwd.push_back({name + ".bwd.cat_halves", 2 * E * c, 0, generic});
  ops.op(fwd, bwd);
}

void sdpa(EagerOps& ops, const std::string& name, const Tokens& t, const ModelSpec& m, const Precision& p, bool rotated)
{
  const double T = t.T(), q = static_cast<double>(m.q_dim()), kv = static_cast<double>(m.kv_dim());
  const double Eq = T * q, Ekv = T * kv, c = p.compute, heads = static_cast<double>(m.heads);
  // The rotated q and k are fp32: autocast casts them (v comes from its GEMM in c).
  if (rotated && p.autocast()) {
    ops.op({cast_kernel(name + ".cast_k", Ekv, 4, c)}, {cast_kernel(name + ".bwd.cast_k_grad", Ekv, c, 4)});
    ops.op({cast_kernel(name + ".cast_q", Eq, 4, c)}, {cast_kernel(name + ".bwd.cast_q_grad", Eq, c, 4)});
  }
  // QK^T and AV, 2 b s^2 x width each (the count Megatron and MFU use; the causal mask
  // skips half of it, which the attention efficiency absorbs as it does for Megatron).
  double flops = 2 * t.b * t.s * t.s * (q + static_cast<double>(m.attn_out_dim()));
  double bytes = (2 * Eq + 2 * Ekv) * c;
  double saved = (2 * Eq + 2 * Ekv) * c + T * heads * 4; // q, k, v, output; fp32 log-sum-exp
  // cuDNN's backward: dO . O per row first; after it dq from its fp32 accumulator to c,
  // and with grouped queries dk and dv summed over the heads of each group.
  double group = heads / static_cast<double>(m.kv_heads);
  std::vector<EagerKernel> after{{name + ".bwd.convert_dq", Eq * (4 + c), 0, generic}};
  if (group > 1) {
    after.push_back({name + ".bwd.reduce_dk", Ekv * (group + 1) * c, Ekv * group, generic});
    after.push_back({name + ".bwd.reduce_dv", Ekv * (group + 1) * c, Ekv * group, generic});
  }
  ops.attention(name, flops, bytes, saved, p.compute_dtype,
                {{name + ".bwd.dot_do_o", 2 * Eq * c + T * heads * 4, Eq, generic}}, after);
}

void residual_add(EagerOps& ops, const std::string& name, double T, double h, const Precision& p, bool kept)
{
  residual_add_of(ops, name, T, h, p.param, p.compute, kept);
}

void residual_add_of(EagerOps& ops, const std::string& name, double T, double h, double stream, double branch,
                     bool kept)
{
  const double E = T * h;
  std::vector<EagerKernel> bwd;
  if (branch != stream)
    bwd.push_back(cast_kernel(name + ".bwd.cast_branch_grad", E, stream, branch));
  ops.op({{name, E * (2 * stream + branch), E, binary}}, bwd, kept ? E * stream : 0.0);
}

void grad_accumulate(EagerOps& ops, const std::string& name, double elems, double element_bytes)
{
  ops.op({}, {{name, 3 * elems * element_bytes, elems, binary}});
}

void dynamic_cache_update(EagerOps& ops, const std::string& name, double T, double kv_width, const Precision& p,
                          double kept_beside)
{
  const double kv = T * kv_width * p.compute;
  ops.op({{name + ".cache_cat_k", 2 * kv, 0, generic}, {name + ".cache_cat_v", 2 * kv, 0, generic}},
         {{name + ".bwd.clone_dv", 2 * kv, 0, generic}, {name + ".bwd.clone_dk", 2 * kv, 0, generic}}, kept_beside);
}

void fp32_cache_update(EagerOps& ops, const std::string& name, double T, double kv_width, bool clone_dv,
                       bool sdpa_casts_v)
{
  const double E = T * kv_width;
  std::vector<EagerKernel> bwd;
  if (clone_dv)
    bwd.push_back({name + ".bwd.clone_dv", 4 * E, 0, generic});
  ops.op({{name + ".cache_cat_k", 8 * E, 0, generic}}, bwd);
  ops.hold_until_forward_returns(8 * E); // the cache's k and v, made as k is catted in
  ops.op({{name + ".cache_v_to_fp32", 6 * E, 0, generic}}, {});
  if (sdpa_casts_v)
    ops.op({{name + ".cast_v", 6 * E, 0, generic}}, {{name + ".bwd.cast_v_grad", 6 * E, 0, generic},
                                                     {name + ".bwd.cache_dv_to_input_dtype", 6 * E, 0, generic}});
  else
    ops.op({}, {{name + ".bwd.cache_dv_to_input_dtype", 6 * E, 0, generic}});
}

void rotated_cache_update(EagerOps& ops, const std::string& name, double T, double kv_width, const Precision& p,
                          bool clone_dv, bool sdpa_casts_v)
{
  if (p.builds_cache && p.autocast() && p.param == 4)
    fp32_cache_update(ops, name, T, kv_width, clone_dv, sdpa_casts_v);
  else if (p.builds_cache)
    dynamic_cache_update(ops, name, T, kv_width, p, 0);
}

void layer_norm(EagerOps& ops, const std::string& name, double T, double h, const Precision& p)
{
  const double E = T * h, e = p.param;
  ops.op({{name, 2 * E * e + 2 * h * e + 2 * T * 4, 8 * E, KernelFamily::norm}},
         {{name + ".bwd.grad_input", 3 * E * e + h * e + 2 * T * 4, 8 * E, KernelFamily::norm},
          {name + ".bwd.grad_weight_bias", 2 * E * e + 2 * h * e, 3 * E, KernelFamily::norm},
          accumulate_grad(name + ".bwd.accumulate_weight_grad", h, e),
          accumulate_grad(name + ".bwd.accumulate_bias_grad", h, e)},
         2 * T * 4); // mean and rstd
}

void addmm_linear(EagerOps& ops, const std::string& name, double T, double in, double out, bool cast_input,
                  const Precision& p)
{
  if (p.lora.enabled) { // a frozen bias rides the GEMM's epilogue: no gradient
    linear(ops, name, T, in, out, cast_input, p);
    return;
  }
  // addmm's bias: cast with the weight; backward its gradient is the output gradient
  // summed over the tokens, then cast back (AccumulateGrad).
  std::vector<EagerKernel> bias_fwd,
      bias_bwd{{name + ".bwd.bias_grad", T * out * p.compute + out * p.compute, T * out, KernelFamily::generic}};
  if (p.autocast()) {
    bias_fwd.push_back(cast_kernel(name + ".cast_bias", out, p.param, p.compute));
    bias_bwd.push_back(cast_kernel(name + ".bwd.cast_bias_grad", out, p.compute, p.param));
  }
  bias_bwd.push_back(accumulate_grad(name + ".bwd.accumulate_bias_grad", out, p.param));
  ops.op(bias_fwd, bias_bwd, 0);
  linear(ops, name, T, in, out, cast_input, p);
}

void projection(EagerOps& ops, const std::string& name, double T, double in, double out, bool cast_input, bool bias,
                const Precision& p)
{
  (bias ? addmm_linear : linear)(ops, name, T, in, out, cast_input, p);
}

void dropout(EagerOps& ops, const std::string& name, double elems, double bytes)
{
  ops.op({{name, elems * (2 * bytes + 1), elems, generic}}, {{name + ".bwd", elems * (2 * bytes + 1), elems, generic}},
         elems);
}

void gelu_new(EagerOps& ops, const std::string& name, double T, double f, const Precision& p)
{
  const double E = T * f, c = p.compute;
  // NewGELUActivation: 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * pow(x, 3)))).
  if (!p.autocast()) { // every op in the model's own dtype
    std::vector<EagerKernel> fwd{
        {name + ".pow3", 2 * E * c, 2 * E, activate},  {name + ".mul_coef", 2 * E * c, E, activate},
        {name + ".add_x", 3 * E * c, E, activate},     {name + ".mul_sqrt", 2 * E * c, E, activate},
        {name + ".tanh", 2 * E * c, 10 * E, activate}, {name + ".add_one", 2 * E * c, E, activate},
        {name + ".mul_half", 2 * E * c, E, activate},  {name + ".mul", 3 * E * c, E, activate}};
    std::vector<EagerKernel> bwd{
        {name + ".bwd.mul_b", 3 * E * c, E, activate},     {name + ".bwd.mul_a", 3 * E * c, E, activate},
        {name + ".bwd.mul_half", 2 * E * c, E, activate},  {name + ".bwd.tanh", 3 * E * c, 3 * E, activate},
        {name + ".bwd.mul_sqrt", 2 * E * c, E, activate},  {name + ".bwd.mul_coef", 2 * E * c, E, activate},
        {name + ".bwd.pow2", 2 * E * c, E, activate},      {name + ".bwd.mul3", 2 * E * c, E, activate},
        {name + ".bwd.mul_grad", 3 * E * c, E, activate},  {name + ".bwd.add_grads", 3 * E * c, E, activate},
        {name + ".bwd.add_grads2", 3 * E * c, E, activate}};
    ops.op(fwd, bwd, 5 * E * c);
    return;
  }
  // Under autocast torch.pow is on the fp32 list: x is cast up for it, and everything
  // after mixes a bf16 and an fp32 operand into fp32, so the output is fp32 (c_proj casts
  // it back). Autograd keeps pow's fp32 input, tanh's output, 1 + tanh and 0.5 x.
  std::vector<EagerKernel> fwd{{name + ".mul_half", 2 * E * c, E, activate}, cast_kernel(name + ".to_fp32", E, c, 4),
                               {name + ".pow3", 8 * E, 2 * E, activate},     {name + ".mul_coef", 8 * E, E, activate},
                               {name + ".add_x", E * (c + 8), E, activate},  {name + ".mul_sqrt", 8 * E, E, activate},
                               {name + ".tanh", 8 * E, 10 * E, activate},    {name + ".add_one", 8 * E, E, activate},
                               {name + ".mul", E * (c + 8), E, activate}};
  // Backward from the fp32 output gradient: the product rule (0.5 x's gradient cast back
  // to bf16), tanh's, the two scalings, the gradient to x through the add cast back, pow's
  // three (x^2, x 3, x grad) and its cast back, 0.5's, and x's three gradients summed.
  std::vector<EagerKernel> bwd{
      {name + ".bwd.mul_b", 12 * E, E, activate},        cast_kernel(name + ".bwd.cast_a", E, 4, c),
      {name + ".bwd.mul_a", E * (8 + c), E, activate},   {name + ".bwd.tanh", 12 * E, 3 * E, activate},
      {name + ".bwd.mul_sqrt", 8 * E, E, activate},      cast_kernel(name + ".bwd.cast_add", E, 4, c),
      {name + ".bwd.mul_coef", 8 * E, E, activate},      {name + ".bwd.pow2", 8 * E, E, activate},
      {name + ".bwd.mul3", 8 * E, E, activate},          {name + ".bwd.mul_grad", 12 * E, E, activate},
      cast_kernel(name + ".bwd.cast_pow", E, 4, c),      {name + ".bwd.mul_half", 2 * E * c, E, activate},
      {name + ".bwd.add_grads", 3 * E * c, E, activate}, {name + ".bwd.add_grads2", 3 * E * c, E, activate}};
  ops.op(fwd, bwd, 12 * E + E * c);
}

std::vector<EagerKernel> embedding_backward(const std::string& name, double T, double rows, double h, double e,
                                            bool tied)
{
  std::vector<EagerKernel> k{{name + ".bwd.zero_table", rows * h * e, 0, generic}};
  for (const char* step :
       {".bwd.sort_histogram", ".bwd.sort_onesweep", ".bwd.sort_onesweep2", ".bwd.sort_onesweep3",
        ".bwd.sort_onesweep4", ".bwd.unique", ".bwd.scan", ".bwd.segments", ".bwd.segment_offsets", ".bwd.partials"})
    k.push_back({name + step, 16 * T, 0, generic});
  k.push_back({name + ".bwd.grad_weight", 2 * T * h * e, T * h, generic});
  k.push_back({name + ".bwd.sum_and_scatter", 3 * T * h * e, T * h, generic});
  // A tied table's gradient from the head came first: this one is added to it always.
  if (tied)
    k.push_back({name + ".bwd.tied_grad_sum", 3 * rows * h * e, rows * h, binary});
  else
    k.push_back(accumulate_grad(name + ".bwd.accumulate_grad", rows * h, e));
  return k;
}

} // namespace memwall::hf
