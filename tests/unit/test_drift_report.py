# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The drift report's renderers: the terminal table that never wraps, the
Markdown, the one-line summary and the HTML page (its structure; the page
in a real browser is tested by tests/tooling/test_report_browser.py and the
drift scenario)."""

from __future__ import annotations

import re

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.lockstep.gpu.plugins.plugin_utils.drift import LOCKSTEP_VERSION, drift
from ansible_collections.lockstep.gpu.plugins.plugin_utils.history import drift_changes
from ansible_collections.lockstep.gpu.plugins.plugin_utils.report import ELLIPSIS, drift_line, layer, summary
from ansible_collections.lockstep.gpu.plugins.plugin_utils.report_html import drift_html
from ansible_collections.lockstep.gpu.plugins.plugin_utils.report_markdown import drift_markdown
from ansible_collections.lockstep.gpu.plugins.plugin_utils.report_table import drift_table

RUNTIMES = "io.containerd.runc.v2, nvidia, runc"
DOCKER_DOWN = ("docker-info.json: `docker info --format '{{json .}}'` exited with status 1: Cannot connect to "
               "the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?")


def _cluster(n=3, **overrides):
    facts = {
        f"gpu{i:02d}": {"driver": "535.261.03", "cuda": "12.2", "nccl": "2.18.3-1+cuda12.2", "hostname": f"gpu{i:02d}"}
        for i in range(1, n + 1)
    }
    for host, changes in overrides.items():
        facts[host].update(changes)
    return facts


def _report_with_drift():
    facts = _cluster(3, gpu02={"driver": "525.85.12"})
    del facts["gpu03"]["nccl"]
    facts["gpu01"]["cuda"] = {"error": "nvcc not found"}
    return drift(facts, ignore=["hostname"])


def _stack(n=3):
    """A node's stack as verify compares it, with long values that have single spaces."""
    return {
        f"dr{i}": {"os.release": "Debian 12", "os.kernel": "6.1.0-28-amd64", "driver.version": "535.261.03",
                   "gpu.models": "NVIDIA H100 80GB HBM3", "cuda.ptxas": "12.1.105",
                   "nccl.package": "2.18.3-1+cuda12.1", "docker.runtimes": RUNTIMES,
                   "conda.train.packages_sha256": "0f" * 32, "net.eth0.mtu": 9000, "pkg.bash": "5.2.15-2+b7"}
        for i in range(1, n + 1)
    }


# --------------------------------------------------------------------------- #
# Summary and drift lines
# --------------------------------------------------------------------------- #


def test_summary_counts_hosts_and_components_in_words():
    assert summary(drift(_cluster(3), ignore=["hostname"])) == "3 hosts agree on 3 components."
    assert summary(drift(_cluster(1), ignore=["hostname"])) == "1 host agrees on 3 components."
    assert summary(_report_with_drift()) == "3 drifts on 3 of 3 hosts, in 3 of 3 components."
    one = drift(_cluster(3, gpu02={"driver": "1"}), ignore=["hostname"])
    assert summary(one) == "1 drift on 1 of 3 hosts, in 1 of 3 components."


def test_drift_line_names_host_component_expected_actual():
    lines = [drift_line(d) for d in _report_with_drift()["drifts"]]
    assert "gpu02: driver expected 535.261.03, actual 525.85.12 (differs)" in lines
    assert "gpu03: nccl expected 2.18.3-1+cuda12.2, actual (missing)" in lines
    with pytest.raises(AnsibleFilterError, match="one entry of a report's drifts"):
        drift_line({"host": "x"})


@pytest.mark.parametrize("component, key", [
    ("os.release", "os"), ("driver.version", "gpu"), ("gpu.models", "gpu"), ("cuda.ptxas", "cuda"),
    ("nccl.package", "nccl"), ("nccl_conf.sha256", "nccl"), ("cudnn.soname", "nccl"),
    ("docker.runtimes", "docker"), ("conda.train.torch", "conda"), ("conda", "conda"),
    ("net.eth0.mtu", "network"), ("rdma.mlx5_0.1.state", "network"), ("storage.nfs", "storage"),
    ("slurm.version", "scheduler"), ("pkg.bash", "other"), ("collect", "other"), ("osx.thing", "other"),
])
def test_layer_of_a_component(component, key):
    assert layer(component) == key


# --------------------------------------------------------------------------- #
# The terminal table
# --------------------------------------------------------------------------- #


