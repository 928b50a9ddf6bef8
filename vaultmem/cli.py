"""The ``vaultmem`` command line: parse, call the facade (:class:`vaultmem.memory.Memory`), print.

Each command imports the facade when it runs, not this module: ``vaultmem --help`` loads argparse
and the settings only, and the facade itself loads no index module (LanceDB, onnxruntime, NumPy)
unless the command opens the index (``tests/test_cli_imports.py`` holds both to it).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import logging
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaultmem.caller import Caller, acting_as, os_user, redactions
from vaultmem.config import Settings, find_homes
from vaultmem.errors import GitLocked, VaultError, VaultmemError
from vaultmem.program import keep_out_of_process, one_blas_thread

if TYPE_CHECKING:
    from vaultmem.memory import GitLockInfo, Memory, SyncReport

Handler = Callable[[argparse.Namespace], int]
LISTED = 50  # lines of one kind `vaultmem doctor` prints


def _read_content(value: str) -> str:
    if value == "-":
        return sys.stdin.read()
    return value


def _print(args: argparse.Namespace, payload: Mapping[str, object], human: str) -> None:
    if getattr(args, "json", False):
        print(json.dumps(payload, ensure_ascii=False))
    else:
        print(human)


def _settings(args: argparse.Namespace) -> Settings:
    return Settings.resolve(args.vault, getattr(args, "state_dir", None))


@contextlib.contextmanager
def _open(args: argparse.Namespace, *, index: bool = False) -> Iterator[Memory]:
    """The vault, committing inline; without its index unless the command searches.

    A commit git holds back (another process's lock, the person's rebase or checkout of an old
    commit) does not fail the command: what it wrote is on disk, and the daemon or the next command
    commits it. The command answers as it would, with a note on stderr (it exited 1 with no answer,
    so a script retried a write that was done)."""
    from vaultmem.memory import Memory

    memory = Memory(_settings(args), index=index, background_commits=False)
    try:
        yield memory
    finally:
        try:
            memory.close()
        except GitLocked as exc:
            print(f"note: not committed yet: {exc}", file=sys.stderr)


def cmd_init(args: argparse.Namespace) -> int:
    from vaultmem.memory import Memory, big_file_lines

    target = Path(args.path or args.vault or Settings.resolve().vault)
    root, created = Memory.init(target, Path(args.git_dir) if args.git_dir else None, args.folder)
    home = Settings.resolve(root).home
    print(f"{('adopted' if home else 'created') if created else 'already a vault:'} {root}")
    if home:
        print(f"vaultmem keeps its files in {root / home}; your notes elsewhere are indexed, never changed")
    for line in big_file_lines(Settings.resolve(root)):  # files never committed, notes committed though big
        print(line)
    _ensure_token(root)
    return 0


def cmd_clone(args: argparse.Namespace) -> int:
    from vaultmem.memory import clone_vault

    repo = clone_vault(args.url, Path(args.path), git_dir=Path(args.git_dir) if args.git_dir else None)
    print(f"cloned {args.url} into {repo.work_tree} (notes merge field by field when machines sync)")
    _ensure_token(repo.work_tree)
    print(f"serve it with `vaultmem serve --vault {repo.work_tree}`: it syncs with {args.url} on its own")
    return 0


def _ensure_token(vault: Path) -> None:
    from vaultmem.server.token import ensure_token, token_command, token_path

    path = token_path(vault)
    _, new = ensure_token(path)
    print(f"{'token written to' if new else 'token kept in'} {path} (print it with `{token_command(vault)}`)")


def cmd_sync(args: argparse.Namespace) -> int:
    # The round takes the vault's write lock and commit gate where it merges, so a daemon serving
    # this vault waits for it (and one round at a time runs on the repository).
    with _open(args) as memory:
        report = memory.sync()
    _print(args, report.as_dict(), _sync_summary(report))
    if not report.ok:
        for error in report.errors:
            print(f"error: {error}", file=sys.stderr)
    return 0 if report.ok else 1


def _sync_summary(report: SyncReport) -> str:
    where = f"{report.remote}/{report.branch}" if report.branch else report.remote
    lines = [
        f"{'synced with' if report.ok else 'could not sync with'} {where}: {len(report.incoming)} paths "
        f"came in, {report.pushed_commits} commits went out ({len(report.outgoing)} paths)"
        + (f"; {len(report.committed)} pending edits committed first" if report.committed else "")
    ]
    lines += [f"  {line}" for line in report.recovery]
    lines += [
        f"  conflict note {copy} keeps a side of {original}" for copy, original in report.conflict_files
    ]
    lines += [
        f"  {old} was filed as {new} (another machine's note took its name)" for old, new in report.renamed
    ]
    if report.ahead or report.behind:
        lines.append(
            f"  {report.ahead} commits here not on the remote, {report.behind} there not merged here"
        )
    return "\n".join(lines)


def cmd_serve(args: argparse.Namespace) -> int:
    from vaultmem.memory import Memory
    from vaultmem.server.daemon import Daemon
    from vaultmem.server.hosts import banner

    settings = _settings(args)
    if args.init and (not (settings.vault / ".git").exists() or not find_homes(settings.vault)):
        root, _ = Memory.init(settings.vault)
        print(f"created a vault at {root}", file=sys.stderr)
        settings = _settings(args)  # a vault adopted in place keeps vaultmem's state in its folder
    daemon = Daemon(settings, host=args.host, port=args.port)
    daemon.open(_progress("indexing"))
    # The token only to a terminal: under nohup or a supervisor this output is a log file.
    token = daemon.token() if sys.stdout.isatty() else None
    daemon.serve_forever(
        on_ready=lambda: print(banner(daemon.url, token, settings.vault, daemon.token_file), flush=True)
    )
    print("vaultmem stopped; every write is committed", file=sys.stderr)
    return 0


def cmd_mcp(args: argparse.Namespace) -> int:
    from vaultmem.server.daemon import run_stdio

    run_stdio(_settings(args))
    return 0


def cmd_token(args: argparse.Namespace) -> int:
    from vaultmem.server import token as tokens

    vault = _settings(args).vault
    if not vault.is_dir():  # a token of no vault: the daemon serving the vault meant would refuse it
        raise VaultError(
            f"no vault at {vault}; create one with `vaultmem init {vault}`, or name yours with --vault"
        )
    path, hint = tokens.token_path(vault), tokens.token_command(vault)
    command = getattr(args, "token_command", None)
    if command == "add":
        secret = tokens.add_token(path, args.name, args.email, command=hint)
        print(f"token for {args.name} (shown this once; give it to that agent's host):", file=sys.stderr)
        print(secret)
    elif command == "revoke":
        tokens.revoke_token(path, args.name, command=hint)
        print(f"revoked {args.name}: a running daemon refuses its token from the next request")
    elif command == "list":
        rows = tokens.list_tokens(path)
        if args.json:
            print(json.dumps(rows, ensure_ascii=False))
        for row in [] if args.json else rows:
            mark = row["fingerprint"]  # sha256:<8 hex digits of the token's digest>, never the token
            print(f"{row['name']:<20} {row['name']} <{row['email']}>  {row['created'] or '-':<20}  {mark}")
    elif args.rotate:
        print(tokens.rotate_token(path))
        print(f"new token written to {path}; a running daemon accepts only it from now on", file=sys.stderr)
    else:
        token, new = tokens.ensure_token(path)
        if new:
            print(f"no token yet: generated one in {path}", file=sys.stderr)
        print(token)
    return 0


def cmd_append(args: argparse.Namespace) -> int:
    with _open(args) as memory:
        result = memory.append(
            _read_content(args.content),
            args.kind,
            project=args.project,
            title=args.title,
            tags=args.tag,
            idempotency_key=args.idempotency_key,
        )
    verb = "reinforced" if result["deduplicated"] else "added"
    _print(args, result, f"{verb} {result['slug']} ({result['id']})")
    return 0


def cmd_capture(args: argparse.Namespace) -> int:
    with _open(args) as memory:
        result = memory.capture(
            _read_content(args.content),
            kind=args.kind,
            title=args.title,
            tags=args.tag,
            instructions=args.instructions,
            source_url=args.source_url,
            source_id=args.source_id,
            project=args.project,
            cwd=str(Path.cwd()),
        )
    if not result["success"]:
        if args.json:
            _print(args, result, "")
        else:
            print(f"error: {result['error']}", file=sys.stderr)
        return 1
    verb = (
        "updated"
        if result.get("updated")
        else "appended to"
        if result.get("appended")
        else "reinforced"
        if result["deduplicated"]
        else "captured"
    )
    _print(args, result, f"{verb} {result['slug']} ({result['id']})")
    return 0


def cmd_forget(args: argparse.Namespace) -> int:
    with _open(args) as memory:
        result = memory.forget(args.id, reason=args.reason)
    human = f"{'already deleted' if result['already_deleted'] else 'deleted'}: {result['id']}"
    _print(args, result, human)
    return 0


def cmd_log(args: argparse.Namespace) -> int:
    from vaultmem.limits import MAX_VERSIONS

    with _open(args) as memory:
        note, note_id = memory.note(args.id), memory.id_of(args.id)  # a person's note: its derived id
        rows: list[Any] = []
        while True:  # every version, a page at a time
            page = memory.history(args.id, limit=MAX_VERSIONS, offset=len(rows), diff=args.diff)
            rows += page.items
            if not page.items or len(rows) >= page.counts["total"]:
                break
    if args.json:
        print(json.dumps({"id": note_id, "path": note.path, "history": rows}, ensure_ascii=False))
        return 0
    print(f"{note.path}  ({note_id})")
    for row in rows:
        print(f"\n{row['commit'][:10]}  {row['at']}  {row['author']}  {row['action']}\n    {row['summary']}")
        for line in row.get("diff", "").splitlines():
            print(f"    {line}")
    return 0


def cmd_blame(args: argparse.Namespace) -> int:
    with _open(args) as memory:
        blame = memory.blame(args.id)
    if args.json:
        print(json.dumps(dataclasses.asdict(blame), ensure_ascii=False))
        return 0

    def who(row: Mapping[str, Any]) -> str:
        return f"{(row['commit'] or '-')[:10]:<10}  {row['author'][:20]:<20}  {(row['at'] or '')[:10]:<10}"

    print(f"{blame.path}  ({blame.id})")
    if blame.keys:
        print("\nkeys:")
        for key, row in blame.keys.items():
            print(f"  {key:<16} {who(row)}")
    print("\nlines:")
    for row in blame.lines:
        print(f"{row['line']:>5}  {who(row)}  | {row['text']}")
    return 0


def _progress(label: str, third: str = "chunks embedded") -> Callable[[int, int, int], None]:
    """A progress bar of notes and of ``third`` (chunks embedded, notes read) on a terminal's stderr."""
    interactive = sys.stderr.isatty()
    last: list[tuple[int, int, int]] = []  # the state drawn last (the index is polled while it works)

    def show(done: int, total: int, chunks: int) -> None:
        if not interactive or total <= 0 or last == [(done, total, chunks)]:
            return
        last[:] = [(done, total, chunks)]
        width = 30
        filled = int(width * done / total)
        bar = f"[{'#' * filled}{' ' * (width - filled)}]"
        sys.stderr.write(f"\r{label} {bar} {done}/{total} notes, {chunks} {third}")
        if done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()

    return show


