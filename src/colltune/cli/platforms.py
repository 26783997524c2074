"""`colltune platform`: simulated platforms (SimGrid platform files) from descriptions.
The work is in workflows/platforms.py and workflows/calibrate.py (over
mpi/platforms.py); see docs/simulation-platforms.md."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.markup import escape
from rich.table import Table

from colltune.mpi import platforms as plat
from colltune.mpi.placement import MAPPINGS, ORDERS
from colltune.base.files import check_writable
from colltune.base.units import fmt_size
from colltune.workflows import calibrate as wf
from colltune.workflows import platforms as wf_plat
from ._common import (MPI_HELP, Command, build_or_fail, check_nps, err, fail, np_option, out,
                      size_option, write_or_keep)


class Group(Command, click.Group):
    """A group of commands with the one error path (see _common.Command)."""


@click.group(name="platform", cls=Group)
def platform() -> None:
    """Simulated platforms: SimGrid platform files from short descriptions.

    A platform is nodes x sockets x cores with intra-node and network latency and
    bandwidth and a topology (flat switch, fat-tree, dragonfly, torus). list shows
    the presets, show every figure and its source, write the SimGrid XML (and a
    host file for a process count), calibrate measures this machine for the
    `this-machine` preset. See docs/simulation-platforms.md.
    """


def _fmt(x: float) -> str:
    return f"{x:.4g}"


def _charge_text(pts) -> str:
    """A charged computation's table, short: '8 0.003 µs, ..., 1M 40.4 µs'."""
    return ", ".join(f"{fmt_size(m)} {t:.4g} µs" for m, t in pts)


@platform.command(name="list", cls=Command)
def list_() -> None:
    """The presets, one line each."""
    t = Table(title="platform presets (colltune platform show NAME for figures and sources)",
              title_justify="left")
    for col in ("name", "nodes", "sockets x cores", "topology", "intra µs", "intra GB/s",
                "network µs", "network GB/s"):
        t.add_column(col, justify="left" if col in ("name", "topology") else "right")
    for name, p in zip(plat.PRESETS, wf_plat.presets()):
        t.add_row(name, str(p.nodes), f"{p.sockets} x {p.cores_per_socket}", p.topology,
                  _fmt(p.intra_latency_us), _fmt(p.intra_bandwidth_GBps),
                  _fmt(p.net_latency_us), _fmt(p.net_bandwidth_GBps))
    out.print(t)
    cal = plat.calibration_path()
    out.print(f"this-machine: {'calibrated, ' + str(cal) if cal.is_file() else 'default figures (not calibrated here: colltune platform calibrate)'}",
              highlight=False)


@platform.command(cls=Command)
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print the description as JSON "
              "(what simulated results store as provenance).")
def show(name, as_json) -> None:
    """Every figure of platform NAME (a preset, PRESET:nodes=N or a description file)
    and its source."""
    p = plat.resolve(name)
    d = p.describe()
    if as_json:
        click.echo(json.dumps(d, indent=2))
        return
    out.print(f"[bold]{escape(p.name)}[/]: {escape(p.about)}", highlight=False)
    out.print(f"from {escape(p.origin)}", highlight=False)
    t = Table(title_justify="left", show_lines=False)
    t.add_column("figure")
    t.add_column("value", justify="right")
    t.add_column("source")
    rows = [("nodes", "nodes", ""), ("sockets", "sockets", ""),
            ("cores a socket", "cores_per_socket", ""),
            ("intra-node latency", "intra_latency", "µs"),
            ("intra-node bandwidth", "intra_bandwidth", "GB/s"),
            ("network latency (nearest nodes)", "net_latency", "µs"),
            ("network bandwidth", "net_bandwidth", "GB/s"),
            ("topology", "topology", ""), ("allocation", "allocation", "")]
    if d.get("switch_bandwidth"):
        rows.insert(7, ("switch backbone", "switch_bandwidth", "GB/s"))
    if d.get("intra_shared_bandwidth"):
        rows.insert(5, ("intra-node memory bus (shared)", "intra_shared_bandwidth", "GB/s"))
    if d.get("eager_limit"):
        rows.append(("MPI eager limit", "eager_limit", "B"))
    for label, key, unit in rows:
        f = d[key]
        v = f["value"]
        text = f"{v}" + (f" {unit}" if unit else "")
        if key == "topology" and p.topo_parameters:
            text += f" {p.topo_parameters}"
        t.add_row(label, escape(text), escape(f["source"]))
    for k, v in d.get("other_sources", {}).items():
        t.add_row(escape(k), "", escape(v))
    out.print(t)
    sg = d["simgrid"]
    out.print(f"SimGrid: hosts {sg['hosts']} ({p.cores_per_node} cores each, {p.cores} in all); "
              f"link latency {sg['link_latency_us']:.4g} µs, {sg['links_between_nearest_nodes']} "
              "link(s) between the nearest nodes; ranks of one node use its loopback link"
              + (" and share its memory bus" if p.intra_shared_bandwidth_GBps else ""),
              highlight=False)
    out.print("smpirun options: " + " ".join(sg["cfg"]), highlight=False)
    for kind, pts in p.compute.items():
        out.print(f"charged in simulation: local {kind} {_charge_text(pts)} "
                  f"({escape(p.sources.get('compute_' + kind, 'not stated'))})", highlight=False)
    if p.calibration:
        c = p.calibration
        out.print(f"calibrated {c.get('date')} on {c.get('host')} ({c.get('mpi', '')}): "
                  f"alpha {c.get('alpha_us', 0):.4g} µs, beta {c.get('beta_GBps', 0):.4g} GB/s, "
                  f"Hockney fit median |error| {100 * c.get('fit_median_abs_rel_error', 0):.1f}%"
                  + ("; piecewise factors reproduce each measured size" if c.get("piecewise")
                     else ""), highlight=False)


