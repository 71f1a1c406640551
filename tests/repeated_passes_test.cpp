// Repeated passes stored once (OpDag chains, reuse along time): a micro-batch's pass
// that equals the one before is one chain op over stored members, and the replay runs
// its members as it would run the ops. Nothing it computes may change: the same step
// time, per-device peaks, memory events and link bytes as the op-by-op replay (1e-9),
// and, against the same replay of the ops one by one, the same activities to the bit.
#include "base/ChildPool.hpp"
#include "sim/Simulation.hpp"
#include "tests/ReplayDigest.hpp"
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <stdexcept>

using namespace memwall;
using namespace memwall::test;

namespace {

const DeviceRef gpu0{DeviceKind::gpu, 0, 0};
const DeviceRef gpu1{DeviceKind::gpu, 0, 1};

// One pass: a 10 us kernel, an alloc and free of `bytes`, another kernel, on GPU 0.
void add_pass(OpDag& dag, double bytes)
{
  dag.add(kernel_op(gpu0, 1e9, 1e6, "k0"));
  Tensor t = dag.alloc(gpu0, StreamKind::compute, gpu0, MemCategory::activations, bytes, "act");
  dag.add(kernel_op(gpu0, 1e9, 1e6, "k1"));
  dag.free(t, gpu0, StreamKind::compute, "free_act");
}

// The replays of `spec` with each of `hows`, side by side in children.
// Chains change nothing the replay does: against the same replay without them, the
// same activities and the same figures to the bit; against op by op, the same figures.
void require_same_as_without_chains(const ExperimentSpec& spec)
{
  // Chains and coalesced runs without records (what --json runs); the same without
  // chains; every op on its own with records (the reference). Timelines in all three.
  std::vector<Digest> d = replays(spec, {{.all_records = false, .memory_timelines = true, .chains = true},
                                         {.all_records = false, .memory_timelines = true, .chains = false},
                                         {.coalesce = false, .all_records = true, .memory_timelines = true}});
  const Digest &chained = d[0], &plain = d[1], &by_op = d[2];
  CHECK(chained.makespan == plain.makespan);
  CHECK(chained.activities == plain.activities);
  CHECK(chained.pools == plain.pools);
  CHECK(chained.events == plain.events);
  CHECK(chained.links == plain.links);
  require_same_replay(chained, by_op);
}

ExperimentSpec spec_of(const std::string& yaml) { return parse_spec(yaml, "test.yaml", ""); }

// `chained` with every chain op expanded into its members is `plain`: the same ops in
// the same order (tensor ids aside) and the same edges.
void require_expands_to(const OpDag& chained, const OpDag& plain)
{
  REQUIRE(chained.op_count() == plain.size());
  std::vector<OpId> first(chained.size()); // each entry's first member, as a plain id
  OpId next     = 0;
  size_t differ = 0;
  for (OpId e = 0; e < chained.size(); ++e) {
    first[e]     = next;
    const Op& op = chained.op(e);
    if (op.kind != OpKind::chain)
      differ += !same_work(op, plain.op(next++));
    else
      for (const Op& m : chained.chain(op.chain))
        differ += !same_work(m, plain.op(next++));
  }
  CHECK(differ == 0);
  auto last = [&](OpId e) {
    const Op& op = chained.op(e);
    return first[e] + (op.kind == OpKind::chain ? static_cast<OpId>(chained.chain(op.chain).size()) - 1 : 0);
  };
  std::vector<std::pair<OpId, OpId>> a, b;
  for (const DagEdge& x : chained.edges())
    a.emplace_back(last(x.earlier), first[x.later]);
  for (OpId e = 0; e < chained.size(); ++e)
    for (OpId m = first[e]; m < last(e); ++m)
      a.emplace_back(m, m + 1);
  for (const DagEdge& x : plain.edges())
    b.emplace_back(x.earlier, x.later);
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  CHECK(a == b);
}

} // namespace

TEST_CASE("equal_passes_under_one_key_share_their_stored_ops", "[chains]")
{
  OpDag dag;
  dag.set_chains(true);
  for (int mb = 0; mb < 3; ++mb) {
    dag.begin_capture();
    add_pass(dag, 1e6);
    dag.end_capture(7);
  }
  // Three entries of one stored chain of 4 members, in stream order.
  REQUIRE(dag.size() == 3);
  CHECK(dag.op_count() == 12);
  CHECK(dag.chain_count() == 1);
  for (OpId v = 0; v < 3; ++v)
    CHECK(dag.op(v).kind == OpKind::chain);
  CHECK(dag.chain(0).size() == 4);
  REQUIRE(dag.edges().size() == 2);
  CHECK((dag.edges()[0].earlier == 0 && dag.edges()[0].later == 1));
  CHECK((dag.edges()[1].earlier == 1 && dag.edges()[1].later == 2));
}

