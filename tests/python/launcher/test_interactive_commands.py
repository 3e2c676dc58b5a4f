"""flock-interactive without a cluster: its command lines, arguments and files.

The command lines are compared as whole lists, like flockrun's; the CLI tests
call main() with --dry-run or on a profile in a temporary IPYTHONDIR. Nothing
here needs ipyparallel or MPI (tests/python/single/test_interactive.py starts
real clusters).
"""

import os
import sys

import pytest

from flockrun.command import LaunchOptions
from flockrun.errors import LaunchError
from flockrun.interactive import VALUE_OPTIONS, main
from flockrun.interactive_commands import (StartRequest, controller_argv, controller_ip,
                                           engine_mpirun_argv)
from flockrun.interactive_state import ClusterRecord, EngineRecord, Profile
from flockrun.options import glue_values
from flockrun.processes import ProcessId

MPIRUN = "/usr/bin/mpirun"
PY = "/venv/bin/python"
NAMES = frozenset({"localhost", "127.0.0.1", "myhost"})
ENGINE = [PY, "-m", "flockrun.interactive_engine", "--profile=flock",
          "--IPEngine.auto_create=True"]


def request(num_proc=4, profile="flock", ip=None, **launch):
    return StartRequest(launch=LaunchOptions(num_proc=num_proc, command=(), **launch),
                        profile=profile, controller_ip=ip)


def engines_argv(req, env=None, cpu_count=2, euid=1000):
    return engine_mpirun_argv(req, python=PY, env={"PATH": "/usr/bin"} if env is None else env,
                              cpu_count=cpu_count, euid=euid, mpirun=MPIRUN,
                              local_hostnames=NAMES, cwd="/home/me")


def test_controller_runs_in_the_same_python_on_the_profile_dir():
    assert controller_argv(PY, "/h/.ipython/profile_flock", "127.0.0.1") == [
        PY, "-m", "ipyparallel.controller", "--profile-dir=/h/.ipython/profile_flock",
        "--ip=127.0.0.1"]


def test_engines_get_flockruns_mpirun_line_with_the_connection_variable():
    assert engines_argv(request()) == [
        MPIRUN, "-np", "4", "--bind-to", "none", "--oversubscribe", "--mca",
        "mpi_yield_when_idle", "1", "-x", "PATH", "-x", "FLOCK_INTERACTIVE_CONNECTION",
        *ENGINE]


def test_engines_as_root_on_listed_hosts_with_ipythondir_forwarded():
    env = {"PATH": "/usr/bin", "IPYTHONDIR": "/shared/ipython", "FLOCK_LOG_LEVEL": "info"}
    argv = engines_argv(request(host_spec="node1:2,node2:2", env_vars=("OMP_NUM_THREADS=1",)),
                        env=env, euid=0)
    assert argv == [
        MPIRUN, "--allow-run-as-root", "-np", "4", "-H", "node1:2,node2:2", "--bind-to", "none",
        "-x", "FLOCK_LOG_LEVEL", "-x", "PATH", "-x", "OMP_NUM_THREADS=1", "-x", "IPYTHONDIR",
        "-x", "FLOCK_INTERACTIVE_CONNECTION", *ENGINE]


def test_users_own_ipythondir_export_is_kept_once():
    argv = engines_argv(request(env_vars=("IPYTHONDIR=/elsewhere",)),
                        env={"PATH": "/usr/bin", "IPYTHONDIR": "/here"})
    assert argv.count("IPYTHONDIR=/elsewhere") == 1 and "IPYTHONDIR" not in argv


@pytest.mark.parametrize("launch, message", [
    ({"env_vars": ("FLOCK_INTERACTIVE_CONNECTION=x",)}, "set by flock-interactive"),
    ({"host_spec": "node1:1"}, "more ranks than the 1 slot"),
])
def test_bad_requests_are_refused_before_anything_starts(launch, message):
    with pytest.raises(LaunchError, match=message):
        engines_argv(request(**launch))


def test_a_command_is_refused():
    req = StartRequest(launch=LaunchOptions(num_proc=2, command=("python",)), profile="flock")
    with pytest.raises(LaunchError, match="give no command"):
        engines_argv(req)


@pytest.mark.parametrize("launch, ip, expected", [
    ({}, None, "127.0.0.1"),
    ({"host_spec": "localhost:4"}, None, "127.0.0.1"),
    ({"host_spec": "myhost:2,node2:2"}, None, "*"),
    ({"host_spec": "node1:4"}, "10.0.0.5", "10.0.0.5"),
])
def test_controller_listens_on_loopback_unless_a_host_is_elsewhere(launch, ip, expected):
    assert controller_ip(request(ip=ip, **launch), NAMES) == expected


