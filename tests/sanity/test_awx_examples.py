# -*- coding: utf-8 -*-
"""examples/awx: AWX as code (awx.yml), its surveys, the project wrappers and
the execution environment, checked against the collection they drive.

- one job template, survey and project wrapper per playbook of playbooks/;
- every survey variable is an option of a role the playbook runs
  (roles/*/meta/argument_specs.yml), with a survey type that carries the
  declared type (text, textarea for lists, integer, float, true/false), its
  choices and its default; or a variable the playbook's header documents;
  never one the playbook sets itself (an extra var would override it);
- the workflow runs snapshot, then a rollout, and on failure report then repair;
- each wrapper parses with ansible-playbook --syntax-check against the
  collection; collections/requirements.yml admits galaxy.yml's version;
- ansible-builder makes a build context of the execution environment, with
  the ansible-core range meta/runtime.yml declares.
"""

import glob
import json
import os
import re
import subprocess
import sys

import pytest
import yaml
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from conftest import COLLECTIONS_ROOT, REPO

AWX = os.path.join(REPO, 'examples', 'awx')
BIN = os.path.dirname(os.path.abspath(sys.executable))
FQCN = 'nodeguard.containerd'
PLAYBOOKS = sorted(os.path.basename(p)[:-4] for p in glob.glob(os.path.join(REPO, 'playbooks', '*.yml')))

# Variables of the playbooks themselves (documented in their headers), by type.
PLAYBOOK_VARS = {
    'target': 'str',
    'nodeguard_become': 'bool',
    'nodeguard_verify': 'bool',
    'fleet_report_readiness': 'bool',
    'repair_prune_imports': 'bool',
    'repair_config_path': 'path',
}
PLAYBOOK_VAR_PATTERNS = [(re.compile(r'^\w+_serial$'), 'serial'),
                         (re.compile(r'^\w+_max_fail_percentage$'), 'int')]
# Survey defaults that differ from the role's, on purpose.
DELIBERATE_DEFAULTS = {
    ('site', 'coco_state'): 'coco present needs a payload archive: the survey leaves coco alone unless asked',
    ('workflow', 'coco_state'): 'the same, for the workflow',
}
# The survey types that carry each argument-spec type as AWX sends it.
# (multiplechoice for a string: only among the declared choices)
SURVEY_TYPES = {'str': {'text', 'multiplechoice'}, 'path': {'text'}, 'raw': {'text'}, 'serial': {'text'},
                'bool': {'multiplechoice'}, 'int': {'integer'}, 'float': {'float', 'integer'},
                'list': {'textarea'}}
ROLE_KEYS = ('ansible.builtin.include_role', 'ansible.builtin.import_role', 'include_role', 'import_role')


def load(path):
    with open(path, encoding='utf-8') as handle:
        return yaml.safe_load(handle)


def argument_specs():
    """{role: {entry point: {option: spec}}}"""
    found = {}
    for spec in glob.glob(os.path.join(REPO, 'roles', '*', 'meta', 'argument_specs.yml')):
        role = spec.split(os.sep)[-3]
        found[role] = {entry: body.get('options') or {} for entry, body in load(spec)['argument_specs'].items()}
    return found


SPECS = argument_specs()


def walk(node):
    """Every mapping in a YAML document."""
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from walk(value)


def role_closure(roles):
    """(role, entry) pairs, plus every entry of a role another role includes."""
    todo, seen = list(roles), set()
    while todo:
        role, entry = todo.pop()
        if (role, entry) in seen or role not in SPECS:
            continue
        seen.add((role, entry))
        for tasks in glob.glob(os.path.join(REPO, 'roles', role, 'tasks', '*.yml')):
            with open(tasks, encoding='utf-8') as handle:
                for name in re.findall(r'name:\s*%s\.(\w+)' % re.escape(FQCN), handle.read()):
                    todo.extend((name, e) for e in SPECS.get(name, {}))
    return seen


def playbook_facts(name, seen=None):
    """The roles (with entry points) a playbook runs, imports followed; the
    variables its own plays and tasks set; the names its header documents."""
    seen = seen if seen is not None else set()
    seen.add(name)
    path = os.path.join(REPO, 'playbooks', name + '.yml')
    roles, sets = set(), set()
    for mapping in walk(load(path)):
        for key in ROLE_KEYS:
            if key in mapping:
                role = mapping[key]['name'].split('.')[-1]
                roles.add((role, mapping[key].get('tasks_from', 'main')))
        if isinstance(mapping.get('vars'), dict):
            sets.update(mapping['vars'])
        imported = mapping.get('ansible.builtin.import_playbook')
        if imported and imported[:-4] not in seen:
            roles |= playbook_facts(imported[:-4], seen)['roles']
    with open(path, encoding='utf-8') as handle:
        header = ''.join(line for line in handle if line.startswith('#'))
    documented = set(re.findall(r'^#\s+(\w+)\s', header, re.M))
    return {'roles': role_closure(roles), 'sets': sets, 'documented': documented, 'header': header}


