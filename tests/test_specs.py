"""Algorithm specs (colltune.base.specs): split, parse, format, library specs, the
parameters as recorded and the remap parameter; and the one collective list."""

from __future__ import annotations

import json

import pytest

from colltune.base import collectives, specs
from colltune.base.errors import ColltuneError, did_you_mean
from colltune.base.specs import SpecError


# ---- colltune's specs -------------------------------------------------------------
@pytest.mark.parametrize("spec, name, params", [
    ("ring", "ring", {}),
    ("chain:segsize=8192,fanout=4", "chain", {"segsize": "8192", "fanout": "4"}),
    ("binomial:remap=seq", "binomial", {"remap": "seq"}),
])
def test_parse_and_format_round_trip(spec, name, params):
    assert specs.parse_spec(spec) == (name, params)
    assert specs.format_spec(name, params) == spec
    assert specs.format_spec(name, list(params.items())) == spec  # pairs, as Rule keeps them


def test_split_and_pairs():
    assert specs.split_spec("chain:segsize=8192,fanout=4") == ("chain", "segsize=8192,fanout=4")
    assert specs.split_spec("ring") == ("ring", "")
    assert list(specs.param_pairs(" segsize = 8K ,, fanout=2 ", "x")) == \
        [("segsize", "8K"), ("fanout", "2")]
    assert specs.parse_spec("chain: segsize=8192 ,") == ("chain", {"segsize": "8192"})
    assert specs.format_params({}) == "" and specs.format_params(None) == ""
    assert specs.format_spec("ring", None) == "ring"
    assert specs.algorithm_of("chain:fanout=2") == "chain"
    assert specs.algorithm_of("ompi:binomial:segsize=8192") == "ompi:binomial"
    assert specs.algorithm_of("mpich:ring") == "mpich:ring"


@pytest.mark.parametrize("spec, message", [
    ("chain:fanout", "chain:fanout: parameter 'fanout' is not key=value"),
    ("chain:fanout=", "chain:fanout=: parameter 'fanout=' is not key=value"),
    ("chain:=4", "chain:=4: parameter '=4' is not key=value"),
    ("chain:fanout=2,fanout=4", "chain:fanout=2,fanout=4: parameter 'fanout' given twice"),
])
def test_bad_specs_say_what_is_wrong(spec, message):
    with pytest.raises(SpecError) as exc:
        specs.parse_spec(spec)
    assert str(exc.value) == message
    assert isinstance(exc.value, ValueError) and isinstance(exc.value, ColltuneError)


def test_the_pairs_fail_where_the_bad_item_is():
    pairs = specs.param_pairs("a=1,b,c=3", "w")
    assert next(pairs) == ("a", "1")
    with pytest.raises(SpecError, match="w: parameter 'b' is not key=value"):
        next(pairs)


def test_split_specs():
    assert specs.split_specs("chain:segsize=8192,fanout=4,binomial") == \
        ["chain:segsize=8192,fanout=4", "binomial"]
    assert specs.split_specs("ring, ompi:chain:fanout=2,segsize=8K,,native") == \
        ["ring", "ompi:chain:fanout=2,segsize=8K", "native"]
    assert specs.split_specs("") == []


# ---- library specs ----------------------------------------------------------------
def test_library_specs():
    assert specs.is_lib_spec("ompi:binomial") and specs.is_lib_spec("mpich:ring:x=1")
    assert specs.is_lib_spec("ompi:all")
    assert not specs.is_lib_spec("binomial") and not specs.is_lib_spec("chain:segsize=8")
    assert specs.parse_lib_spec("ompi:binomial:segsize=8192,fanout=4") == \
        ("ompi", "binomial", {"segsize": "8192", "fanout": "4"})
    assert specs.parse_lib_spec(" mpich:ring ") == ("mpich", "ring", {})
    assert specs.parse_lib_spec("mpich:ring:") == ("mpich", "ring", {})
    for spec in ("ompi:binomial", "ompi:chain:fanout=2,segsize=16K", "mpich:scatter_allgather"):
        assert specs.format_lib_spec(*specs.parse_lib_spec(spec)) == spec


