# nodeguard.containerd: build, test and demo targets.
#
#   make demo     the main job on a podman bookworm node: snapshot, readiness,
#                 install gpu_toolkit + coco, re-run, uninstall, same bytes
#   make test     everything CI runs (deps, unit, module, sanity, lint,
#                 node images, Molecule scenarios, reliability)
#
# Every stage prints its wall time; `make test` ends with a table of them.
# Run as root on Debian 12 (apt-get, debootstrap and podman need it).

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV ?= $(CURDIR)/.venv
BUILD := $(CURDIR)/build
STAMPS := $(BUILD)/stamps
STAGE := $(CURDIR)/.ci/stage
# Network steps retry with backoff and name what failed (.ci/retry.sh).
RETRY := $(CURDIR)/.ci/retry.sh
export NG_STAGE_TIMES := $(BUILD)/stage-times.tsv

# Debian packages the tests and the demo need on the machine.
APT_PACKAGES ?= containerd runc podman debootstrap uidmap fuse-overlayfs \
	slirp4netns busybox-static python3-venv git make shellcheck chromium \
	gcc libc6-dev zstd xz-utils

# The collection, reachable as nodeguard.containerd from the checkout.
COLLECTIONS_DIR := $(BUILD)/collections
COLLECTION_LINK := $(COLLECTIONS_DIR)/ansible_collections/nodeguard/containerd

export PATH := $(VENV)/bin:$(PATH)
export ANSIBLE_COLLECTIONS_PATH := $(COLLECTIONS_DIR)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
export ANSIBLE_FORCE_COLOR ?= 0
export PY_COLORS ?= 0
export PYTHONDONTWRITEBYTECODE := 1

PYTEST ?= $(VENV)/bin/pytest
export PYTEST

