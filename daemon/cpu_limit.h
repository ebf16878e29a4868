// CPU limits: how many CPUs this process can keep busy at once. The worker cap
// (-t, unless -o exact_threads) is the smallest of the CPUs in the affinity mask
// and the cgroup v2 bandwidth quota, ceil(quota / period) of `cpu.max`, taken
// over the process's cgroup and each of its ancestors (the tightest one binds).
// The parsers are pure functions of the files' text; a file that cannot be read
// or parsed sets no limit (and never fails the daemon).
#ifndef HERDLESS_DAEMON_CPU_LIMIT_H_
#define HERDLESS_DAEMON_CPU_LIMIT_H_

#include <optional>
#include <string>
#include <string_view>

namespace herdless {

// The text of a cgroup v2 `cpu.max` ("$MAX $PERIOD"): ceil(MAX / PERIOD) CPUs,
// 0 for "max" (no quota), nullopt if the text is malformed.
std::optional<int> CpusFromCpuMax(std::string_view text);

// The cgroup v2 path in the text of /proc/self/cgroup (the "0::<path>" line),
// nullopt if there is none (a cgroup v1 only system).
std::optional<std::string> CgroupV2Path(std::string_view proc_self_cgroup);

// The quota in CPUs binding the cgroup at `cgroup_path` of the cgroup v2
// hierarchy mounted at `mount`: the smallest over the cgroup and its ancestors
// that have a `cpu.max` with a quota; 0 if none has one.
int CgroupCpuQuota(const std::string& mount, const std::string& cgroup_path);

// This process's quota: /proc/self/cgroup, then CgroupCpuQuota under
// /sys/fs/cgroup. 0 = no quota (or no cgroup v2).
int CpuQuotaOfThisProcess();

// The CPUs in this process's affinity mask, 0 if unknown.
int CpusInAffinityMask();

}  // namespace herdless

#endif  // HERDLESS_DAEMON_CPU_LIMIT_H_
