"""Unit tests for the pure argv builder (tests/python/launcher/test_cli.py: its
command line).

No MPI here: every test compares a whole argv list.
"""

import pytest

from flockrun.command import LaunchOptions, OutputPlan, build_mpirun_argv, output_plan
from flockrun.errors import LaunchError
from flockrun.hosts import Host

MPIRUN = "/usr/bin/mpirun"
PROGRAM = ("python", "train.py", "--lr", "0.1")


def build(num_proc=2, command=PROGRAM, env=None, cpu_count=4, euid=1000,
          mpirun=MPIRUN, **options):
    """build_mpirun_argv with made-up machine facts (4 cores, non-root)."""
    return build_mpirun_argv(
        LaunchOptions(num_proc=num_proc, command=tuple(command), **options),
        env={"PATH": "/usr/bin"} if env is None else env,
        cpu_count=cpu_count, euid=euid, mpirun=mpirun,
        local_hostnames=frozenset({"localhost", "127.0.0.1", "myhost"}),
        cwd="/home/me/run")


def expected(*middle):
    """The argv with the fixed parts around the rule-specific middle."""
    return [MPIRUN, *middle, "-x", "PATH", *PROGRAM]


def exporting(*tail):
    """The argv of a plain 2-rank run, with ``tail`` before the program."""
    return [MPIRUN, "-np", "2", "--bind-to", "none", *tail, *PROGRAM]


# root, binding, oversubscription ---------------------------------------------


def test_plain_run_binds_to_none():
    assert build() == expected("-np", "2", "--bind-to", "none")


def test_root_allows_run_as_root():
    assert build(euid=0) == expected("--allow-run-as-root", "-np", "2",
                                     "--bind-to", "none")


def test_no_oversubscribe_when_ranks_fit_the_cores():
    assert build(num_proc=4, cpu_count=4) == expected(
        "-np", "4", "--bind-to", "none")


OVERSUBSCRIBE = ("--oversubscribe", "--mca", "mpi_yield_when_idle", "1")


def test_oversubscribe_and_yield_when_ranks_exceed_the_cores():
    assert build(num_proc=5, cpu_count=4) == expected(
        "-np", "5", "--bind-to", "none", *OVERSUBSCRIBE)


def test_unknown_core_count_counts_as_one_core():
    assert build(num_proc=2, cpu_count=None) == expected(
        "-np", "2", "--bind-to", "none", *OVERSUBSCRIBE)


def test_local_host_list_oversubscribes_past_the_cores():
    assert build(num_proc=6, host_spec="localhost:4,myhost:4") == expected(
        "-np", "6", "-H", "localhost:4,myhost:4", "--bind-to", "none",
        *OVERSUBSCRIBE)


def test_remote_hosts_never_oversubscribe():
    assert build(num_proc=8, host_spec="a:4,b:4") == expected(
        "-np", "8", "-H", "a:4,b:4", "--bind-to", "none")


def test_host_without_slots_is_passed_with_one_slot():
    assert build(num_proc=2, host_spec="a,b") == expected(
        "-np", "2", "-H", "a:1,b:1", "--bind-to", "none")


def test_user_binding_and_oversubscription_are_not_duplicated():
    mpi_args = ("--bind-to=core --oversubscribe "
                "--mca mpi_yield_when_idle 0",)
    assert build(num_proc=8, mpi_args=mpi_args) == [
        MPIRUN, "-np", "8", "-x", "PATH", "--bind-to=core",
        "--oversubscribe", "--mca", "mpi_yield_when_idle", "0", *PROGRAM]


# slots -----------------------------------------------------------------------


def test_more_ranks_than_slots_is_an_error():
    with pytest.raises(LaunchError, match=r"-np 4 .* the 3 slot\(s\) of "
                                          r"-H a:2,b:1"):
        build(num_proc=4, host_spec="a:2,b")


def test_user_oversubscribe_allows_more_ranks_than_slots():
    assert build(num_proc=4, host_spec="a:2", mpi_args=("--oversubscribe",)) \
        == [MPIRUN, "-np", "4", "-H", "a:2", "--bind-to", "none",
            "-x", "PATH", "--oversubscribe", *PROGRAM]


def test_malformed_host_spec_names_the_entry():
    with pytest.raises(LaunchError, match="bad host entry 'b:0'"):
        build(host_spec="a:2,b:0")


