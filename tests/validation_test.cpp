// End-to-end step times against published runs of real clusters, with the shipped
// profiles fitted only to microbenchmarks (calibration/VALIDATION.md has the full table;
// the runs here are those fast enough for the test suite).
#include "Simulation.hpp"
#include "TestHelpers.hpp"

#include <catch2/catch.hpp>

using namespace memwall;

TEST_CASE("megatron_22b_iteration_times_stay_within_12_percent_of_korthikanti_table_4", "[validation]")
{
  // Korthikanti et al. 2022, Table 4: 22B GPT on 8 A100 (tp 8, batch 4, seq 2048):
  // 1.42 s with full recompute, 1.10 s with sequence parallelism and selective recompute.
  // memwall predicts +9.8 % and +5.1 % (VALIDATION.md): a guard against drifting further.
  struct Run {
    const char* spec;
    double published_s;
  };
  for (const Run& run : {Run{"calibration/validation/megatron-22b-full.yaml", 1.42},
                         Run{"calibration/validation/megatron-22b-seqsel.yaml", 1.10}}) {
    INFO(run.spec);
    ExperimentSpec spec = load_spec(test::source_path(run.spec));
    RunResult r         = simulate(spec, true);
    CHECK(r.makespan_s == Approx(run.published_s).epsilon(0.12));
  }
}

namespace {

struct Generation {
  double tokens       = 0; // generated over the run
  double tokens_per_s = 0;
};

// An offline generation spec of calibration/validation, simulated.
Generation generation(const std::string& spec_file)
{
  RunResult r = simulate(load_spec(test::source_path(spec_file)), true);
  Generation g;
  for (const RequestRecord& q : r.serving.requests)
    g.tokens += static_cast<double>(q.output_tokens);
  g.tokens_per_s = g.tokens / r.makespan_s;
  return g;
}

} // namespace

TEST_CASE("flexgen_opt_6_7b_on_a_t4_stays_within_25_percent_of_its_published_throughput", "[validation][inference]")
{
  // FlexGen's README benchmark: OPT-6.7B on one T4, all on the GPU, batch 2, prompt 512,
  // output 32: 25.26 generated tokens/s. memwall predicts +21.9 % (VALIDATION.md: the
  // T4's sustained HBM bandwidth is an estimate); a guard against drifting further.
  Generation g = generation("calibration/validation/flexgen-opt-6.7b-t4.yaml");
  CHECK(g.tokens == 2 * 32);
  CHECK(g.tokens_per_s == Approx(25.26).epsilon(0.25));
}

TEST_CASE("flexgen_opt_175b_on_a_t4_with_weights_split_over_host_and_disk_stays_within_35_percent", "[validation][inference]")
{
  // FlexGen's README benchmark: OPT-175B on one T4, weights 50 % in DRAM and 50 % on the
  // local SSD, KV cache and activations on the SSD, 8 GPU batches of 32, prompt 512,
  // output 32: 0.69 generated tokens/s. memwall predicts 0.50 (-28 %, VALIDATION.md); a
  // guard against drifting further.
  Generation g = generation("calibration/validation/flexgen-opt-175b-t4.yaml");
  CHECK(g.tokens == 256 * 32);
  CHECK(g.tokens_per_s == Approx(0.69).epsilon(0.35));
}
