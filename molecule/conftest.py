"""Shared testinfra set-up for every molecule scenario.

Molecule hands testinfra an Ansible inventory. Through Ansible each command
of a test costs a whole ansible run (seconds); the nodes are podman
containers, so the tests talk to them with ``podman exec`` instead, which is
what the podman connection plugin does anyway. ``hostvars`` still comes from
the Ansible inventory, so tests read the declared state instead of repeating
it.
"""

from __future__ import annotations

import os

import pytest
import testinfra


def _container_of(ansible_host) -> str | None:
    variables = ansible_host.ansible.get_variables()
    if variables.get("ansible_connection") in ("podman", "containers.podman.podman"):
        return variables.get("ansible_host") or variables["inventory_hostname"]
    return None


@pytest.fixture(scope="module")
def hostvars(_testinfra_host):
    """The node's inventory variables (group_vars included)."""
    return _testinfra_host.ansible.get_variables()


@pytest.fixture(scope="module")
def host(_testinfra_host):
    container = _container_of(_testinfra_host)
    if container is None:
        return _testinfra_host
    return testinfra.get_host(f"podman://{container}")


def node(name: str):
    """Another node of the scenario, e.g. to compare its state with this one's."""
    inventory = os.environ["MOLECULE_INVENTORY_FILE"]
    other = testinfra.get_host(f"ansible://{name}?ansible_inventory={inventory}")
    container = _container_of(other)
    return testinfra.get_host(f"podman://{container}") if container else other
