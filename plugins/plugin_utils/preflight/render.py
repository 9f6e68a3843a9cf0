# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One node's values of the checked roles, as the roles themselves would see them.

The preflight play does not run the roles it checks, so their defaults and
vars are not in the play's variables. This module layers them as Ansible
does for a role (role vars over the inventory and extra vars, the
inventory over role defaults), then templates the variables the engine
validates: every option of each role's argument spec and the derived
values its rules list in ``VARIABLES``. A value that cannot be templated
(an undefined variable in the inventory) is a problem naming it.
"""

from __future__ import annotations

from collections import ChainMap

from ansible.errors import AnsibleError

from ansible_collections.lockstep.gpu.plugins.filter.preflight import shapes
from ansible_collections.lockstep.gpu.plugins.plugin_utils.preflight import Context, engine
from ansible_collections.lockstep.gpu.plugins.plugin_utils.problems import Problem


def layers(loader, roles) -> tuple[dict, dict]:
    """The roles' defaults and vars (roles/<role>/{defaults,vars}/main.yml), as trusted templates.

    The loader's cached parse is used as it is (``unsafe=True``: no deep copy of each file on each
    call, which was most of the cost of a node's values): the files' values are only read here and
    templated into new objects, never changed.
    """
    defaults, role_vars = {}, {}
    for role in roles:
        for folder, into in (("defaults", defaults), ("vars", role_vars)):
            path = engine.ROLES_DIR / role / folder / "main.yml"
            if path.is_file():
                into.update(loader.load_from_file(str(path), unsafe=True, trusted_as_template=True) or {})
    return defaults, role_vars


def render(templar, loader, task_vars, roles) -> tuple[dict, list[Problem]]:
    """{variable: templated value} of the roles for the node of task_vars, and the inputs that failed.

    The roles with Python rules get their defaults and vars and their rules' ``VARIABLES``; of the
    others only what the inventory sets is rendered. A derived variable that fails is left out
    (its inputs are named by the argument spec's validation); an input that fails is a problem.
    """
    ported = [r for r in roles if engine.rules(r)]
    defaults, role_vars = layers(loader, ported)
    variables = ChainMap(role_vars, task_vars, defaults)
    rendering = templar.copy_with_new_env(available_variables=variables)
    host = task_vars.get("inventory_hostname", "")
    values, problems = {}, []
    for role in roles:
        derived = set(getattr(engine.rules(role), "VARIABLES", ()))
        for name in list(engine.spec_options(role)) + sorted(derived):
            if name in values or name not in variables:
                continue
            try:
                values[name] = rendering.template(variables[name])
            except AnsibleError as error:
                if name not in derived:
                    problems.append(Problem(name, str(variables[name]), f"cannot be templated: {error.message}", host))
    return values, problems


def _shape(host: str, role: str, raw: dict) -> list[Problem]:
    """A string or a number where the role's spec takes a list or a mapping (at any depth)."""
    return [Problem(name, value, wrong, host)
            for name, value, wrong in shapes(raw, [{"options": engine.spec_options(role)}])]


def node_values(templar, loader, task_vars, roles) -> tuple[dict, dict, list[Problem]]:
    """One node's values of the roles checked on it: (valid values, values as written, problems).

    Of the roles still checked by their tasks/preflight.yml only what the inventory sets is
    validated here (render), so that every argument-spec problem is named in the same report.
    """
    host = task_vars.get("inventory_hostname", "")
    # The cluster contract's values are validated with the roles' (all of them in one report).
    roles = [engine.CONTRACT, *roles]
    raw, problems = render(templar, loader, task_vars, roles)
    values = {}
    for role in roles:
        options = engine.spec_options(role)
        mine = {k: raw[k] for k in options if k in raw}
        shaped = _shape(host, role, mine)
        # The top-level variables of the misshapen values (conda_environments[0].packages: conda_environments).
        misshapen = {p.variable.split("[", 1)[0].split(".", 1)[0] for p in shaped}
        converted, invalid = engine.validate(host, options, {k: v for k, v in mine.items() if k not in misshapen})
        problems += shaped + invalid
        values.update(converted)
        # A role's derived values come from its inputs: none of them where an input is invalid
        # (the rules would name the same value twice), and never a value another spec refused.
        if not shaped and not invalid:
            derived = getattr(engine.rules(role), "VARIABLES", ())
            refused = {p.variable for p in problems}
            values.update({k: raw[k] for k in derived if k in raw and k not in values and k not in refused})
    return values, raw, problems


def node_step(templar, loader, task_vars, roles, gpu_group: str) -> tuple[dict, dict, list[Problem], dict]:
    """The node step of the preflight: (valid values, values as written, problems, probe request).

    The roles checked on the node are those of roles that apply to it (the GPU roles on the
    GPU group's nodes only); the request merges what their rules need read there.
    """
    host = task_vars["inventory_hostname"]
    groups = {name: list(members) for name, members in task_vars["groups"].items()}
    here = [r for r in roles if r not in engine.GPU_ROLES or host in groups.get(gpu_group, ())]
    values, raw, problems = node_values(templar, loader, task_vars, here)
    ctx = Context(hosts=[host], groups=groups, values={host: values}, raw={host: raw},
                  facts={host: dict(task_vars.get("ansible_facts") or {})}, roles=tuple(roles))
    request = engine.probe_request(ctx, host, [r for r in here if engine.rules(r)], gpu_group)
    return values, raw, problems, request
