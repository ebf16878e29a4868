/* An LD_PRELOAD shim for tests/integration/test_extstore_faults.py: a flash
 * device that returns errors. pread, preadv2 and pwrite on the file named by
 * $EIO_PRELOAD_PATH fail while a trigger file beside it exists:
 * <path>.fail-read for reads, <path>.fail-write for writes; the trigger's
 * first bytes name the error ("ENOSPC": a full device; anything else: EIO).
 * Every other file, and that file while no trigger exists, is untouched.
 * Built by the test with the system's C compiler; test code, never linked
 * into herdless. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

/* The errno the trigger for `what` asks for, or 0 when `fd` is not the file or no trigger exists. */
static int injected_error(int fd, const char *what) {
  const char *path = getenv("EIO_PRELOAD_PATH");
  char link[64], target[4096], trigger[4200], word[8] = {0};
  if (path == NULL) return 0;
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(link, target, sizeof target - 1);
  if (n < 0) return 0;
  target[n] = '\0';
  if (strcmp(target, path) != 0) return 0;
  snprintf(trigger, sizeof trigger, "%s.fail-%s", path, what);
  const int t = open(trigger, O_RDONLY | O_CLOEXEC);
  if (t < 0) return 0;
  const ssize_t got = read(t, word, sizeof word - 1);
  close(t);
  return got >= 6 && memcmp(word, "ENOSPC", 6) == 0 ? ENOSPC : EIO;
}

typedef ssize_t (*pread_fn)(int, void *, size_t, off_t);
typedef ssize_t (*pwrite_fn)(int, const void *, size_t, off_t);

/* Each call, and its 64-bit name: the real one unless an error is injected. */
#define FAULTY(name, fn_type, buf_type, what)                    \
  ssize_t name(int fd, buf_type buf, size_t n, off_t offset) {   \
    static fn_type real;                                         \
    if (real == NULL) real = (fn_type)dlsym(RTLD_NEXT, #name);   \
    const int err = injected_error(fd, what);                    \
    if (err != 0) {                                              \
      errno = err;                                               \
      return -1;                                                 \
    }                                                            \
    return real(fd, buf, n, offset);                             \
  }

FAULTY(pread, pread_fn, void *, "read")
FAULTY(pread64, pread_fn, void *, "read")
FAULTY(pwrite, pwrite_fn, const void *, "write")
FAULTY(pwrite64, pwrite_fn, const void *, "write")

/* The worker's read of a cached value (preadv2 with RWF_NOWAIT): a failing
 * device fails it too, and the read then goes to the I/O thread's pread. */
typedef ssize_t (*preadv2_fn)(int, const struct iovec *, int, off_t, int);

#define FAULTY_V2(name)                                                                \
  ssize_t name(int fd, const struct iovec *iov, int count, off_t offset, int flags) { \
    static preadv2_fn real;                                                            \
    if (real == NULL) real = (preadv2_fn)dlsym(RTLD_NEXT, #name);                      \
    const int err = injected_error(fd, "read");                                        \
    if (err != 0) {                                                                    \
      errno = err;                                                                     \
      return -1;                                                                       \
    }                                                                                  \
    return real(fd, iov, count, offset, flags);                                        \
  }

FAULTY_V2(preadv2)
FAULTY_V2(preadv64v2)
