#include "common/cancel.hpp"

#include <utility>

namespace ssim {
namespace {
thread_local CancellationCheck* current = nullptr;
thread_local const std::function<void()>* current_check = nullptr;
}  // namespace

CancellationCheck::CancellationCheck(std::function<void()> check)
    : check_(std::move(check)), previous_(current) {
  current = this;
  current_check = &check_;
}

CancellationCheck::~CancellationCheck() {
  current = previous_;
  current_check = previous_ ? &previous_->check_ : nullptr;
}

void cancellation_point() {
  if (current_check && *current_check) (*current_check)();
}

}  // namespace ssim
