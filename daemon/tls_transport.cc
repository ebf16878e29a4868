#include "daemon/tls_transport.h"

#include "protocol/reply.h"

namespace herdless {

namespace {

constexpr int kTlsIovecs = 64;   // enough to fill one ssl_wbuf_size write

}  // namespace

TlsTransport::TlsTransport(int fd, event_base* base, std::unique_ptr<TlsSession> session)
    : SocketTransport(fd, base), session_(std::move(session)) {}

TlsTransport::~TlsTransport() { session_.reset(); }

void TlsTransport::OnSocketReadable() {
  if (handshaking()) {
    ContinueHandshake();
    return;
  }
  owner_->OnReadable();
}

void TlsTransport::OnSocketWritable() {
  if (handshaking() || read_wants_write_) {
    OnSocketReadable();   // the handshake or a read waited for the socket to drain
    return;
  }
  owner_->OnWritable();
}

// The server side of a TLS handshake, one step per socket event. Failures and
// peers that hang up mid-handshake count as ssl_handshake_errors (the owner).
void TlsTransport::ContinueHandshake() {
  switch (session_->Handshake()) {
    case TlsSession::Status::kOk:
      owner_->OnEstablished();
      SetWriting(false);
      SetReading(true);
      // The first request may already wait in the socket (or in OpenSSL).
      owner_->OnReadable();
      return;
    case TlsSession::Status::kWantRead:
      SetWriting(false);
      SetReading(true);
      return;
    case TlsSession::Status::kWantWrite:
      SetWriting(true);
      return;
    case TlsSession::Status::kClosed:
    case TlsSession::Status::kError:
      break;
  }
  owner_->OnHandshakeFailed();
}

Transport::Io TlsTransport::Read(char* dest, size_t room, size_t* n) {
  TlsSession::Status status = TlsSession::Status::kOk;
  *n = session_->Read(dest, room, &status);
  read_wants_write_ = false;
  if (*n > 0) return Io::kDone;
  switch (status) {
    case TlsSession::Status::kWantWrite:
      read_wants_write_ = true;   // Want() waits for EV_WRITE
      return Io::kAgain;
    case TlsSession::Status::kOk:
    case TlsSession::Status::kWantRead:
      return Io::kAgain;
    case TlsSession::Status::kClosed:
      peer_closed_ = true;
      return Io::kEof;
    case TlsSession::Status::kError:
      break;
  }
  return Io::kError;
}

// TLS writes cannot take iovecs: TlsSession gathers them into one bounded
// buffer per SSL_write (or sends one large segment in place).
Transport::Io TlsTransport::Write(ReplyBuffer* out, size_t* n) {
  struct iovec iov[kTlsIovecs];
  *n = 0;
  write_wants_read_ = false;
  while (!out->empty()) {
    const int count = out->FillIovecs(iov, kTlsIovecs);
    TlsSession::Status status = TlsSession::Status::kOk;
    const size_t sent = session_->Write(iov, count, &status);
    if (sent > 0) {
      out->Consume(sent);
      *n += sent;
      continue;
    }
    if (status == TlsSession::Status::kWantWrite) return Io::kAgain;   // EV_WRITE stays on
    if (status == TlsSession::Status::kWantRead) {
      write_wants_read_ = true;   // Want() keeps EV_READ on
      return Io::kAgain;
    }
    return Io::kError;
  }
  return Io::kDone;
}

void TlsTransport::Want(bool read, bool write) {
  SocketTransport::Want(read || (write_wants_read_ && !peer_closed_), write || read_wants_write_);
  if (reading() && !peer_closed_ && session_->HasBufferedInput()) {
    // Decrypted bytes wait inside OpenSSL: no socket event will say so.
    ActivateRead();
  }
}

}  // namespace herdless
