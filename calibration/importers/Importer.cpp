#include "calibration/importers/Importer.hpp"

#include "base/InputError.hpp"

#include <cmath>
#include <sstream>

namespace memwall {

Registry<ImportFn>& importer_registry()
{
  static Registry<ImportFn> r("measurement format", "memwall calibrate import", "importers");
  return r;
}

size_t CsvTable::column(const std::string& name, const std::string& file) const
{
  for (size_t i = 0; i < header.size(); ++i)
    if (header[i] == name)
      return i;
  throw InputError(file + ":1: missing column '" + name + "'");
}

CsvTable parse_csv_table(const std::string& text, const std::string& file, bool has_header)
{
  CsvTable t;
  std::istringstream in(text);
  std::string line;
  bool first = true;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \r\t") == std::string::npos)
      continue;
    std::vector<std::string> f = split_csv_line(line);
    if (first && has_header) {
      t.header = f;
    } else {
      size_t want = has_header ? t.header.size() : (t.rows.empty() ? f.size() : t.rows[0].size());
      if (f.size() != want)
        throw InputError(file + ":" + std::to_string(t.rows.size() + (has_header ? 2 : 1)) + ": " +
                         std::to_string(f.size()) + " fields where " + std::to_string(want) + " were expected");
      t.rows.push_back(f);
    }
    first = false;
  }
  if (t.rows.empty())
    throw InputError(file + ": no data rows");
  return t;
}

double csv_number(const std::string& field, const std::string& file, size_t row, const std::string& column)
{
  size_t used = 0;
  double v    = NAN;
  try {
    v = std::stod(field, &used);
  } catch (const std::exception&) {
  }
  // Tolerate a unit glued to the number ("0.19ms", "101.7Tflops"); the caller knows it.
  if (used == 0 || !std::isfinite(v) || v < 0)
    throw InputError(file + ":" + std::to_string(row) + ": column " + column + ": '" + field +
                     "' is not a non-negative number");
  return v;
}

} // namespace memwall
