# -*- coding: utf-8 -*-
"""The documentation site (`make docs`, docs/site/build.py) as a reader sees
it: built from this tree, then every page opened in headless Chromium (the
DevTools protocol over a pipe, one browser for the whole site).

What the pages must hold is read from the tree, not from the site: one page
per module (with a row in its options table for each option its
DOCUMENTATION declares), per lookup plugin, per role (each entry point's
options from meta/argument_specs.yml), per docs/*.md guide (its title); and
no link between the site's pages may point at a page or an anchor that does
not exist.
"""

import ast
import glob
import importlib.util
import json
import os
import select
import shutil
import subprocess
import sys
import time
import urllib.parse

import pytest
import yaml

from conftest import COLLECTIONS_ROOT, REPO

CHROMIUM = shutil.which('chromium') or shutil.which('chromium-browser')
PAGES = os.path.join('collections', 'nodeguard', 'containerd')
FQCN = 'nodeguard.containerd'

# What a page is, as the browser rendered it.
PAGE_FACTS = '''(() => {
  // the title without its permalink sign
  const h1 = document.querySelector('h1') && document.querySelector('h1').cloneNode(true);
  if (h1) h1.querySelectorAll('a.headerlink').forEach(a => a.remove());
  const table = document.querySelector('table.ansible-option-table');
  const box = table ? table.getBoundingClientRect() : null;
  return {
    title: document.title,
    h1: h1 ? h1.textContent.trim() : null,
    text: document.body ? document.body.innerText.length : 0,
    tables: document.querySelectorAll('table.ansible-option-table').length,
    table_box: box ? [box.width, box.height] : null,
    ids: Array.from(document.querySelectorAll('[id]'), e => e.id),
    links: Array.from(document.querySelectorAll('a[href]'), a => a.href),
  };
})()'''


class Chromium:
    """Headless Chromium driven through --remote-debugging-pipe (fd 3 in,
    fd 4 out, NUL-terminated JSON): no port, no websocket library."""

    def __init__(self, profile):
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        self.proc = subprocess.Popen(
            ['bash', '-c', 'exec "$@" 3<&%d 4>&%d' % (to_browser_r, from_browser_w), 'chromium',
             CHROMIUM, '--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage',
             '--no-first-run', '--disable-background-networking', '--disable-extensions',
             '--user-data-dir=' + profile, '--remote-debugging-pipe', 'about:blank'],
            pass_fds=(to_browser_r, from_browser_w), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b''
        self._next_id = 0
        self.events = []
        target = self.call('Target.createTarget', url='about:blank')['targetId']
        self.session = self.call('Target.attachToTarget', targetId=target, flatten=True)['sessionId']
        self.call('Page.enable', session=True)

    def _message(self, deadline):
        while b'\0' not in self._buffer:
            left = deadline - time.monotonic()
            ready = select.select([self._from_browser], [], [], max(left, 0))[0]
            if not ready:
                raise TimeoutError('Chromium did not answer in time')
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise RuntimeError('Chromium closed its pipe: %s' % self.proc.stderr.read()[-2000:])
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b'\0', 1)
        return json.loads(raw)

    def call(self, method, session=False, timeout=60, **params):
        self._next_id += 1
        message = {'id': self._next_id, 'method': method, 'params': params}
        if session:
            message['sessionId'] = self.session
        os.write(self._to_browser, json.dumps(message).encode() + b'\0')
        deadline = time.monotonic() + timeout
        while True:
            reply = self._message(deadline)
            if reply.get('id') == self._next_id:
                assert 'error' not in reply, '%s: %s' % (method, reply['error'])
                return reply['result']
            self.events.append(reply)

    def wait_event(self, method, timeout=60):
        deadline = time.monotonic() + timeout
        while True:
            for i, event in enumerate(self.events):
                if event.get('method') == method:
                    return self.events.pop(i)
            self.events.append(self._message(deadline))

    def open(self, url):
        """Load URL, wait for its load event, return PAGE_FACTS of the page."""
        self.events = []
        nav = self.call('Page.navigate', session=True, url=url)
        assert not nav.get('errorText'), '%s: %s' % (url, nav.get('errorText'))
        self.wait_event('Page.loadEventFired')
        result = self.call('Runtime.evaluate', session=True, expression=PAGE_FACTS, returnByValue=True)
        return result['result']['value']

    def close(self):
        self.proc.kill()
        self.proc.wait()
        os.close(self._to_browser)
        os.close(self._from_browser)


