// The io_uring connection path (-o io=uring). One Ring per worker: a
// multishot receive per connection fills buffers from one provided-buffer
// ring, sends are queued as the connections write and submitted together with
// every other queued operation. The worker's libevent loop keeps its
// listeners, timers and notify eventfd, and watches the ring's descriptor;
// while completions keep coming a turn stays in the ring, one io_uring_enter a
// round that submits the round's sends and waits for the next completions,
// for all the worker's connections. Worker thread only. Built with liburing
// (HERDLESS_URING); without it Ring::Create says no and -o io=auto is epoll.
#ifndef HERDLESS_DAEMON_URING_TRANSPORT_H_
#define HERDLESS_DAEMON_URING_TRANSPORT_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "daemon/transport.h"

struct event;
struct event_base;
struct io_uring;
struct io_uring_buf_ring;
struct io_uring_params;
struct io_uring_sqe;
struct iovec;

namespace herdless {

struct RingSend;
struct RingSocket;

// The provided receive buffers' accounting (kept apart for its unit test):
// which buffer ids the kernel may fill and how many a connection holds.
class BufferPool {
 public:
  BufferPool(unsigned count, size_t size);
  unsigned count() const { return count_; }
  size_t size() const { return size_; }
  unsigned lent() const { return lent_; }   // filled and not yet copied out
  // The kernel filled buffer `id`: lent until Give(id).
  bool Take(unsigned id);
  // Buffer `id` is copied out: the kernel may fill it again.
  bool Give(unsigned id);
  bool plenty() const { return lent_ <= count_ / 2; }

 private:
  const unsigned count_;
  const size_t size_;
  unsigned lent_ = 0;
  std::vector<bool> out_;   // per id: lent
};

class Ring {
 public:
  static constexpr unsigned kEntries = 1024;        // submission queue
  static constexpr unsigned kBuffers = 64;          // provided receive buffers ...
  static constexpr size_t kBufferSize = 4096;       // ... of this size
  static constexpr int kIovecs = 128;               // iovecs in one send
  // A send carries what the socket can take at once and at most this much
  // more (SendBound). The socket is blocking (the ring waits for it), and
  // once the peer has half-closed (shutdown(SHUT_WR)) the kernel stops
  // waiting for room and finishes a send in an io-wq thread, completing it
  // only when all of it is in the socket: one send of the whole backlog
  // (megabytes) showed no progress until a slow but steady reader had read
  // it all, and stalled_client_timeout closed that reader. Bounded so, such
  // a send completes each time the client has read this much. A bound
  // without the socket's room cost a fast reader of 1 MB values a fifth to
  // a third of its throughput (a round through the worker each 256 KB, the
  // socket short of bytes meanwhile).
  static constexpr size_t kSendMax = 256 * 1024;
  // Such a send holds a kernel thread (io-wq's) while it waits, and without a
  // bound each half-closed client that never reads held one until
  // stalled_client_timeout: 100 of them made 100 threads. A ring has at most
  // this many; the sends beyond wait for one of them to complete or be
  // cancelled (the connection's close).
  static constexpr unsigned kSendWorkers = 16;
  // A connection's receive pauses while it holds this many filled buffers
  // (as a socket's window closes when its reader lags).
  static constexpr size_t kHeldMax = 4;
  // A turn stays in the ring while completions keep coming (see Turn): a
  // round that waits kQuietUs for nothing ends it, and so does kTurnUs of
  // rounds, so that the loop's other events wait no longer than that.
  static constexpr unsigned kQuietUs = 50;
  static constexpr uint64_t kTurnUs = 500;
  // A ring with many connections waits for up to kBatchMax completions a
  // round, but no longer than kBatchWaitUs once one is there (the kernel's
  // min_wait, 6.12 and later; elsewhere a round waits for one).
  static constexpr unsigned kBatchMax = 8;
  static constexpr unsigned kBatchWaitUs = 10;

