"""The cluster contract (role lockstep.gpu.cluster) holds, for every role.

- Every port variable of every role (``*_port``, ``*_ports``,
  ``*_port_range`` holding a port or a range) has exactly one entry in the
  contract's service table ``cluster_services`` (roles/cluster/vars/main.yml),
  under the role that owns it, and is declared by the contract itself, where
  every role sees it; no two services' default ports overlap (a
  ``train_check_port`` of 9090 would be Prometheus').
- No role reads a ``<role>_...`` variable that no role declares (in its
  defaults, vars or argument specs, or with register, set_fact, a task's vars
  or loop_var): a name read with a guessed ``| default(...)`` because its
  declaration is out of sight fails here. Stronger: what a role reads of
  another role's variables, the contract declares (the only role every play
  and every role has), so no role depends on a role its play may not run.
- Every role depends on the contract, and every play of the collection's
  playbooks lists it first.

Everything is read from the collection's own files (roles/, playbooks/),
which ansible-test's copy of the collection holds too.
"""

from __future__ import annotations

import functools
import re
import warnings
from pathlib import Path

import jinja2
import jinja2.meta
import pytest
import yaml
from ansible_collections.lockstep.gpu.plugins.plugin_utils import validate

ROOT = Path(__file__).resolve().parents[2]
ROLES = ROOT / "roles"
CONTRACT = "cluster"
# The preflight engine (issue 25, part 2) replaces role preflight and every
# roles/*/tasks/preflight.yml: they read every role's variables by design.
SKIPPED_ROLES = {"preflight"}
SKIPPED_FILES = {"preflight.yml"}
# The parts of a role that read variables.
SCANNED = ("tasks", "templates", "vars", "defaults", "handlers")
# Keys whose string value is a bare Jinja expression.
EXPRESSION_KEYS = {"when", "that", "changed_when", "failed_when", "until"}
PORT_NAME = re.compile(r"_(port|ports|port_range)$")


def _yaml(path: Path):
    return yaml.safe_load(path.read_text(encoding="utf-8")) or {}


def role_names() -> list[str]:
    return sorted(p.name for p in ROLES.iterdir() if (p / "meta" / "main.yml").is_file())


def argument_options(role: str) -> dict:
    """{option: spec} of every entry point of the role's meta/argument_specs.yml."""
    path = ROLES / role / "meta" / "argument_specs.yml"
    found = {}
    if path.is_file():
        for entry in (_yaml(path).get("argument_specs") or {}).values():
            found.update((entry or {}).get("options") or {})
    return found


def defaults(role: str) -> dict:
    path = ROLES / role / "defaults" / "main.yml"
    return _yaml(path) if path.is_file() else {}


def role_vars(role: str) -> dict:
    found = {}
    for path in sorted((ROLES / role / "vars").glob("*.yml")):
        found.update(_yaml(path))
    return found


def owner_of(name: str, roles: list[str]) -> str | None:
    """The role a variable's prefix names (the longest: nccl_health_* is nccl_health's, not nccl's)."""
    for role in sorted(roles, key=len, reverse=True):
        if name.startswith(role + "_"):
            return role
    return None


# --- what the roles declare ------------------------------------------------------


def _walk(node, found: set):
    """Names a task file declares: register, set_fact keys, task and block vars, loop_var."""
    if isinstance(node, list):
        for item in node:
            _walk(item, found)
    elif isinstance(node, dict):
        if isinstance(node.get("register"), str):
            found.add(node["register"])
        for key in ("ansible.builtin.set_fact", "set_fact", "vars"):
            if isinstance(node.get(key), dict):
                found.update(k for k in node[key] if k != "cacheable")
        control = node.get("loop_control")
        if isinstance(control, dict) and isinstance(control.get("loop_var"), str):
            found.add(control["loop_var"])
        for value in node.values():
            _walk(value, found)


