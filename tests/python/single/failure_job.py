"""One job of the failure matrix: one rank fails, the others time the ops they were in.

    flockrun -np N python failure_job.py KIND VICTIM MODE OPS DIR

Run by test_failure_matrix.py (and tests/python/cluster/test_failure_across_hosts.py);
the name does not start with test_, so pytest does not collect it.

KIND     what rank VICTIM does right after the start barrier:
           kill      SIGKILL to itself
           stop      SIGSTOP to itself (the lowest surviving rank SIGKILLs it once
                     every survivor is done, so that the job ends)
           stop_exit SIGSTOP to itself, never resumed; the survivors catch their
                     errors and exit normally (flock's atexit shutdown), which must
                     end the job (shutdown waits FLOCK_STALL_SHUTDOWN_S for a rank
                     seen stalling, then MPI_Abort)
           shutdown  bf.shutdown(), then waits for the survivors to be done
           exit      returns: the interpreter exits without shutdown() (atexit)
           os_exit   os._exit(0): no shutdown, no MPI_Finalize
           linkdown  (VICTIM -1) no rank fails itself: every rank writes ready.RANK and
                     waits for the test to take a host's link down and write "down";
                     once the link is back the test writes "end", and every rank exits
                     with status 3, which ends the job (MPI_Abort)
MODE     blocking (one op after the other) or nonblocking (all submitted, then
         synchronized in order)
OPS      comma-separated: allreduce, broadcast, allgather, neighbor_allreduce,
         hierarchical_neighbor_allreduce (ring topologies over ranks and machines)
DIR      a directory every rank can reach, for the markers (files) that order the
         ranks and the test: ready.R, down, opK.R (survivors start op K together),
         done.R, end

Every op runs once before the failure, so the failure meets established
connections. The survivors do not wait after the barrier: their ops are in
flight when the victim fails. Each prints one line per op, then marks itself
done and, unless the job can end normally (shutdown, exit), lingers until the
job is ended. Lines the test reads (all start with "fm "):

    fm pid RANK PID START PARENT PARENT_START HOST     (START: /proc/PID/stat field 22)
    fm fail RANK KIND WALL                   (the victim, just before it fails)
    fm op RANK OP START END OUTCOME          (OUTCOME: ok, wrong ..., or Class: message)
    fm terminated RANK WALL                  (SIGTERM from mpirun: another rank died)
    fm exiting RANK WALL                     (stop_exit: a survivor starts to exit)
"""

import collections
import os
import signal
import socket
import sys
import time

import torch

import flock.torch as bf

# Survivors that cannot end normally wait this long for the job to be ended.
LINGER_S = 30
COUNT = 4  # elements per tensor: only whether and when the ops fail matters


def say(*words):
    print("fm", *words, flush=True)


def start_time(pid):
    """Field 22 of /proc/PID/stat: with the pid, it names the process for good."""
    with open("/proc/{}/stat".format(pid)) as stat:
        return int(stat.read().rsplit(")", 1)[1].split()[19])


Op = collections.namedtuple("Op", "blocking submit count")


def ops_table():
    """Every op the matrix uses, on tensors of ones (its result must be all ones too)."""
    def op(name, count=COUNT, **kwargs):
        blocking, nonblocking = getattr(bf, name), getattr(bf, name + "_nonblocking")
        return Op(lambda: blocking(torch.ones(COUNT), name=name, **kwargs),
                  lambda: nonblocking(torch.ones(COUNT), name=name, **kwargs), count)
    return {"allreduce": op("allreduce"),
            "broadcast": op("broadcast", root_rank=bf.size() - 1),
            "allgather": op("allgather", count=COUNT * bf.size()),
            "neighbor_allreduce": op("neighbor_allreduce"),
            "hierarchical_neighbor_allreduce": op("hierarchical_neighbor_allreduce")}


def run(call):
    """(result, None) or (None, the FlockError call() raised)."""
    try:
        return call(), None
    except bf.FlockError as error:
        return None, error


def terminated(error):
    """Is this flock's error for mpirun's SIGTERM (another rank died)?"""
    return getattr(error, "flock_termination_signal", None) is not None


def report(op, start, result, error, count):
    if error is not None:
        outcome = "{}: {}".format(type(error).__name__, error)
    elif result.numel() == count and bool(torch.all(result == 1)):
        outcome = "ok"
    else:
        outcome = "wrong {}".format(result.tolist())
    say("op", bf.rank(), op, repr(start), repr(time.time()), outcome)
    if terminated(error):
        raise error  # uncaught, as in a program: the rank ends with one line (main says when)


