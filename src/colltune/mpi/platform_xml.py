"""SimGrid 4 platform files (XML, DTD 4.1) of a platform description (mpi/platforms.py).

Two constructions of the same hosts (`node-<i>`, one a node, with the node's cores):

- `cluster_xml`: a SimGrid `<cluster>`. Two ranks of one node talk through the host's
  loopback link, a FATPIPE: every pair of a node gets the intra-node bandwidth however
  many pairs talk at once (no memory-bandwidth contention).
- `membus_xml`, for a flat platform whose description gives the node's memory bandwidth
  shared by all messages inside it (`[intra] shared_bandwidth_GBps`): hosts, links and a
  route for every pair of nodes, written out. A message inside a node crosses the
  node's loopback link (FATPIPE: latency and the bandwidth one pair gets) and its
  memory bus (SHARED: all messages inside the node at that moment share its
  bandwidth). Between nodes, as in the cluster: the sender's up link, the switch
  backbone if any, the receiver's down link. SimGrid's cluster cannot express this:
  its loopback is always a FATPIPE.

Host names and the hosts' speed are the same in both, so host files, SMPI's view of
the nodes (`MPI_Comm_split_type`) and simulated times outside the nodes do not change.
"""

from __future__ import annotations

from xml.sax.saxutils import escape, quoteattr

HOST_PREFIX = "node-"
HOST_SPEED_FLOPS = 1e9  # any fixed value: computation is not what is simulated
MEMBUS_MAX_NODES = 128  # a route for every ordered pair of nodes: 16,384 at 128


def _xml_id(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "cluster"


def _bw(gbps: float) -> str:
    return f"{gbps * 1e9:.10g}Bps"


def _lat(us: float) -> str:
    return f"{us:.10g}us"


def _flops(f: float) -> str:
    return f"{f:.10g}f"


def _document(p, head: str, body: str) -> str:
    return ("<?xml version='1.0'?>\n"
            '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
            '<platform version="4.1">\n'
            f"  <!-- {escape(head).replace('--', '-')} -->\n"
            '  <zone id="world" routing="Full">\n'
            f"{body}"
            "  </zone>\n"
            "</platform>\n")


def _head(p) -> str:
    return (f"colltune platform '{p.name}': {p.nodes} node(s) x {p.sockets} "
            f"socket(s) x {p.cores_per_socket} cores, {p.topology}; "
            f"written by colltune (colltune platform show {p.name})")


def cluster_xml(p) -> str:
    """The platform as one SimGrid cluster (see the module docstring)."""
    attrs = {
        "id": _xml_id(p.name),
        "prefix": HOST_PREFIX,
        "radical": f"0-{p.nodes - 1}",
        "suffix": "",
        "speed": _flops(HOST_SPEED_FLOPS),
        "core": str(p.cores_per_node),
        "bw": _bw(p.net_bandwidth_GBps),
        "lat": _lat(p.link_latency_us),
        "sharing_policy": "SPLITDUPLEX",
        "loopback_bw": _bw(p.intra_bandwidth_GBps),
        "loopback_lat": _lat(p.intra_latency_us),
    }
    if p.topology != "flat":
        attrs["topology"] = {"fat-tree": "FAT_TREE", "dragonfly": "DRAGONFLY",
                             "torus": "TORUS"}[p.topology]
        attrs["topo_parameters"] = p.topo_parameters
    elif p.switch_bandwidth_GBps is not None:
        attrs["bb_bw"] = _bw(p.switch_bandwidth_GBps)
        attrs["bb_lat"] = "0s"
        attrs["bb_sharing_policy"] = "SHARED"
    cluster = "".join(f"\n             {k}={quoteattr(v)}" for k, v in attrs.items())
    return _document(p, _head(p), f"    <cluster{cluster}/>\n")


def membus_xml(p) -> str:
    """The flat platform with a memory bus a node (see the module docstring)."""
    lines = []
    for i in range(p.nodes):
        n = f"{HOST_PREFIX}{i}"
        lines += [f'    <host id="{n}" speed="{_flops(HOST_SPEED_FLOPS)}" '
                  f'core="{p.cores_per_node}"/>',
                  f'    <link id="{n}_up" bandwidth="{_bw(p.net_bandwidth_GBps)}" '
                  f'latency="{_lat(p.link_latency_us)}"/>',
                  f'    <link id="{n}_down" bandwidth="{_bw(p.net_bandwidth_GBps)}" '
                  f'latency="{_lat(p.link_latency_us)}"/>',
                  f'    <link id="{n}_loopback" bandwidth="{_bw(p.intra_bandwidth_GBps)}" '
                  f'latency="{_lat(p.intra_latency_us)}" sharing_policy="FATPIPE"/>',
                  f'    <link id="{n}_membus" bandwidth="{_bw(p.intra_shared_bandwidth_GBps)}" '
                  'latency="0s"/>']
    backbone = p.switch_bandwidth_GBps is not None
    if backbone:
        lines.append(f'    <link id="backbone" bandwidth="{_bw(p.switch_bandwidth_GBps)}" '
                     'latency="0s"/>')
    for i in range(p.nodes):
        a = f"{HOST_PREFIX}{i}"
        for j in range(p.nodes):
            b = f"{HOST_PREFIX}{j}"
            if i == j:
                links = [f"{a}_loopback", f"{a}_membus"]
            else:
                links = [f"{a}_up", *(["backbone"] if backbone else []), f"{b}_down"]
            ctn = "".join(f'<link_ctn id="{x}"/>' for x in links)
            lines.append(f'    <route src="{a}" dst="{b}" symmetrical="NO">{ctn}</route>')
    head = _head(p) + (f"; memory bus {p.intra_shared_bandwidth_GBps} GB/s a node, shared "
                       "by the messages inside it")
    return _document(p, head, "\n".join(lines) + "\n")
