"""End-to-end tests of what flockrun shows: whole lines, rank tags, one summary
when a rank fails, one line when the program or a host is missing.

The ranks run plain Python (no flock import); every flockrun has a timeout and
is stopped with everything it started if it overruns (test_end_to_end.flockrun).
"""

import itertools
import re
import shutil
import signal
import subprocess
import sys
import threading

import pytest

from test_end_to_end import TIMEOUT, flockrun, stop_session

pytestmark = pytest.mark.skipif(shutil.which("mpirun") is None,
                                reason="needs OpenMPI's mpirun on PATH")

# Each rank writes LINES lines to stdout (every third to stderr), each with one
# os.write of less than PIPE_BUF bytes, so that a line never waits half-written:
# whatever the load, the relay never has to write a line unfinished (after
# PARTIAL_LINE_WAIT_S), and every line must come out whole. (mpirun still cuts
# lines where its reads end; the relay puts them back together.)
WHOLE_LINES_WRITER = """
import os, random, select, time
rank = int(os.environ["OMPI_COMM_WORLD_RANK"])
rng = random.Random(rank)
for i in range({lines}):
    data = ("r%d-l%d:" % (rank, i) + "abcd"[rank % 4] * rng.randint(1, 4000) + "\\n").encode()
    assert len(data) < select.PIPE_BUF
    os.write(2 if i % 3 == 0 else 1, data)
    if rng.random() < 0.2:
        time.sleep(0.001)
"""

# The same lines, but each cut into pieces written one os.write at a time, with
# short pauses at random: the relay joins the pieces. A rank descheduled mid-line
# for longer than PARTIAL_LINE_WAIT_S gets its line written unfinished (that is
# the relay's rule for prompts), so this test checks what holds whatever the timing.
CHOPPED_WRITER = """
import os, random, time
rank = int(os.environ["OMPI_COMM_WORLD_RANK"])
rng = random.Random(rank)
for i in range({lines}):
    data = ("r%d-l%d:" % (rank, i) + "abcd"[rank % 4] * rng.randint(1, 6000) + "\\n").encode()
    fd = 2 if i % 3 == 0 else 1
    while data:
        cut = rng.randint(1, 2500)
        os.write(fd, data[:cut])
        data = data[cut:]
        if rng.random() < 0.2:
            time.sleep(0.001)
"""

LINE_RE = re.compile(r"^(\[(\d)\]<(stdout|stderr)>:)?r(\d)-l(\d+):([abcd]+)$")


def indices_on(stream, lines):
    """The line numbers the writers send to stream."""
    return [i for i in range(lines) if (i % 3 == 0) == (stream == "stderr")]


def check_whole_lines(text, stream, num_proc, lines, tagged):
    """Every line of every rank arrived whole, in order, tagged when asked."""
    seen = {rank: [] for rank in range(num_proc)}
    for line in text.splitlines():
        match = LINE_RE.match(line)
        assert match, f"a broken or foreign line on {stream}: {line[:100]!r}"
        tag, tag_rank, tag_stream, rank, index, body = match.groups()
        assert bool(tag) == tagged
        if tagged:
            assert (int(tag_rank), tag_stream) == (int(rank), stream)
        assert set(body) == {"abcd"[int(rank) % 4]}
        seen[int(rank)].append(int(index))
    for rank in range(num_proc):
        assert seen[rank] == indices_on(stream, lines)


def check_never_mixed(text, stream, num_proc, lines):
    """Tagged output where a line may have been written in pieces: each terminal line
    holds one rank's text; a rank's pieces, joined, are its lines in order, and each
    of its lines starts a terminal line."""
    pieces = {rank: [] for rank in range(num_proc)}
    for line in text.splitlines():
        match = re.fullmatch(rf"\[(\d)\]<{stream}>:(.*)", line)
        assert match, f"an untagged line on {stream}: {line[:100]!r}"
        pieces[int(match.group(1))].append(match.group(2))
    for rank, parts in pieces.items():
        joined = "".join(parts)
        starts = set(itertools.accumulate(len(part) for part in parts))
        found = list(re.finditer(rf"r{rank}-l(\d+):{'abcd'[rank % 4]}+", joined))
        assert "".join(m.group(0) for m in found) == joined, f"rank {rank}: foreign text"
        assert [int(m.group(1)) for m in found] == indices_on(stream, lines)
        assert all(m.start() in starts | {0} for m in found), f"rank {rank}: lines joined"