def test_hostfile_is_passed_through_and_its_slots_checked():
    hosts = (Host("a", 2), Host("b", 2))
    assert build(num_proc=4, hostfile="hosts.txt", hostfile_hosts=hosts) \
        == expected("-np", "4", "--hostfile", "hosts.txt",
                    "--bind-to", "none")
    with pytest.raises(LaunchError, match="the 4 slot"):
        build(num_proc=5, hostfile="hosts.txt", hostfile_hosts=hosts)


def test_hostfile_without_slot_counts_skips_the_check():
    hosts = (Host("a", None), Host("b", 2))
    assert build(num_proc=64, hostfile="h", hostfile_hosts=hosts) == expected(
        "-np", "64", "--hostfile", "h", "--bind-to", "none")


def test_local_hostfile_oversubscribes_past_the_cores():
    hosts = (Host("localhost", None),)
    assert build(num_proc=5, hostfile="h", hostfile_hosts=hosts) == expected(
        "-np", "5", "--hostfile", "h", "--bind-to", "none", *OVERSUBSCRIBE)


def test_host_spec_and_hostfile_together_is_an_error():
    with pytest.raises(LaunchError, match="not both"):
        build(host_spec="a", hostfile="h", hostfile_hosts=(Host("a", 1),))


# environment forwarding ------------------------------------------------------

FULL_ENV = {"FLOCK_B": "1", "FLOCK_A": "2", "flock_lower": "3", "HOME": "/h",
            "PATH": "/bin", "PYTHONPATH": "/p", "LD_LIBRARY_PATH": "/l",
            "VIRTUAL_ENV": "/v", "OTHER": "4", "BLUEFOG_NODES_PER_MACHINE": "2",
            "BLUEFOG_OTHER": "5"}


def test_forwards_flock_variables_and_the_search_paths():
    assert build(env=FULL_ENV) == exporting(
        "-x", "FLOCK_A", "-x", "FLOCK_B", "-x", "PATH", "-x", "PYTHONPATH",
        "-x", "LD_LIBRARY_PATH", "-x", "VIRTUAL_ENV", "-x", "BLUEFOG_NODES_PER_MACHINE")


def test_unset_search_paths_are_not_forwarded():
    assert build(env={}) == exporting()


def test_user_exports_come_as_given_after_the_automatic_ones():
    argv = build(env_vars=("BAR=1", "BAZ", "URL=a=b c"))
    assert argv == exporting("-x", "PATH", "-x", "BAR=1", "-x", "BAZ",
                             "-x", "URL=a=b c")


def test_user_export_replaces_the_automatic_one():
    argv = build(env={"PATH": "/bin", "FLOCK_X": "1"},
                 env_vars=("PATH=/opt/bin", "FLOCK_X=2"))
    assert argv == exporting("-x", "PATH=/opt/bin", "-x", "FLOCK_X=2")


@pytest.mark.parametrize("item", ["1BAD", "=1", "A-B=2", ""])
def test_bad_export_names_are_errors(item):
    with pytest.raises(LaunchError, match="bad -x"):
        build(env_vars=(item,))


@pytest.mark.parametrize("path, absolute", [
    ("t.json", "/home/me/run/t.json"),
    ("../out/t", "/home/me/out/t"),
    ("/tmp/t.json", "/tmp/t.json"),
    ("~/t.json", "/h/t.json"),
])
def test_timeline_filename_becomes_absolute_flock_timeline(path, absolute):
    argv = build(env={"HOME": "/h", "FLOCK_TIMELINE": "old"},
                 timeline_filename=path)
    assert argv == exporting("-x", f"FLOCK_TIMELINE={absolute}")


def test_timeline_filename_conflicts_with_user_export():
    with pytest.raises(LaunchError, match="use one"):
        build(timeline_filename="t", env_vars=("FLOCK_TIMELINE=u",))


# --mpi-args ------------------------------------------------------------------


def test_mpi_args_are_shell_split_and_go_before_the_program():
    argv = build(mpi_args=("--tag-output --mca btl 'self,tcp'", "-v"))
    assert argv == exporting("-x", "PATH", "--tag-output", "--mca", "btl",
                             "self,tcp", "-v")


def test_unbalanced_quote_in_mpi_args_is_an_error():
    with pytest.raises(LaunchError, match="cannot split --mpi-args"):
        build(mpi_args=("--mca btl 'self",))


# output: relay, --tag-output, FLOCK_TAG_OUTPUT ---------------------------------


