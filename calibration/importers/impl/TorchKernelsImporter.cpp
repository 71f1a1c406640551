// Memory-bound torch ops timed one by one (calibration/data/measured/<gpu>/kernels.csv:
// op, dtype, tokens, hidden, elements, bytes, time_s, source). Each op lands in the
// kernel family the replay times it by (KernelFamily.hpp): norms, activations, the
// adds and multiplies of residual streams; softmax, dropout, casts and copies have no
// family of their own. `bytes` counts each input read and output written once.
#include "calibration/importers/Importer.hpp"

#include "base/InputError.hpp"

#include <map>

namespace memwall {
namespace {

const std::map<std::string, KernelFamily>& op_families()
{
  static const std::map<std::string, KernelFamily> m{
      {"add", KernelFamily::residual},      {"mul", KernelFamily::residual},
      {"silu", KernelFamily::activation},   {"gelu_tanh", KernelFamily::activation},
      {"gelu", KernelFamily::activation},   {"silu_and_mul", KernelFamily::activation},
      {"layer_norm", KernelFamily::norm},   {"rms_norm", KernelFamily::norm},
      {"softmax", KernelFamily::generic},   {"dropout", KernelFamily::generic},
      {"cast_fp32", KernelFamily::generic}, {"copy", KernelFamily::generic},
      {"rope", KernelFamily::rope}};
  return m;
}

std::vector<Measurement> import_torch_kernels(const ImportRequest& req)
{
  CsvTable t  = parse_csv_table(req.text, req.path, true);
  size_t c_op = t.column("op", req.path), c_bytes = t.column("bytes", req.path), c_time = t.column("time_s", req.path);
  std::vector<Measurement> out;
  for (size_t i = 0; i < t.rows.size(); ++i) {
    const auto& r = t.rows[i];
    size_t row    = i + 2;
    auto f        = op_families().find(r[c_op]);
    if (f == op_families().end()) {
      std::string known;
      for (const auto& [name, family] : op_families())
        known += (known.empty() ? "" : ", ") + name;
      throw InputError(req.path + ":" + std::to_string(row) + ": op '" + r[c_op] +
                       "' is not one this importer knows (" + known + ")");
    }
    Measurement m;
    m.gpu       = req.gpu;
    m.benchmark = elementwise_benchmark(f->second);
    m.bytes     = csv_number(r[c_bytes], req.path, row, "bytes");
    m.time_s    = csv_number(r[c_time], req.path, row, "time_s");
    m.source    = req.path + " (" + r[c_op] + ")";
    if (m.bytes <= 0 || m.time_s <= 0)
      throw InputError(req.path + ":" + std::to_string(row) + ": bytes and time_s must be positive");
    out.push_back(m);
  }
  return out;
}

const bool registered = importer_registry().add(
    "torch-kernels",
    "memory-bound torch ops timed one by one (op, bytes, time_s; calibration/data/measured/*/kernels.csv)",
    import_torch_kernels);

} // namespace
} // namespace memwall
