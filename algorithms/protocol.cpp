#include "algorithms/protocol.hpp"

#include <string>

#include "common/error.hpp"
#include "common/text.hpp"

namespace ssim::alg {

std::string_view to_string(Protocol p) {
  switch (p) {
    case Protocol::simple:
      return "simple";
    case Protocol::ll:
      return "ll";
    case Protocol::ll128:
      return "ll128";
  }
  return "simple";
}

std::optional<Protocol> parse_protocol(std::string_view text) {
  const std::string lower = lowercase(text);
  for (Protocol p : {Protocol::simple, Protocol::ll, Protocol::ll128}) {
    if (lower == to_string(p)) return p;
  }
  return std::nullopt;
}

Protocol schedule_protocol(const Schedule& schedule) {
  const auto it = schedule.options.find("proto");
  if (it == schedule.options.end()) return Protocol::simple;
  const std::optional<Protocol> p = parse_protocol(it->second);
  if (!p) {
    throw InputError("schedule option proto=" + it->second + ": not a protocol (one of " +
                     std::string(kProtocolNames) + ")");
  }
  return *p;
}

std::optional<Protocol> named_protocol(const Schedule& schedule) {
  if (!schedule.options.contains("proto")) return std::nullopt;
  return schedule_protocol(schedule);
}

}  // namespace ssim::alg
