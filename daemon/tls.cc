#include "daemon/tls.h"

#include "config.h"

#include <cerrno>
#include <cstring>
#include <ctime>

#ifdef HERDLESS_TLS
#include <openssl/err.h>
#include <openssl/ssl.h>
#endif

namespace herdless {

#ifdef HERDLESS_TLS

namespace {

constexpr char kSessionIdContext[] = "memcached";   // memcached's SESSION_ID_CONTEXT

int ProtocolVersion(int min_version) {
  switch (min_version) {
    case 0: return TLS1_VERSION;
    case 1: return TLS1_1_VERSION;
    case 3: return TLS1_3_VERSION;
    default: return TLS1_2_VERSION;
  }
}

// Empties this thread's OpenSSL error queue. ERR_clear_error() frees 32 string
// slots even when the queue is empty (most of a small request's OpenSSL cost
// outside the cipher, counted with callgrind), so look first.
void ClearErrorQueue() {
  if (ERR_peek_error() != 0) ERR_clear_error();
}

// The oldest error OpenSSL queued for this thread (then the queue is empty).
std::string TakeSslError() {
  char text[256] = "";
  unsigned long err = ERR_get_error();
  if (err != 0) ERR_error_string_n(err, text, sizeof(text));
  ERR_clear_error();
  return text;
}

// The write buffer shared by every TLS connection of one worker thread.
char* WriteBuffer(size_t size) {
  thread_local std::unique_ptr<char[]> buffer;
  thread_local size_t capacity = 0;
  if (capacity < size) {
    buffer.reset(new char[size]);
    capacity = size;
  }
  return buffer.get();
}

}  // namespace

std::unique_ptr<TlsContext> TlsContext::Create(const TlsSettings& settings, std::string* error) {
  if (settings.chain_cert.empty()) {
    *error = "Error loading the certificate chain: -Z needs -o ssl_chain_cert=<file>";
    return nullptr;
  }
  std::unique_ptr<TlsContext> context(new TlsContext(settings));
  context->ctx_ = context->Build(error);
  if (context->ctx_ == nullptr) return nullptr;
  context->last_refresh_unix_.store(std::time(nullptr), std::memory_order_relaxed);
  return context;
}

TlsContext::~TlsContext() {
  if (ctx_ != nullptr) SSL_CTX_free(ctx_);
}

// memcached's ssl_init() and load_server_certificates(), with its messages.
SSL_CTX* TlsContext::Build(std::string* error) const {
  const TlsSettings& s = settings_;
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) {
    *error = "Error creating the TLS context: " + TakeSslError();
    return nullptr;
  }
  SSL_CTX_set_min_proto_version(ctx, ProtocolVersion(s.min_version));
  const std::string& key = s.key.empty() ? s.chain_cert : s.key;
  bool ok = false;
  if (!SSL_CTX_use_certificate_chain_file(ctx, s.chain_cert.c_str())) {
    *error = "Error loading the certificate chain: " + s.chain_cert + " : " + TakeSslError();
  } else if (!SSL_CTX_use_PrivateKey_file(ctx, key.c_str(), s.keyformat)) {
    *error = "Error loading the key: " + key + " : " + TakeSslError();
  } else if (!SSL_CTX_check_private_key(ctx)) {
    *error = "Error validating the certificate: " + TakeSslError();
  } else if (!s.ca_cert.empty() && !SSL_CTX_load_verify_locations(ctx, s.ca_cert.c_str(), nullptr)) {
    *error = "Error loading the CA certificate: " + s.ca_cert + " : " + TakeSslError();
  } else if (!s.ciphers.empty() && !SSL_CTX_set_cipher_list(ctx, s.ciphers.c_str())) {
    *error = "Error setting the provided cipher(s): " + s.ciphers;
    ERR_clear_error();
  } else {
    ok = true;
  }
  if (!ok) {
    SSL_CTX_free(ctx);
    return nullptr;
  }
  if (!s.ca_cert.empty()) SSL_CTX_set_client_CA_list(ctx, SSL_load_client_CA_file(s.ca_cert.c_str()));
  SSL_CTX_set_verify(ctx, SslVerifyFlags(s.verify_mode), nullptr);
  if (s.session_cache) {
    SSL_CTX_sess_set_new_cb(ctx, &TlsContext::OnNewSession);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_SERVER);
    SSL_CTX_set_session_id_context(ctx, reinterpret_cast<const unsigned char*>(kSessionIdContext),
                                   sizeof(kSessionIdContext) - 1);
  } else {
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  }
  SSL_CTX_set_app_data(ctx, const_cast<TlsContext*>(this));
  uint64_t options = SSL_OP_NO_RENEGOTIATION;
#ifdef SSL_OP_IGNORE_UNEXPECTED_EOF
  options |= SSL_OP_IGNORE_UNEXPECTED_EOF;   // a peer that just closes is a close, not an error
#endif
#ifdef SSL_OP_ENABLE_KTLS
  if (s.kernel_tls) options |= SSL_OP_ENABLE_KTLS;
#endif
  SSL_CTX_set_options(ctx, options);
  // Idle connections give their record buffers back (as memcached); writes
  // may finish record by record, from a buffer that moves between retries.
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ENABLE_PARTIAL_WRITE |
                            SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  return ctx;
}

int TlsContext::OnNewSession(SSL* ssl, SSL_SESSION*) {
  auto* self = static_cast<TlsContext*>(SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl)));
  if (self != nullptr) self->new_sessions_.fetch_add(1, std::memory_order_relaxed);
  return 0;   // OpenSSL keeps the session in its own cache
}

