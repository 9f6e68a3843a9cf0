"""The preflight rules of role nvidia_driver (plugin_utils/preflight/nvidia_driver.py), on hand-built contexts:
the role's defaults on the cluster scenario's Debian 12 nodes pass, and each bad value is named once, with its
node, variable and value. The cases of molecule/cluster/tests/test_bad_input.py that are this module's are here
with their ids; driver-source-choice and driver-reboot-timeout are argument-spec cases (the engine's).
"""

from __future__ import annotations

import pytest
from ansible_collections.lockstep.gpu.plugins.plugin_utils.preflight import Context
from ansible_collections.lockstep.gpu.plugins.plugin_utils.preflight.nvidia_driver import RULES
from ansible_collections.lockstep.gpu.plugins.plugin_utils.problems import Problem, fold

NODES = ["dp1", "dp2", "dp3"]
# roles/nvidia_driver/defaults/main.yml, as the cluster scenario's nodes get them (no inventory overrides).
DEFAULTS = {
    "nvidia_driver_source": "cuda",
    "nvidia_driver_branch": "535",
    "nvidia_driver_version": "535.261.03",
    "nvidia_driver_ubuntu_server": True,
    "nvidia_driver_debian_mirror": "http://deb.debian.org/debian",
    "nvidia_driver_debian_keyring": "/usr/share/keyrings/debian-archive-keyring.gpg",
    "nvidia_driver_fabricmanager": False,
    "nvidia_driver_blacklist_nouveau": True,
    "nvidia_driver_dkms": True,
    "nvidia_driver_reboot": True,
    "nvidia_driver_reboot_timeout": 1800,
    "nvidia_driver_reboot_deferred": False,
    "nvidia_driver_reboot_batch": 1,
    "nvidia_driver_persistenced": True,
}
# The scenario's node image (localhost/lockstep-node:debian12).
DEBIAN12 = {"distribution": "Debian", "distribution_major_version": "12", "distribution_version": "12.11",
            "distribution_release": "bookworm", "os_family": "Debian", "architecture": "x86_64"}
UBUNTU2204 = {"distribution": "Ubuntu", "distribution_major_version": "22", "distribution_version": "22.04",
              "distribution_release": "jammy", "os_family": "Debian", "architecture": "x86_64"}
DEBIAN11 = {**DEBIAN12, "distribution_major_version": "11", "distribution_version": "11.9",
            "distribution_release": "bullseye"}


def _ctx(dp1=None, everywhere=None, facts=None, raw=None) -> Context:
    """The three nodes with the defaults, `everywhere` on every node and `dp1` on dp1 only."""
    facts = DEBIAN12 if facts is None else facts
    values = {host: {**DEFAULTS, **(everywhere or {}), **((dp1 or {}) if host == "dp1" else {})} for host in NODES}
    return Context(hosts=list(NODES), groups={"all": list(NODES), "gpu": list(NODES)}, values=values,
                   raw={"dp1": raw} if raw else {}, facts={host: dict(facts) for host in NODES},
                   probes={host: {"virtualization": "container"} for host in NODES})


def _lines(ctx, rules=RULES) -> list[str]:
    return [problem.line() for rule in rules for problem in rule(ctx)]


def test_the_defaults_on_the_cluster_scenario_pass():
    assert _lines(_ctx()) == []


def test_every_rule_yields_problems():
    for rule in RULES:
        assert all(isinstance(problem, Problem) for problem in rule(_ctx(everywhere={"nvidia_driver_branch": "x"})))


# --- molecule/cluster/tests/test_bad_input.py ------------------------------------------------------------------


def test_driver_source_ubuntu_on_debian_folds_into_one_line_for_every_node():
    # Site-wide there: every node runs Debian 12.
    problems = [p for rule in RULES for p in rule(_ctx(everywhere={"nvidia_driver_source": "ubuntu"}))]
    assert [p.line() for p in problems] == [
        f"{host}: nvidia_driver_source is 'ubuntu': not available on Debian-12: use cuda (NVIDIA's repository) "
        "there, or debian" for host in NODES]
    assert [nodes for nodes, _problem in fold(problems)] == [NODES]


