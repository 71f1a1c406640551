// Explicit offload made real: attention over host-resident KV on the CPU (FlexGen's
// cpu_cache_compute) and GPU batches, against hand calculations on the cloud-t4 node
// (CPU 1.0e12 FLOP/s, DRAM 60 GB/s per socket, PCIe Gen3 12 GB/s); when ZeRO-Offload's
// CPU optimizer step starts.
#include "analysis/Hdf5Table.hpp"
#include "tests/TestHelpers.hpp"
#include "workloads/inference/FlexgenPlacement.hpp"
#include "workloads/model/ModelPresets.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <H5Cpp.h>

using namespace memwall::test;

namespace {

// OPT-6.7B (32 heads x 128 = 4096 wide, MHA, fp16 KV), 4 prompts of 512 tokens, 2 output
// tokens each: one prefill iteration, then one decode iteration over 512 cached keys.
std::string cpu_attention_spec(const std::string& attention)
{
  return "hardware: {node: cloud-t4}\nmodel: {preset: opt-6.7b}\n"
         "inference: {batch: 4, prompt_len: 512, output_len: 2, offload: {kv: cpu, attention: " +
         attention + "}}\n";
}

struct OpTimes {
  int count       = 0;
  double duration = 0, bytes = 0, flops = 0;
};

struct Ops {
  std::vector<std::string> name, phase, stream;
  std::vector<double> start, end, bytes, flops;
};

Ops read_ops(const std::string& h5)
{
  H5::H5File f(h5, H5F_ACC_RDONLY);
  H5::Group g = f.openGroup("/ops");
  return {memwall::read_texts(g, "name"),      memwall::read_texts(g, "phase"),   memwall::read_texts(g, "stream"),
          memwall::read_numbers(g, "start_s"), memwall::read_numbers(g, "end_s"), memwall::read_numbers(g, "bytes"),
          memwall::read_numbers(g, "flops")};
}

// The ops of a run file named `name` (the last one's duration, bytes, FLOPs).
OpTimes op_times(const std::string& h5, const std::string& name)
{
  Ops o = read_ops(h5);
  OpTimes t;
  for (size_t i = 0; i < o.name.size(); ++i)
    if (o.name[i] == name) {
      ++t.count;
      t.duration = o.end[i] - o.start[i];
      t.bytes    = o.bytes[i];
      t.flops    = o.flops[i];
    }
  return t;
}

// GPT-2 with ZeRO-1 and its optimizer on the CPU, on one A100 of a DGX, with one more
// offload key (`overlap_step`, `pinned`) set: the ops of the run.
Ops zero_offload_ops(const std::string& key, bool value)
{
  std::string tag  = key + (value ? "_on" : "_off");
  std::string spec = temp_path(tag + ".yaml"), h5 = temp_path(tag + ".h5");
  write_file(spec, "hardware: {node: dgx-a100, gpus_per_node: 1}\nmodel: {preset: gpt2}\n"
                   "training: {seq_len: 512, global_batch: 4, micro_batch: 4, zero: 1, "
                   "offload: {optimizer: cpu, " +
                       key + ": " + (value ? "true" : "false") + "}}\n");
  REQUIRE(run_cli("run " + spec + " -o " + h5 + " --ops all").exit_code == 0);
  return read_ops(h5);
}

} // namespace

TEST_CASE("cpu_attention_moves_the_cached_kv_seven_times_over_as_flexgens_mha_gen_copies_it", "[offload][inference]")
{
  std::string spec = temp_path("cpu_attention.yaml"), h5 = temp_path("cpu_attention.h5");
  write_file(spec, cpu_attention_spec("cpu"));
  REQUIRE(run_cli("run " + spec + " -o " + h5 + " --ops all").exit_code == 0);
  // Decode: 4 sequences x 512 cached keys x 2 (K, V) x 4096 x 2 B = 33,554,432 B of KV,
  // and 4 (QK^T and AV, 2 FLOPs per multiply-add) x 4 x 512 pairs x 4096 = 33.6 MFLOP.
  // FlexGen's mha_gen (pytorch_backend.py) permutes the fp16 cache into contiguous copies
  // (2 + 2 B an element), widens them with .float() (2 + 4 B) and the two bmm's read the
  // fp32 copies (4 B): 14 B per 2-B element, 7 x 33,554,432 B. DRAM: 234.9 MB / 60e9 =
  // 3.91 ms; CPU: 33.6e6 / 1e12 = 33.6 us. Memory-bound.
  OpTimes cpu = op_times(h5, "L0.attn.cpu");
  CHECK(cpu.count == 1); // the prefill's attention over its own tokens stays on the GPU
  CHECK(cpu.bytes == 7 * 4.0 * 512 * 2 * 4096 * 2);
  CHECK(cpu.flops == 4.0 * 4 * 512 * 4096);
  CHECK(cpu.duration == Approx(7 * 33554432.0 / 60e9).epsilon(0.01));
  // Queries down and outputs up: 4 tokens x 4096 x 2 B = 32 KiB each way over PCIe.
  CHECK(op_times(h5, "L0.attn.q.d2h").bytes == 4.0 * 4096 * 2);
  CHECK(op_times(h5, "L0.attn.out.h2d").bytes == 4.0 * 4096 * 2);
  // ... and no KV crosses PCIe to the GPU.
  CHECK(op_times(h5, "L0.kv.h2d").count == 0);
}

