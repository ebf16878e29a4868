/* bench_floor: the least a memcached text server can cost on loopback TCP,
 * to measure what bounds scripts/bench.py's ratios (docs/benchmarks.md,
 * "What a server that does nothing gets").
 *
 * One thread, one epoll loop, one read and one sendmsg per readable event.
 * It stores nothing: every `get <key>` is a hit with the same 100-byte value,
 * every `set ... <bytes>` is STORED (its data block skipped), `flush_all` is
 * OK, `version` answers, anything else is ERROR. That is all bench.py's
 * presets a and b send (100-byte values), so memtier counts its replies as a
 * real server's. Not a cache: a measuring stick, never installed.
 *
 *   cc -O2 -o /tmp/bench-floor scripts/bench_floor.c
 *   scripts/bench.py --herdless /tmp/bench-floor --memcached /opt/memcached-1.6.45/bin/memcached \
 *     --presets a,b
 *
 * It takes -p <port> and ignores every other flag bench.py passes. */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

enum { kMaxFds = 65536, kInput = 64 * 1024, kValue = 100 };

struct conn {
  size_t len;        /* bytes in `in` */
  size_t skip;       /* data-block bytes still to drop */
  char in[kInput];
};

static struct conn *conns[kMaxFds];
static char value[kValue];
static char out[4 << 20];   /* the replies to a full input buffer of the shortest gets */

static void put(size_t *o, const char *s, size_t n) {
  memcpy(out + *o, s, n);
  *o += n;
}

/* Answers every whole request in c->in; returns the reply's length. */
static size_t answer(struct conn *c) {
  size_t o = 0, p = 0;
  while (o + 512 < sizeof out) {
    if (c->skip > 0) {
      size_t n = c->len - p < c->skip ? c->len - p : c->skip;
      p += n;
      c->skip -= n;
      if (c->skip > 0) break;
    }
    char *s = c->in + p;
    char *nl = memchr(s, '\n', c->len - p);
    if (nl == NULL) break;
    size_t line = (size_t)(nl - s) + 1;
    size_t words = line > 1 && nl[-1] == '\r' ? line - 2 : line - 1;
    if (words > 4 && memcmp(s, "get ", 4) == 0 && words - 4 <= 250) {
      put(&o, "VALUE ", 6);
      put(&o, s + 4, words - 4);
      put(&o, " 0 100\r\n", 8);
      put(&o, value, kValue);
      put(&o, "\r\nEND\r\n", 7);
    } else if (words > 4 && memcmp(s, "set ", 4) == 0) {
      const char *bytes = s + words;
      while (bytes > s && bytes[-1] != ' ') bytes--;
      c->skip = strtoul(bytes, NULL, 10) + 2;
      put(&o, "STORED\r\n", 8);
    } else if (words >= 9 && memcmp(s, "flush_all", 9) == 0) {
      put(&o, "OK\r\n", 4);
    } else if (words == 7 && memcmp(s, "version", 7) == 0) {
      put(&o, "VERSION bench-floor\r\n", 21);
    } else {
      put(&o, "ERROR\r\n", 7);
    }
    p += line;
  }
  memmove(c->in, c->in + p, c->len - p);
  c->len -= p;
  return o;
}

/* Writes all of out[0, n): a full socket buffer waits for room. */
static int send_all(int fd, size_t n) {
  size_t done = 0;
  while (done < n) {
    ssize_t w = send(fd, out + done, n - done, MSG_NOSIGNAL);
    if (w > 0) {
      done += (size_t)w;
    } else if (w < 0 && errno == EAGAIN) {
      struct pollfd pfd = {.fd = fd, .events = POLLOUT};
      poll(&pfd, 1, -1);
    } else if (w < 0 && errno != EINTR) {
      return -1;
    }
  }
  return 0;
}

static void drop(int ep, int fd) {
  epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
  close(fd);
}

int main(int argc, char **argv) {
  int port = 11211;
  for (int i = 1; i + 1 < argc; i++) {
    if (strcmp(argv[i], "-p") == 0) port = atoi(argv[i + 1]);
  }
  memset(value, 'x', sizeof value);
  int one = 1;
  int ls = socket(AF_INET, SOCK_STREAM, 0);
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  if (bind(ls, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(ls, 1024) != 0) {
    perror("bench-floor: listen");
    return 1;
  }
  int ep = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = ls};
  epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev);
  struct epoll_event ready[256];
  for (;;) {
    int n = epoll_wait(ep, ready, 256, -1);
    for (int i = 0; i < n; i++) {
      int fd = ready[i].data.fd;
      if (fd == ls) {
        int c = accept4(ls, NULL, NULL, SOCK_NONBLOCK);
        if (c < 0) continue;
        if (c >= kMaxFds || (conns[c] == NULL && (conns[c] = malloc(sizeof(struct conn))) == NULL)) {
          close(c);
          continue;
        }
        setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        conns[c]->len = conns[c]->skip = 0;
        ev.events = EPOLLIN;
        ev.data.fd = c;
        epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev);
        continue;
      }
      struct conn *c = conns[fd];
      ssize_t r = read(fd, c->in + c->len, sizeof c->in - c->len);
      if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
        drop(ep, fd);
        continue;
      }
      if (r < 0) continue;
      c->len += (size_t)r;
      size_t o = answer(c);
      if (c->len == sizeof c->in) {   /* a line longer than the buffer: not from bench.py */
        drop(ep, fd);
        continue;
      }
      if (o > 0 && send_all(fd, o) != 0) drop(ep, fd);
    }
  }
}
