"""scripts/gpustack-lock (issue 30, part 4) on a small wheelhouse of
hand-made wheels named as the role declares (gpustack at gpustack_version,
which needs one more distribution, and the extra packages): the lock pins
the whole closure, each line with the sha256 of the wheel it was resolved
to, and locks what the role declares; a closure pip cannot resolve writes
nothing and names the missing distribution."""

from __future__ import annotations

import hashlib
import os
import sys
import zipfile
from pathlib import Path

import yaml
from ansible_collections.lockstep.gpu.plugins.plugin_utils.pip_lock import parse_pip_lock, pip_lock
from limits import run

ROOT = Path(__file__).resolve().parents[2]
DEFAULTS = yaml.safe_load((ROOT / "roles/gpustack/defaults/main.yml").read_text())
DECLARED = [f"gpustack=={DEFAULTS['gpustack_version']}", *DEFAULTS["gpustack_pip_extra_packages"]]


def wheel(house: Path, name: str, version: str, requires=()) -> Path:
    """A pure-Python wheel pip accepts: METADATA, WHEEL and RECORD, no code."""
    path = house / f"{name.replace('-', '_')}-{version}-py3-none-any.whl"
    info = f"{name.replace('-', '_')}-{version}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires)
    with zipfile.ZipFile(path, "w") as whl:
        whl.writestr(f"{info}/METADATA", metadata)
        whl.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        whl.writestr(f"{info}/RECORD", "")
    return path


def lock(house: Path, output: Path):
    env = dict(os.environ, PIP_CONSTRAINT="", PIP_FIND_LINKS="", PIP_EXTRA_INDEX_URL="", PIP_CONFIG_FILE=os.devnull)
    return run([sys.executable, str(ROOT / "scripts/gpustack-lock"), "--find-links", str(house), "--output",
                str(output)], cpu_s=120, capture_output=True, text=True, env=env)


def test_the_lock_pins_the_whole_closure_with_each_wheels_sha256(tmp_path):
    house = tmp_path / "wheels"
    house.mkdir()
    made = [wheel(house, "gpustack", DEFAULTS["gpustack_version"], ["needed-dep>=1"]), wheel(house, "needed-dep", "1.4")]
    made += [wheel(house, *extra.split("==")) for extra in DEFAULTS["gpustack_pip_extra_packages"]]
    wheel(house, "needed-dep", "0.9")
    output = tmp_path / "lock.txt"
    result = lock(house, output)
    assert result.returncode == 0, result.stderr
    text = output.read_text()
    pins, problems = parse_pip_lock(text)
    assert problems == [] and pip_lock(text, DECLARED)["problems"] == []
    assert pins["needed-dep"] == "1.4" and len(pins) == len(made)
    for path in made:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        assert f" --hash=sha256:{digest}" in text, path.name


def test_a_closure_pip_cannot_resolve_writes_nothing(tmp_path):
    house = tmp_path / "wheels"
    house.mkdir()
    wheel(house, "gpustack", DEFAULTS["gpustack_version"], ["absent-dep==2"])
    for extra in DEFAULTS["gpustack_pip_extra_packages"]:
        wheel(house, *extra.split("=="))
    output = tmp_path / "lock.txt"
    result = lock(house, output)
    assert result.returncode == 1 and "absent-dep" in result.stderr, result.stderr
    assert not output.exists()
