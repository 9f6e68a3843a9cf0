#!/usr/bin/env bash
# Build Lockstep's node image without a registry: debootstrap a Debian 12
# root file system and `podman import` it.
#
# The image is tagged with a hash of this recipe, so it is built once per
# machine and rebuilt only when the recipe changes:
#   localhost/lockstep-node:debian12-<hash>  (immutable, one per recipe)
#   localhost/lockstep-node:debian12         (what molecule and the demo use)
#
# Users who can pull from a registry can build molecule/image/Containerfile
# instead (debian:12 or ubuntu:22.04) and tag it the same way.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${LOCKSTEP_DEBIAN_MIRROR:=http://deb.debian.org/debian}"
: "${LOCKSTEP_DEBIAN_SECURITY_MIRROR:=http://deb.debian.org/debian-security}"
: "${LOCKSTEP_NODE_IMAGE:=localhost/lockstep-node:debian12}"
suite=bookworm
# What Ansible, systemd and the roles' first tasks need on a fresh node, and
# sshd: Ansible reaches the nodes over SSH, as it reaches a real cluster.
packages=python3,python3-apt,systemd,systemd-sysv,dbus,sudo,ca-certificates,gnupg,iproute2,procps,locales,tzdata,kmod,openssh-server

recipe_hash=$( { cat "$0"; echo "$suite $packages $LOCKSTEP_DEBIAN_MIRROR $LOCKSTEP_DEBIAN_SECURITY_MIRROR"; } | sha256sum | cut -c1-12)
pinned="${LOCKSTEP_NODE_IMAGE}-${recipe_hash}"

if podman image exists "$pinned"; then
  podman tag "$pinned" "$LOCKSTEP_NODE_IMAGE"
  echo "node image $pinned is up to date"
  exit 0
fi

rootfs=$(mktemp -d /var/tmp/lockstep-rootfs.XXXXXX)
trap 'rm -rf "$rootfs"' EXIT
echo "building node image $pinned (debootstrap $suite from $LOCKSTEP_DEBIAN_MIRROR)"
debootstrap --variant=minbase --include="$packages" "$suite" "$rootfs" "$LOCKSTEP_DEBIAN_MIRROR" >/dev/null

# Same components a GPU node needs (the NVIDIA driver lives in non-free).
cat >"$rootfs/etc/apt/sources.list" <<SRC
deb $LOCKSTEP_DEBIAN_MIRROR $suite main contrib non-free non-free-firmware
deb $LOCKSTEP_DEBIAN_MIRROR $suite-updates main contrib non-free non-free-firmware
deb $LOCKSTEP_DEBIAN_SECURITY_MIRROR $suite-security main contrib non-free non-free-firmware
SRC
# A container has no consoles or hardware to wait for.
for unit in getty.target systemd-logind.service systemd-udevd.service \
            systemd-udev-trigger.service systemd-remount-fs.service \
            sys-kernel-config.mount sys-kernel-debug.mount dev-hugepages.mount; do
  ln -sf /dev/null "$rootfs/etc/systemd/system/$unit"
done
rm -f "$rootfs"/etc/machine-id && touch "$rootfs/etc/machine-id"
# Root logs in with the checkout's throwaway key only (scripts/bootstrap makes
# .cache/ssh/lockstep_ed25519; containers get its public half as
# /root/.ssh/authorized_keys). TEST NODES ONLY: every container of this image
# shares the host keys made here, so clients do not pin them.
cat >"$rootfs/etc/ssh/sshd_config.d/lockstep-test-node.conf" <<'SSHD'
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
UseDNS no
SSHD
# Entry point of nodes that cannot run systemd (molecule/nccl: unprivileged,
# in user namespaces): put the key mounted at /srv/lockstep-ssh into place
# (a key mounted from the host would belong to nobody there) and run sshd.
cat >"$rootfs/usr/local/sbin/lockstep-sshd" <<'ENTRY'
#!/bin/sh
set -e
install -D -m 0600 /srv/lockstep-ssh/authorized_keys /root/.ssh/authorized_keys
mkdir -p /run/sshd
exec /usr/sbin/sshd -D -e
ENTRY
chmod 0755 "$rootfs/usr/local/sbin/lockstep-sshd"
chroot "$rootfs" apt-get clean
rm -rf "$rootfs"/var/lib/apt/lists/*

tar -C "$rootfs" -c . | podman import \
  --change 'CMD ["/sbin/init"]' --change 'STOPSIGNAL SIGRTMIN+3' \
  --change "LABEL org.lockstep.recipe=$recipe_hash" - "$pinned" >/dev/null
podman tag "$pinned" "$LOCKSTEP_NODE_IMAGE"
echo "built $pinned"
