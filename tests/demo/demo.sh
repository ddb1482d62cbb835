#!/usr/bin/env bash
# `make demo`: a bookworm node (containerd 1.6) in podman, then
# playbooks/snapshot.yml and playbooks/verify.yml against it, then the
# readiness report as a table. The node is left running for a look around
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

say "node $NODE from $IMAGE"
if podman container exists "$NODE"; then
    if [ "$(podman inspect -f '{{.State.Running}}' "$NODE")" != true ]; then
        podman start "$NODE" >/dev/null
    fi
    echo "reusing $NODE"
else
    podman run -d --name "$NODE" --hostname "$NODE" \
        --privileged --systemd=always \
        --ulimit nofile=16384:16384 --ulimit nproc=16384:16384 \
        --network none --tmpfs /var/lib/containerd:rw,size=1g \
        "$IMAGE" /sbin/init >/dev/null
    echo "started $NODE"
fi
state=$(timeout 120 podman exec "$NODE" systemctl is-system-running --wait || true)
echo "systemd: $state"

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
    -e node_readiness_probe_image_required=true \
    -e node_readiness_show_report=false \
    -e node_readiness_report_path=/var/lib/nodeguard/readiness.json || rc=$?

say "readiness report of $NODE"
podman exec "$NODE" cat /var/lib/nodeguard/readiness.json >"$DEMO/readiness-$NODE.json"
python3 "$REPO/tests/demo/report_table.py" "$DEMO/readiness-$NODE.json"
echo
echo "report: build/demo/readiness-$NODE.json; node left running: podman exec -it $NODE bash"
echo "remove it with: make demo-clean"
exit "$rc"
