#include "analysis/Hdf5Table.hpp"

#include <new>

#include "analysis/FileChecksum.hpp"
#include "base/AtomicOutput.hpp"

namespace memwall {
namespace {

H5::DSetCreatPropList untimed()
{
  H5::DSetCreatPropList p;
  H5Pset_obj_track_times(p.getId(), false);
  return p;
}

H5::StrType utf8_text()
{
  H5::StrType type(H5::PredType::C_S1, H5T_VARIABLE);
  type.setCset(H5T_CSET_UTF8);
  return type;
}

// A damaged file can hold a 2-D dataset, an attribute of many elements, or a count
// in the trillions where a column belongs: reading it into a buffer sized for one
// dimension or one value overflowed the stack and the heap. Structure is checked
// first; a mismatch is an H5::Exception, which the readers report as a corrupt file.
constexpr hsize_t longest_column = 1'000'000'000;

} // namespace

hsize_t column_rows(const H5::DataSet& d, const std::string& name)
{
  H5::DataSpace space = d.getSpace();
  if (!space.isSimple() || space.getSimpleExtentNdims() != 1)
    throw H5::DataSetIException(name, "dataset '" + name + "' is not a one-dimensional column");
  hsize_t n = 0;
  space.getSimpleExtentDims(&n);
  if (n > longest_column)
    throw H5::DataSetIException(name, "column '" + name + "' claims " + std::to_string(n) + " rows");
  // Rows are bytes in the file: a column whose storage was never written (a forged
  // shape) reads as fill values, a billion of them from a 3 KB file (11 s, 7.9 GB).
  size_t element = d.getDataType().getSize();
  if (n > 0 && (element == 0 || d.getStorageSize() / element < n))
    throw H5::DataSetIException(name, "column '" + name + "' claims " + std::to_string(n) +
                                          " rows but its file holds " +
                                          std::to_string(element ? d.getStorageSize() / element : 0));
  return n;
}

namespace {

void require_one_value(const H5::Attribute& a, const std::string& name)
{
  if (a.getSpace().getSimpleExtentNpoints() != 1)
    throw H5::AttributeIException(name, "attribute '" + name + "' holds more than one value");
}

} // namespace

void write_hdf5_file(const std::string& path, const std::function<void(H5::H5File&)>& fill)
{
  std::string image;
  {
    H5::FileAccPropList fapl;
    H5Pset_fapl_core(fapl.getId(), 1 << 20, /*backing_store=*/false);
    H5::FileCreatPropList fcpl;
    fcpl.setUserblock(checksum_block_bytes);
    H5::H5File f(path, H5F_ACC_TRUNC, fcpl, fapl);
    fill(f);
    f.flush(H5F_SCOPE_GLOBAL);
    ssize_t size = H5Fget_file_image(f.getId(), nullptr, 0);
    if (size < 0)
      throw H5::FileIException("write_hdf5_file", "could not take the file's image");
    // The image starts at the superblock: the user block it was created with goes
    // in front of it, where the checksum is stamped.
    image.assign(checksum_block_bytes + static_cast<size_t>(size), '\0');
    if (H5Fget_file_image(f.getId(), image.data() + checksum_block_bytes, static_cast<size_t>(size)) != size)
      throw H5::FileIException("write_hdf5_file", "could not take the file's image");
  }
  stamp_checksum(image);
  write_file_bytes(path, image);
}

void attribute(H5::H5Object& obj, const std::string& name, const std::string& value)
{
  H5::StrType type = utf8_text();
  H5::Attribute a  = obj.createAttribute(name, type, H5::DataSpace(H5S_SCALAR));
  const char* c    = value.c_str();
  a.write(type, &c);
}

void attribute(H5::H5Object& obj, const std::string& name, double value)
{
  H5::Attribute a = obj.createAttribute(name, H5::PredType::NATIVE_DOUBLE, H5::DataSpace(H5S_SCALAR));
  a.write(H5::PredType::NATIVE_DOUBLE, &value);
}

void integer_attribute(H5::H5Object& obj, const std::string& name, int64_t value)
{
  H5::Attribute a = obj.createAttribute(name, H5::PredType::STD_I64LE, H5::DataSpace(H5S_SCALAR));
  a.write(H5::PredType::NATIVE_INT64, &value);
}

std::optional<std::string> text_attribute(const H5::H5Object& obj, const std::string& name)
{
  if (!obj.attrExists(name))
    return std::nullopt;
  H5::Attribute a = obj.openAttribute(name);
  if (a.getTypeClass() != H5T_STRING)
    return std::nullopt;
  require_one_value(a, name);
  std::string value;
  a.read(a.getStrType(), value);
  return value;
}

std::optional<double> number_attribute(const H5::H5Object& obj, const std::string& name)
{
  if (!obj.attrExists(name))
    return std::nullopt;
  H5::Attribute a = obj.openAttribute(name);
  if (a.getTypeClass() != H5T_FLOAT && a.getTypeClass() != H5T_INTEGER)
    return std::nullopt;
  require_one_value(a, name);
  double value = 0;
  a.read(H5::PredType::NATIVE_DOUBLE, &value);
  return value;
}

void column(H5::Group& g, const std::string& name, const std::vector<double>& v)
{
  hsize_t n = v.size();
  H5::DataSpace space(1, &n);
  H5::DataSet d = g.createDataSet(name, H5::PredType::NATIVE_DOUBLE, space, untimed());
  if (n)
    d.write(v.data(), H5::PredType::NATIVE_DOUBLE);
}

void column(H5::Group& g, const std::string& name, const std::vector<int64_t>& v)
{
  hsize_t n = v.size();
  H5::DataSpace space(1, &n);
  H5::DataSet d = g.createDataSet(name, H5::PredType::STD_I64LE, space, untimed());
  if (n)
    d.write(v.data(), H5::PredType::NATIVE_INT64);
}

void column(H5::Group& g, const std::string& name, const std::vector<std::string>& v)
{
  hsize_t n        = v.size();
  H5::StrType type = utf8_text();
  H5::DataSpace space(1, &n);
  H5::DataSet d = g.createDataSet(name, type, space, untimed());
  std::vector<const char*> ptrs;
  for (const auto& s : v)
    ptrs.push_back(s.c_str());
  if (n)
    d.write(ptrs.data(), type);
}

// h5py's (and so pandas') boolean: an 8-bit enum of FALSE = 0 and TRUE = 1.
H5::EnumType bool_type()
{
  H5::EnumType t(H5::PredType::NATIVE_INT8);
  int8_t no = 0, yes = 1;
  t.insert("FALSE", &no);
  t.insert("TRUE", &yes);
  return t;
}

void flag_column(H5::Group& g, const std::string& name, const std::vector<int8_t>& v)
{
  hsize_t n = v.size();
  H5::DataSpace space(1, &n);
  H5::EnumType type = bool_type();
  H5::DataSet d     = g.createDataSet(name, type, space, untimed());
  if (n)
    d.write(v.data(), type);
}

bool is_text_column(const H5::Group& g, const std::string& name)
{
  return g.openDataSet(name).getTypeClass() == H5T_STRING;
}

// A read whose failure for want of memory is said as such: checked at once, while the
// dataset is open (closing it clears libhdf5's error stack).
template <typename Read>
void read_checked(Read read)
{
  try {
    read();
  } catch (const H5::Exception&) {
    rethrow_if_out_of_memory();
    throw;
  }
}

std::vector<double> read_numbers(const H5::Group& g, const std::string& name)
{
  H5::DataSet d = g.openDataSet(name);
  if (d.getTypeClass() == H5T_ENUM) { // a flag column: read its 0/1 through its own type
    H5::EnumType type = d.getEnumType();
    if (type.getSize() != 1 || type.getNmembers() != 2)
      throw H5::DataSetIException(name, "column '" + name + "' is not a flag column");
    hsize_t n = column_rows(d, name);
    std::vector<int8_t> raw(n);
    if (n)
      read_checked([&] { d.read(raw.data(), type); });
    return std::vector<double>(raw.begin(), raw.end());
  }
  if (d.getTypeClass() != H5T_FLOAT && d.getTypeClass() != H5T_INTEGER)
    throw H5::DataSetIException(name, "column '" + name + "' is not numeric");
  hsize_t n = column_rows(d, name);
  std::vector<double> v(n);
  if (n)
    read_checked([&] { d.read(v.data(), H5::PredType::NATIVE_DOUBLE); });
  return v;
}

std::vector<std::string> read_texts(const H5::Group& g, const std::string& name)
{
  H5::DataSet d = g.openDataSet(name);
  if (d.getTypeClass() != H5T_STRING || !d.getStrType().isVariableStr())
    throw H5::DataSetIException(name, "column '" + name + "' is not a text column");
  hsize_t n = column_rows(d, name);
  std::vector<char*> ptrs(n, nullptr);
  H5::StrType type = utf8_text();
  if (n)
    read_checked([&] { d.read(ptrs.data(), type); });
  std::vector<std::string> v;
  for (char* p : ptrs)
    v.emplace_back(p ? p : "");
  if (n)
    H5Dvlen_reclaim(type.getId(), d.getSpace().getId(), H5P_DEFAULT, ptrs.data());
  return v;
}

std::vector<std::string> members(const H5::Group& g)
{
  std::vector<std::string> out;
  for (hsize_t i = 0; i < g.getNumObjs(); ++i)
    out.push_back(g.getObjnameByIdx(i));
  return out;
}

void rethrow_if_out_of_memory()
{
  bool resource = false;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_UPWARD,
      [](unsigned, const H5E_error2_t* e, void* found) -> herr_t {
        if (e->min_num == H5E_CANTALLOC || e->min_num == H5E_NOSPACE) // not CANTCOPY, CANTGETSIZE: a forged size
          *static_cast<bool*>(found) = true;
        return 0;
      },
      &resource);
  if (resource)
    throw std::bad_alloc();
}

} // namespace memwall
