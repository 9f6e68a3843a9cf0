# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading the train_check job (role train_check): every node's torchrun
result, and rank 0's table, into one verdict that names the broken node.

A node whose environment is broken (torch missing, an import that fails)
ends at once with its own error; the others then give up in the
rendezvous (timeout, or the connection to the rendezvous node lost). So a
failure that is not a rendezvous error names the culprit; rendezvous errors
only say who waited.
"""

from __future__ import annotations

import json
import re

RESULT_MARK = "train_check_json "
EXIT_MARK = "train_check_exit "
# What a node that only waited for the others prints (torch.distributed.elastic).
_WAITED = re.compile(
    r"RendezvousTimeoutError|RendezvousConnectionError|RendezvousClosedError|DistNetworkError"
    r"|Socket Timeout|Connection reset by peer|Connection refused|timed out")
# The last "SomethingError: message" (or "Error: ...") line is the node's own error.
_ERROR_LINE = re.compile(r"^\s*(?:[\w.]+(?:Error|Exception)|Error|timeout)\b:?.*$")
_SRUN_LABEL = re.compile(r"^\s*(\d+): ?(.*)$")
# timeout(1)'s exit code when the deadline passed, and a kill by SIGTERM/SIGKILL.
_KILLED = (124, 137, 143, -9, -15)


def rank0_result(text):
    """Rank 0's gathered table (the train_check_json line), or None."""
    for line in (text or "").splitlines():
        line = _SRUN_LABEL.sub(r"\2", line) if _SRUN_LABEL.match(line) else line
        if line.startswith(RESULT_MARK):
            return json.loads(line[len(RESULT_MARK):])
    return None


def node_error(text):
    """The node's own error line: the last exception line of its output."""
    found = [line.strip() for line in (text or "").splitlines() if _ERROR_LINE.match(line)]
    return found[-1] if found else ""


def split_srun(stdout, stderr):
    """srun --label output of one task per node -> {node: {rc, stdout, stderr}}.

    Each task's wrapper ends with ``train_check_exit <node> <rc>``; a task
    that printed no such line (killed) is named ``task <n>``.
    """
    tasks = {}
    for stream, text in (("stdout", stdout), ("stderr", stderr)):
        for line in (text or "").splitlines():
            match = _SRUN_LABEL.match(line)
            if not match:
                continue
            task = tasks.setdefault(int(match.group(1)), {"stdout": [], "stderr": [], "rc": None, "node": None})
            if match.group(2).startswith(EXIT_MARK):
                parts = match.group(2)[len(EXIT_MARK):].split()
                task["node"], task["rc"] = parts[0], int(parts[1])
            else:
                task[stream].append(match.group(2))
    return {(task["node"] or "task %d" % number): {
        "rc": task["rc"], "stdout": "\n".join(task["stdout"]), "stderr": "\n".join(task["stderr"])}
        for number, task in sorted(tasks.items())}


def _classify(node, result):
    """(kind, detail): ok, waited or broken."""
    if not result or result.get("rc") is None and not result.get("msg"):
        return "broken", "no result: torchrun did not run or did not finish there (node failed earlier or unreachable)"
    rc = result.get("rc")
    output = "%s\n%s" % (result.get("stdout") or "", result.get("stderr") or "")
    if rc in _KILLED:
        return "waited", "killed at the deadline (rc %s)" % rc
    if rc == 0 or rank0_result(result.get("stdout")) is not None or "train_check FAILED" in output:
        return "ok", ""  # the job's own verdict is rank 0's table (summarize)
    error = node_error(result.get("stderr")) or node_error(result.get("stdout")) or (result.get("msg") or "").strip()
    if _WAITED.search(output) and not _own_error(output):
        return "waited", error or "rendezvous error"
    return "broken", "rc %s: %s" % (rc, error or "no error message")


def _own_error(output):
    """A Python error of the job itself (import, attribute, file) besides the rendezvous ones."""
    return re.search(r"^\s*(ModuleNotFoundError|ImportError|AttributeError|OSError|FileNotFoundError"
                     r"|SyntaxError|NameError)\b", output, re.M) is not None or "No such file" in output


def summarize(results):
    """{node: command result (rc, stdout, stderr, msg)} -> the verdict.

    Returns {ok, message, table, world_size, broken, waited}: table is rank
    0's lines (world size, one line per rank, the sum); message names the
    broken node(s) first, then the ranks whose versions or sum differ, then
    those that only waited.
    """
    kinds = {node: _classify(node, result) for node, result in results.items()}
    broken = sorted(node for node, verdict in kinds.items() if verdict[0] == "broken")
    waited = sorted(node for node, verdict in kinds.items() if verdict[0] == "waited")
    found = [(node, rank0_result((result or {}).get("stdout"))) for node, result in results.items()]
    rank0 = next(((node, table) for node, table in found if table is not None), (None, None))
    table = [line.split(": ", 1)[-1] if _SRUN_LABEL.match(line) else line
             for line in ((results.get(rank0[0]) or {}).get("stdout") or "").splitlines()
             if re.match(r"^(\s*\d+: )?train_check (world_size|rank)=", line)] if rank0[0] else []
    problems = ["%s: %s" % (node, kinds[node][1]) for node in broken]
    if rank0[1] is not None:
        problems += ["%s differs from rank 0" % bad for bad in rank0[1].get("bad", [])]
    if waited and problems:
        problems.append("%s only waited for the broken node(s) (%s)" % (
            ", ".join(waited), "; ".join(sorted({kinds[node][1] for node in waited}))))
    elif waited and rank0[1] is not None:
        problems.append("rank 0 printed its table, but torchrun did not end on %s (%s)" % (
            ", ".join(waited), "; ".join(sorted({kinds[node][1] for node in waited}))))
    elif waited:
        problems.append("no node failed on its own, %s gave up in the rendezvous (%s): is a node missing, "
                        "or is a port closed between the nodes?" % (
                            ", ".join(waited), "; ".join(sorted({kinds[node][1] for node in waited}))))
    if not problems and rank0[1] is None:
        problems.append("every node ended without error but no rank 0 printed the result")
    ok = not problems
    world = rank0[1]["world_size"] if rank0[1] else None
    message = ("%d ranks agree (sum %s, expected %s)" % (world, rank0[1]["ranks"][0]["sum"], rank0[1]["expected"])
               if ok else "; ".join(problems))
    return {"ok": ok, "message": message, "table": table, "world_size": world, "broken": broken, "waited": waited}