def expected_type(var, facts):
    """The declared type of VAR for a playbook: (type, option spec or None)."""
    for role, entry in sorted(facts['roles']):
        option = SPECS[role][entry].get(var)
        if option is not None:
            return option.get('type', 'str'), option
    if var in facts['documented']:
        for pattern, kind in PLAYBOOK_VAR_PATTERNS:
            if pattern.match(var):
                return kind, None
        if var in PLAYBOOK_VARS:
            return PLAYBOOK_VARS[var], None
    return None, None


def list_from_text(text):
    """A list option's survey text: a JSON list, or items separated by commas or new lines."""
    text = text.strip()
    if text.startswith('['):
        return json.loads(text)
    return [item.strip() for item in re.split(r'[,\n]', text) if item.strip()]


def as_declared(kind, value):
    """A survey answer (as AWX sends it) turned into the declared type."""
    if kind == 'bool':
        return {'true': True, 'false': False}[value]
    if kind == 'list':
        return list_from_text(value)
    if kind in ('int', 'float'):
        return value
    return str(value)


def survey(name):
    return load(os.path.join(AWX, 'surveys', name + '.yml'))


def check_question(question, kind, option, facts, where):
    """Problems of one survey question against its declared type and spec."""
    problems = []
    var, qtype = question['variable'], question['type']
    if qtype not in SURVEY_TYPES.get(kind, ()):
        wanted = '/'.join(sorted(SURVEY_TYPES.get(kind, ['none'])))
        problems.append('%s: %s is %s, declared %s (survey type %s)' % (where, var, qtype, kind, wanted))
        return problems
    choices = question.get('choices')
    if kind == 'bool' and set(choices or ()) != {'true', 'false'}:
        problems.append('%s: %s is a bool, choices must be "true" and "false"' % (where, var))
    elif qtype == 'multiplechoice' and kind != 'bool':
        allowed = set((option or {}).get('choices') or ())
        header_line = re.search(r'^#\s+%s\s.*$' % var, facts['header'], re.M)
        extra = [c for c in choices if c not in allowed and not (header_line and re.search(r'\b%s\b' % c, header_line.group(0)))]
        if not allowed or extra:
            problems.append('%s: %s offers %s, not among the declared choices %s' % (where, var, extra or choices, sorted(allowed)))
    if 'default' in question:
        default = question['default']
        if choices and default not in choices:
            problems.append('%s: %s default %r is not a choice' % (where, var, default))
        if qtype in ('text', 'textarea') and not question.get('min', 0) <= len(default) <= question.get('max', 1024):
            problems.append('%s: %s default %r outside min/max' % (where, var, default))
        declared = (option or {}).get('default')
        literal = declared is not None and '{{' not in str(declared)
        if literal and (where, var) not in DELIBERATE_DEFAULTS and as_declared(kind, default) != declared:
            problems.append('%s: %s default %r is not the role default %r' % (where, var, default, declared))
    return problems


def check_survey(spec, playbooks, where):
    facts = [playbook_facts(p) for p in playbooks]
    problems = []
    variables = [q['variable'] for q in spec['spec']]
    if len(set(variables)) != len(variables):
        problems.append('%s: a variable asked twice' % where)
    if 'target' not in variables or not next(q for q in spec['spec'] if q['variable'] == 'target')['required']:
        problems.append('%s: target must be a required question' % where)
    for question in spec['spec']:
        var = question['variable']
        assert question.get('question_name') and isinstance(question.get('required'), bool), (where, var)
        found = [(expected_type(var, f), f) for f in facts]
        found = [(kind, option, f) for (kind, option), f in found if kind]
        if not found:
            problems.append('%s: %s is no option of the roles %s runs, nor a documented playbook variable'
                            % (where, var, '/'.join(playbooks)))
            continue
        for f in facts:
            if var in f['sets']:
                problems.append('%s: the playbook sets %s itself; a survey answer would override it' % (where, var))
        kind, option, f = found[0]
        problems += check_question(question, kind, option, f, where)
    return problems


def awx_play():
    plays = load(os.path.join(AWX, 'awx.yml'))
    assert len(plays) == 1
    return plays[0]


