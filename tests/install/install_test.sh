#!/usr/bin/env bash
# `cmake --install` into a temporary prefix, then the installed stragglesim run from another
# folder: it must find the shipped default experiment and plot.py under PREFIX/share/stragglesim
# (not the source tree), print its version, and say where it looked when the data is missing.
# Usage: install_test.sh BUILD_DIR EXPECTED_VERSION
set -euo pipefail
build=$1
version=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
unset STRAGGLESIM_DATA_DIR STRAGGLESIM_PLOT_SCRIPT STRAGGLESIM_PYTHON

cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log" >&2; fail "cmake --install"; }
bin=$tmp/prefix/bin/stragglesim
share=$tmp/prefix/share/stragglesim
[[ -x $bin ]] || fail "no $bin"
[[ -f $share/plot.py ]] || fail "no $share/plot.py"
[[ -f $share/configs/experiments/default.yaml ]] || fail "no shipped default experiment"
[[ -f $share/configs/topologies/dgx_h100.yaml ]] || fail "no shipped topologies"
[[ -x $share/train_plot.py ]] || fail "no executable $share/train_plot.py"
doc=$tmp/prefix/share/doc/stragglesim
[[ -f $doc/README.md && -f $doc/docs/user_guide.md && -f $doc/docs/tutorial.md ]] || fail "no guides in $doc"
[[ -f $doc/docs/img/default_speedup_vs_ranks.png ]] || fail "no README figure in $doc/docs/img"
# CMake's own record of what it installed, rewritten by every install (docs/cli.md says so).
grep -qx "$share/train_plot.py" "$build/install_manifest.txt" || fail "install_manifest.txt lacks train_plot.py"

# The Python package when it is not built (scripts/run.sh builds stragglesim alone): its install
# rules, run on a build folder without the module, install nothing of it, say so, and do not
# fail (`cmake --install` after `scripts/run.sh` stopped at the missing module, issue 43).
if [[ -f $build/python/cmake_install.cmake ]]; then
  sed "s|$build/python/stragglesim/|$tmp/not_built/|g" "$build/python/cmake_install.cmake" >"$tmp/python_install.cmake"
  cmake -DCMAKE_INSTALL_PREFIX="$tmp/prefix_cli" -P "$tmp/python_install.cmake" >"$tmp/python_install.log" 2>&1 ||
    { cat "$tmp/python_install.log" >&2; fail "the Python package's install rules failed without the module"; }
  grep -q "the Python package is not built, not installed" "$tmp/python_install.log" ||
    fail "no note that the Python package was left out: $(cat "$tmp/python_install.log")"
  # No file, and no empty package folder (Python would import it as a namespace package).
  [[ ! -e $tmp/prefix_cli ]] || fail "the install left $(find "$tmp/prefix_cli") without the module"
  # A folder that was there before stays.
  mkdir -p "$tmp/prefix_kept/lib"
  cmake -DCMAKE_INSTALL_PREFIX="$tmp/prefix_kept" -P "$tmp/python_install.cmake" >/dev/null 2>&1 ||
    fail "the Python package's install rules failed without the module (existing prefix)"
  [[ -d $tmp/prefix_kept/lib && -z $(ls -A "$tmp/prefix_kept/lib") ]] ||
    fail "the install changed what was there: $(find "$tmp/prefix_kept")"
fi

mkdir "$tmp/elsewhere"
cd "$tmp/elsewhere"

# The Python package, when built: imported from the prefix alone (a clean PYTHONPATH pointing at
# the installed dist-packages), not from the build tree, and it finds the shipped topologies.
py=$(sed -n 's/^_*Python3_EXECUTABLE:[A-Z]*=//p' "$build/CMakeCache.txt" | head -1)
# (no prefix/lib at all when the package is not built: find fails, which is not an error here)
pkg=$( { find "$tmp/prefix/lib" -path '*/stragglesim/__init__.py' 2>/dev/null || true; } | head -1)
if compgen -G "$build/python/stragglesim/_core*.so" >/dev/null; then
  [[ -n $pkg ]] || fail "the Python package is built but cmake --install did not install it"
  [[ -x $py ]] || fail "no Python3_EXECUTABLE in $build/CMakeCache.txt ('$py')"
