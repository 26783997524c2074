"""Study files: defaults, ranges, errors that name the key and the problem, presets."""

from __future__ import annotations

import pytest

from colltune.studies import study as st
from colltune.studies.study import StudyError

SMALLEST = """
[study]
name = "example"
collectives = ["bcast"]
algorithms = ["binomial", "linear", "native"]
sizes = [8, 4096]
processes = [2, 3]
repetitions = 2
"""


def test_smallest_file_gets_the_defaults():
    s = st.loads(SMALLEST)
    assert s.name == "example"
    assert s.collectives == ["bcast"]
    assert s.algorithms == {"bcast": ["binomial", "linear", "native"]}
    assert s.sizes == [8, 4096] and s.processes == [2, 3] and s.repetitions == 2
    assert s.mapping == ["core"] and s.order == ["seq"]
    assert s.iterations is None and s.warmup is None
    assert (s.timing, s.mpi, s.launcher, s.root, s.dtype, s.op) == (
        "osu", "openmpi", "local", 0, "char", "sum")
    assert s.seed is None and s.shuffle is True and s.timeout > 0
    assert s.reps_per_launch == 1 and s.env == {}


def test_sizes_and_processes_forms():
    s = st.loads(SMALLEST.replace("sizes = [8, 4096]", 'sizes = ["1..1K", "64K", 8, "1M"]')
                 .replace("processes = [2, 3]", 'processes = ["2..8 step 2", "16..64 x2", 3]'))
    assert s.sizes == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 65536, 1048576]
    assert s.processes == [2, 3, 4, 6, 8, 16, 32, 64]
    s = st.loads(SMALLEST.replace("sizes = [8, 4096]", 'sizes = "2..1M"'))
    assert len(s.sizes) == 20 and s.sizes[0] == 2


def test_per_collective_algorithms():
    text = SMALLEST.replace('collectives = ["bcast"]', 'collectives = ["bcast", "reduce"]').replace(
        'algorithms = ["binomial", "linear", "native"]', "").replace(
        "repetitions = 2", 'repetitions = 2\n[study.algorithms]\nbcast = ["chain"]\n'
                           'reduce = ["binary", "native"]')
    s = st.loads(text)
    assert s.algorithms == {"bcast": ["chain"], "reduce": ["binary", "native"]}


@pytest.mark.parametrize("change, message", [
    (("sizes = [8, 4096]", 'sizes = [8, 4096, "12Q"]'),
     "study.sizes[2]: '12Q' is not a size; use bytes like 4096, 4K or a range 1:1M"),
    (("repetitions = 2", "repetitons = 2"),
     "study.repetitons: unknown key (did you mean 'repetitions'?)"),
    (("repetitions = 2", "repetitions = 0"), "study.repetitions: 0 must be at least 1"),
    (("repetitions = 2", 'repetitions = "two"'), "study.repetitions: expected a whole number"),
    (('collectives = ["bcast"]', 'collectives = ["bcats"]'),
     "study.collectives[0]: 'bcats' is not one of bcast, reduce, gather, allgather, allreduce, "
     "alltoall, alltoallv, scatter, barrier, reduce_scatter_block, reduce_scatter, allgatherv, "
     "gatherv, scatterv, heat "
     "(did you mean 'bcast'?)"),
    (("processes = [2, 3]", 'processes = [2, "x"]'),
     "study.processes[1]: 'x' is not a process count"),
    (("processes = [2, 3]", "processes = [0]"), "study.processes[0]: 0 is not a process count"),
    (("repetitions = 2", 'repetitions = 2\nmapping = ["core", "sockt"]'),
     "study.mapping[1]: 'sockt' is not one of core, socket, node (did you mean 'socket'?)"),
    (("repetitions = 2", 'repetitions = 2\norder = "random"'),
     "study.order[0]: 'random' is not one of seq, rr"),
    (("repetitions = 2", 'repetitions = 2\nlauncher = "hostfile"'),
     "study.hostfile: missing; launcher = 'hostfile' needs a hostfile path"),
    (("repetitions = 2", 'repetitions = 2\nmax_processes = "lots"'),
     "study.max_processes: 'lots' is not a whole number, 'cores' or 'N*cores'"),
    (("repetitions = 2", "repetitions = 2\niterations = 10\ntime_budget = 1.0"),
     "study.time_budget: excludes study.iterations"),
    (('name = "example"', ""), "study.name: missing; it is required"),
    (("[study]", "[studdy]"),
     "studdy: unknown table or key at the top level (did you mean 'study'?)"),
    (("repetitions = 2", "repetitions = 2\n[sbatch]\npartiton = 'x'"),
     "sbatch.partiton: unknown key (did you mean 'partition'?)"),
    (("repetitions = 2", "repetitions = [2"), "not valid TOML"),
])
def test_errors_name_the_key_and_the_problem(change, message):
    with pytest.raises(StudyError) as exc:
        st.loads(SMALLEST.replace(*change))
    assert message in str(exc.value)


