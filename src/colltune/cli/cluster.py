"""`colltune cluster up|status|down|env`: a cluster of network namespaces on this machine
(colltune.mpi.cluster does the work; docs/cluster.md)."""

from __future__ import annotations

import shlex

import click
from rich.markup import escape

from colltune.mpi import cluster as cluster_mod

from ._common import command, err, out
from .rules import Group


@click.group("cluster", cls=Group)
def cluster() -> None:
    """A cluster on this machine: nodes made of network namespaces on one switch (a
    bridge), MPI daemons started inside them (docs/cluster.md). Needs root."""


@command("up")
@click.option("--nodes", required=True, type=click.IntRange(1, cluster_mod.MAX_NODES),
              help="Nodes to make: network namespaces ctn1..ctnN.")
@click.option("--bandwidth", metavar="RATE",
              help="Cap each node's link, each way, at RATE in bit/s with a unit: kbit, "
                   "mbit or gbit, e.g. 100mbit, 1gbit (tc tbf). Default: not shaped.")
@click.option("--slots", type=click.IntRange(min=1),
              help="Processes a node takes before it is oversubscribed (the hostfile's "
                   "slots). Default: this machine's cores / nodes, at least 1.")
@click.option("--subnet", default=cluster_mod.DEFAULT_SUBNET, show_default=True,
              help="The nodes' private IPv4 subnet; refused if this machine already "
                   "uses a network that overlaps it.")
def up(nodes, bandwidth, slots, subnet):
    """Make the cluster: nodes, links, switch, hostfile and launch agent. What an
    earlier cluster (or a killed `up`) left is removed first; Ctrl-C removes what was
    made."""
    c = cluster_mod.up(nodes, bandwidth=bandwidth, subnet=subnet, slots=slots,
                       log=lambda m: err.print(escape(m), highlight=False))
    out.print(f"cluster up: {c.nodes} node(s) {', '.join(c.names)} on {cluster_mod.BRIDGE} "
              f"({c.subnet}), {c.slots} slot(s) each"
              + (f", links capped at {c.bandwidth} each way" if c.bandwidth else ""),
              highlight=False)
    out.print(f"hostfile {c.hostfile}; agent {c.agent}", highlight=False)
    out.print("run on it: `colltune sweep STUDY --cluster`, or any MPI command after "
              "`eval \"$(colltune cluster env)\"`", highlight=False)


@command("status")
def status():
    """The cluster as recorded and as it is: nodes, addresses, processes, shaping."""
    st = cluster_mod.status()
    if "cluster" not in st:
        out.print("no cluster (make one with `colltune cluster up --nodes N`)")
        return
    c = st["cluster"]
    state = "up" if st["up"] else ("incomplete (run `colltune cluster up` or `down`)")
    out.print(f"cluster {state}: {c.nodes} node(s), {c.subnet}, switch {cluster_mod.BRIDGE}"
              f"{'' if st['bridge'] else ' (missing)'}, {c.slots} slot(s) a node, "
              f"bandwidth {c.bandwidth or 'not shaped'}", highlight=False)
    for n, cpu in zip(st["nodes"], c.cpus):
        where = "" if n["present"] else " (missing)"
        out.print(f"  {n['name']}  {n['address']}  cores {cpu}  {n['processes']} process(es)"
                  f"{where}", highlight=False)
    out.print(f"hostfile {st['hostfile']}", highlight=False)
    out.print(f"agent    {st['agent']}", highlight=False)


@command("down")
def down():
    """Stop every process inside the nodes and remove the namespaces, links, switch and
    files the cluster made."""
    removed = cluster_mod.down()
    if not removed:
        out.print("no cluster to remove")
        return
    out.print(f"cluster down: removed {', '.join(removed)}", highlight=False)


@command("env")
def env():
    """Shell lines that make Open MPI's mpirun and MPICH's mpiexec run on the cluster
    (its hostfile, the agent, its subnet): eval "$(colltune cluster env)"."""
    c = cluster_mod.current()
    for k, v in cluster_mod.launch_env(c).items():
        click.echo(f"export {k}={shlex.quote(v)}")


for _c in (up, status, down, env):
    cluster.add_command(_c)
del _c
