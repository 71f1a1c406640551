// torchtitan's tensor parallelism (parallelize.py apply_tp) under the `fsdp` stack, counted
// by hand from its plan: SequenceParallel norms, an all-gather before the column-parallel
// wq/wk/wv and w1/w3 (PrepareModuleInput Shard(1) -> Replicate) whose output DTensor's
// autograd keeps gathered, a reduce-scatter after the row-parallel wo and w2
// (output_layouts Shard(1)), and their mirrors in backward.
#include "tests/TestHelpers.hpp"
#include "workloads/model/ModelPresets.hpp"
#include "workloads/training/SavedActivations.hpp"
#include "workloads/training/stack/TrainingStack.hpp"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace memwall;
using namespace memwall::test;

namespace {

// Llama 3 8B at one sequence of 8,192 tokens, tp 8.
constexpr double T = 8192, h = 4096, q = 4096, f = 14336, heads = 32, c = 2, t = 8, Ts = T / t;

BlockPlan block(const char* which, int64_t tp)
{
  TrainingConfig cfg;
  cfg.stack = default_training_stack("fsdp"), cfg.seq_len = 8192, cfg.micro_batch = 1, cfg.global_batch = 8;
  cfg.zero = 3, cfg.tp = tp, cfg.sp = tp > 1;
  auto stack          = default_training_stack("fsdp");
  const ModelSpec& m  = model_preset("llama-3-8b");
  const StepShape s   = step_shape(cfg);
  const std::string w = which;
  return w == "layer" ? stack->layer(m, s, 3) : w == "embed" ? stack->embedding(m, s) : stack->head(m, s);
}

struct Comms {
  double gathered = 0, scattered = 0, reduced = 0;
  int count = 0;
};

Comms tp_comms(const BlockPlan& b, bool forward)
{
  Comms x;
  auto add = [&](const TpComm& k) {
    if (k.bytes <= 0)
      return;
    ++x.count;
    (k.kind == CollectiveKind::all_gather       ? x.gathered
     : k.kind == CollectiveKind::reduce_scatter ? x.scattered
                                                : x.reduced) += k.bytes;
  };
  for (const KernelPlan& k : b.kernels)
    if (forward)
      add(k.fwd_after);
    else
      add(k.bwd_before), add(k.bwd_after);
  return x;
}

} // namespace

TEST_CASE("a_titan_layer_under_tp_gathers_twice_and_reduce_scatters_twice_each_way", "[stack][fsdp][tp]")
{
  // Forward: the normed stream gathered before attention and before the MLP, wo's and
  // w2's partial outputs reduce-scattered: T x h x 2 B each. Backward the mirrors: wo's
  // and w2's output gradients gathered, the summed input gradients of wq/wk/wv and
  // w1/w3 reduce-scattered.
  const BlockPlan layer = block("layer", 8);
  for (bool forward : {true, false}) {
    Comms x = tp_comms(layer, forward);
    CHECK(x.count == 4);
    CHECK(x.gathered == Approx(2 * T * h * c));
    CHECK(x.scattered == Approx(2 * T * h * c));
    CHECK(x.reduced == 0);
  }
  CHECK(tp_comms(block("layer", 1), true).count == 0);
}

TEST_CASE("a_titan_layer_under_tp_keeps_its_gathered_inputs_and_a_tp_share_of_the_rest", "[stack][fsdp][tp]")
{
  // As a_titan_llama_layer_keeps_what_autograd_saves_by_hand at tp 1, per rank: the
  // norms' fp32 rstd and the residual sums on the sequence shard (2 x 4 Ts, 2 x Ts h c);
  // the two gathered inputs whole (2 x T h c: DTensor's autograd keeps the replicated
  // input of wq and of w1); SDPA's q, repeated k and v, output and log-sum-exp over this
  // rank's 4 of 32 heads; the MLP's four T x f/t tensors.
  double expected =
      2 * 4 * Ts + 2 * Ts * h * c + 2 * T * h * c + 4 * T * (q / t) * c + 4 * T * (heads / t) + 4 * T * (f / t) * c;
  double kept = 0;
  for (const KernelPlan& k : block("layer", 8).kernels)
    kept += k.saved_bytes;
  CHECK(kept == Approx(expected).epsilon(1e-12));
}

TEST_CASE("a_titan_layer_under_tp_holds_a_tp_share_of_its_matrices_and_whole_norms", "[stack][fsdp][tp]")
{
  // wq, wo h x h, wk, wv h x 1024, w1, w2, w3 h x 14,336, split 8 ways; the two RMSNorm
  // weights replicated (Meta's Llama 3 8B shape).
  const double matrices = 2 * h * h + 2 * h * 1024 + 3 * h * f;
  CHECK(block("layer", 8).params == Approx(matrices / 8 + 2 * h).epsilon(1e-12));
  // The embedding and the output split over the vocabulary (128,256 / 8 rows); the
  // final norm whole.
  CHECK(block("embed", 8).params == Approx(128256 * h / 8).epsilon(1e-12));
  CHECK(block("head", 8).params == Approx(128256 * h / 8 + h).epsilon(1e-12));
}

