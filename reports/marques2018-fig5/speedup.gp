set terminal svg size 760,520 dynamic font 'sans,12' background '#ffffff'
set output 'speedup.svg'
set title 'Marques et al. 2018, Fig. 5: conv_split on up to 32 Gaussian-drawn CPU nodes' noenhanced font ',10'
set xlabel 'nodes'
set ylabel 'speedup'
set logscale x 2
set logscale y 2
set xrange [0.8:40]
set key top left Left reverse noenhanced box opaque spacing 1.1
set grid lc rgb '#dddddd'
set border lc rgb '#333333'
set datafile separator ','
set yrange [0.631311:40]
$linear << EOD
1,1
32,32
EOD
plot $linear using 1:2 title 'linear' with lines lw 1.5 dt 1 lc rgb '#777777', \
     '50-500-batch-64.csv' using 'nodes':'speedup' title '50:500 batch 64' with linespoints lw 2 dt 1 pt 6 ps 1.3 lc rgb '#0072B2', \
     '500-1500-batch-1024.csv' using 'nodes':'speedup' title '500:1500 batch 1024' with linespoints lw 2 dt 2 pt 4 ps 1.3 lc rgb '#D55E00'
