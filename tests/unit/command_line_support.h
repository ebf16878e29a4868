// What the option tests share: ParseOptions run on {"herdless", args...}.
#ifndef HERDLESS_TESTS_UNIT_COMMAND_LINE_SUPPORT_H_
#define HERDLESS_TESTS_UNIT_COMMAND_LINE_SUPPORT_H_

#include <string>
#include <vector>

#include "daemon/options.h"

namespace herdless {

struct Parsed {
  bool ok = false;
  Options options;
  OptionError refused;
  std::string error;   // refused.message
};

inline Parsed Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "herdless");
  std::vector<char*> argv;
  for (std::string& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  Parsed p;
  p.ok = ParseOptions(static_cast<int>(args.size()), argv.data(), &p.options, &p.refused);
  p.error = p.refused.message;
  return p;
}

}  // namespace herdless

#endif  // HERDLESS_TESTS_UNIT_COMMAND_LINE_SUPPORT_H_
