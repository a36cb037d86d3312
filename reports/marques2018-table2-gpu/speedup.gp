set terminal svg size 760,520 dynamic font 'sans,12' background '#ffffff'
set output 'speedup.svg'
set title 'Marques et al. 2018, Table 2 (GPU): conv_split on the three-laptop GPU cluster, batch 64' noenhanced font ',10'
set xlabel 'nodes'
set ylabel 'speedup'
set logscale x 2
set logscale y 2
set xrange [0.8:3.75]
set key top left Left reverse noenhanced box opaque spacing 1.1
set grid lc rgb '#dddddd'
set border lc rgb '#333333'
set datafile separator ','
set yrange [0.8:3.75]
$linear << EOD
1,1
3,3
EOD
$paper0 << EOD
2,1.96
3,2.45
EOD
$paper1 << EOD
2,1.89
3,2.23
EOD
$paper2 << EOD
2,1.78
3,2.09
EOD
$paper3 << EOD
2,1.66
3,2
EOD
plot $linear using 1:2 title 'linear' with lines lw 1.5 dt 1 lc rgb '#777777', \
     '50-500-batch-64.csv' using 'nodes':'speedup' title '50:500 batch 64' with linespoints lw 2 dt 1 pt 6 ps 1.3 lc rgb '#0072B2', \
     '150-800-batch-64.csv' using 'nodes':'speedup' title '150:800 batch 64' with linespoints lw 2 dt 2 pt 4 ps 1.3 lc rgb '#D55E00', \
     '300-1000-batch-64.csv' using 'nodes':'speedup' title '300:1000 batch 64' with linespoints lw 2 dt 3 pt 8 ps 1.3 lc rgb '#009E73', \
     '500-1500-batch-64.csv' using 'nodes':'speedup' title '500:1500 batch 64' with linespoints lw 2 dt 4 pt 12 ps 1.3 lc rgb '#CC79A7', \
     $paper0 using 1:2 title 'paper: 50:500 batch 64' with points pt 7 ps 2.2 lc rgb '#660072B2', \
     $paper1 using 1:2 title 'paper: 150:800 batch 64' with points pt 5 ps 2.2 lc rgb '#66D55E00', \
     $paper2 using 1:2 title 'paper: 300:1000 batch 64' with points pt 9 ps 2.2 lc rgb '#66009E73', \
     $paper3 using 1:2 title 'paper: 500:1500 batch 64' with points pt 13 ps 2.2 lc rgb '#66CC79A7'
