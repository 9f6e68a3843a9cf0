# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""NCCL health: compare a parsed all_reduce_perf run with the inventory's
per-GPU-model bus bandwidth thresholds (controller side; the parser is
module_utils/nccl.py)."""

from __future__ import annotations

import re

from ansible_collections.lockstep.gpu.plugins.module_utils.parsing import ParseError


def _threshold_matches(entry, gpu, nodes, per_node):
    if not re.search(str(entry["gpu"]), gpu, re.IGNORECASE):
        return False
    if entry.get("nodes") is not None and int(entry["nodes"]) != nodes:
        return False
    if entry.get("gpus_per_node") is not None and int(entry["gpus_per_node"]) != per_node:
        return False
    return True


def check_bus_bandwidth(result, thresholds, source=None):
    """Compare a parsed all_reduce_perf run with per-GPU-model thresholds.

    ``result`` is what ``parse_all_reduce_perf`` returns; ``thresholds`` a
    list of ``{"gpu": regex matched against the GPU name (case-insensitive),
    "min_busbw": GB/s, "nodes": N (optional), "gpus_per_node": N
    (optional)}``; the first entry that matches the run's GPU model, node
    count and GPUs per node applies. Returns ``{"ok", "avg_busbw",
    "min_busbw", "gpu", "nodes", "gpus_per_node", "nranks", "wrong",
    "out_of_bounds", "message"}``; ``ok`` is False when the average bus
    bandwidth is below the threshold or the run reported wrong values, and
    None when no threshold applies. A run without device lines, or with
    more than one GPU model, raises ``ParseError``.
    """
    devices = result.get("devices") or []
    if not devices:
        raise ParseError(
            "the output lists no devices ('#  Rank ... device ...' lines); cannot tell "
            "the GPU model to compare with",
            source,
        )
    models = []
    for device in devices:
        if device["gpu"] not in models:
            models.append(device["gpu"])
    if len(models) > 1:
        raise ParseError(
            "the run mixes GPU models (%s); thresholds are per model" % ", ".join(models),
            source,
        )
    gpu = models[0]
    nodes = len(result.get("hosts") or []) or 1
    nranks = result.get("nranks") or len(devices)
    per_node = nranks // nodes if nranks % nodes == 0 else None
    wrong = sum(
        (row[side]["wrong"] or 0) for row in result["rows"] for side in ("out_of_place", "in_place")
    )
    out_of_bounds = result.get("out_of_bounds") or 0
    avg_busbw = float(result["avg_busbw"])
    summary = {
        "avg_busbw": avg_busbw,
        "gpu": gpu,
        "nodes": nodes,
        "gpus_per_node": per_node,
        "nranks": nranks,
        "wrong": wrong,
        "out_of_bounds": out_of_bounds,
        "min_busbw": None,
    }
    where = "%d node(s) x %s GPU(s) %s" % (nodes, per_node if per_node is not None else "?", gpu)
    entry = next(
        (e for e in thresholds or [] if _threshold_matches(e, gpu, nodes, per_node)), None
    )
    problems = []
    if wrong or out_of_bounds:
        problems.append(
            "%d wrong value(s) and %d out-of-bounds value(s): the reduction returned bad data"
            % (wrong, out_of_bounds)
        )
    if entry is None:
        summary["ok"] = False if problems else None
        summary["message"] = "; ".join(
            problems + ["no threshold matches %s (avg bus bandwidth %.2f GB/s)" % (where, avg_busbw)]
        )
        return summary
    min_busbw = summary["min_busbw"] = float(entry["min_busbw"])
    if avg_busbw < min_busbw:
        problems.append(
            "avg bus bandwidth %.2f GB/s is below the %.2f GB/s expected of %s"
            % (avg_busbw, min_busbw, where)
        )
    summary["ok"] = not problems
    summary["message"] = "; ".join(problems) if problems else (
        "avg bus bandwidth %.2f GB/s >= %.2f GB/s expected of %s"
        % (avg_busbw, min_busbw, where)
    )
    return summary
