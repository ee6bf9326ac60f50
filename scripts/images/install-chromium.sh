#!/bin/sh
# Installs Chromium's headless shell and every font of scripts/apt-packages.txt (with tini) in an
# image, and fails when the installed Chromium is older than the newest the image's apt sources
# offer (Debian 13 and its security suite): a stale browser never ships quietly (docs/helm.md
# "The images"). Run by the Dockerfile's stages that hold Chromium, as root, with apt's cache and
# lists as cache mounts. CHROMIUM_VERSION, when set (scripts/build-images.sh sets the archive's
# newest), pins that version, so a layer cached before a security update is never reused.
# Mesa's drivers are left out: libgbm1 (which Chromium links) requires mesa-libgallium, which brings
# LLVM and Z3 (about 190 MB), and the headless shell loads none of them (it renders with Skia on the
# CPU, and WebGL with its own SwiftShader); a package made here, tintype-no-mesa-drivers, provides
# mesa-libgallium at the candidate's version instead (its SBOM's pkg:deb/tintype/…) (docs/helm.md
# "The images").
#
#   install-chromium.sh APT-PACKAGES-FILE [EXTRA-PACKAGE...]
set -eu
list=$1
shift
rm -f /etc/apt/apt.conf.d/docker-clean
apt-get update
candidate=$(apt-cache policy chromium-headless-shell | sed -n 's/^ *Candidate: //p')
want=${CHROMIUM_VERSION:-$candidate}
mesa=$(apt-cache policy mesa-libgallium | sed -n 's/^ *Candidate: //p')
pkg=$(mktemp -d)
mkdir -p "$pkg/DEBIAN"
cat > "$pkg/DEBIAN/control" <<CONTROL
Package: tintype-no-mesa-drivers
Version: $mesa
Architecture: all
Origin: tintype
Maintainer: tintype <tintype@localhost>
Provides: mesa-libgallium (= $mesa)
Conflicts: mesa-libgallium
Description: Mesa's drivers left out of tintype's browser image
 Chromium's headless shell renders on the CPU with Skia and SwiftShader; libgbm1's
 drivers (mesa-libgallium, LLVM, Z3) are never loaded there.
CONTROL
dpkg-deb --root-owner-group --build "$pkg" /tmp/tintype-no-mesa-drivers.deb > /dev/null
dpkg -i /tmp/tintype-no-mesa-drivers.deb > /dev/null
rm -rf "$pkg" /tmp/tintype-no-mesa-drivers.deb
DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
  "chromium-headless-shell=$want" tini "$@" \
  $(grep '^fonts-' "$list" | sed 's/[[:space:]]//g')
installed=$(dpkg-query -W -f '${Version}' chromium-headless-shell)
if ! dpkg --compare-versions "$installed" ge "$candidate"; then
  echo "install-chromium: Chromium $installed is older than the archive's $candidate" >&2
  exit 1
fi
! dpkg-query -W -f '${Status}' mesa-libgallium 2> /dev/null | grep -q 'ok installed' \
  || { echo "install-chromium: mesa-libgallium was installed" >&2; exit 1; }
echo "install-chromium: Chromium $installed, the archive's newest"
