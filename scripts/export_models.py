#!/usr/bin/env python3
"""Exports the real models graphc is measured on, with random weights (nothing is
downloaded): torchvision resnet50, mobilenet_v2, vit_b_16; transformers BERT-base
(bert-base-uncased's config) and GPT-2 small (gpt2's config), seq 128, no KV cache.

Runs where PyTorch, torchvision and transformers are installed (the GPU machine).
Each model is tried with the legacy TorchScript exporter at opset 17 first and
the dynamo exporter at opset 18 when that fails. The batch dim is symbolic
("batch"), so one file serves batch 1 and 32 (`graphc ... --shape input:32x3x224x224`).

  python3 scripts/export_models.py --out /tmp/models [--models resnet50 bert ...]

Writes OUT/<name>.onnx (and <name>.onnx.data when the exporter keeps weights
outside) and OUT/manifest.json: per model the exporter, opset, inputs and seconds.
"""
import argparse
import inspect
import json
import os
import sys
import time

import torch

import zoo_models

SEQ = 128
MODELS = ["resnet50", "mobilenet_v2", "vit_b_16", "bert", "gpt2", "bert_s512", "whisper_base_enc"] + list(
    zoo_models.ZOO)


def build(name, attn="eager"):
    """(module, example inputs tuple, input names, dynamic axes) with random weights.
    `attn`: transformers' attention implementation: "eager" (explicit MatMul/Softmax,
    as ORT/TensorRT users export) for the ONNX file, "sdpa" (PyTorch's default,
    scaled_dot_product_attention) for the PyTorch side of the benchmark."""
    torch.manual_seed(0)
    if name in zoo_models.ZOO:
        return zoo_models.build(name, attn)
    if name in ("resnet50", "mobilenet_v2", "vit_b_16"):
        import torchvision

        model = getattr(torchvision.models, name)(weights=None)
        x = torch.randn(1, 3, 224, 224)
        return model, (x,), ["input"], {"input": {0: "batch"}}
    import transformers

    if name in ("bert", "bert_s512"):
        seq = 512 if name == "bert_s512" else SEQ
        config = transformers.BertConfig()  # bert-base-uncased: 12 layers, 768 hidden, 12 heads
        config._attn_implementation = attn
        model = transformers.BertModel(config, add_pooling_layer=False)
        ids = torch.randint(0, config.vocab_size, (1, seq))
        mask = torch.ones(1, seq, dtype=torch.int64)
        return (model, (ids, mask), ["input_ids", "attention_mask"],
                {"input_ids": {0: "batch"}, "attention_mask": {0: "batch"}})
    if name == "gpt2":
        config = transformers.GPT2Config(use_cache=False)  # gpt2 small: 12 layers, 768 hidden
        config._attn_implementation = attn
        model = transformers.GPT2Model(config)
        ids = torch.randint(0, config.vocab_size, (1, SEQ))
        return model, (ids,), ["input_ids"], {"input_ids": {0: "batch"}}
    if name == "whisper_base_enc":
        # whisper-base's encoder: 6 layers, 512 wide, 8 heads of 64, 1500 positions.
        config = transformers.WhisperConfig(d_model=512, encoder_layers=6, encoder_attention_heads=8,
                                            encoder_ffn_dim=2048, num_mel_bins=80,
                                            max_source_positions=1500)
        config._attn_implementation = attn
        model = transformers.models.whisper.modeling_whisper.WhisperEncoder(config)
        feats = torch.randn(1, 80, 3000)
        return model, (feats,), ["input_features"], {"input_features": {0: "batch"}}
    raise SystemExit(f"unknown model {name}")


class ImageModel(torch.nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, input):  # noqa: A002 - the ONNX input's name
        return self.inner(input)


class BertLike(torch.nn.Module):
    """Transformers return ModelOutput objects; export the last hidden state."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, input_ids, attention_mask):
        return self.inner(input_ids=input_ids, attention_mask=attention_mask)[0]


class GptLike(torch.nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, input_ids):
        return self.inner(input_ids=input_ids)[0]


class FirstOutput(torch.nn.Module):
    """A transformers encoder called with one positional input; its last hidden state."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, input_features):
        return self.inner(input_features)[0]


