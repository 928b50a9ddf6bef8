"""Text embedders: the ONNX MiniLM model shipped inside vaultmem, and a deterministic fake.

The index only sees the small :class:`Embedder` protocol, so tests run on :class:`FakeEmbedder`
(fast, no model) and the daemon on :class:`OnnxEmbedder`. Nothing is loaded at import time:
the ONNX session and tokenizer are created on the first call to ``embed``.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import logging
import os
import re
import sys
import threading
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from vaultmem.errors import IndexError_
from vaultmem.index.heap import release_free_memory
from vaultmem.index.protocol import Embedder

__all__ = [
    "Embedder", "EmbedderUnavailable", "FakeEmbedder", "OnnxEmbedder", "default_model_dir",
    "warm_in_background",
]  # fmt: skip

Vectors = npt.NDArray[np.float32]

log = logging.getLogger(__name__)

#: The packaged model (``vaultmem/_data/model/``, derived by ``tools/derive_model.py``; its README
#: says from what): all-MiniLM-L6-v2 with int8 matrix products.
_MODEL_RESOURCE = ("_data", "model")
_MODEL_NAME = "all-MiniLM-L6-v2-qint8"
#: Texts per model call. The packaged model quantizes its activations with one scale per call, so
#: a text embedded beside others would get a (slightly, cosine ~0.98-0.99) different vector than
#: alone: it embeds one text per call, which keeps a text's vector the same whoever asks (a query,
#: a write, a reindex) and measured faster than batches anyway (docs/benchmarks.md, "The embedding
#: model, quantized"). An export of the user's own (float) model batches, as float models gain by it.
_PACKAGED_BATCH = 1
_EXPORT_BATCH = 32


def _usable_cores() -> int:
    """The cores this process may run on (a container's or ``taskset``'s share, not the machine's)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # macOS and Windows have no affinity call
        return os.cpu_count() or 1


class EmbedderUnavailable(IndexError_):
    """The embedding model or its tokenizer cannot be loaded or run."""


def _l2_normalise(matrix: npt.NDArray[np.float32]) -> Vectors:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0.0] = 1.0
    normalised: Vectors = (matrix / norms).astype(np.float32, copy=False)
    return normalised


#: Read by onnxruntime when it is first imported: no telemetry uploader, no events, and no
#: persistent device id (``~/.cache/Microsoft/DeveloperTools/.onnxruntime/``) for the process.
ORT_TELEMETRY_ENV = "ORT_DISABLE_TELEMETRY"


def import_onnxruntime() -> Any:
    """onnxruntime, imported with its telemetry off.

    Its official builds collect trace events and keep a device id under the user's cache folder,
    created at import; ``disable_telemetry_events()`` alone runs too late for that (measured with
    onnxruntime 1.32: the folder appears on ``import``). The environment variable, set before the
    first import, prevents all of it; the API call covers builds that do not read it.
    """
    if "onnxruntime" not in sys.modules:
        os.environ.setdefault(ORT_TELEMETRY_ENV, "1")
    else:
        log.debug("onnxruntime was imported before vaultmem could turn its telemetry off")
    import onnxruntime as ort

    ort.disable_telemetry_events()
    return ort


def default_model_dir() -> tuple[Path, Path]:
    """The packaged ``model.onnx`` and ``tokenizer.json`` (raises if the installation lacks them)."""
    folder = Path(str(importlib.resources.files("vaultmem").joinpath(*_MODEL_RESOURCE)))
    model, tokenizer = folder / "model.onnx", folder / "tokenizer.json"
    for required in (model, tokenizer):
        if not required.is_file():
            raise EmbedderUnavailable(
                f"the packaged embedding model file {required} is missing; reinstall vaultmem "
                "(`pip install --force-reinstall vaultmem`) or set a model directory holding "
                "model.onnx and tokenizer.json"
            )
    return model, tokenizer


