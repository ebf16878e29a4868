// The snapshot file's reader: checks a whole file (its header, every block's
// checksum and bounds, the end block) before anything is restored, then hands
// out its blocks hottest first (snapshot.h: SnapshotReader); the encoding of
// each part is in snapshot_format.cc.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <atomic>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "storage/file_io.h"
#include "storage/snapshot.h"

namespace herdless {

using namespace snapshot_format;

bool MemorySource::ReadAt(uint64_t offset, size_t n, char* dst) const {
  if (offset > bytes_.size() || n > bytes_.size() - offset) return false;
  if (n > 0) std::memcpy(dst, bytes_.data() + offset, n);
  return true;
}

bool FileSource::ReadAt(uint64_t offset, size_t n, char* dst) const { return ReadAll(fd_, dst, n, offset); }

namespace {

std::string At(const char* what, uint64_t number, uint64_t offset) {
  return std::string(what) + " " + std::to_string(number) + " at byte " + std::to_string(offset);
}

// Walks the records of an item block's payload, checking each; visit (if
// given) sees every record. False with *error at the first bad one.
bool ParseRecords(std::string_view payload, uint32_t expected, const FileHeader& header,
                  const std::function<void(const Record&)>* visit, std::string* error) {
  const uint8_t known_bits =
      header.version >= 5 ? kRecordKnownBits : (header.version >= 2 ? kRecordKnownBitsV2 : kRecordKnownBitsV1);
  size_t pos = 0;
  uint32_t n = 0;
  auto fail = [&](const std::string& why) {
    *error = "record " + std::to_string(n) + " (byte " + std::to_string(pos) + " of the block): " + why;
    return false;
  };
  while (pos < payload.size()) {
    if (payload.size() - pos < kRecordHeaderSize) return fail("truncated");
    const char* p = payload.data() + pos;
    const uint8_t flags = static_cast<uint8_t>(p[1]);
    if (flags & ~known_bits) return fail("unknown flag bits");
    if (payload.size() - pos < RecordHeadSizeOf(flags)) return fail("truncated");
    const Record r = DecodeRecordHead(p);
    if (r.key.empty() || r.key.size() > kMaxKeyLength) {
      return fail("key length " + std::to_string(r.key.size()));
    }
    const uint8_t max_eighths = header.version >= 3 && r.exptime_unix != 0 ? 7 : 0;
    if ((flags & kRecordReadRate) && (r.rate_count == 0 || r.exptime_eighths > max_eighths)) {
      return fail("bad read rate (0, or its expiry byte over " + std::to_string(max_eighths) + ")");
    }
    if ((flags & kRecordFlashStub) && r.value.size() != kRecordFlashStubValueSize) {
      return fail("a value on flash with a " + std::to_string(r.value.size()) + "-byte locator");
    }
    if (r.value.size() > header.item_size_max) {
      return fail("a " + std::to_string(r.value.size()) + "-byte value, over the writer's -I");
    }
    const size_t size = RecordSize(r);
    if (size > payload.size() - pos) return fail("runs past the end of its block");
    if (visit != nullptr) (*visit)(r);
    pos += size;
    n++;
  }
  if (n != expected) {
    *error = "holds " + std::to_string(n) + " records, its header says " + std::to_string(expected);
    return false;
  }
  return true;
}

}  // namespace

bool SnapshotReader::ReadBlockHeader(uint64_t offset, BlockRef* ref, uint8_t* kind, char h[kBlockHeaderSize],
                                     std::string* error) const {
  const uint64_t size = source_->Size();
  if (size - offset < kBlockHeaderSize) {
    *error = "truncated block header";
    return false;
  }
  if (!source_->ReadAt(offset, kBlockHeaderSize, h)) {
    *error = "read error";
    return false;
  }
  BlockHeader bh;
  if (!DecodeBlockHeader(h, &bh, error)) return false;
  ref->offset = offset;
  ref->sequence = bh.sequence;
  *kind = bh.kind;
  ref->hotness = bh.hotness;
  ref->payload_len = bh.payload_len;
  ref->records = bh.records;
  if (ref->payload_len > size - offset - kBlockHeaderSize) {
    *error = "its " + std::to_string(ref->payload_len) + "-byte payload runs past the end of the file (truncated)";
    return false;
  }
  return true;
}

bool SnapshotReader::ReadBlock(uint64_t offset, BlockRef* ref, uint8_t* kind, std::string* payload,
                               std::string* error) const {
  char h[kBlockHeaderSize];
  if (!ReadBlockHeader(offset, ref, kind, h, error)) return false;
  payload->resize(ref->payload_len);
  if (!source_->ReadAt(offset + kBlockHeaderSize, ref->payload_len, payload->data())) {
    *error = "read error";
    return false;
  }
  if (!BlockChecksumMatches(h, *payload)) {
    *error = "checksum mismatch";
    return false;
  }
  return true;
}

bool SnapshotReader::Check(std::string* error, int threads) {
  blocks_.clear();
  std::vector<BlockRef> in_file_order;
  if (!ReadHeader(error) || !ReadBlockChain(&in_file_order, error) ||
      !CheckBlocks(in_file_order, threads, error)) {
    return false;
  }
  std::vector<std::vector<BlockRef>> by_hotness(header_.hotness_classes);
  for (const BlockRef& ref : in_file_order) by_hotness[ref.hotness].push_back(ref);
  for (const std::vector<BlockRef>& blocks : by_hotness) blocks_.insert(blocks_.end(), blocks.begin(), blocks.end());
  return true;
}

bool SnapshotReader::ReadHeader(std::string* error) {
  const uint64_t size = source_->Size();
  if (size == 0) {
    *error = "empty file";
    return false;
  }
  char h[kHeaderSize];
  if (size < kHeaderSize || !source_->ReadAt(0, kHeaderSize, h)) {
    *error = "not a herdless snapshot (" + std::to_string(size) + " bytes, shorter than a header)";
    return false;
  }
  return DecodeHeader(h, &header_, error);
}

// The chain of block headers, in file order (32 bytes read per block), up to
// the end block, which must end the file.
bool SnapshotReader::ReadBlockChain(std::vector<BlockRef>* in_file_order, std::string* error) {
  const uint64_t size = source_->Size();
  uint64_t offset = kHeaderSize;
  uint32_t sequence = 0;
  uint64_t items = 0;
  while (offset < size) {
    BlockRef ref;
    uint8_t kind = 0;
    char bh[kBlockHeaderSize];
    std::string why;
    if (!ReadBlockHeader(offset, &ref, &kind, bh, &why)) {
      *error = At("block", sequence, offset) + ": " + why;
      return false;
    }
    if (ref.sequence != sequence) {
      *error = At("block", sequence, offset) + ": numbered " + std::to_string(ref.sequence) +
               " (blocks missing or out of order)";
      return false;
    }
    if (kind == kBlockEnd) return CheckEndBlock(offset, sequence, items, error);
    if (ref.hotness >= header_.hotness_classes) {
      *error = At("block", sequence, offset) + ": hotness class " + std::to_string(ref.hotness);
      return false;
    }
    items += ref.records;
    in_file_order->push_back(ref);
    offset += kBlockHeaderSize + ref.payload_len;
    sequence++;
  }
  *error = "no end block: the file is cut short (" + std::to_string(size) + " bytes, " +
           std::to_string(sequence) + " whole block headers)";
  return false;
}

// The end block at `offset`, after `sequence` item blocks holding `items`
// records: its checksum, its counts, and that nothing follows it.
bool SnapshotReader::CheckEndBlock(uint64_t offset, uint32_t sequence, uint64_t items, std::string* error) {
  BlockRef ref;
  uint8_t kind = 0;
  std::string payload;
  std::string why;
  if (!ReadBlock(offset, &ref, &kind, &payload, &why)) {
    *error = At("end block", sequence, offset) + ": " + why;
    return false;
  }
  if (ref.records != 0 || ref.hotness != 0) {
    *error = At("end block", sequence, offset) + ": bad size";
    return false;
  }
  if (!DecodeEndPayload(payload, header_.version, &end_, &why)) {
    *error = At("end block", sequence, offset) + ": " + why;
    return false;
  }
  if (end_.items != items || end_.item_blocks != sequence) {
    *error = At("end block", sequence, offset) + ": counts " + std::to_string(end_.items) + " items in " +
             std::to_string(end_.item_blocks) + " blocks, the file holds " + std::to_string(items) + " in " +
             std::to_string(sequence);
    return false;
  }
  const uint64_t next = offset + kBlockHeaderSize + ref.payload_len;
  if (next != source_->Size()) {
    *error = std::to_string(source_->Size() - next) + " bytes after the end block";
    return false;
  }
  return true;
}

// Every item block's checksum and records, on a few threads. The error
// reported is the first bad block's in file order.
bool SnapshotReader::CheckBlocks(const std::vector<BlockRef>& in_file_order, int threads,
                                 std::string* error) const {
  std::atomic<size_t> next_block{0};
  std::mutex error_mu;
  size_t first_bad = in_file_order.size();
  std::string first_error;
  auto check_blocks = [&] {
    std::string payload;
    for (size_t i; (i = next_block.fetch_add(1)) < in_file_order.size();) {
      const BlockRef& want = in_file_order[i];
      BlockRef ref;
      uint8_t kind = 0;
      std::string why;
      const bool ok = ReadBlock(want.offset, &ref, &kind, &payload, &why) &&
                      ParseRecords(payload, ref.records, header_, nullptr, &why);
      if (!ok) {
        std::lock_guard<std::mutex> lock(error_mu);
        if (i < first_bad) {
          first_bad = i;
          first_error = At("block", want.sequence, want.offset) + ": " + why;
        }
      }
    }
  };
  const int n = std::clamp(threads, 1, 16);
  std::vector<std::thread> helpers;
  for (int t = 1; t < n; t++) helpers.emplace_back(check_blocks);
  check_blocks();
  for (std::thread& t : helpers) t.join();
  if (first_bad < in_file_order.size()) {
    *error = first_error;
    return false;
  }
  return true;
}

bool SnapshotReader::ReadCheckedBlock(size_t i, std::string* buffer, std::string* error) const {
  const BlockRef& want = blocks_[i];
  BlockRef ref;
  uint8_t kind = 0;
  std::string why;
  bool ok = ReadBlock(want.offset, &ref, &kind, buffer, &why);
  if (ok && (kind != kBlockItems || ref.sequence != want.sequence || ref.payload_len != want.payload_len ||
             ref.records != want.records)) {
    why = "changed since it was checked";
    ok = false;
  }
  // Checked again without visiting: a block is restored whole or not at all.
  ok = ok && ParseRecords(*buffer, ref.records, header_, nullptr, &why);
  if (!ok) *error = At("block", want.sequence, want.offset) + ": " + why;
  return ok;
}

void SnapshotReader::VisitCheckedBlock(size_t i, const std::string& buffer,
                                       const std::function<void(const Record&)>& visit) const {
  std::string unused;
  ParseRecords(buffer, blocks_[i].records, header_, &visit, &unused);
}

bool SnapshotReader::VisitBlock(size_t i, std::string* buffer,
                                const std::function<void(const Record&)>& visit,
                                std::string* error) const {
  if (!ReadCheckedBlock(i, buffer, error)) return false;
  VisitCheckedBlock(i, *buffer, visit);
  return true;
}

}  // namespace herdless
