"""lockstep.gpu.pip_lock (issue 30, part 4): role gpustack installs GPUStack's
whole closure from a lock with pip --require-hashes, after checking that the
lock pins what the role declares. Read on the role's own lock (written by
scripts/gpustack-lock from the project's wheelhouse) and on broken copies.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from ansible_collections.lockstep.gpu.plugins.plugin_utils.pip_lock import parse_pip_lock, pip_lock

ROOT = Path(__file__).resolve().parents[2]
DEFAULTS = yaml.safe_load((ROOT / "roles/gpustack/defaults/main.yml").read_text())
LOCK = (ROOT / "roles/gpustack/files" / f"gpustack-{DEFAULTS['gpustack_version']}-requirements.txt").read_text()
DECLARED = [f"gpustack=={DEFAULTS['gpustack_version']}", *DEFAULTS["gpustack_pip_extra_packages"]]
HASH = "--hash=sha256:" + "ab" * 32


def test_the_roles_lock_locks_what_the_role_declares_and_the_whole_closure():
    result = pip_lock(LOCK, DECLARED)
    assert result["problems"] == []
    # gpustack and everything it runs on: its server's web stack and database driver among them.
    names = {pin.split("==")[0] for pin in result["pins"]}
    assert {"gpustack", "fastfetch-bin", "fastapi", "sqlalchemy", "setuptools"} <= names
    assert len(result["pins"]) > 100 and result["pins"] == sorted(result["pins"], key=lambda pin: pin.split("==")[0])


def test_a_lock_for_another_version_or_without_an_extra_package_is_named():
    other = LOCK.replace(f"gpustack=={DEFAULTS['gpustack_version']} ", "gpustack==2.2.9 ")
    assert pip_lock(other, DECLARED)["problems"] == [f"it pins gpustack==2.2.9, not {DEFAULTS['gpustack_version']}"]
    without = "\n".join(line for line in LOCK.splitlines() if not line.startswith("fastfetch-bin=="))
    assert pip_lock(without, DECLARED)["problems"] == [f"it has no fastfetch-bin ({DECLARED[1]} is required)"]


def test_every_line_that_is_not_a_hashed_pin_is_named_with_its_number():
    text = f"# a comment\n\nfoo==1.0 {HASH}\nbar==2.0\nbaz>=1 {HASH}\nqux==1 --hash=md5:00\nfoo==1.0 {HASH}\n"
    pins, problems = parse_pip_lock(text)
    assert pins == {"foo": "1.0"}
    assert [p.split(" ", 2)[1] for p in problems] == ["4", "5", "6", "7"]
    assert "pins foo a second time" in problems[-1]


def test_names_compare_as_pep_503_and_an_empty_lock_is_refused():
    assert pip_lock(f"Fastfetch_Bin==2.69.0 {HASH}\n", ["fastfetch-bin==2.69.0"]) == {
        "pins": ["fastfetch-bin==2.69.0"], "problems": []}
    assert pip_lock("# nothing\n", [])["problems"] == ["it pins no distribution"]
    assert pip_lock(f"a==1 {HASH}\n", ["a>=1"])["problems"] == ["requirement 'a>=1' is not pinned as name==version"]
