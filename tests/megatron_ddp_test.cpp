// Megatron-Core's data parallelism with the distributed optimizer (training.stack
// megatron, zero 1) as core_r0.8.0 runs it: gradient buckets (distributed_data_parallel.py),
// fp32 gradients under bf16 (arguments.py), --overlap-param-gather (distrib_optimizer.py);
// calibration/research/megatron-core-overlaps.md section 2.
//
// The model: 8 GPT layers of hidden 1024 (12 h^2 + 13 h = 12,596,224 parameters each), an
// untied head of 32,768 x 1024 plus the final norm (33,556,480) and an embedding with
// 1,024 learned positions (34,603,008).
#include "sim/Simulation.hpp"
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <limits>

using namespace memwall;
using namespace memwall::test;

namespace {

constexpr double layer = 12.0 * 1024 * 1024 + 13 * 1024;
constexpr double head  = 32768.0 * 1024 + 2 * 1024;
constexpr double embed = 32768.0 * 1024 + 1024 * 1024;

std::string spec(int nodes, const std::string& training_extra = "", const std::string& megatron = "", int zero = 1)
{
  return "hardware: {node: dgx-h100, nodes: " + std::to_string(nodes) +
         "}\n"
         "model: {layers: 8, hidden: 1024, heads: 16, vocab: 32768, max_seq_len: 1024, tied_embeddings: false}\n"
         "training: {stack: megatron, seq_len: 1024, global_batch: " +
         std::to_string(16 * nodes) + ", micro_batch: 1, zero: " + std::to_string(zero) + training_extra +
         ", megatron: {" + megatron + "}}\n";
}

RunResult run(const std::string& yaml) { return simulate(parse_spec(yaml, "test.yaml", ""), true); }

bool has_op(const RunResult& r, const std::string& name)
{
  return std::any_of(r.ops.begin(), r.ops.end(), [&](const OpRecord& o) { return o.name == name; });
}

double first_start(const RunResult& r, const std::string& name)
{
  double t = std::numeric_limits<double>::infinity();
  for (const OpRecord& o : r.ops)
    if (o.name == name)
      t = std::min(t, o.start);
  if (t == std::numeric_limits<double>::infinity())
    FAIL("no op named " << name);
  return t;
}

} // namespace

TEST_CASE("megatron_buckets_close_at_40m_parameters_or_1m_per_data_parallel_rank", "[megatron][ddp]")
{
  // bucket_size = max(40M, 1M x dp) parameters, filled in backward order (head first);
  // a bucket closes once it holds that many, or at the end of its chunk. fp32 gradients.
  // memwall closes buckets at block boundaries; Megatron at the parameter that fills
  // one, so its bucket 0 would end inside L7 (41.9M parameters, not 46.2M).
  SECTION("dp 8: 40M")
  {
    RunResult r = run(spec(1));
    CHECK(record(r, "zero1.bucket0.reduce_scatter").bytes == Approx(4 * (head + layer))); // 46.2M
    CHECK(record(r, "zero1.bucket1.reduce_scatter").bytes == Approx(4 * 4 * layer));      // L6..L3: 50.4M
    CHECK(record(r, "zero1.bucket2.reduce_scatter").bytes == Approx(4 * (3 * layer + embed)));
    CHECK_FALSE(has_op(r, "zero1.bucket3.reduce_scatter"));
  }
  SECTION("dp 48: 48M")
  {
    RunResult r = run(spec(6));
    CHECK(record(r, "zero1.bucket0.reduce_scatter").bytes == Approx(4 * (head + 2 * layer))); // 46.2M < 48M
  }
}

TEST_CASE("bf16_megatron_accumulates_and_reduces_gradients_in_fp32", "[megatron][ddp]")
{
  // arguments.py forces accumulate_allreduce_grads_in_fp32 under --bf16: the main-grad
  // buffer holds 4 bytes a parameter; fp16, or grad_reduce_in_fp32 false, keeps 2.
  const double params = 8 * layer + head + embed;
  auto grads          = [](const RunResult& r) {
    return r.pools.at(0).max_by_category[static_cast<size_t>(MemCategory::gradients)];
  };
  CHECK(grads(run(spec(1))) == Approx(4 * params));
  CHECK(grads(run(spec(1, "", "grad_reduce_in_fp32: false"))) == Approx(2 * params));
  CHECK(grads(run(spec(1, ", precision: fp16"))) == Approx(2 * params));
  CHECK(record(run(spec(1, "", "grad_reduce_in_fp32: false")), "zero1.bucket1.reduce_scatter").bytes ==
        Approx(2 * 4 * layer));
}

