#!/usr/bin/env bash
# Build the podman node images the Molecule scenarios and `make demo` run on.
#
#   tests/images/build.sh [bookworm|trixie|ctd21|all]...      (default: all)
#   tests/images/build.sh containerd2-deb   print the path of unstable's containerd
#                                           2.x .deb (fetched once), for host tests
#   tests/images/build.sh containerd17-deb  the same for trixie's containerd 1.7
#
# localhost/ng-node:bookworm  Debian 12, containerd 1.6 (config version 2)
# localhost/ng-node:trixie    Debian 13, containerd 1.7 (config version 2)
# localhost/ng-node:ctd21     Debian 12 + Debian unstable's containerd 2.x .deb
#                             (config version 3), bookworm's runc and systemd
#
# No registry is reachable: each image is a `debootstrap --variant=minbase`
# root filesystem turned into an image with `podman import`. systemd is PID 1
# (/sbin/init), containerd and runc are Debian packages, the containerd
# service is enabled, python3 and python3-tomlkit are there for the
# collection's modules, and /opt/nodeguard/probe-image.tar is a tiny busybox
# OCI image that the unit ng-probe-import.service imports into containerd's
# k8s.io namespace as localhost/ng-probe:latest at every boot.
#
# Like a kubelet node, every node also has its sandbox (pause) image in the
# k8s.io namespace, under the name its effective config gives (sandbox_image
# of config version 2, pinned_images.sandbox of version 3: for example
# registry.k8s.io/pause:3.6 on bookworm's containerd 1.6): a static /pause
# built from tests/images/pause/pause.c (sleeps until SIGTERM), written to
# /opt/nodeguard/pause-image.tar and imported at every boot by
# ng-pause-import.service. A node "prepared like a real kubelet node" is one
# with ng-probe-import.service disabled and localhost/ng-probe removed: only
# the pause image is left (molecule/readiness, make demo).
#
# Caching (a second run does nothing):
#   - an image whose tag exists with the same recipe label is kept;
#   - the finished root filesystem is kept as
#     $NG_IMAGE_CACHE/rootfs/<name>-<recipe>.tar, so a removed image is
#     re-imported in seconds;
#   - the bare debootstrap of each suite is kept as
#     $NG_IMAGE_CACHE/base/<suite>-<package set>.tar (ctd21 starts from
#     bookworm's), so a changed recipe does not debootstrap again;
#   - downloaded .debs are kept under $NG_IMAGE_CACHE/debs/.
# The recipe is a hash of this folder's files, so editing them rebuilds.
#
# Environment:
#   NG_IMAGE_CACHE    cache folder (default /var/cache/nodeguard)
#   NG_DEBIAN_MIRROR  Debian mirror (default http://deb.debian.org/debian)
#   NG_IMAGE_FORCE=1  rebuild even when cached
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${NG_IMAGE_CACHE:-/var/cache/nodeguard}
MIRROR=${NG_DEBIAN_MIRROR:-http://deb.debian.org/debian}
FORCE=${NG_IMAGE_FORCE:-0}
REPO=localhost/ng-node

log() { printf '[images %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
# retry [--what TEXT] CMD...: network steps retry with backoff and name what
# failed when they give up.
# shellcheck source-path=SCRIPTDIR/../.. source=.ci/retry.sh
source "$HERE/../../.ci/retry.sh"
die() { log "ERROR: $*"; exit 1; }

[ "$(id -u)" = 0 ] || die "must run as root (debootstrap, podman import)"
for tool in debootstrap podman python3 tar sha256sum cc; do
    command -v "$tool" >/dev/null || die "$tool not found (run: make deps)"
done

# Packages of every node. busybox-static gives the probe image its binary.
PKGS=systemd,systemd-sysv,dbus,sudo,procps,python3,python3-tomlkit,containerd,runc,busybox-static

recipe_hash() {
    # Everything under tests/images/ (this script included) plus the name.
    (
        cd "$HERE"
        find . -type f ! -name '*.pyc' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum
        echo "$1"
    ) | sha256sum | cut -c1-16
}

image_recipe() {
    podman image inspect --format '{{ index .Config.Labels "org.nodeguard.recipe" }}' "$1" 2>/dev/null || true
}

cleanup_dir() {
    local dir=$1
    [ -n "$dir" ] && [ -d "$dir" ] || return 0
    # debootstrap leaves proc/sys mounted when it fails half-way.
    local m
    awk -v d="$dir" 'index($2, d) == 1 { print $2 }' /proc/self/mounts | sort -r | while read -r m; do
        umount -l "$m" 2>/dev/null || true
    done
    rm -rf --one-file-system "$dir"
}

# Fetch one suite's containerd .deb without touching the host's apt state:
# separate sources list, lists, cache and status under $CACHE/apt-<suite>.
# The .deb lands in $CACHE/debs/<suite>/ (for trixie that is also
# debootstrap's cache, so a machine that built the images has it already).
#   fetch_suite_containerd SUITE VERSION_GLOB   e.g. unstable '2.*'
fetch_suite_containerd() {
    local suite=$1 want=$2
    local debdir=$CACHE/debs/$suite apt=$CACHE/apt-$suite
    mkdir -p "$debdir" "$apt/lists/partial" "$apt/cache/archives/partial"
    local have
    have=$(find "$debdir" -maxdepth 1 -name "containerd_${want}_amd64.deb" | sort -V | tail -n1)
    if [ -n "$have" ]; then
        echo "$have"
        return
    fi
    printf 'deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] %s %s main\n' \
        "$MIRROR" "$suite" >"$apt/sources.list"
    : >"$apt/status"
    local opts=(
        -o "Dir::Etc::sourcelist=$apt/sources.list"
        -o "Dir::Etc::sourceparts=-"
        -o "Dir::State=$apt"
        -o "Dir::State::lists=$apt/lists"
        -o "Dir::State::status=$apt/status"
        -o "Dir::Cache=$apt/cache"
        -o "APT::Architecture=amd64"
        -o "Debug::NoLocking=1"
        -o "APT::Sandbox::User=root"
    )
    log "apt-get update ($suite, private state under $apt)"
    retry --what "apt-get update of the $suite index from $MIRROR" \
        apt-get -qq "${opts[@]}" update >&2
    (cd "$debdir" && retry --what "apt-get download containerd ($suite, $MIRROR)" \
        apt-get -qq "${opts[@]}" download containerd >&2)
    have=$(find "$debdir" -maxdepth 1 -name 'containerd_*_amd64.deb' | sort -V | tail -n1)
    [ -n "$have" ] || die "no containerd .deb downloaded from $suite"
    # shellcheck disable=SC2254 # $want is a glob on purpose
    case "$(basename "$have")" in
        containerd_$want) ;;
        *) die "$suite's containerd is not $want: $have" ;;
    esac
    echo "$have"
}

