set terminal svg size 760,520 dynamic font 'sans,12' background '#ffffff'
set output 'overlap.svg'
set title 'VGG-A and AlexNet on Cori Haswell + Aries (Lee et al.), batch 256: dp vs lee vs hybrid (data-parallel conv, model-parallel fc): overlap ratio R' noenhanced font ',10'
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
plot 'vgg-a-dp.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'VGG-A dp' with linespoints lw 2 dt 1 pt 6 ps 1.3 lc rgb '#0072B2', \
     'vgg-a-lee-k-9-f-2.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'VGG-A lee k=9 f=2' with linespoints lw 2 dt 2 pt 4 ps 1.3 lc rgb '#D55E00', \
     'vgg-a-hybrid.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'VGG-A hybrid' with linespoints lw 2 dt 3 pt 8 ps 1.3 lc rgb '#009E73', \
     'alexnet-dp.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'AlexNet dp' with linespoints lw 2 dt 4 pt 12 ps 1.3 lc rgb '#CC79A7', \
     'alexnet-lee-k-9-f-2.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'AlexNet lee k=9 f=2' with linespoints lw 2 dt 5 pt 10 ps 1.3 lc rgb '#E69F00', \
     'alexnet-hybrid.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'AlexNet hybrid' with linespoints lw 2 dt 1 pt 14 ps 1.3 lc rgb '#56B4E9'
