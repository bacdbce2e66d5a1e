"""Exports the TorchScript policies the C++ tests load (issue 4, req 7).

Usage: export_policies.py OUT_DIR

Writes into OUT_DIR:
  scripted.pt    torch.jit.script of a TransformerEncoder policy (obs [B, 6] -> actions [B, 2])
  traced.pt      torch.jit.trace of the same architecture with other weights
  cartpole.pt    a scripted TransformerEncoder policy for cartpole-balance (obs 5 -> action 1)
  nan.pt         a scripted policy for cartpole-balance whose every action is NaN
  missing_op.pt  a scripted policy whose code was rewritten to call
                 aten::fused_policy_head_from_the_future, an op no LibTorch has (as a file
                 saved by a newer PyTorch would call one this LibTorch lacks)
  expected.txt   "batch obs_dim action_dim", then the obs rows, then the scripted and the
                 traced policies' actions for them, one row per line
"""
import os
import sys
import zipfile

import torch
from torch import nn

OBS_DIM, ACTION_DIM, BATCH = 6, 2, 7


class TransformerPolicy(nn.Module):
    """Splits the observation into `tokens` tokens of `features` features, encodes them, pools
    and maps to `action_dim` actions."""

    def __init__(self, tokens=3, features=2, action_dim=ACTION_DIM):
        super().__init__()
        self.tokens = tokens
        self.features = features
        self.embed = nn.Linear(features, 16)
        layer = nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32,
                                           dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2)
        self.head = nn.Linear(16, action_dim)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        tokens = self.embed(obs.reshape(obs.shape[0], self.tokens, self.features))
        return torch.tanh(self.head(self.encoder(tokens).mean(dim=1)))


class NanPolicy(nn.Module):
    """A cartpole-balance policy (obs 5 -> action 1) whose every action is NaN."""

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return obs[:, :1] * float("nan")


class SoftmaxPolicy(nn.Module):
    """The template of the file that calls an op this LibTorch lacks (as one saved by a newer
    PyTorch would)."""

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.softmax(obs, -1)


def rewrite_code(src, dst, old, new):
    """Copies the zip `src` to `dst`, replacing `old` by `new` in the code of its modules
    (the debug tables describing the old code are dropped)."""
    replaced = False
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        for item in zin.infolist():
            if item.filename.endswith(".debug_pkl"):
                continue
            data = zin.read(item.filename)
            if "/code/" in item.filename and item.filename.endswith(".py") and old in data:
                data = data.replace(old, new)
                replaced = True
            zout.writestr(item.filename, data)
    if not replaced:
        raise SystemExit(f"{src}: no code calls {old!r}")


def rows(tensor):
    return [" ".join(repr(float(v)) for v in row) for row in tensor.tolist()]


def main(out_dir):
    torch.manual_seed(1)
    scripted = torch.jit.script(TransformerPolicy().eval())
    traced_model = TransformerPolicy().eval()
    obs = torch.randn(BATCH, OBS_DIM)
    with torch.no_grad():
        traced = torch.jit.trace(traced_model, torch.randn(4, OBS_DIM), check_trace=False)
    scripted.save(os.path.join(out_dir, "scripted.pt"))
    traced.save(os.path.join(out_dir, "traced.pt"))
    cartpole = TransformerPolicy(tokens=5, features=1, action_dim=1).eval()
    torch.jit.script(cartpole).save(os.path.join(out_dir, "cartpole.pt"))
    torch.jit.script(NanPolicy()).save(os.path.join(out_dir, "nan.pt"))
    template = os.path.join(out_dir, "softmax.pt")
    torch.jit.script(SoftmaxPolicy()).save(template)
    rewrite_code(template, os.path.join(out_dir, "missing_op.pt"), b"torch.softmax(obs, -1)",
                 b"torch.fused_policy_head_from_the_future(obs, obs)")
    loaded_scripted = torch.jit.load(os.path.join(out_dir, "scripted.pt"))
    loaded_traced = torch.jit.load(os.path.join(out_dir, "traced.pt"))
    with torch.no_grad():
        lines = [f"{BATCH} {OBS_DIM} {ACTION_DIM}"] + rows(obs)
        lines += rows(loaded_scripted(obs)) + rows(loaded_traced(obs))
    with open(os.path.join(out_dir, "expected.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
