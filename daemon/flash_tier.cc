#include "daemon/flash_tier.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace herdless {

namespace {

// memcached's WRITE_SLEEP_MIN: the writer's shortest nap.
constexpr uint32_t kMinSleepUs = 500;
// Free budget the writer keeps, so that stores rarely evict (and write to
// flash) themselves: a 32nd of -m, at least this much.
constexpr size_t kMinHeadroomBytes = 1u << 20;
// Work per writer pass: segments evicted ahead, index buckets walked for idle values.
constexpr int kEvictionsPerPass = 64;
constexpr size_t kIdleBucketsPerStep = 64;
constexpr int kIdleStepsPerPass = 64;

}  // namespace

std::unique_ptr<ItemStore> MakeStoreWithFlashTier(StoreConfig config, const ExtstoreSettings& ext,
                                                  std::unique_ptr<FlashTier>* tier, bool restoring) {
  if (!ext.enabled()) return std::make_unique<ItemStore>(config);
  std::string error;
  *tier = FlashTier::Open(ext, restoring, &error);
  if (*tier == nullptr) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return nullptr;
  }
  config.flash = (*tier)->flash();
  config.flash_fetcher = tier->get();
  config.flash_reads_cached = true;
  config.flash_as_1645 = ext.as_1645;
  auto store = std::make_unique<ItemStore>(config);
  if (!restoring) (*tier)->Start(store.get(), config.flash_tunables);
  return store;
}

std::unique_ptr<FlashTier> FlashTier::Open(const ExtstoreSettings& settings, bool kept, std::string* error) {
  std::unique_ptr<FlashStore> flash = kept ? FlashStore::OpenKept(settings, error) : FlashStore::Open(settings, error);
  if (flash == nullptr) return nullptr;
  return std::unique_ptr<FlashTier>(new FlashTier(settings, std::move(flash)));
}

FlashTier::FlashTier(const ExtstoreSettings& settings, std::unique_ptr<FlashStore> flash)
    : settings_(settings), flash_(std::move(flash)) {}

FlashTier::~FlashTier() { Stop(); }

void FlashTier::Start(ItemStore* store, const FlashTunables* live) {
  store_ = store;
  live_ = live;
  flash_->FinishRestart();
  const uint32_t readers = std::max<uint32_t>(1, settings_.threads);
  for (uint32_t i = 0; i < readers; i++) threads_.emplace_back([this] { ReadLoop(); });
  threads_.emplace_back([this] { WriteLoop(); });
}

void FlashTier::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    queue_.clear();
  }
  fetches_.notify_all();
  stopping_.notify_all();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

void FlashTier::Fetch(std::vector<FlashFetch> fetches) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return;
    for (FlashFetch& f : fetches) queue_.push_back(std::move(f));
  }
  fetches_.notify_one();
}

// Takes every queued fetch at once (a request's fetches are queued together)
// and reads them all before handing the batch to the store, which wakes a
// multi-key get parked on several of them once.
void FlashTier::ReadLoop() {
  constexpr size_t kMaxBatch = 1024;
  std::vector<FlashFetch> batch;
  for (;;) {
    batch.clear();
    {
      std::unique_lock<std::mutex> lock(mu_);
      fetches_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      while (!queue_.empty() && batch.size() < kMaxBatch) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    for (FlashFetch& f : batch) f.result = flash_->Read(f.where, f.key, f.value_len, &f.value);
    store_->FinishFlashReads(&batch);
  }
}

// One pass: evict ahead while the free budget is short, compact one
// fragmented page when free pages run short (ext_compact_under, ext_max_frag,
// ext_drop_unread), then move idle values (ext_item_age), a bounded walk each
// time. True if it did anything.
bool FlashTier::WritePass(WalkCursor* idle_cursor) {
  const size_t headroom = std::max(kMinHeadroomBytes, store_->memory_limit() / 32);
  bool worked = false;
  for (int i = 0; i < kEvictionsPerPass && store_->EvictAhead(headroom); i++) worked = true;
  if (store_->CompactFlash() > 0) worked = true;
  const uint32_t item_age = live_->item_age.load(std::memory_order_relaxed);
  if (item_age != UINT32_MAX) {
    for (int i = 0; i < kIdleStepsPerPass && !idle_cursor->done; i++) {
      if (store_->MoveIdleToFlash(idle_cursor, kIdleBucketsPerStep, item_age) > 0) worked = true;
    }
    if (idle_cursor->done) *idle_cursor = WalkCursor{};
  }
  return worked;
}

void FlashTier::WriteLoop() {
  uint32_t sleep_us = kMinSleepUs;
  WalkCursor idle_cursor;
  for (;;) {
    if (WritePass(&idle_cursor)) {
      sleep_us = std::max(kMinSleepUs, sleep_us / 2);
    } else {
      flash_->Flush();   // idle: what is buffered reaches the file
      // Slowly (memcached adds 1 us a pass): a busy cache needs its headroom back soon.
      const uint32_t max_sleep_us = live_->max_sleep_us.load(std::memory_order_relaxed);
      sleep_us = std::min(std::max(kMinSleepUs, max_sleep_us), sleep_us + sleep_us / 16 + 1);
    }
    std::unique_lock<std::mutex> lock(mu_);
    if (stopping_.wait_for(lock, std::chrono::microseconds(sleep_us), [&] { return stop_; })) return;
  }
}

}  // namespace herdless
