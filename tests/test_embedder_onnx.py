"""The real packaged MiniLM model (marked ``model``: loads onnxruntime)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from vaultmem.index.embedder import EmbedderUnavailable, OnnxEmbedder, default_model_dir

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def embedder() -> OnnxEmbedder:
    return OnnxEmbedder(threads=1)


def test_vectors_are_384_wide_and_normalised(embedder: OnnxEmbedder) -> None:
    vectors = embedder.embed(["hello world", "a much longer sentence about the weather in spring", ""])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)


def test_a_paraphrase_is_closer_than_an_unrelated_sentence(embedder: OnnxEmbedder) -> None:
    a, para, other = embedder.embed(
        ["A man is eating food.", "Someone is having a meal.", "The stock market fell sharply today."]
    )
    assert a @ para > a @ other + 0.3


def test_model_id_names_the_model_file(embedder: OnnxEmbedder) -> None:
    name, _, digest = embedder.model_id.partition("@")
    assert name == "all-MiniLM-L6-v2-qint8"
    assert digest == hashlib.sha256(default_model_dir()[0].read_bytes()).hexdigest()[:12]


def test_the_packaged_files_are_the_ones_their_readme_records() -> None:
    """The model folder's README names each file's sha256 (what tools/derive_model.py derives)."""
    model, tokenizer = default_model_dir()
    readme = (model.parent / "README.md").read_text(encoding="utf-8")
    recorded = dict(re.findall(r"\| `([\w.]+)` \| `([0-9a-f]{64})` \|", readme))
    assert recorded == {
        "model.onnx": hashlib.sha256(model.read_bytes()).hexdigest(),
        "tokenizer.json": hashlib.sha256(tokenizer.read_bytes()).hexdigest(),
    }
    assert (model.parent / "LICENSE").read_text(encoding="utf-8").lstrip().startswith("Apache License")


@pytest.mark.parametrize("threads", [1, 2])
def test_a_text_gets_the_same_vector_alone_and_among_others(threads: int) -> None:
    """The packaged model quantizes activations per call: batched texts would change each other's
    vectors (cosine ~0.98), so it embeds one text per call, on ``threads`` cores side by side, and
    a query meets the very vector a write or a reindex stored."""
    texts = ["short", "a somewhat longer text to embed here", "word " * 300, "mid length text"] * 3
    embedder = OnnxEmbedder(threads=threads)
    together = embedder.embed(texts)
    alone = np.stack([embedder.embed([t])[0] for t in texts])
    np.testing.assert_array_equal(together, alone)


@pytest.mark.parametrize("batch_size", [None, 8])
def test_a_model_directory_of_ones_own_embeds_in_batches(tmp_path: Path, batch_size: int | None) -> None:
    """A user's own export (here a copy of the packaged files) batches 32 texts a call by default,
    with onnxruntime's arena off; so does the packaged model given a batch size."""
    model, tokenizer = default_model_dir()
    for source in (model, tokenizer):
        (tmp_path / source.name).symlink_to(source)
    own = OnnxEmbedder(tmp_path, threads=1, batch_size=batch_size)
    packaged = OnnxEmbedder(threads=1, batch_size=batch_size or 8)
    texts = ["short", "a somewhat longer text to embed here", "word " * 300] * 4
    for embedder in (own, packaged):
        vectors = embedder.embed(texts)
        assert vectors.shape == (12, 384)
        np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    assert own.model_id.split("@")[1] == packaged.model_id.split("@")[1]


def test_a_model_dir_without_files_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(EmbedderUnavailable, match=r"model\.onnx"):
        OnnxEmbedder(tmp_path)


MEMORY_AFTER_A_BIG_BATCH = """
import json
import os
from vaultmem.index.embedder import OnnxEmbedder

def anon_mib():
    for line in open("/proc/self/status", encoding="utf-8"):
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) / 1024

embedder = OnnxEmbedder()
embedder.embed(["a query"])
loaded = anon_mib()
embedder.embed(["word " * 300] * 32)  # a full batch of 256-token texts, as a reindex sends
embedder.embed(["a query"])
print(json.dumps({"loaded": loaded, "after": anon_mib()}))
"""


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="reads RssAnon from /proc")
def test_a_big_batch_does_not_stay_in_memory_after_it_is_embedded() -> None:
    """Issue 16, item 4: onnxruntime's CPU arena kept the peak of the largest batch for the life of
    the process: +1.2 GB after one batch of long texts, so a daemon that had indexed long
    notes once stayed over a gigabyte. The packaged model embeds one text per call, and the last
    call of each ``embed`` shrinks the arena: what the texts needed is given back (~+1 MiB)."""
    done = subprocess.run(
        [sys.executable, "-c", MEMORY_AFTER_A_BIG_BATCH], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["after"] - figures["loaded"] < 40, figures  # an arena kept: +46 MiB (2 cores)


MEMORY_OF_THE_LOADED_MODEL = """
import json
import os
from vaultmem.index.embedder import OnnxEmbedder, import_onnxruntime

def rss_mib():
    for line in open("/proc/self/status", encoding="utf-8"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024

import_onnxruntime()
before = rss_mib()
OnnxEmbedder().embed(["a query"])
print(json.dumps({"before": before, "after": rss_mib()}))
"""


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="reads VmRSS from /proc")
def test_the_loaded_model_keeps_its_weights_as_int8() -> None:
    """Issue 16, item 4: the model of before stored int8 weights that onnxruntime expanded to
    ~90 MB of float32 at load (+121 MiB for a loaded model); the packaged model multiplies in int8
    and holds ~23 MB of weights (+50 MiB measured)."""
    done = subprocess.run(
        [sys.executable, "-c", MEMORY_OF_THE_LOADED_MODEL], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["after"] - figures["before"] < 80, figures


ONE_CORE = """
import json, os, threading
os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
started = []
real_start = threading.Thread.start
def start(self):
    started.append(self.name)
    real_start(self)
threading.Thread.start = start
from vaultmem.index.embedder import OnnxEmbedder
OnnxEmbedder().embed(["one text", "and another", "and a third"])
print(json.dumps(started))
"""


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs CPU affinity (Linux)")
def test_a_process_held_to_one_core_embeds_on_its_own_thread() -> None:
    """The texts go side by side on the cores the process may use (a container's or taskset's
    share), not on every core the machine has."""
    done = subprocess.run([sys.executable, "-c", ONE_CORE], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "vaultmem-embed" not in json.loads(done.stdout.strip().splitlines()[-1])
