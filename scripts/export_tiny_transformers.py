# Tiny BERT, GPT-2 and RoBERTa (2 layers, hidden 64, 4 heads, vocab 100) and a tiny torchvision
# ViT (32x32 images, 16x16 patches, 2 layers, hidden 64) exported
# by PyTorch's legacy exporter at opset 17 with dynamic batch (and sequence) axes,
# for range-engine tests (models/tiny/README.md). Deterministic weights (seed 0).
#   python scripts/export_tiny_transformers.py models/tiny
import os, sys
import torch
import transformers as tf

OUT = sys.argv[1] if len(sys.argv) > 1 else "models/tiny"
os.makedirs(OUT, exist_ok=True)
SMALL = dict(num_hidden_layers=2, hidden_size=64, num_attention_heads=4, intermediate_size=128,
             vocab_size=100, max_position_embeddings=128)


class Encoder(torch.nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, input_ids, attention_mask):
        return self.inner(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


def build(kind):
    if kind == "bert":
        cfg = tf.BertConfig(**SMALL)
        cfg._attn_implementation = "eager"
        return tf.BertModel(cfg, add_pooling_layer=False)
    if kind == "roberta":
        cfg = tf.RobertaConfig(**dict(SMALL, max_position_embeddings=130), pad_token_id=1)
        cfg._attn_implementation = "eager"
        return tf.RobertaModel(cfg, add_pooling_layer=False)
    if kind == "gpt2":
        cfg = tf.GPT2Config(n_layer=2, n_embd=64, n_head=4, n_inner=128, vocab_size=100,
                            n_positions=128, use_cache=False)
        cfg._attn_implementation = "eager"
        return tf.GPT2Model(cfg)
    raise SystemExit(f"unknown model {kind}")


def main():
    for kind in ("bert", "gpt2", "roberta"):
        torch.manual_seed(0)
        model = Encoder(build(kind).eval()).eval()
        ids = torch.randint(2, 100, (2, 16))
        mask = torch.ones(2, 16, dtype=torch.int64)
        axes = {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"},
                "last_hidden_state": {0: "batch", 1: "seq"}}
        path = os.path.join(OUT, f"{kind}_tiny.onnx")
        with torch.no_grad():
            torch.onnx.export(model, (ids, mask), path, opset_version=17, dynamo=False,
                              input_names=["input_ids", "attention_mask"],
                              output_names=["last_hidden_state"], dynamic_axes=axes,
                              do_constant_folding=True)
        print(path, os.path.getsize(path), "bytes")
    export_vit(os.path.join(OUT, "vit_tiny.onnx"))


def export_vit(path):
    """torchvision's VisionTransformer (as vit_b_16, smaller) over a batch range."""
    import torchvision

    torch.manual_seed(0)
    torch.backends.mha.set_fastpath_enabled(False)  # the fused path has no ONNX export
    model = torchvision.models.VisionTransformer(image_size=32, patch_size=16, num_layers=2,
                                                 num_heads=4, hidden_dim=64, mlp_dim=128,
                                                 num_classes=10).eval()
    with torch.no_grad():
        torch.onnx.export(model, (torch.randn(2, 3, 32, 32),), path, opset_version=17,
                          dynamo=False, input_names=["input"], output_names=["output"],
                          dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
                          do_constant_folding=True)
    print(path, os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
