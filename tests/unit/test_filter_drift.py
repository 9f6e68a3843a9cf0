# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for plugins/filter/drift.py."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.lockstep.gpu.plugins.filter import drift_report as ld
from ansible_collections.lockstep.gpu.plugins.plugin_utils.drift import LOCKSTEP_VERSION, drift
from ansible_collections.lockstep.gpu.plugins.plugin_utils.report_table import drift_table

ROOT = Path(__file__).resolve().parents[2]


def _by(report):
    """{(host, component): drift} for terse assertions."""
    return {(d["host"], d["component"]): d for d in report["drifts"]}


def _cluster(n=5, **overrides):
    facts = {
        f"gpu{i:02d}": {
            "driver": "535.261.03",
            "cuda": "12.2",
            "nccl": "2.18.3-1+cuda12.2",
            "hostname": f"gpu{i:02d}",
        }
        for i in range(1, n + 1)
    }
    for host, changes in overrides.items():
        facts[host].update(changes)
    return facts


# --------------------------------------------------------------------------- #
# Majority
# --------------------------------------------------------------------------- #


def test_uniform_cluster_is_ok():
    report = drift(_cluster(), ignore=["hostname"])
    assert report["ok"] is True
    assert report["lockstep_version"] == LOCKSTEP_VERSION
    assert report["drifts"] == []
    assert report["hosts"] == ["gpu01", "gpu02", "gpu03", "gpu04", "gpu05"]
    assert report["components"] == ["cuda", "driver", "nccl"]
    assert report["ignored"] == ["hostname"]
    assert report["expected"]["driver"] == "535.261.03"
    info = report["by_component"]["driver"]
    assert info["source"] == "majority" and info["deviating_hosts"] == []
    assert info["values"] == [{"value": "535.261.03", "hosts": report["hosts"]}]


def test_majority_flags_the_odd_host():
    facts = _cluster(gpu03={"driver": "535.104.05"})
    report = drift(facts, ignore=["hostname"])
    assert report["ok"] is False
    assert report["drifts"] == [
        {
            "host": "gpu03",
            "component": "driver",
            "expected": "535.261.03",
            "actual": "535.104.05",
            "reason": "differs",
        }
    ]
    info = report["by_component"]["driver"]
    assert info["expected"] == "535.261.03"
    assert info["source"] == "majority"
    assert info["deviating_hosts"] == ["gpu03"]
    assert info["tie"] is False
    assert [v["value"] for v in info["values"]] == ["535.261.03", "535.104.05"]


def test_tie_goes_to_first_sorted_host_and_others_are_reported():
    facts = {
        "b-node": {"kernel": "6.1.0-25"},
        "a-node": {"kernel": "6.1.0-21"},
        "d-node": {"kernel": "6.1.0-25"},
        "c-node": {"kernel": "6.1.0-21"},
    }
    report = drift(facts)
    info = report["by_component"]["kernel"]
    assert info["expected"] == "6.1.0-21"  # held by a-node, first in sorted order
    assert info["tie"] is True
    assert info["deviating_hosts"] == ["b-node", "d-node"]
    assert {(d["host"], d["reason"]) for d in report["drifts"]} == {
        ("b-node", "differs"),
        ("d-node", "differs"),
    }


def test_three_way_tie_is_deterministic_regardless_of_input_order():
    facts = {"h3": {"x": "c"}, "h1": {"x": "b"}, "h2": {"x": "a"}}
    for order in (["h3", "h1", "h2"], ["h1", "h2", "h3"], ["h2", "h3", "h1"]):
        report = drift({h: facts[h] for h in order})
        assert report["expected"]["x"] == "b"
        assert report["by_component"]["x"]["deviating_hosts"] == ["h2", "h3"]


def test_missing_component_is_drift():
    facts = _cluster()
    del facts["gpu02"]["nccl"]
    report = drift(facts, ignore=["hostname"])
    d = _by(report)[("gpu02", "nccl")]
    assert d["reason"] == "missing"
    assert d["actual"] is None
    assert d["expected"] == "2.18.3-1+cuda12.2"
    assert report["by_component"]["nccl"]["deviating_hosts"] == ["gpu02"]


def test_component_on_a_minority_of_hosts_is_unexpected():
    facts = _cluster()
    facts["gpu04"]["debug_pkg"] = "1.0"
    report = drift(facts, ignore=["hostname"])
    d = _by(report)[("gpu04", "debug_pkg")]
    assert d["reason"] == "unexpected"
    assert d["actual"] == "1.0"
    info = report["by_component"]["debug_pkg"]
    assert info["absent"] is True and info["expected"] is None
    assert info["deviating_hosts"] == ["gpu04"]
    assert len(report["drifts"]) == 1


