#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module report_files: a run's report files, written in one step."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: report_files
short_description: Write a set of text files and keep the newest files of a history folder, in one step
description:
  - Writes each file of O(files) whose content differs from what is there (atomically - a temporary file in the same
    folder, renamed over the old one - with O(mode)), creating missing folders on the way (mode V(0755)), and
    then, with O(prune), removes all but the newest O(prune.keep) files of a folder.
  - "One module run instead of a C(ansible.builtin.file) task and a C(ansible.builtin.copy) per file (each a stat
    and a module run, about 0.8 s apiece on the controller): role verify writes its JSON, Markdown and HTML reports
    and the history's JSON with it on every run."
version_added: "0.1.0"
author:
  - Lockstep contributors (@lockstep)
options:
  files:
    description: "C({path: text}): each file's absolute path and its whole content."
    type: dict
    required: true
  mode:
    description: The mode of every file written (files whose content is already right keep theirs).
    type: str
    default: "0644"
  prune:
    description: A folder whose files matching O(prune.pattern) are sorted by name and all but the newest
      O(prune.keep) removed, after the files are written (a history named by time).
    type: dict
    suboptions:
      path:
        description: The folder. Nothing is removed where it does not exist.
        type: path
        required: true
      pattern:
        description: A shell pattern of the file names that count.
        type: str
        default: "*.json"
      keep:
        description: How many of the last names to keep; V(0) keeps them all.
        type: int
        required: true
attributes:
  check_mode:
    support: full
    description: Says what it would write and remove, and changes nothing.
  diff_mode:
    support: none
    description: No diff (reports are large and new on every run).
  platform:
    support: full
    platforms: posix
    description: Any POSIX host; role verify runs it on the controller.
seealso:
  - module: ansible.builtin.copy
"""

EXAMPLES = r"""
- name: Write the report as JSON and Markdown, and keep the newest 50 of the history
  lockstep.gpu.report_files:
    files:
      /srv/reports/drift.json: "{{ report | to_nice_json }}"
      /srv/reports/drift.md: "{{ report | lockstep.gpu.drift_markdown }}"
      /srv/reports/history/20261207T101500Z.json: "{{ report | to_nice_json }}"
    prune:
      path: /srv/reports/history
      keep: 50
"""

RETURN = r"""
written:
  description: The files whose content was written (or would be, in check mode), in the order of O(files).
  returned: always
  type: list
  elements: str
  sample: ["/srv/reports/drift.json", "/srv/reports/history/20261207T101500Z.json"]
removed:
  description: The files O(prune) removed (or would remove, in check mode), oldest first.
  returned: always
  type: list
  elements: str
  sample: ["/srv/reports/history/20251101T000000Z.json"]
"""

import fnmatch  # noqa: E402
import os  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.lockstep.gpu.plugins.module_utils.files import write_atomically  # noqa: E402


def differs(path, data):
    """Whether the file at path is absent or holds other bytes than data."""
    try:
        with open(path, "rb") as handle:
            return handle.read() != data
    except OSError:
        return True


def to_prune(folder, pattern, keep, adding):
    """The files of folder matching pattern, sorted by name (with the names being added), but the last keep."""
    if keep <= 0:
        return []
    try:
        names = {name for name in os.listdir(folder) if fnmatch.fnmatch(name, pattern)}
    except OSError:
        names = set()
    names |= {os.path.basename(path) for path in adding
              if os.path.dirname(path) == folder and fnmatch.fnmatch(os.path.basename(path), pattern)}
    return [os.path.join(folder, name) for name in sorted(names)[:-keep]]


def main():
    module = AnsibleModule(
        argument_spec=dict(
            files=dict(type="dict", required=True),
            mode=dict(type="str", default="0644"),
            prune=dict(type="dict", options=dict(
                path=dict(type="path", required=True),
                pattern=dict(type="str", default="*.json"),
                keep=dict(type="int", required=True),
            )),
        ),
        supports_check_mode=True,
    )
    files, prune = module.params["files"], module.params["prune"]
    try:
        mode = int(module.params["mode"], 8)
    except ValueError:
        module.fail_json(msg=f"mode is {module.params['mode']!r}: an octal mode such as 0644")
    relative = [path for path in files if not os.path.isabs(path)]
    if relative:
        module.fail_json(msg=f"files must be absolute paths: {', '.join(relative)}")
    contents = {path: str(text).encode("utf-8") for path, text in files.items()}
    written = [path for path, data in contents.items() if differs(path, data)]
    removed = to_prune(os.path.normpath(prune["path"]), prune["pattern"], prune["keep"], written) if prune else []
    if not module.check_mode:
        try:
            for path in written:
                os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
                write_atomically(path, contents[path], mode)
            for path in removed:
                if os.path.lexists(path):
                    os.unlink(path)
        except OSError as exc:
            module.fail_json(msg=f"cannot write {exc.filename or 'a report file'}: {exc.strerror or exc}",
                             written=[], removed=[])
    module.exit_json(changed=bool(written or removed), written=written, removed=removed)


if __name__ == "__main__":
    main()