def test_algorithms_table_must_match_collectives():
    text = SMALLEST.replace('algorithms = ["binomial", "linear", "native"]', "").replace(
        "repetitions = 2", 'repetitions = 2\n[study.algorithms]\nreduce = ["binary"]')
    with pytest.raises(StudyError, match=r"study.algorithms.reduce: not a collective of this "
                                         r"study; it is not in study.collectives \(bcast\)"):
        st.loads(text)


def test_max_processes_scales_to_the_machine():
    s = st.loads(SMALLEST.replace("processes = [2, 3]", 'processes = "2..48 step 2"')
                 .replace("repetitions = 2", 'repetitions = 2\nmax_processes = "2*cores"'))
    kept, note = s.scaled_processes(2)
    assert kept == [2, 4]
    assert "2:48 step 2 -> 2, 4" in note
    kept, note = s.scaled_processes(48)
    assert kept == list(range(2, 49, 2)) and note is None
    s.max_processes = 1
    with pytest.raises(StudyError, match="leaves none"):
        s.scaled_processes(2)


def test_hostfile_is_relative_to_the_study_file(tmp_path):
    (tmp_path / "hosts").write_text("a slots=2\n")
    f = tmp_path / "s.toml"
    f.write_text(SMALLEST.replace("repetitions = 2", 'repetitions = 2\nlauncher = "hostfile"\n'
                                                     'hostfile = "hosts"'))
    s = st.load(f)
    assert s.hostfile == str(tmp_path / "hosts")


def test_presets_load_and_are_package_data():
    names = st.preset_names()
    assert {"quick", "seed000", "seed001", "seed004"} <= set(names)
    for n in names:
        s = st.read_preset(n)
        assert s.name == n and s.description
    q = st.read_preset("quick")
    assert q.sizes == [8, 65536, 1048576] and q.repetitions >= 4  # enough for evidence
    # the main job measures what the machine can measure honestly: a core per process
    assert q.scaled_processes(2)[0] == [2] and q.scaled_processes(4)[0] == [2, 4]
    assert q.scaled_processes(12)[0] == [2, 4, 8]
    s0 = st.read_preset("seed000")
    assert s0.algorithms["bcast"][:3] == ["linear", "chain", "split_binary"]
    assert s0.algorithms["reduce"][:3] == ["linear", "chain", "binary"]
    assert s0.sizes == [2 ** i for i in range(1, 21)] and s0.mapping == ["core", "socket"]
    assert s0.processes == list(range(2, 49, 2))
    with pytest.raises(StudyError, match="did you mean 'quick'"):
        st.read_preset("quik")


def test_the_alltoall_presets_measure_every_alltoall_algorithm(ompi_build):
    """`alltoall`: every colltune Alltoall algorithm, native and every Open MPI one under
    Open MPI, over sizes per destination and process counts scaled to the machine;
    `alltoall-sim`: the same study simulated on seed 000's cluster (orfeo-thin), at
    process counts its 2 nodes hold."""
    from colltune.drivers import registry
    from colltune.mpi import libalgos
    from colltune.mpi.platforms import resolve

    a = st.read_preset("alltoall")
    assert a.collectives == ["alltoall"] and a.repetitions >= 4
    assert len(a.sizes) >= 4 and a.sizes[0] <= 8 and a.sizes[-1] >= 64 * 1024
    assert a.scaled_processes(2)[0] == [2, 4] and a.scaled_processes(32)[0][-1] == 64
    got = st.resolve_algorithms(a, ompi_build)["alltoall"]
    ours = [n for n in registry.names(ompi_build, "alltoall") if n != "native"]
    assert set(ours) >= {"linear", "pairwise", "bruck", "linear_sync", "two_proc"}
    lib = libalgos.all_names(ompi_build.mpi, "alltoall")
    assert {x.split(":")[1] for x in lib} >= {"linear", "pairwise", "bruck", "linear_sync"}
    assert set(got) == set(ours) | {"native"} | set(lib)
    sim = st.read_preset("alltoall-sim")
    assert (sim.mpi, sim.platform, sim.collectives) == ("smpi", "orfeo-thin", ["alltoall"])
    assert sim.algorithms == a.algorithms and list(sim.mapping) == ["node"]
    plat = resolve(sim.platform)
    assert max(sim.processes) <= sim.nodes * plat.sockets * plat.cores_per_socket
    assert sim.nodes <= plat.nodes


