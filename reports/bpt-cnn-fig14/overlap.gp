set terminal svg size 760,520 dynamic font 'sans,12' background '#ffffff'
set output 'overlap.svg'
set title 'BPT-CNN (Chen et al.), Fig. 14 and Fig. 15(b): IDPA/UDPA x SGWU/AGWU on the seven Table 2 networks, 5 to 35 workers: overlap ratio R' noenhanced font ',10'
set xlabel 'nodes'
set ylabel 'overlap ratio R (%)'
set logscale x 2
set xrange [0.8:45]
set key top left Left reverse noenhanced box opaque spacing 1.1
set grid lc rgb '#dddddd'
set border lc rgb '#333333'
set datafile separator ','
set yrange [-5:105]
set key bottom left Left reverse noenhanced box opaque spacing 1.1
plot 'case1-idpa-sgwu.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'case1 idpa sgwu' with linespoints lw 2 dt 1 pt 6 ps 1.3 lc rgb '#0072B2', \
     'case1-idpa-agwu.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'case1 idpa agwu' with linespoints lw 2 dt 2 pt 4 ps 1.3 lc rgb '#D55E00', \
     'case1-udpa-sgwu.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'case1 udpa sgwu' with linespoints lw 2 dt 3 pt 8 ps 1.3 lc rgb '#009E73', \
     'case1-udpa-agwu.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'case1 udpa agwu' with linespoints lw 2 dt 4 pt 12 ps 1.3 lc rgb '#CC79A7', \
     'case2-idpa-sgwu.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'case2 idpa sgwu' with linespoints lw 2 dt 5 pt 10 ps 1.3 lc rgb '#E69F00', \
     'case2-idpa-agwu.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'case2 idpa agwu' with linespoints lw 2 dt 1 pt 14 ps 1.3 lc rgb '#56B4E9', \
     'case2-udpa-sgwu.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'case2 udpa sgwu' with linespoints lw 2 dt 2 pt 6 ps 1.3 lc rgb '#000000', \
     'case2-udpa-agwu.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'case2 udpa agwu' with linespoints lw 2 dt 3 pt 4 ps 1.3 lc rgb '#0072B2', \
     'case3-idpa-sgwu.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'case3 idpa sgwu' with linespoints lw 2 dt 4 pt 8 ps 1.3 lc rgb '#D55E00', \
     'case3-idpa-agwu.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'case3 idpa agwu' with linespoints lw 2 dt 5 pt 12 ps 1.3 lc rgb '#009E73', \
     'case3-udpa-sgwu.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'case3 udpa sgwu' with linespoints lw 2 dt 1 pt 10 ps 1.3 lc rgb '#CC79A7', \
     'case3-udpa-agwu.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'case3 udpa agwu' with linespoints lw 2 dt 2 pt 14 ps 1.3 lc rgb '#E69F00', \
     'case4-idpa-sgwu.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'case4 idpa sgwu' with linespoints lw 2 dt 3 pt 6 ps 1.3 lc rgb '#56B4E9', \
     'case4-idpa-agwu.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'case4 idpa agwu' with linespoints lw 2 dt 4 pt 4 ps 1.3 lc rgb '#000000', \
     'case4-udpa-sgwu.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'case4 udpa sgwu' with linespoints lw 2 dt 5 pt 8 ps 1.3 lc rgb '#0072B2', \
     'case4-udpa-agwu.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'case4 udpa agwu' with linespoints lw 2 dt 1 pt 12 ps 1.3 lc rgb '#D55E00', \
     'case5-idpa-sgwu.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'case5 idpa sgwu' with linespoints lw 2 dt 2 pt 10 ps 1.3 lc rgb '#009E73', \
     'case5-idpa-agwu.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'case5 idpa agwu' with linespoints lw 2 dt 3 pt 14 ps 1.3 lc rgb '#CC79A7', \
     'case5-udpa-sgwu.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'case5 udpa sgwu' with linespoints lw 2 dt 4 pt 6 ps 1.3 lc rgb '#E69F00', \
     'case5-udpa-agwu.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'case5 udpa agwu' with linespoints lw 2 dt 5 pt 4 ps 1.3 lc rgb '#56B4E9', \
     'case6-idpa-sgwu.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'case6 idpa sgwu' with linespoints lw 2 dt 1 pt 8 ps 1.3 lc rgb '#000000', \
     'case6-idpa-agwu.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'case6 idpa agwu' with linespoints lw 2 dt 2 pt 12 ps 1.3 lc rgb '#0072B2', \
     'case6-udpa-sgwu.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'case6 udpa sgwu' with linespoints lw 2 dt 3 pt 10 ps 1.3 lc rgb '#D55E00', \
     'case6-udpa-agwu.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'case6 udpa agwu' with linespoints lw 2 dt 4 pt 14 ps 1.3 lc rgb '#009E73', \
     'case7-idpa-sgwu.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'case7 idpa sgwu' with linespoints lw 2 dt 5 pt 6 ps 1.3 lc rgb '#CC79A7', \
     'case7-idpa-agwu.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'case7 idpa agwu' with linespoints lw 2 dt 1 pt 4 ps 1.3 lc rgb '#E69F00', \
     'case7-udpa-sgwu.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'case7 udpa sgwu' with linespoints lw 2 dt 2 pt 8 ps 1.3 lc rgb '#56B4E9', \
     'case7-udpa-agwu.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'case7 udpa agwu' with linespoints lw 2 dt 3 pt 12 ps 1.3 lc rgb '#000000'
