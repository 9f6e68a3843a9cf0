# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A problem of the inventory, and the one report of all of them.

Every check of the preflight returns :class:`Problem` values: the node (or
"" for the inventory as a whole), the variable, the value as the admin
wrote it, and what is allowed. :func:`report` turns all of them into one
message, the same problem on many nodes folded into one line, so that one
failed run names everything that is wrong, on 3 nodes or on 500.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ansible_collections.lockstep.gpu.plugins.plugin_utils.validate import short


@dataclass(frozen=True)
class Problem:
    """node: variable is 'value': allowed."""

    variable: str
    value: object = field(compare=False)
    allowed: str
    node: str = ""
    # The value as shown (compared, so that one value folds across nodes).
    shown: str = field(default="", init=False)

    def __post_init__(self):
        object.__setattr__(self, "shown", short(self.value))

    def line(self, nodes: str | None = None) -> str:
        where = nodes if nodes is not None else (self.node or "inventory")
        return f"{where}: {self.variable} is '{self.shown}': {self.allowed}"


def fold(problems) -> list[tuple[list[str], Problem]]:
    """The problems with the nodes that share each one, in a stable order."""
    groups: dict[tuple, tuple[list[str], Problem]] = {}
    for problem in problems:
        key = (problem.variable, problem.shown, problem.allowed)
        nodes = groups.setdefault(key, ([], problem))[0]
        if problem.node not in nodes:
            nodes.append(problem.node)
    return sorted(groups.values(), key=lambda item: (item[1].variable, item[1].shown, item[1].allowed))


def _nodes(nodes: list[str], limit: int = 8) -> str:
    named = [n for n in nodes if n] or ["inventory"]
    if len(named) <= limit:
        return ", ".join(named)
    return ", ".join(named[:limit]) + f" and {len(named) - limit} more"


def report(problems) -> str:
    """One message naming every problem; empty when there is none."""
    folded = fold(problems)
    if not folded:
        return ""
    lines = [f"{len(folded)} problem{'s' if len(folded) != 1 else ''} in the inventory; no node was changed:"]
    lines += [f"  - {problem.line(_nodes(nodes))}" for nodes, problem in folded]
    return "\n".join(lines)
