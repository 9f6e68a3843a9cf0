"""Module lockstep.gpu.venv_check's logic (module_utils/venv_check.py)
against pip itself: on real virtual environments whose site-packages hold
distributions' metadata (GPUStack 2.3.0's real METADATA, tests/fixtures/gpustack,
and small hand-made ones), what ``venv_problems`` names must be what
``pip check`` reports, and nothing where pip finds nothing."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from ansible_collections.lockstep.gpu.plugins.module_utils.venv_check import venv_problems, venv_site_packages

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "gpustack"


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A fresh virtual environment (with pip, for pip check), made by the Python running the tests."""
    venv = tmp_path_factory.mktemp("venv") / "env"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    return venv


def install(venv: Path, name: str, version: str, requires=(), metadata: str | None = None) -> None:
    """A distribution's metadata as pip leaves it in site-packages (its code does not matter here)."""
    info = Path(venv_site_packages(str(venv))[0]) / f"{name}-{version}.dist-info"
    info.mkdir(exist_ok=True)
    text = metadata or "".join([f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"]
                               + [f"Requires-Dist: {r}\n" for r in requires])
    (info / "METADATA").write_text(text, encoding="utf-8")
    (info / "RECORD").write_text("", encoding="utf-8")


def remove(venv: Path, name: str, version: str) -> None:
    info = Path(venv_site_packages(str(venv))[0]) / f"{name}-{version}.dist-info"
    for child in info.iterdir():
        child.unlink()
    info.rmdir()


def pip_check(venv: Path) -> set:
    """{(distribution, dependency)} that pip check reports."""
    done = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "check", "--disable-pip-version-check"],
                          capture_output=True, text=True, check=False)
    found = set(re.findall(r"^(\S+) \S+ requires (\S+), which is not installed", done.stdout, re.M))
    found |= set(re.findall(r"^(\S+) \S+ has requirement (\S+?)[<>=!~;, ]", done.stdout, re.M))
    assert (done.returncode == 0) == (not found), done.stdout
    return {(a.lower(), b.lower()) for a, b in found}


def ours(problems: list) -> set:
    """{(distribution, dependency)} of venv_problems' dependency lines."""
    return {(a.lower(), b.lower()) for a, b in
            (re.match(r"^(\S+) \S+ requires ([A-Za-z0-9._-]+)", p).groups() for p in problems if " requires " in p)}


def test_a_consistent_environment_has_no_problem_and_neither_has_pip(made):
    install(made, "alpha", "1.0", ["beta>=2", "gamma; extra == 'fast'", "delta; python_version < '3'"])
    install(made, "beta", "2.1")
    try:
        assert pip_check(made) == set()
        assert venv_problems(str(made), ["alpha==1.0", "beta>=2"]) == []
    finally:
        remove(made, "alpha", "1.0")
        remove(made, "beta", "2.1")


def test_a_pin_of_a_lock_at_another_version_is_named_though_no_dependent_minds(made):
    """Role gpustack passes every pin of its lock (issue 30, part 4): a distribution at another version that
    every dependent allows is named by the pin alone, while pip check finds nothing."""
    install(made, "alpha", "1.0", ["beta>=2"])
    install(made, "beta", "2.1")
    try:
        assert pip_check(made) == set()
        assert venv_problems(str(made), ["alpha==1.0", "beta==2.2"]) == ["beta==2.2: 2.1 installed"]
    finally:
        remove(made, "alpha", "1.0")
        remove(made, "beta", "2.1")


def test_a_dependency_missing_or_at_another_version_is_named_as_pip_check_names_it(made):
    install(made, "alpha", "1.0", ["beta>=2", "epsilon"])
    install(made, "beta", "1.5")
    try:
        problems = venv_problems(str(made), ["alpha==1.0"])
        assert ours(problems) == pip_check(made) == {("alpha", "beta"), ("alpha", "epsilon")}
        assert "alpha 1.0 requires beta>=2: 1.5 installed" in problems
        assert "alpha 1.0 requires epsilon: not installed" in problems
    finally:
        remove(made, "alpha", "1.0")
        remove(made, "beta", "1.5")


def test_gpustacks_real_metadata_without_its_dependencies_is_named_as_pip_check_names_it(made):
    metadata = (FIXTURES / "METADATA_gpustack-2.3.0").read_text(encoding="utf-8")
    install(made, "gpustack", "2.3.0", metadata=metadata)
    try:
        problems = venv_problems(str(made), ["gpustack==2.3.0"])
        expected = pip_check(made)
        assert len(expected) > 30 and ours(problems) == expected
        # The requirement itself is met: only its dependencies are named.
        assert not [p for p in problems if p.startswith("gpustack==")]
    finally:
        remove(made, "gpustack", "2.3.0")


@pytest.mark.parametrize("requirement, why", [
    ("gpustack==2.3.0", "gpustack==2.3.0: not installed"),
    ("pip[extra]", "pip[extra]: has extras, which pip resolves"),
    ("not a requirement!", "not a requirement!: "),
])
def test_a_requirement_pip_would_act_on_is_named(made, requirement, why):
    assert [p for p in venv_problems(str(made), [requirement]) if p.startswith(requirement)][0].startswith(why)


def test_an_environment_that_is_not_there_or_of_another_python_is_left_to_pip(made, tmp_path):
    assert venv_problems(str(tmp_path / "none"), ["pip"]) == [f"no environment at {tmp_path / 'none'}"]
    other = tmp_path / "other"
    (other / "lib" / "python3.99" / "site-packages").mkdir(parents=True)
    (other / "pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.99.0\n", encoding="utf-8")
    running = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert venv_problems(str(other), ["pip"]) == [f"{other} was made by Python 3.99, this check runs Python {running}"]
