#include "daemon/uring_transport.h"

#include "config.h"

#include <event2/event.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "protocol/reply.h"

#ifdef HERDLESS_URING
#include <liburing.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>

#include <csignal>
#endif

namespace herdless {

BufferPool::BufferPool(unsigned count, size_t size) : count_(count), size_(size), out_(count) {}

bool BufferPool::Take(unsigned id) {
  if (id >= count_ || out_[id]) return false;
  out_[id] = true;
  ++lent_;
  return true;
}

bool BufferPool::Give(unsigned id) {
  if (id >= count_ || !out_[id]) return false;
  out_[id] = false;
  --lent_;
  return true;
}

#ifndef HERDLESS_URING

std::unique_ptr<Ring> Ring::Create(std::string* error) {
  *error = "built without liburing";
  return nullptr;
}
bool Ring::Attach(event_base*, std::string* error) {
  *error = "built without liburing";
  return false;
}
Ring::~Ring() = default;
std::unique_ptr<Transport> Ring::NewTransport(int) { return nullptr; }   // no Ring is made

#else

namespace {

constexpr unsigned kGroup = 0;   // the provided-buffer group id
enum Kind : unsigned { kRecv = 1, kSend = 2 };

uint64_t Tag(RingSocket* s, Kind kind) { return reinterpret_cast<uintptr_t>(s) | kind; }

// Cancels the operation tagged `tag`; its own completion carries 0 (ignored):
// the prep helpers leave an entry's user_data as its last use set it.
void PrepCancel(io_uring_sqe* sqe, uint64_t tag) {
  io_uring_prep_cancel64(sqe, tag, 0);
  io_uring_sqe_set_data64(sqe, 0);
}

// IORING_FEAT_MIN_TIMEOUT (Linux 6.12), newer than liburing 2.3's header.
constexpr unsigned kFeatMinTimeout = 1U << 15;

uint64_t NowUs() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1000000 + static_cast<uint64_t>(now.tv_nsec) / 1000;
}

// Submits what is queued and waits, in one io_uring_enter, until the
// completion queue holds `want` entries or `timeout_us` passes; with
// `min_wait_us` (kernel 6.12 and later) any one new completion ends the wait
// once that much has passed. liburing 2.3 has no call that does all of it.
void SubmitAndWait(io_uring* ring, unsigned want, unsigned timeout_us, unsigned min_wait_us) {
  io_uring_sq* sq = &ring->sq;
  const unsigned tail = sq->sqe_tail;
  if (sq->sqe_head != tail) {
    sq->sqe_head = tail;
    io_uring_smp_store_release(sq->ktail, tail);
  }
  const unsigned to_submit = tail - *sq->khead;
  __kernel_timespec ts;
  ts.tv_sec = timeout_us / 1000000;
  ts.tv_nsec = (timeout_us % 1000000) * 1000;
  io_uring_getevents_arg arg;
  std::memset(&arg, 0, sizeof(arg));
  arg.sigmask_sz = _NSIG / 8;
  arg.pad = min_wait_us;   // min_wait_usec in newer headers
  arg.ts = reinterpret_cast<uintptr_t>(&ts);
  syscall(__NR_io_uring_enter, ring->ring_fd, to_submit, want,
          IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG, &arg, sizeof(arg));
}

}  // namespace

// One connection's state on the ring; outlives its transport until its last
// operation completes (the kernel holds its address as user_data).
struct RingSocket {
  struct Held {
    unsigned id;
    uint32_t offset;
    uint32_t length;
  };
  UringTransport* transport = nullptr;   // nullptr: released
  int ops = 0;                 // operations in flight
  bool receiving = false;      // a multishot receive is armed
  bool cancelling = false;     // ... and its cancel is queued
  bool starved = false;        // the receive ended for want of buffers
  bool want_read = true;
  bool eof = false;
  bool failed = false;         // a receive error: the connection is broken
  bool send_failed = false;    // a send error: likewise
  bool scheduled = false;      // in the ring's ready list
  bool sending = false;
  bool readable = false;       // notify: bytes, an end or an error
  bool written = false;        // notify: a send completed
  size_t sent = 0;             // bytes sent and not yet consumed from the reply buffer
  std::vector<Held> held;      // received bytes not yet read (a few: kHeldMax)
  // Bytes received while the connection does not read (back-pressure, a full
  // input: a cancel's lag), copied out of the ring's buffers: a connection
  // that does not read holds none of them, or it could starve the others.
  std::unique_ptr<std::string> spill;
  RingSend* send = nullptr;    // the send in flight (lent by the ring)
  // The reply bytes that send reads, once its connection is gone (Abandon):
  // freed at its completion, not before, as the kernel reads them until then.
  std::unique_ptr<ReplyBuffer> abandoned;