def test_table_marks_drifted_cells_and_puts_them_first():
    lines = drift_table(_report_with_drift()).splitlines()
    # Every host drifts here; the drifted components keep their sorted order.
    assert lines[0].split() == ["component", "expected", "gpu01", "gpu02", "gpu03"]
    driver = next(line for line in lines if line.startswith("driver"))
    assert driver.split() == ["driver", "535.261.03", "535.261.03", "*525.85.12*", "535.261.03"]
    nccl = next(line for line in lines if line.startswith("nccl"))
    assert nccl.split()[-1] == "*(missing)*"
    cuda = next(line for line in lines if line.startswith("cuda"))
    assert "*unreadable: nvcc not found*" in cuda  # no colon in the message: all of it
    assert lines[-1] == "3 drifts on 3 of 3 hosts, in 3 of 3 components. Drifted cells are marked *value*."
    # Fixed width: each cell starts under its host's header.
    assert driver.index("*525.85.12*") == lines[0].index("gpu02")
    assert nccl.index("*(missing)*") == lines[0].index("gpu03")


def test_drifted_hosts_and_components_come_first():
    facts = _stack(4)
    facts["dr3"]["nccl.package"] = "2.18.1-1+cuda12.1"
    lines = drift_table(drift(facts)).splitlines()
    assert lines[0].split()[:3] == ["component", "expected", "dr3"]
    assert lines[2].startswith("nccl.package")
    assert [line.split()[0] for line in lines[3:12]] == sorted(c for c in facts["dr1"] if c != "nccl.package")


def test_drift_only_table_and_clean_report():
    report = drift(_cluster(3, gpu02={"driver": "1"}), ignore=["hostname"])
    lines = drift_table(report, drift_only=True).splitlines()
    assert lines[0].split() == ["component", "expected", "gpu02"]
    assert lines[2].split() == ["driver", "535.261.03", "*1*"]
    assert lines[3] == ""  # only the drifted component is listed, then the summary
    # No drift: no table at all, one line.
    clean = drift_table(drift(_cluster(2), ignore=["hostname"]), drift_only=True)
    assert clean == "2 hosts agree on 3 components."
    assert "*" not in drift_table(drift(_cluster(2), ignore=["hostname"]))


@pytest.mark.parametrize("width", [120, 100, 80, 60])
def test_no_line_is_longer_than_the_width_and_no_cell_is_split(width):
    facts = _stack(5)
    facts["dr2"]["docker.runtimes"] = {"error": DOCKER_DOWN}
    facts["dr4"]["nccl.package"] = "2.18.1-1+cuda12.1"
    report = drift(facts, expected={"os.release": "Debian 12"})
    report["changes"] = drift_changes(report, drift(_stack(5)))
    text = drift_table(report, width=width)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= width
    # One row per component, each starting with its name (no row is broken in two).
    table = lines[2:lines.index("")]
    assert [row.split()[0] for row in table] == ["docker.runtimes", "nccl.package"] + sorted(
        c for c in facts["dr1"] if c not in ("docker.runtimes", "nccl.package"))
    assert all(ELLIPSIS not in row.split()[0] for row in table)  # component names stay whole
    # Long values are cut with an ellipsis, never wrapped.
    sha = next(row for row in table if row.startswith("conda.train.packages_sha256"))
    assert ELLIPSIS in sha and "0f" * 32 not in sha
    # Drifted cells are cut last: the unreadable one names the file it could not read.
    docker = next(row for row in table if row.startswith("docker.runtimes"))
    assert "*unreadable" in docker
    drifts = drift_table(report, drift_only=True, width=width).splitlines()
    assert max(len(line) for line in drifts) <= width
    if width >= 80:
        assert "*unreadable: docker-info.json*" in drifts[2] and "*2.18.1-1+cuda12.1*" in drifts[3]


def test_host_columns_that_do_not_fit_are_counted():
    facts = {h: dict(v, **{"pkg.h": h * 6}) for h, v in _stack(12).items()}  # every column different
    report = drift(facts)
    text = drift_table(report, width=80)
    assert max(len(line) for line in text.splitlines()) <= 80
    shown = len(text.splitlines()[0].split()) - 2
    assert 0 < shown < 12
    assert f"{12 - shown} more hosts not shown" in " ".join(text.splitlines()[-2:])


def _dr3_drifted_since_a_clean_run():
    """The facts with dr3 on another NCCL, and their report compared with a clean run at 11:00 UTC."""
    before = drift(_stack())
    before["run"] = {"time": "2025-06-01T11:00:00.000000Z"}
    facts = _stack()
    facts["dr3"]["nccl.package"] = "2.18.1-1+cuda12.1"
    report = drift(facts)
    report["changes"] = drift_changes(report, before)
    return facts, report


def test_table_prints_the_changes_since_the_previous_run():
    facts, report = _dr3_drifted_since_a_clean_run()
    lines = drift_table(report, drift_only=True, width=100).splitlines()
    assert "Since the previous run (2025-06-01 11:00:00 UTC): 1 new drift, 0 resolved." in lines
    assert "  new: dr3: nccl.package expected 2.18.3-1+cuda12.1, actual 2.18.1-1+cuda12.1 (differs)" in lines
    assert not any("Since" in line for line in drift_table(report, changes=False).splitlines())
    # Nothing changed: one line says so.
    same = drift(facts)
    same["changes"] = drift_changes(same, report)
    assert drift_table(same, drift_only=True).splitlines()[-2] == "Since the previous run: no change."