TEST_CASE("a_pass_that_differs_from_the_last_under_its_key_is_stored_again", "[chains]")
{
  OpDag dag;
  dag.set_chains(true);
  for (double bytes : {1e6, 1e6, 2e6, 2e6, 1e6}) {
    dag.begin_capture();
    add_pass(dag, bytes);
    dag.end_capture(7);
  }
  // 1e6 stored, 2e6 stored, 1e6 stored again (only the last under a key is compared).
  CHECK(dag.size() == 5);
  CHECK(dag.chain_count() == 3);
  CHECK(dag.chain(dag.op(2).chain)[1].bytes == 2e6);
  CHECK(dag.op(3).chain == dag.op(2).chain);
}

TEST_CASE("ops_with_an_edge_off_their_stream_stay_ops_and_keep_the_ids_they_were_given", "[chains]")
{
  OpDag dag;
  dag.set_chains(true);
  OpId copy = dag.add(copy_op(gpu0, StreamKind::p2p, gpu0, gpu1, 1e6, "send"));
  dag.begin_capture();
  OpId k0 = dag.add(kernel_op(gpu0, 1e9, 1e6, "k0"), {copy}); // waits on another stream
  OpId k1 = dag.add(kernel_op(gpu0, 1e9, 1e6, "k1"));
  dag.end_capture(1);
  OpId after = dag.add(copy_op(gpu0, StreamKind::p2p, gpu0, gpu1, 1e6, "send2"));
  dag.depend(after, k0);
  CHECK(dag.chain_count() == 0);
  REQUIRE(dag.size() == 4);
  CHECK(dag.op(1).name.str() == "k0");
  // The ids handed out while capturing name the ops they became.
  CHECK(dag.op(k0).name.str() == "k0");
  CHECK(dag.op(k1).name.str() == "k1");
  const auto& e = dag.edges();
  CHECK(std::count_if(e.begin(), e.end(), [](const DagEdge& x) { return x.earlier == 1 && x.later == 3; }) == 1);
  CHECK(std::count_if(e.begin(), e.end(), [](const DagEdge& x) { return x.earlier == 0 && x.later == 1; }) == 1);
}

TEST_CASE("a_stream_tail_asked_for_while_capturing_keeps_the_ops_apart", "[chains]")
{
  // The asker may depend on that op once more ops follow it (the gradient reduction
  // of a block in the middle of a pass): it must stay an op of its own.
  OpDag dag;
  dag.set_chains(true);
  dag.begin_capture();
  dag.add(kernel_op(gpu0, 1e9, 1e6, "k0"));
  OpId mid = dag.stream_tail(gpu0, StreamKind::compute);
  dag.add(kernel_op(gpu0, 1e9, 1e6, "k1"));
  dag.end_capture(1);
  CHECK(dag.chain_count() == 0);
  OpId opt = dag.add(kernel_op(gpu1, 1e9, 1e6, "optimizer"));
  dag.depend(opt, mid);
  CHECK(dag.op(mid).name.str() == "k0");
  CHECK((dag.edges().back().earlier == 0 && dag.edges().back().later == 2));
}

TEST_CASE("the_last_member_names_its_chain_and_no_other_member_can_be_waited_on", "[chains]")
{
  OpDag dag;
  dag.set_chains(true);
  dag.begin_capture();
  OpId first = dag.add(kernel_op(gpu0, 1e9, 1e6, "k0"));
  OpId last  = dag.add(kernel_op(gpu0, 1e9, 1e6, "k1"));
  dag.end_capture(1);
  REQUIRE(dag.chain_count() == 1);
  OpId next = dag.add(kernel_op(gpu1, 1e9, 1e6, "other"));
  dag.depend(next, last); // the chain op: it ends when its last member does
  CHECK((dag.edges().back().earlier == 0 && dag.edges().back().later == 1));
  CHECK_THROWS_AS(dag.depend(next, first), std::logic_error);
}

TEST_CASE("a_capture_across_two_streams_forms_no_chain", "[chains]")
{
  OpDag dag;
  dag.set_chains(true);
  dag.begin_capture();
  dag.add(kernel_op(gpu0, 1e9, 1e6, "k0"));
  dag.add(copy_op(gpu0, StreamKind::d2h, gpu0, DeviceRef{DeviceKind::host, 0, 0}, 1e6, "d2h"));
  dag.add(kernel_op(gpu0, 1e9, 1e6, "k1"));
  dag.end_capture(1);
  CHECK(dag.chain_count() == 0);
  CHECK(dag.size() == 3);
  CHECK(dag.op_count() == 3);
}

