"""Run a policy exported by `roboloop export` with plain PyTorch.

An export folder holds config.json (the policy's kind and options, observation and action
specs), model.safetensors (the weights) and normalization.json (per-feature mean and std of
observations and actions). This module rebuilds the same network as roboloop's C++ policies
(train/torch/policy/) and needs only PyTorch (1.13 or newer) and the standard library:

    import torch, roboloop_policy
    policy = roboloop_policy.load_policy("exported/")
    obs = torch.zeros(1, policy.history, policy.obs_dim)        # raw observations, oldest first
    actions = policy.act(obs, torch.tensor([1], dtype=torch.int32))  # [1, chunk, action_dim]

Observation windows are left-padded: row b holds history_length[b] real steps in its last
slots; the mlp reads every slot (pad by repeating the oldest real step), the transformer
ignores the padded ones.

A policy with cameras (options "cameras": [{name, width, height}, ...]) also reads the frames of
each row's last observation step: `policy.act(obs, lengths, images)` with images uint8
[batch, image_bytes], every camera's height x width x 3 RGB frame (rows top to bottom) back to
back in the order of the option (roboloop's docs/vision.md).
"""

import json
import math
import os
import struct
import sys

import torch
from torch import nn
from torch.nn import functional as F

FORMAT = "roboloop-policy"
VERSION = 1

# The options of each kind; `roboloop export` writes all of them (defaults filled by the kind's
# schema in roboloop), so this module keeps no defaults of its own.
_OPTIONS = {
    "mlp": ("obs_dim", "action_dim", "history", "chunk", "hidden", "activation"),
    "transformer": ("obs_dim", "action_dim", "history", "chunk", "d_model", "layers", "heads", "ffn",
                    "flow_matching", "flow_steps"),
}
# The options of policies that see; absent in checkpoints written before cameras existed, which
# are state-only ("cameras" then counts as []), and required with a non-empty "cameras".
_VISION_OPTIONS = ("cameras", "encoder_channels", "encoder_blocks", "keypoints")
_ACTIVATIONS = {"relu": torch.relu, "gelu": F.gelu, "silu": F.silu, "tanh": torch.tanh}


