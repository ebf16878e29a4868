// FlashTier: the flash tier's threads (-o ext_path). It owns the FlashStore
// (storage/flash_store.h) and runs ext_threads readers, which fetch the values
// parked reads wait for and hand them to ItemStore::FinishFlashReads, and one
// writer, which keeps some of the -m budget free by evicting ahead of the
// workers (the values eviction would drop move to flash:
// ItemStore::EvictAhead), compacts fragmented pages (ItemStore::CompactFlash, on
// FlashStore::PickCompaction's page) and, with ext_item_age, moves idle values
// (ItemStore::MoveIdleToFlash). The writer naps between passes as memcached's
// storage_write_thread does: halved after work, a little longer after each idle
// pass (up to ext_max_sleep). Thread-safe.
#ifndef HERDLESS_DAEMON_FLASH_TIER_H_
#define HERDLESS_DAEMON_FLASH_TIER_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "storage/flash_settings.h"
#include "storage/flash_store.h"
#include "storage/item_store.h"

namespace herdless {

class FlashTier final : public FlashFetcher {
 public:
  // Opens the files (memcached's message in *error on failure); `kept`:
  // as they are, for the -e restart (FlashStore::OpenKept), until Start.
  static std::unique_ptr<FlashTier> Open(const ExtstoreSettings& settings, bool kept, std::string* error);
  ~FlashTier() override;   // Stop()
  FlashTier(const FlashTier&) = delete;
  FlashTier& operator=(const FlashTier&) = delete;

  FlashStore* flash() { return flash_.get(); }
  // Starts the threads on `store`, which must have been made with flash()
  // and this fetcher; `live` holds the ext_* settings the `extstore` command
  // changes. Both must outlive Stop(). Kept files: the snapshot has been
  // loaded by now, and what it did not adopt is emptied (FlashStore::FinishRestart).
  void Start(ItemStore* store, const FlashTunables* live);
  // Joins the threads; fetches still queued are dropped (their readers' waits time out).
  void Stop();

  // FlashFetcher (any thread, under a shard lock or none).
  void Fetch(std::vector<FlashFetch> fetches) override;

 private:
  FlashTier(const ExtstoreSettings& settings, std::unique_ptr<FlashStore> flash);
  void ReadLoop();
  void WriteLoop();
  bool WritePass(WalkCursor* idle_cursor);

  const ExtstoreSettings settings_;
  std::unique_ptr<FlashStore> flash_;
  ItemStore* store_ = nullptr;
  const FlashTunables* live_ = nullptr;
  std::mutex mu_;                  // guards queue_ and stop_
  std::condition_variable fetches_;   // readers wait here
  std::condition_variable stopping_;  // the writer naps here
  std::deque<FlashFetch> queue_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

// The server's store: with ext_path, the tier's files are opened first (memcached's
// message on stderr and nullptr when that fails), the store made on them and
// the tier's threads started (*tier; stop it before the workers go) on
// config.flash_tunables (required with ext_path). With `restoring` (-e), the
// files are kept and the caller starts the tier once the snapshot is loaded.
std::unique_ptr<ItemStore> MakeStoreWithFlashTier(StoreConfig config, const ExtstoreSettings& ext,
                                                  std::unique_ptr<FlashTier>* tier, bool restoring = false);

}  // namespace herdless

#endif  // HERDLESS_DAEMON_FLASH_TIER_H_
