// Megatron-Core's --tp-comm-overlap (training.megatron.tp_comm_overlap): Transformer
// Engine's userbuffers hide the sequence-parallel all-gathers and reduce-scatters behind
// the GEMMs (TE v2.2 comm_gemm_overlap.cpp; calibration/research/megatron-core-overlaps.md).
#include "sim/Simulation.hpp"
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace memwall;
using namespace memwall::test;

namespace {

// One layer of hidden 7168 (56 heads) on a DGX H100, tp 8 with sequence parallelism,
// 4,096 tokens; `nodes` x 8 GPUs (data parallel across nodes).
RunResult layer_step(bool overlap, int nodes = 1, const std::string& recompute = "none")
{
  std::string yaml = "hardware: {node: dgx-h100, nodes: " + std::to_string(nodes) +
                     "}\nmodel: {layers: 1, hidden: 7168, heads: 56, vocab: 32768, max_seq_len: 4096}\n"
                     "training: {stack: megatron, seq_len: 4096, global_batch: " +
                     std::to_string(nodes) + ", micro_batch: 1, tp: 8, sp: true, recompute: " + recompute +
                     ", megatron: {tp_comm_overlap: " + (overlap ? "true" : "false") + "}}\n";
  return simulate(parse_spec(yaml, "test.yaml", ""), true);
}

} // namespace

TEST_CASE("a_ring_exchanged_gemm_chunk_waits_for_its_chunk_and_the_first_runs_on_local_data", "[tp][overlap]")
{
  // split_overlap_ag: the column-parallel GEMM in tp = 8 chunks; chunk 0 on the GPU's own
  // rows while they go to the neighbour; chunk j after transfer j - 1. A transfer is a
  // step of the ring: T h / tp x 2 bytes = 4096 x 7168 / 8 x 2 = 7.34 MB.
  RunResult r = layer_step(true);
  CHECK(record(r, "L0.qkv.fwd.ub_send0").start == Approx(record(r, "L0.qkv.fwd.ub_gemm0").start));
  CHECK(record(r, "L0.qkv.fwd.ub_send0").bytes == Approx(4096.0 * 7168 / 8 * 2));
  for (int j = 1; j < 8; ++j) {
    INFO("chunk " << j);
    CHECK(record(r, "L0.qkv.fwd.ub_gemm" + std::to_string(j)).start >=
          record(r, "L0.qkv.fwd.ub_send" + std::to_string(j - 1)).end - 1e-12);
  }
  int sends = 0, chunks = 0; // 7 transfers for 8 chunks
  for (const OpRecord& o : r.ops) {
    sends += o.name.rfind("L0.qkv.fwd.ub_send", 0) == 0;
    chunks += o.name.rfind("L0.qkv.fwd.ub_gemm", 0) == 0;
  }
  CHECK(sends == 7);
  CHECK(chunks == 8);
}

TEST_CASE("full_recompute_runs_the_forward_again_with_its_tp_collectives_overlapped_as_before", "[tp][overlap]")
{
  // The recomputed forward is the same TE modules with the same userbuffers: the
  // column-parallel GEMM ring-exchanged again (8 more chunks, 7 more transfers), the
  // row-parallel one pipelined again, each part named as recomputed; no plain tp
  // collective in the recompute, and no recomputed FLOP counted as a model FLOP.
  RunResult r = layer_step(true, 1, "full");
  int sends = 0, chunks = 0, rc_sends = 0, rc_chunks = 0, plain = 0;
  for (const OpRecord& o : r.ops) {
    sends += o.name.rfind("L0.qkv.fwd.ub_send", 0) == 0;
    chunks += o.name.rfind("L0.qkv.fwd.ub_gemm", 0) == 0;
    rc_sends += o.name.rfind("L0.qkv.recompute.ub_send", 0) == 0;
    rc_chunks += o.name.rfind("L0.qkv.recompute.ub_gemm", 0) == 0;
    plain += o.name.find(".recompute.") != std::string::npos && o.name.size() > 3 &&
             o.name.compare(o.name.size() - 3, 3, ".tp") == 0;
  }
  CHECK(sends == 7);
  CHECK(chunks == 8);
  CHECK(rc_sends == 7);
  CHECK(rc_chunks == 8);
  CHECK(plain == 0);
  CHECK(r.model_flops_per_step == Approx(layer_step(true).model_flops_per_step).epsilon(1e-12));
  CHECK(r.makespan_s < layer_step(false, 1, "full").makespan_s);
}

