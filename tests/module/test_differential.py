# -*- coding: utf-8 -*-
"""Differential test: generated config trees, every answer judged by the real containerd's `config dump`.

The generator is tests/differential/trees.py, the judge tests/differential/judge.py.
Knobs (environment):
  NG_DIFF_TREES   trees per containerd version (unset with NG_DIFF_SEED unset: the fast
                  profile, seeds 0..FAST_TREES-1 and FAST_PINNED); e.g. 500 for the long profile
  NG_DIFF_SEED    the first seed (default 0); seeds SEED .. SEED+TREES-1 are run (TREES default 1)
  NG_DIFF_CTD     containerd versions, comma separated (default 1.6,1.7,2.1)
  NG_DIFF_REPORT  a file that gets one JSON line per tree (edits, refusals, findings by kind)
Replay a failure with the line it prints, e.g.
  NG_DIFF_SEED=17 NG_DIFF_CTD=2.1 NG_DIFF_TREES=1 pytest tests/module/test_differential.py
"""

import collections
import json
import os

import pytest

from helpers.common import CONTAINERD_1, CONTAINERD_17, CONTAINERD_2
from differential.judge import judge_tree
from differential.trees import CTD_VERSIONS, generate

FAST_TREES = 8
# The fast profile also runs seeds whose trees have the shape of an answer once wrong there, so
# `make test` holds each (test_fast_profile_holds_the_shapes_once_answered_wrong checks that the
# seeds still have them): config.toml importing itself with nothing else to shadow it (1.6: 14,
# 1.7: 8), a version-less drop-in whose runtimes table replaces config.toml's (1.6: 50, 1.7: 40),
# a version 2 drop-in's runtimes under a version 3 config.toml (2.1: 9), and under one with no
# runtimes table, where a runtime written into config.toml would drop them (2.1: 65, 85, 163); on 1.x a
# version-less drop-in read last whose CRI table replaces the ones before it (1.6: 170, 1.7: 2, 25) and a
# drop-in with part of the CRI table followed by a whole copy (1.6: 73, 1.7: 65).
FAST_PINNED = {'1.6': (14, 50, 73, 170), '1.7': (8, 25, 40, 65), '2.1': (9, 65, 85, 163)}
SHAPES_ONCE_WRONG = {'1.6': ('self-import', 'cdi-dropin', 'versionless-runtimes'),
                     '1.7': ('self-import', 'versionless-runtimes'),
                     '2.1': ('v2-runtimes-under-v3', 'v2-runtimes-under-bare-v3')}
BINARIES = {'1.6': CONTAINERD_1, '1.7': CONTAINERD_17, '2.1': CONTAINERD_2}
# Trees the modules still answer wrongly (docs/testing.md, "Known wrong answers"): each runs in the
# fast profile as an expected failure, strict, so it fails the day the bug is fixed; then move the
# seed to FAST_PINNED.
KNOWN_WRONG = {}


def fast_seeds(ctd):
    return list(range(FAST_TREES)) + [s for s in FAST_PINNED[ctd] if s >= FAST_TREES]


def known_wrong_param(ctd, seed):
    reason = KNOWN_WRONG.get((ctd, seed))
    if reason is None:
        return (ctd, seed)
    return pytest.param(ctd, seed, marks=pytest.mark.xfail(strict=True, reason=reason))


def profile():
    versions = [v.strip() for v in (os.environ.get('NG_DIFF_CTD') or ','.join(CTD_VERSIONS)).split(',') if v.strip()]
    unknown = sorted(set(versions) - set(CTD_VERSIONS))
    if unknown:
        raise ValueError('NG_DIFF_CTD: unknown containerd versions %s (known: %s)' % (unknown, CTD_VERSIONS))
    if not os.environ.get('NG_DIFF_TREES') and not os.environ.get('NG_DIFF_SEED'):
        seeds = [(ctd, seed) for ctd in versions for seed in fast_seeds(ctd)]
        seeds += sorted(k for k in KNOWN_WRONG if k[0] in versions and k not in seeds)
        return [known_wrong_param(ctd, seed) for ctd, seed in seeds]
    trees = int(os.environ.get('NG_DIFF_TREES') or 1)
    first = int(os.environ.get('NG_DIFF_SEED') or 0)
    # seed by seed, so a long run stopped early has figures for every version
    return [(ctd, seed) for seed in range(first, first + trees) for ctd in versions]


