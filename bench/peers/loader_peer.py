"""The image loader benchmark's peer (issue 28, req 6): PyTorch's DataLoader over h5py.

A map-style Dataset of every (episode, t) window of a roboloop HDF5 file; each worker opens
the file once, and a sample reads what roboloop's loader puts in a batch row: the obs history
(left-padded by repeating the first step), the action chunk (padded by repeating the last
action, with a validity mask), both normalised, and the frame of each camera at t. The
DataLoader shuffles, collates batches of --batch and runs --workers worker processes.
Prints one JSON line: samples_per_s over --batches batches after --warmup untimed ones.
"""
import argparse
import json
import time

import h5py
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class WindowDataset(Dataset):
    def __init__(self, path, cameras, history, chunk):
        self.path = path
        self.cameras = cameras
        self.history = history
        self.chunk = chunk
        self.file = None
        with h5py.File(path, "r") as f:
            demos = sorted(f["data"].keys(), key=lambda name: int(name.split("_")[1]))
            self.demos = demos
            self.windows = [(e, t) for e, demo in enumerate(demos)
                            for t in range(f["data"][demo]["actions"].shape[0])]
            first = f["data"][demos[0]]
            obs_dim = first["obs/state"].shape[1]
            action_dim = first["actions"].shape[1]
        # Identity statistics: the arithmetic of normalisation without a pass over the data.
        self.obs_mean, self.obs_std = np.zeros(obs_dim, np.float32), np.ones(obs_dim, np.float32)
        self.action_mean, self.action_std = np.zeros(action_dim, np.float32), np.ones(action_dim, np.float32)

    def __len__(self):
        return len(self.windows)

    def __getitem__(self, index):
        if self.file is None:
            self.file = h5py.File(self.path, "r")
        episode, t = self.windows[index]
        demo = self.file["data"][self.demos[episode]]
        actions = demo["actions"]
        length = actions.shape[0]
        first = max(0, t - self.history + 1)
        obs = demo["obs/state"][first:t + 1]
        if obs.shape[0] < self.history:
            obs = np.concatenate([np.repeat(obs[:1], self.history - obs.shape[0], axis=0), obs])
        chunk = actions[t:min(length, t + self.chunk)]
        valid = np.zeros(self.chunk, np.uint8)
        valid[:chunk.shape[0]] = 1
        if chunk.shape[0] < self.chunk:
            chunk = np.concatenate([chunk, np.repeat(chunk[-1:], self.chunk - chunk.shape[0], axis=0)])
        sample = {
            "obs": (obs - self.obs_mean) / self.obs_std,
            "history_length": np.int32(t + 1 - first),
            "actions": (chunk - self.action_mean) / self.action_std,
            "action_valid": valid,
        }
        for camera in self.cameras:
            sample[camera] = demo["obs/" + camera + "_image"][t]
        return sample


def endless(loader):
    """The loader's batches, epoch after epoch."""
    while True:
        yield from loader


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--cameras", required=True, help="comma-separated camera names")
    parser.add_argument("--history", type=int, default=2)
    parser.add_argument("--chunk", type=int, default=8)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--batches", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    dataset = WindowDataset(args.dataset, args.cameras.split(","), args.history, args.chunk)
    loader = DataLoader(dataset, batch_size=args.batch, shuffle=True, num_workers=args.workers,
                        drop_last=True, persistent_workers=args.workers > 0)
    batches = endless(loader)
    for _ in range(args.warmup):
        next(batches)
    start = time.perf_counter()
    for _ in range(args.batches):
        next(batches)
    seconds = time.perf_counter() - start
    print(json.dumps({"samples_per_s": args.batch * args.batches / seconds, "seconds": seconds,
                      "torch": torch.__version__, "h5py": h5py.__version__,
                      "torch_threads": torch.get_num_threads()}))


if __name__ == "__main__":
    main()
