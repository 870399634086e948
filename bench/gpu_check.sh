#!/usr/bin/env bash
# Everything the GPU machine checks in one command: GPU test suite, then benchmarks. Logs go to $OUT.
# Carry .whl (wheels the image lacks: pydantic for KernelBench; trl, datasets, dill, multiprocess for `train`) and .kb
# (a KernelBench checkout's src/ and KernelBench/level1,2 for `eval`, never committed).
# KZ_SWEEP_FROM=DIR: a carried sweep folder (e.g. .kb/sweep, from an earlier call's $OUT) the sweep step resumes.
# KZ_MEMLOG=0 turns off $OUT/mem.log (host and GPU memory every 3 s, the three largest processes).
# Steps (KZ_STEPS): gpu_tests timing pch_check throughput stability probe side_stream_load front_check ablation first_call
# train eval sweep big
# study (KZ_ARM, KZ_SEED, KZ_STUDY_DIR: resumes there; KZ_STUDY_ARGS: e.g. "--config configs/study_h200.yaml
# --corpus-from bench/results/study_h100_d1bb4a6.tgz", the committed GPU-judged corpus, read only while the folder has
# none, so the same command resumes; SIGINT at KZ_STUDY_LIMIT s, then rerun; its folder without
# weights comes back as $OUT/study.tgz: carry it as .study/study.tgz with KZ_STUDY_FROM=.study/study.tgz to resume
# on a fresh machine, where the weights are trained again)
# rl_proxy (bench/study_rl_proxy.py on the GPU, one process per seed of KZ_PROXY_SEEDS at once, each in
# KZ_PROXY_DIR/sSEED, which a rerun on the same machine resumes; KZ_PROXY_ARGS: e.g. "--hidden 512 --layers 8
# --sft-max-steps 2000 --sft-lr 1e-3 --sft-scheduler cosine --sft-keep last --sft-patience 200 --lr 3e-5 --mu 2
# --steps 24 --batch 128"; KZ_PROXY_ARGS2, if set: a second invocation in the same folder once the first is done,
# with KZ_PROXY_ARGS followed by these (a later option wins), e.g. "--temperature 0.7 --eval-temperature 0.7"; an RL
# phase cut by the limit resumes from its last checkpoint; KZ_PROXY_LIMIT s; the records come back as
# $OUT/rl_proxy_sSEED.json)
# study_many (KZ_STUDY_RUNS="main:0 main:1 main:2 correctness_only:0 ...", a queue (KZ_STUDY_PARALLEL: at once), each in
# KZ_STUDY_DIR/ARM-sSEED; bench/study_parallel.py; $OUT/study.tgz (the merged folder), $OUT/weights.tgz.00, .01, ...
# (the weights the runs still need, then, within KZ_STUDY_WEIGHTS_MB (default 48), the last checkpoint of each loop
# phase cut part-way) and $OUT/study-logs.tgz; on a fresh machine KZ_STUDY_FROM=.study/study.tgz, with
# the weights parts beside it, resumes every run where it stopped; a second study in its own KZ_STUDY_DIR starts each
# seed from a first one's SFT with KZ_STUDY_ARGS="--config configs/study_h200_v2.yaml --sft-from .study/study.tgz");
# on 2+ GPUs: coder2
# multi_gpu.
set -uo pipefail
OUT="${OUT:-/tmp/kz-out}"; mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  export PYTHONPATH="/tmp/site:${PYTHONPATH:-}"
fi
export PYTHONPATH="$PWD/src:${PYTHONPATH:-}" PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
# Which code ran: the device's git metadata can lag the copied tree, so a hash of the tracked sources' contents too
# (compare with the same line run here: `git ls-files -z src bench | xargs -0 cat | sha1sum`).
echo "tree $(git ls-files -z src bench | xargs -0 cat | sha1sum | cut -c1-12) (git log: $(git log -1 --format=%h 2>/dev/null))" | tee -a "$OUT/gpu.txt"
if [ "${KZ_MEMLOG:-1}" = 1 ]; then  # every 3 s: CPU busy % since the last line (is a batch CPU-bound?), host and GPU
  # memory, and the largest processes: who held what
  ticks() { awk '/^cpu /{print $2+$3+$4+$7+$8, $2+$3+$4+$5+$6+$7+$8}' /proc/stat; }  # busy, all (jiffies)
  ( prev=$(ticks); while true; do sleep 3; now=$(ticks)
      cpu=$(echo "$prev $now" | awk '{d = $4 - $2; printf "%d", (d > 0 ? 100 * ($3 - $1) / d : 0)}'); prev=$now
      host=$(free -g | awk '/Mem/{print $3"G used "$5"G shared"}')
      gpu=$(nvidia-smi --query-gpu=memory.used,utilization.gpu --format=csv,noheader)
      top=$(ps -eo rss=,comm= --sort=-rss | head -3 | awk '{printf "%s:%d ", $2, $1/1024}')
      echo "$(date +%T) cpu ${cpu}% load $(cut -d' ' -f1 /proc/loadavg) host $host gpu $gpu top-rss-MB $top"
    done ) > "$OUT/mem.log" 2>&1 &
  MEMLOG=$!; trap 'kill $MEMLOG 2>/dev/null' EXIT