TEST_CASE("titans_vocabulary_parallel_edges_move_the_stream_and_a_few_values_per_token", "[stack][fsdp][tp]")
{
  // The embedding's partial lookups reduce-scattered to the sequence shard, the
  // gradient gathered back; the output's input gathered, its gradient reduce-scattered;
  // loss_parallel all-reduces each token's row maximum and sum of exponentials, then
  // its target logit (fp32): 3 x 4 B a token.
  Comms e = tp_comms(block("embed", 8), true), eb = tp_comms(block("embed", 8), false);
  CHECK(e.scattered == Approx(T * h * c));
  CHECK(eb.gathered == Approx(T * h * c));
  Comms o = tp_comms(block("head", 8), true), ob = tp_comms(block("head", 8), false);
  CHECK(o.gathered == Approx(T * h * c));
  CHECK(o.reduced == Approx(3 * 4 * T));
  CHECK(ob.scattered == Approx(T * h * c));
}

TEST_CASE("torchtitans_per_op_checkpointing_under_tp_keeps_the_shards_and_the_scattered_outputs", "[stack][fsdp][tp]")
{
  // The save list (mm, SDPA, reduce_scatter_tensor; every second mm recomputed) at tp 8:
  // the layer's input on the sequence shard; wq's, wv's, w1's and w2's outputs (this
  // rank's columns; w2's the partial T x h before its reduce-scatter); wo's and w2's
  // reduce-scattered outputs (Ts x h); SDPA's output and log-sum-exp.
  const double kv = 1024 / t;
  double expected = Ts * h * c + T * (q / t) * c + T * kv * c + T * (f / t) * c + T * h * c + 2 * Ts * h * c +
                    T * (q / t) * c + 4 * T * (heads / t);
  double kept           = 0;
  const BlockPlan layer = block("layer", 8);
  for (const KernelPlan& k : layer.kernels)
    kept += SavedActivations(Recompute::selective).kept(layer, k);
  CHECK(kept == Approx(expected).epsilon(1e-12));
}

TEST_CASE("torchtitans_per_op_checkpointing_under_tp_gathers_the_normed_stream_again", "[stack][fsdp][tp]")
{
  // all_gather_into_tensor is not in the save list: recomputing the norms gathers their
  // output again for wq/wk/wv and w1/w3's weight gradients, twice a layer a micro-batch.
  OpDag dag = spec_workload("hardware: {node: dgx-h100}\nmodel: {preset: llama-3-8b, layers: 2}\n"
                            "training: {stack: fsdp, seq_len: 2048, global_batch: 8, micro_batch: 1, tp: 2, sp: true, "
                            "recompute: selective}\n");
  int again = 0;
  for (OpId id = dag.first_id(); id < dag.size(); ++id) {
    const Op& op = dag.op(id);
    if (op.kind == OpKind::collective && op.collective == CollectiveKind::all_gather &&
        op.name.str().rfind("L0.recompute.", 0) == 0)
      ++again;
  }
  CHECK(again == 2 * 2); // 2 micro-batches a rank (8 over dp 4)
}

TEST_CASE("a_titan_head_without_a_final_norm_still_gathers_its_input_under_tp", "[stack][fsdp][tp]")
{
  ModelSpec m  = model_preset("llama-3-8b");
  m.final_norm = false;
  TrainingConfig cfg;
  cfg.stack = default_training_stack("fsdp"), cfg.seq_len = 8192, cfg.micro_batch = 1, cfg.global_batch = 8;
  cfg.zero = 3, cfg.tp = 8, cfg.sp = true;
  auto stack = default_training_stack("fsdp");
  CHECK(tp_comms(stack->head(m, step_shape(cfg)), true).gathered == Approx(T * h * c));
}

TEST_CASE("the_fsdp_stack_refuses_tp_without_sp_or_across_kv_heads", "[stack][fsdp][tp][errors]")
{
  const std::string base = "hardware: {node: dgx-h100}\nmodel: {preset: llama-3-8b}\n"
                           "training: {stack: fsdp, seq_len: 2048, global_batch: 8, ";
  CHECK_THAT(refused("fsdp_tp_nosp", base + "tp: 2}\n"),
             Catch::Contains("training.sp") && Catch::Contains("SequenceParallel"));
  // Llama 3 8B has 8 key/value heads: tp 16 would split one.
  CHECK_THAT(refused("fsdp_tp16", "hardware: {node: dgx-h100, nodes: 4}\nmodel: {preset: llama-3-8b}\n"
                                  "training: {stack: fsdp, seq_len: 2048, global_batch: 8, tp: 16, sp: true}\n"),
             Catch::Contains("training.tp") && Catch::Contains("8 key/value heads"));
}