def declared_by(role: str) -> set[str]:
    found = set(defaults(role)) | set(role_vars(role)) | set(argument_options(role))
    for part in ("tasks", "handlers"):
        for path in sorted((ROLES / role / part).glob("*.yml")):
            _walk(_yaml(path), found)
    return found


# --- what the roles read --------------------------------------------------------

class _Any(dict):
    """Every filter and test name exists (Ansible's and the collection's are not loaded here)."""

    def __contains__(self, name):
        return True

    def __getitem__(self, name):
        return lambda *args, **kwargs: None

    def get(self, name, default=None):
        return self[name]


_ENV = jinja2.Environment()
_ENV.filters = _Any()
_ENV.tests = _Any()
_BLOCK = re.compile(r"\{\{.*?\}\}|\{%.*?%\}", re.S)


def _names(source: str) -> set[str]:
    """The variables a template text reads (not its own set/for/macro names, attributes or filters)."""
    with warnings.catch_warnings():
        # Jinja decodes string literals with unicode-escape: regular expressions' \d warn.
        warnings.simplefilter("ignore", DeprecationWarning)
        return set(jinja2.meta.find_undeclared_variables(_ENV.parse(source)))


def _strings(node, key=None):
    if isinstance(node, dict):
        for k, value in node.items():
            yield from _strings(value, k)
    elif isinstance(node, list):
        for item in node:
            yield from _strings(item, key)
    elif isinstance(node, str):
        yield key, node


@functools.lru_cache(maxsize=None)
def reads(path: Path) -> frozenset[str]:
    """Every variable a role file reads."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".j2":
        return frozenset(_names(text))
    found = set()
    for key, value in _strings(_yaml(path)):
        if key in EXPRESSION_KEYS and not _BLOCK.search(value):
            found |= _names("{{ " + value + " }}")
        elif "{{" in value or "{%" in value:
            found |= _names(value)
    return frozenset(found)


def role_files():
    for role in role_names():
        if role in SKIPPED_ROLES:
            continue
        for part in SCANNED:
            for path in sorted((ROLES / role / part).rglob("*")):
                if path.is_file() and path.suffix in (".yml", ".j2") and path.name not in SKIPPED_FILES:
                    yield role, path


ROLE_NAMES = role_names()
DECLARED = {role: declared_by(role) for role in ROLE_NAMES}
EVERY_DECLARED = set().union(*DECLARED.values())
SERVICES = role_vars(CONTRACT)["cluster_services"]
CONTRACT_DEFAULTS = defaults(CONTRACT)


def undeclared_reads() -> list[str]:
    """'<file>: <name>' for each role-prefixed name a role reads that no role declares."""
    problems = []
    for role, path in role_files():
        for name in sorted(reads(path)):
            if owner_of(name, ROLE_NAMES) and name not in EVERY_DECLARED:
                problems.append(f"{path.relative_to(ROOT)}: {name}")
    return problems


def reads_out_of_sight() -> list[str]:
    """'<file>: <name> (<owner>'s)' for another role's variable the reader cannot see: not the contract's."""
    problems = []
    for role, path in role_files():
        for name in sorted(reads(path)):
            owner = owner_of(name, ROLE_NAMES)
            if owner in (None, role) or name in DECLARED[role] or name in DECLARED[CONTRACT]:
                continue
            problems.append(f"{path.relative_to(ROOT)}: {name} ({owner}'s, declared by role "
                            f"{', '.join(r for r in ROLE_NAMES if name in DECLARED[r]) or 'none'})")
    return problems


def test_no_role_reads_a_role_variable_that_no_role_declares():
    assert undeclared_reads() == []


def test_what_a_role_reads_of_another_role_is_the_contract_s():
    assert reads_out_of_sight() == []


# --- ports ----------------------------------------------------------------------------


