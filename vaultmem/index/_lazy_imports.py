"""Import LanceDB without paying for the REST client it never uses here.

``import lancedb`` imports the generated REST client package ``lance_namespace_urllib3_client``,
whose ``__init__`` builds a pydantic validator for every API method at import time (about 0.45 s of
a cold start) for a client that only talks to a remote namespace server. :func:`defer_rest_client`
registers the package with its ``__init__`` not yet run: its submodules load normally, and the
first lookup of a name the ``__init__`` defines runs it (PEP 562 module ``__getattr__``). If the
package is not as expected, nothing is changed and LanceDB imports as usual.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
import types

__all__ = ["defer_rest_client"]

REST_CLIENT = "lance_namespace_urllib3_client"


def defer_rest_client() -> bool:
    """Register the REST client package with its ``__init__`` deferred; True if it was deferred."""
    if REST_CLIENT in sys.modules or "lancedb" in sys.modules:
        return False
    try:
        spec = importlib.util.find_spec(REST_CLIENT)
    except (ImportError, ValueError):
        return False
    if spec is None or spec.loader is None or not spec.submodule_search_locations:
        return False
    module = importlib.util.module_from_spec(spec)
    loader = spec.loader
    lock = threading.Lock()
    state = {"ran": False}

    def __getattr__(name: str) -> object:  # the PEP 562 hook
        with lock:
            if not state["ran"]:
                state["ran"] = True
                del module.__dict__["__getattr__"]
                loader.exec_module(module)
        try:
            return module.__dict__[name]
        except KeyError:
            raise AttributeError(f"module {REST_CLIENT!r} has no attribute {name!r}") from None

    module.__dict__["__getattr__"] = __getattr__
    sys.modules[REST_CLIENT] = module
    return True


def _is_deferred(module: types.ModuleType) -> bool:
    """True while the package's ``__init__`` has not run (for tests)."""
    return "__getattr__" in module.__dict__
