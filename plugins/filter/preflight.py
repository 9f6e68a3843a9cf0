# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter of the preflight role: lockstep.gpu.shape_problems names every
inventory variable that is a string or a number where a role's argument spec
takes a list or a mapping. Its documentation is shape_problems.yml beside
this file.

Ansible's argument-spec validation converts "12.1" to ["12.1"] for a list
option, and "a=1" to {"a": "1"} for a dict option, but only to validate: the
role still reads the string, and its tasks then fail with a Jinja error that
names no variable (can only concatenate str to list). This check runs first
and names the variable, its value and the shape it must have."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ansible.errors import AnsibleFilterError

_KINDS = {"list": "a list", "dict": "a mapping"}
_EXAMPLES = {"list": "{name}: ['{value}']", "dict": "{name}: {{key: value}}"}


def _kind_of(value) -> str:
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, Sequence):
        return "a list"
    if value is None:
        return "null"
    return type(value).__name__


def _fits(value, kind: str) -> bool:
    if kind == "dict":
        return isinstance(value, Mapping)
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes))


def _short(value, width: int = 80) -> str:
    text = str(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def _check(name: str, value, spec: Mapping, problems: list) -> None:
    """Append (variable, value, what is wrong) for value and, below it, each suboption of spec."""
    kind = spec.get("type")
    if kind not in _KINDS:
        return
    if not _fits(value, kind):
        example = _EXAMPLES[kind].format(name=name.rsplit(".", 1)[-1].rsplit("]", 1)[-1], value=_short(value, 40))
        problems.append((name, value, f"not {_KINDS[kind]} (it is {_kind_of(value)}): write it as a YAML "
                                      f"{_KINDS[kind][2:]}, e.g. {example}"))
        return
    suboptions = spec.get("options") or {}
    if kind == "list" and spec.get("elements") == "dict":
        for index, element in enumerate(value):
            if not isinstance(element, Mapping):
                problems.append((f"{name}[{index}]", element, f"not a mapping (it is {_kind_of(element)}): each "
                                 f"entry of {name} is a mapping of {', '.join(sorted(suboptions)) or 'options'}"))
                continue
            for key, subspec in suboptions.items():
                if key in element:
                    _check(f"{name}[{index}].{key}", element[key], subspec, problems)
    elif kind == "dict":
        for key, subspec in suboptions.items():
            if key in value:
                _check(f"{name}.{key}", value[key], subspec, problems)


def shapes(values, specs) -> list[tuple[str, object, str]]:
    """(variable, value, what is wrong) for every variable of ``values`` whose shape is not its option's in ``specs``.

    ``values``: the node's variables (e.g. ``hostvars[inventory_hostname]``);
    only the options of ``specs`` are read from it, those it does not define
    are skipped (the role's defaults have the right shape). ``specs``: a list
    of argument spec entry points, each ``{"options": {name: spec}}``, as
    meta/argument_specs.yml declares them. The preflight engine reports these
    (plugin_utils/preflight/render.py); the filter renders them as sentences.
    """
    if not isinstance(values, Mapping):
        raise AnsibleFilterError(f"shape_problems: expects the node's variables (a mapping), got {_kind_of(values)}")
    if isinstance(specs, Mapping):
        specs = [specs]
    problems: list[tuple[str, object, str]] = []
    seen = set()
    for entry in specs:
        for name, spec in ((entry or {}).get("options") or {}).items():
            if name in seen or name not in values:
                continue
            seen.add(name)
            _check(name, values[name], spec or {}, problems)
    return problems


def shape_problems(values, specs):
    """One sentence for each of :func:`shapes`: "<variable> '<value>' is <what is wrong>."."""
    return [f"{name} '{_short(value)}' is {wrong}." for name, value, wrong in shapes(values, specs)]


class FilterModule:
    """Shape checks for the preflight."""

    def filters(self):
        return {"shape_problems": shape_problems}
