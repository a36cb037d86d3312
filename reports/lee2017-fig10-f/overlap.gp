set terminal svg size 760,520 dynamic font 'sans,12' background '#ffffff'
set output 'overlap.svg'
set title 'VGG-A on Cori, batch 256, k=9: replicated fc layers f = 0..3 (Lee et al. Fig. 10): overlap ratio R' noenhanced font ',10'
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
plot 'f-0.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'f=0' with linespoints lw 2 dt 1 pt 6 ps 1.3 lc rgb '#0072B2', \
     'f-1.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'f=1' with linespoints lw 2 dt 2 pt 4 ps 1.3 lc rgb '#D55E00', \
     'f-2.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'f=2' with linespoints lw 2 dt 3 pt 8 ps 1.3 lc rgb '#009E73', \
     'f-3.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'f=3' with linespoints lw 2 dt 4 pt 12 ps 1.3 lc rgb '#CC79A7'
