"""The preflight rules of role base (plugins/plugin_utils/preflight/base.py).

Good values are the role's defaults as the molecule cluster scenario sees
them (dp1..dp3, Debian 12 containers on one bridge, no base_* variable set);
every base case of molecule/cluster/tests/test_bad_input.py that a rule (not
the argument spec) refuses is here, with the exact problem. The probe's
answer comes from a small stand-in of the node's files, asked with the
request base.probe makes.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.lockstep.gpu.plugins.plugin_utils.preflight import Context
from ansible_collections.lockstep.gpu.plugins.plugin_utils.preflight import base
from ansible_collections.lockstep.gpu.plugins.plugin_utils.problems import Problem

ROLES = Path(__file__).resolve().parents[2] / "roles"
HOSTS = ["dp1", "dp2", "dp3"]
GROUPS = {"all": list(HOSTS), "ungrouped": [], "cluster": list(HOSTS), "head": ["dp1"], "workers": ["dp2", "dp3"],
          "gpu": list(HOSTS)}
ADDRESSES = {"dp1": "10.231.1.11", "dp2": "10.231.1.12", "dp3": "10.231.1.13"}
HUGE = "A" * 200 * 1024

# roles/base/defaults/main.yml on Debian (molecule/cluster sets no base_* variable), then the
# VARIABLES: vars/main.yml's as the role renders them on a Debian 12 node, the cluster contract's
# /etc/hosts switch and group (roles/cluster/defaults/main.yml).
DEFAULTS = {
    "base_packages": ["openssh-server", "python3-pip", "git", "gcc", "g++", "make", "build-essential", "curl",
                      "ca-certificates", "gnupg", "chrony", "locales", "tzdata", "rsync"],
    "base_extra_packages": [],
    "base_apt_mirror": "",
    "base_apt_security_mirror": "",
    "base_apt_components": ["main", "contrib", "non-free", "non-free-firmware"],
    "base_timezone": "Etc/UTC",
    "base_locale": "en_US.UTF-8",
    "base_ntp_servers": [],
}
DERIVED = {
    "base_supported_releases": {"Debian": ["12"], "Ubuntu": ["22.04", "24.04"]},
    "base_release": "12",
}
CONTRACT = {"base_manage_etc_hosts": True, "base_etc_hosts_group": "cluster"}

# The node's tzdata (files and directories under /usr/share/zoneinfo) and glibc's SUPPORTED.
ZONES = {"Etc/UTC", "UTC", "Asia/Shanghai", "Europe/Berlin", "America/Argentina/Buenos_Aires"}
ZONE_DIRS = {"Etc", "Asia", "Europe", "America", "America/Argentina"}
SUPPORTED = "C.UTF-8 UTF-8\nen_US ISO-8859-1\nen_US.UTF-8 UTF-8\nzh_CN.UTF-8 UTF-8\n\n"

GROUP_ALLOWED = "not a group of the inventory; allowed: all, cluster, gpu, head, workers"


def facts(host):
    return {"distribution": "Debian", "distribution_major_version": "12", "distribution_version": "12.8",
            "default_ipv4": {"interface": "eth0", "address": ADDRESSES[host]},
            "virtualization_role": "guest", "virtualization_type": "podman"}


def answer(request, zones=None, supported=SUPPORTED) -> dict:
    """The probe's answer to base.probe's request on a node with these zones (os.path.exists' view)."""
    zones = ZONES if zones is None else zones

    def exists(path):
        name = path[len(base.ZONEINFO):]
        return name in zones | ZONE_DIRS or (name.endswith("/") and name[:-1] in ZONE_DIRS)
    return {"interfaces": {}, "hcas": {}, "listening": [], "memory_mb": 15872, "virtualization": "container",
            "markers": {"/.dockerenv": False, "/run/.containerenv": True},
            "paths": {path: exists(path) for path in request.get("paths", [])},
            "read": {path: supported for path in request.get("read", [])}}


def context(**values) -> Context:
    """The cluster scenario with these extra vars on every node (as -e sets them), probed."""
    merged = {**DEFAULTS, **DERIVED, **CONTRACT, **values}
    ctx = Context(hosts=list(HOSTS), groups={k: list(v) for k, v in GROUPS.items()},
                  values={h: dict(merged) for h in HOSTS}, raw={h: dict(merged) for h in HOSTS},
                  facts={h: facts(h) for h in HOSTS}, roles=("base",))
    ctx.probes = {h: answer(base.probe(ctx, h)) for h in HOSTS}
    return ctx


def problems(ctx) -> list[Problem]:
    return [problem for rule in base.RULES for problem in rule(ctx)]


def everywhere(variable, value, allowed) -> list[Problem]:
    return [Problem(variable, value, allowed, host) for host in HOSTS]


def test_the_defaults_of_the_cluster_scenario_pass():
    assert problems(context()) == []


def test_the_literal_defaults_are_the_roles():
    def load(role, folder):
        return yaml.safe_load((ROLES / role / folder / "main.yml").read_text(encoding="utf-8"))
    defaults, role_vars, contract = load("base", "defaults"), load("base", "vars"), load("cluster", "defaults")
    # /etc/hosts' two switches: base's defaults or the cluster contract's, wherever they are declared.
    assert {k: v for k, v in defaults.items() if k != "base_apt_components" and k not in CONTRACT} == {
        k: v for k, v in DEFAULTS.items() if k != "base_apt_components"}
    assert role_vars["base_apt_default_components"]["Debian"] == DEFAULTS["base_apt_components"]
    assert role_vars["base_supported_releases"] == DERIVED["base_supported_releases"]
    assert {k: {**contract, **defaults}[k] for k in CONTRACT} == CONTRACT
    assert set(base.VARIABLES) >= set(DERIVED) | set(CONTRACT)


# --- the cases of molecule/cluster/tests/test_bad_input.py that rules refuse ------------------------
# (manage-etc-hosts-maybe, ntp-servers-string and apt-components-string are the argument spec's.)

def test_timezone_unknown():
    found = problems(context(base_timezone="Mars/Olympus"))
    assert found == everywhere("base_timezone", "Mars/Olympus", base.ZONE_UNKNOWN)
    assert found[0].line() == ("dp1: base_timezone is 'Mars/Olympus': not a timezone known to tzdata on the node; "
                               "use a zone of /usr/share/zoneinfo such as Etc/UTC, Asia/Shanghai or Europe/Berlin")


def test_timezone_path():
    ctx = context(base_timezone="../../../etc/passwd")
    assert "paths" not in base.probe(ctx, "dp1")  # never looked up on the node
    found = problems(ctx)
    assert found == everywhere("base_timezone", "../../../etc/passwd", base.ZONE_NAME)
    assert found[0].line() == (
        "dp1: base_timezone is '../../../etc/passwd': not a timezone name: names such as Etc/UTC, Asia/Shanghai "
        "or America/Argentina/Buenos_Aires (letters, digits, _ + - and /, no '..', at most 64 characters)")


def test_timezone_200kb():
    ctx = context(base_timezone=HUGE)
    assert "paths" not in base.probe(ctx, "dp1")
    found = problems(ctx)
    assert found == everywhere("base_timezone", HUGE, base.ZONE_NAME)
    assert found[0].shown == "A" * 57 + "..."


def test_timezone_list():
    # The spec's str turned the list into "['Etc/UTC']"; the problem shows the value as written.
    ctx = context(base_timezone="['Etc/UTC']")
    for host in HOSTS:
        ctx.raw[host]["base_timezone"] = ["Etc/UTC"]
    found = problems(ctx)
    assert found == everywhere("base_timezone", ["Etc/UTC"], base.ZONE_NAME)
    assert found[0].line().startswith("dp1: base_timezone is '['Etc/UTC']': not a timezone name:")


def test_locale_unknown():
    found = problems(context(base_locale="xx_XX.UTF-8"))
    assert found == everywhere("base_locale", "xx_XX.UTF-8", base.LOCALE)
    assert found[0].line() == ("dp1: base_locale is 'xx_XX.UTF-8': not in the node's /usr/share/i18n/SUPPORTED, "
                               "so glibc cannot generate it (e.g. en_US.UTF-8, zh_CN.UTF-8, C.UTF-8)")


def test_apt_mirror_no_scheme():
    found = problems(context(base_apt_mirror="mirrors.example.cn/debian"))
    assert found == everywhere("base_apt_mirror", "mirrors.example.cn/debian", base.MIRROR)
    assert found[0].line() == ("dp1: base_apt_mirror is 'mirrors.example.cn/debian': not a usable apt mirror URL; "
                               "allowed: http://, https:// or file:// URLs (or empty for the node's own sources)")


def test_apt_security_mirror_ftp():
    found = problems(context(base_apt_security_mirror="ftp://ftp.example.cn/debian-security"))
    assert found == everywhere("base_apt_security_mirror", "ftp://ftp.example.cn/debian-security", base.MIRROR)


def test_apt_components_newline():
    found = problems(context(base_apt_components=["main\nTrusted: yes"]))
    assert found == everywhere("base_apt_components", "main\nTrusted: yes", base.WORDS["base_apt_components"])
    assert found[0].line() == ("dp1: base_apt_components is 'main\\nTrusted: yes': an entry is one word "
                               "(an archive component such as main), without spaces, newlines or other "
                               "control characters")


def test_ntp_servers_newline():
    found = problems(context(base_ntp_servers=["ntp.example.com\nallow all"]))
    assert found == everywhere("base_ntp_servers", "ntp.example.com\nallow all", base.WORDS["base_ntp_servers"])


def test_extra_package_not_a_name():
    found = problems(context(base_extra_packages=["vim; reboot"]))
    assert found == everywhere("base_extra_packages", "vim; reboot", base.PACKAGE)
    assert found[0].line() == ("dp1: base_extra_packages is 'vim; reboot': not a Debian package name; allowed: "
                               "lower-case letters, digits and + - . (optionally :arch and =version), "
                               "one package per entry")


def test_etc_hosts_group_unknown():
    found = problems(context(base_etc_hosts_group="computenodes"))
    assert found == everywhere("base_etc_hosts_group", "computenodes", GROUP_ALLOWED)
    assert found[0].line() == ("dp1: base_etc_hosts_group is 'computenodes': not a group of the inventory; "
                               "allowed: all, cluster, gpu, head, workers")


# --- distribution ---------------------------------------------------------------------------------

def test_an_unsupported_release_is_named_with_what_the_role_supports():
    ctx = context()
    ctx.facts["dp2"]["distribution"] = "Ubuntu"
    ctx.values["dp2"]["base_release"] = "20.04"
    ctx.facts["dp3"]["distribution"] = "Rocky"
    ctx.values["dp3"]["base_release"] = "9.4"
    allowed = "role base supports Debian 12; Ubuntu 22.04, 24.04"
    assert list(base._supported_release(ctx)) == [
        Problem("distribution", "Ubuntu 20.04", allowed, "dp2"), Problem("distribution", "Rocky 9.4", allowed, "dp3")]


def test_a_supported_ubuntu_passes_and_a_node_without_facts_is_not_judged():
    ctx = context(base_release="24.04")
    ctx.facts["dp1"]["distribution"] = "Ubuntu"
    ctx.facts["dp2"] = {}
    assert [p.node for p in base._supported_release(ctx)] == ["dp3"]


# --- apt mirrors ----------------------------------------------------------------------------------

@pytest.mark.parametrize("url", ["http://deb.debian.org/debian", "https://mirrors.tuna.tsinghua.edu.cn/debian",
                                 "file:///srv/mirror/debian", "https://user:secret@mirror.example.com/debian"])
def test_http_https_and_file_mirrors_pass(url):
    assert list(base._mirror_urls(context(base_apt_mirror=url, base_apt_security_mirror=url))) == []


@pytest.mark.parametrize("url", ["http://", "http://mirror.example.com/debian\nTrusted: yes",
                                 "http://mirror.example.com/de bian", "HTTP://mirror.example.com", "/srv/mirror"])
def test_other_mirrors_are_refused(url):
    assert list(base._mirror_urls(context(base_apt_mirror=url))) == everywhere("base_apt_mirror", url, base.MIRROR)


def test_a_refused_mirror_does_not_echo_its_password():
    found = list(base._mirror_urls(context(base_apt_security_mirror="ftp://admin:hunter2@mirror.example.com/x")))
    assert found == everywhere("base_apt_security_mirror", "ftp://***@mirror.example.com/x", base.MIRROR)
    assert "hunter2" not in found[0].line()


# --- timezone name and tzdata ---------------------------------------------------------------------

@pytest.mark.parametrize("zone", ["Etc/UTC", "UTC", "Asia/Shanghai", "America/Argentina/Buenos_Aires"])
def test_zones_of_the_nodes_tzdata_pass(zone):
    assert problems(context(base_timezone=zone)) == []


@pytest.mark.parametrize("zone", ["/etc/passwd", "Etc/UTC/", "Etc//UTC", "Etc/UTC\n", "Etc/UTC x", ".", "",
                                  "A" * 65])
def test_names_that_are_not_zone_names_are_refused_once_and_never_probed(zone):
    ctx = context(base_timezone=zone)
    assert "paths" not in base.probe(ctx, "dp1")
    assert problems(ctx) == everywhere("base_timezone", zone, base.ZONE_NAME)


def test_a_zone_name_of_64_characters_is_looked_up():
    zone = "Etc/" + "A" * 60
    assert problems(context(base_timezone=zone)) == everywhere("base_timezone", zone, base.ZONE_UNKNOWN)
    ctx = context(base_timezone=zone)
    ctx.probes = {h: answer(base.probe(ctx, h), zones=ZONES | {zone}) for h in HOSTS}
    assert problems(ctx) == []


def test_a_directory_of_tzdata_is_no_zone():
    ctx = context(base_timezone="Europe")
    assert base.probe(ctx, "dp1")["paths"] == ["/usr/share/zoneinfo/Europe", "/usr/share/zoneinfo/Europe/"]
    assert list(base._timezone_known(ctx)) == everywhere("base_timezone", "Europe", base.ZONE_UNKNOWN)


def test_a_zone_missing_on_one_node_is_named_on_that_node_and_an_unprobed_node_is_not_judged():
    ctx = context(base_timezone="Asia/Shanghai")
    ctx.probes["dp2"] = answer(base.probe(ctx, "dp2"), zones={"Etc/UTC"})
    ctx.probes["dp3"] = {}
    assert list(base._timezone_known(ctx)) == [Problem("base_timezone", "Asia/Shanghai", base.ZONE_UNKNOWN, "dp2")]


# --- list words and package names -----------------------------------------------------------------

@pytest.mark.parametrize("entry", ["main contrib", "main\t", "main\x7f", "\x00"])
def test_components_with_spaces_or_control_characters_are_refused(entry):
    found = list(base._list_words(context(base_apt_components=["main", entry])))
    assert found == everywhere("base_apt_components", entry, base.WORDS["base_apt_components"])


def test_ntp_servers_that_are_words_pass():
    assert list(base._list_words(context(base_ntp_servers=["ntp.example.com", "10.0.0.1", "fd00::1"]))) == []


@pytest.mark.parametrize("entry", ["g++", "python3-pip", "libc6:amd64", "nvidia-driver=535.183.01-1",
                                   "cuda-toolkit-12-4:amd64=12.4.1-1", "linux-image-amd64=6.1*"])
def test_debian_package_names_pass(entry):
    assert list(base._package_names(context(base_extra_packages=[entry]))) == []


@pytest.mark.parametrize("entry", ["vim git", "Vim", "a", "-vim", "vim\n", "vim=", "vim:AMD64", "../x.deb"])
def test_entries_that_are_not_package_names_are_refused(entry):
    found = list(base._package_names(context(base_extra_packages=[entry])))
    assert found == everywhere("base_extra_packages", entry, base.PACKAGE)


def test_a_bad_entry_of_base_packages_names_base_packages():
    found = list(base._package_names(context(base_packages=[*DEFAULTS["base_packages"], "rsync;reboot"])))
    assert found == everywhere("base_packages", "rsync;reboot", base.PACKAGE)


# --- /etc/hosts: the group and every node's address ------------------------------------------------

@pytest.mark.parametrize("manage", [False, "no", "false", 0])
def test_the_group_is_not_checked_when_etc_hosts_is_not_managed(manage):
    ctx = context(base_etc_hosts_group="computenodes", base_manage_etc_hosts=manage)
    assert list(base._etc_hosts_group(ctx)) == []
    assert list(base._etc_hosts_group(context(base_etc_hosts_group="all"))) == []


@pytest.mark.parametrize("manage", ["yes", "true", 1])
def test_manage_etc_hosts_is_read_as_ansibles_bool(manage):
    # Templated by the engine, not converted by base's spec (the switch is the cluster contract's).
    ctx = context(base_etc_hosts_group="computenodes", base_manage_etc_hosts=manage)
    assert list(base._etc_hosts_group(ctx)) == everywhere("base_etc_hosts_group", "computenodes", GROUP_ALLOWED)


def test_a_node_without_facts_or_address_is_named_once_by_itself():
    ctx = context()
    ctx.facts["dp3"] = {}
    found = list(base._node_addresses(ctx))
    assert found == [Problem("base_node_address", "", base.NO_ADDRESS, "dp3")]
    assert found[0].line() == ("dp3: base_node_address is '': the node has no address for /etc/hosts: gather its "
                               "facts (run against it, not only with --limit) or set base_node_address in its "
                               "host_vars")


def test_base_node_address_or_an_address_as_ansible_host_serves_without_facts():
    ctx = context()
    ctx.facts["dp2"], ctx.facts["dp3"] = {}, {}
    ctx.values["dp2"]["base_node_address"] = "10.231.2.12"
    ctx.values["dp3"]["ansible_host"] = "10.231.1.13"
    assert list(base._node_addresses(ctx)) == []
    ctx.values["dp3"]["ansible_host"] = "dp3.example.com"  # a name is no address
    assert list(base._node_addresses(ctx)) == [Problem("base_node_address", "", base.NO_ADDRESS, "dp3")]


def test_addresses_are_not_checked_outside_the_group_or_the_play_or_without_etc_hosts():
    ctx = context(base_etc_hosts_group="workers")
    ctx.facts["dp1"] = {}
    assert list(base._node_addresses(ctx)) == []  # dp1 is not a worker
    ctx = context()
    ctx.groups["cluster"].append("dp4")  # --limit: dp4 is not in the play, the engine has no values of it
    assert list(base._node_addresses(ctx)) == []
    ctx = context(base_manage_etc_hosts=False)
    ctx.facts["dp2"] = {}
    assert list(base._node_addresses(ctx)) == []


# --- a node without glibc's list, and odd input ---------------------------------------------------

def test_a_node_without_the_supported_file_is_not_judged_and_other_locales_pass():
    ctx = context(base_locale="xx_XX.UTF-8")
    ctx.probes["dp1"]["read"][base.SUPPORTED] = None
    del ctx.probes["dp2"]["read"]
    assert [p.node for p in base._locale_supported(ctx)] == ["dp3"]
    for locale in ("C.UTF-8", "en_US", "zh_CN.UTF-8"):
        assert list(base._locale_supported(context(base_locale=locale))) == []
    assert [p.node for p in base._locale_supported(context(base_locale="UTF-8"))] == HOSTS


def test_values_the_spec_refused_are_skipped():
    ctx = context(base_timezone="../x", base_locale="xx", base_apt_mirror="x", base_etc_hosts_group="nope")
    for host in ("dp1", "dp2"):
        for name in ("base_timezone", "base_locale", "base_apt_mirror", "base_manage_etc_hosts", "base_release"):
            del ctx.values[host][name]
    assert sorted({p.node for p in problems(ctx)}) == ["dp3"]


def test_odd_input_yields_problems_or_nothing_never_an_exception():
    ctx = context(base_timezone=["Etc/UTC"], base_locale={"a": 1}, base_apt_mirror=5, base_packages="vim",
                  base_apt_components=None, base_ntp_servers=[1, None], base_extra_packages=[None, {"a": 1}],
                  base_etc_hosts_group=["cluster"], base_supported_releases=["Debian"])
    ctx.facts = {"dp1": {"distribution": ["Debian"], "default_ipv4": "10.0.0.1"}}
    ctx.probes = {"dp1": None, "dp2": {"paths": ["x"], "read": {base.SUPPORTED: 5}, "markers": ["/.dockerenv"]}}
    found = problems(ctx)
    assert {p.variable for p in found} == {"base_timezone", "base_apt_mirror", "base_extra_packages"}
    empty = Context(hosts=["dp1"], groups={}, values={})
    assert problems(empty) == []
    assert base.probe(empty, "dp1") == {"read": [base.SUPPORTED]}
