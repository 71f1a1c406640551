// PEFT's LoRA and QLoRA as transformers, PEFT and bitsandbytes run a projection under the
// `pytorch` stack (Precision::lora): the frozen base (bitsandbytes' NF4 dequantised at
// each use), the fp32 adapters (calibration/research/peft-qlora-liger.md sections 1-2).
#include "workloads/modelcode/HfModel.hpp"

#include <tuple>

namespace memwall::hf {
namespace {

constexpr KernelFamily generic = KernelFamily::generic;
constexpr KernelFamily binary  = KernelFamily::residual;

} // namespace

LoraTarget lora_target(const std::string& projection)
{
  // HfLlama's names and transformers' own (HfPhi3's, HfGemma's).
  static const std::vector<std::tuple<const char*, const char*, const char*>> projections{
      {"attn.q", "qkv", "q_proj"},
      {"attn.k", "qkv", "k_proj"},
      {"attn.v", "qkv", "v_proj"},
      {"attn.o", "proj", "o_proj"},
      {"mlp.gate", "mlp.up", "gate_proj"},
      {"mlp.up", "mlp.up", "up_proj"},
      {"mlp.down", "mlp.down", "down_proj"},
      {"self_attn.q_proj", "qkv", "q_proj"},
      {"self_attn.k_proj", "qkv", "k_proj"},
      {"self_attn.v_proj", "qkv", "v_proj"},
      {"self_attn.qkv_proj", "qkv", "qkv_proj"},
      {"self_attn.o_proj", "proj", "o_proj"},
      {"mlp.gate_proj", "mlp.up", "gate_proj"},
      {"mlp.up_proj", "mlp.up", "up_proj"},
      {"mlp.gate_up_proj", "mlp.up", "gate_up_proj"},
      {"mlp.down_proj", "mlp.down", "down_proj"}};
  for (const auto& [name, group, module] : projections)
    if (projection == name)
      return {group, module};
  return {};
}

std::vector<std::string> lora_modules(Arch a)
{
  if (a == Arch::phi3)
    return {"qkv_proj", "o_proj", "gate_up_proj", "down_proj"};
  return {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
}

// A frozen projection under PEFT (Precision::lora) and its adapter where it has one
// (calibration/research/peft-qlora-liger.md sections 1-2). The list runs: x's two gradients
// summed (after both paths' backward), the base's casts and dequantisation, its GEMM, the
// dequantisation again for backward (listed after the GEMM: the backward walk meets it
// first), the output's cast, the adapter.
void peft_linear(EagerOps& ops, const std::string& name, double T, double in, double out, bool cast_input,
                 const Precision& p)
{
  const double W = in * out, c = p.compute;
  // bitsandbytes quantises every Linear but lm_head (llm_int8_skip_modules).
  const LoraTarget target = lora_target(name);
  const bool nf4 = p.lora.nf4_base && name != "lm_head", adapted = p.lora.targets_module(target.group, target.module);
  if (adapted)
    grad_accumulate(ops, name + ".lora.grad_sum", T * in, p.param);
  // bitsandbytes' Linear4bit (<= 0.49): x.to(compute_dtype), dequantize_4bit (the 8-bit
  // absmax of each 64-weight block dequantised and offset, then the NF4 codes into a bf16
  // W), F.linear, the output cast back to x's dtype; backward dequantises again for the
  // input gradient. The bf16 W lives only around its GEMM; nothing is kept. A frozen fp32
  // weight under autocast (QLoRA's lm_head after prepare_model_for_kbit_training) is cast
  // at every call, uncached, and mm keeps the copy for the input gradient.
  auto dequantize = [&](const std::string& at) {
    return std::vector<EagerKernel>{{at + ".dequantize_absmax", W / 64 * (1 + 4) + W / (64 * 256) * 4, 0, generic},
                                    {at + ".absmax_offset", W / 64 * 8, W / 64, generic},
                                    {at + ".dequantize_nf4", W * (0.5 + c) + W / 64 * 4, 0, generic}};
  };
  std::vector<EagerKernel> fwd, bwd;
  if (cast_input && p.autocast()) {
    fwd.push_back(cast_kernel(name + ".cast_input", T * in, p.param, c));
    bwd.push_back(cast_kernel(name + ".bwd.cast_input_grad", T * in, c, p.param));
  }
  if (nf4)
    for (const EagerKernel& k : dequantize(name))
      fwd.push_back(k);
  ops.op(fwd, bwd);
  if (!nf4 && p.autocast())
    ops.op({cast_kernel(name + ".cast_frozen_weight", W, p.param, c)}, {}, W * c, MemCategory::weights);
  ops.gemm(name, T, in, out, p.compute_dtype, false);
  ops.back().packs_nothing = nf4;                               // MatMul4Bit keeps its weight in ctx.tensors
  const bool cast_back     = nf4 && p.autocast() && cast_input; // out.to(inp_dtype): an fp32 input's
  if (nf4)
    ops.op({}, dequantize(name + ".bwd"));
  if (cast_back)
    ops.op({cast_kernel(name + ".cast_output", T * out, c, p.param)},
           {cast_kernel(name + ".bwd.cast_output_grad", T * out, p.param, c)});
  if (!adapted)
    return;
  // PEFT: result + lora_B(lora_A(dropout(x))) * scaling, the adapters fp32 parameters cast
  // under autocast (or the compute dtype's: autocast_adapter_dtype=False). lora.Linear
  // first casts x to the adapters' dtype: a bf16 x to fp32 adapters, which autocast casts
  // back for lora_A, which keeps that copy: every adapted projection its own. The
  // bitsandbytes wrapper skips the round trip under autocast and clones the base's result
  // instead; its lora_A keeps autocast's cast of an fp32 x, or x itself (kept by another op
  // already: the attention's output, the MLP's product). Adapters in x's own dtype keep x
  // alone: the first adapter reading a norm's output (q's of q, k and v) keeps it, which
  // nothing else keeps with the norm's weight frozen. lora_dropout p > 0: each adapted
  // projection's own nn.Dropout on that x, its mask kept, and its output too where lora_A
  // reads it uncast.
  const double r = static_cast<double>(p.lora.rank), o = cast_back ? p.param : c;
  const double a       = p.lora.adapter_dtype == Dtype::fp32 ? 4 : c;
  Precision adapter    = p;
  adapter.lora.enabled = false;
  adapter.param        = a;
  bool a_casts         = cast_input && p.autocast();
  double xd            = cast_input ? p.param : c; // x's bytes an element as the adapter's path gets it
  if (nf4) {
    ops.op({{name + ".lora.clone_result", 2 * T * out * o, 0, generic}}, {});
  } else if (!a_casts && a != c) {
    ops.op({cast_kernel(name + ".lora.x_to_fp32", T * in, xd, 4)},
           {cast_kernel(name + ".lora.bwd.x_grad_from_fp32", T * in, 4, xd)});
    a_casts = true;
    xd      = 4;
  }
  if (p.lora.dropout > 0) {
    dropout(ops, name + ".lora.dropout", T * in, xd);
    if (!a_casts)
      ops.back().saved_bytes += T * in * xd; // lora_A's input, for its weight gradient
  }
  const bool reads_x = !a_casts && p.lora.dropout <= 0; // lora_A's input is x itself
  if (a_casts && a == c) {                              // compute-dtype adapters on an fp32 x: autocast casts x alone
    ops.op({cast_kernel(name + ".lora.cast_x", T * in, p.param, c)},
           {cast_kernel(name + ".lora.bwd.cast_x_grad", T * in, c, p.param)}, T * in * c);
    a_casts = false;
  }
  const bool keeps_x = reads_x && cast_input && ops.keep_once(target.group + ".input");
  linear(ops, name + ".lora_A", T, in, r, a_casts || keeps_x, adapter);
  linear(ops, name + ".lora_B", T, r, out, false, adapter);
  ops.back().saved_bytes += T * r * c; // lora_A's output, for lora_B's weight gradient
  std::vector<EagerKernel> bwd_add{{name + ".lora.bwd.scale", 2 * T * out * c, T * out, binary}};
  if (o != c)
    bwd_add.insert(bwd_add.begin(), cast_kernel(name + ".lora.bwd.cast_grad", T * out, o, c));
  ops.op({{name + ".lora.scale", 2 * T * out * c, T * out, binary},
          {name + ".lora.add", T * out * (2 * o + c), T * out, binary}},
         bwd_add);
}

} // namespace memwall::hf
