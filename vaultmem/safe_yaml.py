"""Loading YAML a person or a sync client may have written: safe loaders only, no aliases.

Used for note frontmatter, ``filing.yaml``, ``project.yaml`` and ``vaultmem.yaml`` alike, so each is
read with the same defences: a safe loader (libyaml when present), and anchors or aliases (the
"billion laughs" family) refused before anything is expanded.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from vaultmem.errors import MalformedNote

_ALIAS_OR_ANCHOR = re.compile(r"(^|[\s\[{,:-])[&*][^\s,\[\]{}]")

_SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _NoAliasLoader(yaml.SafeLoader):
    """The pure-Python safe loader, refusing anchors and aliases."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            raise yaml.composer.ComposerError(
                None, None, "YAML aliases are not allowed in note frontmatter", None
            )
        return super().compose_node(parent, index)


def load_yaml_mapping(text: str, *, source: str) -> dict[str, Any]:
    """Load a YAML mapping from untrusted text, refusing aliases, with errors that name ``source``."""
    loader: type[yaml.SafeLoader] = _NoAliasLoader if _ALIAS_OR_ANCHOR.search(text) else _SafeLoader
    try:
        data = yaml.load(text, Loader=loader)  # noqa: S506 - both loaders are safe loaders
    except yaml.YAMLError as exc:
        detail = str(exc).replace("\n", " ")
        raise MalformedNote(f"{source}: frontmatter is not valid YAML ({detail}); fix it by hand") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise MalformedNote(
            f"{source}: frontmatter is a {type(data).__name__}, not a mapping of keys to values; "
            "fix it by hand"
        )
    for key in data:
        if not isinstance(key, str):
            raise MalformedNote(f"{source}: frontmatter key {key!r} is not a string; fix it by hand")
    return data
