# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The preflight rules of role cuda (plugins/plugin_utils/preflight/cuda.py), CUDA/driver contract included."""

from __future__ import annotations

import pytest

from ansible_collections.lockstep.gpu.plugins.plugin_utils.preflight import Context
from ansible_collections.lockstep.gpu.plugins.plugin_utils.preflight import cuda
from ansible_collections.lockstep.gpu.plugins.plugin_utils.problems import Problem

NODES = ["dp1", "dp2", "dp3"]
# The molecule cluster scenario's values: roles/cuda/defaults/main.yml and roles/nvidia_driver's
# branch and version (the scenario has no group_vars), as the engine hands them over.
GOOD = {
    "cuda_versions": ["12.1"],
    "cuda_default_version": "12.1",
    "cuda_package_versions": {"12.1": "12.1.1-1"},
    "cuda_driver_compat_mode": "toolkit",
    "cuda_profile": True,
    "cuda_bashrc": False,
    "nvidia_driver_branch": "535",
    "nvidia_driver_version": "535.261.03",
}
# The scenario's nodes: Debian 12 containers.
DEBIAN_12 = {"distribution": "Debian", "distribution_major_version": "12", "distribution_version": "12.11",
             "distribution_release": "bookworm", "os_family": "Debian", "architecture": "x86_64"}


def _ctx(changes=None, raw=None, nodes=None, facts=None, roles=("nvidia_driver", "cuda")):
    """The cluster's context with changes on every node; raw as the inventory wrote the changes."""
    nodes, facts = (NODES if nodes is None else nodes), (DEBIAN_12 if facts is None else facts)
    values = {host: {**GOOD, **(changes or {})} for host in nodes}
    ctx = Context(hosts=list(nodes), groups={"all": list(nodes), "gpu": list(nodes)}, values=values,
                  facts={host: dict(facts) for host in nodes}, roles=roles)
    ctx.raw = {host: dict(raw if raw is not None else changes or {}) for host in nodes}
    return ctx


def _problems(ctx, rule=None):
    rules = (rule,) if rule else cuda.RULES
    return [problem for r in rules for problem in r(ctx)]


def _lines(problems):
    return [problem.line() for problem in problems]


def test_module_shape():
    assert cuda.VARIABLES == ("nvidia_driver_branch", "nvidia_driver_version")
    assert not hasattr(cuda, "probe")  # the cuda checks read nothing on the nodes
    assert len(cuda.RULES) == 5


def test_cluster_values_pass():
    assert _problems(_ctx()) == []


def test_ubuntu_releases_pass():
    for version in ("22.04", "24.04"):
        facts = {"distribution": "Ubuntu", "distribution_version": version, "distribution_major_version": version[:2]}
        assert _problems(_ctx(facts=facts)) == []


# --- cases of molecule/cluster/tests/test_bad_input.py (cuda-versions-string and cuda-compat-choice
# are argument-spec cases: the engine's) ------------------------------------------------------------

def test_case_cuda_12_10_unquoted():
    # The spec turned [12.1] into ['12.1']: only the raw value shows the number.
    ctx = _ctx({"cuda_versions": ["12.1"]}, raw={"cuda_versions": [12.1]})
    allowed = ("12.1 written as a YAML number: quote it ('12.1', or '12.10' if you meant that release), "
               "since YAML reads 12.10 as 12.1")
    assert _problems(ctx) == [Problem("cuda_versions", [12.1], allowed, host) for host in NODES]
    assert _lines(_problems(ctx))[0] == f"dp1: cuda_versions is '[12.1]': {allowed}"


def test_case_cuda_version_major_only():
    ctx = _ctx({"cuda_versions": ["12"]}, nodes=["dp1"])
    # The default (12.1) and the pin of 12.1 are not judged against a list that is itself refused.
    assert _lines(_problems(ctx)) == [
        "dp1: cuda_versions is '['12']': must list CUDA releases (major.minor) such as \"12.1\", at least one"]


def test_case_cuda_default_not_listed():
    ctx = _ctx({"cuda_default_version": "12.4"}, nodes=["dp1"])
    assert _lines(_problems(ctx)) == ["dp1: cuda_default_version is '12.4': must be one of cuda_versions ['12.1']"]


def test_case_cuda_package_other_release():
    ctx = _ctx({"cuda_package_versions": {"12.1": "12.2.0-1"}}, nodes=["dp1"])
    assert _lines(_problems(ctx)) == [
        "dp1: cuda_package_versions['12.1'] is '12.2.0-1': must be the apt version of a CUDA 12.1 release "
        "(e.g. 12.1.1-1)"]


