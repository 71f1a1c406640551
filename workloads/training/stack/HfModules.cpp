#include "HfModules.hpp"

#include <algorithm>

namespace memwall::hf {
namespace {

constexpr KernelFamily generic  = KernelFamily::generic;
constexpr KernelFamily binary   = KernelFamily::residual;   // adds and multiplies of two tensors
constexpr KernelFamily activate = KernelFamily::activation;

// A cast of `elems` elements from `from` to `to` bytes each.
EagerKernel cast(const std::string& name, double elems, double from, double to)
{
  return {name, elems * (from + to), 0, generic};
}

} // namespace

void rms_norm(EagerOps& ops, const std::string& name, double T, double h, const Precision& p)
{
  const double E = T * h, e = p.param;
  // hidden.pow(2).mean(-1, keepdim) ; + eps ; rsqrt ; hidden * rsqrt ; weight * hidden
  std::vector<EagerKernel> fwd{{name + ".pow", 2 * E * e, E, generic},
                               {name + ".mean", (E + T) * e, E, generic},
                               {name + ".add_eps", 2 * T * e, T, generic},
                               {name + ".rsqrt", 2 * T * e, T, generic},
                               {name + ".mul_rsqrt", (2 * E + T) * e, E, binary},
                               {name + ".mul_weight", (2 * E + h) * e, E, binary}};
  // MulBackward (weight: grad * weight, grad * normed summed over tokens, after a
  // memset), MulBackward (x * rsqrt: grad * rsqrt, grad * x summed over the hidden
  // dimension), the two gradients of x added, RsqrtBackward (3 small), MeanBackward
  // (expand / h), PowBackward (pow(x, 1) copied, times 2, times the gradient), added.
  std::vector<EagerKernel> bwd{{name + ".bwd.mul_weight", (2 * E + h) * e, E, binary},
                               {name + ".bwd.mul_normed", 3 * E * e, E, binary},
                               {name + ".bwd.memset", h * e, 0, generic},
                               {name + ".bwd.sum_weight", (E + h) * e, E, generic},
                               {name + ".bwd.mul_rsqrt", (2 * E + T) * e, E, binary},
                               {name + ".bwd.mul_x", 3 * E * e, E, binary},
                               {name + ".bwd.sum_hidden", (E + T) * e, E, generic},
                               {name + ".bwd.add", 3 * E * e, E, binary},
                               {name + ".bwd.rsqrt_pow", 2 * T * e, T, generic},
                               {name + ".bwd.rsqrt_mul", 2 * T * e, T, generic},
                               {name + ".bwd.rsqrt_mul2", 3 * T * e, T, generic},
                               {name + ".bwd.mean_div", (E + T) * e, E, generic},
                               {name + ".bwd.pow_copy", 2 * E * e, 0, generic},
                               {name + ".bwd.pow_mul2", 2 * E * e, E, generic},
                               {name + ".bwd.pow_mul", 3 * E * e, E, binary},
                               {name + ".bwd.add_x", 3 * E * e, E, binary}};
  ops.op(fwd, bwd, E * e + T * e); // x * rsqrt and rsqrt
}

void linear(EagerOps& ops, const std::string& name, double T, double in, double out, bool cast_input,
            const Precision& p)
{
  if (p.autocast()) {
    double W = in * out;
    ops.op({cast(name + ".cast_weight", W, p.param, p.compute)}, {cast(name + ".bwd.cast_weight_grad", W, p.compute, p.param)},
           W * p.compute, MemCategory::weights);
    if (cast_input)
      ops.op({cast(name + ".cast_input", T * in, p.param, p.compute)},
             {cast(name + ".bwd.cast_input_grad", T * in, p.compute, p.param)}, T * in * p.compute);
  }
  // Without autocast the input itself is kept for the weight gradient (no cast to keep).
  ops.gemm(name, T, in, out, p.compute_dtype, true, !p.autocast() && cast_input ? T * in * p.param : 0.0);
}

void rotary(EagerOps& ops, const std::string& name, double T, double width, const Precision& p)
{
  const double E = T * width, c = p.compute;
  // cos and sin are fp32: x * cos and rotate_half(x) * sin promote to fp32.
  const double f = 4;
  std::vector<EagerKernel> fwd{{name + ".mul_cos", E * (c + f), E, binary},
                               {name + ".neg", E * c, E / 2, generic},
                               {name + ".cat", 2 * E * c, 0, generic},
                               {name + ".mul_sin", E * (c + f), E, binary},
                               {name + ".add", 3 * E * f, E, binary}};
  std::vector<EagerKernel> bwd{{name + ".bwd.mul_sin", 2 * E * f, E, binary}};
  if (p.autocast())
    bwd.push_back(cast(name + ".bwd.cast_sin", E, f, c));
  for (const EagerKernel& k : std::vector<EagerKernel>{{name + ".bwd.neg", E * c, E / 2, generic},
                                                       {name + ".bwd.zeros", E * c, 0, generic},
                                                       {name + ".bwd.slice", E * c, 0, generic},
                                                       {name + ".bwd.zeros2", E * c, 0, generic},
                                                       {name + ".bwd.slice2", E * c, 0, generic},
                                                       {name + ".bwd.add_halves", 3 * E * c, E, binary},
                                                       {name + ".bwd.mul_cos", 2 * E * f, E, binary}})
    bwd.push_back(k);
  if (p.autocast())
    bwd.push_back(cast(name + ".bwd.cast_cos", E, f, c));
  bwd.push_back({name + ".bwd.add", 3 * E * c, E, binary});
  ops.op(fwd, bwd);
}

void sdpa(EagerOps& ops, const std::string& name, const Tokens& t, const ModelSpec& m, const Precision& p)
{
  const double T = t.T(), q = static_cast<double>(m.q_dim()), kv = static_cast<double>(m.kv_dim());
  const double Eq = T * q, Ekv = T * kv, c = p.compute, heads = static_cast<double>(m.heads);
  // The rotated q and k are fp32: autocast casts them (v comes from its GEMM in c).
  if (p.autocast()) {
    ops.op({cast(name + ".cast_k", Ekv, 4, c)}, {cast(name + ".bwd.cast_k_grad", Ekv, c, 4)});
    ops.op({cast(name + ".cast_q", Eq, 4, c)}, {cast(name + ".bwd.cast_q_grad", Eq, c, 4)});
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
  ops.attention(name, flops, bytes, saved, p.compute_dtype, {{name + ".bwd.dot_do_o", 2 * Eq * c + T * heads * 4, Eq, generic}},
                after);
}

void residual_add(EagerOps& ops, const std::string& name, double T, double h, const Precision& p)
{
  const double E = T * h;
  std::vector<EagerKernel> bwd;
  if (p.autocast())
    bwd.push_back(cast(name + ".bwd.cast_branch_grad", E, p.param, p.compute));
  ops.op({{name, E * (2 * p.param + p.compute), E, binary}}, bwd, E * p.param);
}

void grad_accumulate(EagerOps& ops, const std::string& name, double elems, double element_bytes)
{
  ops.op({}, {{name, 3 * elems * element_bytes, elems, binary}});
}

} // namespace memwall::hf
