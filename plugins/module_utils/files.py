# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A file replaced whole: the exporter's textfile on the nodes (plugin_utils/exporter.py) and the
reports of verify.yml on the controller (module report_files) are written through it.

Standard library only: this runs on managed nodes (Python 3.9+), copied by role monitoring.
"""

from __future__ import annotations

import os
import tempfile


def write_atomically(path: str, data, mode: int = 0o644) -> None:
    """Write ``data`` (text, as UTF-8, or bytes) to ``path`` through a temporary file in the same
    directory and a rename, so that no reader ever sees half a file (the temporary file's name
    starts with ``.lockstep-`` and ends in ``.tmp``: node-exporter's textfile collector reads
    ``*.prom`` only)."""
    directory = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(prefix=".lockstep-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data.encode("utf-8") if isinstance(data, str) else data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
