#include "daemon/service_notify.h"

#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "daemon/log.h"

namespace herdless {

namespace {

// One datagram of "KEY=value" lines to $NOTIFY_SOCKET: a path, or "@name" for
// an abstract socket (systemd's sd_notify(3) protocol).
void Send(const std::string& message) {
  const char* path = std::getenv("NOTIFY_SOCKET");
  if (path == nullptr || (path[0] != '/' && path[0] != '@')) return;
  struct sockaddr_un addr;
  std::memset(&addr, 0, sizeof(addr));
  addr.sun_family = AF_UNIX;
  const size_t len = std::strlen(path);
  if (len < 2 || len >= sizeof(addr.sun_path)) {
    Log(LogLevel::kWarning, "NOTIFY_SOCKET is not a usable unix socket address: %s", path);
    return;
  }
  std::memcpy(addr.sun_path, path, len);
  if (addr.sun_path[0] == '@') addr.sun_path[0] = '\0';
  const socklen_t addr_len = static_cast<socklen_t>(offsetof(struct sockaddr_un, sun_path) + len);
  // MAINPID: after -d the daemon is not the process systemd started.
  const std::string text = message + "\nMAINPID=" + std::to_string(getpid()) + "\n";
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || sendto(fd, text.data(), text.size(), MSG_NOSIGNAL,
                       reinterpret_cast<struct sockaddr*>(&addr), addr_len) < 0) {
    Log(LogLevel::kWarning, "cannot notify %s: %s", path, std::strerror(errno));
  }
  if (fd >= 0) close(fd);
}

}  // namespace

void NotifyReady(const std::string& status) { Send("READY=1\nSTATUS=" + status); }

void NotifyReloading() { Send("RELOADING=1"); }

void NotifyStopping(const std::string& status) { Send("STOPPING=1\nSTATUS=" + status); }

}  // namespace herdless
