// Results files with a valid checksum but contents memwall never writes (issue 37,
// findings 1 and 2): each was a segfault, a hang, undefined behaviour or minutes of
// work in `report`, `plot` or `sweep --resume`; each is now one line and exit 2.
#include "analysis/Hdf5Table.hpp"
#include "tests/DamagedFiles.hpp"
#include "tests/TestHelpers.hpp"

#include <H5Cpp.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>

using namespace memwall::test;

namespace {

// Replaces /points/NAME with a text column of `values`.
void text_column(H5::H5File& f, const std::string& name, const std::vector<std::string>& values)
{
  H5::Group g = f.openGroup("/points");
  g.unlink(name);
  memwall::column(g, name, values);
}

// Replaces /points/NAME with a column of `rows` doubles whose storage was never written.
void unwritten_column(H5::H5File& f, const std::string& name, hsize_t rows)
{
  H5::Group g = f.openGroup("/points");
  g.unlink(name);
  g.createDataSet(name, H5::PredType::NATIVE_DOUBLE, H5::DataSpace(1, &rows));
}

// The run file's summary_json edited by `edit`.
std::string run_file_with_summary(const std::string& name, const std::function<void(nlohmann::json&)>& edit)
{
  return damaged_run_file(name, [&](H5::H5File& f) {
    H5::Group root = f.openGroup("/");
    auto j         = nlohmann::json::parse(*memwall::text_attribute(root, "summary_json"));
    edit(j);
    replace_text_attribute(root, "summary_json", j.dump());
  });
}

} // namespace

TEST_CASE("a_points_column_shorter_than_the_index_is_refused_not_read_past_its_end", "[robustness][hdf5]")
{
  // report indexed status[r] for every row of the index: a status of 1 row under an
  // index of 2 (and an empty status or fits column) segfaulted.
  std::string one = damaged_sweep_file("short_status", [](H5::H5File& f) { text_column(f, "status", {"ok"}); });
  refused_file("report " + one, "/points/status holds 1 row, /points/index 2; the file is corrupt");
  refused_file("sweep " + temp_path("short_status.yaml") + " -o " + one + " --resume", "/points/status holds 1 row");
  std::string none = damaged_sweep_file("empty_status", [](H5::H5File& f) { text_column(f, "status", {}); });
  refused_file("report " + none, "/points/status holds 0 rows, /points/index 2");
  std::string fits = damaged_sweep_file("empty_fits", [](H5::H5File& f) {
    H5::Group g = f.openGroup("/points");
    g.unlink("fits");
    memwall::flag_column(g, "fits", {});
  });
  refused_file("report " + fits, "/points/fits holds 0 rows, /points/index 2");
  refused_file("plot " + fits + " -o " + temp_path("empty_fits.png"), "/points/fits holds 0 rows");
}

TEST_CASE("a_status_that_is_neither_ok_nor_error_is_refused", "[robustness][hdf5]")
{
  std::string h5 = damaged_sweep_file("odd_status", [](H5::H5File& f) { text_column(f, "status", {"ok", "maybe"}); });
  refused_file("report " + h5, "/points/status row 1 is 'maybe', not 'ok' or 'error'");
}

TEST_CASE("a_column_that_claims_more_rows_than_its_file_holds_is_refused_at_once", "[robustness][hdf5]")
{
  // An index claiming 5e7 rows (storage never written) read 400 MB of fill values and
  // then segfaulted; a column claiming 1e9 rows took 11 s and 7.9 GB, then printed zeros.
  std::string index = damaged_sweep_file("forged_index", [](H5::H5File& f) { unwritten_column(f, "index", 50000000); });
  refused_file("report " + index, "column 'index' claims 50000000 rows but its file holds 0");
  std::string huge =
      damaged_sweep_file("forged_rows", [](H5::H5File& f) { unwritten_column(f, "step_time_s", 1000000000); });
  refused_file("report " + huge, "column 'step_time_s' claims 1000000000 rows but its file holds 0");
}

TEST_CASE("a_points_total_that_is_not_a_count_is_refused", "[robustness][hdf5]")
{
  // report printed static_cast<long long>(points_total): NaN or 1e300 is undefined behaviour.
  std::string h5 = damaged_sweep_file("nan_total", [](H5::H5File& f) {
    H5::Group root = f.openGroup("/");
    root.removeAttr("points_total");
    memwall::attribute(root, "points_total", std::nan(""));
  });
  refused_file("report " + h5, "points_total nan is not a count of at least the 2 rows");
}

