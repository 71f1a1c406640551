// What a results file holds for the people who read it with pandas and for the plots:
// counts stored as integers, the step phase of every op, and runs that did not fit
// reported as such.
#include "analysis/Hdf5Table.hpp"
#include "tests/TestHelpers.hpp"

#include <H5Cpp.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

using namespace memwall::test;

namespace {

H5T_class_t type_class(const H5::H5File& f, const std::string& dataset)
{
  return f.openDataSet(dataset).getTypeClass();
}

// A column of a results file, by its path ("/ops/phase"), with memwall's own readers.
std::vector<std::string> texts(const H5::H5File& f, const std::string& path)
{
  auto at = path.rfind('/');
  return memwall::read_texts(f.openGroup(path.substr(0, at)), path.substr(at + 1));
}

std::vector<double> numbers(const H5::H5File& f, const std::string& path)
{
  auto at = path.rfind('/');
  return memwall::read_numbers(f.openGroup(path.substr(0, at)), path.substr(at + 1));
}

} // namespace

TEST_CASE("counts_and_indices_are_stored_as_integers_and_times_as_floats", "[outputs][hdf5]")
{
  // pandas reads an int64 column as integers; the README's snippet showed 40.0 requests.
  std::string spec = temp_path("layout_serving.yaml"), h5 = temp_path("layout_serving.h5");
  write_file(spec, small_serving_spec);
  REQUIRE(run_cli("run " + spec + " -o " + h5).exit_code == 0);
  {
    H5::H5File f(h5, H5F_ACC_RDONLY);
    for (const char* c : {"id", "prompt_tokens", "output_tokens", "preemptions", "rejected"})
      CHECK(type_class(f, std::string("/requests/") + c) == H5T_INTEGER);
    CHECK(type_class(f, "/kv_cache/running_seqs") == H5T_INTEGER);
    CHECK(type_class(f, "/requests/ttft_s") == H5T_FLOAT);
    CHECK(f.openGroup("/kv_cache").openAttribute("capacity_tokens").getTypeClass() == H5T_INTEGER);
    CHECK(f.openGroup("/memory/node0.gpu0").openAttribute("count").getTypeClass() == H5T_INTEGER);
    CHECK(numbers(f, "/requests/prompt_tokens") == std::vector<double>(10, 64.0));
  }
  // ... and memwall's own reader takes the integer columns back.
  CHECK(run_cli("report " + h5).exit_code == 0);

  // A sweep: the index and an axis of whole numbers are integers; an axis with a
  // fraction and every result are floats (a failed point's result is NaN).
  std::string sweep = temp_path("layout_sweep.yaml"), out = temp_path("layout_sweep.h5");
  write_file(sweep, sweep_base +
                        "grid:\n  training.micro_batch: [1, 2]\n  hardware.gpu.hbm_achievable_bw: [5e11, 1e12]\n"
                        "  hardware.gpu.matmul_efficiency: [0.5]\n");
  REQUIRE(run_cli("sweep " + sweep + " -o " + out + " -j 1").exit_code == 0);
  H5::H5File f(out, H5F_ACC_RDONLY);
  CHECK(type_class(f, "/points/index") == H5T_INTEGER);
  CHECK(type_class(f, "/points/training.micro_batch") == H5T_INTEGER);
  CHECK(type_class(f, "/points/hardware.gpu.hbm_achievable_bw") == H5T_INTEGER); // 5e11 B/s: whole
  CHECK(type_class(f, "/points/hardware.gpu.matmul_efficiency") == H5T_FLOAT);
  CHECK(type_class(f, "/points/step_time_s") == H5T_FLOAT);
  CHECK(numbers(f, "/points/training.micro_batch") == std::vector<double>{1, 1, 2, 2});
  CHECK(numbers(f, "/points/hardware.gpu.hbm_achievable_bw") == std::vector<double>{5e11, 1e12, 5e11, 1e12});
  // ... and a resume reads them back.
  CHECK(run_cli("sweep " + sweep + " -o " + out + " --resume -j 1").exit_code == 0);
}