@pytest.mark.parametrize("case_id, dp1, line", [
    ("driver-branch", {"nvidia_driver_branch": "53x"},
     "dp1: nvidia_driver_branch is '53x': not a driver branch: three digits such as 535"),
    ("driver-version-other-branch", {"nvidia_driver_version": "545.29.06"},
     "dp1: nvidia_driver_version is '545.29.06': must be empty or a version of branch 535 such as 535.261.03"),
    ("driver-fabricmanager-debian", {"nvidia_driver_source": "debian", "nvidia_driver_fabricmanager": True},
     "dp1: nvidia_driver_fabricmanager is 'True': Debian's archive (nvidia_driver_source debian) has no fabric "
     "manager: set nvidia_driver_source to cuda on NVSwitch systems"),
])
def test_bad_input_cases(case_id, dp1, line):
    assert _lines(_ctx(dp1=dp1)) == [line], case_id


# --- one rule at a time ----------------------------------------------------------------------------------------


def test_an_unsupported_release_is_named_with_the_supported_ones():
    assert _lines(_ctx(facts=DEBIAN11)) == [
        f"{host}: ansible_distribution is 'Debian-11': not a release the nvidia_driver role supports: "
        "Debian-12, Ubuntu-22.04, Ubuntu-24.04" for host in NODES]


def test_ubuntu_with_its_own_source_passes():
    assert _lines(_ctx(everywhere={"nvidia_driver_source": "ubuntu"}, facts=UBUNTU2204)) == []


def test_source_debian_on_ubuntu_names_ubuntu_and_only_that():
    # Ubuntu's vars file carries no Debian branch: the branch rule has nothing to say there.
    assert _lines(_ctx(dp1={"nvidia_driver_source": "debian"}, facts=UBUNTU2204)) == [
        "dp1: nvidia_driver_source is 'debian': not available on Ubuntu-22.04: use cuda (NVIDIA's repository) "
        "there, or ubuntu"]


@pytest.mark.parametrize("version", ["", "535.261.03", "535.54", "535.54.03"])
def test_versions_of_the_branch_pass(version):
    assert _lines(_ctx(dp1={"nvidia_driver_version": version})) == []


@pytest.mark.parametrize("version", ["535", "535.261.03.1", "v535.261.03", "535.261.03\n", "535.261.03-1"])
def test_a_version_that_is_no_driver_release_is_named(version):
    shown = version.replace("\n", "\\n")
    assert _lines(_ctx(dp1={"nvidia_driver_version": version})) == [
        f"dp1: nvidia_driver_version is '{shown}': must be empty or a version of branch 535 such as 535.261.03"]


def test_with_a_bad_branch_only_the_form_of_the_version_is_judged():
    assert _lines(_ctx(dp1={"nvidia_driver_branch": "5350", "nvidia_driver_version": "550.54"})) == [
        "dp1: nvidia_driver_branch is '5350': not a driver branch: three digits such as 535"]
    assert _lines(_ctx(dp1={"nvidia_driver_branch": "", "nvidia_driver_version": "x"})) == [
        "dp1: nvidia_driver_branch is '': not a driver branch: three digits such as 535",
        "dp1: nvidia_driver_version is 'x': must be empty or a version such as 535.261.03"]


def test_a_branch_is_shown_as_written():
    # The inventory wrote 53 (a YAML number); the spec made it '53'.
    assert _lines(_ctx(dp1={"nvidia_driver_branch": "53", "nvidia_driver_version": ""},
                       raw={"nvidia_driver_branch": 53})) == [
        "dp1: nvidia_driver_branch is '53': not a driver branch: three digits such as 535"]


@pytest.mark.parametrize("batch", [1, "1", 999999, "25%", "1%", "100%"])
def test_reboot_batches_that_are_counts_or_percentages_pass(batch):
    assert _lines(_ctx(dp1={"nvidia_driver_reboot_batch": batch})) == []


@pytest.mark.parametrize("batch, shown", [
    (0, "0"), ("0", "0"), (-1, "-1"), (1000000, "1000000"), ("0%", "0%"), ("101%", "101%"), ("25 %", "25 %"),
    (True, "True"), (2.5, "2.5"), ("two", "two"), (["1"], "['1']"), (None, "None"), ("1\n", "1\\n")])