@pytest.fixture(scope='module')
def site(tmp_path_factory):
    """docs/site/build.py run on this tree, as `make docs` runs it."""
    dest = str(tmp_path_factory.mktemp('docs'))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS_ROOT,
               ANSIBLE_CONFIG=os.path.join(REPO, 'ansible.cfg'))
    proc = subprocess.run([sys.executable, os.path.join(REPO, 'docs', 'site', 'build.py'), '--dest', dest],
                          env=env, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
    return os.path.join(dest, 'html')


@pytest.fixture(scope='module')
def pages(site, tmp_path_factory):
    """Every HTML page of the site, as Chromium rendered it, by path."""
    if CHROMIUM is None:
        pytest.fail('chromium is not installed (Makefile APT_PACKAGES)')
    browser = Chromium(str(tmp_path_factory.mktemp('chromium-profile')))
    try:
        seen = {}
        for path in sorted(glob.glob(os.path.join(site, '**', '*.html'), recursive=True)):
            seen[os.path.relpath(path, site)] = browser.open('file://' + path)
        return seen
    finally:
        browser.close()


def declared_options(module_path):
    """The option names of a module's own DOCUMENTATION (not its fragments)."""
    with open(module_path, encoding='utf-8') as handle:
        tree = ast.parse(handle.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, 'id', None) == 'DOCUMENTATION' for t in node.targets):
            return sorted(yaml.safe_load(node.value.value).get('options') or {})
    raise AssertionError('%s has no DOCUMENTATION' % module_path)


def plugin_names(kind):
    return sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(REPO, 'plugins', kind, '*.py'))
                  if not os.path.basename(p).startswith('_'))


def test_the_site_has_an_index_that_names_the_collection(pages):
    index = pages['index.html']
    assert FQCN in index['title'] and index['text'] > 200
    collection = pages[os.path.join(PAGES, 'index.html')]
    for module in plugin_names('modules'):
        assert any(urllib.parse.urlsplit(link).path.endswith('/%s_module.html' % module)
                   for link in collection['links']), module


@pytest.mark.parametrize('module', plugin_names('modules'))
def test_each_module_has_a_page_with_its_options_table(pages, module):
    page = pages.get(os.path.join(PAGES, '%s_module.html' % module))
    assert page is not None, 'no page for module %s' % module
    assert page['h1'].startswith('%s.%s module' % (FQCN, module)), page['h1']
    assert page['tables'] >= 1, '%s: no options table' % module
    width, height = page['table_box']
    assert width > 200 and height > 50, '%s: the options table is not laid out: %r' % (module, page['table_box'])
    ids = set(page['ids'])
    options = declared_options(os.path.join(REPO, 'plugins', 'modules', module + '.py'))
    assert options, module
    missing = [o for o in options if 'parameter-' + o not in ids]
    assert missing == [], '%s: options without a row: %s' % (module, missing)


@pytest.mark.parametrize('plugin', plugin_names('lookup'))
def test_each_lookup_plugin_has_a_page(pages, plugin):
    page = pages.get(os.path.join(PAGES, '%s_lookup.html' % plugin))
    assert page is not None, 'no page for lookup %s' % plugin
    assert page['h1'].startswith('%s.%s lookup' % (FQCN, plugin)), page['h1']


