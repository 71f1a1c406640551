// What a results file holds for the people who read it with pandas and for the plots:
// counts stored as integers and the step phase of every op.
#include "TestHelpers.hpp"

#include <H5Cpp.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <limits>

using namespace memwall::test;

namespace {

H5T_class_t type_class(const H5::H5File& f, const std::string& dataset) { return f.openDataSet(dataset).getTypeClass(); }

std::vector<std::string> texts(const H5::H5File& f, const std::string& dataset)
{
  H5::DataSet d = f.openDataSet(dataset);
  hsize_t n     = 0;
  d.getSpace().getSimpleExtentDims(&n);
  std::vector<char*> raw(n);
  H5::StrType type(H5::PredType::C_S1, H5T_VARIABLE);
  type.setCset(H5T_CSET_UTF8);
  if (n)
    d.read(raw.data(), type);
  std::vector<std::string> out(raw.begin(), raw.end());
  H5Dvlen_reclaim(type.getId(), d.getSpace().getId(), H5P_DEFAULT, raw.data());
  return out;
}

std::vector<double> numbers(const H5::H5File& f, const std::string& dataset)
{
  H5::DataSet d = f.openDataSet(dataset);
  hsize_t n     = 0;
  d.getSpace().getSimpleExtentDims(&n);
  std::vector<double> v(n);
  if (n)
    d.read(v.data(), H5::PredType::NATIVE_DOUBLE);
  return v;
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
  write_file(sweep, sweep_base + "grid:\n  training.micro_batch: [1, 2]\n  hardware.gpu.hbm_achievable_bw: [5e11, 1e12]\n"
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
  REQUIRE(run_cli("run " + spec + " -o " + h5).exit_code == 0);
  H5::H5File f(h5, H5F_ACC_RDONLY);
  std::vector<std::string> phase = texts(f, "/ops/phase"), stream = texts(f, "/ops/stream"),
                           kind = texts(f, "/ops/kind");
  std::vector<double> start = numbers(f, "/ops/start_s");
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
