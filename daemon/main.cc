// herdless: parse memcached's flags, check privileges, bind, drop root,
// daemonize, write the pid file, serve, clean up. The order follows memcached
// except that the sockets are bound before root is dropped (so -p below 1024
// works with -u) and the pid file is written after daemonizing (its pid). As
// in memcached, a unix socket (-s) is created after dropping root.
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "daemon/log.h"
#include "daemon/options.h"
#include "daemon/server.h"

namespace herdless {
namespace {

// Descriptors beyond the connections: listeners, event loops, eventfds, stdio.
constexpr rlim_t kSpareDescriptors = 64;

// Makes room for -c connections, as memcached does, but only ever raises the
// limit (memcached sets it to exactly -c and fails when it cannot).
void RaiseDescriptorLimit(const Options& o) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
  rlim_t want = static_cast<rlim_t>(o.protocol.max_connections) +
                static_cast<rlim_t>(o.protocol.num_threads) * 4 + kSpareDescriptors;
  if (rl.rlim_cur >= want) return;
  struct rlimit raised = rl;
  raised.rlim_cur = want;
  if (raised.rlim_max < want) raised.rlim_max = want;   // succeeds only as root
  if (setrlimit(RLIMIT_NOFILE, &raised) == 0) return;
  raised.rlim_cur = rl.rlim_max;
  raised.rlim_max = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &raised);
  Log(LogLevel::kWarning, "open file limit %llu is below -c %d plus spare descriptors",
      static_cast<unsigned long long>(rl.rlim_max), o.protocol.max_connections);
}

void EnableCoreDumps() {
  struct rlimit rl;
  rl.rlim_cur = rl.rlim_max = RLIM_INFINITY;
  if (setrlimit(RLIMIT_CORE, &rl) != 0 && getrlimit(RLIMIT_CORE, &rl) == 0) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_CORE, &rl);
  }
  if (getrlimit(RLIMIT_CORE, &rl) != 0 || rl.rlim_cur == 0) {
    Log(LogLevel::kError, "failed to ensure corefile creation");
    std::exit(EX_OSERR);
  }
}

// After binding: become -u's user. memcached's messages and exit codes.
int DropPrivileges(const std::string& username) {
  struct passwd* pw = getpwnam(username.c_str());
  if (pw == nullptr) {
    Log(LogLevel::kError, "can't find the user %s to switch to", username.c_str());
    return EX_NOUSER;
  }
  if (setgroups(0, nullptr) < 0) {
    int saved = errno;
    Log(LogLevel::kError, "failed to drop supplementary groups: %s", std::strerror(saved));
    if (saved != EPERM) return EX_OSERR;
  }
  if (setgid(pw->pw_gid) < 0 || setuid(pw->pw_uid) < 0) {
    Log(LogLevel::kError, "failed to assume identity of user %s", username.c_str());
    return EX_OSERR;
  }
  return 0;
}

// memcached's daemonize(): fork, new session, cwd "/" (unless core dumps were
// asked for), stdio to /dev/null (unless verbose). Returns false on failure.
bool Daemonize(bool keep_cwd, bool keep_stdio) {
  pid_t pid = fork();
  if (pid < 0) return false;
  if (pid > 0) _exit(EXIT_SUCCESS);
  if (setsid() == -1) return false;
  if (!keep_cwd && chdir("/") != 0) return false;
  if (!keep_stdio) {
    int fd = open("/dev/null", O_RDWR);
    if (fd < 0) return false;
    dup2(fd, STDIN_FILENO);
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    if (fd > STDERR_FILENO) close(fd);
  }
  return true;
}

// An absolute path, so that daemonizing (chdir "/") does not move the file.
std::string AbsolutePath(const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  char cwd[PATH_MAX];
  if (getcwd(cwd, sizeof(cwd)) == nullptr) return path;
  return std::string(cwd) + "/" + path;
}

// The pid file is opened before daemonizing, so a bad path is reported on the
// terminal, and written after it, so it holds the daemon's pid. Like
// memcached it is created after root is dropped: -u's user can remove it; and
// like memcached, a pid file that cannot be written is reported and the server
// runs without it (a copy of Debian's memcached.conf names one in
// /var/run/memcached, which herdless's systemd unit may not write).
FILE* OpenPidFile(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    Log(LogLevel::kError, "Could not open the pid file %s for writing: %s", path.c_str(),
        std::strerror(errno));
  }
  return f;
}