bool TlsContext::Reload(std::string* error) {
  SSL_CTX* fresh = Build(error);
  if (fresh == nullptr) return false;
  SSL_CTX* old;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    old = ctx_;
    ctx_ = fresh;
  }
  SSL_CTX_free(old);   // sessions still using it hold their own reference
  last_refresh_unix_.store(std::time(nullptr), std::memory_order_relaxed);
  return true;
}

std::unique_ptr<TlsSession> TlsContext::NewSession(int fd) {
  SSL* ssl;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ssl = SSL_new(ctx_);
  }
  if (ssl == nullptr) {
    ERR_clear_error();
    return nullptr;
  }
  if (SSL_set_fd(ssl, fd) != 1) {
    SSL_free(ssl);
    ERR_clear_error();
    return nullptr;
  }
  SSL_set_accept_state(ssl);
  return std::make_unique<TlsSession>(ssl, settings_.wbuf_size);
}

TlsSession::TlsSession(SSL* ssl, uint32_t write_buffer_size)
    : ssl_(ssl), write_buffer_size_(write_buffer_size < 1024 ? 1024 : write_buffer_size) {}

TlsSession::~TlsSession() {
  if (established_) {
    SSL_shutdown(ssl_);   // one try at close_notify; the socket is non-blocking
  }
  SSL_free(ssl_);
  ERR_clear_error();
}

TlsSession::Status TlsSession::Classify(int ret) {
  const int saved_errno = errno;
  const int err = SSL_get_error(ssl_, ret);
  ClearErrorQueue();   // a stale error must not mislead the next call on this thread
  switch (err) {
    case SSL_ERROR_WANT_READ:
      return Status::kWantRead;
    case SSL_ERROR_WANT_WRITE:
      return Status::kWantWrite;
    case SSL_ERROR_ZERO_RETURN:
      return Status::kClosed;
    case SSL_ERROR_SYSCALL:
      if (saved_errno == EAGAIN || saved_errno == EWOULDBLOCK || saved_errno == EINTR) {
        return Status::kWantRead;
      }
      return saved_errno == 0 ? Status::kClosed : Status::kError;
    default:
      protocol_error_ |= err == SSL_ERROR_SSL && established_;
      return Status::kError;
  }
}

TlsSession::Status TlsSession::Handshake() {
  ClearErrorQueue();
  errno = 0;
  const int ret = SSL_do_handshake(ssl_);
  if (ret == 1) {
    established_ = true;
    return Status::kOk;
  }
  const Status status = Classify(ret);
  // A peer that closes mid-handshake never finished it: that is a failure.
  return status == Status::kClosed ? Status::kError : status;
}

size_t TlsSession::Read(char* buf, size_t len, Status* status) {
  const int want = len > INT32_MAX ? INT32_MAX : static_cast<int>(len);
  ClearErrorQueue();
  errno = 0;
  const int ret = SSL_read(ssl_, buf, want);
  if (ret > 0) return static_cast<size_t>(ret);
  *status = Classify(ret);
  return 0;
}

size_t TlsSession::Write(const struct iovec* iov, int count, Status* status) {
  const size_t cap = write_buffer_size_;
  const char* data;
  size_t len;
  if (count == 1 || iov[0].iov_len >= cap) {
    // One segment (a large value, or a lone reply): no copy needed.
    data = static_cast<const char*>(iov[0].iov_base);
    len = iov[0].iov_len < cap ? iov[0].iov_len : cap;
  } else {
    char* buffer = WriteBuffer(cap);
    len = 0;
    for (int i = 0; i < count && len < cap; ++i) {
      const size_t take = iov[i].iov_len < cap - len ? iov[i].iov_len : cap - len;
      std::memcpy(buffer + len, iov[i].iov_base, take);
      len += take;
    }
    data = buffer;
  }
  ClearErrorQueue();
  errno = 0;
  const int ret = SSL_write(ssl_, data, static_cast<int>(len));
  if (ret > 0) return static_cast<size_t>(ret);
  *status = Classify(ret);
  return 0;
}

bool TlsSession::HasBufferedInput() const { return SSL_pending(ssl_) > 0; }

#else   // built with --disable-tls: options refuse -Z, so none of this runs.

std::unique_ptr<TlsContext> TlsContext::Create(const TlsSettings&, std::string* error) {
  *error = "This server is not built with TLS support.";
  return nullptr;
}
TlsContext::~TlsContext() = default;
SSL_CTX* TlsContext::Build(std::string* error) const {
  *error = "This server is not built with TLS support.";
  return nullptr;
}
int TlsContext::OnNewSession(SSL*, SSL_SESSION*) { return 0; }
bool TlsContext::Reload(std::string* error) { return Build(error) != nullptr; }
std::unique_ptr<TlsSession> TlsContext::NewSession(int) { return nullptr; }
TlsSession::TlsSession(SSL* ssl, uint32_t size) : ssl_(ssl), write_buffer_size_(size) {}
TlsSession::~TlsSession() = default;
TlsSession::Status TlsSession::Classify(int) { return Status::kError; }
TlsSession::Status TlsSession::Handshake() { return Status::kError; }
size_t TlsSession::Read(char*, size_t, Status* status) {
  *status = Status::kError;
  return 0;
}
size_t TlsSession::Write(const struct iovec*, int, Status* status) {
  *status = Status::kError;
  return 0;
}
bool TlsSession::HasBufferedInput() const { return false; }

#endif  // HERDLESS_TLS

}  // namespace herdless
