#pragma once
// Importers turn measurements other people publish into memwall's tidy measurement
// rows (Measurement.hpp). One file per format in impl/, registered by name;
// `memwall calibrate import FORMAT FILE... --gpu ID -o MEAS.csv` picks one and
// `memwall list importers` prints them.
#include "base/Registry.hpp"
#include "calibration/Measurement.hpp"

#include <functional>
#include <string>
#include <vector>

namespace memwall {

struct ImportRequest {
  std::string path; // for messages and the rows' source column
  std::string text; // the file's content
  std::string gpu;  // catalog id the measurements were taken on
};

using ImportFn = std::function<std::vector<Measurement>(const ImportRequest&)>;

Registry<ImportFn>& importer_registry();

// A CSV of numbers with a header row, as the importers read them: column name -> index,
// and the rows as text fields. InputError naming the file and the first missing column.
struct CsvTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  size_t column(const std::string& name, const std::string& file) const;
};
CsvTable parse_csv_table(const std::string& text, const std::string& file, bool has_header);
// A field as a finite number; InputError naming file, row and column otherwise.
double csv_number(const std::string& field, const std::string& file, size_t row, const std::string& column);

} // namespace memwall
