// MetricsServer: -o metrics=HOST:PORT, the Prometheus endpoint. Bind() opens
// the listening socket (before privileges are dropped, so a bad address stops
// the start); Start() runs libevent's HTTP server on a thread of its own,
// answering `GET /metrics` (and `/`) with protocol/metrics.h's text and 404
// for anything else, so a slow scraper never holds up a worker. Stop() (and
// the destructor) ends the thread. A scrape takes the locks a `stats` takes.
#ifndef HERDLESS_DAEMON_METRICS_SERVER_H_
#define HERDLESS_DAEMON_METRICS_SERVER_H_

#include <string>
#include <string_view>
#include <thread>

struct event_base;
struct evhttp;
struct evhttp_request;

namespace herdless {

class ItemStore;
class ServerInfo;

// -o metrics's value, "PORT", "HOST:PORT" or "[IPv6]:PORT", as host and port
// (host 127.0.0.1 when only a port is given). False if it is not that.
bool ParseMetricsAddress(std::string_view value, std::string* host, int* port);

class MetricsServer {
 public:
  MetricsServer() = default;
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // Listens on `address` (-o metrics's value). False with *error.
  bool Bind(const std::string& address, std::string* error);
  // Serves from now on; `store` and `server` must outlive Stop(). False with
  // *error if libevent's HTTP server could not be set up.
  bool Start(ItemStore* store, ServerInfo* server, std::string* error);
  void Stop();

 private:
  static void OnRequest(evhttp_request* req, void* arg);
  static void OnStop(int fd, short what, void* arg);

  int listen_fd_ = -1;
  int stop_fd_ = -1;   // eventfd: Stop() wakes the loop
  std::string address_;
  ItemStore* store_ = nullptr;
  ServerInfo* server_ = nullptr;
  event_base* base_ = nullptr;
  evhttp* http_ = nullptr;
  std::thread thread_;
};

}  // namespace herdless

#endif  // HERDLESS_DAEMON_METRICS_SERVER_H_
