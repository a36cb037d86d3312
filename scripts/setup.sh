#!/usr/bin/env bash
# Installs the Debian 12 packages cnnpar needs (only the missing ones); --test adds what the
# tests need beyond the build. Run as root.
set -euo pipefail
packages=(build-essential cmake pkg-config libsimgrid-dev mpich libmpich-dev libopenblas-dev
          nlohmann-json3-dev libfmt-dev catch2 libcli11-dev libbenchmark-dev gnuplot-nox libtbb-dev
          libdnnl-dev ocl-icd-opencl-dev libgsl-dev)
# ocl-icd-opencl-dev: oneDNN's CMake config requires OpenCL, but libdnnl-dev only recommends
# it, so --no-install-recommends on a fresh machine leaves find_package(dnnl) failing.
# libgsl-dev: GSL's nonlinear least squares behind `cnnpar fit`.
# The tests also fuzz the parsers (tests/fuzz): clang and its libFuzzer runtime.
# The HTML reports are checked in headless Chromium; the graph zoo against torchvision's models.
# Sweeps and runs are tested against a Slurm started on this machine (tests/slurm).
[ "${1:-}" = "--test" ] && packages+=(clang libclang-rt-14-dev chromium python3-torchvision slurmctld slurmd slurm-client munge)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "cnnpar: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
