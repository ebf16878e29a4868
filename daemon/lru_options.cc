// memcached's LRU -o keys (memcached.c's hot_lru_pct .. temporary_ttl), as
// rows of the option table: the same names, readings (atoi, atof) and error
// messages. herdless has no segmented or temporary LRU: the values start what
// `stats settings` shows and `lru tune|temp_ttl` change (docs/operations.md).
#include <cstdint>
#include <cstdlib>
#include <string>

#include "daemon/option_table.h"

namespace herdless {

namespace {

bool Missing(OptionParse& p) { return p.Fail("Missing " + std::string(p.name) + " argument"); }

bool Percent(OptionParse& p, uint32_t* out) {
  if (!p.has_value) return Missing(p);
  const int pct = std::atoi(std::string(p.value).c_str());
  if (pct < 1 || pct >= 80) return p.Fail(std::string(p.name) + " must be > 1 and < 80");
  *out = static_cast<uint32_t>(pct);
  return p.NoteIgnored();
}

bool Factor(OptionParse& p, double* out) {
  if (!p.has_value) return Missing(p);
  *out = std::atof(std::string(p.value).c_str());
  if (*out <= 0) return p.Fail(std::string(p.name) + " must be > 0");
  return p.NoteIgnored();
}

constexpr OptionRow kLruRows[] = {
    {.name = "hot_lru_pct",
     .apply = [](OptionParse& p) { return Percent(p, &p.settings.machinery.hot_lru_pct); },
     .ignored = true},
    {.name = "warm_lru_pct",
     .apply = [](OptionParse& p) { return Percent(p, &p.settings.machinery.warm_lru_pct); },
     .ignored = true},
    {.name = "hot_max_factor",
     .apply = [](OptionParse& p) { return Factor(p, &p.settings.machinery.hot_max_factor); },
     .ignored = true},
    {.name = "warm_max_factor",
     .apply = [](OptionParse& p) { return Factor(p, &p.settings.machinery.warm_max_factor); },
     .ignored = true},
    {.name = "temporary_ttl",
     .apply = [](OptionParse& p) {
       if (!p.has_value) return Missing(p);
       p.settings.machinery.temp_lru = true;
       p.settings.machinery.temporary_ttl = std::atoi(std::string(p.value).c_str());
       return p.NoteIgnored();
     },
     .ignored = true},
};

}  // namespace

std::span<const OptionRow> LruRows() { return kLruRows; }

// memcached's checks once every option is known, in its order.
bool CheckLruOptions(OptionParse* p) {
  const MachinerySettings& m = p->settings.machinery;
  if (m.hot_lru_pct + m.warm_lru_pct > 80) {
    return p->Fail("hot_lru_pct + warm_lru_pct cannot be more than 80% combined");
  }
  if (m.temp_lru && !m.lru_maintainer) return p->Fail("temporary_ttl requires lru_maintainer to be enabled");
  return true;
}

}  // namespace herdless
