"""Unit tests of flockrun's command line: splitting it, main() and its exit statuses.

No MPI here: main() runs with an injected PATH lookup, mostly with --dry-run
(tests/python/launcher/test_command.py tests the argv builder itself).
"""

import os
import shlex

import pytest

from flockrun import cli
from flockrun.cli import main, split_command
from test_command import MPIRUN, RSH, network

ROOT = ["--allow-run-as-root"] if os.geteuid() == 0 else []
RELAY = ["--tag-output", "--display-map"]  # main() relays the output


def test_program_arguments_are_untouched():
    assert split_command(["-np", "2", "python", "train.py", "--lr", "0.1",
                          "-x"]) == (["-np=2"], ["python", "train.py",
                                                  "--lr", "0.1", "-x"])


def test_option_values_starting_with_a_dash_are_kept():
    assert split_command(["--mpi-args", "--tag-output", "-x", "A=-1",
                          "--dry-run", "prog"]) == (
        ["--mpi-args=--tag-output", "-x=A=-1", "--dry-run"], ["prog"])


def test_network_and_rsh_agent_values_may_start_with_a_dash():
    assert split_command(["--network-interface", "-eth0", "--rsh-agent",
                          "-agent", "prog"]) == (
        ["--network-interface=-eth0", "--rsh-agent=-agent"], ["prog"])


def test_double_dash_ends_flockrun_options():
    assert split_command(["-n", "2", "--", "-weird", "x"]) == (
        ["-n=2"], ["-weird", "x"])


def test_main_dry_run_prints_the_argv(capsys):
    code = main(["--num-proc", "1", "-x", "BAR=1", "--mpi-args",
                 "--tag-output", "--dry-run", "prog", "a b"],
                environ={"PATH": "/bin"}, which=lambda *_, **__: MPIRUN)
    out = capsys.readouterr().out
    assert code == 0 and out.endswith("\n")
    assert shlex.split(out) == [MPIRUN, *ROOT, "-np", "1", "--bind-to", "none",
                                "-x", "PATH", "-x", "BAR=1", "--tag-output",
                                "prog", "a b"]


def test_main_passes_network_and_rsh_agent(capsys):
    code = main(["-np", "1", "--network-interface", "eth1",
                 "--network-interface", "10.0.0.0/8", "--rsh-agent",
                 "-agent -v", "--dry-run", "prog"],
                environ={"PATH": "/bin"}, which=lambda *_, **__: MPIRUN)
    assert code == 0
    assert shlex.split(capsys.readouterr().out) == [
        MPIRUN, *ROOT, "-np", "1", "--bind-to", "none",
        *network("eth1,10.0.0.0/8"), *RSH, "-agent -v", *RELAY, "-x", "PATH", "prog"]


def test_main_takes_the_defaults_from_its_environment(capsys):
    environ = {"PATH": "/bin", "FLOCK_NETWORK_INTERFACE": "lo",
               "FLOCK_RSH_AGENT": "agent"}
    code = main(["-np", "1", "--dry-run", "prog"], environ=environ,
                which=lambda *_, **__: MPIRUN)
    assert code == 0
    assert shlex.split(capsys.readouterr().out) == [
        MPIRUN, *ROOT, "-np", "1", "--bind-to", "none", *network("lo"), *RSH,
        "agent", *RELAY, "-x", "FLOCK_NETWORK_INTERFACE", "-x", "FLOCK_RSH_AGENT",
        "-x", "PATH", "prog"]


def test_main_rejects_a_bad_variable_with_status_2(capsys):
    code = main(["-np", "1", "prog"],
                environ={"PATH": "/bin", "FLOCK_NETWORK_INTERFACE": "a b"},
                which=lambda *_, **__: MPIRUN)
    assert code == 2
    assert capsys.readouterr().err.startswith(
        "flockrun: error: bad FLOCK_NETWORK_INTERFACE 'a b'")


@pytest.mark.parametrize("argv, words", [
    (["-np", "2", "prog"], "mpirun not found on PATH"),
    (["-np", "2"], "missing command"),
    (["prog"], "-np N is required"),
    (["-np", "0", "prog"], "at least 1"),
    (["-np", "3", "-H", "a:1,b", "prog"], "the 2 slot(s)"),
    (["-np", "2", "-H", "a:1,:2", "prog"], "bad host entry ':2'"),
    (["-np", "2", "--hostfile", "/no/such/file", "prog"], "cannot read"),
    (["-np", "two", "prog"], "invalid int value"),
    (["-np", "2", "--no-such-option", "prog"], "unrecognized arguments"),
    (["-np", "2", "--network-interface", "eth 0", "prog"],
     "bad --network-interface 'eth 0'"),
    (["-np", "2", "--network-interface", "-10.0.0.0/8", "prog"],
     "'-10.0.0.0/8' is neither an interface name nor a subnet"),
    (["-np", "2", "--rsh-agent", "", "prog"], "bad --rsh-agent ''"),
])
def test_main_errors_exit_2_with_flockrun_error(capsys, argv, words):
    found = None if words.startswith("mpirun") else MPIRUN
    try:
        code = main(argv, environ={"PATH": "/nowhere"},
                    which=lambda *_args, **_kwargs: found)
    except SystemExit as exc:  # argparse's own errors exit from inside
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("flockrun: error: ") and words in err


def test_help_env_lists_flock_settings_and_flockruns_own(capsys):
    pytest.importorskip("flock._core")
    assert main(["--help-env"]) == 0
    out = capsys.readouterr().out
    assert "FLOCK_LOG_LEVEL" in out and "FLOCK_FUSION_THRESHOLD" in out
    for name in ("FLOCK_NETWORK_INTERFACE", "FLOCK_RSH_AGENT", "FLOCK_TAG_OUTPUT"):
        assert f"\n{name} " in out


def test_main_dry_run_shows_the_relay_and_tag_output_options(capsys):
    code = main(["-np", "1", "--tag-output", "--dry-run", "prog"],
                environ={"PATH": "/bin"}, which=lambda *_, **__: MPIRUN)
    assert code == 0
    assert shlex.split(capsys.readouterr().out) == [
        MPIRUN, *ROOT, "-np", "1", "--bind-to", "none", *RELAY, "-x", "PATH", "prog"]


def test_version_names_flock_and_mpirun(capsys):
    flock = pytest.importorskip("flock")
    assert main(["--version"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"flock {flock.__version__} (")
    assert out[1].startswith("mpirun (Open MPI) ")


def test_version_without_mpirun_says_so(capsys):
    assert main(["--version"], which=lambda *_, **__: None) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "mpirun: not found on PATH"


def test_ctrl_c_before_mpirun_starts_is_one_line_and_status_130(capsys, monkeypatch):
    def interrupted(*_args):
        raise KeyboardInterrupt
    monkeypatch.setattr(cli, "check_before_start", interrupted)
    code = main(["-np", "1", "prog"], environ={"PATH": "/bin"},
                which=lambda *_, **__: MPIRUN)
    assert (code, capsys.readouterr().err) == (130, "flockrun: interrupted\n")


def test_host_check_warnings_are_printed_and_the_job_starts(capsys, monkeypatch):
    monkeypatch.setattr(cli, "check_hosts", lambda *_args, **_kwargs: ["a warning"])
    monkeypatch.setattr(cli, "run_with_relay", lambda *_args: 0)
    code = main(["-np", "2", "-H", "a:1,b:1", "prog"], environ={"PATH": "/bin"},
                which=lambda *_, **__: MPIRUN)
    assert (code, capsys.readouterr().err) == (0, "flockrun: warning: a warning\n")
