"""The tables verify.yml prints, read back from its output as a terminal shows it.

Used by tests/tooling/test_verify_output.py (saved bundles) and the drift
scenario (molecule/drift/tests/test_drift.py, live nodes). Under the YAML
result format a message prints as a literal block indented by 8 spaces;
under JSON as a list, one quoted line per element, also indented by 8.
"""

from __future__ import annotations

import json
import re


def _logical(line, result_format):
    """A printed line of a debug message as the message holds it, or None when it is not one."""
    if result_format == "json":
        found = re.fullmatch(r' {8}"(.*)",?', line)
        return json.loads(f'"{found.group(1)}"') if found else None
    return line[8:] if line.startswith(" " * 8) else ("" if line == "" else None)


ANSI = re.compile(r"\x1b\[[0-9;]*m")


def tables(output, result_format):
    """Every table in ``output``: (its printed lines, its rows as the message holds them).

    Colours (ANSIBLE_FORCE_COLOR) are taken out first: they take no columns.
    """
    lines = ANSI.sub("", output).splitlines()
    found = []
    for i, line in enumerate(lines):
        text = _logical(line, result_format)
        if text is None or not re.match(r"component {2,}expected {2,}", text):
            continue
        printed, rows = [line], []
        for raw in lines[i + 1:]:
            text = _logical(raw, result_format)
            assert text is not None, f"a table line that is not a line of the message: {raw!r}"
            if text == "":
                break
            printed.append(raw)
            rows.append(text)
        found.append((printed, rows[1:]))  # rows[0] is the rule under the header
    return found


def check_tables(output, result_format, components_per_table, columns=120):
    """Each table fits ``columns`` and has exactly one row per component, in this order.

    A cell wrapped onto a second line would make a line that does not start
    with its component, or a line too long.
    """
    found = tables(output, result_format)
    assert len(found) == len(components_per_table), "\n".join(
        ["tables found: %d" % len(found)] + [line for line in output.splitlines() if "component" in line])
    for (printed, rows), components in zip(found, components_per_table):
        too_long = [line for line in printed if len(line) > columns]
        assert too_long == [], f"lines longer than {columns} columns: {too_long}"
        assert [row.split("  ")[0] for row in rows] == components, "\n".join(printed)
    return found
