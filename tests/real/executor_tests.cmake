# tests/real/executor_tests.cmake: tests of the MPI executor (included at the end of
# tests/real/CMakeLists.txt). Unit tests need no mpiexec; the rest start cnnpar-run or the
# MPI test program under `mpiexec -n 1|2|4` (4 ranks oversubscribe the 2 cores; hydra
# allows it). Labels: real, mpi. Total run time is kept under ~3 minutes.
find_package(MPI REQUIRED COMPONENTS CXX)
set(cnnpar_mpiexec ${MPIEXEC_EXECUTABLE})
set(cnnpar_mpi_env "OPENBLAS_NUM_THREADS=1;CNNPAR_SCENARIOS=${PROJECT_SOURCE_DIR}/scenarios")

cnnpar_add_test(test_real_interpreter_units SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_interpreter_units.cpp
                LIBS cnnpar_real_mpi LABELS real)
cnnpar_add_test(test_real_child_process SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_child_process.cpp
                LIBS cnnpar_workload LABELS real)

# Catch2 with its own main (MPI_Init before the session), run under mpiexec.
add_executable(test_real_interpreter_mpi ${CMAKE_CURRENT_SOURCE_DIR}/test_interpreter_mpi.cpp)
target_link_libraries(test_real_interpreter_mpi PRIVATE Catch2::Catch2 cnnpar_settings cnnpar_test_settings cnnpar_real_mpi)
foreach(np 1 2 3 4)
  add_test(NAME real_interpreter_mpi_np${np}
           COMMAND ${cnnpar_mpiexec} -n ${np} $<TARGET_FILE:test_real_interpreter_mpi>)
  set_tests_properties(real_interpreter_mpi_np${np} PROPERTIES LABELS "real;mpi" TIMEOUT 120
                       ENVIRONMENT "${cnnpar_mpi_env}")
endforeach()

add_executable(cnnpar_weights_compare ${CMAKE_CURRENT_SOURCE_DIR}/weights_compare.cpp)
target_link_libraries(cnnpar_weights_compare PRIVATE cnnpar_settings cnnpar_test_settings)
add_executable(cnnpar_trace_check ${CMAKE_CURRENT_SOURCE_DIR}/trace_check.cpp)
target_link_libraries(cnnpar_trace_check PRIVATE cnnpar_settings cnnpar_test_settings cnnpar_workload)
add_executable(cnnpar_platform_check ${CMAKE_CURRENT_SOURCE_DIR}/platform_check.cpp)
target_link_libraries(cnnpar_platform_check PRIVATE cnnpar_settings cnnpar_test_settings cnnpar_workload)
add_executable(cnnpar_platform_parts_check ${CMAKE_CURRENT_SOURCE_DIR}/platform_parts_check.cpp)
target_link_libraries(cnnpar_platform_parts_check PRIVATE cnnpar_settings cnnpar_test_settings cnnpar_workload)

set(run_out ${CMAKE_CURRENT_BINARY_DIR}/mpi_runs)
file(MAKE_DIRECTORY ${run_out})
set(tiny ${CMAKE_CURRENT_SOURCE_DIR}/data/tiny-cifar.json)
set(run $<TARGET_FILE:cnnpar-run>)
set(expect_fail ${CMAKE_CURRENT_SOURCE_DIR}/expect_fail.sh)

# cnnpar_mpi_run(NAME NP FIXTURE ARGS...): one mpiexec run that sets up FIXTURE.
function(cnnpar_mpi_run name np fixture)
  add_test(NAME ${name} COMMAND ${cnnpar_mpiexec} -n ${np} ${run} ${ARGN})
  set_tests_properties(${name} PROPERTIES LABELS "real;mpi" TIMEOUT 120 ENVIRONMENT "${cnnpar_mpi_env}"
                       FIXTURES_SETUP ${fixture})
endfunction()
# cnnpar_mpi_check(NAME FIXTURES COMMAND...): a check that needs the outputs of FIXTURES (a list).
function(cnnpar_mpi_check name fixture)
  add_test(NAME ${name} COMMAND ${ARGN})
  set_tests_properties(${name} PROPERTIES LABELS "real;mpi" TIMEOUT 60 FIXTURES_REQUIRED "${fixture}")
endfunction()

# Numerics: the same seed and global batch on 1, 2 and 4 ranks must give the same weights
# (sums of per-rank gradients normalised by the global N; only the summation order
# differs, so agreement to 1e-4 relative at the weights' scale) and a falling loss.
# Lee: k = 3 counted layers in the first chunk, f = 2 replicated fc layers (fc1, fc2).
set(common --network veeriah-cifar10 --batch 64 --iterations 20 --warmup 1 --seed 7 --lr 0.001)
foreach(strategy dp lee)
  set(extra)
  if(strategy STREQUAL "lee")
    set(extra --k 3 --f 2)
  endif()
  foreach(np 1 2 4)
    cnnpar_mpi_run(real_run_${strategy}_np${np} ${np} real_${strategy}_runs
                   ${common} --strategy ${strategy} ${extra}
                   --trace ${run_out}/${strategy}_np${np}.json --weights-out ${run_out}/${strategy}_np${np}.bin)
    # Loss over 20 iterations on learnable synthetic data: the last three iterations'
    # mean must be at least 20 % below the first three's.
    cnnpar_mpi_check(real_trace_${strategy}_np${np} real_${strategy}_runs
                     $<TARGET_FILE:cnnpar_trace_check> ${run_out}/${strategy}_np${np}.json ${np}
                     --loss-drop 0.2 --weights-identical --compute real --comm-progress poll)
  endforeach()
  cnnpar_mpi_check(real_weights_${strategy}_np124 real_${strategy}_runs
                   $<TARGET_FILE:cnnpar_weights_compare> 1e-4
                   ${run_out}/${strategy}_np1.bin ${run_out}/${strategy}_np2.bin ${run_out}/${strategy}_np4.bin)
endforeach()

# The same numerics with oneDNN's GEMMs (and the im2col columns kept, the other memory mode):
# 1, 2 and 4 ranks agree with each other, and with OpenBLAS's P = 1 to the same tolerance.
# Release builds only: under a sanitizer the real_*_onednn unit tests cover the oneDNN calls
# and these runs would add about a minute to CI.
if(CNNPAR_ONEDNN AND NOT CNNPAR_SANITIZE)
  foreach(np 1 2 4)
    cnnpar_mpi_run(real_run_onednn_np${np} ${np} real_onednn_runs ${common} --strategy dp --gemm onednn
                   --columns kept --trace ${run_out}/onednn_np${np}.json --weights-out ${run_out}/onednn_np${np}.bin)
    cnnpar_mpi_check(real_trace_onednn_np${np} real_onednn_runs
                     $<TARGET_FILE:cnnpar_trace_check> ${run_out}/onednn_np${np}.json ${np}
                     --loss-drop 0.2 --weights-identical --compute real --comm-progress poll)
  endforeach()
  cnnpar_mpi_check(real_weights_onednn_np124 "real_onednn_runs;real_dp_runs" $<TARGET_FILE:cnnpar_weights_compare> 1e-4
                   ${run_out}/dp_np1.bin ${run_out}/onednn_np1.bin ${run_out}/onednn_np2.bin ${run_out}/onednn_np4.bin)
endif()

# Direct convolutions (oneDNN) train to the weights of im2col + GEMM. On cifar-smooth (no kinks)
# only the summation order inside a convolution differs: 1e-5 at the weights' scale after 20
# iterations, P = 1, 2, 4 (measured 5.5e-8 on an AMD EPYC). On veeriah-cifar10 a ReLU before each
# max-pool makes ties at zero whose tie-break a rounding difference can flip, and the runs then
# follow other gradients: 1e-4, the tolerance between the GEMM libraries above (AMD EPYC: 2.7e-8
# up to iteration 5, 4.1e-7 at 10, 1.09e-5 at 20, the same at every P; Intel Xeon: 2.1e-6 at 20).
set(smooth_common --network ${CMAKE_CURRENT_SOURCE_DIR}/data/cifar-smooth.json --batch 64 --iterations 20 --warmup 1
    --seed 7 --lr 0.001 --strategy dp)