def plan(env=None, **options):
    return output_plan(LaunchOptions(num_proc=2, command=PROGRAM, **options),
                       {} if env is None else env)


def test_relayed_output_asks_mpirun_for_tags_and_the_map_before_the_exports():
    assert build(relay_output=True) == exporting("--tag-output", "--display-map",
                                                 "-x", "PATH")
    assert plan(relay_output=True) == OutputPlan(relay=True, tag_lines=False,
                                                 show_map=False)


@pytest.mark.parametrize("user", ["--xml", "--tag-output", "-timestamp-output",
                                  "--output-filename /tmp/o"])
def test_users_own_output_format_turns_the_relay_off(user):
    argv = build(relay_output=True, mpi_args=(user,))
    assert "--display-map" not in argv and argv.count("--tag-output") == user.count("tag")
    assert plan(relay_output=True, mpi_args=(user,)).relay is False


def test_users_display_map_is_shown_and_not_repeated():
    argv = build(relay_output=True, mpi_args=("--display-map",))
    assert argv == exporting("--tag-output", "-x", "PATH", "--display-map")
    assert plan(relay_output=True, mpi_args=("--display-map",)).show_map


@pytest.mark.parametrize("option, env, tag_lines", [
    (None, {}, False), (True, {}, True), (None, {"FLOCK_TAG_OUTPUT": "1"}, True),
    (None, {"FLOCK_TAG_OUTPUT": "0"}, False), (None, {"FLOCK_TAG_OUTPUT": "true"}, True),
    (True, {"FLOCK_TAG_OUTPUT": "0"}, True),
])
def test_tag_output_option_and_its_variable(option, env, tag_lines):
    assert plan(env, relay_output=True, tag_output=option).tag_lines == tag_lines


def test_bad_tag_output_variable_and_two_output_formats_are_errors():
    with pytest.raises(LaunchError, match="bad FLOCK_TAG_OUTPUT 'yes please'"):
        plan({"FLOCK_TAG_OUTPUT": "yes please"})
    with pytest.raises(LaunchError, match="both choose the output format"):
        plan(tag_output=True, mpi_args=("--xml",))


# --network-interface and --rsh-agent ----------------------------------------


def network(value):
    """The mpirun arguments --network-interface VALUE stands for."""
    return ["--mca", "oob_tcp_if_include", value,
            "--mca", "btl_tcp_if_include", value]


def test_network_interface_sets_oob_and_btl_before_the_exports():
    assert build(network_interfaces=("eth1",)) == expected(
        "-np", "2", "--bind-to", "none", *network("eth1"))


def test_repeated_network_interfaces_are_joined_with_commas():
    argv = build(network_interfaces=("eth1,lo", "10.77.0.0/24"))
    assert argv == expected("-np", "2", "--bind-to", "none",
                            *network("eth1,lo,10.77.0.0/24"))


def test_network_args_follow_the_placement_args_on_a_local_run():
    assert build(num_proc=5, network_interfaces=("lo",)) == expected(
        "-np", "5", "--bind-to", "none", *OVERSUBSCRIBE, *network("lo"))


def test_network_interface_defaults_to_its_variable():
    env = {"PATH": "/bin", "FLOCK_NETWORK_INTERFACE": "10.77.0.0/24"}
    assert build(env=env) == exporting(
        *network("10.77.0.0/24"), "-x", "FLOCK_NETWORK_INTERFACE",
        "-x", "PATH")


def test_network_interface_option_beats_its_variable():
    env = {"FLOCK_NETWORK_INTERFACE": "eth0"}
    assert build(env=env, network_interfaces=("eth1",)) == exporting(
        *network("eth1"), "-x", "FLOCK_NETWORK_INTERFACE")


@pytest.mark.parametrize("mpi_args, added", [
    ("--mca btl_tcp_if_exclude docker0,lo", "oob_tcp_if_include"),
    ("-mca oob_tcp_if_include eth0", "btl_tcp_if_include"),
    ("--gmca oob_tcp_if_exclude lo", "btl_tcp_if_include"),
    ("--mca oob_tcp_include eth0", "btl_tcp_if_include"),  # a synonym
])
def test_users_own_interface_choice_is_kept_and_not_duplicated(mpi_args,
                                                               added):
    argv = build(network_interfaces=("eth1",), mpi_args=(mpi_args,))
    assert argv == exporting("--mca", added, "eth1", "-x", "PATH",
                             *mpi_args.split())