  bool Unread() const { return !held.empty() || (spill != nullptr && !spill->empty()); }
};

struct RingSend {
  struct msghdr msg;
  struct iovec iov[Ring::kIovecs];
};

Ring::Ring() : ring_(new io_uring), pool_(kBuffers, kBufferSize) {
  std::memset(ring_, 0, sizeof(*ring_));
  ring_->ring_fd = -1;
}

// Cooperative task work (Linux 5.19+, else the plain ring): a completion
// wakes a worker asleep in epoll_wait as a signal would, and waits for a
// running one's next system call instead of interrupting it. Either way the
// ring's descriptor becomes readable once it is posted. Deferred task work
// (IORING_SETUP_DEFER_TASKRUN, its completions signalled through an eventfd)
// saved system calls, but on Linux 6.18.44 the eventfd missed wake-ups and a
// lone client waited ~16 ms a request (docs/benchmarks.md): it is not used.
int Ring::SetUp(io_uring_params* params) {
  int rc = -EINVAL;
  for (const unsigned taskrun : {IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG, 0U}) {
    std::memset(params, 0, sizeof(*params));
    params->flags = IORING_SETUP_SUBMIT_ALL | IORING_SETUP_CQSIZE | taskrun;
    params->cq_entries = kEntries * 4;
    rc = io_uring_queue_init_params(kEntries, ring_, params);
    if (rc != -EINVAL) break;
  }
  if (rc >= 0 && (params->features & kFeatMinTimeout)) min_wait_us_ = kBatchWaitUs;
  return rc;
}

std::unique_ptr<Ring> Ring::Create(std::string* error) {
  std::unique_ptr<Ring> ring(new Ring());
  io_uring_params params;
  int rc = ring->SetUp(&params);
  if (rc < 0) {
    delete ring->ring_;
    ring->ring_ = nullptr;
    *error = std::string("io_uring_setup: ") + std::strerror(-rc);
    return nullptr;
  }
  if (!(params.features & IORING_FEAT_NODROP) || !(params.features & IORING_FEAT_EXT_ARG)) {
    *error = "io_uring without IORING_FEAT_NODROP or IORING_FEAT_EXT_ARG";
    return nullptr;
  }
  // Bounded, unbounded (network) kernel workers: 0 leaves a limit as it is.
  // Applied to the worker thread's io-wq when its first submission makes it.
  // Kernels before 5.15 refuse (EINVAL) and keep their default (RLIMIT_NPROC).
  unsigned workers[2] = {0, kSendWorkers};
  io_uring_register_iowq_max_workers(ring->ring_, workers);
  const size_t ring_bytes = sizeof(io_uring_buf) * kBuffers;
  // Shared, not private: the kernel holds the buffer ring's pages, and after
  // -d's fork a private mapping would give the child copies the kernel never reads.
  void* mem = mmap(nullptr, ring_bytes + kBuffers * kBufferSize, PROT_READ | PROT_WRITE,
                   MAP_ANONYMOUS | MAP_SHARED, -1, 0);
  if (mem == MAP_FAILED) {
    *error = std::string("mmap: ") + std::strerror(errno);
    return nullptr;
  }
  ring->buffers_ring_ = static_cast<io_uring_buf_ring*>(mem);
  ring->buffers_ = static_cast<char*>(mem) + ring_bytes;
  io_uring_buf_reg reg;
  std::memset(&reg, 0, sizeof(reg));
  reg.ring_addr = reinterpret_cast<uintptr_t>(mem);
  reg.ring_entries = kBuffers;
  reg.bgid = kGroup;
  rc = io_uring_register_buf_ring(ring->ring_, &reg, 0);
  if (rc < 0) {
    *error = std::string("io_uring_register_buf_ring: ") + std::strerror(-rc);
    return nullptr;
  }
  io_uring_buf_ring_init(ring->buffers_ring_);
  for (unsigned id = 0; id < kBuffers; ++id) {
    io_uring_buf_ring_add(ring->buffers_ring_, ring->buffers_ + id * kBufferSize, kBufferSize, id,
                          io_uring_buf_ring_mask(kBuffers), static_cast<int>(id));
  }
  io_uring_buf_ring_advance(ring->buffers_ring_, kBuffers);
  return ring;
}