if(CNNPAR_ONEDNN AND NOT CNNPAR_SANITIZE)
  foreach(np 1 2 4)
    cnnpar_mpi_run(real_run_direct_np${np} ${np} real_direct_runs ${common} --strategy dp --conv direct
                   --trace ${run_out}/direct_np${np}.json --weights-out ${run_out}/direct_np${np}.bin)
    cnnpar_mpi_check(real_trace_direct_np${np} real_direct_runs
                     $<TARGET_FILE:cnnpar_trace_check> ${run_out}/direct_np${np}.json ${np}
                     --loss-drop 0.2 --weights-identical --compute real --comm-progress poll)
    cnnpar_mpi_check(real_weights_direct_np${np} "real_direct_runs;real_onednn_runs" $<TARGET_FILE:cnnpar_weights_compare> 1e-4
                     ${run_out}/onednn_np${np}.bin ${run_out}/direct_np${np}.bin)
    cnnpar_mpi_check(real_weights_direct_openblas_np${np} "real_direct_runs;real_dp_runs"
                     $<TARGET_FILE:cnnpar_weights_compare> 1e-4 ${run_out}/dp_np${np}.bin ${run_out}/direct_np${np}.bin)
    foreach(conv im2col direct)
      cnnpar_mpi_run(real_run_smooth_${conv}_np${np} ${np} real_smooth_runs ${smooth_common} --conv ${conv}
                     --weights-out ${run_out}/smooth_${conv}_np${np}.bin)
    endforeach()
    cnnpar_mpi_check(real_weights_smooth_direct_np${np} real_smooth_runs $<TARGET_FILE:cnnpar_weights_compare> 1e-5
                     ${run_out}/smooth_im2col_np${np}.bin ${run_out}/smooth_direct_np${np}.bin)
  endforeach()
  cnnpar_mpi_run(real_run_direct_lee_np4 4 real_direct_runs ${common} --strategy lee --k 3 --f 2 --conv direct
                 --weights-out ${run_out}/direct_lee_np4.bin)
  cnnpar_mpi_check(real_weights_direct_lee "real_direct_runs;real_lee_runs" $<TARGET_FILE:cnnpar_weights_compare> 1e-4
                   ${run_out}/lee_np4.bin ${run_out}/direct_lee_np4.bin)
  cnnpar_mpi_check(real_trace_direct_ops real_direct_runs sh -c "grep -q '\"conv\": \"direct\"' $0"
                   ${run_out}/direct_np2.json)
endif()

# Winograd convolutions (oneDNN's F(4x4, 3x3); oneDNN 2.x has them on AVX-512 CPUs only, so the
# runs need such a build machine) train to the weights of im2col + GEMM on a smooth network of
# 3x3 convolutions. Each layer's output differs from a direct sum by its transforms' rounding
# (2e-6 relative on VGG's conv3_2 shape, ~10x a direct sum's); after 20 iterations the weights
# still differ by rounding alone: 1e-5 at their scale, as direct (measured 1.7e-8 at P = 1, 2, 4
# on an AMD EPYC with AVX-512).
file(READ /proc/cpuinfo cnnpar_cpuinfo LIMIT 8192)
set(cnnpar_cpu_avx512 ON)
foreach(flag avx512f avx512bw avx512vl avx512dq)
  if(NOT cnnpar_cpuinfo MATCHES " ${flag}( |\n)")
    set(cnnpar_cpu_avx512 OFF)
  endif()
endforeach()
if(CNNPAR_ONEDNN AND NOT CNNPAR_SANITIZE AND cnnpar_cpu_avx512)
  set(smooth3_common --network ${CMAKE_CURRENT_SOURCE_DIR}/data/cifar-smooth-3x3.json --batch 64 --iterations 20
      --warmup 1 --seed 7 --lr 0.001 --strategy dp)
  foreach(np 1 2 4)
    foreach(conv im2col winograd)
      cnnpar_mpi_run(real_run_smooth3_${conv}_np${np} ${np} real_winograd_runs ${smooth3_common} --conv ${conv}
                     --trace ${run_out}/smooth3_${conv}_np${np}.json --weights-out ${run_out}/smooth3_${conv}_np${np}.bin)
    endforeach()
    cnnpar_mpi_check(real_weights_smooth_winograd_np${np} real_winograd_runs $<TARGET_FILE:cnnpar_weights_compare>
                     1e-5 ${run_out}/smooth3_im2col_np${np}.bin ${run_out}/smooth3_winograd_np${np}.bin)
  endforeach()
  cnnpar_mpi_check(real_trace_winograd_ops real_winograd_runs sh -c "grep -q '\"conv\": \"winograd\"' $0"
                   ${run_out}/smooth3_winograd_np2.json)
endif()

# --conv auto, the default. A real run on a platform without a direct grid times both paths of
# each conv layer at start-up and says what it chose; sleep compute (nothing to time) takes the
# platform's prices: on local-direct-grid (direct convolutions at 1000 TFLOP/s against GEMMs at
# 85) every conv layer runs direct, on local (no grid) none.
set(conv_check ${CMAKE_CURRENT_SOURCE_DIR}/conv_paths_check.py)
if(CNNPAR_ONEDNN)
  cnnpar_mpi_run(real_run_conv_default_timed 2 real_conv_default_timed_runs --network ${tiny} --batch 16
                 --iterations 2 --trace ${run_out}/conv_default_timed.json)
  cnnpar_mpi_check(real_trace_conv_default_timed real_conv_default_timed_runs python3 ${conv_check}
                   ${run_out}/conv_default_timed.json any-of:conv1,conv2)
  cnnpar_mpi_run(real_run_conv_default_grid 2 real_conv_default_runs --network ${tiny} --batch 16 --iterations 2
                 --compute sleep --platform ${CMAKE_CURRENT_SOURCE_DIR}/data/local-direct-grid.json
                 --trace ${run_out}/conv_default_grid.json)
  cnnpar_mpi_check(real_trace_conv_default_grid real_conv_default_runs python3 ${conv_check}
                   ${run_out}/conv_default_grid.json conv1,conv2)
  # A resumed run takes its checkpoint's paths (here conv1 direct) instead of timing again: a
  # different choice would be a different run, which resuming refuses.
  set(ckpt_conv_common --network ${tiny} --batch 16 --warmup 0 --seed 5 --checkpoint ${run_out}/ckpt_conv)
  cnnpar_mpi_run(real_run_ckpt_conv_first 2 real_ckpt_conv_first ${ckpt_conv_common} --iterations 2 --conv conv1)
  add_test(NAME real_run_ckpt_conv_resume COMMAND ${cnnpar_mpiexec} -n 2 ${run} ${ckpt_conv_common} --iterations 4
           --resume --trace ${run_out}/ckpt_conv_resumed.json)
  set_tests_properties(real_run_ckpt_conv_resume PROPERTIES LABELS "real;mpi" TIMEOUT 120 ENVIRONMENT "${cnnpar_mpi_env}"
                       FIXTURES_REQUIRED real_ckpt_conv_first FIXTURES_SETUP real_ckpt_conv_runs)
  cnnpar_mpi_check(real_trace_ckpt_conv real_ckpt_conv_runs python3 ${conv_check}
                   ${run_out}/ckpt_conv_resumed.json conv1)
endif()
cnnpar_mpi_run(real_run_conv_default_no_grid 2 real_conv_default_no_grid_runs --network ${tiny} --batch 16
               --iterations 2 --compute sleep --trace ${run_out}/conv_default_no_grid.json)
cnnpar_mpi_check(real_trace_conv_default_no_grid real_conv_default_no_grid_runs python3 ${conv_check}
                 ${run_out}/conv_default_no_grid.json im2col)

# The other data-parallel builders and the communication thread on the tiny network (LRN,
# dropout, avg pool): 2 ranks must match 1 rank of plain dp. Runs whose weights are compared
# take one conv path: `auto` times the paths at start-up and may choose differently per run, and
# where a ReLU tie before a max-pool flips, Winograd's rounding against another path's grows past
# 1e-4 (5.2e-4 once in CI under load, mp_lee_as_per_layer).
set(tiny_args --network ${tiny} --batch 32 --iterations 6 --warmup 1 --seed 3)
set(tiny_common ${tiny_args} --conv im2col)
cnnpar_mpi_run(real_run_tiny_dp_np1 1 real_tiny_runs ${tiny_common} --strategy dp
               --weights-out ${run_out}/tiny_dp_np1.bin)
cnnpar_mpi_run(real_run_tiny_layerwise_np2 2 real_tiny_runs ${tiny_common} --strategy dp_layerwise
               --weights-out ${run_out}/tiny_layerwise_np2.bin)
cnnpar_mpi_run(real_run_tiny_buckets_np2 2 real_tiny_runs ${tiny_common} --strategy dp_buckets --bucket-bytes 20000
               --weights-out ${run_out}/tiny_buckets_np2.bin)
# Das et al.'s deferred allreduces: the last 2 layers' updates move into the next forward pass.
cnnpar_mpi_run(real_run_tiny_defer_np2 2 real_tiny_runs ${tiny_common} --strategy dp_layerwise --defer 2
               --weights-out ${run_out}/tiny_defer_np2.bin)
# The plain send/recv collectives (the engines' algorithms) train like MPI's own.
cnnpar_mpi_run(real_run_tiny_p2p_np2 2 real_tiny_runs ${tiny_common} --strategy dp_layerwise --collectives p2p
               --trace ${run_out}/tiny_p2p_np2.json --weights-out ${run_out}/tiny_p2p_np2.bin)
cnnpar_mpi_run(real_run_tiny_thread_np2 2 real_tiny_runs ${tiny_common} --strategy dp --comm-progress thread
               --trace ${run_out}/tiny_thread_np2.json --weights-out ${run_out}/tiny_thread_np2.bin)
