"""The curated vocabulary of kernel-worthy PyTorch APIs: canonical names, categories and the spellings of each.

Every entry is one op a GPU kernel can implement (a matmul, a conv, a norm, an activation...). The Proposer is
prompted with sets drawn from these names, co-occurrence is mined over them, and the usage check accepts any
spelling of an entry: a task asked for `F.relu` passes with `nn.ReLU()`, `torch.relu(x)` or `x.relu()`.

Names are the extractor's canonical names (see `extract.py`): `nn.Conv2d`, `F.gelu`, `torch.matmul`,
`Tensor.view`, `op.add`. Each entry's key is the spelling shown to the Proposer; its aliases are the other
spellings of the same op. Where module and functional forms exist, the key is the form people write most.

Left out on purpose: dropout and other random ops (a task must be deterministic: validation runs it twice), casts and
device moves, tensor creation (`torch.zeros`, `torch.arange`), and recurrent layers (one "API" that is a whole
model, and not a single kernel).
"""

from __future__ import annotations

from collections.abc import Iterable

CATEGORIES = (
    "matmul", "conv", "norm", "activation", "reduction", "pooling", "softmax", "loss", "elementwise", "indexing",
)  # fmt: skip

# category -> {canonical name: other spellings of the same op}
_VOCAB: dict[str, dict[str, tuple[str, ...]]] = {
    "matmul": {
        "torch.matmul": ("op.matmul", "Tensor.matmul", "torch.mm", "Tensor.mm", "torch.mv", "Tensor.mv"),
        "torch.bmm": ("Tensor.bmm",),
        "torch.baddbmm": ("Tensor.baddbmm",),
        "torch.addmm": ("Tensor.addmm",),
        "torch.einsum": (),
        "torch.outer": ("Tensor.outer", "torch.ger"),
        "torch.cdist": (),
        "nn.Linear": ("F.linear",),
        "nn.Bilinear": ("F.bilinear",),
        "F.scaled_dot_product_attention": (),
        "nn.MultiheadAttention": ("F.multi_head_attention_forward",),
    },
    "conv": {
        "nn.Conv1d": ("F.conv1d",),
        "nn.Conv2d": ("F.conv2d",),
        "nn.Conv3d": ("F.conv3d",),
        "nn.ConvTranspose1d": ("F.conv_transpose1d",),
        "nn.ConvTranspose2d": ("F.conv_transpose2d",),
        "nn.ConvTranspose3d": ("F.conv_transpose3d",),
        "F.unfold": ("nn.Unfold",),
        "F.fold": ("nn.Fold",),
    },
    "norm": {
        "nn.LayerNorm": ("F.layer_norm",),
        "nn.GroupNorm": ("F.group_norm",),
        "nn.BatchNorm1d": (),
        "nn.BatchNorm2d": (),
        "nn.BatchNorm3d": (),
        "F.batch_norm": (),
        "nn.InstanceNorm1d": (),
        "nn.InstanceNorm2d": (),
        "nn.InstanceNorm3d": (),
        "F.instance_norm": (),
        "nn.RMSNorm": ("F.rms_norm",),
        "F.normalize": (),
        "nn.LocalResponseNorm": ("F.local_response_norm",),
    },
    "activation": {
        "F.relu": ("nn.ReLU", "torch.relu", "Tensor.relu"),
        "F.relu6": ("nn.ReLU6",),
        "F.leaky_relu": ("nn.LeakyReLU",),
        "F.elu": ("nn.ELU",),
        "F.selu": ("nn.SELU", "torch.selu"),
        "F.celu": ("nn.CELU", "torch.celu"),
        "F.gelu": ("nn.GELU",),
        "F.silu": ("nn.SiLU",),
        "F.mish": ("nn.Mish",),
        "F.softplus": ("nn.Softplus",),
        "F.softsign": ("nn.Softsign",),
        "F.hardtanh": ("nn.Hardtanh",),
        "F.hardswish": ("nn.Hardswish",),
        "F.hardsigmoid": ("nn.Hardsigmoid",),
        "F.hardshrink": ("nn.Hardshrink", "Tensor.hardshrink"),
        "F.softshrink": ("nn.Softshrink",),
        "F.tanhshrink": ("nn.Tanhshrink",),
        "F.prelu": ("nn.PReLU",),
        "F.glu": ("nn.GLU",),
        "F.logsigmoid": ("nn.LogSigmoid",),
        "F.threshold": ("nn.Threshold",),
        "torch.sigmoid": ("nn.Sigmoid", "F.sigmoid", "Tensor.sigmoid", "torch.special.expit"),
        "torch.tanh": ("nn.Tanh", "F.tanh", "Tensor.tanh"),
    },
    "softmax": {
        "F.softmax": ("nn.Softmax", "torch.softmax", "Tensor.softmax", "torch.special.softmax"),
        "F.log_softmax": ("nn.LogSoftmax", "torch.log_softmax", "Tensor.log_softmax"),
        "F.softmin": ("nn.Softmin",),
        "torch.logsumexp": ("Tensor.logsumexp", "torch.special.logsumexp"),
    },
    "reduction": {
        "torch.sum": ("Tensor.sum",),
        "torch.mean": ("Tensor.mean",),
        "torch.max": ("Tensor.max",),
        "torch.min": ("Tensor.min",),
        "torch.amax": ("Tensor.amax",),
        "torch.amin": ("Tensor.amin",),
        "torch.argmax": ("Tensor.argmax",),
        "torch.argmin": ("Tensor.argmin",),
        "torch.prod": ("Tensor.prod",),
        "torch.std": ("Tensor.std",),
        "torch.var": ("Tensor.var",),
        "torch.var_mean": (),
        "torch.cumsum": ("Tensor.cumsum",),
        "torch.cumprod": ("Tensor.cumprod",),
        "torch.norm": ("Tensor.norm", "torch.linalg.norm", "torch.linalg.vector_norm", "torch.linalg.matrix_norm"),
        "torch.all": ("Tensor.all",),
        "torch.any": ("Tensor.any",),
        "torch.topk": ("Tensor.topk",),
        "torch.sort": ("Tensor.sort",),
        "torch.argsort": ("Tensor.argsort",),
        "torch.median": ("Tensor.median",),
        "F.cosine_similarity": ("nn.CosineSimilarity", "torch.cosine_similarity"),
        "F.pairwise_distance": ("nn.PairwiseDistance", "torch.pairwise_distance"),
    },
    "pooling": {
        "nn.MaxPool1d": ("F.max_pool1d",),
        "nn.MaxPool2d": ("F.max_pool2d",),
        "nn.MaxPool3d": ("F.max_pool3d",),
        "nn.AvgPool1d": ("F.avg_pool1d",),
        "nn.AvgPool2d": ("F.avg_pool2d",),
        "nn.AvgPool3d": ("F.avg_pool3d",),
        "nn.AdaptiveAvgPool1d": ("F.adaptive_avg_pool1d",),
        "nn.AdaptiveAvgPool2d": ("F.adaptive_avg_pool2d",),
        "nn.AdaptiveAvgPool3d": ("F.adaptive_avg_pool3d",),
        "nn.AdaptiveMaxPool1d": ("F.adaptive_max_pool1d",),
        "nn.AdaptiveMaxPool2d": ("F.adaptive_max_pool2d",),
        "nn.AdaptiveMaxPool3d": ("F.adaptive_max_pool3d",),
        "F.interpolate": ("nn.Upsample", "nn.UpsamplingNearest2d", "nn.UpsamplingBilinear2d", "F.upsample"),
    },
    "loss": {
        "F.mse_loss": ("nn.MSELoss",),
        "F.l1_loss": ("nn.L1Loss",),
        "F.smooth_l1_loss": ("nn.SmoothL1Loss",),
        "F.huber_loss": ("nn.HuberLoss",),
        "F.cross_entropy": ("nn.CrossEntropyLoss",),
        "F.nll_loss": ("nn.NLLLoss",),
        "F.binary_cross_entropy": ("nn.BCELoss",),
        "F.binary_cross_entropy_with_logits": ("nn.BCEWithLogitsLoss",),
        "F.kl_div": ("nn.KLDivLoss",),
        "F.hinge_embedding_loss": ("nn.HingeEmbeddingLoss",),
        "F.margin_ranking_loss": ("nn.MarginRankingLoss",),
        "F.triplet_margin_loss": ("nn.TripletMarginLoss",),
        "F.cosine_embedding_loss": ("nn.CosineEmbeddingLoss",),
        "F.soft_margin_loss": ("nn.SoftMarginLoss",),
    },
    "elementwise": {
        "op.add": ("torch.add", "Tensor.add"),
        "op.sub": ("torch.sub", "Tensor.sub", "torch.subtract", "Tensor.subtract", "torch.rsub"),
        "op.mul": ("torch.mul", "Tensor.mul", "torch.multiply", "Tensor.multiply"),
        "op.div": ("torch.div", "Tensor.div", "torch.divide", "Tensor.divide", "torch.true_divide", "op.floordiv"),
        "op.pow": ("torch.pow", "Tensor.pow", "torch.float_power"),
        "op.neg": ("torch.neg", "Tensor.neg", "torch.negative"),
        "op.mod": ("torch.remainder", "Tensor.remainder", "torch.fmod", "Tensor.fmod"),
        "op.gt": ("op.ge", "torch.gt", "torch.ge", "Tensor.gt", "Tensor.ge", "torch.greater"),
        "op.lt": ("op.le", "torch.lt", "torch.le", "Tensor.lt", "Tensor.le", "torch.less"),
        "op.eq": ("op.ne", "torch.eq", "torch.ne", "Tensor.eq", "Tensor.ne"),
        "torch.abs": ("Tensor.abs",),
        "torch.exp": ("Tensor.exp", "torch.special.exp2", "torch.exp2", "torch.expm1", "Tensor.expm1"),
        "torch.log": ("Tensor.log", "torch.log2", "torch.log10"),
        "torch.log1p": ("Tensor.log1p",),
        "torch.sqrt": ("Tensor.sqrt",),
        "torch.rsqrt": ("Tensor.rsqrt",),
        "torch.reciprocal": ("Tensor.reciprocal",),
        "torch.sin": ("Tensor.sin",),
        "torch.cos": ("Tensor.cos",),
        "torch.erf": ("Tensor.erf", "torch.special.erf"),
        "torch.clamp": (
            "Tensor.clamp",
            "torch.clip",
            "Tensor.clip",
            "torch.clamp_min",
            "Tensor.clamp_min",
            "torch.clamp_max",
            "Tensor.clamp_max",
        ),
        "torch.where": ("Tensor.where",),
        "torch.maximum": ("Tensor.maximum",),
        "torch.minimum": ("Tensor.minimum",),
        "torch.sign": ("Tensor.sign",),
        "torch.floor": ("Tensor.floor",),
        "torch.ceil": ("Tensor.ceil",),
        "torch.round": ("Tensor.round",),
        "torch.square": ("Tensor.square",),
        "torch.lerp": ("Tensor.lerp",),
        "torch.addcmul": ("Tensor.addcmul",),
    },
    "indexing": {
        "Tensor.view": ("Tensor.reshape", "torch.reshape", "Tensor.view_as", "Tensor.reshape_as"),
        "torch.flatten": ("Tensor.flatten", "nn.Flatten"),
        "torch.permute": ("Tensor.permute",),
        "torch.transpose": ("Tensor.transpose", "Tensor.t", "torch.t", "Tensor.T", "Tensor.mT", "torch.swapaxes"),
        "torch.cat": ("torch.concat", "torch.concatenate"),
        "torch.stack": (),
        "torch.split": (
            "Tensor.split",
            "torch.chunk",
            "Tensor.chunk",
            "torch.tensor_split",
            "torch.unbind",
            "Tensor.unbind",
        ),
        "Tensor.expand": ("Tensor.expand_as", "torch.broadcast_to"),
        "Tensor.repeat": ("torch.tile", "Tensor.tile"),
        "torch.repeat_interleave": ("Tensor.repeat_interleave",),
        "torch.gather": ("Tensor.gather", "torch.take_along_dim"),
        "torch.scatter": ("Tensor.scatter", "torch.scatter_add", "Tensor.scatter_add", "Tensor.index_add"),
        "torch.index_select": ("Tensor.index_select",),
        "torch.masked_fill": ("Tensor.masked_fill",),
        "torch.tril": ("Tensor.tril",),
        "torch.triu": ("Tensor.triu",),
        "torch.flip": ("Tensor.flip",),
        "torch.roll": ("Tensor.roll",),
        "torch.diag": ("Tensor.diag", "torch.diagonal", "Tensor.diagonal", "torch.diag_embed"),
        "torch.squeeze": ("Tensor.squeeze",),
        "torch.unsqueeze": ("Tensor.unsqueeze",),
        "Tensor.contiguous": (),
        "F.pad": (),
        "nn.Embedding": ("F.embedding",),
        "F.one_hot": (),
        "F.pixel_shuffle": ("nn.PixelShuffle", "F.pixel_unshuffle", "nn.PixelUnshuffle"),
        "F.grid_sample": (),
    },
}