def make_realistic(model, args):
    """Random init leaves what training would change constant: zero biases, unit
    norm scales, ViT's all-zero head, BatchNorm statistics that do not match the
    activations (MobileNetV2's logits then shrink to ~1e-9, below fp16's range).
    A check on constant or vanishing outputs cannot fail, so: perturb every
    constant parameter, set the BatchNorm statistics from a few random batches
    as training would (cumulative average), and halve each residual branch's
    closing BatchNorm so the calibrated network does not amplify rounding ~40x
    (see docs/reports/real-models.md)."""
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in model.parameters():
            if p.is_floating_point() and p.numel() > 0 and bool((p == p.flatten()[0]).all()):
                v = float(p.flatten()[0])
                scale = 0.1 if v != 0.0 else 0.02
                p.add_(scale * torch.randn(p.shape, generator=g))
        norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
        if norms:
            for m in norms:
                m.reset_running_stats()
                m.momentum = None  # cumulative average over the calibration batches
            model.train()
            for _ in range(4):
                model(*[torch.randn((8,) + tuple(a.shape[1:]), generator=g) for a in args])
            # Channels that random weights leave nearly dead get a tiny variance,
            # which BatchNorm turns into a scale of up to 1/sqrt(eps) ~ 300x; trained
            # networks do not have such channels. A floor at a tenth of the median
            # variance removes them (on the H100 it changed graphc's fp16 ResNet-50
            # error against onnxruntime little, 2.28e-2 -> 2.24e-2: see
            # docs/reports/real-models.md for where that error comes from).
            for m in norms:
                m.running_var.clamp_(min=0.1 * float(m.running_var.median()))
            # Calibrated random residual networks are chaotic: every block adds a
            # unit-variance random function, so rounding anywhere is amplified
            # ~40x (H100: PyTorch's own fp16 ResNet-50 3.2e-2 relative L2 from
            # fp32, even its default TF32 convolutions 1.9e-2), which no trained
            # network does. Halving each residual branch's last BatchNorm (as
            # zero-init-residual training recipes start from, less extreme) keeps
            # the outputs input-dependent (7-10% between two random images) while
            # fp16 rounding stays at ~1e-3 (measured on the CPU with fp16 storage
            # emulated; docs/reports/real-models.md).
            with torch.no_grad():
                for bn in residual_branch_norms(model):
                    bn.weight.mul_(RESIDUAL_BRANCH_SCALE)
                    bn.bias.mul_(RESIDUAL_BRANCH_SCALE)
    return model.eval()


RESIDUAL_BRANCH_SCALE = 0.5


def residual_branch_norms(model):
    """The BatchNorm closing each residual branch (torchvision ResNet bottlenecks and
    basic blocks, MobileNetV2 inverted residuals that add their input)."""
    out = []
    for m in model.modules():
        name = type(m).__name__
        if name == "Bottleneck" and hasattr(m, "bn3"):
            out.append(m.bn3)
        elif name == "BasicBlock" and hasattr(m, "bn2"):
            out.append(m.bn2)
        elif name == "InvertedResidual" and getattr(m, "use_res_connect", False) and hasattr(m, "conv"):
            last = m.conv[-1]  # MobileNetV2 (V3's blocks end in a Conv2dNormActivation)
            if isinstance(last, torch.nn.modules.batchnorm._BatchNorm):
                out.append(last)
    return out


def module(name, attn="eager"):
    """(the exported module: the model in eval mode with positional inputs named as the
    ONNX inputs, example inputs, input names, dynamic axes). scripts/bench.py times this
    same module (same weights: seeded) with attn="sdpa", PyTorch's default attention, so
    the benchmark and the ONNX file share one architecture."""
    model, args, input_names, dynamic_axes = build(name, attn)
    model = make_realistic(model, args)
    if name in zoo_models.ZOO:  # already takes positional inputs and returns one tensor
        return model.eval(), args, input_names, dynamic_axes
    wrapper = {"bert": BertLike, "bert_s512": BertLike, "gpt2": GptLike,
               "whisper_base_enc": FirstOutput}.get(name, ImageModel)
    return wrapper(model.eval()).eval(), args, input_names, dynamic_axes