def test_algorithm_names_are_checked_against_the_registry(ompi_build):
    s = st.loads(SMALLEST.replace('"native"]', '"natve"]'))
    with pytest.raises(StudyError, match=r"study.algorithms\[2\]: unknown bcast algorithm 'natve' "
                                         r"\(did you mean 'native'\?\)"):
        st.resolve_algorithms(s, ompi_build)
    s = st.loads(SMALLEST.replace('"linear"', '"chain:segsze=8192"'))
    with pytest.raises(StudyError, match=r"study.algorithms\[1\]: 'chain:segsze=8192': bcast/chain "
                                         r"has no parameter 'segsze' \(did you mean 'segsize'\?\)"):
        st.resolve_algorithms(s, ompi_build)
    s = st.loads(SMALLEST.replace('"linear"', '"ours"'))
    algos = st.resolve_algorithms(s, ompi_build)["bcast"]
    assert algos[0] == "binomial" and "chain" in algos and algos[-1] == "native"
    assert len(algos) == len(set(algos))


def test_library_algorithms_are_checked(ompi_build):
    pytest.importorskip("colltune.mpi.libalgos")
    s = st.loads(SMALLEST.replace('"linear"', '"ompi:chain:segsize=8K"'))
    assert "ompi:chain:segsize=8K" in st.resolve_algorithms(s, ompi_build)["bcast"]
    s = st.loads(SMALLEST.replace('"linear"', '"mpich:binomial"'))
    with pytest.raises(StudyError, match=r"study.algorithms\[1\]: mpich:binomial needs MPICH"):
        st.resolve_algorithms(s, ompi_build)
    s = st.loads(SMALLEST.replace('"linear"', '"ompi:nosuch"'))
    with pytest.raises(StudyError, match=r"study.algorithms\[1\]: unknown Open MPI bcast"):
        st.resolve_algorithms(s, ompi_build)
    s = st.loads(SMALLEST.replace('"linear"', '"all"'))
    algos = st.resolve_algorithms(s, ompi_build)["bcast"]
    assert "native" in algos and "ompi:binomial" in algos and "split_binary" in algos


SEVEN_MISTAKES = """
[study]
name = "bad"
collectives = ["bcast", "reduse"]
algorithms = ["binomial", "native"]
sizes = [8, "12Q", "1:1M"]
processes = ["2:8", "x"]
repetitons = 2
mapping = ["core", "sockt"]
order = "random"
timing = "osuu"
"""


def test_every_mistake_of_a_file_at_once_with_its_line():
    with pytest.raises(StudyError) as exc:
        st.loads(SEVEN_MISTAKES, source="bad.toml")
    errors = exc.value.errors
    assert errors == str(exc.value).splitlines()
    expected = [(4, "study.collectives[1]: 'reduse' is not one of", "did you mean 'reduce'?"),
                (6, "study.sizes[1]: '12Q' is not a size", ""),
                (7, "study.processes[1]: 'x' is not a process count", ""),
                (8, "study.repetitons: unknown key", "did you mean 'repetitions'?"),
                (9, "study.mapping[1]: 'sockt'", "did you mean 'socket'?"),
                (10, "study.order[0]: 'random' is not one of seq, rr", ""),
                (11, "study.timing: 'osuu'", "did you mean 'osu'?")]
    assert len(errors) == len(expected), errors
    for msg, (line, start, hint) in zip(errors, expected):
        assert msg.startswith(f"bad.toml:{line}: {start}") and hint in msg, msg
    # what could be read is kept for the checks that need the build (algorithm names)
    assert exc.value.study.collectives == ["bcast"]
    assert exc.value.study.algorithms == {"bcast": ["binomial", "native"]}