@pytest.mark.parametrize("spec, message", [
    ("ompi:", "'ompi:' is not a library algorithm spec (ompi:NAME[:key=value,...] or "
              "mpich:NAME[:key=value,...])"),
    ("chain:fanout=2", "'chain:fanout=2' is not a library algorithm spec"),
    ("ompi:chain:fanout", "ompi:chain:fanout: parameter 'fanout' is not key=value"),
    ("ompi:chain:fanout=2,fanout=3", "ompi:chain:fanout=2,fanout=3: parameter 'fanout' given "
                                     "twice"),
])
def test_bad_library_specs(spec, message):
    with pytest.raises(ValueError) as exc:
        specs.parse_lib_spec(spec)
    assert str(exc.value).startswith(message)


# ---- the parameters as recorded ---------------------------------------------------
def test_parse_params_as_strings():
    assert specs.parse_params("segsize=8192,fanout=4") == {"segsize": "8192", "fanout": "4"}
    assert specs.parse_params('{"radix": 3}') == {"radix": "3"}
    assert specs.parse_params({"radix": 3}) == {"radix": "3"}
    assert specs.parse_params("") == {} and specs.parse_params(None) == {}
    assert specs.parse_params(float("nan")) == {}
    assert specs.parse_params("{not json") == {} and specs.parse_params("[1, 2]") == {}
    assert specs.parse_params(" a = 1 , junk, b=x") == {"a": "1", "b": "x"}


def test_parse_params_with_numbers():
    assert specs.parse_params("segsize=8192,fanout=4,f=0.5,remap=rr", numbers=True) == \
        {"segsize": 8192, "fanout": 4, "f": 0.5, "remap": "rr"}
    d = {"segsize": 8192}
    assert specs.parse_params(d, numbers=True) == d
    assert specs.parse_params('{"segsize": 8192, "x": "4"}', numbers=True) == \
        {"segsize": 8192, "x": "4"}  # JSON keeps its types
    assert specs.parse_params(None, numbers=True) == {}


@pytest.mark.parametrize("value", [
    "segsize=8192,fanout=4", {"segsize": 8192, "fanout": 4}, '{"segsize": 8192, "fanout": 4}'])
def test_params_round_trip(value):
    assert specs.params_text(value) == "segsize=8192,fanout=4"
    stored = json.dumps(specs.parse_params(value, numbers=True), sort_keys=True)
    assert specs.params_text(stored) == "fanout=4,segsize=8192"
    assert specs.parse_params(specs.params_text(value), numbers=True) == \
        {"segsize": 8192, "fanout": 4}


def test_params_text_passes_other_text_through():
    assert specs.params_text(None) == "" and specs.params_text(float("nan")) == ""
    assert specs.params_text("{}") == ""
    assert specs.params_text("  seg = 4 ") == "seg = 4"
    assert specs.params_text("{broken") == "{broken"


# ---- remap ------------------------------------------------------------------------
def test_remap():
    assert specs.remap_of("ring:remap=seq") == "seq"
    assert specs.remap_of("chain:segsize=8192,remap=rr") == "rr"
    assert specs.remap_of("ring") == "none" and specs.remap_of(None) == "none"
    assert specs.remap_of("ring", '{"remap": "rr"}') == "rr"
    assert specs.remap_of("ring:remap=seq", {"remap": "auto"}) == "auto"
    assert specs.remap_of("ring:remap=seq", '{"segsize": 4}') == "seq"
    assert specs.remap_of("ring:remap=seq", '{"remap": null}') == "seq"
    assert specs.remap_of("ring", "segsize=4,remap=seq") == "seq"
    assert specs.remap_of("ring", float("nan")) == "none"
    assert specs.without_remap("chain:segsize=8192,remap=rr") == "chain:segsize=8192"
    assert specs.without_remap("ring:remap=seq") == "ring"
    assert specs.without_remap("ring") == "ring"
    for spec in ("ring", "chain:segsize=8192"):
        for remap in ("seq", "rr", "auto"):
            full = specs.with_remap(spec, remap)
            assert specs.remap_of(full) == remap and specs.without_remap(full) == spec
    assert specs.with_remap("ring", None) == "ring"
    with pytest.raises(ColltuneError, match="already sets remap"):
        specs.with_remap("ring:remap=seq", "rr")
    with pytest.raises(ColltuneError, match="--remap 'sideways': valid: none, seq, rr, auto"):
        specs.with_remap("ring", "sideways")


