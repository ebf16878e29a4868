// TLS transport (-Z), on OpenSSL, as memcached 1.6.18's tls.c offers it.
//
// TlsContext: the process's server context, built from TlsSettings. Reload()
// (refresh_certs) builds a whole new context from the files and swaps it in
// only when every file loaded and the key matches the certificate: a bad new
// file leaves the old certificate serving. New connections take the current
// context; open ones keep the one they started with. Thread-safe.
//
// TlsSession: one connection's SSL over its non-blocking socket, used only on
// that connection's worker thread. The handshake is driven by the worker's
// events (never a blocking call); writes gather the connection's reply
// iovecs into one bounded buffer (ssl_wbuf_size) per SSL_write.
#ifndef HERDLESS_DAEMON_TLS_H_
#define HERDLESS_DAEMON_TLS_H_

#include <sys/types.h>
#include <sys/uio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "protocol/server_info.h"

typedef struct ssl_st SSL;
typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_session_st SSL_SESSION;

namespace herdless {

// The OpenSSL verify flags memcached stores (and `stats settings` prints) for
// ssl_verify_mode 0..3: none, peer, peer|fail_if_no_peer_cert, and |client_once.
inline int SslVerifyFlags(int mode) {
  static constexpr int kFlags[] = {0, 1, 3, 7};
  return mode >= 0 && mode <= 3 ? kFlags[mode] : 0;
}

class TlsSession;

class TlsContext {
 public:
  // Null with memcached's message in *error when the settings or files are
  // unusable (no certificate, unreadable key, key not matching, bad ciphers).
  static std::unique_ptr<TlsContext> Create(const TlsSettings& settings, std::string* error);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  // refresh_certs. False with memcached's error text; the old context stays.
  bool Reload(std::string* error);

  // A session for an accepted socket (nullptr when OpenSSL is out of memory).
  std::unique_ptr<TlsSession> NewSession(int fd);

  uint64_t new_sessions() const { return new_sessions_.load(std::memory_order_relaxed); }
  int64_t last_refresh_unix() const { return last_refresh_unix_.load(std::memory_order_relaxed); }
  const TlsSettings& settings() const { return settings_; }

 private:
  explicit TlsContext(const TlsSettings& settings) : settings_(settings) {}
  SSL_CTX* Build(std::string* error) const;
  static int OnNewSession(SSL* ssl, SSL_SESSION* session);

  const TlsSettings settings_;
  std::mutex mutex_;
  SSL_CTX* ctx_ = nullptr;   // guarded by mutex_; each SSL holds its own reference
  std::atomic<uint64_t> new_sessions_{0};
  std::atomic<int64_t> last_refresh_unix_{0};
};

class TlsSession {
 public:
  enum class Status {
    kOk,          // done, or bytes moved
    kWantRead,    // call again when the socket is readable
    kWantWrite,   // call again when the socket is writable
    kClosed,      // the peer closed (close_notify or EOF)
    kError,       // protocol or socket error: close the connection
  };

  TlsSession(SSL* ssl, uint32_t write_buffer_size);
  ~TlsSession();   // frees the SSL (a completed session first sends close_notify)
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;

  // Server side of the handshake; kOk once established.
  Status Handshake();
  bool established() const { return established_; }
  // OpenSSL reported a protocol error (SSL_ERROR_SSL) on the established session.
  bool protocol_error() const { return protocol_error_; }

  // Up to `len` decrypted bytes into `buf`: >0 bytes read, or 0 with *status.
  size_t Read(char* buf, size_t len, Status* status);
  // Encrypts and sends from `iov` (at most write_buffer_size bytes, gathered
  // into one record batch); >0 bytes of plaintext consumed, or 0 with *status.
  // After kWantRead/kWantWrite the next call must offer at least the same
  // bytes again (the reply queue only grows at its end, so it does).
  size_t Write(const struct iovec* iov, int count, Status* status);
  // Decrypted bytes buffered inside OpenSSL that no socket event will announce.
  bool HasBufferedInput() const;

 private:
  Status Classify(int ret);

  SSL* const ssl_;
  const uint32_t write_buffer_size_;
  bool established_ = false;
  bool protocol_error_ = false;
};

}  // namespace herdless

#endif  // HERDLESS_DAEMON_TLS_H_
