#include "daemon/cpu_limit.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

namespace herdless {
namespace {

TEST(CpuLimitTest, CpuMaxIsCeilingOfQuotaOverPeriod) {
  struct Case {
    const char* text;
    std::optional<int> cpus;
  } cases[] = {
      {"max 100000\n", 0},          // no quota
      {"max 100000", 0},
      {"100000 100000\n", 1},
      {"150000 100000\n", 2},       // 1.5 CPUs: two workers can use it
      {"200000 100000\n", 2},
      {"50000 100000\n", 1},        // half a CPU still runs one worker
      {"1000 1000000\n", 1},
      {"6400000 100000\n", 64},
      {"99999999999999 1\n", 1 << 20},   // absurd quotas are capped, not overflowed
      {"", std::nullopt},
      {"\n", std::nullopt},
      {"max", std::nullopt},
      {"100000", std::nullopt},
      {"100000 0\n", std::nullopt},
      {"0 100000\n", std::nullopt},
      {"-1 100000\n", std::nullopt},
      {"100000 -1\n", std::nullopt},
      {"max max\n", std::nullopt},
      {"1.5 100000\n", std::nullopt},
      {"100000  100000\n", std::nullopt},
      {"100000 100000 7\n", std::nullopt},
      {"99999999999999999999 100000\n", std::nullopt},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(CpusFromCpuMax(c.text), c.cpus) << "cpu.max text: \"" << c.text << "\"";
  }
}

TEST(CpuLimitTest, CgroupV2PathIsTheZeroHierarchyLine) {
  struct Case {
    const char* text;
    std::optional<std::string> path;
  } cases[] = {
      {"0::/system.slice/herdless.service\n", "/system.slice/herdless.service"},
      {"0::/\n", "/"},
      {"0::/a/b", "/a/b"},
      // hybrid: v1 controllers first, the unified line last
      {"4:memory:/x\n1:cpu,cpuacct:/y\n0::/user.slice\n", "/user.slice"},
      {"12:cpu,cpuacct:/docker/abc\n1:name=systemd:/docker/abc\n", std::nullopt},   // v1 only
      {"", std::nullopt},
      {"0::\n", std::nullopt},
      {"0:cpu:/a\n", std::nullopt},
      {"10::/a\n", std::nullopt},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(CgroupV2Path(c.text), c.path) << "/proc/self/cgroup text: \"" << c.text << "\"";
  }
}

// A cgroup v2 hierarchy in a temporary directory: cpu.max files where asked.
class CgroupTree {
 public:
  CgroupTree() {
    char tmpl[] = "/tmp/herdless-cgroup-XXXXXX";
    const char* made = mkdtemp(tmpl);
    EXPECT_NE(made, nullptr);
    root_ = made != nullptr ? made : "/nonexistent";
  }
  ~CgroupTree() {
    for (auto it = files_.rbegin(); it != files_.rend(); ++it) std::remove(it->c_str());
    for (auto it = dirs_.rbegin(); it != dirs_.rend(); ++it) rmdir(it->c_str());
    rmdir(root_.c_str());
  }
  // Creates `cgroup` (e.g. "/a/b") and its parents.
  void MakeCgroup(const std::string& cgroup) {
    std::string path = root_;
    size_t start = 1;
    while (start <= cgroup.size()) {
      size_t slash = cgroup.find('/', start);
      if (slash == std::string::npos) slash = cgroup.size();
      path += "/" + cgroup.substr(start, slash - start);
      if (mkdir(path.c_str(), 0755) == 0) dirs_.push_back(path);
      start = slash + 1;
    }
  }
  void WriteCpuMax(const std::string& cgroup, const std::string& text) {
    if (cgroup != "/") MakeCgroup(cgroup);
    std::string file = root_ + (cgroup == "/" ? "" : cgroup) + "/cpu.max";
    FILE* f = std::fopen(file.c_str(), "w");
    ASSERT_NE(f, nullptr) << file;
    std::fputs(text.c_str(), f);
    std::fclose(f);
    files_.push_back(file);
  }
  const std::string& root() const { return root_; }

 private:
  std::string root_;
  std::vector<std::string> dirs_;
  std::vector<std::string> files_;
};

TEST(CpuLimitTest, QuotaIsTheTightestOverTheCgroupAndItsAncestors) {
  CgroupTree tree;
  tree.MakeCgroup("/system.slice/herdless.service");
  EXPECT_EQ(CgroupCpuQuota(tree.root(), "/system.slice/herdless.service"), 0) << "no cpu.max anywhere";

  tree.WriteCpuMax("/system.slice/herdless.service", "max 100000\n");
  EXPECT_EQ(CgroupCpuQuota(tree.root(), "/system.slice/herdless.service"), 0) << "\"max\" is no quota";

  tree.WriteCpuMax("/system.slice", "300000 100000\n");
  EXPECT_EQ(CgroupCpuQuota(tree.root(), "/system.slice/herdless.service"), 3) << "a parent's quota binds";

  tree.WriteCpuMax("/system.slice/herdless.service", "150000 100000\n");
  EXPECT_EQ(CgroupCpuQuota(tree.root(), "/system.slice/herdless.service"), 2) << "the tighter one binds";
  EXPECT_EQ(CgroupCpuQuota(tree.root(), "/system.slice/herdless.service/"), 2) << "trailing slash";
  EXPECT_EQ(CgroupCpuQuota(tree.root(), "system.slice/herdless.service"), 2) << "no leading slash";
  EXPECT_EQ(CgroupCpuQuota(tree.root(), "/system.slice"), 3) << "a child's quota does not bind its parent";

  // The namespace root of a container carries the container's quota.
  tree.WriteCpuMax("/", "100000 100000\n");
  EXPECT_EQ(CgroupCpuQuota(tree.root(), "/"), 1);
  EXPECT_EQ(CgroupCpuQuota(tree.root(), "/system.slice/herdless.service"), 1);

  // Unreadable, missing and malformed files set no limit.
  tree.WriteCpuMax("/other", "garbage\n");
  tree.WriteCpuMax("/other/child", "200000 100000\n");
  EXPECT_EQ(CgroupCpuQuota(tree.root(), "/other/child"), 1) << "root still binds";
  EXPECT_EQ(CgroupCpuQuota(tree.root(), "/does/not/exist"), 1);
  EXPECT_EQ(CgroupCpuQuota(tree.root() + "/missing-mount", "/a"), 0);
  EXPECT_EQ(CgroupCpuQuota(tree.root(), "/other/../system.slice"), 0) << "paths with .. are refused";
}

TEST(CpuLimitTest, ThisProcessHasAnAnswer) {
  // Whatever the machine: a quota is 0 (none) or a positive count, and the
  // affinity mask holds at least the CPU this test runs on.
  EXPECT_GE(CpuQuotaOfThisProcess(), 0);
  EXPECT_GE(CpusInAffinityMask(), 1);
}

}  // namespace
}  // namespace herdless
