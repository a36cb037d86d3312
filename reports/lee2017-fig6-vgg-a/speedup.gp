set terminal svg size 720,480 dynamic font 'sans,12'
set output 'speedup.svg'
set title "VGG-A on Cori, batch 256: Lee et al. Fig. 6 and Fig. 12 (DP, DP+Overlap, lee k=9 f=2)" noenhanced font ',10'
set xlabel 'nodes'
set ylabel 'speedup'
set logscale x 2
set key top left noenhanced
set grid
set datafile separator ','
set xrange [1:128]
plot x title 'linear' with lines dashtype 2 lc rgb '#888888', 'lee-k-9-f-2.csv' using 1:7 skip 1 title 'lee k=9 f=2' with linespoints, 'dp.csv' using 1:7 skip 1 title 'DP' with linespoints, 'dp-overlap.csv' using 1:7 skip 1 title 'DP+Overlap' with linespoints, 'ddp-buckets-25mib.csv' using 1:7 skip 1 title 'DDP buckets 25MiB' with linespoints