def test_a_reboot_batch_that_is_neither_is_named(batch, shown):
    assert _lines(_ctx(dp1={"nvidia_driver_reboot_batch": batch})) == [
        f"dp1: nvidia_driver_reboot_batch is '{shown}': not a positive number of nodes (1, 2, ...) "
        "or a percentage from 1% to 100%"]


def test_source_debian_with_its_archive_branch_passes():
    assert _lines(_ctx(everywhere={"nvidia_driver_source": "debian"})) == []


def test_source_debian_with_another_branch_names_debians_branch():
    # 535 is read from roles/nvidia_driver/vars/Debian-12.yml.
    assert _lines(_ctx(dp1={"nvidia_driver_source": "debian", "nvidia_driver_branch": "550",
                            "nvidia_driver_version": "550.54.15"})) == [
        "dp1: nvidia_driver_branch is '550': nvidia_driver_source debian installs the driver of Debian 12's "
        "non-free archive, branch 535; use nvidia_driver_source cuda for other branches"]


def test_the_fabric_manager_with_source_cuda_passes():
    assert _lines(_ctx(everywhere={"nvidia_driver_fabricmanager": True})) == []


def test_the_fabric_manager_is_shown_as_written():
    assert _lines(_ctx(dp1={"nvidia_driver_source": "debian", "nvidia_driver_fabricmanager": True},
                       raw={"nvidia_driver_fabricmanager": "yes"})) == [
        "dp1: nvidia_driver_fabricmanager is 'yes': Debian's archive (nvidia_driver_source debian) has no fabric "
        "manager: set nvidia_driver_source to cuda on NVSwitch systems"]


@pytest.mark.parametrize("mirror", ["https://deb.debian.org/debian", "file:///srv/mirror/debian",
                                    "http://user:pw@mirror.example.com/debian"])
def test_mirrors_apt_can_use_pass(mirror):
    assert _lines(_ctx(dp1={"nvidia_driver_source": "debian", "nvidia_driver_debian_mirror": mirror})) == []


@pytest.mark.parametrize("mirror, shown", [
    ("deb.debian.org/debian", "deb.debian.org/debian"),
    ("ftp://ftp.debian.org/debian", "ftp://ftp.debian.org/debian"),
    ("http://deb.debian.org/debian bookworm main", "http://deb.debian.org/debian bookworm main"),
    ("https://admin:secret@mirror.example.com/debian trusted", "https://***@mirror.example.com/debian trusted"),
    ("", "")])
def test_a_mirror_apt_cannot_use_is_named_without_its_credentials(mirror, shown):
    assert _lines(_ctx(dp1={"nvidia_driver_source": "debian", "nvidia_driver_debian_mirror": mirror})) == [
        f"dp1: nvidia_driver_debian_mirror is '{shown}': not a URL apt can use: an http://, https:// or file:// "
        "URL without spaces"]


def test_the_mirror_is_not_judged_when_source_is_not_debian():
    assert _lines(_ctx(dp1={"nvidia_driver_debian_mirror": "ftp://x"})) == []


# --- what the rules do not judge -------------------------------------------------------------------------------


def test_values_the_spec_refused_are_skipped():
    ctx = _ctx(facts=UBUNTU2204)
    ctx.values["dp1"] = {}
    assert _lines(ctx) == []


def test_nodes_without_facts_are_not_judged_on_their_release():
    ctx = _ctx(everywhere={"nvidia_driver_source": "debian"})
    ctx.facts = {"dp1": {}, "dp2": "not facts"}
    assert _lines(ctx) == []


@pytest.mark.parametrize("facts", [DEBIAN12, UBUNTU2204, {"distribution": ["Debian"], "distribution_major_version": None}])
def test_odd_values_never_raise(facts):
    odd = {"nvidia_driver_source": None, "nvidia_driver_branch": 535, "nvidia_driver_version": 535.2,
           "nvidia_driver_fabricmanager": "yes", "nvidia_driver_debian_mirror": ["http://x"],
           "nvidia_driver_reboot_batch": {"a": 1}}
    ctx = _ctx(dp1=odd, facts=facts)
    lines = _lines(ctx)
    assert "dp1: nvidia_driver_branch is '535': not a driver branch: three digits such as 535" in lines
    assert "dp1: nvidia_driver_version is '535.2': must be empty or a version such as 535.261.03" in lines
