"""The model zoo: the models graphc is benchmarked on from now on, with random
weights (nothing is downloaded), built from torchvision, timm and transformers on
the GPU machine. scripts/export_models.py exports them (each with the exporter named
here: PyTorch's legacy TorchScript exporter at opset 17, or the dynamo exporter at
opset 18; the other one is the fallback) and scripts/bench.py times the same modules.
The configurations (batch sizes, input shapes) are in bench_common.ZOO_CONFIGS.

Each entry: name -> (builder, exporter). A builder takes `attn` ("eager": explicit
MatMul/Softmax attention, as users export for ONNX; "sdpa": PyTorch's default, for the
PyTorch side of the benchmark) and returns (module, example args, input names). Every
module takes its inputs positionally under its ONNX input names and returns one tensor.
"""
import torch

# Per-model exporter: about half of the zoo goes through each (the issue asks for both).
LEGACY, DYNAMO = "legacy", "dynamo"


class Positional(torch.nn.Module):
    """Calls `inner` with keyword arguments named as the ONNX inputs, and returns one
    tensor: `pick` selects it from a tuple/ModelOutput/dict result."""

    def __init__(self, inner, names, pick=0):
        super().__init__()
        self.inner = inner
        self.names = list(names)
        self.pick = pick

    def forward(self, *args):
        out = self.inner(**dict(zip(self.names, args))) if self.kwargs else self.inner(*args)
        if isinstance(out, dict):
            return out[self.pick] if not isinstance(self.pick, int) else list(out.values())[self.pick]
        if isinstance(out, (tuple, list)):
            return out[self.pick]
        if hasattr(out, "last_hidden_state"):
            return out.last_hidden_state
        return out

    kwargs = True


class Direct(Positional):
    """For modules whose forward takes the inputs positionally (torchvision)."""

    kwargs = False


def _image(size=224, batch=1):
    return torch.randn(batch, 3, size, size)


def _tv(fn_name, size=224, **kw):
    def build(attn):
        import torchvision

        fn = getattr(torchvision.models, fn_name)
        return Direct(fn(weights=None, **kw), ["input"]), (_image(size),), ["input"]
    return build


def _tv_seg(fn_name, size=520):
    def build(attn):
        import torchvision

        fn = getattr(torchvision.models.segmentation, fn_name)
        model = fn(weights=None, weights_backbone=None, aux_loss=False)
        return Direct(model, ["input"], pick="out"), (_image(size),), ["input"]
    return build


def _timm(model_name, size=224):
    def build(attn):
        import timm

        model = timm.create_model(model_name, pretrained=False)
        return Direct(model, ["input"]), (_image(size),), ["input"]
    return build


def _text(kind, vocab, seq=128):
    """A transformers encoder over token ids and an attention mask."""

    def build(attn):
        import transformers as tf

        if kind == "roberta":
            cfg = tf.RobertaConfig()  # roberta-base: 12 layers, 768 wide
            cfg._attn_implementation = attn
            model = tf.RobertaModel(cfg, add_pooling_layer=False)
        elif kind == "albert":
            cfg = tf.AlbertConfig(embedding_size=128, hidden_size=768, num_hidden_layers=12,
                                  num_attention_heads=12, intermediate_size=3072)  # albert-base-v2
            cfg._attn_implementation = attn
            model = tf.AlbertModel(cfg, add_pooling_layer=False)
        elif kind == "t5":
            cfg = tf.T5Config(d_model=768, d_ff=3072, num_layers=12, num_heads=12, d_kv=64)  # t5-base
            cfg._attn_implementation = attn
            model = tf.T5EncoderModel(cfg)
        elif kind == "bart":
            cfg = tf.BartConfig(d_model=768, encoder_layers=6, decoder_layers=6, encoder_attention_heads=12,
                                decoder_attention_heads=12, encoder_ffn_dim=3072, decoder_ffn_dim=3072)  # bart-base
            cfg._attn_implementation = attn
            model = tf.BartModel(cfg).get_encoder()
        else:
            raise SystemExit(f"unknown text model {kind}")
        ids = torch.randint(0, vocab, (1, seq))
        mask = torch.ones(1, seq, dtype=torch.int64)
        names = ["input_ids", "attention_mask"]
        return Positional(model, names), (ids, mask), names
    return build


def _clip_vision(attn):
    import transformers as tf

    cfg = tf.CLIPVisionConfig(patch_size=32)  # ViT-B/32 image tower: 12 layers, 768 wide, 224 px
    cfg._attn_implementation = attn
    return Positional(tf.CLIPVisionModel(cfg), ["pixel_values"]), (_image(),), ["input"]


