# End-to-end CLI cases. meshplan_cli_case(NAME EXIT_CODE "regex" ... -- args...)
# A regex starting with ! must not match.
set(MESHPLAN_EXPECT ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect.sh)
function(meshplan_cli_case name)
  add_test(NAME cli.${name} COMMAND ${MESHPLAN_EXPECT} ${ARGN})
  set_tests_properties(cli.${name} PROPERTIES WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
endfunction()
set(MP $<TARGET_FILE:meshplan>)
set(D ${CMAKE_SOURCE_DIR}/tests/data/cli)

# The README's main job.
meshplan_cli_case(plan_llama70b_32_h100 0 "^rank +strategy" "searched [0-9]+ layouts" "fsdp2"
  -- ${MP} plan --model llama3.1-70b --system dgx-h100 --gpus 32 --seq-len 8192 --global-batch 512)
meshplan_cli_case(plan_yaml_stdout 0 "distributed:" "step_scheduler:" "global_batch_size: 512" "strategy: fsdp2"
  -- ${MP} plan --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 512 --format yaml --top 2)
meshplan_cli_case(plan_json_stdout 0 "\"recipes\"" "\"memory_gib\"" "\"rejected_by_rule\""
  -- ${MP} plan --model mixtral-8x7b --system dgx-h200 --gpus 16 --seq-len 4096 --global-batch 256 --format json)
meshplan_cli_case(plan_moe_ep 0 "fsdp2"
  -- ${MP} plan --model deepseek-v3 --system dgx-h100 --gpus 256 --seq-len 4096 --global-batch 1024)
meshplan_cli_case(plan_fp8_on_a100 2 "--precision: fp8 requested but .*no FP8"
  -- ${MP} plan --model llama3.1-8b --system dgx-a100 --gpus 8 --seq-len 4096 --global-batch 64 --precision fp8)
meshplan_cli_case(list_models 0 "llama3.1-70b +LlamaForCausalLM" "deepseek-v3 +DeepseekV3ForCausalLM" -- ${MP} list models)
meshplan_cli_case(list_systems 0 "dgx-h100 +h100-sxm +8 +8" "gb200-nvl72 +gb200 +4 +72" -- ${MP} list systems)
meshplan_cli_case(list_gpus 0 "h200 +139.8 +67.0 +989 +1979" "a100-80gb +79.2 +19.5 +312" -- ${MP} list gpus)
# No command, or one that is not meshplan's: one line naming it and the commands, exit 2
# (CLI11 alone said "A subcommand is required" for all three).
meshplan_cli_case(unknown_command 2 "^meshplan: error: unknown command 'bogus'; expected one of plan, check, explain, list, validate, calibrate, serve \\(meshplan --help\\)$"
  "!A subcommand is required" -- ${MP} bogus)
meshplan_cli_case(unknown_command_did_you_mean 2 "^meshplan: error: unknown command 'plna'; expected one of .*; did you mean 'plan'\\?$"
  -- ${MP} plna --model llama3.1-8b)
meshplan_cli_case(no_command 2 "^meshplan: error: expected a command, one of plan, check, explain, list, validate, calibrate, serve" -- ${MP})

# Output files: whole or nothing, never replaced without --force.
add_test(NAME cli.out_file_not_overwritten COMMAND bash -c "
  set -u; f=\$(mktemp -d)/recipes.yaml; echo keep > \$f
  '$<TARGET_FILE:meshplan>' plan --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64 --out \$f; rc=\$?
  [ \$rc -eq 2 ] && [ \"\$(cat \$f)\" = keep ] || { echo rc=\$rc; cat \$f; exit 1; }
  '$<TARGET_FILE:meshplan>' plan --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64 --out \$f --force >/dev/null || exit 1
  grep -q 'distributed:' \$f && [ \$(ls \$(dirname \$f) | wc -l) -eq 1 ]")

# --force keeps the mode of the file it replaces (a 0640 recipe was written back 0644).
add_test(NAME cli.out_force_keeps_mode COMMAND bash -c "
  set -u; d=\$(mktemp -d); echo old > \$d/r.yaml; chmod 640 \$d/r.yaml
  '$<TARGET_FILE:meshplan>' plan --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64 --out \$d/r.yaml --force >/dev/null 2>&1 || exit 1
  grep -q 'distributed:' \$d/r.yaml && [ \"\$(stat -c %a \$d/r.yaml)\" = 640 ]")

# --out through a symbolic link writes the file it leads to, as a shell redirection does; the
# link stays a link (the rename replaced the link itself: `--out /dev/stdout --force` replaced
# the machine's /dev/stdout). A link into a missing directory, and /dev/stdout on a pipe, are refused.
add_test(NAME cli.out_through_symlink COMMAND bash -c "
  set -u; d=\$(mktemp -d); ln -s \$d/missing/x.yaml \$d/bad.yaml; ln -s t.yaml \$d/link.yaml
  P=('$<TARGET_FILE:meshplan>' plan --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64)
  out=\$(\"\${P[@]}\" --out \$d/bad.yaml 2>&1 >/dev/null); rc=\$?
  [ \$rc -eq 2 ] && grep -q 'bad.yaml: error: --out: expected a file in an existing directory' <<<\"\$out\" && [ -L \$d/bad.yaml ] || { echo rc=\$rc; echo \"\$out\"; exit 1; }
  \"\${P[@]}\" --out \$d/link.yaml >/dev/null 2>&1 && [ -L \$d/link.yaml ] && grep -q 'distributed:' \$d/t.yaml || { echo 'not written through'; ls -l \$d; exit 1; }
  out=\$(\"\${P[@]}\" --out \$d/link.yaml 2>&1 >/dev/null); rc=\$?
  [ \$rc -eq 2 ] && grep -q 'link.yaml: error: --out: file exists; pass --force' <<<\"\$out\" || { echo rc=\$rc; echo \"\$out\"; exit 1; }
  echo old > \$d/t.yaml; \"\${P[@]}\" --out \$d/link.yaml --force >/dev/null 2>&1 && [ -L \$d/link.yaml ] && grep -q 'distributed:' \$d/t.yaml || { echo 'not replaced through'; exit 1; }
  out=\$(\"\${P[@]}\" --out /dev/stdout --force 2>&1 | cat); 
  grep -q \"/dev/stdout: error: --out: expected a file path, found a symbolic link to 'pipe:\" <<<\"\$out\" && [ -L /dev/stdout ] || { echo \"\$out\"; ls -l /dev/stdout; exit 1; }")

# Two outputs of one run at one path are refused before anything is written: --report replaced
# --out (--force, exit 0), or the report collided with a launch file after the recipes were written.
add_test(NAME cli.out_paths_must_differ COMMAND bash -c "
  set -u; d=\$(mktemp -d); cd \$d; mkdir sub
  P=('$<TARGET_FILE:meshplan>' plan --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64)
  out=\$(\"\${P[@]}\" --out c4.yaml --report sub/../c4.yaml --force 2>&1); rc=\$?
  [ \$rc -eq 2 ] && grep -q 'sub/../c4.yaml: error: --report: is the same file as --out c4.yaml; expected a different path for each output (nothing was written)' <<<\"\$out\" || { echo rc=\$rc; echo \"\$out\"; exit 1; }
  out=\$(\"\${P[@]}\" --out c5.yaml --emit-launch --report ./c5.rank1.yaml 2>&1); rc=\$?
  [ \$rc -eq 2 ] && grep -q 'c5.rank1.yaml: error: --report: is the same file as the launch file c5.rank1.yaml that --emit-launch writes beside --out' <<<\"\$out\" || { echo rc=\$rc; echo \"\$out\"; exit 1; }
  ln -s . here
  out=\$(\"\${P[@]}\" --out c6.yaml --report here/c6.yaml --force 2>&1); rc=\$?
  [ \$rc -eq 2 ] && grep -q 'here/c6.yaml: error: --report: is the same file as --out c6.yaml' <<<\"\$out\" || { echo rc=\$rc; echo \"\$out\"; exit 1; }
  left=\$(ls \$d | tr '\\n' ' '); cd /; rm -r \$d
  [ \"\$left\" = 'here sub ' ] || { echo \"left behind: \$left\"; exit 1; }")

# --nodes 2 for 8 GPUs of 8-GPU nodes: the launch files run 2 x 4, but the step time was priced for one
# 8-GPU node; the header said nothing of it.
add_test(NAME cli.emit_launch_split_nodes_note COMMAND bash -c "
  set -u; d=\$(mktemp -d)
  err=\$('$<TARGET_FILE:meshplan>' plan --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64 --top 1 --emit-launch --nodes 2 --out \$d/r.yaml 2>&1 >/dev/null) || { echo \"\$err\"; exit 1; }
  note='# the prediction assumes dgx-h100.s own nodes of 8 GPUs .1 node.s. x 8., not these 2 x 4: traffic that crosses'
  grep -q -- \"\$note\" \$d/r.rank1.launch.sh && grep -q -- \"\$note\" \$d/r.rank1.sbatch && grep -q -- '--nnodes 2 --nproc-per-node 4' \$d/r.rank1.launch.sh &&
    grep -q 'meshplan: warning: the prediction assumes' <<<\"\$err\" || { cat \$d/r.rank1.launch.sh; echo \"\$err\"; exit 1; }
  '$<TARGET_FILE:meshplan>' plan --model llama3.1-8b --system dgx-h100 --gpus 16 --seq-len 4096 --global-batch 64 --top 1 --emit-launch --out \$d/s.yaml >/dev/null 2>\$d/err || exit 1
  ! grep -q 'prediction assumes' \$d/s.rank1.launch.sh \$d/err; rc=\$?; rm -r \$d; exit \$rc")

# plan --format json --out writes plan output, not a recipe: check said "distributed: missing".
add_test(NAME cli.check_refuses_plan_json COMMAND bash -c "
  set -u; d=\$(mktemp -d)
  '$<TARGET_FILE:meshplan>' plan --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64 --format json --out \$d/pj.json >/dev/null || exit 1
  out=\$('$<TARGET_FILE:meshplan>' check \$d/pj.json --model llama3.1-8b --system dgx-h100 --gpus 8 2>&1); rc=\$?
  rm -r \$d
  [ \$rc -eq 2 ] && grep -q 'pj.json: error: expected a recipe (AutoModel or Megatron-Bridge YAML), found meshplan plan output (JSON' <<<\"\$out\" &&
    grep -q 'write recipes with plan --format yaml --out FILE' <<<\"\$out\" && ! grep -q 'distributed: missing' <<<\"\$out\" ||
    { echo rc=\$rc; echo \"\$out\"; exit 1; }")

# A memory budget the search stays under: the full search, no warning.
meshplan_cli_case(plan_memory_budget_ample 0 "^rank +strategy" "searched [0-9]+ layouts" "!stopped early"
  -- ${MP} plan --model llama3.1-70b --system dgx-h100 --gpus 32 --seq-len 8192 --global-batch 512 --max-memory-mb 65536)

# A sequence longer than the model's max_position_embeddings is planned, with a warning (there was none);
# exactly max_position_embeddings gives none.
meshplan_cli_case(plan_seq_len_above_max_positions 0 "meshplan: warning: seq_len 16384 is longer than the max_position_embeddings \\(8192\\) of llama3-8b" "^rank +strategy"
  -- ${MP} plan --model llama3-8b --system dgx-h100 --gpus 8 --seq-len 16384 --global-batch 64)
meshplan_cli_case(plan_seq_len_at_max_positions 0 "^rank +strategy" "!max_position_embeddings"
  -- ${MP} plan --model llama3-8b --system dgx-h100 --gpus 8 --seq-len 8192 --global-batch 64)
meshplan_cli_case(sweep_seq_len_above_max_positions 0 "meshplan: warning: seq_len 16384 is longer than the max_position_embeddings \\(8192\\)" "!seq_len 8192 is longer"
  -- ${MP} plan --model llama3-8b --system dgx-h100 --gpus 8 --sweep-seq 8192,16384 --global-batch 64)
meshplan_cli_case(explain_seq_len_above_max_positions 0 "warning: seq_len 16384 is longer than the max_position_embeddings \\(8192\\) of llama3-8b"
  -- ${MP} explain --model llama3-8b --system dgx-h100 --gpus 8 --seq-len 16384 --global-batch 64 --tp 2 --recompute full)

# No layout satisfies the request: exit 1 with the reason.
# The advice follows the peak: 405B's is the optimizer step, which a shorter sequence does not lower
# (it said "add GPUs or shorten the sequence" there too); a 1M-token sequence peaks at backward start.
meshplan_cli_case(plan_405b_does_not_fit 1 "no layout fits in memory: the smallest need is [0-9.]+ GiB per GPU" "above the usable"
  "add GPUs \\(the peak is the optimizer step: weights, gradients and optimizer state, which a shorter sequence does not lower\\)$"
  "!shorten the sequence" "!lower --headroom"
  -- ${MP} plan --model llama3.1-405b --system dgx-h100 --gpus 8 --seq-len 8192 --global-batch 64)
meshplan_cli_case(plan_long_sequence_does_not_fit 1 "no layout fits in memory: the smallest need is [0-9.]+ GiB per GPU"
  "add GPUs or shorten the sequence$" "!optimizer step"
  -- ${MP} plan --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 1048576 --global-batch 8)
meshplan_cli_case(plan_no_valid_layout 1 "no valid layout" "global_batch_divisible"
  -- ${MP} plan --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 7 --strategy ddp)

# Bad input: exit 2, naming the file / flag, what was expected and what was found.
meshplan_cli_case(bad_unknown_model 2 "unknown" "llama3.1-70b" "deepseek-v3"
  -- ${MP} plan --model llama4-9000b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64)
meshplan_cli_case(bad_unknown_system 2 "unknown" "dgx-h100" "gb200-nvl72"
  -- ${MP} plan --model llama3.1-8b --system dgx-h900 --gpus 8 --seq-len 4096 --global-batch 64)
meshplan_cli_case(bad_zero_gpus 2 "--gpus: expected an integer in \\[1, 1048576\\], found 0"
  -- ${MP} plan --model llama3.1-8b --system dgx-h100 --gpus 0 --seq-len 4096 --global-batch 64)
meshplan_cli_case(bad_huge_gpus 2 "--gpus: expected an integer in \\[1, 1048576\\], found 1099511627776"
  -- ${MP} plan --model llama3.1-8b --system dgx-h100 --gpus 1099511627776 --seq-len 4096 --global-batch 64)
meshplan_cli_case(bad_gpus_not_whole_nodes 2 "--gpus: expected a multiple of the 8 GPUs per node of dgx-h100.*found 12"
  -- ${MP} plan --model llama3.1-8b --system dgx-h100 --gpus 12 --seq-len 4096 --global-batch 64)
meshplan_cli_case(bad_gpus_not_a_number 2 "error" "--gpus"
  -- ${MP} plan --model llama3.1-8b --system dgx-h100 --gpus eight --seq-len 4096 --global-batch 64)
meshplan_cli_case(bad_missing_flag 2 "--seq-len is required"
  -- ${MP} plan --model llama3.1-8b --system dgx-h100 --gpus 8 --global-batch 64)
meshplan_cli_case(bad_model_json_syntax 2 "truncated_comma.json:[0-9]+:[0-9]+: error: malformed"
  -- ${MP} plan --model ${D}/truncated_comma.json --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64)
meshplan_cli_case(bad_model_architecture 2 "bert.json:2:[0-9]+: error: architectures" "BertForMaskedLM" "LlamaForCausalLM" "DeepseekV3ForCausalLM"
  -- ${MP} plan --model ${D}/bert.json --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64)
meshplan_cli_case(bad_model_negative_layers 2 "negative_layers.json:5:[0-9]+: error: num_hidden_layers" "-32"
  -- ${MP} plan --model ${D}/negative_layers.json --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64)
meshplan_cli_case(bad_model_binary 2 "garbage.bin.*error"
  -- ${MP} plan --model ${D}/garbage.bin --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64)
meshplan_cli_case(bad_model_missing_file 2 "does-not-exist.json.*error"
  -- ${MP} plan --model ${D}/does-not-exist.json --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64)
meshplan_cli_case(bad_system_duplicate_key 2 "dup_system.yaml:4:[0-9]+: error: gpus_per_node: duplicate key"
  -- ${MP} plan --model llama3.1-8b --system ${D}/dup_system.yaml --gpus 8 --seq-len 4096 --global-batch 64)
meshplan_cli_case(bad_format 2 "--format" -- ${MP} plan --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64 --format xml)
meshplan_cli_case(bad_list_what 2 "what" -- ${MP} list recipes)

# Megatron-Bridge: plan and check (tests/data/recipes: automodel.md 1.5, megatron.md 1.9 and 5.4).
set(R ${CMAKE_SOURCE_DIR}/tests/data/recipes)
meshplan_cli_case(mb_plan_llama70b_h100 0 "^rank +strategy" "interleaved v|1f1b|-" "searched [0-9]+ layouts"
  -- ${MP} plan --framework megatron-bridge --model llama3-70b --system dgx-h100 --gpus 64 --seq-len 8192 --global-batch 256)
meshplan_cli_case(mb_plan_yaml 0 "^model:" "tensor_model_parallel_size:" "^train:" "^ddp:" "^dist:" "^comm_overlap:" "^checkpoint:"
  "# command line: model.tensor_model_parallel_size=" "# launch environment: CUDA_DEVICE_MAX_CONNECTIONS="
  -- ${MP} plan --framework megatron-bridge --model qwen3-30b-a3b --system dgx-b200 --gpus 8 --seq-len 4096 --global-batch 512 --format yaml --top 2)
# D is AutoModel's fine-tune example (local batch 32 for SQuAD's short sequences): at 4096
# tokens it is predicted far above the GPU's memory (exit 1).
foreach(f a_llama3_70b_pretrain_32gpu:llama3.1-70b:32:4096:0 b_llama3_3_70b_squad_32gpu:llama3.1-70b:32:1024:0
          c_deepseek_v3_256gpu:deepseek-v3:256:4096:0 d_qwen3_30b_a3b_8gpu:qwen3-30b-a3b:8:4096:1)
  string(REPLACE ":" ";" p ${f})
  list(GET p 0 n)
  list(GET p 1 m)
  list(GET p 2 g)
  list(GET p 3 s)
  list(GET p 4 rc)
  meshplan_cli_case(check_automodel_${n} ${rc} "AutoModel recipe" "valid: passes all" "memory: "
    -- ${MP} check ${R}/automodel_${n}.yaml --model ${m} --system dgx-h100 --gpus ${g} --seq-len ${s})
endforeach()
# Dotted override keys (the command-line form) in a YAML: Megatron-Bridge's, refused with how to nest them.
add_test(NAME cli.check_mb_dotted_keys COMMAND bash -c "
  d=\$(mktemp -d); printf 'model.tensor_model_parallel_size: 2\\ntrain.micro_batch_size: 1\\n' > \$d/r.yaml
  out=\$('$<TARGET_FILE:meshplan>' check \$d/r.yaml --model llama3.1-8b --system dgx-h100 --gpus 8 2>&1); rc=\$?; rm -rf \$d
  [ \$rc -eq 2 ] && grep -q 'r.yaml:1:1: error: model.tensor_model_parallel_size: is a dotted override .* model: {tensor_model_parallel_size: ...}' <<<\"\$out\" ||
    { echo \"rc=\$rc \$out\"; exit 1; }")
meshplan_cli_case(check_mb_1_9a 0 "Megatron-Bridge recipe" "valid: passes all" "ddp.distopt tp4 pp4 vpp5 cp2" "global batch 512, bf16$"
  -- ${MP} check ${R}/mbridge_1_9a_llama3_70b_pretrain_32gpu_h100_bf16.yaml --model llama3-70b --system dgx-h100 --gpus 32)
meshplan_cli_case(check_mb_1_9b 0 "valid: passes all" "tp2 pp16 cp1 ep64 etp1 dp32"
  -- ${MP} check ${R}/mbridge_1_9b_deepseek_v3_pretrain_1024gpu_h100.yaml --model deepseek-v3 --system dgx-h100 --gpus 1024)
meshplan_cli_case(check_mb_1_9c 0 "valid: passes all" "tp4 pp16 cp2 ep8 etp1 dp2"
  -- ${MP} check ${R}/mbridge_1_9c_qwen3_235b_a22b_pretrain_256gpu_h100.yaml --model qwen3-235b-a22b --system dgx-h100 --gpus 256)
meshplan_cli_case(check_mb_1_9d 0 "valid: passes all" "megatron_fsdp tp1 pp1 cp1 ep1 dp64 mbs2" "global batch 256, fp8$"
  -- ${MP} check ${R}/mbridge_1_9d_llama3_70b_pretrain_64gpu_gb200_fp8cs.yaml --model llama3-70b --system gb200-nvl72 --gpus 64)
meshplan_cli_case(check_mb_5_4_deepseek_1024 0 "valid: passes all"
  -- ${MP} check ${R}/mbridge_5_4_deepseek_v3_pretrain_1024gpu_h100_bf16.yaml --model deepseek-v3 --system dgx-h100 --gpus 1024)
meshplan_cli_case(check_mb_5_4_deepseek_64 1 "INVALID: 1 rule fail" "mb_world_divisible_by_etp_ep_pp: world_size \\(64\\) is not divisible by expert_tensor x expert x pipeline parallel \\(1 x 64 x 8 = 512\\)"
  "source: MCore parallel_state.py:870-885" "nearest valid layouts \\(3\\)" "--- 1: [0-9]+ edit"
  -- ${MP} check ${R}/mbridge_5_4_deepseek_v3_pretrain_64gpu_h100_bf16.yaml --model deepseek-v3 --system dgx-h100 --gpus 64)
# The nearest valid layouts name the recompute fields they change (not "0 changes").
meshplan_cli_case(check_mb_full_no_method 1 "mb_recompute_arguments" "recompute_method: null -> uniform"
  "recompute_num_layers: null -> 1" "!--- 1: 0 edits"
  -- ${MP} check ${R}/mbridge_full_no_method.yaml --model qwen3-30b-a3b --system dgx-h100 --gpus 8)
meshplan_cli_case(check_mb_5_4_qwen235_64_gb200 1 "mb_world_divisible_by_etp_ep_pp" "\\(1 x 32 x 8 = 256\\)"
  -- ${MP} check ${R}/mbridge_5_4_qwen3_235b_a22b_pretrain_64gpu_gb200_fp8cs.yaml --model qwen3-235b-a22b --system gb200-nvl72 --gpus 64)
meshplan_cli_case(check_mb_5_4_qwen235_256_h100 0 "valid: passes all" "warning: CUDA_DEVICE_MAX_CONNECTIONS=8 on h100-sxm"
  -- ${MP} check ${R}/mbridge_5_4_qwen3_235b_a22b_pretrain_256gpu_h100_bf16.yaml --model qwen3-235b-a22b --system dgx-h100 --gpus 256)
# pipeline_model_parallel_layout: a well-formed layout that breaks a Megatron-Core rule is INVALID (exit 1) with the
# rule, the counts found and expected and the recipe line (it was valid: only its presence was read); the list form
# of Megatron-Bridge's own recipes is read; the layout's split is priced (it was priced as the even split).
meshplan_cli_case(check_mb_layout_three_stages 1 "INVALID: 2 rules fail"
  "mb_pp_layout_stages_divisible_by_pp: pipeline_model_parallel_layout \"Ett\\|tt\\|tL\" \\(.*mbridge_layout_three_stages.yaml:7:3\\) has 3 stages \\(model chunks\\). expected a multiple of pipeline_model_parallel_size 4 \\(8 with virtual_pipeline_model_parallel_size 2\\)"
  "mb_pp_layout_num_layers: .* holds 5 decoder layers \\(t\\). expected num_layers 80 of llama3.1-70b"
  "source: MCore transformer/pipeline_parallel_layer_layout.py:40-46"
  -- ${MP} check ${R}/mbridge_layout_three_stages.yaml --model llama3.1-70b --system dgx-h100 --gpus 32)
meshplan_cli_case(check_mb_layout_empty 1 "INVALID: 4 rules fail" "mb_pp_layout_stages_divisible_by_pp: .* has 1 stage "
  "mb_pp_layout_embedding_first: .* has no layers" "mb_pp_layout_loss_last" "holds 0 decoder layers"
  -- ${MP} check ${R}/mbridge_layout_empty.yaml --model llama3.1-70b --system dgx-h100 --gpus 32)
meshplan_cli_case(explain_mb_layout_vpp_conflict 1 "rules: INVALID, 1 rule broken"
  "mb_pp_layout_vpp: .* has 8 stages = 4 pipeline ranks x 2 virtual stages, but virtual_pipeline_model_parallel_size is 3: expected 12 stages"
  "source: MCore transformer/transformer_config.py:2275-2287"
  -- ${MP} explain --model llama3.1-70b --system dgx-h100 --gpus 32 --recipe ${R}/mbridge_layout_vpp_conflict.yaml)
meshplan_cli_case(check_mb_layout_list 1 "valid: passes all" "tp4 pp4 vpp2"
  -- ${MP} check ${R}/mbridge_layout_list.yaml --model llama3.1-70b --system dgx-h100 --gpus 32)
meshplan_cli_case(explain_mb_layout_balanced 0 "rules: valid"
  "pipeline split: decoder layers per rank 20 20 20 20 \\(as pipeline_model_parallel_layout places them: meshplan's own split\\)"
  "^fits: "
  -- ${MP} explain --model llama3.1-70b --system dgx-h100 --gpus 32 --recipe ${R}/mbridge_layout_balanced_llama70b.yaml)
meshplan_cli_case(explain_mb_layout_unbalanced 1 "rules: valid"
  "pipeline split: decoder layers per rank 32 16 16 16 \\(as pipeline_model_parallel_layout places them. embedding on rank 0, loss on rank 3\\)"
  "stage 0 .* stage 1 .* stage 3" "^does NOT fit: "
  -- ${MP} explain --model llama3.1-70b --system dgx-h100 --gpus 32 --recipe ${R}/mbridge_layout_unbalanced_llama70b.yaml)
# An MTP layer: priced on the rank of its stage and named in the split.
meshplan_cli_case(explain_mb_deepseek_mtp 0 "rules: valid"
  "decoder layers per rank 4 4 4 4 4 4 4 4 4 4 4 4 4 4 4 1 \\(as pipeline_model_parallel_layout places them: meshplan's own split\\). 1 MTP layer \\(model.mtp_num_layers\\) on rank 15"
  "^fits: "
  -- ${MP} explain --model deepseek-v3 --system dgx-b200 --gpus 256 --recipe ${R}/mbridge_deepseek_v3_mtp_pp16.yaml)
# Without the m, Megatron-Core refuses the layout: the provider sets mtp_num_layers 1.
meshplan_cli_case(check_mb_deepseek_no_mtp_layer 1 "mb_pp_layout_mtp_count: .* holds 0 MTP layers \\(m\\). expected mtp_num_layers 1 \\(model.mtp_num_layers unset: deepseek-v3's num_nextn_predict_layers"
  -- ${MP} check ${D}/mb_deepseek_no_mtp_layer.yaml --model deepseek-v3 --system dgx-b200 --gpus 16)
# The nearest layouts of a recipe train its MTP layers and name a layout string they change.
meshplan_cli_case(check_mb_deepseek_mtp0_nearest 1 "holds 1 MTP layer \\(m\\). expected mtp_num_layers 0"
  "--- 1: 1 edit. pipeline_model_parallel_layout: .*tmL\" -> " "!0 edits" "!mtp_num_layers: 1"
  -- ${MP} check ${D}/mb_deepseek_mtp0_with_m.yaml --model deepseek-v3 --system dgx-b200 --gpus 16)
# A quote left open names the problem instead of a misread cell: the file is refused (exit 2).
meshplan_cli_case(validate_unterminated_quote 2 "validate_unterminated_quote\\.csv:2:1: error: row: unterminated quote"
  -- ${MP} validate ${D}/validate_unterminated_quote.csv --rank-top 0)
# An unknown precision cell is not priced at a guessed rate.
meshplan_cli_case(validate_bad_precision 1 "skipped \\(line 2\\): precision 'FP7': expected empty \\(the 25.09 table: FP8\\), BF16, FP8"
  -- ${MP} validate ${D}/validate_bad_precision.csv --rank-top 0)
# TP*PP*CP not dividing the world is named as such (dp was inferred as 0 and only mb_axes_positive was reported).
meshplan_cli_case(check_mb_world_not_divisible 1 "mb_world_divisible_by_tp_pp_cp: world_size \\(8\\) is not divisible by tensor x pipeline x context parallel \\(1 x 3 x 1 = 3\\)"
  "!mb_axes_positive" "!dp0"
  -- ${MP} check ${R}/mbridge_pp3_8gpu.yaml --model llama3.1-8b --system dgx-h100 --gpus 8)
meshplan_cli_case(explain_mb_world_not_divisible 1 "mb_world_divisible_by_tp_pp_cp: world_size \\(8\\) is not divisible"
  "!mb_axes_positive"
  -- ${MP} explain --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --recipe ${R}/mbridge_pp3_8gpu.yaml)
meshplan_cli_case(check_seq_len_above_max_positions 1 "warning: seq_len 16384 is longer than the max_position_embeddings \\(8192\\) of llama3-8b" "valid: passes all"
  -- ${MP} check ${R}/mbridge_no_train.yaml --model llama3-8b --system dgx-h100 --gpus 8 --seq-len 16384)
# The precision used is printed; mixed_precision names may use hyphens, as Megatron-Bridge accepts.
meshplan_cli_case(check_mb_mixed_precision_hyphens 0 "seq_len 4096, global batch 64, fp8$" "valid: passes all"
  -- ${MP} check ${R}/mbridge_mixed_precision_hyphens.yaml --model llama3.1-8b --system dgx-b200 --gpus 8)
# A MixedPrecisionConfig map is priced by its fp8 / fp4 (it was priced as bf16 without a word).
meshplan_cli_case(check_mb_mixed_precision_map_fp8 0 "seq_len 4096, global batch 64, fp8$" "valid: passes all" "!mixed_precision.fp8 / fp4"
  -- ${MP} check ${R}/mbridge_mixed_precision_map_fp8.yaml --model llama3.1-8b --system dgx-h100 --gpus 8)
meshplan_cli_case(explain_mb_mixed_precision_map_fp8 0 "seq_len 4096, global batch 64, fp8$"
  -- ${MP} explain --model llama3.1-8b --system dgx-h200 --gpus 8 --recipe ${R}/mbridge_mixed_precision_map_fp8.yaml)
# A map that sets neither fp8 nor fp4 is priced as bf16, and says so.
meshplan_cli_case(check_mb_mixed_precision_map_neither 1 "global batch 256, bf16$"
  "not set, framework default: mixed_precision.fp8 / fp4 = the recipe's own .the map sets neither"
  -- ${MP} check ${R}/mbridge_grad_reduce_map.yaml --model qwen3-30b-a3b --system dgx-h100 --gpus 8)
# Keys a Megatron-Bridge recipe leaves to the framework are named with the default used.
meshplan_cli_case(check_mb_defaults_named 0 "not set, framework default: train.global_batch_size = 32"
  "not set, framework default: train.micro_batch_size = 2"
  -- ${MP} check ${R}/mbridge_no_train.yaml --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096)
meshplan_cli_case(check_mb_broken_moe 1 "expert_tensor_parallel_size is unset, so it equals tensor_model_parallel_size \\(4\\): set expert_tensor_parallel_size: 1"
  "nearest valid layouts" "expert_tensor_parallel_size: null -> 1"
  -- ${MP} check ${R}/mbridge_broken_qwen3_30b_moe.yaml --model qwen3-30b-a3b --system dgx-h100 --gpus 16)
meshplan_cli_case(check_mb_gqa_tp8_main 0 "valid: passes all"
  -- ${MP} check ${R}/mbridge_gqa_tp8_qwen3_30b.yaml --model qwen3-30b-a3b --system dgx-h100 --gpus 8)
meshplan_cli_case(check_mb_gqa_tp8_old_core 1 "mb_tp_query_groups: num_query_groups \\(4\\) must be a multiple of tensor_model_parallel_size \\(8\\); Megatron-Core <= 0.15"
  -- ${MP} check ${R}/mbridge_gqa_tp8_qwen3_30b.yaml --model qwen3-30b-a3b --system dgx-h100 --gpus 8 --mbridge-version core0.15)
meshplan_cli_case(check_bad_recipe_value 2 "mbridge_bad_value.yaml:2:[0-9]+: error: model.tensor_model_parallel_size"
  -- ${MP} check ${R}/mbridge_bad_value.yaml --model llama3-70b --system dgx-h100 --gpus 8)
# A file of several YAML documents (what plan --out writes): one verdict per document, exit status the worst
# (only the first document was read: this file passed with exit 0).
meshplan_cli_case(check_two_documents_second_invalid 1 "automodel_two_documents_second_invalid.yaml: 2 YAML documents"
  "=== document 1 of 2 .*second_invalid.yaml:1.$" "second_invalid.yaml:23: AutoModel recipe" "INVALID: 3 rules fail"
  "tp_size: 3 -> 1" "documents 1 valid, 2 INVALID \\(exit 1\\)"
  -- ${MP} check ${R}/automodel_two_documents_second_invalid.yaml --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096)
meshplan_cli_case(check_two_documents_second_malformed 2 "valid: passes all 42 rules"
  "automodel_two_documents_second_malformed.yaml:14:3: error: distributed.tp_size: expected an integer, found 'four'"
  "documents 1 valid, 2 unusable \\(exit 2\\)"
  -- ${MP} check ${R}/automodel_two_documents_second_malformed.yaml --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096)
meshplan_cli_case(check_automodel_needs_seq_len 2 "--seq-len"
  -- ${MP} check ${R}/automodel_d_qwen3_30b_a3b_8gpu.yaml --model qwen3-30b-a3b --system dgx-h100 --gpus 8)
# plan --out, then check on that file with no --seq-len: each AutoModel recipe carries its sequence
# length in dataset.seq_len (before, check exited 2 asking for --seq-len); a sweep's file too, each
# document with its own point's.
add_test(NAME cli.plan_out_then_check_no_seq_len COMMAND bash -c "
  set -u; d=\$(mktemp -d); mp='$<TARGET_FILE:meshplan>'
  \$mp plan --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 8192 --global-batch 64 --top 2 --out \$d/r.yaml >/dev/null || exit 1
  out=\$(\$mp check \$d/r.yaml --model llama3.1-8b --system dgx-h100 --gpus 8 2>&1); rc=\$?
  [ \$rc -eq 0 ] && [ \$(grep -c '^  seq_len: 8192\$' \$d/r.yaml) -eq 2 ] &&
    [ \$(grep -c 'AutoModel recipe, llama3.1-8b on 8 GPUs of dgx-h100, seq_len 8192,' <<<\"\$out\") -eq 2 ] &&
    grep -q 'documents 1 valid, 2 valid (exit 0)' <<<\"\$out\" || { echo rc=\$rc; echo \"\$out\"; exit 1; }
  \$mp plan --model llama3.1-8b --system dgx-h100 --gpus 8 --sweep-seq 2048,4096 --global-batch 64 --out \$d/s.yaml >/dev/null || exit 1
  out=\$(\$mp check \$d/s.yaml --model llama3.1-8b --system dgx-h100 --gpus 8 2>&1); rc=\$?
  [ \$rc -eq 0 ] && [ \"\$(grep -o 'dgx-h100, seq_len [0-9]*' <<<\"\$out\" | paste -sd ' ')\" = 'dgx-h100, seq_len 2048 dgx-h100, seq_len 4096' ] ||
    { echo rc=\$rc; echo \"\$out\"; exit 1; }")

# Launch files and the HTML report (issue 8).
add_test(NAME cli.emit_launch_full_recipe COMMAND bash -c "
  set -eu; d=\$(mktemp -d); cd \$d
  '$<TARGET_FILE:meshplan>' plan --model llama3.1-8b --system dgx-h200 --gpus 8 --seq-len 4096 --global-batch 64 --top 2 --out r.yaml --emit-launch --full-recipe >/dev/null
  for f in r.rank1.yaml r.rank1.launch.sh r.rank1.sbatch r.rank2.yaml; do [ -s \$f ] || { echo missing \$f; exit 1; }; done
  [ -x r.rank1.launch.sh ] && bash -n r.rank1.launch.sh && bash -n r.rank1.sbatch
  grep -q 'torchrun --nnodes 1 --nproc-per-node 8' r.rank1.launch.sh && grep -q 'train_ft -c' r.rank1.launch.sh
  grep -q '^recipe: TrainFinetuneRecipeForNextTokenPrediction' r.rank1.yaml && grep -q '^dataset:' r.rank1.yaml")
meshplan_cli_case(emit_launch_needs_out 2 "--emit-launch: expected --out"
  -- ${MP} plan --model llama3.1-8b --system dgx-h200 --gpus 8 --seq-len 4096 --global-batch 64 --emit-launch)
meshplan_cli_case(emit_launch_bad_nodes 2 "--nodes: expected --nodes x --gpus-per-node = --gpus"
  -- ${MP} plan --model llama3.1-8b --system dgx-h200 --gpus 16 --seq-len 4096 --global-batch 64 --emit-launch --out /nonexistent/x.yaml --nodes 3)
meshplan_cli_case(emit_launch_bad_gpus_per_node 2 "--gpus-per-node: expected at most the 8 GPUs per node of dgx-h200"
  -- ${MP} plan --model llama3.1-8b --system dgx-h200 --gpus 16 --seq-len 4096 --global-batch 64 --emit-launch --out /nonexistent/x.yaml --gpus-per-node 16)
# Too few --nodes (no --gpus-per-node given): the error names --nodes, the flag given.
meshplan_cli_case(emit_launch_too_few_nodes 2 "--nodes: expected at least 4 nodes for 32 GPUs at the 8 GPUs per node of dgx-h100, found 2 \\(16 GPUs per node\\)" "!gpus-per-node:"
  -- ${MP} plan --model llama3.1-8b --system dgx-h100 --gpus 32 --seq-len 4096 --global-batch 64 --emit-launch --out /nonexistent/x.yaml --nodes 2)
add_test(NAME cli.report_chromium COMMAND ${CMAKE_SOURCE_DIR}/tests/report/chromium_render.sh $<TARGET_FILE:meshplan>)
set_tests_properties(cli.report_chromium PROPERTIES SKIP_RETURN_CODE 77)

# Capacity planning sweeps: one line per point.
meshplan_cli_case(plan_sweep_gpus 0 "!sweep: [0-9]" "gpus +seq_len +GiB/GPU +step_s +tok/s/GPU +MFU%  best layout$" "^ +8 +8192 +[0-9.]+ +[0-9.]+ +[0-9]+ +[0-9.]+  fsdp2" "^ +16 +8192" "^ +64 +8192"
  -- ${MP} plan --model llama3.1-8b --system dgx-h100 --sweep-gpus 8,16,64 --seq-len 8192 --global-batch 512)
meshplan_cli_case(plan_sweep_no_fit 1 "^ +8 +4096 +no layout fits \\(least [0-9.]+ GiB per GPU\\)" "^ +64 +4096 .*  fsdp2"
  -- ${MP} plan --model llama3.1-405b --system dgx-h100 --sweep-gpus 8,64 --seq-len 4096 --global-batch 64)
meshplan_cli_case(plan_sweep_seq 0 "^ +16 +4096 .*  fsdp2" "^ +16 +131072 .*  fsdp2 .*cp(8|16)"
  -- ${MP} plan --model llama3.1-70b --system dgx-h100 --gpus 16 --sweep-seq 4096,131072 --global-batch 64)
# A sweep keeps each point's best layout: --top is refused, not ignored.
meshplan_cli_case(plan_sweep_top_refused 2 "error: --top: expected a plan at one point .*a sweep keeps the best layout of each point"
  -- ${MP} plan --model llama3.1-8b --system dgx-h100 --sweep-gpus 8,16 --seq-len 8192 --global-batch 512 --top 3)
# --out writes the best recipe of every point; --report / --emit-launch are refused (tests/cli/sweep_out.sh).
add_test(NAME cli.sweep_out COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/sweep_out.sh $<TARGET_FILE:meshplan>)
# --emit-launch --force with fewer recipes removes the earlier run's extra ranks (tests/cli/launch_force.sh).
add_test(NAME cli.launch_force COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/launch_force.sh $<TARGET_FILE:meshplan>)
# List options: comma-separated values, and the option given again, add up.
meshplan_cli_case(plan_strategy_list 0 "^1 +(ddp|megatron_fsdp) " "!^[0-9]+ +fsdp2 "
  -- ${MP} plan --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64 --strategy ddp,megatron_fsdp)
meshplan_cli_case(plan_sweep_gpus_repeated 0 "^ +8 +4096 +" "^ +16 +4096 +" "^ +32 +4096 +"
  -- ${MP} plan --model llama3.1-8b --system dgx-h100 --sweep-gpus 8,16 --sweep-gpus 32 --seq-len 4096 --global-batch 64)
meshplan_cli_case(plan_sweep_bad_point 2 "--sweep-gpus: point 12: expected a multiple of the 8 GPUs per node" "!^ +8 +8192"
  -- ${MP} plan --model llama3.1-8b --system dgx-h100 --sweep-gpus 8,12 --seq-len 8192 --global-batch 512)

# meshplan validate on the published-runs fixtures (no ranking here: tests/accuracy/validate_test.cpp ranks).
meshplan_cli_case(validate_mbridge 0 "summary: [0-9]+ rows evaluated, [0-9]+ skipped; median" "!model not describable"
  "DeepSeekV4 Flash DGX-GB200 128 MXFP8 +706 +[0-9]+ +[-+][0-9.]+ "
  "^    columns: the row's ga 2 disagrees with gbs / \\(dp x mbs\\) = 512 / \\(16 x 4\\) = 8; priced as its gbs, mbs and layout cells say"
  "^    columns: the row's ga 32 disagrees with gbs / \\(dp x mbs\\) = 8192 / \\(64 x 2\\) = 64;"
  -- ${MP} validate ${CMAKE_SOURCE_DIR}/tests/data/mbridge_perf_dev.csv --rank-top 0)
meshplan_cli_case(validate_survey 0 "summary: [0-9]+ rows evaluated"
  -- ${MP} validate ${CMAKE_SOURCE_DIR}/tests/data/published_runs_dev.csv --rank-top 0)
meshplan_cli_case(validate_bad_header 2 "expected a Megatron-Bridge perf header"
  -- ${MP} validate ${CMAKE_SOURCE_DIR}/README.md)

# The progress line is drawn only on a terminal (script(1) provides one when installed).
add_test(NAME cli.sweep_progress_on_terminal COMMAND bash -c "
  command -v script >/dev/null || { echo 'script(1) not installed: skipped'; exit 0; }
  out=\$(script -qc \"'$<TARGET_FILE:meshplan>' plan --model llama3.1-8b --system dgx-h100 --sweep-gpus 8,16 --seq-len 4096 --global-batch 64\" /dev/null)
  grep -q 'sweep: 2/2 planning 16 GPUs' <<<\"\$out\" || { echo \"\$out\"; exit 1; }")

# --emit-launch / --report never leave some files written when another one already exists.
add_test(NAME cli.emit_launch_all_or_nothing COMMAND bash -c "
  set -u; d=\$(mktemp -d); echo keep > \$d/recipes.rank1.yaml
  '$<TARGET_FILE:meshplan>' plan --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64 --out \$d/recipes.yaml --emit-launch >\$d/log 2>&1; rc=\$?
  [ \$rc -eq 2 ] && grep -q 'recipes.rank1.yaml: error: --emit-launch: file exists' \$d/log && [ ! -e \$d/recipes.yaml ] && [ \"\$(cat \$d/recipes.rank1.yaml)\" = keep ] || { echo rc=\$rc; cat \$d/log; ls \$d; exit 1; }")
# With --force too: every output path is probed before the first is written, so a launch file
# blocked by a directory leaves no --out, launch or report file behind, and the error names
# --emit-launch and the path (it said "--out: is a directory" after writing l3.yaml and rank 1).
add_test(NAME cli.emit_launch_force_blocked_writes_nothing COMMAND bash -c "
  set -u; d=\$(mktemp -d); log=\$(mktemp); mkdir \$d/l3.rank2.launch.sh
  '$<TARGET_FILE:meshplan>' plan --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64 --top 3 --out \$d/l3.yaml --emit-launch --force --report \$d/l3.html >\$log 2>&1; rc=\$?
  [ \$rc -eq 2 ] && grep -q 'l3.rank2.launch.sh: error: --emit-launch: is a directory' \$log && [ \"\$(ls \$d)\" = l3.rank2.launch.sh ] || { echo rc=\$rc; cat \$log; ls \$d; exit 1; }")
# A path that is not a regular file (a FIFO) is refused at once instead of blocking.
add_test(NAME cli.model_fifo_refused COMMAND bash -c "
  d=\$(mktemp -d); mkfifo \$d/m.json
  out=\$(timeout 10 '$<TARGET_FILE:meshplan>' plan --model \$d/m.json --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64 2>&1); rc=\$?
  [ \$rc -eq 2 ] && grep -q 'is not a regular file' <<<\"\$out\" || { echo rc=\$rc; echo \"\$out\"; exit 1; }")
meshplan_cli_case(plan_gpus_negative 2 "--gpus: expected an integer in .1, 1048576., found -1"
  -- ${MP} plan --model llama3.1-8b --system dgx-h100 --gpus -1 --seq-len 4096 --global-batch 64)
meshplan_cli_case(plan_sweep_and_gpus 2 "--gpus: give either --gpus or --sweep-gpus"
  -- ${MP} plan --model llama3.1-8b --system dgx-h100 --gpus 8 --sweep-gpus 8,16 --seq-len 4096 --global-batch 64)
meshplan_cli_case(check_automodel_recipe_as_megatron 2 "distributed: is an AutoModel section, not a Megatron-Bridge override"
  -- ${MP} check ${CMAKE_SOURCE_DIR}/tests/data/recipes/automodel_d_qwen3_30b_a3b_8gpu.yaml --model qwen3-30b-a3b --system dgx-h100 --gpus 8 --seq-len 4096 --framework megatron-bridge)
# The model YAML example of the README, as written there.
meshplan_cli_case(plan_readme_model_yaml 0 "^rank +strategy" -- ${MP} plan --model ${D}/readme_model.yaml --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64)
# Misspelt Megatron-Bridge sections and keys are refused (they would silently read as defaults).
meshplan_cli_case(check_mb_typo_section 2 "mbridge_typo_section.yaml:2:1: error: modle: unknown key; did you mean 'model'"
  -- ${MP} check ${CMAKE_SOURCE_DIR}/tests/data/recipes/mbridge_typo_section.yaml --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096)
meshplan_cli_case(check_mb_typo_key 2 "mbridge_typo_key.yaml:3:3: error: model.tensor_model_paralel_size: unknown key; did you mean 'tensor_model_parallel_size'"
  -- ${MP} check ${CMAKE_SOURCE_DIR}/tests/data/recipes/mbridge_typo_key.yaml --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096)
# validate --fit: a directory without systems/ is refused before any work.
meshplan_cli_case(validate_fit_no_dir 2 "--fit: expected an hwdb directory with a systems/ folder"
  -- ${MP} validate ${CMAKE_SOURCE_DIR}/tests/data/mbridge_perf_dev.csv --rank-top 0 --fit ${CMAKE_BINARY_DIR}/no_such_hwdb)
# --full-recipe needs a Hugging Face model: a meshplan model YAML is refused before the search.
meshplan_cli_case(full_recipe_yaml_model 2 "--full-recipe: expected a Hugging Face model for the recipe's model section"
  -- ${MP} plan --model ${CMAKE_SOURCE_DIR}/tests/data/models/tiny-llama.yaml --system dgx-h100 --gpus 8 --seq-len 2048
     --global-batch 64 --out ${CMAKE_BINARY_DIR}/never_written.yaml --emit-launch --full-recipe)
# An --out or --report in a missing directory is refused before the search, and nothing is written.
meshplan_cli_case(report_missing_dir 2 "--report: expected a file in an existing directory"
  -- ${MP} plan --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64
     --out ${CMAKE_BINARY_DIR}/report_missing_dir_recipes.yaml --report ${CMAKE_BINARY_DIR}/no_such_dir/r.html)
# list --hwdb lists that directory's files; a directory without systems/ is refused.
meshplan_cli_case(list_systems_hwdb_dir 0 "dgx-h200-calibrated" "gb300-nvl72"
  -- ${MP} list systems --hwdb ${CMAKE_SOURCE_DIR}/hwdb)
meshplan_cli_case(list_systems_hwdb_missing 2 "--hwdb: expected a hardware database directory with systems/ in it"
  -- ${MP} list systems --hwdb ${CMAKE_BINARY_DIR}/no_such_hwdb)
# A tp that does not divide the GPU count: the message says why dp cannot be inferred.
meshplan_cli_case(explain_tp_not_dividing 1 "32 / 3, not a whole number: world_size must be divisible by tp_size"
  -- ${MP} explain --model llama3.1-70b --system dgx-h100 --gpus 32 --seq-len 4096 --global-batch 64 --tp 3)
# The other rules that do not read dp are still evaluated (only axes_positive was listed on 24 GPUs,
# while 72 GPUs, which tp3 x cp3 divide, listed the three below); rules reading dp are not.
meshplan_cli_case(explain_mesh_not_dividing_lists_every_rule 1 "rules: INVALID, 4 rules broken"
  "axes_positive: dp_size is inferred as world_size / \\(tp_size \\* cp_size \\* pp_size\\) = 24 / \\(3 \\* 3 \\* 1\\)"
  "tp_divides_heads: num_attention_heads \\(32\\) must be divisible by tp_size \\(3\\)"
  "tp_divides_kv_heads: num_key_value_heads \\(8\\)" "cp_divides_sequence: CP sequence length 4096 must be divisible by 2 \\* cp_size = 6"
  "!global_batch_divisible" "!world_divisible_by_model_parallel"
  -- ${MP} explain --model llama3.1-8b --system dgx-h100 --gpus 24 --seq-len 4096 --global-batch 48 --tp 3 --cp 3)
# --strategy restricts the Megatron-Bridge search as it does AutoModel's.
meshplan_cli_case(plan_mbridge_strategy 0 "^1=? +megatron_fsdp" "^5=? +megatron_fsdp" "!^[0-9]+ +ddp"
  -- ${MP} plan --model llama3.1-8b --system dgx-h100 --gpus 16 --seq-len 4096 --global-batch 256
     --framework megatron-bridge --strategy megatron_fsdp --top 5)
# A Megatron-Bridge recipe: its rules, the megatron-bridge memory profile and the compute split.
meshplan_cli_case(explain_mbridge_recipe 1 "Megatron-Bridge layout, llama3-70b" "tp4 pp4 vpp5 cp2" "global batch 512"
  "passes all [0-9]+ Megatron-Bridge rules" "megatron-bridge profile" "GEMMs +[0-9.]+ s" "kernel launches"
  "does NOT fit"
  -- ${MP} explain --model llama3-70b --system dgx-h100 --gpus 32 --seq-len 8192 --headroom 0.1
     --recipe ${CMAKE_SOURCE_DIR}/tests/data/recipes/mbridge_1_9a_llama3_70b_pretrain_32gpu_h100_bf16.yaml)
meshplan_cli_case(explain_mbridge_broken 1 "rules: INVALID" "mb_world_divisible_by_etp_ep_pp" "set expert_tensor_parallel_size: 1"
  -- ${MP} explain --model qwen3-30b-a3b --system dgx-h100 --gpus 16 --seq-len 4096
     --recipe ${CMAKE_SOURCE_DIR}/tests/data/recipes/mbridge_broken_qwen3_30b_moe.yaml)
# calibrate on measurements that cover only some constants: each is labelled fitted (from how
# many measurements) or kept at the base system's value, with the reason.
meshplan_cli_case(calibrate_gemm_only 0
  "scaleup_latency_us +3\\.4 +3\\.4 +kept at dgx-h200's value: no collective measurements"
  "scaleup_busbw_efficiency +0\\.812 +0\\.812 +kept at dgx-h200's value: no collective measurements"
  "compute_efficiency +0\\.604407 +0\\.8 +fitted from 3 measurements \\(bf16 GEMMs"
  "fit: RMS relative residual 0\\.0% over 6 fitted points; fp8 large-GEMM rate 1200 TFLOP/s"
  "wrote .*calibrate_gemm_only\\.yaml" "!scale-up latency"
  -- ${MP} calibrate ${CMAKE_SOURCE_DIR}/tests/data/calibration/synthetic/gemm_only.jsonl --system dgx-h200
     -o ${CMAKE_BINARY_DIR}/calibrate_gemm_only.yaml --force)
meshplan_cli_case(calibrate_collectives_only 0
  "scaleup_latency_us +10 +3\\.4 +fitted from 12 measurements \\(one-node collectives of >= 1 MiB\\)"
  "scaleout_latency_us +14 +14 +kept at dgx-h200's value: .*1 multi-node collective measurement reported, not fitted"
  "compute_efficiency +0\\.8 +0\\.8 +kept at dgx-h200's value: no bf16 GEMM measurements"
  "wrote .*calibrate_collectives_only\\.yaml" "!fp8 large-GEMM"
  -- ${MP} calibrate ${CMAKE_SOURCE_DIR}/tests/data/calibration/synthetic/collectives_only.jsonl --system dgx-h200
     -o ${CMAKE_BINARY_DIR}/calibrate_collectives_only.yaml --force)
# calibrate --runs: the Megatron-Core step-time constants fitted to a user's measured runs (here the
# published DGX H100 rows with their system cell renamed), each constant with what it came from,
# every run's residual in and out of the fit; written into the output system's megatron_time_fit.
meshplan_cli_case(calibrate_runs 0
  "runs on dgx-h100 \\(--runs\\): 20 fitted"
  "Qwen3_30B_a3B my H100 cluster 16 FP8 \\(26\\.04\\) +-16\\.2% +-17\\.1%"
  "gemm_fp8 +1\\.4466 +1\\.00 +fitted from 17 runs of 5 models in FP8"
  "gemm_bf16 +1\\.4466 +1\\.00 += gemm_fp8: BF16 runs of 1 model"
  "skipped line 9 \\(LLAMA3_70B my H100 cluster 8 FP8\\): LoRA"
  "what the fit needs" "wrote .*calibrate_runs\\.yaml"
  -- ${MP} calibrate --runs ${CMAKE_SOURCE_DIR}/tests/data/calibration/runs/h100_runs.csv --system dgx-h100
     -o ${CMAKE_BINARY_DIR}/calibrate_runs.yaml --force)
# A mistyped throughput (1633000 tokens/s) drives the constants to their bounds: refused, nothing written.
meshplan_cli_case(calibrate_runs_typo 1
  "calibration refused: RMS relative step-time residual of the runs .*exceeds 25% \\(--max-residual\\)" "!wrote"
  -- ${MP} calibrate --runs ${CMAKE_SOURCE_DIR}/tests/data/calibration/runs/h100_runs_typo.csv --system dgx-h100
     -o ${CMAKE_BINARY_DIR}/calibrate_runs_typo.yaml --force)
# The published-runs survey (runs on many GPUs) is not one system's runs.
meshplan_cli_case(calibrate_runs_survey_refused 2
  "published_runs_dev\\.csv:1:1: error: --runs: expected the columns of a Megatron-Bridge performance table"
  -- ${MP} calibrate --runs ${CMAKE_SOURCE_DIR}/tests/data/published_runs_dev.csv --system dgx-h100
     -o ${CMAKE_BINARY_DIR}/calibrate_runs_survey.yaml --force)
meshplan_cli_case(calibrate_gemm_and_runs 0
  "compute_efficiency +0\\.604407 +0\\.8 +fitted from 3 measurements"
  "runs on dgx-h200 \\(--runs\\): 20 fitted" "megatron_time_fit +value"
  "wrote .*calibrate_gemm_and_runs\\.yaml"
  -- ${MP} calibrate ${CMAKE_SOURCE_DIR}/tests/data/calibration/synthetic/gemm_only.jsonl --system dgx-h200
     --runs ${CMAKE_SOURCE_DIR}/tests/data/calibration/runs/h100_runs.csv
     -o ${CMAKE_BINARY_DIR}/calibrate_gemm_and_runs.yaml --force)
meshplan_cli_case(calibrate_nothing 2
  "error: measurements: expected tools/measure/ measurement files, --runs RUNS.csv, or both; found neither"
  -- ${MP} calibrate --system dgx-h100 -o ${CMAKE_BINARY_DIR}/calibrate_nothing.yaml --force)
meshplan_cli_case(calibrate_runs_none_priced 2
  "skipped line 2 .*: LoRA" "--runs: expected at least one run of a Megatron-Core layout .*nothing was written" "!wrote"
  -- ${MP} calibrate --runs ${CMAKE_SOURCE_DIR}/tests/data/calibration/runs/lora_only.csv --system dgx-h100
     -o ${CMAKE_BINARY_DIR}/calibrate_runs_none_priced.yaml --force)

# --format json: an error of the command line itself (CLI11's parse) is JSON on stdout too.
meshplan_cli_case(plan_json_parse_error 2 "^    \"field\": \"--top\",$" "^    \"kind\": \"input\",$"
  "^    \"message\": \"--top: expected an integer in \\[1, 1000\\], found '0'\",$" "^meshplan: error: --top: expected an integer"
  -- ${MP} plan --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64 --top 0 --format json)
meshplan_cli_case(check_json_missing_option 2 "^    \"field\": \"--gpus\",$" "^    \"message\": \"--gpus is required\",$"
  -- ${MP} check ${CMAKE_SOURCE_DIR}/tests/data/recipes/mbridge_1_9a_llama3_70b_pretrain_32gpu_h100_bf16.yaml
     --model llama3-70b --system dgx-h100 --format=json)
meshplan_cli_case(plan_table_parse_error 2 "^meshplan: error: --top: expected" "!\"error\""
  -- ${MP} plan --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64 --top 0)

# --format json: a failure prints {"error": ...} on stdout (the plan's counts with it for exit 1),
# the human message still on stderr, the same exit status (stdout used to be empty).
add_test(NAME cli.plan_json_errors COMMAND bash -c "
  set -u; d=\$(mktemp -d); mp='$<TARGET_FILE:meshplan>'; fail=0
  \$mp plan --model llama3.1-405b --system dgx-h100 --gpus 8 --seq-len 8192 --global-batch 64 --format json >\$d/out 2>\$d/err; rc=\$?
  [ \$rc -eq 1 ] && grep -q '^meshplan: no layout fits in memory: the smallest need is' \$d/err &&
    grep -q '^    \"kind\": \"no_layout_fits\",\$' \$d/out && grep -q '^    \"exit_status\": 1,\$' \$d/out &&
    grep -q '^    \"message\": \"no layout fits in memory: the smallest need is [0-9.]* GiB per GPU' \$d/out &&
    grep -q '^    \"fitting\": 0,\$' \$d/out && grep -q '^  \"recipes\": \\[\\],\$' \$d/out || { echo no_fit rc=\$rc; cat \$d/out \$d/err; fail=1; }
  \$mp plan --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 7 --strategy ddp --format json >\$d/out 2>\$d/err; rc=\$?
  [ \$rc -eq 1 ] && grep -q '^    \"kind\": \"no_valid_layout\",\$' \$d/out && grep -q '^    \"global_batch_divisible' \$d/out ||
    { echo no_valid rc=\$rc; cat \$d/out \$d/err; fail=1; }
  \$mp plan --model llama3.1-8b --system dgx-h100 --gpus 12 --seq-len 4096 --global-batch 64 --format json >\$d/out 2>\$d/err; rc=\$?
  printf '%s\\n' '{' '  \"error\": {' '    \"column\": null,' '    \"exit_status\": 2,' '    \"field\": \"--gpus\",' '    \"file\": null,' \\
    '    \"kind\": \"input\",' '    \"line\": null,' \\
    '    \"message\": \"expected a multiple of the 8 GPUs per node of dgx-h100 (or at most one node), found 12\",' \\
    '    \"output\": null' '  }' '}' >\$d/want
  [ \$rc -eq 2 ] && cmp -s \$d/out \$d/want && grep -q 'error: --gpus: expected a multiple' \$d/err || { echo gpus rc=\$rc; diff \$d/want \$d/out; cat \$d/err; fail=1; }
  \$mp plan --model ${D}/bert.json --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64 --format json >\$d/out 2>\$d/err; rc=\$?
  [ \$rc -eq 2 ] && grep -q '^    \"file\": \".*/bert.json\",\$' \$d/out && grep -q '^    \"line\": 2,\$' \$d/out &&
    grep -q '^    \"field\": \"architectures\",\$' \$d/out || { echo model rc=\$rc; cat \$d/out \$d/err; fail=1; }
  # An --out that cannot be written is an output path, not an input file.
  \$mp plan --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64 --format json --out /proc/version --force >\$d/out 2>\$d/err; rc=\$?
  [ \$rc -eq 2 ] && grep -q '^    \"output\": \"/proc/version\"\$' \$d/out && grep -q '^    \"file\": null,\$' \$d/out &&
    grep -q '^    \"field\": \"--out\",\$' \$d/out && grep -q '^/proc/version: error: --out: cannot create a file next to it' \$d/err ||
    { echo out rc=\$rc; cat \$d/out \$d/err; fail=1; }
  echo keep >\$d/r.rank1.yaml
  \$mp plan --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64 --format json --out \$d/r.yaml --emit-launch >\$d/out 2>\$d/err; rc=\$?
  [ \$rc -eq 2 ] && [ \$(grep -c '^{' \$d/out) -eq 1 ] && ! grep -q '\"recipes\"' \$d/out && grep -q '^    \"field\": \"--emit-launch\",\$' \$d/out ||
    { echo launch rc=\$rc; cat \$d/out \$d/err; fail=1; }
  \$mp plan --model llama3.1-8b --system dgx-h100 --gpus 12 --seq-len 4096 --global-batch 64 >\$d/out 2>&1; rc=\$?
  [ \$rc -eq 2 ] && ! grep -q '\"error\"' \$d/out || { echo table rc=\$rc; cat \$d/out; fail=1; }
  exit \$fail")
# An empty --out / --report path (a shell's "") is refused, not taken as "no file".
add_test(NAME cli.plan_out_empty_string COMMAND bash -c "
  '$<TARGET_FILE:meshplan>' plan --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64 --out '' 2>&1 | grep -q -- '--out: expected a file path, found an empty string' || exit 1
  '$<TARGET_FILE:meshplan>' plan --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64 --report ''; [ \$? -eq 2 ]")
# A legacy `_target_` manager without `strategy:`: AutoModel ignores it and runs fsdp2; check says so.
meshplan_cli_case(check_legacy_target 0 "layout: fsdp2" "framework default: distributed.strategy = fsdp2 .AutoModel ignores distributed._target_ 'nemo_automodel.components.distributed.ddp.DDPManager'"
  -- ${MP} check ${CMAKE_SOURCE_DIR}/tests/data/recipes/automodel_legacy_target_ddp.yaml --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096)
# grad_reduce_in_fp32: mixed_precision's value wins over ddp's (MixedPrecisionConfig.setup copies
# it): the preset keeps fp32 main gradients (19.24 GiB) and check warns; a mixed_precision map
# with grad_reduce_in_fp32: false halves them (9.62 GiB). explain takes the recipe's seq_length.
# (Exit 1: at micro-batch 1 without recompute neither fits in 71.2 usable GiB.)
meshplan_cli_case(check_mb_grad_reduce_overridden 1 "warning: ddp.grad_reduce_in_fp32: false is overwritten by mixed_precision's grad_reduce_in_fp32 = true"
  -- ${MP} check ${CMAKE_SOURCE_DIR}/tests/data/recipes/mbridge_grad_reduce_overridden.yaml --model qwen3-30b-a3b --system dgx-h100 --gpus 8)
meshplan_cli_case(explain_mb_grad_reduce_preset 1 "seq_len 4096" "gradients +19.24" "warning: ddp.grad_reduce_in_fp32: false is overwritten"
  -- ${MP} explain --model qwen3-30b-a3b --system dgx-h100 --gpus 8
     --recipe ${CMAKE_SOURCE_DIR}/tests/data/recipes/mbridge_grad_reduce_overridden.yaml)
meshplan_cli_case(explain_mb_grad_reduce_map 1 "gradients +9.62" "!overwritten"
  -- ${MP} explain --model qwen3-30b-a3b --system dgx-h100 --gpus 8
     --recipe ${CMAKE_SOURCE_DIR}/tests/data/recipes/mbridge_grad_reduce_map.yaml)
meshplan_cli_case(explain_seq_len_replaces_recipe 0 "seq_len 1024" "note: --seq-len 1024 replaces the recipe's 4096"
  -- ${MP} explain --model qwen3-30b-a3b --system dgx-h100 --gpus 8 --seq-len 1024
     --recipe ${CMAKE_SOURCE_DIR}/tests/data/recipes/mbridge_grad_reduce_map.yaml)
# A sweep some of whose points have no layout exits 1 with a message on stderr and, under
# --format json, an error object beside the points.
add_test(NAME cli.sweep_json_error COMMAND bash -c "
  d=\$(mktemp -d)
  '$<TARGET_FILE:meshplan>' plan --model llama3.1-405b --system dgx-h100 --sweep-gpus 8,64 --seq-len 8192 --global-batch 64 --format json >\$d/out 2>\$d/err; rc=\$?
  [ \$rc -eq 1 ] && grep -q '^meshplan: 1 of 2 sweep points have no layout' \$d/err &&
    grep -q '\"kind\": \"no_layout\"' \$d/out && grep -q '\"exit_status\": 1' \$d/out &&
    [ \$(grep -c '\"seq_len\": 8192' \$d/out) -ge 2 ] || { cat \$d/out \$d/err; exit 1; }")
# A sweep builds each point's request (model and system loaded) once, validating every point
# before the first search: the model file is opened once per point (it was twice: once to
# validate the point, again to plan it). Skipped where strace cannot trace.
add_test(NAME cli.sweep_loads_model_once_per_point COMMAND bash -c "
  command -v strace >/dev/null && strace -o /dev/null true 2>/dev/null || exit 77
  d=\$(mktemp -d); cp ${CMAKE_SOURCE_DIR}/models/llama3.1-8b.json \$d/m.json
  # LeakSanitizer cannot run under ptrace: off for this traced run (sanitizer builds).
  ASAN_OPTIONS=\${ASAN_OPTIONS:+\$ASAN_OPTIONS:}detect_leaks=0 strace -f -e trace=open,openat -o \$d/trace '$<TARGET_FILE:meshplan>' plan --model \$d/m.json --system dgx-h100 --sweep-gpus 8,16 --sweep-seq 4096,8192 --global-batch 64 >\$d/out 2>&1; rc=\$?
  n=\$(grep -c '/m\\.json\"' \$d/trace)
  [ \$rc -eq 0 ] && [ \$n -eq 4 ] && [ \$(grep -cE '^ *[0-9]* *[48][01][9][62] .*  (fsdp2|megatron_fsdp) ' \$d/out) -eq 4 ] ||
    { echo \"rc=\$rc, model file opened \$n times for 4 points\"; cat \$d/out; exit 1; }")
set_tests_properties(cli.sweep_loads_model_once_per_point PROPERTIES SKIP_RETURN_CODE 77)
# 61 layers do not split evenly over pp 8 x vpp 4: the nearest valid layouts name the
# pipeline_model_parallel_layout they add (they read "0 changes" when it was the only one).
meshplan_cli_case(check_nearest_names_layout_split 1 "mb_pp_divides_layers"
  "--- 1: [0-9]+ edits?[^;]*; .*pipeline layer split: even \\(num_layers / \\(pp x vpp\\)\\) -> pipeline_model_parallel_layout"
  "!--- [0-9]+: 0 edits"
  -- ${MP} check ${D}/mb_deepseek_pp8_vpp4_uneven.yaml --model deepseek-v3 --system dgx-h100 --gpus 64)
# check, like explain, says when --seq-len replaces the recipe's sequence length.
meshplan_cli_case(check_seq_len_note 1 "note: --seq-len 8192 replaces the recipe's 4096" "seq_len 8192"
  -- ${MP} check ${D}/mb_deepseek_pp8_vpp4_uneven.yaml --model deepseek-v3 --system dgx-h100 --gpus 8 --seq-len 8192)

# check: a recipe broken only by its sequence length names the nearest length that passes.
meshplan_cli_case(check_seq_len_hint 1 "mb_cp_divides_sequence: seq_length 8191"
  "hint: with model.seq_length 8192 instead of 8191 this layout passes every rule as written"
  -- ${MP} check ${D}/mb_llama70b_seq8191.yaml --model llama3-70b --system dgx-h100 --gpus 32)
meshplan_cli_case(check_no_seq_len_hint_when_layout_broken 1 "mb_world_divisible" "!hint: with"
  -- ${MP} check ${D}/mb_llama70b_seq8191.yaml --model llama3-70b --system dgx-h100 --gpus 24)

# --format yaml: stdout is one YAML stream, the search summary goes to stderr.
add_test(NAME cli.plan_yaml_summary_on_stderr COMMAND bash -c "
  set -u; d=\$(mktemp -d)
  '$<TARGET_FILE:meshplan>' plan --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64 --top 1 --format yaml >\$d/o 2>\$d/e || exit 1
  grep -q '^distributed:' \$d/o && ! grep -q 'searched' \$d/o && grep -Eq '^meshplan: searched [0-9]+ layouts: [0-9]+ valid' \$d/e || { cat \$d/o \$d/e; exit 1; }")

# --emit-launch: an existing rank-1 launch file is refused before the search (no ranking printed).
add_test(NAME cli.emit_launch_existing_refused_before_search COMMAND bash -c "
  set -u; d=\$(mktemp -d); echo keep > \$d/r.rank1.launch.sh
  out=\$('$<TARGET_FILE:meshplan>' plan --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64 --emit-launch --out \$d/r.yaml 2>&1); rc=\$?
  [ \$rc -eq 2 ] && grep -q 'r.rank1.launch.sh: error: --emit-launch: file exists' <<<\"\$out\" && ! grep -q '^rank ' <<<\"\$out\" &&
    [ \"\$(cat \$d/r.rank1.launch.sh)\" = keep ] && [ \$(ls \$d | wc -l) -eq 1 ] || { echo rc=\$rc; echo \"\$out\"; ls \$d; exit 1; }")

# validate --headroom sets the usable capacity of the ranking; --breakdown prints the fastest layout's terms too.
meshplan_cli_case(validate_headroom_breakdown 0 "above the usable capacity \\(headroom 30%\\)" "memory GiB: 65.0 of 55.4"
  "planner's fastest fitting layout: " "its step ms: [0-9.]+ = compute" "summary: 1 row evaluated"
  -- ${MP} validate ${D}/validate_llama70b_h100.csv --headroom 0.3 --breakdown --rank-seconds 5)
meshplan_cli_case(validate_headroom_range 2 "--headroom"
  -- ${MP} validate ${D}/validate_llama70b_h100.csv --headroom 0.95)

# calibrate refuses measurements of another GPU (read from the files' environment line) and a
# file given twice (double weight).
meshplan_cli_case(calibrate_other_gpu 2
  "h200_gemm\\.jsonl:1:1: error: environment.gpu: expected measurements of the base system's GPU, AMD Instinct MI300X 192GB \\(--system mi300x-8\\), found NVIDIA H200"
  -- ${MP} calibrate ${CMAKE_SOURCE_DIR}/tests/data/calibration/h200_gemm.jsonl --system mi300x-8 -o ${CMAKE_BINARY_DIR}/calibrate_other_gpu.yaml --force)
meshplan_cli_case(calibrate_file_twice 2 "error: MEASUREMENTS: given twice"
  -- ${MP} calibrate ${CMAKE_SOURCE_DIR}/tests/data/calibration/h200_gemm.jsonl ${CMAKE_SOURCE_DIR}/tests/data/calibration/../calibration/h200_gemm.jsonl --system dgx-h200 -o ${CMAKE_BINARY_DIR}/calibrate_twice.yaml --force)

# Options that do not apply are refused, not ignored.
meshplan_cli_case(explain_fp32_params_megatron 2 "--fp32-params: expected only with an AutoModel layout, found a Megatron-Bridge one"
  -- ${MP} explain --recipe ${R}/mbridge_1_9a_llama3_70b_pretrain_32gpu_h100_bf16.yaml --model llama3-70b --system dgx-h100 --gpus 32 --fp32-params)
meshplan_cli_case(plan_hf_model_needs_full_recipe 2 "--hf-model: expected together with --full-recipe"
  -- ${MP} plan --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64 --hf-model foo/bar --emit-launch --out ${CMAKE_BINARY_DIR}/hf_model_refused.yaml)
meshplan_cli_case(validate_show_top_needs_rank 2 "--show-top: expected with ranking on; found --rank-top 0"
  -- ${MP} validate ${D}/validate_llama70b_h100.csv --show-top 3 --rank-top 0)
# validate names what it found: an empty file, binary data, the GPU it has no system for.
meshplan_cli_case(validate_empty_file 2 "validate_empty.csv:1:1: error: header: expected a Megatron-Bridge perf header .* found an empty file"
  -- ${MP} validate ${D}/validate_empty.csv)
meshplan_cli_case(validate_binary_file 2 "error: header: expected a Megatron-Bridge perf header .* found binary data \\(control bytes\\), not CSV text"
  -- ${MP} validate ${D}/garbage.bin)
meshplan_cli_case(validate_unknown_system 1 "skipped \\(line 2\\): no hwdb system for the GPU 'DGX-X900'" "skipped 1 row:"
  -- ${MP} validate ${D}/validate_unknown_system.csv --rank-top 0)
# check: Megatron-Bridge sections in an AutoModel recipe are named; empty documents around one
# recipe do not hide it; --precision over the recipe's is noted; a dp_size against the world says so.
meshplan_cli_case(check_automodel_with_mb_sections 0 "warning: the recipe also has Megatron-Bridge sections \\(train\\), which AutoModel ignores"
  -- ${MP} check ${D}/automodel_with_mb_sections.yaml --model llama3.1-70b --system dgx-h100 --gpus 32 --seq-len 8192)
meshplan_cli_case(check_empty_documents_then_recipe 0 "AutoModel recipe, llama3.1-70b" "valid: passes all 42 rules" "!found null"
  -- ${MP} check ${D}/empty_documents_then_recipe.yaml --model llama3.1-70b --system dgx-h100 --gpus 32 --seq-len 8192)
meshplan_cli_case(check_precision_override_noted 0 "note: --precision fp8 replaces the recipe's bf16"
  -- ${MP} check ${R}/mbridge_1_9a_llama3_70b_pretrain_32gpu_h100_bf16.yaml --model llama3-70b --system dgx-h100 --gpus 32 --precision fp8)
meshplan_cli_case(check_dp_size_mismatch 1 "memory: not predicted \\(the parallel sizes' product tp x pp x cp x dp = 1 x 1 x 1 x 4 = 4 is not the 8 GPUs\\)"
  -- ${MP} check ${D}/automodel_dp_size_mismatch.yaml --model llama3.1-8b --system dgx-h100 --gpus 8)
# The nearest layouts of a recipe whose dp_size no layout has name dp_size 3 -> null (they read
# "0 changes" while the recipe written said dp_size: null  # inferred: 2).
meshplan_cli_case(check_nearest_names_dp_size 1 "world_divisible_by_model_parallel: dp_size=3"
  "--- 1: [0-9]+ edits?[^;]*. .*dp_size: 3 -> null \\(inferred [0-9]+\\)" "--- 2: [0-9]+ edits?[^;]*. .*dp_size: 3 -> null \\(inferred [0-9]+\\)"
  "--- 3: [0-9]+ edits?[^;]*. .*dp_size: 3 -> null \\(inferred [0-9]+\\)" "!--- [0-9]+: 0 edits"
  -- ${MP} check ${D}/automodel_dp3_32gpu.yaml --model llama3.1-70b --system dgx-h100 --gpus 32)
meshplan_cli_case(explain_dp_unknown 1 "layout: fsdp2 tp3 pp1 cp1 ep1 dp\\? " "!dp0"
  -- ${MP} explain --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64 --tp 3)

# MXFP8 needs Blackwell; FP8 GEMM rows with sequence parallel are the rank's shard; unfitted
# systems are named when they price Megatron-Bridge layouts; NaN headroom is refused.
meshplan_cli_case(check_mxfp8_on_hopper 1 "mb_mxfp8_needs_blackwell: the MXFP8 recipe needs a Blackwell GPU"
  -- ${MP} check ${D}/mb_llama70b_mxfp8.yaml --model llama3-70b --system dgx-h100 --gpus 32)
meshplan_cli_case(plan_fp8_rows_sp 0 "tensor_model_parallel_size: 4" "!# layout: [a-z_+]+ tp8 pp1 cp1 ep1 dp[0-9]+ mbs[1-7] sp"
  "# layout: [a-z_+]+ tp8 pp1 cp1 ep1 dp[0-9]+ mbs8 sp"
  -- ${MP} plan --framework megatron-bridge --model llama3.1-70b --system dgx-h100 --gpus 32 --seq-len 8200 --global-batch 128 --precision fp8 --top 50 --format yaml --headroom 0.1)
meshplan_cli_case(plan_unfitted_megatron_warning 0 "note: dgx-h200 has no fitted Megatron-Core step-time constants .megatron_time_fit.: its Megatron-Bridge step times use those of dgx-h100 .same GPU compute capability 9.0."
  "come out a median 27% off .validate mbridge_perf_dev.csv --transfer, LOSO borrow: dense rows.: read step times as that uncertain"
  -- ${MP} plan --framework megatron-bridge --model llama3.1-8b --system dgx-h200 --gpus 8 --seq-len 4096 --global-batch 64 --top 1)
# DGX A100 has no fitted system of its compute capability: the physical constants, and their transfer error (MoE).
meshplan_cli_case(plan_physical_megatron_note 0 "dgx-a100 has no fitted Megatron-Core step-time constants .megatron_time_fit.: its Megatron-Bridge step times use the physical constants"
  "come out a median 19% off .validate mbridge_perf_dev.csv --transfer, LOSO phys: MoE rows."
  -- ${MP} plan --framework megatron-bridge --model mixtral-8x7b --system dgx-a100 --gpus 16 --seq-len 4096 --global-batch 256 --top 1)
meshplan_cli_case(check_headroom_nan 2 "--headroom: expected a number in \\[0, 0.9\\], found nan"
  -- ${MP} check ${R}/mbridge_1_9a_llama3_70b_pretrain_32gpu_h100_bf16.yaml --model llama3-70b --system dgx-h100 --gpus 32 --headroom nan)
meshplan_cli_case(check_empty_document_between_counted 0 "2 YAML documents, each checked on its own \\(1 empty one, only a --- line, skipped\\)"
  -- ${MP} check ${D}/two_recipes_empty_between.yaml --model llama3.1-70b --system dgx-h100 --gpus 32 --seq-len 8192)

# A leading zero does not make an option octal: --gpus 016 is 16 GPUs (CLI11 read it as 14).
meshplan_cli_case(gpus_leading_zero_decimal 0 "llama3.1-8b on 16 GPUs of dgx-h100"
  -- ${MP} explain --model llama3.1-8b --system dgx-h100 --gpus 016 --seq-len 4096 --global-batch 064 --tp 02)

# Megatron-Bridge recipes set the dataset's sequence length with the model's: the recipe
# functions' own dataset.seq_length (Llama 3.1 8B: 8192) would fail ConfigContainer.validate.
meshplan_cli_case(plan_mb_dataset_seq_length 0 "^dataset:$" " dataset.seq_length=4096 "
  -- ${MP} plan --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64 --framework megatron-bridge --format yaml --top 1)

# A Hugging Face snapshot directory as --model is read through its config.json.
# (global batch 8: one micro-batch per step, so that AutoModel's defer_fsdp_grad_sync default does not matter)
meshplan_cli_case(model_snapshot_dir 0 "AutoModel layout, .*hf_snapshot on 8 GPUs of dgx-h100"
  -- ${MP} explain --model ${D}/hf_snapshot --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 8)

# Above the usable capacity but within the GPU: the headroom is short, not the GPU (NVIDIA's
# Llama 3 70B recipe for 32 H100, 76.2 of 79.1 GiB, was called "out of memory by 5.0 GiB").
# At the 10% headroom of the default allocator:
meshplan_cli_case(check_memory_within_gpu 0 "memory: 76.2 GiB per GPU predicted of 71.2 GiB usable: above it by 5.0 GiB, within the GPU's 79.1 GiB: it may run" "!out of memory"
  -- ${MP} check ${R}/mbridge_1_9a_llama3_70b_pretrain_32gpu_h100_bf16.yaml --model llama3-70b --system dgx-h100 --gpus 32 --headroom 0.10)
# At Megatron-Bridge's default headroom, 2% (Megatron-Core's measured fragmentation with
# expandable segments, which its recipes set): it fits.
meshplan_cli_case(check_mbridge_default_headroom 0 "memory: 76.2 GiB per GPU predicted of 77.5 GiB usable: fits with 1.3 GiB headroom"
  -- ${MP} check ${R}/mbridge_1_9a_llama3_70b_pretrain_32gpu_h100_bf16.yaml --model llama3-70b --system dgx-h100 --gpus 32)

# explain says what it priced: a rule-breaking layout's verdict says the framework refuses it,
# and a schedule typed without PP has no effect.
meshplan_cli_case(explain_invalid_verdict_says_refused 1 "fits: .* GiB to spare per GPU .as priced. the framework refuses this layout: 1 rule broken, above."
  -- ${MP} explain --model qwen3-30b-a3b --system dgx-h100 --gpus 16 --seq-len 4096 --global-batch 64 --ep 32)
meshplan_cli_case(explain_schedule_without_pp 0 "note: --pp-schedule 1f1b has no effect without pipeline parallelism"
  -- ${MP} explain --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 8 --pp-schedule 1f1b)

# An AutoModel FSDP2 recipe with gradient accumulation that leaves defer_fsdp_grad_sync unset is
# priced with AutoModel's default (true: unsharded fp32 gradients kept) by check as by explain;
# explain --defer-fsdp-grad-sync false replaces the recipe's setting.
meshplan_cli_case(check_automodel_defer_unset_priced_true 0 "^memory: 71\\.7 GiB per GPU predicted" "6277 tokens/s per GPU"
  -- ${MP} check ${D}/automodel_fsdp2_ga4_defer_unset.yaml --model llama3.1-8b --system dgx-h100 --gpus 8)
meshplan_cli_case(explain_automodel_defer_unset_priced_true 1 "most loaded GPU: 71\\.73 GiB" "6277 tokens/s per GPU"
  -- ${MP} explain --recipe ${D}/automodel_fsdp2_ga4_defer_unset.yaml --model llama3.1-8b --system dgx-h100 --gpus 8)
meshplan_cli_case(explain_automodel_defer_flag_replaces_recipe 0 "gradients +1\\.87 " "!defer_fsdp_grad_sync: true priced"
  -- ${MP} explain --recipe ${D}/automodel_fsdp2_ga4_defer_unset.yaml --model llama3.1-8b --system dgx-h100 --gpus 8
     --defer-fsdp-grad-sync false)

# Megatron-Bridge nearest layouts keep the recipe's dispatcher (flex) and list the runtime
# settings the recipe wrote that their recipes write otherwise (overlap_grad_reduce).
meshplan_cli_case(check_nearest_mb_keeps_flex 1 "^--- 1: [0-9]+ edits? .*overlap_grad_reduce: false -> true" "moe_token_dispatcher_type=flex" "!moe_token_dispatcher_type=alltoall" "!expert_model_parallel_size: 8 -> 1"
  -- ${MP} check ${D}/mbridge_qwen3_30b_flex_no_overlap.yaml --model qwen3-30b-a3b --system dgx-h100 --gpus 16 --headroom 0.1)

# Megatron-Bridge launch of a model whose default recipe leaves comm_overlap None (Llama 3.1 8B):
# its keys are force-added with the CommOverlapConfig to build unless MB_RECIPE is set; a recipe
# with a CommOverlapConfig (Llama 3.1 70B) keeps plain overrides. Both scripts parse.
add_test(NAME cli.launch_mb_comm_overlap_none COMMAND bash -c "
  set -u; d=\$(mktemp -d)
  P=('$<TARGET_FILE:meshplan>' plan --framework megatron-bridge --system dgx-h100 --seq-len 4096 --top 1 --emit-launch)
  \"\${P[@]}\" --model llama3.1-8b --gpus 8 --global-batch 64 --out \$d/a.yaml >/dev/null 2>&1 || exit 1
  \"\${P[@]}\" --model llama3.1-70b --gpus 32 --global-batch 128 --out \$d/b.yaml >/dev/null 2>&1 || exit 1
  for f in \$d/a.rank1.launch.sh \$d/a.rank1.sbatch \$d/b.rank1.launch.sh; do bash -n \$f || exit 1; done
  grep -q \"COMM_OVERLAP=('++comm_overlap._target_=megatron.bridge.training.comm_overlap.CommOverlapConfig' '++comm_overlap.tp_comm_overlap=\" \$d/a.rank1.launch.sh || exit 1
  grep -q '\"\${COMM_OVERLAP\\[@\\]}\"' \$d/a.rank1.sbatch || exit 1
  ! grep -q \"^  'comm_overlap\" \$d/a.rank1.launch.sh || exit 1
  ! grep -q 'COMM_OVERLAP' \$d/b.rank1.launch.sh && grep -q \"^  'comm_overlap.tp_comm_overlap=\" \$d/b.rank1.launch.sh")

# Megatron-Bridge torch FSDP2 only when --strategy names it (MB issue #2785), with a warning, and
# its recipes turn gradient_accumulation_fusion off (MLM arguments.py: FSDP2 refuses it).
meshplan_cli_case(plan_mb_fsdp2_explicit 0 "warning: torch FSDP2 .dist.use_torch_fsdp2. is searched because --strategy names fsdp2" "model.transformer.gradient_accumulation_fusion=false" "dist.use_torch_fsdp2=true"
  -- ${MP} plan --framework megatron-bridge --model llama3.1-8b --system dgx-h100 --gpus 16 --seq-len 8192 --global-batch 128 --strategy fsdp2 --top 1 --format yaml)
meshplan_cli_case(plan_mb_no_fsdp2_by_default 0 "dist.use_torch_fsdp2=false" "!dist.use_torch_fsdp2=true"
  -- ${MP} plan --framework megatron-bridge --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64 --top 200 --format yaml)

# A --hwdb folder of systems only: its systems load with the embedded GPUs, and list gpus shows
# those (it refused the folder: "expected ... with gpus/ in it").
meshplan_cli_case(list_gpus_hwdb_systems_only 0 "^h100-sxm " "^b200 "
  -- ${MP} list gpus --hwdb ${D}/hwdb_systems_only)
meshplan_cli_case(list_systems_hwdb_systems_only 0 "^my-dgx +h100-sxm +8 +8" "!dgx-b200"
  -- ${MP} list systems --hwdb ${D}/hwdb_systems_only)

# A Megatron-Bridge override without model: says its sizes are Megatron-Core defaults.
meshplan_cli_case(check_mb_no_model_section 0 "not set, framework default: model: .no section. tensor/pipeline/context/expert parallel sizes 1"
  -- ${MP} check ${D}/mbridge_no_model_section.yaml --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096)
# A Hugging Face hub cache folder (models--ORG--NAME) is read through refs/main's snapshot.
meshplan_cli_case(model_hub_cache_dir 0 "AutoModel layout, .*models--meta-llama--Llama-3.1-8B on 8 GPUs of dgx-h100"
  -- ${MP} explain --model ${D}/hf_cache/models--meta-llama--Llama-3.1-8B --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 8)

# Where sequence parallel cannot split the sequence (4097 over TP 2), Megatron-Bridge layouts use
# TP without it (there was no TP > 1 layout at all).
meshplan_cli_case(plan_mb_tp_without_sp 0 "tensor_model_parallel_size: [248]" "sequence_parallel: false"
  -- ${MP} plan --framework megatron-bridge --model llama3.1-70b --system dgx-h100 --gpus 32 --seq-len 4097 --global-batch 64 --top 3 --format yaml)

# check says how good a valid recipe is: its prediction and its place among the planner's
# fastest layouts for the same job; a recipe predicted above the GPU's whole memory exits 1.
meshplan_cli_case(check_gap_to_plan 0 "predicted: step [0-9.]+ s, 1679 tokens/s per GPU"
  "against the planner .*: rank >20; its first, megatron_fsdp tp1 pp1 cp1 ep1 dp16 .* is expected [0-9.]+% faster: beyond the model's error \\([0-9.]+%\\); change strategy: fsdp2 -> megatron_fsdp; tp_size: 8 -> 1"
  -- ${MP} check ${D}/automodel_llama8b_tp8_16gpu.yaml --model llama3.1-8b --system dgx-h100 --gpus 16)
meshplan_cli_case(check_above_whole_memory 1 "out of memory: above the GPU's 79.1 GiB" "no layout it finds fits this job"
  -- ${MP} check ${D}/automodel_llama70b_ddp_8gpu.yaml --model llama3.1-70b --system dgx-h100 --gpus 8)
# The planner's first recipe (ranked by expected step, as plan ranks), read back, is its own rank 1 (plan and check price it alike,
# the flex dispatcher's backend and the recipe function's settings included).
foreach(fw automodel megatron-bridge)
  add_test(NAME cli.check_plan_top_is_rank1_${fw} COMMAND bash -c "
    set -u; d=\$(mktemp -d)
    '$<TARGET_FILE:meshplan>' plan --framework ${fw} --model qwen3-30b-a3b --system dgx-h100 --gpus 16 --seq-len 4096 --global-batch 1024 --format yaml --top 1 --out \$d/r.yaml 2>/dev/null || exit 1
    out=\$('$<TARGET_FILE:meshplan>' check \$d/r.yaml --model qwen3-30b-a3b --system dgx-h100 --gpus 16); rc=\$?
    echo \"\$out\" | grep -E '^against the planner'
    [ \$rc -eq 0 ] && echo \"\$out\" | grep -qE 'rank 1=?, no layout it finds is predicted faster'")
endforeach()
# --search-dispatchers: Megatron-Bridge only; with it a plan may pick a dispatcher other than the
# recipe function's, and writes it.
meshplan_cli_case(plan_search_dispatchers_automodel 2 "--search-dispatchers: expected with --framework megatron-bridge only"
  -- ${MP} plan --model qwen3-30b-a3b --system dgx-h100 --gpus 16 --seq-len 4096 --global-batch 256 --search-dispatchers)
meshplan_cli_case(plan_search_dispatchers_mb 0 "moe_token_dispatcher_type: (alltoall|flex)"
  -- ${MP} plan --framework megatron-bridge --model qwen3-30b-a3b --system dgx-h100 --gpus 16 --seq-len 4096 --global-batch 256 --search-dispatchers --format yaml --top 1)

# explain --format json and check --format json: every number the text prints is the JSON's, as
# the text rounds it (tests/cli/json_matches_text.py runs both), and the exit status is the same.
set(JSON_MATCHES python3 ${CMAKE_SOURCE_DIR}/tests/cli/json_matches_text.py)
add_test(NAME cli.explain_json_matches_text_automodel COMMAND ${JSON_MATCHES}
  request.gpus=16 layout.tp_size=2 layout.pp_size=2 rules.valid=true pipeline_split=null
  -- ${MP} explain --model llama3.1-8b --system dgx-h100 --gpus 16 --seq-len 4096 --global-batch 64 --tp 2 --pp 2
  --local-batch 4 --pp-microbatch 1)
add_test(NAME cli.explain_json_matches_text_mb_moe COMMAND ${JSON_MATCHES}
  request.framework="megatron-bridge" layout.ep_size=8 ep_all_to_all.dispatcher="alltoall" ep_all_to_all.ep_size=8
  layout.dp_flavour="ddp+distopt"
  -- ${MP} explain --model qwen3-30b-a3b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 512
  --framework megatron-bridge --ep 8 --recompute full --recompute-method uniform --recompute-num-layers 1
  --dispatcher alltoall --dp-type ddp+distopt --mbs 1)
add_test(NAME cli.explain_json_matches_text_mb_pipeline COMMAND ${JSON_MATCHES}
  pipeline_split.kind="pipeline_model_parallel_layout"
  -- ${MP} explain --model llama3.1-70b --system dgx-h100 --gpus 32 --recipe ${R}/mbridge_layout_unbalanced_llama70b.yaml)
add_test(NAME cli.explain_json_matches_text_64_stages COMMAND ${JSON_MATCHES}
  layout.pp_size=64 rules.valid=true
  -- ${MP} explain --model llama3.1-405b --system dgx-h100 --gpus 1024 --seq-len 8192 --global-batch 512 --pp 64
  --cp 16 --local-batch 512)
add_test(NAME cli.explain_json_matches_text_unscorable COMMAND ${JSON_MATCHES}
  scorable=false memory_gib=null rules.valid=false
  -- ${MP} explain --model llama3.1-70b --system dgx-h100 --gpus 32 --seq-len 4096 --global-batch 64 --tp 3)
add_test(NAME cli.check_json_matches_text_valid COMMAND ${JSON_MATCHES}
  documents.0.rules.valid=true documents.0.memory.verdict="fits" documents.0.nearest=null exit_status=0
  documents.0.against_plan.within_band=false documents.0.layout.tp_size=8
  -- ${MP} check ${D}/automodel_llama8b_tp8_16gpu.yaml --model llama3.1-8b --system dgx-h100 --gpus 16)
add_test(NAME cli.check_json_matches_text_out_of_memory COMMAND ${JSON_MATCHES}
  documents.0.memory.verdict="out_of_memory" documents.0.memory.above_whole_memory=true exit_status=1
  -- ${MP} check ${D}/automodel_llama70b_ddp_8gpu.yaml --model llama3.1-8b --system dgx-h100 --gpus 8)
add_test(NAME cli.check_json_matches_text_invalid COMMAND ${JSON_MATCHES}
  documents.0.rules.failures.0.name="mb_world_divisible_by_etp_ep_pp" documents.0.nearest.0.layout.ep_size=8
  documents.0.predicted=null
  -- ${MP} check ${D}/mb_qwen3_30b_ep16_8gpu.yaml --model qwen3-30b-a3b --system dgx-h100 --gpus 8)
add_test(NAME cli.explain_json_matches_text_fp8 COMMAND ${JSON_MATCHES}
  request.precision="fp8" rules.valid=true
  -- ${MP} explain --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64 --precision fp8)
add_test(NAME cli.check_json_matches_text_fp8 COMMAND ${JSON_MATCHES}
  documents.0.rules.valid=true documents.0.request.precision="fp8"
  -- ${MP} check ${R}/mbridge_1_9d_llama3_70b_pretrain_64gpu_gb200_fp8cs.yaml --model llama3-70b --system gb200-nvl72 --gpus 64)
add_test(NAME cli.check_json_matches_text_against_plan COMMAND ${JSON_MATCHES}
  documents.0.against_plan.searched=20 documents.0.against_plan.within_band=false
  -- ${MP} check ${D}/mbridge_qwen3_30b_flex_no_overlap.yaml --model qwen3-30b-a3b --system dgx-h100 --gpus 32)
# The settings a fix turns on that the recipe leaves unset are notes, apart from its changes, and
# only those the cost model prices for the fix (TP 2, expert-TP 1, EP 8 over DP 8: the DP reduce,
# not the P2P settings of a PP-1 layout).
add_test(NAME cli.check_json_matches_text_notes COMMAND ${JSON_MATCHES}
  documents.0.nearest.0.edits=2 documents.0.nearest.0.layout.tp_size=2
  "documents.0.nearest.0.notes=[\"overlap_grad_reduce: unset (off) -> true\"]"
  -- ${MP} check ${R}/mbridge_broken_qwen3_30b_moe.yaml --model qwen3-30b-a3b --system dgx-h100 --gpus 16)
# An unusable document among several: its error object is ErrorJson's, the others are judged.
meshplan_cli_case(check_json_several_documents_error 2 "\"several\": true" "\"kind\": \"input\"" "\"exit_status\": 2"
  "\"line\": [0-9]+" "\"file\": \".*automodel_two_documents_second_malformed.yaml\"" "\"exit_status\": 0"
  -- ${MP} check ${R}/automodel_two_documents_second_malformed.yaml --model llama3.1-8b --system dgx-h100 --gpus 8
  --seq-len 4096 --format json)
# Bad input with --format json: the error's JSON on stdout, the message on stderr (exit 2).
meshplan_cli_case(explain_json_input_error 2 "\"error\": \\{" "\"field\": \"--vpp\"" "\"file\": null"
  "error: --vpp: expected an integer, found 'x'"
  -- ${MP} explain --model qwen3-30b-a3b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 512
  --framework megatron-bridge --vpp x --format json)

# explain --framework megatron-bridge: the layout flags read as an override file of their keys,
# judged by the same rules with the same messages as that recipe (the recipe mbridge_qwen3_30b_
# flex_no_overlap.yaml given as flags: the same rule failure and the same prediction).
add_test(NAME cli.explain_mb_flags_equal_recipe COMMAND bash -c "
  set -u
  J=('$<TARGET_FILE:meshplan>' explain --model qwen3-30b-a3b --system dgx-h100 --gpus 16 --format json)
  a=\$(\"\${J[@]}\" --recipe ${D}/mbridge_qwen3_30b_flex_no_overlap.yaml) 
  b=\$(\"\${J[@]}\" --seq-len 4096 --global-batch 512 --framework megatron-bridge --tp 4 --ep 8 --sequence-parallel --dispatcher flex --mbs 1 --dp-type ddp+distopt --set comm_overlap.tp_comm_overlap=true --set comm_overlap.overlap_grad_reduce=false)
  python3 -c 'import json,sys
a, b = json.loads(sys.argv[1]), json.loads(sys.argv[2])
for k in (\"rules\", \"time_s\", \"memory_gib\", \"layout\", \"ep_all_to_all\", \"tokens_per_s_per_gpu\", \"exit_status\"):
    assert a[k] == b[k], (k, a[k], b[k])
assert a[\"rules\"][\"failures\"][0][\"name\"] == \"mb_world_divisible_by_etp_ep_pp\", a[\"rules\"]
' \"\$a\" \"\$b\"")
meshplan_cli_case(explain_mb_flags_rule_message 1 "Megatron-Bridge layout, qwen3-30b-a3b" "layout: ddp\\+distopt tp4 pp1 cp1 ep8 dp4 mbs1 sp"
  "mb_world_divisible_by_etp_ep_pp: world_size \\(16\\) is not divisible by expert_tensor x expert x pipeline parallel \\(4 x 8 x 1 = 32\\)"
  -- ${MP} explain --model qwen3-30b-a3b --system dgx-h100 --gpus 16 --seq-len 4096 --global-batch 512
  --framework megatron-bridge --tp 4 --ep 8 --sequence-parallel --mbs 1 --dp-type ddp+distopt)
meshplan_cli_case(explain_mb_flags_vpp_pp_layout 0 "tp1 pp4 vpp2 cp1 ep1 dp2" "rules: valid"
  -- ${MP} explain --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64
  --framework megatron-bridge --pp 4 --vpp 2 --mbs 1 --dp-type ddp+distopt)
meshplan_cli_case(explain_mb_flag_value_names_flag 2 "<command line>: error: --etp: expected an integer.*found 'two'.*\\(model.expert_tensor_parallel_size\\)"
  -- ${MP} explain --model qwen3-30b-a3b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 512
  --framework megatron-bridge --etp two)
# --mb-recipe: the layout flags are overrides of that recipe function, at its own key paths (the
# Llama recipes' model.transformer.*), and imply --framework megatron-bridge; with --framework
# automodel it is refused.
meshplan_cli_case(explain_mb_recipe_llama_pp_flag 0 "Megatron-Bridge layout" "tp1 pp2 cp2 ep1 dp2" "rules: valid" "model.transformer.context_parallel_size=2"
  -- ${MP} explain --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64
  --mb-recipe llama31_8b_pretrain_config --pp 2)
meshplan_cli_case(explain_mb_recipe_with_automodel 2 "error: --mb-recipe: names a Megatron-Bridge recipe function; expected --framework megatron-bridge"
  -- ${MP} explain --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64
  --framework automodel --mb-recipe llama31_8b_pretrain_config --pp 2)
# --memory-profile megatron (Megatron-LM's estimate, no FSDP term) on an FSDP layout is refused
# rather than priced unsharded; the megatron-bridge variant only on Megatron-Core layouts.
meshplan_cli_case(explain_megatron_profile_fsdp2_refused 2
  "error: --memory-profile: megatron: Megatron-LM's estimate .theoretical_memory_usage.py. has no FSDP term.*expected --memory-profile pytorch"
  -- ${MP} explain --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64 --memory-profile megatron)
meshplan_cli_case(explain_megatron_profile_ddp 1 "rules: valid" "memory per GPU .megatron profile"
  -- ${MP} explain --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64 --strategy ddp --memory-profile megatron)
meshplan_cli_case(explain_mb_flag_without_framework 2 "error: --vpp: is a Megatron-Bridge layout flag; expected --framework megatron-bridge"
  -- ${MP} explain --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64 --vpp 2)
meshplan_cli_case(explain_automodel_flag_with_mb 2 "error: --local-batch: is an AutoModel layout flag"
  -- ${MP} explain --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64
  --framework megatron-bridge --local-batch 2)
# --flex-backend sets a key Megatron-Core reads only under the flex dispatcher: without
# --dispatcher flex (or a --mb-recipe function that sets flex) it is refused, naming both flags.
meshplan_cli_case(explain_mb_flex_backend_needs_flex 2
  "error: --flex-backend: sets model.moe_flex_dispatcher_backend, which Megatron-Core reads only with model.moe_token_dispatcher_type: flex; expected --dispatcher flex with it, found --dispatcher alltoall"
  -- ${MP} explain --model qwen3-30b-a3b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64
  --framework megatron-bridge --ep 8 --dispatcher alltoall --flex-backend hybridep)
meshplan_cli_case(explain_mb_flex_backend_default_dispatcher 2
  "error: --flex-backend: .*expected --dispatcher flex with it, found allgather, Megatron-Core's default"
  -- ${MP} explain --model qwen3-30b-a3b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64
  --framework megatron-bridge --ep 8 --flex-backend deepep)
meshplan_cli_case(explain_mb_flex_backend_with_flex 0 "rules: valid" "!error"
  -- ${MP} explain --model qwen3-30b-a3b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64
  --framework megatron-bridge --ep 8 --dispatcher flex --flex-backend hybridep --mbs 1 --recompute full --recompute-method uniform --recompute-num-layers 1)
meshplan_cli_case(explain_mb_set_needs_key_value 2 "error: --set: expected KEY=VALUE"
  -- ${MP} explain --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64
  --framework megatron-bridge --set tp_comm_overlap)

# A 64-stage layout: explain's memory table in blocks of stages, no line wider than 100 columns
# but the header's and the verdict's sentences.
add_test(NAME cli.explain_wide_layout_wrapped COMMAND bash -c "
  set -u
  out=\$('$<TARGET_FILE:meshplan>' explain --model llama3.1-405b --system dgx-h100 --gpus 1024 --seq-len 8192 --global-batch 512 --pp 64 --cp 16 --local-batch 512)
  wide=\$(grep -Ev '^meshplan explain:|most loaded GPU' <<<\"\$out\" | awk 'length(\$0) > 100' | wc -l)
  [ \"\$wide\" = 0 ] && grep -q '  term  *stage 60  *share  *stage 61  *share  *stage 62  *share  *stage 63  *share\$' <<<\"\$out\" || { echo \"\$out\" | awk 'length(\$0) > 100'; exit 1; }")

# --help shows the defaults.
meshplan_cli_case(plan_help_defaults 0 "--top INT:INT in \\[1 - 1000\\]=5" "!--headroom FLOAT:FLOAT in \\[0 - 0.9\\]=" "kept free .0..0.9. default: the framework's, 0.02 for Megatron-Bridge, 0.10 for AutoModel"
  "--format TEXT:\\{table,yaml,json\\}=table" "--framework TEXT:\\{automodel,megatron-bridge\\}=automodel"
  "!=-4611686018427387904" -- ${MP} plan --help)
meshplan_cli_case(explain_help_defaults 0 "--tp INT=1" "--strategy TEXT:\\{fsdp2,megatron_fsdp,ddp\\}=fsdp2"
  "--format TEXT:\\{table,json\\}=table" "!=-4611686018427387904" -- ${MP} explain --help)

# check's nearest fixes of an invalid recipe: fix 1 or 2 is the one an expert would pick, within
# 7% of plan's best throughput for the job (tests/cli/nearest_vs_plan.py). Qwen3-30B-A3B with EP
# 16 on 8 GPUs: EP 8 with recompute; DeepSeek-V3 TP 1 PP 16 EP 64 on 256 H100: a TP or PP change.
add_test(NAME cli.check_nearest_qwen3_ep16_on_8 COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/cli/nearest_vs_plan.py
  ${MP} ${D}/mb_qwen3_30b_ep16_8gpu.yaml qwen3-30b-a3b dgx-h100 8 4096 512 ep8_recompute)
add_test(NAME cli.check_nearest_deepseek_ep64_pp16_on_256 COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/cli/nearest_vs_plan.py
  ${MP} ${D}/mb_deepseek_v3_tp1_pp16_ep64_256gpu.yaml deepseek-v3 dgx-h100 256 4096 4096 tp_or_pp)
# AutoModel recipes with EP across nodes name model.backend.dispatcher: hybridep as a key (not a
# comment): check prices each recipe plan writes at plan's own step (the EP 16 recipe read with
# AutoModel's default deepep was 16.53 s against plan's 15.62 s).
add_test(NAME cli.plan_check_step_agree_automodel_ep_across_nodes COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/cli/plan_check_agree.py
  ${MP} ${CMAKE_CURRENT_BINARY_DIR}/plan_check_agree --model deepseek-v3 --system dgx-h100 --gpus 256 --seq-len 4096
  --global-batch 1024 --top 5)
# check ranks plan's own recipes as plan does, the tied ones faster than the first included (DDP
# 3.0% faster in expected step, listed third for its memory margin on 8 H200).
add_test(NAME cli.plan_check_rank_agree COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/cli/plan_check_rank.py
  ${MP} ${CMAKE_CURRENT_BINARY_DIR}/plan_check_rank --model llama3.1-8b --system dgx-h200 --gpus 8 --seq-len 4096
  --global-batch 64)
# A recipe that only divides with more GPUs says on how many it runs as written (EP 16 needs 16
# GPUs: the expert grid 1 x 16 x 1, dp 16); its one-edit fix says so too where it does not fit.
meshplan_cli_case(check_more_gpus_hint 1 "^  hint: as written it passes every rule and fits on 16 GPUs \\(dp 16\\)"
  "^# the one-edit fix .*; as it is it fits on 32 GPUs \\(dp 32: "
  -- ${MP} check ${D}/mb_qwen3_30b_ep16_8gpu.yaml --model qwen3-30b-a3b --system dgx-h100 --gpus 8 --headroom 0.1)
add_test(NAME cli.check_more_gpus_json COMMAND ${JSON_MATCHES} documents.0.more_gpus.gpus=16 documents.0.more_gpus.dp_size=16
  -- ${MP} check ${D}/mb_qwen3_30b_ep16_8gpu.yaml --model qwen3-30b-a3b --system dgx-h100 --gpus 8)
# AutoModel with deepep at EP 8 on 16 GB200 (4 GPUs per tray) breaks deepep_nvl_peers_in_node;
# the one key its message names, model.backend.dispatcher: hybridep, is a fix (at EP 8, written
# as the key), and the first fix (EP 4, faster) says what that key alone gives.
meshplan_cli_case(check_nearest_automodel_releases_dispatcher 1
  "^--- 2: 1 edit; model.backend.dispatcher: deepep -> hybridep$"
  "rule deepep_nvl_peers_in_node proposes model.backend.dispatcher: hybridep: this fix does not, since with it alone the recipe is valid and fits at 28413 tokens/s per GPU"
  "^# layout: fsdp2 tp1 pp1 cp1 ep8 dp16 lbs4 ac=none" "^    dispatcher: hybridep"
  -- ${MP} check ${CMAKE_SOURCE_DIR}/tests/data/cli/automodel_qwen3_30b_deepep_ep8_gb200.yaml --model qwen3-30b-a3b
  --system gb200-nvl72 --gpus 16)
# AutoModel's sequence_parallel with tp_size 1 is valid and silently off (no TP plan is applied).
meshplan_cli_case(check_automodel_sp_tp1_silently_off 0 "^valid: passes all [0-9]+ rules"
  "^  sequence_parallel: true does nothing with tp_size 1"
  -- ${MP} check ${CMAKE_SOURCE_DIR}/tests/data/cli/automodel_sp_tp1.yaml --model llama3.1-8b --system dgx-h100 --gpus 8)
# An out-of-range --seq-len is refused also where the recipe gives the value (it is not "unset").
meshplan_cli_case(check_seq_len_zero 2 "--seq-len: expected an integer in \\[1, 16777216\\], found '0'"
  -- ${MP} check ${CMAKE_SOURCE_DIR}/tests/data/recipes/mbridge_deepseek_v3_h100_256gpu_oom.yaml --model deepseek-v3
  --system dgx-h100 --gpus 256 --seq-len 0)
meshplan_cli_case(explain_global_batch_zero 2 "--global-batch: expected an integer in \\[1, 1073741824\\], found '0'"
  -- ${MP} explain --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 0)
# A valid recipe predicted out of memory is compared with the planner's first by throughput, not
# by an expected step that prices the out-of-memory as near-certain.
meshplan_cli_case(check_oom_recipe_against_plan 1
  "^against the planner .*this recipe's 100.0%\\), is predicted [0-9.]+% faster in throughput, and this recipe as written is predicted not to fit: "
  -- ${MP} check ${CMAKE_SOURCE_DIR}/tests/data/recipes/mbridge_deepseek_v3_h100_256gpu_oom.yaml --model deepseek-v3
  --system dgx-h100 --gpus 256)
# The first fix says whether it does what the failing rule's message proposes, and why not.
# At the default allocator's 10% headroom the first fix (TP 1, EP 16) leaves expert-TP alone; at
# Megatron-Bridge's 2% it sets it (TP 2, expert-TP 1).
meshplan_cli_case(check_rule_proposal_etp 1 "^# .*rule mb_world_divisible_by_etp_ep_pp proposes expert_tensor_parallel_size: 1: this fix does not, since with it alone the recipe is valid and fits at 3184 tokens/s per GPU.*: it ranks after it"
  -- ${MP} check ${CMAKE_SOURCE_DIR}/tests/data/recipes/mbridge_broken_qwen3_30b_moe.yaml --model qwen3-30b-a3b --system dgx-h100 --gpus 16 --headroom 0.1)
meshplan_cli_case(check_rule_proposal_etp_taken 1 "^--- 1: .*expert_tensor_parallel_size: null -> 1"
  "^# rule mb_world_divisible_by_etp_ep_pp proposes expert_tensor_parallel_size: 1: this fix does it$"
  -- ${MP} check ${CMAKE_SOURCE_DIR}/tests/data/recipes/mbridge_broken_qwen3_30b_moe.yaml --model qwen3-30b-a3b --system dgx-h100 --gpus 16)
meshplan_cli_case(check_rule_proposal_sp 1 "^# .*rule mb_sp_requires_tp proposes sequence_parallel: false: this fix does not, since with it alone the recipe is valid but needs 7[0-9.]+ GiB per GPU, above the 71.2 GiB usable"
  -- ${MP} check ${D}/mb_llama8b_sp_tp1.yaml --model llama3.1-8b --system dgx-h100 --gpus 8 --headroom 0.1)
meshplan_cli_case(check_nearest_one_key_fix_needs 1
  "^# the one-edit fix \\(expert_model_parallel_size: 16 -> 8\\) alone needs 9[0-9.]+ GiB per GPU, above the 71.2 GiB usable; it fits with .*recompute_granularity: null -> full"
  -- ${MP} check ${D}/mb_qwen3_30b_ep16_8gpu.yaml --model qwen3-30b-a3b --system dgx-h100 --gpus 8 --headroom 0.1)
# `meshplan serve`: an address it cannot bind, a port out of range (the API itself:
# tests/serve/server_test.cpp, tests/python, tests/browser).
meshplan_cli_case(serve_bad_host 2 "--host: cannot listen on 256.0.0.1:0" -- ${MP} serve --host 256.0.0.1 --port 0)
meshplan_cli_case(serve_bad_port 2 "--port: expected an integer in \\[0, 65535\\], found '70000'" -- ${MP} serve --port 70000)
# Architectures: an unsupported one is refused without a cross-family "did you mean";
# --generic-decoder plans it with a warning in every output; a hybrid model is refused.
set(A ${CMAKE_SOURCE_DIR}/tests/data/models/arch)
meshplan_cli_case(arch_unsupported_no_hint 2 "unsupported architecture 'Starcoder2ForCausalLM'" "!did you mean"
  "--generic-decoder plans it"
  -- ${MP} plan --model ${A}/starcoder2-3b.json --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64)
meshplan_cli_case(arch_generic_decoder_table 0 "^rank +strategy"
  "warning: model .*starcoder2-3b.json: architecture Starcoder2ForCausalLM is not supported: planned with --generic-decoder"
  -- ${MP} plan --model ${A}/starcoder2-3b.json --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64 --generic-decoder)
meshplan_cli_case(arch_generic_decoder_yaml 0 "# warning: model .*Starcoder2ForCausalLM is not supported"
  -- ${MP} plan --model ${A}/starcoder2-3b.json --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64 --generic-decoder --format yaml)
meshplan_cli_case(arch_generic_decoder_json 0 "\"model_warning\": \".*Starcoder2ForCausalLM is not supported"
  -- ${MP} plan --model ${A}/starcoder2-3b.json --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64 --generic-decoder --format json)
meshplan_cli_case(arch_generic_decoder_explain 0 "warning: model .*Starcoder2ForCausalLM is not supported"
  -- ${MP} explain --model ${A}/starcoder2-3b.json --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64 --generic-decoder)
meshplan_cli_case(arch_gemma2_plan_mb 0 "^rank +strategy" "!warning: model"
  -- ${MP} plan --model ${A}/gemma-2-2b.json --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64 --framework megatron-bridge)
meshplan_cli_case(arch_gemma2_plan_am 0 "^rank +strategy" "!warning: model"
  -- ${MP} plan --model ${A}/gemma-2-2b.json --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64 --framework automodel)
# A hybrid model (Nemotron 3 Nano: Mamba-2, attention and MoE blocks) is priced for Megatron-Bridge
# (Megatron-Core's HybridModel) and for AutoModel (its nemotron_v3 model); AutoModel's benchmark
# recipe checks valid and MambaContextParallel's head split is AutoModel's error.
meshplan_cli_case(arch_hybrid_plan_mb 0 "^rank +strategy" "!warning: model"
  -- ${MP} plan --framework megatron-bridge --model nemotron-3-nano --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64)
meshplan_cli_case(arch_hybrid_plan_am 0 "^rank +strategy" "fsdp2 +1 +1 +1 +8 " "!warning: model"
  -- ${MP} plan --framework automodel --model nemotron-3-nano --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64)
meshplan_cli_case(arch_hybrid_check_am 0 "valid: passes all" "predicted: step"
  -- ${MP} check ${CMAKE_SOURCE_DIR}/recipes/automodel-benchmarks/nemotron_3_nano_8gpu.yaml --model nemotron-3-nano --system dgx-h100 --gpus 8 --seq-len 4096)
meshplan_cli_case(arch_hybrid_check_am_cp 1 "mamba_num_heads .64. must be divisible by cp_size .128."
  -- ${MP} check ${D}/automodel_nemotron3_nano_cp128.yaml --model nemotron-3-nano --system dgx-h100 --gpus 128)
meshplan_cli_case(arch_hybrid_check_mb 0 "valid: passes all" "predicted: step"
  -- ${MP} check ${D}/mbridge_nemotron3_nano_pp2.yaml --model nemotron-3-nano --system dgx-h100 --gpus 16 --precision fp8)
meshplan_cli_case(arch_hybrid_check_pp8 1 "Number of layers .52. must be evenly divisible by pipeline-model-parallel-size .8. when no pipe separators"
  -- ${MP} check ${D}/mbridge_nemotron3_nano_pp8.yaml --model nemotron-3-nano --system dgx-h100 --gpus 8)
# Nemotron 3 Super (LatentMoE, an MTP block "*E"): priced for Megatron-Bridge and AutoModel; the perf recipe's layout (TP 2, SP, EP 64, MTP 2) checked; PP 3 on 88 layers fails
# Megatron-Core's hybrid pattern split.
meshplan_cli_case(arch_nemotron3_super_plan_mb 0 "^rank +strategy" "!warning: model"
  -- ${MP} plan --framework megatron-bridge --model nemotron-3-super --system gb200-nvl72 --gpus 64 --seq-len 8192 --global-batch 512)
meshplan_cli_case(arch_nemotron3_super_plan_am 0 "^rank +strategy" "!warning: model"
  -- ${MP} plan --framework automodel --model nemotron-3-super --system gb200-nvl72 --gpus 64 --seq-len 8192 --global-batch 512)
meshplan_cli_case(arch_nemotron3_super_check_mb 0 "valid: passes all" "predicted: step"
  -- ${MP} check ${D}/mbridge_nemotron3_super_ep64.yaml --model nemotron-3-super --system gb200-nvl72 --gpus 64 --precision fp8)
meshplan_cli_case(arch_nemotron3_super_check_pp3 1 "Number of layers .88. must be evenly divisible by pipeline-model-parallel-size .3."
  -- ${MP} check ${D}/mbridge_nemotron3_super_pp3.yaml --model nemotron-3-super --system dgx-h100 --gpus 24)
meshplan_cli_case(arch_nemotron3_ultra_plan_mb 0 "^rank +strategy" "!warning: model"
  -- ${MP} plan --framework megatron-bridge --model nemotron-3-ultra --system gb200-nvl72 --gpus 256 --seq-len 8192 --global-batch 256)
meshplan_cli_case(arch_glm45_air_plan_mb 0 "^rank +strategy"
  -- ${MP} plan --model ${A}/glm-4.5-air.json --system dgx-h100 --gpus 32 --seq-len 4096 --global-batch 256 --framework megatron-bridge)
meshplan_cli_case(arch_glm45_air_plan_am 0 "^rank +strategy"
  -- ${MP} plan --model ${A}/glm-4.5-air.json --system dgx-h100 --gpus 32 --seq-len 4096 --global-batch 256 --framework automodel)
meshplan_cli_case(arch_glm45_air_pp4 1 "num_layers 46 .*is not divisible by pipeline_model_parallel_size 4"
  -- ${MP} check ${D}/mbridge_glm45_air_pp4.yaml --model ${A}/glm-4.5-air.json --system dgx-h100 --gpus 32)
# Adapters of issue 28: Qwen3-Next / Qwen3.5 (Gated DeltaNet hybrids: priced by Megatron-Bridge
# and by AutoModel's PyTorch-eager terms), DeepSeek-V3.2 (AutoModel only), Gemma 3 VL's text
# backbone (the vision tower left out, said in every output), Ministral.
meshplan_cli_case(arch_qwen3_next_plan_mb 0 "^rank +strategy"
  -- ${MP} plan --model ${A}/qwen3-next-80b-a3b.json --system dgx-h100 --gpus 32 --seq-len 4096 --global-batch 256 --framework megatron-bridge --top 2)
# AutoModel prices them (memory and step time of every layout, EP only: no TP plan, no CP for
# Qwen3-Next): each row has its GiB/GPU and step_s.
meshplan_cli_case(arch_qwen3_next_plan_am 0 "^rank +strategy +tp +pp +cp +ep .* GiB/GPU .* step_s"
  "^1=? +fsdp2 +1 +[0-9]+ +1 +[0-9]+ +[0-9]+ .* [0-9]+[.][0-9] +[0-9.]+ +[0-9.]+ +[0-9]+[.][0-9]{3} " "!hybrid model"
  -- ${MP} plan --model ${A}/qwen3-next-80b-a3b.json --system dgx-h100 --gpus 16 --seq-len 4096 --global-batch 256 --framework automodel --top 2)
meshplan_cli_case(arch_qwen35_plan_mb 0 "^rank +strategy" "warning: model .*the vision tower .vision_config. is left out"
  -- ${MP} plan --model ${A}/qwen3.5-35b-a3b.json --system dgx-h100 --gpus 16 --seq-len 4096 --global-batch 256 --framework megatron-bridge --top 2)
meshplan_cli_case(arch_qwen35_plan_am 0 "^rank +strategy +tp +pp +cp +ep .* GiB/GPU .* step_s"
  "^1=? +fsdp2 +1 +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ .* [0-9]+[.][0-9] +[0-9.]+ +[0-9.]+ +[0-9]+[.][0-9]{3} "
  "warning: model .*the vision tower .vision_config. is left out" "!hybrid model"
  -- ${MP} plan --model ${A}/qwen3.5-35b-a3b.json --system dgx-h100 --gpus 16 --seq-len 4096 --global-batch 256 --framework automodel --top 2)
# AutoModel check judges a Gated DeltaNet hybrid by AutoModel's rules and prices it: Qwen3-Next's
# GDN layers have no CP path (moe/parallelizer.py apply_cp), Qwen3.5's do.
meshplan_cli_case(arch_qwen3_next_check_cp2_am 1 "gdn_cp_needs_cp_aware_linear_attn: cp_size=2 on Qwen3NextForCausalLM: apply_cp finds no CP-aware linear_attn on its 36 Gated DeltaNet layers"
  "memory: [0-9.]+ GiB per GPU predicted" "!not predicted"
  -- ${MP} check ${D}/automodel_qwen3_next_cp2.yaml --model ${A}/qwen3-next-80b-a3b.json --system dgx-h100 --gpus 16)
meshplan_cli_case(arch_qwen3_next_check_am 0 "valid: passes all" "memory: [0-9.]+ GiB per GPU predicted of [0-9.]+ GiB usable: fits"
  "predicted: step [0-9.]+ s, [0-9]+ tokens/s per GPU" "!not predicted"
  -- ${MP} check ${D}/automodel_qwen3_next_ep16.yaml --model ${A}/qwen3-next-80b-a3b.json --system dgx-h100 --gpus 16)
meshplan_cli_case(arch_qwen35_check_cp2_am 0 "valid: passes all" "memory: [0-9.]+ GiB per GPU predicted of [0-9.]+ GiB usable: fits"
  "predicted: step [0-9.]+ s, [0-9]+ tokens/s per GPU" "!not predicted"
  -- ${MP} check ${D}/automodel_qwen35_cp2.yaml --model ${A}/qwen3.5-35b-a3b.json --system dgx-h100 --gpus 16)
meshplan_cli_case(arch_qwen35_pp2_vpp12 1 "mb_vpp_divides_layers: layers per pipeline rank .20. must be divisible by virtual_pipeline_model_parallel_size 12"
  "memory: [0-9.]+ GiB per GPU predicted" "warning: model .*the vision tower .vision_config. is left out"
  -- ${MP} check ${D}/mbridge_qwen35_pp2_vpp12.yaml --model ${A}/qwen3.5-35b-a3b.json --system dgx-h100 --gpus 16)
meshplan_cli_case(arch_qwen35_tp4_cp8 1 "mb_gdn_tp_cp_key_heads: self.linear_num_key_heads=16 must be a multiple of .self.tensor_model_parallel_size=4 . self.context_parallel_size=8."
  -- ${MP} check ${D}/mbridge_qwen35_tp4_cp8.yaml --model ${A}/qwen3.5-35b-a3b.json --system dgx-h100 --gpus 32)
meshplan_cli_case(arch_deepseek_v32_plan_am 0 "^rank +strategy"
  -- ${MP} plan --model ${A}/deepseek-v3.2-exp.json --system dgx-h100 --gpus 256 --seq-len 4096 --global-batch 4096 --framework automodel --top 2)
meshplan_cli_case(arch_deepseek_v32_refused_mb 2 "Megatron-Bridge .067f987. has no bridge for DeepseekV32ForCausalLM"
  -- ${MP} plan --model ${A}/deepseek-v3.2-exp.json --system dgx-h100 --gpus 256 --seq-len 4096 --global-batch 4096 --framework megatron-bridge)
meshplan_cli_case(arch_deepseek_v32_check_am 1 "ep_divides_experts: n_routed_experts 256 must be divisible by expert_parallel_degree .ep_size. 48"
  -- ${MP} check ${D}/automodel_deepseek_v32_ep48.yaml --model ${A}/deepseek-v3.2-exp.json --system dgx-h100 --gpus 384)
meshplan_cli_case(arch_gemma3_vl_plan_mb 0 "^rank +strategy" "warning: model .*gemma-3-4b-it.json: the vision tower .vision_config. is left out"
  -- ${MP} plan --model ${A}/gemma-3-4b-it.json --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64 --framework megatron-bridge)
meshplan_cli_case(arch_gemma3_vl_plan_am_json 0 "\"model_warning\": \".*the vision tower .vision_config. is left out"
  -- ${MP} plan --model ${A}/gemma-3-4b-it.json --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64 --framework automodel --format json)
meshplan_cli_case(arch_gemma3_vl_check_tp16 1 "mb_tp_divides_heads: num_attention_heads .8. must be a multiple of tensor_model_parallel_size .16."
  "the vision tower .vision_config. is left out"
  -- ${MP} check ${D}/mbridge_gemma3_4b_tp16.yaml --model ${A}/gemma-3-4b-it.json --system dgx-h100 --gpus 16)
meshplan_cli_case(arch_ministral_plan_mb 0 "^rank +strategy" "!warning: model"
  -- ${MP} plan --model ${A}/ministral-8b-2410.json --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64 --framework megatron-bridge)
meshplan_cli_case(arch_ministral_plan_am 0 "^rank +strategy" "!warning: model"
  -- ${MP} plan --model ${A}/ministral-8b-2410.json --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64 --framework automodel)
meshplan_cli_case(arch_ministral_pp5 1 "mb_pp_divides_layers: num_layers 36 is not divisible by pipeline_model_parallel_size 5"
  -- ${MP} check ${D}/mbridge_ministral_pp5.yaml --model ${A}/ministral-8b-2410.json --system dgx-h100 --gpus 40)
# Llama 4 (Llama4ForConditionalGeneration's text_config): AutoModel trains it as the transformers
# module (no EP, no PP; CP only up to one attention chunk); Megatron-Bridge has no bridge for it.
meshplan_cli_case(arch_llama4_scout_plan_am 0 "^rank +strategy" "warning: model .*llama-4-scout-17b-16e.json: the vision tower .vision_config. is left out"
  -- ${MP} plan --model ${A}/llama-4-scout-17b-16e.json --system dgx-h100 --gpus 64 --seq-len 8192 --global-batch 64 --framework automodel)
meshplan_cli_case(arch_llama4_maverick_plan_am 0 "^rank +strategy"
  -- ${MP} plan --model ${A}/llama-4-maverick-17b-128e.json --system dgx-h100 --gpus 128 --seq-len 8192 --global-batch 128 --framework automodel --top 2)
meshplan_cli_case(arch_llama4_refused_mb 2 "Megatron-Bridge .067f987. has no bridge for Llama4ForConditionalGeneration"
  -- ${MP} plan --model ${A}/llama-4-scout-17b-16e.json --system dgx-h100 --gpus 64 --seq-len 8192 --global-batch 64 --framework megatron-bridge)
meshplan_cli_case(arch_llama4_check_ep8_am 1 "ep_needs_automodel_moe: Expert parallelism .ep_size=8. requires a MoE model, but Llama4ForConditionalGeneration does not inherit from MoEFSDPSyncMixin"
  -- ${MP} check ${D}/automodel_llama4_scout_ep8.yaml --model ${A}/llama-4-scout-17b-16e.json --system dgx-h100 --gpus 64)
meshplan_cli_case(arch_llama4_check_cp2_am 1 "cp_no_chunked_attention: cp_size=2 with attention_chunk_size=8192 on 36 layers and seq_len 16384"
  -- ${MP} check ${D}/automodel_llama4_scout_cp2.yaml --model ${A}/llama-4-scout-17b-16e.json --system dgx-h100 --gpus 64)
# DeepSeek-V4 Flash (DeepseekV4ForCausalLM): priced under Megatron-Bridge (cost/dsv4.hpp) and
# under AutoModel (its deepseek_v4 model: cost/dsv4_pytorch.cpp; plan writes backend.attn
# tilelang); Megatron-Core's (dev) TP 1, hash-layer pipeline and CP rules and AutoModel's TP and CP
# rules reproduced by check. The CP 8 x PP 4 recipe is AutoModel's own example (it fits).
meshplan_cli_case(arch_deepseek_v4_plan_mb 0 "^rank +strategy"
  -- ${MP} plan --model ${A}/deepseek-v4-flash.json --system gb200-nvl72 --gpus 128 --seq-len 4096 --global-batch 2048 --framework megatron-bridge --precision fp8 --top 2)
meshplan_cli_case(arch_deepseek_v4_plan_am 0 "^rank +strategy" "fsdp2 +1 +1 +1 +[0-9]+ +128 "
  -- ${MP} plan --model ${A}/deepseek-v4-flash.json --system dgx-h100 --gpus 128 --seq-len 4096 --global-batch 256 --framework automodel --top 2)
meshplan_cli_case(arch_deepseek_v4_plan_am_yaml 0 "^ +dispatcher: hybridep$" "^ +attn: tilelang$"
  -- ${MP} plan --model ${A}/deepseek-v4-flash.json --system dgx-h100 --gpus 128 --seq-len 4096 --global-batch 256 --framework automodel --top 1 --format yaml)
meshplan_cli_case(arch_deepseek_v4_check_cp8_am 0 "valid: passes all" "memory: [0-9.]+ GiB per GPU predicted of 71.2 GiB usable: fits"
  -- ${MP} check ${R}/automodel_deepseek_v4_flash_cp8_pp4_128gpu_h100.yaml --model ${A}/deepseek-v4-flash.json --system dgx-h100 --gpus 128)
meshplan_cli_case(arch_deepseek_v4_check_cp2_fix_am 1 "dsv4_cp_needs_tilelang" "^--- 1: .*model.backend.attn: .not tilelang. -> tilelang"
  "^# predicted memory per GPU: [0-9.]+ GiB of 71.2 GiB usable .[0-9.]+ GiB headroom left"
  -- ${MP} check ${D}/automodel_deepseek_v4_flash_cp2_pp4_16k.yaml --model deepseek-v4-flash --system dgx-h100 --gpus 128)
meshplan_cli_case(arch_deepseek_v4_check_tp2_am 1 "moe_no_tensor_parallel: tp_size=2 on MoE model DeepseekV4ForCausalLM"
  -- ${MP} check ${D}/automodel_deepseek_v4_flash_tp2.yaml --model deepseek-v4-flash --system gb200-nvl72 --gpus 128)
meshplan_cli_case(arch_deepseek_v4_check_mb 0 "valid: passes all" "memory: [0-9.]+ GiB per GPU predicted"
  -- ${MP} check ${D}/mbridge_deepseek_v4_flash_128gpu_gb200.yaml --model deepseek-v4-flash --system gb200-nvl72 --gpus 128 --precision fp8)
meshplan_cli_case(arch_deepseek_v4_check_am 0 "valid: passes all" "memory: [0-9.]+ GiB per GPU predicted"
  -- ${MP} check ${D}/automodel_deepseek_v4_flash_ep64.yaml --model deepseek-v4-flash --system gb200-nvl72 --gpus 128)
meshplan_cli_case(arch_deepseek_v4_check_cp2_am 1 "dsv4_cp_needs_tilelang: Context parallelism .cp_size=2. for DeepseekV4ForCausalLM requires the TileLang attention backend"
  -- ${MP} check ${D}/automodel_deepseek_v4_flash_cp2.yaml --model deepseek-v4-flash --system gb200-nvl72 --gpus 128)
meshplan_cli_case(arch_deepseek_v4_check_tp2 1 "mb_dsv4_tp1: DSv4 Hybrid Attention only supports TP size 1 .tensor_model_parallel_size=2."
  -- ${MP} check ${D}/mbridge_deepseek_v4_flash_tp2.yaml --model deepseek-v4-flash --system gb200-nvl72 --gpus 128)
meshplan_cli_case(arch_deepseek_v4_check_pp4 1 "mb_dsv4_hash_layers_need_pp_layout: pipeline_model_parallel_layout must be set when using hash MoE layers"
  -- ${MP} check ${D}/mbridge_deepseek_v4_flash_pp4.yaml --model deepseek-v4-flash --system gb200-nvl72 --gpus 128)
meshplan_cli_case(arch_deepseek_v4_check_pp2_layout 1 "mb_dsv4_hash_layers_first_stage: .*moe_n_hash_layers=3 but that stage holds 2 decoder layers"
  -- ${MP} check ${D}/mbridge_deepseek_v4_flash_pp2_layout.yaml --model deepseek-v4-flash --system gb200-nvl72 --gpus 128)
# A valid recipe of each priced adapter, as plan writes it, checked back: exit 0 on both frameworks.
add_test(NAME cli.check_adapters_plan_recipes COMMAND bash -c "
  set -u; d=\$(mktemp -d); A=${A}
  for c in 'ministral-8b-2410.json 8 64 automodel' 'ministral-8b-2410.json 8 64 megatron-bridge' 'gemma-3-4b-it.json 8 64 automodel' 'gemma-3-4b-it.json 8 64 megatron-bridge' 'deepseek-v3.2-exp.json 256 4096 automodel' 'glm-4.5-air.json 32 256 megatron-bridge' 'glm-4.5-air.json 32 256 automodel' 'llama-4-scout-17b-16e.json 64 64 automodel' 'deepseek-v2-lite.json 16 256 automodel' 'deepseek-v2-lite.json 16 256 megatron-bridge' 'gemma-2-2b.json 8 64 automodel' 'gemma-2-2b.json 8 64 megatron-bridge' 'gemma-3-1b.json 8 64 automodel' 'gemma-3-1b.json 8 64 megatron-bridge' 'granite-3.0-8b.json 8 64 automodel' 'mistral-nemo-12b.json 8 64 automodel' 'mistral-nemo-12b.json 8 64 megatron-bridge' 'moonlight-16b-a3b.json 16 256 automodel' 'moonlight-16b-a3b.json 16 256 megatron-bridge' 'olmo-2-1124-7b.json 8 64 automodel' 'olmoe-1b-7b-0924.json 8 64 automodel' 'olmoe-1b-7b-0924.json 8 64 megatron-bridge' 'phi-3-mini-4k.json 8 64 automodel' 'qwen3-next-80b-a3b.json 32 256 megatron-bridge' 'qwen3.5-35b-a3b.json 16 256 megatron-bridge' 'qwen3-next-80b-a3b.json 16 256 automodel' 'qwen3.5-35b-a3b.json 16 256 automodel' 'deepseek-v4-flash.json 128 2048 megatron-bridge'; do
    set -- \$c; rm -f \$d/r.yaml
    '$<TARGET_FILE:meshplan>' plan --framework \$4 --model \$A/\$1 --system dgx-h100 --gpus \$2 --seq-len 4096 --global-batch \$3 --top 1 --out \$d/r.yaml >/dev/null 2>&1 || { echo \"plan \$c\"; exit 1; }
    '$<TARGET_FILE:meshplan>' check \$d/r.yaml --model \$A/\$1 --system dgx-h100 --gpus \$2 >\$d/out.txt 2>&1 || { echo \"check \$c\"; cat \$d/out.txt; exit 1; }
  done")
# Each adapter's model with a TP that does not divide its attention heads: check exits 1 with the
# framework's head-divisibility rule (Megatron-Bridge where it bridges the architecture, else AutoModel).
add_test(NAME cli.check_adapters_tp_heads COMMAND bash -c "
  set -u; d=\$(mktemp -d); A=${A}
  for c in 'gemma-2-2b.json 16 mbridge 8' 'gemma-3-1b.json 8 mbridge 4' 'mistral-nemo-12b.json 64 mbridge 32' 'deepseek-v2-lite.json 32 mbridge 16' 'moonlight-16b-a3b.json 32 mbridge 16' 'olmoe-1b-7b-0924.json 32 mbridge 16' 'qwen3-next-80b-a3b.json 32 mbridge 16' 'granite-3.0-8b.json 64 automodel 32' 'olmo-2-1124-7b.json 64 automodel 32' 'phi-3-mini-4k.json 64 automodel 32' 'gemma-2-2b.json 16 automodel 8'; do
    set -- \$c; sed \"s/TP/\$2/\" ${D}/\$3_tp_heads_template.yaml > \$d/r.yaml
    '$<TARGET_FILE:meshplan>' check \$d/r.yaml --model \$A/\$1 --system dgx-h100 --gpus \$2 >\$d/out.txt 2>&1; rc=\$?
    [ \$rc -eq 1 ] || { echo \"check \$c: exit \$rc\"; cat \$d/out.txt; exit 1; }
    grep -Eq \"tp_divides_heads: num_attention_heads .\$4. must be (a multiple of tensor_model_parallel_size|divisible by tp_size) .\$2.\" \$d/out.txt || { echo \"check \$c\"; cat \$d/out.txt; exit 1; }
  done")
# Megatron-Bridge (067f987) has no bridge for Phi-3, Granite or OLMo 2: plan refuses them, naming AutoModel.
foreach(m phi-3-mini-4k granite-3.0-8b olmo-2-1124-7b)
  meshplan_cli_case(arch_${m}_refused_mb 2 "Megatron-Bridge .067f987. has no bridge for .*--framework automodel"
    -- ${MP} plan --model ${A}/${m}.json --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64 --framework megatron-bridge)
endforeach()
# Each document of a multi-document plan file carries its own '# recipe function:' header, and
# check reads it for every document (the blank lines and '---' before it skipped), not the first only.
add_test(NAME cli.check_multi_document_recipe_function COMMAND bash -c "
  set -u; d=\$(mktemp -d)
  '$<TARGET_FILE:meshplan>' plan --framework megatron-bridge --model qwen3-30b-a3b --system dgx-h100 --gpus 16 --seq-len 4096 --global-batch 512 --top 2 --out \$d/r.yaml >/dev/null 2>&1 || exit 1
  out=\$('$<TARGET_FILE:meshplan>' check \$d/r.yaml --model qwen3-30b-a3b --system dgx-h100 --gpus 16) || exit 1
  [ \$(grep -c '^# recipe function: qwen3_30b_a3b_pretrain_config' \$d/r.yaml) -eq 2 ] || { cat \$d/r.yaml; exit 1; }
  [ \$(echo \"\$out\" | grep -c '^valid: passes all') -eq 2 ] || { echo \"\$out\"; exit 1; }
  ! echo \"\$out\" | grep -q 'no recipe function named'")

# Every option of every command that takes a value shows its default in --help (CLI11's
# TYPE=VALUE, or a description that says it), but outputs and inputs done only when given.
add_test(NAME cli.help_shows_defaults COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/cli/help_defaults.py ${MP})
# Megatron FSDP's ZeRO-2 (optim_grads) is accepted and priced as it shards: weights whole
# (8.03e9 x 2 B = 14.96 GiB), fp32 gradients over DP 8 (3.74 GiB), two layers' gradients unsharded.
meshplan_cli_case(explain_mb_megatron_fsdp_optim_grads 0 "passes all 81 Megatron-Bridge rules" "weights +14\\.96"
  "gradients +3\\.74" "FSDP / optimizer buffers +1\\.87"
  -- ${MP} explain --model llama3.1-8b --system dgx-h100 --gpus 8 --recipe ${R}/mbridge_megatron_fsdp_optim_grads.yaml)
# optim_grads_params with the weight-hash check is refused as Megatron-Bridge asserts.
meshplan_cli_case(check_mb_megatron_fsdp_weight_hash 1 "mb_megatron_fsdp_weight_hash: train.check_weight_hash_across_dp_replicas_interval is not supported"
  -- ${MP} check ${R}/mbridge_megatron_fsdp_weight_hash.yaml --model llama3.1-8b --system dgx-h100 --gpus 8)
# A recipe function that leaves comm_overlap None (Qwen3 8B): the header's command line
# force-adds the comm_overlap keys after the class to build, as the launch script does (a plain
# comm_overlap.<key>= fails in run_recipe.py: "Could not override").
meshplan_cli_case(plan_mb_command_line_comm_overlap_none 0
  "# command line: .*\\+\\+comm_overlap._target_=megatron.bridge.training.comm_overlap.CommOverlapConfig \\+\\+comm_overlap.tp_comm_overlap="
  "!# command line: .* comm_overlap.tp_comm_overlap="
  -- ${MP} plan --framework megatron-bridge --model qwen3-8b --system dgx-h100 --gpus 64 --seq-len 4096 --global-batch 512 --format yaml --top 1)
# AutoModel megatron_fsdp's zero_dp_strategy 2 is priced as it shards: weights whole
# (8.03e9 x 2 B = 14.96 GiB), fp32 gradients over DP 8 (3.74 GiB); 0..3 only.
meshplan_cli_case(explain_am_megatron_fsdp_zero2 0 "weights +14\\.96" "gradients +3\\.74"
  -- ${MP} explain --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --recipe ${R}/automodel_megatron_fsdp_zero2.yaml)
meshplan_cli_case(check_am_megatron_fsdp_zero5 2 "zero_dp_strategy.*5"
  -- ${MP} check ${R}/automodel_megatron_fsdp_zero5.yaml --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096)

# MFU is against the GPU's dense BF16 peak whatever the precision; FP8 and FP4 runs also print it
# against their own precision's dense peak (explain, check, the recipe headers, the tables).
meshplan_cli_case(explain_mfu_bf16_peak_only 0 "model TFLOP/s per GPU, MFU [0-9.]+% of the BF16 dense peak$" "!dense peak \\("
  -- ${MP} explain --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64 --defer-fsdp-grad-sync false)
meshplan_cli_case(explain_mfu_fp8_both_peaks 0
  "model TFLOP/s per GPU, MFU [0-9.]+% of the BF16 dense peak \\([0-9.]+% of the FP8 dense peak\\)$"
  -- ${MP} explain --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64 --defer-fsdp-grad-sync false --precision fp8)
meshplan_cli_case(check_mfu_fp8_both_peaks 0
  "^predicted: step .* MFU [0-9.]+% of the BF16 dense peak \\([0-9.]+% of the FP8 dense peak\\)$"
  -- ${MP} check ${R}/mbridge_1_9d_llama3_70b_pretrain_64gpu_gb200_fp8cs.yaml --model llama3-70b --system gb200-nvl72 --gpus 64)
meshplan_cli_case(plan_table_mfu_fp8_columns 0 " TFLOP/s +MFU% +MFU8%$"
  -- ${MP} plan --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64 --precision fp8 --top 3)
meshplan_cli_case(plan_table_mfu_bf16_no_own_column 0 " TFLOP/s +MFU%$" "!MFU8%"
  -- ${MP} plan --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64 --top 3)
meshplan_cli_case(plan_recipe_header_mfu_fp8_automodel 0
  "^# predicted step: .* model TFLOP/s/GPU, MFU [0-9.]+% of the BF16 dense peak \\([0-9.]+% of the FP8 dense peak\\)$"
  -- ${MP} plan --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64 --precision fp8 --top 1 --format yaml)
meshplan_cli_case(plan_recipe_header_mfu_fp8_megatron_bridge 0
  "^# predicted memory per GPU: .* tokens/s/GPU, MFU [0-9.]+% of the BF16 dense peak \\([0-9.]+% of the FP8 dense peak\\)$"
  -- ${MP} plan --framework megatron-bridge --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64 --precision fp8 --top 1 --format yaml)
meshplan_cli_case(plan_json_mfu_precision_peak 0 "\"mfu\": 0\\.[0-9]+" "\"mfu_precision_peak\": 0\\.[0-9]+" "\"precision_peak\": \"FP8\"" "!mfu_bf16_peak"
  -- ${MP} plan --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64 --precision fp8 --top 1 --format json)
meshplan_cli_case(sweep_mfu_fp8_columns 0 "tok/s/GPU +MFU% +MFU8%  best layout$" "^ +8 +4096 .* [0-9.]+ +[0-9.]+  (fsdp2|ddp|megatron_fsdp) "
  -- ${MP} plan --model llama3.1-8b --system dgx-h100 --gpus 8 --sweep-seq 2048,4096 --global-batch 64 --precision fp8)
# ROCm GPUs (hwdb platform: rocm): no dispatcher built for CUDA alone. AutoModel names the torch
# dispatcher where EP > 1; Megatron-Bridge's DeepSeek-V3 recipe function's HybridEP becomes alltoall, said why.
meshplan_cli_case(rocm_torch_dispatcher_am 0 "dispatcher: torch" "this GPU runs ROCm"
  -- ${MP} plan --framework automodel --model qwen3-30b-a3b --system mi300x-8 --gpus 16 --seq-len 4096 --global-batch 256 --format yaml)
meshplan_cli_case(rocm_alltoall_mb 0 "hybridep\\) does not run on AMD Instinct MI300X 192GB \\(DeepEP and HybridEP are CUDA libraries; it runs ROCm\\): alltoall instead where EP > 1" "moe_token_dispatcher_type: alltoall"
  -- ${MP} plan --framework megatron-bridge --model deepseek-v3 --system mi300x-8 --gpus 256 --seq-len 4096 --global-batch 1024 --format yaml)
# A sweep point with no valid layout names the rules that refused the most candidates.
meshplan_cli_case(sweep_no_valid_layout_rules 1 "4096 +128  no valid layout; most common: global_batch_divisible \\([0-9]+\\)"
  -- ${MP} plan --model qwen3-30b-a3b --system dgx-h100 --sweep-gpus 8,4096 --seq-len 128 --global-batch 1)
