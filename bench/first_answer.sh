#!/usr/bin/env bash
# Times a newcomer's first answer: `./scripts/run.sh` from a fresh clone on a fresh Debian machine,
# the installation of the missing Debian packages included.
#
#   bench/first_answer.sh DIR [--keep]
#
# As root, with debootstrap and network access to a Debian mirror. It makes DIR (which must not
# exist), installs Debian 12 (bookworm, minbase) into DIR/root with what a new machine of our CI's
# kind already has (g++, cmake, GoogleTest, GoogleMock, Google Benchmark, git, python3), clones
# this checkout's HEAD into it and runs, inside the chroot, `scripts/setup.sh --run` and then
# `scripts/run.sh`, each timed. It prints one line per step and the total, the figure the
# README quotes. Only /proc is mounted into the chroot (debootstrap makes the device nodes of its
# own /dev), and DIR is removed at the end unless --keep, after checking that nothing is mounted
# under it. STRAGGLESIM_DEBIAN_MIRROR overrides the mirror (default http://deb.debian.org/debian).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
usage() { echo "usage: bench/first_answer.sh DIR [--keep]" >&2; exit 2; }
[[ $# -ge 1 && $# -le 2 ]] || usage
dir=$1
keep=0
if [[ $# -eq 2 ]]; then
  [[ $2 == --keep ]] || usage
  keep=1
fi
[[ $(id -u) -eq 0 ]] || { echo "first_answer.sh: needs root (debootstrap, chroot)" >&2; exit 1; }
command -v debootstrap >/dev/null || { echo "first_answer.sh: needs debootstrap (apt-get install debootstrap)" >&2; exit 1; }
[[ ! -e $dir ]] || { echo "first_answer.sh: $dir exists; give a path to create" >&2; exit 1; }
mkdir -p "$(dirname "$dir")"
mkdir "$dir"
dir=$(cd "$dir" && pwd)
chroot_dir=$dir/root
mirror=${STRAGGLESIM_DEBIAN_MIRROR:-http://deb.debian.org/debian}

mounted_under() { awk -v d="$dir/" 'index($5, d) == 1 { found = 1 } END { exit !found }' /proc/self/mountinfo; }
cleanup() {
  if mountpoint -q "$chroot_dir/proc" 2>/dev/null; then umount "$chroot_dir/proc" || true; fi
  if [[ $keep -eq 1 ]]; then
    echo "first_answer.sh: kept $dir" >&2
  elif mounted_under; then
    echo "first_answer.sh: something is still mounted under $dir; not removing it" >&2
  else
    rm -rf --one-file-system "$dir"
  fi
}
trap cleanup EXIT

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

echo "first_answer.sh: installing Debian 12 into $chroot_dir (not timed)" >&2
debootstrap --variant=minbase \
  --include=g++,cmake,libgtest-dev,libgmock-dev,libbenchmark-dev,git,python3,ca-certificates,make \
  bookworm "$chroot_dir" "$mirror" >"$dir/debootstrap.log" 2>&1 || {
  tail -20 "$dir/debootstrap.log" >&2
  exit 1
}
cp /etc/resolv.conf "$chroot_dir/etc/resolv.conf"
mount -t proc proc "$chroot_dir/proc"
commit=$(git -C "$root" rev-parse HEAD)
in_chroot() { chroot "$chroot_dir" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root bash -c "$1"; }

t0=$(now)
git clone -q "$root" "$chroot_dir/src/stragglesim"
git -C "$chroot_dir/src/stragglesim" checkout -q "$commit"
t1=$(now)
in_chroot "cd /src/stragglesim && ./scripts/setup.sh --run" >"$dir/setup.log" 2>&1 || {
  cat "$dir/setup.log" >&2
  exit 1
}
t2=$(now)
in_chroot "cd /src/stragglesim && ./scripts/run.sh" >"$dir/run.out" 2>"$dir/run.err" || {
  tail -30 "$dir/run.err" >&2
  exit 1
}
t3=$(now)
grep -q "^plots: " "$dir/run.out" || { echo "first_answer.sh: run.sh printed no plots line" >&2; exit 1; }
objects=$(grep -c "Building CXX object" "$dir/run.err" || true)
echo "commit $commit, $(nproc) cores, load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
echo "clone:                 $(secs "$t0" "$t1") s"
echo "packages (setup --run): $(secs "$t1" "$t2") s"
echo "build ($objects objects) and run: $(secs "$t2" "$t3") s"
echo "first answer:          $(secs "$t0" "$t3") s"
