# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_facts' GPUStack section: the version in GPUStack's virtual environment
(plugins/module_utils/gpustack.py), read from the real METADATA header of the
gpustack 2.3.0 wheel, and the digest of every distribution beside it, read
from the real dist-info names of a GPUStack 2.3.0 venv (both in
tests/fixtures/gpustack/, SOURCES.md), through collect_live(), analyse() and
components()."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from ansible_collections.lockstep.gpu.plugins.module_utils.analyse import analyse
from ansible_collections.lockstep.gpu.plugins.module_utils.bundle import GPUSTACK, empty_raw, is_bundle_file
from ansible_collections.lockstep.gpu.plugins.module_utils.gpustack import (
    build_gpustack,
    metadata_version,
    parse_gpustack,
)
from ansible_collections.lockstep.gpu.plugins.module_utils.parsing import ParseError
from ansible_collections.lockstep.gpu.plugins.plugin_utils.components import components

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "gpustack" / "METADATA_gpustack-2.3.0"
METADATA = FIXTURE.read_text(encoding="utf-8")
SITE = (FIXTURE.parent / "site-packages_gpustack-2.3.0.txt").read_text(encoding="utf-8").split()


def make_venv(root: Path, metadata: str = METADATA, python: str = "python3.11", version: str = "2.3.0") -> Path:
    """A venv laid out as pip lays out GPUStack's: lib/python3.X/site-packages/gpustack-V.dist-info/METADATA."""
    dist_info = root / "lib" / python / "site-packages" / f"gpustack-{version}.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text(metadata, encoding="utf-8")
    return root


def test_the_real_metadata_header_gives_its_version():
    assert metadata_version(METADATA) == "2.3.0"
    # The wheel's header, not a made-up one: it names gpustack and its dependencies.
    assert "Requires-Dist: gpustack-runtime==0.2.6" in METADATA


def test_the_header_stops_at_the_first_blank_line():
    # A "Version:" line in the long description is not the version.
    text = METADATA + "\n# GPUStack\nVersion: 9.9.9\n"
    assert metadata_version(text) == "2.3.0"


@pytest.mark.parametrize("text, message", [
    (METADATA.replace("Name: gpustack", "Name: torch"), "METADATA names 'torch', not gpustack"),
    (METADATA.replace("Version: 2.3.0\n", ""), "has no usable Version: header"),
    (METADATA.replace("Version: 2.3.0", "Version: "), "has no usable Version: header"),
    ("", "names 'no package', not gpustack"),
])
def test_a_header_without_gpustack_or_its_version_is_refused(text, message):
    with pytest.raises(ParseError, match=message):
        metadata_version(text, "METADATA")


def test_a_venv_with_gpustack_gives_the_bundle_file(tmp_path):
    venv = make_venv(tmp_path / "venv")
    text, problem = build_gpustack(str(venv))
    assert problem is None
    data = json.loads(text)
    assert data == {"venv": str(venv), "version": "2.3.0", "packages": {"gpustack": "2.3.0"},
                    "metadata": str(venv / "lib/python3.11/site-packages/gpustack-2.3.0.dist-info/METADATA")}
    assert parse_gpustack(text) == data
    assert is_bundle_file(GPUSTACK)


def test_no_venv_is_no_gpustack(tmp_path):
    assert build_gpustack(str(tmp_path / "absent")) == (None, None)


def test_a_venv_without_gpustack_or_with_two_is_a_named_problem(tmp_path):
    empty = tmp_path / "empty"
    (empty / "lib/python3.11/site-packages").mkdir(parents=True)
    text, problem = build_gpustack(str(empty))
    assert text is None and problem.startswith(f"{empty} holds no lib/python3*/site-packages/gpustack-*")
    two = make_venv(tmp_path / "two")
    make_venv(two, python="python3.12", version="2.2.0")
    text, problem = build_gpustack(str(two))
    assert text is None and problem.startswith(f"{two} holds more than one GPUStack")


def test_a_broken_metadata_is_a_problem_naming_the_file(tmp_path):
    venv = make_venv(tmp_path / "venv", metadata="Metadata-Version: 2.3\nName: gpustack\n")
    _text, problem = build_gpustack(str(venv))
    assert "gpustack-2.3.0.dist-info/METADATA: METADATA has no usable Version: header" in problem


@pytest.mark.parametrize("text", ["{", "[]", '{"venv": "/v", "version": "2.3.0"}',
                                  '{"venv": "/v", "metadata": "/m", "version": ""}',
                                  '{"venv": "/v", "metadata": "/m", "version": "2.3.0; rm"}',
                                  '{"venv": "/v", "metadata": "/m", "version": "2.3.0", "packages": ["six"]}',
                                  '{"venv": "/v", "metadata": "/m", "version": "2.3.0", "packages": {"six": ""}}',
                                  '{"venv": "/v", "metadata": "/m", "version": "2.3.0", "other": 1}'])
def test_a_bundle_file_that_is_not_the_format_is_refused(text):
    with pytest.raises(ParseError):
        parse_gpustack(text, GPUSTACK)


