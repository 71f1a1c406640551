#include "tests/TestHelpers.hpp"

#include "sim/Simulation.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

namespace memwall::test {

ClusterSpec hand_cluster(int gpus, GpuFabric fabric, int gpus_per_switch)
{
  GpuSpec g;
  g.id                   = "hand-gpu";
  g.memory_bytes         = 80e9;
  g.hbm_peak_bw          = 2e12;
  g.hbm_achievable_bw    = 2e12; // 2 TB/s
  g.peak_flops           = {{Dtype::fp32, 100e12}, {Dtype::bf16, 400e12}};
  g.matmul_efficiency    = 0.5; // 200 TFLOP/s achieved in bf16 GEMMs
  g.attention_efficiency = 0.5;
  g.kernel_overhead_s    = 5e-6;
  g.h2d_bw               = 50e9; // the GPU's own x16 link, faster than the uplink
  g.d2h_bw               = 50e9;
  g.nvlink_bw            = 400e9;
  NodeSpec n;
  n.id                   = "hand-node";
  n.gpu                  = g;
  n.gpus                 = gpus;
  n.fabric               = fabric;
  n.nvlink_latency_s     = 2e-6;
  n.sockets              = 1;
  n.dram_bytes           = 512e9;
  n.dram_bw_per_socket   = 400e9; // never the bottleneck here
  n.gpus_per_pcie_switch = gpus_per_switch;
  n.pcie_uplink_bw       = 25e9; // shared by the GPUs behind a switch
  n.pcie_latency_s       = 1e-6;
  ClusterSpec c;
  c.node          = n;
  c.nodes         = 1;
  c.gpus_per_node = gpus;
  return c;
}

Op kernel_op(const DeviceRef& gpu, double flops, double bytes, const std::string& name)
{
  return memwall::kernel_op(gpu, KernelClass::gemm, Dtype::bf16, flops, bytes, 0.0, name);
}

std::vector<DeviceRef> gpu_grid(int nodes, int per_node)
{
  std::vector<DeviceRef> v;
  for (int n = 0; n < nodes; ++n)
    for (int i = 0; i < per_node; ++i)
      v.push_back({DeviceKind::gpu, n, i});
  return v;
}

const OpRecord& record(const RunResult& r, const std::string& name)
{
  for (const auto& o : r.ops)
    if (o.name == name)
      return o;
  FAIL("no op named " << name);
  throw std::logic_error("unreachable");
}

ExperimentSpec dgx_h100_spec(int nodes, const std::string& network)
{
  return parse_spec(
      "hardware: {node: dgx-h100, nodes: " + std::to_string(nodes) + ", network: {" + network +
          "}}\nmodel: {preset: gpt2}\ntraining: {seq_len: 128, global_batch: " + std::to_string(8 * nodes) + "}\n",
      "test.yaml", "");
}

double dgx_h100_collective_end_s(CollectiveKind kind, int nodes, double bytes, const std::string& network,
                                 const std::string& algorithm)
{
  ExperimentSpec spec = dgx_h100_spec(nodes, network);
  OpDag dag;
  int32_t group = dag.add_group(gpu_grid(nodes, 8));
  dag.add(collective_op({DeviceKind::gpu, 0, 0}, StreamKind::comm, kind, group, bytes, "coll"));
  RunResult r = replay_in_child(spec.cluster, dag, {.collective_algorithm = algorithm});
  return record(r, "coll").end;
}

nlohmann::json run_json(const std::string& name, const std::string& yaml, const std::string& extra)
{
  std::string spec = temp_path(name + ".yaml");
  write_file(spec, yaml);
  CliResult r = run_cli("run " + spec + " --json " + extra);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.out);
}

std::string source_path(const std::string& relative) { return std::string(MEMWALL_SOURCE_DIR) + "/" + relative; }

RunResult simulate_validation(const std::string& name)
{
  return simulate(load_spec(source_path("calibration/validation/" + name + ".yaml")), true);
}

double validation_speedup(const std::string& faster, const std::string& slower)
{
  return tokens_per_s(simulate_validation(faster)) / tokens_per_s(simulate_validation(slower));
}

