// libFuzzer target for daemon/options.cc, the command line (ParseOptions and
// every flag's and -o key's value reader in daemon/option_table.cc,
// extstore_options.cc, tuning_options.cc). The input is the argument list after
// argv[0], one argument per line. Checked: no crash or undefined behaviour; a
// refused line has a message and memcached's exit status; an
// accepted one has a listener; the same arguments parse the same way twice
// (every `stats settings` line alike).
//
// `-o ring=<file>` is the one option that reads a file (the YAML has a target
// of its own, ring_config_fuzzer.cc): inputs naming a path with '/' in an
// argument that mentions "ring" are skipped, so that no run reads /dev/zero.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/option_table.h"
#include "daemon/options.h"
#include "daemon/settings_stats.h"
#include "protocol/stat_writer.h"

namespace {

using herdless::OptionError;
using herdless::Options;

struct Outcome {
  bool ok = false;
  OptionError error;
  Options options;
};

Outcome Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "herdless");
  std::vector<char*> argv;
  for (std::string& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  Outcome o;
  o.ok = herdless::ParseOptions(static_cast<int>(args.size()), argv.data(), &o.options, &o.error);
  return o;
}

// Every `stats settings` line for these options, as the daemon writes them.
herdless::StatPairs SettingLines(const Options& options) {
  herdless::OperatorSettings operators;
  const herdless::SettingsView view{options.protocol, options.protocol.max_bytes, false, 0, ':', false,
                                    operators};
  herdless::StatPairs pairs;
  herdless::StatWriter w(&pairs);
  herdless::WriteSettingLines(view, &w);
  return pairs;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> args;
  size_t start = 0;
  while (start <= input.size() && args.size() < 64) {
    size_t end = input.find('\n', start);
    if (end == std::string_view::npos) end = input.size();
    std::string arg(input.substr(start, end - start));
    // A C string ends at its NUL, as the kernel's argv does.
    arg.resize(std::string_view(arg.c_str()).size());
    if (arg.find("ring") != std::string::npos && arg.find('/') != std::string::npos) return 0;
    args.push_back(std::move(arg));
    start = end + 1;
  }

  const Outcome first = Parse(args);
  if (!first.ok) {
    const std::string& message = first.error.message;
    if (message.empty() || message.back() == '\n') std::abort();
    if (first.error.exit_status == 0) std::abort();
    const std::string printed = first.error.Printed("herdless");
    if (printed.empty() || printed.back() != '\n') std::abort();
  } else if (first.options.action == Options::Action::kRun && first.options.listen.empty()) {
    std::abort();
  }

  const Outcome second = Parse(args);
  if (second.ok != first.ok || second.error.message != first.error.message ||
      second.error.exit_status != first.error.exit_status) {
    std::abort();
  }
  if (first.ok && SettingLines(first.options) != SettingLines(second.options)) std::abort();
  return 0;
}
