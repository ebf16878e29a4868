// Snapshot: the warm-restart file (-e). Every live item of an ItemStore with
// the metadata a restart needs (flags, absolute expiry, CAS, last access,
// access frequency, recompute time, invalidation), written while the store
// keeps serving and loaded into a new store at start. docs/operations.md
// documents the format byte by byte and its guarantees.
//
//   header  64 bytes: magic, version, the writer's -m and -I, write time, XXH3
//   blocks  a 32-byte header (sequence number, kind, hotness class, payload
//           length, record count, XXH3 of the header and the payload), then
//           item records; a record never spans two blocks
//   end     a last block: item and block counts, the writer's CAS counter,
//           each shard's recompute-time spread (version 4), the flash tier's
//           identity (version 5), a pending flush_all's deadline (version 6)
//
// WriteSnapshot walks the store a few index buckets at a time under each
// shard's lock (ItemStore::Walk): small records are copied under the lock,
// bigger items are pinned and copied after it. Records go to one buffer per
// hotness class (recent and frequent first); a full buffer is written as one
// block, so the writer holds about a block per class, never a copy of the
// cache. It writes `<path>.tmp`, fsyncs it and renames it over `<path>`.
//
// LoadSnapshot checks the whole file (every checksum, every record's bounds,
// the end block; the blocks' payloads on a few threads) before it restores a
// single item: a file that fails any check is not used at all. Then it
// restores the blocks hottest class first, without evicting (a smaller cache
// keeps the hottest items), on one thread while another reads and checks the
// blocks that come next.
//
// The format functions below are shared by the writer, the reader, the tests
// and the fuzz target. Everything here is thread-compatible; SnapshotReader's
// VisitBlock may be called from several threads at once.
#ifndef HERDLESS_STORAGE_SNAPSHOT_H_
#define HERDLESS_STORAGE_SNAPSHOT_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "storage/limits.h"

