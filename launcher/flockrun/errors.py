"""The one error type of the launcher.

Every user mistake (bad host spec, too few slots, missing command, no
mpirun) raises LaunchError with a message meant for the user; the CLI prints
it as ``flockrun: error: <message>`` and exits with status 2.
"""


class LaunchError(ValueError):
    """A launch request that cannot be turned into a valid mpirun command."""
