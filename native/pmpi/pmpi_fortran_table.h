/*
 * pmpi_fortran_table.h -- the Fortran entry points of libcolltune-pmpi.so, one line per
 * MPI function: its C name, then the kinds of its arguments in order (the Fortran
 * ierror follows them all and is not listed). pmpi_fortran.c turns each line into a
 * wrapper that converts the Fortran arguments and calls the C MPI_<Name> (colltune's
 * intercept where there is one, else the library's own), and native/pmpi/fortran.cmake
 * reads the same lines to find which Fortran names of each function the MPI library
 * exports (docs/interposition.md, "Fortran"). A function with no line here is the
 * library's own Fortran binding.
 *
 * Kinds:
 *   BUF   a buffer; the library's Fortran MPI_BOTTOM becomes MPI_BOTTOM
 *   IBUF  a buffer that may also be the Fortran MPI_IN_PLACE (-> MPI_IN_PLACE)
 *   INT   an INTEGER (count, root)            INTS  an INTEGER array (counts, displs)
 *   TYPE  a datatype handle (MPI_Type_f2c)     OP    an op handle (MPI_Op_f2c)
 *   COMM  a communicator handle (MPI_Comm_f2c) INFO  an info handle (MPI_Info_f2c)
 *   REQ   a request the call returns (MPI_Request_c2f after the call)
 *
 * Adding a function: one line, e.g.
 *   CT_F(Scan, (IBUF, BUF, INT, TYPE, OP, COMM))
 *   CT_F(Iallreduce, (IBUF, BUF, INT, TYPE, OP, COMM, REQ))
 * then rebuild (colltune build): its names the library exports are found and wrapped.
 * Not yet expressible: Alltoallw's datatype arrays (a kind converting each element
 * over the communicator's size), MPI_Status outputs, the large-count _c variants.
 * Wrapping a function colltune does not intercept in C is harmless (the wrapper calls
 * the library's C MPI_<Name>) and makes the call reach a C-level profile.
 */
CT_F(Bcast, (BUF, INT, TYPE, INT, COMM))
CT_F(Reduce, (IBUF, BUF, INT, TYPE, OP, INT, COMM))
CT_F(Gather, (IBUF, INT, TYPE, BUF, INT, TYPE, INT, COMM))
CT_F(Allgather, (IBUF, INT, TYPE, BUF, INT, TYPE, COMM))
CT_F(Allreduce, (IBUF, BUF, INT, TYPE, OP, COMM))
CT_F(Alltoall, (IBUF, INT, TYPE, BUF, INT, TYPE, COMM))
CT_F(Alltoallv, (IBUF, INTS, INTS, TYPE, BUF, INTS, INTS, TYPE, COMM))
CT_F(Scatter, (BUF, INT, TYPE, IBUF, INT, TYPE, INT, COMM))
CT_F(Barrier, (COMM))
CT_F(Reduce_scatter_block, (IBUF, BUF, INT, TYPE, OP, COMM))
CT_F(Reduce_scatter, (IBUF, BUF, INTS, TYPE, OP, COMM))
CT_F(Allgatherv, (IBUF, INT, TYPE, BUF, INTS, INTS, TYPE, COMM))
CT_F(Gatherv, (IBUF, INT, TYPE, BUF, INTS, INTS, TYPE, INT, COMM))
CT_F(Scatterv, (BUF, INTS, INTS, TYPE, IBUF, INT, TYPE, INT, COMM))
