set terminal svg size 760,520 dynamic font 'sans,12' background '#ffffff'
set output 'overlap.svg'
set title 'Marques et al. 2018, Table 2 (GPU): conv_split on the three-laptop GPU cluster, batch 64: overlap ratio R' noenhanced font ',10'
set xlabel 'nodes'
set ylabel 'overlap ratio R (%)'
set logscale x 2
set xrange [0.8:3.75]
set key top left Left reverse noenhanced box opaque spacing 1.1
set grid lc rgb '#dddddd'
set border lc rgb '#333333'
set datafile separator ','
set yrange [-5:105]
set key bottom left Left reverse noenhanced box opaque spacing 1.1
plot '50-500-batch-64.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title '50:500 batch 64' with linespoints lw 2 dt 1 pt 6 ps 1.3 lc rgb '#0072B2', \
     '150-800-batch-64.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title '150:800 batch 64' with linespoints lw 2 dt 2 pt 4 ps 1.3 lc rgb '#D55E00', \
     '300-1000-batch-64.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title '300:1000 batch 64' with linespoints lw 2 dt 3 pt 8 ps 1.3 lc rgb '#009E73', \
     '500-1500-batch-64.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title '500:1500 batch 64' with linespoints lw 2 dt 4 pt 12 ps 1.3 lc rgb '#CC79A7'
