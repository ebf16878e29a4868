// Options: memcached 1.6's command line, parsed into the settings the protocol
// obeys (ProtocolSettings) plus what only the process needs (daemonize, pid
// file, listeners). ParseOptions is a pure function of argv: it prints nothing
// and exits nothing, so tests can drive it; daemon/main.cc does the printing.
#ifndef HERDLESS_DAEMON_OPTIONS_H_
#define HERDLESS_DAEMON_OPTIONS_H_

#include <string>
#include <vector>

#include "protocol/server_info.h"

namespace herdless {

// One address to listen on, from -l ("host", "host:port", "[v6]", "[v6]:port").
struct ListenAddress {
  std::string host;        // "" = every interface
  int port = 0;            // TCP: -p unless the -l entry names its own; -1 = kernel's choice
  int explicit_port = -1;  // the port the -l entry names (also UDP's, as memcached), -1 = none
  bool tls = false;        // -Z, unless the entry starts "notls:"
};

struct Options {
  enum class Action { kRun, kHelp, kVersion };
  Action action = Action::kRun;

  ProtocolSettings protocol;            // memcached's settings and herdless's -o keys
  std::vector<ListenAddress> listen;    // at least one after a successful parse
  int verbosity = 0;                    // -v, -vv, -vvv
  bool daemonize = false;               // -d
  std::string pid_file;                 // -P
  bool lock_memory = false;             // -k
  bool enable_coredumps = false;        // -r
  // memcached options that herdless accepts and ignores: main notes them at -v.
  std::vector<std::string> ignored;
  // Always printed by main (memcached prints the same warnings).
  std::vector<std::string> warnings;
};

// A refused command line, as memcached refuses it: exit status 1 for a flag
// it cannot take, EX_USAGE for the checks after the last flag; getopt's own
// complaints (an unknown flag, a missing value) are printed after the program
// name and followed by memcached's `Illegal argument "?"` (see Printed).
struct OptionError {
  // Without the program name or a final '\n'; mostly one line (an ext_path
  // error is two, as memcached's).
  std::string message;
  int exit_status = 1;
  bool from_getopt = false;

  std::string Printed(const char* program) const;   // what goes to stderr, '\n'-terminated
};

// Parses argv[1..argc) into *options (reset to the defaults first). On an
// unknown flag, a malformed value or an unsupported feature returns false with
// the reason in *error.
bool ParseOptions(int argc, char** argv, Options* options, OptionError* error);
bool ParseOptions(int argc, char** argv, Options* options, std::string* error);   // the message only

// What -h prints and what -V prints (each ends with '\n').
std::string UsageText();
std::string VersionText();

}  // namespace herdless

#endif  // HERDLESS_DAEMON_OPTIONS_H_
