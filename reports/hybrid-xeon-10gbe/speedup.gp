set terminal svg size 720,480 dynamic font 'sans,12'
set output 'speedup.svg'
set title "VGG-A and AlexNet on Intel Xeon E5 + 10Gb Ethernet (Intel note), batch 256: dp vs lee vs hybrid (data-parallel conv, model-parallel fc)" noenhanced font ',10'
set xlabel 'nodes'
set ylabel 'speedup'
set logscale x 2
set key top left noenhanced
set grid
set datafile separator ','
set xrange [1:128]
plot x title 'linear' with lines dashtype 2 lc rgb '#888888', 'vgg-a-dp.csv' using 1:7 skip 1 title 'VGG-A dp' with linespoints, 'vgg-a-lee-k-9-f-2.csv' using 1:7 skip 1 title 'VGG-A lee k=9 f=2' with linespoints, 'vgg-a-hybrid.csv' using 1:7 skip 1 title 'VGG-A hybrid' with linespoints, 'alexnet-dp.csv' using 1:7 skip 1 title 'AlexNet dp' with linespoints, 'alexnet-lee-k-9-f-2.csv' using 1:7 skip 1 title 'AlexNet lee k=9 f=2' with linespoints, 'alexnet-hybrid.csv' using 1:7 skip 1 title 'AlexNet hybrid' with linespoints
