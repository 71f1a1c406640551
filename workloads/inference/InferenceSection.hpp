#pragma once
// Reads the `inference` section of a spec and describes it: the engine, batch scheduler
// and KV manager picked by name from their registries, the requests resolved, the checks
// of their combinations. It sits above the concern folders (engine/, scheduler/, kv/) it
// asks; the InferenceConfig it fills sits below them.
#include "base/ParamReader.hpp"
#include "hwmodels/GpuSpec.hpp"
#include "workloads/inference/config/InferenceConfig.hpp"
#include "workloads/model/ModelSpec.hpp"

#include <cstdint>
#include <string>

namespace memwall {

// "fp16 weights, fp16 KV, tp 1, continuous batching (max 256 seqs), paged KV (block 16)"
std::string describe_inference(const InferenceConfig& c);
// "prompt 4-2048, mean 155.2 (asked: exponential of mean 161, clipped to 4-2048) tokens; output ..."
std::string describe_request_lengths(const InferenceConfig& c);

// `gpus` is the number of GPUs the hardware section provides (one model replica: tp, or ep
// when the experts are spread over attention data-parallel groups);
// `gpu` sets the engine's defaults (BatchDefaults); `spec_dir` resolves a relative trace path.
InferenceConfig read_inference_section(ParamReader& r, int64_t gpus, const ModelSpec& model, const GpuSpec& gpu,
                                       const std::string& spec_dir);

} // namespace memwall