bool Ring::Attach(event_base* base, std::string* error) {
  ring_event_ = event_new(base, ring_->ring_fd, EV_READ | EV_PERSIST, &Ring::OnCompletions, this);
  kick_event_ = event_new(base, -1, 0, &Ring::OnKick, this);
  if (ring_event_ == nullptr || kick_event_ == nullptr || event_add(ring_event_, nullptr) != 0) {
    *error = "cannot register the ring with the worker's loop";
    return false;
  }
  return true;
}

Ring::~Ring() {
  if (ring_event_ != nullptr) event_free(ring_event_);
  if (kick_event_ != nullptr) event_free(kick_event_);
  if (ring_ != nullptr && ring_->ring_fd >= 0) io_uring_queue_exit(ring_);   // cancels all
  delete ring_;
  if (buffers_ring_ != nullptr) {
    munmap(buffers_ring_, sizeof(io_uring_buf) * kBuffers + kBuffers * kBufferSize);
  }
  // Their abandoned reply bytes are freed here, after the worker's thread
  // has ended: a thread's exit cancels its requests and waits for its io-wq
  // threads, so nothing still reads them.
  for (RingSocket* s : released_) delete s;
  for (RingSend* send : sends_) delete send;
}

std::unique_ptr<Transport> Ring::NewTransport(int fd) {
  ++connections_;
  return std::make_unique<UringTransport>(fd, this);
}

io_uring_sqe* Ring::Sqe() {
  io_uring_sqe* sqe = io_uring_get_sqe(ring_);
  if (sqe == nullptr) {
    io_uring_submit(ring_);
    sends_queued_ = 0;   // their completions are in the queue now, or soon
    sqe = io_uring_get_sqe(ring_);
  }
  return sqe;
}

void Ring::Changed() {
  if (in_turn_ || kicked_) return;
  kicked_ = true;
  event_active(kick_event_, EV_TIMEOUT, 0);
}

void Ring::Schedule(RingSocket* s) {
  if (s->scheduled) return;
  s->scheduled = true;
  ready_.push_back(s);
  Changed();
}

const char* Ring::Buffer(unsigned id) const { return buffers_ + id * kBufferSize; }

void Ring::ReturnBuffer(unsigned id) {
  if (!pool_.Give(id)) return;
  io_uring_buf_ring_add(buffers_ring_, buffers_ + id * kBufferSize, kBufferSize, id,
                        io_uring_buf_ring_mask(kBuffers), 0);
  io_uring_buf_ring_advance(buffers_ring_, 1);
}

void Ring::Spill(RingSocket* s, unsigned id, size_t offset, size_t length) {
  if (s->spill == nullptr) s->spill = std::make_unique<std::string>();
  s->spill->append(Buffer(id) + offset, length);
  ReturnBuffer(id);
}

void Ring::Starved(RingSocket* s) {
  s->starved = true;
  starved_.push_back(s);
}

void Ring::Release(RingSocket* s) {
  --connections_;
  s->transport = nullptr;
  for (const RingSocket::Held& h : s->held) ReturnBuffer(h.id);
  s->held.clear();
  s->spill.reset();
  if (s->starved) {
    for (auto& p : starved_) {
      if (p == s) p = nullptr;
    }
  }
  // Its operations end with the cancel; it is freed after their completions.
  if (s->ops == 0 && !s->scheduled) {
    delete s;
    return;
  }
  released_.push_back(s);
}

