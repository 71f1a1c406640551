#include "tests/DamagedFiles.hpp"

#include "analysis/FileChecksum.hpp"
#include "analysis/Hdf5Table.hpp"
#include "tests/TestHelpers.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>

namespace memwall::test {

std::string damaged_sweep_file(const std::string& name, const std::function<void(H5::H5File&)>& damage)
{
  std::string spec = temp_path(name + ".yaml"), h5 = temp_path(name + ".h5");
  write_file(spec, sweep_base + "grid:\n  training.micro_batch: [1, 2]\n");
  std::filesystem::remove(h5);
  REQUIRE(run_cli("sweep " + spec + " -o " + h5 + " -j 1").exit_code == 0);
  {
    H5::H5File f(h5, H5F_ACC_RDWR);
    damage(f);
  }
  memwall::restamp_checksum(h5);
  return h5;
}

std::string damaged_run_file(const std::string& name, const std::function<void(H5::H5File&)>& damage)
{
  std::string spec = temp_path(name + ".yaml"), h5 = temp_path(name + ".h5");
  write_file(spec, small_training_spec);
  std::filesystem::remove(h5);
  REQUIRE(run_cli("run " + spec + " -o " + h5).exit_code == 0);
  {
    H5::H5File f(h5, H5F_ACC_RDWR);
    damage(f);
  }
  memwall::restamp_checksum(h5);
  return h5;
}

void replace_text_attribute(H5::H5Object& obj, const std::string& name, const std::string& value)
{
  if (obj.attrExists(name))
    obj.removeAttr(name);
  memwall::attribute(obj, name, value);
}

void refused_file(const std::string& command, const std::string& expect)
{
  CliResult r = run_cli(command, "timeout 60");
  INFO(command << ": " << r.err);
  CHECK(r.exit_code == 2);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK_THAT(r.err, Catch::Contains(expect));
}

} // namespace memwall::test
