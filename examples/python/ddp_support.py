"""torch DistributedDataParallel over gloo, started on flock's ranks: the method users
would pick instead of flock, run by the same launcher on the same hosts for comparison.

    ddp_support.init_process_group()          # after bf.init(); rank and size are flock's
    model = torch.nn.parallel.DistributedDataParallel(model)
    ...
    ddp_support.destroy_process_group()       # before bf.shutdown()

Rank 0's address and a free port reach the other ranks by flock's broadcast, so no
MASTER_ADDR/MASTER_PORT is needed. Which network gloo uses: GLOO_SOCKET_IFNAME if set,
else the interface on FLOCK_NETWORK_INTERFACE (an interface name or a subnet, as flockrun
takes it; the emulated cluster of tools/cluster sets its subnet), else loopback when all
ranks are on one machine, else the address this host's name resolves to (gloo's default).
"""

import datetime
import fcntl
import ipaddress
import os
import socket
import struct
import time

import torch
import torch.distributed as dist

import flock.torch as bf

_SIOCGIFADDR = 0x8915  # Linux ioctl: an interface's IPv4 address


def interface_addresses():
    """{interface name: IPv4 address} of this host (its network namespace)."""
    found = {}
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        for _, name in socket.if_nameindex():
            try:
                packed = fcntl.ioctl(probe.fileno(), _SIOCGIFADDR,
                                     struct.pack("256s", name[:15].encode()))
            except OSError:
                continue  # no IPv4 address
            found[name] = socket.inet_ntoa(packed[20:24])
    return found


def _on_flock_network(addresses):
    """(interface, address) named by FLOCK_NETWORK_INTERFACE, or (None, None)."""
    for item in os.environ.get("FLOCK_NETWORK_INTERFACE", "").split(","):
        item = item.strip()
        if item in addresses:
            return item, addresses[item]
        try:
            network = ipaddress.ip_network(item, strict=False)
        except ValueError:
            continue
        for name, address in addresses.items():
            if ipaddress.ip_address(address) in network:
                return name, address
    return None, None


def choose_interface():
    """(interface, address) for gloo on this rank; (None, None) leaves it to gloo."""
    addresses = interface_addresses()
    named = os.environ.get("GLOO_SOCKET_IFNAME", "").split(",")[0]
    if named:
        return named, addresses.get(named)
    interface, address = _on_flock_network(addresses)
    if interface is not None:
        return interface, address
    if bf.machine_size() == 1:
        loopback = next((n for n, a in addresses.items() if a.startswith("127.")), None)
        if loopback is not None:
            return loopback, "127.0.0.1"
    return None, None


def _free_port(address):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((address, 0))
        return probe.getsockname()[1]


def _rank0_endpoint(address):
    """(address, port) of rank 0's rendezvous, broadcast from rank 0 with flock."""
    endpoint = torch.zeros(5, dtype=torch.int64)
    if bf.rank() == 0:
        address = address or socket.gethostbyname(socket.gethostname())
        endpoint[:4] = torch.tensor(list(socket.inet_aton(address)))
        endpoint[4] = _free_port(address)
    endpoint = bf.broadcast(endpoint, root_rank=0, name="ddp_support.endpoint")
    return ".".join(str(int(v)) for v in endpoint[:4]), int(endpoint[4])


def init_process_group(timeout_s=120):
    """torch.distributed's gloo process group on flock's ranks (bf.init() first)."""
    if dist.is_initialized():
        return
    interface, address = choose_interface()
    if interface is not None:
        os.environ["GLOO_SOCKET_IFNAME"] = interface
    host, port = _rank0_endpoint(address)
    dist.init_process_group("gloo", init_method="tcp://{}:{}".format(host, port),
                            rank=bf.rank(), world_size=bf.size(),
                            timeout=datetime.timedelta(seconds=timeout_s))


def destroy_process_group():
    if dist.is_initialized():
        dist.destroy_process_group()


class LastGradientClock:
    """When the backward pass produced its last gradient: DDP's allreduce runs inside
    backward, so the time from then to the end of backward is what it waited for the
    network. Hooks on the gradient accumulators, registered after DDP's, so they run
    after DDP has handed the gradient to its bucket."""

    def __init__(self, model):
        self.last = None
        self._accumulators = []  # the hooks live as long as their accumulators
        for p in model.parameters():
            if p.requires_grad:
                accumulator = p.expand_as(p).grad_fn.next_functions[0][0]
                accumulator.register_hook(self._mark)
                self._accumulators.append(accumulator)

    def _mark(self, *_):
        self.last = time.perf_counter()
