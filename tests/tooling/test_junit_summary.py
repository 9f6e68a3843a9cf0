"""scripts/lib/junit.py: the unit stage's line of passed and skipped tests, with the skips' reasons.

Read from the JUnit XML this pytest writes for a small suite of its own, so
that the line follows pytest's real format.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
JUNIT = ROOT / "scripts" / "lib" / "junit.py"

SUITE = '''
import shutil
import pytest

def test_passes():
    pass

@pytest.mark.parametrize("n", range(3))
@pytest.mark.skipif(True, reason="no Chromium (scripts/bootstrap installs it)")
def test_browser(n):
    pass

def test_skips_inside():
    pytest.skip("needs dpkg (Debian or Ubuntu)")

@pytest.mark.xfail(reason="known")
def test_xfails():
    assert False
'''


def _junit(tmp_path: Path, suite: str) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "test_suite.py").write_text(suite)
    xml = tmp_path / "out" / "suite.xml"
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={xml}",
                    str(tmp_path / "test_suite.py")], cwd=tmp_path, capture_output=True, check=False)
    assert xml.is_file()
    return xml


def _line(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(JUNIT), *args], capture_output=True, text=True, check=False)


def test_counts_and_reasons(tmp_path):
    xml = _junit(tmp_path, SUITE)
    proc = _line(str(xml.parent))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ("1 passed, 1 xfailed, 4 skipped: 3 no Chromium (scripts/bootstrap installs it); "
                           "1 needs dpkg (Debian or Ubuntu)\n")


def test_one_reason_and_none(tmp_path):
    one = _junit(tmp_path / "a", "import pytest\n\n@pytest.mark.skip(reason='no chromium')\ndef test_a():\n    pass\n"
                 "\ndef test_b():\n    pass\n")
    none = _junit(tmp_path / "b", "def test_a():\n    pass\n\ndef test_b():\n    assert False\n")
    assert _line(str(one)).stdout == "1 passed, 1 skipped: no chromium\n"
    assert _line(str(none)).stdout == "1 passed, 1 failed, 0 skipped\n"
    # Several files (tests/tooling and ansible-test units) add up.
    assert _line(str(one), str(none)).stdout == "2 passed, 1 failed, 1 skipped: no chromium\n"


def test_no_results_is_an_error(tmp_path):
    proc = _line(str(tmp_path))
    assert proc.returncode == 1
    assert "no JUnit XML" in proc.stderr
