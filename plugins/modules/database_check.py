#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module database_check: connect to a database URL before a service is configured with it."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: database_check
short_description: Connect to a PostgreSQL or MySQL URL and say why it does not connect
description:
  - Opens one connection to the database of O(url) and closes it. Nothing is read or written.
  - >-
    Fails when the URL is malformed, when this Python has no driver for it, or when the database does not accept
    the connection, with a message naming O(name), the URL without its password, and the database's or network's
    own words (also without the password), e.g.
    C(gpustack_database_url (postgresql://gpustack:***@db1:5432/gpustack): the database refused the connection:
    connection to server at "db1" (10.0.0.5), port 5432 failed: FATAL:  password authentication failed for user
    "gpustack").
  - The drivers are psycopg2 (V(postgresql://)) and PyMySQL (V(mysql://)), the ones GPUStack's venv installs; run the
    task with that venv's Python as C(ansible_python_interpreter).
  - Role gpustack runs it on the server before it writes an external C(gpustack_database_url) into the server's
    configuration, so a URL that would make the server crash-loop never replaces a working one.
version_added: "0.1.0"
author:
  - Lockstep contributors (@lockstep)
options:
  url:
    description:
      - The database URL, V(postgresql://user:password@host:port/database?sslmode=...) or
        V(mysql://user:password@host:port/database). A driver suffix (V(postgresql+psycopg2://)) is allowed.
    type: str
    required: true
  name:
    description: What messages call the URL (the inventory variable it came from).
    type: str
    default: url
  timeout:
    description: Seconds to wait for the connection.
    type: int
    default: 10
attributes:
  check_mode:
    support: full
    description: Connects in check mode too (it changes nothing).
  diff_mode:
    support: none
    description: No diff.
  platform:
    support: full
    platforms: posix
    description: Any node that reaches the database.
"""

EXAMPLES = r"""
- name: Check gpustack_database_url before the server is configured with it
  lockstep.gpu.database_check:
    url: "{{ gpustack_database_url }}"
    name: gpustack_database_url
  vars:
    ansible_python_interpreter: /opt/gpustack/venv/bin/python
"""

RETURN = r"""
database:
  description: The kind of database that answered.
  returned: success
  type: str
  sample: postgresql
host:
  description: The host connected to.
  returned: success
  type: str
  sample: db1.example.org
port:
  description: The port connected to.
  returned: success
  type: int
  sample: 5432
"""

import importlib  # noqa: E402
import sys  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.lockstep.gpu.plugins.module_utils.database import (  # noqa: E402
    DRIVERS,
    connect_args,
    database_message,
    shown,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            url=dict(type="str", required=True, no_log=True),
            name=dict(type="str", default="url"),
            timeout=dict(type="int", default=10),
        ),
        supports_check_mode=True,
    )
    url, name = module.params["url"], module.params["name"]
    where = f"{name} ({shown(url)})"
    try:
        kind, args = connect_args(url, module.params["timeout"])
    except ValueError as error:
        module.fail_json(msg=f"{where} is not a database URL: {error}")
    try:
        driver = importlib.import_module(DRIVERS[kind])
    except ImportError:
        module.fail_json(msg=f"{where}: {sys.executable} has no {DRIVERS[kind]} to connect with "
                             "(run the check with GPUStack's venv as the interpreter)")
    try:
        driver.connect(**args).close()
    except Exception as error:  # pylint: disable=broad-exception-caught  # each driver has its own classes
        module.fail_json(msg=f"{where}: the database refused the connection: "
                             f"{database_message(error, args['password'])}")
    module.exit_json(changed=False, database=kind, host=args["host"], port=args["port"])


if __name__ == "__main__":
    main()