fi
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
step() { local name=$1; shift; local t0=$SECONDS; "$@" > "$OUT/$name.log" 2>&1; local rc=$?;
         echo "== $name rc=$rc $((SECONDS - t0))s"; tail -n "${TAILN:-15}" "$OUT/$name.log"; }
for s in ${KZ_STEPS:-gpu_tests timing}; do
  case $s in
    gpu_tests) KZ_CORPUS_LOG="$OUT/corpus_progress.log" step gpu_tests timeout ${KZ_TESTS_TIMEOUT:-600} python3 -m pytest -m gpu -p no:cacheprovider -v -rfE \
              tests/gpu tests/adversarial/test_corpus.py tests/unit/test_worked_examples.py ${KZ_PYTEST_ARGS:-} ;;
    pch_check) step pch_check timeout ${KZ_PCH_TIMEOUT:-300} python3 bench/pch_check.py --out "$OUT/pch_check.json" ;;
    timing) step timing python3 bench/timing_fidelity.py --task tests/fixtures/gpu/relu_big_task.py \
              --solution tests/fixtures/gpu/relu_triton_ok.py --backend triton --repeats 5 \
              --kernelbench .kb --out "$OUT/timing.json" ;;
    throughput) step throughput timeout ${KZ_BENCH_TIMEOUT:-600} python3 bench/judge_throughput.py ${KZ_THROUGHPUT_ARGS:---quick} \
              --out "$OUT/throughput.json" ;;
    train) step train timeout ${KZ_TRAIN_TIMEOUT:-600} bash -c "python3 -m kernelzero.cli sft --pairs builtin --steps ${KZ_SFT_STEPS:-200} \
              --out /tmp/kz-sft && python3 -m kernelzero.cli train --config configs/h200_smoke.yaml \
              --coder-model /tmp/kz-sft/final --out /tmp/kz-run && head -12 /tmp/kz-run/report.md; rc=\$?; \
              tar czf $OUT/run.tgz --exclude=checkpoints -C /tmp kz-run; exit \$rc" ;;
    coder2) step coder2 timeout ${KZ_TRAIN_TIMEOUT:-600} bash -c "python3 -m kernelzero.cli sft --pairs builtin \
              --steps ${KZ_SFT_STEPS:-200} --out /tmp/kz-sft && NCCL_NVLS_ENABLE=0 python3 -m accelerate.commands.launch \
              --multi_gpu --num_processes 2 --mixed_precision no scripts/coder_steps.py --model /tmp/kz-sft/final \
              --out /tmp/kz-coder2 && cp /tmp/kz-coder2/steps.jsonl $OUT/coder2_steps.jsonl" ;;
    stability) step stability timeout ${KZ_BENCH_TIMEOUT:-600} python3 bench/timing_stability.py \
              --out "$OUT/timing_stability.json" ${KZ_STABILITY_ARGS:-} ;;
    probe) step probe timeout 300 python3 bench/timing_probe.py --out "$OUT/probe.json" ${KZ_PROBE_ARGS:-} ;;
    side_stream_load) step side_stream_load timeout 300 python3 bench/side_stream_load.py \
              --out "$OUT/side_stream_load.json" ${KZ_LOAD_ARGS:-} ;;
    front_check) step front_check timeout ${KZ_BENCH_TIMEOUT:-600} python3 bench/front_check.py ${KZ_FRONT_ARGS:-} ;;
    ablation) step ablation timeout ${KZ_BENCH_TIMEOUT:-600} python3 bench/build_ablation.py --out "$OUT/ablation.json" \
              ${KZ_ABLATION_ARGS:-} ;;
    multi_gpu) step multi_gpu timeout ${KZ_BENCH_TIMEOUT:-600} python3 bench/multi_gpu.py --out "$OUT/multi_gpu.json" ;;
    first_call) step first_call timeout ${KZ_FIRST_CALL_TIMEOUT:-120} python3 bench/first_call.py ;;
    sweep) if [ -d "${KZ_SWEEP_FROM:-}" ] && [ ! -d "${KZ_SWEEP_OUT:-$OUT/sweep}" ]; then  # resume a carried sweep
             cp -r "$KZ_SWEEP_FROM" "${KZ_SWEEP_OUT:-$OUT/sweep}"; fi
           step sweep timeout ${KZ_SWEEP_TIMEOUT:-590} python3 bench/kb_sweep.py --kernelbench .kb/KernelBench \
              --levels ${KZ_LEVELS:-1 2 3} --out "${KZ_SWEEP_OUT:-$OUT/sweep}" --time-limit ${KZ_SWEEP_LIMIT:-480} ;;
    big) step big timeout ${KZ_BIG_TIMEOUT:-590} python3 bench/kb_big.py --kernelbench .kb/KernelBench --out "$OUT/big" \
              ${KZ_BIG_ARGS:-} ;;
    study) D="${KZ_STUDY_DIR:-/tmp/kz-study}"  # kept on the machine between calls; its text comes back packed
           if [ -f "${KZ_STUDY_FROM:-}" ] && [ ! -d "$D" ]; then  # a fresh machine: resume from an earlier pack
             mkdir -p "$D" && tar xzf "$KZ_STUDY_FROM" -C "$D"; fi
           step study timeout -s INT -k 30 ${KZ_STUDY_LIMIT:-560} python3 -m kernelzero.cli study --out "$D" \
              --arm ${KZ_ARM:-main} --seed ${KZ_SEED:-0} --pack "$OUT/study.tgz" ${KZ_STUDY_ARGS:-}
           # killed before it packed (the H200 once took over 30 s to stop after SIGINT): pack the folder here
           [ -f "$OUT/study.tgz" ] || [ ! -d "$D" ] || python3 -c "import sys; from kernelzero.study.weights import pack; \
              print('packed after a kill:', pack(sys.argv[1], sys.argv[2]), 'bytes')" "$D" "$OUT/study.tgz" ;;
    study_many) step study_many timeout -k 30 $(( ${KZ_STUDY_LIMIT:-540} + 120 )) python3 bench/study_parallel.py \
              --root "${KZ_STUDY_DIR:-/tmp/kz-study}" --runs ${KZ_STUDY_RUNS:-main:0 main:1 main:2} \
              --parallel ${KZ_STUDY_PARALLEL:-1} --limit ${KZ_STUDY_LIMIT:-540} --out "$OUT" \
              ${KZ_STUDY_FROM:+--from-pack "$KZ_STUDY_FROM"} ${KZ_STUDY_WEIGHTS_MB:+--weights-mb $KZ_STUDY_WEIGHTS_MB} \
              -- ${KZ_STUDY_ARGS:-} ;;
    rl_proxy) D="${KZ_PROXY_DIR:-/tmp/kz-proxy}"  # kept on the machine between calls: a rerun resumes each seed
           step rl_proxy timeout -k 30 ${KZ_PROXY_LIMIT:-540} bash -c 'proxy() { python3 bench/study_rl_proxy.py \
              --device cuda --corpus bench/results/study_h100_d1bb4a6.tgz --seed $s --out '"$D"'/s$s "$@"; }
              for s in '"${KZ_PROXY_SEEDS:-0 1 2}"'; do { proxy '"${KZ_PROXY_ARGS:-}"' && if [ -n "'"${KZ_PROXY_ARGS2:-}"'" ]
              then proxy '"${KZ_PROXY_ARGS:-} ${KZ_PROXY_ARGS2:-}"'; fi; } > '"$OUT"'/rl_proxy_s$s.log 2>&1 & done; wait'
           for f in "$D"/s*/proxy.json; do [ -f "$f" ] && cp "$f" "$OUT/rl_proxy_$(basename "$(dirname "$f")").json"; done
           grep -h "^after SFT\|^lr=\|Error" "$OUT"/rl_proxy_s*.log | cut -c1-400 ;;
    eval) step eval timeout ${KZ_EVAL_TIMEOUT:-600} python3 -m kernelzero.cli eval --tasks .kb/KernelBench \
              --solutions bench/kb_solutions --only-with-solutions --backend triton --workers 1 --out "$OUT/eval" ;;
  esac
done
# The device brings back at most 8 files of at most 16 MiB, none deeper than $OUT/a/b/: past that, everything but the
# study's weights parts (weights.tgz.NN, each under 16 MiB already; in one pack they could pass it) comes back as one
# pack ($OUT/all.tgz; unpack it where the reply's files land).
if [ "$(find "$OUT" -type f | wc -l)" -gt 8 ] || [ -n "$(find "$OUT" -mindepth 3 -type f -print -quit)" ]; then
  [ -n "${MEMLOG:-}" ] && kill "$MEMLOG" 2>/dev/null
  tar czf /tmp/kz-all.tgz -C "$OUT" --exclude='./weights.tgz.[0-9][0-9]' . \
    && find "$OUT" -mindepth 1 ! -name 'weights.tgz.[0-9][0-9]' -delete && mv /tmp/kz-all.tgz "$OUT/all.tgz" \
    && echo "== $OUT packed into all.tgz (over 8 files, or deeper than 2 folders)"
fi
