set terminal svg size 760,520 dynamic font 'sans,12' background '#ffffff'
set output 'speedup.svg'
set title 'Veeriah & Modi 2017, Table 1: iteration time seen by the conv workers, schemes a/b/c, K = 2, 3, 4' noenhanced font ',10'
set xlabel 'nodes'
set ylabel 'speedup'
set logscale x 2
set logscale y 2
set xrange [0.8:10]
set key top left Left reverse noenhanced box opaque spacing 1.1
set grid lc rgb '#dddddd'
set border lc rgb '#333333'
set datafile separator ','
set yrange [0.8:10]
$linear << EOD
1,1
8,8
EOD
plot $linear using 1:2 title 'linear' with lines lw 1.5 dt 1 lc rgb '#777777', \
     'mnist-scheme-a.csv' using 'nodes':'speedup' title 'mnist scheme a' with linespoints lw 2 dt 1 pt 6 ps 1.3 lc rgb '#0072B2', \
     'mnist-scheme-b.csv' using 'nodes':'speedup' title 'mnist scheme b' with linespoints lw 2 dt 2 pt 4 ps 1.3 lc rgb '#D55E00', \
     'mnist-scheme-c.csv' using 'nodes':'speedup' title 'mnist scheme c (= mnist scheme b within 1 %)' with linespoints lw 2 dt 3 pt 8 ps 1.3 lc rgb '#009E73', \
     'cifar-scheme-a.csv' using 'nodes':'speedup' title 'cifar scheme a' with linespoints lw 2 dt 4 pt 12 ps 1.3 lc rgb '#CC79A7', \
     'cifar-scheme-b.csv' using 'nodes':'speedup' title 'cifar scheme b' with linespoints lw 2 dt 5 pt 10 ps 1.3 lc rgb '#E69F00', \
     'cifar-scheme-c.csv' using 'nodes':'speedup' title 'cifar scheme c (= cifar scheme b within 1 %)' with linespoints lw 2 dt 1 pt 14 ps 1.3 lc rgb '#56B4E9'
