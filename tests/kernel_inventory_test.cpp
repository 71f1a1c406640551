// The kernels a training step launches besides the GEMMs and attention, against the
// inventory of Megatron-LM's GPT code path (megatron/model/transformer.py,
// fused_bias_dropout_add, vocab_parallel_cross_entropy, optimizer/optimizer.py): which
// launches exist and the bytes each moves, written out by hand.
#include "sim/Simulation.hpp"

#include <catch2/catch.hpp>

#include <map>
#include <set>

using namespace memwall;

namespace {

OpDag workload(const std::string& yaml) { return build_workload(parse_spec(yaml, "test.yaml", "")); }

// Kernel ops of the DAG whose names start with `prefix`, name (after the prefix) -> bytes.
std::map<std::string, double> kernels(const OpDag& dag, const std::string& prefix)
{
  std::map<std::string, double> out;
  for (OpId id = dag.first_id(); id < dag.size(); ++id) {
    const Op& op = dag.op(id);
    if (op.kind == OpKind::kernel && op.name.str().rfind(prefix, 0) == 0)
      out[op.name.str().substr(prefix.size())] += op.bytes;
  }
  return out;
}

std::set<std::string> names(const std::map<std::string, double>& m)
{
  std::set<std::string> s;
  for (const auto& [k, v] : m)
    s.insert(k);
  return s;
}

const std::string gpt = "hardware: {node: dgx-a100, gpus_per_node: 1}\n"
                        "model: {layers: 1, hidden: 1024, heads: 16, vocab: 4096, max_seq_len: 512}\n"
                        "training: {seq_len: 512, global_batch: 1, micro_batch: 1, flash_attention: false, "
                        "precision: fp16}\n";

} // namespace

TEST_CASE("a_gpt_layer_launches_megatrons_kernels_forward_and_backward", "[inventory]")
{
  OpDag dag = workload(gpt);
  // Forward: layer norm, QKV GEMM (+bias), QK^T, fused scale-mask-softmax, dropout, AV,
  // the context made contiguous, projection GEMM, bias-dropout-add, layer norm, MLP up
  // GEMM, bias-GeLU, MLP down GEMM, bias-dropout-add.
  CHECK(names(kernels(dag, "L0.fwd.")) == std::set<std::string>{"ln1", "qkv", "attn.qk", "attn.softmax", "attn.dropout",
                                                                "attn.av", "attn.context_permute", "proj",
                                                                "attn.residual", "ln2", "mlp.up", "mlp.act", "mlp.down",
                                                                "mlp.residual"});
  // Backward adds a bias gradient per linear layer and the sum of the two gradients of
  // each residual-stream tensor that feeds both a norm and a residual add.
  std::set<std::string> bwd = names(kernels(dag, "L0.bwd."));
  for (const char* k : {"qkv.bias_grad", "proj.bias_grad", "mlp.up.bias_grad", "mlp.down.bias_grad", "ln1.grad_sum",
                        "ln2.grad_sum", "attn.residual", "mlp.residual"})
    CHECK(bwd.count(k) == 1);
}

TEST_CASE("bias_dropout_add_moves_3_activations_and_a_byte_mask_and_its_backward_2_and_the_mask", "[inventory]")
{
  // s b h = 512 x 1024 elements of 2 bytes: forward reads branch and residual, writes
  // the sum and a 1-byte mask: (3 x 2 + 1) B each; backward reads gradient and mask and
  // writes the gradient: (2 x 2 + 1) B each. The gradient sum reads 2 and writes 1.
  const double elems = 512.0 * 1024;
  OpDag dag          = workload(gpt);
  CHECK(kernels(dag, "L0.fwd.").at("attn.residual") == Approx(7 * elems));
  CHECK(kernels(dag, "L0.bwd.").at("attn.residual") == Approx(5 * elems));
  CHECK(kernels(dag, "L0.bwd.").at("ln1.grad_sum") == Approx(6 * elems));
  // The QKV bias gradient reads the 3h-wide output gradient once.
  CHECK(kernels(dag, "L0.bwd.").at("qkv.bias_grad") == Approx(3 * elems * 2));
}

