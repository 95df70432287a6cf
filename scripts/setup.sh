#!/usr/bin/env bash
# Installs the Debian packages stragglesim needs when they are missing (as root), or says
# exactly what is missing (otherwise). CUDA and NCCL are not Debian packages: the GPU backend
# is built when they are found (see docs/gpu.md).
set -euo pipefail
# `setup.sh --run` (scripts/run.sh): only what building and running the CLI needs, so that the
# first answer does not wait for the test tools (scripts/test.sh installs the rest).
# `setup.sh --fuzz` (scripts/fuzz.sh): also clang and its libFuzzer runtime, needed only for fuzzing.
mode=${1:-}
case $mode in
  "" | --run | --fuzz) ;;
  *) echo "setup.sh: unknown option '$mode' (--run or --fuzz)" >&2; exit 2 ;;
esac

# Building `stragglesim` and drawing its plots.
packages=(
  cmake ninja-build g++ pkg-config
  libboost-graph-dev libboost-math-dev libeigen3-dev libyaml-cpp-dev nlohmann-json3-dev libcli11-dev
  python3 python3-matplotlib
)
if [[ $mode != --run ]]; then
  # The test suite, the benchmarks, the MPI run group and the SimGrid cross-check.
  packages+=(
    libgtest-dev libgmock-dev libbenchmark-dev
    libopenmpi-dev openmpi-bin
    libsimgrid-dev  # only the SimGrid cross-check of the flow model (tests/simgrid, ctest -L simgrid)
    # the Python package (python/, docs/python.md) for /usr/bin/python3, and its tests (ctest -L python)
    python3-dev pybind11-dev python3-pybind11 python3-numpy python3-yaml python3-pytest python3-torch
  )
fi
if [[ $mode == --fuzz ]]; then
  packages+=(clang-14 libclang-rt-14-dev llvm-14)  # llvm-14: llvm-symbolizer for sanitizer reports
fi

# Optional: installed when setup runs as root, never required. cadical is the SAT solver that
# algorithms/tools/stragglar_sat runs (its tests skip without one).
optional=(cadical)
[[ $mode == --run ]] && optional=()

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
missing=()
for p in "${packages[@]}"; do
  installed "$p" || missing+=("$p")
done
missing_optional=()
for p in "${optional[@]}"; do
  installed "$p" || missing_optional+=("$p")
done

if [[ ${#missing[@]} -eq 0 && (${#missing_optional[@]} -eq 0 || $(id -u) -ne 0) ]]; then
  exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
  echo "stragglesim setup: missing Debian packages: ${missing[*]}" >&2
  echo "install them with: sudo apt-get install ${missing[*]}" >&2
  exit 1
fi

echo "stragglesim setup: installing ${missing[*]} ${missing_optional[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
if [[ ${#missing[@]} -gt 0 ]]; then
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if [[ ${#missing_optional[@]} -gt 0 ]]; then
  apt-get install -y -qq --no-install-recommends "${missing_optional[@]}" >/dev/null 2>&1 ||
    echo "stragglesim setup: optional ${missing_optional[*]} not installed (not needed to build)" >&2
fi
echo "stragglesim setup: done" >&2
