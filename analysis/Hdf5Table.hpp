#pragma once
// The HDF5 building blocks of memwall's files: a table is a group of equal-length 1-D
// datasets (one per column), which h5py and pandas read without glue:
//   pandas.DataFrame({k: f["points"][k][:] for k in f["points"]}).
// Datasets carry no modification times, so the same results give the same bytes.
#include <H5Cpp.h>

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
std::optional<std::string> text_attribute(const H5::H5Object& obj, const std::string& name);
std::optional<double> number_attribute(const H5::H5Object& obj, const std::string& name);

void column(H5::Group& g, const std::string& name, const std::vector<double>& v);
void column(H5::Group& g, const std::string& name, const std::vector<std::string>& v);
bool is_text_column(const H5::Group& g, const std::string& name);
std::vector<double> read_numbers(const H5::Group& g, const std::string& name);
std::vector<std::string> read_texts(const H5::Group& g, const std::string& name);
// The names of a group's members, in the file's (alphabetical) order.
std::vector<std::string> members(const H5::Group& g);

template <typename Row, typename Get>
std::vector<double> doubles(const std::vector<Row>& rows, Get get)
{
  std::vector<double> out;
  out.reserve(rows.size());
  for (const auto& r : rows)
    out.push_back(get(r));
  return out;
}

template <typename Row, typename Get>
std::vector<std::string> strings(const std::vector<Row>& rows, Get get)
{
  std::vector<std::string> out;
  out.reserve(rows.size());
  for (const auto& r : rows)
    out.push_back(get(r));
  return out;
}

} // namespace memwall