TEST_CASE("a_run_summary_without_a_key_memwall_writes_is_refused_not_undefined_behaviour", "[robustness][hdf5]")
{
  // report_text read j["fits"] of a const object: a summary without it was undefined
  // behaviour (exit 3 by one path, a normal-looking summary by another).
  std::string no_fits = run_file_with_summary("no_fits_key", [](nlohmann::json& j) { j.erase("fits"); });
  refused_file("report " + no_fits, "summary_json lacks a key or element of the summary memwall writes");
  std::string devices = run_file_with_summary(
      "empty_devices", [](nlohmann::json& j) { j["devices"] = nlohmann::json::array({nlohmann::json::object()}); });
  refused_file("report " + devices, "the file is corrupt");
  std::string typed = run_file_with_summary("string_step", [](nlohmann::json& j) { j["step_time_s"] = "fast"; });
  refused_file("report " + typed, "summary_json is not the summary memwall writes");
  // --csv printed whatever the summary held: the same file is refused the same way.
  refused_file("report --csv " + no_fits, "summary_json lacks a key or element of the summary memwall writes");
  refused_file("report --csv " + devices, "the file is corrupt");
  refused_file("report --csv " + typed, "summary_json is not the summary memwall writes");
}

TEST_CASE("a_run_summary_nested_deeper_than_any_json_memwall_writes_is_refused", "[robustness][hdf5]")
{
  // 300,000 levels parsed (nlohmann's parser is iterative), then a copy recursed
  // until the stack overflowed.
  std::string h5 = damaged_run_file("deep_summary", [](H5::H5File& f) {
    H5::Group root = f.openGroup("/");
    replace_text_attribute(root, "summary_json", std::string(300000, '[') + std::string(300000, ']'));
  });
  refused_file("report " + h5, "summary_json attribute missing or not a JSON object: nested deeper than 256 levels");
}

TEST_CASE("a_plain_hdf5_file_is_not_trusted_as_one_memwall_wrote", "[robustness][hdf5]")
{
  // A file starting with HDF5's signature passed the checksum as "written before files
  // carried one": 400 mutated bytes gave 15 segfaults inside libhdf5 and 8 hangs.
  std::string plain = temp_path("plain_sweep.h5");
  {
    H5::H5File f(plain, H5F_ACC_TRUNC);
    H5::Group root = f.openGroup("/");
    memwall::attribute(root, "format", std::string("memwall-sweep"));
  }
  refused_file("report " + plain, "an HDF5 file without memwall's checksum");
  std::string spec = temp_path("plain_sweep.yaml");
  write_file(spec, sweep_base + "grid:\n  training.micro_batch: [1, 2]\n");
  refused_file("sweep " + spec + " -o " + plain + " --resume", "an HDF5 file without memwall's checksum");
}

TEST_CASE("a_file_that_crashes_or_stalls_libhdf5_is_refused_by_a_child_that_read_it_first", "[robustness][hdf5]")
{
  // Damage stamped again behind a valid checksum (tests/data/results/README.md): the
  // first segfaulted report inside libhdf5, the second made it loop for ever.
  for (const char* name : {"libhdf5_segfaults_on_it.h5", "libhdf5_loops_on_it.h5"}) {
    std::string copy = temp_path(name);
    std::filesystem::copy_file(source_path(std::string("tests/data/results/") + name), copy,
                               std::filesystem::copy_options::overwrite_existing);
    refused_file("report " + copy, ": the file is damaged (libhdf5 ");
    std::string out = temp_path(std::string(name) + ".png");
    std::filesystem::remove(out);
    refused_file("plot " + copy + " -o " + out, ": the file is damaged (libhdf5 ");
    CHECK_FALSE(std::filesystem::exists(out));
  }
}

TEST_CASE("a_column_of_the_wrong_type_is_refused_by_plot_as_a_damaged_file", "[robustness][hdf5]")
{
  // Found by the extended fuzzer (seed 301, case 2033): a run file's memory categories
  // stored as numbers made the plotting script fail on a TypeError (exit 3, "runtime
  // failure"); a damaged file is bad input.
  std::string h5 = damaged_run_file("numeric_categories", [](H5::H5File& f) {
    H5::Group g = f.openGroup("/memory/node0.gpu0");
    size_t n    = static_cast<size_t>(memwall::column_rows(g.openDataSet("category"), "category"));
    g.unlink("category");
    memwall::column(g, "category", std::vector<double>(n, 1.0));
  });
  refused_file("plot " + h5 + " -o " + temp_path("numeric_categories.png"),
               "/memory/node0.gpu0/category is not a text column; the file is corrupt");
}
