"""Runs an export folder on observations from files, for tests/train/export_python_test.cc.

usage: run_exported_policy.py MODULE_DIR EXPORT_DIR OBS_FILE LENGTHS_FILE BATCH OUT_FILE [IMAGES_FILE]

Imports roboloop_policy from MODULE_DIR (the copy `roboloop export` put into the folder, or
python/ of the source tree), reads BATCH x history x obs_dim little-endian float32
observations, BATCH int32 history lengths and, for a policy with cameras, BATCH x image_bytes
uint8 frames from IMAGES_FILE, and writes the raw actions as float32.
"""

import struct
import sys

import torch


def read_values(path, fmt, count):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) != struct.calcsize(f"<{count}{fmt}"):
        raise ValueError(f"{path}: expected {count} values, found {len(data)} bytes")
    return list(struct.unpack(f"<{count}{fmt}", data))


def main(argv):
    module_dir, export_dir, obs_file, lengths_file, batch, out_file = argv[1:7]
    sys.path.insert(0, module_dir)
    import roboloop_policy  # pylint: disable=import-outside-toplevel

    policy = roboloop_policy.load_policy(export_dir)
    batch = int(batch)
    obs = torch.tensor(read_values(obs_file, "f", batch * policy.history * policy.obs_dim))
    lengths = torch.tensor(read_values(lengths_file, "i", batch), dtype=torch.int32)
    images = None
    if len(argv) > 7:
        with open(argv[7], "rb") as f:
            images = torch.frombuffer(bytearray(f.read()), dtype=torch.uint8)
    actions = policy.act(obs.view(batch, policy.history, policy.obs_dim), lengths, images)
    values = actions.reshape(-1).tolist()
    with open(out_file, "wb") as f:
        f.write(struct.pack(f"<{len(values)}f", *values))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
