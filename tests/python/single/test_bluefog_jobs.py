"""Bluefog habits that need a job of their own: BLUEFOG_NODES_PER_MACHINE set in
os.environ by the program just before its first init() (as Bluefog's hierarchical
tests do), and a value that does not divide the world size."""

from test_engine_jobs import run_job


def test_machines_emulated_from_os_environ_before_the_first_init(tmp_path):
    result, _ = run_job(tmp_path, 4, """
        import os, sys
        import networkx as nx
        import torch
        os.environ["BLUEFOG_NODES_PER_MACHINE"] = "2"
        import flock.torch as bf
        bf.init()
        r = bf.rank()
        assert (bf.local_size(), bf.local_rank()) == (2, r % 2)
        assert (bf.machine_size(), bf.machine_rank()) == (2, r // 2) and bf.is_homogeneous()
        assert bf.set_machine_topology(bf.ExponentialGraph(2))
        assert isinstance(bf.load_machine_topology(), nx.DiGraph)
        assert bf.in_neighbor_machine_ranks() == [1 - r // 2]
        # machine means 0.5 and 2.5, averaged with the other machine's: 1.5 everywhere
        got = bf.hierarchical_neighbor_allreduce(torch.full((3,), float(r)), name="h")
        assert torch.allclose(got, torch.full((3,), 1.5)), got
        local = bf.allreduce(torch.full((1,), float(r)), True, True, "local")
        assert local.item() == (r - r % 2) + 0.5, local
        sys.stdout.write("ok {}\\n".format(r))
    """)
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.split()) == sorted("ok 0 ok 1 ok 2 ok 3".split()), result.stdout


def test_a_machine_size_that_does_not_divide_the_world_fails_init_on_every_rank(tmp_path):
    result, elapsed = run_job(tmp_path, 4, """
        import os, sys
        os.environ["BLUEFOG_NODES_PER_MACHINE"] = "3"
        import flock.torch as bf
        try:
            bf.init()
        except bf.FlockInvalidArgumentError as error:
            sys.stdout.write("raised: {}\\n".format(error))
    """)
    assert result.returncode == 0, result.stderr
    raised = [line for line in result.stdout.splitlines() if line.startswith("raised: ")]
    assert len(raised) == 4, result.stdout
    assert all("BLUEFOG_NODES_PER_MACHINE=3 does not divide the world size 4" in line
               for line in raised), raised