def test_algorithm_errors_all_at_once(ompi_build):
    s = st.loads(SMALLEST.replace('["binomial", "linear", "native"]',
                                  '["binomal", "linear", "natve", "chain:segsze=8192"]'),
                 source="s.toml")
    with pytest.raises(StudyError) as exc:
        st.resolve_algorithms(s, ompi_build)
    errors = exc.value.errors
    assert len(errors) == 3, errors
    assert "s.toml:5: study.algorithms[0]: unknown bcast algorithm 'binomal'" in errors[0]
    assert "did you mean 'native'?" in errors[1] and "'segsze'" in errors[2]


@pytest.mark.parametrize("canonical, alias", [("2:8", "2..8"), ("2:48 step 2", "2..48 step 2"),
                                              ("2:512 x2", "2..512 x2"), ("3:3", "3..3")])
def test_process_ranges_as_on_the_command_line(canonical, alias):
    from colltune.base.units import parse_ints

    def procs(v):
        return st.loads(SMALLEST.replace("processes = [2, 3]", f'processes = "{v}"')).processes
    assert procs(canonical) == procs(alias) == sorted(set(parse_ints(canonical, "--np")))
    assert procs("2:8") == list(range(2, 9)) and procs("2:512 x2")[-1] == 512


def test_size_ranges_as_on_the_command_line():
    from colltune.base.units import parse_sizes

    def sizes(v):
        return st.loads(SMALLEST.replace("sizes = [8, 4096]", f'sizes = "{v}"')).sizes
    assert sizes("1:1M") == sizes("1..1M") == parse_sizes("1:1M")
    assert sizes("1:1M") == [2 ** i for i in range(21)]  # powers of two, not every byte
    assert sizes("2:2") == [2]


@pytest.mark.parametrize("value, message", [
    ('"1..1M"', "study.processes: '1..1M' is not a process count"),
    ('"8:2"', "study.processes: range '8:2': needs from <= to"),
    ('"0:4"', "process counts must be at least 1"),
    ('"2:8 x1"', "the factor must be at least 2")])
def test_bad_process_ranges(value, message):
    with pytest.raises(StudyError) as exc:
        st.loads(SMALLEST.replace("processes = [2, 3]", f"processes = {value}"))
    assert message in str(exc.value) and len(exc.value.errors) == 1


def test_parameter_grids_expand_into_every_combination(ompi_build):
    s = st.loads(SMALLEST.replace('"linear"', '"chain:segsize=4K..16K,fanout=1|2"'))
    algos = st.resolve_algorithms(s, ompi_build)["bcast"]
    assert algos == ["binomial"] + [f"chain:segsize={s},fanout={f}" for s in (4096, 8192, 16384)
                                    for f in (1, 2)] + ["native"]
    pytest.importorskip("colltune.mpi.libalgos")
    s = st.loads(SMALLEST.replace('"linear"', '"ompi:chain:segsize=4K|8K"'))
    assert st.resolve_algorithms(s, ompi_build)["bcast"][1:3] == [
        "ompi:chain:segsize=4K", "ompi:chain:segsize=8K"]
    # every point of a grid is checked; a bad range says which parameter
    s = st.loads(SMALLEST.replace('"linear"', '"chain:segsize=4K..1K"'))
    with pytest.raises(StudyError, match=r"study.algorithms\[1\]: chain:segsize=4K..1K: "
                                         r"parameter 'segsize': size range"):
        st.resolve_algorithms(s, ompi_build)
    s = st.loads(SMALLEST.replace('"linear"', '"chain:segsize=4K|8K,fanot=1|2"'))
    with pytest.raises(StudyError, match=r"has no parameter 'fanot'"):
        st.resolve_algorithms(s, ompi_build)


def test_grids_over_inner_algorithms_with_parameters(ompi_build):
    """`hier:inter=ALG:key=value+...`: a grid's alternatives are whole inner values, their
    own parameters' grids expand in them, and every inner name and parameter is checked."""
    s = st.loads(SMALLEST.replace('"linear"', '"hier:inter=pipeline:segsize=8K|64K|binomial"'))
    assert st.resolve_algorithms(s, ompi_build)["bcast"][1:4] == [
        "hier:inter=pipeline:segsize=8K", "hier:inter=pipeline:segsize=64K",
        "hier:inter=binomial"]
    s = st.loads(SMALLEST.replace('"linear"', '"hier:inter=knomial:radix=2|4+fanout=2"'))
    with pytest.raises(StudyError, match=r"inter=knomial:radix=2\+fanout=2: .*bcast/knomial "
                                         r"has no parameter 'fanout'"):
        st.resolve_algorithms(s, ompi_build)
