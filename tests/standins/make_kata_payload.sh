#!/usr/bin/env bash
# Build a stand-in kata payload tarball, laid out like kata-deploy's /opt/kata,
# for the coco role's tests (no VM, no real kata here).
#
#   tests/standins/make_kata_payload.sh [--layout 3|4] OUT.tar.{gz,xz,zst} [SHIM]...
#   (default shims: qemu qemu-coco-dev qemu-tdx qemu-snp; with --layout 4
#   also dragonball and qemu-runtime-rs)
#
# The compression follows OUT's name: .tar.gz (gzip -n), .tar.xz (kata up to
# 3.20), .tar.zst (kata 3.21 and later, 4.x; needs zstd).
#
# Contents (paths relative to /):
#   opt/kata/bin/containerd-shim-kata-v2      the shim stand-in (runs the runc shim)
#   opt/kata/share/defaults/kata-containers/configuration-<shim>.toml
#   opt/kata/share/defaults/kata-containers/configuration.toml -> configuration-qemu.toml
#   opt/kata/VERSION                          "nodeguard-standin"
# --layout 4 (kata 4.x: runtime-rs beside the Go runtime) adds
#   opt/kata/runtime-rs/bin/containerd-shim-kata-v2   the same stand-in
#   opt/kata/share/defaults/kata-containers/runtime-rs/configuration-<shim>.toml
#                                             for the runtime-rs shims (dragonball,
#                                             cloud-hypervisor, *-runtime-rs)
# The tarball is reproducible (fixed mtimes and owners, no names or times in
# the compressed stream).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
layout=3
if [ "${1:-}" = --layout ]; then
    layout=${2:-}
    shift 2
fi
case "$layout" in 3 | 4) ;; *) echo "--layout must be 3 or 4" >&2; exit 2 ;; esac
[ $# -ge 1 ] || { echo "usage: $0 [--layout 3|4] OUT.tar.{gz,xz,zst} [SHIM]..." >&2; exit 2; }
out=$1
shift
case "$out" in
    *.tar.gz | *.tgz) compress=(gzip -n) ;;
    *.tar.xz) compress=(xz -T1 -c) ;;
    *.tar.zst) compress=(zstd -q -c --no-progress) ;;
    *) echo "$out: the name must end in .tar.gz, .tar.xz or .tar.zst" >&2; exit 2 ;;
esac
shims=("$@")
if [ ${#shims[@]} -eq 0 ]; then
    shims=(qemu qemu-coco-dev qemu-tdx qemu-snp)
    [ "$layout" = 3 ] || shims+=(dragonball qemu-runtime-rs)
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/payload
defaults=$root/opt/kata/share/defaults/kata-containers
install -d -m 0755 "$root/opt/kata/bin" "$defaults"
install -m 0755 "$HERE/containerd-shim-kata-v2" "$root/opt/kata/bin/containerd-shim-kata-v2"
echo nodeguard-standin >"$root/opt/kata/VERSION"
if [ "$layout" = 4 ]; then
    install -d -m 0755 "$root/opt/kata/runtime-rs/bin" "$defaults/runtime-rs"
    install -m 0755 "$HERE/containerd-shim-kata-v2" "$root/opt/kata/runtime-rs/bin/containerd-shim-kata-v2"
fi

for shim in "${shims[@]}"; do
    folder=$defaults
    case "$shim" in
        dragonball | cloud-hypervisor | *-runtime-rs)
            [ "$layout" = 4 ] || { echo "$shim is a runtime-rs shim: use --layout 4" >&2; exit 2; }
            folder=$defaults/runtime-rs ;;
    esac
    case "$shim" in
        clh* | cloud-hypervisor) hypervisor=clh ;;
        fc*) hypervisor=firecracker ;;
        dragonball*) hypervisor=dragonball ;;
        *) hypervisor=qemu ;;
    esac
    case "$shim" in
        *-tdx | *-snp | *-coco-dev | *-se) confidential=true ;;
        *) confidential=false ;;
    esac
    cat >"$folder/configuration-$shim.toml" <<TOML
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
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$root" -cf - opt | "${compress[@]}" >"$out.part"
mv "$out.part" "$out"
echo "$out: kata stand-in payload (layout $layout) for shims: ${shims[*]}"