def test_unreadable_is_drift_and_does_not_vote():
    facts = {
        "n1": {"driver": {"error": "nvidia-smi: command not found"}},
        "n2": {"driver": {"error": "nvidia-smi: command not found"}},
        "n3": {"driver": {"error": "timeout"}},
        "n4": {"driver": "535.261.03"},
    }
    report = drift(facts)
    assert report["expected"]["driver"] == "535.261.03"
    by = _by(report)
    assert by[("n1", "driver")]["reason"] == "unreadable"
    assert by[("n1", "driver")]["actual"] == {"error": "nvidia-smi: command not found"}
    assert by[("n3", "driver")]["actual"] == {"error": "timeout"}
    assert ("n4", "driver") not in by
    assert report["by_component"]["driver"]["deviating_hosts"] == ["n1", "n2", "n3"]


def test_all_unreadable_has_no_expectation():
    report = drift({"n1": {"gpu": {"error": "x"}}, "n2": {"gpu": {"error": "y"}}})
    info = report["by_component"]["gpu"]
    assert info["source"] == "none" and info["expected"] is None
    assert {d["reason"] for d in report["drifts"]} == {"unreadable"}


def test_types_are_not_conflated():
    facts = {"a": {"flag": True}, "b": {"flag": True}, "c": {"flag": 1}}
    report = drift(facts)
    assert report["expected"]["flag"] is True
    assert _by(report)[("c", "flag")]["actual"] == 1


def test_none_is_a_value_not_absence():
    facts = {"a": {"mig": None}, "b": {"mig": None}, "c": {}}
    report = drift(facts)
    assert report["expected"]["mig"] is None
    assert report["by_component"]["mig"]["absent"] is False
    assert _by(report)[("c", "mig")]["reason"] == "missing"


# --------------------------------------------------------------------------- #
# Declared expectations
# --------------------------------------------------------------------------- #


def test_declared_wins_even_when_the_whole_cluster_agrees():
    facts = _cluster(3)
    report = drift(facts, expected={"driver": "550.54.15"}, ignore=["hostname"])
    info = report["by_component"]["driver"]
    assert info["source"] == "declared"
    assert info["expected"] == "550.54.15"
    assert info["deviating_hosts"] == ["gpu01", "gpu02", "gpu03"]
    assert all(
        d["reason"] == "differs" and d["expected"] == "550.54.15" and d["actual"] == "535.261.03"
        for d in report["drifts"]
    )
    # Undeclared components still use the majority.
    assert report["by_component"]["cuda"]["source"] == "majority"


def test_declared_number_matches_string_fact():
    facts = _cluster(2)
    report = drift(facts, expected={"cuda": 12.2}, ignore=["hostname"])
    assert report["ok"] is True


def test_declared_component_missing_everywhere():
    report = drift(
        _cluster(2), expected={"fabricmanager": "535.261.03"}, ignore=["hostname"]
    )
    assert "fabricmanager" in report["components"]
    assert {(d["host"], d["reason"]) for d in report["drifts"]} == {
        ("gpu01", "missing"),
        ("gpu02", "missing"),
    }


def test_declared_min_constraint_uses_version_comparison():
    facts = _cluster(
        4,
        gpu02={"driver": "530.30.02"},
        gpu03={"driver": "525.85.12"},
        gpu04={"driver": "535.104.05"},
    )
    report = drift(facts, expected={"driver": {"min": "530.30.02"}}, ignore=["hostname"])
    assert report["by_component"]["driver"]["deviating_hosts"] == ["gpu03"]
    d = _by(report)[("gpu03", "driver")]
    assert d["expected"] == {"min": "530.30.02"} and d["actual"] == "525.85.12"


def test_declared_version_prefix_and_max():
    facts = {
        "a": {"cuda": "12.1.105"},
        "b": {"cuda": "12.1"},
        "c": {"cuda": "12.10.1"},
        "d": {"cuda": "12.2.140"},
    }
    report = drift(facts, expected={"cuda": {"version_prefix": "12.1"}})
    assert report["by_component"]["cuda"]["deviating_hosts"] == ["c", "d"]
    report = drift(facts, expected={"cuda": {"max": "12.2"}})
    assert report["by_component"]["cuda"]["deviating_hosts"] == ["c", "d"]


def test_declared_debian_scheme_and_one_of():
    facts = {"a": {"nccl": "2.18.3-1+cuda12.1"}, "b": {"nccl": "2.18.3-1~bpo"}, "c": {"nccl": "x"}}
    report = drift(facts, expected={"nccl": {"min": "2.18.3-1", "scheme": "debian"}})
    # ~bpo sorts before the release; "x" is not a version (and is below any).
    assert report["by_component"]["nccl"]["deviating_hosts"] == ["b", "c"]
    report = drift(facts, expected={"nccl": {"one_of": ["x", "2.18.3-1~bpo"]}})
    assert report["by_component"]["nccl"]["deviating_hosts"] == ["a"]


