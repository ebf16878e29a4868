// Log: the daemon's messages, one line each on stderr:
//   2025-01-31T12:00:00.123Z warning: text
// (UTC, millisecond precision), written with a single write(2) so that lines
// from different threads never interleave. A message's level decides its label
// and the verbosity (-v count, or the `verbosity` command) needed to show it.
// Check LogEnabled() before building a message on a hot path.
#ifndef HERDLESS_DAEMON_LOG_H_
#define HERDLESS_DAEMON_LOG_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

namespace herdless {

enum class LogLevel {
  kError,     // always: the daemon cannot do what was asked (startup failure)
  kWarning,   // always: a setting was adjusted or a limit is too low (startup)
  kNotice,    // -v: lifecycle, and runtime problems memcached shows with -v
              //     (accept() failing, a client closed for not reading)
  kInfo,      // -vv: each connection opened and closed
  kDebug,     // -vvv: internal detail
};

namespace log_internal {
inline std::atomic<int> verbosity{0};
}  // namespace log_internal

// The -v count; the `verbosity` command changes it while running.
inline void SetLogVerbosity(int level) {
  log_internal::verbosity.store(level, std::memory_order_relaxed);
}
inline int LogVerbosity() { return log_internal::verbosity.load(std::memory_order_relaxed); }

// The verbosity a level needs: 0 for errors and warnings, 1 to 3 for the rest.
constexpr int VerbosityFor(LogLevel level) {
  return level <= LogLevel::kWarning ? 0 : static_cast<int>(level) - 1;
}

inline bool LogEnabled(LogLevel level) { return LogVerbosity() >= VerbosityFor(level); }

// Writes one line if the level is enabled. A newline in the text is replaced by
// a space: one message, one line.
void Log(LogLevel level, const char* format, ...) __attribute__((format(printf, 2, 3)));

// The line Log writes for `text` at unix time `unix_ms`, with its '\n'.
std::string FormatLogLine(LogLevel level, int64_t unix_ms, std::string_view text);

}  // namespace herdless

#endif  // HERDLESS_DAEMON_LOG_H_
