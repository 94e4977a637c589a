# The last GPU run behind docs/speed.md "GPU": bank, training speed, a full epoch, fp32 vs bf16 training over 3 seeds.
# On the lent machine: bash bench/gpu_runs/final.sh (with .gpu/ from ../shared/tools/gpu-bundle carried).
source .gpu/setup.sh
T0=$(date +%s)
left() { echo $((560 - $(date +%s) + T0)); }
/usr/bin/time -f "bank %e s" defsent embed-entries $DICT -m $MINILM --precision fp16 -b 1024 --batch-tokens 32768 -o /tmp/bank.h5 --no-progress 2>&1 | tail -2
timeout 90 python3 bench/gpu_runs/train_speed.py $DICT /tmp/bank.h5 bf16:32 fp32:32 bf16:256 fp32:256 2>&1 | grep "=="
/usr/bin/time -f "epoch b256 bf16 wall %e s" defsent train $DICT --bank /tmp/bank.h5 -m $MINILM --pooling mean --pooler none -b 256 --precision bf16 --save-every 0 --no-progress -o /tmp/epoch256 2>&1 | tail -2
python3 -c "import json; d=json.load(open('/tmp/epoch256/defsent.json')); print('epoch', d['training_definitions'], d['seconds'], d['definitions_per_second'], d['precision'], d['final_loss'])"
timeout 150 python3 bench/gpu_runs/precision_seeds.py /tmp/bank.h5 2>&1 | grep -E "^RUN|^BASE|rror"
echo "pytest gets $(left) s"
timeout $(left) python3 -m pytest -q -n 14 -p no:cacheprovider -o addopts="" --tb=line -rf tests/test_train.py tests/test_train_knobs.py tests/test_objectives.py tests/test_gpu.py tests/test_onnx.py tests/test_eval_senteval.py tests/test_examples.py 2>&1 | grep -v Warning | tee $OUT/pytest.log | grep -E "^FAILED|^ERROR|passed|failed|Error" | head -30
