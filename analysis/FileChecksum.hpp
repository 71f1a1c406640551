#pragma once
// memwall's HDF5 files carry a checksum of their bytes in HDF5's user block (the
// first 512 bytes, which HDF5, h5py and pandas skip). libhdf5 is not safe on damaged
// files: a flipped byte in a variable-length string heap segfaults inside H5HG_read,
// another makes it loop forever. So a file is verified before libhdf5 touches it, and
// damage of any kind (bit flips, truncation, zeroed blocks) is one clear error.
//
//   bytes [0, 512):  "memwall-checksum fnv1a64 <16 hex digits> <length>\n", zero-padded
//   bytes [512, end): the HDF5 file proper, <length> bytes, hashed
#include <cstddef>
#include <string>

namespace memwall {

constexpr size_t checksum_block_bytes = 512; // HDF5's smallest user block

// Writes the header into the first checksum_block_bytes of `image` (an HDF5 file
// created with that user block), covering the rest of it.
void stamp_checksum(std::string& image);

// InputError naming `path` unless its checksum matches. A plain HDF5 file (HDF5's
// signature at byte 0, no checksum) is refused: memwall reads only files it wrote.
void verify_checksum(const std::string& path);

// Recomputes the checksum of a file edited in place with the HDF5 API (tests, tools).
void restamp_checksum(const std::string& path);

} // namespace memwall
