"""flockrun: launch a flock program on N ranks through OpenMPI's mpirun.

The launcher is split so that the decision (which mpirun command line to
run) is a pure function, tested by list equality, and the effects (reading
the machine, running the process) stay thin:

- ``hosts``    parses -H specs and hostfiles, counts slots, finds local runs
- ``machine``  reads facts about this machine (cores, host names)
- ``command``  the pure builder: options + facts -> mpirun argv
- ``options``  the launch options' argparse definitions, shared by both commands
- ``program``, ``hostcheck``  checks before mpirun starts: the program
  exists, the remote hosts answer (pure argv, probes run in parallel)
- ``tagged_stream``, ``relay``, ``mpirun_messages``, ``report``  the ranks'
  tagged output back into whole lines; mpirun's reports read; one summary
  and an exit status (pure: bytes in, writes out)
- ``run``      runs mpirun (pipes, signal forwarding)
- ``cli``      the ``flockrun`` command: argparse, error reporting, putting
  the pieces together
- ``errors``   LaunchError, the one error a refused launch raises

``flock-interactive`` (Bluefog's ibfrun) keeps N ranks running as the engines
of an ipyparallel cluster, driven from a notebook:

- ``interactive``           the command: start, stop, status
- ``interactive_commands``  the controller's and the engines' command lines (pure)
- ``interactive_cluster``   start: launch, wait for the engines, record
- ``interactive_teardown``  stop and status
- ``interactive_state``     the profile's files and the record of what runs
- ``interactive_engine``    what mpirun runs on each rank (an ipyparallel engine)
- ``processes``             finding and ending a detached job's processes (/proc)
"""

from flockrun.command import LaunchOptions, build_mpirun_argv
from flockrun.errors import LaunchError

__all__ = ["LaunchError", "LaunchOptions", "build_mpirun_argv"]
