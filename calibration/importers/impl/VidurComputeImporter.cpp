// Vidur's compute profiles (microsoft/vidur data/profiling/compute/<gpu>/<model>/mlp.csv):
// per (num_tokens, num_tensor_parallel_workers), the PyTorch-profiler CUDA time in ms of
// a Llama layer's operators, fp16. The four GEMMs become gemm rows with their shapes;
// norms, rotary, activation and residual add become rows of their kernel family
// (elementwise.norm, .rope, .activation, .residual) with the bytes they read and write.
#include "calibration/importers/Importer.hpp"

#include "base/InputError.hpp"

namespace memwall {
namespace {

std::vector<Measurement> import_vidur_compute(const ImportRequest& req)
{
  CsvTable t      = parse_csv_table(req.text, req.path, true);
  auto col        = [&](const std::string& c) { return t.column(c, req.path); };
  size_t c_tokens = col("num_tokens"), c_tp = col("num_tensor_parallel_workers"), c_h = col("n_embd"),
         c_f = col("n_expanded_embd"), c_heads = col("n_head"), c_kv = col("n_kv_head"), c_gated = col("use_gated_mlp");
  std::vector<Measurement> out;
  for (size_t i = 0; i < t.rows.size(); ++i) {
    const auto& r = t.rows[i];
    size_t row    = i + 2;
    auto num      = [&](size_t c) { return csv_number(r[c], req.path, row, t.header[c]); };
    double T = num(c_tokens), tp = num(c_tp), h = num(c_h), f = num(c_f), heads = num(c_heads), kvh = num(c_kv);
    if (T <= 0 || tp <= 0 || h <= 0 || heads <= 0)
      throw InputError(req.path + ":" + std::to_string(row) +
                       ": tokens, tensor parallel workers, n_embd and n_head must be positive");
    bool gated   = r[c_gated] == "True" || r[c_gated] == "true" || r[c_gated] == "1";
    double kvdim = kvh * h / heads;
    auto median  = [&](const std::string& op) { return num(col("time_stats." + op + ".median")) * 1e-3; };
    auto add     = [&](const std::string& op, Measurement m) {
      m.gpu    = req.gpu;
      m.time_s = median(op);
      m.source = req.path + " " + op + " tp" + r[c_tp];
      if (m.time_s > 0)
        out.push_back(m);
    };
    auto gemm = [&](const std::string& op, double K, double N) {
      Measurement m;
      m.benchmark = "gemm";
      m.dtype     = "fp16";
      m.m = T, m.n = N, m.k = K;
      m.flops = 2 * T * N * K;
      m.bytes = 2 * (T * K + K * N + T * N);
      add(op, m);
    };
    auto elementwise = [&](const std::string& op, KernelFamily family, double bytes) {
      Measurement m;
      m.benchmark = elementwise_benchmark(family);
      m.bytes     = bytes;
      add(op, m);
    };
    gemm("attn_pre_proj", h, (h + 2 * kvdim) / tp);
    gemm("attn_post_proj", h / tp, h);
    gemm("mlp_up_proj", h, (gated ? 2 : 1) * f / tp);
    gemm("mlp_down_proj", f / tp, h);
    elementwise("input_layernorm", KernelFamily::norm, 2 * 2 * T * h);
    elementwise("post_attention_layernorm", KernelFamily::norm, 2 * 2 * T * h);
    elementwise("attn_rope", KernelFamily::rope, 2 * 2 * T * (h + kvdim) / tp);         // q and k rotated in place
    elementwise("mlp_act", KernelFamily::activation, 2 * T * f / tp * (gated ? 3 : 2)); // silu(gate) * up
    elementwise("add", KernelFamily::residual, 2 * 3 * T * h);                          // two inputs, one output
  }
  return out;
}

const bool registered = importer_registry().add(
    "vidur-compute", "Vidur compute profile CSV (GEMMs and elementwise ops of a Llama layer vs tokens and tp)",
    import_vidur_compute);

} // namespace
} // namespace memwall