@pytest.mark.parametrize("how", ["option", "variable", "untagged"])
def test_lines_of_four_ranks_never_interleave(launcher_env, how):
    lines = 60
    args = ["-np", "4", sys.executable, "-c", WHOLE_LINES_WRITER.format(lines=lines)]
    if how == "option":
        args.insert(2, "--tag-output")
    elif how == "variable":
        launcher_env["FLOCK_TAG_OUTPUT"] = "1"
    code, out, err = flockrun(args, launcher_env, timeout=120)
    assert code == 0, err[-2000:]
    check_whole_lines(out, "stdout", 4, lines, tagged=how != "untagged")
    check_whole_lines(err, "stderr", 4, lines, tagged=how != "untagged")


def test_lines_written_in_pieces_are_joined_and_never_mixed(launcher_env):
    lines = 60
    code, out, err = flockrun(["-np", "4", "--tag-output", sys.executable, "-c",
                               CHOPPED_WRITER.format(lines=lines)], launcher_env, timeout=120)
    assert code == 0, err[-2000:]
    check_never_mixed(out, "stdout", 4, lines)
    check_never_mixed(err, "stderr", 4, lines)


# Rank 1 fails once every rank runs: mpirun names a rank that fails earlier only
# by its status (test_report.py covers that message).
FAILS_ON_RANK_1 = """
import os, signal, sys, time
rank, size = int(os.environ["OMPI_COMM_WORLD_RANK"]), int(os.environ["OMPI_COMM_WORLD_SIZE"])
started = os.environ["STARTED_DIR"]  # an empty directory; each rank adds a file
open(os.path.join(started, str(rank)), "w").close()
print("rank %d working" % rank, flush=True)
if rank == 1:
    deadline = time.time() + 20
    while len(os.listdir(started)) < size and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)
    print("about to fail", file=sys.stderr, flush=True)
    {how}
time.sleep(60)
"""


@pytest.mark.parametrize("how, status, words", [
    ("sys.exit(3)", 3, "exited with status 3"),
    ("os.kill(os.getpid(), signal.SIGKILL)", 137, "was killed by signal 9 (SIGKILL)"),
], ids=["exit-3", "sigkill"])
def test_a_failed_rank_gets_one_summary_instead_of_mpiruns_boxes(launcher_env, tmp_path, how,
                                                                  status, words):
    launcher_env["STARTED_DIR"] = str(tmp_path)
    code, out, err = flockrun(
        ["-np", "3", sys.executable, "-c", FAILS_ON_RANK_1.format(how=how)], launcher_env)
    assert code == status, err
    assert sorted(out.splitlines()) == ["rank 0 working", "rank 1 working", "rank 2 working"]
    lines = err.splitlines()
    assert lines[:3] == [
        "about to fail",
        f"flockrun: rank 1 (host {host_of_this_machine()}) {words}; mpirun stopped the "
        "other ranks",
        "flockrun: last lines of rank 1:"]
    # stdout and stderr come through two pipes: their lines may swap
    assert sorted(lines[3:]) == ["    about to fail", "    rank 1 working"]


def test_verbose_shows_mpiruns_own_report_too(launcher_env, tmp_path):
    launcher_env["STARTED_DIR"] = str(tmp_path)
    code, out, err = flockrun(["-np", "2", "--verbose", sys.executable, "-c",
                               FAILS_ON_RANK_1.format(how="sys.exit(3)")], launcher_env)
    assert code == 3
    assert "mpirun detected that one or more processes exited with non-zero status" in err
    assert "flockrun: rank 1 (host" in err and "Data for node:" in out  # the job map


def own_address():
    """An address of this machine other than loopback, or None."""
    said = subprocess.run(["hostname", "-I"], capture_output=True, text=True).stdout.split()
    return next((a for a in said if "." in a and not a.startswith("127.")), None)


def host_of_this_machine():
    return subprocess.run(["hostname"], capture_output=True, text=True).stdout.strip()


