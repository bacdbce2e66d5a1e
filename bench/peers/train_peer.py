#!/usr/bin/env python3
"""The training benchmark's peer (issue 6, req 10): roboloop's transformer policy written as a
plain eager PyTorch loop (the project environment's torch 2.11 + h5py of python/pins.txt, nothing else).

Model: obs tokens (Linear obs -> d_model + learned positions) then learned action-query tokens,
pre-norm encoder blocks (LayerNorm, fused qkv, masked softmax attention, projection, LayerNorm,
GELU FFN), final LayerNorm and a linear head over the action tokens. Attention runs over all
history + chunk slots with the prefix-LM mask of roboloop's padded path: observation queries see
the real observation keys, action queries see the real observation keys and the action keys up
to themselves, every query sees itself. Loss: per-sample mean squared error over valid chunk
steps, averaged over samples. AdamW (decay on weight matrices only; fused on CUDA), warm-up-free
cosine schedule, gradient clipping at norm 1, fp32 unless --bf16 (bf16 autocast of the forward,
float32 master weights); --compile wraps the model in torch.compile.

Modes:
  --mode step               synthetic batches (every history slot real), samples/s of steps
  --mode e2e --dataset F    torch.utils.data.DataLoader over windows of an HDF5 dataset read
                            with h5py (robomimic layout data/demo_<i>/{obs/<key>, actions})
--device cuda runs the step mode on the GPU (the batches live there).
Prints one JSON line: mode, device, threads, samples_per_s, step_seconds, sgemm_gflops (torch.mm of
two 1024x1024 float32 matrices at the same threads; on CUDA bf16_gemm_tflops instead: torch.mm of
two 8192x8192 bfloat16 matrices), torch version.
"""
import argparse
import json
import math
import os
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


class Block(nn.Module):
    def __init__(self, d_model, heads, ffn):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.fc1 = nn.Linear(d_model, ffn)
        self.fc2 = nn.Linear(ffn, d_model)

    def attend(self, x, blocked):
        batch, tokens, d_model = x.shape
        head_dim = d_model // self.heads
        q, k, v = (self.qkv(x).view(batch, tokens, 3, self.heads, head_dim)
                   .permute(2, 0, 3, 1, 4))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(head_dim)
        weights = torch.softmax(scores.masked_fill(blocked, float("-inf")), dim=-1)
        out = torch.matmul(weights, v).permute(0, 2, 1, 3).reshape(batch, tokens, d_model)
        return self.proj(out)

    def forward(self, x, blocked):
        h = x + self.attend(self.ln1(x), blocked)
        return h + self.fc2(F.gelu(self.fc1(self.ln2(h))))


class Policy(nn.Module):
    def __init__(self, obs_dim, action_dim, history, chunk, d_model, layers, heads, ffn):
        super().__init__()
        self.history = history
        self.obs_embed = nn.Linear(obs_dim, d_model)
        self.obs_pos = nn.Parameter(torch.randn(history, d_model) * 0.02)
        self.action_query = nn.Parameter(torch.randn(chunk, d_model) * 0.02)
        self.blocks = nn.ModuleList(Block(d_model, heads, ffn) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, action_dim)

    def blocked_mask(self, history_length, total):
        slot = torch.arange(total, device=history_length.device)
        query, key = slot.view(1, total, 1), slot.view(1, 1, total)
        first_real = (self.history - history_length.long()).view(-1, 1, 1)
        key_is_obs = key < self.history
        allowed = (key >= first_real) & (((query < self.history) & key_is_obs) |
                                         ((query >= self.history) & (key_is_obs | (key <= query))))
        return (~(allowed | (query == key))).unsqueeze(1)

    def forward(self, obs, history_length):
        batch = obs.shape[0]
        tokens = torch.cat([self.obs_embed(obs) + self.obs_pos,
                            self.action_query.unsqueeze(0).expand(batch, -1, -1)], dim=1)
        blocked = self.blocked_mask(history_length, tokens.shape[1])
        for block in self.blocks:
            tokens = block(tokens, blocked)
        return self.head(self.ln_f(tokens[:, self.history:]))