# Node images (tests/images/build.sh) and Molecule scenarios.
NODE_IMAGES ?= bookworm trixie ctd21
# molecule/fleet (six nodes, gpu_toolkit rolled in batches of 2: the CI size)
# is part of make test, in the second lane; FLEET=0 leaves it out,
# make molecule-fleet runs it alone.
FLEET ?= 1
MOLECULE_SKIP ?= $(if $(filter 0,$(FLEET)),fleet,)
# molecule/fleet (6 nodes through ansible-runner): gpu_toolkit only by default;
# FLEET_FULL=1 rolls coco too, FLEET_SERIAL=N nodes per batch (default 2).
export FLEET_FULL ?=
export FLEET_SERIAL ?= 2
MOLECULE_ALL := $(sort $(patsubst molecule/%/molecule.yml,%,$(wildcard molecule/*/molecule.yml)))
MOLECULE_SCENARIOS ?= $(filter-out $(MOLECULE_SKIP),$(MOLECULE_ALL))
export MOLECULE_GLOB := molecule/*/molecule.yml
MOLECULE_BASE := $(CURDIR)/.config/molecule/config.yml

# What `make test` runs: TEST_STAGES one after the other (cheap and fast
# first), then the two lanes side by side (.ci/lanes: each lane's stages in
# order, each stage's output in build/logs/NAME.log). The Molecule scenarios
# wait much of their time (containerd restarts, probe containers, Ansible's
# round trips), so a second lane keeps both cores of a 2-core machine busy.
# TEST_PARALLEL=0 runs the lanes' stages one after the other instead, with
# their output on the terminal.
TEST_STAGES ?= deps collection lint-pipelines test-tooling test-unit test-module test-standins
# Stages that run beside TEST_STAGES, from the end of the first one (deps) on,
# and that the lanes wait for: the node images, mostly downloads and unpacking
# on a fresh machine, while the quick stages keep the CPU busy.
TEST_BESIDE ?= images
TEST_LANE_1 ?= $(addprefix molecule-,$(filter coco,$(MOLECULE_SCENARIOS))) sanity lint test-docs test-release test-compat
TEST_LANE_2 ?= test-roles $(addprefix molecule-,$(filter-out coco,$(MOLECULE_SCENARIOS))) test-reliability
TEST_PARALLEL ?= 1

# Node Pythons 3.9-3.13 x distribution tomlkit, ansible-core 2.16-2.21 controllers,
# packaging (tests/compat/run.py; venvs cached under build/compat). COMPAT_MATRIX=wide: more rows.
.PHONY: test-compat
test-compat: collection
	@$(STAGE) test-compat $(VENV)/bin/python tests/compat/run.py

.PHONY: help deps collection test release test-release test-tooling lint-pipelines test-unit test-module test-roles test-standins \
	test-reliability images test-molecule sanity lint demo demo-clean bench \
	mutation mutation-changed flake-hunt setup-stress test-clone-paths clean distclean

help:
	@echo "make demo              snapshot, readiness, install/re-run/uninstall gpu_toolkit + coco on a podman node"
	@echo "make demo-clean        remove the demo node"
	@echo "make test              deps, pipelines, unit, module, standins (images beside them); then two lanes side by side:"
	@echo "                       [$(strip $(TEST_LANE_1))] [$(strip $(TEST_LANE_2))] (TEST_PARALLEL=0: one after the other)"
	@echo "make deps              Debian packages, the .venv, containerd 2.x and 1.7 under build/ (idempotent, stamped)"
	@echo "make collection        link tree build/collections/ansible_collections/nodeguard/containerd"
	@echo "make images            podman node images: $(NODE_IMAGES)"
	@echo "make test-molecule     scenarios: $(MOLECULE_SCENARIOS) (MOLECULE_SCENARIOS=..., MOLECULE_SKIP=...)"
	@echo "make molecule-NAME     one scenario (make molecule-coco)"
	@echo "make test-molecule MOLECULE_SCENARIOS=fleet [FLEET_FULL=1]  mixed-fleet rollout, a poisoned node, the fleet report"
	@echo "make lint-pipelines    no early-exit reader in a pipefail pipeline (tests/sanity), shellcheck"
	@echo "make test-tooling      tests of the CI scripts and the mutation runner (tests/tooling)"
	@echo "make test-release      Galaxy's import checks on the built tarball (galaxy-importer)"
	@echo "make release VERSION=X.Y.Z  set galaxy.yml's version and release the changelog"
	@echo "make sanity | lint | bench | test-unit | test-module | test-roles | test-standins | test-reliability"
	@echo "make docs              the collection's docs as HTML in build/docs/html (make test-docs: every page in headless Chromium)"
	@echo "make setup-stress N=10 N fresh clones of HEAD run 'make deps collection' with all cores busy, then:"
	@echo "make test-clone-paths  the namespace and uid 65534 tests from fresh clones under /tmp and /root"
	@echo "make flake-hunt        unit, module, roles suites FLAKE_RUNS=$(FLAKE_RUNS) times in random order, busy and quiet"
	@echo "make mutation          mutation testing, tests/mutation/run.py (MUTATION_ARGS=...; not part of make test)"
	@echo "make mutation-changed  the same, only for code changed on this branch (run.py --changed)"

# ---------------------------------------------------------------- deps
deps:
	@$(STAGE) deps $(MAKE) --no-print-directory $(STAMPS)/apt.stamp $(STAMPS)/venv.stamp \
		$(STAMPS)/containerd2.stamp $(STAMPS)/containerd17.stamp

$(STAMPS)/apt.stamp: Makefile
	@mkdir -p $(@D)
	@missing=""; for p in $(APT_PACKAGES); do \
		[ "$$(dpkg-query -W -f='$${Status}' "$$p" 2>/dev/null)" = 'install ok installed' ] || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "apt-get install:$$missing"; \
		export DEBIAN_FRONTEND=noninteractive; \
		$(RETRY) --what "apt-get update (the host's apt sources)" apt-get update -qq; \
		$(RETRY) --what "apt-get install$$missing" \
			apt-get install -y -qq --no-install-recommends $$missing; \
	else \
		echo "Debian packages: all present"; \
	fi
	@touch $@

$(STAMPS)/venv.stamp: requirements-dev.txt constraints-dev.txt
	@mkdir -p $(@D)
	@if [ ! -x $(VENV)/bin/python ]; then $(PYTHON) -m venv $(VENV); fi
	@# constraints-dev.txt: every package at the versions a passing run had
	@$(RETRY) --what "pip install -r requirements-dev.txt -c constraints-dev.txt (pip's lines name the package and index)" \
		$(VENV)/bin/python -m pip install -q --no-compile --disable-pip-version-check -r requirements-dev.txt \
		-c constraints-dev.txt
	@# Byte-compile all but the collections bundled in PyPI's `ansible`: 15,000
	@# files, most of a fresh venv's CPU time on a busy machine, of which the
	@# tests load a handful.
	@$(VENV)/bin/python -m compileall -q -j0 -x '/site-packages/ansible_collections/' \
		"$$($(VENV)/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
	@# Read the whole output: a reader that quits early (head) makes ansible die
	@# of EPIPE, and pipefail turns that into a failed recipe.
	@v=$$($(VENV)/bin/ansible --version) && echo "$${v%%$$'\n'*}"
	@touch $@

# containerd 2.x for the host-side tests of config version 3 files: Debian
# unstable's .deb (it runs on bookworm), unpacked under build/, never
# installed over the host's containerd 1.6.
CONTAINERD2_DIR := $(BUILD)/containerd2
$(STAMPS)/containerd2.stamp: tests/images/build.sh $(STAMPS)/apt.stamp
	@mkdir -p $(@D)
	@deb=$$(bash tests/images/build.sh containerd2-deb) && rm -rf $(CONTAINERD2_DIR) \
		&& dpkg-deb -x "$$deb" $(CONTAINERD2_DIR) \
		&& $(CONTAINERD2_DIR)/usr/bin/containerd --version
	@touch $@

# containerd 1.7 for the host-side tests of 1.7's behaviour: Debian trixie's
# .deb, unpacked under build/ like containerd 2.x above (tests/conftest.py
# looks for build/containerd17/usr/bin/containerd).
CONTAINERD17_DIR := $(BUILD)/containerd17
$(STAMPS)/containerd17.stamp: tests/images/build.sh $(STAMPS)/apt.stamp
	@mkdir -p $(@D)
	@deb=$$(bash tests/images/build.sh containerd17-deb) && rm -rf $(CONTAINERD17_DIR) \
		&& dpkg-deb -x "$$deb" $(CONTAINERD17_DIR) \
		&& $(CONTAINERD17_DIR)/usr/bin/containerd --version
	@touch $@

# ---------------------------------------------------------------- collection
collection:
	@mkdir -p $(dir $(COLLECTION_LINK))
	@if [ "$$(readlink $(COLLECTION_LINK) 2>/dev/null)" != "../../../.." ]; then \
		rm -rf $(COLLECTION_LINK); ln -s ../../../.. $(COLLECTION_LINK); \
	fi
	@test -f $(COLLECTION_LINK)/galaxy.yml
	@echo "collection: $(COLLECTION_LINK) -> $(CURDIR)"

# ---------------------------------------------------------------- tests
test:
	@rm -f $(NG_STAGE_TIMES)
	@rc=0; beside=; \
	start_beside() { [ -n "$(strip $(TEST_BESIDE))" ] || return 0; \
		( for b in $(TEST_BESIDE); do NG_STAGE_QUIET=1 $(MAKE) --no-print-directory $$b </dev/null || exit $$?; done ) & \
		beside=$$!; echo "make test: $(strip $(TEST_BESIDE)) beside the quick stages (pid $$beside)"; }; \
	[ -n "$(strip $(TEST_STAGES))" ] || start_beside; \
	for t in $(TEST_STAGES); do \
		$(MAKE) --no-print-directory $$t || { rc=$$?; echo "make test: stage $$t failed"; break; }; \
		[ -n "$$beside" ] || start_beside; \
	done; \
	if [ -n "$$beside" ]; then \
		wait $$beside || { b=$$?; echo "make test: stage(s) $(strip $(TEST_BESIDE)) failed"; [ $$rc -ne 0 ] || rc=$$b; }; \
	fi; \
	if [ $$rc -eq 0 ] && [ "$(TEST_PARALLEL)" = 1 ]; then \
		MAKE="$(MAKE)" NG_STAGE_RERUN='make test TEST_STAGES=collection' \
			$(STAGE) lanes .ci/lanes "$(strip $(TEST_LANE_1))" "$(strip $(TEST_LANE_2))" || rc=$$?; \
	elif [ $$rc -eq 0 ]; then \
		for t in $(TEST_LANE_1) $(TEST_LANE_2); do \
			$(MAKE) --no-print-directory $$t || { rc=$$?; echo "make test: stage $$t failed"; break; }; \
		done; \
	fi; \
	$(CURDIR)/.ci/stage-summary; exit $$rc

# pytest-xdist workers for the unit and module suites (their tests share no
# file, socket or daemon: each works under its own temp folder); worksteal:
# an idle worker takes queued tests from a busy one, so a few long tests do
# not end the run on one worker.
PYTEST_JOBS ?= 2
PYTEST_XDIST = -n $(PYTEST_JOBS) --dist worksteal
test-unit: collection
	@$(STAGE) test-unit .ci/pytest-dir required tests/unit $(PYTEST_XDIST)

# The module suite runs its modules as processes, over a thousand times:
# their bytecode is cached under build/pycache-modules (never beside the
# sources) instead of compiled again on every run.
test-module: collection
	@PYTHONPYCACHEPREFIX=$(BUILD)/pycache-modules \
		$(STAGE) test-module .ci/pytest-dir required tests/module $(PYTEST_XDIST)

test-roles: collection
	@$(STAGE) test-roles .ci/pytest-dir required tests/roles

test-standins: collection
	@$(STAGE) test-standins .ci/pytest-dir optional tests/standins

test-reliability: collection
	@$(STAGE) test-reliability .ci/pytest-dir optional tests/reliability

images:
	@$(STAGE) images bash tests/images/build.sh $(NODE_IMAGES)

test-molecule: collection
	@if [ -z "$(strip $(MOLECULE_SCENARIOS))" ]; then echo "no Molecule scenario selected"; exit 1; fi
	@for s in $(MOLECULE_SCENARIOS); do \
		$(MAKE) --no-print-directory molecule-$$s || exit $$?; \
	done

# One scenario, e.g. make molecule-coco (a stage of its own).
molecule-%: collection
	@test -f molecule/$*/molecule.yml || { echo "no Molecule scenario molecule/$*"; exit 1; }
	@NG_STAGE_RERUN="make molecule-$*" $(STAGE) molecule-$* molecule -c $(MOLECULE_BASE) test -s $*

# ansible-test wants the collection at ansible_collections/NS/NAME: copy the
# tracked (and new, not ignored) files there and run it on the copy.
# `--venv` builds ansible-test's own virtual environments from PyPI; their pip
# bootstrap script (get-pip.py) is not reachable, so tests/sanity's offline
# stand-in is put into ansible-test's cache first.
# The .venv's ansible-test (2.19) runs on Python 3.11; SANITY_CORES are the
# newer ansible-core lines (their controllers need Python >= 3.12) whose
# ansible-test also runs, each from its cached controller venv
# (tests/compat/run.py --controller, shared with make test-compat) on that
# venv's Python. SANITY_CORES= runs the .venv's only.
SANITY_DIR := $(BUILD)/sanity/ansible_collections/nodeguard/containerd
SANITY_ARGS ?= --venv --color no
SANITY_CORES ?= 2.20 2.21
# `$(CONTROLLER_VENV) LINE`: "BINDIR PYTHON_MAJOR.MINOR" of that controller's cached venv (last line)
CONTROLLER_VENV = $(VENV)/bin/python tests/compat/run.py --controller
sanity:
	@$(STAGE) sanity $(MAKE) --no-print-directory _sanity

_sanity:
	@rm -rf $(BUILD)/sanity && mkdir -p $(SANITY_DIR)
	@git ls-files -z --cached --others --exclude-standard \
		| while IFS= read -r -d '' f; do [ -e "$$f" ] && printf '%s\0' "$$f"; done \
		| tar --null -T - -cf - | tar -xf - -C $(SANITY_DIR)
	@# build/ is ignored by this checkout's git: give the copy a repository of its own.
	@git -C $(SANITY_DIR) init -q
	@$(MAKE) --no-print-directory _sanity-with SANITY_BIN=$(VENV)/bin SANITY_PYTHON=3.11
	@for line in $(SANITY_CORES); do \
		found=$$($(CONTROLLER_VENV) $$line | tail -n 1) || exit 1; set -- $$found; \
		$(MAKE) --no-print-directory _sanity-with SANITY_BIN=$$1 SANITY_PYTHON=$$2; \
	done

# One ansible-test (SANITY_BIN) on the copy, its venvs made from SANITY_PYTHON.
_sanity-with:
	@if [ -f tests/sanity/get_pip_offline.py ]; then \
		ver=$$($(SANITY_BIN)/python -c "import ansible_test, os, re; p = os.path.join(os.path.dirname(ansible_test.__file__), '_internal', 'python_requirements.py'); print(re.search(r\"pip='([0-9.]+)'\", open(p).read()).group(1))"); \
		dest=$$HOME/.ansible/test/cache/get_pip_$${ver//./_}.py; \
		cmp -s tests/sanity/get_pip_offline.py "$$dest" || install -D -m 0644 tests/sanity/get_pip_offline.py "$$dest"; \
	fi
	@v=$$($(SANITY_BIN)/ansible-test --version) && echo "sanity: $$v on Python $(SANITY_PYTHON)"
	cd $(SANITY_DIR) && PATH=$(SANITY_BIN):$$PATH $(SANITY_BIN)/ansible-test sanity $(SANITY_ARGS) --python $(SANITY_PYTHON)

# ansible-lint (the .venv's, on its ansible-core 2.19), then the same
# ansible-lint on each of LINT_CORES (default SANITY_CORES): their cached
# controller venvs with ansible-lint added (tests/compat/run.py --controller
# LINE ansible-lint==V), so the syntax check and the rules meet that
# ansible-core. community.docker (the Molecule scenarios' nsenter connection)
# comes from the .venv's collections, as PyPI's `ansible` brings it there.
LINT_CORES ?= $(SANITY_CORES)
ANSIBLE_LINT_PIN := $(shell sed -n 's/^ansible-lint==//p' requirements-dev.txt)
VENV_COLLECTIONS = $$($(VENV)/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
lint:
	@$(STAGE) lint $(MAKE) --no-print-directory _lint

_lint:
	@echo "lint: ansible-lint $(ANSIBLE_LINT_PIN) on ansible-core $$($(VENV)/bin/python -c 'import ansible; print(ansible.__version__)')"
	ansible-lint --profile production
	@for line in $(LINT_CORES); do \
		found=$$($(CONTROLLER_VENV) $$line ansible-lint==$(ANSIBLE_LINT_PIN) | tail -n 1) || exit 1; set -- $$found; \
		echo "lint: ansible-lint $(ANSIBLE_LINT_PIN) on ansible-core $$($$1/python -c 'import ansible; print(ansible.__version__)')"; \
		PATH=$$1:$$PATH ANSIBLE_COLLECTIONS_PATH=$(COLLECTIONS_DIR):$(VENV_COLLECTIONS) \
			$$1/ansible-lint --profile production || exit 1; \
	done

# No pipeline that can die of SIGPIPE under pipefail (a reader that stops
# early: head, grep -q ...), and shellcheck on the shell scripts.
lint-pipelines:
	@$(STAGE) lint-pipelines .ci/pytest-dir required tests/sanity

# ---------------------------------------------------------------- release
# make release VERSION=X.Y.Z: galaxy.yml's version, then the changelog
# (docs/development.md, "Release"). Commit the result afterwards.
IMPORTER_VENV := $(BUILD)/galaxy-importer
release: deps
	@test -n "$(VERSION)" || { echo "usage: make release VERSION=X.Y.Z" >&2; exit 2; }
	@test -f changelogs/fragments/release-$(VERSION).yml || { echo "release: changelogs/fragments/release-$(VERSION).yml (release_summary) is missing" >&2; exit 2; }
	sed -i 's/^version: .*/version: $(VERSION)/' galaxy.yml
	PATH=$(VENV)/bin:$$PATH $(VENV)/bin/antsibull-changelog release --version $(VERSION) --reload-plugins
	rm -f changelogs/.plugin-cache.yaml
	$(VENV)/bin/antsibull-changelog lint-changelog-yaml changelogs/changelog.yaml
	$(VENV)/bin/pytest -q -p no:cacheprovider tests/unit/test_version_added.py tests/unit/test_metadata_agrees.py

# Galaxy's import checks on the built tarball (tests/release), in a venv of its own.
test-release: collection
	@test -x $(IMPORTER_VENV)/bin/python || { python3 -m venv $(IMPORTER_VENV) && $(IMPORTER_VENV)/bin/pip install -q 'galaxy-importer==0.4.44'; }
	@IMPORTER_VENV=$(IMPORTER_VENV) $(STAGE) test-release $(VENV)/bin/pytest -q -p no:cacheprovider tests/release

# The tests of the CI scripts and of the mutation runner.
test-tooling: collection
	@$(STAGE) test-tooling .ci/pytest-dir required tests/tooling

# ---------------------------------------------------------------- demo
demo: deps collection
	@NG_STAGE_RERUN="bash tests/images/build.sh bookworm" $(STAGE) demo-image bash tests/images/build.sh bookworm
	@$(STAGE) demo bash tests/demo/demo.sh

demo-clean:
	@bash tests/demo/demo.sh --clean

# ---------------------------------------------------------------- bench
bench: deps collection
	@shopt -s nullglob; ran=0; \
	for b in bench/*.py bench/*.sh; do \
		case "$$(basename $$b)" in _*) continue ;; esac; \
		ran=1; \
		case "$$b" in \
			*.py) NG_STAGE_RERUN="$(VENV)/bin/python $$b" $(STAGE) bench-$$(basename $$b) $(VENV)/bin/python $$b ;; \
			*.sh) NG_STAGE_RERUN="bash $$b" $(STAGE) bench-$$(basename $$b) bash $$b ;; \
		esac; \
	done; \
	[ $$ran = 1 ] || echo "bench: no bench/*.py or bench/*.sh yet"

# ---------------------------------------------------------------- flake hunt
# The suites in a new random order each run (pytest-randomly; off in the
# normal run, see pytest.ini), odd runs with every core kept busy and even
# runs on a quiet machine (FLAKE_LOAD=busy|quiet|mixed); prints the seeds.
FLAKE_RUNS ?= 5
flake-hunt: deps collection
	@$(STAGE) flake-hunt .ci/flake-hunt $(FLAKE_RUNS)

# ---------------------------------------------------------------- setup stress
# `make deps collection` from N fresh clones of HEAD with every core busy:
# prints each run's time and N/N passed (.ci/setup-stress); then
# test-clone-paths.
N ?= 10
setup-stress:
	@$(STAGE) setup-stress .ci/with-busy-cores .ci/setup-stress $(N)
	@$(MAKE) --no-print-directory test-clone-paths

# The tests that run processes in a private namespace or as uid 65534, from
# fresh clones of HEAD under /tmp and under /root (mode 0700): no test may
# depend on where the checkout lies (.ci/clone-paths; CLONE_PATH_BASES=...).
CLONE_PATH_BASES ?= /tmp /root
test-clone-paths:
	@$(STAGE) test-clone-paths .ci/clone-paths $(CLONE_PATH_BASES)

# ---------------------------------------------------------------- mutation
# Mutation testing (tests/mutation/run.py); slow, so not part of `make test`.
MUTATION_ARGS ?=
mutation: deps collection
	@$(STAGE) mutation $(VENV)/bin/python tests/mutation/run.py $(MUTATION_ARGS)

mutation-changed: deps collection
	@$(STAGE) mutation-changed $(VENV)/bin/python tests/mutation/run.py --changed $(MUTATION_ARGS)

# ---------------------------------------------------------------- clean
clean:
	rm -rf $(BUILD) tests/output .pytest_cache

distclean: clean demo-clean
	rm -rf $(VENV)

# ---------------------------------------------------------------- docs
# The documentation site (docs/site/build.py): antsibull-docs' module, plugin
# and role pages plus the guides docs/*.md, rendered by Sphinx into
# build/docs/html (open build/docs/html/index.html).
.PHONY: docs test-docs
docs: collection
	@$(STAGE) docs $(VENV)/bin/python docs/site/build.py --dest $(BUILD)/docs

# The site built from this tree, every page opened in headless Chromium:
# module, plugin, role and guide pages with their content, no broken link.
test-docs: collection
	@$(STAGE) test-docs .ci/pytest-dir required tests/docs
