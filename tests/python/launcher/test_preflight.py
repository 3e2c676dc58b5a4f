"""Unit tests of the checks made before mpirun starts: the program, the hosts.

The host probes run a fake launch agent (a shell script), never ssh to a
real machine; each has a bounded timeout.
"""

import os
import signal
import threading
import time

import pytest

from flockrun import hostcheck
from flockrun.errors import LaunchError
from flockrun.hostcheck import (SKIP_HINT, RemoteStart, check_hosts, failure_message,
                                launch_agent, probe_argv, remote_hosts, remote_start)
from flockrun.hosts import Host
from flockrun.program import ProgramError, check_program, python_script, ranks_directory

# program -------------------------------------------------------------------------


@pytest.mark.parametrize("args, script", [
    (["train.py", "--lr", "1"], "train.py"),
    (["-u", "-X", "dev", "-W", "ignore", "train.py"], "train.py"),
    (["-OO", "-Wignore", "-Xdev", "t.py"], "t.py"),
    (["--check-hash-based-pycs", "never", "t.py"], "t.py"),
    (["-c", "print(1)"], None), (["-uc", "print(1)"], None), (["-m", "pytest"], None),
    (["-mpytest"], None), (["-"], None), ([], None), (["-u", "--", "-odd.py"], "-odd.py"),
])
def test_python_script_finds_the_script_argument(args, script):
    assert python_script(args) == script


FILES = {"/w/train.py", "/w/run.sh", "/w/data.txt", "/usr/bin/python3"}
EXECUTABLE = {"/w/run.sh", "/usr/bin/python3"}


def check(command, found=True):
    check_program(command, "/usr/bin", "/w",
                  which=lambda name, path: f"/usr/bin/{name}" if found else None,
                  isfile=FILES.__contains__, executable=EXECUTABLE.__contains__)


def test_existing_programs_and_scripts_pass():
    check(["python3", "train.py", "--lr", "1"])
    check(["./run.sh"])
    check(["/usr/bin/python3", "-c", "pass"])
    check(["python3", "-m", "no.such.module"])  # the module is Python's to find


@pytest.mark.parametrize("command, found, status, words", [
    (["nosuchcommand"], False, 127, "nosuchcommand: command not found on PATH"),
    (["python3", "nosuchfile.py"], True, 127,
     "python3: can't open file 'nosuchfile.py': no such file (in /w)"),
    (["./missing.sh"], True, 127, "./missing.sh: no such file"),
    (["./data.txt"], True, 126, "./data.txt: not executable"),
])
def test_missing_or_unrunnable_programs_are_refused(command, found, status, words):
    with pytest.raises(ProgramError) as error:
        check(command, found)
    assert error.value.status == status and str(error.value).startswith(words)


@pytest.mark.parametrize("mpi_args, directory", [
    ([], "/w"), (["-wdir", "/data/run"], "/data/run"), (["--wdir", "sub"], "/w/sub"),
    (["-wd", "../x"], "/x"), (["--wd", "a", "--bind-to", "core", "-wd", "b"], "/w/b"),
    (["--mca", "x", "-wdir"], "/w"),  # no value: mpirun's own error
])
def test_ranks_directory_is_mpiruns_working_directory_option(mpi_args, directory):
    assert ranks_directory(mpi_args, "/w") == directory


def test_a_script_is_looked_for_in_the_ranks_directory():
    check_program(["python3", "train.py"], "/usr/bin", ranks_directory(["-wd", "/w"], "/"),
                  which=lambda name, path: f"/usr/bin/{name}", isfile=FILES.__contains__,
                  executable=EXECUTABLE.__contains__)


# hosts: pure parts -------------------------------------------------------------------


def test_remote_hosts_skip_local_names_and_repeats():
    hosts = [Host("localhost", 2), Host("me@node1", 1), Host("node2", 2),
             Host("me@node1", 1), Host("MYHOST", 1)]
    assert remote_hosts(hosts, {"localhost", "myhost"}) == ["me@node1", "node2"]


