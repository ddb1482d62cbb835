# -*- coding: utf-8 -*-
"""Find shell pipelines whose last reader stops early.

Under ``set -o pipefail`` (the Makefile's .SHELLFLAGS, tests/images/build.sh,
tests/demo/demo.sh, .ci/*, and the shell tasks ansible-lint makes set it)
``cmd | head -n1`` fails at random: ``head`` exits after one line, ``cmd``
gets EPIPE or SIGPIPE on its next write, and pipefail turns that into a
failed command. That is how ``ansible --version | head -n1`` broke
``make deps``.

An early reader is ``head``, ``grep`` with -q/-m/-l (or their long names),
``sed`` running a ``q``/``Q`` command, ``awk`` calling ``exit`` and a bare
``read``. Read the whole output instead (``v=$(cmd)``, ``grep -c``,
``tail``), or, where the writer cannot be hurt (it writes everything before
the reader can stop, or ignores SIGPIPE), put a comment with the reason on
that line or the line above::

    # early-exit-ok: printf writes one short line, all before grep reads

Run it as ``python tests/sanity/pipeline_check.py [PATH]...``; without paths
it scans the files of this repository listed in ``scanned_files``.
"""

import os
import re
import shlex
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The reason marker: the word, a colon and some text.
ALLOW = re.compile(r'#.*\bearly-exit-ok:\s*\S')

# A pipe that is not part of `||` (nor `|&` stderr-too, treated alike).
PIPE = re.compile(r'(?<![|])\|(?![|])&?')

GREP_EARLY_OPTION = re.compile(
    r'^(-[a-zA-Z]*[qml][a-zA-Z0-9]*|--quiet|--silent|--max-count(=.*)?|--files-with-matches)$')
# A sed `q` or `Q` command (in a script word, quotes already removed): at
# the start or after an address, a `;` or `{`, with an optional exit code.
SED_QUIT = re.compile(r'(^|[\s;{0-9$/])[qQ]\s*[0-9]*\s*($|[;}])')
AWK_EXIT = re.compile(r'\bexit\b')
# A YAML block scalar (`cmd: |`, `- |-`) is no pipe into the next line.
YAML_BLOCK = re.compile(r'(^|:|-)\s*\|[-+0-9]*$')

# Where pipelines run under pipefail (see the module docstring).
SCAN_ROOTS = ('Makefile', '.ci', 'tests/images', 'tests/demo', 'roles', 'playbooks', 'molecule')
SCAN_SUFFIXES = ('.sh', '.bash', '.yml', '.yaml', '.j2', '.mk')
SHELL_SHEBANG = re.compile(r'^#!.*\b(ba|da|k|z)?sh\b')


def _is_shell_script(path):
    try:
        with open(path, 'rb') as f:
            first = f.readline(200)
    except OSError:
        return False
    return bool(SHELL_SHEBANG.match(first.decode('utf-8', 'replace')))


def scanned_files(repo=REPO):
    """Makefile, shell scripts and YAML of the places that run pipelines."""
    found = []
    for root in SCAN_ROOTS:
        top = os.path.join(repo, root)
        if os.path.isfile(top):
            found.append(top)
            continue
        for folder, dirs, files in os.walk(top):
            dirs[:] = sorted(d for d in dirs if d not in ('__pycache__', '.cache'))
            for name in sorted(files):
                path = os.path.join(folder, name)
                if name == 'Makefile' or name.endswith(SCAN_SUFFIXES) or _is_shell_script(path):
                    found.append(path)
    return found


# Tokens that end the command reading a pipe.
COMMAND_ENDS = frozenset(('|', '|&', '||', '&&', ';', ';;', '&', ')', '))'))
# Words before the command name that do not change which command it is.
PREFIX_WORDS = frozenset(('{', '(', '!', 'env', 'exec', 'command', 'time', 'nice'))


def _shell_tokens(code):
    """The line split as the shell splits it (quotes kept together), or None."""
    lexer = shlex.shlex(code, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ''
    try:
        return list(lexer)
    except ValueError:  # an unclosed quote: a string that goes on
        return None


def _pipe_readers(code):
    """The words of each command that reads a pipe on this line."""
    tokens = _shell_tokens(code)
    if tokens is None:  # fall back to splitting at the pipes
        return [part.split() for part in PIPE.split(code)[1:]]
    readers, current = [], None
    for token in tokens:
        if token in ('|', '|&'):
            if current is not None:
                readers.append(current)
            current = []
        elif token in COMMAND_ENDS:
            if current is not None:
                readers.append(current)
            current = None
        elif current is not None:
            current.append(token)
    if current is not None:
        readers.append(current)
    return readers


def early_reader(words):
    """What stops early in this command (a list of words), or None."""
    words = list(words)
    while words and (words[0] in PREFIX_WORDS or re.match(r'^[A-Za-z_][A-Za-z0-9_]*=', words[0])):
        words.pop(0)
    if not words:
        return None
    command, args = os.path.basename(words[0]), words[1:]
    if command == 'head':
        return 'head'
    if command in ('grep', 'egrep', 'fgrep', 'zgrep'):
        for word in args:
            if GREP_EARLY_OPTION.match(word):
                return 'grep ' + word
        return None
    if command == 'sed' and any(SED_QUIT.search(word) for word in args if not word.startswith('-')):
        return 'sed q'
    if command in ('awk', 'gawk', 'mawk', 'nawk') and any(AWK_EXIT.search(word) for word in args):
        return 'awk exit'
    if command == 'read':
        return 'read'
    return None


def _code_part(line):
    """The line without a trailing shell comment (a `#` after a space)."""
    if line.lstrip().startswith(('#', '@#')):
        return ''
    return re.split(r'\s#\s', line, maxsplit=1)[0]


def check_text(text, name='<text>'):
    """Problems in one file's text as 'NAME:LINE: message' strings."""
    problems = []
    lines = text.splitlines()
    pending_pipe = False  # the previous line ended with `|`
    for number, line in enumerate(lines, start=1):
        code = _code_part(line)
        # A pipe at the end of the last line feeds the first command here.
        readers = _pipe_readers(('true | ' if pending_pipe else '') + code)
        stripped = code.rstrip()
        pending_pipe = stripped.endswith('|') and not stripped.endswith('||') \
            and not YAML_BLOCK.search(stripped)
        allowed = ALLOW.search(line) or (number > 1 and ALLOW.search(lines[number - 2]))
        for words in readers:
            what = early_reader(words)
            if what and not allowed:
                problems.append(
                    '%s:%d: pipeline ends in a reader that stops early (%s); under pipefail the writer '
                    'can die of SIGPIPE. Read the whole output, or add "# early-exit-ok: <why it is safe>": %s'
                    % (name, number, what, line.strip()))
    return problems


def check_files(paths, repo=REPO):
    problems = []
    for path in paths:
        with open(path, encoding='utf-8', errors='replace') as f:
            text = f.read()
        problems.extend(check_text(text, os.path.relpath(path, repo)))
    return problems


def main(argv):
    paths = argv or scanned_files()
    problems = check_files(paths)
    for problem in problems:
        print(problem)
    print('pipeline check: %d files, %d problems' % (len(paths), len(problems)))
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