TEST_CASE("cpu_attention_beats_streaming_the_kv_only_where_dram_moves_its_sevenfold_copies_fast",
          "[offload][inference]")
{
  // A decode layer of OPT-6.7B at batch 4 reads its 402,653,184 B of weights from 250 GB/s
  // memory: 1.61 ms of GPU work. Streaming overlaps that with the 33.5 MB KV copy over
  // 12 GB/s PCIe: 2.8 ms a layer. The CPU path sits between the qkv and out kernels, so
  // its DRAM time adds to the GPU's: 7 x 33.5 MB at the cloud-t4's 60 GB/s is 3.91 ms
  // (5.5 ms a layer, slower); at 480 GB/s 0.49 ms (2.1 ms a layer, faster).
  auto run = [](const std::string& attention, const std::string& dram) {
    return run_json("attention_" + attention + dram,
                    "hardware: {node: {preset: cloud-t4, dram_bw_per_socket: " + dram +
                        "}}\nmodel: {preset: opt-6.7b}\n"
                        "inference: {batch: 4, prompt_len: 512, output_len: 2, offload: {kv: cpu, attention: " +
                        attention + "}}\n");
  };
  auto gpu = run("gpu", "60e9"), cpu = run("cpu", "60e9"), gpu_fast = run("gpu", "480e9"),
       cpu_fast = run("cpu", "480e9");
  REQUIRE(gpu["fits"] == true);
  REQUIRE(cpu["fits"] == true);
  CHECK(cpu["step_time_s"].get<double>() > gpu["step_time_s"].get<double>());
  CHECK(cpu_fast["step_time_s"].get<double>() < gpu_fast["step_time_s"].get<double>());
  auto down = [](const nlohmann::json& j) {
    for (const auto& l : j["links"])
      if (l["name"] == "node0.gpu0.pcie.down")
        return l["bytes"].get<double>();
    return 0.0;
  };
  // The decode's fetch of the 512 cached tokens' KV (4 x 512 x 2 x 4096 x 2 B per layer)
  // leaves with CPU attention; the queries' outputs (32 KiB per layer) come in instead.
  // The prefill fetches nothing either way: its tokens' KV was computed on the GPU.
  double decode = 4.0 * 512 * 2 * 4096 * 2, outputs = 4.0 * 4096 * 2;
  CHECK(down(gpu) - down(cpu) == Approx(32 * (decode - outputs)).epsilon(1e-9));
}

TEST_CASE("cpu_attention_over_kv_on_nvme_reads_it_into_a_host_workspace_first", "[offload][inference]")
{
  // FlexGen's load_cache, path 1 (cpu_cache_compute with the cache on disk): the cached KV
  // is read from disk into the CPU's attention workspace, then the CPU attends over it.
  // Half the decode's 33,554,432 B of KV per layer on NVMe: 16,777,216 B at the local
  // SSD's 2 GB/s = 8.39 ms, done before the CPU kernel starts.
  std::string spec = temp_path("cpu_attention_nvme.yaml"), h5 = temp_path("cpu_attention_nvme.h5");
  write_file(spec, "hardware: {node: cloud-t4}\nmodel: {preset: opt-6.7b}\n"
                   "inference: {batch: 4, prompt_len: 512, output_len: 2, "
                   "offload: {attention: cpu, percent: {kv: [0, 50, 50]}}}\n");
  REQUIRE(run_cli("run " + spec + " -o " + h5 + " --ops all").exit_code == 0);
  Ops o           = read_ops(h5);
  double read_end = -1, read_bytes = 0, read_s = 0, cpu_start = -1;
  for (size_t i = 0; i < o.name.size(); ++i) {
    if (o.name[i] == "L0.attn.kv.read") {
      read_end   = o.end[i];
      read_bytes = o.bytes[i];
      read_s     = o.end[i] - o.start[i];
    }
    if (o.name[i] == "L0.attn.cpu")
      cpu_start = o.start[i];
  }
  CHECK(read_bytes == 0.5 * 4 * 512 * 2 * 4096 * 2);
  CHECK(read_s == Approx(16777216.0 / 2e9).epsilon(0.01));
  CHECK(cpu_start >= read_end);
}