namespace herdless {

class ChangeJournal;
class ItemStore;

namespace snapshot_format {

constexpr char kMagic[8] = {'H', 'R', 'D', 'L', 'S', 'N', 'A', 'P'};
// Version 2 adds the read-rate estimate (kRecordReadRate); version 3 the
// expiry's eighths of a second in a record with a rate (the byte version 2
// kept 0); version 4 each shard's recompute-time spread in the end block;
// version 5 the flash tier's values (-o ext_path) in the stop's snapshot:
// records of kRecordFlashStub and the files' identity in the end block;
// version 6 a pending delayed flush_all's deadline in the end block.
// A reader loads every older version.
constexpr uint32_t kVersion = 6;
constexpr uint32_t kOldestVersion = 1;
constexpr size_t kHeaderSize = 64;
constexpr size_t kBlockHeaderSize = 32;
constexpr size_t kRecordHeaderSize = 28;
constexpr size_t kEndPayloadSize = 32;         // versions 1-3; version 4 adds the spreads
constexpr size_t kMaxSavedShards = 65536;
constexpr double kSpreadUnit = 1.0 / 1024;     // a saved spread's step
constexpr uint32_t kBlockMagic = 0x4b4c4248;   // "HBLK" little-endian
constexpr uint8_t kBlockItems = 1;
constexpr uint8_t kBlockEnd = 2;
// Hotness classes: 0 is loaded first. HotnessClass() says how one is chosen.
constexpr int kHotnessClasses = 7;

// Record flag bits (byte 1 of a record).
constexpr uint8_t kRecordBinaryKey = 1 << 0;
constexpr uint8_t kRecordFetched = 1 << 1;
constexpr uint8_t kRecordInvalidated = 1 << 2;
constexpr int kRecordFrequencyShift = 3;       // bits 4..3: access frequency 0..3
constexpr uint8_t kRecordReadRate = 1 << 5;   // version 2: kRecordRateSize bytes follow the header
constexpr uint8_t kRecordKnownBitsV1 = 0x1f;
// Version 5: the value is on flash; the record's "value" is the item's
// 16-byte locator (page, generation, offset, value length: storage/item.h's FlashStubValue).
constexpr uint8_t kRecordFlashStub = 1 << 6;
constexpr uint8_t kRecordKnownBitsV2 = 0x3f;
constexpr uint8_t kRecordKnownBits = 0x7f;
constexpr size_t kRecordRateSize = 4;
constexpr size_t kRecordFlashStubValueSize = 16;

struct FileHeader {
  uint32_t version = kVersion;
  uint64_t memory_limit = 0;    // the writer's -m, bytes
  uint64_t item_size_max = 0;   // the writer's -I, bytes: no record's item is larger
  int64_t written_unix = 0;     // when the write began
  uint32_t block_target = 0;    // payload bytes after which a block is written
  uint32_t hotness_classes = kHotnessClasses;
};

// One item. Times are Unix seconds (32 bits, as memcached's); 0 = never / unknown.
struct Record {
  std::string_view key;
  std::string_view value;
  uint32_t client_flags = 0;
  uint32_t exptime_unix = 0;
  uint8_t exptime_eighths = 0;  // version 3, with a read rate: eighths of a second past exptime_unix
  uint32_t last_access_unix = 0;
  uint64_t cas = 0;
  uint16_t delta_ms = 0;
  uint16_t rate_count = 0;      // the read-rate estimate as of last_access (ReadRateState), 0 = none
  uint8_t rate_aux = 0;         // its TTL code and hot mark
  uint8_t frequency = 0;        // 0..3
  bool fetched = false;
  bool invalidated = false;
  bool binary_key = false;
  bool flash_stub = false;      // version 5: `value` is the locator of a value on flash
};

struct EndBlock {
  uint64_t items = 0;           // records in the file
  uint64_t item_blocks = 0;     // blocks before the end block
  uint64_t cas_counter = 0;     // the writer's CAS counter when it finished
  int64_t finished_unix = 0;
  // Version 4: the recompute-time spread (storage/lease.h's SmoothSpread) of
  // each of the writer's shards, in shard order; none = not known.
  std::vector<double> recompute_spreads;
  // Version 5: with flash stubs (the stop's snapshot), FlashStore::Identity()
  // and next_generation() after the last write; empty and 0 otherwise.
  std::string flash_identity;
  uint32_t flash_next_generation = 0;
  // Version 6: the deadline (Unix seconds) of the writer's delayed flush_all,
  // read after the walk, whether still ahead or passed; 0 = none. Items last
  // stored or touched before it are flushed (ItemStore's IsFlushed rule).
  int64_t flush_deadline_unix = 0;
};

// Recent and frequently read items first: (3 - frequency) plus an age step
// (0: read in the last minute, 1: ten minutes, 2: an hour, 3: older).
int HotnessClass(uint8_t frequency, int64_t seconds_since_access);

// Each part's encoder, and its decoder (in snapshot_format.cc).
std::string EncodeHeader(const FileHeader& h);
// The header's kHeaderSize bytes at `bytes`, checked (magic, version, size,
// reserved bytes, checksum, hotness classes). False with *error.
bool DecodeHeader(const char* bytes, FileHeader* h, std::string* error);

// A record's header: kRecordHeaderSize bytes, and kRecordRateSize more with
// a read rate (the flags byte, byte 1, says which).
size_t RecordHeadSize(const Record& r);
size_t RecordHeadSizeOf(uint8_t flags);
size_t RecordSize(const Record& r);
// Appends the record (header, key, value) to `out`.
void AppendRecord(std::string* out, const Record& r);
// Writes the record's header followed by its key to `out`
// (RecordHeadSize + key size bytes); the value follows it in the file.
void EncodeRecordHead(char* out, const Record& r);
// The record whose header (RecordHeadSizeOf(bytes[1]) bytes) is at `bytes`,
// its key and value pointing after it: the caller checks them against the
// block's bounds.
Record DecodeRecordHead(const char* bytes);

// The end block's payload as a file of `version` holds it (the spreads from
// version 4 on, the flash identity from version 5, the flush deadline from
// version 6), and its decoder, which checks the length and the spreads
// (a power-of-two count up to kMaxSavedShards, or none; each at most
// storage/lease.h's kMaxSpread). False with *error.
std::string EncodeEndPayload(const EndBlock& e, uint32_t version);
bool DecodeEndPayload(std::string_view payload, uint32_t version, EndBlock* e, std::string* error);

// A block header with its checksum over the header's first 24 bytes and the
// payload, given in pieces (a big record is written from the item's memory).
void EncodeBlockHeader(char out[kBlockHeaderSize], uint32_t sequence, uint8_t kind, uint8_t hotness,
                       uint32_t payload_len, uint32_t records,
                       const std::vector<std::string_view>& payload_pieces);
struct BlockHeader {
  uint32_t sequence = 0;
  uint8_t kind = 0;           // kBlockItems or kBlockEnd
  uint8_t hotness = 0;
  uint32_t payload_len = 0;
  uint32_t records = 0;
};
// The block header's kBlockHeaderSize bytes at `bytes`, checked (magic,
// kind, reserved bits; not the checksum). False with *error.
bool DecodeBlockHeader(const char* bytes, BlockHeader* h, std::string* error);
// True when the checksum in the block header at `header` covers `payload`.
bool BlockChecksumMatches(const char* header, std::string_view payload);

}  // namespace snapshot_format

// Where a snapshot's bytes come from: a file (pread) or memory (tests, fuzzing).
class SnapshotSource {
 public:
  virtual ~SnapshotSource() = default;
  virtual uint64_t Size() const = 0;
  // Reads exactly n bytes at offset; false on an I/O error or past the end.
  // Thread-safe.
  virtual bool ReadAt(uint64_t offset, size_t n, char* dst) const = 0;
};

class MemorySource final : public SnapshotSource {
 public:
  explicit MemorySource(std::string_view bytes) : bytes_(bytes) {}
  uint64_t Size() const override { return bytes_.size(); }
  bool ReadAt(uint64_t offset, size_t n, char* dst) const override;

