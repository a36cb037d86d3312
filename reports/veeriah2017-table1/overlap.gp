set terminal svg size 760,520 dynamic font 'sans,12' background '#ffffff'
set output 'overlap.svg'
set title 'Veeriah & Modi 2017, Table 1: iteration time seen by the conv workers, schemes a/b/c, K = 2, 3, 4: overlap ratio R' noenhanced font ',10'
set xlabel 'nodes'
set ylabel 'overlap ratio R (%)'
set logscale x 2
set xrange [0.8:10]
set key top left Left reverse noenhanced box opaque spacing 1.1
set grid lc rgb '#dddddd'
set border lc rgb '#333333'
set datafile separator ','
set yrange [-5:105]
set key bottom left Left reverse noenhanced box opaque spacing 1.1
plot 'mnist-scheme-a.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'mnist scheme a' with linespoints lw 2 dt 1 pt 6 ps 1.3 lc rgb '#0072B2', \
     'mnist-scheme-b.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'mnist scheme b' with linespoints lw 2 dt 2 pt 4 ps 1.3 lc rgb '#D55E00', \
     'mnist-scheme-c.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'mnist scheme c' with linespoints lw 2 dt 3 pt 8 ps 1.3 lc rgb '#009E73', \
     'cifar-scheme-a.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'cifar scheme a' with linespoints lw 2 dt 4 pt 12 ps 1.3 lc rgb '#CC79A7', \
     'cifar-scheme-b.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'cifar scheme b' with linespoints lw 2 dt 5 pt 10 ps 1.3 lc rgb '#E69F00', \
     'cifar-scheme-c.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'cifar scheme c' with linespoints lw 2 dt 1 pt 14 ps 1.3 lc rgb '#56B4E9'