def role_specs():
    found = []
    for spec in sorted(glob.glob(os.path.join(REPO, 'roles', '*', 'meta', 'argument_specs.yml'))):
        with open(spec, encoding='utf-8') as handle:
            found.append((spec.split(os.sep)[-3], yaml.safe_load(handle)['argument_specs']))
    return found


@pytest.mark.parametrize('role,specs', role_specs(), ids=[pair[0] for pair in role_specs()])
def test_each_role_has_a_page_with_each_entry_points_options(pages, role, specs):
    page = pages.get(os.path.join(PAGES, '%s_role.html' % role))
    assert page is not None, 'no page for role %s' % role
    assert page['h1'].startswith('%s.%s role' % (FQCN, role)), page['h1']
    ids = set(page['ids'])
    missing = ['%s: %s' % (entry, option) for entry, spec in specs.items()
               for option in spec.get('options') or {} if 'parameter-%s--%s' % (entry, option) not in ids]
    assert missing == [], '%s: options without a row: %s' % (role, missing)


def guides():
    return sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(REPO, 'docs', '*.md')))


def first_heading(name):
    with open(os.path.join(REPO, 'docs', name + '.md'), encoding='utf-8') as handle:
        for line in handle:
            if line.startswith('# '):
                return line[2:].strip().replace('`', '').replace('**', '')
    raise AssertionError('docs/%s.md has no title' % name)


@pytest.mark.parametrize('guide', guides())
def test_each_guide_is_a_page_with_its_title(pages, guide):
    page = pages.get(os.path.join('guides', guide + '.html'))
    assert page is not None, 'docs/%s.md has no page' % guide
    assert page['h1'] == first_heading(guide)
    assert page['text'] > 300
    assert any(urllib.parse.urlsplit(link).path.endswith('/guides/%s.html' % guide)
               for link in pages['index.html']['links']), guide


def test_no_link_between_pages_is_broken(site, pages):
    broken = []
    for path, page in sorted(pages.items()):
        for link in page['links']:
            url = urllib.parse.urlsplit(link)
            if url.scheme != 'file':
                continue
            target = os.path.relpath(urllib.parse.unquote(url.path), site)
            if target.startswith('..') or not os.path.exists(os.path.join(site, target)):
                broken.append('%s -> %s' % (path, link))
            elif url.fragment and target in pages and url.fragment not in pages[target]['ids']:
                broken.append('%s -> %s (no such anchor)' % (path, link))
    assert broken == [], '\n'.join(broken)


def load_builder():
    spec = importlib.util.spec_from_file_location('docs_site_build', os.path.join(REPO, 'docs', 'site', 'build.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_guides_link_to_pages_and_the_repository_not_to_missing_files(pages):
    """A guide's link to a role's README or a module's source lands on its
    page; one to a file the site does not have goes to the repository."""
    builder = load_builder()
    meta = builder.galaxy()
    repo = meta['repository'].rstrip('/')
    pages_dir = '../collections/nodeguard/containerd/'
    assert builder.link_target('../roles/node_readiness/README.md', meta) == pages_dir + 'node_readiness_role.rst'
    assert builder.link_target('../roles/coco/', meta) == pages_dir + 'coco_role.rst'
    assert builder.link_target('../plugins/modules/containerd_info.py', meta) == pages_dir + 'containerd_info_module.rst'
    assert builder.link_target('../README.md#supported-matrix', meta) == repo + '/blob/main/README.md#supported-matrix'
    assert builder.link_target('../playbooks', meta) == repo + '/tree/main/playbooks'
    for kept in ('awx.md', 'using.md#effective-config', '#top', 'https://example.org/x.md'):
        assert builder.link_target(kept, meta) == kept
    links = [link for guide in guides() for link in pages[os.path.join('guides', guide + '.html')]['links']]
    assert [link for link in links if not link.startswith(('file://', 'https://', 'http://', 'mailto:'))] == []
    assert [link for link in links if link.startswith('file://') and '.md' in link] == []