RingSend* Ring::TakeSend() {
  if (spare_sends_.empty()) {
    sends_.push_back(new RingSend);
    spare_sends_.push_back(sends_.back());
  }
  RingSend* send = spare_sends_.back();
  spare_sends_.pop_back();
  return send;
}

void Ring::GiveSend(RingSend* send) { spare_sends_.push_back(send); }

void Ring::OnCompletions(int, short, void* arg) { static_cast<Ring*>(arg)->Turn(); }

void Ring::OnKick(int, short, void* arg) {
  Ring* ring = static_cast<Ring*>(arg);
  ring->kicked_ = false;
  ring->in_turn_ = true;
  ring->Dispatch();
  ring->Submit();
  ring->in_turn_ = false;
}

// Stays in the ring while it is busy: each round submits the replies it made
// and waits for the next completions in the same io_uring_enter, so a busy
// worker makes one system call a round instead of an epoll_wait and an
// io_uring_enter. The round's sends mostly complete inside that call: the wait
// is for completions beyond them. A round that waits kQuietUs for nothing ends
// the turn (the loop's epoll_wait then sleeps until the ring has more), and so
// does kTurnUs of rounds.
void Ring::Turn() {
  in_turn_ = true;
  const uint64_t start = NowUs();
  Reap();
  Dispatch();
  for (;;) {
    RearmStarved();
    if (NowUs() - start >= kTurnUs) {
      Submit();   // what is left makes the descriptor readable: the loop comes back
      break;
    }
    const unsigned expected = io_uring_cq_ready(ring_) + sends_queued_;
    sends_queued_ = 0;
    SubmitAndWait(ring_, std::min(expected + Batch(), kEntries * 4), kQuietUs, min_wait_us_);
    const bool quiet = io_uring_cq_ready(ring_) <= expected;
    Reap();
    Dispatch();
    if (quiet) {
      Submit();
      break;
    }
  }
  in_turn_ = false;
}

// One connection's request waits for no batch; with more, a round waits for a
// few more completions (at most kBatchWaitUs once one is there).
unsigned Ring::Batch() const {
  if (min_wait_us_ == 0) return 1;
  return std::min(kBatchMax, 1 + connections_ / 8);
}

void Ring::Reap() {
  io_uring_cqe* cqe;
  unsigned head;
  unsigned seen = 0;
  io_uring_for_each_cqe(ring_, head, cqe) {
    ++seen;
    const uint64_t data = cqe->user_data;
    if (data == 0) continue;   // a cancel
    auto* s = reinterpret_cast<RingSocket*>(data & ~uint64_t{7});
    Complete(s, static_cast<unsigned>(data & 7), cqe->res, cqe->flags);
  }
  io_uring_cq_advance(ring_, seen);
}

void Ring::Complete(RingSocket* s, unsigned kind, int res, unsigned flags) {
  if (kind == kRecv) {
    if (flags & IORING_CQE_F_BUFFER) {
      const unsigned id = flags >> IORING_CQE_BUFFER_SHIFT;
      pool_.Take(id);
      if (res > 0 && s->transport != nullptr && !s->want_read) {
        Spill(s, id, 0, static_cast<size_t>(res));   // returns the buffer
      } else if (res > 0 && s->transport != nullptr) {
        s->held.push_back({id, 0, static_cast<uint32_t>(res)});
        if (s->held.size() >= kHeldMax && (flags & IORING_CQE_F_MORE) && !s->cancelling) {
          PrepCancel(Sqe(), Tag(s, kRecv));   // resumed once it has read them (Notify)
          s->cancelling = true;
        }
      } else {
        ReturnBuffer(id);
      }
    }
    if (!(flags & IORING_CQE_F_MORE)) {
      --s->ops;
      s->receiving = false;
      s->cancelling = false;
      if (res == 0) {
        s->eof = true;
      } else if (res == -ENOBUFS) {
        if (s->transport != nullptr) Starved(s);
      } else if (res < 0 && res != -ECANCELED) {
        s->failed = true;
      }
    }
    s->readable = true;
  } else {
    --s->ops;
    s->sending = false;
    if (s->send != nullptr) GiveSend(s->send);
    s->send = nullptr;
    s->abandoned.reset();
    if (res > 0) {
      s->sent += static_cast<size_t>(res);
    } else {
      s->send_failed = true;   // EPIPE, ECONNRESET, ECANCELED at close
    }
    s->written = true;
  }
  if (s->transport != nullptr) Schedule(s);
}