TEST_CASE("the_fp32_cross_entropy_passes_over_the_logits_six_times_forward_and_twice_backward", "[inventory]")
{
  // N = T x V = 512 x 4096 logits of 2 bytes. Forward: cast to fp32 (2 + 4), max (4),
  // subtract the max (4 + 4), exp (4 + 4), sum (4), normalise (4 + 4) = 38 B each, plus
  // the target logits (read and write 4 B per token over 3 small tensors: 12 B).
  // Backward: scale the kept softmax (4 + 4), cast back to fp16 (4 + 2) = 14 B each.
  const double T = 512, N = T * 4096;
  OpDag dag  = workload(gpt);
  double fwd = 0, bwd = 0;
  for (const auto& [name, bytes] : kernels(dag, "head.fwd.loss."))
    fwd += bytes;
  for (const auto& [name, bytes] : kernels(dag, "head.bwd.loss."))
    bwd += bytes;
  CHECK(fwd == Approx(38 * N + 12 * T));
  CHECK(bwd == Approx(14 * N));
  CHECK(kernels(dag, "head.fwd.loss.").size() == 7);
}

TEST_CASE("megatrons_fp16_optimizer_moves_40_bytes_per_parameter_and_bf16_42", "[inventory]")
{
  // Per parameter of the layer, with Adam's fp32 master, momentum and variance (12 B) and
  // g-byte gradients (fp16: 2; bf16: 4, Megatron-LM's fp32 main grads, arguments.py):
  //   unscale and check the gradients (fp16 only)   read 2 + write 2 = 4
  //   gradient norm                                 read g
  //   fused Adam                                    read g + 12, write 12
  //   master -> fp16/bf16 weights                   read 4 + write 2 = 6
  //   zero the gradients                            write g
  // fp16: 4 + 2 + 26 + 6 + 2 = 40; bf16: 4 + 28 + 6 + 4 = 42.
  // Layer of h = 1024: 12 h^2 + 13 h parameters (Narayanan et al. 2021, §3).
  const double params = 12.0 * 1024 * 1024 + 13 * 1024;
  auto per_param      = [&](const std::string& precision) {
    std::string yaml = gpt;
    yaml.replace(yaml.find("precision: fp16"), 15, "precision: " + precision);
    double total = 0;
    for (const auto& [name, bytes] : kernels(workload(yaml), "L0."))
      if (name.find("fwd.") != 0 && name.find("bwd.") != 0)
        total += bytes;
    return total / params;
  };
  CHECK(per_param("fp16") == Approx(40).epsilon(1e-9));
  CHECK(per_param("bf16") == Approx(42).epsilon(1e-9));
}

TEST_CASE("a_llama_layer_has_rotary_plain_residual_adds_and_no_bias_gradients", "[inventory]")
{
  OpDag dag = workload("hardware: {node: dgx-a100, gpus_per_node: 1}\n"
                       "model: {preset: llama-2-7b, layers: 1}\n"
                       "training: {seq_len: 512, global_batch: 1, micro_batch: 1}\n");
  auto fwd  = kernels(dag, "L0.fwd.");
  auto bwd  = kernels(dag, "L0.bwd.");
  CHECK(fwd.count("attn.rope") == 1);
  // No dropout: the residual add reads 2 and writes 1 activation; its backward is free.
  CHECK(fwd.at("mlp.residual") == Approx(3 * 512.0 * 4096 * 2));
  CHECK(bwd.count("mlp.residual") == 0);
  for (const auto& [name, bytes] : bwd)
    CHECK(name.find("bias_grad") == std::string::npos);
}

TEST_CASE("an_elementwise_backward_reads_the_gradient_and_what_was_saved_and_writes_one_gradient", "[inventory]")
{
  // Layer norm over s b h = 512 x 1024 elements of 2 B: forward reads x, writes y (4 B
  // each); backward reads dy and the saved x, writes dx (6 B). Softmax over the scores
  // b a s^2 = 16 x 512^2: forward 4 B, backward reads dy and y, writes dx: 6 B. Attention
  // dropout: forward reads x, writes y and a 1-byte mask: 5 B; backward reads dy and the
  // mask, writes dx: 5 B.
  const double stream = 512.0 * 1024, scores = 16.0 * 512 * 512;
  OpDag dag = workload(gpt);
  auto fwd = kernels(dag, "L0.fwd."), bwd = kernels(dag, "L0.bwd.");
  CHECK(fwd.at("ln1") == Approx(4 * stream));
  CHECK(bwd.at("ln1") == Approx(6 * stream));
  CHECK(fwd.at("attn.softmax") == Approx(4 * scores));
  CHECK(bwd.at("attn.softmax") == Approx(6 * scores));
  CHECK(fwd.at("attn.dropout") == Approx(5 * scores));
  CHECK(bwd.at("attn.dropout") == Approx(5 * scores));
}
