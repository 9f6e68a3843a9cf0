"""State role gpustack must leave in the cluster scenario, with every other role beside it.

GPUStack 2.3.0 from the scenario's wheelhouse of PyPI wheels: the server on
dp1 (head) on Debian's PostgreSQL, its API on the declared gpustack_port,
workers on dp2 and dp3 registered with the server's token, all behind the
firewall site.yml applies last. The API is asked with credentials read on
the node by the node's own shell: no secret enters the tests' output.
verify.yml compares GPUStack's version and a digest of its venv's whole
closure (another dependency version on one node is its drift). The
last tests run playbooks/gpustack.yml from the controller as an admin
would: a wrong token fails naming the worker and never shows the token (bad
inputs are the preflight's: its rules' unit tests and
tests/tooling/test_preflight_cases.py).
"""

from __future__ import annotations

import json
import re
import secrets

import pytest
from conftest import ansible_playbook, drift_named, node, wait_until
from conftest import declared as declared_values

SERVER, WORKERS = "dp1", ("dp2", "dp3")
NODES = (SERVER, *WORKERS)
VENV = "/opt/gpustack/venv"
CONFIG = "/etc/gpustack/config.yaml"


@pytest.fixture(scope="module")
def declared():
    """dp1's declared values (the three nodes share one set, molecule/cluster/inventory.yml)."""
    return declared_values(SERVER)


def server_url(declared) -> str:
    # dp1's platform address (molecule.yml); the inventory's ansible_host is a template.
    return f"http://10.231.1.11:{declared['gpustack_port']}"


def workers_listed(declared) -> dict:
    """{worker name: state} from the server's API, asked on dp1 as admin."""
    # The nodes have no curl: Python's urllib, the password read by the node's own Python.
    out = node(SERVER).check_output(
        "python3 -c \"import base64, urllib.request as u; p = open('/var/lib/gpustack/initial_admin_password').read()"
        ".strip(); r = u.Request('" + server_url(declared) + "/v2/workers?perPage=100', headers={'Authorization': "
        "'Basic ' + base64.b64encode(('admin:' + p).encode()).decode()}); print(u.urlopen(r).read().decode())\"")
    return {w["name"]: w["state"] for w in json.loads(out)["items"]}


def sha256(name: str, path: str) -> str:
    return node(name).check_output(f"sha256sum {path}").split()[0]


def test_installed_version_is_the_pinned_one(declared):
    for name in NODES:
        version = node(name).check_output(
            f"{VENV}/bin/python -c 'import importlib.metadata as m; print(m.version(\"gpustack\"))'")
        assert version == "2.3.0"  # the role's default gpustack_version
        assert node(name).file(f"{VENV}/bin/fastfetch").exists


def _setuptools(name: str) -> str:
    return node(name).check_output(
        f"{VENV}/bin/python -c 'import importlib.metadata as m; print(m.version(\"setuptools\"))'")


# Issue 30, part 4: GPUStack's whole closure is compared, not only its own
# version, and installed from the role's lock. Another setuptools in dp3's
# venv (Debian's wheel, which python3-venv ships, put over the closure's
# with the venv's own pip, as an admin might) is a drift of dp3 alone, with
# the digests; the next converge puts the lock's version back on dp3 and
# changes nothing on the others.
def test_another_version_of_a_dependency_in_one_gpustack_venv_is_a_drift_the_converge_repairs(tmp_path):
    pip = f"{VENV}/bin/pip --disable-pip-version-check --no-input -q"
    version = _setuptools("dp3")
    debian = node("dp3").check_output("ls /usr/share/python-wheels/setuptools-*.whl")
    assert f"setuptools-{version}-" not in debian, (version, debian)
    lock = node("dp3").file("/opt/gpustack/requirements-lock.txt").content_string
    assert re.search(rf"^setuptools=={re.escape(version)} --hash=sha256:[0-9a-f]{{64}}$", lock, re.M), lock[:500]
    node("dp3").check_output(f"{pip} install --root-user-action=ignore --no-index --no-deps {debian}")
    try:
        assert _setuptools("dp3") != version
        result = ansible_playbook("playbooks/verify.yml", "-e", f"verify_reports_dir={tmp_path}")
        repaired = ansible_playbook("playbooks/gpustack.yml")
        after = _setuptools("dp3")
    finally:
        if _setuptools("dp3") != version:
            node("dp3").check_output(
                f"{pip} install --root-user-action=ignore --no-index --no-deps --find-links /srv/gpustack-wheels "
                f"setuptools=={version}")
    assert result.returncode != 0
    assert drift_named(result.output, "dp3", "gpustack.packages_sha256"), result.output[-3000:]
    assert not [n for n in ("dp1", "dp2") if drift_named(result.output, n, "gpustack.packages_sha256")]
    assert not drift_named(result.output, "dp3", "gpustack.version")
    compared = json.loads((tmp_path / "drift.json").read_text())["by_component"]["gpustack.packages_sha256"]
    assert compared["deviating_hosts"] == ["dp3"], compared
    assert repaired.returncode == 0, repaired.output[-3000:]
    changed = {n: int(c) for n, c in re.findall(r"\b(dp\d) : ok=\d+ changed=(\d+)", repaired.output)}
    assert changed["dp3"] > 0 and changed["dp1"] == changed["dp2"] == 0, changed
    # What the converge left, read before the clean-up above could put it back.
    assert after == version


