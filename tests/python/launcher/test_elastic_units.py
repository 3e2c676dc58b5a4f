"""Unit tests of flockrun --elastic without MPI: discovery, the world plan, the
elastic options and the supervisor driven by a fake launch function.
"""

import json
import os
import time

import pytest

from flockrun import cli, elastic_files
from flockrun.discovery import (DiscoveryError, FixedDiscovery, ScriptDiscovery, check_script,
                                parse_discovery_output)
from flockrun.elastic_driver import ElasticSupervisor
from flockrun.elastic_options import ElasticSettings, elastic_settings
from flockrun.elastic_plan import LaunchResult, World, change_of, choose_world
from flockrun.errors import LaunchError
from flockrun.hosts import Host


def world(spec):
    """World from "a:2,b:1"."""
    return World(tuple(Host(n, int(s)) for n, s in (e.split(":") for e in spec.split(","))))


# parse_discovery_output --------------------------------------------------------


def test_discovery_output_hosts_with_and_without_slots():
    text = "node1:4\nnode2\n10.0.0.3:2\nme@node-4.lan:1\n"
    assert parse_discovery_output(text, 3, "s") == [
        Host("node1", 4), Host("node2", 3), Host("10.0.0.3", 2), Host("me@node-4.lan", 1)]


def test_discovery_output_skips_comments_and_blank_lines():
    text = "# hosts up now\n\n  a:2   # the big one\n   \n#b:8\nc\r\n"
    assert parse_discovery_output(text, 1, "s") == [Host("a", 2), Host("c", 1)]


def test_discovery_output_host_named_twice_adds_slots():
    assert parse_discovery_output("a:2\nb\na:3\na\n", 2, "s") == [Host("a", 7), Host("b", 2)]


def test_empty_discovery_output_is_no_host():
    assert parse_discovery_output("", 1, "s") == []
    assert parse_discovery_output("# nothing\n\n", 1, "s") == []


@pytest.mark.parametrize("bad", ["a;4", "host:0", "host:x", "two words", "host:", ":3",
                                 "host:-1", "host:1:2", "host:\u00b2"])
def test_discovery_output_garbage_names_line_and_text(bad):
    text = f"good:2\n# comment\n{bad}\nlater:1\n"
    with pytest.raises(DiscoveryError) as err:
        parse_discovery_output(text, 1, "script 'x'")
    message = str(err.value)
    assert "line 3" in message and repr(bad) in message and "script 'x'" in message


# ScriptDiscovery and check_script ----------------------------------------------


def script(tmp_path, body, name="hosts.sh", mode=0o755):
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(mode)
    return str(path)


def test_script_discovery_parses_what_the_script_prints(tmp_path):
    found = ScriptDiscovery(script(tmp_path, "echo a:2\necho '# c'\necho b\n"), 4).find()
    assert found == [Host("a", 2), Host("b", 4)]


def test_script_failure_gives_status_and_last_stderr_line(tmp_path):
    path = script(tmp_path, "echo a:2\necho early >&2\necho 'the last words' >&2\nexit 3\n")
    with pytest.raises(DiscoveryError) as err:
        ScriptDiscovery(path, 1).find()
    message = str(err.value)
    assert "status 3" in message and message.endswith("the last words")
    assert "early" not in message and path in message


def test_script_failure_without_stderr_says_so(tmp_path):
    with pytest.raises(DiscoveryError, match=r"status 1: \(nothing on stderr\)"):
        ScriptDiscovery(script(tmp_path, "exit 1\n"), 1).find()


def test_script_that_hangs_times_out(tmp_path):
    discovery = ScriptDiscovery(script(tmp_path, "exec sleep 20\n"), 1, timeout_s=0.5)
    start = time.monotonic()
    with pytest.raises(DiscoveryError, match="did not finish within"):
        discovery.find()
    assert time.monotonic() - start < 5


def test_script_printing_garbage_is_a_discovery_error(tmp_path):
    with pytest.raises(DiscoveryError, match=r"'a b' on line 2"):
        ScriptDiscovery(script(tmp_path, "echo a:1\necho 'a b'\n"), 1).find()