 private:
  std::string_view bytes_;
};

// A file the caller keeps open, read with pread.
class FileSource final : public SnapshotSource {
 public:
  FileSource(int fd, uint64_t size) : fd_(fd), size_(size) {}
  uint64_t Size() const override { return size_; }
  bool ReadAt(uint64_t offset, size_t n, char* dst) const override;

 private:
  int fd_;
  uint64_t size_;
};

// Checks a snapshot, then hands out its records block by block.
class SnapshotReader {
 public:
  explicit SnapshotReader(const SnapshotSource* source) : source_(source) {}

  // Reads and checks everything: the header, the chain of block headers,
  // the end block and the file's length, then every block's checksum and
  // records (on `threads` threads). False with a one-line reason ("block 12
  // at byte 786528: checksum mismatch").
  bool Check(std::string* error, int threads = 1);

  // After a successful Check.
  const snapshot_format::FileHeader& header() const { return header_; }
  const snapshot_format::EndBlock& end() const { return end_; }
  size_t item_blocks() const { return blocks_.size(); }

  // Reads the i-th item block in load order (hottest class first, then file
  // order), checks its checksum again (the file may have changed since
  // Check) and calls visit for each record; `buffer` is the caller's scratch
  // space, and the records point into it. False with *error.
  bool VisitBlock(size_t i, std::string* buffer,
                  const std::function<void(const snapshot_format::Record&)>& visit,
                  std::string* error) const;
  // VisitBlock in two steps, for two threads: read and check the i-th block
  // into *buffer, then visit the records of a buffer that passed.
  bool ReadCheckedBlock(size_t i, std::string* buffer, std::string* error) const;
  void VisitCheckedBlock(size_t i, const std::string& buffer,
                         const std::function<void(const snapshot_format::Record&)>& visit) const;

 private:
  struct BlockRef {
    uint64_t offset = 0;       // of the block header
    uint32_t payload_len = 0;
    uint32_t records = 0;
    uint32_t sequence = 0;
    uint8_t hotness = 0;
  };
  // Check's steps: the file header; the chain of block headers (and the end
  // block), which also sizes every item block; then the item blocks whole.
  bool ReadHeader(std::string* error);
  bool ReadBlockChain(std::vector<BlockRef>* in_file_order, std::string* error);
  bool CheckEndBlock(uint64_t offset, uint32_t sequence, uint64_t items, std::string* error);
  bool CheckBlocks(const std::vector<BlockRef>& in_file_order, int threads, std::string* error) const;
  // Reads and checks the block header at `offset` (not the checksum) into
  // *ref, *kind and h. False with *error.
  bool ReadBlockHeader(uint64_t offset, BlockRef* ref, uint8_t* kind, char h[snapshot_format::kBlockHeaderSize],
                       std::string* error) const;
  // Reads the block header at `offset` and its payload into *payload; checks
  // the checksum. False with *error.
  bool ReadBlock(uint64_t offset, BlockRef* ref, uint8_t* kind, std::string* payload,
                 std::string* error) const;