def _wav2vec2(attn):
    import transformers as tf

    cfg = tf.Wav2Vec2Config()  # wav2vec2-base: 12 layers, 768 wide, conv feature encoder
    cfg._attn_implementation = attn
    return Positional(tf.Wav2Vec2Model(cfg), ["input_values"]), (torch.randn(1, 16000),), ["input_values"]


class UNetBlock(torch.nn.Module):
    """A diffusion-UNet up block at SD 1.x's 32x32 level: two GroupNorm/SiLU/conv
    residual blocks, a spatial self-attention block (GroupNorm, QKV projection over
    H*W tokens, output projection, residual), nearest 2x upsampling and a conv."""

    def __init__(self, ch=320, heads=8, attn="eager"):
        super().__init__()
        self.attn_impl = attn
        self.heads = heads

        def res_block():
            return torch.nn.ModuleDict({
                "n1": torch.nn.GroupNorm(32, ch), "c1": torch.nn.Conv2d(ch, ch, 3, padding=1),
                "n2": torch.nn.GroupNorm(32, ch), "c2": torch.nn.Conv2d(ch, ch, 3, padding=1)})
        self.res = torch.nn.ModuleList([res_block(), res_block()])
        self.attn_norm = torch.nn.GroupNorm(32, ch)
        self.qkv = torch.nn.Linear(ch, 3 * ch)
        self.proj = torch.nn.Linear(ch, ch)
        self.up_conv = torch.nn.Conv2d(ch, ch, 3, padding=1)

    def forward(self, input):  # noqa: A002 - the ONNX input's name
        x = input
        act = torch.nn.functional.silu
        for r in self.res:
            h = r["c1"](act(r["n1"](x)))
            x = x + r["c2"](act(r["n2"](h)))
        b, c, hh, ww = x.shape
        t = self.attn_norm(x).reshape(b, c, hh * ww).transpose(1, 2)  # [B, HW, C]
        q, k, v = self.qkv(t).chunk(3, dim=-1)
        split = lambda z: z.reshape(b, hh * ww, self.heads, c // self.heads).transpose(1, 2)  # noqa: E731
        q, k, v = split(q), split(k), split(v)
        if self.attn_impl == "sdpa":
            o = torch.nn.functional.scaled_dot_product_attention(q, k, v)
        else:
            s = (q @ k.transpose(-1, -2)) * (c // self.heads) ** -0.5
            o = s.softmax(-1) @ v
        o = self.proj(o.transpose(1, 2).reshape(b, hh * ww, c))
        x = x + o.transpose(1, 2).reshape(b, c, hh, ww)
        x = torch.nn.functional.interpolate(x, scale_factor=2.0, mode="nearest")
        return self.up_conv(x)


def _unet_block(attn):
    return UNetBlock(attn=attn), (torch.randn(1, 320, 32, 32),), ["input"]


ZOO = {
    # CNNs
    "resnext50": (_tv("resnext50_32x4d"), LEGACY),
    "mobilenet_v3_large": (_tv("mobilenet_v3_large"), LEGACY),
    "efficientnet_v2_s": (_tv("efficientnet_v2_s"), DYNAMO),
    # The dynamo exporter fails on it (TorchExportError, PyTorch 2.11) after
    # ~60 s, so the legacy exporter comes first.
    "convnext_small": (_tv("convnext_small"), LEGACY),
    "regnet_y_400mf": (_tv("regnet_y_400mf"), DYNAMO),
    "densenet121": (_tv("densenet121"), LEGACY),
    "inception_v3": (_tv("inception_v3", size=299, aux_logits=False, init_weights=False), LEGACY),
    # vision transformers
    "deit_small": (_timm("deit_small_patch16_224"), DYNAMO),
    "swin_s": (_tv("swin_s"), DYNAMO),
    "clip_vit_b32": (_clip_vision, LEGACY),
    # NLP encoders
    "roberta": (_text("roberta", 50265), DYNAMO),
    "albert": (_text("albert", 30000), LEGACY),
    "t5_base_enc": (_text("t5", 32128), DYNAMO),
    "bart_base_enc": (_text("bart", 50265), LEGACY),
    # speech
    "wav2vec2_base": (_wav2vec2, DYNAMO),
    # segmentation at 520x520
    "deeplabv3_mbv3": (_tv_seg("deeplabv3_mobilenet_v3_large"), LEGACY),
    "fcn_resnet50": (_tv_seg("fcn_resnet50"), DYNAMO),
    # diffusion
    "unet_block": (_unet_block, DYNAMO),
}


def build(name, attn="eager"):
    """(module, example args, input names, dynamic axes: batch on every input)."""
    builder, _ = ZOO[name]
    torch.manual_seed(0)
    model, args, names = builder(attn)
    return model, args, names, {n: {0: "batch"} for n in names}


def exporter(name):
    return ZOO[name][1] if name in ZOO else LEGACY
