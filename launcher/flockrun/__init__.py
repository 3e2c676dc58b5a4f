"""flockrun: launch a flock program on N ranks through OpenMPI's mpirun.

The launcher is split so that the decision (which mpirun command line to
run) is a pure function, tested by list equality, and the effects (reading
the machine, running the process) stay thin:

- ``hosts``    parses -H specs and hostfiles, counts slots, finds local runs
- ``machine``  reads facts about this machine (cores, host names)
- ``command``  the pure builder: options + facts -> mpirun argv
- ``program``, ``hostcheck``  checks before mpirun starts: the program
  exists, the remote hosts answer (pure argv, probes run in parallel)
- ``tagged_stream``, ``relay``, ``mpirun_messages``, ``report``  the ranks'
  tagged output back into whole lines; mpirun's reports read; one summary
  and an exit status (pure: bytes in, writes out)
- ``run``      runs mpirun (pipes, signal forwarding)
- ``cli``      argparse, error reporting, putting the pieces together
"""

from flockrun.command import LaunchOptions, build_mpirun_argv
from flockrun.errors import LaunchError

__all__ = ["LaunchError", "LaunchOptions", "build_mpirun_argv"]
