// Positioned reads and writes of a whole range of a file, across short
// transfers and EINTR (the flash tier's pages, the snapshot file).
#ifndef HERDLESS_STORAGE_FILE_IO_H_
#define HERDLESS_STORAGE_FILE_IO_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace herdless {

// Writes n bytes at offset; false on an error (errno says which).
bool WriteAll(int fd, const char* p, size_t n, uint64_t offset);
// Reads up to n bytes at offset: how many came before the range or the file
// ended; -1 on an error.
ssize_t ReadUpTo(int fd, char* p, size_t n, uint64_t offset);
// Reads exactly n bytes at offset; false on an error or a short file.
inline bool ReadAll(int fd, char* p, size_t n, uint64_t offset) {
  return ReadUpTo(fd, p, n, offset) == static_cast<ssize_t>(n);
}

}  // namespace herdless

#endif  // HERDLESS_STORAGE_FILE_IO_H_