@platform.command(cls=Command)
@click.argument("name")
@click.option("-o", "--output", required=True, help="The SimGrid platform file (XML) to write.")
@click.option("--hostfile", help="Also write the smpirun host file: the host of each rank, "
              "one line a rank (needs --np).")
@np_option("np", many=False, min=1, one="a host file places one set of processes",
           help="Processes of the host file.")
@click.option("--mapping", default="core", show_default=True,
              type=click.Choice(MAPPINGS),
              help="core: fill the cores of a node, then the next node; socket: alternate "
                   "the sockets of a node (one host: as core); node: spread over the nodes.")
@click.option("--order", default="seq", show_default=True, type=click.Choice(ORDERS),
              help="Rank order across nodes: seq: a block of ranks a node; rr: round-robin.")
@click.option("--nodes", type=click.IntRange(min=1),
              help="Nodes to use (default: the fewest that hold --np; node mapping: all).")
@click.option("--oversubscribe", is_flag=True,
              help="Allow more processes than the platform's cores (several ranks a core).")
@click.option("--description", "desc_out", help="Also write the description (TOML) here.")
def write(name, output, hostfile, np, mapping, order, nodes, oversubscribe, desc_out) -> None:
    """Write the SimGrid platform file of NAME (and optionally a host file)."""
    if hostfile and np is None:
        fail("--hostfile needs --np (the processes it places)")
    if np is not None and not hostfile:
        fail("--np is for --hostfile: add --hostfile FILE")
    for path, what in ((output, "-o"), (hostfile, "--hostfile"),
                       (desc_out, "--description")):
        if path:
            check_writable(path, what)
    f = wf_plat.files(name, np if hostfile else None, mapping, order, nodes, oversubscribe,
                      description=bool(desc_out))
    p = f.platform
    write_or_keep(Path(output), f.xml, "platform.xml")
    msg = f"wrote {output}: {p.nodes} host(s), {p.cores} cores"
    if hostfile:
        write_or_keep(Path(hostfile), f.hosts, "hostfile")
        msg += f"; {hostfile}: {np} ranks on {f.nodes_used} node(s) ({mapping}, {order})"
    if desc_out:
        write_or_keep(Path(desc_out), f.description, "platform.toml")
        msg += f"; {desc_out}: the description"
    err.print(msg, highlight=False)
    err.print("smpirun options: " + " ".join(plat.simgrid_cfg(p)), highlight=False)


@platform.command(cls=Command)
@click.option("--mpi", "mpi_spec", help=MPI_HELP)
@size_option("sizes", default="8:1M", show_default=True,
             help="Ping-pong sizes in bytes: list (8,64K,1M) or power-of-two range.")
@click.option("--reps", default=11, show_default=True, type=click.IntRange(min=1),
              help="Repetitions of each size.")
@click.option("--statistic", default="min", show_default=True,
              type=click.Choice(["min", "median"]),
              help="Time of a size to calibrate on: min (least disturbed by other load) or "
                   "median of the repetitions.")
@click.option("--piecewise/--hockney", default=True, show_default=True,
              help="Piecewise factors so that the simulated ping-pong follows the measured "
                   "one size by size, or the plain Hockney fit alone.")
