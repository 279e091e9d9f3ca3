#!/bin/sh
# Installs, from Debian 12's archive, everything the test suite needs. Run as root or with sudo.
set -eu
packages="cmake ninja-build g++ clang libclang-rt-14-dev meson pkg-config doctest-dev git python3"
packages="$packages python3-torch slurm-client iproute2 util-linux openssh-server openssh-client"
if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# shellcheck disable=SC2086
$sudo apt-get install -y -qq --no-install-recommends $packages
