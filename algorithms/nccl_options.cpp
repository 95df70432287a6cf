// The `nccl` algorithm's options, typed (see nccl_options.hpp).
#include "algorithms/nccl_options.hpp"

#include <utility>

#include "common/error.hpp"
#include "common/text.hpp"

namespace ssim::alg {
Options nccl_default_options(int gpus_per_node) {
  Options o;
  if (gpus_per_node > 0) o.set("gpus_per_node", std::to_string(gpus_per_node));
  return o;
}

int schedule_channels(const Schedule& schedule) {
  const auto it = schedule.options.find("channels");
  if (it == schedule.options.end()) return 1;
  Options o;
  o.set("channels", it->second);
  try {
    return o.get_int("channels", 1, 1, kNcclMaxChannels);
  } catch (const InputError& e) {
    throw InputError(std::string("schedule option ") + e.what());
  }
}

NcclRequest::NcclRequest(int ranks, Options options) : given_(std::move(options)) {
  find_algorithm("nccl").check_options(ranks, given_);
  algo_ = lowercase(given_.get_string("algo", ""));
  if (given_.has("proto")) proto_ = parse_protocol(given_.get_string("proto", ""));
}

int NcclRequest::channels_or(int tuned) const {
  return given_.has("channels") ? given_.get_int("channels", 1, 1, kNcclMaxChannels) : tuned;
}

bool NcclRequest::has_pipeline() const { return given_.has("pipeline"); }

Options NcclRequest::schedule_options(const NcclPick& pick) const {
  Options all = given_;
  all.set("algo", pick.algo);
  all.set("proto", std::string(to_string(pick.proto)));
  if (pick.algo == "ring" || pick.algo == "tree") {
    all.set("channels", std::to_string(pick.channels));
    return all;
  }
  const bool collnet = pick.algo == "collnet_direct" || pick.algo == "collnet_chain";
  const bool chain = pick.algo == "collnet_chain";
  Options plain;  // the named schedule's options: the node size, its pipeline
  for (const auto& [k, v] : all.values()) {
    if (k == "algo" || k == "proto" || k == "gpus_per_node" ||
        (chain ? k == "segments" : k == "pipeline"))
      plain.set(k, v);
  }
  if ((collnet || pick.algo == "nvls_tree") && !plain.has("gpus_per_node")) {
    SSIM_CHECK(pick.gpus_per_node >= 1, "an NCCL pick without the machine's node size");
    plain.set("gpus_per_node", std::to_string(pick.gpus_per_node));
  }
  if (chain) {
    plain.set("channels", std::to_string(pick.channels));
  } else if (!plain.has("pipeline")) {
    SSIM_CHECK(pick.pipeline >= 1, "an NCCL pick without its pipeline depth");
    plain.set("pipeline", std::to_string(pick.pipeline));
  }
  return plain;
}

}  // namespace ssim::alg