std::string temp_path(const std::string& name)
{
  auto dir = std::filesystem::temp_directory_path() / ("memwall-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

std::string trace_spec(const std::string& hardware, const std::string& trace, const std::string& more)
{
  std::string spec = temp_path("trace_" + trace + std::to_string(std::hash<std::string>()(hardware + more)) + ".yaml");
  write_file(spec, "hardware: " + hardware + "\nworkload:\n  trace: " + source_path("tests/data/traces/" + trace) +
                       "\n" + more);
  return spec;
}

void write_file(const std::string& path, const std::string& text)
{
  std::ofstream out(path);
  out << text;
}

std::string read_file(const std::string& path)
{
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

CliResult run_cli(const std::string& args, const std::string& launcher)
{
  static int counter = 0;
  std::string out    = temp_path("cli-out-" + std::to_string(counter));
  std::string err    = temp_path("cli-err-" + std::to_string(counter++));
  std::string cmd    = launcher + " " + MEMWALL_BINARY + " " + args + " >" + out + " 2>" + err + " </dev/null";
  int status         = std::system(cmd.c_str());
  CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out       = read_file(out);
  r.err       = read_file(err);
  return r;
}

} // namespace memwall::test

namespace memwall::test {

std::string refused(const std::string& name, const std::string& yaml, const std::string& extra)
{
  std::string spec = temp_path(name + ".yaml");
  std::string h5   = temp_path(name + ".h5");
  std::string tr   = temp_path(name + ".trace.json");
  write_file(spec, yaml);
  CliResult r = run_cli("run " + spec + " -o " + h5 + " --trace " + tr + " " + extra);
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(r.out.empty());
  CHECK_FALSE(std::filesystem::exists(h5));
  CHECK_FALSE(std::filesystem::exists(tr));
  return r.err;
}

OpDag spec_workload(const std::string& yaml) { return build_workload(parse_spec(yaml, "test.yaml", "")); }

std::map<std::string, int> layer_gpus(const OpDag& dag)
{
  std::map<std::string, int> gpu;
  for (OpId id = dag.first_id(); id < dag.size(); ++id) {
    const Op& op = dag.op(id);
    if (op.kind == OpKind::kernel && op.name.str().find(".fwd.ln1") != std::string::npos)
      gpu[op.name.str().substr(0, op.name.str().find('.'))] = op.device.index;
  }
  return gpu;
}

double op_sum(const OpDag& dag, const std::string& prefix, OpKind kind, bool flops)
{
  double total = 0;
  for (OpId id = dag.first_id(); id < dag.size(); ++id) {
    const Op& op           = dag.op(id);
    const std::string name = op.name.str();
    bool match             = name.rfind(prefix, 0) == 0 &&
                 (prefix.back() == '.' || name.size() == prefix.size() || name[prefix.size()] == '.');
    if (op.kind == kind && match)
      total += flops ? op.flops : op.bytes;
  }
  return total;
}

std::string md1_serving_spec(double rate, int requests)
{
  return "hardware: {node: dgx-a100, gpus_per_node: 1}\nmodel: {preset: gpt2}\n"
         "inference: {max_num_seqs: 1, poisson: {rate: " +
         std::to_string(rate) + ", requests: " + std::to_string(requests) +
         ", seed: 5, prompt_len: 64, output_len: 8}}\n";
}

std::map<std::string, MeasuredStep> measured_family_steps()
{
  std::map<std::string, MeasuredStep> out;
  std::istringstream csv(read_file(source_path("calibration/data/measured/h200/hf-families.csv")));
  for (std::string line; std::getline(csv, line);) {
    std::vector<std::string> f(1);
    bool quoted = false;
    for (char ch : line) { // the note is quoted where it holds commas
      if (ch == '"')
        quoted = !quoted;
      else if (ch == ',' && !quoted)
        f.emplace_back();
      else
        f.back() += ch;
    }
    if (f.size() > 12 && f[0] != "family") // peak_allocated_bytes, step_s_median
      out[f[0]] = {std::atof(f[10].c_str()), std::atof(f[12].c_str())};
  }
  return out;
}

std::string measured_family_spec(const std::string& family, const std::string& more)
{
  return "hardware: {node: hgx-h200, gpus_per_node: 1}\nmodel: {hf_config: " +
         source_path("tests/data/hf_families/" + family + "/config.json") +
         "}\ntraining: {stack: pytorch, seq_len: 1024, micro_batch: 4, global_batch: 4, optimizer: adamw" +
         (more.empty() ? "" : ", " + more) + "}\n";
}

double peak_without_context(const nlohmann::json& run)
{
  const auto& d = run["devices"][0];
  return d["peak_bytes"].get<double>() - d["peak_by_category"]["context"].get<double>();
}

CacheKernels measured_cache_kernels(const std::string& family)
{
  CacheKernels n;
  std::istringstream csv(read_file(source_path("calibration/data/measured/h200/hf-family-kernels.csv")));
  for (std::string line; std::getline(csv, line);) {
    if (line.rfind(family + ",", 0) != 0)
      continue;
    // family,"kernel, with commas",count,total_us: the count is the next-to-last field.
    const int count = std::stoi(line.substr(line.rfind(',', line.rfind(',') - 1) + 1));
    if (line.find("CatArrayBatchedCopy<at::native::(anonymous namespace)::OpaqueType<2u>, unsigned int, 4, 64, 64>") !=
        std::string::npos)
      n.cats += count;
    if (line.find("direct_copy_kernel_cuda") != std::string::npos && line.find("c10::BFloat16") != std::string::npos)
      n.clones += count;
  }
  return n;
}

CacheKernels planned_cache_kernels(const BlockPlan& b)
{
  CacheKernels n;
  for (const KernelPlan& k : b.kernels) {
    n.cats += k.name.find("cache_cat") != std::string::npos ? 1 : 0;
    n.clones += k.name.find("bwd.clone_d") != std::string::npos ? 1 : 0;
  }
  return n;
}

} // namespace memwall::test
