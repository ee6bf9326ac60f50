#!/bin/sh
# Installs Chromium's headless shell and every font of scripts/apt-packages.txt (with tini) in an
# image, and fails when the installed Chromium is older than the newest the image's apt sources
# offer (Debian 13 and its security suite): a stale browser never ships quietly (docs/helm.md
# "The images"). Run by the Dockerfile's stages that hold Chromium, as root, with apt's cache and
# lists as cache mounts. CHROMIUM_VERSION, when set (scripts/build-images.sh sets the archive's
# newest), pins that version, so a layer cached before a security update is never reused.
#
#   install-chromium.sh APT-PACKAGES-FILE [EXTRA-PACKAGE...]
set -eu
list=$1
shift
rm -f /etc/apt/apt.conf.d/docker-clean
apt-get update
candidate=$(apt-cache policy chromium-headless-shell | sed -n 's/^ *Candidate: //p')
want=${CHROMIUM_VERSION:-$candidate}
DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
  "chromium-headless-shell=$want" tini "$@" \
  $(grep '^fonts-' "$list" | sed 's/[[:space:]]//g')
installed=$(dpkg-query -W -f '${Version}' chromium-headless-shell)
if ! dpkg --compare-versions "$installed" ge "$candidate"; then
  echo "install-chromium: Chromium $installed is older than the archive's $candidate" >&2
  exit 1
fi
echo "install-chromium: Chromium $installed, the archive's newest"
