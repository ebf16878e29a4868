// libFuzzer target for the warm-restart snapshot reader and loader
// (storage/snapshot.h): the input is loaded into a small ItemStore. The first
// byte picks how: even, the rest is the file as it is (header checks, block
// walking); odd, the rest is cut into item blocks that get a valid file
// header (of format version 1 when bit 2 is set, else the current one: the
// read-rate extension of records is version 2's), block headers with right
// checksums and an end block around them (from version 4 with 1, 2, 4 or 8
// shards' recompute spreads, bits 3..4, for a store of 2 shards), so the
// record parser and the restore path see mutated records rather than
// checksum failures. Checked: no crash or undefined behaviour; a file that is
// refused restores nothing; a loaded one restores at most the records it
// holds, each a readable item with a key of 1..250 bytes, and leaves every
// shard's spread within 0..kMaxSpread.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "storage/clock.h"
#include "storage/item_store.h"
#include "storage/snapshot.h"

namespace herdless {
namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

class FuzzRandom : public RandomSource {
 public:
  double UniformOpenClosed() override { return 0.5; }
};

// mode byte odd: [len lo][len hi][hotness][records] then len payload bytes, repeated.
std::string Framed(std::string_view in, const ItemStore& store, int64_t now_unix, uint32_t version,
                   uint8_t mode) {
  using namespace snapshot_format;
  FileHeader h;
  h.version = version;
  h.memory_limit = store.memory_limit();
  h.item_size_max = store.item_size_max();
  h.written_unix = now_unix - 10;
  h.block_target = 4096;
  std::string file = EncodeHeader(h);
  uint32_t sequence = 0;
  uint64_t items = 0;
  while (in.size() >= 4) {
    const size_t len = std::min<size_t>(static_cast<uint8_t>(in[0]) | (static_cast<uint8_t>(in[1]) << 8),
                                        in.size() - 4);
    const uint8_t hotness = static_cast<uint8_t>(in[2]) % (kHotnessClasses + 1);
    const uint32_t records = static_cast<uint8_t>(in[3]);
    const std::string_view payload = in.substr(4, len);
    in.remove_prefix(4 + len);
    char head[kBlockHeaderSize];
    EncodeBlockHeader(head, sequence++, kBlockItems, hotness, static_cast<uint32_t>(payload.size()), records,
                      {payload});
    file.append(head, kBlockHeaderSize);
    file.append(payload);
    items += records;
  }
  EndBlock end;
  end.items = items;
  end.item_blocks = sequence;
  end.cas_counter = 1000;
  end.finished_unix = now_unix - 5;
  for (size_t i = 0; i < (size_t{1} << ((mode >> 3) & 3)); i++) {
    end.recompute_spreads.push_back(static_cast<double>((mode >> 5) * 3 + i) / 2);   // 0 .. 14
  }
  // Version 6: a delayed flush_all's deadline (every byte of mode is taken:
  // from the block count), passed, due or ahead, or none.
  if (sequence % 2 == 1) end.flush_deadline_unix = now_unix - 3 + static_cast<int64_t>(items % 7);
  const std::string payload = EncodeEndPayload(end, version);
  char head[kBlockHeaderSize];
  EncodeBlockHeader(head, sequence, kBlockEnd, 0, static_cast<uint32_t>(payload.size()), 0, {payload});
  file.append(head, kBlockHeaderSize);
  file.append(payload);
  return file;
}

}  // namespace
}  // namespace herdless

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace herdless;
  if (size < 1) return 0;
  const bool framed = data[0] & 1;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);

  ManualClock clock;
  clock.AdvanceSeconds(100);
  FuzzRandom random;
  StoreConfig config;
  config.memory_limit = 1u << 20;
  config.item_size_max = 64 * 1024;
  config.shard_bits = 1;
  config.stale_grace_s = (data[0] & 2) ? 30 : 0;
  config.clock = &clock;
  config.random = &random;
  ItemStore store(config);

  const uint32_t version = (data[0] & 4) ? 1 : snapshot_format::kVersion;
  const std::string file = framed ? Framed(rest, store, clock.UnixSeconds(), version, data[0]) : std::string(rest);
  // An exactly-sized heap copy: ASan sees any read past the end.
  char* copy = static_cast<char*>(std::malloc(file.size() == 0 ? 1 : file.size()));
  for (size_t i = 0; i < file.size(); ++i) copy[i] = file[i];
  MemorySource source(std::string_view(copy, file.size()));
  SnapshotLoadOptions options;
  options.threads = 1;
  const SnapshotLoadResult r = LoadSnapshotFrom(&store, source, options);

  uint64_t held = 0;
  WalkCursor cursor;
  while (!cursor.done) {
    store.Walk(&cursor, 64, [&](const WalkedItem& w) {
      Check(!w.key.empty() && w.key.size() <= kMaxKeyLength);
      // A restored estimate only from a version 2 file (the framed ones say
      // which they are; a raw input's header may say either), and readable.
      Check(!w.read_rate.present() || ((!framed || version >= 2) && w.reads_per_s >= 0));
      held++;
    });
  }
  for (const double spread : store.RecomputeSpreads()) Check(spread >= 0 && spread <= kMaxSpread);
  if (r.status != SnapshotLoadResult::Status::kLoaded) {
    Check(r.loaded == 0 && held == 0 && !r.error.empty());
  } else {
    Check(held <= r.loaded);
    // Every record takes a header and a key byte of the input at least.
    Check(r.loaded + r.skipped_expired + r.skipped_too_large + r.skipped_no_memory <=
          size / (snapshot_format::kRecordHeaderSize + 1));
  }
  std::free(copy);
  return 0;
}
