# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The docker role's preflight rules (plugins/plugin_utils/preflight/docker.py) on hand-built contexts.

GOOD is what the molecule cluster scenario's nodes see: roles/docker/defaults/main.yml under
inventories/demo/group_vars/all/docker.yml (Debian's docker.io, the NVIDIA stand-in repository), three
Debian 12 nodes all in the gpu group, and the derived values of roles/docker/vars/main.yml as the role
renders them there. The argument-spec cases of molecule/cluster/tests/test_bad_input.py (docker-source-snap,
daemon-options-string, docker-cgroup-driver-choice) are the engine's; the apt repository cases
(docker-toolkit-key-http, docker-toolkit-other-fingerprint) stay in Jinja.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from ansible_collections.lockstep.gpu.plugins.plugin_utils.preflight import Context
from ansible_collections.lockstep.gpu.plugins.plugin_utils.preflight import docker
from ansible_collections.lockstep.gpu.plugins.plugin_utils.problems import Problem

ROLE = Path(__file__).resolve().parents[2] / "roles" / "docker"
NODES = ["dp1", "dp2", "dp3"]
GROUPS = {"all": NODES, "cluster": NODES, "head": ["dp1"], "workers": ["dp2", "dp3"], "gpu": NODES}
DAEMON_VARIABLES = {
    "data-root": "docker_data_root",
    "registry-mirrors": "docker_registry_mirrors",
    "log-driver": "docker_log_driver",
    "log-opts": "docker_log_opts",
    "live-restore": "docker_live_restore",
    "default-runtime": "docker_nvidia_default_runtime",
}
MANAGED = {
    "data-root": "/var/lib/docker",
    "registry-mirrors": [],
    "log-driver": "json-file",
    "log-opts": {"max-size": "100m", "max-file": "3"},
    "live-restore": True,
    "default-runtime": "nvidia",
    "runtimes": {"nvidia": {"path": "/usr/bin/nvidia-container-runtime", "runtimeArgs": []}},
    "exec-opts": ["native.cgroupdriver=systemd"],
}
GOOD = {
    "docker_engine_source": "distribution",
    "docker_ce_repo_url": "https://download.docker.com/linux/debian",
    "docker_ce_repo_key_url": "https://download.docker.com/linux/debian/gpg",
    "docker_ce_repo_key_fingerprint": "9DC858229FC7DD38854AE2D88D81803C0EBFCD88",
    "docker_ce_version": "26.1.4",
    "docker_ce_extra_packages": [],
    "docker_io_version": "",
    "docker_containerd_version": "",
    "docker_users": [],
    "docker_registry_mirrors": [],
    "docker_data_root": "/var/lib/docker",
    "docker_log_driver": "json-file",
    "docker_log_opts": {"max-size": "100m", "max-file": "3"},
    "docker_live_restore": True,
    "docker_cgroup_driver": "systemd",
    "docker_daemon_options": {},
    "docker_daemon_validate": "auto",
    "docker_nvidia_runtime": True,
    "docker_nvidia_default_runtime": True,
    "docker_nvidia_toolkit_version": "1.14.3-1",
    "docker_nvidia_repo_url": "file:///srv/lockstep-standin/libnvidia-container/stable/deb/$(ARCH)",
    "docker_nvidia_repo_key_url": "file:///srv/lockstep-standin/lockstep-standin.gpg",
    "docker_nvidia_repo_key_fingerprint": "0F1E2D3C4B5A69788796A5B4C3D2E1F00F1E2D3C",
    "docker_nvidia_runtime_path": "/usr/bin/nvidia-container-runtime",
    "docker_nvidia_containerd": True,
    "docker_smoke_test": True,
    "docker_smoke_image": "nvidia/cuda:12.1.1-base-ubuntu22.04",
    # VARIABLES, as roles/docker/vars/main.yml renders them on these nodes.
    "docker_daemon_managed": MANAGED,
    "docker_preflight_engine": "20.10",
    "docker_daemon_variables": DAEMON_VARIABLES,
}
DEBIAN_12 = {"distribution": "Debian", "distribution_major_version": "12", "distribution_version": "12.5",
             "distribution_release": "bookworm", "os_family": "Debian", "architecture": "x86_64"}


def context(facts=None, probes=None, **values) -> Context:
    """The cluster scenario's context, with values changed on dp1 (None removes one, as a refused value)."""
    per_host = {host: copy.deepcopy(GOOD) for host in NODES}
    for name, value in values.items():
        if value is None:
            per_host["dp1"].pop(name)
        else:
            per_host["dp1"][name] = value
    return Context(hosts=list(NODES), groups=GROUPS, values=per_host,
                   facts={host: dict(DEBIAN_12) for host in NODES} | (facts or {}),
                   probes=probes or {}, roles=("docker",))


def problems(ctx) -> list[Problem]:
    return [problem for rule in docker.RULES for problem in rule(ctx)]


def only(ctx) -> Problem:
    found = problems(ctx)
    assert len(found) == 1, [problem.line() for problem in found]
    return found[0]


def test_the_cluster_scenario_passes():
    assert problems(context()) == []


def test_the_daemon_variables_are_the_roles():
    role_vars = yaml.safe_load((ROLE / "vars" / "main.yml").read_text(encoding="utf-8"))
    assert role_vars["docker_daemon_variables"] == DAEMON_VARIABLES
    assert set(docker.VARIABLES) <= set(role_vars)


def test_rules_are_named_after_their_checks():
    assert [rule.__name__ for rule in docker.RULES] == [
        "_platform", "_ce_version", "_default_runtime", "_data_root", "_mirrors", "_own_variables",
        "_cgroup_driver", "_log_opts", "_smoke_image", "_users", "_daemon_json"]


# --- the distribution ---------------------------------------------------------------------------


def test_an_unsupported_distribution_is_refused():
    rocky = {"distribution": "Rocky", "distribution_version": "9.3", "os_family": "RedHat", "architecture": "x86_64"}
    problem = only(context(facts={"dp2": rocky}))
    assert problem.line() == ("dp2: ansible_distribution is 'Rocky-9.3': "
                              "not a release the docker role supports: Debian-12, Ubuntu-22.04, Ubuntu-24.04")


def test_ubuntu_24_04_and_missing_facts_pass():
    noble = {"distribution": "Ubuntu", "distribution_version": "24.04", "distribution_release": "noble"}
    assert problems(context(facts={"dp1": noble, "dp2": {}})) == []


# --- docker_ce_version --------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["26.1", "latest", "26.1.4\n", "5:26.1.4-1~debian.12~bookworm"])
def test_a_docker_ce_version_that_is_not_a_release_is_refused(version):
    problem = only(context(docker_engine_source="docker", docker_ce_version=version, docker_preflight_engine=version))
    assert (problem.node, problem.variable, problem.value) == ("dp1", "docker_ce_version", version)
    assert problem.allowed.startswith("not a Docker CE release such as 26.1.4")


def test_the_docker_ce_version_is_not_read_for_the_distributions_engine():
    assert problems(context(docker_ce_version="latest")) == []


# --- the nvidia default runtime -----------------------------------------------------------------


def test_the_nvidia_default_runtime_without_the_runtime_is_refused():
    # docker-default-runtime-without-runtime; docker_daemon_managed as the role renders it then.
    managed = {key: value for key, value in MANAGED.items() if key != "runtimes"}
    problem = only(context(docker_nvidia_runtime=False, docker_nvidia_default_runtime=True,
                           docker_daemon_managed=managed))
    assert problem.line().startswith(
        "dp1: docker_nvidia_default_runtime is 'true': docker_nvidia_runtime is false on this node")


def test_neither_nvidia_runtime_passes():
    managed = {key: value for key, value in MANAGED.items() if key != "runtimes"} | {"default-runtime": "runc"}
    assert problems(context(docker_nvidia_runtime=False, docker_nvidia_default_runtime=False,
                            docker_daemon_managed=managed)) == []


# --- docker_data_root ---------------------------------------------------------------------------


@pytest.mark.parametrize("root", ["var/lib/docker", ""])
def test_a_relative_data_root_is_refused(root):
    # docker-data-root-relative (named once: not again by the daemon.json check).
    problem = only(context(docker_data_root=root, docker_daemon_managed=MANAGED | {"data-root": root}))
    assert problem == Problem("docker_data_root", root,
                              "not an absolute path (dockerd never comes up with a relative one)", "dp1")
    assert problem.shown == root


# --- docker_registry_mirrors --------------------------------------------------------------------


@pytest.mark.parametrize("mirror", ["https://mirror.example.com/v2/library", "ftp://mirror.example.com",
                                    "https://user:secret@mirror.example.com", "https://mirror.example.com?x=1",
                                    "mirror.example.com"])
def test_a_mirror_that_is_not_a_root_url_is_refused(mirror):
    # docker-mirror-with-path and others.
    problem = only(context(docker_registry_mirrors=[mirror],
                           docker_daemon_managed=MANAGED | {"registry-mirrors": [mirror]}))
    assert (problem.node, problem.variable, problem.shown) == ("dp1", "docker_registry_mirrors", mirror)
    assert problem.allowed.startswith("an entry that is not a registry's root URL")


def test_root_url_mirrors_pass():
    mirrors = ["https://mirror.example.com", "http://10.0.0.5:5000/"]
    managed = MANAGED | {"registry-mirrors": mirrors}
    assert problems(context(docker_registry_mirrors=mirrors, docker_daemon_managed=managed)) == []


# --- docker_daemon_options ----------------------------------------------------------------------


@pytest.mark.parametrize(("option", "value", "variable"), [
    ("data-root", "/data/docker", "docker_data_root"),   # daemon-option-with-variable
    ("log-opts", {"max-size": "1g"}, "docker_log_opts"),
    ("default-runtime", "runc", "docker_nvidia_default_runtime"),
])
def test_an_option_that_has_its_own_variable_is_refused(option, value, variable):
    problem = only(context(docker_daemon_options={option: value}, docker_daemon_managed=MANAGED | {option: value}))
    assert problem == Problem(f"docker_daemon_options.{option}", value,
                              f"'{option}' has its own variable: set it through {variable} instead", "dp1")


def test_a_cgroup_driver_in_exec_opts_is_refused():
    opts = ["native.cgroupdriver=cgroupfs"]
    managed = MANAGED | {"exec-opts": ["native.cgroupdriver=systemd", *opts]}
    problem = only(context(docker_daemon_options={"exec-opts": opts}, docker_daemon_managed=managed))
    assert problem.line() == ("dp1: docker_daemon_options.exec-opts is '['native.cgroupdriver=cgroupfs']': "
                              "sets native.cgroupdriver; set docker_cgroup_driver (systemd or cgroupfs) instead")


# --- docker_log_opts ----------------------------------------------------------------------------


@pytest.mark.parametrize("value", [["100m"], {"size": "100m"}])
def test_a_log_option_that_is_not_plain_is_refused(value):
    opts = {"max-size": value, "max-file": "3"}
    managed = MANAGED | {"log-opts": {"max-size": str(value), "max-file": "3"}}
    problem = only(context(docker_log_opts=opts, docker_daemon_managed=managed))
    assert (problem.node, problem.variable, problem.value) == ("dp1", "docker_log_opts.max-size", value)
    assert problem.allowed == "not a string or a number (dockerd takes strings, the role converts numbers)"


def test_a_number_log_option_passes():
    assert problems(context(docker_log_opts={"max-size": "100m", "max-file": 3})) == []


# --- docker_smoke_image -------------------------------------------------------------------------


def test_a_smoke_test_without_an_image_is_refused():
    problem = only(context(docker_smoke_image=""))
    assert problem.line() == ("dp1: docker_smoke_image is '': empty while docker_smoke_test is on: "
                              "name the CUDA image to run nvidia-smi in")


def test_no_image_is_needed_without_the_smoke_test_or_the_runtime():
    assert problems(context(docker_smoke_image="", docker_smoke_test=False)) == []
    managed = {key: value for key, value in MANAGED.items() if key != "runtimes"} | {"default-runtime": "runc"}
    assert problems(context(docker_smoke_image="", docker_nvidia_runtime=False, docker_nvidia_default_runtime=False,
                            docker_daemon_managed=managed)) == []


# --- docker_users -------------------------------------------------------------------------------


def test_the_probe_asks_for_docker_users_only():
    ctx = context(docker_users=["alice", "bob"])
    assert docker.probe(ctx, "dp1") == {"users": ["alice", "bob"]}
    assert docker.probe(ctx, "dp2") == {}


def test_a_user_without_an_account_is_refused():
    # docker-user-unknown
    probes = {"dp1": {"users": {"alice": True, "nosuchuser": False}}}
    problem = only(context(probes=probes, docker_users=["alice", "nosuchuser"]))
    assert problem.line() == ("dp1: docker_users is 'nosuchuser': "
                              "no account on the node has this name; create the user first")


def test_existing_users_and_an_unanswered_probe_pass():
    assert problems(context(probes={"dp1": {"users": {"alice": True}}}, docker_users=["alice"])) == []
    assert problems(context(probes={"dp1": {}}, docker_users=["alice"])) == []


# --- daemon.json --------------------------------------------------------------------------------


def test_an_option_dockerd_20_10_does_not_know_is_refused():
    # daemon-unknown-option
    problem = only(context(docker_daemon_options={"no-such-option": True},
                           docker_daemon_managed=MANAGED | {"no-such-option": True}))
    assert problem.line() == (
        "dp1: docker_daemon_options.no-such-option is 'True': daemon.json option 'no-such-option': is not a "
        "dockerd 20.10 configuration option; dockerd (Docker 20.10) would refuse the /etc/docker/daemon.json "
        "the role writes")


def test_an_option_of_the_wrong_json_type_is_refused():
    # daemon-option-type
    problem = only(context(docker_daemon_options={"max-concurrent-downloads": "3"},
                           docker_daemon_managed=MANAGED | {"max-concurrent-downloads": "3"}))
    assert (problem.node, problem.variable, problem.value) == (
        "dp1", "docker_daemon_options.max-concurrent-downloads", "3")
    assert problem.allowed.startswith("daemon.json option 'max-concurrent-downloads': must be a JSON integer")


def test_a_bad_log_option_names_docker_log_opts():
    opts = {"max-size": "huge", "max-file": "3"}
    problem = only(context(docker_log_opts=opts, docker_daemon_managed=MANAGED | {"log-opts": opts}))
    assert (problem.variable, problem.value) == ("docker_log_opts", opts)
    assert problem.allowed.startswith("daemon.json option 'log-opts.max-size': 'huge' is not a positive size")


def test_docker_23_and_later_leave_the_option_table_to_dockerd_validate():
    managed = MANAGED | {"no-such-option": True}
    assert problems(context(docker_engine_source="docker", docker_preflight_engine="26.1.4",
                            docker_daemon_options={"no-such-option": True}, docker_daemon_managed=managed)) == []


def test_an_unknown_engine_gets_the_engine_independent_checks():
    opts = {"max-size": "huge", "max-file": "3"}
    found = problems(context(docker_engine_source="docker", docker_ce_version="latest",
                             docker_preflight_engine="latest", docker_log_opts=opts,
                             docker_daemon_managed=MANAGED | {"log-opts": opts}))
    assert [problem.variable for problem in found] == ["docker_ce_version", "docker_log_opts"]
    assert "dockerd (Docker latest)" in found[1].allowed


# --- odd input ----------------------------------------------------------------------------------


def test_refused_values_are_skipped():
    # What the argument spec refused is absent (daemon-options-string, docker-cgroup-driver-choice...).
    names = [name for name in GOOD if name.startswith("docker_")]
    assert problems(context(**dict.fromkeys(names))) == []


def test_odd_values_never_raise():
    found = problems(context(
        docker_users="alice", docker_registry_mirrors=[5, None], docker_log_opts=["max-size"],
        docker_daemon_options={"exec-opts": "native.cgroupdriver=cgroupfs", 1: 2}, docker_daemon_variables=None,
        docker_daemon_managed={1: "x", "log-driver": ["a"], "exec-opts": "x"}, docker_preflight_engine=20.1,
        docker_smoke_image=["nvidia/cuda"], probes={"dp1": {"users": None}}))
    assert {problem.variable for problem in found} == {"docker_registry_mirrors", "docker_daemon_options.exec-opts",
                                                       "docker_smoke_image"}


def test_an_unforeseen_value_is_named_not_raised():
    problem = only(context(docker_daemon_managed=MANAGED | {1: "x"}))
    assert problem.variable == "docker_daemon_options"
    assert problem.allowed.startswith("daemon.json could not be checked (")
