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
from vaultmem.index.meta import LAYOUT_VERSION, IndexMeta

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


def _model_dir(folder: Path, model: bytes) -> Path:
    """A model directory of one's own whose ``model.onnx`` holds ``model`` (hashed, never loaded)."""
    folder.mkdir()
    (folder / "model.onnx").write_bytes(model)
    (folder / "tokenizer.json").write_text("{}", encoding="utf-8")
    return folder


def _record_for(folder: Path, state: Path) -> IndexMeta:
    """``index.json`` as an index built before the stamp was kept, then opened by a process that
    saves (``record``): the stamp is added once the file's hash matched."""
    state.mkdir(exist_ok=True)
    (state / "index.json").write_text(
        json.dumps({"model_id": OnnxEmbedder(folder).model_id, "dim": 384, "layout": LAYOUT_VERSION}),
        encoding="utf-8",
    )
    IndexMeta.read(state).vouch(OnnxEmbedder(folder), record=True)
    return IndexMeta.read(state)


def test_an_index_vouches_for_its_models_id_until_the_model_file_is_rewritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Opening an index hashed the 22 MB model at every start (~35 ms of each CLI search and each
    daemon start): ``index.json`` now records the model file's stamp (size, times, inode) beside its
    id, and a file with that stamp is taken for that id unhashed. A file rewritten in place, to the
    same size and with its modification time put back, is hashed again, and its new id is seen."""
    folder = _model_dir(tmp_path / "own", b"first model bytes")
    first = OnnxEmbedder(folder)
    expected = first.model_id
    meta = _record_for(folder, tmp_path / "state")
    assert meta.values["model_file"] == first.file_stamp()

    hashed: list[int] = []
    real = hashlib.sha256

    def counted(*args: bytes) -> object:
        hashed.append(1)
        return real(*args)

    monkeypatch.setattr("vaultmem.index.embedder.hashlib.sha256", counted)
    again = OnnxEmbedder(folder)
    IndexMeta.read(tmp_path / "state").vouch(again, record=True)
    assert again.model_id == expected and not hashed and not meta.stale_for(again)

    before = (folder / "model.onnx").stat()
    (folder / "model.onnx").write_bytes(b"other model bytes")  # the same length
    os.utime(folder / "model.onnx", ns=(before.st_atime_ns, before.st_mtime_ns))
    changed = OnnxEmbedder(folder)
    IndexMeta.read(tmp_path / "state").vouch(changed, record=True)
    assert hashed and changed.model_id != expected
    assert IndexMeta.read(tmp_path / "state").stale_for(changed)  # the index is rebuilt for it


def test_a_read_only_open_never_writes_the_stamp(tmp_path: Path) -> None:
    """``vaultmem doctor`` opens the index without saving anything: it hashes, and leaves
    ``index.json`` as it was, byte for byte."""
    folder = _model_dir(tmp_path / "own", b"some model")
    state = tmp_path / "state"
    state.mkdir()
    embedder = OnnxEmbedder(folder)
    (state / "index.json").write_text(
        json.dumps({"model_id": embedder.model_id, "dim": 384, "layout": LAYOUT_VERSION}), encoding="utf-8"
    )
    before = (state / "index.json").read_bytes()
    IndexMeta.read(state).vouch(OnnxEmbedder(folder), record=False)
    assert (state / "index.json").read_bytes() == before


def test_the_clis_index_records_the_packaged_models_stamp(tmp_path: Path) -> None:
    """Through the CLI as a user runs it: the index a ``vaultmem search`` built names the packaged
    model file's stamp, and the next search (which takes the id unhashed) answers the same."""
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    env.pop("VAULTMEM_EMBEDDER", None)
    vault = tmp_path / "vault"

    def vaultmem(*args: str, stdin: str | None = None) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "vaultmem.cli", "--vault", str(vault), *args],
            input=stdin, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    vaultmem("init")
    vaultmem("append", "--kind", "reference", "-", stdin="The kettle descales with citric acid.")
    first = vaultmem("search", "--json", "descale the kettle")
    (record,) = [json.loads(p.read_text()) for p in (vault / ".vaultmem").rglob("index.json")]
    assert record["model_file"] == OnnxEmbedder().file_stamp()
    assert record["model_id"] == OnnxEmbedder().model_id
    assert vaultmem("search", "--json", "descale the kettle") == first


def test_the_stamp_is_not_written_over_a_record_another_process_wrote_meanwhile(tmp_path: Path) -> None:
    """A process that read ``index.json`` before another one rebuilt the index for another model
    leaves that one's record as it is (its own, older one would make the next open rebuild again)."""
    folder = _model_dir(tmp_path / "own", b"the model")
    state = tmp_path / "state"
    state.mkdir()
    (state / "index.json").write_text(
        json.dumps({"model_id": OnnxEmbedder(folder).model_id, "dim": 384, "layout": LAYOUT_VERSION}),
        encoding="utf-8",
    )
    meta = IndexMeta.read(state)
    rebuilt = json.dumps({"model_id": "another@0123456789ab", "dim": 768, "layout": LAYOUT_VERSION})
    (state / "index.json").write_text(rebuilt, encoding="utf-8")
    meta.vouch(OnnxEmbedder(folder), record=True)
    assert (state / "index.json").read_text(encoding="utf-8") == rebuilt
