"""LeRobot's side of tests/data/lerobot_test.cc, run in LeRobot's own environment
(scripts/lerobot-venv.sh). Values are passed as raw little-endian files so the C++ test
compares them bitwise.

  write DIR TRUTH   writes a dataset with LeRobotDataset.create/add_frame/save_episode
                    (state, action, reward, done, one camera) and its values into TRUTH/
  read DIR OUT      loads DIR with LeRobotDataset and dumps what it yields into OUT/
  shift DIR ROWS    moves the last episode's rows in meta/episodes ROWS past its data table
"""
import json
import pathlib
import sys

import numpy as np

FPS = 10
HEIGHT, WIDTH = 24, 32
LENGTHS = [6, 9, 5]
TASKS = ["pick the cube", "push the cube", "pick the cube"]


def frame_image(episode, step):
    """A smooth picture (gradients move with the step) that video codecs keep close."""
    y, x = np.mgrid[0:HEIGHT, 0:WIDTH]
    red = (x * 255 // (WIDTH - 1) + 7 * step) % 256
    green = (y * 255 // (HEIGHT - 1) + 11 * episode) % 256
    blue = np.full_like(x, 60 + 40 * episode)
    return np.stack([red, green, blue], axis=-1).astype(np.uint8)


def write(root, truth):
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    features = {
        "observation.state": {"dtype": "float32", "shape": (3,), "names": ["x", "y", "z"]},
        "action": {"dtype": "float32", "shape": (2,), "names": ["vx", "vy"]},
        "next.reward": {"dtype": "float32", "shape": (1,), "names": None},
        "next.done": {"dtype": "bool", "shape": (1,), "names": None},
        "observation.images.front": {"dtype": "video", "shape": (HEIGHT, WIDTH, 3),
                                     "names": ["height", "width", "channels"]},
    }
    dataset = LeRobotDataset.create("roboloop/fixture", FPS, root=root, features=features,
                                    use_videos=True, image_writer_threads=0)
    rng = np.random.default_rng(7)
    values = {"state": [], "action": [], "reward": [], "done": [], "frames": []}
    for episode, length in enumerate(LENGTHS):
        for step in range(length):
            state = rng.standard_normal(3).astype(np.float32)
            action = rng.standard_normal(2).astype(np.float32)
            reward = np.array([step / length], dtype=np.float32)
            done = np.array([step == length - 1], dtype=bool)
            image = frame_image(episode, step)
            dataset.add_frame({"observation.state": state, "action": action, "next.reward": reward,
                               "next.done": done, "observation.images.front": image,
                               "task": TASKS[episode]})
            for key, value in (("state", state), ("action", action), ("reward", reward),
                               ("done", done.astype(np.uint8)), ("frames", image)):
                values[key].append(value)
        dataset.save_episode()
    dataset.finalize()
    truth = pathlib.Path(truth)
    truth.mkdir(parents=True, exist_ok=True)
    for key, rows in values.items():
        np.ascontiguousarray(np.stack(rows)).tofile(truth / f"{key}.bin")
    (truth / "meta.json").write_text(json.dumps({"lengths": LENGTHS, "tasks": TASKS, "fps": FPS,
                                                 "height": HEIGHT, "width": WIDTH}))


def read(root, out):
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    dataset = LeRobotDataset("roboloop/export", root=root)
    camera_keys = dataset.meta.camera_keys
    columns = {"state": [], "action": [], "episode_index": [], "frame_index": [], "timestamp": []}
    frames = {key: [] for key in camera_keys}
    tasks = []
    for i in range(len(dataset)):
        item = dataset[i]
        columns["state"].append(item["observation.state"].numpy())
        columns["action"].append(item["action"].numpy())
        columns["episode_index"].append(np.int64(item["episode_index"]))
        columns["frame_index"].append(np.int64(item["frame_index"]))
        columns["timestamp"].append(np.float32(item["timestamp"]))
        tasks.append(item["task"])
        for key in camera_keys:  # float [3, H, W] in [0, 1] back to uint8 [H, W, 3]
            frames[key].append((item[key].permute(1, 2, 0).numpy() * 255).round().astype(np.uint8))
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for key, rows in columns.items():
        np.ascontiguousarray(np.stack(rows)).tofile(out / f"{key}.bin")
    for key, rows in frames.items():
        np.ascontiguousarray(np.stack(rows)).tofile(out / f"{key}.frames.bin")
    (out / "meta.json").write_text(json.dumps({"num_frames": len(dataset), "num_episodes": dataset.num_episodes,
                                               "tasks": tasks, "camera_keys": camera_keys,
                                               "fps": dataset.fps}))


def shift(root, rows):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = pathlib.Path(root) / "meta/episodes/chunk-000/file-000.parquet"
    table = pq.read_table(path)
    for column in ("dataset_from_index", "dataset_to_index"):
        values = table[column].to_pylist()
        values[-1] += int(rows)
        table = table.set_column(table.schema.get_field_index(column), column, pa.array(values, pa.int64()))
    pq.write_table(table, path)


if __name__ == "__main__":
    {"write": write, "read": read, "shift": shift}[sys.argv[1]](sys.argv[2], sys.argv[3])
