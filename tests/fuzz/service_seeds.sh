#!/usr/bin/env bash
# Writes the seed inputs of the service fuzz targets (tests/fuzz/corpus/{sim,train,eval}_service/)
# from text-format requests (docs/RELIABILITY.md, "Fuzzing"): each input is the target's method
# byte(s), then the request serialized by protoc. Rerun after changing a seed below; regression
# inputs found by fuzzing are kept as the fuzzer wrote them and are not listed here.
set -euo pipefail
cd "$(dirname "$0")/../.."

# seed TARGET NAME PREFIX MESSAGE TEXT: PREFIX is printf text (e.g. '\x01'), MESSAGE a roboloop.v1 type.
seed() {
  local target=$1 name=$2 prefix=$3 message=$4 text=$5
  { printf "$prefix"; printf '%s' "$text" | protoc -I proto --encode="roboloop.v1.$message" proto/roboloop/v1/*.proto; } \
    > "tests/fuzz/corpus/$target/$name"
}
S=sim_service
seed $S list_tasks '\x00' ListTasksRequest ''
seed $S rollout_expert '\x01' RolloutRequest 'task: "cartpole-swingup" policy: "expert" num_episodes: 2 max_steps: 20'
seed $S rollout_random_threads '\x01' RolloutRequest 'task: "reacher" policy: "random" policy_seed: 7 base_seed: 3 first_episode: 10 num_episodes: 4 envs: 2 threads: 2 max_steps: 16 overlap_inference: true'
seed $S rollout_robust_trajectories '\x01' RolloutRequest 'task: "pendulum-swingup" policy: "random" num_episodes: 2 max_steps: 10 record_trajectories: true robustness { action_noise_std: 0.1 action_delay: 2 body_mass { low: 0.8 high: 1.2 } geom_friction { low: 0.5 high: 1.5 } actuator_gain { low: 0.9 high: 1.1 } }'
seed $S rollout_obs_noise '\x01' RolloutRequest 'task: "cartpole-balance" policy: "expert" num_episodes: 1 max_steps: 8 robustness { obs_noise_std { key: "qpos" value: 0.01 } }'
seed $S rollout_vision '\x01' RolloutRequest 'task: "reach-vision" policy: "expert" num_episodes: 1 max_steps: 4 record_trajectories: true'
seed $S rollout_push '\x01' RolloutRequest 'task: "push" policy: "expert" num_episodes: 1 max_steps: 12'
seed $S rollout_checkpoint_refused '\x01' RolloutRequest 'task: "cartpole-swingup" policy: "model@champion" num_episodes: 1 chunk_execution: "receding_horizon:2"'
seed $S rollout_unknown_task '\x01' RolloutRequest 'task: "no-such-task" policy: "expert" num_episodes: 1'
seed $S rollout_bad_range '\x01' RolloutRequest 'task: "cartpole-swingup" policy: "random" first_episode: -1 num_episodes: 0 envs: 99'
seed $S collect_expert '\x02' CollectRequest 'rollout { task: "cartpole-swingup" policy: "expert" num_episodes: 2 max_steps: 20 } output_path: "out/collect.hdf5"'
seed $S collect_success_only '\x02' CollectRequest 'rollout { task: "reacher" policy: "expert" num_episodes: 3 max_steps: 30 envs: 3 } output_path: "s.hdf5" success_only: true'
seed $S collect_failures_only_overwrite '\x02' CollectRequest 'rollout { task: "cartpole-swingup" policy: "random" num_episodes: 2 max_steps: 10 } output_path: "seed.hdf5" failures_only: true overwrite: true'
seed $S collect_vision '\x02' CollectRequest 'rollout { task: "reach-vision" policy: "expert" num_episodes: 1 max_steps: 3 } output_path: "v.hdf5"'
seed $S collect_escape '\x02' CollectRequest 'rollout { task: "cartpole-swingup" policy: "expert" num_episodes: 1 } output_path: "../escape.hdf5"'
seed $S collect_register_refused '\x02' CollectRequest 'rollout { task: "cartpole-swingup" policy: "expert" num_episodes: 1 } output_path: "r.hdf5" register_as: "demos" parent_refs: "x:v1"'
seed $S relabel_seed '\x03' RelabelRequest 'input_path: "seed.hdf5" output_path: "relabeled.hdf5"'
seed $S relabel_task_overwrite '\x03' RelabelRequest 'input_path: "seed.hdf5" output_path: "seed.hdf5" task: "cartpole-swingup" overwrite: true'
seed $S relabel_missing '\x03' RelabelRequest 'input_path: "absent.hdf5" output_path: "o.hdf5" policy: "dagger"'
seed $S relabel_ref_refused '\x03' RelabelRequest 'input_ref: "demos:v1" output_path: "o.hdf5" register_as: "relabeled"'
T=train_service
seed $T train_mlp '\x00\x00' TrainRequest 'config { dataset: "demos.hdf5" model: "m" policy { kind: "mlp" hidden: 64 hidden: 64 activation: "gelu" } steps: 10 batch_size: 32 }'
seed $T train_transformer_auto_gpus '\x00\x02' TrainRequest 'config { dataset: "demos.hdf5" datasets: "more/*.hdf5" policy { kind: "transformer" d_model: 64 layers: 2 heads: 4 chunk: 8 history: 2 flow_matching: true } batch_size: 64 device: "auto" precision: "bf16" cuda_graph: "on" } world_size: 4'
seed $T train_auto_uneven '\x00\x03' TrainRequest 'config { dataset: "d" batch_size: 7 device: "auto" } world_size: 4'
seed $T train_cuda_too_few '\x00\x01' TrainRequest 'config { dataset: "d" device: "cuda" precision: "fp8" fp8_scaling: "rowwise" } world_size: 2'
seed $T train_optimizer '\x00\x00' TrainRequest 'config { dataset: "demos:v3" resume: "m:v2" optimizer { lr: 0.001 weight_decay: 0.01 warmup_steps: 5 min_lr_ratio: 0.1 clip_norm: 1 ema_decay: 0.999 bf16: true } data_cache_mb: 0.5 split: "train" validation_split: "valid" validate_every: 3 rendezvous_timeout_s: 5 cuda_graph: "sometimes" }'
seed $T train_no_dataset '\x00\x00' TrainRequest 'config { steps: 1 }'
seed $T train_nan '\x00\x00' TrainRequest 'config { dataset: "d" optimizer { lr: nan clip_norm: inf } data_cache_mb: -inf }'
seed $T train_odd_strings '\x00\x00' TrainRequest 'config { dataset: "a\"b\\\\c\u2028d: {x}" model: "- [y]" obs_features: "#comment" obs_features: "&anchor *alias" action_feature: "\u0001\t\n" }'
seed $T train_dataset_paths '\x00\x00' TrainRequest 'config { dataset: "runs/*.hdf5" datasets: "demos:v2" datasets: "lerobot/pusht" datasets: "d.h5" }'
seed $T train_dataset_outside '\x00\x00' TrainRequest 'config { dataset: "../d.hdf5" datasets: "/srv/d.hdf5" }'
seed $T cancel '\x01\x00' CancelTrainRequest 'run_id: "00000000-0000-0000-0000-000000000000"'
E=eval_service
seed $E evaluate_cached '\x00' EvaluateRequest 'checkpoint_ref: "fuzz-model:v1" protocol_name: "fuzz-gate"'
seed $E evaluate_forced '\x00' EvaluateRequest 'checkpoint_ref: "fuzz-model@latest" protocol_name: "fuzz-gate" force: true'
seed $E evaluate_foreign_endpoint '\x00' EvaluateRequest 'checkpoint_ref: "fuzz-model:v1" protocol_name: "fuzz-gate" sim_endpoints: "localhost:1"'
seed $E evaluate_inline '\x00' EvaluateRequest 'checkpoint_ref: "fuzz-model@champion" protocol { name: "inline" task: "cartpole-swingup" seed_start: 5 episodes: 3 max_steps: 10 execution { chunk { mode: RECEDING_HORIZON receding_steps: 1 } } robustness { action_noise_std: 0.05 } }'
seed $E evaluate_unknown_protocol '\x00' EvaluateRequest 'checkpoint_ref: "fuzz-model:v1" protocol_name: "no-such-protocol"'
seed $E evaluate_unknown_checkpoint '\x00' EvaluateRequest 'checkpoint_ref: "other:v9" protocol_name: "fuzz-gate"'
seed $E leaderboard '\x01' LeaderboardRequest 'task: "cartpole-swingup" top: 1 metric: METRIC_MEAN_RETURN'
seed $E leaderboard_filters '\x01' LeaderboardRequest 'model: "fuzz-model" alias: "latest" since_unix_us: 1 until_unix_us: 5000 metric: METRIC_SUCCESS_RATE top: -3'
seed $E compare '\x02' CompareRequest 'candidate: "v2" baseline: "v1" alpha: 0.1'
seed $E promote '\x03' PromoteCandidateRequest 'model: "fuzz-model" protocol_name: "fuzz-gate"'
seed $E promote_candidate '\x03' PromoteCandidateRequest 'model: "fuzz-model" candidate: "fuzz-model:v1" protocol_name: "fuzz-gate" alpha: 0.2 sim_endpoints: "10.0.0.1:7072"'
seed $E compare_protocol_hash '\x02' CompareRequest 'candidate: "v1" baseline: "v2" protocol_hash: "0"'
seed $E regression_protocol_path '\x00' EvaluateRequest 'checkpoint_ref: "fuzz-model:v1" protocol_name: "fuzz-gate.yaml"'
seed $E get_protocol '\x04' GetProtocolRequest 'protocol_name: "fuzz-gate"'
seed $E get_protocol_unknown '\x04' GetProtocolRequest 'protocol_name: "no-such-protocol"'
seed $E get_protocol_path '\x04' GetProtocolRequest 'protocol_name: "../protocols/fuzz-gate.yaml"'
