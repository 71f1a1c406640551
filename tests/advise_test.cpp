// memwall advise: remedies simulated cheapest first; a known out-of-memory case becomes
// one that fits, and the command line it prints reproduces the fit.
#include "app/advise/Remedy.hpp"
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

using namespace memwall::test;
using nlohmann::json;

namespace {

json advise_json(const std::string& args)
{
  CliResult r = run_cli("advise " + args + " --json -j 2");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return json::parse(r.out);
}

const json& remedy(const json& a, const std::string& name)
{
  for (const json& r : a["remedies"])
    if (r["name"] == name)
      return r;
  FAIL("no remedy " << name);
  return a;
}

std::string as_sets(const json& overrides)
{
  std::string s;
  for (const auto& o : overrides)
    s += " --set " + o.get<std::string>();
  return s;
}

} // namespace

TEST_CASE("the_advisor_fits_an_oversized_micro_batch_by_gradient_accumulation", "[advise]")
{
  // GPT-2 small (124M parameters), seq 1024, micro batch 32, no flash attention, on one
  // A100-40GB (42,297,524,224 B as the driver reports it). By hand: Korthikanti et al. (2022) activations 12 layers x
  // sbh(34 + 5as/h) = 12 x 1024*32*768 x (34 + 5*12*1024/768) B = 34.4 GB, plus weights,
  // gradients and Adam at 16 B/parameter = 2.0 GB, plus fp32 logits 32*1024*50257*4 B =
  // 6.6 GB: 43 GB > 40 GB. At micro batch 16 everything but the 2.0 GB halves: 22.5 GB.
  std::string spec = source_path("examples/gpt2-1gpu-a100.yaml") +
                     " --set hardware.gpu=a100-sxm4-40gb --set training.flash_attention=false"
                     " --set training.micro_batch=32 --set training.global_batch=64";
  json a = advise_json(spec);
  CHECK(a["given"]["fits"] == false);
  CHECK(a["given"]["peak_bytes"].get<double>() > 42297524224.0);
  CHECK(a["given"]["capacity_bytes"].get<double>() == 42297524224.0);

  // The cheapest remedy comes first and its largest micro-batch that fits is 16.
  REQUIRE(a["remedies"][0]["name"] == "smaller-micro-batch");
  const json& mb16 = a["remedies"][0]["tries"][0];
  CHECK(mb16["overrides"] == json::array({"training.micro_batch=16"}));
  CHECK(mb16["fits"] == true);
  CHECK(mb16["peak_bytes"].get<double>() < 40e9);
  // Same global batch in 4 micro-batches instead of 2: the same work, about the time the
  // given layout takes on the same GPU with memory enough for it. The given layout did
  // not fit, so it reports no time of its own.
  CHECK(a["given"]["step_time_s"].is_null());
  json roomy = json::parse(run_cli("run " + spec + " --set hardware.gpu.memory_bytes=80e9 --json").out);
  REQUIRE(roomy["fits"] == true);
  CHECK(mb16["step_time_s"].get<double>() == Approx(roomy["step_time_s"].get<double>()).epsilon(0.05));

  // The text names it first and prints a command line that runs it; that run fits.
  CliResult text = run_cli("advise " + spec + " -j 2");
  CHECK_THAT(text.out,
             Catch::Contains("first and fastest that fits on the same 1 GPU: smaller-micro-batch, micro_batch 16"));
  CliResult run = run_cli("run " + spec + as_sets(mb16["overrides"]) + " --json");
  REQUIRE(run.exit_code == 0);
  json r = json::parse(run.out);
  CHECK(r["fits"] == true);
  CHECK(r["max_peak_bytes"].get<double>() == mb16["peak_bytes"].get<double>());

  // The printed line sets micro_batch once, to the remedy's 16 (the user's 32 is
  // replaced, not repeated before it), and running that line as printed fits.
  size_t at = text.out.find("memwall run ");
  REQUIRE(at != std::string::npos);
  std::string line = text.out.substr(at + 8, text.out.find('\n', at) - at - 8);
  CHECK_THAT(line, Catch::Contains("--set training.micro_batch=16") && !Catch::Contains("micro_batch=32"));
  json printed = json::parse(run_cli(line + " --json").out);
  CHECK(printed["fits"] == true);
}

