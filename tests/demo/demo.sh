#!/usr/bin/env bash
# `make demo`: a bookworm node (containerd 1.6) in podman, then the main job
# against it:
#   1. playbooks/snapshot.yml (baseline) and playbooks/verify.yml, with the
#      readiness report as a table;
#   2. playbooks/site.yml in check mode with --diff (what an install would
#      change), then for real: the NVIDIA runtime (gpu_toolkit) and
#      Confidential Containers (coco) installed in one converge, one restart,
#      a container started through each new runtime handler;
#   3. site.yml again: nothing changed, no restart;
#   4. site.yml with both states absent: one restart, and config.toml is
#      byte-identical to what it was before the install.
# The node is prepared like a real kubelet node: the only image in
# containerd's k8s.io namespace is its sandbox (pause) image, under the name
# its effective config gives (registry.k8s.io/pause:3.6 on containerd 1.6);
# the test probe image is removed. The readiness probes run that pause image
# through every handler (start, seen running, SIGTERM, removed), as they do on
# a real node. The GPU and kata parts are the test stand-ins
# (tests/standins/): programs that run runc / the runc shim, so containers
# really start through each handler. The node is left running for a look around
# (podman exec -it ng-demo bash); `make demo-clean` removes it.
#
#   tests/demo/demo.sh            run the demo
#   tests/demo/demo.sh --clean    remove the demo node
# Environment: NG_DEMO_NODE (default ng-demo), NG_DEMO_IMAGE
# (default localhost/ng-node:bookworm).
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$REPO"
NODE=${NG_DEMO_NODE:-ng-demo}
IMAGE=${NG_DEMO_IMAGE:-localhost/ng-node:bookworm}
DEMO=$REPO/build/demo
export PATH=$REPO/.venv/bin:$PATH
export ANSIBLE_COLLECTIONS_PATH=$REPO/build/collections
export ANSIBLE_CONFIG=$REPO/ansible.cfg

if [ "${1:-}" = --clean ]; then
    if podman container exists "$NODE"; then
        podman rm -f "$NODE" >/dev/null
        echo "demo node $NODE removed"
    else
        echo "no demo node $NODE"
    fi
    exit 0
fi

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

podman image exists "$IMAGE" || { echo "$IMAGE missing: run tests/images/build.sh bookworm (make demo does)" >&2; exit 1; }

say "node $NODE from $IMAGE (a fresh node on every run)"
if podman container exists "$NODE"; then
    podman rm -f "$NODE" >/dev/null
    echo "removed the previous $NODE"
fi
podman run -d --name "$NODE" --hostname "$NODE" \
        --privileged --systemd=always \
        --ulimit nofile=16384:16384 --ulimit nproc=16384:16384 \
        --network none --tmpfs /var/lib/containerd:rw,size=1g \
        "$IMAGE" /sbin/init >/dev/null
echo "started $NODE"
# systemd's bus comes up a moment after the container: ask again until it answers
state=
for _ in $(seq 1 120); do
    state=$(podman exec "$NODE" systemctl is-system-running --wait 2>/dev/null || true)
    case "$state" in running | degraded) break ;; esac
    sleep 1
done
echo "systemd: $state"

say "prepared like a real kubelet node: only the sandbox (pause) image in k8s.io"
podman exec "$NODE" systemctl disable --now ng-probe-import >/dev/null 2>&1 || true
podman exec "$NODE" ctr -n k8s.io images rm localhost/ng-probe:latest >/dev/null 2>&1 || true
podman exec "$NODE" rm -f /opt/nodeguard/probe-image.tar
timeout 60 podman exec "$NODE" sh -c 'until systemctl is-active -q ng-pause-import; do sleep 0.5; done' || true
images=$(podman exec "$NODE" ctr -n k8s.io images ls -q | grep -v '^sha256:' || true)
echo "images in k8s.io: $images"
# sandbox_image (config version 2) or pinned_images.sandbox (3): the kubelet pulls that name
sandbox=$(podman exec "$NODE" containerd config dump | grep -E "^\s*(sandbox_image|sandbox) = " |
    sed -En "1s/.*= [\"'](.*)[\"']\s*$/\1/p")
echo "sandbox image of the effective config: $sandbox"
[ "$images" = "$sandbox" ] || { echo "the node is not prepared like a kubelet node (images: $images)" >&2; exit 1; }

mkdir -p "$DEMO"
cat >"$DEMO/inventory.yml" <<INV
all:
  hosts:
    $NODE:
      ansible_connection: containers.podman.podman
      ansible_python_interpreter: /usr/bin/python3
INV

baseline=false
if [ -f plugins/modules/containerd_baseline.py ]; then
    baseline=true
    say "ansible-playbook playbooks/snapshot.yml (baseline, fetched to build/demo/baselines/)"
    ansible-playbook -i "$DEMO/inventory.yml" playbooks/snapshot.yml \
        -e target="$NODE" -e config_snapshot_fetch_dir="$DEMO/baselines"
else
    say "containerd_baseline is not in this checkout yet: no snapshot, drift check off"
fi

say "ansible-playbook playbooks/verify.yml"
rc=0
ansible-playbook -i "$DEMO/inventory.yml" playbooks/verify.yml \
    -e target="$NODE" \
    -e node_readiness_check_drift="$baseline" \
    -e node_readiness_show_report=false \
    -e node_readiness_report_path=/var/lib/nodeguard/readiness.json || rc=$?

say "readiness report of $NODE"
podman exec "$NODE" cat /var/lib/nodeguard/readiness.json >"$DEMO/readiness-$NODE.json"
python3 "$REPO/tests/demo/report_table.py" "$DEMO/readiness-$NODE.json"
[ "$rc" = 0 ] || { echo "verify failed (rc $rc): the node is not ready, no install attempted" >&2; exit "$rc"; }

