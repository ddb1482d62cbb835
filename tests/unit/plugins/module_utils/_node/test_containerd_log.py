# -*- coding: utf-8 -*-
"""What the load test reads and says, without starting containerd: the
plugin list from `ctr plugins ls` or from the daemon's log, the required
plugins per version, and the one-line message the modules show."""

import json

from ansible_collections.nodeguard.containerd.plugins.module_utils._node import preflight as _preflight
from ansible_collections.nodeguard.containerd.plugins.module_utils._node import containerd_log, process
from ansible_collections.nodeguard.containerd.plugins.module_utils._node.containerd_log import (
    parse_ctr_plugins,
    parse_log,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._node.preflight import (
    CRI_V2,
    CRI_V3_IMAGES,
    CRI_V3_RUNTIME,
    LoadResult,
    required_for,
)

V3 = [CRI_V2, CRI_V3_RUNTIME, CRI_V3_IMAGES]


def test_required_plugins_per_containerd_version():
    """2.0 and later split CRI in three, all required; 1.x (any minor) and an unknown version need the one."""
    assert required_for((1, 6)) == [CRI_V2]
    assert required_for((1, 7)) == [CRI_V2]
    assert required_for(None) == [CRI_V2]
    assert required_for((2, 0)) == V3
    assert required_for((2, 1)) == V3
    assert required_for((3, 0)) == V3


# ---------------------------------------------------------------- the message

def test_message_of_a_pass_names_version_and_plugins():
    res = LoadResult('/etc/containerd/config.toml', '/usr/bin/containerd')
    res.status, res.containerd_version = 'ok', '2.1.9'
    res.required = {CRI_V3_RUNTIME: 'ok', CRI_V2: 'ok'}
    assert res.message() == ('/etc/containerd/config.toml: containerd 2.1.9 loads it, '
                             'io.containerd.cri.v1.runtime, io.containerd.grpc.v1.cri ok')
    res.containerd_version = None
    assert 'containerd ? loads it' in res.message()


def test_message_of_a_failure_is_every_error():
    res = LoadResult('/c.toml', '/usr/bin/containerd')
    res.status = 'failed'
    res.errors = ['/c.toml: one.', '/c.toml: two.']
    assert res.message() == '/c.toml: one. /c.toml: two.'
    res.errors = []
    res.status = 'timeout'
    assert res.message() == '/c.toml: load test timeout'


def test_a_fresh_result_is_not_a_pass_and_shows_its_fields():
    """Until a test has run, the result says cannot_run (never ok)."""
    res = LoadResult('/c.toml', '/bin/c')
    d = res.as_dict()
    assert d['status'] == 'cannot_run' and d['ok'] is False and d['seconds'] == 0.0
    assert set(d) == set(LoadResult.FIELDS)
    assert repr(res) == 'LoadResult(%r)' % (d,)


def test_last_lines_keeps_the_end_of_a_long_log():
    text = '\n'.join('line %d' % i for i in range(1, 6)) + '\n\n   \n' + 'x' * 500 + '\n'
    assert process.last_lines(text) == 'line 4 | line 5 | ' + 'x' * 400
    assert process.last_lines('  only  \n') == 'only'
    assert process.last_lines(None) == ''
    assert process.last_lines('a\nb\nc', 2) == 'b | c'


# ---------------------------------------------------------------- ctr plugins ls

CTR_OUT = '''TYPE                                  ID                       PLATFORMS      STATUS
io.containerd.content.v1              content                  -              ok
io.containerd.snapshotter.v1          zfs                      linux/amd64    skip
io.containerd.grpc.v1                 cri                      linux/amd64    error
'''


def test_ctr_plugin_table_is_read_by_id():
    assert parse_ctr_plugins(CTR_OUT) == {'io.containerd.content.v1.content': 'ok',
                                          'io.containerd.snapshotter.v1.zfs': 'skip',
                                          CRI_V2: 'error'}


def test_ctr_lines_that_are_not_plugin_rows_are_ignored():
    out = CTR_OUT.splitlines()[0] + '\nsome stray words\n\n' + CTR_OUT.splitlines()[1] + '\n'
    assert parse_ctr_plugins(out) == {'io.containerd.content.v1.content': 'ok'}
    assert parse_ctr_plugins('') == {}


# ---------------------------------------------------------------- the log

def test_log_lines_of_the_preflight_itself_are_not_containerd_fatal_lines():
    log = ('nodeguard-preflight-note: no overlayfs: /run was replaced\n'
           'nodeguard-preflight-exec\n'
           'time="t" level=info msg="loading plugin" id=io.containerd.cri.v1.images\n')
    plugins, _errors, _booted, fatal = parse_log(log)
    assert fatal == []
    assert plugins == {CRI_V3_IMAGES: 'ok'}


def test_a_stray_line_does_not_end_the_reading():
    log = ('containerd: some warning on stderr\n'
           '{not json\n'
           'time="t" level=info msg="starting containerd" version=1.6.20\n'
           'time="t" level=info msg="loading plugin"\n'
           'time="t" level=info msg="loading plugin" id=io.containerd.cri.v1.images\n'
           '{"level": "info", "msg": "loading plugin", "id": "io.containerd.cri.v1.runtime"}\n')
    plugins, errors, booted, fatal = parse_log(log)
    assert plugins == {CRI_V3_IMAGES: 'ok', CRI_V3_RUNTIME: 'ok'}
    assert errors == {} and not booted
    assert fatal == ['containerd: some warning on stderr']  # what a non-log line says is kept


def test_fatal_log_lines_are_quoted_with_their_error():
    log = ('time="t" level=fatal msg="failed to load TOML" error="toml: line 3: bad"\n'
           '{"level": "panic", "msg": "runtime gone"}\n'
           'time="t" level=error msg="not fatal" error="x"\n')
    _plugins, _errors, _booted, fatal = parse_log(log)
    assert fatal == ['failed to load TOML: toml: line 3: bad', 'runtime gone']


def test_a_json_log_is_read_like_a_text_log():
    log = '\n'.join(json.dumps(x) for x in (
        {'level': 'info', 'msg': 'loading plugin', 'id': CRI_V3_RUNTIME},
        {'level': 'warning', 'msg': 'failed to load plugin', 'id': CRI_V3_RUNTIME, 'error': 'no runc'},
        {'level': 'info', 'msg': 'skip loading plugin', 'id': 'io.containerd.snapshotter.v1.zfs', 'error': 'no zfs'},
        {'level': 'info', 'msg': 'containerd successfully booted in 0.05s'}))
    plugins, errors, booted, _fatal = parse_log(log)
    assert plugins == {CRI_V3_RUNTIME: 'error', 'io.containerd.snapshotter.v1.zfs': 'skip'}
    assert errors == {CRI_V3_RUNTIME: 'no runc', 'io.containerd.snapshotter.v1.zfs': 'no zfs'}
    assert booted


def test_a_failure_is_not_undone_by_a_later_loading_line():
    log = ('time="t" level=warning msg="failed to load plugin" error="bad" id=%s\n'
           'time="t" level=info msg="loading plugin" id=%s\n'
           'time="t" level=info msg="skip loading plugin" id=x.y\n' % (CRI_V2, CRI_V2))
    plugins, errors, _booted, _fatal = parse_log(log)
    assert plugins == {CRI_V2: 'error', 'x.y': 'skip'}
    assert errors == {CRI_V2: 'bad', 'x.y': ''}


def test_a_log_value_json_cannot_read_is_kept_as_written():
    """Go quotes a control byte as \\x1b, which is no JSON escape: the text between the quotes is kept."""
    fields = containerd_log.logfmt(r'time="t" level=warning msg="failed to load plugin" error="bad \x1b[0m" id=a.b')
    assert fields['error'] == r'bad \x1b[0m'
    assert fields['id'] == 'a.b' and fields['level'] == 'warning'
    plugins, errors, _b, _f = parse_log(r'time="t" level=warning msg="failed to load plugin" error="bad \x1b" id=a.b')
    assert plugins == {'a.b': 'error'} and errors == {'a.b': r'bad \x1b'}