def test_facts_and_the_component_verify_compares(tmp_path):
    raw = empty_raw()
    raw[GPUSTACK], _problem = build_gpustack(str(make_venv(tmp_path / "venv")))
    facts = analyse(raw)
    one = hashlib.sha256(b"gpustack==2.3.0\n").hexdigest()
    assert facts["gpustack"] == {"present": True, "version": "2.3.0", "venv": str(tmp_path / "venv"),
                                 "packages": 1, "packages_sha256": one}
    assert components(facts)["gpustack.version"] == "2.3.0"
    assert components(facts)["gpustack.packages_sha256"] == one


def test_absent_gpustack_is_no_component():
    facts = analyse(empty_raw())
    assert facts["gpustack"] == {"present": False, "version": None, "venv": None, "packages": None,
                                 "packages_sha256": None}
    assert "gpustack.version" not in components(facts) and "gpustack.packages_sha256" not in components(facts)


def test_an_unreadable_gpustack_is_an_error_component(tmp_path):
    raw = empty_raw()
    raw["collect-errors.json"] = json.dumps({GPUSTACK: "/opt/gpustack/venv holds more than one GPUStack"})
    facts = analyse(raw)
    assert facts["gpustack"] == {"error": "gpustack.json: /opt/gpustack/venv holds more than one GPUStack"}
    assert components(facts)["gpustack.version"] == {"error": "gpustack.json: /opt/gpustack/venv holds more than one GPUStack"}
    assert components(facts)["gpustack.packages_sha256"] == components(facts)["gpustack.version"]


def test_collect_live_reads_the_venv_it_is_given(tmp_path):
    from ansible_collections.lockstep.gpu.plugins.module_utils.collect import Runner, collect_live

    class NoCommands(Runner):
        def which(self, name, opt_dirs=()):
            return None

        def run(self, argv):
            raise AssertionError(f"no command expected, ran {argv}")

    venv = make_venv(tmp_path / "venv")
    raw = collect_live(NoCommands(), conda_envs_dirs=[], gpustack_venv=str(venv), timeout=0,
                       paths={"sys_class_net": str(tmp_path), "sys_class_infiniband": str(tmp_path / "none")})
    assert json.loads(raw[GPUSTACK])["version"] == "2.3.0"
    absent = collect_live(NoCommands(), conda_envs_dirs=[], gpustack_venv=str(tmp_path / "none"), timeout=0,
                          paths={"sys_class_net": str(tmp_path), "sys_class_infiniband": str(tmp_path / "none")})
    assert absent[GPUSTACK] is None


def real_venv(root: Path, names=SITE) -> Path:
    """The real GPUStack 2.3.0 venv's site-packages: its dist-info directories (the fixture's names)."""
    venv = make_venv(root)
    site = venv / "lib" / "python3.11" / "site-packages"
    for name in names:
        (site / name).mkdir(exist_ok=True)
    return venv


def gpustack_facts(venv: Path) -> dict:
    raw = empty_raw()
    raw[GPUSTACK], problem = build_gpustack(str(venv))
    assert problem is None
    return analyse(raw)["gpustack"]


def test_every_distribution_of_the_real_venv_is_in_the_digest(tmp_path):
    facts = gpustack_facts(real_venv(tmp_path / "venv"))
    assert facts["packages"] == len(SITE) == 142
    # Names as PEP 503 (PyYAML's dist-info is pyyaml, gpustack_runtime's is gpustack-runtime), sorted lines.
    pairs = (n[:-len(".dist-info")].rsplit("-", 1) for n in SITE)
    lines = sorted(f"{name.replace('_', '-').replace('.', '-').lower()}=={version}" for name, version in pairs)
    assert "gpustack-runtime==0.2.6" in lines and "pyyaml==6.0.4" in lines and "pip==23.2.1" in lines
    assert facts["packages_sha256"] == hashlib.sha256("".join(f"{line}\n" for line in lines).encode()).hexdigest()


def test_one_package_of_another_version_or_one_more_changes_the_digest_and_the_same_closure_does_not(tmp_path):
    same = gpustack_facts(real_venv(tmp_path / "a"))["packages_sha256"]
    assert gpustack_facts(real_venv(tmp_path / "b"))["packages_sha256"] == same
    swapped = [n.replace("aiofiles-25.1.0", "aiofiles-24.1.0") for n in SITE]
    assert gpustack_facts(real_venv(tmp_path / "c", swapped))["packages_sha256"] != same
    assert gpustack_facts(real_venv(tmp_path / "d", [*SITE, "wheel-0.45.1.dist-info"]))["packages_sha256"] != same
    # Not a distribution: a package's own directory, a .pth, a stray file.
    assert gpustack_facts(real_venv(tmp_path / "e", [*SITE, "aiofiles", "__pycache__"]))["packages_sha256"] == same


def test_a_bundle_saved_before_the_list_still_gives_the_version_and_no_digest():
    text = json.dumps({"venv": "/opt/gpustack/venv", "version": "2.3.0",
                       "metadata": "/opt/gpustack/venv/lib/python3.11/site-packages/gpustack-2.3.0.dist-info/METADATA"})
    raw = empty_raw()
    raw[GPUSTACK] = text
    facts = analyse(raw)
    assert facts["gpustack"]["version"] == "2.3.0" and facts["gpustack"]["packages_sha256"] is None
    assert components(facts)["gpustack.version"] == "2.3.0" and "gpustack.packages_sha256" not in components(facts)
