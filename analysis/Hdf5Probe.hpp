#pragma once
// libhdf5 is not safe on damaged files: some damage segfaults it (H5HG_read, reading a
// variable-length string), some makes it loop for ever (H5C_protect). The checksum
// refuses damage done after memwall wrote a file, but not a file damaged and then
// stamped again, or forged. So before memwall opens a results file in its own process,
// a child process reads every object in it the way memwall's readers do, under a time
// limit; a file that kills or stalls that child is refused.
#include <string>

namespace memwall {

// InputError naming `path` when libhdf5 crashed or did not finish reading it.
void probe_hdf5_file(const std::string& path);

} // namespace memwall