def export(name, out_dir):
    model, args, input_names, dynamic_axes = module(name)
    path = os.path.join(out_dir, f"{name}.onnx")
    output_names = ["output"]
    dynamic_axes = dict(dynamic_axes, output={0: "batch"})
    errors = []
    t0 = time.time()
    # nn.MultiheadAttention's fused fast path (ViT) has no ONNX export; the
    # Python path exports as MatMul/Softmax like any attention.
    torch.backends.mha.set_fastpath_enabled(False)

    def legacy():
        torch.onnx.export(model, args, path, opset_version=17, dynamo=False,
                          input_names=input_names, output_names=output_names,
                          dynamic_axes=dynamic_axes, do_constant_folding=True)
        return "torchscript", 17

    def dynamo():
        batch = torch.export.Dim("batch", min=1, max=1024)
        # By position: the zoo's wrappers take *args (torch.export then wants the
        # specs of all of them as one tuple: its first argument), others named inputs.
        shapes = tuple({0: batch} for _ in input_names)
        params = inspect.signature(model.forward).parameters.values()
        if any(p.kind == inspect.Parameter.VAR_POSITIONAL for p in params):
            shapes = (shapes,)
        prog = torch.onnx.export(model, args, dynamo=True, opset_version=18,
                                 input_names=input_names, output_names=output_names,
                                 dynamic_shapes=shapes)
        prog.save(path)
        return "dynamo", 18

    # The zoo names each model's exporter; the other is the fallback.
    order = [("dynamo", dynamo), ("legacy", legacy)] if zoo_models.exporter(name) == "dynamo" else [
        ("legacy", legacy), ("dynamo", dynamo)]
    with torch.no_grad():
        for i, (label, fn) in enumerate(order):
            try:
                exporter, opset = fn()
                break
            except Exception as e:  # noqa: BLE001 - any exporter failure falls back
                msg = str(e)
                msg = msg[:msg.find("Torch IR graph")] if "Torch IR graph" in msg else msg
                # torch.export's own cause comes after its advice ("## Exception summary").
                cause = msg.find("## Exception summary")
                msg = msg[cause:] if cause >= 0 else msg
                errors.append(f"{label} exporter: {type(e).__name__}: {msg.strip()[:800]}")
                if i + 1 == len(order):
                    raise
                print(f"{name}: {errors[-1]}; trying the {order[i + 1][0]} exporter", flush=True)
    size = sum(os.path.getsize(os.path.join(out_dir, f)) for f in os.listdir(out_dir)
               if f.startswith(name + ".onnx"))
    return {"name": name, "file": os.path.basename(path), "exporter": exporter, "opset": opset,
            "inputs": input_names, "bytes": size, "seconds": round(time.time() - t0, 1),
            "fallback_reasons": errors}


def _export_in_worker(name, out_dir, threads):
    torch.set_num_threads(threads)  # the workers share the machine's cores
    try:
        return export(name, out_dir)
    except Exception as e:  # noqa: BLE001 - handed back to the parent to report
        return RuntimeError(f"{type(e).__name__}: {e}")


def exported(names, out_dir, jobs):
    """(name, info or the exception) per model, as each finishes. With jobs > 1
    the models export in parallel processes (an export is mostly one core's
    Python work: a zoo shard's 8 models took 300 s one after another)."""
    if jobs <= 1:
        for name in names:
            try:
                yield name, export(name, out_dir)
            except Exception as e:  # noqa: BLE001
                yield name, e
        return
    import concurrent.futures as cf
    import multiprocessing as mp
    threads = max(1, (os.cpu_count() or 2) // jobs)
    with cf.ProcessPoolExecutor(max_workers=jobs, mp_context=mp.get_context("spawn")) as pool:
        futures = {pool.submit(_export_in_worker, n, out_dir, threads): n for n in names}
        for f in cf.as_completed(futures):
            try:
                yield futures[f], f.result()
            except Exception as e:  # noqa: BLE001 - a worker that died
                yield futures[f], e


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", nargs="*", default=MODELS, choices=MODELS)
    ap.add_argument("--jobs", type=int, default=1,
                    help="export this many models at once, each in its own process")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    # Entries of models exported by an earlier run (not named now) are kept.
    manifest_path = os.path.join(a.out, "manifest.json")
    try:
        with open(manifest_path) as f:
            manifest = [m for m in json.load(f) if m.get("name") not in a.models]
    except (OSError, ValueError):
        manifest = []
    for name, info in exported(a.models, a.out, a.jobs):
        if isinstance(info, Exception):  # reported, and the others go on
            print(f"{name}: export failed: {type(info).__name__}: {str(info)[:800]}", flush=True)
            continue
        print(f"{name}: {info['exporter']} opset {info['opset']}, {info['bytes'] / 1e6:.1f} MB, "
              f"{info['seconds']} s", flush=True)
        for err in info["fallback_reasons"]:
            print("  " + err, flush=True)
        manifest.append(info)
        # After every model: a run stopped at its time limit keeps what it finished.
        with open(manifest_path + ".tmp", "w") as f:
            json.dump(manifest, f, indent=1)
        os.replace(manifest_path + ".tmp", manifest_path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