def report(ctd, seed, edits, refusals, findings):
    path = os.environ.get('NG_DIFF_REPORT')
    if path:
        kinds = collections.Counter(f.kind for f in findings)
        with open(path, 'a') as f:
            f.write(json.dumps(dict(ctd=ctd, seed=seed, edits=edits, refusals=refusals, findings=kinds,
                                    details=[str(x) for x in findings])) + '\n')


@pytest.mark.parametrize('ctd,seed', profile(), ids=str)
def test_generated_tree_answers_hold_on_the_real_loader(ctd, seed):
    binary = BINARIES[ctd]
    if binary is None:
        pytest.fail('containerd %s is missing: run `make deps`' % ctd)
    tree = generate(seed, ctd)
    findings, edits, refusals, flaws = judge_tree(tree, binary)
    report(ctd, seed, edits, refusals, findings)
    assert edits + refusals > 0, 'no edit was judged'
    if findings:
        pytest.fail('%d wrong answer(s) on containerd %s (%s):\n%s\n\nalready wrong with the tree: %s\n%s' % (
            len(findings), ctd, binary, '\n'.join(str(f) for f in findings), '; '.join(flaws) or 'nothing',
            tree.describe()), pytrace=False)


def test_generator_is_a_function_of_the_seed():
    """A printed seed replays: the same seed gives the same tree, other seeds other trees."""
    for ctd in CTD_VERSIONS:
        assert generate(7, ctd).files == generate(7, ctd).files
        assert len({json.dumps(generate(s, ctd).files, sort_keys=True) for s in range(20)}) > 15


def test_fast_profile_holds_the_shapes_once_answered_wrong():
    for ctd, shapes in SHAPES_ONCE_WRONG.items():
        found = set()
        for seed in fast_seeds(ctd):
            found |= generate(seed, ctd).shapes()
        assert set(shapes) <= found, 'containerd %s: the fast profile lost %s; pick seeds that have them' % (
            ctd, sorted(set(shapes) - found))


class ScriptedModule(object):
    """Stands in for a module: gives the scripted answers in turn, and may append a line to the config first."""

    def __init__(self, *answers):
        self.answers = list(answers)

    def __call__(self, module, args):
        answer, scribble = self.answers.pop(0)
        if scribble:
            with open(args['path'], 'a') as f:
                f.write('# %s\n' % scribble)
        return dict((k, v % args if isinstance(v, str) else v) for k, v in answer.items())


@pytest.mark.parametrize('answers,kinds', [
    # a runtime claimed added that is not in the dump
    ([({'changed': True}, None), ({'changed': True}, None)], {'not-in-effect'}),
    # claimed ok while writing, and the undo leaves the bytes changed
    ([({'changed': False}, 'hand edit'), ({'changed': True}, None)], {'ok-but-written', 'not-in-effect',
                                                                      'undo-not-bytes'}),
    # a refusal naming no file, of an edit containerd would run
    ([({'failed': True, 'msg': 'refused'}, None)], {'refusal-names-no-file', 'false-refusal'}),
    # a refusal that wrote
    ([({'failed': True, 'msg': 'refusing to write %(path)s'}, 'half done')], {'refusal-wrote'}),
])
def test_the_judge_catches_wrong_answers(workdir, answers, kinds):
    """The judge itself fails on wrong answers (a scripted module on a healthy tree, containerd 1.6)."""
    from differential.judge import AddRuntime, Judge
    tree = generate(1, '1.6')
    assert not tree.dropins and not tree.self_import, 'seed 1 changed shape: pick a tree of config.toml alone'
    judge = Judge(tree, CONTAINERD_1, workdir)
    judge.runner = ScriptedModule(*answers)
    found = set(f.kind for f in judge.run([AddRuntime()]))
    assert judge.flaws == []
    assert found == kinds
