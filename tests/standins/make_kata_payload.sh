#!/usr/bin/env bash
# Build a stand-in kata payload tarball, laid out like kata-deploy's /opt/kata,
# for the coco role's tests (no VM, no real kata here).
#
#   tests/standins/make_kata_payload.sh OUT.tar.gz [SHIM]...
#   (default shims: qemu qemu-coco-dev qemu-tdx qemu-snp)
#
# Contents (paths relative to /):
#   opt/kata/bin/containerd-shim-kata-v2      the shim stand-in (runs the runc shim)
#   opt/kata/share/defaults/kata-containers/configuration-<shim>.toml
#   opt/kata/share/defaults/kata-containers/configuration.toml -> configuration-qemu.toml
#   opt/kata/VERSION                          "nodeguard-standin"
# The tarball is reproducible (fixed mtimes and owners, gzip -n).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[ $# -ge 1 ] || { echo "usage: $0 OUT.tar.gz [SHIM]..." >&2; exit 2; }
out=$1
shift
shims=("$@")
[ ${#shims[@]} -gt 0 ] || shims=(qemu qemu-coco-dev qemu-tdx qemu-snp)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/payload
defaults=$root/opt/kata/share/defaults/kata-containers
install -d -m 0755 "$root/opt/kata/bin" "$defaults"
install -m 0755 "$HERE/containerd-shim-kata-v2" "$root/opt/kata/bin/containerd-shim-kata-v2"
echo nodeguard-standin >"$root/opt/kata/VERSION"

for shim in "${shims[@]}"; do
    case "$shim" in
        clh*) hypervisor=clh ;;
        fc*) hypervisor=firecracker ;;
        dragonball*) hypervisor=dragonball ;;
        *) hypervisor=qemu ;;
    esac
    case "$shim" in
        *-tdx | *-snp | *-coco-dev | *-se) confidential=true ;;
        *) confidential=false ;;
    esac
    cat >"$defaults/configuration-$shim.toml" <<TOML
# Stand-in kata-containers configuration for the "$shim" shim.
# nodeguard test payload: the shim stand-in ignores this file and runs the
# runc shim; no virtual machine is started.
[hypervisor.$hypervisor]
path = "/opt/kata/bin/$hypervisor-system-x86_64"
kernel = "/opt/kata/share/kata-containers/vmlinux.container"
image = "/opt/kata/share/kata-containers/kata-containers.img"
machine_type = "q35"
confidential_guest = $confidential
default_vcpus = 1
default_memory = 2048

[agent.kata]
dial_timeout = 45

[runtime]
internetworking_model = "tcfilter"
disable_guest_seccomp = true
sandbox_cgroup_only = false
TOML
done
if [ -e "$defaults/configuration-qemu.toml" ]; then
    ln -s configuration-qemu.toml "$defaults/configuration.toml"
fi

mkdir -p "$(dirname "$out")"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$root" -cf - opt | gzip -n >"$out.part"
mv "$out.part" "$out"
echo "$out: kata stand-in payload for shims: ${shims[*]}"
