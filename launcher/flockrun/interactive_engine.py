"""One engine of an interactive cluster: what mpirun starts on every rank.

    python -m flockrun.interactive_engine

It runs ipyparallel's engine with its engine id set to the MPI rank, so that
``rc[i]`` in a notebook is rank i. The controller's connection details
(address, ports, key) arrive in the environment variable CONNECTION_VARIABLE,
which mpirun forwards to every host; they are written to a private temporary
file only while the engine reads them, so the engines need no shared file
system and the key never shows on a command line. The engine does not import
flock: the user's ``%%px`` cells do, and ``bf.init()`` makes this process a
flock rank.
"""

import json
import logging
import os
import socket
import sys
import tempfile

CONNECTION_VARIABLE = "FLOCK_INTERACTIVE_CONNECTION"

# Where OpenMPI puts a rank's number (PMIx names it too).
_RANK_VARIABLES = ("OMPI_COMM_WORLD_RANK", "PMIX_RANK")


def mpi_rank(environ) -> int:
    """This process's rank in the MPI job, from the launcher's variables."""
    for name in _RANK_VARIABLES:
        if environ.get(name, "").isdigit():
            return int(environ[name])
    raise SystemExit("flockrun.interactive_engine: no MPI rank in the environment; "
                     "it is started by flock-interactive under mpirun")


def engine_identity():
    """(rank, host, pid) of the engine that runs it; called through the client."""
    return mpi_rank(os.environ), socket.gethostname(), os.getpid()


def main() -> None:
    rank = mpi_rank(os.environ)
    connection = os.environ.pop(CONNECTION_VARIABLE, None)
    if not connection:
        raise SystemExit(f"flockrun.interactive_engine: {CONNECTION_VARIABLE} is not set")
    json.loads(connection)  # fail here, clearly, rather than inside ipengine
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # debugpy's import noise
    from ipyparallel.engine.app import IPEngine

    descriptor, path = tempfile.mkstemp(prefix="flock-engine-", suffix=".json")
    try:
        with os.fdopen(descriptor, "w") as handle:  # mkstemp made it private (0600)
            handle.write(connection)
        app = IPEngine.instance()
        app.initialize([f"--file={path}", f"--IPEngine.id={rank}"] + sys.argv[1:])
    finally:
        os.remove(path)  # read during initialize; not needed again
    app.log_level = logging.WARNING  # ipengine forces DEBUG, which floods the log
    app.start()


if __name__ == "__main__":
    main()