def test_case_cuda_12_1_driver_525():
    ctx = _ctx({"nvidia_driver_branch": "525", "nvidia_driver_version": "525.85.12"})
    assert _lines(_problems(ctx)) == [
        f"{host}: nvidia_driver_version is '525.85.12': CUDA 12.1.1 needs NVIDIA driver >= 530.30.02; the inventory "
        "asks for 525.85.12: raise nvidia_driver_version (or nvidia_driver_branch), or lower cuda_versions"
        for host in NODES]


# --- _supported -------------------------------------------------------------------------------------

def test_unsupported_distribution():
    facts = {"distribution": "Ubuntu", "distribution_version": "20.04", "distribution_major_version": "20"}
    assert _lines(_problems(_ctx(nodes=["dp1"], facts=facts), cuda._supported)) == [
        "dp1: ansible_distribution is 'Ubuntu-20.04': not a release the cuda role supports: "
        "Debian-12, Ubuntu-22.04, Ubuntu-24.04"]


def test_no_facts_nothing_to_judge():
    ctx = _ctx(nodes=["dp1"])
    ctx.facts = {}
    assert _problems(ctx, cuda._supported) == []


# --- _yaml_numbers ----------------------------------------------------------------------------------

def test_default_version_as_number():
    ctx = _ctx({"cuda_default_version": "12.1"}, raw={"cuda_default_version": 12.1}, nodes=["dp1"])
    assert _lines(_problems(ctx)) == [
        "dp1: cuda_default_version is '12.1': 12.1 written as a YAML number: quote it "
        "('12.1', or '12.10' if you meant that release), since YAML reads 12.10 as 12.1"]


def test_package_key_as_number():
    ctx = _ctx({"cuda_package_versions": {12.1: "12.1.1-1"}}, nodes=["dp1"])
    assert _lines(_problems(ctx)) == [
        "dp1: cuda_package_versions is '{12.1: '12.1.1-1'}': the key 12.1 written as a YAML number: quote it "
        "('12.1', or '12.10' if you meant that release), since YAML reads 12.10 as 12.1"]


def test_integer_version_has_no_trailing_zero_hint():
    ctx = _ctx({"cuda_versions": ["12", "12.1"]}, raw={"cuda_versions": [12, "12.1", 12.4]}, nodes=["dp1"])
    assert _lines(_problems(ctx, cuda._yaml_numbers)) == [
        "dp1: cuda_versions is '[12, '12.1', 12.4]': 12, 12.4 written as a YAML number: quote it ('12'), "
        "since YAML reads 12.10 as 12.1"]


def test_quoted_or_unknown_raw_passes():
    assert _problems(_ctx({"cuda_versions": ["12.1", "12.4"], "cuda_default_version": "12.4"},
                          raw={"cuda_versions": ["12.1", "12.4"], "cuda_default_version": "12.4"}),
                     cuda._yaml_numbers) == []
    ctx = _ctx()
    del ctx.raw  # an engine without raw values
    assert _problems(ctx) == []


# --- _releases --------------------------------------------------------------------------------------

def test_empty_versions():
    assert _lines(_problems(_ctx({"cuda_versions": []}, nodes=["dp1"]), cuda._releases)) == [
        "dp1: cuda_versions is '[]': must list CUDA releases (major.minor) such as \"12.1\", at least one"]


def test_patch_release_in_versions():
    ctx = _ctx({"cuda_versions": ["12.1", "12.4.1"]}, nodes=["dp1"])
    assert _lines(_problems(ctx)) == [
        "dp1: cuda_versions is '['12.1', '12.4.1']': must list CUDA releases (major.minor) such as \"12.1\", "
        "at least one"]


def test_invalid_variables_are_skipped():
    ctx = _ctx(nodes=["dp1"])
    for name in ("cuda_versions", "cuda_default_version", "cuda_package_versions", "cuda_driver_compat_mode",
                 "nvidia_driver_version"):
        del ctx.values["dp1"][name]  # refused by the argument spec: the engine reported it
    assert _problems(ctx) == []


# --- _package_versions ------------------------------------------------------------------------------

def test_package_of_toolkit_not_installed():
    ctx = _ctx({"cuda_package_versions": {"12.1": "12.1.1-1", "12.4": "12.4.1-1"}}, nodes=["dp1"])
    assert _lines(_problems(ctx)) == [
        "dp1: cuda_package_versions['12.4'] is '12.4.1-1': 12.4 is not in cuda_versions ['12.1']: "
        "pin only toolkits that are installed"]


