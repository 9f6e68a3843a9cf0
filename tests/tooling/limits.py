"""The tools these tests start, limited by the CPU they spend rather than by the wall clock.

scripts/test runs these tests at nice 10 beside molecule's two lanes, which can leave them a
tenth of a core for minutes. A wall-clock limit then fails a test that is only waiting for its
turn: CI failed so on 9ef32b9, where preflight_run.py (49 s of CPU alone) ran past its 600 s
and took 126 tests with it. ``run`` limits the CPU seconds each process may spend
(RLIMIT_CPU, which its children inherit, each with its own count): a tool that loops is still
stopped (SIGXCPU, a negative return code), whatever the load. The wall-clock limit stays only as
the last guard against a tool that waits forever, set beyond what any load of this machine
makes of a test's run and inside CI's 90 minutes.
"""

from __future__ import annotations

import resource
import subprocess

WALL_S = 2400


def run(cmd, *, cpu_s: int, **kwargs) -> subprocess.CompletedProcess:
    """subprocess.run(cmd, **kwargs), each process it starts allowed ``cpu_s`` seconds of CPU."""

    def limit() -> None:
        # SIGXCPU at cpu_s (it names the cause); SIGKILL 5 s later for a process that ignores it.
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 5))

    return subprocess.run(cmd, preexec_fn=limit, timeout=WALL_S, **kwargs)  # pytest starts no threads here