fetch_unstable_containerd() { fetch_suite_containerd unstable '2.*'; }
fetch_trixie_containerd() { fetch_suite_containerd trixie '1.7.*'; }

# Write a kubeadm-style config.toml: `containerd config default` of the
# node's own containerd (so the key layout is exactly what that version
# writes: version 2 with "..." plugin ids on 1.x, version 3 with '...' on
# 2.x), the systemd cgroup driver switched on as the kubeadm guide says, and
# comments like an operator's file has.
write_containerd_config() {
    local rootfs=$1 name=$2
    local raw=$rootfs/tmp/config.default.toml
    chroot "$rootfs" /usr/bin/containerd config default >"$raw"
    python3 "$HERE/kubeadmize_config.py" --image "$name" "$raw" "$rootfs/etc/containerd/config.toml"
    rm -f "$raw"
}

# The sandbox image of the node's effective config, from its own
# containerd's config dump (the kubelet pulls exactly that name).
sandbox_image() {
    local rootfs=$1
    chroot "$rootfs" /usr/bin/containerd --config /etc/containerd/config.toml config dump | python3 -c '
import sys, tomllib
dump = tomllib.loads(sys.stdin.read())
plugins = dump.get("plugins", {})
if dump.get("version", 1) >= 3:
    name = plugins.get("io.containerd.cri.v1.images", {}).get("pinned_images", {}).get("sandbox")
else:
    name = plugins.get("io.containerd.grpc.v1.cri", {}).get("sandbox_image")
if not name:
    sys.exit("no sandbox image in the config dump")
print(name)'
}

