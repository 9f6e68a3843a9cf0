# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_facts' Slurm section: digests of the munge key and slurm.conf
(plugins/module_utils/slurm.py), through analyse() and components()."""

from __future__ import annotations

import hashlib
import json
import os

import pytest
from ansible_collections.lockstep.gpu.plugins.module_utils.analyse import analyse
from ansible_collections.lockstep.gpu.plugins.module_utils.bundle import SLURM, empty_raw, is_bundle_file
from ansible_collections.lockstep.gpu.plugins.module_utils.collect import Runner, collect_live
from ansible_collections.lockstep.gpu.plugins.module_utils.parsing import ParseError
from ansible_collections.lockstep.gpu.plugins.module_utils.slurm import build_slurm, file_sha256, parse_slurm
from ansible_collections.lockstep.gpu.plugins.plugin_utils.components import components

KEY = bytes(range(256)) * 4  # binary, like munge's own keys
CONF = b"ClusterName=lockstep\nSlurmctldHost=sl1\n"


@pytest.fixture(name="files")
def fixture_files(tmp_path):
    key, conf = tmp_path / "munge.key", tmp_path / "slurm.conf"
    key.write_bytes(KEY)
    conf.write_bytes(CONF)
    return str(key), str(conf)


def test_digests_of_both_files_and_never_the_key(files):
    text, problem = build_slurm(*files)
    assert problem is None
    assert json.loads(text) == {"munge_key_sha256": hashlib.sha256(KEY).hexdigest(),
                                "conf_sha256": hashlib.sha256(CONF).hexdigest()}
    assert KEY.hex() not in text and KEY[:64].decode("latin-1") not in text
    assert is_bundle_file(SLURM)


def test_absent_files_read_as_null_and_no_slurm_as_no_file(tmp_path, files):
    text, problem = build_slurm(files[0], str(tmp_path / "none.conf"))
    assert problem is None and json.loads(text)["conf_sha256"] is None
    assert build_slurm(str(tmp_path / "a"), str(tmp_path / "b")) == (None, None)


def test_a_file_that_cannot_be_read_is_a_named_problem(files):
    def digest(path):
        return (None, f"cannot read {path}: Permission denied") if path == files[0] else file_sha256(path)
    text, problem = build_slurm(*files, digest=digest)
    assert text is None
    assert problem == f"cannot read {files[0]}: Permission denied"


def test_a_directory_in_place_of_the_file_is_a_problem(tmp_path, files):
    os.mkdir(tmp_path / "dir")
    _text, problem = build_slurm(files[0], str(tmp_path / "dir"))
    assert problem.startswith(f"cannot read {tmp_path / 'dir'}")


@pytest.mark.parametrize("text, message", [
    ("{", "not JSON"),
    ('{"munge_key_sha256": null}', "expected an object with conf_sha256, munge_key_sha256"),
    ('{"munge_key_sha256": "abc", "conf_sha256": null}', "munge_key_sha256 is 'abc', not a SHA-256 hex digest"),
])
def test_parse_refuses_what_the_collector_never_writes(text, message):
    with pytest.raises(ParseError, match=message):
        parse_slurm(text, SLURM)


def test_facts_and_components_carry_the_digests(files):
    raw = empty_raw()
    raw[SLURM] = build_slurm(*files)[0]
    facts = analyse(raw)
    assert facts["slurm"] == {"present": True, "munge_key_sha256": hashlib.sha256(KEY).hexdigest(),
                              "conf_sha256": hashlib.sha256(CONF).hexdigest()}
    flat = components(facts)
    assert flat["slurm.munge_key_sha256"] == hashlib.sha256(KEY).hexdigest()
    assert flat["slurm.conf_sha256"] == hashlib.sha256(CONF).hexdigest()


def test_no_slurm_means_no_components():
    facts = analyse(empty_raw())
    assert facts["slurm"] == {"present": False, "munge_key_sha256": None, "conf_sha256": None}
    assert not [name for name in components(facts) if name.startswith("slurm.")]


def test_unreadable_slurm_json_names_the_file_in_both_components():
    raw = empty_raw()
    raw[SLURM] = "not json"
    facts = analyse(raw)
    assert facts["slurm"]["error"].startswith("slurm.json: not JSON")
    flat = components(facts)
    assert flat["slurm.munge_key_sha256"] == flat["slurm.conf_sha256"] == facts["slurm"]


class _NoTools(Runner):
    def which(self, name, opt_dirs=()):
        return None

    def run(self, argv):  # pragma: no cover - nothing is installed
        raise AssertionError(argv)


def test_live_collection_reads_the_given_paths(tmp_path, files):
    raw = collect_live(_NoTools(), conda_envs_dirs=(), nccl_conf=str(tmp_path / "none"),
                       paths={"sys_class_net": str(tmp_path)}, munge_key=files[0], slurm_conf=files[1])
    assert json.loads(raw[SLURM])["munge_key_sha256"] == hashlib.sha256(KEY).hexdigest()
    assert "collect-errors.json" not in {k for k, v in raw.items() if v}
