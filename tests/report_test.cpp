// memwall report: a sweep's best points ranked by the chosen metric, the points that do
// not fit with the device and categories that overflowed, errors grouped by message; a
// run file's report is the summary `memwall run` printed.
#include "app/sweep/SweepFile.hpp"
#include "base/Quantity.hpp"
#include "tests/TestHelpers.hpp"

#include <H5Cpp.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <sstream>

using namespace memwall;
using namespace memwall::test;

namespace {

// gpt2_oom_sweep with tp 1 and 2: micro batch 32 without recompute does not fit; tp 2
// on one GPU is impossible.
const std::string sweep_yaml = gpt2_oom_sweep + "  training.tp: [1, 2]\n"
                                                "filter: \"tp == 1 or micro_batch == 2\"\n";

std::string swept(const std::string& name)
{
  std::string spec = temp_path(name + ".yaml"), h5 = temp_path(name + ".h5");
  write_file(spec, sweep_yaml);
  REQUIRE(run_cli("sweep " + spec + " -o " + h5 + " -j 2").exit_code == 0);
  return h5;
}

std::vector<std::string> lines(const std::string& text)
{
  std::vector<std::string> out;
  std::istringstream is(text);
  for (std::string l; std::getline(is, l);)
    out.push_back(l);
  return out;
}

// The table rows under the line starting with `heading`: their first field (index).
std::vector<int> indices_under(const std::string& report, const std::string& heading)
{
  std::vector<std::string> ls = lines(report);
  auto it = std::find_if(ls.begin(), ls.end(), [&](const std::string& l) { return l.rfind(heading, 0) == 0; });
  std::vector<int> out;
  if (it == ls.end())
    return out;
  for (it += 2; it != ls.end() && !it->empty(); ++it)
    out.push_back(std::stoi(*it));
  return out;
}

} // namespace

TEST_CASE("the_sweep_report_ranks_fitting_points_and_says_why_the_others_did_not_fit", "[report][sweep]")
{
  std::string h5 = swept("report_sweep");
  ResultsTable t = read_sweep_file(h5);
  REQUIRE(t.rows() == 8); // 3 x 2 x 2 = 12, the filter keeps tp 2 only with micro batch 2

  CliResult r = run_cli("report " + h5 + " --by mfu");
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("8 of 8 points: 5 fit, 1 does not fit, 2 failed"));

  // Ranked by MFU, highest first: the order of the column read back from the file.
  std::vector<int> top = indices_under(r.out, "Top 5 of 5 fitting points by mfu (highest first)");
  REQUIRE(top.size() == 5);
  for (size_t i = 1; i < top.size(); ++i)
    CHECK(t.numbers["mfu"][static_cast<size_t>(top[i - 1])] >= t.numbers["mfu"][static_cast<size_t>(top[i])]);

  // The one that does not fit: micro batch 32 without recompute (index 6 = mb 32, none,
  // tp 1), reported with its GPU's peak against capacity and activations first.
  CHECK(indices_under(r.out, "1 point does not fit") == std::vector<int>{6});
  size_t row6 = static_cast<size_t>(std::find(t.numbers["index"].begin(), t.numbers["index"].end(), 6.0) -
                                    t.numbers["index"].begin());
  CHECK(t.numbers["fits"][row6] == 0);
  CHECK(t.numbers["gpu.peak.activations"][row6] > 34.4e9);
  CHECK_THAT(r.out,
             Catch::Contains("node0.gpu0 (a100-sxm4-40gb) needs " + format_gib(t.numbers["gpu.peak_bytes"][row6]) +
                             " of " + format_gib(42297524224.0) + ": activations"));

  // Both tp 2 points failed with one message, listed once with the two settings.
  CHECK_THAT(r.out, Catch::Contains("2 points failed") && Catch::Contains("does not divide the 1 GPUs") &&
                        Catch::Contains("index 1: micro_batch 2, recompute none, tp 2") &&
                        Catch::Contains("index 3: micro_batch 2, recompute full, tp 2"));

  // Lowest step time first by default, and --top cuts the table.
  CliResult d              = run_cli("report " + h5 + " --top 2");
  std::vector<int> fastest = indices_under(d.out, "Top 2 of 5 fitting points by step_time_s (lowest first)");
  REQUIRE(fastest.size() == 2);
  double best = 1e300;
  for (size_t i = 0; i < t.rows(); ++i)
    if (t.texts["status"][i] == "ok" && t.numbers["fits"][i] == 1)
      best = std::min(best, t.numbers["step_time_s"][i]);
  size_t first = static_cast<size_t>(
      std::find(t.numbers["index"].begin(), t.numbers["index"].end(), static_cast<double>(fastest[0])) -
      t.numbers["index"].begin());
  CHECK(t.numbers["step_time_s"][first] == best);
}

TEST_CASE("the_report_of_a_run_file_is_the_summary_the_run_printed", "[report]")
{
  std::string h5 = temp_path("report_run.h5");
  CliResult run  = run_cli("run " + source_path("examples/gpt2-1gpu-a100.yaml") + " -o " + h5);
  REQUIRE(run.exit_code == 0);
  CliResult r = run_cli("report " + h5);
  REQUIRE(r.exit_code == 0);
  std::vector<std::string> got = lines(r.out);
  REQUIRE(got.size() > 1);
  CHECK_THAT(got[0], Catch::StartsWith("memwall run results: " + h5));
  got.erase(got.begin());
  CHECK(got == lines(run.out));
}

