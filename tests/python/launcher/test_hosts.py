"""Unit tests for flockrun.hosts and flockrun.machine (no MPI)."""

import os
import socket

import pytest

from flockrun.errors import LaunchError
from flockrun.hosts import (Host, all_local, parse_host_spec, parse_hostfile,
                            read_hostfile, total_slots)
from flockrun.machine import local_core_count, local_hostnames

# -H host specs ------------------------------------------------------------


def test_host_spec_with_slots():
    assert parse_host_spec("a:4,b:2") == [Host("a", 4), Host("b", 2)]


def test_host_spec_slots_default_to_one_like_openmpi():
    assert parse_host_spec("a,b:3") == [Host("a", 1), Host("b", 3)]


def test_host_spec_accepts_addresses_user_prefix_and_spaces():
    assert parse_host_spec("10.0.0.1:2, me@node-2.lan:8") == [
        Host("10.0.0.1", 2), Host("me@node-2.lan", 8)]


@pytest.mark.parametrize("spec, bad", [
    ("a:", "a:"), ("a:0", "a:0"), ("a:-1", "a:-1"), ("a:x", "a:x"),
    ("a:1:2", "a:1:2"), ("a:2,,b", ""), (",a", ""), ("a;4", "a;4"),
    ("a:2,b c:1", "b c:1"), (":4", ":4"),
])
def test_host_spec_errors_name_the_bad_entry(spec, bad):
    with pytest.raises(LaunchError) as err:
        parse_host_spec(spec)
    assert f"bad host entry {bad!r}" in str(err.value)


def test_empty_host_spec_is_an_error():
    with pytest.raises(LaunchError, match="empty host list"):
        parse_host_spec(" ")


# hostfiles ------------------------------------------------------------------

HOSTFILE = """\
# cluster of two
node1 slots=4      # the big one

node2 slots=2 max_slots=4
node3
"""


def test_hostfile_lines_comments_and_blank_lines():
    assert parse_hostfile(HOSTFILE) == [
        Host("node1", 4), Host("node2", 2), Host("node3", None)]


def test_hostfile_accepts_max_slots_alone_and_dash_spelling():
    assert parse_hostfile("a max-slots=2\nb max_slots=3") == [
        Host("a", None), Host("b", None)]


@pytest.mark.parametrize("line, words", [
    ("a slots=0", "bad field 'slots=0'"),
    ("a slots=x", "bad field 'slots=x'"),
    ("a slots", "bad field 'slots'"),
    ("a cpus=4", "bad field 'cpus=4'"),
    ("a slots=4 max_slots=2", "max_slots=2 is below slots=4"),
    ("a;b slots=1", "bad host name 'a;b'"),
])
def test_hostfile_errors_name_file_and_line(line, words):
    with pytest.raises(LaunchError) as err:
        parse_hostfile("# header\n" + line, source="hosts.txt")
    assert str(err.value).startswith("hosts.txt line 2: ")
    assert words in str(err.value)


def test_hostfile_without_hosts_is_an_error():
    with pytest.raises(LaunchError, match="lists no hosts"):
        parse_hostfile("# nothing\n\n", source="hosts.txt")


def test_read_hostfile(tmp_path):
    path = tmp_path / "hosts"
    path.write_text("localhost slots=2\n")
    assert read_hostfile(str(path)) == [Host("localhost", 2)]


def test_read_hostfile_names_the_file_in_parse_errors(tmp_path):
    path = tmp_path / "hosts"
    path.write_text("a slots=none\n")
    with pytest.raises(LaunchError, match=r"hostfile '.*hosts' line 1"):
        read_hostfile(str(path))


@pytest.mark.parametrize("name", ["missing", "."])
def test_unreadable_hostfile_is_a_launch_error(tmp_path, name):
    with pytest.raises(LaunchError, match="cannot read hostfile"):
        read_hostfile(str(tmp_path / name))


# slots and locality ---------------------------------------------------------


def test_total_slots_adds_repeated_hosts():
    assert total_slots([Host("a", 2), Host("b", 1), Host("a", 3)]) == 6


def test_total_slots_unknown_when_a_host_has_no_count():
    assert total_slots([Host("a", 2), Host("b", None)]) is None


LOCAL = {"localhost", "127.0.0.1", "myhost"}


@pytest.mark.parametrize("names, expected", [
    (["localhost"], True),
    (["127.0.0.1", "MyHost", "me@localhost"], True),
    (["localhost", "node2"], False),
    (["node2"], False),
])
def test_all_local(names, expected):
    assert all_local([Host(n, 1) for n in names], LOCAL) is expected


def test_local_core_count_is_plausible():
    assert 1 <= local_core_count() <= (os.cpu_count() or 1)


def test_local_hostnames_include_loopback_and_hostname():
    names = local_hostnames()
    assert {"localhost", "127.0.0.1"} <= names
    assert socket.gethostname().lower() in names
