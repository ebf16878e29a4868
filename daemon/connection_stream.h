// ConnectionStream: what a connection sends once a request turned it into a
// stream (ProcessOutcome::Stream), a pass at a time, within its output bound.
//
// MetadumpStream (`lru_crawler metadump`) dumps a few walk steps per pass,
// between other connections' turns; requests after it wait for its END.
// WatchStream (`watch`) turns the connection into a log stream for good: a
// timer moves its watcher's lines (daemon/watch_hub.h) into the output while
// little is unsent, so a watcher that does not read keeps at most that plus
// its hub buffer (the rest is skipped, never queued); its input is read (to
// see the client leave) and ignored, as memcached ignores it. Worker thread
// only.
#ifndef HERDLESS_DAEMON_CONNECTION_STREAM_H_
#define HERDLESS_DAEMON_CONNECTION_STREAM_H_

#include <cstdint>
#include <memory>

namespace herdless {

class Connection;
class ReplyBuffer;
class Worker;
struct ProcessOutcome;

class ConnectionStream {
 public:
  enum class Pass : uint8_t {
    kPaused,   // more to send: come back after the other connections' turn
    kEnded,    // done: the requests after it run
    kLive,     // a log stream: its own timer brings more; input is not commands
  };

  // The stream `outcome` asks for on `conn`. `watch` appends memcached's OK,
  // or its refusal to *out (then nullptr: the connection goes on with commands).
  static std::unique_ptr<ConnectionStream> Start(const ProcessOutcome& outcome, Worker* worker,
                                                 Connection* conn, ReplyBuffer* out);
  virtual ~ConnectionStream() = default;

  // One pass of the connection: moves what is ready into *out. `closing`:
  // the connection takes no more requests (a dump ends there, unfinished).
  virtual Pass Continue(ReplyBuffer* out, bool closing) = 0;
};

}  // namespace herdless

#endif  // HERDLESS_DAEMON_CONNECTION_STREAM_H_
