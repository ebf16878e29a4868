// ASCII authentication (-Y), as memcached 1.6.18 does it (authfile.c and
// proto_text.c's try_read_command_asciiauth).
//
// AuthFile holds the "user:password" lines of the -Y file, or of the -S
// password database (MEMCACHED_SASL_PWDB, where a password ends at the next
// ':' as in memcached's sasl_defs.c). Check() compares a
// candidate against every entry in time that depends only on the candidate's
// length and the number of entries, never on where a secret first differs.
// Thread-safe: Load() (SIGHUP) may replace the entries while workers Check();
// a load that fails keeps the entries it had.
//
// ProcessAsciiAuth() is the exchange a -Y connection must pass before any
// other command runs: a pure function over the connection's input buffer.
#ifndef HERDLESS_PROTOCOL_AUTH_H_
#define HERDLESS_PROTOCOL_AUTH_H_

#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/reply.h"
#include "protocol/thread_stats.h"

namespace herdless {

class AuthFile {
 public:
  enum class Format {
    kAsciiAuth,   // -Y: the password is the rest of the line
    kSaslPwdb,    // -S: the password ends at the next ':' (more fields may follow)
  };

  // Reads `path`. False with a one-line message (which never quotes a
  // password) when the file cannot be read, has a line without ':' or an
  // empty user name, or holds no entry at all.
  bool Load(const std::string& path, std::string* error, Format format = Format::kAsciiAuth);
  // The same from the file's text (tests, fuzzing).
  bool Parse(std::string_view text, std::string* error, Format format = Format::kAsciiAuth);

  bool Check(std::string_view user, std::string_view password) const;
  size_t size() const;

 private:
  struct Entry {
    std::string user;
    std::string password;
  };
  mutable std::mutex mutex_;
  std::vector<Entry> entries_;   // guarded by mutex_
};

// Equal bytes, in time that depends on candidate.size() only.
bool ConstantTimeEquals(std::string_view candidate, std::string_view secret);

// The authentication data block (after the "set" line) is "<user> <password>":
// anything longer than this is refused without being buffered.
inline constexpr size_t kMaxAuthPayload = 4096;
// memcached closes a connection that sends this much with no newline
// before authenticating.
inline constexpr size_t kMaxAuthLine = 2048;

struct AuthOutcome {
  size_t consumed = 0;          // input bytes used
  bool authenticated = false;   // STORED was written: run the rest as commands
  bool close = false;           // close once the output is written
};

// SASL PLAIN's message (RFC 4616): [authzid] NUL authcid NUL passwd. False
// unless it has exactly that shape; an authzid other than empty or the user
// itself (acting for someone else) is refused.
bool ParseSaslPlain(std::string_view message, std::string_view* user, std::string_view* password);

// Handles the input of a connection that has not authenticated yet, in
// memcached's words:
//   set <any> <any> <any> <bytes>\r\n<user> <password>\r\n   -> STORED
//   the same with a wrong user or password  -> CLIENT_ERROR authentication failure
//   a data block without "\r\n"             -> CLIENT_ERROR bad command line termination
//   a data block without two words          -> CLIENT_ERROR bad authentication token format
//   any other line (get, ms, stats, quit...) -> CLIENT_ERROR unauthenticated
// and nothing else happens. Runs request_loop.h's loop: stops after a
// success (the rest is commands), at an incomplete request, after
// `max_requests` lines, or once `out` holds more than `max_output` bytes.
// Counts auth_cmds and auth_errors. A block over kMaxAuthPayload is refused
// and the connection closed; with `latest` (-o compat=1.6.45) one over
// 1.6.45's 16384 bytes is `CLIENT_ERROR auth token too long` and the
// exchange goes on.
AuthOutcome ProcessAsciiAuth(std::string_view input, const AuthFile& auth, ReplyBuffer* out,
                             ThreadStats* stats, size_t max_output, int max_requests,
                             bool latest = false);

}  // namespace herdless

#endif  // HERDLESS_PROTOCOL_AUTH_H_
