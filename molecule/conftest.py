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
import subprocess

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


PROJECT = os.environ.get("MOLECULE_PROJECT_DIRECTORY", os.getcwd())


def ansible_playbook(playbook: str, *args: str, inventory: str | None = None):
    """Run a playbook of the project from the controller, as an admin would.

    ``inventory`` defaults to the scenario's whole inventory directory (where
    molecule links group_vars and any scenario inventory). Returns the
    CompletedProcess; ``.output`` holds stdout and stderr with white space
    collapsed, since the YAML callback folds long lines.
    """
    if inventory is None:
        inventory = os.path.dirname(os.environ["MOLECULE_INVENTORY_FILE"])
    result = subprocess.run(
        ["ansible-playbook", "-i", inventory, playbook, *args],
        capture_output=True, text=True, cwd=PROJECT, check=False,
    )
    result.output = " ".join((result.stdout + result.stderr).split())
    return result
