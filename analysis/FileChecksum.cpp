#include "analysis/FileChecksum.hpp"

#include "base/AtomicOutput.hpp"
#include "base/InputError.hpp"

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace memwall {
namespace {

const char hdf5_signature[] = "\x89HDF\r\n\x1a\n";
const char header_tag[]     = "memwall-checksum fnv1a64 ";

uint64_t fnv1a64(const char* p, size_t n)
{
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < n; ++i) {
    h ^= static_cast<unsigned char>(p[i]);
    h *= 1099511628211ULL;
  }
  return h;
}

std::string header_for(const char* body, size_t n)
{
  char line[96];
  std::snprintf(line, sizeof line, "%s%016" PRIx64 " %zu\n", header_tag, fnv1a64(body, n), n);
  return line;
}

// The whole file, or an exception: a stream copy that ran out of memory stopped short
// without a word, and the short copy's checksum called a good file damaged (under
// `ulimit -v`). Here the buffer's allocation throws bad_alloc (out of memory, exit 3),
// and a short read is a read error, not damage.
std::string read_all(const std::string& path)
{
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in)
    throw InputError(path + ": results file cannot be read");
  std::streamoff size = in.tellg();
  if (size < 0)
    throw InputError(path + ": results file cannot be read");
  std::string bytes(static_cast<size_t>(size), '\0');
  in.seekg(0);
  in.read(bytes.data(), size);
  if (in.gcount() != size)
    throw std::runtime_error(path + ": reading the results file stopped after " + std::to_string(in.gcount()) + " of " +
                             std::to_string(size) + " bytes");
  return bytes;
}

} // namespace

void stamp_checksum(std::string& image)
{
  if (image.size() < checksum_block_bytes)
    throw std::logic_error("stamp_checksum: no user block to hold the checksum");
  std::string h = header_for(image.data() + checksum_block_bytes, image.size() - checksum_block_bytes);
  std::memset(image.data(), 0, checksum_block_bytes);
  std::memcpy(image.data(), h.data(), h.size());
}

void verify_checksum(const std::string& path)
{
  std::string bytes = read_all(path);
  if (bytes.compare(0, sizeof hdf5_signature - 1, hdf5_signature) == 0)
    // Every results file memwall writes carries the checksum; a plain HDF5 file is
    // another program's (or one of memwall's edited in place and written back whole).
    throw InputError(path + ": not a memwall results file (an HDF5 file without memwall's checksum: written by "
                            "another program, or edited since memwall wrote it)");
  if (bytes.size() < checksum_block_bytes || bytes.compare(0, sizeof header_tag - 1, header_tag) != 0) {
    if (bytes.size() > checksum_block_bytes &&
        bytes.compare(checksum_block_bytes, sizeof hdf5_signature - 1, hdf5_signature) == 0)
      throw InputError(path + ": the file is damaged (its checksum header is not there); re-run to rewrite it");
    throw InputError(path + ": not an HDF5 file (truncated, or not written by memwall)");
  }
  size_t n             = bytes.size() - checksum_block_bytes;
  std::string expected = header_for(bytes.data() + checksum_block_bytes, n);
  if (bytes.compare(0, expected.size(), expected) != 0)
    throw InputError(path + ": the file is damaged or truncated (its checksum does not match); re-run to rewrite it");
}

void restamp_checksum(const std::string& path)
{
  std::string bytes = read_all(path);
  stamp_checksum(bytes);
  write_file_bytes(path, bytes);
}

} // namespace memwall
