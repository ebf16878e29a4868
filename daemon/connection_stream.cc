#include "daemon/connection_stream.h"

#include <event2/event.h>

#include <string>

#include "daemon/connection.h"
#include "daemon/watch_hub.h"
#include "daemon/worker.h"
#include "protocol/executor.h"
#include "protocol/metadump.h"
#include "protocol/reply.h"

namespace herdless {

namespace {

// A metadump pass: at most this many walk steps (each one shard lock over a
// few index buckets) before other connections get their turn.
constexpr int kDumpStepsPerPass = 8;
// A watcher's lines move from its hub buffer to its output every tick, while
// less than kWatchOutputBound is unsent.
constexpr int kWatchTickMs = 10;
constexpr size_t kWatchOutputBound = 64 * 1024;

class MetadumpPasses final : public ConnectionStream {
 public:
  MetadumpPasses(ItemStore* store, uint64_t classes, MetadumpStream::Format format, size_t bound)
      : dump_(store, classes, format), bound_(bound) {}

  Pass Continue(ReplyBuffer* out, bool closing) override {
    if (closing) return Pass::kEnded;
    if (out->pending_bytes() >= bound_) return Pass::kPaused;   // a write brings us back
    return dump_.Fill(out, bound_, kDumpStepsPerPass) ? Pass::kEnded : Pass::kPaused;
  }

 private:
  MetadumpStream dump_;
  const size_t bound_;
};

class WatchStream final : public ConnectionStream {
 public:
  // `hub`: nullptr when the server has none (then Attach refuses).
  WatchStream(WatchHub* hub, Connection* conn) : hub_(hub), conn_(conn) {}
  ~WatchStream() override {
    if (timer_ != nullptr) event_free(timer_);
    if (watcher_ != nullptr) hub_->Remove(watcher_);
  }

  // memcached's answer to `watch`: true with OK, false with its refusal.
  bool Attach(event_base* base, uint32_t kinds, ReplyBuffer* out) {
    if (hub_ != nullptr) timer_ = event_new(base, -1, EV_PERSIST, &WatchStream::OnTick, this);
    const struct timeval tick = {0, kWatchTickMs * 1000};
    if (timer_ == nullptr || event_add(timer_, &tick) != 0) {
      out->Append("WATCHER_FAILED failed to add log watcher\r\n");
      return false;
    }
    watcher_ = hub_->Add(kinds);
    if (watcher_ == nullptr) {
      out->Append("WATCHER_TOO_MANY log watcher limit reached\r\n");
      return false;
    }
    out->Append("OK\r\n");
    return true;
  }

  // A tick's pass moves the lines; other passes (input, a write) only see
  // that the stream goes on.
  Pass Continue(ReplyBuffer* out, bool) override {
    if (tick_due_ && out->pending_bytes() < kWatchOutputBound) {
      std::string lines;
      hub_->Drain(watcher_.get(), &lines);
      if (!lines.empty()) out->Append(lines);
    }
    tick_due_ = false;
    return Pass::kLive;
  }

 private:
  static void OnTick(int, short, void* arg) {
    WatchStream* w = static_cast<WatchStream*>(arg);
    w->tick_due_ = true;
    w->conn_->Resume();   // may delete the connection, and this with it
  }

  WatchHub* const hub_;
  Connection* const conn_;
  event* timer_ = nullptr;
  std::shared_ptr<WatchHub::Watcher> watcher_;
  bool tick_due_ = false;
};

}  // namespace

std::unique_ptr<ConnectionStream> ConnectionStream::Start(const ProcessOutcome& outcome,
                                                          Worker* worker, Connection* conn,
                                                          ReplyBuffer* out) {
  if (outcome.stream == ProcessOutcome::Stream::kMetadump ||
      outcome.stream == ProcessOutcome::Stream::kMgdump) {
    const auto format = outcome.stream == ProcessOutcome::Stream::kMgdump ? MetadumpStream::Format::kMgdump
                        : outcome.stream_latest ? MetadumpStream::Format::kMetadumpWithFlags
                                                : MetadumpStream::Format::kMetadump;
    return std::make_unique<MetadumpPasses>(worker->store(), outcome.stream_arg, format,
                                            worker->config().max_output);
  }
  auto watch = std::make_unique<WatchStream>(worker->config().watch_hub, conn);
  const auto kinds = static_cast<uint32_t>(outcome.stream_arg);
  if (!watch->Attach(worker->base(), kinds, out)) return nullptr;
  return watch;
}

}  // namespace herdless