# The pause image under the sandbox image's name, and the unit that imports
# it at boot (the node's /var/lib/containerd may be a fresh tmpfs).
add_pause_image() {
    local rootfs=$1 sandbox
    sandbox=$(sandbox_image "$rootfs")
    cc -static -Os -s -o "$rootfs/tmp/pause" "$HERE/pause/pause.c"
    python3 "$HERE/make_probe_image.py" --pause "$rootfs/tmp/pause" \
        --out "$rootfs/opt/nodeguard/pause-image.tar" --name "$sandbox" >&2
    rm -f "$rootfs/tmp/pause"
    printf 'NG_PROBE_ARCHIVE=/opt/nodeguard/pause-image.tar\nNG_PROBE_IMAGE=%s\n' "$sandbox" \
        >"$rootfs/opt/nodeguard/pause-image.env"
    install -m 0644 "$HERE/files/ng-pause-import.service" "$rootfs/etc/systemd/system/ng-pause-import.service"
    ln -sf /etc/systemd/system/ng-pause-import.service \
        "$rootfs/etc/systemd/system/multi-user.target.wants/ng-pause-import.service"
}

customize_rootfs() {
    local rootfs=$1 name=$2 recipe=$3

    install -d -m 0755 "$rootfs/etc/containerd" "$rootfs/opt/nodeguard" "$rootfs/usr/local/sbin"
    write_containerd_config "$rootfs" "$name"

    # The probe image and the unit that imports it at boot.
    python3 "$HERE/make_probe_image.py" --busybox "$rootfs/bin/busybox" \
        --out "$rootfs/opt/nodeguard/probe-image.tar" --name localhost/ng-probe:latest
    install -m 0755 "$HERE/files/ng-probe-import" "$rootfs/usr/local/sbin/ng-probe-import"
    install -m 0644 "$HERE/files/ng-probe-import.service" "$rootfs/etc/systemd/system/ng-probe-import.service"
    install -d "$rootfs/etc/systemd/system/multi-user.target.wants"
    ln -sf /etc/systemd/system/ng-probe-import.service \
        "$rootfs/etc/systemd/system/multi-user.target.wants/ng-probe-import.service"
    add_pause_image "$rootfs"

    # containerd enabled (the package's postinst does it; make sure).
    if [ ! -e "$rootfs/etc/systemd/system/multi-user.target.wants/containerd.service" ]; then
        ln -sf /lib/systemd/system/containerd.service \
            "$rootfs/etc/systemd/system/multi-user.target.wants/containerd.service"
    fi

    # Nothing periodic or interactive in a test node.
    local unit
    for unit in apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer \
        e2scrub_all.timer fstrim.timer getty@tty1.service console-getty.service \
        systemd-firstboot.service systemd-modules-load.service; do
        ln -sf /dev/null "$rootfs/etc/systemd/system/$unit"
    done

    # A fresh machine-id at every boot; no stale apt lists or .debs.
    : >"$rootfs/etc/machine-id"
    rm -f "$rootfs/var/lib/dbus/machine-id"
    rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin \
        "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/tmp/* "$rootfs"/var/log/*.log

    local ctd_version
    ctd_version=$(chroot "$rootfs" dpkg-query -W -f "\${Version}" containerd)
    cat >"$rootfs/etc/nodeguard-node" <<EOF
image=$REPO:$name
recipe=$recipe
containerd=$ctd_version
runc=$(chroot "$rootfs" dpkg-query -W -f "\${Version}" runc)
systemd=$(chroot "$rootfs" dpkg-query -W -f "\${Version}" systemd)
python3-tomlkit=$(chroot "$rootfs" dpkg-query -W -f "\${Version}" python3-tomlkit)
sandbox_image=$(sed -n 's/^NG_PROBE_IMAGE=//p' "$rootfs/opt/nodeguard/pause-image.env")
EOF
}

# One debootstrap try into WORK/rootfs, from an empty folder (a failed try
# leaves a half-made root filesystem); on failure the log's tail, which
# names the package or release file that could not be fetched.
debootstrap_once() {
    local suite=$1 work=$2 debcache=$3
    cleanup_dir "$work/rootfs"
    mkdir -p "$work/rootfs"
    if ! debootstrap --variant=minbase --cache-dir="$debcache" --include="$PKGS" \
        "$suite" "$work/rootfs" "$MIRROR" >"$work/debootstrap.log" 2>&1; then
        tail -n 30 "$work/debootstrap.log"
        return 1
    fi
}