void Ring::Dispatch() {
  // A notified connection may write, close or wake others: they join ready_.
  for (size_t i = 0; i < ready_.size(); ++i) {
    RingSocket* s = ready_[i];
    s->scheduled = false;
    if (s->transport != nullptr) s->transport->Notify();
  }
  ready_.clear();
  if (!released_.empty()) {
    std::vector<RingSocket*> keep;
    for (RingSocket* s : released_) {
      if (s->ops == 0 && !s->scheduled) {
        delete s;
      } else {
        keep.push_back(s);
      }
    }
    released_.swap(keep);
  }
}

void Ring::Submit() {
  RearmStarved();
  if (io_uring_sq_ready(ring_) > 0) io_uring_submit(ring_);
  sends_queued_ = 0;
}

void Ring::RearmStarved() {
  if (!starved_.empty() && pool_.plenty()) {
    std::vector<RingSocket*> starved;
    starved.swap(starved_);
    for (RingSocket* s : starved) {
      if (s == nullptr) continue;
      s->starved = false;
      if (s->transport != nullptr) s->transport->Want(s->want_read, false);
    }
  }
}

UringTransport::UringTransport(int fd, Ring* ring) : fd_(fd), ring_(ring), s_(new RingSocket) {
  s_->transport = this;
  // The ring waits for the socket itself: a blocking socket, so that its
  // operations are retried on readiness rather than failed with EAGAIN.
  const int flags = fcntl(fd_, F_GETFL);
  if (flags >= 0) fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK);
}

UringTransport::~UringTransport() {
  if (s_->receiving || s_->sending) {
    if (s_->receiving) PrepCancel(ring_->Sqe(), Tag(s_, kRecv));
    if (s_->sending) PrepCancel(ring_->Sqe(), Tag(s_, kSend));
    ring_->Changed();
  }
  ring_->Release(s_);
  close(fd_);   // the socket ends once its operations have
}

bool UringTransport::Start(Owner* owner) {
  owner_ = owner;
  ArmReceive();
  return true;
}

void UringTransport::ArmReceive() {
  io_uring_sqe* sqe = ring_->Sqe();
  if (sqe == nullptr) return;
  io_uring_prep_recv_multishot(sqe, fd_, nullptr, 0, 0);
  sqe->flags |= IOSQE_BUFFER_SELECT;
  sqe->buf_group = kGroup;
  io_uring_sqe_set_data64(sqe, Tag(s_, kRecv));
  s_->receiving = true;
  ++s_->ops;
  ring_->Changed();
}

bool UringTransport::Pending() const { return s_->Unread() || s_->eof || s_->failed; }

void UringTransport::Notify() {
  // A receive cancelled for back-pressure (or starved) ended after the
  // connection wanted to read again: arm a new one.
  if (s_->want_read && !s_->receiving && !s_->starved && !s_->eof && !s_->failed &&
      s_->held.size() < Ring::kHeldMax) {
    ArmReceive();
  }
  const bool readable = s_->readable && s_->want_read && Pending();
  const bool written = s_->written;
  s_->readable = false;
  s_->written = false;
  if (readable) {
    owner_->OnReadable();   // reads, then runs the pipeline, which writes
  } else if (written) {
    owner_->OnWritable();
  }
}

