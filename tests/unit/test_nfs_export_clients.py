"""lockstep.gpu.nfs_export_clients and nfs_client_problems: the clients of
the shared store's NFS export, checked before they reach /etc/exports or
ganesha.conf (issue 29, finding 2). The injected value is the one the issue's
probe used to add a second EXPORT block that exported /etc to everyone.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError
from ansible.parsing.dataloader import DataLoader
from ansible_collections.lockstep.gpu.plugins.filter.nfs import nfs_client_problems, nfs_export_clients

ROOT = Path(__file__).resolve().parents[2]
INJECTED = "10.0.0.0/24; }; EXPORT { Export_Id = 2; Path = /etc; Clients = *; Access_Type = RW; }"
WORLD = "need shared_storage_export_world: true"


@pytest.mark.parametrize("clients", [
    [], ["10.231.0.11", "10.231.0.12"], ["10.0.0.0/24"], ["fd00::/64", "fd00::5"], ["nas-gw.example.com", "dp1"],
])
def test_addresses_networks_and_names_are_written_as_given(clients):
    assert nfs_client_problems(clients) == []
    assert nfs_export_clients(clients) == clients


@pytest.mark.parametrize("client", [
    INJECTED, "10.0.0.0/24(rw,no_root_squash)", "dp1 dp2", "-dp1", "10.0.0.0/24;", "", "a" * 300, 5, None,
])
def test_anything_else_is_refused_naming_the_variable_and_the_value(client):
    problems = nfs_client_problems(["10.0.0.5", client])
    assert len(problems) == 1
    assert problems[0].startswith("shared_storage_export_clients is '")
    assert "an address, a network (10.0.0.0/24) or a host name" in problems[0]
    with pytest.raises(AnsibleFilterError, match="The NFS export is not written: shared_storage_export_clients"):
        nfs_export_clients(["10.0.0.5", client])


def test_every_bad_client_is_named_at_once_and_a_long_one_is_cut():
    problems = nfs_client_problems([INJECTED, "10.0.0.5", "*", "0.0.0.0/0"])
    assert [p.split("': ", maxsplit=1)[0] for p in problems] == [
        "shared_storage_export_clients is '10.0.0.0/24; }; EXPORT { Export_Id = 2; Path = /etc; Clie...",
        "shared_storage_export_clients is '*", "shared_storage_export_clients is '0.0.0.0/0"]


@pytest.mark.parametrize("client", ["*", "0.0.0.0/0", "::/0", "10.0.0.0/0"])
def test_every_address_needs_the_world_switch(client):
    assert WORLD in nfs_client_problems([client])[0]
    with pytest.raises(AnsibleFilterError, match=WORLD):
        nfs_export_clients([client])
    assert nfs_export_clients([client], True) == [client]


def test_a_string_instead_of_a_list_is_refused():
    assert nfs_client_problems("10.0.0.0/24") == [
        "shared_storage_export_clients is '10.0.0.0/24': a list of addresses, networks or host names"]


def test_the_role_writes_only_clients_that_went_through_the_filter():
    """Both servers' files list shared_storage_clients, which the role's vars pipe through the filter last."""
    loader = DataLoader()
    values = loader.load_from_file(str(ROOT / "roles/shared_storage/vars/main.yml"))
    assert values["shared_storage_clients"].strip().endswith(
        "| lockstep.gpu.nfs_export_clients(shared_storage_export_world) }}")
    for template in ("exports.j2", "ganesha.conf.j2"):
        text = (ROOT / "roles/shared_storage/templates" / template).read_text(encoding="utf-8")
        assert "shared_storage_clients" in text and "shared_storage_export_clients" not in text, template