TEST_CASE("every_op_of_a_training_step_is_stamped_with_its_phase_in_step_order", "[outputs][plot]")
{
  // One GPU, two micro-batches, no pipeline: the GPU's compute stream runs forward(mb0),
  // backward(mb0), forward(mb1), backward(mb1), then the optimizer. So on that stream the
  // phases change exactly 4 times, in that order, and no backward op starts before the
  // first forward op ends.
  std::string spec = temp_path("layout_phases.yaml"), h5 = temp_path("layout_phases.h5");
  write_file(spec, small_training_spec);
  REQUIRE(run_cli("run " + spec + " -o " + h5 + " --ops all").exit_code == 0);
  H5::H5File f(h5, H5F_ACC_RDONLY);
  std::vector<std::string> phase = texts(f, "/ops/phase"), stream = texts(f, "/ops/stream"),
                           kind = texts(f, "/ops/kind");
  std::vector<double> start     = numbers(f, "/ops/start_s");
  std::vector<size_t> order;
  for (size_t i = 0; i < phase.size(); ++i)
    if (stream[i] == "compute" && kind[i] == "kernel" && phase[i] != "setup")
      order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return start[a] < start[b]; });
  std::vector<std::string> runs;
  for (size_t i : order)
    if (runs.empty() || runs.back() != phase[i])
      runs.push_back(phase[i]);
  CHECK(runs == std::vector<std::string>{"forward", "backward", "forward", "backward", "optimizer"});
}

TEST_CASE("a_run_that_does_not_fit_reports_its_overflow_and_no_time_or_throughput", "[outputs][memory]")
{
  // GPT-2 small, seq 1024, micro batch 32, no flash attention, on an A100-40GB: 43 GB of
  // activations, model states and logits against 42.3 GB (the hand sum in
  // advise_test.cpp). The replay runs past the failing allocation, so its step time
  // would be that of a GPU that never existed: null, with the overflow named instead.
  std::string spec = temp_path("unfit.yaml");
  write_file(spec, "hardware: {node: dgx-a100, gpus_per_node: 1, gpu: a100-sxm4-40gb}\nmodel: {preset: gpt2}\n"
                   "training: {seq_len: 1024, global_batch: 32, micro_batch: 32, flash_attention: false}\n");
  CliResult js = run_cli("run " + spec + " --json");
  REQUIRE(js.exit_code == 0);
  auto j = nlohmann::json::parse(js.out);
  CHECK(j["fits"] == false);
  for (const char* k : {"step_time_s", "tokens_per_s", "mfu"})
    CHECK(j[k].is_null());
  for (const auto& [k, v] : j["breakdown_s"].items())
    CHECK(v.is_null());
  const auto& oom = j["devices"][0]["oom"];
  REQUIRE(!oom.is_null());
  CHECK(j["did_not_fit"]["device"] == "node0.gpu0");
  CHECK(j["did_not_fit"]["what"] == oom["op"]);
  // The shortfall is the whole demand over the capacity, not the first failing request's
  // excess (which understated it: a job needing twice its GPU read "1.7 GiB over").
  const auto& gpu = j["devices"][0];
  CHECK(j["did_not_fit"]["needs_bytes"] == gpu["peak_bytes"]);
  CHECK(j["did_not_fit"]["overflow_bytes"].get<double>() ==
        gpu["peak_bytes"].get<double>() - gpu["capacity_bytes"].get<double>());
  CHECK(j["did_not_fit"]["overflow_bytes"].get<double>() >
        oom["requested_bytes"].get<double>() - oom["free_bytes"].get<double>());
  CliResult text = run_cli("run " + spec);
  CHECK_THAT(text.out, Catch::Contains("DID NOT FIT    node0.gpu0 needs ") &&
                           Catch::Contains("first failing allocation " + oom["op"].get<std::string>()) &&
                           !Catch::Contains("step time     ") && Catch::Contains("if it fit"));

  // In a sweep the point's times are NaN (its row still says why), fitting points keep theirs.
  std::string sweep = temp_path("unfit_sweep.yaml"), out = temp_path("unfit_sweep.h5");
  write_file(sweep, gpt2_oom_sweep);
  REQUIRE(run_cli("sweep " + sweep + " -o " + out + " -j 2").exit_code == 0);
  H5::H5File f(out, H5F_ACC_RDONLY);
  std::vector<double> fits = numbers(f, "/points/fits"), step = numbers(f, "/points/step_time_s"),
                      over = numbers(f, "/points/overflow_bytes");
  REQUIRE(std::count(fits.begin(), fits.end(), 0.0) > 0);
  for (size_t i = 0; i < fits.size(); ++i) {
    CHECK(std::isnan(step[i]) == (fits[i] == 0));
    CHECK((over[i] > 0) == (fits[i] == 0));
  }
}

