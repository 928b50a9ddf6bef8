"""Importing the index defers LanceDB's unused REST client without breaking anything that uses it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CHECK = """
import sys
import vaultmem.index.note_index  # imports LanceDB
from vaultmem.index._lazy_imports import REST_CLIENT, _is_deferred
client = sys.modules[REST_CLIENT]
assert _is_deferred(client), "the REST client's __init__ ran at import"
assert f"{REST_CLIENT}.api.table_api" not in sys.modules

import lancedb
db = lancedb.connect(sys.argv[1])
db.create_table("t", data=[{"x": 1}])
assert db.open_table("t").count_rows() == 1
assert _is_deferred(client), "a local database needed the REST client"

from lance_namespace_urllib3_client import ApiClient, TableApi  # the first use runs the __init__
assert not _is_deferred(client)
assert client.__version__ and ApiClient.__name__ == "ApiClient" and TableApi.__name__ == "TableApi"
print("ok")
"""


def test_the_rest_client_loads_on_first_use_only(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHECK, str(tmp_path / "db")], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("ok")


def test_nothing_is_deferred_once_lancedb_is_imported() -> None:
    from vaultmem.index._lazy_imports import defer_rest_client

    assert defer_rest_client() is False  # this process imported LanceDB already