def load_safetensors(path):
    """Returns {name: float32 tensor} of a safetensors file; ValueError names what is wrong."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise ValueError(f"{path}: truncated safetensors header")
    (header_size,) = struct.unpack("<Q", data[:8])
    if 8 + header_size > len(data):
        raise ValueError(f"{path}: header length {header_size} runs past the end of the file")
    try:
        header = json.loads(data[8:8 + header_size].decode("utf-8"))
    except ValueError as e:
        raise ValueError(f"{path}: header is not JSON ({e})") from None
    if sys.byteorder != "little":
        raise ValueError("safetensors data is little-endian; this machine is not")
    payload = bytearray(data[8 + header_size:])
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        if entry.get("dtype") != "F32":
            raise ValueError(f"{path}: tensor {name} has dtype {entry.get('dtype')}, expected F32")
        shape = [int(d) for d in entry["shape"]]
        begin, end = (int(o) for o in entry["data_offsets"])
        count = math.prod(shape)
        if not 0 <= begin <= end <= len(payload) or end - begin != 4 * count:
            raise ValueError(f"{path}: tensor {name} has offsets [{begin}, {end}) that disagree "
                             f"with its shape {shape} or the data size {len(payload)}")
        if count == 0:
            tensors[name] = torch.zeros(shape)
            continue
        values = torch.frombuffer(payload, dtype=torch.float32, count=count, offset=begin)
        tensors[name] = values.reshape(shape).clone()
    return tensors


def _options(kind, options):
    """The policy options, checked; ValueError naming a bad, unknown or missing option."""
    names = _OPTIONS.get(kind)
    if names is None:
        raise ValueError(f"unknown policy kind '{kind}' (known: {', '.join(_OPTIONS)})")
    for key in options:
        if key not in names and key not in _VISION_OPTIONS and key != "kind":
            raise ValueError(f"policy option {key} is not an option of policy {kind}")
    if options.get("cameras"):
        names = names + _VISION_OPTIONS
    if options.get("kind", kind) != kind:
        raise ValueError(f"options say kind {options['kind']} but the policy is {kind}")
    for key in names:
        if key not in options:
            raise ValueError(f"policy option {key} is missing (export the checkpoint again with roboloop export)")
    merged = {k: v for k, v in options.items() if k != "kind"}
    merged.setdefault("cameras", [])
    for camera in merged["cameras"]:
        if not isinstance(camera, dict) or set(camera) != {"name", "width", "height"}:
            raise ValueError(f"policy option cameras: each camera must be {{name, width, height}}, got {camera}")
    if kind == "mlp" and merged["activation"] not in _ACTIVATIONS:
        raise ValueError(f"policy option activation: unknown '{merged['activation']}' "
                         f"(known: {', '.join(_ACTIVATIONS)})")
    if kind == "transformer" and merged["d_model"] % merged["heads"] != 0:
        raise ValueError(f"policy option d_model ({merged['d_model']}) must be a multiple of "
                         f"heads ({merged['heads']})")
    return merged


def spatial_softmax(features):
    """The expected (x, y) [batch, keypoints, 2] of each channel's softmax over the pixels of
    features [batch, keypoints, height, width]; x from -1 (left) to 1 (right), y from -1 (top)
    to 1 (bottom)."""
    batch, keypoints, height, width = features.shape
    xs = torch.linspace(-1.0, 1.0, width).view(1, width).expand(height, width)
    ys = torch.linspace(-1.0, 1.0, height).view(height, 1).expand(height, width)
    grid = torch.stack([xs.reshape(-1), ys.reshape(-1)], 1)
    weights = torch.softmax(features.float().reshape(batch, keypoints, height * width), dim=-1)
    return torch.matmul(weights, grid)


def _group_norm(channels):
    return nn.GroupNorm(math.gcd(channels, 8), channels, eps=1e-5)


def _conv3x3(channels_in, channels_out, stride):
    return nn.Conv2d(channels_in, channels_out, 3, stride=stride, padding=1, bias=False)


class ResidualBlock(nn.Module):
    """conv-norm-relu-conv-norm plus the input, then ReLU."""

    def __init__(self, channels):
        super().__init__()
        self.conv1 = _conv3x3(channels, channels, 1)
        self.norm1 = _group_norm(channels)
        self.conv2 = _conv3x3(channels, channels, 1)
        self.norm2 = _group_norm(channels)

    def forward(self, x):
        h = torch.relu(self.norm1(self.conv1(x)))
        return torch.relu(x + self.norm2(self.conv2(h)))


class CameraEncoder(nn.Module):
    """One camera: a stride-2 convolution stem, residual blocks, a 1x1 keypoint convolution and
    a spatial softmax; frames uint8 [batch, height, width, 3] -> [batch, 2 * keypoints]."""

    def __init__(self, channels, blocks, keypoints):
        super().__init__()
        self.stem = _conv3x3(3, channels, 2)
        self.stem_norm = _group_norm(channels)
        self.blocks = nn.ModuleList(ResidualBlock(channels) for _ in range(blocks))
        self.keypoints = nn.Conv2d(channels, keypoints, 1)

    def forward(self, frames):
        x = frames.permute(0, 3, 1, 2).float().contiguous() / 255.0
        x = torch.relu(self.stem_norm(self.stem(x)))
        for block in self.blocks:
            x = block(x)
        points = spatial_softmax(self.keypoints(x))
        return points.reshape(points.shape[0], -1)


class ImageEncoder(nn.Module):
    """The encoders of every camera: image rows uint8 [batch, image_bytes] -> keypoints
    [batch, cameras, 2 * keypoints]."""

    def __init__(self, o):
        super().__init__()
        self.sizes = [(c["height"], c["width"]) for c in o["cameras"]]
        self.cameras = nn.ModuleList(CameraEncoder(o["encoder_channels"], o["encoder_blocks"], o["keypoints"])
                                     for _ in self.sizes)
        self.features = 2 * o["keypoints"]
        self.image_bytes = sum(3 * h * w for h, w in self.sizes)

    def frames(self, images):
        """Each camera's frames [batch, height, width, 3] of image rows [batch, image_bytes]."""
        out, offset = [], 0
        for height, width in self.sizes:
            size = 3 * height * width
            out.append(images[:, offset:offset + size].reshape(images.shape[0], height, width, 3))
            offset += size
        return out

    def forward(self, images):
        return torch.stack([camera(f) for camera, f in zip(self.cameras, self.frames(images))], dim=1)


