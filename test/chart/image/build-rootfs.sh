#!/usr/bin/env bash
# Builds, without a Docker engine or a registry, the root filesystem the Dockerfile describes:
# Debian bookworm from Debian's mirror (mmdebstrap), the same packages (chromium-headless-shell,
# tini, iproute2, CA certificates and every fonts-* of scripts/apt-packages.txt), user 10001,
# this machine's Node 20+ at /usr/local/bin/node (the Dockerfile takes it from the node:20
# bookworm-slim image instead), the roles' folders and the production packages under /app.
#
#   test/chart/image/build-rootfs.sh DIR     # then: test/chart/image/run-renderer.sh DIR
#
# Needs root, mmdebstrap (apt-get install mmdebstrap) and Debian's mirror; about 8 minutes on a
# busy 2-core machine, most of it downloading and unpacking Chromium and the fonts.
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
out=${1:?usage: build-rootfs.sh DIR}
[ -e "$out" ] && { echo "build-rootfs: $out exists" >&2; exit 2; }
command -v mmdebstrap > /dev/null || { echo "build-rootfs: needs mmdebstrap (apt-get install mmdebstrap)" >&2; exit 2; }

fonts=$(grep '^fonts-' "$root/scripts/apt-packages.txt" | sed 's/[[:space:]]//g' | paste -sd, -)
mmdebstrap --variant=apt --mode=root \
  --include="chromium-headless-shell,tini,iproute2,ca-certificates,$fonts" \
  --customize-hook='chroot "$1" useradd --uid 10001 --user-group --home-dir /tmp --no-create-home --shell /usr/sbin/nologin tintype' \
  --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*' \
  bookworm "$out" \
  "deb http://deb.debian.org/debian bookworm main" \
  "deb http://deb.debian.org/debian bookworm-updates main" \
  "deb http://deb.debian.org/debian-security bookworm-security main"

# Node, the application (what .dockerignore lets in) and the lockfile's production packages.
install -m 0755 "$(readlink -f "$(command -v node)")" "$out/usr/local/bin/node"
mkdir -p "$out/app"
for entry in package.json package-lock.json tsconfig.json bin lib policy renderer guard envoy controller; do
  if [ -e "$root/$entry" ]; then cp -a "$root/$entry" "$out/app/"; fi
done
cp -a "$root/node_modules" "$out/app/node_modules"
(cd "$out/app" && npm prune --omit=dev --no-audit --no-fund > /dev/null)
ln -s /app/bin/tintype "$out/usr/local/bin/tintype"
chown -R root:root "$out/app"
echo "build-rootfs: $out ($(du -sh "$out" | cut -f1))"