def masked_chunk_loss(prediction, target, valid):
    per_step = ((prediction - target) ** 2).mean(dim=-1)
    return ((per_step * valid).sum(dim=1) / valid.sum(dim=1)).mean()


class Trainer:
    def __init__(self, args, model=None):
        """Trains `model` (default: the transformer of `args`, built after seeding)."""
        torch.manual_seed(args.seed)
        self.model = model if model is not None else Policy(
            args.obs_dim, args.action_dim, args.history, args.chunk, args.d_model, args.layers, args.heads,
            args.ffn)
        self.device = torch.device(getattr(args, "device", "cpu"))
        self.model.to(self.device)
        decay = [p for p in self.model.parameters() if p.dim() >= 2]
        no_decay = [p for p in self.model.parameters() if p.dim() < 2]
        self.lr = 3e-4
        self.optimizer = torch.optim.AdamW(
            [{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
            lr=self.lr, fused=self.device.type == "cuda")
        self.total_steps = 1000
        self.bf16 = getattr(args, "bf16", False)
        self.forward = torch.compile(self.model) if getattr(args, "compile", False) else self.model

    def loss(self, batch):
        obs, history_length, actions, valid = batch
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.bf16):
            prediction = self.forward(obs, history_length)
        return masked_chunk_loss(prediction.float(), actions, valid)

    def step(self, batch, step):
        self.model.train()
        self.optimizer.zero_grad()
        loss = self.loss(batch)
        loss_value = loss.item()
        if not math.isfinite(loss_value):
            raise RuntimeError(f"step {step}: the loss is {loss_value}")
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        progress = min(1.0, step / self.total_steps)
        lr = self.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        self.optimizer.step()
        return loss_value


def synthetic_batch(args, generator):
    obs = torch.randn(args.batch, args.history, args.obs_dim, generator=generator)
    history_length = torch.full((args.batch,), args.history, dtype=torch.int32)
    actions = torch.randn(args.batch, args.chunk, args.action_dim, generator=generator)
    valid = torch.ones(args.batch, args.chunk)
    return tuple(t.to(args.device) for t in (obs, history_length, actions, valid))


class Windows(torch.utils.data.Dataset):
    """Every (episode, t) window of an HDF5 dataset, normalised by per-feature mean and std,
    obs left-padded by repeating the first step, actions right-padded by repeating the last."""

    def __init__(self, path, obs_key, history, chunk):
        import h5py  # e2e mode only: the GPU machine's Python may lack it
        self.history, self.chunk = history, chunk
        self.obs, self.actions, self.index = [], [], []
        with h5py.File(path, "r") as f:
            demos = sorted((name for name in f["data"].keys() if name.startswith("demo_")),
                           key=lambda name: int(name.split("_")[-1]))
            for e, name in enumerate(demos):
                demo = f["data"][name]
                self.obs.append(np.asarray(demo["obs"][obs_key], dtype=np.float32))
                self.actions.append(np.asarray(demo["actions"], dtype=np.float32))
                self.index.extend((e, t) for t in range(len(self.actions[-1])))
        all_obs, all_actions = np.concatenate(self.obs), np.concatenate(self.actions)
        obs_mean, obs_std = all_obs.mean(0), np.maximum(all_obs.std(0), 1e-6)
        action_mean, action_std = all_actions.mean(0), np.maximum(all_actions.std(0), 1e-6)
        self.obs = [(o - obs_mean) / obs_std for o in self.obs]
        self.actions = [(a - action_mean) / action_std for a in self.actions]

    def __len__(self):
        return len(self.index)

    def __getitem__(self, i):
        e, t = self.index[i]
        obs, actions = self.obs[e], self.actions[e]
        steps = np.clip(np.arange(t - self.history + 1, t + 1), 0, None)
        future = np.arange(t, t + self.chunk)
        valid = (future < len(actions)).astype(np.float32)
        return (torch.from_numpy(obs[steps]), min(t + 1, self.history),
                torch.from_numpy(actions[np.minimum(future, len(actions) - 1)]),
                torch.from_numpy(valid))


def sgemm_gflops(size=1024, repeats=20):
    a, b = torch.randn(size, size), torch.randn(size, size)
    torch.mm(a, b)
    start = time.perf_counter()
    for _ in range(repeats):
        torch.mm(a, b)
    return 2.0 * size ** 3 * repeats / (time.perf_counter() - start) / 1e9


def bf16_gemm_tflops(device, size=8192, repeats=20):
    a = torch.randn(size, size, device=device, dtype=torch.bfloat16)
    b = torch.randn(size, size, device=device, dtype=torch.bfloat16)
    torch.mm(a, b)
    torch.cuda.synchronize(device)
    start = time.perf_counter()
    for _ in range(repeats):
        torch.mm(a, b)
    torch.cuda.synchronize(device)
    return 2.0 * size ** 3 * repeats / (time.perf_counter() - start) / 1e12


def timed_steps(trainer, batches, warmup, steps):
    for s in range(warmup):
        trainer.step(next(batches), s)
    start = time.perf_counter()
    for s in range(steps):
        trainer.step(next(batches), warmup + s)
    return time.perf_counter() - start


def run_step_mode(args, trainer):
    generator = torch.Generator().manual_seed(args.seed)
    pool = [synthetic_batch(args, generator) for _ in range(4)]
    batches = (pool[i % len(pool)] for i in range(10 ** 9))
    return timed_steps(trainer, batches, args.warmup, args.steps)


def run_e2e_mode(args, trainer):
    dataset = Windows(args.dataset, args.obs_key, args.history, args.chunk)
    loader = torch.utils.data.DataLoader(dataset, batch_size=args.batch, shuffle=True,
                                         drop_last=True, num_workers=args.workers,
                                         persistent_workers=args.workers > 0,
                                         generator=torch.Generator().manual_seed(args.seed))

    def forever():
        while True:
            for obs, history_length, actions, valid in loader:
                yield obs, history_length.to(torch.int32), actions, valid

    return timed_steps(trainer, forever(), args.warmup, args.steps)


def openmp_environment():
    """The OpenMP variables this process was started with ("NAME=value ..."), as the benchmark
    reports them: the peer runs in the user's environment, not in roboloop's choice."""
    return " ".join(f"{name}={value}" for name, value in sorted(os.environ.items())
                    if name.startswith(("OMP_", "GOMP_")))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=["step", "e2e"], required=True)
    parser.add_argument("--dataset", help="HDF5 dataset (e2e mode)")
    parser.add_argument("--obs-key", default="state", help="obs/<key> read in e2e mode")
    parser.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    parser.add_argument("--workers", type=int, default=1, help="DataLoader workers (e2e)")
    parser.add_argument("--steps", type=int, default=20, help="timed steps")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps first")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--obs-dim", type=int, default=16)
    parser.add_argument("--action-dim", type=int, default=4)
    parser.add_argument("--history", type=int, default=8)
    parser.add_argument("--chunk", type=int, default=16)
    parser.add_argument("--d-model", type=int, default=128)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--ffn", type=int, default=512)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu", help="cpu or cuda[:N] (step mode)")
    parser.add_argument("--bf16", action="store_true", help="bf16 autocast of the forward")
    parser.add_argument("--compile", action="store_true", help="torch.compile the model")
    args = parser.parse_args()
    if args.mode == "e2e" and not args.dataset:
        parser.error("--mode e2e needs --dataset FILE")
    if args.mode == "e2e" and args.device != "cpu":
        parser.error("--mode e2e runs on the CPU only")
    torch.set_num_threads(args.threads)
    trainer = Trainer(args)
    seconds = (run_step_mode if args.mode == "step" else run_e2e_mode)(args, trainer)
    figures = {"mode": args.mode, "device": args.device, "threads": torch.get_num_threads(),
               "samples_per_s": args.batch * args.steps / seconds, "step_seconds": seconds / args.steps,
               "torch": torch.__version__, "openmp_env": openmp_environment()}
    if trainer.device.type == "cuda":
        figures["bf16_gemm_tflops"] = bf16_gemm_tflops(trainer.device)
    else:
        figures["sgemm_gflops"] = sgemm_gflops()
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