def test_declared_absent():
    facts = {"a": {"nouveau": "loaded"}, "b": {}}
    report = drift(facts, expected={"nouveau": {"absent": True}})
    assert [(d["host"], d["reason"]) for d in report["drifts"]] == [("a", "unexpected")]


def test_declared_overrides_ignore():
    facts = {"a": {"serial": "1"}, "b": {"serial": "2"}}
    assert drift(facts, ignore=["serial"])["ok"] is True
    report = drift(facts, expected={"serial": "1"}, ignore=["serial"])
    assert [d["host"] for d in report["drifts"]] == ["b"]


# --------------------------------------------------------------------------- #
# Ignore patterns
# --------------------------------------------------------------------------- #


def test_ignore_patterns():
    facts = {
        "a": {
            "gpu0_uuid": "GPU-1",
            "gpu1_uuid": "GPU-2",
            "board_serial": "S1",
            "hostname": "a",
            "driver": "1",
        },
        "b": {
            "gpu0_uuid": "GPU-3",
            "gpu1_uuid": "GPU-4",
            "board_serial": "S2",
            "hostname": "b",
            "driver": "1",
        },
    }
    report = drift(facts, ignore=["*_uuid", "*serial*", "hostname"])
    assert report["ok"] is True
    assert report["components"] == ["driver"]
    assert report["ignored"] == ["board_serial", "gpu0_uuid", "gpu1_uuid", "hostname"]
    # Case-sensitive, whole-name match.
    report = drift(facts, ignore=["*UUID", "host"])
    assert {d["component"] for d in report["drifts"]} == {
        "gpu0_uuid",
        "gpu1_uuid",
        "board_serial",
        "hostname",
    }


def test_ignore_accepts_a_single_string():
    facts = {"a": {"hostname": "a"}, "b": {"hostname": "b"}}
    assert drift(facts, ignore="hostname")["ok"] is True


# --------------------------------------------------------------------------- #
# Bad input
# --------------------------------------------------------------------------- #


def test_bad_inputs_name_the_value():
    with pytest.raises(AnsibleFilterError, match="facts must be a mapping"):
        drift(["a", "b"])
    with pytest.raises(AnsibleFilterError, match="'n1'"):
        drift({"n1": "not a dict"})
    with pytest.raises(AnsibleFilterError, match=r"'gpus' on host 'n1'"):
        drift({"n1": {"gpus": ["a", "b"]}})
    with pytest.raises(AnsibleFilterError, match="'minimum'"):
        drift({"n1": {"driver": "1"}}, expected={"driver": {"minimum": "1"}})
    with pytest.raises(AnsibleFilterError, match="ignore"):
        drift({"n1": {}}, ignore=5)
    with pytest.raises(AnsibleFilterError, match="drift"):
        drift_table({"not": "a report"})


# --------------------------------------------------------------------------- #
# Filter plumbing and scale
# --------------------------------------------------------------------------- #


def test_filter_module_exposes_filters():
    filters = ld.FilterModule().filters()
    assert set(filters) == {
        "drift",
        "drift_table",
        "drift_markdown",
        "drift_html",
        "drift_line",
        "drift_changes",
        "name_check",
        "torch_check",
        "stack_lock",
        "rollout_lock",
    }


def _synthetic(n_hosts, n_components=40, seed=7):
    rng = random.Random(seed)
    base = {f"component_{c:02d}": f"{c}.{c * 3}.{c * 7}-1" for c in range(n_components)}
    facts = {}
    for i in range(n_hosts):
        row = dict(base)
        row["component_00"] = f"node{i:05d}"  # per-host unique, ignored
        facts[f"node{i:05d}"] = row
    for _drift in range(max(1, n_hosts // 100)):
        host = f"node{rng.randrange(n_hosts):05d}"
        comp = f"component_{rng.randrange(1, n_components):02d}"
        facts[host][comp] = "9.9.9-drift"
    return facts


def test_ten_thousand_hosts():
    """Correctness at scale; its speed is tests/bench/bench_drift.py's (a ratio, not a timed test)."""
    facts = _synthetic(10_000)
    report = drift(facts, ignore=["component_00"])
    assert len(report["hosts"]) == 10_000
    assert len(report["components"]) == 39
    assert 0 < len(report["drifts"]) <= 100
    assert all(d["actual"] == "9.9.9-drift" for d in report["drifts"])


def test_the_reports_version_is_the_collections():
    """Every report names the Lockstep that made it: galaxy.yml's version."""
    galaxy = (ROOT / "galaxy.yml").read_text(encoding="utf-8")
    version = next(line.split(":", 1)[1].strip() for line in galaxy.splitlines() if line.startswith("version:"))
    assert LOCKSTEP_VERSION == version
