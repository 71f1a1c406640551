#include "analysis/Hdf5Probe.hpp"

#include "analysis/Hdf5Table.hpp"
#include "base/ChildPool.hpp"
#include "base/InputError.hpp"

#include <H5Cpp.h>

#include <csignal>
#include <fcntl.h>
#include <filesystem>
#include <new>
#include <unistd.h>

namespace memwall {
namespace {

// Deeper than any memwall file (/runs/000001/memory/node0.gpu0 is 4); hard links can
// make a group its own member, so the walk needs a bound.
constexpr int deepest_group = 16;

void read_attributes(const H5::H5Object& obj)
{
  for (int i = 0; i < obj.getNumAttrs(); ++i) {
    try {
      std::string name = obj.openAttribute(static_cast<unsigned>(i)).getName();
      text_attribute(obj, name);
      number_attribute(obj, name);
    } catch (const H5::Exception&) { // refused later, with its reason, by the reader
    }
  }
}

void read_group(const H5::Group& g, int depth)
{
  read_attributes(g);
  if (depth >= deepest_group)
    return;
  for (const std::string& name : members(g)) {
    try {
      H5O_type_t type = g.childObjType(name);
      if (type == H5O_TYPE_GROUP) {
        read_group(g.openGroup(name), depth + 1);
      } else if (type == H5O_TYPE_DATASET) {
        read_attributes(g.openDataSet(name));
        if (is_text_column(g, name))
          read_texts(g, name);
        else
          read_numbers(g, name);
      }
    } catch (const H5::Exception&) {
    }
  }
}

} // namespace

void probe_hdf5_file(const std::string& path)
{
  // Reading a good file takes milliseconds per megabyte; the limit is far above that.
  auto bytes       = std::filesystem::file_size(path);
  unsigned seconds = 5 + static_cast<unsigned>(bytes / (20 << 20));
  ChildOutcome out = run_in_child([&] {
    int null = ::open("/dev/null", O_WRONLY);
    if (null >= 0)
      ::dup2(null, STDERR_FILENO); // libhdf5's and a sanitizer's reports of the crash
    ::alarm(seconds);
    H5::Exception::dontPrint();
    try {
      H5::H5File f(path, H5F_ACC_RDONLY);
      read_group(f.openGroup("/"), 0);
    } catch (const H5::Exception&) {
    }
    return std::string();
  });
  if (out.kind == ChildOutcome::Kind::result)
    return;
  // Out of memory in the child says nothing of the file: the caller's out-of-memory line.
  if (out.kind == ChildOutcome::Kind::failure && out.data == std::bad_alloc().what())
    throw std::bad_alloc();
  bool died        = out.data.rfind(worker_died_prefix, 0) == 0;
  bool stalled     = died && out.data.find("of signal " + std::to_string(SIGALRM)) != std::string::npos;
  std::string what = stalled ? "libhdf5 did not finish reading it in " + std::to_string(seconds) + " s"
                     : died  ? std::string("libhdf5 crashed reading it")
                             : "reading it failed: " + out.data;
  throw InputError(path + ": the file is damaged (" + what + "); re-run to rewrite it");
}

} // namespace memwall
