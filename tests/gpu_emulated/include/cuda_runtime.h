// The stand-in's cuda_runtime.h: the runtime API (cuda_runtime_api.h); see there why the
// emulated build has its own headers.
#pragma once

#include "cuda_runtime_api.h"
