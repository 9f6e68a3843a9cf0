# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Lockstep's exporter: a node's components as node-exporter textfile metrics.

The monitoring role runs this on every node from a systemd timer, without
Ansible installed there: it copies this file, :mod:`components` and the
module_utils that gpu_facts uses into a private directory and runs
``python3 -m ansible_collections.lockstep.gpu.plugins.plugin_utils.exporter``
with that directory on ``PYTHONPATH``. The collection is the same code as
the gpu_facts module's (:func:`collect_live`, :func:`analyse`) and verify.yml's
(:func:`components`), so the metrics name the same components::

    lockstep_component_info{component="nccl.package",value="2.18.3-1+cuda12.1"} 1
    lockstep_collection_timestamp_seconds 1.7e+09
    lockstep_collection_success 1

Functions::

    escape_label_value(text)                  -> str  (exposition format escaping)
    label_value(value, limit=MAX_VALUE)       -> str  (a component value as a label value)
    render(components, timestamp)             -> str  (a successful collection)
    render_failure(previous_text)             -> str  (a failed one: the last values kept)
    write_atomically(path, text)              (module_utils/files.py: temporary file, then rename)
    main(argv)                                -> exit status

Standard library only (plus the collection's own code): this runs on
managed nodes (Python 3.9+).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time

from ansible_collections.lockstep.gpu.plugins.module_utils.files import write_atomically

#: Longest label value written; longer values are cut and end in ``...``.
MAX_VALUE = 200

INFO = "lockstep_component_info"
TIMESTAMP = "lockstep_collection_timestamp_seconds"
SUCCESS = "lockstep_collection_success"

_HEADERS = {
    INFO: "A component of this node's stack as verify.yml compares it (lockstep.gpu.components), and its value.",
    TIMESTAMP: "When Lockstep last collected this node's stack successfully (Unix time).",
    SUCCESS: "Whether Lockstep's last collection on this node succeeded (1) or failed (0).",
}
DEFAULT_OUTPUT = "/var/lib/prometheus/node-exporter/lockstep.prom"


def escape_label_value(text: str) -> str:
    """Escape a label value for the text exposition format: backslash,
    double quote and line feed become ``\\\\``, ``\\"`` and ``\\n``."""
    return str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def label_value(value, limit: int = MAX_VALUE) -> str:
    """A component value as the text of a label value (not yet escaped).

    Booleans are ``true``/``false`` (as JSON and verify.yml's reports write
    them), an unreadable value (``{"error": message}``) is
    ``unreadable: <message>``, and text longer than ``limit`` characters is
    cut to ``limit`` characters ending in ``...``.
    """
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, dict) and "error" in value:
        text = f"unreadable: {value['error']}"
    else:
        text = str(value)
    if len(text) > limit:
        text = text[: max(limit - 3, 0)] + "..."
    return text


def _header(name: str) -> list:
    return [f"# HELP {name} {_HEADERS[name]}", f"# TYPE {name} gauge"]


def render(components: dict, timestamp: float) -> str:
    """The textfile of a successful collection: one info series per
    component (sorted by name), the collection time, success 1."""
    lines = _header(INFO)
    for name in sorted(components):
        lines.append(
            f'{INFO}{{component="{escape_label_value(name)}",'
            f'value="{escape_label_value(label_value(components[name]))}"}} 1'
        )
    lines += _header(TIMESTAMP) + [f"{TIMESTAMP} {float(timestamp)!r}"]
    lines += _header(SUCCESS) + [f"{SUCCESS} 1"]
    return "\n".join(lines) + "\n"


def render_failure(previous_text: str | None) -> str:
    """The textfile of a failed collection: the last successful values and
    their time, kept from ``previous_text`` (so that LockstepStale counts
    from the last success), and success 0."""
    kept = {INFO: [], TIMESTAMP: []}
    for line in (previous_text or "").splitlines():
        for name, found in kept.items():
            if line.startswith(name + "{") or line.startswith(name + " "):
                found.append(line)
    lines = []
    for name in (INFO, TIMESTAMP):
        if kept[name]:
            lines += _header(name) + kept[name]
    lines += _header(SUCCESS) + [f"{SUCCESS} 0"]
    return "\n".join(lines) + "\n"


class SubprocessRunner:
    """The :class:`collect.Runner` of a node without Ansible: commands run
    through subprocess, in the C locale, like gpu_facts' ``run_command``."""

    SBIN = ("/usr/local/sbin", "/usr/sbin", "/sbin")

    def which(self, name, opt_dirs=()):
        for directory in opt_dirs:
            candidate = os.path.join(directory, name)
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return candidate
        path = os.pathsep.join([os.environ.get("PATH", os.defpath), *self.SBIN])
        return shutil.which(name, path=path)

    def run(self, argv):
        done = subprocess.run(argv, capture_output=True, text=True, errors="replace", check=False,
                              env=dict(os.environ, LC_ALL="C", LANG="C"))
        return done.returncode, done.stdout, done.stderr


def collect(args) -> dict:
    """This node's components, collected as gpu_facts and verify.yml do."""
    # Imported here: the rendering above needs nothing but the standard library.
    from ansible_collections.lockstep.gpu.plugins.module_utils.analyse import analyse
    from ansible_collections.lockstep.gpu.plugins.module_utils.collect import collect_live
    from ansible_collections.lockstep.gpu.plugins.plugin_utils.components import components

    raw = collect_live(SubprocessRunner(), conda_envs_dirs=args.conda_envs_dir,
                       interfaces=args.interface or None, timeout=args.command_timeout)
    return components(analyse(raw, packages=args.package), packages=args.package or None)


def parse_args(argv):
    parser = argparse.ArgumentParser(description="Write this node's Lockstep components as textfile metrics.")
    parser.add_argument("--output", default=DEFAULT_OUTPUT, help="the .prom file (default: %(default)s)")
    parser.add_argument("--package", action="append", default=[], help="a package fact to report (pkg.<name>)")
    parser.add_argument("--conda-envs-dir", action="append", default=None, help="where conda environments are")
    parser.add_argument("--interface", action="append", default=[], help="an interface to report (default: all)")
    parser.add_argument("--command-timeout", type=int, default=60, help="seconds per command (0: none)")
    args = parser.parse_args(argv)
    if args.conda_envs_dir is None:
        args.conda_envs_dir = ["/opt/conda/envs"]
    return args


def main(argv=None, now=time.time) -> int:
    """Collect and write the textfile; 0 on success, 1 when the collection
    failed (the file then says success 0 and keeps the last values)."""
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        text = render(collect(args), now())
        status = 0
    except Exception as exc:  # pylint: disable=broad-except  # any failure is reported as success 0
        print(f"lockstep exporter: collection failed: {exc!r}", file=sys.stderr)
        try:
            with open(args.output, encoding="utf-8") as previous:
                text = render_failure(previous.read())
        except OSError:
            text = render_failure(None)
        status = 1
    write_atomically(args.output, text)
    return status


if __name__ == "__main__":
    sys.exit(main())
