#include "daemon/cpu_limit.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace herdless {

namespace {

// cpu.max and /proc/self/cgroup are short; a longer file is not one of them.
constexpr size_t kMaxFileBytes = 64 * 1024;

// A whole decimal number without sign; false on anything else or overflow.
bool ParseCount(std::string_view s, uint64_t* out) {
  if (s.empty() || s.size() > 19) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = v;
  return true;
}

std::optional<std::string> ReadSmallFile(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string text;
  char buf[4096];
  while (text.size() <= kMaxFileBytes) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      close(fd);
      return std::nullopt;
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  if (text.size() > kMaxFileBytes) return std::nullopt;
  return text;
}

}  // namespace

std::optional<int> CpusFromCpuMax(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  size_t space = text.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  std::string_view quota_text = text.substr(0, space);
  std::string_view period_text = text.substr(space + 1);
  uint64_t period;
  if (!ParseCount(period_text, &period) || period == 0) return std::nullopt;
  if (quota_text == "max") return 0;
  uint64_t quota;
  if (!ParseCount(quota_text, &quota) || quota == 0) return std::nullopt;
  uint64_t cpus = quota / period + (quota % period != 0 ? 1 : 0);
  constexpr uint64_t kMaxCpus = 1 << 20;   // far beyond any machine; keeps the int exact
  return static_cast<int>(cpus < kMaxCpus ? cpus : kMaxCpus);
}

std::optional<std::string> CgroupV2Path(std::string_view proc_self_cgroup) {
  while (!proc_self_cgroup.empty()) {
    size_t nl = proc_self_cgroup.find('\n');
    std::string_view line = proc_self_cgroup.substr(0, nl);
    proc_self_cgroup = nl == std::string_view::npos ? std::string_view()
                                                    : proc_self_cgroup.substr(nl + 1);
    // cgroup v2's line is "0::<path>" (hierarchy 0, no controller list).
    if (line.size() >= 4 && line.substr(0, 3) == "0::" && line[3] == '/') {
      return std::string(line.substr(3));
    }
  }
  return std::nullopt;
}

int CgroupCpuQuota(const std::string& mount, const std::string& cgroup_path) {
  int tightest = 0;
  std::string path = cgroup_path;
  if (!path.empty() && path.front() != '/') path.insert(0, "/");
  while (!path.empty() && path.back() == '/') path.pop_back();
  // A ".." would leave the hierarchy: such a path is not a cgroup's.
  if (path.find("/..") != std::string::npos) return 0;
  for (;;) {
    std::optional<std::string> text = ReadSmallFile(mount + path + "/cpu.max");
    if (text) {
      std::optional<int> cpus = CpusFromCpuMax(*text);
      if (cpus && *cpus > 0 && (tightest == 0 || *cpus < tightest)) tightest = *cpus;
    }
    if (path.empty()) break;
    path.erase(path.rfind('/'));   // the parent; "" is the hierarchy's root
  }
  return tightest;
}

int CpuQuotaOfThisProcess() {
  std::optional<std::string> self = ReadSmallFile("/proc/self/cgroup");
  if (!self) return 0;
  std::optional<std::string> path = CgroupV2Path(*self);
  if (!path) return 0;
  return CgroupCpuQuota("/sys/fs/cgroup", *path);
}

int CpusInAffinityMask() {
  cpu_set_t set;
  CPU_ZERO(&set);
  return sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 0;
}

}  // namespace herdless
