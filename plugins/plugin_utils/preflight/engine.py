# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The preflight engine: argument specs, then every role's rules, all problems at once.

The action lockstep.gpu.preflight (plugins/action/preflight.py) renders each
node's values (render.py) and probes each node once; this module does the
rest without Ansible's runtime, so that unit tests call it directly:

- :func:`validate` checks one node's values against a role's argument spec
  (entry point ``preflight``) with Ansible's own validator, one variable at a
  time so that each error names its variable;
- :func:`check` builds each role's view of the play (its nodes only: the GPU
  roles see the GPU group) and runs its ``RULES``;
- the shape check (a string where a list is meant) and the port table of the
  cluster contract run here too, across roles.

Nothing here changes anything: a problem is a :class:`Problem`, and the
caller fails once with ``problems.report`` of all of them.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.lockstep.gpu.plugins.plugin_utils.preflight import Context
from ansible_collections.lockstep.gpu.plugins.plugin_utils.problems import Problem

# The roles whose checks are Python rules (plugins/plugin_utils/preflight/<role>.py),
# in the order their problems are found.
ENGINE_ROLES = ("base", "network", "nvidia_driver", "cuda", "nccl", "docker", "conda", "shared_storage", "slurm",
                "monitoring", "gpustack", "firewall", "train_check")
# The role of the cluster contract: its argument spec is validated with the others'.
CONTRACT = "cluster"
# Roles checked on the GPU group's nodes only.
GPU_ROLES = frozenset({"nvidia_driver", "cuda", "nccl"})
# The collection's roles, beside plugins/.
ROLES_DIR = Path(__file__).resolve().parents[3] / "roles"
_PACKAGE = "ansible_collections.lockstep.gpu.plugins.plugin_utils.preflight."
# "... we were unable to convert to bool: The value 'maybe' is not ..." -> the part after the variable's name.
_ARGUMENT = re.compile(r"^argument '[^']*' is of type \S+ and ")


def rules(role: str):
    """The role's rule module (the contract's too), or None when the role has none."""
    if role != CONTRACT and role not in ENGINE_ROLES:
        return None
    return importlib.import_module(_PACKAGE + role)


@lru_cache(maxsize=None)
def spec_options(role: str) -> dict:
    """The options of the role's argument spec, entry point preflight (else main)."""
    import yaml  # controller-side only

    path = ROLES_DIR / role / "meta" / "argument_specs.yml"
    specs = yaml.safe_load(path.read_text(encoding="utf-8"))["argument_specs"]
    return dict((specs.get("preflight") or specs["main"]).get("options") or {})


def applies(role: str, host: str, ctx: Context, gpu_group: str) -> bool:
    """Is the role checked on host (the GPU roles on the GPU group's nodes only)?"""
    return role not in GPU_ROLES or host in ctx.groups.get(gpu_group, ())


def _allowed(message: str) -> str:
    return _ARGUMENT.sub("", message).strip()


def validate(host: str, options: dict, values: dict) -> tuple[dict, list[Problem]]:
    """host's values of the spec's options converted to their types, and one problem per invalid one.

    Each variable is validated alone, so each error names the variable it is about; a variable
    the inventory and the role's defaults leave unset is left out (as validate_argument_spec does).
    """
    converted, problems = {}, []
    for name, option in options.items():
        if name not in values:
            continue
        option = {k: v for k, v in option.items() if k not in ("description", "default")}
        result = ArgumentSpecValidator({name: option}).validate({name: values[name]})
        errors = [_allowed(e.error_message) for e in result.errors.errors]
        if errors:
            problems.append(Problem(name, values[name], "; ".join(errors), host))
        else:
            converted[name] = result.validated_parameters[name]
    return converted, problems


def role_context(ctx: Context, role: str, gpu_group: str) -> Context:
    """The play as one role sees it: only the nodes it is checked on."""
    return replace(ctx, hosts=[h for h in ctx.hosts if applies(role, h, ctx, gpu_group)])


def probe_request(ctx: Context, host: str, roles, gpu_group: str) -> dict:
    """Every checked role's request of what to read on host, merged (lists joined, duplicates dropped)."""
    request: dict[str, list] = {}
    for role in roles:
        module = rules(role)
        if module is None or not hasattr(module, "probe") or not applies(role, host, ctx, gpu_group):
            continue
        for key, items in (module.probe(role_context(ctx, role, gpu_group), host) or {}).items():
            merged = request.setdefault(key, [])
            merged.extend(item for item in items if item not in merged)
    return request


def check(ctx: Context, roles, gpu_group: str) -> list[Problem]:
    """Every problem the checked roles' rules find in the play."""
    problems: list[Problem] = []
    for role in roles:
        module = rules(role)
        if module is None:
            continue
        role_ctx = role_context(ctx, role, gpu_group)
        for rule in module.RULES:
            problems.extend(rule(role_ctx))
    return problems


def secrets(roles) -> set[str]:
    """The variables whose argument spec says no_log (tokens, passwords, URLs with credentials)."""
    return {name for role in (CONTRACT, *roles) for name, option in spec_options(role).items()
            if (option or {}).get("no_log")}


def redact(problems, hidden: set[str]) -> list[Problem]:
    """The problems with every value of a no_log variable replaced by '(not shown)', in allowed too."""
    redacted = []
    for problem in problems:
        name = re.split(r"[.\[]", problem.variable, maxsplit=1)[0]
        if name not in hidden:
            redacted.append(problem)
            continue
        value = str(problem.value)
        allowed = problem.allowed.replace(value, "***") if value else problem.allowed
        redacted.append(Problem(problem.variable, "(not shown)", allowed, problem.node))
    return redacted


def check_play(hosts, groups, nodes: dict, facts: dict, roles, gpu_group: str) -> list[Problem]:
    """Every problem of the play, secrets redacted: each node step's and every rule's.

    nodes is {host: the node step's result} ("values", "raw", "probe", "problems" as dicts).
    """
    problems = [Problem(p["variable"], p["value"], p["allowed"], p["node"])
                for node in nodes.values() for p in node.get("problems", [])]
    ctx = Context(hosts=list(hosts), groups=groups, values={h: dict(n["values"]) for h, n in nodes.items()},
                  raw={h: dict(n["raw"]) for h, n in nodes.items()}, facts=facts,
                  probes={h: dict(n["probe"]) for h, n in nodes.items()}, roles=tuple(roles))
    problems += check(ctx, [CONTRACT, *(r for r in ENGINE_ROLES if r in roles)], gpu_group)
    return redact(problems, secrets(roles))