# --------------------------------------------------------------------------- #
# Large clusters: identical hosts fold into one column
# --------------------------------------------------------------------------- #


def _large(n=500, drifted=("n0007",)):
    facts = {f"n{i:04d}": {"driver": "535.261.03", "cuda": "12.1"} for i in range(n)}
    for host in drifted:
        facts[host]["cuda"] = "12.2"
    return drift(facts)


def test_table_of_a_large_cluster_shows_the_drifted_host_and_one_folded_column():
    table = drift_table(_large(), max_hosts=12, width=108)
    header = table.splitlines()[0].split()
    assert header == ["component", "expected", "n0007", "n0000", "+498"]
    assert "*12.2*" in table
    assert "1 drift on 1 of 500 hosts" in table


def test_table_of_a_large_cluster_prints_at_most_max_hosts_columns():
    report = _large(n=40)
    facts = {h: {"v": h} for h in report["hosts"]}  # every host different: nothing folds
    table = drift_table(drift(facts, ignore=[]), max_hosts=5)
    assert len(table.splitlines()[0].split()) == 2 + 5
    assert "35 more hosts not shown (see the HTML report)." in table


def test_small_clusters_are_not_folded():
    table = drift_table(_large(n=4, drifted=()), max_hosts=12)
    assert table.splitlines()[0].split() == ["component", "expected", "n0000", "n0001", "n0002", "n0003"]


# --------------------------------------------------------------------------- #
# Markdown
# --------------------------------------------------------------------------- #


def test_markdown_contains_drift_rows():
    md = drift_markdown(_report_with_drift())
    assert "| host | component | expected | actual | reason |" in md
    assert "| gpu02 | driver | 535.261.03 | 525.85.12 | differs |" in md
    assert "| gpu03 | nccl | 2.18.3-1+cuda12.2 | (missing) | missing |" in md
    assert "| gpu01 | cuda | 12.2 | unreadable: nvcc not found | unreadable |" in md
    assert "| driver | 535.261.03 | majority | gpu02 |" in md
    assert f"Lockstep {LOCKSTEP_VERSION}." in md


def test_markdown_escapes_pipes_and_shows_constraints_and_changes():
    facts = {"a": {"x": "a|b"}, "b": {"x": "1.2"}}
    report = drift(facts, expected={"x": {"min": "1.0"}})
    report["run"] = {"time": "2025-06-01T12:00:00.000000Z"}
    report["changes"] = drift_changes(report, drift({"a": {"x": "1.2"}, "b": {"x": "1.2"}}))
    md = drift_markdown(report)
    assert "| a | x | >= 1.0 | a\\|b | differs |" in md
    assert "Run 2025-06-01T12:00:00.000000Z" in md
    assert "- new: a: x expected >= 1.0, actual a\\|b (differs)" in md


# --------------------------------------------------------------------------- #
# HTML
# --------------------------------------------------------------------------- #


def _cells(page):
    """{(data-host, data-component): (data-state, the cell's HTML)} of the grid."""
    found = {}
    for match in re.finditer(r'<td class="[^"]*cell [^"]*" data-state="(\w+)" data-host="([^"]*)" '
                             r'data-count="\d+" data-component="([^"]*)"[^>]*>(.*?)</td>', page):
        state, host, component, inner = match.groups()
        found[(host, component)] = (state, match.group(0))
    return found


def test_html_cells_carry_state_text_symbol_and_title():
    facts = _stack()
    facts["dr3"]["nccl.package"] = "2.18.1-1+cuda12.1"
    facts["dr2"]["docker.runtimes"] = {"error": DOCKER_DOWN}
    del facts["dr1"]["pkg.bash"]
    report = drift(facts, expected={"nccl.package": "2.18.3-1+cuda12.1", "cudnn.package": {"absent": True}})
    report["run"] = {"time": "2025-06-01T12:00:00.000000Z"}
    page = drift_html(report)
    cells = _cells(page)
    state, html = cells[("dr3", "nccl.package")]
    assert state == "drift"
    assert 'title="dr3 · nccl.package: expected 2.18.3-1+cuda12.1, actual 2.18.1-1+cuda12.1 (differs)"' in html
    assert "\u2717" in html and ">drifted: </span>" in html  # a symbol and a word, not colour alone
    assert "2.18.1-1+cuda12.1" in html and "expected 2.18.3-1+cuda12.1" in html  # in text, not only on hover
    state, html = cells[("dr2", "docker.runtimes")]
    assert state == "unreadable" and "docker-info.json" in html and "\u26a0" in html
    state, html = cells[("dr1", "pkg.bash")]
    assert state == "drift" and 'data-reason="missing"' in html
    assert cells[("dr1", "os.release")][0] == "ok" and "\u2713" in cells[("dr1", "os.release")][1]
    assert {cells[(h, "cudnn.package")][0] for h in ("dr1", "dr2", "dr3")} == {"absent"}
    # Run time, version, expectations and their source.
    assert '<time datetime="2025-06-01T12:00:00.000000Z">2025-06-01 12:00:00 UTC</time>' in page
    assert f"<dd>{LOCKSTEP_VERSION}</dd>" in page
    assert ('<tr data-component="nccl.package" data-source="declared"><td class="mono">nccl.package</td>'
            in page)
    assert "declared in the inventory" in page and "majority of the hosts" in page