TEST_CASE("a_job_that_does_not_fit_says_the_step_time_of_the_same_gpu_with_room_enough", "[outputs][memory]")
{
  // The same job on an A100 whose memory is 200 GB instead of 40 GB fits; its step time
  // and peak are what the run on the 40 GB GPU reports as "if it fit" and "needs".
  std::string spec = temp_path("unfit_if.yaml");
  write_file(spec, "hardware: {node: dgx-a100, gpus_per_node: 1, gpu: a100-sxm4-40gb}\nmodel: {preset: gpt2}\n"
                   "training: {seq_len: 1024, global_batch: 32, micro_batch: 32, flash_attention: false}\n");
  auto small = nlohmann::json::parse(run_cli("run " + spec + " --json").out);
  auto big   = nlohmann::json::parse(
        run_cli("run " + spec + " --json --set 'hardware.gpu={preset: a100-sxm4-40gb, memory_bytes: 200e9}'").out);
  REQUIRE(small["fits"] == false);
  REQUIRE(big["fits"] == true);
  CHECK(small["did_not_fit"]["step_time_if_it_fit_s"] == big["step_time_s"]);
  CHECK(small["did_not_fit"]["tokens_per_s_if_it_fit"] == big["tokens_per_s"]);
  CHECK(small["did_not_fit"]["needs_bytes"] == big["max_peak_bytes"]);
}

TEST_CASE("a_server_with_no_room_for_kv_cache_does_not_fit", "[outputs][inference]")
{
  // Llama-2-7B in fp16 (6.74e9 x 2 B = 12.55 GiB) on a GPU of 14e9 B: the server may use
  // 0.9 x 14e9 = 11.73 GiB, less than the weights alone. The budget went negative and the
  // run "fitted" with 0 tokens/s; then it read as a negative budget. Now the budget is
  // none, and the overflow what the server lacks for one 16-token block: the weights'
  // excess over the usable memory, their activations and context, and the block.
  std::string spec = temp_path("no_kv_room.yaml");
  write_file(spec, "hardware: {node: dgx-a100, gpus_per_node: 1, gpu: {preset: a100-sxm4-80gb, memory_bytes: 14e9}}\n"
                   "model: {preset: llama-2-7b}\n"
                   "inference: {poisson: {rate: 1, requests: 4, prompt_len: 128, output_len: 16}}\n");
  auto j = nlohmann::json::parse(run_cli("run " + spec + " --json").out);
  CHECK(j["fits"] == false);
  CHECK(j["kv_cache"]["budget_bytes"].get<double>() == 0);
  CHECK(j["kv_cache"]["holds_one_request"] == false);
  double block = 16 * j["kv_cache"]["bytes_per_token"].get<double>(); // 16 x 2 x 32 x 4,096 x 2 B = 8 MiB
  CHECK(block == 16.0 * 2 * 32 * 4096 * 2);
  double over = j["did_not_fit"]["overflow_bytes"].get<double>();
  CHECK(over > 6.74e9 * 2 - 0.9 * 14e9 + block);
  CHECK(over == j["kv_cache"]["shortfall_bytes"].get<double>());
  CHECK(j["output_tokens_per_s"].is_null());
  CHECK(j["step_time_s"].is_null());
}

