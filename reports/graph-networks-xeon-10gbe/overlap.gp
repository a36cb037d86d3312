set terminal svg size 760,520 dynamic font 'sans,12' background '#ffffff'
set output 'overlap.svg'
set title 'Graph networks against VGG-A on Xeon E5 + 10 GbE (the Intel note''s Ethernet system), batch 256: dp, dp_buckets (DDP''s buckets) and hybrid (model-parallel classifier), 1 to 128 nodes: overlap ratio R' noenhanced font ',10'
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
     'vgg-a-dp-buckets.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'VGG-A dp_buckets' with linespoints lw 2 dt 2 pt 4 ps 1.3 lc rgb '#D55E00', \
     'vgg-a-hybrid.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'VGG-A hybrid' with linespoints lw 2 dt 3 pt 8 ps 1.3 lc rgb '#009E73', \
     'resnet-50-dp.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'ResNet-50 dp' with linespoints lw 2 dt 4 pt 12 ps 1.3 lc rgb '#CC79A7', \
     'resnet-50-dp-buckets.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'ResNet-50 dp_buckets' with linespoints lw 2 dt 5 pt 10 ps 1.3 lc rgb '#E69F00', \
     'resnet-50-hybrid.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'ResNet-50 hybrid' with linespoints lw 2 dt 1 pt 14 ps 1.3 lc rgb '#56B4E9', \
     'googlenet-dp.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'GoogLeNet dp' with linespoints lw 2 dt 2 pt 6 ps 1.3 lc rgb '#000000', \
     'googlenet-dp-buckets.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'GoogLeNet dp_buckets' with linespoints lw 2 dt 3 pt 4 ps 1.3 lc rgb '#0072B2', \
     'googlenet-hybrid.csv' using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) title 'GoogLeNet hybrid' with linespoints lw 2 dt 4 pt 8 ps 1.3 lc rgb '#D55E00'