# ---- the collectives and did-you-mean --------------------------------------------
def test_one_collective_list():
    assert collectives.COLLECTIVES == ("bcast", "reduce", "gather", "allgather", "allreduce",
                                       "alltoall", "alltoallv", "scatter", "barrier",
                                       "reduce_scatter_block", "reduce_scatter", "allgatherv",
                                       "gatherv", "scatterv")
    assert [c for c in collectives.COLLECTIVES if collectives.per_process(c)] == \
        ["gather", "allgather", "alltoall", "alltoallv", "scatter", "reduce_scatter_block",
         "reduce_scatter", "allgatherv", "gatherv", "scatterv"]


def test_did_you_mean():
    assert did_you_mean("allgater", collectives.COLLECTIVES) == " (did you mean 'allgather'?)"
    assert did_you_mean("xyz", collectives.COLLECTIVES) == ""
    assert did_you_mean("a", {"b": 1}) == ""


def test_expand_grid():
    from colltune.base.specs import SpecError, expand_grid
    assert expand_grid("chain:segsize=4K..16K,fanout=2|4") == [
        f"chain:segsize={s},fanout={f}" for s in (4096, 8192, 16384) for f in (2, 4)]
    assert expand_grid("ompi:chain:segsize=1K..2K") == ["ompi:chain:segsize=1024",
                                                        "ompi:chain:segsize=2048"]
    assert expand_grid("ring") == ["ring"]
    assert expand_grid("chain:segsize=8192") == ["chain:segsize=8192"]
    with pytest.raises(SpecError, match="an empty value"):
        expand_grid("chain:fanout=2||4")
    with pytest.raises(SpecError, match="more than 256"):
        expand_grid("chain:segsize=1..1G,fanout=1|2|3|4|5|6|7|8|9")


def test_inner_algorithms_with_parameters_of_their_own():
    """`inter=ALG:key=value+key=value`: '+' joins the inner parameters, so that ',' still
    splits the outer ones, the lists of specs and the recorded parameters."""
    spec = "hier_ml:inter=pipeline:segsize=8192+fanout=2,leaders=4"
    assert specs.parse_spec(spec) == ("hier_ml", {"inter": "pipeline:segsize=8192+fanout=2",
                                                  "leaders": "4"})
    assert specs.split_inner("pipeline:segsize=8192+fanout=2") == \
        ("pipeline", "segsize=8192,fanout=2")
    assert specs.split_inner("binomial") == ("binomial", "")
    assert specs.inner_spec("knomial:radix=3+segsize=0") == "knomial:radix=3,segsize=0"
    assert specs.format_inner("knomial", {"radix": 3, "segsize": 0}) == \
        "knomial:radix=3+segsize=0"
    assert specs.parse_params("inter=knomial:radix=3+segsize=0,vppn=2", numbers=True) == \
        {"inter": "knomial:radix=3+segsize=0", "vppn": 2}
    # in a list, 'inter=ALG:...' continues the spec before it
    assert specs.split_specs(f"native,hier:intra=shm,inter=knomial:radix=4,{spec},ring") == \
        ["native", "hier:intra=shm,inter=knomial:radix=4", spec, "ring"]
    # grids: an inner value with parameters is one alternative; its own grids expand in it
    assert specs.expand_grid("hier:inter=pipeline:segsize=8192|pipeline:segsize=65536") == \
        ["hier:inter=pipeline:segsize=8192", "hier:inter=pipeline:segsize=65536"]
    assert specs.expand_grid("hier:inter=knomial:radix=2|4+segsize=1K..2K|binomial,vppn=2") == \
        [f"hier:inter=knomial:radix={r}+segsize={s},vppn=2" for r in (2, 4)
         for s in (1024, 2048)] + ["hier:inter=binomial,vppn=2"]
    with pytest.raises(SpecError, match="parameter 'inter': .*'x' is not a size"):
        specs.expand_grid("hier:inter=pipeline:segsize=1K..x")
