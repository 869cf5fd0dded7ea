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
meshplan_cli_case(list_gpus 0 "h200" -- ${MP} list gpus)

# Output files: whole or nothing, never replaced without --force.
add_test(NAME cli.out_file_not_overwritten COMMAND bash -c "
  set -u; f=\$(mktemp -d)/recipes.yaml; echo keep > \$f
  '$<TARGET_FILE:meshplan>' plan --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64 --out \$f; rc=\$?
  [ \$rc -eq 2 ] && [ \"\$(cat \$f)\" = keep ] || { echo rc=\$rc; cat \$f; exit 1; }
  '$<TARGET_FILE:meshplan>' plan --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64 --out \$f --force >/dev/null || exit 1
  grep -q 'distributed:' \$f && [ \$(ls \$(dirname \$f) | wc -l) -eq 1 ]")

# No layout satisfies the request: exit 1 with the reason.
meshplan_cli_case(plan_405b_does_not_fit 1 "no layout fits in memory: the smallest need is [0-9.]+ GiB per GPU" "above the usable"
  -- ${MP} plan --model llama3.1-405b --system dgx-h100 --gpus 8 --seq-len 8192 --global-batch 64)
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
