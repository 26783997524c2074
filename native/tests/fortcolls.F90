! fortcolls.F90 -- a plain Fortran MPI program that knows nothing of colltune: it calls
! every collective libcolltune-pmpi.so intercepts (MPI_Bcast, MPI_Reduce, MPI_Gather,
! MPI_Allgather, MPI_Allreduce, MPI_Alltoall, MPI_Alltoallv, MPI_Scatter, MPI_Barrier,
! MPI_Reduce_scatter_block, MPI_Reduce_scatter, MPI_Allgatherv), each in place
! (MPI_IN_PLACE) and not where MPI allows it, a Bcast through MPI_BOTTOM, on
! MPI_COMM_WORLD and on a sub-communicator in reversed rank order (odd/even ranks),
! and checks every result against values it computes itself; and that an erroneous
! call's ierror is set (MPI_ERRORS_RETURN).
!
! One source, three interfaces (tests/test_fortran.py builds each with the MPI
! library's Fortran wrapper):
!   -DIFACE_MPIFH   include 'mpif.h'
!   -DIFACE_MPI     use mpi
!   -DIFACE_F08     use mpi_f08 (ierror given on some calls, left out on others)
!
! Every rank prints its own "FAIL ..." lines and stops with status 1 after
! MPI_Finalize if a check failed; rank 0 prints "fortcolls: N checks passed".
program fortcolls
#if defined(IFACE_F08)
  use mpi_f08
#elif defined(IFACE_MPI)
  use mpi
#endif
  implicit none
#if defined(IFACE_MPIFH)
  include 'mpif.h'
#endif
#if defined(IFACE_F08)
#define COMM_T type(MPI_Comm)
#define TYPE_T type(MPI_Datatype)
#define IERR
#else
#define COMM_T integer
#define TYPE_T integer
#define IERR , ierr
#endif
  integer :: ierr, wrank, wsize, nfail, nchecks, one(1)
  COMM_T :: sub, dup

  nfail = 0
  nchecks = 0
  ierr = -1
  call MPI_Init(ierr)
  call expect(ierr == MPI_SUCCESS, 'MPI_Init ierror')
  call MPI_Comm_rank(MPI_COMM_WORLD, wrank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, wsize, ierr)
  call all_collectives(MPI_COMM_WORLD, 'world')
  call MPI_Comm_split(MPI_COMM_WORLD, mod(wrank, 2), wsize - wrank, sub, ierr)
  call all_collectives(sub, 'split')
  call MPI_Comm_free(sub, ierr)
  ! ierror: an erroneous call (a root out of range) on a communicator that returns errors
  call MPI_Comm_dup(MPI_COMM_WORLD, dup, ierr)
  call MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN, ierr)
  ierr = MPI_SUCCESS
  call MPI_Bcast(one, 1, MPI_INTEGER, wsize + 5, dup, ierr)
  call expect(ierr /= MPI_SUCCESS, 'bcast with a bad root: ierror set')
  call MPI_Comm_free(dup, ierr)
  call MPI_Finalize(ierr)
  if (nfail > 0) then
    print '(a,i0,a,i0,a)', 'fortcolls: rank ', wrank, ': ', nfail, ' checks failed'
    stop 1
  end if
  if (wrank == 0) print '(a,i0,a)', 'fortcolls: ', nchecks, ' checks passed'