TEST_CASE("only_the_first_pipeline_stage_buckets_its_gradients", "[megatron][ddp]")
{
  // distributed_data_parallel.py: "Turn off bucketing if we are on a pipeline stage that
  // is not the first": stage 1 (L4..L7 and the head) reduces in one bucket at the end of
  // its backward; stage 0 (embedding, L0..L3) in 40M buckets: L3..L0 (50.4M), the embedding.
  RunResult r = run(spec(1, ", pp: 2"));
  CHECK(record(r, "stage1.zero1.bucket0.reduce_scatter").bytes == Approx(4 * (4 * layer + head)));
  CHECK_FALSE(has_op(r, "stage1.zero1.bucket1.reduce_scatter"));
  CHECK(record(r, "stage0.zero1.bucket0.reduce_scatter").bytes == Approx(4 * 4 * layer));
  CHECK(record(r, "stage0.zero1.bucket1.reduce_scatter").bytes == Approx(4 * embed));
}

TEST_CASE("apex_distributed_adam_reduces_each_layer_apart_in_every_stage", "[megatron][ddp]")
{
  // NeMo 1.x's distributed_fused_adam (megatron_gpt_model.py r2.0.0rc1): a bucket per
  // layer, in every pipeline stage and chunk; NeMo's scripts sync gradients in bf16.
  RunResult r = run(spec(1, ", pp: 2", "distributed_optimizer: apex, grad_reduce_in_fp32: false"));
  CHECK(record(r, "stage1.zero1.bucket0.reduce_scatter").bytes == Approx(2 * head));
  for (int b = 1; b <= 4; ++b)
    CHECK(record(r, "stage1.zero1.bucket" + std::to_string(b) + ".reduce_scatter").bytes == Approx(2 * layer));
  CHECK(record(r, "stage0.zero1.bucket4.reduce_scatter").bytes == Approx(2 * embed));
  refused("apex_zero0", spec(1, "", "distributed_optimizer: apex", 0));
}

TEST_CASE("overlap_param_gather_gathers_each_bucket_before_its_layers_first_forward", "[megatron][ddp]")
{
  // The distributed optimizer all-gathers the updated bf16 weights bucket by bucket in
  // forward order (the bucket holding the embedding first), one after another, and a
  // block's first forward waits for its bucket's; nothing is gathered after the step.
  // 4 nodes: dp 32 over InfiniBand, buckets of 40M parameters as on one node.
  RunResult on       = run(spec(4, "", "overlap_param_gather: true"));
  RunResult off      = run(spec(4));
  const OpRecord& b2 = record(on, "zero1.bucket2.updated_weights.all_gather");
  const OpRecord& b1 = record(on, "zero1.bucket1.updated_weights.all_gather");
  const OpRecord& b0 = record(on, "zero1.bucket0.updated_weights.all_gather");
  CHECK(b2.bytes == Approx(2 * (3 * layer + embed)));
  CHECK(b1.bytes == Approx(2 * 4 * layer));
  CHECK(b1.start >= b2.end - 1e-12);
  CHECK(b0.start >= b1.end - 1e-12);
  CHECK(first_start(on, "embed.fwd.embed.lookup") >= b2.end - 1e-12);
  CHECK(first_start(on, "L3.fwd.ln1") >= b1.end - 1e-12);
  CHECK(first_start(on, "L7.fwd.ln1") >= b0.end - 1e-12);
  CHECK(first_start(on, "L3.fwd.ln1") < b0.end); // the next bucket's gather beside this bucket's layers
  CHECK_FALSE(has_op(on, "L0.updated_weights.all_gather"));
  CHECK(has_op(off, "L0.updated_weights.all_gather"));
  CHECK(on.makespan_s < off.makespan_s);
}

