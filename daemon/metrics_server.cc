#include "daemon/metrics_server.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "daemon/log.h"
#include "daemon/option_table.h"
#include "protocol/metrics.h"

namespace herdless {

namespace {

constexpr int kRequestTimeoutS = 10;        // a scraper that stalls is dropped
constexpr size_t kMaxRequestHeaders = 8192; // a scrape's request is a few hundred bytes

}  // namespace

bool ParseMetricsAddress(std::string_view value, std::string* host, int* port) {
  std::string_view host_text = "127.0.0.1";
  std::string_view port_text = value;
  if (!value.empty() && value.front() == '[') {
    const size_t close = value.find(']');
    if (close == std::string_view::npos || value.substr(close + 1, 1) != ":") return false;
    host_text = value.substr(1, close - 1);
    port_text = value.substr(close + 2);
  } else if (const size_t colon = value.rfind(':'); colon != std::string_view::npos) {
    host_text = value.substr(0, colon);
    port_text = value.substr(colon + 1);
    if (host_text.find(':') != std::string_view::npos) return false;   // IPv6 needs [ ]
  }
  if (host_text.empty()) return false;
  *host = std::string(host_text);
  return ParseWholeNumber(port_text, 1, 65535, port);
}

MetricsServer::~MetricsServer() {
  Stop();
  if (listen_fd_ >= 0) close(listen_fd_);
}

bool MetricsServer::Bind(const std::string& address, std::string* error) {
  std::string host;
  int port = 0;
  if (!ParseMetricsAddress(address, &host, &port)) {
    *error = "invalid -o metrics address " + Quoted(address);
    return false;
  }
  struct addrinfo hints;
  std::memset(&hints, 0, sizeof(hints));
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  struct addrinfo* found = nullptr;
  const std::string port_text = std::to_string(port);
  if (const int rc = getaddrinfo(host.c_str(), port_text.c_str(), &hints, &found); rc != 0) {
    *error = "metrics: getaddrinfo(" + host + "): " + gai_strerror(rc);
    return false;
  }
  int last_errno = 0;
  for (struct addrinfo* ai = found; ai != nullptr && listen_fd_ < 0; ai = ai->ai_next) {
    const int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 64) == 0) {
      listen_fd_ = fd;
    } else {
      last_errno = errno;
      close(fd);
    }
  }
  freeaddrinfo(found);
  if (listen_fd_ < 0) {
    *error = "metrics: failed to listen on " + address + ": " + std::strerror(last_errno);
    return false;
  }
  address_ = address;
  return true;
}

bool MetricsServer::Start(ItemStore* store, ServerInfo* server, std::string* error) {
  store_ = store;
  server_ = server;
  base_ = event_base_new();
  http_ = base_ != nullptr ? evhttp_new(base_) : nullptr;
  stop_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  event* stop = base_ != nullptr && stop_fd_ >= 0
                    ? event_new(base_, stop_fd_, EV_READ, &MetricsServer::OnStop, this)
                    : nullptr;
  if (http_ == nullptr || stop == nullptr || event_add(stop, nullptr) != 0 ||
      evhttp_accept_socket(http_, listen_fd_) != 0) {
    *error = "metrics: could not start libevent's HTTP server";
    if (stop != nullptr) event_free(stop);
    return false;
  }
  listen_fd_ = -1;   // evhttp closes it
  evhttp_set_allowed_methods(http_, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD);
  evhttp_set_timeout(http_, kRequestTimeoutS);
  evhttp_set_max_headers_size(http_, kMaxRequestHeaders);
  evhttp_set_max_body_size(http_, 0);
  evhttp_set_gencb(http_, &MetricsServer::OnRequest, this);
  Log(LogLevel::kNotice, "metrics: serving http://%s/metrics", address_.c_str());
  // Signals stay with the main loop, as for the workers.
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &previous);
  thread_ = std::thread([this, stop] {
    event_base_dispatch(base_);
    event_free(stop);
  });
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return true;
}

void MetricsServer::Stop() {
  if (thread_.joinable()) {
    const uint64_t one = 1;
    if (write(stop_fd_, &one, sizeof(one)) != sizeof(one)) {
      Log(LogLevel::kWarning, "metrics: could not wake the HTTP thread: %s", std::strerror(errno));
    }
    thread_.join();
  }
  if (http_ != nullptr) evhttp_free(http_);
  if (base_ != nullptr) event_base_free(base_);
  if (stop_fd_ >= 0) close(stop_fd_);
  http_ = nullptr;
  base_ = nullptr;
  stop_fd_ = -1;
}

void MetricsServer::OnStop(int, short, void* arg) {
  event_base_loopbreak(static_cast<MetricsServer*>(arg)->base_);
}

void MetricsServer::OnRequest(evhttp_request* req, void* arg) {
  auto* self = static_cast<MetricsServer*>(arg);
  const char* path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
  const std::string_view p = path != nullptr ? path : "";
  if (p != "/metrics" && p != "/") {
    evhttp_send_error(req, HTTP_NOTFOUND, "only /metrics is served here");
    return;
  }
  std::string text;
  WriteMetrics(self->store_, self->server_, &text);
  evkeyvalq* headers = evhttp_request_get_output_headers(req);
  evhttp_add_header(headers, "Content-Type", kMetricsContentType);
  evbuffer* body = evbuffer_new();
  evbuffer_add(body, text.data(), text.size());
  evhttp_send_reply(req, HTTP_OK, "OK", body);
  evbuffer_free(body);
}

}  // namespace herdless
