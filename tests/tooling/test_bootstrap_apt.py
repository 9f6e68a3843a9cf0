"""scripts/bootstrap's apt helpers (scripts/lib/apt.sh), against stand-in apt commands.

Under `set -o pipefail`, `apt-cache policy chromium | grep -q 'Candidate: [^(]'`
failed where the candidate existed: grep -q left at the match, apt-cache died
of SIGPIPE (141), and the bootstrap said "apt has no chromium" on Debian. The
stand-in apt-cache here writes the rest of its answer after a pause, as the
real one does, so that such a pipe fails every time. The helpers run in bash
under `set -euo pipefail` with only the stand-ins on PATH (no real apt-get,
no chromium); apt-get records what it was asked.

Also: no shell of the repository pipes into `grep -q` (or -m, --quiet,
--silent), nor, where it sets pipefail, into `head`.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import limits
import pytest

ROOT = Path(__file__).resolve().parents[2]
APT = ROOT / "scripts" / "lib" / "apt.sh"

POLICY = {
    # Debian 12: apt has Chromium.
    "debian": "chromium:\n  Installed: (none)\n  Candidate: 120.0.6099.224-1~deb12u1\n",
    # Ubuntu: only a snap, the deb is gone.
    "ubuntu": "chromium:\n  Installed: (none)\n  Candidate: (none)\n",
}
TABLE = "  Version table:\n     120.0.6099.224-1~deb12u1 500\n        500 http://deb.debian.org/debian bookworm/main amd64 Packages\n"


def _stub(path: Path, body: str) -> None:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


@pytest.fixture
def apt(tmp_path):
    """Run a snippet of bash with scripts/lib/apt.sh sourced and stand-in apt commands on PATH."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    calls = tmp_path / "apt-get.calls"
    _stub(bin_ / "id", "echo 0\n")
    # dpkg-query knows the packages listed in $INSTALLED.
    _stub(bin_ / "dpkg-query", 'for p in $INSTALLED; do [ "$p" = "$3" ] && { printf "install ok installed"; exit 0; }; done\n'
                               'echo "dpkg-query: no packages found matching $3" >&2; exit 1\n')
    # apt-cache policy: the candidate line first, the rest a moment later (pipefail + grep -q: 141).
    _stub(bin_ / "apt-cache", f'printf "%s" "$POLICY"; /bin/sleep 0.2; printf "%s" "{TABLE}"\n')
    _stub(bin_ / "apt-get", f'echo "$*" >> "{calls}"\n')
    (bin_ / "grep").symlink_to(shutil.which("grep"))  # for the old pipe only

    def run(snippet: str, distro: str, installed: str = "", lib: bool = True):
        source = f'source "{APT}"; ' if lib else ""
        proc = limits.run(["/bin/bash", "-c", f"set -euo pipefail; {source}{snippet}"],
                          env={"PATH": str(bin_), "POLICY": POLICY[distro], "INSTALLED": installed},
                          capture_output=True, text=True, cpu_s=30, check=False)
        proc.calls = calls.read_text().splitlines() if calls.exists() else []
        return proc
    return run


def test_the_stand_in_makes_a_grep_q_pipe_fail(apt):
    """The stand-in reproduces the bug: the old test of a candidate fails with 141 where one exists."""
    proc = apt("apt-cache policy chromium | grep -q 'Candidate: [^(]'", "debian", lib=False)
    assert proc.returncode == 141


def test_candidate_is_found_under_pipefail(apt):
    proc = apt("lockstep_apt_candidate chromium", "debian")
    assert (proc.returncode, proc.stdout) == (0, "120.0.6099.224-1~deb12u1\n"), proc.stderr
    assert apt("lockstep_apt_candidate chromium", "ubuntu").returncode == 1


def test_debian_installs_chromium_and_says_so(apt):
    proc = apt("lockstep_chromium", "debian", installed="fonts-dejavu-core")
    assert proc.returncode == 0, proc.stderr
    assert "installing Debian's chromium 120.0.6099.224-1~deb12u1 (headless)" in proc.stderr
    assert "apt has no chromium" not in proc.stderr
    assert proc.calls[-1] == "install -y -qq --no-install-recommends chromium", proc.calls


def test_ubuntu_says_apt_has_none_and_installs_nothing(apt):
    proc = apt("lockstep_chromium", "ubuntu")
    assert proc.returncode == 0, proc.stderr
    assert "apt has no chromium package here (Ubuntu ships Chromium as a snap only)" in proc.stderr
    assert "browser tests of the HTML report are skipped" in proc.stderr
    assert proc.calls == ["update -qq"]  # asked apt for fresh lists once, installed nothing


def test_installed_chromium_needs_no_apt(apt):
    proc = apt("lockstep_chromium", "debian", installed="chromium fonts-dejavu-core")
    assert (proc.returncode, proc.stderr, proc.calls) == (0, "", [])


def test_installed_packages_are_not_installed_again(apt):
    proc = apt("lockstep_apt_install podman runc", "debian", installed="podman")
    assert proc.returncode == 0, proc.stderr
    assert proc.calls == ["update -qq", "install -y -qq runc"]


QUIET_GREP = re.compile(r"\|\s*grep\s+(?:[^|;&]*\s)?(?:-[a-zA-Z]*[qm][a-zA-Z0-9]*|--quiet|--silent|--max-count)\b")
HEAD = re.compile(r"\|\s*head\b")


def _shell_texts():
    """Every tracked file of the repository that holds shell: scripts, .ci, molecule, tests, roles, playbooks."""
    out = subprocess.run(["git", "ls-files", "-z", "--", "scripts", ".ci", "molecule", "tests", "roles", "playbooks"],
                         cwd=ROOT, capture_output=True, check=True).stdout.decode()
    for name in filter(None, out.split("\0")):
        path = ROOT / name
        if path == Path(__file__).resolve():
            continue  # quotes the pipe it looks for
        if path.suffix in {".py", ".sh", ".yml", ".yaml", ".j2", ""} and path.is_file() and not path.is_symlink():
            try:
                yield name, path.read_text()
            except UnicodeDecodeError:
                continue


def test_no_pipe_into_a_grep_that_leaves_early():
    found = [f"{name}:{n}: {line.strip()}" for name, text in _shell_texts()
             for n, line in enumerate(text.splitlines(), 1)
             if QUIET_GREP.search(line) or ("pipefail" in text and HEAD.search(line))]
    assert found == []