set(tiny_direct)
if(CNNPAR_ONEDNN AND NOT CNNPAR_SANITIZE)  # direct convolutions beside LRN, dropout and avg pool
  cnnpar_mpi_run(real_run_tiny_direct_np2 2 real_tiny_runs ${tiny_args} --strategy dp --conv direct
                 --weights-out ${run_out}/tiny_direct_np2.bin)
  set(tiny_direct ${run_out}/tiny_direct_np2.bin)
endif()
cnnpar_mpi_check(real_weights_tiny real_tiny_runs $<TARGET_FILE:cnnpar_weights_compare> 1e-4
                 ${run_out}/tiny_dp_np1.bin ${run_out}/tiny_layerwise_np2.bin ${run_out}/tiny_buckets_np2.bin
                 ${run_out}/tiny_defer_np2.bin
                 ${run_out}/tiny_thread_np2.bin ${tiny_direct})
cnnpar_mpi_check(real_trace_tiny_thread real_tiny_runs $<TARGET_FILE:cnnpar_trace_check>
                 ${run_out}/tiny_thread_np2.json 2 --weights-identical --comm-progress thread)

# Model and hybrid parallelism (per_layer, hybrid): the same seed and global batch on 1, 2 and 4
# ranks train as one process of plain dp. Every rank holds only its slice of a model-parallel
# layer; cnnpar-run assembles the whole model for --weights-out. Tiny's fc1/fc2/fc3 play
# VGG's fc6/fc7/fc8: (a) every fc layer model-parallel, (b) conv data, fc1/fc2 model, fc3
# replicated over the whole batch, (c) Lee's replicated fc layers as a per_layer assignment,
# (d) a model-parallel conv layer (maps split through relu and avg pool), (e) the hybrid preset.
# The learning rate stays small: at 0.02 a max-pool tie flips between summation orders and
# even plain dp on 2 ranks drifts 5e-4 from 1 rank; the loss must still fall by 5 %.
set(mp_common --network ${tiny} --batch 32 --iterations 20 --warmup 1 --seed 11 --lr 0.005 --conv im2col)
cnnpar_mpi_run(real_run_mp_dp_np1 1 real_mp_runs ${mp_common} --strategy dp --weights-out ${run_out}/mp_dp_np1.bin)
set(mp_cases all_fc_model hybrid_fc3_replicated lee_as_per_layer conv2_model hybrid hybrid_p2p)
set(mp_args_all_fc_model --strategy per_layer --assign "fc*=model")
set(mp_args_hybrid_fc3_replicated --strategy per_layer --assign "conv*=data,fc1=model,fc2=model,fc3=replicated")
set(mp_args_lee_as_per_layer --strategy per_layer --assign "fc1=replicated,fc2=replicated" --sync chunks --k 3)
set(mp_args_conv2_model --strategy per_layer --assign "conv2=model")
set(mp_args_hybrid --strategy hybrid)
# (f) the same with every collective run as the collective layer's send/recv steps.
set(mp_args_hybrid_p2p --strategy hybrid --collectives p2p)
foreach(case ${mp_cases})
  set(files)
  foreach(np 1 2 4)
    cnnpar_mpi_run(real_run_mp_${case}_np${np} ${np} real_mp_runs ${mp_common} ${mp_args_${case}}
                   --trace ${run_out}/mp_${case}_np${np}.json --weights-out ${run_out}/mp_${case}_np${np}.bin)
    list(APPEND files ${run_out}/mp_${case}_np${np}.bin)
  endforeach()
  cnnpar_mpi_check(real_weights_mp_${case} real_mp_runs $<TARGET_FILE:cnnpar_weights_compare> 1e-4
                   ${run_out}/mp_dp_np1.bin ${files})
  cnnpar_mpi_check(real_trace_mp_${case}_np4 real_mp_runs $<TARGET_FILE:cnnpar_trace_check>
                   ${run_out}/mp_${case}_np4.json 4 --loss-drop 0.05 --weights-identical --compute real)
endforeach()

# Separate worker groups: Veeriah & Modi's schemes (a) and (c) on 2 and 4 ranks
# (K = 1, 2 conv workers + K fc workers) and Marques et al.'s conv_split on 2 and 3 ranks
# (master + workers, uniform and probed shares) are synchronous SGD on the global batch: the
# same weights as one process of plain dp. Scheme (b) updates the fc layers per sub-batch
# (not SGD on K·M images, as the paper says): its loss must fall.
set(wg_cases veeriah_a_np2 veeriah_a_np4 veeriah_c_np2 veeriah_c_np4 conv_split_uniform_np2 conv_split_uniform_np3
    conv_split_probe_np3)
set(wg_args_veeriah_a_np2 2 --strategy veeriah --scheme a)
set(wg_args_veeriah_a_np4 4 --strategy veeriah --scheme a)
set(wg_args_veeriah_c_np2 2 --strategy veeriah --scheme c)
set(wg_args_veeriah_c_np4 4 --strategy veeriah --scheme c)
set(wg_args_conv_split_uniform_np2 2 --strategy conv_split --shares uniform)
set(wg_args_conv_split_uniform_np3 3 --strategy conv_split --shares uniform)
set(wg_args_conv_split_probe_np3 3 --strategy conv_split --shares probe)
set(wg_files)
foreach(case ${wg_cases})
  list(GET wg_args_${case} 0 np)
  list(SUBLIST wg_args_${case} 1 -1 args)
  cnnpar_mpi_run(real_run_wg_${case} ${np} real_wg_runs ${mp_common} ${args}
                 --trace ${run_out}/wg_${case}.json --weights-out ${run_out}/wg_${case}.bin)
  list(APPEND wg_files ${run_out}/wg_${case}.bin)
endforeach()
cnnpar_mpi_check(real_weights_worker_groups "real_wg_runs;real_mp_runs" $<TARGET_FILE:cnnpar_weights_compare> 1e-4
                 ${run_out}/mp_dp_np1.bin ${wg_files})
cnnpar_mpi_run(real_run_wg_veeriah_b_np4 4 real_wg_b_runs ${mp_common} --strategy veeriah --scheme b
               --trace ${run_out}/wg_veeriah_b_np4.json)
cnnpar_mpi_check(real_trace_wg_veeriah_b_np4 real_wg_b_runs $<TARGET_FILE:cnnpar_trace_check>
                 ${run_out}/wg_veeriah_b_np4.json 4 --loss-drop 0.05 --compute real)

# BPT-CNN's parameter server, a server and m = 2 and 3 workers on lenet-5, for IDPA and UDPA with
# SGWU and AGWU: every run trains (the loss falls by 20 % over 60 rounds; AGWU scales each
# increment by gamma·Q, so it starts slowly while the accuracy Q is low) and its server records
# its merges. An AGWU run is checked beyond "the loss falls": the local executor replays the
# merge order the server recorded and must end with the run's weights (1e-6 of their scale;
# only the arithmetic of the two processes differs, not its order).
set(ps_common --network lenet-5 --batch 48 --iterations 60 --warmup 1 --seed 5 --strategy param_server)
# Sanitized builds (4-5x slower) run the 2-worker cases only: the 3-worker ones take no other
# code of the server or the workers than the 2-worker ones.
add_executable(cnnpar_serve_replay ${CMAKE_CURRENT_SOURCE_DIR}/serve_replay.cpp)
target_link_libraries(cnnpar_serve_replay PRIVATE cnnpar_settings cnnpar_test_settings cnnpar_real_core)
if(CNNPAR_SANITIZE)
  set(ps_ranks 3)
else()
  set(ps_ranks 3 4)
endif()
foreach(np ${ps_ranks})
  foreach(partition idpa udpa)
    foreach(update sgwu agwu)
      set(name ps_${partition}_${update}_np${np})
      cnnpar_mpi_run(real_run_${name} ${np} real_${name}_runs ${ps_common} --partition ${partition}
                     --update ${update} --trace ${run_out}/${name}.json --weights-out ${run_out}/${name}.bin)
      cnnpar_mpi_check(real_trace_${name} real_${name}_runs $<TARGET_FILE:cnnpar_trace_check>
                       ${run_out}/${name}.json ${np} --loss-drop 0.2 --weights-identical --compute real)
      if(update STREQUAL "agwu")
        cnnpar_mpi_check(real_replay_${name} real_${name}_runs ${CMAKE_COMMAND} -E env "${cnnpar_mpi_env}"
                         $<TARGET_FILE:cnnpar_serve_replay> ${run_out}/${name}.json ${run_out}/${name}_replay.bin)
        set_tests_properties(real_replay_${name} PROPERTIES FIXTURES_SETUP real_${name}_replayed)
        cnnpar_mpi_check(real_weights_replay_${name} "real_${name}_runs;real_${name}_replayed"
                         $<TARGET_FILE:cnnpar_weights_compare> 1e-6 ${run_out}/${name}.bin ${run_out}/${name}_replay.bin)
      endif()
    endforeach()
  endforeach()