class MlpPolicy(nn.Module):
    """The `mlp` policy: the flattened observation window, then the image encoder's keypoints
    of every camera, to the flattened action chunk."""

    def __init__(self, o):
        super().__init__()
        self.o = o
        image_features = 0
        if o["cameras"]:
            self.encoder = ImageEncoder(o)
            image_features = len(o["cameras"]) * self.encoder.features
        widths = [o["obs_dim"] * o["history"] + image_features, *o["hidden"], o["action_dim"] * o["chunk"]]
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(widths, widths[1:]))

    def forward(self, obs, history_length, images=None):
        del history_length  # the mlp reads the padded slots too
        x = obs.reshape(obs.shape[0], -1)
        if self.o["cameras"]:
            x = torch.cat([x, self.encoder(images).reshape(obs.shape[0], -1)], dim=1)
        activation = _ACTIVATIONS[self.o["activation"]]
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i + 1 < len(self.layers):
                x = activation(x)
        return x.reshape(obs.shape[0], self.o["chunk"], self.o["action_dim"])


class Block(nn.Module):
    """A pre-norm encoder block: masked self-attention then a GELU feed-forward network."""

    def __init__(self, d_model, heads, ffn):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d_model, eps=1e-5)
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.proj = nn.Linear(d_model, d_model)
        self.ln2 = nn.LayerNorm(d_model, eps=1e-5)
        self.fc1 = nn.Linear(d_model, ffn)
        self.fc2 = nn.Linear(ffn, d_model)

    def forward(self, x, allowed):
        h = x + self.proj(self._attend(self.qkv(self.ln1(x)), allowed))
        return h + self.fc2(F.gelu(self.fc1(self.ln2(h))))

    def _attend(self, qkv, allowed):
        batch, tokens, width = qkv.shape
        d_model = width // 3
        head_dim = d_model // self.heads
        q, k, v = qkv.view(batch, tokens, 3, self.heads, head_dim).permute(2, 0, 3, 1, 4)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(head_dim)
        weights = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
        return torch.matmul(weights, v).permute(0, 2, 1, 3).reshape(batch, tokens, d_model)


def time_features(t, width):
    """Sinusoidal features [batch, width] of flow times t [batch] in [0, 1]."""
    half = width // 2
    freqs = torch.exp(torch.arange(half, dtype=torch.float32) * (-math.log(10000.0) / half))
    angles = (t.float() * 1000.0).unsqueeze(-1) * freqs
    features = torch.cat([torch.sin(angles), torch.cos(angles)], dim=-1)
    if features.shape[-1] < width:
        features = torch.cat([features, torch.zeros(t.shape[0], width - features.shape[-1])], -1)
    return features


