#pragma once
// The HDF5 building blocks of memwall's files: a table is a group of equal-length 1-D
// datasets (one per column), which h5py and pandas read without glue:
//   pandas.DataFrame({k: f["points"][k][:] for k in f["points"]}).
// Datasets carry no modification times, so the same results give the same bytes.
#include <H5Cpp.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace memwall {

// Builds an HDF5 file in memory (the core driver, no backing store) with fill(file)
// and writes its bytes to `path` with checked POSIX writes. HDF5 1.10 segfaults when a
// file whose H5Fclose failed (a full disk) is closed again by its destructor, and its
// C++ destructors print to stderr: disk errors must never reach the library.
void write_hdf5_file(const std::string& path, const std::function<void(H5::H5File&)>& fill);

void attribute(H5::H5Object& obj, const std::string& name, const std::string& value);
void attribute(H5::H5Object& obj, const std::string& name, double value);
// Counts, indices and token numbers are stored as 64-bit integers, so pandas reads them
// as int64 and not as floats; readers accept either.
void integer_attribute(H5::H5Object& obj, const std::string& name, int64_t value);
std::optional<std::string> text_attribute(const H5::H5Object& obj, const std::string& name);
std::optional<double> number_attribute(const H5::H5Object& obj, const std::string& name);

void column(H5::Group& g, const std::string& name, const std::vector<double>& v);
void column(H5::Group& g, const std::string& name, const std::vector<int64_t>& v);
void column(H5::Group& g, const std::string& name, const std::vector<std::string>& v);
// 0/1 as the boolean h5py and pandas read (an enum of FALSE and TRUE).
void flag_column(H5::Group& g, const std::string& name, const std::vector<int8_t>& v);
bool is_text_column(const H5::Group& g, const std::string& name);
// A column's length; an H5::Exception naming it unless it is 1-D and its rows are in
// the file (a forged shape over unwritten storage claims rows it does not have).
hsize_t column_rows(const H5::DataSet& d, const std::string& name);
std::vector<double> read_numbers(const H5::Group& g, const std::string& name);
std::vector<std::string> read_texts(const H5::Group& g, const std::string& name);
// The names of a group's members, in the file's (alphabetical) order.
std::vector<std::string> members(const H5::Group& g);
// Called in a catch of H5::Exception while the failed call's objects are still open
// (closing one clears libhdf5's error stack): throws std::bad_alloc when libhdf5 failed
// to allocate (a CANTALLOC or NOSPACE error on its stack), so that a memory limit is not
// taken for a damaged file; returns otherwise.
void rethrow_if_out_of_memory();

// One column's values from rows of any type: doubles(ops, [](const OpRecord& o) { ... }).
template <typename T, typename Row, typename Get>
std::vector<T> values(const std::vector<Row>& rows, Get get)
{
  std::vector<T> out;
  out.reserve(rows.size());
  for (const auto& r : rows)
    out.push_back(get(r));
  return out;
}
template <typename Row, typename Get>
std::vector<double> doubles(const std::vector<Row>& rows, Get get)
{
  return values<double>(rows, get);
}
template <typename Row, typename Get>
std::vector<int64_t> integers(const std::vector<Row>& rows, Get get)
{
  return values<int64_t>(rows, get);
}
template <typename Row, typename Get>
std::vector<std::string> strings(const std::vector<Row>& rows, Get get)
{
  return values<std::string>(rows, get);
}

} // namespace memwall