TEST_CASE("the_advisor_quantizes_weights_that_exceed_the_gpu", "[advise][inference]")
{
  // Llama-2-70B (69e9 parameters) in fp16 is 138 GB of weights: no batch size, KV dtype
  // or KV layout can fit it in 80 GB. int8 weights are 69 GB; 16 requests of 512 + 32
  // tokens need 16 x 544 x 327,680 B (8 KV heads x 128 x 80 layers x K,V x 2 B) =
  // 2.9 GB of KV: 71.9 GB, inside vLLM's 0.9 x 80 GB = 72 GB. int4 (34.5 GB) fits too.
  std::string spec = temp_path("advise_70b.yaml");
  write_file(spec, "hardware: {node: dgx-a100, gpus_per_node: 1}\nmodel: {preset: llama-2-70b}\n"
                   "inference: {batch: 16, prompt_len: 512, output_len: 32}\n");
  json a = advise_json(spec);
  CHECK(a["given"]["fits"] == false);
  for (const char* useless : {"smaller-concurrency", "kv-quantization"})
    CHECK(remedy(a, useless)["fits"] == false);
  const json& q = remedy(a, "weight-quantization");
  CHECK(q["fits"] == true);
  REQUIRE(q["tries"].size() == 2);
  CHECK(q["tries"][0]["overrides"] == json::array({"inference.weight_dtype=int8"}));
  CHECK(q["tries"][0]["fits"] == true);
  CHECK(q["tries"][1]["overrides"] == json::array({"inference.weight_dtype=int4"}));
  CHECK(q["tries"][1]["fits"] == true);
  CliResult text = run_cli("advise " + spec + " -j 2");
  CHECK_THAT(text.out,
             Catch::Contains("first and fastest that fits on the same 1 GPU: weight-quantization, int8 weights"));
}

// Every try of an advice that fits on the given GPU count, from the JSON: alone, two at
// a time and stacked (not those that train something else: never an answer).
std::vector<json> fitting_on(const json& a, double gpus)
{
  std::vector<json> out;
  auto add = [&](const json& t) {
    if (t["ran"] == true && t["fits"] == true && t["gpus"].get<double>() == gpus)
      out.push_back(t);
  };
  for (const json& r : a["remedies"])
    if (!r.contains("changes_what_trains"))
      for (const json& t : r["tries"])
        add(t);
  for (const char* list : {"combined", "stacked"})
    for (const json& t : a[list])
      add(t);
  return out;
}

// The advice's `fastest`: no fitting try on its GPUs is more than 1 % faster (within 1 %
// the cheapest is named), and its overrides, run, fit at the step time it reported.
void check_fastest(const json& a, const std::string& spec)
{
  REQUIRE(a["fastest"].is_object());
  double best = INFINITY;
  for (const json& t : fitting_on(a, a["given"]["gpus"].get<double>()))
    best = std::min(best, t["step_time_s"].get<double>());
  CHECK(a["fastest"]["step_time_s"].get<double>() <= 1.01 * best);
  CliResult run = run_cli("run " + spec + as_sets(a["fastest"]["overrides"]) + " --json");
  REQUIRE(run.exit_code == 0);
  json r = json::parse(run.out);
  CHECK(r["fits"] == true);
  CHECK(r["step_time_s"].get<double>() == Approx(a["fastest"]["step_time_s"].get<double>()));
}

TEST_CASE("when_no_remedy_fits_alone_the_advisor_pairs_them_and_names_the_fastest_pair", "[advise]")
{
  // Llama-2-13B at seq 4096 on one A100-40GB: 13e9 x 16 B of weights, gradients and
  // Adam states (208 GB) alone are five GPUs' worth; no single change fits it, two do
  // (full recomputation with the optimizer in host RAM, among others).
  std::string spec = temp_path("advise_13b.yaml");
  write_file(spec, "hardware: {node: dgx-a100, gpus_per_node: 1, gpu: a100-sxm4-40gb}\nmodel: {preset: llama-2-13b}\n"
                   "training: {seq_len: 4096, global_batch: 8, micro_batch: 2}\n");
  json a = advise_json(spec);
  CHECK(a["given"]["fits"] == false);
  for (const json& r : a["remedies"])
    if (r["name"] != "more-gpus" && !r.contains("changes_what_trains")) // LoRA trains adapters: fits, said apart
      CHECK(r["fits"] == false);
  size_t pairs_fit = 0;
  for (const json& t : a["combined"])
    pairs_fit += t["ran"] == true && t["fits"] == true;
  CHECK(pairs_fit >= 2);
  CHECK(a["stacked"].empty()); // a pair fits: nothing stacked
  CHECK_THAT(a["fastest"]["change"].get<std::string>(), Catch::Contains(" + "));
  check_fastest(a, spec);
}

