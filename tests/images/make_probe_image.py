#!/usr/bin/env python
"""Write a tiny container image as an OCI image-layout tar: the busybox probe image, or a pause image.

The result imports with ``ctr -n k8s.io images import FILE`` (containerd 1.6,
1.7 and 2.x) under the name given with ``--name`` (annotation
``io.containerd.image.name``) and with ``podman load``. No registry and no
container engine are needed to make it: one layer holding /bin/busybox and a
symlink per applet that the probes use.

    make_probe_image.py --busybox /bin/busybox --out probe.tar \
        --name localhost/ng-probe:latest

With ``--pause BINARY`` instead, the image is a node's sandbox image as the
kubelet pulls it (registry.k8s.io/pause): one file, /pause, as its entrypoint,
run as user 65535, nothing else (no shell, no /bin/true).

    make_probe_image.py --pause pause --out pause.tar \
        --name registry.k8s.io/pause:3.6
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import tarfile

APPLETS = ("sh", "true", "false", "echo", "cat", "sleep", "ls", "id", "uname", "env", "test")
EPOCH = 0  # fixed mtimes: same busybox in, same image digest out


def _tar_bytes(entries):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for info, data in entries:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def _dir(name):
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE
    info.mode = 0o755
    info.mtime = EPOCH
    return info, None


def _file(name, data, mode=0o644):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = mode
    info.mtime = EPOCH
    return info, data


def _symlink(name, target):
    info = tarfile.TarInfo(name)
    info.type = tarfile.SYMTYPE
    info.linkname = target
    info.mode = 0o777
    info.mtime = EPOCH
    return info, None


def build_layer(busybox: bytes) -> bytes:
    entries = [_dir(d) for d in ("bin", "etc", "proc", "sys", "dev", "tmp", "root")]
    entries.append(_file("bin/busybox", busybox, 0o755))
    entries += [_symlink(f"bin/{a}", "busybox") for a in APPLETS]
    entries.append(_file("etc/passwd", b"root:x:0:0:root:/root:/bin/sh\n"))
    entries.append(_file("etc/group", b"root:x:0:\n"))
    return _tar_bytes(entries)


def digest_of(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def build_pause_layer(pause: bytes) -> bytes:
    return _tar_bytes([_file("pause", pause, 0o755)])


PROBE_CONFIG = {
    "Env": ["PATH=/bin"],
    "Cmd": ["/bin/sh"],
    "Labels": {"org.nodeguard.probe": "true"},
}
PAUSE_CONFIG = {
    "Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
    "Entrypoint": ["/pause"],
    "User": "65535:65535",
    "WorkingDir": "/",
    "Labels": {"org.nodeguard.pause": "true"},
}


def build_image(busybox: bytes, name: str) -> bytes:
    return build_oci_archive(build_layer(busybox), PROBE_CONFIG, name)


def build_pause_image(pause: bytes, name: str) -> bytes:
    return build_oci_archive(build_pause_layer(pause), PAUSE_CONFIG, name)


def build_oci_archive(layer: bytes, image_config: dict, name: str) -> bytes:
    layer_digest = digest_of(layer)
    config = {
        "architecture": "amd64",
        "os": "linux",
        "created": "1970-01-01T00:00:00Z",
        "config": image_config,
        "rootfs": {"type": "layers", "diff_ids": [layer_digest]},
        "history": [{"created": "1970-01-01T00:00:00Z", "created_by": "make_probe_image.py"}],
    }
    config_bytes = json.dumps(config, sort_keys=True, separators=(",", ":")).encode()
    config_digest = digest_of(config_bytes)
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {
            "mediaType": "application/vnd.oci.image.config.v1+json",
            "digest": config_digest,
            "size": len(config_bytes),
        },
        "layers": [
            {
                "mediaType": "application/vnd.oci.image.layer.v1.tar",
                "digest": layer_digest,
                "size": len(layer),
            }
        ],
    }
    manifest_bytes = json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode()
    manifest_digest = digest_of(manifest_bytes)
    tag = name.rsplit(":", 1)[1] if ":" in name.rsplit("/", 1)[-1] else "latest"
    index = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [
            {
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": manifest_digest,
                "size": len(manifest_bytes),
                "platform": {"architecture": "amd64", "os": "linux"},
                "annotations": {
                    "io.containerd.image.name": name,
                    "org.opencontainers.image.ref.name": tag,
                },
            }
        ],
    }
    entries = [
        _file("oci-layout", json.dumps({"imageLayoutVersion": "1.0.0"}).encode()),
        _file("index.json", json.dumps(index, sort_keys=True).encode()),
        _dir("blobs"),
        _dir("blobs/sha256"),
    ]
    for digest, data in ((layer_digest, layer), (config_digest, config_bytes), (manifest_digest, manifest_bytes)):
        entries.append(_file("blobs/sha256/" + digest.split(":", 1)[1], data))
    return _tar_bytes(entries)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--busybox", help="a statically linked busybox binary (the probe image)")
    source.add_argument("--pause", help="a statically linked pause binary (a sandbox image)")
    parser.add_argument("--out", required=True, help="where to write the OCI archive")
    parser.add_argument("--name", default=None, help="default: localhost/ng-probe:latest (--busybox), "
                        "registry.k8s.io/pause:3.10 (--pause)")
    args = parser.parse_args(argv)
    with open(args.busybox or args.pause, "rb") as fh:
        binary = fh.read()
    if args.busybox:
        args.name = args.name or "localhost/ng-probe:latest"
        data = build_image(binary, args.name)
    else:
        args.name = args.name or "registry.k8s.io/pause:3.10"
        data = build_pause_image(binary, args.name)
    tmp = args.out + ".part"
    with open(tmp, "wb") as fh:
        fh.write(data)
    os.replace(tmp, args.out)
    print(f"{args.out}: {args.name}, {len(data)} bytes")


if __name__ == "__main__":
    main()