def test_probe_runs_the_agent_as_mpirun_would():
    assert probe_argv(RemoteStart(), "node1") == [
        "ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5", "node1", "true"]
    assert probe_argv(RemoteStart("ssh -p 2222"), "n") == [
        "ssh", "-p", "2222", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5", "n", "true"]
    assert probe_argv(RemoteStart("/opt/agent.sh --quiet"), "h1") == [
        "/opt/agent.sh", "--quiet", "h1", "true"]


def test_probe_adds_mpiruns_agent_arguments_after_the_agents_words():
    assert probe_argv(RemoteStart(None, ("-p", "2222")), "n") == [
        "ssh", "-p", "2222", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5", "n", "true"]
    assert probe_argv(RemoteStart("agent -q", ("-v",)), "h1") == ["agent", "-q", "-v", "h1",
                                                                  "true"]


def test_launch_agent_follows_mpiruns_precedence():
    env = {"OMPI_MCA_plm_rsh_agent": "from-env"}
    assert launch_agent(None, [], {}) is None
    assert launch_agent(None, [], env) == "from-env"
    assert launch_agent("flockrun's", [], env) == "flockrun's"
    assert launch_agent("flockrun's", ["--mca", "plm_rsh_agent", "user's"], env) == "user's"


def test_agent_arguments_come_from_mpi_args_else_the_variable_split_at_spaces():
    env = {"OMPI_MCA_plm_rsh_args": " -p  2222 "}
    assert remote_start(None, [], {}) == RemoteStart(None, ())
    assert remote_start(None, [], env) == RemoteStart(None, ("-p", "2222"))
    assert remote_start("a", ["-mca", "plm_rsh_args", "-i key"], env) == RemoteStart(
        "a", ("-i", "key"))


def test_failure_message_is_one_line_naming_each_host_and_the_way_around():
    assert SKIP_HINT == "(--no-host-check skips this check)"
    assert failure_message([("a", "why")], "-H") == f"cannot reach host 'a' (-H): why {SKIP_HINT}"
    assert failure_message([("a", "x"), ("b", "y")], "hostfile h") == (
        f"cannot reach 2 hosts (hostfile h): 'a': x; 'b': y {SKIP_HINT}")


# hosts: probes with a fake agent ----------------------------------------------------

AGENT = """#!/bin/sh
case "$1" in
  good*) [ "$2" = true ] && exit 0 ;;
  slow*) exec sleep 30 ;;
esac
echo "agent: first words" >&2
echo "agent: no host named $1" >&2
exit 255
"""


@pytest.fixture
def agent(tmp_path):
    path = tmp_path / "agent.sh"
    path.write_text(AGENT)
    path.chmod(0o755)
    return str(path)


def test_reachable_hosts_pass_and_local_ones_are_not_probed(agent):
    assert check_hosts([Host("good1", 2), Host("good2", 2)], "-H", RemoteStart(agent),
                       {"localhost"}) == []
    check_hosts([Host("localhost", 2)], "-H", RemoteStart(agent + " --fail-everything"),
                {"localhost"})


def test_unreachable_host_is_reported_with_the_agents_last_words(agent):
    with pytest.raises(LaunchError) as error:
        check_hosts([Host("good1", 1), Host("h9", 1)], "-H", RemoteStart(agent), set())
    message = str(error.value)
    assert message.startswith("cannot reach host 'h9' (-H): agent: no host named h9 (")
    assert "\n" not in message and "good1" not in message


def test_a_host_that_does_not_answer_is_reported_after_the_timeout(agent, monkeypatch):
    monkeypatch.setattr(hostcheck, "PROBE_TIMEOUT_S", 0.5)
    start = time.monotonic()
    with pytest.raises(LaunchError, match=r"2 hosts \(-H\): 'slow1': no answer within 0.5 s"):
        check_hosts([Host("slow1", 1), Host("slow2", 1)], "-H", RemoteStart(agent), set())
    assert time.monotonic() - start < 5  # probed at once, not one after the other


def test_a_missing_agent_is_reported():
    with pytest.raises(LaunchError, match="cannot run /no/such/agent"):
        check_hosts([Host("h1", 1)], "-H", RemoteStart("/no/such/agent"), set())


def test_with_ssh_a_name_that_does_not_resolve_is_an_unknown_host(monkeypatch):
    monkeypatch.setattr(hostcheck._Checks, "probe",
                        lambda self, host: hostcheck._Verdict("ssh failed"))
    with pytest.raises(LaunchError) as error:
        check_hosts([Host("no-such-host.invalid", 1)], "-H", RemoteStart(), set())
    assert str(error.value) == ("cannot reach host 'no-such-host.invalid' (-H): unknown "
                                f"host, the name does not resolve {SKIP_HINT}")


def test_with_ssh_an_address_of_this_machine_is_not_probed(monkeypatch):
    def probe(self, host):
        raise AssertionError(f"{host} was probed")
    monkeypatch.setattr(hostcheck._Checks, "probe", probe)
    check_hosts([Host("127.0.0.2", 2), Host(os.uname().nodename.upper(), 1)], "-H",
                RemoteStart(), set())


def test_an_interrupt_ends_the_running_probes_at_once(tmp_path):
    # Ctrl-C while probes hang: the KeyboardInterrupt comes through at once (not
    # after PROBE_TIMEOUT_S), and the probes (their whole sessions) are gone.
    pids = tmp_path / "pids"
    agent = tmp_path / "hanging.sh"
    agent.write_text(f"#!/bin/sh\necho $$ >> {pids}\nexec sleep 30\n")
    agent.chmod(0o755)
    main = threading.get_ident()

    def interrupt_once_both_probes_run():
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and (
                not pids.exists() or len(pids.read_text().split()) < 2):
            time.sleep(0.02)
        signal.pthread_kill(main, signal.SIGINT)

    interrupter = threading.Thread(target=interrupt_once_both_probes_run)
    interrupter.start()
    began = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            check_hosts([Host("h1", 1), Host("h2", 1)], "-H", RemoteStart(str(agent)), set())
    finally:
        interrupter.join()
    assert time.monotonic() - began < hostcheck.PROBE_TIMEOUT_S / 2
    for pid in pids.read_text().split():
        assert not os.path.exists(f"/proc/{pid}") or \
            open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z"


def test_the_agent_gets_mpiruns_agent_arguments(tmp_path):
    agent = tmp_path / "agent.sh"  # reaches a host only through "port 2222"
    agent.write_text('#!/bin/sh\n[ "$1 $2 $4" = "-p 2222 true" ] && exit 0\n'
                     'echo "agent: connection refused" >&2\nexit 255\n')
    agent.chmod(0o755)
    check_hosts([Host("h1", 1)], "-H", RemoteStart(str(agent), ("-p", "2222")), set())
    with pytest.raises(LaunchError, match="agent: connection refused"):
        check_hosts([Host("h1", 1)], "-H", RemoteStart(str(agent)), set())


FAKE_SSH = """#!/bin/sh
case "$*" in
  *locked*) echo "me@locked: Permission denied (publickey,password)." >&2 ;;
  *) echo "ssh: connect to host $5 port 22: Connection refused" >&2 ;;
esac
exit 255
"""


@pytest.fixture
def fake_ssh(tmp_path, monkeypatch):
    (tmp_path / "ssh").write_text(FAKE_SSH)
    (tmp_path / "ssh").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    return RemoteStart("ssh")


def test_a_login_that_wants_a_password_is_a_warning_when_ssh_can_ask(fake_ssh):
    warnings = check_hosts([Host("locked", 1)], "-H", fake_ssh, set(), can_prompt=True)
    assert warnings == [
        "ssh to host 'locked' (-H) needs a password or key passphrase: me@locked: Permission "
        "denied (publickey,password). (ssh -o BatchMode=yes -o ConnectTimeout=5 locked true); "
        f"mpirun's ssh may ask for it here {SKIP_HINT}"]


def test_a_login_that_wants_a_password_is_an_error_when_nobody_can_answer(fake_ssh):
    with pytest.raises(LaunchError, match=r"'locked' \(-H\): me@locked: Permission denied"):
        check_hosts([Host("locked", 1)], "-H", fake_ssh, set(), can_prompt=False)


def test_other_ssh_failures_stay_errors_even_with_a_terminal(fake_ssh):
    with pytest.raises(LaunchError, match="Connection refused"):
        check_hosts([Host("locked", 1), Host("down", 1)], "-H", fake_ssh, set(),
                    can_prompt=True)