TEST_CASE("cpu_attention_needs_the_kv_cache_in_host_memory", "[offload][errors]")
{
  CHECK_THAT(refused("cpu_attention_gpu_kv", "hardware: {node: cloud-t4}\nmodel: {preset: opt-6.7b}\n"
                                             "inference: {batch: 4, prompt_len: 512, output_len: 2, "
                                             "offload: {attention: cpu}}\n"),
             Catch::Contains("inference.offload") && Catch::Contains("needs KV in host memory or on NVMe") &&
                 Catch::Contains("on the GPU"));
  CHECK_THAT(refused("cpu_attention_bad", "hardware: {node: cloud-t4}\nmodel: {preset: opt-6.7b}\n"
                                          "inference: {batch: 4, prompt_len: 512, output_len: 2, "
                                          "offload: {kv: cpu, attention: tpu}}\n"),
             Catch::Contains("inference.offload.attention") && Catch::Contains("gpu, cpu"));
}

TEST_CASE("gpu_batches_share_each_layers_weights_and_hold_one_batchs_workspace", "[offload][inference]")
{
  // FlexGen's zig-zag block: the 4 prompts of 512 tokens run through each layer as 2 GPU
  // batches of 2 while the layer's weights (all on the host) are on the GPU once.
  auto run = [](int64_t parts) {
    return run_json("gpu_batches_" + std::to_string(parts),
                    "hardware: {node: cloud-t4}\nmodel: {preset: opt-6.7b}\n"
                    "inference: {batch: 4, prompt_len: 512, output_len: 2, gpu_batches: " +
                        std::to_string(parts) + ", offload: {weights: cpu}}\n");
  };
  auto one = run(1), two = run(2);
  REQUIRE(one["fits"] == true);
  REQUIRE(two["fits"] == true);
  auto link_bytes = [](const nlohmann::json& j, const std::string& name) {
    for (const auto& l : j["links"])
      if (l["name"] == name)
        return l["bytes"].get<double>();
    return 0.0;
  };
  // The weights cross PCIe once per layer and iteration either way.
  CHECK(link_bytes(two, "node0.gpu0.pcie.down") == link_bytes(one, "node0.gpu0.pcie.down"));
  // Activation workspace of the prefill (2048 tokens, 4 sampled rows), OPT-6.7B: per token
  // 2 B x (2 x 4096 residual and norm + 3 x 4096 qkv + 16384 MLP) = 73,728 B, and fp32
  // logits of 50,272 per sampled row.
  //   one batch:  2048 x 73,728 + 4 x 50,272 x 4                        = 151,799,296 B
  //   two of two: 1024 x 73,728 + 2 x 50,272 x 4 + 1024 x 4096 x 2 (the
  //               other batch's residual stream)                         =  84,288,256 B
  auto activations = [](const nlohmann::json& j) {
    return j["devices"][0]["max_by_category"]["activations"].get<double>();
  };
  CHECK(activations(one) == 151799296.0);
  CHECK(activations(two) == 84288256.0);
}

TEST_CASE("gpu_batches_must_be_a_positive_count", "[offload][errors]")
{
  CHECK_THAT(refused("gpu_batches_0", "hardware: {node: cloud-t4}\nmodel: {preset: opt-6.7b}\n"
                                      "inference: {batch: 4, prompt_len: 512, output_len: 2, gpu_batches: 0}\n"),
             Catch::Contains("inference.gpu_batches") && Catch::Contains("[1, 4096]"));
}

