#!/usr/bin/env python3
"""The image-policy training benchmark's peer (issue 23, req 8): roboloop's `mlp` policy with one
camera trained as a plain eager PyTorch loop (the project environment's torch of python/pins.txt,
nothing else).

Model: python/roboloop_policy.py's MlpPolicy, the same module the exported policies run: per
camera a stride-2 3x3 convolution stem, residual blocks (3x3 convolution, GroupNorm, ReLU), a 1x1
keypoint convolution and a spatial softmax; the keypoints join the flattened state in an MLP.
Frames are uint8 [batch, height, width, 3] shifted per sample by up to 4 pixels with edge
replication (the same index gather as roboloop's RandomShift), then scaled to [0, 1]. The step is
train_peer.py's: masked mean squared error over the chunk, AdamW (decay on weight matrices and
convolution kernels only), cosine schedule, gradient clipping at norm 1, fp32.

Prints one JSON line: threads, samples_per_s, step_seconds, torch version.
"""
import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import roboloop_policy  # noqa: E402
import train_peer  # noqa: E402  (this folder, first on sys.path when run as a script)

SHIFT_PAD = 4


def random_shift(frames, pad, generator):
    """frames uint8 [batch, height, width, 3], each moved by (dy, dx) in [-pad, pad] with the
    edge pixels repeated (= pad by edge replication, crop back at a random offset)."""
    batch, height, width, _ = frames.shape
    shifts = torch.randint(-pad, pad + 1, (batch, 2), generator=generator)
    rows = (torch.arange(height).view(1, height) + shifts[:, :1]).clamp(0, height - 1)
    cols = (torch.arange(width).view(1, width) + shifts[:, 1:]).clamp(0, width - 1)
    pixel = ((torch.arange(batch).view(batch, 1, 1) * height + rows.view(batch, height, 1)) * width
             + cols.view(batch, 1, width))
    return frames.reshape(-1, 3).index_select(0, pixel.reshape(-1)).view(frames.shape)


class VisionTrainer(train_peer.Trainer):
    """train_peer.py's training step (AdamW, clipping, cosine schedule) on the mlp with a camera."""

    def __init__(self, args, options):
        torch.manual_seed(args.seed)
        super().__init__(args, roboloop_policy.build_model("mlp", options))
        self.camera = options["cameras"][0]
        self.generator = torch.Generator().manual_seed(args.seed)

    def loss(self, batch):
        obs, history_length, images, actions, valid = batch
        frames = images.view(images.shape[0], self.camera["height"], self.camera["width"], 3)
        shifted = random_shift(frames, SHIFT_PAD, self.generator).reshape(images.shape)
        return train_peer.masked_chunk_loss(self.model(obs, history_length, shifted), actions, valid)


def synthetic_batch(args, generator):
    obs = torch.randn(args.batch, 1, args.obs_dim, generator=generator)
    history_length = torch.ones(args.batch, dtype=torch.int32)
    images = torch.randint(0, 256, (args.batch, args.image_bytes), generator=generator, dtype=torch.uint8)
    actions = torch.randn(args.batch, 1, args.action_dim, generator=generator)
    return obs, history_length, images, actions, torch.ones(args.batch, 1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--options", required=True, help="the mlp policy options (JSON, one camera)")
    parser.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    parser.add_argument("--steps", type=int, default=10, help="timed steps")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps first")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    options = json.loads(args.options)
    args.obs_dim, args.action_dim = options["obs_dim"], options["action_dim"]
    args.image_bytes = 3 * options["cameras"][0]["width"] * options["cameras"][0]["height"]
    torch.set_num_threads(args.threads)
    trainer = VisionTrainer(args, options)
    generator = torch.Generator().manual_seed(args.seed)
    pool = [synthetic_batch(args, generator) for _ in range(4)]
    for s in range(args.warmup):
        trainer.step(pool[s % len(pool)], s)
    start = time.perf_counter()
    for s in range(args.warmup, args.warmup + args.steps):
        trainer.step(pool[s % len(pool)], s)
    seconds = time.perf_counter() - start
    print(json.dumps({"threads": torch.get_num_threads(), "samples_per_s": args.batch * args.steps / seconds,
                      "step_seconds": seconds / args.steps, "torch": torch.__version__}))


if __name__ == "__main__":
    main()
