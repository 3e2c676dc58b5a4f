"""Running a command that starts a job (flockrun, mpirun) so that a timeout leaves nothing.

``subprocess.run(timeout=...)`` kills only the process it started: mpirun and the ranks
would live on and take the two cores the rest of the suite needs. ``run_session`` starts
the command in a session of its own and, on timeout, ends every process of that session
(flockrun.processes: SIGTERM, then SIGKILL) before raising ``subprocess.TimeoutExpired``,
like ``subprocess.run`` does. When the command ends by itself, the result's
``leftovers`` holds the processes of its session still running (the ranks of a job
that did not end them all), for the tests that check nothing is left behind.
"""

import subprocess

from flockrun import processes


def run_session(argv, timeout, **kwargs):
    """subprocess.run(argv, capture_output=True, text=True, ...) in a session of its own."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, **kwargs)
    leader = processes.identify(proc.pid)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        members = processes.session_members(leader) if leader is not None else set()
        processes.end_processes([members], grace=5.0)
        out, err = proc.communicate()
        raise subprocess.TimeoutExpired(argv, timeout, output=out, stderr=err) from None
    result = subprocess.CompletedProcess(argv, proc.returncode, out, err)
    result.leftovers = processes.session_members(leader) if leader is not None else set()
    return result
