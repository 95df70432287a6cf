// NCCL's protocols as data: which of Simple, LL and LL128 a schedule's transfers are moved with.
// What a protocol costs (latency per hop, wire bytes per data byte, a channel's bandwidth cap) is
// the simulator's question (sim/protocol.hpp); here it is only a name.
//
//   Protocol p = schedule_protocol(schedule);    // its header's `proto` option, else Simple
//   std::optional<Protocol> q = parse_protocol("ll128");
//
// NCCL's protocols (src/include/device.h, docs "NCCL_PROTO"): Simple moves data in large steps
// and synchronizes with a flag after each (memory fences); LL ("low latency") writes 8-byte lines
// of 4 data bytes and a 4-byte flag, so a receiver polls the data itself and no fence is needed;
// LL128 writes 128-byte lines of 120 data bytes and an 8-byte flag, relying on NVLink keeping
// the 128 bytes together.
#pragma once

#include <optional>
#include <string_view>

#include "algorithms/schedule.hpp"

namespace ssim::alg {

enum class Protocol : unsigned char { simple, ll, ll128 };

// "simple", "ll", "ll128" (NCCL_PROTO's names, lower case).
std::string_view to_string(Protocol p);
// The name as to_string writes it (case-insensitive, so "LL128" and "Simple" read too); nullopt
// for anything else.
std::optional<Protocol> parse_protocol(std::string_view text);
// The allowed names, for messages: "simple, ll, ll128".
inline constexpr std::string_view kProtocolNames = "simple, ll, ll128";
// The protocol of a schedule: its header's `proto` option (the algorithms that take one record
// it there, and a schedule file carries it in its options), Simple when absent. InputError when
// the option names no protocol.
Protocol schedule_protocol(const Schedule& schedule);
// The protocol a schedule names (its `proto` option); nullopt when it names none. InputError as
// schedule_protocol's.
std::optional<Protocol> named_protocol(const Schedule& schedule);

}  // namespace ssim::alg