endforeach()

# A worker whose first IDPA round is empty (100 times slower: Eq. 2 gives it no sample of the
# first increment) pushes an empty increment, then trains the samples Eq. 3-5 give it.
cnnpar_mpi_run(real_run_ps_empty_round 4 real_ps_empty_round_runs --network lenet-5 --batch 32 --iterations 6
               --strategy param_server --slowdown 1:100 --trace ${run_out}/ps_empty_round.json)
cnnpar_mpi_check(real_trace_ps_empty_round real_ps_empty_round_runs $<TARGET_FILE:cnnpar_trace_check>
                 ${run_out}/ps_empty_round.json 4 --weights-identical --compute real)

# BPT-CNN's inner-layer task DAG (--inner dag) trains to the weights of the im2col + GEMM path
# (1e-5 at the weights' scale): 1 rank on 1, 2 and 3 threads (the last divides no extent of
# tiny's conv layers evenly), and 2 ranks on 1 thread each. The trace records the mode.
set(inner_common --network ${tiny} --batch 32 --iterations 6 --warmup 1 --seed 3 --strategy dp --conv im2col)
cnnpar_mpi_run(real_run_inner_gemm 1 real_inner_runs ${inner_common} --inner gemm --threads 2
               --weights-out ${run_out}/inner_gemm.bin)
set(inner_files)
foreach(case np1_t1 np1_t2 np1_t3 np2_t1)
  string(REGEX MATCH "np([0-9]+)_t([0-9]+)" _ ${case})
  cnnpar_mpi_run(real_run_inner_dag_${case} ${CMAKE_MATCH_1} real_inner_runs ${inner_common} --inner dag
                 --threads ${CMAKE_MATCH_2} --trace ${run_out}/inner_dag_${case}.json
                 --weights-out ${run_out}/inner_dag_${case}.bin)
  list(APPEND inner_files ${run_out}/inner_dag_${case}.bin)
endforeach()
cnnpar_mpi_check(real_weights_inner_dag real_inner_runs $<TARGET_FILE:cnnpar_weights_compare> 1e-5
                 ${run_out}/inner_gemm.bin ${inner_files})
cnnpar_mpi_check(real_trace_inner_dag real_inner_runs sh -c "grep -q '\"inner\": \"dag\"' $0"
                 ${run_out}/inner_dag_np1_t3.json)

# Checkpoint + resume: 2 iterations, then --resume up to 4 in total, equal 4 straight ones bit
# for bit (same data order, dropout masks, momentum). The conv paths are fixed: auto's timing
# could choose other layers in the straight run than in the first half.
set(ckpt_common --network ${tiny} --batch 16 --warmup 0 --seed 5 --strategy dp --conv im2col)
cnnpar_mpi_run(real_run_ckpt_straight 2 real_ckpt_runs ${ckpt_common} --iterations 4
               --weights-out ${run_out}/ckpt_straight.bin)
cnnpar_mpi_run(real_run_ckpt_first 2 real_ckpt_first ${ckpt_common} --iterations 2 --checkpoint ${run_out}/ckpt)
add_test(NAME real_run_ckpt_resume COMMAND ${cnnpar_mpiexec} -n 2 ${run} ${ckpt_common} --iterations 4
         --checkpoint ${run_out}/ckpt --resume --weights-out ${run_out}/ckpt_resumed.bin)
set_tests_properties(real_run_ckpt_resume PROPERTIES LABELS "real;mpi" TIMEOUT 120 ENVIRONMENT "${cnnpar_mpi_env}"
                     FIXTURES_REQUIRED real_ckpt_first FIXTURES_SETUP real_ckpt_runs)
cnnpar_mpi_check(real_weights_ckpt real_ckpt_runs $<TARGET_FILE:cnnpar_weights_compare> 0
                 ${run_out}/ckpt_straight.bin ${run_out}/ckpt_resumed.bin)

# The same with batch normalisation (tests/real/data/graph-block.json, per-rank statistics):
# the checkpoints at iteration 4 of the straight and the resumed run are equal byte for byte,
# so the running statistics survived the resume (the weights alone would not show it).
set(ckpt_bn_common --network ${CMAKE_CURRENT_SOURCE_DIR}/data/graph-block.json --batch 16 --warmup 0 --seed 5
    --strategy dp --conv im2col)
cnnpar_mpi_run(real_run_ckpt_bn_straight 2 real_ckpt_bn_runs ${ckpt_bn_common} --iterations 4
               --checkpoint ${run_out}/ckpt_bn_straight)
cnnpar_mpi_run(real_run_ckpt_bn_first 2 real_ckpt_bn_first ${ckpt_bn_common} --iterations 2
               --checkpoint ${run_out}/ckpt_bn)
add_test(NAME real_run_ckpt_bn_resume COMMAND ${cnnpar_mpiexec} -n 2 ${run} ${ckpt_bn_common} --iterations 4
         --checkpoint ${run_out}/ckpt_bn --resume)
set_tests_properties(real_run_ckpt_bn_resume PROPERTIES LABELS "real;mpi" TIMEOUT 120 ENVIRONMENT "${cnnpar_mpi_env}"
                     FIXTURES_REQUIRED real_ckpt_bn_first FIXTURES_SETUP real_ckpt_bn_runs)
cnnpar_mpi_check(real_checkpoint_bn real_ckpt_bn_runs ${CMAKE_COMMAND} -E compare_files
                 ${run_out}/ckpt_bn_straight/checkpoint.bin ${run_out}/ckpt_bn/checkpoint.bin)

# Resuming with a setting that breaks bit-identity (real/checkpoint.hpp) is refused: status 2,
# one message naming the checkpoint file, the field and both values. --iterations 100 stays
# above the checkpoint's iteration whether or not real_run_ckpt_resume has rewritten it.
set(resume_bad --network ${tiny} --warmup 0 --iterations 100 --checkpoint ${run_out}/ckpt --resume)
set(resume_cases batch seed strategy lr ranks)
set(resume_args_batch -n 2 ${run} ${resume_bad} --batch 32 --seed 5 --strategy dp)
set(resume_pattern_batch "ckpt/checkpoint.bin: /global_batch: .*global batch 16, this run has 32")
set(resume_args_seed -n 2 ${run} ${resume_bad} --batch 16 --seed 6 --strategy dp)
set(resume_pattern_seed "ckpt/checkpoint.bin: /seed: .*seed 5, this run has 6")
set(resume_args_strategy -n 2 ${run} ${resume_bad} --batch 16 --seed 5 --strategy dp_buckets)
set(resume_pattern_strategy "ckpt/checkpoint.bin: /strategy: .*strategy dp, this run has dp_buckets")
set(resume_args_lr -n 2 ${run} ${resume_bad} --batch 16 --seed 5 --strategy dp --lr 0.02)
set(resume_pattern_lr "ckpt/checkpoint.bin: /lr: .*learning rate 0.01, this run has 0.02")
set(resume_args_ranks -n 1 ${run} ${resume_bad} --batch 16 --seed 5 --strategy dp)
set(resume_pattern_ranks "ckpt/checkpoint.bin: /ranks: .*ranks 2, this run has 1")
foreach(case ${resume_cases})
  add_test(NAME real_fail_resume_other_${case}
           COMMAND ${expect_fail} 30 2 "${resume_pattern_${case}}" 1 -- ${cnnpar_mpiexec} ${resume_args_${case}})
  set_tests_properties(real_fail_resume_other_${case} PROPERTIES LABELS "real;mpi" TIMEOUT 60
                       ENVIRONMENT "${cnnpar_mpi_env}" FIXTURES_REQUIRED real_ckpt_first)
endforeach()

# Periodic checkpoints: a job SIGKILLed after its second checkpoint (every 4 iterations) and
# resumed ends with the weights of an uninterrupted 60-iteration run, byte for byte: plain dp,
# and hybrid (model-parallel fc layers: every rank takes part in assembling the checkpoint).
foreach(strategy dp hybrid)
  add_test(NAME real_fault_kill_resume_${strategy}
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/kill_resume.sh ${run_out}/kill_resume_${strategy} 4 60 --
                   ${cnnpar_mpiexec} -n 2 ${run} --network ${tiny} --batch 16 --warmup 1 --seed 5
                   --strategy ${strategy} --conv im2col)
  set_tests_properties(real_fault_kill_resume_${strategy} PROPERTIES LABELS "real;mpi" TIMEOUT 120
                       ENVIRONMENT "${cnnpar_mpi_env}" PASS_REGULAR_EXPRESSION "equal the uninterrupted run's byte for byte")
endforeach()

# Sleep mode: 4 ranks with modelled op times on the `local` platform, layer-wise overlap.
cnnpar_mpi_run(real_run_sleep_np4 4 real_sleep_runs --network vgg-a-32 --batch 64 --iterations 3
               --strategy dp_layerwise --compute sleep --trace ${run_out}/sleep_np4.json)
