"""The hosts added to errors that report a failed rank (flock/_rank_hosts.py), without MPI."""

import pytest

from flock import _rank_hosts


@pytest.fixture(autouse=True)
def hosts_of_a_job():
    saved = (_rank_hosts._hosts, _rank_hosts._own_rank)
    _rank_hosts.remember(["h1", "h1", "h2", "h2"], own_rank=1)
    yield
    _rank_hosts._hosts, _rank_hosts._own_rank = saved


@pytest.mark.parametrize("message,ranks", [
    ("'g' stalled for 2 s: ranks 2, 3 never submitted it", [2, 3]),
    ("neighbor_allreduce 'n' stalled for 2 s waiting for ranks [3] (FLOCK_STALL_SHUTDOWN_S)", [3]),
    ("flock was shut down on rank 0; collective ops can no longer complete", [0]),
    ("'x': rank 2 shut down before its part of this call with rank 1", [2, 1]),
    ("submitted by ranks 0, 1 but not by ranks 2 and 3", [0, 1, 2, 3]),
    ("ranks disagree on the dtype", []),
])
def test_named_ranks(message, ranks):
    assert _rank_hosts.named_ranks(message) == ranks


def test_the_host_of_every_other_rank_named_is_added():
    message = "'x': rank 2 shut down before its part of this call with rank 1"
    assert _rank_hosts.with_hosts(message) == message + " [rank 2 is on host h2]"
    assert _rank_hosts.with_hosts("'g' stalled for 2 s: ranks 0, 3 never submitted it") == (
        "'g' stalled for 2 s: ranks 0, 3 never submitted it "
        "[rank 0 is on host h1, rank 3 on host h2]")


def test_messages_naming_no_other_known_rank_are_left_alone():
    for message in ("the transport failed on rank 1 while sending", "rank 9 is not in this job",
                    "flock has been shut down"):
        assert _rank_hosts.with_hosts(message) == message