# canonical name -> category
VOCABULARY: dict[str, str] = {name: cat for cat, entries in _VOCAB.items() for name in entries}
# any spelling (canonical names included) -> canonical name
ALIASES: dict[str, str] = {name: name for name in VOCABULARY} | {
    alias: name for entries in _VOCAB.values() for name, aliases in entries.items() for alias in aliases
}


def _check_tables() -> None:
    """Our own tables must be consistent: every category known, no spelling claimed by two entries."""
    assert set(_VOCAB) == set(CATEGORIES), sorted(set(_VOCAB) ^ set(CATEGORIES))
    seen: dict[str, str] = {}
    for entries in _VOCAB.values():
        for name, aliases in entries.items():
            for spelling in (name, *aliases):
                assert spelling not in seen, f"{spelling} listed under both {seen[spelling]} and {name}"
                seen[spelling] = name


_check_tables()


def to_vocab(name: str) -> str | None:
    """The vocabulary entry a canonical API name spells, or None when it is not a kernel-worthy op."""
    return ALIASES.get(name)


def vocab_apis(names: Iterable[str]) -> tuple[str, ...]:
    """The vocabulary entries among extracted API names, in first-seen order, each once."""
    out: dict[str, None] = {}
    for name in names:
        entry = ALIASES.get(name)
        if entry is not None:
            out[entry] = None
    return tuple(out)


def category(name: str) -> str:
    """The category of a vocabulary entry or any of its spellings; a one-line ValueError for anything else."""
    entry = ALIASES.get(name)
    if entry is None:
        raise ValueError(f"unknown API {name!r}: not in the vocabulary (see kernelzero.apis.vocab.VOCABULARY)")
    return VOCABULARY[entry]


def check_names(names: Iterable[str], what: str = "API") -> tuple[str, ...]:
    """Map user-given names (any spelling) to vocabulary entries; a one-line ValueError names the first unknown."""
    out = []
    for name in names:
        entry = ALIASES.get(name)
        if entry is None:
            raise ValueError(f"unknown {what} {name!r}: not in the vocabulary (e.g. 'nn.Conv2d', 'F.gelu', 'op.add')")
        out.append(entry)
    return tuple(out)
