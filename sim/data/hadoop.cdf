# Hadoop flow sizes: Facebook's Hadoop cluster (A. Roy et al., "Inside the Social Network's
# (Datacenter) Network", SIGCOMM 2015), in the byte form used as the "FB Hadoop" workload by
# HPCC (SIGCOMM 2019; points as listed with the HPCC simulator's traffic generator).
#
# Format (sim/workload.h, parse_cdf): "bytes cumulative_probability" per line; linear between
# points. Mean flow size of this piecewise-linear distribution: 120,421 bytes (~120 KB).
# Half of the flows are at most 700 bytes; 1% are between 2 and 10 MB.
#
# bytes     P[size <= bytes]
0           0
100         0.01
200         0.02
300         0.05
350         0.15
400         0.20
500         0.30
600         0.40
700         0.50
1000        0.60
2000        0.67
7000        0.70
30000       0.72
50000       0.82
80000       0.87
120000      0.90
300000      0.95
1000000     0.975
2000000     0.99
10000000    1
