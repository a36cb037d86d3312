set terminal svg size 760,520 dynamic font 'sans,12' background '#ffffff'
set output 'speedup.svg'
set title 'VGG-128, VGG-256, VGG-512 on Cori, lee k=9 f=2, batch 256 (Lee et al. Fig. 9)' noenhanced font ',10'
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
plot $linear using 1:2 title 'linear' with lines lw 1.5 dt 1 lc rgb '#777777', \
     'vgg-128.csv' using 'nodes':'speedup' title 'VGG-128' with linespoints lw 2 dt 1 pt 6 ps 1.3 lc rgb '#0072B2', \
     'vgg-256.csv' using 'nodes':'speedup' title 'VGG-256' with linespoints lw 2 dt 2 pt 4 ps 1.3 lc rgb '#D55E00', \
     'vgg-512.csv' using 'nodes':'speedup' title 'VGG-512' with linespoints lw 2 dt 3 pt 8 ps 1.3 lc rgb '#009E73', \
     54 title 'paper: VGG-128 (maximum, nodes not stated)' with lines lw 1.5 dt (2,5) lc rgb '#0072B2', \
     61 title 'paper: VGG-256 (maximum, nodes not stated)' with lines lw 1.5 dt (2,5) lc rgb '#D55E00', \
     80 title 'paper: VGG-512 (maximum, nodes not stated)' with lines lw 1.5 dt (2,5) lc rgb '#009E73'
