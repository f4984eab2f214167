# Web-search flow sizes: the DCTCP measurement of a production web-search cluster
# (M. Alizadeh et al., "Data Center TCP (DCTCP)", SIGCOMM 2010), in the byte form
# used as the "web search" workload by pFabric (SIGCOMM 2013) and HPCC (SIGCOMM 2019; points
# as listed with the HPCC simulator's traffic generator).
#
# Format (sim/workload.h, parse_cdf): "bytes cumulative_probability" per line; linear between
# points. Mean flow size of this piecewise-linear distribution: 1,711,250 bytes (~1.71 MB).
# 53% of flows are at most 80 KB; 3% are between 10 and 30 MB and carry ~35% of the bytes.
#
# bytes     P[size <= bytes]
0           0
10000       0.15
20000       0.20
30000       0.30
50000       0.40
80000       0.53
200000      0.60
1000000     0.70
2000000     0.80
5000000     0.90
10000000    0.97
30000000    1