def test_server_api_answers_on_the_declared_port_from_a_worker(declared):
    assert declared["gpustack_port"] == 8080
    answer = node("dp2").check_output(
        f"python3 -c \"import urllib.request as u; print(u.urlopen('{server_url(declared)}/healthz').read().decode())\"")
    assert answer == '"ok"'
    listening = node(SERVER).check_output(f"ss -Hltnp 'sport = :{declared['gpustack_port']}'")
    assert 'users:(("gpustack"' in listening


def test_server_runs_on_postgresql():
    tables = node(SERVER).check_output(
        "cd /tmp && runuser -u postgres -- psql -tA -d gpustack -c "
        "\"SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tableowner = 'gpustack'\"")
    assert int(tables) > 10
    assert node(SERVER).service("postgresql").is_running


def test_both_workers_are_listed_ready_by_the_servers_api(declared):
    listed = workers_listed(declared)
    assert {name: listed.get(name) for name in WORKERS} == dict.fromkeys(WORKERS, "ready")
    assert SERVER not in listed


@pytest.mark.parametrize("name", NODES)
def test_unit_and_secret_files(name, declared):
    host = node(name)
    assert host.service("gpustack").is_running and host.service("gpustack").is_enabled
    unit = host.file("/etc/systemd/system/gpustack.service").content_string
    assert f"ExecStart={VENV}/bin/gpustack start --config-file {CONFIG}" in unit
    for path, mode in [(CONFIG, 0o600), ("/etc/gpustack", 0o700), ("/var/lib/gpustack", 0o711)]:
        assert (host.file(path).mode, host.file(path).user) == (mode, "root"), path
    config = host.file(CONFIG).content_string
    if name == SERVER:
        assert f"api_port: {declared['gpustack_port']}" in config
        for path in ("/etc/gpustack/token", "/etc/gpustack/database_password",
                     "/var/lib/gpustack/initial_admin_password"):
            assert host.file(path).mode == 0o600, path
    else:
        assert f"server_url: {server_url(declared)}\n" in config
        assert f"worker_name: {name}\n" in config


def test_the_workers_hold_the_servers_token():
    # Compared by digest: the token itself never leaves the nodes.
    digest = "sed -n 's/^token: \"\\(.*\\)\"$/\\1/p' {} | tr -d '\\n' | sha256sum"
    server = node(SERVER).check_output("tr -d '\\n' < /etc/gpustack/token | sha256sum")
    for name in WORKERS:
        assert node(name).check_output(digest.format(CONFIG)) == server


def test_a_wrong_token_fails_naming_the_worker_and_never_shows_the_token(tmp_path, declared):
    before = sha256("dp3", CONFIG)
    wrong = "WrongToken" + secrets.token_hex(12)
    (tmp_path / "vars.json").write_text(json.dumps({"gpustack_token": wrong}))
    result = ansible_playbook("playbooks/gpustack.yml", "-v", "--limit", "dp3", "-e", f"@{tmp_path / 'vars.json'}")
    assert result.returncode != 0
    assert (f"GPUStack worker dp3: the server at {server_url(declared)} refused its registration token (HTTP 401)"
            in result.output), result.output[-3000:]
    leaked = wrong in result.stdout + result.stderr
    assert not leaked, "the wrong token appears in the -v output"
    real = node(SERVER).check_output("cat /etc/gpustack/token")
    leaked = real in result.stdout + result.stderr
    assert not leaked, "the server's token appears in the -v output"
    assert sha256("dp3", CONFIG) == before
    assert workers_listed(declared)["dp3"] == "ready"