TEST_CASE("a_run_file_keeps_one_row_per_kind_of_op_by_default_and_every_op_with_ops_all", "[outputs][hdf5]")
{
  // The summary's rows add up to the per-op table: as many ops, the same busy time,
  // bytes and FLOPs; --ops none writes no table; a serving run's default file is a
  // twentieth of its per-op one or less.
  std::string spec = temp_path("ops_table.yaml");
  write_file(spec, small_training_spec);
  auto h5 = [](const char* mode) { return temp_path(std::string("ops_") + mode + ".h5"); };
  REQUIRE(run_cli("run " + spec + " -o " + h5("summary")).exit_code == 0);
  REQUIRE(run_cli("run " + spec + " -o " + h5("all") + " --ops all").exit_code == 0);
  REQUIRE(run_cli("run " + spec + " -o " + h5("none") + " --ops none").exit_code == 0);
  H5::H5File all(h5("all"), H5F_ACC_RDONLY), summary(h5("summary"), H5F_ACC_RDONLY);
  std::vector<double> start = numbers(all, "/ops/start_s"), end = numbers(all, "/ops/end_s");
  std::vector<double> count = numbers(summary, "/ops/count"), busy = numbers(summary, "/ops/busy_s");
  double ops = 0, busy_all = 0, busy_summary = 0;
  for (double c : count)
    ops += c;
  for (size_t i = 0; i < start.size(); ++i)
    busy_all += end[i] - start[i];
  for (double b : busy)
    busy_summary += b;
  CHECK(ops == static_cast<double>(start.size()));
  CHECK(count.size() < start.size() / 4);
  CHECK(busy_summary == Approx(busy_all).epsilon(1e-9));
  // GPT-2's 12 layers' QKV GEMM, forward, in each of the 2 micro-batches: one row of 24.
  std::vector<std::string> names = texts(summary, "/ops/name"), kinds = texts(summary, "/ops/kind");
  auto qkv = std::find(names.begin(), names.end(), "L#.fwd.qkv");
  REQUIRE(qkv != names.end());
  CHECK(count[static_cast<size_t>(qkv - names.begin())] == 24);
  // The ribbon's spans: the 2 micro-batches' forward and backward alternate on the GPU,
  // then the optimizer: 2 + 2 + 1 spans at least, in phase order.
  std::vector<std::string> phases = texts(summary, "/phases/phase");
  CHECK(std::count(phases.begin(), phases.end(), "forward") >= 2);
  CHECK(std::count(phases.begin(), phases.end(), "backward") >= 2);
  CHECK(std::count(phases.begin(), phases.end(), "optimizer") >= 1);
  H5::H5File none(h5("none"), H5F_ACC_RDONLY);
  CHECK_FALSE(none.nameExists("ops"));
  CHECK_FALSE(none.nameExists("phases"));

  std::string serving = temp_path("ops_serving.yaml"), out = temp_path("ops_serving.h5");
  write_file(serving, "hardware: {node: dgx-a100, gpus_per_node: 1}\nmodel: {preset: gpt2}\n"
                      "inference: {poisson: {rate: 20, requests: 200, seed: 3, prompt_len: 128, output_len: 64}}\n");
  REQUIRE(run_cli("run " + serving + " -o " + out).exit_code == 0);
  auto summary_size = std::filesystem::file_size(out);
  REQUIRE(run_cli("run " + serving + " -o " + out + " --ops all").exit_code == 0);
  // What is left is one row per iteration (/kv_cache: 10,198 here) and per change of
  // the memory (/memory): about 10 KB a request for these 51 iterations a request.
  CHECK(summary_size * 20 < std::filesystem::file_size(out));
  CHECK(summary_size < 200 * 16 * 1024);
  CHECK(run_cli("run " + serving + " -o " + out + " --ops every").exit_code == 2);
}