class TransformerPolicy(nn.Module):
    """The `transformer` policy: observation tokens, one token per camera, then action-query
    tokens under a prefix-LM mask (observations and cameras see each other, actions see them and
    earlier actions), with a regression head or a flow-matching head integrated from zero by
    Euler steps."""

    def __init__(self, o):
        super().__init__()
        self.o = o
        d = o["d_model"]
        self.obs_embed = nn.Linear(o["obs_dim"], d)
        self.obs_pos = nn.Parameter(torch.randn(o["history"], d) * 0.02)
        self.action_query = nn.Parameter(torch.randn(o["chunk"], d) * 0.02)
        self.blocks = nn.ModuleList(Block(d, o["heads"], o["ffn"]) for _ in range(o["layers"]))
        self.ln_f = nn.LayerNorm(d, eps=1e-5)
        self.head = nn.Linear(d, o["action_dim"])
        if o["flow_matching"]:
            self.action_in = nn.Linear(o["action_dim"], d)
            self.time_mlp = nn.Linear(d, d)
        self.prefix = o["history"] + len(o["cameras"])
        if o["cameras"]:
            self.encoder = ImageEncoder(o)
            self.camera_embed = nn.ModuleList(nn.Linear(self.encoder.features, d) for _ in o["cameras"])

    def forward(self, obs, history_length, images=None):
        batch = obs.shape[0]
        allowed = self._allowed(history_length)
        cameras = self._camera_tokens(images)
        if not self.o["flow_matching"]:
            queries = self.action_query.unsqueeze(0).expand(batch, -1, -1)
            return self._predict(obs, cameras, queries, allowed)
        steps = self.o["flow_steps"]
        x = torch.zeros(batch, self.o["chunk"], self.o["action_dim"])
        for k in range(steps):
            t = torch.full((batch,), float(k) / steps, dtype=torch.float32)
            x = x + self._predict(obs, cameras, self._flow_queries(x, t), allowed) / steps
        return x

    def _camera_tokens(self, images):
        """[batch, cameras, d_model], or None without cameras."""
        if not self.o["cameras"]:
            return None
        keypoints = self.encoder(images)
        return torch.stack([embed(keypoints[:, c]) for c, embed in enumerate(self.camera_embed)], dim=1)

    def _flow_queries(self, x_t, t):
        time = self.time_mlp(time_features(t, self.o["d_model"]))
        return self.action_query.unsqueeze(0) + self.action_in(x_t) + time.unsqueeze(1)

    def _allowed(self, history_length):
        """bool [batch, 1, tokens, tokens]: which key each query token may attend to."""
        history, prefix = self.o["history"], self.prefix
        total = prefix + self.o["chunk"]
        slot = torch.arange(total)
        query, key = slot.view(1, total, 1), slot.view(1, 1, total)
        first_real = (history - history_length.long()).view(-1, 1, 1)
        key_is_obs = key < prefix
        obs_query = (query < prefix) & key_is_obs
        action_query = (query >= prefix) & (key_is_obs | (key <= query))
        return (((key >= first_real) & (obs_query | action_query)) | (query == key)).unsqueeze(1)

    def _predict(self, obs, cameras, queries, allowed):
        tokens = [self.obs_embed(obs) + self.obs_pos.unsqueeze(0), queries]
        if cameras is not None:
            tokens.insert(1, cameras)
        x = torch.cat(tokens, dim=1)
        for block in self.blocks:
            x = block(x, allowed)
        return self.head(self.ln_f(x[:, self.prefix:]))


def build_model(kind, options):
    """A freshly initialised module of `kind` ("mlp" or "transformer") with `options` (the
    policy options of a checkpoint manifest); parameter names match roboloop's weights."""
    o = _options(kind, options)
    return MlpPolicy(o) if kind == "mlp" else TransformerPolicy(o)


def load_weights(model, path):
    """Copies the tensors of safetensors file `path` into `model`; ValueError names a missing,
    extra or mis-shaped tensor."""
    tensors = load_safetensors(path)
    expected = dict(model.named_parameters())
    for name, parameter in expected.items():
        if name not in tensors:
            raise ValueError(f"{path}: tensor {name} is missing")
        if list(tensors[name].shape) != list(parameter.shape):
            raise ValueError(f"{path}: tensor {name} has shape {list(tensors[name].shape)}, "
                             f"the policy needs {list(parameter.shape)}")
    extra = sorted(set(tensors) - set(expected))
    if extra:
        raise ValueError(f"{path}: tensor {extra[0]} is not part of this policy")
    model.load_state_dict(tensors, strict=True)


def _stats(normalization, side, dim):
    """(mean, std) tensors of one side of normalization.json, or None when it has none."""
    if side not in normalization:
        return None
    entry = normalization[side]
    stats = []
    for stat in ("mean", "std"):
        values = entry.get(stat)
        if not isinstance(values, list) or len(values) != dim:
            raise ValueError(f"normalization.{side}.{stat} must hold {dim} numbers")
        stats.append(torch.tensor(values, dtype=torch.float32))
    if not bool((stats[1] > 0).all()):
        raise ValueError(f"normalization.{side}.std must be positive")
    return stats


