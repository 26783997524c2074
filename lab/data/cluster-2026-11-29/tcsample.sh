#!/bin/sh
# sample the switch-side queues of the node links every second: time, dev, sent bytes, dropped, overlimits, backlog
while :; do
  t=$(date +%s.%N)
  for d in ctv1 ctv2; do
    tc -s qdisc show dev $d | tr '\n' ' ' | sed "s/^/$t $d /"; echo
    ip netns exec ctn${d#ctv} tc -s qdisc show dev eth0 | tr '\n' ' ' | sed "s/^/$t ctn${d#ctv}:eth0 /"; echo
  done
  sleep 1
done
