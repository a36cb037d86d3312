set terminal svg size 720,480 dynamic font 'sans,12'
set output 'speedup.svg'
set title "VGG-128, VGG-256, VGG-512 on Cori, lee k=9 f=2, batch 256 (Lee et al. Fig. 9)" noenhanced font ',10'
set xlabel 'nodes'
set ylabel 'speedup'
set logscale x 2
set key top left noenhanced
set grid
set datafile separator ','
set xrange [1:128]
plot x title 'linear' with lines dashtype 2 lc rgb '#888888', 'vgg-128.csv' using 1:7 skip 1 title 'VGG-128' with linespoints, 'vgg-256.csv' using 1:7 skip 1 title 'VGG-256' with linespoints, 'vgg-512.csv' using 1:7 skip 1 title 'VGG-512' with linespoints