contains

  subroutine expect(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    nchecks = nchecks + 1
    if (.not. ok) then
      nfail = nfail + 1
      print '(a,i0,a,a)', 'FAIL rank ', wrank, ': ', what
    end if
  end subroutine expect

  subroutine all_collectives(c, label)
    COMM_T, intent(in) :: c
    character(len=*), intent(in) :: label
    integer :: n, r, root, i, j, k, s, t, e
    integer :: ib(5), ir(3), jr(3), iq(2)
    integer, allocatable :: sa(:), ra(:), sc(:), sd(:), rc(:), rd(:), w(:)
    double precision :: db(4), dr(4)
    TYPE_T :: abs_t
    integer(kind=MPI_ADDRESS_KIND) :: addr(1)
    integer :: blen(1)

    call MPI_Comm_size(c, n, ierr)
    call MPI_Comm_rank(c, r, ierr)
    root = n - 1

    ! ---- Bcast: integers and doubles, from the last rank
    ib = 0
    if (r == root) ib = [(100 * i + root, i = 1, 5)]
    ierr = -1
    call MPI_Bcast(ib, 5, MPI_INTEGER, root, c, ierr)
    call expect(ierr == MPI_SUCCESS, label // ' bcast ierror')
    call expect(all(ib == [(100 * i + root, i = 1, 5)]), label // ' bcast')
    db = 0
    if (r == root) db = [(0.5d0 * i, i = 1, 4)]
    call MPI_Bcast(db, 4, MPI_DOUBLE_PRECISION, root, c IERR)
    call expect(all(db == [(0.5d0 * i, i = 1, 4)]), label // ' bcast double')
    ! through MPI_BOTTOM: a datatype holding the buffer's absolute address
    ib = 0
    if (r == root) ib = [(7 * i, i = 1, 5)]
    call MPI_Get_address(ib, addr(1), ierr)
    blen(1) = 5
    call MPI_Type_create_hindexed(1, blen, addr, MPI_INTEGER, abs_t, ierr)
    call MPI_Type_commit(abs_t, ierr)
    call MPI_Bcast(MPI_BOTTOM, 1, abs_t, root, c, ierr)
    call MPI_Type_free(abs_t, ierr)
    call expect(all(ib == [(7 * i, i = 1, 5)]), label // ' bcast MPI_BOTTOM')

    ! ---- Reduce / Allreduce: sum of r + i; in place too
    s = n * (n - 1) / 2
    ir = [(r + i, i = 1, 3)]
    jr = -1
    call MPI_Reduce(ir, jr, 3, MPI_INTEGER, MPI_SUM, root, c IERR)
    if (r == root) call expect(all(jr == [(s + n * i, i = 1, 3)]), label // ' reduce')
    jr = ir
    if (r == root) then
      call MPI_Reduce(MPI_IN_PLACE, jr, 3, MPI_INTEGER, MPI_SUM, root, c, ierr)
      call expect(all(jr == [(s + n * i, i = 1, 3)]), label // ' reduce in place')
    else
      call MPI_Reduce(jr, iq, 3, MPI_INTEGER, MPI_SUM, root, c, ierr)
    end if
    jr = -1
    call MPI_Allreduce(ir, jr, 3, MPI_INTEGER, MPI_SUM, c, ierr)
    call expect(all(jr == [(s + n * i, i = 1, 3)]), label // ' allreduce')
    jr = ir
    call MPI_Allreduce(MPI_IN_PLACE, jr, 3, MPI_INTEGER, MPI_SUM, c IERR)
    call expect(all(jr == [(s + n * i, i = 1, 3)]), label // ' allreduce in place')
    db = [(dble(r) * i, i = 1, 4)]
    call MPI_Allreduce(db, dr, 4, MPI_DOUBLE_PRECISION, MPI_MAX, c, ierr)
    call expect(all(dr == [(dble(n - 1) * i, i = 1, 4)]), label // ' allreduce max double')

    ! ---- Gather / Allgather: two integers per rank, r*10+1, r*10+2
    allocate (ra(2 * n))
    iq = [r * 10 + 1, r * 10 + 2]
    ra = -1
    call MPI_Gather(iq, 2, MPI_INTEGER, ra, 2, MPI_INTEGER, root, c, ierr)
    if (r == root) call expect(all(ra == [((j * 10 + k, k = 1, 2), j = 0, n - 1)]), &
                               label // ' gather')
    ra = -1
    if (r == root) then
      ra(2 * r + 1:2 * r + 2) = iq
      call MPI_Gather(MPI_IN_PLACE, 2, MPI_INTEGER, ra, 2, MPI_INTEGER, root, c, ierr)
      call expect(all(ra == [((j * 10 + k, k = 1, 2), j = 0, n - 1)]), &
                  label // ' gather in place')
    else
      call MPI_Gather(iq, 2, MPI_INTEGER, ra, 2, MPI_INTEGER, root, c, ierr)
    end if
    ra = -1
    call MPI_Allgather(iq, 2, MPI_INTEGER, ra, 2, MPI_INTEGER, c IERR)
    call expect(all(ra == [((j * 10 + k, k = 1, 2), j = 0, n - 1)]), label // ' allgather')
    ra = -1
    ra(2 * r + 1:2 * r + 2) = iq
    call MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ra, 2, MPI_INTEGER, c, ierr)
    call expect(all(ra == [((j * 10 + k, k = 1, 2), j = 0, n - 1)]), &
                label // ' allgather in place')

    ! ---- Scatter: block j = j*10+1, j*10+2 from the root; in place at the root
    ra = [((j * 10 + k, k = 1, 2), j = 0, n - 1)]
    iq = -1
    call MPI_Scatter(ra, 2, MPI_INTEGER, iq, 2, MPI_INTEGER, root, c, ierr)
    call expect(all(iq == [r * 10 + 1, r * 10 + 2]), label // ' scatter')
    iq = -1
    if (r == root) then
      call MPI_Scatter(ra, 2, MPI_INTEGER, MPI_IN_PLACE, 2, MPI_INTEGER, root, c, ierr)
      call expect(all(ra == [((j * 10 + k, k = 1, 2), j = 0, n - 1)]), &
                  label // ' scatter in place')
    else
      call MPI_Scatter(ra, 2, MPI_INTEGER, iq, 2, MPI_INTEGER, root, c, ierr)
      call expect(all(iq == [r * 10 + 1, r * 10 + 2]), label // ' scatter (root in place)')
    end if
    deallocate (ra)

    ! ---- Alltoall: r*100+j to rank j; in place
    allocate (sa(n), ra(n))
    sa = [(r * 100 + j, j = 0, n - 1)]
    ra = -1
    call MPI_Alltoall(sa, 1, MPI_INTEGER, ra, 1, MPI_INTEGER, c, ierr)
    call expect(all(ra == [(j * 100 + r, j = 0, n - 1)]), label // ' alltoall')
    ra = sa
    call MPI_Alltoall(MPI_IN_PLACE, 1, MPI_INTEGER, ra, 1, MPI_INTEGER, c IERR)
    call expect(all(ra == [(j * 100 + r, j = 0, n - 1)]), label // ' alltoall in place')
    deallocate (sa, ra)

    ! ---- Alltoallv: mod(r+j, 3) integers between r and j (some zero), r*1000+j*10+k
    allocate (sc(n), sd(n), rc(n), rd(n))
    t = 0
    do j = 0, n - 1
      sc(j + 1) = mod(r + j, 3)
      sd(j + 1) = t
      t = t + sc(j + 1)
    end do
    rc = sc
    rd = sd
    allocate (sa(max(t, 1)), ra(max(t, 1)), w(max(t, 1)))
    do j = 0, n - 1
      do k = 1, sc(j + 1)
        sa(sd(j + 1) + k) = r * 1000 + j * 10 + k
        w(rd(j + 1) + k) = j * 1000 + r * 10 + k
      end do
    end do
    ra = -1
    call MPI_Alltoallv(sa, sc, sd, MPI_INTEGER, ra, rc, rd, MPI_INTEGER, c, ierr)
    call expect(all(ra(1:t) == w(1:t)), label // ' alltoallv')
    ra = sa
    call MPI_Alltoallv(MPI_IN_PLACE, sc, sd, MPI_INTEGER, ra, rc, rd, MPI_INTEGER, c, ierr)
    call expect(all(ra(1:t) == w(1:t)), label // ' alltoallv in place')
    deallocate (sa, ra, w)

    ! ---- Barrier
    ierr = -1
    call MPI_Barrier(c, ierr)
    call expect(ierr == MPI_SUCCESS, label // ' barrier ierror')

    ! ---- Reduce_scatter_block: block j element k = r + j*10 + k, 2 per block
    allocate (sa(2 * n), ra(2 * n))
    sa = [((r + j * 10 + k, k = 1, 2), j = 0, n - 1)]
    ra = -1
    call MPI_Reduce_scatter_block(sa, ra, 2, MPI_INTEGER, MPI_SUM, c, ierr)
    call expect(all(ra(1:2) == [(s + n * (r * 10 + k), k = 1, 2)]), &
                label // ' reduce_scatter_block')
    ra = sa
    call MPI_Reduce_scatter_block(MPI_IN_PLACE, ra, 2, MPI_INTEGER, MPI_SUM, c IERR)
    call expect(all(ra(1:2) == [(s + n * (r * 10 + k), k = 1, 2)]), &
                label // ' reduce_scatter_block in place')
    deallocate (sa, ra)

    ! ---- Reduce_scatter: rank j gets mod(j, 3) elements (some zero, uneven)
    t = 0
    do j = 0, n - 1
      rc(j + 1) = mod(j, 3)
      rd(j + 1) = t
      t = t + rc(j + 1)
    end do
    allocate (sa(max(t, 1)), ra(max(t, 1)))
    do j = 0, n - 1
      do k = 1, rc(j + 1)
        sa(rd(j + 1) + k) = r + j * 10 + k
      end do
    end do
    ra = -1
    call MPI_Reduce_scatter(sa, ra, rc, MPI_INTEGER, MPI_SUM, c, ierr)
    e = rc(r + 1)
    call expect(all(ra(1:e) == [(s + n * (r * 10 + k), k = 1, e)]), label // ' reduce_scatter')
    ra = sa
    call MPI_Reduce_scatter(MPI_IN_PLACE, ra, rc, MPI_INTEGER, MPI_SUM, c, ierr)
    call expect(all(ra(1:e) == [(s + n * (r * 10 + k), k = 1, e)]), &
                label // ' reduce_scatter in place')
    deallocate (sa, ra)

    ! ---- Allgatherv: rank j gives mod(j, 3) + 1 elements j*10+k, one gap after each
    t = 0
    do j = 0, n - 1
      rc(j + 1) = mod(j, 3) + 1
      rd(j + 1) = t
      t = t + rc(j + 1) + 1
    end do
    allocate (sa(rc(r + 1)), ra(t), w(t))
    sa = [(r * 10 + k, k = 1, rc(r + 1))]
    w = -1
    do j = 0, n - 1
      do k = 1, rc(j + 1)
        w(rd(j + 1) + k) = j * 10 + k
      end do
    end do
    ra = -1
    call MPI_Allgatherv(sa, rc(r + 1), MPI_INTEGER, ra, rc, rd, MPI_INTEGER, c, ierr)
    call expect(all(ra == w), label // ' allgatherv')
    ra = -1
    ra(rd(r + 1) + 1:rd(r + 1) + rc(r + 1)) = sa
    call MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ra, rc, rd, MPI_INTEGER, c IERR)
    call expect(all(ra == w), label // ' allgatherv in place')
    deallocate (sa, ra, w, sc, sd, rc, rd)
  end subroutine all_collectives

end program fortcolls