TEST_CASE("a_pipelined_reduce_scatter_runs_beside_the_next_chunk_on_the_sms_it_leaves", "[tp][overlap]")
{
  // split_overlap_rs: the row-parallel GEMM (proj: 2 x 4096 x 896 x 7168 FLOPs) in 4
  // chunks on 132 - 16 SMs (TE's default num_sm 16 with set_sm_margin): each chunk's
  // work counts 132/116; chunk j's reduce-scatter (7/8 of a quarter of T h x 2 bytes a
  // port) starts when the chunk ends, and what follows the GEMM waits for the last.
  RunResult r         = layer_step(true);
  const double chunk  = 2.0 * 4096 * 896 * 7168 / 4;
  const OpRecord& g0  = record(r, "L0.proj.fwd.ub_gemm0");
  const OpRecord& rs3 = record(r, "L0.proj.fwd.ub_reduce_scatter3");
  CHECK(g0.flops == Approx(chunk * 132 / 116));
  CHECK(record(r, "L0.proj.fwd.ub_reduce_scatter0").start >= g0.end - 1e-12);
  CHECK(record(r, "L0.proj.fwd.ub_reduce_scatter0").start < record(r, "L0.proj.fwd.ub_gemm1").end);
  CHECK(rs3.bytes == Approx(7.0 / 8 * 4096 * 7168 * 2 / 4));
  CHECK(record(r, "L0.fwd.attn.residual").start >= rs3.end - 1e-12);
}

TEST_CASE("a_column_parallel_backward_hides_its_gather_behind_dgrad_and_its_scatter_behind_wgrad", "[tp][overlap]")
{
  // bulk_overlap: the input's all-gather beside the input-gradient GEMM, which the weight
  // gradient needs; the input gradient's reduce-scatter beside the weight-gradient GEMM,
  // which the norm's backward needs.
  RunResult r           = layer_step(true);
  const OpRecord &dgrad = record(r, "L0.mlp.up.bwd.dgrad"), &wgrad = record(r, "L0.mlp.up.bwd.wgrad");
  const OpRecord &ag = record(r, "L0.mlp.up.bwd.ub_all_gather"), &rs = record(r, "L0.mlp.up.bwd.ub_reduce_scatter");
  CHECK(ag.start < dgrad.end);
  CHECK(wgrad.start >= std::max(dgrad.end, ag.end) - 1e-12);
  CHECK(rs.start >= dgrad.end - 1e-12);
  CHECK(rs.start < wgrad.end);
  CHECK(record(r, "L0.bwd.ln2").start >= std::max(rs.end, wgrad.end) - 1e-12);
}

TEST_CASE("tp_comm_overlap_shortens_a_tp8_layer_and_keeps_its_transfers_on_nvlink", "[tp][overlap]")
{
  // Against the collectives on the compute stream, the layer's step is shorter and its
  // exposed communication less; across 2 nodes (dp 2) every rank's transfers go to its
  // own ring neighbour over NVLink: the NICs carry the data-parallel traffic alone, as
  // without overlap.
  RunResult off = layer_step(false), on = layer_step(true);
  CHECK(on.makespan_s < off.makespan_s);
  RunResult off2 = layer_step(false, 2), on2 = layer_step(true, 2);
  auto nic_bytes = [](const RunResult& r) {
    double b = 0;
    for (const LinkResult& l : r.links)
      if (l.name.find(".nic") != std::string::npos)
        b += l.bytes;
    return b;
  };
  CHECK(nic_bytes(on2) == Approx(nic_bytes(off2)).epsilon(1e-9));
  CHECK(nic_bytes(on2) > 0);
}

