#!/usr/bin/env bash
# Runs `tintype guard` and `tintype renderer` from a root filesystem made by build-rootfs.sh,
# as the image runs them in a cluster: uid 10001 under tini, a read-only root, writable only
# /tmp and a memory-backed /dev/shm, TINTYPE_ISOLATION=pod with GUARD_URL, in a network
# namespace of their own (only loopback). Passes when the renderer's /healthz/ready answers 200,
# which it does only after its start-up self-test passed (README: Start-up self-test).
#
#   test/chart/image/run-renderer.sh DIR
set -euo pipefail
rootfs=$(cd "${1:?usage: run-renderer.sh DIR}" && pwd)
[ "$(id -u)" -eq 0 ] || { echo "run-renderer: needs root (mounts, chroot)" >&2; exit 2; }

exec unshare --net --mount --pid --fork --propagation private bash -s "$rootfs" <<'INNER'
set -euo pipefail
r=$1
ip link set lo up
# The kernel's /proc and /dev, tmpfs on /tmp and /dev/shm, then the root read-only and made the
# root with pivot_root as a container runtime does (in a chroot the kernel refuses the user
# namespace Chromium's own sandbox needs).
mount --bind "$r" "$r"
mount -t proc proc "$r/proc"
mount --rbind /dev "$r/dev"
mount -t tmpfs -o size=512m,mode=1777 tmpfs "$r/tmp"
mount -t tmpfs -o size=128m,mode=1777 tmpfs "$r/dev/shm"
mount -o remount,bind,ro "$r"
cd "$r"
pivot_root . mnt
cd /
# The image has no umount (Debian's mount package is not essential): the old root's own one.
/mnt/usr/bin/umount -l /mnt
export PATH=/usr/local/bin:/usr/bin:/bin

# As the pod's securityContext: uid and gid 10001, no capability, no privilege escalation.
as_pod() {
  setpriv --reuid=10001 --regid=10001 --clear-groups --inh-caps=-all --bounding-set=-all --no-new-privs \
    env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/tmp TINTYPE_DATA_DIR=/tmp/tintype TINTYPE_LOG_LEVEL=warn "$@"
}
# /var/tmp is writable by anyone on a writable root: a write there fails only if the root is
# read-only, as readOnlyRootFilesystem makes it.
if as_pod sh -c 'touch /var/tmp/x' 2> /dev/null; then echo "run-renderer: the root is writable" >&2; exit 1; fi

as_pod PORT=3128 TINTYPE_ADMIN_PORT=9128 tini -s -- tintype guard &
as_pod PORT=8082 TINTYPE_ADMIN_PORT=9082 TINTYPE_ISOLATION=pod GUARD_URL=http://127.0.0.1:3128 TINTYPE_SLOTS=2 \
  tini -s -- tintype renderer &
# Waits for readiness, at most 3 minutes.
set +e
node --input-type=module -e '
  for (let i = 0; i < 180; i++) {
    const res = await fetch("http://127.0.0.1:9082/healthz/ready").catch(() => undefined);
    if (res?.status === 200) {
      console.log("run-renderer: /healthz/ready 200: the self-test passed, as uid 10001 on a read-only root");
      process.exit(0);
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
  console.error("run-renderer: the renderer never became ready");
  process.exit(1);
'
status=$?
kill -TERM $(jobs -p) 2> /dev/null
wait
exit $status
INNER