fi
if [[ -n $pkg ]]; then
  out=$(env -u PYTHONPATH PYTHONPATH="$(dirname "$(dirname "$pkg")")" PYTHONNOUSERSITE=1 "$py" -c '
import stragglesim as ss
print(ss.__file__)
print(ss.__version__)
print(ss.schedule("ring", 4)["chunks"])
print(ss.advise("dgx_h100", "1MiB", iterations=2, algorithms="ring", jobs=1).attrs["topology"])
' 2>&1) || fail "the installed Python package: $out"
  [[ $(sed -n 1p <<<"$out") == "$tmp/prefix/"* ]] || fail "stragglesim imported from $(sed -n 1p <<<"$out"), not the prefix"
  [[ $(sed -n 2p <<<"$out") == "$version" && $(sed -n 3p <<<"$out") == 4 ]] || fail "installed package printed: $out"
fi

out=$("$bin" --version)
[[ $out == "stragglesim $version" ]] || fail "--version printed '$out', expected 'stragglesim $version'"

# The default experiment, with a stand-in python that records how plot.py is called.
cat >"$tmp/fake_python" <<FAKE
#!/bin/sh
[ "\$1" = -c ] && exit 0   # "import matplotlib": present
echo "\$@" >>"$tmp/plot_calls"
FAKE
chmod +x "$tmp/fake_python"
rc=0
STRAGGLESIM_PYTHON=$tmp/fake_python "$bin" run -o "$tmp/out" -n 3 -q >"$tmp/run.out" 2>"$tmp/run.err" || rc=$?
[[ $rc -eq 0 ]] || { cat "$tmp/run.err" >&2; fail "installed stragglesim run exited $rc"; }
[[ -f $tmp/out/results.csv ]] || fail "no results.csv in $tmp/out"
grep -q "$share/configs/experiments/default.yaml" "$tmp/out/results.json" ||
  fail "results.json does not name the shipped default experiment $share/configs/experiments/default.yaml"
[[ ! -e $tmp/elsewhere/results ]] || fail "wrote results/ into the working directory despite -o"
grep -q "drawing plots" "$tmp/run.out" || fail "no 'drawing plots' line: $(cat "$tmp/run.out")"
[[ $(wc -l <"$tmp/plot_calls") -eq 1 ]] || fail "plot.py called $(wc -l <"$tmp/plot_calls") times, expected once"
grep -q "^$share/plot.py --format png $tmp/out\$" "$tmp/plot_calls" ||
  fail "plot.py call was: $(cat "$tmp/plot_calls")"

# A binary copied away from its share/ folder finds nothing, says where it looked, and exits non-zero;
# STRAGGLESIM_DATA_DIR points it at the data.
mkdir "$tmp/copy"
cp "$bin" "$tmp/copy/stragglesim"
if "$tmp/copy/stragglesim" run -o "$tmp/out2" --no-plots -n 3 -q >/dev/null 2>"$tmp/copy.err"; then
  fail "a copied binary without data ran"
fi
grep -q "STRAGGLESIM_DATA_DIR" "$tmp/copy.err" || fail "copied binary's error: $(cat "$tmp/copy.err")"
[[ $(wc -l <"$tmp/copy.err") -eq 1 ]] || fail "more than one error line: $(cat "$tmp/copy.err")"
STRAGGLESIM_DATA_DIR=$share "$tmp/copy/stragglesim" run -o "$tmp/out2" --no-plots -n 3 -q >/dev/null ||
  fail "STRAGGLESIM_DATA_DIR=$share not used"
[[ -f $tmp/out2/results.csv ]] || fail "no results.csv with STRAGGLESIM_DATA_DIR"
echo "install test passed"