TEST_CASE("the_offloaded_optimizer_step_waits_for_the_whole_backward_unless_overlap_step", "[offload][training]")
{
  // DeepSpeed runs optimizer.step() after loss.backward(): no block's CPU Adam starts
  // before the last backward kernel ends. With overlap_step a block's step starts when its
  // gradients reach the host, while earlier layers are still in backward (GPT-2: 12 layers).
  auto first_step_vs_backward_end = [](bool overlap) {
    Ops o             = zero_offload_ops("overlap_step", overlap);
    double first_step = 1e300, backward_end = 0;
    for (size_t i = 0; i < o.name.size(); ++i) {
      if (o.name[i].size() > 9 && o.name[i].compare(o.name[i].size() - 9, 9, "_step.cpu") == 0)
        first_step = std::min(first_step, o.start[i]);
      if (o.phase[i] == "backward" && o.stream[i] == "compute")
        backward_end = std::max(backward_end, o.end[i]);
    }
    REQUIRE(first_step < 1e300);
    return first_step - backward_end;
  };
  CHECK(first_step_vs_backward_end(false) >= 0);
  CHECK(first_step_vs_backward_end(true) < 0);
}

TEST_CASE("zero_offload_gradient_copies_are_staged_unless_pinned", "[offload][training]")
{
  // DeepSpeed's offload_optimizer.pin_memory is off by default: the gradient shards go
  // D2H through the driver's staging buffer at the node's 10.7 GB/s memcpy rate. Pinned,
  // they run at the DGX A100's 25 GB/s PCIe uplink (plus the GPU link's 1 us latency).
  for (bool pinned : {false, true}) {
    Ops o      = zero_offload_ops("pinned", pinned);
    int copies = 0;
    for (size_t i = 0; i < o.name.size(); ++i)
      if (o.name[i].find(".grads_d2h") != std::string::npos) {
        ++copies;
        double expect = pinned ? 1e-6 + o.bytes[i] / 25e9 : o.bytes[i] / 10.7e9;
        CHECK(o.end[i] - o.start[i] == Approx(expect).epsilon(1e-6));
      }
    CHECK(copies > 0);
  }
}

namespace {

// OPT-6.7B on the cloud-t4 node (PCIe Gen3 12 GB/s, local SSD read 2 GB/s and write
// 1.5 GB/s), 4 prompts of 512 tokens and 2 outputs, with FlexGen's percent policy.
std::string percent_spec(const std::string& percent)
{
  return "hardware: {node: cloud-t4}\nmodel: {preset: opt-6.7b}\n"
         "inference: {batch: 4, prompt_len: 512, output_len: 2, offload: {percent: " +
         percent + "}}\n";
}

} // namespace

TEST_CASE("a_weights_split_across_host_and_nvme_streams_each_part_from_its_tier", "[offload][inference]")
{
  std::string spec = temp_path("percent_split.yaml"), h5 = temp_path("percent_split.h5");
  write_file(spec, percent_spec("{weights: [0, 50, 50], kv: [100, 0, 0], activations: [100, 0, 0]}"));
  REQUIRE(run_cli("run " + spec + " -o " + h5 + " --ops all").exit_code == 0);
  // One OPT-6.7B layer holds 12 h^2 = 201,326,592 fp16 weights (attention 4 h^2, MLP
  // 8 h^2): 402,653,184 B. FlexGen places whole tensors (FlexgenPlacement.hpp): q, k and
  // their biases, fc1 and its bias on disk, the rest in host memory: (6 h^2 + 6 h) of
  // (12 h^2 + 13 h) elements, half to within 1e-5.
  const double half = 12.0 * 4096 * 4096;
  OpTimes h2d = op_times(h5, "L0.weights.h2d"), read = op_times(h5, "L0.weights.read"),
          nvme_h2d = op_times(h5, "L0.weights.nvme.h2d");
  CHECK(h2d.bytes == Approx(half).epsilon(1e-4));
  CHECK(read.bytes == Approx(half).epsilon(1e-4));
  CHECK(nvme_h2d.bytes == read.bytes);
  CHECK(h2d.duration == Approx(1e-6 + half / 12e9).epsilon(1e-3)); // Gen3 x16
  CHECK(read.duration == Approx(half / 2e9).epsilon(1e-2));        // the local SSD's read rate
  // Every layer's weights: half in host DRAM and half on NVMe.
  nlohmann::json j = nlohmann::json::parse(run_cli("run " + spec + " --json").out);
  for (const auto& d : j["devices"])
    if (d["kind"] != "gpu")
      CHECK(d["max_by_category"]["weights"].get<double>() == Approx(32 * half).epsilon(1e-4));
}