@pytest.mark.parametrize("command, status, message", [
    (["nosuchcommand"], 127, "flockrun: error: nosuchcommand: command not found on PATH"),
    ([sys.executable, "nosuchfile.py"], 127,
     f"flockrun: error: {sys.executable}: can't open file 'nosuchfile.py': no such file"),
    (["./not_executable"], 126, "flockrun: error: ./not_executable: not executable"),
])
def test_a_missing_program_gets_one_line_and_its_own_status(launcher_env, tmp_path,
                                                            command, status, message):
    (tmp_path / "not_executable").write_text("#!/bin/sh\n")
    code, out, err = flockrun(["-np", "2", *command], launcher_env, cwd=tmp_path)
    assert (code, out) == (status, "")
    assert len(err.splitlines()) == 1 and err.startswith(message), err


@pytest.mark.parametrize("option", ["-wdir", "--wd"])
def test_the_program_is_looked_for_in_mpiruns_working_directory(launcher_env, tmp_path,
                                                                 option):
    work = tmp_path / "work"
    work.mkdir()
    (work / "hello.py").write_text("import os\nprint('hello from', os.getcwd())\n")
    code, out, err = flockrun(["-np", "1", "--mpi-args", f"{option} work", sys.executable,
                               "hello.py"], launcher_env, cwd=tmp_path)
    assert (code, out) == (0, f"hello from {work}\n"), err


def test_a_program_missing_on_a_host_is_read_from_mpiruns_report(launcher_env):
    # -H names this machine by its address only, so flockrun does not check the
    # program itself: mpirun's "unable to find" box becomes one line.
    address = own_address()
    if address is None:
        pytest.skip("this machine has no address but loopback")
    code, out, err = flockrun(["-np", "1", "-H", f"{address}:1", "--mpi-args", "--mca "
                               "plm_rsh_agent false", "nosuchcommand"], launcher_env)
    assert code == 127 and "-----" not in err, err
    assert err.splitlines()[-1].startswith(
        "flockrun: error: cannot start 'nosuchcommand' on host ")


def test_an_unreachable_host_is_one_line_before_mpirun_starts(launcher_env, tmp_path):
    agent = tmp_path / "agent.sh"
    agent.write_text("#!/bin/sh\necho \"agent: there is no host $1\" >&2\nexit 255\n")
    agent.chmod(0o755)
    marker = tmp_path / "ran"
    code, out, err = flockrun(["-np", "2", "-H", "localhost:1,nodex:1", "--rsh-agent",
                               str(agent), "touch", str(marker)], launcher_env)
    assert (code, out) == (2, "")
    assert err.startswith("flockrun: error: cannot reach host 'nodex' (-H): agent: there is "
                          "no host nodex (") and len(err.splitlines()) == 1
    assert not marker.exists()
    code, _, err = flockrun(["-np", "2", "-H", "localhost:1,nodex:1", "--rsh-agent",
                             str(agent), "--no-host-check", "--dry-run", "true"],
                            launcher_env)
    assert code == 0, err


def test_interrupted_job_says_so_and_exits_128_plus_the_signal(launcher_env):
    sleeper = "import os, time; os.write(1, b'up\\n'); time.sleep(60)"
    proc = subprocess.Popen(
        [sys.executable, "-m", "flockrun", "-np", "2", sys.executable, "-c", sleeper],
        env=launcher_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True)
    watchdog = threading.Timer(TIMEOUT, stop_session, (proc,))
    watchdog.start()
    try:
        assert [proc.stdout.readline() for _ in range(2)] == ["up\n", "up\n"]
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=TIMEOUT)
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            stop_session(proc)
    assert proc.returncode == 130
    assert err.splitlines() == ["flockrun: stopped by SIGINT; mpirun ended the ranks"]


def test_users_own_output_format_gets_mpiruns_output_untouched(launcher_env, tmp_path):
    launcher_env["STARTED_DIR"] = str(tmp_path)
    code, out, err = flockrun(["-np", "2", "--mpi-args", "--tag-output", sys.executable, "-c",
                               FAILS_ON_RANK_1.format(how="sys.exit(3)")], launcher_env)
    assert code == 3
    assert "[1,1]<stdout>:rank 1 working" in out  # mpirun's own tags (which may cut lines)
    assert "mpirun detected that one or more processes exited with non-zero status" in err
    assert "flockrun:" not in err