TEST_CASE("tp_comm_overlap_is_megatrons_key", "[tp][overlap][errors]")
{
  std::string msg = refused("overlap_other_stack.yaml",
                            "hardware: {node: dgx-h100}\nmodel: {preset: gpt2}\ntraining: {stack: pytorch, seq_len: "
                            "128, global_batch: 8, megatron: {tp_comm_overlap: true}}\n");
  CHECK(msg.find("megatron") != std::string::npos);
}

TEST_CASE("overlapped_tp_collectives_of_one_stage_never_hold_back_another_stage", "[tp][overlap][pp]")
{
  // The step's passes interleave the stages' blocks (here an interleaved schedule of 2
  // stages x 2 model chunks): what one GPU's compute stream waits for (its userbuffers
  // transfers) is its own. With overlap the step is shorter and the bubble no longer.
  // The bubble is compared with the power limit off: with it, the overlapped step has fewer
  // waits to credit and the two stages' GEMMs are held back by different amounts, which
  // moves the bubble (+1.7 ms, the step 67.3 ms, on 2026-11-28): the power model's doing
  // (power_*_test), not the schedule's. The overlapped step is shorter either way.
  auto step = [](bool overlap, bool power) {
    std::string yaml =
        "hardware: {node: dgx-h100, gpu: {preset: h100-sxm-80gb, tensor_core_w: " + std::string(power ? "1000" : "0") +
        "}}\nmodel: {layers: 4, hidden: 4096, heads: 32, vocab: 32768, max_seq_len: 4096}\ntraining: "
        "{stack: megatron, seq_len: 4096, global_batch: 8, micro_batch: 1, tp: 4, sp: true, pp: 2, "
        "pipeline_schedule: interleaved, virtual_stages: 2, megatron: {tp_comm_overlap: " +
        std::string(overlap ? "true" : "false") + "}}\n";
    return run_json("overlap_pp", yaml);
  };
  nlohmann::json off = step(false, false), on = step(true, false);
  CHECK(on["step_time_s"].get<double>() < off["step_time_s"].get<double>());
  CHECK(on["breakdown_s"]["pipeline_bubble"].get<double>() <=
        1.05 * off["breakdown_s"]["pipeline_bubble"].get<double>());
  CHECK(step(true, true)["step_time_s"].get<double>() < step(false, true)["step_time_s"].get<double>());
}

TEST_CASE("a_stages_first_ring_transfer_in_backward_waits_for_the_gradient_from_the_next_stage", "[tp][overlap][pp]")
{
  // Llama (no dropout, no bias): the first op of stage 0's backward slot is the row-parallel
  // down projection's input gradient, whose output gradient is gathered by ring exchange;
  // its first transfer sends this GPU's share of that gradient, which comes from stage 1
  // (pp.send_grad): it cannot start before the gradient has arrived.
  std::string yaml = "hardware: {node: dgx-h100}\nmodel: {preset: llama-2-7b, layers: 4}\ntraining: {stack: "
                     "megatron, seq_len: 4096, global_batch: 4, micro_batch: 1, tp: 4, sp: true, pp: 2, megatron: "
                     "{tp_comm_overlap: true}}\n";
  RunResult r      = simulate(parse_spec(yaml, "test.yaml", ""), true);
  std::vector<const OpRecord*> sends; // micro-batch k's, in the order they ran
  for (const OpRecord& o : r.ops)
    if (o.name == "L1.mlp.down.bwd.ub_send0")
      sends.push_back(&o);
  std::sort(sends.begin(), sends.end(), [](const OpRecord* a, const OpRecord* b) { return a->start < b->start; });
  REQUIRE(sends.size() == 4);
  for (int mb = 0; mb < 4; ++mb) {
    INFO("micro-batch " << mb);
    CHECK(sends[mb]->start >= record(r, "pp.send_grad.vs1.mb" + std::to_string(mb)).end - 1e-12);
  }
}

