#!/usr/bin/env bash
# Runs every role from the images scripts/build-images.sh unpacked (DIR/<target>: the root
# filesystem, DIR/<target>.config.json: the image's config), each from the slimmest image that
# holds it (docs/helm.md "The images"), each container as a cluster runs it:
# its own mount namespace with the image's root read-only, pivot_root'ed into, a tmpfs of its own
# on /tmp (the chart's emptyDir) and /dev/shm, the image's Env, ENTRYPOINT and user (10001 for
# tintype, 10002 for tintype-browser; group 10001 as the pods' fsGroup), no capability, no
# privilege escalation; all in one network namespace with only loopback, where nothing outside
# answers. Passes when:
#   - every command of tintype-core loads there (`tintype <command> --help`);
#   - `tintype policy` and `tintype guard` answer /healthz/ready (tintype-core image);
#   - the renderer (tintype-renderer image, TINTYPE_ISOLATION=pod) and the browser container
#     (tintype-browser image, the launcher on a socket in a directory both mount) become ready and
#     render one page of a site on loopback, fetched through the guard, for a lease policy granted;
#   - `tintype controller --help` answers (tintype-controller image);
#   - `tintype start` (tintype-all image) renders the same page for a key made with `tintype keys`.
# Also prints each role's time to /healthz/ready, its CPU and RSS then (docs/performance.md "Latest figures").
#
#   test/chart/image/run-roles.sh DIR          # as root
set -euo pipefail
dir=$(cd "${1:?usage: run-roles.sh DIR}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
[ "$(id -u)" -eq 0 ] || { echo "run-roles: needs root (namespaces, mounts)" >&2; exit 2; }
for t in tintype-core tintype-renderer tintype-controller tintype-browser tintype-all; do
  [ -d "$dir/$t" ] && [ -s "$dir/$t.config.json" ] || { echo "run-roles: $dir/$t is not an unpacked image" >&2; exit 2; }
done

work=$(mktemp -d /var/tmp/tintype-roles-XXXXXX)
trap 'rm -rf "$work"' EXIT
# A mount point the chart gives both containers of the renderer pod (the browser socket's emptyDir),
# made in the image's root as a container runtime makes a mount point.
for t in tintype-core tintype-renderer tintype-controller tintype-browser tintype-all; do mkdir -p "$dir/$t/run/tintype-browser"; done

# One container: run-container ROOTFS EMPTYDIR UID:GID:GROUPS ENV-FILE SOCKETDIR -- ARGV...
cat > "$work/run-container" <<'CONTAINER'
#!/usr/bin/env bash
set -euo pipefail
r=$1 tmp=$2 ids=$3 envfile=$4 sockdir=$5; shift 6
uid=${ids%%:*} rest=${ids#*:} gid=${rest%%:*} groups=${rest#*:}
mapfile -t env < "$envfile"
mount --bind "$r" "$r"
mount -t proc proc "$r/proc"
mount --rbind /dev "$r/dev"
mount --bind "$tmp" "$r/tmp"
mount -t tmpfs -o size=128m,mode=1777 tmpfs "$r/dev/shm"
mount --bind "$sockdir" "$r/run/tintype-browser"
mount -o remount,bind,ro "$r"
cd "$r"
pivot_root . mnt
cd /
/mnt/usr/bin/umount -l /mnt
exec setpriv --reuid="$uid" --regid="$gid" --groups="$groups" --inh-caps=-all --bounding-set=-all --no-new-privs \
  env -i "${env[@]}" "$@"
CONTAINER
chmod 0755 "$work/run-container"

exec unshare --net --pid --fork --mount --mount-proc --propagation private bash -s "$dir" "$work" "$here" <<'INNER'
set -euo pipefail
dir=$1 work=$2 here=$3
ip link set lo up
# Each container's /tmp (its emptyDir), owned as a kubelet makes one with fsGroup 10001.
emptydir() { mkdir -p "$work/$1"; chown 0:10001 "$work/$1"; chmod 2777 "$work/$1"; echo "$work/$1"; }
sock=$(emptydir browser-socket); chmod 2770 "$sock"
# The image's Env, then the container's (later wins), one per line; and the image's ENTRYPOINT.
envfile() { local name=$1 target=$2; shift 2
  node -e 'const c = require(process.argv[1]); const e = new Map((c.Env ?? []).map((x) => [x.split("=")[0], x]));
    for (const x of process.argv.slice(2)) e.set(x.split("=")[0], x); console.log([...e.values()].join("\n"))' \
    "$dir/$target.config.json" TINTYPE_LOG_LEVEL=warn "$@" > "$work/$name.env"; echo "$work/$name.env"; }
entrypoint() { node -e 'console.log((require(process.argv[1]).Entrypoint ?? []).join("\n"))' "$dir/$1.config.json"; }
user() { node -e 'console.log(require(process.argv[1]).User)' "$dir/$1.config.json"; }
# container NAME TARGET EMPTYDIR -- ARGS... (env from NAME's env file; in the background, output to $work/NAME.log)
container() { local name=$1 target=$2 tmp=$3; shift 4
  local ids; ids="$(user "$target"):10001"
  mapfile -t ep < <(entrypoint "$target")
  date +%s%3N > "$work/$name.started"
  unshare --mount --propagation private "$work/run-container" "$dir/$target" "$(emptydir "tmp-$tmp")" "$ids" \
    "$work/$name.env" "$sock" -- "${ep[@]}" "$@" > "$work/$name.log" 2>&1 &
  echo $! > "$work/$name.pid"
}
fail() { echo "run-roles: $*" >&2; for f in "$work"/*.log; do echo "--- ${f##*/}" >&2; tail -20 "$f" >&2; done; exit 1; }
trap 'kill -TERM $(jobs -p) 2> /dev/null; wait 2> /dev/null' EXIT

# Every command loads in the roles' image, which holds no Chromium, emoji data or Kubernetes client.
envfile help tintype-core > /dev/null
container help tintype-core help --
wait "$(cat "$work/help.pid")" || true
for command in $(sed -n 's/^  tintype \([a-z-]*\) .*/\1/p' "$work/help.log"); do
  [ "$command" = start ] || [ "$command" = renderer ] || [ "$command" = controller ] && continue
  cp "$work/help.env" "$work/help-$command.env"
  container "help-$command" tintype-core help -- "$command" --help
  wait "$(cat "$work/help-$command.pid")" || fail "tintype $command --help failed in tintype-core"
done
echo "run-roles: every command of tintype-core loads there"

# Lease keys as the install makes them: a key pair from `tintype keys lease-keypair` (policy signs,
# renderers hold the public key, claims and settles on policy's listener of its own), or, from a
# tintype that has no such command, one shared secret (settles on policy's one port).
envfile keypair tintype-core > /dev/null
container keypair tintype-core keypair -- keys lease-keypair
if wait "$(cat "$work/keypair.pid")" && grep -q '^TINTYPE_LEASE_PUBLIC_KEYS=' "$work/keypair.log"; then
  signing=$(grep '^TINTYPE_LEASE_SIGNING_KEY=' "$work/keypair.log")
  public=$(grep '^TINTYPE_LEASE_PUBLIC_KEYS=' "$work/keypair.log")
  # The renderer token, as the chart's Secret gives it to policy and the renderer container.
  token=TINTYPE_RENDERER_TOKEN=$(head -c 32 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')
  policy_leases=("$signing" "$public" "$token" TINTYPE_POLICY_SETTLE_PORT=8181)
  renderer_leases=("$public" "$token" TINTYPE_POLICY_URL=http://127.0.0.1:8181)
  # The guard checks each render's lease when the renderer opens it (docs/security.md "Egress policy per key").
  guard_leases=("$public")
else
  secret=TINTYPE_LEASE_SECRET=$(head -c 32 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')
  policy_leases=("$secret")
  renderer_leases=("$secret" TINTYPE_POLICY_URL=http://127.0.0.1:8081)
  guard_leases=()
fi
envfile policy tintype-core PORT=8081 TINTYPE_ADMIN_PORT=9081 "${policy_leases[@]}" > /dev/null
# The first key, as NOTES.txt makes it, in the policy pod (its emptyDir holds the SQLite store).
cp "$work/policy.env" "$work/keys.env"
container keys tintype-core policy -- keys create --plan free --name roles
wait "$(cat "$work/keys.pid")" || fail "tintype keys create failed"
key=$(grep -o 'sk_[A-Za-z0-9_-]*' "$work/keys.log" | head -1)
[ -n "$key" ] || fail "tintype keys create printed no secret"

# A site on loopback, reached only through the guard (GUARD_ALLOW_CIDRS lets the guard fetch it).
node "$here/site.mjs" 127.0.0.2 8000 > "$work/site.log" 2>&1 &
# The render token key the guard and the renderer container share, as the chart's Secret gives it.
token_key=$(head -c 32 /dev/urandom | base64)
envfile guard tintype-core PORT=3128 TINTYPE_ADMIN_PORT=9128 GUARD_ALLOW_CIDRS=127.0.0.2/32 GUARD_TOKEN_KEY="$token_key" "${guard_leases[@]}" > /dev/null
envfile renderer tintype-renderer PORT=8082 TINTYPE_ADMIN_PORT=9082 TINTYPE_ISOLATION=pod GUARD_URL=http://127.0.0.1:3128 GUARD_ALLOW_CIDRS=127.0.0.2/32 GUARD_TOKEN_KEY="$token_key" \
  "${renderer_leases[@]}" TINTYPE_SLOTS=1 \
  TINTYPE_BROWSER_SOCKET=/run/tintype-browser/cdp.sock > /dev/null
envfile browser tintype-browser TINTYPE_BROWSER_SOCKET=/run/tintype-browser/cdp.sock TINTYPE_BROWSER_CONNECTIONS=2 > /dev/null
# The renderer pod's two containers share only the socket's directory (and no /tmp).
container browser tintype-browser browser --
container policy tintype-core policy -- policy
container guard tintype-core guard -- guard
container renderer tintype-renderer renderer -- renderer
node "$here/drive.mjs" roles "$work" "$key" || fail "the roles did not answer as they should"

envfile controller tintype-controller > /dev/null
container controller tintype-controller controller -- controller --help
wait "$(cat "$work/controller.pid")" || fail "tintype controller --help failed"
grep -q 'usage: tintype controller' "$work/controller.log" || fail "tintype controller --help printed no usage"
echo "run-roles: tintype controller --help answered"

# One machine: tintype start from tintype-all, its key made beside it.
pids=$(for r in browser policy guard renderer; do cat "$work/$r.pid"; done)
kill -TERM $pids 2> /dev/null || true
for p in $pids; do wait "$p" 2> /dev/null || true; done
envfile start tintype-all PORT=8080 TINTYPE_ADMIN_PORT=9080 GUARD_ALLOW_CIDRS=127.0.0.2/32 TINTYPE_SLOTS=1 > /dev/null
container start tintype-all start -- start
envfile startkeys tintype-all > /dev/null
TINTYPE_ALL_ROOT="$dir/tintype-all" node "$here/drive.mjs" start "$work" || fail "tintype start did not answer as it should"
INNER
