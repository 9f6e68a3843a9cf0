"""playbooks/collect_bundles.yml turns file names a node reports into paths
on the controller: its pattern must take every name the collector writes
and nothing that could leave the bundle folder."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from ansible_collections.lockstep.gpu.plugins.module_utils.bundle import BUNDLE_FILES

ROOT = Path(__file__).resolve().parents[2]


def _pattern():
    play = yaml.safe_load((ROOT / "playbooks" / "collect_bundles.yml").read_text())[0]
    task = next(t for t in play["tasks"] if t["name"] == "Refuse file names that are not bundle file names")
    return re.compile(re.search(r"reject\('match', '([^']+)'\)", task["ansible.builtin.assert"]["that"]).group(1))


def test_every_bundle_file_name_is_taken():
    pattern = _pattern()
    names = list(BUNDLE_FILES) + ["cuda-version-12.1.json", "cuda-version-11.8.json"]
    assert [n for n in names if not pattern.match(n)] == []


def test_names_that_leave_the_bundle_folder_are_refused():
    pattern = _pattern()
    for name in ("../../etc/cron.d/x", "/etc/passwd", ".ssh", "a/b", "..", "nccl.h\n"):
        assert not pattern.match(name), name
