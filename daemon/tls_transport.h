// TlsTransport: a connection from a -Z listener. It first drives the server
// side of the TLS handshake from the socket's events (bounded by the
// handshake timeout, which the worker's sweep enforces through
// handshaking()), then moves the connection's bytes through its TlsSession
// (daemon/tls.h): SSL_read, and writes gathered into one bounded buffer per
// SSL_write rather than sendmsg's iovecs. Either may need the socket the
// other way round (a read that waits for writability, a write that waits
// for readability); Want() adds that wait to the connection's own.
#ifndef HERDLESS_DAEMON_TLS_TRANSPORT_H_
#define HERDLESS_DAEMON_TLS_TRANSPORT_H_

#include <memory>

#include "daemon/tls.h"
#include "daemon/transport.h"

namespace herdless {

class TlsTransport final : public SocketTransport {
 public:
  // Takes the socket and its session (made for it by TlsContext::NewSession).
  TlsTransport(int fd, event_base* base, std::unique_ptr<TlsSession> session);
  ~TlsTransport() override;   // the session's close_notify goes out before the close

  Io Read(char* dest, size_t room, size_t* n) override;
  Io Write(ReplyBuffer* out, size_t* n) override;
  void Want(bool read, bool write) override;
  bool handshaking() const override { return !session_->established(); }
  bool protocol_error() const override { return session_->protocol_error(); }

 private:
  void OnSocketReadable() override;
  void OnSocketWritable() override;
  void ContinueHandshake();   // may delete this (through Owner)

  std::unique_ptr<TlsSession> session_;
  bool read_wants_write_ = false;   // SSL_read needs the socket writable first
  bool write_wants_read_ = false;   // SSL_write needs the socket readable first
  bool peer_closed_ = false;        // Read saw the end: no read is wanted for a write
};

}  // namespace herdless

#endif  // HERDLESS_DAEMON_TLS_TRANSPORT_H_
