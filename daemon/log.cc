#include "daemon/log.h"

#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>

namespace herdless {

namespace {

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kError: return "error";
    case LogLevel::kWarning: return "warning";
    case LogLevel::kNotice: return "notice";
    case LogLevel::kInfo: return "info";
    case LogLevel::kDebug: return "debug";
  }
  return "?";
}

// A line is cut here; the longest message the daemon writes is well below.
constexpr size_t kMaxText = 1024;

}  // namespace

std::string FormatLogLine(LogLevel level, int64_t unix_ms, std::string_view text) {
  time_t seconds = static_cast<time_t>(unix_ms / 1000);
  struct tm utc;
  gmtime_r(&seconds, &utc);
  char stamp[64];
  std::snprintf(stamp, sizeof(stamp), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ ", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                static_cast<int>(unix_ms % 1000));
  std::string line = stamp;
  line += LevelName(level);
  line += ": ";
  if (text.size() > kMaxText) text = text.substr(0, kMaxText);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
  for (char c : text) line += (c == '\n' || c == '\r') ? ' ' : c;
  line += '\n';
  return line;
}

void Log(LogLevel level, const char* format, ...) {
  if (!LogEnabled(level)) return;
  int saved_errno = errno;   // callers may log and then look at errno
  char text[kMaxText + 1];
  va_list args;
  va_start(args, format);
  int n = std::vsnprintf(text, sizeof(text), format, args);
  va_end(args);
  if (n < 0) n = 0;
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  std::string line = FormatLogLine(
      level, static_cast<int64_t>(now.tv_sec) * 1000 + now.tv_nsec / 1000000,
      std::string_view(text, static_cast<size_t>(n) < sizeof(text) ? n : sizeof(text) - 1));
  // One write: stderr may be a pipe shared by every thread (journald, a test).
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t w = write(STDERR_FILENO, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    p += w;
    left -= static_cast<size_t>(w);
  }
  errno = saved_errno;
}

}  // namespace herdless
