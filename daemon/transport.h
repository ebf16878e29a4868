// Transport: how one connection's bytes cross its socket. The connection
// parses, executes, parks and streams; its transport only moves bytes and
// tells it when moving more may succeed. Used on the connection's worker
// thread only.
//
// The connection drives it with four calls: Read (bytes that arrived, into
// the connection's input buffer), Write (the front of its reply buffer, which
// the transport consumes as the bytes go out), Want (what the connection
// waits for now) and DiscardUnread (shutdown); as it goes away, Abandon
// hands over the replies a send may still read. The transport calls back
// through Owner when the socket is ready. SocketTransport is plain TCP or a
// unix socket, ready-driven by the worker's libevent loop (read(2),
// sendmsg(2) with many iovecs); TlsTransport (daemon/tls_transport.h) first
// drives its handshake, then moves bytes through SSL_read and SSL_write.
//
// The calls are shaped so that a completion-driven transport fits without a
// change above them: made by the worker with its ring (as SocketTransport is
// made with its libevent loop), an io_uring transport's Read copies out of
// the provided buffers its multishot receive filled; its Write consumes (and
// reports in *n) what its completed sends took, then queues a send of the
// rest for the worker's one submission per loop turn (kAgain until it
// completes); its completions call Owner.
#ifndef HERDLESS_DAEMON_TRANSPORT_H_
#define HERDLESS_DAEMON_TRANSPORT_H_

#include <cstddef>
#include <cstdint>

struct event;
struct event_base;

namespace herdless {

class ReplyBuffer;

class Transport {
 public:
  enum class Io : uint8_t {
    kDone,    // Read: bytes arrived; Write: the reply buffer is empty
    kAgain,   // nothing more now: Owner is called when it may go on
    kEof,     // Read: the peer closed its side
    kError,   // the connection is broken: close it
  };

  // The connection's side, called on the worker thread.
  class Owner {
   public:
    virtual void OnReadable() = 0;          // Read may find bytes
    virtual void OnWritable() = 0;          // Write may send more
    virtual void OnEstablished() = 0;       // a handshake finished (then OnReadable follows)
    virtual void OnHandshakeFailed() = 0;   // a handshake failed: close

   protected:
    ~Owner() = default;
  };

  virtual ~Transport() = default;   // closes the socket

  // Registers with the worker's loop and waits to read. False: close it.
  virtual bool Start(Owner* owner) = 0;
  // Up to `room` bytes into `dest`: kDone with *n > 0, or kAgain, kEof, kError.
  virtual Io Read(char* dest, size_t room, size_t* n) = 0;
  // Sends from the front of *out and consumes what went out (*n bytes in
  // all): kDone once *out is empty, kAgain when the rest must wait, kError.
  virtual Io Write(ReplyBuffer* out, size_t* n) = 0;
  // What the connection waits for now (the transport may add what it needs
  // itself, such as a TLS read that waits for the socket to drain).
  virtual void Want(bool read, bool write) = 0;
  // Shutdown: reads what the socket still holds, so that closing it sends
  // no reset (which can destroy replies the client has not read yet).
  virtual void DiscardUnread() = 0;
  // The connection is going away with *out unsent. A transport whose send
  // may still be reading *out's memory (a completion-driven one: the kernel
  // reads it until that send completes, after the close) takes those bytes,
  // leaving *out empty, and frees them once the send is over. A ready-driven
  // one takes nothing: its writes ended before Write returned.
  virtual void Abandon(ReplyBuffer* /*out*/) {}
  // True while a handshake is under way (nothing is read or written yet).
  virtual bool handshaking() const { return false; }
  // True once the peer broke the TLS protocol after the handshake (memcached
  // 1.6.45's ssl_proto_errors).
  virtual bool protocol_error() const { return false; }
  // The socket (it names the connection in logs and `stats conns`).
  virtual int fd() const = 0;
};

// Plain TCP or a unix socket, on the worker's libevent loop `base`.
class SocketTransport : public Transport {
 public:
  SocketTransport(int fd, event_base* base) : fd_(fd), base_(base) {}   // takes the socket
  ~SocketTransport() override;
  SocketTransport(const SocketTransport&) = delete;
  SocketTransport& operator=(const SocketTransport&) = delete;

  bool Start(Owner* owner) override;
  Io Read(char* dest, size_t room, size_t* n) override;
  Io Write(ReplyBuffer* out, size_t* n) override;
  void Want(bool read, bool write) override {
    SetWriting(write);
    SetReading(read);
  }
  void DiscardUnread() override;
  int fd() const override { return fd_; }

 protected:
  // The socket's readiness; TlsTransport routes it through its handshake.
  virtual void OnSocketReadable() { owner_->OnReadable(); }
  virtual void OnSocketWritable() { owner_->OnWritable(); }
  void SetReading(bool on) {
    if (on != reading_) ChangeReading(on);
  }
  void SetWriting(bool on) {
    if (on != writing_) ChangeWriting(on);
  }
  bool reading() const { return reading_; }
  void ActivateRead();   // a read event now, whatever the socket says

  const int fd_;
  event_base* const base_;
  Owner* owner_ = nullptr;

 private:
  static void OnReadEvent(int fd, short what, void* arg);
  static void OnWriteEvent(int fd, short what, void* arg);
  void ChangeReading(bool on);
  void ChangeWriting(bool on);

  event* read_event_ = nullptr;
  event* write_event_ = nullptr;
  bool reading_ = false;
  bool writing_ = false;
};

}  // namespace herdless

#endif  // HERDLESS_DAEMON_TRANSPORT_H_