# ---------------------------------------------------------------- main job
config_sha() { podman exec "$NODE" sha256sum /etc/containerd/config.toml | cut -c1-64; }
starts() { podman exec "$NODE" bash -c "journalctl -u containerd -o cat --no-pager | grep -c '^Started containerd' || true"; }
recap() { sed -n "s/^$NODE *: .*changed=\([0-9]*\).*failed=\([0-9]*\).*/changed=\1 failed=\2/p" "$1" | tail -n 1; }
# The kata stand-in runs the runc shim, which cannot read kata's options
# (ConfigPath), so the readiness probe does not pass them (as in Molecule);
# the node has no KVM or vhost modules for a real kata VM, so coco's check
# that the node can run each class is off (the stand-ins need neither), and
# every kata class is probed (coco probes only kata-qemu by default: the
# TDX / SEV-SNP classes need that hardware; the stand-in shim runs them all).
site() {  # site.yml LOG STATE [extra args]: both roles to STATE
    local log=$1 state=$2
    shift 2
    ansible-playbook -i "$DEMO/inventory.yml" playbooks/site.yml \
        -e target="$NODE" -e gpu_toolkit_state="$state" -e coco_state="$state" \
        -e coco_payload_archive="$DEMO/kata-payload.tar.gz" \
        -e coco_check_node=false \
        -e '{"coco_readiness_probe_handlers": ["kata-qemu", "kata-qemu-coco-dev", "kata-qemu-tdx", "kata-qemu-snp"]}' \
        -e node_readiness_pass_config_path=false \
        -e node_readiness_show_report=false \
        -e node_readiness_report_path=/var/lib/nodeguard/readiness.json \
        "$@" 2>&1 | tee "$DEMO/$log.log"
}

say "stand-ins: nvidia-container-runtime and a kata payload tarball (both run runc underneath)"
podman cp tests/standins/nvidia-container-runtime "$NODE":/usr/bin/nvidia-container-runtime
bash tests/standins/make_kata_payload.sh "$DEMO/kata-payload.tar.gz"
echo "built build/demo/kata-payload.tar.gz"
before=$(config_sha)
podman exec "$NODE" cat /etc/containerd/config.toml >"$DEMO/config.before.toml"

say "ansible-playbook playbooks/site.yml --check --diff (preview: nothing is written)"
site preview present --check --diff >/dev/null || { cat "$DEMO/preview.log"; exit 1; }
# The first 60 diff lines; sed reads to the end (head would stop early and
# make grep die of SIGPIPE). A preview with no diff lines is no error here.
grep -E '^[-+]' "$DEMO/preview.log" | grep -vE '^(\+\+\+|---) ' | sed -n '1,60p' || true
echo "(full preview: build/demo/preview.log)"
[ "$(config_sha)" = "$before" ] || { echo "check mode changed config.toml" >&2; exit 1; }
echo "config.toml unchanged by the preview"

say "ansible-playbook playbooks/site.yml (gpu_toolkit and coco present)"
s0=$(starts)
site install present >/dev/null || { tail -n 40 "$DEMO/install.log"; exit 1; }
s1=$(starts)
echo "install: $(recap "$DEMO/install.log"), containerd restarts: $((s1 - s0))"
podman exec "$NODE" cat /var/lib/nodeguard/readiness.json >"$DEMO/readiness-installed.json"
python3 "$REPO/tests/demo/report_table.py" "$DEMO/readiness-installed.json"
# every handler probed with the sandbox image: runc, the GPU runtime, each kata handler
python3 - "$DEMO/readiness-installed.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
probes = [c for c in report["checks"] if c["name"].startswith("probe:")]
handlers = [c["name"] for c in report["checks"] if c["name"].startswith("handler:")]
bad = [c for c in probes if c["status"] != "pass"]
image = report["probe_image"]["image"]
if bad or len(probes) != len(handlers) or image != report["containerd"]["sandbox_image"]:
    sys.exit("not every handler was probed with the sandbox image: %s" % (bad or probes))
print("probed %d handlers with the sandbox image %s: %s"
      % (len(probes), image, ", ".join(c["name"][len("probe:"):] for c in probes)))
PY
podman exec "$NODE" cat /etc/containerd/config.toml >"$DEMO/config.installed.toml"
echo
echo "config.toml, before -> installed:"
diff -u "$DEMO/config.before.toml" "$DEMO/config.installed.toml" | tail -n +3 || true

say "ansible-playbook playbooks/site.yml again (idempotent: expect changed=0, no restart)"
site again present >/dev/null || { tail -n 40 "$DEMO/again.log"; exit 1; }
s2=$(starts)
echo "re-run: $(recap "$DEMO/again.log"), containerd restarts: $((s2 - s1))"

say "ansible-playbook playbooks/site.yml with both states absent (uninstall)"
site uninstall absent >/dev/null || { tail -n 40 "$DEMO/uninstall.log"; exit 1; }
s3=$(starts)
after=$(config_sha)
echo "uninstall: $(recap "$DEMO/uninstall.log"), containerd restarts: $((s3 - s2))"
echo "config.toml sha256 before install: $before"
echo "config.toml sha256 after uninstall: $after"
if [ "$after" = "$before" ]; then
    echo "byte-identical: the uninstall removed exactly what the install added"
else
    echo "config.toml differs from before the install:" >&2
    podman exec "$NODE" cat /etc/containerd/config.toml | diff -u "$DEMO/config.before.toml" - >&2 || true
    exit 1
fi
echo
echo "logs and reports: build/demo/; node left running: podman exec -it $NODE bash"
echo "remove it with: make demo-clean"
