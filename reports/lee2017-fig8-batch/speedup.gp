set terminal svg size 720,480 dynamic font 'sans,12'
set output 'speedup.svg'
set title "VGG-A on Cori, lee k=9 f=2: mini-batch 128, 256, 512 (Lee et al. Fig. 8)" noenhanced font ',10'
set xlabel 'nodes'
set ylabel 'speedup'
set logscale x 2
set key top left noenhanced
set grid
set datafile separator ','
set xrange [1:128]
plot x title 'linear' with lines dashtype 2 lc rgb '#888888', 'n-128.csv' using 1:7 skip 1 title 'N=128' with linespoints, 'n-256.csv' using 1:7 skip 1 title 'N=256' with linespoints, 'n-512.csv' using 1:7 skip 1 title 'N=512' with linespoints