class ExportedPolicy:
    """A loaded policy: raw observation windows in, raw action chunks out."""

    def __init__(self, model, config, normalization):
        self.model = model.eval()
        self.config = config
        o = model.o
        self.obs_dim, self.action_dim = o["obs_dim"], o["action_dim"]
        self.history, self.chunk = o["history"], o["chunk"]
        self.image_bytes = model.encoder.image_bytes if o["cameras"] else 0
        self.obs_stats = _stats(normalization, "obs", self.obs_dim)
        self.action_stats = _stats(normalization, "action", self.action_dim)

    def act(self, obs, history_length=None, images=None):
        """Actions [batch, chunk, action_dim] for raw observations [batch, history, obs_dim]
        with history_length[b] (1..history, default history) real steps at the end of row b and,
        for a policy with cameras, the frames `images` uint8 [batch, image_bytes]."""
        obs = torch.as_tensor(obs, dtype=torch.float32)
        if obs.dim() != 3 or obs.shape[1] != self.history or obs.shape[2] != self.obs_dim:
            raise ValueError(f"obs must be [batch, {self.history}, {self.obs_dim}], "
                             f"got {list(obs.shape)}")
        if history_length is None:
            history_length = torch.full((obs.shape[0],), self.history, dtype=torch.int32)
        history_length = torch.as_tensor(history_length).reshape(-1)
        if history_length.shape[0] != obs.shape[0]:
            raise ValueError(f"history_length must hold {obs.shape[0]} entries")
        if bool((history_length < 1).any()) or bool((history_length > self.history).any()):
            raise ValueError(f"history_length entries must lie in 1..{self.history}")
        if self.image_bytes:
            images = torch.as_tensor(images) if images is not None else None
            if images is None or images.numel() != obs.shape[0] * self.image_bytes:
                raise ValueError(f"images must be uint8 [batch, {self.image_bytes}] for the policy's cameras")
            if images.dtype != torch.uint8:
                raise ValueError(f"images are {images.dtype}, but the policy reads uint8 RGB frames (0..255); "
                                 "frames scaled to [0, 1] must be scaled back")
            images = images.reshape(obs.shape[0], self.image_bytes)
        elif images is not None:
            raise ValueError("the policy has no cameras but images were given")
        with torch.no_grad():
            if self.obs_stats is not None:
                obs = (obs - self.obs_stats[0]) / self.obs_stats[1]
            out = self.model(obs, history_length, images)
            if self.action_stats is not None:
                out = out * self.action_stats[1] + self.action_stats[0]
        return out


def _read_json(path):
    """The JSON document at `path`; ValueError naming the file when it is not valid JSON."""
    with open(path, "rb") as f:
        data = f.read()
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: not a valid UTF-8 JSON file: {e}") from e


def load_policy(directory):
    """Loads the export folder `directory` (config.json, model.safetensors,
    normalization.json); ValueError names the file and what is wrong."""
    config = _read_json(os.path.join(directory, "config.json"))
    if config.get("format") != FORMAT or config.get("version") != VERSION:
        raise ValueError(f"{directory}/config.json is not a {FORMAT} version {VERSION} file")
    policy = config["policy"]
    model = build_model(policy["kind"], policy.get("options", {}))
    load_weights(model, os.path.join(directory, "model.safetensors"))
    normalization = _read_json(os.path.join(directory, "normalization.json"))
    return ExportedPolicy(model, config, normalization)


def main(argv):
    """`python3 roboloop_policy.py DIR`: loads DIR and prints what the policy reads and writes."""
    if len(argv) != 2:
        print(f"usage: {argv[0]} EXPORT_DIR", file=sys.stderr)
        return 2
    policy = load_policy(argv[1])
    zeros = torch.zeros(1, policy.history, policy.obs_dim)
    reads = f"obs [batch, {policy.history}, {policy.obs_dim}]"
    images = None
    if policy.image_bytes:
        images = torch.zeros(1, policy.image_bytes, dtype=torch.uint8)  # black frames of every camera
        cameras = ", ".join(f"{c['name']} {c['height']}x{c['width']}x3"
                            for c in policy.model.o["cameras"])
        reads += f" + images uint8 [batch, {policy.image_bytes}] ({cameras})"
    actions = policy.act(zeros, images=images)
    print(f"{policy.config.get('model', '?')} ({policy.config['policy']['kind']}): {reads} -> actions "
          f"{list(actions.shape[1:])} per row")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