def test_not_executable_script_is_refused(tmp_path):
    path = script(tmp_path, "echo a\n", mode=0o644)
    with pytest.raises(DiscoveryError, match="is not executable"):
        check_script(path)
    with pytest.raises(DiscoveryError, match="cannot run"):
        ScriptDiscovery(path, 1).find()


def test_check_script_missing_and_good(tmp_path):
    with pytest.raises(DiscoveryError, match="does not exist"):
        check_script(str(tmp_path / "nope.sh"))
    check_script(script(tmp_path, "echo a\n"))
    check_script(None)


def test_fixed_discovery_fills_in_default_slots():
    assert FixedDiscovery([Host("a", None), Host("b", 3)], 2).find() == [
        Host("a", 2), Host("b", 3)]


# choose_world, World, change_of --------------------------------------------------

OFFER = [Host("a", 2), Host("b", 2), Host("c", 2)]


def test_choose_world_fills_up_to_max_np():
    assert choose_world(OFFER, 5) == world("a:2,b:2,c:1")
    assert choose_world(OFFER, 100) == world("a:2,b:2,c:2")
    assert choose_world([], 4) == World(())


def test_choose_world_keeps_current_hosts_first():
    assert choose_world(OFFER, 4, current=world("c:2,b:1")) == world("c:2,b:2")


def test_choose_world_leaves_excluded_host_out_when_others_suffice():
    assert choose_world(OFFER, 4, excluded={"a"}) == world("b:2,c:2")
    assert choose_world(OFFER, 4, excluded={"b"}, current=world("a:2,b:2")) == world("a:2,c:2")


def test_choose_world_leaves_out_excluded_hosts_while_the_rest_reach_min_np():
    assert choose_world(OFFER, 6, excluded={"a"}) == world("b:2,c:2")
    assert choose_world(OFFER, 6, excluded={"a"}, min_np=4) == world("b:2,c:2")
    assert choose_world(OFFER, 6, excluded={"a"}, min_np=5) == world("a:2,b:2,c:2")
    assert choose_world(OFFER[:1], 2, excluded={"a"}) == world("a:2")


def test_world_host_spec_and_host_of_rank():
    w = world("a:2,b:1,c:3")
    assert w.size == 6 and w.host_spec() == "a:2,b:1,c:3"
    assert [w.host_of_rank(r) for r in range(7)] == ["a", "a", "b", "c", "c", "c", None]


def test_change_host_removed_is_a_shrink_naming_it():
    change = change_of(world("a:2,b:2"), [Host("a", 2), Host("c", 4)], 4)
    assert change.kind == "shrink" and "host b" in change.reason
    assert "no longer offered" in change.reason


def test_change_fewer_slots_is_a_shrink():
    change = change_of(world("a:2,b:2"), [Host("a", 2), Host("b", 1)], 4)
    assert change.kind == "shrink" and "host b now offers 1 slots" in change.reason


def test_change_more_slots_below_max_np_is_a_grow():
    change = change_of(world("a:2"), [Host("a", 2), Host("b", 2)], 3)
    assert change.kind == "grow" and "3 slots" in change.reason


def test_no_change_at_max_np_or_same_hosts():
    assert change_of(world("a:2,b:2"), OFFER, 4) is None
    assert change_of(world("a:2"), [Host("a", 2)], 8) is None


# elastic_settings from the command line -------------------------------------------


def settings_of(*argv):
    return elastic_settings(cli.make_parser().parse_args(cli.split_command(list(argv))[0]))


