"""Writes a seeded random policy as an export folder, for tests/train/export_python_test.cc.

usage: make_policy_weights.py OPTIONS_JSON SEED DIR

OPTIONS_JSON is a policy options object including "kind" (as a checkpoint manifest stores
it). DIR receives config.json, model.safetensors (every parameter drawn from torch's
generator seeded with SEED, so that no parameter keeps a trivial initial value) and
normalization.json (random means, stds in [0.5, 2)).
"""

import json
import os
import struct
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import roboloop_policy  # noqa: E402


def save_safetensors(path, tensors):
    """Writes {name: float32 tensor} in the safetensors layout, tensors in name order."""
    header, chunks, offset = {}, [], 0
    for name in sorted(tensors):
        data = _tensor_bytes(tensors[name])
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape),
                        "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for data in chunks:
            f.write(data)


def _tensor_bytes(tensor):
    """Little-endian float32 bytes of `tensor` in row-major order (exact: float32 values
    survive the round trip through Python floats)."""
    values = tensor.detach().contiguous().float().view(-1).tolist()
    return struct.pack(f"<{len(values)}f", *values)


def randomize(model):
    """Draws every parameter: weights (linear and convolution) ~ N(0, 1/fan_in), biases and
    positions ~ N(0, 0.25), layer- and group-norm scales ~ 1 + N(0, 0.04)."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() >= 2:
                p.copy_(torch.randn(p.shape) / (p[0].numel() ** 0.5))
            elif name.endswith("weight"):
                p.copy_(1.0 + 0.2 * torch.randn(p.shape))
            else:
                p.copy_(0.5 * torch.randn(p.shape))


def main(argv):
    options, seed, out = json.loads(argv[1]), int(argv[2]), argv[3]
    torch.manual_seed(seed)
    kind = options["kind"]
    model = roboloop_policy.build_model(kind, options)
    randomize(model)
    os.makedirs(out, exist_ok=True)
    save_safetensors(os.path.join(out, "model.safetensors"), dict(model.named_parameters()))
    normalization = {
        side: {"mean": torch.randn(options[dim]).tolist(),
               "std": (0.5 + 1.5 * torch.rand(options[dim])).tolist()}
        for side, dim in (("obs", "obs_dim"), ("action", "action_dim"))}
    config = {"format": roboloop_policy.FORMAT, "version": roboloop_policy.VERSION,
              "policy": {"kind": kind, "options": options}, "model": f"test-{kind}"}
    with open(os.path.join(out, "config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f)
    with open(os.path.join(out, "normalization.json"), "w", encoding="utf-8") as f:
        json.dump(normalization, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
