// LLMCompass's measured A100 figures (PrincetonUniversity/LLMCompass ae/figure5), fp16,
// CSV without header:
//   llmcompass-matmul:     M, N, K, time ("0.19ms"), throughput ("101.7Tflops")
//   llmcompass-elementwise: layernorm/softmax "M, N, G elements/s"; gelu "elements, G elements/s"
//                          (each element read and written once, 2 bytes each)
//   llmcompass-allreduce:  bytes, latency_us; 4 GPUs on NVLink in one node
#include "calibration/importers/Importer.hpp"

#include "base/InputError.hpp"

namespace memwall {
namespace {

std::vector<Measurement> import_matmul(const ImportRequest& req)
{
  CsvTable t = parse_csv_table(req.text, req.path, false);
  std::vector<Measurement> out;
  for (size_t i = 0; i < t.rows.size(); ++i) {
    const auto& r = t.rows[i];
    if (r.size() < 4)
      throw InputError(req.path + ":" + std::to_string(i + 1) + ": expected M, N, K, time in ms");
    Measurement m;
    m.gpu       = req.gpu;
    m.benchmark = "gemm";
    m.dtype     = "fp16";
    m.m         = csv_number(r[0], req.path, i + 1, "M");
    m.n         = csv_number(r[1], req.path, i + 1, "N");
    m.k         = csv_number(r[2], req.path, i + 1, "K");
    m.time_s    = csv_number(r[3], req.path, i + 1, "time") * 1e-3;
    m.flops     = 2 * m.m * m.n * m.k;
    m.bytes     = 2 * (m.m * m.k + m.k * m.n + m.m * m.n);
    m.source    = req.path;
    out.push_back(m);
  }
  return out;
}

std::vector<Measurement> import_elementwise(const ImportRequest& req)
{
  CsvTable t = parse_csv_table(req.text, req.path, false);
  std::vector<Measurement> out;
  for (size_t i = 0; i < t.rows.size(); ++i) {
    const auto& r   = t.rows[i];
    double elements = 1;
    for (size_t c = 0; c + 1 < r.size(); ++c)
      elements *= csv_number(r[c], req.path, i + 1, "size");
    double rate = csv_number(r.back(), req.path, i + 1, "G elements/s") * 1e9;
    if (rate <= 0 || elements <= 0)
      throw InputError(req.path + ":" + std::to_string(i + 1) + ": size and throughput must be positive");
    Measurement m;
    m.gpu       = req.gpu;
    m.benchmark = "elementwise";
    m.bytes     = 2 * 2 * elements;
    m.time_s    = elements / rate;
    m.source    = req.path;
    out.push_back(m);
  }
  return out;
}

std::vector<Measurement> import_allreduce(const ImportRequest& req)
{
  CsvTable t     = parse_csv_table(req.text, req.path, true);
  size_t c_bytes = t.column("bytes", req.path), c_lat = t.column("latency_us", req.path);
  std::vector<Measurement> out;
  for (size_t i = 0; i < t.rows.size(); ++i) {
    Measurement m;
    m.gpu       = req.gpu;
    m.benchmark = "all_reduce";
    m.ranks = m.ranks_per_node = 4;
    m.bytes                    = csv_number(t.rows[i][c_bytes], req.path, i + 2, "bytes");
    m.time_s                   = csv_number(t.rows[i][c_lat], req.path, i + 2, "latency_us") * 1e-6;
    m.source                   = req.path;
    if (m.bytes <= 0 || m.time_s <= 0)
      throw InputError(req.path + ":" + std::to_string(i + 2) + ": bytes and latency_us must be positive");
    out.push_back(m);
  }
  return out;
}

const bool matmul =
    importer_registry().add("llmcompass-matmul", "LLMCompass matmul CSV: M, N, K, time in ms (fp16)", import_matmul);
const bool elementwise =
    importer_registry().add("llmcompass-elementwise",
                            "LLMCompass gelu/layernorm/softmax CSV: sizes..., G elements/s (fp16)", import_elementwise);
const bool allreduce = importer_registry().add(
    "llmcompass-allreduce", "LLMCompass 4-GPU NVLink all-reduce CSV: bytes, latency_us", import_allreduce);

} // namespace
} // namespace memwall