def cmd_search(args: argparse.Namespace) -> int:
    from vaultmem.memory import SearchRequest

    with _open(args, index=True) as memory:
        memory.reconcile(_progress("indexing"))
        result = memory.search(
            SearchRequest(
                query=args.query,
                scope="project" if args.project else "all",
                project=args.project,
                kind=args.kind,
                limit=args.limit,
                include_deleted=args.include_deleted,
            )
        )
    if args.json:
        print(json.dumps(result, ensure_ascii=False))
        return 0
    if not result["results"]:
        print("no matches")
    for hit in result["results"]:
        status = "" if hit["status"] == "active" else f" [{hit['status']}]"
        print(f"{hit['score']:.3f}  {hit['slug']}{status}  ({hit['id']})\n       {hit['snippet']}")
    return 0


def cmd_reindex(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    # --full builds beside the current index: a running daemon switches to it when done.
    with _open(args, index=not args.full) as memory:
        report, rows = memory.reindex(full=args.full, progress=_progress("indexing"))
    elapsed = time.perf_counter() - started
    print(
        f"index: {rows} notes ({len(report.indexed)} indexed, {len(report.removed)} removed, "
        f"{report.unchanged} unchanged) in {elapsed:.1f}s; {report.embedded} chunks embedded"
    )
    for _path, problem in sorted(report.malformed.items()):
        print(f"skipped malformed note: {problem}", file=sys.stderr)
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from vaultmem.limits import LOW_SPACE_MIB
    from vaultmem.memory import Memory

    settings = _settings(args)
    report = Memory.doctor(settings, _progress("checking", "read"))
    if args.json:
        print(json.dumps(report.to_dict(), ensure_ascii=False))
        return 0 if report.ok else 1
    print(f"{report.notes} notes, {report.index_rows} indexed")
    if report.layout is not None:
        print(report.layout["explanation"])
    sections = [
        ("malformed notes (left untouched; fix by hand)", [f"{k}: {v}" for k, v in report.malformed.items()]),
        ("files vaultmem never reads (rename or remove them)", list(report.skipped.values())),
        ("sync conflict copies (compare and merge by hand)", report.conflict_copies),
        (
            "sync conflict notes (one machine's side of a note both changed: merge it into the note its "
            "conflict_of names, then forget it)",
            report.conflict_notes,
        ),
        (
            "dangling links",
            [f"{d['path']}: {d['property']} -> [[{d['target']}]]" for d in report.dangling_links],
        ),
        (
            "links in a note's text to no note yet (Obsidian shows them unresolved; not a problem)",
            [f"{d['path']}: [[{d['target']}]]" for d in report.dangling_text_links],
        ),
        (
            "properties YAML cannot read, in your notes (Obsidian flags them too; searched as plain text)",
            [f"{path}: {why}" for path, why in report.unreadable_properties.items()],
        ),
        ("your notes over 2 MiB (a pasted log?): searched and linked by their start", report.read_in_part),
        ("not in the index (run `vaultmem reindex`)", report.index_missing),
        ("stale in the index (run `vaultmem reindex`)", report.index_stale),
        ("in the index but not the vault (run `vaultmem reindex`)", report.index_extra),
        ("uncommitted changes (the daemon commits them; or run git yourself)", report.uncommitted),
        ("changed in .obsidian/ or another hidden folder (committed at start)", report.committed_at_start),
        *report.size_sections(),
        ("git locks", [_git_lock_line(lock) for lock in report.git_locks]),
        (
            "what looks like a secret, in a note edited by hand (remove it; git keeps older versions)",
            [f"{s['path']}: {s['kind']} ({s['field']} line {s['line']})" for s in report.secrets],
        ),
    ]
    if report.git_operation:  # (a detached HEAD is over once a branch is checked out again)
        print(f"git is in the middle of {report.git_operation}: vaultmem commits nothing until it is over")
    if report.index_needs_rebuild:
        print("the index was built with another embedding model: run `vaultmem reindex --full`")
    if report.index_unreadable:
        print(f"the search index cannot be read ({report.index_unreadable}): run `vaultmem reindex --full`")
    if not report.index_exists:
        print("no search index yet: run `vaultmem reindex`")
    if report.state_free_mib is not None and report.state_free_mib < LOW_SPACE_MIB:
        print(
            f"the state directory {settings.state_dir} has {report.state_free_mib:.0f} MiB free: index "
            "writes fail when it runs out (the notes stay safe in the vault); free some space, and a "
            "running daemon writes what it missed again"
        )
    for title, items in sections:  # a large vault's thousands of links: the first, and how many more
        if items:
            tail = [f"... {len(items) - LISTED} more (`--json` lists all)"] if len(items) > LISTED else []
            print(f"\n{title}:" + "".join(f"\n  {item}" for item in [*items[:LISTED], *tail]))
    print("\nall consistent" if report.ok else "")
    return 0 if report.ok else 1


def _git_lock_line(lock: GitLockInfo) -> str:
    age = f"{lock['age_s']:.0f} s old"
    if lock["stale"]:
        return (
            f"{lock['path']}: stale ({age}, no process holds it: a git killed mid-commit); vaultmem "
            "removes it at its next commit, or remove it yourself"
        )
    if lock["held"] is None:
        return f"{lock['path']}: {age}; cannot tell whether a process holds it, so vaultmem leaves it"
    if lock["held"]:
        return f"{lock['path']}: held by a running process ({age}); vaultmem waits for it"
    return f"{lock['path']}: {age}, no process holds it; stale once older than the lock timeout"


def build_parser() -> argparse.ArgumentParser:
    def location_options(default: Any) -> argparse.ArgumentParser:
        options = argparse.ArgumentParser(add_help=False)
        options.add_argument(
            "--vault",
            metavar="PATH",
            default=default,
            help="the vault folder (default: $VAULTMEM_VAULT, else ~/vaultmem-vault)",
        )
        options.add_argument(
            "--state-dir",
            metavar="DIR",
            default=default,
            help="derived state such as the search index (default: .vaultmem in vaultmem's own folder)",
        )
        return options

    # Accepted before or after the command; a value given after the command wins.
    common = location_options(argparse.SUPPRESS)
    parser = argparse.ArgumentParser(
        prog="vaultmem",
        description="A local memory for AI agents, kept as Markdown notes in a git-tracked vault.",
        parents=[location_options(None)],
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log what happens")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, handler: Handler, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text, parents=[common])
        p.set_defaults(handler=handler)
        return p

    p = add("init", cmd_init, "Create a vault (template folders, filing contract, git repository).")
    p.add_argument("path", nargs="?", help="where to create it (default: --vault)")
    p.add_argument("--git-dir", metavar="DIR", help="keep the git repository outside the vault")
    p.add_argument(
        "--folder",
        metavar="NAME",
        help="vaultmem's own folder in a vault that already holds notes (default: Memory)",
    )

    p = add("clone", cmd_clone, "Make a vault on this machine from a git remote other machines sync with.")
    p.add_argument(
        "url", help="the remote: a path to a bare repository, ssh://..., git@host:..., https://..."
    )
    p.add_argument("path", help="the new vault's folder (must not exist, or be empty)")
    p.add_argument("--git-dir", metavar="DIR", help="keep the git repository outside the vault")

    p = add(
        "sync",
        cmd_sync,
        "Sync with the git remote once: commit pending edits, fetch, merge note by note, push.",
    )
    p.add_argument("--json", action="store_true", help="print the round's report as JSON")

    p = add(
        "serve", cmd_serve, "Run the daemon: MCP over HTTP on 127.0.0.1, the watcher and the commit queue."
    )
    p.add_argument("--host", default="127.0.0.1", help="loopback address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=7821, help="port to listen on (default 7821)")
    p.add_argument("--init", action="store_true", help="create the vault from the template when missing")

    add("mcp", cmd_mcp, "Serve the memory tools over stdio, for MCP hosts that start a process.")

    p = add("token", cmd_token, "Print the default bearer token (made if missing); named tokens per agent.")
    p.add_argument("--rotate", action="store_true", help="replace the default token with a new one")
    actions = p.add_subparsers(dest="token_command", metavar="ACTION")

    def token_action(name: str, help_text: str) -> argparse.ArgumentParser:
        return actions.add_parser(name, help=help_text, description=help_text, parents=[common])

    t = token_action("add", "Make a token for one agent; its writes are committed under its name.")
    t.add_argument("name", help="the agent's name: letters, digits, '.', '_', '-' (e.g. cursor)")
    t.add_argument("--email", help="the address its commits carry (default NAME@vaultmem.local)")
    t = token_action("list", "List the tokens: names, authors, when made, fingerprints (never a token).")
    t.add_argument("--json", action="store_true", help="print the list as JSON")
    t = token_action("revoke", "Revoke an agent's token (a running daemon refuses it at once).")
    t.add_argument("name", help="the token's name")

    p = add("append", cmd_append, "Write a reviewed memory (idempotent on --idempotency-key).")
    p.add_argument("content", help="the memory's Markdown text, or - to read standard input")
    p.add_argument("--kind", required=True, help="entry kind from the filing contract")
    p.add_argument("--title", help="title (default: the first 60 characters of the content)")
    p.add_argument("--project", help="file the memory in this project's space")
    p.add_argument("--tag", action="append", help="a tag (repeatable)")
    p.add_argument("--idempotency-key", help="a key that makes retries write only once")
    p.add_argument("--json", action="store_true", help="print the memory_append result as JSON")

    p = add("capture", cmd_capture, "Record an unreviewed candidate (a thought, idea or link).")
    p.add_argument("content", help="the captured text, or - to read standard input")
    p.add_argument("--kind", help="capture (default) or idea, or another contract kind")
    p.add_argument("--title", help="title (default: a capture-<timestamp> name)")
    p.add_argument("--tag", action="append", help="a tag (repeatable)")
    p.add_argument("--instructions", help="an action to run after the capture is absorbed")
    p.add_argument("--source-url", help="the link this capture is about")
    p.add_argument("--source-id", help="registry identity <namespace>:<ref> of the source")
    p.add_argument("--project", help="the project to stamp (default: from the current folder)")
    p.add_argument("--json", action="store_true", help="print the memory_capture result as JSON")

    p = add("forget", cmd_forget, "Soft-delete a memory (the file is kept, marked deleted).")
    p.add_argument("id", help="the memory's id")
    p.add_argument("--reason", help="why; stamped as delete_reason")
    p.add_argument("--json", action="store_true", help="print the memory_forget result as JSON")

    p = add("search", cmd_search, "Search memories by meaning and keywords (or by id).")
    p.add_argument("query", help="words to search for, or a memory id / id prefix")
    p.add_argument("--project", help="only this project's memories")
    p.add_argument("--kind", help="only memories of this kind")
    p.add_argument("--limit", type=int, default=20, help="at most this many results (default 20)")
    p.add_argument("--include-deleted", action="store_true", help="also show forgotten memories")
    p.add_argument("--json", action="store_true", help="print the memory_search result as JSON")

    p = add("reindex", cmd_reindex, "Bring the search index up to date with the vault.")
    p.add_argument("--full", action="store_true", help="delete the index and rebuild it from the vault")

    p = add("doctor", cmd_doctor, "Check that vault, index and git history agree (reads only).")
    p.add_argument("--json", action="store_true", help="print the report as JSON")

    p = add("log", cmd_log, "Show a memory's versions, newest first: who, when, what (renames followed).")
    p.add_argument("id", help="the memory's id")
    p.add_argument("--diff", action="store_true", help="show each version's change as a diff")
    p.add_argument("--json", action="store_true", help="print the history as JSON")

    p = add("blame", cmd_blame, "Show who last wrote each line and each frontmatter key of a memory.")
    p.add_argument("id", help="the memory's id")
    p.add_argument("--json", action="store_true", help="print it as JSON")
    return parser


def run() -> int:
    """The ``vaultmem`` program (its console script, ``python -m vaultmem.cli``): :func:`main` in a
    process set up as vaultmem's own (``program.py``: no pandas, one BLAS thread)."""
    keep_out_of_process()
    return main()


def main(argv: Sequence[str] | None = None) -> int:
    one_blas_thread()  # before NumPy is first imported, which no command does before this
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(message)s"
    )
    try:
        handler: Handler = args.handler
        with acting_as(Caller(os_user(), transport="cli")):  # its commits carry the OS user's name
            code = handler(args)
            for found in redactions():
                print(f"redacted {found['kind']} ({found['field']} line {found['line']})", file=sys.stderr)
        return code
    except VaultmemError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(run())
