"""Make Lockstep's plugins importable the way Ansible imports them.

Modules import their helpers as ``ansible.module_utils.lockstep_*``; Ansible
finds them through ``module_utils`` in ansible.cfg. Here the same directory is
appended to the package path so the unit tests import exactly that code.
Filter plugins are plain files; ``plugins/filter`` goes on sys.path.
"""

from __future__ import annotations

import sys
from pathlib import Path

import ansible.module_utils

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"

ansible.module_utils.__path__.append(str(ROOT / "plugins" / "module_utils"))
sys.path.insert(0, str(ROOT / "plugins" / "filter"))
sys.path.insert(0, str(ROOT / "plugins" / "modules"))