cnnpar_mpi_check(real_trace_sleep_np4 real_sleep_runs $<TARGET_FILE:cnnpar_trace_check>
                 ${run_out}/sleep_np4.json 4 --compute sleep)
# A graph network (ResNet-20: residual adds, batchnorm) in sleep mode: its gradient buckets,
# batchnorm's parameters included, are real MPI allreduces.
cnnpar_mpi_run(real_run_graph_sleep_np2 2 real_graph_sleep_runs --network resnet-20 --batch 16 --iterations 3
               --strategy dp_buckets --compute sleep --trace ${run_out}/graph_sleep_np2.json)
cnnpar_mpi_check(real_trace_graph_sleep_np2 real_graph_sleep_runs $<TARGET_FILE:cnnpar_trace_check>
                 ${run_out}/graph_sleep_np2.json 2 --compute sleep)

# The same for real, data parallel on 2 ranks with per-rank batch statistics: it trains (the
# loss falls by 20 % over 30 iterations at lr 0.1; ResNet-20's fell from 2.51 to 1.02 when
# written), and both ranks end with the same weights. Sanitized builds (ResNet-20 took 30-50 s
# a run there) train tests/real/data/graph-block.json, which has every graph layer kind and
# learns more slowly (2.69 -> 2.14 in 40 iterations): 40 iterations, 10 %.
if(CNNPAR_SANITIZE)
  set(graph_network ${CMAKE_CURRENT_SOURCE_DIR}/data/graph-block.json)
  set(graph_iterations 40)
  set(graph_loss_drop 0.1)
else()
  set(graph_network resnet-20)
  set(graph_iterations 30)
  set(graph_loss_drop 0.2)
endif()
foreach(strategy dp dp_buckets)
  cnnpar_mpi_run(real_run_graph_${strategy}_np2 2 real_graph_${strategy}_runs --network ${graph_network} --batch 16
                 --iterations ${graph_iterations} --warmup 1 --seed 3 --lr 0.1 --strategy ${strategy}
                 --trace ${run_out}/graph_${strategy}_np2.json)
  cnnpar_mpi_check(real_trace_graph_${strategy}_np2 real_graph_${strategy}_runs $<TARGET_FILE:cnnpar_trace_check>
                   ${run_out}/graph_${strategy}_np2.json 2 --loss-drop ${graph_loss_drop} --weights-identical
                   --compute real)
endforeach()
# Synchronised batch normalisation (--sync-bn on): dp, dp_buckets and hybrid (a model-parallel
# classifier) on 2 and 4 ranks train ResNet-20 to one process's weights on the same global
# batch (1e-4 of their scale after 20 iterations); with per-rank statistics they would not. At a small learning rate: at lr 0.1
# (the run above) ResNet-20's training amplifies rounding so much that one process with two
# summation orders of the statistics ends 0.13 apart after 20 iterations (1e-5 at lr 0.001).
# Every run takes one conv path (see tiny_common).
set(syncbn_args --network ${graph_network} --batch 16 --iterations 20 --warmup 1 --seed 3 --lr 0.001)
set(syncbn_common ${syncbn_args} --conv im2col)
cnnpar_mpi_run(real_run_syncbn_np1 1 real_syncbn_runs ${syncbn_common} --strategy dp
               --weights-out ${run_out}/syncbn_np1.bin)
set(syncbn_files)
foreach(case dp_np2 dp_buckets_np2 hybrid_np2 dp_np4 dp_buckets_np4 hybrid_np4)
  string(REGEX MATCH "[0-9]+$" np ${case})
  string(REGEX REPLACE "_np[0-9]+$" "" strategy ${case})
  cnnpar_mpi_run(real_run_syncbn_${case} ${np} real_syncbn_runs ${syncbn_common} --strategy ${strategy} --sync-bn on
                 --weights-out ${run_out}/syncbn_${case}.bin)
  list(APPEND syncbn_files ${run_out}/syncbn_${case}.bin)
endforeach()
if(CNNPAR_ONEDNN AND NOT CNNPAR_SANITIZE)  # a graph network's convolutions (no bias, 1x1 stride 2) run direct
  cnnpar_mpi_run(real_run_syncbn_direct_np2 2 real_syncbn_runs ${syncbn_args} --strategy dp --sync-bn on
                 --conv direct --weights-out ${run_out}/syncbn_direct_np2.bin)
  list(APPEND syncbn_files ${run_out}/syncbn_direct_np2.bin)
endif()
cnnpar_mpi_check(real_weights_syncbn real_syncbn_runs $<TARGET_FILE:cnnpar_weights_compare> 1e-4
                 ${run_out}/syncbn_np1.bin ${syncbn_files})
# A genuinely slower rank (--slowdown 1:2): rank 1's compute takes twice as long, the other
# rank's is unchanged (sleep compute, so the two ranks do not fight over the cores).
cnnpar_mpi_run(real_run_slowdown_np2 2 real_slowdown_runs --network vgg-a-32 --batch 32 --iterations 3
               --compute sleep --slowdown 1:2 --trace ${run_out}/slowdown_np2.json)
cnnpar_mpi_check(real_trace_slowdown_np2 real_slowdown_runs $<TARGET_FILE:cnnpar_trace_check>
                 ${run_out}/slowdown_np2.json 2 --compute sleep --slowed 1 2)
# The compute ratio it checks (within 15 %) measures this machine's two cores: alone, not beside
# another MPI test (a CI run at -j2 once saw 2.31 for 2).
set_tests_properties(real_run_slowdown_np2 PROPERTIES RUN_SERIAL TRUE)

# Calibration on 2 ranks writes a platform that model/platform.cpp accepts.
cnnpar_mpi_run(real_run_calibrate_np2 2 real_calibrate_runs --calibrate --network ${tiny} --batch 16 --repeats 1
               --max-message 1048576
               --out ${run_out}/calibrated.json)
# From 1 MiB on a size is timed as a chain of back-to-back repeats, marked * in the table (the
# platform check below fails when the run did).
set_tests_properties(real_run_calibrate_np2 PROPERTIES PASS_REGULAR_EXPRESSION "allreduce +1048576 +[0-9.e+-]+\\*")
cnnpar_mpi_check(real_platform_calibrated real_calibrate_runs $<TARGET_FILE:cnnpar_platform_check>
                 ${run_out}/calibrated.json 2)
# Calibration of direct convolutions (--conv direct): tiny's conv1 (forward, weights; it has no
# input errors) and conv2 (forward, data, weights) at per-rank batches 1, 2, 4 and 8: 5 · 4 = 20
# points of calibration.conv_flops.
if(CNNPAR_ONEDNN AND NOT CNNPAR_SANITIZE)
  cnnpar_mpi_run(real_run_calibrate_direct 1 real_calibrate_direct_runs --calibrate --calibrate-parts compute
                 --conv direct --network ${tiny} --batch 8 --repeats 1 --out ${run_out}/calibrated_direct.json)
  cnnpar_mpi_check(real_platform_calibrated_direct real_calibrate_direct_runs sh -c
                   "test $(sed -n '/\"conv_flops\"/,/}/p' $0 | grep -c '\"gemm ') -eq 20"
                   ${run_out}/calibrated_direct.json)
endif()
# Calibration in parts, on that platform: a part not measured keeps the base's values bit for
# bit. Small and quick (batch 8, messages to 64 KiB); the curves also run as the engines'
# steps (p2p), the progress probes also with a communication thread.
foreach(part network compute progress)
  if(part STREQUAL "network")
    set(kept compute,progress)
    set(mode --collectives p2p)
  elseif(part STREQUAL "compute")
    set(kept network,progress)
    set(mode)
  else()
    set(kept compute,network)
    set(mode --comm-progress thread --collectives p2p)
  endif()
  cnnpar_mpi_run(real_run_calibrate_${part}_np2 2 real_calibrate_${part}_runs --calibrate --calibrate-parts ${part}
                 --platform ${run_out}/calibrated.json --network ${tiny} --batch 8 --repeats 1 --max-message 65536
                 ${mode} --out ${run_out}/calibrated_${part}.json)
  set_tests_properties(real_run_calibrate_${part}_np2 PROPERTIES FIXTURES_REQUIRED real_calibrate_runs)
  cnnpar_mpi_check(real_platform_calibrated_${part} "real_calibrate_runs;real_calibrate_${part}_runs"
                   $<TARGET_FILE:cnnpar_platform_parts_check> ${run_out}/calibrated.json
                   ${run_out}/calibrated_${part}.json ${kept})
endforeach()

# The inner part alone writes nodes.inner (the run's --inner dag, on 1..min(cores, hardware)
# threads; the platform's parser checks each efficiency is in (0, 1] and the threads within the
# cores) and keeps everything else; a prediction on it prices the conv layers through it.
cnnpar_mpi_run(real_run_calibrate_inner_np2 2 real_calibrate_inner_runs --calibrate --calibrate-parts inner
               --inner dag --platform ${run_out}/calibrated.json --network ${tiny} --batch 8 --repeats 1
               --out ${run_out}/calibrated_inner.json)
