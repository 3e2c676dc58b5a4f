"""The topology advisor's cost model against hand-computed cases: the bytes on each
machine link (docs/performance/scaling.md's table), the overlap rule, a whole
prediction and its choice, rates, the CLI and bad input."""

import json

import pytest

import flock.topology as tu
from flock.errors import FlockInvalidArgumentError
from flock.topology import _advisor as model
from flock.topology.advise import main, parse_rate


@pytest.mark.parametrize("method, per_link, hosts", [
    ("allreduce", 1.75, 4), ("one_peer", 5 / 3, 4), ("hierarchical", 2, 4),
    ("hierarchical_one_peer", 1, 4), ("exponential", 5, 4), ("ring", 2, 4),
    ("allreduce", 1.5, 2), ("one_peer", 1.5, 2), ("hierarchical", 1, 2),
    ("hierarchical_one_peer", 1, 2), ("exponential", 3, 2)])
def test_bytes_on_the_busiest_machine_link(method, per_link, hosts):
    cluster = model.Cluster(2 * hosts, 2, intra=1.0, inter=1.0)
    traffic = model.METHODS[method](cluster, 1.0)[0]
    assert traffic.link_bytes == pytest.approx(per_link)


def test_overlap_hides_communication_behind_part_of_the_compute():
    assert model.step_seconds(1.0, 0.5, 1 / 3) == pytest.approx(1.0 + 0.5 - 1 / 3)
    assert model.step_seconds(1.0, 0.2, 1 / 3) == 1.0  # hidden entirely
    assert model.step_seconds(1.0, 0.5, 0.0) == 1.5


def test_a_whole_prediction_by_hand():
    # 2 machines x 2 ranks; the tensor takes 1 s on a machine link, 12.5 ms locally.
    size, s, inter, intra = 4, 125e6, 125e6, 1e10
    advice = tu.advise(size, 2, intra, inter, s, 0.3, eps=1e-3, overlap=0.0, latency_s=0.0)
    found = {c.method: c for c in advice.candidates}
    # Ring allreduce: 2 (n-1)/n = 1.5 tensors through the machine's ring edge.
    assert found["allreduce"].step_s == pytest.approx(0.3 + 1.5)
    assert found["allreduce"].steps == 1
    # Hierarchical one-peer: local ring (S locally), then S to the other machine; the
    # two machines average exactly, so one step reaches any eps.
    assert found["hierarchical_one_peer"].communication_s == pytest.approx(1.0)
    assert found["hierarchical_one_peer"].time_to_eps_s == pytest.approx(1.3)
    # With two machines the static machine graph is the same exchange: a tie.
    assert found["hierarchical"].time_to_eps_s == pytest.approx(1.3)
    assert advice.choice in ("hierarchical", "hierarchical_one_peer")
    assert advice.fastest_step in ("hierarchical", "hierarchical_one_peer")
    # The static exponential graph of 4 ranks: |lambda_2| = 1/3 (uniform weights over
    # self and distances 1, 2), ceil(log 1e-3 / log 1/3) = 7 steps.
    assert found["exponential"].rate == pytest.approx(
        tu.second_largest_eigenvalue_modulus(tu.ExponentialTwoGraph(4)))
    assert found["exponential"].steps == 7


def test_one_peer_rate_is_per_step_over_its_period():
    advice = tu.advise(16, 1, 1e10, 1e9, 1e6, 0.01, methods=["one_peer"])
    (one_peer,) = advice.candidates
    assert one_peer.rate == pytest.approx(0.0, abs=1e-6)  # 16 = 2^4: exact after a period
    assert one_peer.steps == 4


def test_rates_parse():
    assert parse_rate("10gbit") == 1.25e9
    assert parse_rate("1.25GB/s") == 1.25e9
    assert parse_rate("100mbit") == 12.5e6
    assert parse_rate(5e8) == 5e8
    with pytest.raises(FlockInvalidArgumentError, match="cannot read the rate"):
        parse_rate("fast")


@pytest.mark.parametrize("kwargs, message", [
    (dict(size=10, local_size=4), "multiple of local_size"),
    (dict(eps=1.5), "eps must lie"),
    (dict(inter=0), "inter must be a rate"),
    (dict(overlap=2), "overlap"),
    (dict(methods=["gossip"]), "unknown methods")])
def test_bad_input_is_named(kwargs, message):
    args = dict(size=8, local_size=2, intra="100gbit", inter="1gbit", bytes_per_step=1e6,
                compute_s=0.1)
    args.update(kwargs)
    with pytest.raises(FlockInvalidArgumentError, match=message):
        tu.advise(**args)


def test_cli_prints_a_table_and_a_choice(capsys):
    assert main(["--size", "64", "--local-size", "8", "--inter", "10gbit", "--intra",
                 "100gbit", "--model", "resnet50"]) == 0
    out = capsys.readouterr().out
    assert "recommended:" in out and "| hierarchical_one_peer |" in out
    assert main(["--size", "8", "--local-size", "2", "--inter", "1gbit", "--intra", "10gbit",
                 "--bytes", "1e8", "--compute-ms", "100", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["choice"] in {c["method"] for c in found["candidates"]}
    assert main(["--size", "8", "--local-size", "2", "--inter", "1gbit", "--intra", "1gbit"]) == 2
