#!/bin/sh
# Installs, from Debian 12's archive, everything the test suite needs. Run as root or with sudo.
set -eu
packages="cmake ninja-build g++ clang clang-format libclang-rt-14-dev meson pkg-config doctest-dev git python3"
packages="$packages python3-torch slurm-client iproute2 util-linux openssh-server openssh-client python3-yaml python3-jsonschema"
packages="$packages slurmctld slurmd munge mmdebstrap groff-base man-db zsh"
# run --metrics is read by node_exporter's textfile collector, promtool and a Prometheus server.
packages="$packages prometheus prometheus-node-exporter"
# pip, setuptools and wheel install hetlaunch_shares offline (pip install --no-build-isolation ./python).
packages="$packages python3-pip python3-setuptools python3-wheel"
# kubectl reads the JobSet manifests back (tests/cli/hostile_launch_test.py). A machine that has
# a kubectl of its own (another package owns /usr/bin/kubectl) keeps it.
command -v kubectl >/dev/null 2>&1 || packages="$packages kubernetes-client"
if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# The tests start their own sshd (and Slurm daemons) in network namespaces; the packages' own
# services are not wanted running on the machine. A policy-rc.d that says "no" keeps the
# installation from starting them; it is removed again (unless it was there before).
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
  $sudo chmod 755 "$policy"
  trap '$sudo rm -f "$policy"' EXIT
fi
# shellcheck disable=SC2086
$sudo apt-get install -y -qq --no-install-recommends $packages
