"""database_check (issue 29, finding 5): a gpustack_database_url that does
not connect is refused before it replaces a working configuration, naming
the variable and the database's words, never the password.

The module runs as Ansible runs it, with stand-in drivers on its path that
raise the real drivers' messages (tests/fixtures/database, SOURCES.md there).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from ansible_collections.lockstep.gpu.plugins.module_utils.database import connect_args, database_message, shown
from ansible_collections.lockstep.gpu.plugins.modules import database_check

COLLECTIONS = str(Path(database_check.__file__).parents[5])
FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "database"
PASSWORD = "Wr0ngPassw0rd-4711"

# A driver whose connect() raises the fixture's text, or records its arguments.
DRIVER = '''
import json, os
class OperationalError(Exception):
    pass
class _Connection:
    def close(self):
        pass
def connect(**kwargs):
    with open(os.environ["ARGS_OUT"], "w") as handle:
        json.dump(kwargs, handle)
    if os.environ.get("RAISE"):
        raise OperationalError(open(os.environ["RAISE"]).read())
    return _Connection()
'''


def run(tmp_path, raise_text=None, drivers=("psycopg2", "pymysql"), **args):
    for name in drivers:
        (tmp_path / "drivers" / name).mkdir(parents=True, exist_ok=True)
        (tmp_path / "drivers" / name / "__init__.py").write_text(DRIVER)
    payload = {"ANSIBLE_MODULE_ARGS": dict(args, _ansible_tmpdir=str(tmp_path))}
    (tmp_path / "args.json").write_text(json.dumps(payload))
    env = {"PATH": "/usr/bin:/bin", "ARGS_OUT": str(tmp_path / "connect.json"),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path / "drivers"), COLLECTIONS,
                                                       os.environ.get("PYTHONPATH")]))}
    if raise_text:
        env["RAISE"] = str(FIXTURES / raise_text)
    done = subprocess.run([sys.executable, database_check.__file__, str(tmp_path / "args.json")],
                          capture_output=True, text=True, env=env, check=False)
    return json.loads(done.stdout), done.stdout + done.stderr


def test_a_wrong_password_names_the_variable_and_postgresqls_words_never_the_password(tmp_path):
    url = f"postgresql://gpustack:{PASSWORD}@db1.example.org:5432/gpustack?sslmode=disable"
    result, raw = run(tmp_path, "psycopg2_password_failed.txt", url=url, name="gpustack_database_url")
    assert result["failed"] is True
    assert result["msg"] == (
        "gpustack_database_url (postgresql://gpustack:***@db1.example.org:5432/gpustack?sslmode=disable): the database "
        'refused the connection: connection to server at "localhost" (127.0.0.1), port 5433 failed: FATAL:  password '
        'authentication failed for user "postgres"')
    assert PASSWORD not in raw
    assert json.loads((tmp_path / "connect.json").read_text()) == {
        "host": "db1.example.org", "port": 5432, "user": "gpustack", "password": PASSWORD, "connect_timeout": 10,
        "dbname": "gpustack", "sslmode": "disable"}


def test_a_database_that_does_not_listen_is_named_with_libpqs_two_lines_on_one(tmp_path):
    result, _raw = run(tmp_path, "psycopg2_connection_refused.txt", url=f"postgresql://gpustack:{PASSWORD}@127.0.0.1:1/g",
                       name="gpustack_database_url")
    assert result["msg"].endswith('connection to server at "127.0.0.1", port 1 failed: Connection refused Is the '
                                  "server running on that host and accepting TCP/IP connections?")


def test_mysql_access_denied_is_named(tmp_path):
    result, raw = run(tmp_path, "pymysql_access_denied.txt", url=f"mysql://gpustack:{PASSWORD}@db2/gpustack",
                      name="gpustack_database_url")
    assert result["msg"].endswith("""(1045, "Access denied for user 'root'@'172.18.0.8' (using password: YES)")""")
    assert PASSWORD not in raw
    assert json.loads((tmp_path / "connect.json").read_text())["port"] == 3306


def test_a_url_that_connects_changes_nothing_and_says_where(tmp_path):
    result, _raw = run(tmp_path, url=f"postgresql://gpustack:{PASSWORD}@10.0.0.5/gpustack")
    assert result["changed"] is False and not result.get("failed")
    assert (result["database"], result["host"], result["port"]) == ("postgresql", "10.0.0.5", 5432)


def test_a_python_without_the_driver_says_to_use_gpustacks_venv(tmp_path):
    result, _raw = run(tmp_path, drivers=(), url=f"postgresql://gpustack:{PASSWORD}@10.0.0.5/gpustack",
                       name="gpustack_database_url")
    assert "has no psycopg2 to connect with (run the check with GPUStack's venv" in result["msg"]


@pytest.mark.parametrize("url, why", [
    ("sqlite:///var/lib/gpustack/db.sqlite", "the scheme 'sqlite' is neither postgresql nor mysql"),
    ("postgresql:///gpustack", "it names no host"),
    ("postgresql://u:p@db:99999/gpustack", "its port is not a number from 1 to 65535"),
])
def test_malformed_urls_say_what_is_wrong(url, why):
    with pytest.raises(ValueError, match=why):
        connect_args(url)


def test_shown_hides_only_the_password():
    assert shown("postgresql://u:s3cret@db:5432/g?sslmode=require") == "postgresql://u:***@db:5432/g?sslmode=require"
    assert shown("postgresql://u@db/g") == "postgresql://u@db/g"
    assert shown("mysql://u:p%40ss@db/g") == "mysql://u:***@db/g"


def test_a_driver_suffix_and_quoted_characters_are_read():
    kind, args = connect_args("postgresql+psycopg2://gp%40stack:p%2Fw@db/gpu%20stack", timeout=3)
    assert kind == "postgresql"
    read = (args["user"], args["password"], args["dbname"], args["connect_timeout"])
    assert read == ("gp@stack", "p/w", "gpu stack", 3)


def test_the_password_never_survives_in_a_message():
    assert database_message(f"FATAL: role x with password {PASSWORD} rejected\n", PASSWORD) == (
        "FATAL: role x with password *** rejected")