# The bare debootstrap of a suite, kept as a tarball: image recipes change
# far more often than the package set, and ctd21 starts from bookworm's.
base_tarball() {
    local suite=$1 key out work
    key=$(printf '%s %s %s\n' "$PKGS" "$suite" "$MIRROR" | sha256sum | cut -c1-12)
    out=$CACHE/base/$suite-$key.tar
    if [ "$FORCE" = 1 ] || [ ! -s "$out" ]; then
        work=$(mktemp -d "$CACHE/work.base-$suite.XXXXXX")
        local debcache=$CACHE/debs/$suite t0=$SECONDS
        mkdir -p "$debcache" "$CACHE/base"
        log "$suite: debootstrap --variant=minbase (debs cached in $debcache)"
        if ! retry --what "debootstrap $suite from $MIRROR" \
            debootstrap_once "$suite" "$work" "$debcache" >&2; then
            cleanup_dir "$work"
            die "$suite: debootstrap failed (log above; re-run: bash tests/images/build.sh $suite)"
        fi
        rm -f "$work"/rootfs/var/cache/apt/archives/*.deb
        tar --numeric-owner --xattrs --xattrs-include='*' -C "$work/rootfs" -cf "$out.part" .
        mv "$out.part" "$out"
        cleanup_dir "$work"
        find "$CACHE/base" -maxdepth 1 -name "$suite-*.tar" ! -name "$(basename "$out")" -delete
        log "$suite: debootstrap done in $((SECONDS - t0)) s"
    fi
    echo "$out"
}

build_rootfs_tar() {
    local name=$1 suite=$2 recipe=$3 out=$4
    local base work
    base=$(base_tarball "$suite")
    work=$(mktemp -d "$CACHE/work.$name.XXXXXX")
    # shellcheck disable=SC2064
    trap "cleanup_dir '$work'" EXIT
    local rootfs=$work/rootfs
    mkdir -p "$rootfs"
    tar --numeric-owner --xattrs --xattrs-include='*' -xpf "$base" -C "$rootfs"

    if [ "$name" = ctd21 ]; then
        local deb
        deb=$(fetch_unstable_containerd)
        log "$name: installing $(basename "$deb") over bookworm's containerd (runc stays bookworm's)"
        cp "$deb" "$rootfs/tmp/containerd.deb"
        chroot "$rootfs" dpkg -i /tmp/containerd.deb >"$work/dpkg.log" 2>&1 || {
            cat "$work/dpkg.log" >&2
            die "$name: dpkg -i containerd failed"
        }
        rm -f "$rootfs/tmp/containerd.deb"
    fi

    customize_rootfs "$rootfs" "$name" "$recipe"

    mkdir -p "$(dirname "$out")"
    tar --numeric-owner --xattrs --xattrs-include='*' -C "$rootfs" -cf "$out.part" .
    mv "$out.part" "$out"
    cleanup_dir "$work"
    trap - EXIT
}

build_image() {
    local name=$1 suite
    case "$name" in
        bookworm) suite=bookworm ;;
        trixie) suite=trixie ;;
        ctd21) suite=bookworm ;;
        *) die "unknown image '$name' (bookworm, trixie, ctd21)" ;;
    esac
    local tag=$REPO:$name recipe t0=$SECONDS
    recipe=$(recipe_hash "$name")

    if [ "$FORCE" != 1 ] && podman image exists "$tag" && [ "$(image_recipe "$tag")" = "$recipe" ]; then
        log "$tag: cached (recipe $recipe)"
        return
    fi

    local tarball=$CACHE/rootfs/$name-$recipe.tar
    if [ "$FORCE" = 1 ] || [ ! -s "$tarball" ]; then
        build_rootfs_tar "$name" "$suite" "$recipe" "$tarball"
        # Older root filesystems of this image are of no further use.
        find "$CACHE/rootfs" -maxdepth 1 -name "$name-*.tar" ! -name "$(basename "$tarball")" -delete
    else
        log "$name: reusing $tarball"
    fi

    log "$tag: podman import"
    podman import --quiet \
        --change 'CMD ["/sbin/init"]' \
        --change 'STOPSIGNAL SIGRTMIN+3' \
        --change 'ENV container=podman' \
        --change "LABEL org.nodeguard.recipe=$recipe" \
        --change "LABEL org.nodeguard.node=$name" \
        --message "nodeguard test node $name (recipe $recipe)" \
        "$tarball" "$tag" >/dev/null
    log "$tag: ready in $((SECONDS - t0)) s"
}

main() {
    local names=("$@")
    case "${names[0]:-}" in
        containerd2-deb)
            fetch_unstable_containerd
            return
            ;;
        containerd17-deb)
            fetch_trixie_containerd
            return
            ;;
    esac
    if [ ${#names[@]} -eq 0 ] || [ "${names[0]}" = all ]; then
        names=(bookworm trixie ctd21)
    fi
    mkdir -p "$CACHE/rootfs" "$CACHE/debs" "$CACHE/base"
    local n
    for n in "${names[@]}"; do
        build_image "$n"
    done
}

main "$@"
