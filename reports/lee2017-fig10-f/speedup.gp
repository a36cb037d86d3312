set terminal svg size 760,520 dynamic font 'sans,12' background '#ffffff'
set output 'speedup.svg'
set title 'VGG-A on Cori, batch 256, k=9: replicated fc layers f = 0..3 (Lee et al. Fig. 10)' noenhanced font ',10'
set xlabel 'nodes'
set ylabel 'speedup'
set logscale x 2
set logscale y 2
set xrange [0.8:160]
set key top left Left reverse noenhanced box opaque spacing 1.1
set grid lc rgb '#dddddd'
set border lc rgb '#333333'
set datafile separator ','
set yrange [0.8:160]
$linear << EOD
1,1
128,128
EOD
$paper2 << EOD
128,62.97
EOD
plot $linear using 1:2 title 'linear' with lines lw 1.5 dt 1 lc rgb '#777777', \
     'f-0.csv' using 'nodes':'speedup' title 'f=0' with linespoints lw 2 dt 1 pt 6 ps 1.3 lc rgb '#0072B2', \
     'f-1.csv' using 'nodes':'speedup' title 'f=1' with linespoints lw 2 dt 2 pt 4 ps 1.3 lc rgb '#D55E00', \
     'f-2.csv' using 'nodes':'speedup' title 'f=2' with linespoints lw 2 dt 3 pt 8 ps 1.3 lc rgb '#009E73', \
     'f-3.csv' using 'nodes':'speedup' title 'f=3' with linespoints lw 2 dt 4 pt 12 ps 1.3 lc rgb '#CC79A7', \
     $paper2 using 1:2 title 'paper: f=2' with points pt 9 ps 2.2 lc rgb '#66009E73'
