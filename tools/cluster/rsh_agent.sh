#!/bin/sh
# Launch agent for an emulated cluster: mpirun calls it as it would call ssh,
#   rsh_agent.sh [ssh options...] HOST COMMAND...
# and it runs COMMAND inside the network namespace of HOST (flock-HOST) with
# HOST as the host name, so each emulated host reports its own name and
# OpenMPI groups ranks by namespace. Like ssh, COMMAND is one shell line.
while [ $# -gt 0 ]; do
  case "$1" in
    -*) shift ;;  # ssh-style options mpirun may add; meaningless here
    *) break ;;
  esac
done
if [ $# -lt 2 ]; then
  echo "rsh_agent.sh: usage: rsh_agent.sh HOST COMMAND..." >&2
  exit 255
fi
host=$1
shift
namespace="flock-$host"
if ! ip netns list | grep -q "^$namespace\( \|\$\)"; then
  echo "rsh_agent.sh: no emulated host '$host' (network namespace $namespace);" \
       "start one with: python3 tools/cluster up" >&2
  exit 255
fi
# unshare --uts gives the command its own host name without touching ours.
exec ip netns exec "$namespace" unshare --uts \
  sh -c 'hostname "$0" && eval "$1"' "$host" "$*"