TEST_CASE("the_report_refuses_an_unknown_metric_naming_the_columns", "[report][errors]")
{
  std::string h5 = swept("report_bad_by");
  CliResult r    = run_cli("report " + h5 + " --by step_tim_s");
  CHECK(r.exit_code == 2);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK_THAT(r.err, Catch::Contains(h5 + ": --by step_tim_s: no such column") && Catch::Contains("step_time_s"));
}

TEST_CASE("the_report_refuses_files_that_are_not_memwall_results", "[report][errors]")
{
  // HDF5, but from another program: no memwall format attribute.
  std::string foreign = temp_path("report_foreign.h5");
  {
    H5::H5File f(foreign, H5F_ACC_TRUNC);
    f.createGroup("data");
  }
  CliResult a = run_cli("report " + foreign);
  CHECK(a.exit_code == 2);
  CHECK_THAT(a.err, Catch::Contains(foreign + ": not a memwall results file (an HDF5 file without memwall's checksum"));

  // A sweep file cut in half, as a full disk or a copy interrupted leaves it.
  std::string cut = swept("report_truncated");
  std::filesystem::resize_file(cut, std::filesystem::file_size(cut) / 2);
  CliResult b = run_cli("report " + cut);
  CHECK(b.exit_code == 2);
  CHECK(std::count(b.err.begin(), b.err.end(), '\n') == 1);
  CHECK_THAT(b.err, Catch::Contains(cut));

  // Not HDF5 at all.
  std::string text = temp_path("report_text.h5");
  write_file(text, "index,step_time_s\n0,1.0\n");
  CliResult c = run_cli("report " + text);
  CHECK(c.exit_code == 2);
  CHECK_THAT(c.err, Catch::Contains(text + ": not an HDF5 file"));
}

TEST_CASE("the_csv_export_holds_every_column_and_row_with_exact_numbers", "[report]")
{
  std::string h5 = swept("report_csv");
  ResultsTable t = read_sweep_file(h5);
  CliResult r    = run_cli("report " + h5 + " --csv");
  REQUIRE(r.exit_code == 0);
  std::vector<std::string> ls = lines(r.out);
  REQUIRE(ls.size() == t.rows() + 1);
  std::string header;
  for (const std::string& c : t.columns)
    header += (header.empty() ? "" : ",") + c;
  CHECK(ls[0] == header);
  // Row 0's step time, field by field: %.17g reads back to the same double.
  size_t col = static_cast<size_t>(std::find(t.columns.begin(), t.columns.end(), "step_time_s") - t.columns.begin());
  std::vector<std::string> fields;
  std::stringstream row(ls[1]);
  for (std::string f; std::getline(row, f, ',');)
    fields.push_back(f);
  REQUIRE(fields.size() > col);
  CHECK(std::stod(fields[col]) == t.numbers["step_time_s"][0]);
}

TEST_CASE("a_run_files_csv_is_its_summary_as_key_value_rows", "[report]")
{
  // For spreadsheets: the same numbers as --json, one key per row, devices by name.
  std::string spec = temp_path("run_csv.yaml"), h5 = temp_path("run_csv.h5");
  write_file(spec, small_training_spec);
  REQUIRE(run_cli("run " + spec + " -o " + h5).exit_code == 0);
  CliResult js  = run_cli("run " + spec + " --json");
  auto j        = nlohmann::json::parse(js.out);
  CliResult csv = run_cli("report " + h5 + " --csv");
  INFO(csv.err);
  REQUIRE(csv.exit_code == 0);
  CHECK_THAT(csv.out, Catch::StartsWith("key,value\n"));
  CHECK_THAT(csv.out, Catch::Contains("\nstep_time_s," + j["step_time_s"].dump() + "\n"));
  CHECK_THAT(csv.out,
             Catch::Contains("\ndevices.node0.gpu0.peak_bytes," + j["devices"][0]["peak_bytes"].dump() + "\n"));
}

TEST_CASE("an_axis_asked_for_with_columns_is_shown_once", "[report][sweep]")
{
  // The axes come first in every table, once, even when --columns names one (or index).
  std::string h5 = swept("report_axis_once");
  CliResult r    = run_cli("report " + h5 + " --columns index,training.micro_batch,step_time_s");
  REQUIRE(r.exit_code == 0);
  std::vector<std::string> ls = lines(r.out);
  auto head = std::find_if(ls.begin(), ls.end(), [](const std::string& l) { return l.rfind("Top ", 0) == 0; });
  REQUIRE(head + 1 < ls.end());
  std::istringstream header(*(head + 1));
  std::vector<std::string> names;
  for (std::string w; header >> w;)
    names.push_back(w);
  CHECK(std::count(names.begin(), names.end(), "micro_batch") == 1);
  CHECK(std::count(names.begin(), names.end(), "index") == 1);
  CHECK(std::count(names.begin(), names.end(), "step_time_s") == 1);
}
