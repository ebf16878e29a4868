// memcached 1.6.18's extstore -o keys (storage.c's storage_read_config and
// storage_check_config), as rows of the option table: the same names,
// defaults, `stats settings` lines and error messages.
#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <string>

#include "daemon/option_table.h"
#include "protocol/numbers.h"

namespace herdless {

namespace {

using W = StatWriter;
using V = SettingsView;
using E = ExtstoreSettings;

// memcached's two messages for a key's value: none, or not a number.
bool MissingExt(OptionParse& p) { return p.Fail("Missing " + std::string(p.name) + " argument"); }
bool BadExt(OptionParse& p) { return p.Fail("could not parse argument to " + std::string(p.name)); }

template <uint32_t E::*kField, uint32_t kUnit = 1>
bool ExtNumber(OptionParse& p) {
  if (!p.has_value) return MissingExt(p);
  uint32_t v;
  if (!ParseUint32(p.value, &v) || uint64_t{v} * kUnit > UINT32_MAX) return BadExt(p);
  p.settings.ext.*kField = v * kUnit;
  return true;
}

template <double E::*kField>
bool ExtFraction(OptionParse& p) {
  if (!p.has_value) return MissingExt(p);
  return ParseStrtod(p.value, &(p.settings.ext.*kField)) || BadExt(p);
}

// ext_path=FILE:SIZE[:BUCKET], SIZE a number with m, g, t or p (memcached's
// storage_conf_parse: without a unit the size is 0 pages), BUCKET one of
// memcached 1.6.45's (1.6.18 knows four and takes only the default).
bool ExtPath(OptionParse& p) {
  if (!p.has_value || p.value.empty()) {
    return p.Fail("missing argument to ext_path, ie: ext_path=/d/file:5G");
  }
  const std::string_view failed = "\nfailed to parse ext_path argument";
  const size_t colon = p.value.find(':');
  std::string_view size = colon == std::string_view::npos ? "" : p.value.substr(colon + 1);
  const size_t bucket_at = size.find(':');
  std::string_view bucket = bucket_at == std::string_view::npos ? "" : size.substr(bucket_at + 1);
  size = size.substr(0, bucket_at);
  if (colon == 0 || size.empty()) {
    return p.Fail("must supply size to ext_path, ie: ext_path=/f/e:64m (M|G|T|P supported)" +
                  std::string(failed));
  }
  FlashBucket free_bucket = FlashBucket::kDefault;
  if (!bucket.empty() && !FlashBucketNamed(bucket, &free_bucket)) {
    return p.Fail("Unknown extstore bucket: " + std::string(bucket) + std::string(failed));
  }
  uint64_t unit = 0;
  switch (std::tolower(static_cast<unsigned char>(size.back()))) {
    case 'm': unit = uint64_t{1} << 20; break;
    case 'g': unit = uint64_t{1} << 30; break;
    case 't': unit = uint64_t{1} << 40; break;
    case 'p': unit = uint64_t{1} << 50; break;
    default: break;
  }
  const int count = std::atoi(std::string(size.substr(0, size.size() - 1)).c_str());
  FlashFile file;
  file.path = std::string(p.value.substr(0, colon));
  file.size_bytes = count > 0 ? static_cast<uint64_t>(count) * unit : 0;
  file.size_has_unit = unit != 0;   // checked once -o compat is known
  file.free_bucket = free_bucket;    // so is this
  p.settings.ext.files.push_back(std::move(file));   // its page_count once the page size is known
  return true;
}

template <auto kField>
std::string DefaultOf(const ProtocolSettings& d) {
  return std::to_string(d.ext.*kField);
}
template <uint32_t E::*kField>
void Shown(const V& v, std::string_view n, W* w) {
  w->Add(n, uint64_t{v.settings.ext.*kField});
}
// A setting the `extstore` command changes: its value now (OperatorSettings).
template <std::atomic<uint32_t> FlashTunables::*kField>
void Live(const V& v, std::string_view n, W* w) {
  w->Add(n, uint64_t{(v.operators.flash.*kField).load(std::memory_order_relaxed)});
}

constexpr OptionRow kExtstoreRows[] = {
    {.name = "ext_path", .help = "file to write to for external storage.\nie: ext_path=/mnt/d1/extstore:1G",
     .apply = ExtPath},
    {.name = "ext_page_size", .help = "size in megabytes of storage pages. (default: {default})",
     .help_default = [](const ProtocolSettings& d) { return std::to_string(d.ext.page_size >> 20); },
     .apply = [](OptionParse& p) {
       if (!p.settings.ext.files.empty()) p.ext_page_size_after_path = true;
       // memcached divides by a page size of 0; herdless refuses it.
       return (ExtNumber<&E::page_size, 1u << 20>(p) && p.settings.ext.page_size != 0) || BadExt(p);
     }},
    {.name = "ext_wbuf_size", .help = "size in megabytes of page write buffers. (default: {default})",
     .help_default = [](const ProtocolSettings& d) { return std::to_string(d.ext.wbuf_size >> 20); },
     .apply = ExtNumber<&E::wbuf_size, 1u << 20>,
     .setting = {"ext_wbuf_size", Shown<&E::wbuf_size>}},
    {.name = "ext_threads", .help = "number of IO threads to run. (default: {default})",
     .help_default = DefaultOf<&E::threads>, .apply = ExtNumber<&E::threads>},
    {.name = "ext_io_depth", .help = "reads each IO thread keeps in flight (default: {default})",
     .help_default = DefaultOf<&E::io_depth>, .apply = ExtNumber<&E::io_depth>},
    {.name = "ext_item_size", .help = "store items larger than this (bytes, default {default})",
     .help_default = DefaultOf<&E::item_size>, .apply = ExtNumber<&E::item_size>,
     .setting = {"ext_item_size", Live<&FlashTunables::item_size>}},
    {.name = "ext_item_age",
     .help = "store items idle at least this long (seconds, default: no age limit)",
     .apply = ExtNumber<&E::item_age>, .setting = {"ext_item_age", Live<&FlashTunables::item_age>}},
    {.name = "ext_low_ttl", .help = "consider TTLs lower than this specially (default: {default})",
     .help_default = DefaultOf<&E::low_ttl>, .apply = ExtNumber<&E::low_ttl>,
     .setting = {"ext_low_ttl", Live<&FlashTunables::low_ttl>}},
    {.name = "ext_drop_unread",
     .help = "don't re-write unread values during compaction (default: disabled)",
     .apply = [](OptionParse& p) {
       p.settings.ext.drop_unread = true;   // memcached: whatever the value
       return true;
     },
     .setting = {"ext_drop_unread",
                 [](const V& v, std::string_view n, W* w) { w->AddBool(n, v.operators.flash.drop_unread.load()); }}},
    {.name = "ext_recache_rate", .help = "recache an item every N accesses (default: {default})",
     .help_default = DefaultOf<&E::recache_rate>, .apply = ExtNumber<&E::recache_rate>,
     .setting = {"ext_recache_rate", Live<&FlashTunables::recache_rate>}},
    {.name = "ext_compact_under",
     .help = "compact when fewer than this many free pages\n(default: 1/4th of the assigned storage)",
     .apply = ExtNumber<&E::compact_under>,
     .setting = {"ext_compact_under", Live<&FlashTunables::compact_under>}},
    {.name = "ext_drop_under",
     .help = "drop COLD items when fewer than this many free pages\n(default: 1/4th of the assigned storage)",
     .apply = ExtNumber<&E::drop_under>, .setting = {"ext_drop_under", Live<&FlashTunables::drop_under>}},
    {.name = "ext_max_frag", .help = "max page fragmentation to tolerate (default: 0.80)",
     .apply = ExtFraction<&E::max_frag>,
     .setting = {"ext_max_frag",
                 [](const V& v, std::string_view n, W* w) { w->AddFixed(n, v.operators.flash.max_frag.load(), 2); }}},
    {.name = "ext_max_sleep", .help = "max sleep time of background threads in us (default: {default})",
     .help_default = DefaultOf<&E::max_sleep_us>, .apply = ExtNumber<&E::max_sleep_us>,
     .setting = {"ext_max_sleep", Live<&FlashTunables::max_sleep_us>}},
    {.name = "slab_automove_freeratio",
     .help = "ratio of memory to hold free as buffer.\n(see doc/storage.txt for more info, default: 0.010)",
     .apply = ExtFraction<&E::slab_automove_freeratio>},   // shown from OperatorSettings
};

}  // namespace

std::span<const OptionRow> ExtstoreRows() { return kExtstoreRows; }

// storage_conf_parse's refusals, which memcached makes (exit 1) as it reads the -o list.
bool CheckExtstoreAsRead(OptionParse* p) {
  const ProtocolSettings& s = p->settings;
  const ExtstoreSettings& ext = s.ext;
  for (const FlashFile& f : ext.files) {
    // 1.6.18's storage_conf_parse, as it reads the -o list: it knows no
    // coldcompact or old bucket and takes no bucket but the default.
    if (s.latest() || f.free_bucket == FlashBucket::kDefault) continue;
    p->exit_status = EXIT_FAILURE;
    const bool known = f.free_bucket != FlashBucket::kColdCompact && f.free_bucket != FlashBucket::kOld;
    return p->Fail((known ? std::string("ext_path only presently supports the default bucket")
                          : "Unknown extstore bucket: " + std::string(FlashBucketName(f.free_bucket))) +
                   "\nfailed to parse ext_path argument");
  }
  if (p->ext_page_size_after_path && !s.latest()) {
    // 1.6.18 counts a file's pages as it reads the file (1.6.45 once every option is known).
    p->exit_status = EXIT_FAILURE;
    return p->Fail("Must specify ext_page_size before any ext_path arguments");
  }
  if (s.latest()) {
    // 1.6.45's storage_conf_parse refuses a size without a unit (":1GB") as it reads the -o list.
    for (const FlashFile& f : ext.files) {
      if (f.size_has_unit) continue;
      p->exit_status = EXIT_FAILURE;
      return p->Fail("must supply size to ext_path, ie: ext_path=/f/e:64m (m|g|t|p supported)\n"
                     "failed to parse ext_path argument");
    }
  }
  return true;
}

// storage_check_config, in memcached's words.
bool CheckExtstoreConfig(OptionParse* p) {
  ProtocolSettings& s = p->settings;
  ExtstoreSettings& ext = s.ext;
  if (!ext.enabled()) return true;
  for (FlashFile& f : ext.files) {
    const uint64_t pages = f.size_bytes / ext.page_size;
    f.page_count = pages > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(pages);
  }
  if (s.item_size_max > ext.wbuf_size) {
    return p->Fail("-I (item_size_max: " + std::to_string(s.item_size_max) +
                   ") cannot be larger than ext_wbuf_size: " + std::to_string(ext.wbuf_size));
  }
  if (s.udp_port != 0) return p->Fail("Cannot use UDP with extstore enabled (-U 0 to disable)");
  for (const FlashFile& f : ext.files) {
    // 1.6.45 refuses a file of no whole page (":0m"); 1.6.18 starts with it.
    if (s.latest() && f.page_count == 0) return p->Fail("supplied ext_path has zero size, cannot use");
  }
  return true;
}

// extstore_init's refusals: memcached's storage_init exits 1, not EX_USAGE.
bool CheckExtstoreInit(OptionParse* p) {
  ProtocolSettings& s = p->settings;
  ExtstoreSettings& ext = s.ext;
  if (!ext.enabled()) return true;
  auto init_fails = [p](std::string_view why) {
    p->exit_status = EXIT_FAILURE;
    return p->Fail("Failed to initialize external storage: " + std::string(why));
  };
  if (ext.wbuf_size == 0 || ext.page_size % ext.wbuf_size != 0) {
    return init_fails("page_size must be divisible by wbuf_size");
  }
  if (ext.page_size % (2u << 20) != 0 || ext.wbuf_size % (2u << 20) != 0) {
    return init_fails("page_size and wbuf_size must be divisible by 1024*1024*2");
  }
  if (ext.page_count() >= UINT16_MAX) {
    return init_fails("page_count must total to < 65536. Increase page_size or lower path sizes");
  }
  ext.as_1645 = s.latest();
  if (ext.compact_under == 0) {
    // memcached: a quarter of the last ext_path's pages, for both thresholds
    // (1.6.45: a hundredth, at least 1).
    const uint32_t pages = ext.files.back().page_count;
    ext.compact_under = s.latest() ? std::max<uint32_t>(1, static_cast<uint32_t>(pages * 0.01)) : pages / 4;
    ext.drop_under = ext.compact_under;
  }
  return true;
}

}  // namespace herdless