set_tests_properties(real_run_calibrate_inner_np2 PROPERTIES FIXTURES_REQUIRED real_calibrate_runs
                     PASS_REGULAR_EXPRESSION "inner dag on 1 threads: conv forward \\+ weight gradient")
cnnpar_mpi_check(real_platform_calibrated_inner "real_calibrate_runs;real_calibrate_inner_runs"
                 $<TARGET_FILE:cnnpar_platform_parts_check> ${run_out}/calibrated.json
                 ${run_out}/calibrated_inner.json compute,network,progress)
cnnpar_mpi_check(real_predict_calibrated_inner "real_calibrate_runs;real_calibrate_inner_runs" sh -c
                 "grep -q conv_efficiency $1 && $0 predict --network $2 --platform $1 --nodes 1-2 --json /dev/null"
                 $<TARGET_FILE:cnnpar> ${run_out}/calibrated_inner.json ${tiny})

# Failures end the job, non-zero, naming the rank: a stalled rank within --timeout-s + 5 s,
# a killed rank within 5 s (mpiexec sees it die; measured 0.5 s, and 2.8 s for a stall with
# --timeout-s 2). The timeout of 30 s shows that the dead rank is not found by the timeout.
add_test(NAME real_fail_stalled_rank
         COMMAND ${expect_fail} 7 nonzero "rank 0: stalled waiting for collective" any --
                 ${cnnpar_mpiexec} -n 2 ${run} --network ${tiny} --batch 16 --iterations 3 --compute sleep
                 --debug-stall-rank 1 --timeout-s 2)
add_test(NAME real_fail_dead_rank
         COMMAND ${expect_fail} 5 nonzero "BAD TERMINATION" any --
                 ${cnnpar_mpiexec} -n 2 ${run} --network ${tiny} --batch 16 --iterations 3 --compute sleep
                 --debug-exit-rank 1 --timeout-s 30)
# Bad input: exit status 2 and the message exactly once although 2 ranks fail alike.
add_test(NAME real_fail_bad_network
         COMMAND ${expect_fail} 30 2 "no-such-net" 1 --
                 ${cnnpar_mpiexec} -n 2 ${run} --network no-such-net --batch 16)
add_test(NAME real_fail_bad_batch
         COMMAND ${expect_fail} 30 2 "batch" 1 --
                 ${cnnpar_mpiexec} -n 2 ${run} --network ${tiny} --batch 15)
add_test(NAME real_fail_bad_progress
         COMMAND ${expect_fail} 30 2 "spin" 1 --
                 ${cnnpar_mpiexec} -n 2 ${run} --network ${tiny} --comm-progress spin)
add_test(NAME real_fail_bad_trace_path
         COMMAND ${expect_fail} 30 2 "no-such-dir" 1 --
                 ${cnnpar_mpiexec} -n 2 ${run} --network ${tiny} --batch 16 --trace ${run_out}/no-such-dir/t.json)
add_test(NAME real_fail_bad_assign
         COMMAND ${expect_fail} 30 2 "fc9" 1 --
                 ${cnnpar_mpiexec} -n 2 ${run} --network ${tiny} --batch 16 --strategy per_layer --assign fc9=model)
set_tests_properties(real_fail_stalled_rank real_fail_dead_rank real_fail_bad_network real_fail_bad_batch
                     real_fail_bad_progress real_fail_bad_trace_path real_fail_bad_assign
                     PROPERTIES LABELS "real;mpi" TIMEOUT 120 ENVIRONMENT "${cnnpar_mpi_env}")

# Nonsense numbers: status 2 before any MPI collective (a --timeout-s of 0 was reported as a
# stall), one message naming the flag and the value.
set(bad_number_cases lr_nan lr_negative lr_inf momentum weight_decay concurrency timeout_zero timeout_nan
    poll_interval checkpoint_every)
set(bad_number_lr_nan --lr nan "command line: /lr: must be a finite number > 0 \\(value: nan\\)")
set(bad_number_lr_negative --lr -0.5 "command line: /lr: must be a finite number > 0 \\(value: -0.5\\)")
set(bad_number_lr_inf --lr inf "command line: /lr: must be a finite number > 0 \\(value: inf\\)")
set(bad_number_momentum --momentum 1 "command line: /momentum: must be a number in \\[0, 1\\) \\(value: 1\\)")
set(bad_number_weight_decay --weight-decay -1 "command line: /weight-decay: .*\\(value: -1\\)")
set(bad_number_concurrency --concurrency -5 "command line: /concurrency: .*\\(value: -5\\)")
set(bad_number_timeout_zero --timeout-s 0 "command line: /timeout-s: .*> 0 \\(value: 0\\)")
set(bad_number_timeout_nan --timeout-s nan "command line: /timeout-s: .*\\(value: nan\\)")
set(bad_number_poll_interval --poll-interval-us inf "command line: /poll-interval-us: .*\\(value: inf\\)")
set(bad_number_checkpoint_every --checkpoint-every -2 "command line: /checkpoint-every: .*\\(value: -2\\)")
foreach(case ${bad_number_cases})
  list(GET bad_number_${case} 0 flag)
  list(GET bad_number_${case} 1 value)
  list(GET bad_number_${case} 2 pattern)
  add_test(NAME real_fail_number_${case}
           COMMAND ${expect_fail} 30 2 "${pattern}" 1 --
                   ${cnnpar_mpiexec} -n 2 ${run} --network ${tiny} --batch 16 --compute sleep ${flag} ${value})
  set_tests_properties(real_fail_number_${case} PROPERTIES LABELS "real;mpi" TIMEOUT 60 ENVIRONMENT "${cnnpar_mpi_env}")
endforeach()

# Input that reached internal assertions: a network without an fc layer (the loss needs an fc
# layer's logits) and checkpoint paths that cannot be used: status 2 naming file or flag,
# path and reason.
file(WRITE ${run_out}/no_fc.json
     "{\"name\": \"no-fc\", \"input\": {\"channels\": 3, \"height\": 8, \"width\": 8},\n"
     " \"layers\": [{\"name\": \"conv1\", \"type\": \"conv\", \"maps\": 10, \"kernel\": 8},\n"
     "            {\"name\": \"loss\", \"type\": \"softmax\"}]}\n")
# 3·10^10 parameters (360 GB of weights, gradients and momentum; within the per-layer bound of
# base/limits.hpp): refused before allocating. 30000·10^6 + 10^6 + 10^6·10 + 10 = 30011000010.
file(WRITE ${run_out}/huge_fc.json
     "{\"name\": \"huge-fc\", \"input\": {\"channels\": 3, \"height\": 100, \"width\": 100},\n"
     " \"layers\": [{\"name\": \"fc1\", \"type\": \"fc\", \"outputs\": 1000000},\n"
     "            {\"name\": \"fc2\", \"type\": \"fc\", \"outputs\": 10}, {\"name\": \"loss\", \"type\": \"softmax\"}]}\n")
file(MAKE_DIRECTORY ${run_out}/ckpt_bin_is_dir/checkpoint.bin)
file(WRITE ${run_out}/ckpt_is_file "not a directory\n")
set(bad_input_cases no_fc huge_fc ckpt_is_file ckpt_bin_is_dir resume_missing resume_dir every_lee inner_unknown
    inner_dag_threads)
set(bad_input_no_fc --network ${run_out}/no_fc.json --batch 16
    "no_fc.json: /layers/1: .*needs logits from an fc layer.*\\(value: loss\\)")
set(bad_input_huge_fc --network ${run_out}/huge_fc.json --batch 2
    "huge-fc.*: /layers: weights, gradients and momentum need .* GB, more than this machine's .*\\(value: 30011000010 parameters\\)")
set(bad_input_ckpt_is_file --network ${tiny} --batch 16 --checkpoint ${run_out}/ckpt_is_file
    "command line: /checkpoint: exists and is not a directory \\(value: .*ckpt_is_file\\)")
set(bad_input_ckpt_bin_is_dir --network ${tiny} --batch 16 --checkpoint ${run_out}/ckpt_bin_is_dir
    "command line: /checkpoint: exists and is not a regular file \\(value: .*ckpt_bin_is_dir/checkpoint.bin\\)")
set(bad_input_resume_missing --network ${tiny} --batch 16 --checkpoint ${run_out}/no_such_ckpt --resume
    "command line: /checkpoint: cannot open checkpoint: No such file or directory \\(value: .*no_such_ckpt/checkpoint.bin\\)")
set(bad_input_resume_dir --network ${tiny} --batch 16 --checkpoint ${run_out}/ckpt_bin_is_dir --resume
    "command line: /checkpoint: cannot open checkpoint: it is a directory \\(value: .*ckpt_bin_is_dir/checkpoint.bin\\)")
