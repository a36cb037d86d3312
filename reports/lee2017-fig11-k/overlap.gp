set terminal svg size 760,520 dynamic font 'sans,12' background '#ffffff'
set output 'overlap.svg'
set title 'VGG-A on Cori, batch 256, f=2: first gradient chunk k = 3, 6, 9, 12 (Lee et al. Fig. 11): overlap ratio R' noenhanced font ',10'
set xlabel 'nodes'
set ylabel 'overlap ratio R (%)'
set logscale x 2
set xrange [0.8:160]
set key top left Left reverse noenhanced box opaque spacing 1.1
set grid lc rgb '#dddddd'
set border lc rgb '#333333'
set datafile separator ','
set yrange [-5:105]
set key bottom left Left reverse noenhanced box opaque spacing 1.1
plot 'k-3.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'k=3' with linespoints lw 2 dt 1 pt 6 ps 1.3 lc rgb '#0072B2', \
     'k-6.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'k=6' with linespoints lw 2 dt 2 pt 4 ps 1.3 lc rgb '#D55E00', \
     'k-9.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'k=9' with linespoints lw 2 dt 3 pt 8 ps 1.3 lc rgb '#009E73', \
     'k-12.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'k=12' with linespoints lw 2 dt 4 pt 12 ps 1.3 lc rgb '#CC79A7'
