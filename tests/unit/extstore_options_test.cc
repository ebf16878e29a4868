// memcached 1.6.18's extstore -o keys: defaults, values and error messages
// (storage.c's storage_read_config, storage_check_config, extstore_init).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "daemon/option_table.h"
#include "daemon/options.h"
#include "tests/unit/command_line_support.h"

namespace herdless {
namespace {

// memcached's extstore checks, in the order the parser makes them.
bool CheckExtstore(OptionParse* parse) {
  return CheckExtstoreAsRead(parse) && CheckExtstoreConfig(parse) && CheckExtstoreInit(parse);
}

// Applies `-o list` and memcached's checks after the last option, without
// the refusal of the unbuilt tier: what memcached would accept.
Parsed Check(const std::string& list, std::vector<std::string> flags = {}) {
  Parsed p;
  OptionParse parse(&p.options);
  for (size_t i = 0; i + 1 < flags.size(); i += 2) {
    if (flags[i] == "-I") p.options.protocol.item_size_max = std::stoul(flags[i + 1]);
    if (flags[i] == "-U") p.options.protocol.udp_port = std::stoi(flags[i + 1]);
  }
  p.ok = parse.ApplySuboptions(list) && CheckExtstore(&parse);
  p.error = parse.error;
  return p;
}

TEST(ExtstoreOptionsTest, DefaultsAreMemcacheds) {
  Parsed p = Parse({});
  ASSERT_TRUE(p.ok) << p.error;
  const ExtstoreSettings& e = p.options.protocol.ext;
  EXPECT_FALSE(e.enabled());
  EXPECT_EQ(e.page_size, 64u << 20);
  EXPECT_EQ(e.wbuf_size, 4u << 20);
  EXPECT_EQ(e.threads, 1u);
  EXPECT_EQ(e.item_size, 512u);
  EXPECT_EQ(e.item_age, UINT32_MAX);
  EXPECT_EQ(e.low_ttl, 0u);
  EXPECT_EQ(e.recache_rate, 2000u);
  EXPECT_EQ(e.compact_under, 0u);
  EXPECT_EQ(e.drop_under, 0u);
  EXPECT_EQ(e.max_sleep_us, 1000000u);
  EXPECT_DOUBLE_EQ(e.max_frag, 0.8);
  EXPECT_FALSE(e.drop_unread);
}

TEST(ExtstoreOptionsTest, TuningKeysWorkWithoutAPathAsInMemcached) {
  Parsed p = Parse({"-o", "ext_item_size=100,ext_item_age=30,ext_low_ttl=5,ext_recache_rate=7,"
                          "ext_compact_under=3,ext_drop_under=2,ext_max_sleep=9,ext_max_frag=0.5,"
                          "ext_drop_unread,ext_wbuf_size=8,ext_threads=4,ext_page_size=32"});
  ASSERT_TRUE(p.ok) << p.error;
  const ExtstoreSettings& e = p.options.protocol.ext;
  EXPECT_EQ(e.item_size, 100u);
  EXPECT_EQ(e.item_age, 30u);
  EXPECT_EQ(e.low_ttl, 5u);
  EXPECT_EQ(e.recache_rate, 7u);
  EXPECT_EQ(e.compact_under, 3u);
  EXPECT_EQ(e.drop_under, 2u);
  EXPECT_EQ(e.max_sleep_us, 9u);
  EXPECT_DOUBLE_EQ(e.max_frag, 0.5);
  EXPECT_TRUE(e.drop_unread);
  EXPECT_EQ(e.wbuf_size, 8u << 20);
  EXPECT_EQ(e.threads, 4u);
  EXPECT_EQ(e.page_size, 32u << 20);
}

// The numbers are read as memcached's safe_strtoul and safe_strtod read them
// (protocol/numbers.h): a sign, the low 32 bits of a longer number, strtod's syntax.
TEST(ExtstoreOptionsTest, NumbersAreReadAsMemcachedReadsThem) {
  Parsed p = Parse({"-o", "ext_recache_rate=+5,ext_item_age=4294967297,ext_max_frag=.25"});
  ASSERT_TRUE(p.ok) << p.error;
  const ExtstoreSettings& e = p.options.protocol.ext;
  EXPECT_EQ(e.recache_rate, 5u);
  EXPECT_EQ(e.item_age, 1u);
  EXPECT_DOUBLE_EQ(e.max_frag, 0.25);
}

TEST(ExtstoreOptionsTest, PathsGiveWholePagesAndAQuarterToCompactUnder) {
  struct Case {
    std::string list;
    std::vector<uint32_t> pages;   // per file, in the order given
    uint32_t compact_under;
  };
  const Case cases[] = {
      {"ext_path=/tmp/a:1g", {16}, 4},
      {"ext_path=/tmp/a:64m", {1}, 0},
      {"ext_path=/tmp/a:100M", {1}, 0},
      {"ext_path=/tmp/a:64", {0}, 0},   // no unit: memcached's 0 pages
      {"ext_page_size=8,ext_path=/tmp/a:1G", {128}, 32},
      {"ext_path=/tmp/a:1g,ext_path=/tmp/b:2g", {16, 32}, 8},   // the last path's quarter
      {"ext_path=/tmp/a:1g:default", {16}, 4},
      {"ext_compact_under=9,ext_path=/tmp/a:1g", {16}, 9},
  };
  for (const Case& c : cases) {
    Parsed p = Check(c.list);
    ASSERT_TRUE(p.ok) << c.list << ": " << p.error;
    const ExtstoreSettings& e = p.options.protocol.ext;
    ASSERT_EQ(e.files.size(), c.pages.size()) << c.list;
    for (size_t i = 0; i < c.pages.size(); ++i) EXPECT_EQ(e.files[i].page_count, c.pages[i]) << c.list;
    EXPECT_EQ(e.compact_under, c.compact_under) << c.list;
  }
  EXPECT_EQ(Check("ext_path=/tmp/a:1g").options.protocol.ext.files[0].path, "/tmp/a");
}

TEST(ExtstoreOptionsTest, BadValuesGetMemcachedsMessages) {
  struct Case {
    std::string list;
    std::vector<std::string> flags;
    std::string error;
  };
  const std::string init = "Failed to initialize external storage: ";
  const Case cases[] = {
      {"ext_item_size=abc", {}, "could not parse argument to ext_item_size"},
      {"ext_item_size=-1", {}, "could not parse argument to ext_item_size"},
      {"ext_item_size=5x", {}, "could not parse argument to ext_item_size"},
      {"ext_item_size", {}, "Missing ext_item_size argument"},
      {"ext_max_frag=x", {}, "could not parse argument to ext_max_frag"},
      {"ext_max_sleep", {}, "Missing ext_max_sleep argument"},
      {"ext_page_size=0", {}, "could not parse argument to ext_page_size"},
      {"ext_path", {}, "missing argument to ext_path, ie: ext_path=/d/file:5G"},
      {"ext_path=/tmp/a", {},
       "must supply size to ext_path, ie: ext_path=/f/e:64m (M|G|T|P supported)\n"
       "failed to parse ext_path argument"},
      {"ext_path=/tmp/a:64m:lowttl", {},
       "ext_path only presently supports the default bucket\nfailed to parse ext_path argument"},
      {"ext_path=/tmp/a:64m:other", {},
       "Unknown extstore bucket: other\nfailed to parse ext_path argument"},
      {"ext_path=/tmp/a:64m:coldcompact", {},
       "Unknown extstore bucket: coldcompact\nfailed to parse ext_path argument"},
      {"ext_path=/tmp/a:64m:default,ext_path=/tmp/b:64m:old", {},
       "Unknown extstore bucket: old\nfailed to parse ext_path argument"},
      {"ext_path=/tmp/a:64m,ext_page_size=2", {},
       "Must specify ext_page_size before any ext_path arguments"},
      {"ext_page_size=2,ext_path=/tmp/a:64m", {}, init + "page_size must be divisible by wbuf_size"},
      {"ext_page_size=5,ext_wbuf_size=1,ext_path=/tmp/a:64m", {"-I", "1024"},
       init + "page_size and wbuf_size must be divisible by 1024*1024*2"},
      {"ext_page_size=2,ext_wbuf_size=2,ext_path=/tmp/a:200g", {},
       init + "page_count must total to < 65536. Increase page_size or lower path sizes"},
      // 9000p is 2^32-1 pages of 64 MiB (each file's count is clamped there); with
      // two more pages the total must not wrap to 1 in 32 bits and be accepted.
      {"ext_path=/tmp/a:9000p,ext_path=/tmp/b:128m", {},
       init + "page_count must total to < 65536. Increase page_size or lower path sizes"},
      {"ext_wbuf_size=0,ext_path=/tmp/a:64m", {},
       "-I (item_size_max: 1048576) cannot be larger than ext_wbuf_size: 0"},
      {"ext_path=/tmp/a:64m", {"-I", "8388608"},
       "-I (item_size_max: 8388608) cannot be larger than ext_wbuf_size: 4194304"},
      {"ext_path=/tmp/a:64m", {"-U", "11211"}, "Cannot use UDP with extstore enabled (-U 0 to disable)"},
  };
  for (const Case& c : cases) {
    Parsed p = Check(c.list, c.flags);
    EXPECT_FALSE(p.ok) << c.list;
    EXPECT_EQ(p.error, c.error) << c.list;
  }
}

// 1.6.45 (-o compat=1.6.45, wherever it stands in the list) refuses a size
// without a unit (exit 1, as its -o parsing) and a file of no whole page
// (EX_USAGE, storage_check_config), which 1.6.18 starts with; its default
// compaction thresholds are a hundredth of the pages, at least 1.
TEST(ExtstoreOptionsTest, Compat1645RefusesSizesOf1618) {
  struct Case {
    std::string list;
    bool ok_1618;
    std::string error_1645;
    int exit_1645;
  };
  const Case cases[] = {
      {"ext_path=/tmp/a:1GB", true,
       "must supply size to ext_path, ie: ext_path=/f/e:64m (m|g|t|p supported)\n"
       "failed to parse ext_path argument", 1},
      {"ext_path=/tmp/a:0m", true, "supplied ext_path has zero size, cannot use", 64},
      {"ext_path=/tmp/a:32m", true, "supplied ext_path has zero size, cannot use", 64},
      {"ext_path=/tmp/a:1g,ext_path=/tmp/b:0g", true, "supplied ext_path has zero size, cannot use", 64},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(Check(c.list).ok, c.ok_1618) << c.list;
    for (const std::string& list : {"compat=1.6.45," + c.list, c.list + ",compat=1.6.45"}) {
      Parsed p;
      OptionParse check(&p.options);
      check.exit_status = 64;   // as the parser sets it for the checks after the last option
      const bool ok = check.ApplySuboptions(list) && CheckExtstore(&check);
      EXPECT_FALSE(ok) << list;
      EXPECT_EQ(check.error, c.error_1645) << list;
      EXPECT_EQ(check.exit_status, c.exit_1645) << list;
    }
  }
  // 1.6.45 counts the pages once every option is known: a page size after the files counts.
  Parsed later = Check("ext_path=/tmp/a:1g,ext_page_size=8,compat=1.6.45");
  ASSERT_TRUE(later.ok) << later.error;
  EXPECT_EQ(later.options.protocol.ext.files[0].page_count, 128u);
  Parsed p = Check("compat=1.6.45,ext_path=/tmp/a:1g,ext_path=/tmp/b:64g");
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_EQ(p.options.protocol.ext.compact_under, 10u);   // 1,024 pages of the last file
  p = Check("compat=1.6.45,ext_path=/tmp/a:1g");
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_EQ(p.options.protocol.ext.compact_under, 1u);
  EXPECT_EQ(p.options.protocol.ext.drop_under, 1u);
}

// 1.6.45 takes a bucket for each file (its pages serve that bucket first).
TEST(ExtstoreOptionsTest, Compat1645TakesEveryBucket) {
  Parsed p = Check("compat=1.6.45,ext_path=/tmp/a:64m,ext_path=/tmp/b:64m:default,ext_path=/tmp/c:64m:compact,"
                   "ext_path=/tmp/d:64m:chunked,ext_path=/tmp/e:64m:lowttl,ext_path=/tmp/f:64m:coldcompact,"
                   "ext_path=/tmp/g:64m:old");
  ASSERT_TRUE(p.ok) << p.error;
  const std::vector<FlashFile>& files = p.options.protocol.ext.files;
  ASSERT_EQ(files.size(), 7u);
  EXPECT_EQ(files[0].free_bucket, FlashBucket::kDefault);
  for (size_t i = 1; i < files.size(); ++i) EXPECT_EQ(static_cast<size_t>(files[i].free_bucket), i - 1) << i;
  p = Check("compat=1.6.45,ext_path=/tmp/a:64m:cold");
  EXPECT_FALSE(p.ok);
  EXPECT_EQ(p.error, "Unknown extstore bucket: cold\nfailed to parse ext_path argument");
}

TEST(ExtstoreOptionsTest, AValidPathIsAccepted) {
  Parsed p = Parse({"-o", "ext_page_size=8,ext_wbuf_size=2,ext_path=/tmp/herdless-ext-test:64m"});
  EXPECT_TRUE(p.ok) << p.error;
}

}  // namespace
}  // namespace herdless