def test_option_values_may_start_with_a_dash():
    assert glue_values(["start", "-np", "2", "--mpi-args", "--tag-output", "--verbose"],
                       VALUE_OPTIONS) == [
        "start", "-np=2", "--mpi-args=--tag-output", "--verbose"]


def test_dry_run_prints_both_command_lines(tmp_path, capsys):
    env = {"PATH": os.environ["PATH"], "IPYTHONDIR": str(tmp_path)}
    code = main(["start", "-np", "3", "--profile", "p1", "--mpi-args", "--tag-output",
                 "--dry-run"], environ=env)
    lines = capsys.readouterr().out.splitlines()
    assert code == 0 and len(lines) == 2
    assert lines[0] == (f"{sys.executable} -m ipyparallel.controller "
                        f"--profile-dir={tmp_path}/profile_p1 --ip=127.0.0.1")
    assert lines[1].split()[0].endswith("mpirun") and "-np 3" in lines[1]
    assert lines[1].endswith(f"--tag-output {sys.executable} -m flockrun.interactive_engine "
                             "--profile=p1 --IPEngine.auto_create=True")
    assert not os.listdir(tmp_path)  # nothing started, nothing written


@pytest.mark.parametrize("argv, message", [
    (["start", "-np", "0"], "-np must be at least 1"),
    (["start", "-np", "2", "--timeout", "0"], "--timeout must be positive"),
    (["start", "-np", "2", "--timeout", "-1"], "--timeout must be positive"),
    (["start", "-np", "2", "--profile", "a/b"], "bad profile name"),
    (["start", "-np", "2", "-H", "a:1,b:x"], "bad host entry"),
])
def test_usage_errors_exit_2(argv, message, capsys, tmp_path):
    assert main(argv + ["--dry-run"], environ={"PATH": os.environ["PATH"],
                                               "IPYTHONDIR": str(tmp_path)}) == 2
    assert message in capsys.readouterr().err


def test_missing_ipyparallel_is_named(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "ipyparallel", None)  # import now fails
    assert main(["start", "-np", "2"], environ={"PATH": os.environ["PATH"],
                                                 "IPYTHONDIR": str(tmp_path)}) == 1
    assert "needs ipyparallel (Debian: apt install python3-ipyparallel" in capsys.readouterr().err


def test_profile_dir_follows_ipythondir_then_home():
    assert Profile("flock", {"IPYTHONDIR": "/x/ipy"}).dir == "/x/ipy/profile_flock"
    assert Profile("b", {"HOME": "/home/u"}).dir == "/home/u/.ipython/profile_b"


def test_record_survives_a_round_trip(tmp_path):
    record = ClusterRecord(profile="flock", num_proc=2, controller=ProcessId(10, 100),
                           mpirun=ProcessId(11, 101), ready=True, engines=[
                               EngineRecord(rank=0, host="h", pid=12, start_time=102,
                                            local=True, nannies=[ProcessId(13, 103)])])
    profile = Profile("flock", {"IPYTHONDIR": str(tmp_path)})
    profile.make_dirs()
    profile.save_record(record)
    assert profile.load_record() == record


def test_a_second_start_or_stop_waits_for_the_lock(tmp_path):
    profile = Profile("flock", {"IPYTHONDIR": str(tmp_path)})
    with profile.lock():
        with pytest.raises(LaunchError, match="another flock-interactive start or stop"):
            with profile.lock():
                pass
    with profile.lock():  # released
        pass


def test_stop_and_status_without_a_cluster(tmp_path, capsys):
    env = {"IPYTHONDIR": str(tmp_path)}
    assert main(["stop"], environ=env) == 0
    assert main(["status"], environ=env) == 1
    assert capsys.readouterr().out.count("no cluster is running for profile 'flock'") == 2


def test_stop_clears_the_record_of_a_cluster_that_died(tmp_path, capsys):
    """A record naming processes that are gone (a reboot, a crash): stop forgets it."""
    env = {"IPYTHONDIR": str(tmp_path)}
    profile = Profile("flock", env)
    profile.make_dirs()
    gone = ProcessId(os.getpid(), 1)  # this pid, but another start time: not the same process
    profile.save_record(ClusterRecord(profile="flock", num_proc=2, controller=gone,
                                      mpirun=gone, ready=True))
    for path in profile.connection_files:
        open(path, "w").close()
    assert main(["status"], environ=env) == 1
    assert "gone (was pid" in capsys.readouterr().out
    assert main(["stop"], environ=env) == 0
    assert "0 local process(es) ended" in capsys.readouterr().out
    assert not any(os.path.exists(p) for p in [profile.record_path] + profile.connection_files)