def measure(ops, mode, align):
    """Runs and times the ops, one line each. Blocking ops start together on every
    survivor (align(k) before the k-th): a survivor whose op did not involve the
    victim would otherwise start the next op early and stall waiting for a
    survivor still stuck in the previous one, and its error would name that rank."""
    table = ops_table()
    if mode == "blocking":
        for k, op in enumerate(ops):
            align(k)
            start = time.time()
            result, error = run(table[op].blocking)
            report(op, start, result, error, table[op].count)
        return
    start = time.time()
    submitted = [(op,) + run(table[op].submit) for op in ops]  # (op, handle, error)
    for op, handle, error in submitted:
        result = None
        if error is None:
            result, error = run(lambda: bf.synchronize(handle))
        report(op, start, result, error, table[op].count)


def marker(directory, name):
    return os.path.join(directory, name)


def wait_for(paths, timeout=LINGER_S):
    """Waits until every path exists; False after timeout."""
    deadline = time.monotonic() + timeout
    while not all(os.path.exists(p) for p in paths):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def fail(kind, directory, survivors):
    """What the victim does (after saying when)."""
    say("fail", bf.rank(), kind, repr(time.time()))
    if kind == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif kind in ("stop", "stop_exit"):
        os.kill(os.getpid(), signal.SIGSTOP)  # not resumed: the reaper SIGKILLs it
    elif kind == "os_exit":
        os._exit(0)
    elif kind == "shutdown":
        bf.shutdown()
        wait_for([marker(directory, "done.{}".format(r)) for r in survivors])
    # "exit": returns, and the interpreter exits without shutdown() (flock's atexit runs)


def survive(kind, victim, mode, ops, directory, pids):
    """A surviving rank: times its ops, then helps the job end the way its failure allows."""
    rank, survivors = bf.rank(), [r for r in range(bf.size()) if r != victim]
    if kind == "linkdown":  # the test takes the link down between these two markers
        open(marker(directory, "ready.{}".format(rank)), "w").close()
        wait_for([marker(directory, "down")])

    def align(k):  # a barrier of the survivors, through files (the victim cannot join)
        open(marker(directory, "op{}.{}".format(k, rank)), "w").close()
        wait_for([marker(directory, "op{}.{}".format(k, r)) for r in survivors])

    measure(ops, mode, align)
    open(marker(directory, "done.{}".format(rank)), "w").close()
    if kind in ("shutdown", "exit"):
        return  # the job ends normally: every rank shuts down
    if kind == "stop_exit":
        say("exiting", rank, repr(time.time()))
        return  # the interpreter's exit shuts flock down; the victim never will
    if kind == "stop" and rank == survivors[0]:
        wait_for([marker(directory, "done.{}".format(r)) for r in survivors])
        os.kill(pids[victim], signal.SIGKILL)  # a stopped process obeys SIGKILL
    if kind == "linkdown":
        wait_for([marker(directory, "end")])  # the test brought the link back up
        sys.exit(3)  # flock ends every rank of the job (MPI_Abort)
    time.sleep(LINGER_S)  # mpirun ends this rank (SIGTERM) once the victim is gone


def main():
    kind, victim, mode, ops, directory = sys.argv[1:6]
    victim, ops = int(victim), ops.split(",")
    bf.init()
    rank = bf.rank()
    parent = os.getppid()  # mpirun, or its daemon on another host
    say("pid", rank, os.getpid(), start_time("self"), parent, start_time(parent),
        socket.gethostname())
    pids = [int(p) for p in bf.allgather(torch.tensor([os.getpid()])).tolist()]
    bf.set_topology(bf.RingGraph(bf.size()))
    bf.set_machine_topology(bf.RingGraph(bf.machine_size()))
    table = ops_table()
    for op in ops:  # once before the failure: every path works and is set up
        result = table[op].blocking()
        assert result.numel() == table[op].count and bool(torch.all(result == 1)), (op, result)
    bf.barrier()
    if rank == victim and kind != "linkdown":
        fail(kind, directory, [r for r in range(bf.size()) if r != victim])
        return
    try:
        survive(kind, victim, mode, ops, directory, pids)
    except bf.FlockError as error:  # mpirun's SIGTERM outside an op
        if terminated(error):
            say("terminated", rank, repr(time.time()))
        raise


if __name__ == "__main__":
    main()