class OnnxEmbedder:
    """Sentence embeddings from an ONNX BERT-style encoder: mean-pooled and L2-normalised.

    ``model_dir`` (optional) holds ``model.onnx`` and ``tokenizer.json``; by default the
    all-MiniLM-L6-v2 model packaged with vaultmem (int8 matrix products) is used. ``threads=0``
    means one per core: the packaged model embeds that many texts side by side, one core each;
    a model directory's batches each use that many cores. Texts longer than ``max_tokens`` word
    pieces are truncated. ``batch_size`` defaults to one text per call for the packaged model
    (see ``_PACKAGED_BATCH``) and 32 for a model directory.
    """

    def __init__(
        self,
        model_dir: Path | None = None,
        *,
        threads: int = 0,
        batch_size: int | None = None,
        max_tokens: int = 256,
    ) -> None:
        if batch_size is None:
            batch_size = _PACKAGED_BATCH if model_dir is None else _EXPORT_BATCH
        if batch_size < 1 or max_tokens < 8 or threads < 0:
            raise ValueError("batch_size must be >= 1, max_tokens >= 8 and threads >= 0")
        if model_dir is None:
            self._model_path, self._tokenizer_path = default_model_dir()
            self._name = _MODEL_NAME
        else:
            self._model_path = model_dir / "model.onnx"
            self._tokenizer_path = model_dir / "tokenizer.json"
            self._name = model_dir.name or "model"
        for required in (self._model_path, self._tokenizer_path):
            if not required.is_file():
                raise EmbedderUnavailable(
                    f"embedding model file {required} is missing; a model directory must hold "
                    "model.onnx and tokenizer.json (or leave the model directory unset to use "
                    "the packaged all-MiniLM-L6-v2)"
                )
        self._threads = threads
        #: Calls run side by side by one ``embed`` (one text each, one core each): ``threads``,
        #: or one per core. A batching model runs one call at a time on ``threads`` cores.
        self._parallel_calls = (threads or _usable_cores()) if batch_size == 1 else 1
        self._batch_size = batch_size
        self._max_tokens = max_tokens
        self._lock = threading.Lock()
        self._session: Any = None
        self._shrink: Any = None
        self._tokenizer: Any = None
        self._input_names: frozenset[str] = frozenset()
        self._dim: int | None = None
        self._model_id: str | None = None
        self._id_stamp: list[int] | None = None  # the model file's stamp when the id was taken

    @property
    def model_id(self) -> str:
        """``<name>@<first 12 hex digits of the sha256 of model.onnx>``, computed once."""
        if self._model_id is None:
            stamp = self.file_stamp()  # before the hash: a rewrite while it runs changes it
            digest = hashlib.sha256()
            try:
                with self._model_path.open("rb") as handle:
                    for chunk in iter(lambda: handle.read(1 << 20), b""):
                        digest.update(chunk)
            except OSError as exc:
                raise EmbedderUnavailable(f"cannot read embedding model {self._model_path}: {exc}") from exc
            self._model_id, self._id_stamp = f"{self._name}@{digest.hexdigest()[:12]}", stamp
        return self._model_id

    def file_stamp(self) -> list[int] | None:
        """What changes whenever ``model.onnx`` is replaced or rewritten (size, times, inode,
        device); None when it cannot be read. An index records it beside the model's id."""
        try:
            st = self._model_path.stat()
        except OSError:
            return None
        return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]

    def id_stamp(self) -> list[int] | None:
        """The :meth:`file_stamp` of the file :attr:`model_id` was computed from (or vouched for),
        while the file is still that one; None otherwise, or before the id is known."""
        if self._id_stamp is None or self._id_stamp != self.file_stamp():
            return None
        return self._id_stamp

    def vouch(self, stamp: object, model_id: object) -> None:
        """Take ``model_id`` as this model's id without hashing the file (~35 ms for the packaged
        model at every start) when ``stamp`` is :meth:`file_stamp` now: the file is the one an
        index hashed when it recorded both. The inode and the change time, which no tool can set
        back, change with any rewrite of the file."""
        if (
            self._model_id is None
            and isinstance(model_id, str)
            and model_id.startswith(f"{self._name}@")
            and isinstance(stamp, list)
            and stamp == self.file_stamp()
        ):
            self._model_id, self._id_stamp = model_id, stamp

    @property
    def dim(self) -> int:
        """Output width of the model (384 for MiniLM); loads the model on first use."""
        if self._dim is None:
            self._load()
        assert self._dim is not None
        return self._dim

    def _load(self) -> None:
        with self._lock:
            if self._session is not None:
                return
            try:
                from tokenizers import Tokenizer

                ort = import_onnxruntime()

                options = ort.SessionOptions()
                # One text per call: each call on one core, and the cores embed texts side by side
                # (``embed``). A model that batches spreads each call over the cores instead.
                options.intra_op_num_threads = 1 if self._batch_size == 1 else self._threads
                options.inter_op_num_threads = 1
                # Idle worker threads sleep instead of spinning: spinning buys no throughput here
                # (measured) and starves the search's other threads (BM25, NumPy) on a small machine.
                options.add_session_config_entry("session.intra_op.allow_spinning", "0")
                # The arena serves a call's buffers again to the next call (without it, each long
                # window's 0.4-3 MB buffers were mapped, faulted in and unmapped: a third of the
                # throughput on long texts). It would keep its peak for the life of the process
                # (+686 MiB after a batch of 32 long texts), so the last call of each ``embed``
                # shrinks it (``_shrink``): what one call needs is held only while texts embed.
                options.enable_cpu_mem_arena = self._batch_size == 1
                session = ort.InferenceSession(
                    str(self._model_path), sess_options=options, providers=["CPUExecutionProvider"]
                )
                tokenizer = Tokenizer.from_file(str(self._tokenizer_path))
                release_free_memory()  # what optimising the graph allocated and freed (~50 MB)
            except Exception as exc:  # onnxruntime/tokenizers raise their own untyped errors
                raise EmbedderUnavailable(
                    f"cannot load the embedding model {self._model_path}: {exc}; "
                    "check that it is an ONNX export with a matching tokenizer.json"
                ) from exc
            tokenizer.enable_truncation(max_length=self._max_tokens)
            tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # noqa: S106 - not a secret
            self._input_names = frozenset(i.name for i in session.get_inputs())
            outputs = {o.name: o for o in session.get_outputs()}
            if "last_hidden_state" not in outputs:
                raise EmbedderUnavailable(
                    f"the model {self._model_path} has no 'last_hidden_state' output; "
                    "export it as a feature-extraction model"
                )
            width = outputs["last_hidden_state"].shape[-1]
            if options.enable_cpu_mem_arena:  # asking a session without an arena to shrink it fails
                shrink = ort.RunOptions()
                shrink.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
                self._shrink = shrink
            self._tokenizer = tokenizer
            self._session = session
            self._dim = int(width) if isinstance(width, int) else int(self._run(["probe"]).shape[1])

    def _run(self, texts: Sequence[str], *, last: bool = False) -> Vectors:
        encodings = self._tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds: dict[str, npt.NDArray[np.int64]] = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        feeds = {name: value for name, value in feeds.items() if name in self._input_names}
        try:
            (hidden,) = self._session.run(["last_hidden_state"], feeds, self._shrink if last else None)
        except Exception as exc:
            raise EmbedderUnavailable(f"the embedding model failed to run: {exc}") from exc
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return _l2_normalise(pooled.astype(np.float32))

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed ``texts``: one text per call on as many cores as ``threads`` allows, side by side
        (the packaged model), or batches of texts of similar length, to limit padding."""
        if self._session is None:
            self._load()
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        chunks = [order[start : start + self._batch_size] for start in range(0, len(order), self._batch_size)]
        final = chunks.pop()  # run last, alone, and giving the arena back
        # The model releases the GIL while it runs: a text per core, this thread and its helpers
        # each taking the next (no helper for one core, or a single chunk).
        workers = min(len(chunks), self._parallel_calls)
        pending = iter(chunks)
        taking = threading.Lock()
        failures: list[BaseException] = []

        def work() -> None:
            while not failures:
                with taking:
                    chunk = next(pending, None)
                if chunk is None:
                    return
                try:
                    out[chunk] = self._run([texts[i] for i in chunk])
                except BaseException as exc:  # re-raised on the caller's thread below
                    failures.append(exc)

        helpers = [threading.Thread(target=work, name="vaultmem-embed") for _ in range(workers - 1)]
        for helper in helpers:
            helper.start()
        work()
        for helper in helpers:
            helper.join()
        if failures:
            raise failures[0]
        out[final] = self._run([texts[i] for i in final], last=True)
        return out


_WORD = re.compile(r"\w+", re.UNICODE)


class FakeEmbedder:
    """Deterministic bag-of-words hashing embedder for unit tests (no model, microseconds a call).

    Each lower-cased word is hashed into one of ``dim`` buckets; texts sharing words therefore
    have a higher cosine than texts that share none.
    """

    def __init__(self, dim: int = 64, model_id: str = "fake-bow") -> None:
        self._dim = dim
        self._model_id = f"{model_id}-{dim}"

    @property
    def model_id(self) -> str:
        """Stable id of this fake model."""
        return self._model_id

    @property
    def dim(self) -> int:
        """Vector width."""
        return self._dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Hash the words of each text into buckets and normalise."""
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                bucket = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "big")
                out[row, bucket % self._dim] += 1.0
            if not out[row].any():
                out[row, 0] = 1.0  # an empty text still gets a unit vector
        return _l2_normalise(out)


def _warm(embedder: Embedder) -> None:
    """Load the embedding model (its width and id) ahead of first use; errors surface at that use."""
    with suppress(Exception):  # reported where the model is first needed
        _ = embedder.dim, embedder.model_id


def warm_in_background(embedder: Embedder) -> threading.Thread:
    """Start loading the model on a thread. Loading an ONNX session releases the GIL, so it runs
    beside a start's catalog scan and index load instead of after them (~0.2 s of a cold start).

    Not a daemon thread, and joined by whoever closes what started it: an interpreter that exits
    while onnxruntime is still building the session tears its thread pool down under it and the
    process aborts ("terminate called without an active exception", exit status 134); a command
    as quick as ``vaultmem doctor`` always finished first.
    """
    thread = threading.Thread(target=_warm, args=(embedder,), name="vaultmem-model-load")
    thread.start()
    return thread