  // The kernel's ring and its receive buffers, on any thread; nullptr (and
  // *error says what failed) where this kernel and sandbox allow none. Made
  // before the privilege drop, the ring's memory is not charged to the -u
  // user's RLIMIT_MEMLOCK (shared by every ring of that user). Survives fork (-d).
  static std::unique_ptr<Ring> Create(std::string* error);
  // Watches the ring from `base`, the worker's loop, before its first
  // transport; false (with *error) when libevent refuses.
  bool Attach(event_base* base, std::string* error);
  ~Ring();
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  // A connection's transport on this ring (takes the socket).
  std::unique_ptr<Transport> NewTransport(int fd);

  // For UringTransport.
  io_uring_sqe* Sqe();          // a free entry (submits first if the queue is full)
  void Schedule(RingSocket* s);        // notify its transport on this turn's dispatch
  void Changed();                      // entries queued outside a turn: submit soon
  void SendQueued() { ++sends_queued_; Changed(); }   // a send queued: a round waits beyond it
  void ReturnBuffer(unsigned id);      // copied out: the kernel may fill it again
  const char* Buffer(unsigned id) const;
  void Starved(RingSocket* s);         // out of buffers: re-arm once some return
  // Copies [offset, offset + length) of buffer `id` to the end of s's spill and returns the buffer.
  void Spill(RingSocket* s, unsigned id, size_t offset, size_t length);
  void Release(RingSocket* s);         // its transport is gone: free it after its last completion
  RingSend* TakeSend();                // a send's header and iovecs, lent while it is in flight
  void GiveSend(RingSend* send);
  BufferPool& pool() { return pool_; }

 private:
  Ring();
  int SetUp(io_uring_params* params);   // io_uring_queue_init_params's result
  unsigned Batch() const;
  static void OnCompletions(int fd, short what, void* arg);
  static void OnKick(int fd, short what, void* arg);
  void Reap();
  void Complete(RingSocket* s, unsigned kind, int res, unsigned flags);
  void Dispatch();
  void Submit();
  void RearmStarved();
  void Turn();

  io_uring* ring_ = nullptr;   // owned
  io_uring_buf_ring* buffers_ring_ = nullptr;
  char* buffers_ = nullptr;
  BufferPool pool_;
  event* ring_event_ = nullptr;
  event* kick_event_ = nullptr;
  bool kicked_ = false;
  bool in_turn_ = false;
  unsigned sends_queued_ = 0;   // sends queued since the last submit (most complete in it)
  unsigned connections_ = 0;   // transports on this ring
  unsigned min_wait_us_ = 0;   // kBatchWaitUs where the kernel has min_wait
  std::vector<RingSocket*> ready_;
  std::vector<RingSocket*> starved_;
  std::vector<RingSocket*> released_;
  // Sends' headers and iovecs, owned: as many as sends were ever in flight at
  // once, not one per connection.
  std::vector<RingSend*> sends_;
  std::vector<RingSend*> spare_sends_;
};

// Plain TCP or a unix socket on the worker's Ring (see Transport's contract).
class UringTransport : public Transport {
 public:
  UringTransport(int fd, Ring* ring);   // takes the socket
  ~UringTransport() override;
  UringTransport(const UringTransport&) = delete;
  UringTransport& operator=(const UringTransport&) = delete;

  bool Start(Owner* owner) override;
  Io Read(char* dest, size_t room, size_t* n) override;
  Io Write(ReplyBuffer* out, size_t* n) override;
  void Want(bool read, bool write) override;
  void DiscardUnread() override;
  void Abandon(ReplyBuffer* out) override;   // a send in flight: its RingSocket keeps *out
  int fd() const override { return fd_; }

  void Notify();   // the ring's dispatch: bytes, an end or a completed send

 private:
  void ArmReceive();
  bool Pending() const;   // bytes, an end or an error for Read
  size_t SendBound(size_t pending) const;   // the bytes the next send may carry

  const int fd_;
  Ring* const ring_;
  RingSocket* const s_;
  Owner* owner_ = nullptr;
};

}  // namespace herdless

#endif  // HERDLESS_DAEMON_URING_TRANSPORT_H_
