# -*- coding: utf-8 -*-
"""Line tracing for the mutation runner's coverage pass (tests/mutation/run.py).

Python imports this file at start-up when its folder is on PYTHONPATH, which
the runner arranges only for its coverage pass.  With NG_TRACE_DIR and
NG_TRACE_ROOT set, every process (pytest itself and the modules the tests
start as subprocesses) records which lines of the files under NG_TRACE_ROOT
it ran, and writes them to NG_TRACE_DIR when it exits, tagged with the test
named in NG_TRACE_TEST.  Without those variables it does nothing.
"""

import os

if os.environ.get('NG_TRACE_DIR') and os.environ.get('NG_TRACE_ROOT'):
    import ng_linetrace

    ng_linetrace.start_process_trace()
