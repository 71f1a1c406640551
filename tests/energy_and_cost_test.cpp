// What a run costs: the GPUs' share of the hardware price and their energy at their
// share of the nodes' system power (else the GPUs' board power) times the PUE, priced per MWh.
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace memwall::test;

TEST_CASE("a_runs_energy_is_its_share_of_the_nodes_system_power_times_pue_over_the_step", "[outputs][cost]")
{
  // GPT-2 on one A100 SXM4 80GB of a DGX A100: the node's 6.5 kW (DGX A100 datasheet,
  // "6.5 kW max") over its 8 GPUs, 812.5 W, x PUE 1.56 (the default) = 1,267.5 W; over
  // the step, 1,267.5 W x step_time J, priced at 80 USD per 3.6e9 J. The GPU's own 400 W
  // TDP (NVIDIA A100 datasheet) x 1.56 = 624 W beside it.
  std::string demo = source_path("examples/gpt2-1gpu-a100.yaml");
  auto j           = nlohmann::json::parse(run_cli("run " + demo + " --json").out);
  double step      = j["step_time_s"].get<double>();
  CHECK(j["energy"]["power_w"].get<double>() == Approx(1267.5));
  CHECK(j["energy"]["power_of"] == "node system power");
  CHECK(j["energy"]["gpu_power_w"].get<double>() == Approx(624.0));
  CHECK(j["energy"]["joules_per_step"].get<double>() == Approx(1267.5 * step));
  CHECK(j["energy"]["usd_per_step"].get<double>() == Approx(1267.5 * step / 3.6e9 * 80));
  // A PUE and price of one's own: 1.1 and 50 USD/MWh.
  auto own = nlohmann::json::parse(
      run_cli("run " + demo + " --json --set hardware.pue=1.1 --set hardware.usd_per_mwh=50").out);
  CHECK(own["energy"]["power_w"].get<double>() == Approx(893.75));
  CHECK(own["energy"]["usd_per_step"].get<double>() == Approx(893.75 * step / 3.6e9 * 50));
  CHECK_THAT(run_cli("run " + demo).out, Catch::Contains("energy") && Catch::Contains("at 1.27 kW") &&
                                             Catch::Contains("the GPUs' TDP alone 624 W"));
  // A GPU of unknown TDP in the node: the node's power less its GPUs' is unknown too.
  auto unknown = nlohmann::json::parse(
      run_cli("run " + demo + " --json --set 'hardware.gpu={preset: a100-sxm4-80gb, tdp_w: 0}'").out);
  CHECK(unknown["energy"]["power_w"].is_null());
  CHECK(unknown["energy"]["joules_per_step"].is_null());
  // A node without a published system power: the GPUs' TDP alone (an RTX 4070, 200 W).
  auto desk = run_json("energy-desktop", small_training_spec);
  CHECK(desk["energy"]["power_w"].get<double>() == Approx(200 * 1.56));
  CHECK(desk["energy"]["power_of"] == "GPU TDP");
}

TEST_CASE("a_node_given_other_gpus_swaps_their_tdp_in_its_system_power", "[outputs][cost]")
{
  // A DGX H100 (10.2 kW, eight 700 W H100s) with B200s (1,000 W): 10,200 + 8 x 300 =
  // 12,600 W, one GPU's share 1,575 W x PUE 1.56 = 2,457 W.
  std::string spec = temp_path("dgx-h100-b200.yaml");
  write_file(spec, "hardware: {node: dgx-h100, gpus_per_node: 1, gpu: b200}\nmodel: {preset: gpt2}\n"
                   "training: {seq_len: 1024, global_batch: 8, micro_batch: 8}\n");
  auto j = nlohmann::json::parse(run_cli("run " + spec + " --json").out);
  CHECK(j["energy"]["power_w"].get<double>() == Approx(12600.0 / 8 * 1.56));
  CHECK(j["energy"]["gpu_power_w"].get<double>() == Approx(1000 * 1.56));
  // The same node inline with B200s: the same swap. With 4 GPUs instead of 8 there is no
  // datasheet figure: the GPUs' TDP alone (4 x 700 W x 1.56), said so.
  write_file(spec, "hardware: {node: {preset: dgx-h100, gpu: b200}, gpus_per_node: 1}\nmodel: {preset: gpt2}\n"
                   "training: {seq_len: 1024, global_batch: 8, micro_batch: 8}\n");
  auto inline_node = nlohmann::json::parse(run_cli("run " + spec + " --json").out);
  CHECK(inline_node["energy"]["power_w"].get<double>() == Approx(12600.0 / 8 * 1.56));
  write_file(spec, "hardware: {node: {preset: dgx-h100, gpus: 4}}\nmodel: {preset: gpt2}\n"
                   "training: {seq_len: 1024, global_batch: 8, micro_batch: 2}\n");
  auto four = nlohmann::json::parse(run_cli("run " + spec + " --json").out);
  CHECK(four["energy"]["power_w"].get<double>() == Approx(4 * 700 * 1.56));
  CHECK(four["energy"]["power_of"] == "GPU TDP");
}

TEST_CASE("part_of_a_node_is_priced_as_its_share_of_the_node", "[outputs][cost]")
{
  // The advisor reports the hardware's price: a DGX H100 is 400,000 USD in the catalog,
  // one of its 8 GPUs 50,000 USD, not the whole node.
  std::string spec = temp_path("one_of_eight.yaml");
  write_file(spec, "hardware: {node: dgx-h100, gpus_per_node: 1}\nmodel: {preset: gpt2}\n"
                   "training: {seq_len: 1024, global_batch: 8, micro_batch: 8}\n");
  CliResult r = run_cli("advise " + spec + " --json");
  REQUIRE(r.exit_code == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["given"]["hardware_cost_usd"].get<double>() == 50000);
}

TEST_CASE("an_infinity_fabric_mesh_is_listed_as_a_mesh_not_nvswitch", "[outputs][catalog]")
{
  CliResult r = run_cli("list nodes");
  REQUIRE(r.exit_code == 0);
  std::string line = r.out.substr(r.out.find("mi300x-platform"));
  line             = line.substr(0, line.find('\n'));
  CHECK_THAT(line, Catch::Contains(" mesh ") && !Catch::Contains("nvswitch"));
  CliResult g = run_cli("list gpus");
  CHECK_THAT(g.out, Catch::Contains("$10,000") && !Catch::Contains("10000$") && Catch::Contains("700 W"));
}