@pytest.mark.parametrize("version", ["12.1.1", "12.1.1-1~deb12", "12.10.1-1", 12.1, None])
def test_package_version_not_apt_version_of_release(version):
    ctx = _ctx({"cuda_package_versions": {"12.1": version}}, nodes=["dp1"])
    assert _problems(ctx, cuda._package_versions) == [
        Problem("cuda_package_versions['12.1']", version,
                "must be the apt version of a CUDA 12.1 release (e.g. 12.1.1-1)", "dp1")]
    assert _problems(ctx, cuda._cuda_driver) == []  # Jinja never reached the contract


# --- _cuda_driver (roles/preflight/tasks/cuda_driver.yml) -------------------------------------------

def test_contract_branch_only():
    ctx = _ctx({"nvidia_driver_branch": "525", "nvidia_driver_version": ""}, nodes=["dp1"])
    assert _lines(_problems(ctx)) == [
        "dp1: nvidia_driver_branch is '525': CUDA 12.1.1 needs NVIDIA driver >= 530.30.02; the inventory asks for "
        "branch 525: raise nvidia_driver_version (or nvidia_driver_branch), or lower cuda_versions"]


def test_contract_minor_compat_accepts_525():
    ctx = _ctx({"nvidia_driver_branch": "525", "nvidia_driver_version": "525.85.12",
                "cuda_driver_compat_mode": "minor_compat"})
    assert _problems(ctx) == []


def test_contract_reads_the_pinned_update():
    # 12.2 GA needs 535.54.03, its Update 2 (pinned) 535.104.05.
    values = {"cuda_versions": ["12.1", "12.2"], "nvidia_driver_version": "535.54.03"}
    assert _problems(_ctx(values, nodes=["dp1"])) == []
    pinned = _ctx({**values, "cuda_package_versions": {"12.2": "12.2.2-1"}}, nodes=["dp1"])
    assert _lines(_problems(pinned)) == [
        "dp1: nvidia_driver_version is '535.54.03': CUDA 12.2.2 needs NVIDIA driver >= 535.104.05; the inventory "
        "asks for 535.54.03: raise nvidia_driver_version (or nvidia_driver_branch), or lower cuda_versions"]


def test_contract_names_only_the_nodes_that_fail():
    ctx = _ctx()
    ctx.values["dp2"]["nvidia_driver_version"] = "525.85.12"
    ctx.raw["dp2"] = {"nvidia_driver_version": "525.85.12"}
    assert [p.node for p in _problems(ctx)] == ["dp2"]


def test_contract_unknown_cuda_release():
    ctx = _ctx({"cuda_versions": ["12.1", "12.7"]}, nodes=["dp1"])
    (problem,) = _problems(ctx)
    assert (problem.variable, problem.value, problem.node) == ("cuda_versions", "12.7", "dp1")
    assert problem.allowed.startswith("unknown CUDA version '12.7'; known CUDA versions: ")


def test_contract_needs_both_roles_checked():
    bad = {"nvidia_driver_branch": "525", "nvidia_driver_version": "525.85.12"}
    assert _problems(_ctx(bad, roles=("cuda",)), cuda._cuda_driver) == []
    assert len(_problems(_ctx(bad, roles=()), cuda._cuda_driver)) == 3  # roles not told: checked


@pytest.mark.parametrize("branch, version", [("53x", ""), ("535", "latest"), ("535", "5.3.5.x")])
def test_contract_leaves_a_driver_that_is_no_release_to_nvidia_driver(branch, version):
    ctx = _ctx({"nvidia_driver_branch": branch, "nvidia_driver_version": version})
    assert _problems(ctx, cuda._cuda_driver) == []


@pytest.mark.parametrize("odd", [None, 12, 12.1, True, "", "12.1", [], {}, [None], [{"a": 1}], {None: None},
                                 ["12.1", 3]])
def test_odd_values_never_raise(odd):
    names = ("cuda_versions", "cuda_default_version", "cuda_package_versions", "cuda_driver_compat_mode",
             "nvidia_driver_branch", "nvidia_driver_version")
    for name in names:
        ctx = _ctx({name: odd}, nodes=["dp1"], facts={"distribution": odd})
        for problem in _problems(ctx):
            assert problem.node == "dp1" and problem.line()