Transport::Io UringTransport::Read(char* dest, size_t room, size_t* n) {
  size_t got = 0;
  if (s_->spill != nullptr && !s_->spill->empty()) {   // received before the held buffers
    got = std::min(room, s_->spill->size());
    std::memcpy(dest, s_->spill->data(), got);
    s_->spill->erase(0, got);
  }
  while (got < room && !s_->held.empty()) {
    RingSocket::Held& h = s_->held.front();
    const size_t take = std::min<size_t>(room - got, h.length - h.offset);
    std::memcpy(dest + got, ring_->Buffer(h.id) + h.offset, take);
    got += take;
    h.offset += static_cast<uint32_t>(take);
    if (h.offset == h.length) {
      ring_->ReturnBuffer(h.id);
      s_->held.erase(s_->held.begin());
    }
  }
  if (s_->Unread() && s_->want_read) {
    s_->readable = true;   // level-triggered, as the epoll path: more on a later pass
    ring_->Schedule(s_);
  }
  if (got > 0) {
    *n = got;
    return Io::kDone;
  }
  if (s_->failed) return Io::kError;
  if (s_->eof) return Io::kEof;
  return Io::kAgain;
}

Transport::Io UringTransport::Write(ReplyBuffer* out, size_t* n) {
  *n = s_->sent;
  if (s_->sent > 0) out->Consume(s_->sent);
  s_->sent = 0;
  if (s_->send_failed) return Io::kError;
  if (s_->sending) return Io::kAgain;
  if (out->empty()) return Io::kDone;
  io_uring_sqe* sqe = ring_->Sqe();
  if (sqe == nullptr) return Io::kError;
  RingSend* send = ring_->TakeSend();
  s_->send = send;
  std::memset(&send->msg, 0, sizeof(send->msg));
  send->msg.msg_iov = send->iov;
  const size_t bound = SendBound(out->pending_bytes());
  send->msg.msg_iovlen = static_cast<size_t>(out->FillIovecs(send->iov, Ring::kIovecs, bound));
  io_uring_prep_sendmsg(sqe, fd_, &send->msg, MSG_NOSIGNAL);
  io_uring_sqe_set_data64(sqe, Tag(s_, kSend));
  s_->sending = true;
  ++s_->ops;
  ring_->SendQueued();
  return Io::kAgain;   // consumed when it completes (Notify: OnWritable)
}

// What the socket can take now (its send buffer less what it holds: about,
// as the buffer counts the kernel's overhead too) and Ring::kSendMax more,
// the part of a send that may have to wait for the client. Replies no
// larger than that bound need no system call to know it.
size_t UringTransport::SendBound(size_t pending) const {
  if (pending <= Ring::kSendMax) return pending;
  int buffer = 0;
  socklen_t length = sizeof(buffer);
  int held = 0;
  if (getsockopt(fd_, SOL_SOCKET, SO_SNDBUF, &buffer, &length) != 0 ||
      ioctl(fd_, SIOCOUTQ, &held) != 0) {
    return Ring::kSendMax;
  }
  return Ring::kSendMax + static_cast<size_t>(std::max(0, buffer - held));
}

void UringTransport::Want(bool read, bool) {
  s_->want_read = read;
  if (read) {
    if (!s_->receiving && !s_->starved && !s_->eof && !s_->failed &&
        s_->held.size() < Ring::kHeldMax) {
      ArmReceive();
    }
    if (Pending()) {
      s_->readable = true;
      ring_->Schedule(s_);
    }
  } else {
    // Back-pressure or a full input: what it holds leaves the ring's buffers
    // (the others need them), and the kernel stops filling buffers for this
    // connection, so its socket's receive window closes, as on the epoll path.
    for (const RingSocket::Held& h : s_->held) ring_->Spill(s_, h.id, h.offset, h.length - h.offset);
    s_->held.clear();
    if (s_->receiving && !s_->cancelling) {
      PrepCancel(ring_->Sqe(), Tag(s_, kRecv));
      s_->cancelling = true;
      ring_->Changed();
    }
  }
}

void UringTransport::Abandon(ReplyBuffer* out) {
  if (s_->sending) s_->abandoned = std::make_unique<ReplyBuffer>(std::move(*out));
}

void UringTransport::DiscardUnread() {
  char scratch[16 * 1024];
  for (int i = 0; i < 64; ++i) {
    if (recv(fd_, scratch, sizeof(scratch), MSG_DONTWAIT) <= 0) break;
  }
}

#endif  // HERDLESS_URING

}  // namespace herdless