def test_elastic_defaults(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    s = settings_of("--elastic", "-np", "4", "python", "train.py")
    assert (s.min_np, s.max_np, s.discovery_script, s.slots_per_host) == (4, 4, None, 1)
    assert (s.reset_limit, s.timeout_s) == (10, 600.0)
    assert s.directory == os.path.join(os.getcwd(), ".flock-elastic")


def test_elastic_sizes_and_values():
    s = settings_of("--elastic", "-np", "4", "--min-np", "2", "--max-np", "8",
                    "--reset-limit", "0", "--elastic-dir", "/x/d", "--elastic-timeout", "1.5",
                    "--slots-per-host", "3", "prog")
    assert (s.min_np, s.max_np, s.reset_limit, s.directory) == (2, 8, 0, "/x/d")
    assert (s.timeout_s, s.slots_per_host) == (1.5, 3)
    assert settings_of("--elastic", "-np", "4", "--min-np", "2", "p").max_np == 4
    assert settings_of("--min-np", "1", "--max-np", "3", "--elastic", "p").min_np == 1


def test_no_elastic_gives_none():
    assert settings_of("-np", "2", "prog") is None


@pytest.mark.parametrize("argv, words", [
    (["-np", "2", "--min-np", "1"], "--min-np is an elastic option: add --elastic"),
    (["-np", "2", "--elastic-dir", "d"], "--elastic-dir is an elastic option: add --elastic"),
    (["--elastic", "--min-np", "4", "--max-np", "2"], "--max-np 2 is below --min-np 4"),
    (["--elastic", "-np", "8", "--min-np", "2", "--max-np", "4"], "-np 8 is outside"),
    (["--elastic", "-np", "1", "--min-np", "2", "--max-np", "4"], "-np 1 is outside"),
    (["--elastic"], "needs -np N, or --min-np and --max-np"),
    (["--elastic", "--min-np", "2"], "needs -np N"),
    (["--elastic", "-np", "0", "--min-np", "0"], "--min-np must be at least 1"),
    (["--elastic", "-np", "2", "--host-discovery-script", "s", "-H", "a:2"], "not both"),
    (["--elastic", "-np", "2", "--reset-limit", "-1"], "--reset-limit must be 0 or more"),
    (["--elastic", "-np", "2", "--elastic-timeout", "0"], "--elastic-timeout must be a pos"),
    (["--elastic", "-np", "2", "--discovery-interval", "-1"], "--discovery-interval must"),
    (["--elastic", "-np", "2", "--removal-grace", "nan"], "--removal-grace must"),
    (["--elastic", "-np", "2", "--slots-per-host", "0"], "--slots-per-host must be 1 or more"),
])
def test_elastic_option_errors(argv, words):
    with pytest.raises(LaunchError) as err:
        settings_of(*argv, "prog")
    assert words in str(err.value)


# ElasticSupervisor with a fake launch ------------------------------------------------


def make_settings(tmp_path, min_np=2, max_np=4, reset_limit=3, timeout_s=5.0, grace=30.0):
    return ElasticSettings(min_np=min_np, max_np=max_np, discovery_script=None,
                           slots_per_host=1, reset_limit=reset_limit, directory=str(tmp_path),
                           timeout_s=timeout_s, discovery_interval_s=0.05,
                           removal_grace_s=grace)


class FakeLaunch:
    """Returns the given results in order; records (world, launch id) of each call.
    A result may be a function of (world, launch_id, tick) instead."""

    def __init__(self, *results):
        self.results, self.calls = list(results), []

    def __call__(self, world_, launch_id, tick):
        self.calls.append((world_, launch_id))
        result = self.results.pop(0)
        return result(world_, launch_id, tick) if callable(result) else result


def supervise(tmp_path, hosts, fake, **settings):
    discovery = FixedDiscovery(hosts, 1)
    return ElasticSupervisor(make_settings(tmp_path, **settings), discovery, fake).run()


def test_failure_then_success_relaunches_without_the_failed_host(tmp_path):
    fake = FakeLaunch(LaunchResult(1, failed_rank=2, failed_host="b"), LaunchResult(0))
    assert supervise(tmp_path, OFFER, fake) == 0
    assert fake.calls == [(world("a:2,b:2"), 1), (world("a:2,c:2"), 2)]


def test_failed_host_is_kept_when_the_others_are_too_few(tmp_path):
    fake = FakeLaunch(LaunchResult(1, failed_rank=2, failed_host="b"), LaunchResult(0))
    assert supervise(tmp_path, OFFER[:2], fake, min_np=3) == 0
    assert [w for w, _ in fake.calls] == [world("a:2,b:2")] * 2


def test_reset_limit_gives_up_with_the_failure_status(tmp_path):
    fake = FakeLaunch(*[LaunchResult(7, failed_rank=0, failed_host="a")] * 3)
    assert supervise(tmp_path, OFFER, fake, reset_limit=1) == 7
    assert [launch for _, launch in fake.calls] == [1, 2]


def test_restart_request_relaunches_and_is_not_a_failure(tmp_path):
    def restart(world_, launch_id, tick):
        path = os.path.join(str(tmp_path), elastic_files.RESTART_FILE)
        with open(path, "w", encoding="utf-8") as handle:
            json.dump({"launch": launch_id}, handle)
        return LaunchResult(0)

    fake = FakeLaunch(restart, LaunchResult(0))
    assert supervise(tmp_path, OFFER, fake, reset_limit=0) == 0
    assert [launch for _, launch in fake.calls] == [1, 2]


def test_restart_file_of_another_launch_means_done(tmp_path):
    def stale(world_, launch_id, tick):
        (tmp_path / elastic_files.RESTART_FILE).write_text(json.dumps({"launch": 99}))
        return LaunchResult(0)

    fake = FakeLaunch(stale, LaunchResult(0))
    assert supervise(tmp_path, OFFER, fake) == 0
    assert len(fake.calls) == 1


def test_cannot_start_stops_at_once(tmp_path):
    fake = FakeLaunch(LaunchResult(127, cannot_start=True), LaunchResult(0))
    assert supervise(tmp_path, OFFER, fake) == 127
    assert len(fake.calls) == 1


def test_too_few_slots_gives_up_after_the_elastic_timeout(tmp_path):
    fake = FakeLaunch(LaunchResult(0))
    start = time.monotonic()
    with pytest.raises(LaunchError, match="--min-np 3 slots"):
        supervise(tmp_path, [Host("a", 2)], fake, min_np=3, timeout_s=0.5)
    assert 0.5 <= time.monotonic() - start < 5
    assert fake.calls == []


class FakeMpirun:
    def __init__(self):
        self.terminated = False

    def poll(self):
        return 143 if self.terminated else None

    def terminate(self):
        self.terminated = True


def test_removed_host_is_asked_to_reset_then_stopped_after_the_grace(tmp_path):
    discovery = FixedDiscovery(OFFER[:2], 1)
    seen = {}

    def lose_b(world_, launch_id, tick):
        discovery.hosts = [Host("a", 2)]
        mpirun, deadline = FakeMpirun(), time.monotonic() + 10
        while not mpirun.terminated and time.monotonic() < deadline:
            tick(mpirun, time.monotonic())
            time.sleep(0.02)
        seen.update(json.loads((tmp_path / elastic_files.CONTROL_FILE).read_text()))
        return LaunchResult(143, failed_rank=2, failed_host="b")

    fake = FakeLaunch(lose_b, LaunchResult(0))
    settings = make_settings(tmp_path, min_np=2, max_np=4, reset_limit=0, grace=0.3)
    assert ElasticSupervisor(settings, discovery, fake).run() == 0
    assert seen["launch"] == 1 and seen["reset"] == "shrink" and "host b" in seen["reason"]
    assert fake.calls == [(world("a:2,b:2"), 1), (world("a:2"), 2)]


# cli.main with --elastic -----------------------------------------------------------


def test_main_refuses_elastic_dry_run(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["--elastic", "-np", "2", "--dry-run", "true"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("flockrun: error: ") and "--dry-run" in err
    assert not (tmp_path / ".flock-elastic").exists()


def test_main_refuses_an_elastic_dir_that_is_not_writable(capsys, tmp_path):
    (tmp_path / "file").write_text("not a directory")
    bad = tmp_path / "file" / "sub"
    assert cli.main(["--elastic", "-np", "2", "--elastic-dir", str(bad), "true"]) == 2
    err = capsys.readouterr().err
    assert "not writable" in err and str(bad) in err
