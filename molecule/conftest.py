"""Shared testinfra set-up for every molecule scenario.

The nodes are podman containers that Ansible reaches over SSH at the fixed
address each platform declares (.config/molecule/config.yml). The tests
reach them the same way, through testinfra's ssh backend (one multiplexed
connection per node, ControlPersist), instead of one Ansible run per command.
``hostvars`` still comes from the Ansible inventory, so tests read the
declared state instead of repeating it.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from functools import lru_cache

import pytest
import testinfra
import yaml

SSH_ARGS = "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR"
# Molecule sets ANSIBLE_FORCE_COLOR when its own output is a terminal (CI's
# is), and the tests inherit it: the playbooks they run print plain text, and
# any colour code left is removed before a message is looked for.
NO_COLOUR = {"ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_NOCOLOR": "1", "PY_COLORS": "0"}
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


@lru_cache(maxsize=None)
def _addresses() -> dict:
    """{platform name: ip} from the scenario's molecule.yml."""
    with open(os.environ["MOLECULE_FILE"], encoding="utf-8") as handle:
        platforms = yaml.safe_load(handle)["platforms"]
    return {p["name"]: p["ip"] for p in platforms if "ip" in p}


def _ssh_host(name: str):
    ip = _addresses().get(name)
    if ip is None:
        return None
    return testinfra.get_host(
        f"ssh://root@{ip}", ssh_identity_file=os.environ["LOCKSTEP_SSH_KEY"], ssh_extra_args=SSH_ARGS
    )


@pytest.fixture(scope="module")
def hostvars(_testinfra_host):
    """The node's inventory variables (group_vars included)."""
    return _testinfra_host.ansible.get_variables()


@pytest.fixture(scope="module")
def host(_testinfra_host):
    name = _testinfra_host.ansible.get_variables()["inventory_hostname"]
    return _ssh_host(name) or _testinfra_host


def node(name: str):
    """Another node of the scenario, e.g. to compare its state with this one's."""
    found = _ssh_host(name)
    if found is not None:
        return found
    inventory = os.environ["MOLECULE_INVENTORY_FILE"]
    return testinfra.get_host(f"ansible://{name}?ansible_inventory={inventory}")


PROJECT = os.environ.get("MOLECULE_PROJECT_DIRECTORY", os.getcwd())


@lru_cache(maxsize=None)
def declared(name: str) -> dict:
    """A node's declared values as the roles see them: the cluster contract's defaults
    (roles/cluster/defaults/main.yml, the owner of every shared value such as the service ports) under
    the node's variables from the scenario's whole inventory directory (group_vars and the scenario's
    linked inventory.yml, which the ``hostvars`` fixture's single inventory file lacks)."""
    with open(os.path.join(PROJECT, "roles/cluster/defaults/main.yml"), encoding="utf-8") as handle:
        contract = yaml.safe_load(handle)
    inventory = os.path.dirname(os.environ["MOLECULE_INVENTORY_FILE"])
    variables = testinfra.get_host(f"ansible://{name}?ansible_inventory={inventory}").ansible.get_variables()
    return {**contract, **variables}


def ansible_playbook(playbook: str, *args: str, inventory: str | None = None, env: dict | None = None):
    """Run a playbook of the project from the controller, as an admin would.

    ``inventory`` defaults to the scenario's whole inventory directory (where
    molecule links group_vars and any scenario inventory); ``env`` adds to
    the environment (e.g. ANSIBLE_CALLBACK_RESULT_FORMAT). Returns the
    CompletedProcess; ``.output`` holds stdout and stderr with white space
    collapsed and quotes undoubled, since the YAML callback folds long lines (colour codes removed)
    and doubles the single quotes of single-quoted strings.
    """
    if inventory is None:
        inventory = os.path.dirname(os.environ["MOLECULE_INVENTORY_FILE"])
    result = subprocess.run(
        ["ansible-playbook", "-i", inventory, playbook, *args],
        capture_output=True, text=True, cwd=PROJECT, check=False, env={**os.environ, **NO_COLOUR, **(env or {})},
    )
    plain = ANSI.sub("", result.stdout + result.stderr)
    result.output = " ".join(plain.split()).replace("''", "'")
    return result


def drift_named(output: str, host: str, component: str) -> bool:
    """Whether verify.yml's output names a drift of host's component now: not a line of what was resolved
    since the previous run ("resolved: dk1: service.stopped expected ..."), which a passing run prints too."""
    return re.search(rf"(?<!resolved: ){re.escape(host)}: {re.escape(component)} expected", output) is not None


def wait_until(what: str, check, seconds: int = 180, every: float = 3):
    """check() until it returns something true, at most `seconds`; fail naming what was awaited. A check that
    raises AssertionError or RuntimeError (testinfra: the node, its sshd, does not answer yet) is tried again."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            found = check()
        except (AssertionError, RuntimeError):
            found = None
        if found or time.monotonic() > deadline:
            break
        time.sleep(every)
    assert found, f"{what}: not within {seconds} s"
    return found