@click.option("--from-json", "from_json", type=click.Path(exists=True, dir_okay=False),
              help="Calibrate from records of `colltune pingpong --format json` instead of "
                   "running the ping-pong.")
@click.option("-o", "--output", help="Where to write the description (default: the colltune "
              "cache, where the this-machine preset reads it).")
@click.option("--compute/--no-compute", default=None,
              help="Also time a local copy (memcpy) and a local reduction (MPI_Reduce_local, "
                   "char sum) on one process: the computation simulation charges "
                   "[default: on; off with --from-json].")
@click.option("--eager/--no-eager", default=None,
              help="Also find the MPI library's eager limit (the largest MPI_Send that "
                   "returns before the receiver posts its receive): simulated sends above "
                   "it wait for the receiver [default: on; off with --from-json].")
@click.option("--data-from", "data_from", default="memory", show_default=True,
              type=click.Choice(["memory", "cache"]),
              help="Time the local copy and reduction with their data coming from memory "
                   "(a 256 MiB pool of buffers, the charge that matched measured collectives "
                   "best) or from the cache (one pair of buffers, reused).")
@click.option("--exchange/--no-exchange", default=None,
              help="Also time two messages at once (2 processes sending to each other, "
                   "64K, 256K, 1M): when they cost more than one, simulated messages inside "
                   "the node share a memory bus fitted to both [default: on; off with "
                   "--from-json, whose exchange records count when it has them].")
@click.option("--timeout", default=600.0, show_default=True, help="Seconds before giving up.")
def calibrate(mpi_spec, sizes, reps, statistic, piecewise, from_json, compute, data_from,
              eager, exchange, output, timeout) -> None:
    """Measure this machine (2-process ping-pong, two messages at once, eager limit, local
    copy and reduction) and write the this-machine platform."""
    target = Path(output) if output else plat.calibration_path()
    check_writable(target, "-o" if output else "the calibration file",
                   create_folders=not output)  # the cache's folder is made when needed
    if compute is None:
        compute = not from_json
    if eager is None:
        eager = not from_json
    if exchange is None:
        exchange = not from_json
    records = None
    if from_json:
        records = wf.records_from_json(from_json)
    else:
        wf.check_sizes(sizes)  # parsed by --size; before the ping-pong runs, not after
        check_nps([2])
    p = wf.calibrate(lambda: build_or_fail(mpi_spec), sizes, reps, statistic, piecewise,
                     records=records, records_from=from_json, compute=compute,
                     data_from=data_from, eager=eager, exchange=exchange, timeout=timeout,
                     progress=lambda m: err.print(m, highlight=False))
    write_or_keep(target, p.to_toml(), "this-machine.toml")
    c = p.calibration
    out.print(f"wrote {target}: alpha {c['alpha_us']:.4g} µs, beta {c['beta_GBps']:.4g} GB/s "
              f"(Hockney fit, median |error| {100 * c['fit_median_abs_rel_error']:.1f}%, "
              f"max {100 * c['fit_max_abs_rel_error']:.1f}%)"
              + ("; piecewise factors for each size" if piecewise else ""), highlight=False)
    for kind, pts in p.compute.items():
        out.print(f"charged in simulation: local {kind} " + _charge_text(pts), highlight=False)
    if "exchange_sizes" in c:
        ratio = ", ".join(f"{v:.2f}x" for v in c["exchange_over_pingpong"])
        out.print(f"two messages at once took {ratio} the time of one ("
                  + ", ".join(map(fmt_size, c["exchange_sizes"])) + "): "
                  + (f"memory bus {p.intra_shared_bandwidth_GBps:.4g} GB/s shared by the "
                     "messages inside the node" if p.intra_shared_bandwidth_GBps is not None
                     else "no memory bus (concurrent messages do not slow each other)"),
                  highlight=False)
    if p.eager_limit_bytes is not None:
        out.print(f"eager limit: {p.eager_limit_bytes} B (larger simulated sends wait for the "
                  "receiver)", highlight=False)
    far = wf.far_from_fit(p)
    if far:
        err.print(f"warning: at {', '.join(map(str, far))} B the measured time is more than 2x "
                  "off the fit: if the machine was busy, calibrate again when it is quiet "
                  "(the piecewise factors follow what was measured)", highlight=False)
    if not output:
        out.print("the this-machine preset now uses it (colltune platform show this-machine)",
                  highlight=False)
