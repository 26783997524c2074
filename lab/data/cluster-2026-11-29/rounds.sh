#!/bin/sh
# interleaved rounds: unshaped, 100mbit (new round), unshaped (new round)
set -e
cd /work/wt/cluster2
C=.venv/bin/colltune
$C cluster up --nodes 2
$C sweep /tmp/c2/seed004-unshaped.toml --cluster --db /tmp/c2/seed004.db
$C cluster up --nodes 2 --bandwidth 100mbit
$C sweep /tmp/c2/seed004-cluster.toml --cluster --db /tmp/c2/seed004.db --new-round
$C cluster up --nodes 2
$C sweep /tmp/c2/seed004-unshaped.toml --cluster --db /tmp/c2/seed004.db --new-round
echo ALLDONE
