"""lockstep.gpu.node_units and service_problems: the units a node must run,
from the cluster contract's real service table (roles/cluster, its ``unit``
fields), and what a real ``systemctl show`` of a converged head says of them
(tests/fixtures/systemd, SOURCES.md). Issue 29, finding 7: verify.yml
passed while slurmctld, GPUStack or nfs-ganesha was stopped.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar
from ansible_collections.lockstep.gpu.plugins.filter.services import (
    entry_units,
    node_units,
    service_problems,
    unit_names,
    units_to_recheck,
)

ROOT = Path(__file__).resolve().parents[2]
SHOW = (ROOT / "tests/fixtures/systemd/show_head_slurmctld_failed.txt").read_text(encoding="utf-8")
SHOWN = ["slurmctld", "slurmd", "nfs-ganesha|nfs-kernel-server", "prometheus-node-exporter", "munge"]
NODES = ("dp1", "dp2", "dp3")
GROUPS = {"all": list(NODES), "cluster": list(NODES), "head": ["dp1"], "workers": ["dp2", "dp3"],
          "gpu": list(NODES), "ungrouped": []}


def services(**inventory) -> list[dict]:
    loader = DataLoader()
    values = dict(loader.load_from_file(str(ROOT / "roles/cluster/defaults/main.yml"), trusted_as_template=True))
    values.update(loader.load_from_file(str(ROOT / "roles/cluster/vars/main.yml"), trusted_as_template=True))
    values.update(groups=GROUPS, cluster_node_addresses={n: f"10.231.0.1{i}" for i, n in enumerate(NODES, 1)})
    values.update(inventory)
    return Templar(loader=loader, variables=values).template(values["cluster_services"])


def test_each_node_must_run_the_units_the_contract_places_on_it():
    table = services(slurm_enabled=True, shared_storage_enabled=True, monitoring_enabled=True,
                     gpustack_enabled=True, monitoring_dcgm_exporter_enabled=False)
    assert node_units(table, "dp1") == ["gpustack", "munge", "nfs-kernel-server", "postgresql",
                                        "prometheus", "prometheus-node-exporter", "slurmctld", "slurmd"]
    assert node_units(table, "dp2") == ["gpustack", "munge", "prometheus-node-exporter", "slurmd"]


def test_munge_runs_wherever_slurm_does_and_postgresql_beside_a_server_with_its_own_database():
    table = services(slurm_enabled=True, shared_storage_enabled=True, monitoring_enabled=False,
                     gpustack_enabled=True, shared_storage_implementation="nfs-ganesha")
    assert node_units(table, "dp1") == ["gpustack", "munge", "nfs-ganesha", "postgresql", "slurmctld", "slurmd"]
    assert node_units(table, "dp2") == ["gpustack", "munge", "slurmd"]
    # An external database: no PostgreSQL on the server.
    table = services(slurm_enabled=False, shared_storage_enabled=False, monitoring_enabled=False,
                     gpustack_enabled=True, gpustack_database_url="postgresql://gpustack:x@db:5432/gpustack")
    assert node_units(table, "dp1") == ["gpustack"]


def test_munge_on_a_controller_that_computes_nothing():
    table = services(slurm_enabled=True, slurm_head_computes=False, shared_storage_enabled=False,
                     monitoring_enabled=False, gpustack_enabled=False)
    assert node_units(table, "dp1") == ["munge", "slurmctld"]
    assert node_units(table, "dp3") == ["munge", "slurmd"]


def test_an_entry_takes_one_unit_or_a_list():
    assert entry_units({"unit": "slurmctld"}) == ["slurmctld"]
    assert entry_units({"unit": ["slurmd", "munge", ""]}) == ["slurmd", "munge"]
    assert entry_units({"name": "SSH"}) == []
    table = [{"enabled": True, "nodes": ["a"], "unit": ["slurmd", "munge"]},
             {"enabled": True, "nodes": ["a", "b"], "unit": ["slurmctld", "munge"]},
             {"enabled": False, "nodes": ["b"], "unit": "gpustack"}]
    assert node_units(table, "a") == ["munge", "slurmctld", "slurmd"]
    assert node_units(table, "b") == ["munge", "slurmctld"]


def test_a_switched_off_role_adds_no_unit():
    table = services(slurm_enabled=True, shared_storage_enabled=False, monitoring_enabled=False,
                     gpustack_enabled=False)
    assert node_units(table, "dp1") == ["munge", "slurmctld", "slurmd"]
    assert node_units(services(slurm_enabled=False, shared_storage_enabled=False, monitoring_enabled=False,
                               gpustack_enabled=False), "dp2") == []


def test_a_real_head_with_slurmctld_failed_and_slurmd_stopped_names_both():
    assert unit_names(SHOWN) == ["slurmctld", "slurmd", "nfs-ganesha", "nfs-kernel-server",
                                 "prometheus-node-exporter", "munge"]
    # nfs-kernel-server is not installed, but its alternative nfs-ganesha runs: no problem.
    assert service_problems(SHOW, SHOWN) == "slurmctld (failed); slurmd (inactive)"


def test_every_unit_active_and_enabled_is_none():
    healthy = SHOW.replace("ActiveState=failed", "ActiveState=active").replace(
        "Id=slurmd.service\nLoadState=loaded\nActiveState=inactive", "Id=slurmd.service\nLoadState=loaded\nActiveState=active")
    assert service_problems(healthy, SHOWN) == "none"


@pytest.mark.parametrize("edit, expected", [
    (("Id=munge.service\nLoadState=loaded\nActiveState=active\nUnitFileState=enabled",
      "Id=munge.service\nLoadState=loaded\nActiveState=active\nUnitFileState=disabled"), "munge (active, disabled)"),
    (("Id=nfs-ganesha.service\nLoadState=loaded\nActiveState=active",
      "Id=nfs-ganesha.service\nLoadState=loaded\nActiveState=inactive"), "nfs-ganesha (inactive)"),
    # Neither NFS server installed (a node the role never ran on): not a stopped service.
    (("Id=nfs-ganesha.service\nLoadState=loaded", "Id=nfs-ganesha.service\nLoadState=not-found"), "none"),
])
def test_what_is_wrong_with_one_unit_is_named(edit, expected):
    text = SHOW.replace("ActiveState=failed", "ActiveState=active").replace(
        "Id=slurmd.service\nLoadState=loaded\nActiveState=inactive", "Id=slurmd.service\nLoadState=loaded\nActiveState=active")
    assert edit[0] in text
    assert service_problems(text.replace(*edit), SHOWN) == expected


def test_an_answer_for_fewer_units_is_unreadable_not_healthy():
    assert service_problems("", ["slurmctld"]).startswith("unreadable: systemctl show answered for 0 of 1 units")
    assert service_problems("", []) == "none"


def test_a_node_without_systemd_is_unreadable_with_systemctls_reason():
    # systemd 252's message when PID 1 is another init (a container started without systemd).
    error = ("System has not been booted with systemd as init system (PID 1). Can't operate.\n"
             "Failed to connect to bus: Host is down")
    assert service_problems("", ["slurmd", "munge"], error) == (
        "unreadable: systemctl show answered for 0 of 2 units: System has not been booted with systemd as init "
        "system (PID 1). Can't operate.")


def test_a_stale_cached_disabled_is_asked_again_and_is_enableds_answer_wins():
    # Real outputs of one Debian 12 worker at one moment (tests/fixtures/systemd/SOURCES.md).
    show = (ROOT / "tests/fixtures/systemd/show_worker_slurmd_stale_disabled.txt").read_text(encoding="utf-8")
    answer = (ROOT / "tests/fixtures/systemd/is_enabled_worker_slurmd.txt").read_text(encoding="utf-8")
    assert units_to_recheck(show, ["munge", "slurmd"]) == ["slurmd"]
    assert service_problems(show, ["munge", "slurmd"], "", answer) == "none"
    # Without the second answer, show's word stands; a unit that really is disabled stays named.
    assert service_problems(show, ["munge", "slurmd"]) == "slurmd (active, disabled)"
    assert service_problems(show, ["munge", "slurmd"], "", "disabled\n") == "slurmd (active, disabled)"
    assert service_problems(show, ["munge", "slurmd"], "", "masked\n") == "slurmd (active, masked)"
