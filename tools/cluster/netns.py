"""The iproute2 and tc commands behind an emulated cluster, one per step.

Every function runs `ip`/`tc` as a subprocess and raises NetnsError with
the command and its stderr when it fails, so a half-built cluster says
which step broke. Nothing here remembers state: the cluster module decides
names and addresses and undoes what it made.
"""

import os
import signal
import subprocess
from typing import List, Sequence

NETNS_CONFIG_DIR = "/etc/netns"  # `ip netns exec` bind-mounts files from here


class NetnsError(RuntimeError):
    """A namespace, link or qdisc command failed."""


def run(args: Sequence[str], check: bool = True) -> str:
    """Run a command, return its stdout; raise NetnsError when it fails."""
    proc = subprocess.run(list(args), capture_output=True, text=True,
                          check=False)
    if check and proc.returncode != 0:
        raise NetnsError(f"'{' '.join(args)}' failed "
                         f"(exit {proc.returncode}): {proc.stderr.strip()}")
    return proc.stdout


def namespaces() -> List[str]:
    """Names of the network namespaces that exist now."""
    return [line.split()[0] for line in run(["ip", "netns", "list"]).splitlines()
            if line.strip()]


def links() -> List[str]:
    """Names of the network interfaces of the root namespace."""
    return sorted(os.listdir("/sys/class/net"))


def config_entries() -> List[str]:
    """Namespaces that have a folder in /etc/netns."""
    if not os.path.isdir(NETNS_CONFIG_DIR):
        return []
    return sorted(os.listdir(NETNS_CONFIG_DIR))


def link_exists(name: str) -> bool:
    """Does a network interface of this name exist in the root namespace?"""
    return os.path.exists(f"/sys/class/net/{name}")


def add_bridge(name: str, address_cidr: str) -> None:
    """A bridge in the root namespace with an address on the test subnet.

    mpirun runs in the root namespace and its daemons connect back to it,
    so the root namespace needs an address the hosts can reach.
    """
    run(["ip", "link", "add", name, "type", "bridge"])
    run(["ip", "addr", "add", address_cidr, "dev", name])
    run(["ip", "link", "set", name, "up"])


def add_host(namespace: str, root_link: str, bridge: str,
             address_cidr: str) -> None:
    """A namespace joined to the bridge by a veth pair; its end is eth0.

    No default route: the host can reach only the test subnet.
    """
    run(["ip", "netns", "add", namespace])
    run(["ip", "link", "add", root_link, "type", "veth", "peer", "name",
         "eth0", "netns", namespace])
    run(["ip", "link", "set", root_link, "master", bridge, "up"])
    run(["ip", "-n", namespace, "addr", "add", address_cidr, "dev", "eth0"])
    run(["ip", "-n", namespace, "link", "set", "eth0", "up"])
    run(["ip", "-n", namespace, "link", "set", "lo", "up"])


def write_hosts_file(namespace: str, entries: Sequence[str]) -> None:
    """/etc/hosts as seen inside the namespace (`ip netns exec` mounts it)."""
    folder = os.path.join(NETNS_CONFIG_DIR, namespace)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "hosts"), "w", encoding="ascii") as out:
        out.write("\n".join(["127.0.0.1 localhost", *entries]) + "\n")


def shape(link: str, rate: str, burst_bytes: int,
          namespace: str = "") -> None:
    """Limit what leaves `link` to `rate` with a token bucket (tbf).

    Shaping both ends of a veth limits both directions. netem (delay) is
    not available in this kernel, so only the rate is emulated.
    """
    prefix = ["ip", "netns", "exec", namespace] if namespace else []
    run(prefix + ["tc", "qdisc", "replace", "dev", link, "root", "tbf",
                  "rate", rate, "burst", str(burst_bytes),
                  "latency", "100ms"])


def unshape(link: str, namespace: str = "") -> None:
    """Remove a link's rate limit (nothing happens if it has none)."""
    prefix = ["ip", "netns", "exec", namespace] if namespace else []
    run(prefix + ["tc", "qdisc", "del", "dev", link, "root"], check=False)


def kill_processes(namespace: str) -> None:
    """SIGKILL whatever still runs in the namespace (a stray daemon)."""
    for pid in run(["ip", "netns", "pids", namespace], check=False).split():
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass


def delete_namespace(namespace: str) -> None:
    """Delete a namespace (its veth pair goes with it, once it is freed)."""
    run(["ip", "netns", "delete", namespace], check=False)
    delete_config(namespace)


def delete_config(namespace: str) -> None:
    """Remove /etc/netns/NAMESPACE and the hosts file we wrote into it."""
    folder = os.path.join(NETNS_CONFIG_DIR, namespace)
    hosts = os.path.join(folder, "hosts")
    if os.path.exists(hosts):
        os.remove(hosts)
    if os.path.isdir(folder) and not os.listdir(folder):
        os.rmdir(folder)


def delete_link(name: str) -> None:
    """Delete an interface of the root namespace if it exists."""
    if link_exists(name):
        run(["ip", "link", "delete", name], check=False)


def link_counters(link: str) -> dict:
    """Bytes counted by the kernel on a root-namespace interface."""
    base = f"/sys/class/net/{link}/statistics"
    counters = {}
    for key in ("tx_bytes", "rx_bytes"):
        with open(os.path.join(base, key), encoding="ascii") as stat:
            counters[key] = int(stat.read())
    return counters