TEST_CASE("the_readmes_pandas_snippet_runs_as_written_and_types_counts_and_flags", "[outputs][sweep][readme]")
{
  // The README's snippet, taken from the README itself, run by the interpreter it names
  // on a sweep with one failing point: fits is boolean, gpus and OOM counts int64, a
  // failed point -1 and false there (status says why).
  std::string readme = read_file(source_path("README.md"));
  size_t at          = readme.find("p = h5py.File(\"layouts.h5\")");
  REQUIRE(at != std::string::npos);
  size_t begin = readme.rfind("```python\n", at) + 10, end = readme.find("```", at);
  std::string snippet = readme.substr(begin, end - begin);
  REQUIRE_THAT(readme, Catch::Contains("`/usr/bin/python3`"));
  std::string sweep = temp_path("readme_pandas.yaml"), out = temp_path("layouts.h5");
  write_file(sweep, "spec:\n  hardware: {node: dgx-a100, gpus_per_node: 2}\n  model: {preset: gpt2}\n"
                    "  training: {seq_len: 512, global_batch: 8, micro_batch: 1}\n"
                    "grid:\n  training.tp: [1, 2, 3]\n");
  REQUIRE(run_cli("sweep " + sweep + " -o " + out + " -j 2").exit_code == 0);
  std::string py = temp_path("readme_pandas.py");
  write_file(py, "import os\nos.chdir(os.path.dirname(__file__))\n" + snippet +
                     "print(df['fits'].dtype, df['gpus'].dtype, df['gpu.oom_count'].dtype, df['step_time_s'].dtype)\n"
                     "print(list(df['status']), list(df['fits']), list(df['gpus']))\n");
  std::string log = temp_path("readme_pandas.out");
  REQUIRE(std::system(("/usr/bin/python3 " + py + " > " + log + " 2>&1").c_str()) == 0);
  std::string printed = read_file(log);
  INFO(printed);
  CHECK_THAT(printed, Catch::Contains("bool int64 int64 float64"));
  // tp 3 does not fit in the 2 GPUs: that point fails.
  CHECK_THAT(printed, Catch::Contains("['ok', 'ok', 'error']") && Catch::Contains("[True, True, False]") &&
                          Catch::Contains("[2, 2, -1]"));
}

TEST_CASE("a_server_whose_kv_block_exceeds_its_budget_does_not_fit", "[outputs][inference]")
{
  // GPT-2 small on one A100 80GB: 18 KiB of KV per token (2 x 12 layers x 768 x 2 B), a
  // budget of tens of GiB, paged in blocks of 4e6 tokens: one block is 4e6 x 18,432 B =
  // 73.7 GB, more than the budget. The paged budget is whole blocks, so it holds none:
  // capacity 0, every request rejected, and the run read "fits: true" (with a fixed
  // batch, a step time of 0). It does not fit, and says by how much.
  const std::string hw = "hardware: {node: dgx-a100, gpus_per_node: 1}\nmodel: {preset: gpt2}\n";
  for (const std::string requests :
       {"poisson: {rate: 10, requests: 4, prompt_len: 64, output_len: 8}", "batch: 4, prompt_len: 64, output_len: 8"}) {
    INFO(requests);
    auto j =
        memwall::test::run_json("kv_block_over_budget", hw + "inference: {block_size: 4000000, " + requests + "}\n");
    CHECK(j["fits"] == false);
    CHECK(j["kv_capacity_tokens"] == 0);
    double per_token = j["kv_cache"]["bytes_per_token"].get<double>();
    CHECK(per_token == 2.0 * 12 * 768 * 2);
    double budget = j["kv_cache"]["budget_bytes"].get<double>();
    CHECK(budget > 0);
    CHECK(j["kv_cache"]["holds_one_request"] == false);
    CHECK(j["did_not_fit"]["overflow_bytes"].get<double>() == 4e6 * per_token - budget);
    CHECK(j["step_time_s"].is_null());
  }
}