namespace {

// Llama 3 405B's 128K layout: tp 8, cp 16; a rank holds 131,072 / 16 = 8,192 tokens.
BlockPlan cp_layer()
{
  TrainingConfig cfg;
  cfg.stack = default_training_stack("fsdp"), cfg.seq_len = 131072, cfg.micro_batch = 1, cfg.global_batch = 8;
  cfg.zero = 3, cfg.tp = 8, cfg.sp = true, cfg.cp = 16;
  auto stack = default_training_stack("fsdp");
  return stack->layer(model_preset("llama-3-405b"), step_shape(cfg), 3);
}

} // namespace

TEST_CASE("a_titan_layer_under_cp_gathers_k_and_v_at_their_gqa_width_and_scatters_their_gradients", "[stack][fsdp][cp]")
{
  // Llama 3 section 3.3.2: K and V all-gathered over the cp group before attention. One
  // key/value head a tp rank (8 over tp 8), 128 wide: K and V of 131,072 tokens, 2 B,
  // gathered in forward and again in backward, their gradients reduce-scattered.
  const double S = 131072, kv = 128, c = 2;
  double gathered = 0, scattered = 0;
  int collectives       = 0;
  const BlockPlan layer = cp_layer();
  for (const KernelPlan& k : layer.kernels)
    for (const TpComm* x : {&k.fwd_after, &k.bwd_before, &k.bwd_after})
      if (x->group == CommGroup::cp && x->bytes > 0) {
        ++collectives;
        (x->kind == CollectiveKind::all_gather ? gathered : scattered) += x->bytes;
      }
  CHECK(collectives == 3);
  CHECK(gathered == Approx(2 * S * 2 * kv * c));
  CHECK(scattered == Approx(S * 2 * kv * c));
  // Attention: this rank's 8,192 queries over all 131,072 keys, 16 of 128 heads a tp rank
  // (2 x 8,192 x 131,072 x 2,048 for QK^T and again for AV): 1/cp of the sequence's.
  for (const KernelPlan& k : layer.kernels)
    if (k.name == "attention.sdpa")
      CHECK(k.fwd_flops == Approx(2 * 2 * 8192 * S * 2048));
}

TEST_CASE("a_titan_layer_under_cp_gathers_before_it_repeats_and_sums_heads_before_it_scatters", "[stack][fsdp][cp]")
{
  // Backward walks the entries from the last: the re-gather must come before K and V
  // are repeated again for the kernel, and the gradients' reduce-scatter after the sums
  // over each key/value head's 16 query heads.
  std::vector<std::string> order;
  const BlockPlan layer = cp_layer();
  for (size_t i = layer.kernels.size(); i-- > 0;) {
    const KernelPlan& k = layer.kernels[i];
    if (k.bwd_before.group == CommGroup::cp && k.bwd_before.bytes > 0)
      order.push_back("cp.all_gather");
    if (k.runs(false))
      order.push_back(k.name);
    if (k.bwd_after.group == CommGroup::cp && k.bwd_after.bytes > 0)
      order.push_back("cp.reduce_scatter");
  }
  auto at = [&](const std::string& n) {
    auto it = std::find(order.begin(), order.end(), n);
    INFO(n);
    REQUIRE(it != order.end());
    return it - order.begin();
  };
  CHECK(at("cp.all_gather") < at("attention.sdpa.bwd.repeat_kv"));
  CHECK(at("attention.sdpa.bwd.repeat_kv") < at("attention.sdpa"));
  CHECK(at("attention.repeat_v.bwd.sum_heads") < at("cp.reduce_scatter"));
  CHECK(at("attention.repeat_k.bwd.sum_heads") < at("cp.reduce_scatter"));
  CHECK(at("cp.reduce_scatter") < at("attention.rotary_k.bwd.type_as"));
}

TEST_CASE("per_op_checkpointing_under_cp_leaves_k_and_v_to_attentions_backward", "[stack][fsdp][cp]")
{
  // Attention's backward gathers K and V again itself (the cp ring's and the Llama 3
  // paper's are not kept): the recompute before it gathers no K and V of its own.
  OpDag dag     = spec_workload("hardware: {node: dgx-h100}\nmodel: {preset: llama-3-8b, layers: 2}\n"
                                    "training: {stack: fsdp, seq_len: 4096, global_batch: 8, micro_batch: 1, cp: 2, "
                                    "recompute: selective}\n");
  int recompute = 0, backward = 0;
  for (OpId id = dag.first_id(); id < dag.size(); ++id) {
    const Op& op = dag.op(id);
    if (op.kind != OpKind::collective || op.collective != CollectiveKind::all_gather)
      continue;
    const std::string n = op.name.str();
    recompute += n.rfind("L0.recompute.", 0) == 0;
    backward += n.rfind("L0.bwd.", 0) == 0;
  }
  CHECK(recompute == 0);
  CHECK(backward == 2); // 8 sequences over dp 4 (8 GPUs / cp 2): 2 micro-batches a rank
}
