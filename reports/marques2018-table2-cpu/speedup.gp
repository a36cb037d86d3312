set terminal svg size 760,520 dynamic font 'sans,12' background '#ffffff'
set output 'speedup.svg'
set title 'Marques et al. 2018, Table 2 (CPU): conv_split on the four-laptop CPU cluster, batch 1024' noenhanced font ',10'
set xlabel 'nodes'
set ylabel 'speedup'
set logscale x 2
set logscale y 2
set xrange [0.8:5]
set key top left Left reverse noenhanced box opaque spacing 1.1
set grid lc rgb '#dddddd'
set border lc rgb '#333333'
set datafile separator ','
set yrange [0.8:5]
$linear << EOD
1,1
4,4
EOD
$paper0 << EOD
2,1.4
3,1.51
4,1.56
EOD
$paper1 << EOD
2,1.68
3,1.93
4,2.1
EOD
$paper2 << EOD
2,1.69
3,2.15
4,2.33
EOD
$paper3 << EOD
2,1.98
3,2.74
4,3.28
EOD
$paper4 << EOD
4,1.45
EOD
$paper5 << EOD
4,2.25
EOD
plot $linear using 1:2 title 'linear' with lines lw 1.5 dt 1 lc rgb '#777777', \
     '50-500-batch-1024.csv' using 'nodes':'speedup' title '50:500 batch 1024' with linespoints lw 2 dt 1 pt 6 ps 1.3 lc rgb '#0072B2', \
     '150-800-batch-1024.csv' using 'nodes':'speedup' title '150:800 batch 1024' with linespoints lw 2 dt 2 pt 4 ps 1.3 lc rgb '#D55E00', \
     '300-1000-batch-1024.csv' using 'nodes':'speedup' title '300:1000 batch 1024' with linespoints lw 2 dt 3 pt 8 ps 1.3 lc rgb '#009E73', \
     '500-1500-batch-1024.csv' using 'nodes':'speedup' title '500:1500 batch 1024' with linespoints lw 2 dt 4 pt 12 ps 1.3 lc rgb '#CC79A7', \
     '50-500-batch-64.csv' using 'nodes':'speedup' title '50:500 batch 64' with linespoints lw 2 dt 5 pt 10 ps 1.3 lc rgb '#E69F00', \
     '500-1500-batch-64.csv' using 'nodes':'speedup' title '500:1500 batch 64' with linespoints lw 2 dt 1 pt 14 ps 1.3 lc rgb '#56B4E9', \
     $paper0 using 1:2 title 'paper: 50:500 batch 1024' with points pt 7 ps 2.2 lc rgb '#660072B2', \
     $paper1 using 1:2 title 'paper: 150:800 batch 1024' with points pt 5 ps 2.2 lc rgb '#66D55E00', \
     $paper2 using 1:2 title 'paper: 300:1000 batch 1024' with points pt 9 ps 2.2 lc rgb '#66009E73', \
     $paper3 using 1:2 title 'paper: 500:1500 batch 1024' with points pt 13 ps 2.2 lc rgb '#66CC79A7', \
     $paper4 using 1:2 title 'paper: 50:500 batch 64' with points pt 11 ps 2.2 lc rgb '#66E69F00', \
     $paper5 using 1:2 title 'paper: 500:1500 batch 64' with points pt 15 ps 2.2 lc rgb '#6656B4E9'
