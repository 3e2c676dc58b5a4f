"""Runs pytest on one rank of a flockrun job.

    flockrun -np 4 python tests/python/mpi_pytest.py OUT_DIR [pytest args...]

Rank 0 reports on the terminal and writes OUT_DIR/junit-np<N>.xml; the other
ranks write their report to OUT_DIR/rank<r>-np<N>.log, which is printed only
when that rank failed, so a failure on any rank is seen and fails the job.
Every test has a timeout (pytest-timeout): a hang ends the rank with a stack
dump, and mpirun then ends the job.
"""

import contextlib
import os
import sys

import pytest


def main():
    out_dir, args = sys.argv[1], sys.argv[2:]
    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
    size = int(os.environ.get("OMPI_COMM_WORLD_SIZE", "1"))
    os.makedirs(out_dir, exist_ok=True)
    args = ["-p", "no:cacheprovider", "--timeout=120", "--color=no", "-o", "junit_suite_name=np{}".format(size)] + args
    if rank == 0:
        code = pytest.main(args + ["--junitxml", os.path.join(out_dir, "junit-np{}.xml".format(size))])
    else:
        log_path = os.path.join(out_dir, "rank{}-np{}.log".format(rank, size))
        with open(log_path, "w") as log, contextlib.redirect_stdout(log):
            code = pytest.main(args + ["-q"])
        if code != 0:
            with open(log_path) as log:
                sys.stderr.write("==== rank {} failed; its report follows ====\n{}".format(rank, log.read()))
    sys.stdout.flush()
    sys.exit(int(code))


if __name__ == "__main__":
    main()