TEST_CASE("overlap_param_gather_needs_the_distributed_optimizer_and_overlapped_gradient_reduction",
          "[megatron][ddp][errors]")
{
  // arguments.py's asserts.
  std::string err = refused("opg_zero0", spec(1, "", "overlap_param_gather: true", 0));
  CHECK(err.find("training.zero") != std::string::npos);
  CHECK(err.find("distributed optimizer") != std::string::npos);
  err = refused("opg_no_overlap", spec(1, ", overlap_grad_reduce: false", "overlap_param_gather: true"));
  CHECK(err.find("overlap_grad_reduce") != std::string::npos);
}

TEST_CASE("megatron_without_overlapped_reduction_reduces_each_chunk_in_one_bucket", "[megatron][ddp]")
{
  // distributed_data_parallel.py: "Set bucket_size to infinity if overlap_grad_reduce is
  // False": one reduce-scatter of every gradient after backward.
  RunResult r = run(spec(1, ", overlap_grad_reduce: false"));
  CHECK(record(r, "zero1.bucket0.reduce_scatter").bytes == Approx(4 * (8 * layer + head + embed)));
  CHECK_FALSE(has_op(r, "zero1.bucket1.reduce_scatter"));
}

TEST_CASE("a_moe_blocks_optimizer_step_waits_for_its_dense_gradients_reduction", "[megatron][ddp][moe]")
{
  // ep 8 on one node: each expert lives on one GPU, its gradients reduced with no one;
  // the layer's dense gradients (attention, norms, router) are reduce-scattered over
  // the 8 ranks, and its optimizer step reads them. The head (67M parameters) fills a
  // bucket of its own, reduced first; the layers' bucket after it.
  for (const char* overlap : {"true", "false"}) {
    INFO("overlap_grad_reduce " << overlap);
    RunResult r    = run("hardware: {node: dgx-h100, nodes: 1}\n"
                            "model: {layers: 2, hidden: 1024, heads: 16, vocab: 65536, max_seq_len: 1024, mlp: swiglu, "
                            "num_experts: 8, experts_per_token: 2, moe_ffn_hidden: 1024, tied_embeddings: false}\n"
                            "training: {stack: megatron, seq_len: 1024, global_batch: 8, micro_batch: 1, ep: 8, zero: 1, "
                            "overlap_grad_reduce: " +
                         std::string(overlap) + "}\n");
    double reduced = 0;
    for (const OpRecord& o : r.ops)
      if (o.name.find(".reduce_scatter") != std::string::npos && o.name.find("bucket") != std::string::npos)
        reduced = std::max(reduced, o.end);
    REQUIRE(reduced > 0);
    CHECK(first_start(r, "L0.grad_norm") >= reduced - 1e-12);
    CHECK(first_start(r, "L1.grad_norm") >= reduced - 1e-12);
  }
}

TEST_CASE("the_next_buckets_gather_is_issued_when_the_forward_reaches_the_bucket_before_it", "[megatron][ddp]")
{
  // The distributed optimizer's forward pre-hook of a bucket's first layer waits for the
  // bucket's all-gather and issues the next one, whose NCCL stream then waits for the
  // compute issued so far: bucket 0's (L7..) only after L2, the last layer before
  // bucket 1 (L3..L6), has been given its forward. One node (NVLink), 8,192-token
  // micro-batches: the forward, not the gathers, sets the pace.
  RunResult r        = run("hardware: {node: dgx-h100, nodes: 1}\n"
                                  "model: {layers: 8, hidden: 1024, heads: 16, vocab: 32768, max_seq_len: 8192, "
                                  "tied_embeddings: false}\n"
                                  "training: {stack: megatron, seq_len: 8192, global_batch: 8, micro_batch: 1, zero: 1, "
                                  "megatron: {overlap_param_gather: true}}\n");
  const OpRecord& b0 = record(r, "zero1.bucket0.updated_weights.all_gather");
  const OpRecord& b1 = record(r, "zero1.bucket1.updated_weights.all_gather");
  CHECK(b1.start < first_start(r, "L0.fwd.ln1"));         // issued on the embedding's pre-hook
  CHECK(b0.start >= first_start(r, "L3.fwd.ln1") - 1e-9); // on L3's, behind L2's forward
  CHECK(b0.start > b1.end);                               // not right behind bucket 1's
}