def port_variables() -> dict[str, list[str]]:
    """{variable: [roles declaring it]} of every port or range variable (not lists of them)."""
    found: dict[str, list[str]] = {}
    for role in ROLE_NAMES:
        specs = argument_options(role)
        for name in sorted(set(defaults(role)) | set(specs)):
            kind = (specs.get(name) or {}).get("type")
            if PORT_NAME.search(name) and kind not in ("list", "dict"):
                value = defaults(role).get(name, (specs.get(name) or {}).get("default"))
                if not isinstance(value, (list, dict)):
                    found.setdefault(name, []).append(role)
    return found


def table_problems(services, ports, contract_defaults, roles) -> list[str]:
    """What is wrong with the service table, against the roles' port variables."""
    problems = []
    claimed: dict[str, list[str]] = {}
    for service in services:
        variable = service.get("variable")
        if variable is None:
            continue
        claimed.setdefault(variable, []).append(service.get("owner"))
        if service.get("port") != "{{ " + variable + " }}":
            problems.append(f"{service.get('name')}: port is {service.get('port')!r}, not the value of {variable}")
    for variable in sorted(ports):
        owners = claimed.get(variable, [])
        if len(owners) != 1:
            problems.append(f"{variable}: {len(owners)} entries in cluster_services {owners}, not one")
    for variable, owners in sorted(claimed.items()):
        for owner in owners:
            if owner not in roles or owner_of(variable, roles) != owner:
                problems.append(f"{variable}: owner {owner!r} is not the role its name names")
        if variable not in contract_defaults:
            problems.append(f"{variable}: in cluster_services but not declared by the contract's defaults")
    return problems


def default_spans(services, contract_defaults) -> list[tuple[str, str, tuple[int, int]]]:
    """(service, proto, (first, last)) of every service at its default port.

    Not the kernel's ephemeral range (``ephemeral: true``): other services'
    fixed ports lie in it by design (GPUStack's 40000-40063 in Linux's
    32768-60999), the kernel only picks its free ports.
    """
    spans = []
    for service in services:
        if service.get("ephemeral"):
            continue
        value = contract_defaults[service["variable"]] if service.get("variable") else service["port"]
        spans.append((service["name"], service.get("proto", "tcp"), validate.port_range(value)))
    return spans


def overlaps(spans) -> list[str]:
    found = []
    for index, (name, proto, span) in enumerate(spans):
        for other, other_proto, other_span in spans[index + 1:]:
            if proto == other_proto and validate.ports_overlap(span, other_span):
                found.append(f"{name} {validate.render_ports(span)}/{proto} overlaps "
                             f"{other} {validate.render_ports(other_span)}/{other_proto}")
    return found


def test_every_port_variable_has_exactly_one_owner_in_the_service_table():
    ports = port_variables()
    assert "slurm_srun_port_range" in ports and "train_check_ephemeral_ports" in ports
    assert "firewall_extra_ports" not in ports  # a list of rules, not a port
    assert table_problems(SERVICES, ports, CONTRACT_DEFAULTS, ROLE_NAMES) == []


def test_port_variables_are_declared_by_the_contract_alone():
    assert {name: roles for name, roles in port_variables().items() if roles != [CONTRACT]} == {}


def test_no_two_services_overlap_at_their_default_ports():
    assert overlaps(default_spans(SERVICES, CONTRACT_DEFAULTS)) == []


# The checks themselves fail on a broken contract (they are run on copies here).


def test_a_port_without_an_entry_or_with_two_is_named():
    services = [s for s in SERVICES if s.get("variable") != "train_check_port"]
    services.append(dict(next(s for s in SERVICES if s.get("variable") == "slurm_slurmd_port"), name="slurmd again"))
    ports = dict(port_variables(), gpustack_metrics_port=["gpustack"])
    assert table_problems(services, ports, CONTRACT_DEFAULTS, ROLE_NAMES) == [
        "gpustack_metrics_port: 0 entries in cluster_services [], not one",
        "slurm_slurmd_port: 2 entries in cluster_services ['slurm', 'slurm'], not one",
        "train_check_port: 0 entries in cluster_services [], not one",
    ]