def test_user_choosing_both_layers_leaves_nothing_to_add():
    mpi_args = "--mca oob_tcp_if_include a --mca btl_tcp_if_include b"
    argv = build(network_interfaces=("eth1",), mpi_args=(mpi_args,))
    assert argv == exporting("-x", "PATH", *mpi_args.split())


@pytest.mark.parametrize("value", [
    "eth0", "lo,eth1", "10.77.0.0/24", "10.77.0.5/24",
    "enp0s31f6,192.168.1.0/24"])
def test_interface_names_and_subnets_are_accepted(value):
    assert build(network_interfaces=(value,)) == expected(
        "-np", "2", "--bind-to", "none", *network(value))


@pytest.mark.parametrize("value, words", [
    ("", "without spaces"),
    ("eth0,", "without spaces"),
    ("eth0,,eth1", "without spaces"),
    ("eth 0", "without spaces"),
    ("eth0, eth1", "without spaces"),
    ("10.77.0.1", "'10.77.0.1' is neither an interface name nor a subnet"),
    ("10.77.0.0/33", "'10.77.0.0/33' is neither"),
    ("300.1.2.0/24", "'300.1.2.0/24' is neither"),
    ("eth0/24", "'eth0/24' is neither"),
    ("-eth0", "'-eth0' is neither"),
])
def test_bad_network_interface_is_an_error_naming_it(value, words):
    with pytest.raises(LaunchError) as error:
        build(network_interfaces=(value,))
    assert f"bad --network-interface {value!r}: " in str(error.value)
    assert words in str(error.value)


def test_bad_network_variable_is_an_error_naming_the_variable():
    for value in ("", "10.0.0.1"):
        with pytest.raises(LaunchError,
                           match=f"bad FLOCK_NETWORK_INTERFACE '{value}'"):
            build(env={"FLOCK_NETWORK_INTERFACE": value})


RSH = ["--mca", "plm_rsh_agent"]


def test_rsh_agent_is_passed_as_one_word():
    assert build(rsh_agent="ssh -p 2222") == expected(
        "-np", "2", "--bind-to", "none", *RSH, "ssh -p 2222")


def test_rsh_agent_defaults_to_its_variable_and_the_option_beats_it():
    env = {"FLOCK_RSH_AGENT": "/opt/bin/enter-host"}
    assert build(env=env) == exporting(*RSH, "/opt/bin/enter-host",
                                       "-x", "FLOCK_RSH_AGENT")
    assert build(env=env, rsh_agent="rsh") == exporting(
        *RSH, "rsh", "-x", "FLOCK_RSH_AGENT")


@pytest.mark.parametrize("mpi_args", [
    "--mca plm_rsh_agent rsh", "-mca orte_rsh_agent rsh"])
def test_users_own_rsh_agent_is_kept_and_not_duplicated(mpi_args):
    argv = build(rsh_agent="ssh", mpi_args=(mpi_args,))
    assert argv == exporting("-x", "PATH", *mpi_args.split())


def test_network_comes_before_the_rsh_agent():
    argv = build(network_interfaces=("eth1",), rsh_agent="ssh")
    assert argv == expected("-np", "2", "--bind-to", "none",
                            *network("eth1"), *RSH, "ssh")


@pytest.mark.parametrize("env, rsh_agent, name", [
    ({}, "", "--rsh-agent"), ({}, "  ", "--rsh-agent"),
    ({"FLOCK_RSH_AGENT": ""}, None, "FLOCK_RSH_AGENT")])
def test_empty_rsh_agent_is_an_error(env, rsh_agent, name):
    with pytest.raises(LaunchError, match=f"bad {name} '{rsh_agent or ''}"):
        build(env=env, rsh_agent=rsh_agent)


# request errors --------------------------------------------------------------


@pytest.mark.parametrize("num_proc, words", [
    (None, "-np N is required"), (0, "at least 1, got 0"),
    (-2, "at least 1, got -2")])
def test_rank_count_errors(num_proc, words):
    with pytest.raises(LaunchError, match=words):
        build(num_proc=num_proc)


def test_missing_command_is_an_error():
    with pytest.raises(LaunchError, match="missing command"):
        build(command=())


def test_missing_mpirun_is_an_error():
    with pytest.raises(LaunchError, match="mpirun not found on PATH"):
        build(mpirun=None)
