set terminal svg size 720,480 dynamic font 'sans,12'
set output 'speedup.svg'
set title "VGG-A on Cori, batch 256, f=2: first gradient chunk k = 3, 6, 9, 12 (Lee et al. Fig. 11)" noenhanced font ',10'
set xlabel 'nodes'
set ylabel 'speedup'
set logscale x 2
set key top left noenhanced
set grid
set datafile separator ','
set xrange [1:128]
plot x title 'linear' with lines dashtype 2 lc rgb '#888888', 'k-3.csv' using 1:7 skip 1 title 'k=3' with linespoints, 'k-6.csv' using 1:7 skip 1 title 'k=6' with linespoints, 'k-9.csv' using 1:7 skip 1 title 'k=9' with linespoints, 'k-12.csv' using 1:7 skip 1 title 'k=12' with linespoints
