// mpirun -n 3 memwall sweep: rank 0 hands out points and writes the file, ranks 1 and 2
// run them; the table (and, with the times fixed, the file) equals a -j 1 run.
#include "app/sweep/SweepFile.hpp"
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>

#include <filesystem>

#include <cmath>
#include <fstream>
#include <iterator>

#ifdef MEMWALL_MPIEXEC

using namespace memwall;
using namespace memwall::test;

namespace {

std::string bytes_of(const std::string& path)
{
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// Root may run mpirun in containers (CI), where shared-memory single copies (CMA,
// ptrace) are often forbidden; sanitizer builds skip leak checks of MPI_Init.
std::string launcher(const std::string& mpirun_args)
{
  std::string env = "SOURCE_DATE_EPOCH=1700000000 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
                    "OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none ";
#ifdef MEMWALL_SANITIZED
  env += "ASAN_OPTIONS=detect_leaks=0 ";
#endif
  return mpirun_args.empty() ? env : env + "timeout 300 " + MEMWALL_MPIEXEC + " " + mpirun_args;
}

} // namespace

TEST_CASE("mpirun_with_three_ranks_gives_the_same_table_as_one_job", "[sweep][mpi]")
{
  // The 12 points of twelve_point_sweep: 4 are errors, which must travel through MPI
  // like results do. Recorded timelines make results of hundreds of kB, beyond MPI's
  // eager messages.
  std::string spec = temp_path("sweep_mpi.yaml");
  write_file(spec, twelve_point_sweep + "record: {memory: true, links: true}\n");
  std::string one = temp_path("sweep_mpi_j1.h5"), three = temp_path("sweep_mpi_n3.h5");
  CliResult a = run_cli("sweep " + spec + " -o " + one + " -j 1", launcher(""));
  INFO(a.err);
  REQUIRE(a.exit_code == 0);
  CliResult b = run_cli("sweep " + spec + " -o " + three, launcher("-n 3 --oversubscribe"));
  INFO(b.out << b.err);
  REQUIRE(b.exit_code == 0);
  CHECK_THAT(b.out, Catch::Contains("12 points (4 with errors)"));

  ResultsTable x = read_sweep_file(one), y = read_sweep_file(three);
  REQUIRE(x.rows() == 12);
  REQUIRE(x.columns == y.columns);
  for (const auto& [name, col] : x.numbers)
    for (size_t r = 0; r < col.size(); ++r) {
      INFO(name << " row " << r);
      CHECK(((std::isnan(col[r]) && std::isnan(y.numbers.at(name)[r])) || col[r] == y.numbers.at(name)[r]));
    }
  for (const auto& [name, col] : x.texts)
    CHECK(col == y.texts.at(name));
  // Same points, same times (SOURCE_DATE_EPOCH): the same bytes.
  CHECK(bytes_of(one) == bytes_of(three));
}

TEST_CASE("under_mpirun_bad_input_is_one_line_from_rank_zero_and_exit_code_2", "[sweep][mpi][errors]")
{
  std::string spec = temp_path("sweep_mpi_bad.yaml"), h5 = temp_path("sweep_mpi_bad.h5");
  write_file(spec, "base: " + source_path("examples/gpt2-1gpu-a100.yaml") + "\ngrid:\n  training.micro_bach: [1, 2]\n");
  // Several times: rank 0's line once raced the other ranks' exit, which makes mpirun
  // end the job (1 run in about 40 under ctest -j2 lost the line).
  for (int attempt = 0; attempt < 5; ++attempt) {
    CliResult r = run_cli("sweep " + spec + " -o " + h5, launcher("-n 3 --oversubscribe"));
    INFO("attempt " << attempt << ": " << r.err);
    CHECK(r.exit_code == 2);
    // mpirun adds its own banner; memwall's part is one line, from rank 0 only.
    size_t ours = 0;
    for (size_t at = r.err.find("memwall: "); at != std::string::npos; at = r.err.find("memwall: ", at + 1))
      ++ours;
    CHECK(ours == 1);
    CHECK_THAT(r.err, Catch::Contains("grid.training.micro_bach: unknown axis key"));
    CHECK_FALSE(std::filesystem::exists(h5));
  }
}

#endif
