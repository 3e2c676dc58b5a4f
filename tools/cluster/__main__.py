"""Command line of the emulated cluster (run as root, standard library only).

    python3 tools/cluster run --hosts 2 [--rate 1gbit] -- COMMAND...
        build the cluster, run COMMAND with flockrun pointed at it, tear the
        cluster down (always), exit with COMMAND's status
    python3 tools/cluster up --hosts 2 [--rate 1gbit]
        build it and print the variables that point flockrun at it
    python3 tools/cluster down
        remove a cluster (also one a killed run left behind)
    python3 tools/cluster status
        what exists now

Inside `run`, launch onto hosts h1..hN as on a real cluster:
    python3 tools/cluster run --hosts 2 -- flockrun -np 4 -H h1:2,h2:2 python x.py
"""

import argparse
import os
import shlex
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from cluster import (ClusterError, EmulatedCluster, in_use,  # noqa: E402
                     leftovers, namespaces_supported, tear_down)
from netns import NetnsError  # noqa: E402

STOP_GRACE_S = 10  # how long an interrupted command gets to stop by itself


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python3 tools/cluster",
        description="Emulate several hosts on this machine with network "
                    "namespaces (root needed).")
    verbs = parser.add_subparsers(dest="verb", required=True)
    for verb in ("up", "run"):
        sub = verbs.add_parser(verb)
        sub.add_argument("--hosts", type=int, required=True,
                         help="number of emulated hosts (h1..hN)")
        sub.add_argument("--rate", default=None,
                         help="link rate per host and direction, e.g. 1gbit "
                              "(default: unshaped)")
        if verb == "run":
            sub.add_argument("command", nargs=argparse.REMAINDER,
                             help="-- COMMAND...")
    verbs.add_parser("down")
    verbs.add_parser("status")
    return parser


def _run(cluster: EmulatedCluster, command) -> int:
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise ClusterError("run needs a command after --")
    with cluster:
        child = subprocess.Popen(command, env=cluster.environment())
        try:
            return child.wait()
        except BaseException:
            # Ctrl-C or SIGTERM: let flockrun stop its ranks before the
            # hosts they run on disappear.
            child.terminate()
            try:
                child.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
            raise


def _up(cluster: EmulatedCluster) -> int:
    cluster.up()
    for name, value in sorted(cluster.environment({}).items()):
        print(f"export {name}={shlex.quote(value)}")
    print(f"# then: flockrun -np {2 * cluster.hosts} "
          f"-H {cluster.host_list(2)} python train.py", file=sys.stderr)
    return 0


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.verb == "down":
            if in_use():
                raise ClusterError("a running process uses the emulated cluster; "
                                   "stop it (its cluster goes with it)")
            tear_down()
            return 0
        if args.verb == "status":
            print("\n".join(leftovers()) or "no emulated cluster")
            if in_use():
                print("in use by a running process")
            return 0
        reason = namespaces_supported()
        if reason:
            raise ClusterError(reason)
        cluster = EmulatedCluster(args.hosts, args.rate)
        if args.verb == "up":
            return _up(cluster)
        return _run(cluster, args.command)
    except (ClusterError, NetnsError) as exc:
        print(f"cluster: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
