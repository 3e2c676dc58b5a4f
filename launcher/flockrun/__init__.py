"""flockrun: launch a flock program on N ranks through OpenMPI's mpirun.

The launcher is split so that the decision (which mpirun command line to
run) is a pure function, tested by list equality, and the effects (reading
the machine, running the process) stay thin:

- ``hosts``    parses -H specs and hostfiles, counts slots, finds local runs
- ``machine``  reads facts about this machine (cores, host names)
- ``command``  the pure builder: options + facts -> mpirun argv
- ``cli``      argparse, error reporting, running mpirun, signal forwarding
"""

from flockrun.command import LaunchOptions, build_mpirun_argv
from flockrun.errors import LaunchError

__all__ = ["LaunchError", "LaunchOptions", "build_mpirun_argv"]
