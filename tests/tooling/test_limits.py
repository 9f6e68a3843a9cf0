"""limits.run stops a tool by the CPU it spends, whatever the machine's load (see limits.py)."""

from __future__ import annotations

import signal
import sys

import limits


def test_a_tool_that_loops_is_stopped_by_its_cpu_limit():
    proc = limits.run([sys.executable, "-c", "while True: pass"], cpu_s=1, check=False)
    assert proc.returncode == -signal.SIGXCPU


def test_a_tool_that_sleeps_spends_no_cpu_and_ends_on_its_own():
    proc = limits.run([sys.executable, "-c", "import time; time.sleep(2)"], cpu_s=1, check=False)
    assert proc.returncode == 0