# Lee's replicated fc layers carry gathered data into the next iteration: no periodic checkpoint.
set(bad_input_every_lee --network ${tiny} --batch 16 --strategy lee --k 3 --f 2 --checkpoint ${run_out}/lee_every
    --checkpoint-every 2 "command line: /checkpoint-every: strategy lee carries work .*\\(value: 2\\)")
# --inner: a mode that does not exist, and the task graph without a thread to run on.
set(bad_input_inner_unknown --network ${tiny} --batch 16 --inner fast
    "command line: /inner: expected gemm or dag \\(value: fast\\)")
set(bad_input_inner_dag_threads --network ${tiny} --batch 16 --inner dag --threads 0
    "command line: /threads: --inner dag runs its tasks on --threads threads: give 1 or more \\(value: 0\\)")
# A checkpoint.bin larger than the machine's memory (a sparse 8 TB file): refused unread.
add_test(NAME real_fail_input_resume_huge
         COMMAND sh -c "mkdir -p $0/huge_ckpt && truncate -s 8T $0/huge_ckpt/checkpoint.bin && exec \"$@\""
                 ${run_out} ${expect_fail} 30 2
                 "command line: /checkpoint: checkpoint larger than this machine's memory .*huge_ckpt/checkpoint.bin" 1 --
                 ${cnnpar_mpiexec} -n 2 ${run} --network ${tiny} --batch 16 --checkpoint ${run_out}/huge_ckpt --resume)
set_tests_properties(real_fail_input_resume_huge PROPERTIES LABELS "real;mpi" TIMEOUT 60 ENVIRONMENT "${cnnpar_mpi_env}")
foreach(case ${bad_input_cases})
  set(args ${bad_input_${case}})
  list(POP_BACK args pattern)
  add_test(NAME real_fail_input_${case}
           COMMAND ${expect_fail} 30 2 "${pattern}" 1 -- ${cnnpar_mpiexec} -n 2 ${run} ${args})
  set_tests_properties(real_fail_input_${case} PROPERTIES LABELS "real;mpi" TIMEOUT 60 ENVIRONMENT "${cnnpar_mpi_env}")
endforeach()

# Not a test: the compute-efficiency figure (GEMM rate in the executor vs calibrated sgemm).
add_executable(cnnpar_gemm_efficiency ${CMAKE_CURRENT_SOURCE_DIR}/gemm_efficiency.cpp)
target_link_libraries(cnnpar_gemm_efficiency PRIVATE cnnpar_settings cnnpar_test_settings cnnpar_workload cnnpar_analysis)

