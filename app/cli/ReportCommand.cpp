// memwall report RESULTS.h5|RUN.h5 [--by METRIC] [--order asc|desc] [--top N] [--columns A,B] [--filter EXPR] [--csv]
#include "analysis/ResultsFile.hpp"
#include "analysis/StepReport.hpp"
#include "app/cli/Commands.hpp"
#include "app/sweep/ResultsFilter.hpp"
#include "app/sweep/SweepReport.hpp"
#include "base/InputError.hpp"

#include <boost/program_options.hpp>

#include <iostream>
#include <sstream>

namespace po = boost::program_options;

namespace memwall {

int report_command(const std::vector<std::string>& args)
{
  std::string path, columns, filter;
  SweepReportOptions o;
  int top  = 10;
  bool csv = false;
  po::options_description opts("memwall report RESULTS.h5|RUN.h5");
  opts.add_options()("help,h", "this help")(
      "by", po::value(&o.by),
      "sweep: rank the fitting points by this column (default step_time_s; serving sweeps "
      "output_tokens_per_s)")("order", po::value(&o.order),
                              "sweep: asc or desc (default: highest first for rates, MFU and utilization)")(
      "top", po::value(&top), "sweep: rows per table (default 10)")(
      "columns", po::value(&columns),
      "sweep: comma-separated columns after the axes (default: the key figures that vary)")(
      "filter", po::value(&filter),
      "sweep: only the points where this expression holds, over the columns as the header names them "
      "(e.g. \"node == 'hgx-b200' and gpus >= 144\")")(
      "csv", po::bool_switch(&csv),
      "print CSV instead (for spreadsheets): a sweep's whole table, a run's summary as key,value")(
      "file", po::value(&path), "a results file of memwall sweep or memwall run -o");
  po::variables_map vm;
  if (!parse_options(args, opts, "file", vm))
    return 0;
  if (path.empty())
    throw InputError("report: missing RESULTS.h5 (a file written by memwall sweep or memwall run -o)");
  if (top < 1)
    throw InputError("report: --top must be at least 1");
  o.top = static_cast<size_t>(top);
  std::stringstream list(columns);
  for (std::string c; std::getline(list, c, ',');)
    if (!c.empty())
      o.columns.push_back(c);

  if (memwall_file_format(path) == "memwall-run") {
    for (const char* sweep_only : {"by", "order", "top", "columns", "filter"})
      if (vm.count(sweep_only) && !vm[sweep_only].defaulted())
        throw InputError(path + ": a run file; --" + std::string(sweep_only) + " applies to sweep results files");
    RunFileSummary run = read_run_file(path);
    std::string text;
    try { // a summary edited or forged into another shape: a missing key, a wrong type
      text = report_text(run.summary, run.title); // read whole, as CSV too: both refuse the same files
      if (csv)
        text = report_csv(run.summary);
    } catch (const nlohmann::json::exception& e) {
      throw InputError(path + ": summary_json is not the summary memwall writes (" + e.what() +
                       "); the file is corrupt");
    } catch (const std::out_of_range&) {
      throw InputError(path +
                       ": summary_json lacks a key or element of the summary memwall writes; the file is corrupt");
    }
    if (!csv)
      std::cout << "memwall run results: " << path << " (spec " << run.spec_file << ", memwall " << run.memwall_version
                << ", git " << run.git_commit << ")\n";
    std::cout << text;
    return 0;
  }
  ResultsTable t = read_sweep_file(path);
  t              = keep_rows(t, filtered_rows(t, filter, path + ": --filter"));
  // A column as the header prints it: an axis by the last part of its key.
  for (std::string& c : o.columns)
    if (auto full = results_column(t, c))
      c = *full;
  if (!o.by.empty())
    if (auto full = results_column(t, o.by))
      o.by = *full;
  if (csv)
    std::cout << sweep_csv(t);
  else
    std::cout << sweep_report_text(t, path, o);
  return 0;
}

} // namespace memwall
