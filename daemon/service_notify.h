// ServiceNotify: tells a supervisor where the daemon is in its life, with
// systemd's notification protocol (a Type=notify service): ready once the
// listeners are bound and the workers run, reloading and ready again around
// SIGHUP, stopping at shutdown. Each call sends one datagram to the unix socket
// named by $NOTIFY_SOCKET; without it (not started by systemd) it does nothing.
// The protocol is written here rather than taken from libsystemd's sd_notify:
// linking libsystemd brings six more shared libraries (gcrypt, lz4, zstd, lzma,
// cap, gpg-error) and 1 MB of idle RSS for these few datagrams.
#ifndef HERDLESS_DAEMON_SERVICE_NOTIFY_H_
#define HERDLESS_DAEMON_SERVICE_NOTIFY_H_

#include <string>

namespace herdless {

void NotifyReady(const std::string& status);
void NotifyReloading();
void NotifyStopping(const std::string& status);

}  // namespace herdless

#endif  // HERDLESS_DAEMON_SERVICE_NOTIFY_H_
