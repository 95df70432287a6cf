// Internal to the schedule readers (schedule_json.cpp, schedule_bin.cpp): the sink behind
// verify_schedule_json and verify_schedule_file. It builds a RoundVerifier from the header the
// reader passes on and verifies each round as it arrives, so memory holds the verifier's state
// and one round. `before` sees the header before the verifier is built, `each` every round after
// the verifier; both are optional and what they throw reaches the reader (which keeps it, see
// ScheduleJsonSink). Not for use outside algorithms/.
#pragma once

#include <functional>
#include <optional>

#include "algorithms/schedule.hpp"
#include "algorithms/schedule_json.hpp"
#include "algorithms/verifier.hpp"
#include "common/error.hpp"

namespace ssim::alg::detail {

class VerifyingSink : public ScheduleJsonSink {
 public:
  // Keeps references to `before` and `each`: they outlive the sink.
  VerifyingSink(const std::function<void(const Schedule&)>& before,
                const std::function<void(const Round&)>& each)
      : before_(before), each_(each) {}
  void header(const Schedule& header) override {
    if (before_) before_(header);
    verifier_.emplace(header);
  }
  void round(const Round& round) override {
    verifier_->add(round);
    if (each_) each_(round);
  }
  // After the reader returned without error (it passed the header on).
  VerifyResult finish() {
    SSIM_CHECK(verifier_.has_value(), "a schedule read without error has its header");
    return verifier_->finish();
  }

 private:
  const std::function<void(const Schedule&)>& before_;
  const std::function<void(const Round&)>& each_;
  std::optional<RoundVerifier> verifier_;
};

}  // namespace ssim::alg::detail
