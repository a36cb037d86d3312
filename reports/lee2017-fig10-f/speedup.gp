set terminal svg size 720,480 dynamic font 'sans,12'
set output 'speedup.svg'
set title "VGG-A on Cori, batch 256, k=9: replicated fc layers f = 0..3 (Lee et al. Fig. 10)" noenhanced font ',10'
set xlabel 'nodes'
set ylabel 'speedup'
set logscale x 2
set key top left noenhanced
set grid
set datafile separator ','
set xrange [1:128]
plot x title 'linear' with lines dashtype 2 lc rgb '#888888', 'f-0.csv' using 1:7 skip 1 title 'f=0' with linespoints, 'f-1.csv' using 1:7 skip 1 title 'f=1' with linespoints, 'f-2.csv' using 1:7 skip 1 title 'f=2' with linespoints, 'f-3.csv' using 1:7 skip 1 title 'f=3' with linespoints
