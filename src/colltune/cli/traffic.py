"""`colltune traffic`: bytes and messages inside and between nodes of one call."""

from __future__ import annotations

import json

import click
from rich.table import Table

from colltune.base.collectives import COLLECTIVES
from colltune.base.files import check_writable
from colltune.base.specs import REMAPS, split_specs
from colltune.workflows import traffic as wf
from ._common import (MPI_HELP, SIZE_HELP, build_or_fail, command, fail, np_option, out,
                      size_option, write_or_keep)


def _kib(n: int) -> str:
    return f"{n / 1024:.1f}" if n % 1024 else str(n // 1024)


@command()
@click.option("--mpi", "mpi_spec", help=MPI_HELP)
@click.option("--coll", required=True, type=click.Choice(list(COLLECTIVES)),
              help="Collective.")
@click.option("--algo", "spec", required=True,
              help="One colltune algorithm spec, e.g. recursive_doubling or ring:remap=seq.")
@np_option("nps", min=1, required=True,
           help="Process counts, one launch each: 2,4 or 2:8 (local, oversubscribed: "
                "nothing is timed).")
@click.option("--nodes", type=click.IntRange(min=1),
              help="Virtual nodes (COLLTUNE_NODES); default: the real ones (one here).")
@click.option("--order", default="seq", show_default=True, type=click.Choice(["seq", "rr"]),
              help="How ranks are placed on the virtual nodes: seq (contiguous blocks, "
                   "Open MPI's default) or rr (round-robin, MPICH's default).")
@click.option("--node-list", help="The node of each rank instead of --nodes/--order: "
                                  "0,0,1,1,2 (an irregular placement).")
@size_option("sizes", default="1K", show_default=True,
             help=SIZE_HELP + " Allgather: bytes per process; Reduce/Allreduce: multiples "
                               "of 4 (ints summed).")
@click.option("--remap", type=click.Choice(list(REMAPS)),
              help="Add remap=... to the algorithm spec.")
@click.option("--root", default=0, show_default=True, type=click.IntRange(min=0),
              help="Root of Bcast/Reduce.")
@click.option("--per-rank", is_flag=True, help="Table: one row per rank as well.")
@click.option("--format", "fmt", default="table", show_default=True,
              type=click.Choice(["table", "json"]))
@click.option("-o", "--output", help="Write the json here (atomically) instead of stdout.")
@click.option("--timeout", default=600.0, show_default=True, help="Seconds for the launch.")
def traffic(mpi_spec, coll, spec, nps, nodes, order, node_list, sizes, remap, root, per_rank,
            fmt, output, timeout) -> None:
    """Bytes and messages one call sends inside nodes and between nodes.

    Counted from the algorithm's actual sends (every point-to-point send of the
    library, per destination), with ranks placed on virtual nodes; per rank
    (what it sends) and in total. Example: the seed's recursive doubling
    Allgather, 128 ranks on 16 nodes, sequential vs round-robin placement:

      colltune traffic --coll allgather --algo recursive_doubling --np 128 --nodes 16 --order rr
    """
    specs = split_specs(spec)
    if len(specs) > 1:
        fail(f"--algo '{spec}': traffic counts one algorithm at a time; give one, e.g. "
             f"--algo {specs[0]}")
    size_list = sizes  # parsed by --size
    if output and fmt != "json":
        fail("-o writes json: add --format json")
    if output:
        check_writable(output, "-o")
    nl = None
    if node_list:
        if nodes is not None:
            fail("--nodes and --node-list exclude each other: give one")
        nl = wf.parse_node_list(node_list)
    if root >= min(nps):
        fail(f"--root {root}: valid 0..{min(nps) - 1}")
    b = build_or_fail(mpi_spec)
    groups = wf.count(b, coll, spec, nps, size_list, remap=remap, nodes=nodes, order=order,
                      node_list=nl, root=root, timeout=timeout)  # the records of each count
    if fmt == "json":
        text = json.dumps([r.as_dict() for recs in groups for r in recs], indent=1) + "\n"
        if output:
            write_or_keep(output, text, "traffic.json")
        else:
            click.echo(text, nl=False)
        return
    for recs in groups:
        r0 = recs[0]
        out.print(f"{coll}/{r0.spec} (ran {r0.algorithm}{', remap ' + r0.remap_applied if r0.remap_applied != 'none' else ''}"
                  f"{'; ' + r0.fallback if r0.fallback else ''}): {r0.np} ranks on {r0.nodes} "
                  f"nodes (at most {r0.max_per_node} per node), placement {r0.placement}"
                  f"{'' if r0.regular else ', uneven nodes'}", highlight=False)
        t = Table(title="bytes and messages sent (total over ranks; KiB)")
        for c in ("size", "intra KiB", "intra msgs", "inter KiB", "inter msgs",
                  "max inter KiB/rank"):
            t.add_column(c, justify="right")
        for r in recs:
            tot = r.total
            t.add_row(str(r.size), _kib(tot["intra_bytes"]), str(tot["intra_msgs"]),
                      _kib(tot["inter_bytes"]), str(tot["inter_msgs"]),
                      _kib(max(x[2] for x in r.ranks)))
        out.print(t)
        if per_rank:
            for r in recs:
                pt = Table(title=f"per rank, size {r.size}")
                for c in ("rank", "node", "intra B", "intra msgs", "inter B", "inter msgs"):
                    pt.add_column(c, justify="right")
                for d in r.per_rank():
                    pt.add_row(*(str(d[k]) for k in ("rank", "node", "intra_bytes", "intra_msgs",
                                                      "inter_bytes", "inter_msgs")))
                out.print(pt)
