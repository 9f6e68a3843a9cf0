"""lockstep.gpu.listen_address_problems: a listen address is written before
':<port>' (Prometheus, the node and DCGM exporters), so it must be an
address and nothing more (issue 29, finding 4: '0.0.0.0:9090' rendered
--web.listen-address=0.0.0.0:9090:9090 and Prometheus never started).
"""

from __future__ import annotations

import pytest
from ansible_collections.lockstep.gpu.plugins.filter.addresses import listen_address_problems

VARIABLE = "monitoring_prometheus_listen_address"


@pytest.mark.parametrize("value", ["", "0.0.0.0", "10.231.0.11", "127.0.0.1", "[::]", "[fd00::5]", "[::1]"])
def test_addresses_pass(value):
    assert listen_address_problems({VARIABLE: value}) == []


@pytest.mark.parametrize("value", ["0.0.0.0:9090", "::", "fd00::5", "[10.0.0.1]", "10.0.0.0/24", "localhost",
                                   "0.0.0.0 --web.enable-admin-api", "999.1.1.1", 9090, None, ["0.0.0.0"]])
def test_anything_else_is_named_with_its_variable_and_what_is_allowed(value):
    problems = listen_address_problems({VARIABLE: value})
    assert len(problems) == 1
    assert problems[0].startswith(f"{VARIABLE} is '")
    assert "no port (the port is its own variable)" in problems[0]


def test_every_bad_value_is_named_in_the_order_of_the_variables():
    problems = listen_address_problems({"b_listen": "x", "a_listen": "0.0.0.0:1", "c_listen": "0.0.0.0"})
    assert [p.split(" is ", maxsplit=1)[0] for p in problems] == ["a_listen", "b_listen"]
