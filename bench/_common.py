"""Shared by the benchmarks (not one itself: `make bench` skips _*.py)."""

import os

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def collections_path():
    """build/collections, with the link ansible_collections/nodeguard/containerd -> this checkout."""
    root = os.path.join(REPO, 'build', 'collections')
    link = os.path.join(root, 'ansible_collections', 'nodeguard', 'containerd')
    if not os.path.exists(link):
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(os.path.relpath(REPO, os.path.dirname(link)), link)
    return root