  const SnapshotSource* source_;
  snapshot_format::FileHeader header_;
  snapshot_format::EndBlock end_;
  std::vector<BlockRef> blocks_;   // item blocks, in load order
};

struct SnapshotWriteOptions {
  const std::atomic<bool>* cancel = nullptr;  // set: the write stops, <path> untouched
  size_t buckets_per_step = 8;                // index buckets walked per lock hold
  size_t block_bytes = 64 << 10;              // payload target of a block
  bool sync = true;                           // fsync the file and its directory
  // The stop's write (-o ext_path): items whose value is on flash are
  // written as stubs, and the flash files synced and identified, so that a
  // restart reopens them. Only once nothing else writes to the store.
  bool flash_stubs = false;
  // -e's change journal: Begin() before the walk, Commit() once the file is in place.
  ChangeJournal* changes = nullptr;
};

struct SnapshotWriteResult {
  bool ok = false;
  bool cancelled = false;
  std::string error;            // when !ok: what failed, with the path and errno's text
  uint64_t items = 0;
  uint64_t bytes = 0;           // of the file
  double seconds = 0;
};

// Writes every live item (lease stubs without a value are left out) to
// `<path>.tmp`, fsyncs it and renames it over `path`. On failure or cancel
// the temporary file is removed and `path` is left as it was. Safe while the
// store serves; each item is as its bucket was when walked.
SnapshotWriteResult WriteSnapshot(ItemStore* store, const std::string& path,
                                  const SnapshotWriteOptions& options);

struct SnapshotLoadOptions {
  // Threads that check the blocks; from 2, restoring also reads the next
  // blocks on a second thread while the calling thread restores.
  int threads = 2;
  // A file written with another -I is refused (kInvalid), as memcached
  // refuses a restart file made with other settings. false: it is loaded
  // into whatever the store is (items over -I skipped). Another -m is always
  // loaded: hottest first, what does not fit is left out (skipped_no_memory).
  bool require_same_item_size_max = true;
  // A file written more than this many seconds ago (its header's time)
  // restores every item as stale (a returning node's values may have been
  // replaced meanwhile: the first reader recomputes), or, with
  // old_means_nothing, restores nothing (kOld). 0 = any age.
  int64_t max_age_s = 0;
  bool old_means_nothing = false;
  // The change journal: a key that may have changed since the file began
  // (after it, or in a run that crashed) is left out.
  const ChangeJournal* changes = nullptr;
};

struct SnapshotLoadResult {
  enum class Status : uint8_t {
    kLoaded,      // the file checked and its items were restored
    kMissing,     // no file at the path
    kUnreadable,  // it could not be opened or read (permissions, I/O): left where it is
    kOld,         // older than max_age_s with old_means_nothing: nothing restored
    kInvalid,     // not a valid snapshot, or one written with another -I
                  // (require_same_item_size_max): nothing was restored (unless the
                  // file changed during the load: then only its blocks that
                  // were still whole, `loaded` says how many items)
  };
  Status status = Status::kMissing;
  std::string error;            // why, for kUnreadable and kInvalid
  snapshot_format::FileHeader header;   // of a checked file
  uint64_t file_bytes = 0;
  uint64_t loaded = 0;
  uint64_t skipped_expired = 0;     // expired beyond the stale grace
  uint64_t skipped_too_large = 0;   // over the current -I
  uint64_t skipped_no_memory = 0;   // the cache was full (-m smaller than the writer's)
  uint64_t stale = 0;               // restored as stale (expired within the grace, or invalidated)
  uint64_t flash_values = 0;        // of `loaded`, values on the reopened flash tier
  uint64_t skipped_flash = 0;       // values on flash not restored: the files changed, or the record's page
  uint64_t skipped_changed = 0;     // keys that may have changed since the file began (the journal)
  uint64_t skipped_flushed = 0;     // flushed by the file's delayed flush_all, whose deadline has passed
  int64_t flush_pending_unix = 0;   // the file's delayed flush_all still ahead, set in the store; 0 = none
  double seconds = 0;
};

// Loads the file at `path` into `store` (meant to be empty). A file that
// fails any check restores nothing (kInvalid); the caller decides what to do
// with it (the daemon moves it to <path>.bad). A delayed flush_all the file
// records (version 6) is applied: its items are left out once its deadline
// has passed; one still ahead becomes this store's pending flush_all.
SnapshotLoadResult LoadSnapshot(ItemStore* store, const std::string& path,
                                const SnapshotLoadOptions& options);
// The same from any source (tests, the fuzz target).
SnapshotLoadResult LoadSnapshotFrom(ItemStore* store, const SnapshotSource& source,
                                    const SnapshotLoadOptions& options);

}  // namespace herdless

#endif  // HERDLESS_STORAGE_SNAPSHOT_H_