# `cnnpar run` / `cnnpar calibrate` (the cnnpar executable, no MPI inside) launch cnnpar-run
# under mpiexec and read its output back; the run also predicts and compares.
if(TARGET cnnpar)
  add_test(NAME real_cli_run_np2
           COMMAND $<TARGET_FILE:cnnpar> run --network ${tiny} --nodes 2 --batch 16 --iterations 3
                   --strategy dp_layerwise --trace ${run_out}/cli_run.json --compare-json ${run_out}/cli_compare.json)
  set_tests_properties(real_cli_run_np2 PROPERTIES LABELS "real;mpi" TIMEOUT 120 FIXTURES_SETUP real_cli_runs
                       ENVIRONMENT "${cnnpar_mpi_env};CNNPAR_RUN=$<TARGET_FILE:cnnpar-run>"
                       PASS_REGULAR_EXPRESSION "overlap_ratio_percent")
  cnnpar_mpi_check(real_cli_run_trace real_cli_runs $<TARGET_FILE:cnnpar_trace_check> ${run_out}/cli_run.json 2
                   --weights-identical)
  # advise → run for real → compare: the advised assignment file runs in cnnpar-run (vgg-a-32, 2 ranks).
  add_test(NAME real_cli_advise_np2
           COMMAND $<TARGET_FILE:cnnpar> advise --network vgg-a-32 --platform local --batch 64 --nodes 2 --recheck 1
                   --out ${run_out}/advised_assign.json -q)
  set_tests_properties(real_cli_advise_np2 PROPERTIES LABELS "real;mpi" TIMEOUT 120 FIXTURES_SETUP real_advise)
  add_test(NAME real_cli_run_advised_np2
           COMMAND $<TARGET_FILE:cnnpar> run --network vgg-a-32 --nodes 2 --batch 64 --iterations 3
                   --strategy per_layer --assign ${run_out}/advised_assign.json --trace ${run_out}/advised.json)
  set_tests_properties(real_cli_run_advised_np2 PROPERTIES LABELS "real;mpi" TIMEOUT 120 FIXTURES_REQUIRED real_advise
                       ENVIRONMENT "${cnnpar_mpi_env};CNNPAR_RUN=$<TARGET_FILE:cnnpar-run>"
                       PASS_REGULAR_EXPRESSION "overlap_ratio_percent|largest deviations|predicted")
  # The measured trace exports like a predicted one (Chrome trace, per-layer CSV, compare --per-layer).
  cnnpar_mpi_check(real_cli_run_export real_cli_runs sh ${PROJECT_SOURCE_DIR}/tests/cli/measured_export.sh
                   $<TARGET_FILE:cnnpar> ${run_out}/cli_run.json)
  # The run-spec hand-over carries every strategy option: per_layer with its assignment, sync and k.
  add_test(NAME real_cli_run_per_layer_np2
           COMMAND $<TARGET_FILE:cnnpar> run --network ${tiny} --nodes 2 --batch 16 --iterations 3
                   --strategy per_layer --assign "fc1=model,fc2=replicated" --sync chunks --k 3
                   --trace ${run_out}/cli_run_per_layer.json)
  set_tests_properties(real_cli_run_per_layer_np2 PROPERTIES LABELS "real;mpi" TIMEOUT 120 FIXTURES_SETUP real_cli_pl
                       ENVIRONMENT "${cnnpar_mpi_env};CNNPAR_RUN=$<TARGET_FILE:cnnpar-run>"
                       PASS_REGULAR_EXPRESSION "per_layer on tiny-cifar, 2 ranks")
  # The executor built the schedule the options name (the trace metadata keeps them).
  cnnpar_mpi_check(real_cli_run_per_layer_options real_cli_pl sh -c
                   "grep -q '\"assignment\": \"conv1=data,conv2=data,fc1=model,fc2=replicated,fc3=data\"' $0 && grep -q '\"sync\": \"chunks\"' $0"
                   ${run_out}/cli_run_per_layer.json)
  # A run-spec that does not parse: status 2, one message naming the file, the path and the value.
  file(WRITE ${run_out}/bad_spec.json
       "{\"format\": \"cnnpar-run-spec\", \"network\": \"${tiny}\", \"strategy\": \"lee\",\n"
       " \"options\": {\"k\": \"many\"}, \"batch\": 16, \"iterations\": 3}\n")
  add_test(NAME real_fail_bad_spec
           COMMAND ${expect_fail} 30 2 "bad_spec.json: /options/k" 1 --
                   ${cnnpar_mpiexec} -n 2 ${run} --spec ${run_out}/bad_spec.json)
  set_tests_properties(real_fail_bad_spec PROPERTIES LABELS "real;mpi" TIMEOUT 60 ENVIRONMENT "${cnnpar_mpi_env}")
  # The run-spec's numbers get the flags' checks, naming the spec file and the JSON path.
  file(WRITE ${run_out}/bad_spec_lr.json
       "{\"format\": \"cnnpar-run-spec\", \"network\": \"${tiny}\", \"strategy\": \"dp\",\n"
       " \"batch\": 16, \"iterations\": 3, \"lr\": -1}\n")
  add_test(NAME real_fail_bad_spec_lr
           COMMAND ${expect_fail} 30 2 "bad_spec_lr.json: /lr: must be a finite number > 0 \\(value: -1\\)" 1 --
                   ${cnnpar_mpiexec} -n 2 ${run} --spec ${run_out}/bad_spec_lr.json)
  file(WRITE ${run_out}/bad_spec_timeout.json
       "{\"format\": \"cnnpar-run-spec\", \"network\": \"${tiny}\", \"strategy\": \"dp\",\n"
       " \"batch\": 16, \"iterations\": 3, \"timeout_s\": 0}\n")
  add_test(NAME real_fail_bad_spec_timeout
           COMMAND ${expect_fail} 30 2 "bad_spec_timeout.json: /timeout_s: .*> 0 \\(value: 0\\)" 1 --
                   ${cnnpar_mpiexec} -n 2 ${run} --spec ${run_out}/bad_spec_timeout.json)
  set_tests_properties(real_fail_bad_spec_lr real_fail_bad_spec_timeout PROPERTIES LABELS "real;mpi" TIMEOUT 60
                       ENVIRONMENT "${cnnpar_mpi_env}")

  # `cnnpar run` refuses the same nonsense before mpiexec starts.
  set(cli_number_cases lr_nan momentum concurrency timeout_zero checkpoint_every)
  set(cli_number_lr_nan --lr nan "command line: /lr: must be a finite number > 0 \\(value: nan\\)")
  set(cli_number_momentum --momentum -0.1 "command line: /momentum: must be a number in \\[0, 1\\) \\(value: -0.1\\)")
  set(cli_number_concurrency --concurrency -5 "command line: /concurrency: .*\\(value: -5\\)")
  set(cli_number_timeout_zero --timeout-s 0 "command line: /timeout-s: .*> 0 \\(value: 0\\)")
  set(cli_number_checkpoint_every --checkpoint-every -1 "command line: /checkpoint-every: .*\\(value: -1\\)")
  foreach(case ${cli_number_cases})
    list(GET cli_number_${case} 0 flag)
    list(GET cli_number_${case} 1 value)
    list(GET cli_number_${case} 2 pattern)
    add_test(NAME real_fail_cli_number_${case}
             COMMAND ${expect_fail} 30 2 "${pattern}" 1 --
                     $<TARGET_FILE:cnnpar> run --network ${tiny} --nodes 2 --batch 16 --compute sleep ${flag} ${value})
    set_tests_properties(real_fail_cli_number_${case} PROPERTIES LABELS "real;mpi" TIMEOUT 60
                         ENVIRONMENT "${cnnpar_mpi_env};CNNPAR_RUN=$<TARGET_FILE:cnnpar-run>")
  endforeach()

  # `cnnpar run` hands --checkpoint, --checkpoint-every and --resume over in the run-spec: 4
  # iterations with checkpoints, then a resume up to 6.
  add_test(NAME real_cli_run_checkpoint
           COMMAND $<TARGET_FILE:cnnpar> run --network ${tiny} --nodes 2 --batch 16 --iterations 4 --no-predict
                   --checkpoint ${run_out}/cli_ckpt --checkpoint-every 2)
  set_tests_properties(real_cli_run_checkpoint PROPERTIES LABELS "real;mpi" TIMEOUT 120 FIXTURES_SETUP real_cli_ckpt
                       ENVIRONMENT "${cnnpar_mpi_env};CNNPAR_RUN=$<TARGET_FILE:cnnpar-run>")
  add_test(NAME real_cli_run_resume
           COMMAND $<TARGET_FILE:cnnpar> run --network ${tiny} --nodes 2 --batch 16 --iterations 6
                   --checkpoint ${run_out}/cli_ckpt --resume)
  set_tests_properties(real_cli_run_resume PROPERTIES LABELS "real;mpi" TIMEOUT 120 FIXTURES_REQUIRED real_cli_ckpt
                       ENVIRONMENT "${cnnpar_mpi_env};CNNPAR_RUN=$<TARGET_FILE:cnnpar-run>"
                       PASS_REGULAR_EXPRESSION "resumed from [^\n]*cli_ckpt/checkpoint.bin at iteration 4, ran to iteration 6")
  add_test(NAME real_fail_cli_seed_negative
           COMMAND ${expect_fail} 30 2 "command line: /seed: must be an integer in .*\\(value: -1\\)" 1 --
                   $<TARGET_FILE:cnnpar> run --network ${tiny} --nodes 2 --batch 16 --seed -1)
  add_test(NAME real_fail_seed_negative
           COMMAND ${expect_fail} 30 2 "command line: /seed: must be an integer in .*\\(value: -1\\)" 1 --
                   ${cnnpar_mpiexec} -n 2 ${run} --network ${tiny} --batch 16 --seed -1)
  set_tests_properties(real_fail_cli_seed_negative real_fail_seed_negative PROPERTIES LABELS "real;mpi" TIMEOUT 60
                       ENVIRONMENT "${cnnpar_mpi_env};CNNPAR_RUN=$<TARGET_FILE:cnnpar-run>")

  # SIGTERM (and Ctrl-C's SIGINT) to `cnnpar run` alone: mpiexec gets it, hydra hands it to the
  # ranks; cnnpar exits 128 + signal with no process of the job and no temporary file left
  # (TMPDIR is a fresh folder the script checks). The SIGTERM run trains and checkpoints every
  # iteration, so a rank is often writing when the signal comes: no temporary may stay behind.
  set(sig_args_TERM --compute real --checkpoint ${run_out}/sigTERM/out/ckpt --checkpoint-every 1
      --weights-out ${run_out}/sigTERM/out/weights.bin)
  set(sig_args_INT --compute sleep)
  foreach(signal TERM INT)
    add_test(NAME real_fault_sig${signal}_cli_run
             COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/sigterm_run.sh ${run_out}/sig${signal} ${signal} --
                     $<TARGET_FILE:cnnpar> run --network ${tiny} --nodes 2 --batch 16 --iterations 3000
                     --no-predict ${sig_args_${signal}})
    set_tests_properties(real_fault_sig${signal}_cli_run PROPERTIES LABELS "real;mpi" TIMEOUT 60
                         ENVIRONMENT "${cnnpar_mpi_env};CNNPAR_RUN=$<TARGET_FILE:cnnpar-run>"
                         PASS_REGULAR_EXPRESSION "no process and no temporary file left")
  endforeach()
  # SIGKILL to `cnnpar run` (no forwarding possible): the kernel sends mpiexec SIGTERM
  # (PR_SET_PDEATHSIG), so no orphaned mpiexec or rank keeps running.
  add_test(NAME real_fault_sigKILL_cli_run
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/sigterm_run.sh ${run_out}/sigKILL KILL --
                   $<TARGET_FILE:cnnpar> run --network ${tiny} --nodes 2 --batch 16 --iterations 3000
                   --no-predict --compute sleep)
  set_tests_properties(real_fault_sigKILL_cli_run PROPERTIES LABELS "real;mpi" TIMEOUT 60
                       ENVIRONMENT "${cnnpar_mpi_env};CNNPAR_RUN=$<TARGET_FILE:cnnpar-run>"
                       PASS_REGULAR_EXPRESSION "sigterm_run: no process left")
  # cnnpar-run --help lists the registered strategy options with their defaults too.
  add_test(NAME real_help_lists_strategy_options COMMAND ${run} --help)
  set_tests_properties(real_help_lists_strategy_options PROPERTIES LABELS "real"
                       PASS_REGULAR_EXPRESSION "--k INT[^\n]*default 9; lee, per_layer, hybrid")
  # A launcher given as one shell-quoted string, and an MPICH host file naming this host.
  add_test(NAME real_cli_run_hostfile_launcher
           COMMAND sh -c "echo \"$(hostname):2\" > $1/hosts && exec $0 run --network $2 --nodes 2 --batch 16 --iterations 3 --no-predict --hostfile $1/hosts --mpiexec \"mpiexec -genv CNNPAR_LAUNCH_CHECK 'two words'\" --trace $1/launcher.json"
                   $<TARGET_FILE:cnnpar> ${run_out} ${tiny})
  set_tests_properties(real_cli_run_hostfile_launcher PROPERTIES LABELS "real;mpi" TIMEOUT 120
                       ENVIRONMENT "${cnnpar_mpi_env};CNNPAR_RUN=$<TARGET_FILE:cnnpar-run>"
                       PASS_REGULAR_EXPRESSION "mpiexec -genv CNNPAR_LAUNCH_CHECK two words -f [^ ]*/hosts -n 2 ")
  add_test(NAME real_cli_calibrate_np2
           COMMAND $<TARGET_FILE:cnnpar> calibrate --network ${tiny} --nodes 2 --batch 16 --repeats 1 --max-message 1048576
                   --out ${run_out}/cli_calibrated.json)
  set_tests_properties(real_cli_calibrate_np2 PROPERTIES LABELS "real;mpi" TIMEOUT 120 FIXTURES_SETUP real_cli_cal
                       ENVIRONMENT "${cnnpar_mpi_env};CNNPAR_RUN=$<TARGET_FILE:cnnpar-run>")
  cnnpar_mpi_check(real_cli_calibrated real_cli_cal $<TARGET_FILE:cnnpar_platform_check>
                   ${run_out}/cli_calibrated.json 2)
  # `cnnpar run --inner dag` on a platform whose nodes.inner was calibrated: the spec carries
  # the mode to cnnpar-run (its trace records it) and the prediction beside it prices it.
  add_test(NAME real_cli_run_inner_dag
           COMMAND $<TARGET_FILE:cnnpar> run --network ${tiny} --nodes 2 --batch 16 --iterations 3 --inner dag
                   --threads 1 --platform ${run_out}/calibrated_inner.json --trace ${run_out}/cli_inner_dag.json)
  set_tests_properties(real_cli_run_inner_dag PROPERTIES LABELS "real;mpi" TIMEOUT 120
                       ENVIRONMENT "${cnnpar_mpi_env};CNNPAR_RUN=$<TARGET_FILE:cnnpar-run>"
                       FIXTURES_REQUIRED "real_calibrate_runs;real_calibrate_inner_runs"
                       FIXTURES_SETUP real_cli_inner_runs)
  cnnpar_mpi_check(real_cli_trace_inner_dag real_cli_inner_runs sh -c "grep -q '\"inner\": \"dag\"' $0"
                   ${run_out}/cli_inner_dag.json)
endif()