TEST_CASE("every_training_example_replays_the_same_with_its_passes_stored_once", "[chains]")
{
  for (const auto& entry : std::filesystem::directory_iterator(source_path("examples"))) {
    std::string path = entry.path().string();
    // The 3,072-GPU step takes half a minute op by op (its own test below).
    if (entry.path().extension() != ".yaml" || path.find("megatron-1t") != std::string::npos)
      continue;
    ExperimentSpec spec = load_spec(path, {});
    if (spec.serving)
      continue; // a serving loop's iterations are generated as it runs, never chained
    INFO(path);
    require_same_as_without_chains(spec);
  }
}

TEST_CASE("the_1t_step_holds_a_thirtieth_of_its_ops_as_entries_and_replays_them_the_same", "[chains]")
{
  ExperimentSpec spec = load_spec(source_path("examples/megatron-1t-tp8-pp64-384xdgx-a100.yaml"), {});
  OpDag chained       = build_workload(spec, true);
  OpDag plain         = build_workload(spec, false);
  CHECK(chained.size() * 30 < plain.size()); // 138,018 entries for 4,410,707 ops
  CHECK(chained.model_flops() == plain.model_flops());
  require_expands_to(chained, plain);
  // Both replays coalesced and without records (op by op takes half a minute).
  std::vector<Digest> d = replays(spec, {{.all_records = false, .memory_timelines = false, .chains = true},
                                         {.all_records = false, .memory_timelines = false, .chains = false}});
  CHECK(d[0].makespan == d[1].makespan);
  CHECK(d[0].activities == d[1].activities);
  CHECK(d[0].op_count == d[1].op_count);
  CHECK(d[0].pools == d[1].pools);
  CHECK(d[0].links == d[1].links);
}

TEST_CASE("chained_passes_beside_traffic_on_their_resources_run_member_by_member", "[chains]")
{
  // Six passes of kernels, an activation and an all-reduce over GPUs 0-1 on GPU 0's
  // compute stream, and beside them: nothing (every member private: runs), a copy
  // through GPU 0's HBM (its kernels share HBM: op by op), or a peer copy over the
  // NVLink the all-reduces cross (those are not private: op by op).
  ClusterSpec cluster = hand_cluster(2, GpuFabric::nvswitch, 2);
  auto build          = [](bool chains, int beside) {
    OpDag dag;
    dag.set_chains(chains);
    int32_t pair = dag.add_group({gpu0, gpu1});
    for (int mb = 0; mb < 6; ++mb) {
      dag.begin_capture();
      dag.add(kernel_op(gpu0, 1e12, 1e9, "k0"));
      Tensor t = dag.alloc(gpu0, StreamKind::compute, gpu0, MemCategory::activations, 1e9, "act");
      dag.add(collective_op(gpu0, StreamKind::compute, CollectiveKind::all_reduce, pair, 1e8, "ar"));
      dag.add(kernel_op(gpu0, 1e12, 1e9, "k1"));
      dag.free(t, gpu0, StreamKind::compute, "free_act");
      dag.end_capture(1);
    }
    if (beside == 1)
      dag.add(copy_op(gpu0, StreamKind::comm, gpu0, gpu0, 2e10, "d2d"));
    if (beside == 2)
      dag.add(copy_op(gpu0, StreamKind::p2p, gpu0, gpu1, 2e10, "peer"));
    return dag;
  };
  for (int beside : {0, 1, 2}) {
    INFO("beside " << beside);
    OpDag chained = build(true, beside), plain = build(false, beside);
    REQUIRE(chained.size() == 6 + (beside > 0 ? 1 : 0));
    ReplayOptions lean{.summary_records_only = true, .memory_timelines = true};
    ReplayOptions by_op{.coalesce = false};
    Digest a = digest(replay_in_child(cluster, chained, lean));
    Digest b = digest(replay_in_child(cluster, plain, lean));
    Digest c = digest(replay_in_child(cluster, plain, by_op));
    CHECK(a.makespan == b.makespan);
    CHECK(a.activities == b.activities);
    CHECK(a.events == b.events);
    CHECK(a.links == b.links);
    require_same_replay(a, c);
    // Private passes run as one activity each (after the first, which times the
    // all-reduce); beside an HBM copy no member joins a run.
    if (beside == 0)
      CHECK(a.activities < c.activities / 3);
    if (beside == 1)
      CHECK(a.activities == c.activities);
  }
}