# Issue 29, finding 5: a database URL of valid form with a wrong password
# (the server's own PostgreSQL) is refused before it replaces the working
# configuration: named with PostgreSQL's words, never with the password.
def test_a_database_url_that_does_not_connect_is_refused_and_the_server_keeps_running(tmp_path, declared):
    before = sha256(SERVER, CONFIG)
    wrong = "WrongPassword" + secrets.token_hex(8)
    url = f"postgresql://gpustack:{wrong}@127.0.0.1:5432/gpustack?sslmode=disable"
    (tmp_path / "vars.json").write_text(json.dumps({"gpustack_database_url": url}))
    result = ansible_playbook("playbooks/gpustack.yml", "-v", "-e", f"@{tmp_path / 'vars.json'}")
    assert result.returncode != 0
    assert ("gpustack_database_url (postgresql://gpustack:***@127.0.0.1:5432/gpustack?sslmode=disable): the database "
            "refused the connection:") in result.output, result.output[-3000:]
    assert 'password authentication failed for user "gpustack"' in result.output, result.output[-3000:]
    leaked = wrong in result.stdout + result.stderr
    assert not leaked, "the wrong password appears in the -v output"
    assert sha256(SERVER, CONFIG) == before
    assert node(SERVER).service("gpustack").is_running
    assert workers_listed(declared) == dict.fromkeys(WORKERS, "ready")


def verify_with_the_server_s_unit_stopped(declared, unit: str, then: list[str]):
    """verify.yml's output with ``unit`` stopped on the server; it must fail naming no worker's service.
    Then the ``then`` commands bring the server back, and the server's API lists both workers ready
    again (later tests use it)."""
    node(SERVER).check_output(f"systemctl stop {unit}")
    try:
        result = ansible_playbook("playbooks/verify.yml")
        assert result.returncode != 0
        assert not [n for n in WORKERS if drift_named(result.output, n, "service.stopped")]
    finally:
        for command in then:
            node(SERVER).check_output(command)
    wait_until("GPUStack's server listing both workers ready again", lambda: workers_ready(declared), 240, every=5)
    return result


def workers_ready(declared) -> bool:
    try:
        return workers_listed(declared) == dict.fromkeys(WORKERS, "ready")
    except (ValueError, KeyError):  # not answering yet (AssertionError too: wait_until's)
        return False


# Issue 29, finding 7: the GPUStack server stopped is a drift of dp1 in
# verify.yml (component service.stopped), and nowhere else.
def test_a_stopped_gpustack_server_fails_verify_naming_it(declared):
    result = verify_with_the_server_s_unit_stopped(declared, "gpustack", ["systemctl start gpustack"])
    # systemd marks it failed or inactive, after how GPUStack answers SIGTERM.
    assert re.search(rf"{SERVER}: service.stopped expected none, actual gpustack \((inactive|failed)\)",
                     result.output), result.output[-3000:]


# Issue 29, finding 7: GPUStack's own PostgreSQL (gpustack_database_url is
# empty here) stopped is a drift of dp1 too. gpustack.service Requires= it and
# stops with it, so the line names gpustack first; both are started again.
def test_a_stopped_database_fails_verify_naming_it(declared):
    result = verify_with_the_server_s_unit_stopped(
        declared, "postgresql", ["systemctl start postgresql", "systemctl restart gpustack"])
    line = next((text for text in result.output.splitlines()
                 if f"{SERVER}: service.stopped expected none, actual " in text), "")
    assert "postgresql (inactive)" in line, result.output[-3000:]
    # Other components are other tests' business here: no service is a drift any more (the run may still say
    # what changed since the previous one: "dp1: service.stopped ... -> none").
    result = ansible_playbook("playbooks/verify.yml")
    assert not drift_named(result.output, SERVER, "service.stopped"), result.output[-3000:]