def task(play, module):
    return next(t for t in play['tasks'] if 'awx.awx.' + module in t)


def test_one_job_template_survey_and_wrapper_per_playbook():
    names = [t['name'] for t in awx_play()['vars']['awx_templates']]
    assert sorted(names) == PLAYBOOKS
    job_template = task(awx_play(), 'job_template')['awx.awx.job_template']
    assert "'surveys/' ~ item.name ~ '.yml'" in job_template['survey_spec']
    assert job_template['playbook'] == '{{ item.name }}.yml'
    for name in PLAYBOOKS:
        assert os.path.isfile(os.path.join(AWX, 'surveys', name + '.yml')), name
        assert os.path.isfile(os.path.join(AWX, 'project', name + '.yml')), name


@pytest.mark.parametrize('playbook', PLAYBOOKS)
def test_each_survey_variable_is_declared_with_its_type(playbook):
    assert check_survey(survey(playbook), [playbook], playbook) == []


def documented_templates():
    """{template name: [the variables its row of docs/awx.md names, in order]}: the backticked name that opens
    each ';'-separated part of the row's third column."""
    rows = {}
    with open(os.path.join(REPO, 'docs', 'awx.md')) as f:
        for line in f:
            cells = [c.strip() for c in line.strip().strip('|').split('|')]
            if len(cells) == 3 and cells[0].startswith('nodeguard '):
                rows[cells[0]] = [re.match(r'`([a-z_]+)`', part.strip()).group(1) for part in top_parts(cells[2])]
    return rows


def top_parts(text):
    """text split at each ';' outside parentheses."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += {'(': 1, ')': -1}.get(ch, 0)
        if ch == ';' and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return parts + [text[start:]]


def test_the_awx_guide_lists_each_templates_survey():
    documented = documented_templates()
    for playbook in PLAYBOOKS:
        spec = survey(playbook)
        assert documented.get(spec['name']) == [q['variable'] for q in spec['spec']], spec['name']
    assert sorted(documented) == sorted(survey(p)['name'] for p in PLAYBOOKS)


def workflow_nodes():
    play = awx_play()
    workflow = task(play, 'workflow_job_template')['awx.awx.workflow_job_template']
    prefix = '{{ awx_prefix }}'
    nodes = {}
    for node in workflow['workflow_nodes']:
        template = node['unified_job_template']
        assert template['type'] == 'job_template' and template['name'].startswith(prefix)
        nodes[node['identifier']] = dict(node, playbook=template['name'][len(prefix):])
    return workflow, nodes


def test_the_workflow_snapshots_rolls_out_and_on_failure_reports_then_repairs():
    workflow, nodes = workflow_nodes()
    assert "surveys/workflow.yml" in workflow['survey_spec']
    assert all(node['playbook'] in PLAYBOOKS for node in nodes.values())

    def next_of(identifier, kind):
        return [nodes[n['identifier']] for n in nodes[identifier].get('related', {}).get(kind, [])]

    kinds = ('success_nodes', 'failure_nodes', 'always_nodes')
    children = set(n['identifier'] for node in nodes.values() for kind in kinds
                   for n in node.get('related', {}).get(kind, []))
    roots = [i for i in nodes if i not in children]
    assert [nodes[r]['playbook'] for r in roots] == ['snapshot']
    rollout = next_of(roots[0], 'success_nodes')
    assert [n['playbook'] for n in rollout] == ['site']
    report = next_of(rollout[0]['identifier'], 'failure_nodes')
    assert [n['playbook'] for n in report] == ['report']
    assert report[0]['extra_data'] == {'fleet_report_readiness': True}
    assert [n['playbook'] for n in next_of(report[0]['identifier'], 'always_nodes')] == ['repair']
    assert next_of(roots[0], 'failure_nodes') == []


def test_the_workflow_survey_fits_every_job_it_reaches():
    nodes = workflow_nodes()[1]
    playbooks = sorted(set(n['playbook'] for n in nodes.values()))
    assert check_survey(survey('workflow'), playbooks, 'workflow') == []


def test_the_checks_catch_a_wrong_survey():
    """A list as text, a bool as text, an unknown variable, a choice the role
    does not have, a default that is not the role's: each one is reported."""
    bad = survey('verify')
    bad['spec'] += [
        {'question_name': 'x', 'variable': 'node_readiness_probe_command', 'type': 'text', 'required': False},
        {'question_name': 'x', 'variable': 'node_readiness_fail', 'type': 'text', 'required': False},
        {'question_name': 'x', 'variable': 'node_readiness_no_such_option', 'type': 'text', 'required': False},
        {'question_name': 'x', 'variable': 'node_readiness_kubernetes', 'type': 'multiplechoice',
         'choices': ['auto', 'maybe'], 'required': False},
        {'question_name': 'x', 'variable': 'node_readiness_service', 'type': 'text', 'required': False,
         'default': 'docker', 'min': 1, 'max': 64},
        {'question_name': 'x', 'variable': 'node_readiness_expected_handlers', 'type': 'textarea',
         'required': False, 'default': 'runc,nvidia'},
    ]
    problems = '\n'.join(check_survey(bad, ['verify'], 'verify'))
    for expected in ('node_readiness_probe_command is text, declared list', 'node_readiness_fail is text, declared bool',
                     'node_readiness_no_such_option is no option', "offers ['maybe']",
                     "node_readiness_service default 'docker' is not the role default",
                     'a variable asked twice'):
        assert expected in problems, problems
    # report.yml sets node_readiness_probe for its own readiness run
    with_override = survey('report')
    with_override['spec'].append({'question_name': 'x', 'variable': 'node_readiness_probe',
                                  'type': 'multiplechoice', 'choices': ['true', 'false'], 'required': False})
    assert 'sets node_readiness_probe itself' in '\n'.join(check_survey(with_override, ['report'], 'report'))