def test_an_entry_with_a_wrong_owner_or_port_is_named():
    services = [dict(s, owner="monitoring") if s.get("variable") == "train_check_port" else s for s in SERVICES]
    services = [dict(s, port=29501) if s.get("variable") == "slurm_slurmd_port" else s for s in services]
    assert table_problems(services, port_variables(), CONTRACT_DEFAULTS, ROLE_NAMES) == [
        "slurmd: port is 29501, not the value of slurm_slurmd_port",
        "train_check_port: owner 'monitoring' is not the role its name names",
    ]


def test_a_train_check_port_of_9090_collides_with_prometheus():
    spans = default_spans(SERVICES, dict(CONTRACT_DEFAULTS, train_check_port=9090))
    assert overlaps(spans) == ["Prometheus 9090/tcp overlaps torch.distributed rendezvous (train_check) 9090/tcp"]


def test_an_srun_range_over_slurmd_s_port_collides():
    spans = default_spans(SERVICES, dict(CONTRACT_DEFAULTS, slurm_srun_port_range="6000-7000"))
    assert overlaps(spans) == [
        "slurmctld 6817/tcp overlaps srun (SrunPortRange) 6000-7000/tcp",
        "slurmd 6818/tcp overlaps srun (SrunPortRange) 6000-7000/tcp",
    ]


def test_a_read_nobody_declares_and_a_read_out_of_sight_are_named(tmp_path):
    template = tmp_path / "probe.j2"
    template.write_text("{% set here = 1 %}{{ slurm_controller }} {{ gpustack_typo_port | default(80) }}"
                        "{{ item.port }} {{ here }}{{ gpustack_data_dir }}\n")
    found = reads(template)
    assert found == {"slurm_controller", "gpustack_typo_port", "item", "gpustack_data_dir"}
    assert sorted(n for n in found if owner_of(n, ROLE_NAMES) and n not in EVERY_DECLARED) == ["gpustack_typo_port"]
    # train_check reading gpustack's data dir: gpustack declares it, but train_check's plays need not run gpustack.
    assert "gpustack_data_dir" in DECLARED["gpustack"] and "gpustack_data_dir" not in DECLARED[CONTRACT]
    assert "slurm_controller" in DECLARED[CONTRACT]


def test_bare_expressions_are_read_too(tmp_path):
    tasks = tmp_path / "main.yml"
    tasks.write_text("- name: x\n  ansible.builtin.debug:\n    msg: \"{{ monitoring_servers | length }} servers\"\n"
                     "  when: slurm_enabled | bool and 'slurm_fake' in group_names\n"
                     "  register: firewall_probe\n")
    assert reads(tasks) == {"monitoring_servers", "slurm_enabled", "group_names"}
    found = set()
    _walk(_yaml(tasks), found)
    assert found == {"firewall_probe"}


# --- the contract is everywhere ----------------------------------------------------


@pytest.mark.parametrize("role", [r for r in ROLE_NAMES if r not in {CONTRACT} | SKIPPED_ROLES])
def test_every_role_depends_on_the_contract(role):
    assert "lockstep.gpu.cluster" in (_yaml(ROLES / role / "meta" / "main.yml").get("dependencies") or [])


def plays():
    for path in sorted((ROOT / "playbooks").glob("*.yml")):
        for play in _yaml(path) if isinstance(_yaml(path), list) else []:
            if "hosts" in play:
                yield path.name, play


@pytest.mark.parametrize("name, play", list(plays()), ids=lambda value: value if isinstance(value, str) else "")
def test_every_play_lists_the_contract_first(name, play):
    first = (play.get("roles") or [None])[0]
    assert (first.get("role") if isinstance(first, dict) else first) == "lockstep.gpu.cluster", (name, play["name"])