TEST_CASE("when_no_two_fit_the_advisor_stacks_them_until_one_does", "[advise]")
{
  // Llama-2-70B at seq 4096 on one A100-40GB: 1.1 TB of model states; no pair fits.
  std::string spec = temp_path("advise_70b_train.yaml");
  write_file(spec, "hardware: {node: dgx-a100, gpus_per_node: 1, gpu: a100-sxm4-40gb}\nmodel: {preset: llama-2-70b}\n"
                   "training: {seq_len: 4096, global_batch: 8, micro_batch: 2}\n");
  json a = advise_json(spec);
  for (const json& t : a["combined"])
    CHECK_FALSE((t["ran"] == true && t["fits"] == true));
  REQUIRE_FALSE(a["stacked"].empty());
  const json& last = a["stacked"].back();
  CHECK(last["fits"] == true);
  // Every earlier stack did not fit; each one kept added something that lowered the peak.
  for (size_t i = 0; i + 1 < a["stacked"].size(); ++i)
    CHECK(a["stacked"][i]["fits"] == false);
  CHECK(a["fastest"]["overrides"] == last["overrides"]);
  check_fastest(a, spec);
}

TEST_CASE("a_hugging_face_job_that_needs_zero_and_offload_moves_to_deepspeed_and_the_advisor_names_it", "[advise]")
{
  // The README's fine-tuning question: Llama-3-8B under the HF Trainer (stack pytorch:
  // DDP, 16 B per parameter of fp32 weights, gradients and AdamW states: 128 GB) on one
  // H100. Plain PyTorch has no ZeRO or offload; DeepSpeed on the same modules has both.
  std::string spec = source_path("examples/llama3-8b-hf-finetune-1xh100.yaml");
  json a           = advise_json(spec);
  CHECK(a["given"]["fits"] == false);
  const json& offload = remedy(a, "optimizer-offload");
  REQUIRE_FALSE(offload["tries"].empty());
  for (const json& t : offload["tries"]) {
    CHECK_THAT(t["change"].get<std::string>(), Catch::StartsWith("DeepSpeed (same HF modules): "));
    CHECK(std::count(t["overrides"].begin(), t["overrides"].end(), "training.stack=deepspeed") == 1);
    CHECK(std::count(t["overrides"].begin(), t["overrides"].end(), "training.deepspeed.modules=transformers") == 1);
  }
  // Hugging Face's gradient checkpointing recomputes whole layers: selective recompute, a
  // level the pytorch stack refuses, is not offered.
  CHECK(remedy(a, "selective-recompute")["tries"].empty());
  CHECK_FALSE(remedy(a, "full-recompute")["tries"].empty());
  CHECK(a["fastest"]["gpus"] == 1);
  CHECK_THAT(a["fastest"]["change"].get<std::string>(), Catch::Contains("DeepSpeed (same HF modules)"));
  check_fastest(a, spec);
  CliResult text = run_cli("advise " + spec + " -j 2");
  CHECK_THAT(text.out, Catch::Contains("fastest that fits on the same 1 GPU: "));
  // The README quotes the answer's step time and the eight-GPU one.
  char quoted[64];
  std::snprintf(quoted, sizeof quoted, "pinned host RAM, %.2f s per step", a["fastest"]["step_time_s"].get<double>());
  std::string readme = read_file(source_path("README.md"));
  CHECK_THAT(readme, Catch::Contains(quoted));
  std::snprintf(quoted, sizeof quoted, "ZeRO-3 would take %.2f s",
                remedy(a, "more-gpus")["tries"][0]["step_time_s"].get<double>());
  CHECK_THAT(readme, Catch::Contains(quoted));
}

