# -*- coding: utf-8 -*-
"""Stand-in for ansible-test's pip bootstrap script (get-pip.py).

ansible-test downloads get-pip.py from ci-files.testing.ansible.com, which is
not reachable from our CI; `make sanity` copies this file into ansible-test's
cache instead.  It gives the fresh virtual environment pip from the Python's
own ensurepip, then installs the requested pip version from PyPI (reachable).
"""
import subprocess
import sys

# get-pip.py options that `pip install` does not take
SKIP = ('--no-setuptools', '--no-wheel')

args = [a for a in sys.argv[1:] if a not in SKIP]
subprocess.check_call([sys.executable, '-m', 'ensurepip', '--upgrade', '--default-pip'])
subprocess.check_call([sys.executable, '-m', 'pip', 'install'] + args)
