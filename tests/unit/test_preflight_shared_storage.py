# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The shared_storage role's preflight rules (plugins/plugin_utils/preflight/shared_storage.py) on hand-built
contexts.

GOOD is what the demo's and the molecule slurm scenario's nodes see: roles/shared_storage/defaults/main.yml
under inventories/demo/group_vars/all/shared_storage.yml (nfs-ganesha on dp1, the head, no kernel mount), the
cluster contract's store values (no NAS, the export to every node of the cluster) and its
cluster_node_addresses (each node's default route address). Values pass the argument specs as the engine
does it. The e2e case of molecule/slurm/tests/test_slurm.py (shared_storage_path: shared) is here with its
exact line.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from ansible_collections.lockstep.gpu.plugins.plugin_utils.preflight import Context, engine
from ansible_collections.lockstep.gpu.plugins.plugin_utils.preflight import shared_storage
from ansible_collections.lockstep.gpu.plugins.plugin_utils.problems import Problem

ROLES = Path(__file__).resolve().parents[2] / "roles"
NODES = ["dp1", "dp2", "dp3"]
GROUPS = {"all": list(NODES), "ungrouped": [], "cluster": list(NODES), "head": ["dp1"], "workers": ["dp2", "dp3"],
          "gpu": list(NODES)}
ADDRESSES = {"dp1": "10.231.0.11", "dp2": "10.231.0.12", "dp3": "10.231.0.13"}
DEMO = {"shared_storage_ganesha_graceless": True, "shared_storage_mount": False,
        "shared_storage_client_packages": ["nfs-common", "libnfs-utils"]}
OPTIONS = {
    "shared_storage_path": "/shared",
    "shared_storage_export_dir": "/srv/shared",
    "shared_storage_root_squash": False,
    "shared_storage_export_world": False,
    "shared_storage_ganesha_graceless": True,
    "shared_storage_client_group": "cluster",
    "shared_storage_mount": False,
    "shared_storage_mount_options": "nfsvers=4.2,hard",
    "shared_storage_client_packages": ["nfs-common", "libnfs-utils"],
    "shared_storage_group": "users",
    "shared_storage_layout": [
        {"path": "models", "owner": "root", "group": "users", "mode": "2775"},
        {"path": "datasets", "owner": "root", "group": "users", "mode": "2775"},
        {"path": "cache", "owner": "root", "group": "root", "mode": "0755"},
        {"path": "cache/pip", "owner": "root", "group": "root", "mode": "1777"},
        {"path": "cache/conda-pkgs", "owner": "root", "group": "root", "mode": "0755"},
    ],
    "shared_storage_pip_cache": True,
}
# The contract's (roles/cluster/defaults/main.yml, the demo's implementation) and its derived addresses.
CONTRACT = {"shared_storage_enabled": True, "shared_storage_server": "", "shared_storage_server_group": "head",
            "shared_storage_export_clients": [], "shared_storage_implementation": "nfs-ganesha"}
DERIVED = {"cluster_node_addresses": dict(ADDRESSES)}


def context(derived=None, **values) -> Context:
    """The demo with these extra vars on every node, through the role's and the contract's specs."""
    written = {**OPTIONS, **CONTRACT, **copy.deepcopy(DERIVED), **(derived or {}), **values}
    options = {**engine.spec_options("cluster"), **engine.spec_options("shared_storage")}
    converted, _refused = engine.validate("dp1", options, {k: v for k, v in written.items() if k in options})
    merged = {**{k: v for k, v in written.items() if k not in options}, **converted}
    return Context(hosts=list(NODES), groups=copy.deepcopy(GROUPS),
                   values={h: copy.deepcopy(merged) for h in NODES}, raw={h: copy.deepcopy(written) for h in NODES},
                   roles=("shared_storage",))


def problems(ctx) -> list[Problem]:
    return [problem for rule in shared_storage.RULES for problem in rule(ctx)]


def everywhere(variable, value, allowed) -> list[Problem]:
    return [Problem(variable, value, allowed, host) for host in NODES]


def test_the_demo_passes():
    assert problems(context()) == []


def test_the_literal_values_are_the_roles():
    def load(role, folder):
        return yaml.safe_load((ROLES / role / folder / "main.yml").read_text(encoding="utf-8"))
    defaults = load("shared_storage", "defaults")
    # The layout's group is "{{ shared_storage_group }}" there: users, as rendered.
    assert {k: v for k, v in defaults.items() if k != "shared_storage_layout"} == {
        k: v for k, v in OPTIONS.items() if k != "shared_storage_layout" and k not in DEMO} | {
        "shared_storage_ganesha_graceless": False, "shared_storage_mount": True,
        "shared_storage_client_packages": ["nfs-common"]}
    contract = load("cluster", "defaults")
    assert {k: contract[k] for k in CONTRACT} == {**CONTRACT, "shared_storage_server_group": "{{ cluster_head_group }}",
                                                  "shared_storage_implementation": "nfs-kernel-server"}
    assert set(shared_storage.VARIABLES) == set(DERIVED)
    assert "cluster_node_addresses" in load("cluster", "vars")


def test_rules_are_named_after_their_checks():
    assert [rule.__name__ for rule in shared_storage.RULES] == [
        "_paths", "_mount_options", "_nas", "_server_group", "_export_clients", "_client_addresses"]
    assert not hasattr(shared_storage, "probe")


def test_nothing_is_checked_where_the_cluster_runs_no_shared_store():
    bad = {"shared_storage_path": "shared", "shared_storage_mount_options": "a b", "shared_storage_server": "nas1",
           "shared_storage_export_clients": ["*"], "shared_storage_server_group": "nfs"}
    assert problems(context(shared_storage_enabled=False, **bad)) == []
    assert problems(context(shared_storage_enabled=False, shared_storage_server_group="nfs")) == []


# --- the paths ---------------------------------------------------------------------------------------


def test_the_e2e_case_a_relative_mount_point():
    found = problems(context(shared_storage_path="shared"))
    assert found == everywhere("shared_storage_path", "shared", shared_storage.PATH.format(example="/shared"))
    assert found[0].line() == ("dp1: shared_storage_path is 'shared': it must be an absolute path without spaces, "
                               "not / itself (e.g. /shared)")


@pytest.mark.parametrize("value", ["/", "//", "srv/shared", "/srv/my shared", "/srv/shared\n", ""])
def test_an_exported_directory_that_is_not_an_absolute_path_is_refused(value):
    assert problems(context(shared_storage_export_dir=value)) == everywhere(
        "shared_storage_export_dir", value, shared_storage.PATH.format(example="/srv/shared"))


def test_a_path_written_as_a_list_is_named_as_written():
    found = problems(context(shared_storage_path=["/shared"]))
    assert [p.line() for p in found][0] == ("dp1: shared_storage_path is '['/shared']': it must be an absolute "
                                            "path without spaces, not / itself (e.g. /shared)")


def test_absolute_paths_pass():
    assert problems(context(shared_storage_path="/data/shared/", shared_storage_export_dir="/export/gpu")) == []


# --- the mount options ---------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["nfsvers=4.2, hard", "nfsvers=4.2,,hard", ",hard", "hard,", ""])
def test_mount_options_that_are_not_single_words_are_refused(value):
    assert problems(context(shared_storage_mount_options=value)) == everywhere(
        "shared_storage_mount_options", value, shared_storage.MOUNT_OPTIONS)


def test_single_words_separated_by_commas_pass():
    assert problems(context(shared_storage_mount_options="nfsvers=4.2,hard,noatime")) == []
    assert problems(context(shared_storage_mount_options="defaults")) == []


# --- the NAS and the server group ----------------------------------------------------------------------


@pytest.mark.parametrize("value", ["nas1", "nas1:volume1", "nas1:/volume 1", "nas-:/x", " "])
def test_a_nas_that_is_not_host_path_is_refused(value):
    found = problems(context(shared_storage_server=value))
    assert found == everywhere("shared_storage_server", value, shared_storage.NAS)


@pytest.mark.parametrize("value", ["nas1:/volume1/gpu", "10.0.0.5:/srv", "[fd00::5]:/export", "nas.example.com:/"])
def test_a_nas_as_host_path_passes_and_needs_no_server_group(value):
    assert problems(context(shared_storage_server=value, shared_storage_server_group="nfs",
                            shared_storage_export_clients=["*"], derived={"cluster_node_addresses": {}})) == []


def test_a_server_group_without_a_node_is_refused_when_no_nas_is_named():
    found = problems(context(shared_storage_server_group="nfsservers"))
    assert found == everywhere("shared_storage_server_group", "nfsservers", shared_storage.SERVER_GROUP)
    ctx = context()
    ctx.groups["head"] = []
    assert [p.line() for p in problems(ctx)][0] == (
        "dp1: shared_storage_server_group is 'head': a group with no node in the inventory, and "
        "shared_storage_server names no NAS: its first node exports the store; put a node in that group, or set "
        "shared_storage_server to host:/export")


# --- the export's clients --------------------------------------------------------------------------------


@pytest.mark.parametrize("client, allowed", [
    ("nas one", "an address, a network (10.0.0.0/24) or a host name"),
    ("10.0.0.0/24;", "an address, a network (10.0.0.0/24) or a host name"),
    ("*", "an address, a network (10.0.0.0/24) or a host name; '*' and /0 export to every address and need "
          "shared_storage_export_world: true"),
    ("0.0.0.0/0", "an address, a network (10.0.0.0/24) or a host name; '*' and /0 export to every address and "
                  "need shared_storage_export_world: true"),
])
def test_an_export_client_the_export_cannot_take_is_refused(client, allowed):
    found = problems(context(shared_storage_export_clients=["10.231.0.0/24", client]))
    assert found == everywhere("shared_storage_export_clients", client, allowed)


def test_clients_of_every_form_pass_and_the_world_with_its_switch():
    assert problems(context(shared_storage_export_clients=["10.231.0.0/24", "10.231.0.5", "dp1", "fd00::/64"])) == []
    assert problems(context(shared_storage_export_clients=["*"], shared_storage_export_world=True)) == []


# --- the clients' addresses --------------------------------------------------------------------------------


def test_a_server_that_must_export_to_a_node_of_unknown_address_is_refused_on_the_server():
    found = problems(context(derived={"cluster_node_addresses": {"dp1": "10.231.0.11", "dp2": ""}}))
    assert found == [Problem("shared_storage_export_clients", [], shared_storage.UNKNOWN_ADDRESSES.format(
        nodes="dp2, dp3", group="cluster"), "dp1")]
    assert found[0].line() == (
        "dp1: shared_storage_export_clients is '[]': empty, and dp2, dp3 of shared_storage_client_group 'cluster' "
        "have neither base_node_address nor a default route address in this run's facts: the export lists each "
        "node's address; set shared_storage_export_clients (e.g. the cluster's network, 10.0.0.0/24) or gather "
        "every node's facts")


def test_unknown_addresses_do_not_matter_with_clients_listed_or_a_nas():
    unknown = {"cluster_node_addresses": {"dp1": "10.231.0.11"}}
    assert problems(context(derived=unknown, shared_storage_export_clients=["10.231.0.0/24"])) == []
    assert problems(context(derived=unknown, shared_storage_server="nas1:/gpu")) == []


def test_the_server_is_the_first_node_of_its_group_in_the_play_or_not():
    unknown = {"cluster_node_addresses": {"dp1": "10.231.0.11", "dp2": "10.231.0.12"}}
    found = problems(context(derived=unknown, shared_storage_server_group="workers"))
    assert [(p.node, p.variable) for p in found] == [("dp2", "shared_storage_export_clients")]
    ctx = context(derived=unknown)
    ctx.hosts = ["dp2", "dp3"]  # --limit workers: the server dp1 is not checked here
    assert problems(ctx) == []