def test_list_options_are_textareas_and_named_in_the_readme():
    with open(os.path.join(AWX, 'README.md'), encoding='utf-8') as handle:
        readme = handle.read()
    for name in PLAYBOOKS + ['workflow']:
        for question in survey(name)['spec']:
            if question['type'] == 'textarea':
                assert '`%s`' % question['variable'] in readme, question['variable']
    assert list_from_text('["runc", "nvidia"]') == list_from_text('runc, nvidia') == list_from_text('runc\nnvidia\n')


def test_each_wrapper_imports_its_playbook_and_parses():
    project = os.path.join(AWX, 'project')
    wrappers = sorted(os.path.basename(p)[:-4] for p in glob.glob(os.path.join(project, '*.yml')))
    assert wrappers == PLAYBOOKS
    for name in wrappers:
        plays = load(os.path.join(project, name + '.yml'))
        assert [p.get('ansible.builtin.import_playbook') for p in plays] == ['%s.%s' % (FQCN, name)]
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS_ROOT, ANSIBLE_CONFIG='',
               PATH=BIN + os.pathsep + os.environ['PATH'])
    env.pop('ANSIBLE_CONFIG')
    cmd = [os.path.join(BIN, 'ansible-playbook'), '--syntax-check', '-i', 'localhost,', '-e', 'target=all']
    proc = subprocess.run(cmd + [n + '.yml' for n in wrappers], cwd=project, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count('playbook: ') == len(wrappers)


def test_a_wrapper_of_a_playbook_the_collection_lacks_fails_the_syntax_check(tmp_path):
    (tmp_path / 'nope.yml').write_text('- name: No such playbook\n  ansible.builtin.import_playbook: %s.nope\n' % FQCN)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS_ROOT)
    env.pop('ANSIBLE_CONFIG', None)
    proc = subprocess.run([os.path.join(BIN, 'ansible-playbook'), '--syntax-check', '-i', 'localhost,', 'nope.yml'],
                          cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode != 0


def test_the_project_requirements_admit_this_version():
    requirements = load(os.path.join(AWX, 'project', 'collections', 'requirements.yml'))
    entry = next(c for c in requirements['collections'] if c['name'] == FQCN)
    version = load(os.path.join(REPO, 'galaxy.yml'))['version']
    assert Version(version) in SpecifierSet(entry['version']), (version, entry['version'])


def test_ansible_builder_makes_the_execution_environments_build_context(tmp_path):
    definition = load(os.path.join(AWX, 'execution-environment.yml'))
    requires = load(os.path.join(REPO, 'meta', 'runtime.yml'))['requires_ansible']
    core = definition['dependencies']['ansible_core']['package_pip']
    assert SpecifierSet(core.replace('ansible-core', '', 1)) == SpecifierSet(requires), (core, requires)
    context = tmp_path / 'context'
    proc = subprocess.run([os.path.join(BIN, 'ansible-builder'), 'create', '-f', 'execution-environment.yml',
                           '-c', str(context)], cwd=AWX, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    containerfile = (context / 'Containerfile').read_text()
    assert 'ansible-galaxy collection install' in containerfile
    assert core in containerfile
    galaxy = load(str(context / '_build' / 'requirements.yml'))
    assert FQCN in [c['name'] for c in galaxy['collections']]