void WritePidFile(FILE* f, const std::string& path) {
  std::fprintf(f, "%ld\n", static_cast<long>(getpid()));
  if (std::fclose(f) != 0) {
    Log(LogLevel::kError, "Could not close the pid file %s: %s", path.c_str(), std::strerror(errno));
  }
}

int Main(int argc, char** argv) {
  setbuf(stderr, nullptr);   // unbuffered, as memcached (daemontools and friends)

  Options options;
  OptionError refused;
  if (!ParseOptions(argc, argv, &options, &refused)) {
    std::fputs(refused.Printed(argv[0]).c_str(), stderr);
    return refused.exit_status;
  }
  if (options.action == Options::Action::kHelp) {
    std::fputs(UsageText().c_str(), stdout);
    return EXIT_SUCCESS;
  }
  if (options.action == Options::Action::kVersion) {
    std::fputs(VersionText().c_str(), stdout);
    return EXIT_SUCCESS;
  }
  SetLogVerbosity(options.verbosity);
  for (const std::string& w : options.warnings) Log(LogLevel::kWarning, "%s", w.c_str());
  for (const std::string& note : options.ignored) {
    Log(LogLevel::kNotice, "%s accepted and ignored", note.c_str());
  }

  const bool root = getuid() == 0 || geteuid() == 0;
  if (root && options.protocol.username.empty()) {
    Log(LogLevel::kError, "can't run as root without the -u switch");
    return EX_USAGE;
  }
  if (options.enable_coredumps) EnableCoreDumps();
  RaiseDescriptorLimit(options);

  // SIGXFSZ: a flash file or snapshot past RLIMIT_FSIZE is a failed write (EFBIG), not an exit.
  if (signal(SIGPIPE, SIG_IGN) == SIG_ERR || signal(SIGHUP, SIG_IGN) == SIG_ERR ||
      signal(SIGXFSZ, SIG_IGN) == SIG_ERR) {
    Log(LogLevel::kError, "failed to ignore SIGPIPE/SIGHUP/SIGXFSZ: %s", std::strerror(errno));
    return EX_OSERR;
  }

  // -d changes directory to "/": a relative -e path must not move.
  options.protocol.memory_file = AbsolutePath(options.protocol.memory_file);
  Server server(options);
  std::string error;
  int refused_status = EX_USAGE;   // memcached's for TLS
  if (!server.LoadCredentials(&error, &refused_status)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return refused_status;
  }
  if (!server.Listen(&error)) {
    Log(LogLevel::kError, "%s", error.c_str());
    return EX_OSERR;
  }
  if (!server.CreateRings()) return EXIT_FAILURE;
  const int dropped = root ? DropPrivileges(options.protocol.username) : 0;
  if (dropped != 0) return dropped;
  if (!server.ListenUnix(&error)) {
    Log(LogLevel::kError, "%s", error.c_str());
    return EX_OSERR;
  }

  const std::string pid_file = AbsolutePath(options.pid_file);
  FILE* pid_stream = pid_file.empty() ? nullptr : OpenPidFile(pid_file);
  const bool pid_file_ours = pid_stream != nullptr;   // only a file it wrote is removed at exit
  if (options.daemonize && !Daemonize(options.enable_coredumps, options.verbosity > 0)) {
    Log(LogLevel::kError, "failed to daemon() in order to daemonize");
    return EXIT_FAILURE;
  }
  if (options.lock_memory && mlockall(MCL_CURRENT | MCL_FUTURE) != 0) {
    Log(LogLevel::kWarning, "-k invalid, mlockall() failed: %s", std::strerror(errno));
  }
  if (pid_stream != nullptr) WritePidFile(pid_stream, pid_file);

  int rc = server.Run();

  if (pid_file_ours && unlink(pid_file.c_str()) != 0) {
    Log(LogLevel::kNotice, "Could not remove the pid file %s: %s", pid_file.c_str(),
        std::strerror(errno));
  }
  return rc;
}

}  // namespace
}  // namespace herdless

int main(int argc, char** argv) { return herdless::Main(argc, argv); }