TEST_CASE("a_chained_tp_collective_is_measured_on_its_first_repetition", "[chains]")
{
  // tp 2 x pp 2: each pass holds all-reduces over NVLink, private to the compute
  // stream; the first repetition runs them as flows and times them, the others reuse it.
  ExperimentSpec spec = spec_of("hardware: {node: dgx-a100, gpus_per_node: 4}\nmodel: {preset: gpt2}\n"
                                "training: {seq_len: 512, global_batch: 8, micro_batch: 1, tp: 2, pp: 2}\n");
  OpDag dag           = build_workload(spec, true);
  size_t tp           = 0;
  for (size_t c = 0; c < dag.chain_count(); ++c)
    for (const Op& m : dag.chain(static_cast<uint32_t>(c)))
      tp += m.kind == OpKind::collective;
  CHECK(tp > 0);
  require_same_as_without_chains(spec);
}

TEST_CASE("with_coalescing_off_a_chain_runs_its_members_one_by_one", "[chains]")
{
  ExperimentSpec spec = spec_of("hardware: {node: dgx-a100, gpus_per_node: 2}\nmodel: {preset: gpt2}\n"
                                "training: {seq_len: 512, global_batch: 8, micro_batch: 1, pp: 2}\n");
  std::vector<Digest> d =
      replays(spec, {{.coalesce = false, .all_records = false, .memory_timelines = true, .chains = true},
                     {.coalesce = false, .all_records = true, .memory_timelines = true}});
  CHECK(d[0].activities == d[1].activities);
  CHECK(d[0].makespan == d[1].makespan);
  CHECK(d[0].events == d[1].events);
  require_same_replay(d[0], d[1]);
}

TEST_CASE("passes_that_leave_their_stream_are_not_chained", "[chains]")
{
  // ZeRO-3 gathers parameters on their own stream ahead of every pass and ZeRO-2/3
  // reduce each micro-batch's gradients: no pass is a chain of one stream.
  for (int zero : {2, 3}) {
    ExperimentSpec spec    = spec_of("hardware: {node: dgx-a100, gpus_per_node: 4}\nmodel: {preset: gpt2}\n"
                                        "training: {seq_len: 512, global_batch: 8, micro_batch: 1, zero: " +
                                     std::to_string(zero) + "}\n");
    OpDag dag              = build_workload(spec, true);
    size_t backward_chains = 0;
    for (size_t c = 0; c < dag.chain_count(); ++c)
      backward_chains += dag.chain(static_cast<uint32_t>(c)).back().phase == StepPhase::backward;
    INFO("zero " << zero);
    CHECK(backward_chains == 0);
    require_same_as_without_chains(spec);
  }
}

TEST_CASE("repeated_slots_not_built_again_expand_to_the_dag_built_op_by_op", "[chains]")
{
  // Once two steady slots of a stage and direction matched, later ones are added as
  // the stored chain without being built (repeat_slot); the tensors they would have
  // allocated are still freed by the backward passes that are built (first, last).
  for (const char* yaml : {"hardware: {node: dgx-a100, gpus_per_node: 8}\nmodel: {preset: gpt2}\n"
                           "training: {seq_len: 512, global_batch: 64, micro_batch: 1, pp: 4, recompute: full}\n",
                           "hardware: {node: dgx-a100, gpus_per_node: 8}\nmodel: {preset: gpt2}\n"
                           "training: {seq_len: 512, global_batch: 64, micro_batch: 1, pp: 2, tp: 2,\n"
                           "           pipeline_schedule: gpipe, recompute: selective}\n",
                           "hardware: {node: dgx-a100, gpus_per_node: 8}\nmodel: {preset: gpt2}\n"
                           "training: {seq_len: 512, global_batch: 64, micro_batch: 1, pp: 2,\n"
                           "           pipeline_schedule: interleaved, virtual_stages: 2}\n",
                           "hardware: {node: dgx-a100, gpus_per_node: 1}\nmodel: {preset: gpt2}\n"
                           "training: {seq_len: 512, global_batch: 16, micro_batch: 1}\n"}) {
    INFO(yaml);
    ExperimentSpec spec = spec_of(yaml);
    OpDag chained       = build_workload(spec, true);
    OpDag plain         = build_workload(spec, false);
    CHECK(chained.size() * 4 < plain.size());
    require_expands_to(chained, plain);
    require_same_as_without_chains(spec);
  }
}
