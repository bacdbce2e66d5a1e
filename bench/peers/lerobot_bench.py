"""Issue 24, req 6: frames/s of roboloop's LeRobot import (bin/lerobot_import_bench: parquet,
video decoding, HDF5 writing) against LeRobot's own loader iterating the same dataset
(LeRobotDataset through a torch DataLoader), in one run, alternating, ROUNDS times each. Runs in
LeRobot's own environment (scripts/lerobot-venv.sh):

  lerobot-venv/bin/python bench/peers/lerobot_bench.py BUILD_DIR WORK_DIR [--episodes 8 --length 50 --size 320x240]

The dataset is written once into WORK_DIR/lerobot with the given geometry (a WORK_DIR per geometry).
"""
import argparse
import json
import pathlib
import statistics
import subprocess
import time

import numpy as np

ROUNDS = 5
FPS = 30
BATCH, WORKERS = 32, 0


def make_dataset(root, episodes, length, width, height):
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    features = {
        "observation.state": {"dtype": "float32", "shape": (7,), "names": None},
        "action": {"dtype": "float32", "shape": (7,), "names": None},
        "observation.images.front": {"dtype": "video", "shape": (height, width, 3),
                                     "names": ["height", "width", "channels"]},
    }
    dataset = LeRobotDataset.create("roboloop/bench", FPS, root=root, features=features,
                                    use_videos=True, image_writer_threads=0)
    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:height, 0:width]
    for episode in range(episodes):
        for step in range(length):
            image = np.stack([(x + 3 * step) % 256, (y + 5 * episode) % 256, (x + y + step) % 256], -1)
            dataset.add_frame({"observation.state": rng.standard_normal(7).astype(np.float32),
                               "action": rng.standard_normal(7).astype(np.float32),
                               "observation.images.front": image.astype(np.uint8), "task": "bench"})
        dataset.save_episode()
    dataset.finalize()


def roboloop_round(binary, root, out):
    result = json.loads(subprocess.run([binary, root, out], check=True, capture_output=True, text=True).stdout)
    return result["frames"] / result["seconds"]


def lerobot_round(root):
    import torch
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    start = time.perf_counter()
    dataset = LeRobotDataset("roboloop/bench", root=root)
    loader = torch.utils.data.DataLoader(dataset, batch_size=BATCH, shuffle=False, num_workers=WORKERS)
    frames = sum(len(batch["index"]) for batch in loader)
    return frames / (time.perf_counter() - start)


def main(args):
    work = pathlib.Path(args.work_dir)
    root = work / "lerobot"
    if not (root / "meta/info.json").exists():
        width, height = (int(n) for n in args.size.split("x"))
        make_dataset(root, args.episodes, args.length, width, height)
    info = json.loads((root / "meta/info.json").read_text())
    camera = info["features"]["observation.images.front"]
    codec = camera["info"]["video.codec"]
    height, width = camera["shape"][0], camera["shape"][1]
    binary = str(pathlib.Path(args.build_dir) / "bin/lerobot_import_bench")
    import torch
    print(f"settings: {info['total_episodes']} episodes, {info['total_frames']} frames, {info['fps']} fps, "
          f"one {width}x{height} {codec} camera "
          f"(written by LeRobot), state and action of 7; LeRobot loader: DataLoader batch {BATCH}, "
          f"{WORKERS} workers, video backend torchcodec; torch threads {torch.get_num_threads()}; "
          f"{ROUNDS} rounds alternating, roboloop first")
    ours, theirs = [], []
    for round_index in range(ROUNDS):
        ours.append(roboloop_round(binary, str(root), str(work / "imported.hdf5")))
        theirs.append(lerobot_round(str(root)))
        print(f"round {round_index + 1}: roboloop import {ours[-1]:.0f} frames/s, "
              f"LeRobot loader {theirs[-1]:.0f} frames/s")
    ratios = [a / b for a, b in zip(ours, theirs)]
    print(f"roboloop import median {statistics.median(ours):.0f} frames/s, LeRobot loader median "
          f"{statistics.median(theirs):.0f} frames/s; ratio median {statistics.median(ratios):.2f}x "
          f"(min {min(ratios):.2f}x, max {max(ratios):.2f}x)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build_dir")
    parser.add_argument("work_dir")
    parser.add_argument("--episodes", type=int, default=8, help="episodes of a new dataset")
    parser.add_argument("--length", type=int, default=50, help="frames per episode of a new dataset")
    parser.add_argument("--size", default="320x240", help="camera WIDTHxHEIGHT of a new dataset")
    main(parser.parse_args())