TEST_CASE("a_spec_that_fits_needs_no_remedy_and_a_broken_one_is_refused", "[advise][errors]")
{
  json a = advise_json(source_path("examples/gpt2-1gpu-a100.yaml"));
  CHECK(a["given"]["fits"] == true);
  CHECK(a["remedies"].empty());

  CliResult bad = run_cli("advise " + source_path("examples/gpt2-1gpu-a100.yaml") + " --set training.micro_bach=4");
  CHECK(bad.exit_code == 2);
  CHECK(std::count(bad.err.begin(), bad.err.end(), '\n') == 1);
  CHECK_THAT(bad.err, Catch::Contains("micro_bach"));
}

TEST_CASE("a_model_parallel_split_of_an_moe_job_keeps_ep_within_the_new_data_parallel_ranks", "[advise][moe]")
{
  // Mixtral 8x7B with ep 8 on 8 GPUs and plain Adam does not fit (each GPU keeps its
  // expert's 16 bytes per parameter). A tp 2 split leaves 4 data-parallel ranks: ep must
  // shrink to 4 and tp needs sequence parallelism, or the try is an invalid spec.
  json a = advise_json(source_path("examples/mixtral-8x7b-ep8-dgx-h100.yaml") + " --set training.optimizer=adam");
  const json& split = remedy(a, "model-parallel-split");
  REQUIRE(!split["tries"].empty());
  for (const json& t : split["tries"]) {
    INFO(t["change"]);
    CHECK(t["ran"] == true);
  }
  CHECK(split["tries"][0]["overrides"] ==
        json::array({"training.tp=2", "training.pp=1", "training.dp=4", "training.ep=4", "training.sp=true"}));
}

TEST_CASE("a_replayed_trace_has_no_stack_for_a_remedy_to_switch_from", "[advise]")
{
  // A `workload: {trace: ...}` spec reads no training section: its TrainingConfig has no
  // stack, and the remedies that shard or offload model states ask for the switch.
  memwall::ExperimentSpec replayed;
  REQUIRE(replayed.training.stack == nullptr);
  memwall::ShardingStack none = memwall::sharding_stack(replayed);
  CHECK(none.change.empty());
  CHECK(none.overrides.empty());
}

TEST_CASE("a_full_fine_tune_past_one_rtx_4090_is_offered_liger_and_adapters_beside_the_answers", "[advise][lora]")
{
  // Llama-3-8B under the HF Trainer on one RTX 4090: 16 B a parameter cannot fit 24 GB.
  // Liger's kernels keep the same training (an answer if they fit); LoRA trains something
  // else: listed, with gradient checkpointing as PEFT's recipes run it, never the answer.
  const std::string path = temp_path("ft_4090.yaml");
  write_file(path, "hardware: {node: workstation-4x4090, gpus_per_node: 1}\nmodel: {preset: llama-3-8b}\n"
                   "training: {stack: pytorch, seq_len: 2048, micro_batch: 1, global_batch: 16, optimizer: adamw}\n");
  json a = advise_json(path);
  CHECK(a["given"]["fits"] == false);
  const json& liger = remedy(a, "liger-kernel");
  REQUIRE(liger["tries"].size() == 1);
  CHECK(liger["tries"][0]["overrides"][0] == "training.liger_kernel=true");
  CHECK(liger["tries"][0]["peak_bytes"].get<double>() < a["given"]["peak_bytes"].get<double>());
  const json& peft = remedy(a, "peft-adapters");
  CHECK(peft["changes_what_trains"] == true);
  bool lora_fits = false;
  for (const json& t : peft["tries"])
    lora_fits = lora_fits || (t["fits"] == true && t["change"].get<std::string>().find("LoRA rank 16") == 0);
  CHECK(lora_fits);
  REQUIRE(a["fastest"].is_object());
  CHECK(a["fastest"]["change"].get<std::string>().find("LoRA") == std::string::npos);
  // Liger pairs with the switch to DeepSpeed as with anything: its key is the training
  // section's, kept by the switch.
  for (const json& t : a["combined"])
    CHECK(t["ran"] == true);
  CliResult text = run_cli("advise " + path + " -j 2");
  CHECK_THAT(text.out, Catch::Contains("training adapters instead of the weights: LoRA rank 16"));
  CHECK_THAT(text.out, Catch::Contains("--set 'training.lora.targets=[qkv,proj,mlp.up,mlp.down]'"));
}