def test_html_groups_rows_by_layer_in_stack_order():
    page = drift_html(drift(_stack()))
    layers = re.findall(r'<tbody data-layer="(\w+)"', page)
    assert layers == ["os", "gpu", "cuda", "nccl", "docker", "conda", "network", "other"]
    rows = re.findall(r'<tr class="\w+" data-component="([^"]+)"', page)
    assert rows.index("os.kernel") < rows.index("driver.version") < rows.index("cuda.ptxas") \
        < rows.index("nccl.package") < rows.index("docker.runtimes") < rows.index("net.eth0.mtu")
    # Every layer has a filter box; the filters stay hidden without the script, the rows never are.
    assert re.search(r'<form class="filters" id="filters" hidden', page)
    assert all(f'data-layer="{key}" checked' in page for key in layers)
    assert not re.search(r"<(tr|tbody|td|th)[^>]*\shidden", page)


def test_html_is_self_contained_escaped_and_printable():
    facts = {
        "n1": {"motd": "<script>alert(1)</script>", "driver": "1"},
        "n2": {"motd": "ok", "driver": "1"},
        "n3": {"motd": "ok", "driver": "1"},
        "<b>n4</b>": {"motd": "ok", "driver": "2"},
    }
    page = drift_html(drift(facts), title="Drift & <friends>")
    assert "<script>alert" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;b&gt;n4&lt;/b&gt;" in page
    assert "<title>Drift &amp; &lt;friends&gt;</title>" in page
    assert page.startswith("<!DOCTYPE html>")
    assert page.count("<script>") == 1 and page.count("<style>") == 1  # the page's own, inline
    for needle in ("<link", "src=", "http://", "https://", "@import", "url(", "fetch(", "XMLHttpRequest"):
        assert needle not in page
    assert "@media print" in page
    assert "<h2>Drifts (2)</h2>" in page
    assert page.count('data-state="drift"') == 2 * 2  # in the grid and in the list of drifts


def test_html_clean_report():
    page = drift_html(drift(_cluster(2), ignore=["hostname"]))
    assert 'data-state="drift"' not in page
    assert "2 hosts agree on 3 components." in page
    assert 'class="summary ok"' in page


def test_html_shows_what_changed_since_the_previous_run():
    _facts, report = _dr3_drifted_since_a_clean_run()
    page = drift_html(report)
    assert "Since the previous run (2025-06-01 11:00:00 UTC): 1 new drift, 0 resolved." in page
    assert '<li class="new" data-change="new" data-host="dr3" data-component="nccl.package">' in page
    state, html = _cells(page)[("dr3", "nccl.package")]
    assert 'data-new="true"' in html and '<span class="badge new">new</span>' in html


def test_html_of_a_large_cluster_folds_identical_hosts_with_a_count():
    page = drift_html(_large())
    heads = re.findall(r'<th scope="col" class="host[^"]*" data-hosts="([^"]*)" data-count="(\d+)"', page)
    assert [(hosts.split()[0], int(count)) for hosts, count in heads] == [("n0007", 1), ("n0000", 499)]
    assert len(heads[1][0].split()) == 499
    assert '<span aria-hidden="true">+498</span>' in page and "499 hosts" in page
    assert 'title="n0000, n0001, n0002' in page
    assert "<h2>Host columns</h2>" in page
    # The column that agrees everywhere is hidden by "only drifts", the drifted one is not.
    assert re.search(r'<th scope="col" class="host col-agree" data-hosts="n0000 ', page)
    assert re.search(r'<th scope="col" class="host" data-hosts="n0007"', page)


def test_html_drift_only_keeps_the_drifted_hosts_and_components():
    report = drift(_cluster(3, gpu02={"driver": "1"}), ignore=["hostname"])
    page = drift_html(report, drift_only=True)
    assert set(_cells(page)) == {("gpu02", "driver")}
    assert "Only the components and hosts with a drift are shown." in page