TEST_CASE("tp_comm_overlap_without_sequence_parallelism_is_refused_as_megatron_refuses_it", "[tp][overlap][errors]")
{
  std::string msg =
      refused("overlap_no_sp.yaml", "hardware: {node: dgx-h100}\nmodel: {preset: gpt2}\ntraining: {stack: "
                                    "megatron, seq_len: 128, global_batch: 2, tp: 4, megatron: "
                                    "{tp_comm_overlap: true}}\n");
  CHECK(msg.find("sequence parallelism") != std::string::npos);
}

TEST_CASE("a_row_parallel_backward_gathers_its_output_gradient_by_ring_exchange_beside_its_dgrad", "[tp][overlap]")
{
  // proj_dgrad / fc2_dgrad: the output gradient (sequence-parallel, T h / tp x 2 bytes a
  // rank) comes around the ring in tp - 1 steps beside the input-gradient GEMM's tp chunks
  // (each of them on all 132 SMs: the ring uses copy engines); the weight gradient follows
  // whole. mlp.down: 2 x 4096 x (4 x 7168 / 8) x 7168 FLOPs a GEMM.
  RunResult r        = layer_step(true);
  const double dgrad = 2.0 * 4096 * (4 * 7168 / 8) * 7168;
  for (int j = 1; j < 8; ++j) {
    INFO("chunk " << j);
    const OpRecord& chunk = record(r, "L0.mlp.down.bwd.ub_dgrad" + std::to_string(j));
    CHECK(chunk.start >= record(r, "L0.mlp.down.bwd.ub_send" + std::to_string(j - 1)).end - 1e-12);
    CHECK(chunk.flops == Approx(dgrad / 8));
  }
  CHECK(record(r, "L0.mlp.down.bwd.ub_send0").bytes == Approx(4096.0 * 7168 / 8 * 2));
  const OpRecord& wgrad = record(r, "L0.mlp.down.bwd.wgrad");
  CHECK(wgrad.start >= record(r, "L0.mlp.down.bwd.ub_dgrad7").end - 1e-12);
  CHECK(wgrad.flops == Approx(dgrad));
}

TEST_CASE("a_bulk_overlapped_gemm_runs_on_the_sms_its_collective_leaves", "[tp][overlap]")
{
  // bulk_overlap with TE's defaults (num_sm 16, set_sm_margin): the column-parallel
  // input and weight gradients of mlp.up (2 x 4096 x 7168 x (4 x 7168 / 8) FLOPs each) run
  // on 116 of 132 SMs: their work counts 132/116.
  RunResult r       = layer_step(true);
  const double gemm = 2.0 * 4096 * 7168 * (4 * 7168 / 8);
  CHECK(record(r, "L0.mlp.up.bwd.dgrad").flops == Approx(gemm * 132 / 116));
  CHECK(record(r, "L0.mlp.up.bwd.wgrad").flops == Approx(gemm * 132 / 116));
}

TEST_CASE("a_frozen_column_layer_gathers_no_input_for_a_weight_gradient_it_does_not_compute", "[tp][overlap][lora]")
{
  // LoRA on the projections only: the qkv and MLP weights are frozen, their backward runs
  // the input gradient alone; the bulk all-gather of their input serves only a weight
  // gradient (TE: qkv_dgrad's gather for the wgrad GEMM), so none runs. The trainable
  // projection's ring exchange stays.
  std::string yaml = "hardware: {node: dgx-h100}\nmodel: {preset: llama-2-7b, layers: 2}\ntraining: {stack: "
                     "megatron, seq_len: 4096, global_batch: 2, micro_batch: 1, tp: 4, sp: true, lora: {targets: "
                     "[proj]}, megatron: {tp_comm_overlap: true}}\n";
  RunResult r      = simulate(parse_spec(yaml, "test.yaml", ""), true);
  int gathers = 0, frozen_dgrads = 0, ring = 0;
  for (const OpRecord& o : r.ops) {
    gathers += o.name.find("qkv.bwd.ub_all_gather") != std::string::npos;
    frozen_dgrads += o.name.find("qkv.bwd.dgrad") != std::string::npos;
    ring += o.name.find("proj.bwd.ub_send") != std::string::npos;
  }
  CHECK(frozen_dgrads == 2);
  CHECK(gathers == 0);
  CHECK(ring == 2 * 3);
}