TEST_CASE("offloaded_activations_leave_after_each_layer_and_come_back_before_the_next", "[offload][inference]")
{
  std::string spec = temp_path("percent_act.yaml"), h5 = temp_path("percent_act.h5");
  // Weights and KV in host memory too, so that the GPU has room for the whole batch at once.
  write_file(spec, percent_spec("{weights: [0, 100, 0], kv: [0, 100, 0], activations: [0, 100, 0]}"));
  REQUIRE(run_cli("run " + spec + " -o " + h5 + " --ops all").exit_code == 0);
  // The prefill's hidden states: 4 x 512 tokens x 4096 x 2 B = 16,777,216 B each way per
  // layer boundary, 1 us + 1.40 ms over Gen3; none after the last layer (the head reads it).
  Ops o       = read_ops(h5);
  double down = 0, first_down_end = -1, first_up_start = -1;
  int downs = 0;
  for (size_t i = 0; i < o.name.size(); ++i) {
    if (o.name[i] == "L0.act.d2h" && first_down_end < 0) {
      down           = o.bytes[i];
      first_down_end = o.end[i];
    }
    if (o.name[i] == "L0.act.h2d" && first_up_start < 0)
      first_up_start = o.start[i];
    if (o.name[i].find(".act.d2h") != std::string::npos)
      ++downs;
  }
  CHECK(down == 4.0 * 512 * 4096 * 2);
  CHECK(first_up_start >= first_down_end);
  CHECK(downs == 2 * 31); // two iterations, 31 boundaries between 32 layers
}

TEST_CASE("percent_policies_that_do_not_sum_to_100_are_refused_with_one_line", "[offload][errors]")
{
  using Catch::Matchers::Contains;
  CHECK_THAT(refused("pct_sum", percent_spec("{weights: [20, 70, 0]}")),
             Contains("inference.offload.percent.weights") && Contains("sums to 90, not 100"));
  CHECK_THAT(refused("pct_len", percent_spec("{kv: [0, 100]}")), Contains("[gpu, cpu, disk]"));
  CHECK_THAT(refused("pct_neg", percent_spec("{activations: [-10, 110, 0]}")), Contains("[0, 100]"));
  CHECK_THAT(refused("pct_text", percent_spec("{weights: [a, b, c]}")), Contains("percentages"));
  CHECK_THAT(refused("pct_key", percent_spec("{weight: [0, 100, 0]}")), Contains("weight"));
  CHECK_THAT(refused("pct_both", "hardware: {node: cloud-t4}\nmodel: {preset: opt-6.7b}\n"
                                 "inference: {batch: 4, prompt_len: 512, output_len: 2, "
                                 "offload: {weights: cpu, percent: {weights: [0, 100, 0]}}}\n"),
             Contains("either percent or weights/kv"));
}

TEST_CASE("flexgen_places_whole_weight_tensors_where_their_midpoints_fall", "[offload][inference]")
{
  // FlexGen's init_weight_list: each tensor of an attention block [q, bq, k, bk, v, bv, out,
  // bout, ln weight + bias] and of an MLP [fc1, b1, fc2, b2, ln] goes whole to the band
  // (disk, then CPU, then GPU, over the block's cumulative size) its midpoint falls in.
  // OPT-30B (h = 7168, ffn = 4 h) at 20 % GPU / 80 % CPU: the attention's out projection
  // (midpoint 87.5 %), its bias and norm, the MLP's fc2 bias and norm stay on the GPU,
  // h^2 + 6 h of 12 h^2 + 13 h elements: 8.3 %, not 20 %.
  memwall::ModelSpec opt30 = memwall::model_preset("opt-30b");
  const double h           = 7168;
  memwall::OffShares s     = memwall::flexgen_weight_placement(opt30, 80, 0);
  CHECK(s.cpu == Approx(1 - (h * h + 6 * h) / (12 * h * h + 13 * h)).epsilon(1e-12));
  CHECK(s.nvme == 0);
  CHECK(1 - s.cpu == Approx(0.0834).epsilon(1e-3));
  // 0 / 50 / 50: q, k (+ biases) and fc1 (+ bias) on disk, the rest in host memory.
  memwall::OffShares half = memwall::flexgen_weight_placement(opt30, 50, 50);
  CHECK(half.nvme == Approx((6 * h * h + 6 * h) / (12 * h * h + 13 * h)).epsilon(1e-12));
  CHECK(half.cpu + half.nvme == Approx(1.0).epsilon(1e-12));
}
