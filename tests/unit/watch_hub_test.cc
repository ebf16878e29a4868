#include "daemon/watch_hub.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace herdless {
namespace {

// The gid= of each line in a drained watch stream.
std::vector<std::string> Gids(const std::string& stream) {
  std::vector<std::string> gids;
  for (size_t at = stream.find(" gid="); at != std::string::npos; at = stream.find(" gid=", at + 1)) {
    const size_t start = at + 5;
    gids.push_back(stream.substr(start, stream.find(' ', start) - start));
  }
  return gids;
}

// memcached's logger_add_watcher takes a gid for each watcher (its min_gid),
// so lines' gids skip one per attach. memcached 1.6.18 and 1.6.45, for watch
// fetchers, get a, watch mutations, get b, set b, watch, get c: the fetchers
// watcher saw gids 2, 4, 5, 8, the mutations watcher 6, the last one 8.
TEST(WatchHubTest, EachWatcherTakesAGidAsInMemcached) {
  WatchHub hub;
  auto fetchers = hub.Add(kWatchFetchers);
  hub.Write(kWatchFetchers, "type=item_get key=a");
  auto mutations = hub.Add(kWatchMutations);
  hub.Write(kWatchFetchers, "type=item_get key=b");
  hub.Write(kWatchFetchers, "type=item_get key=b");
  hub.Write(kWatchMutations, "type=item_store key=b");
  auto all = hub.Add(kWatchFetchers);
  hub.Write(kWatchFetchers, "type=item_get key=c");
  std::string out;
  hub.Drain(fetchers.get(), &out);
  EXPECT_EQ(Gids(out), (std::vector<std::string>{"2", "4", "5", "8"})) << out;
  out.clear();
  hub.Drain(mutations.get(), &out);
  EXPECT_EQ(Gids(out), std::vector<std::string>{"6"}) << out;
  out.clear();
  hub.Drain(all.get(), &out);
  EXPECT_EQ(Gids(out), std::vector<std::string>{"8"}) << out;
}

}  // namespace
}  // namespace herdless
