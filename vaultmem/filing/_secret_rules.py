"""The rules of the secret guard: where in a text each secret is (see :mod:`vaultmem.filing.secrets`).

:func:`secret_spans` is the one entry point: ``(start, end, kind)`` for each secret, overlapping and
touching findings merged into the one of the higher-ranked rule (private key block, provider format,
secret-named assignment, high-entropy string). It reads only and keeps no state between calls, so
concurrent writes may scan at once.

Speed: every write is scanned, up to 100 kB. Like gitleaks' rule keywords, each detector names the
literals that any match of its patterns contains; a detector whose literals are absent from the
text does not run, and the slow "assignment" patterns (an optional prefix tried at every position)
run only near their literals.
"""

from __future__ import annotations

import math
import re
import string
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

Span = tuple[int, int, str]
_Range = tuple[int, int]

LINE_BREAK = re.compile(r"\r\n|\n|\r")  # the line ends Obsidian and the frontmatter parser know
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
_WINDOW = 300  # characters either side of a literal that the patterns near it are tried within
_MIN_RUN = 24
_LONG_RUN = re.compile(rf"[A-Za-z0-9_-]{{{_MIN_RUN},}}")


@dataclass(frozen=True)
class _Detector:
    kind: str
    patterns: tuple[re.Pattern[str], ...]
    #: Lower-case literals every match contains (matched case-blind); none: always run.
    literals: tuple[str, ...] = ()
    #: Run the patterns only within _WINDOW characters of a literal, on its line, and only where
    #: the window holds a run of _MIN_RUN key characters (every such pattern's secret is that long).
    near_literals: bool = False
    accept: Callable[[str], bool] | None = None
    classify: Callable[[str], str] | None = None


class _KeywordAnalyzer(Protocol):
    def analyze_string(
        self, string: str, denylist_regex_to_group: dict[re.Pattern[str], int] | None = None
    ) -> Iterator[str]: ...


@dataclass(frozen=True)
class _Library:
    """What the guard takes from detect-secrets, loaded once."""

    detectors: tuple[_Detector, ...]
    private_key_headers: tuple[re.Pattern[str], ...]
    keyword: _KeywordAnalyzer
    keyword_groups: dict[re.Pattern[str], int]
    keyword_words: re.Pattern[str]
    base64_entropy: Callable[[str], float]
    hex_entropy: Callable[[str], float]
    is_placeholder: Callable[[str], bool]
    is_indirect_reference: Callable[[str], bool]
    is_uuid: Callable[[str], bool]


def _not_words(value: str) -> bool:
    """For the patterns that take any long value after ``key =``: a phrase-like-this is not a key."""
    return not _is_compound_name(value)


def _aws_kind(value: str) -> str:
    return "aws-access-key" if len(value) == 20 else "aws-secret-key"


def _p(pattern: str) -> tuple[re.Pattern[str]]:
    return (re.compile(pattern),)


# Formats detect-secrets 1.5 misses (its issue #894 and pull requests #960, #980 are open), and the
# unquoted AWS secret key of an .env or credentials file (it wants the key quoted).
_OWN_DETECTORS = (
    _Detector("github-token", _p(r"github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}"), ("github_pat_",)),
    _Detector(
        "openai-key",
        _p(r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}(?![A-Za-z0-9_-])"),
        ("sk-proj-", "sk-svcacct-", "sk-admin-"),
    ),
    _Detector("anthropic-key", _p(r"sk-ant-[a-z]{3,8}\d{2}-[A-Za-z0-9_-]{40,}"), ("sk-ant-",)),
    _Detector("google-api-key", _p(r"AIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])"), ("aiza",)),
    _Detector("stripe-key", _p(r"(?:sk|rk)_(?:test|live)_[0-9A-Za-z]{24,}"), ("k_test_", "k_live_")),
    _Detector("npm-token", _p(r"(?<![A-Za-z0-9])npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])"), ("npm_",)),
    _Detector("slack-token", _p(r"xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+"), ("xapp-",)),
    _Detector(
        "aws-secret-key",
        _p(
            r"(?i:aws)[\w.-]{0,20}?(?i:secret|key)[\w.-]{0,20}?[\"']?\s*[:=]\s*[\"']?"
            r"([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
        ),
        ("aws",),
    ),
)


@lru_cache(maxsize=1)
def _library() -> _Library:
    """detect-secrets' detectors, loaded on the first scan (its import costs about 90 ms).

    Its compiled patterns are used directly rather than through ``scan_line``: that entry point goes
    through a process-wide settings object (not safe beside concurrent writes), can verify a key
    over the network when so configured, and reports every word of prose as a high-entropy
    candidate. Left out: its public-IP detector (an address is not a credential) and its two entropy
    plugins as such (they judge quoted strings only; :func:`_entropy_spans` uses their measure).
    """
    from detect_secrets.filters import heuristic
    from detect_secrets.plugins import (
        artifactory,
        aws,
        azure_storage_key,
        basic_auth,
        cloudant,
        discord,
        github_token,
        gitlab_token,
        high_entropy_strings,
        ibm_cloud_iam,
        ibm_cos_hmac,
        jwt,
        keyword,
        mailchimp,
        npm,
        openai,
        private_key,
        pypi_token,
        sendgrid,
        slack,
        softlayer,
        square_oauth,
        stripe,
        telegram_token,
        twilio,
    )

    def of(plugin: object) -> tuple[re.Pattern[str], ...]:
        return tuple(getattr(plugin, "denylist"))  # noqa: B009 - a class attribute typed as a property

    def assignment(kind: str, plugin: object) -> _Detector:
        return _Detector(kind, of(plugin), assigned, near_literals=True, accept=_not_words)

    # The assignment detectors (``ibm_cloud_key = ...``): each pattern needs one of these.
    assigned = ("key", "pw", "pass", "token", "secret", "access", "cloudant.com", "softlayer.com")
    github = ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")
    gitlab = ("glpat-", "gldt-", "glft-", "glsoat-", "glrt-", "gr1348941", "glcbt-", "glimt-", "glptt-")
    library = (
        _Detector(
            "aws-access-key",
            of(aws.AWSKeyDetector),
            ("akia", "asia", "abia", "acca", "a3t", "aws"),
            classify=_aws_kind,
        ),
        _Detector("github-token", of(github_token.GitHubTokenDetector), github),
        _Detector("gitlab-token", of(gitlab_token.GitLabTokenDetector), (*gitlab, "glagent-", "gloas-")),
        _Detector("slack-token", of(slack.SlackDetector), ("xox", "hooks.slack.com")),
        _Detector("stripe-key", of(stripe.StripeDetector), ("k_live_",)),
        _Detector("jwt", of(jwt.JwtTokenDetector), ("eyj",), accept=jwt.JwtTokenDetector.is_formally_valid),
        _Detector("openai-key", of(openai.OpenAIDetector), ("t3blbkfj",)),
        _Detector("sendgrid-key", of(sendgrid.SendGridDetector), ("sg.",)),
        _Detector("twilio-key", of(twilio.TwilioKeyDetector), ("ac", "sk")),
        _Detector("mailchimp-key", of(mailchimp.MailchimpDetector), ("-us",)),
        _Detector("npm-token", of(npm.NpmDetector), ("_authtoken=",)),
        _Detector("pypi-token", of(pypi_token.PypiTokenDetector), ("pypi-",)),
        _Detector("discord-token", of(discord.DiscordBotTokenDetector)),
        _Detector("telegram-token", of(telegram_token.TelegramBotTokenDetector), (":",)),
        _Detector("azure-storage-key", of(azure_storage_key.AzureStorageKeyDetector), ("accountkey=",)),
        _Detector("square-secret", of(square_oauth.SquareOAuthDetector), ("sq0csp-",)),
        _Detector("artifactory-token", of(artifactory.ArtifactoryDetector), ("akc", "ap")),
        assignment("cloudant-credential", cloudant.CloudantDetector),
        assignment("ibm-cloud-key", ibm_cloud_iam.IbmCloudIamDetector),
        assignment("ibm-cloud-key", ibm_cos_hmac.IbmCosHmacDetector),
        assignment("softlayer-key", softlayer.SoftlayerDetector),
        _Detector("url-password", of(basic_auth.BasicAuthDetector), ("://",)),
    )

    def is_placeholder(value: str) -> bool:
        return bool(
            heuristic.is_templated_secret(value)
            or heuristic.is_prefixed_with_dollar_sign(value)
            or heuristic.is_not_alphanumeric_string(value)
            or heuristic.is_sequential_string(value)
        )

    return _Library(
        detectors=(*_OWN_DETECTORS, *library),
        private_key_headers=of(private_key.PrivateKeyDetector),
        keyword=keyword.KeywordDetector(),
        keyword_groups=dict(keyword.CONFIG_DENYLIST_REGEX_TO_GROUP),
        keyword_words=re.compile("|".join(keyword.DENYLIST), re.IGNORECASE),
        base64_entropy=high_entropy_strings.Base64HighEntropyString().calculate_shannon_entropy,
        hex_entropy=high_entropy_strings.HexHighEntropyString().calculate_shannon_entropy,
        is_placeholder=is_placeholder,
        is_indirect_reference=heuristic.is_indirect_reference,
        is_uuid=heuristic.is_potential_uuid,
    )


# -- the text being scanned ---------------------------------------------------------------------


class _Text:
    """A text with an ASCII-lowered twin of the same length, for case-blind literal search."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._windows: dict[tuple[str, ...], list[_Range]] = {}
        self._line_starts: list[int] | None = None
        self._long_runs: list[_Range] | None = None
        lowered = text.lower()  # one character for one unless it grows: then offsets would drift
        self.lowered = lowered if len(lowered) == len(text) else text.translate(_ASCII_LOWER)

    def has_any(self, literals: Sequence[str]) -> bool:
        return any(literal in self.lowered for literal in literals)

    def line_start(self, pos: int) -> int:
        return max(self.text.rfind("\n", 0, pos), self.text.rfind("\r", 0, pos)) + 1

    def line_end(self, pos: int) -> int:
        ends = [i for i in (self.text.find("\n", pos), self.text.find("\r", pos)) if i >= 0]
        return min(ends) if ends else len(self.text)

    def windows(self, literals: tuple[str, ...]) -> list[_Range]:
        """The stretches within _WINDOW characters of a literal, each kept to the literal's line."""
        if literals not in self._windows:
            self._windows[literals] = self._find_windows(literals)
        return self._windows[literals]

    def line_starts(self) -> list[int]:
        if self._line_starts is None:
            self._line_starts = [0] + [m.end() for m in LINE_BREAK.finditer(self.text)]
        return self._line_starts

    def _find_windows(self, literals: tuple[str, ...]) -> list[_Range]:
        starts, found = self.line_starts(), []
        for literal in literals:
            pos = self.lowered.find(literal)
            while pos >= 0:
                line = bisect_right(starts, pos)  # starts[line - 1] <= pos < starts[line]
                end = starts[line] if line < len(starts) else len(self.text)
                while end > pos and self.text[end - 1] in "\r\n":
                    end -= 1
                start = max(starts[line - 1], pos - _WINDOW)
                found.append((start, min(end, pos + len(literal) + _WINDOW)))
                pos = self.lowered.find(literal, pos + 1)
        merged: list[_Range] = []
        for start, end in sorted(found):
            if merged and start <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], end))
            else:
                merged.append((start, end))
        return merged

    def lines(self) -> list[_Range]:
        return [(start, self.line_end(start)) for start in self.line_starts()]

    def has_long_run(self, start: int, end: int) -> bool:
        """Whether a run of _MIN_RUN key characters overlaps ``[start, end)``."""
        if self._long_runs is None:
            self._long_runs = [m.span() for m in _LONG_RUN.finditer(self.text)]
        i = bisect_right(self._long_runs, (start, len(self.text)))  # runs are disjoint, in order
        before = i > 0 and self._long_runs[i - 1][1] > start
        return before or (i < len(self._long_runs) and self._long_runs[i][0] < end)


# -- private key blocks ----------------------------------------------------------------------------

_KEY_WORDS = r"(?:[A-Z0-9]+\s+){0,3}PRIVATE\s+KEY(?:\s+BLOCK)?"
_PRIVATE_BEGIN = re.compile(rf"-{{3,}}\s*BEGIN\s+{_KEY_WORDS}\s*-{{3,}}")
_PRIVATE_END = re.compile(rf"-{{3,}}\s*END\s+{_KEY_WORDS}\s*-{{3,}}")
# A line a key block may hold: base64, or an RFC 1421 / PuTTY header ("Proc-Type: 4,ENCRYPTED").
_KEY_LINE = re.compile(r"[ \t]*(?:[A-Za-z0-9+/=]*|[A-Za-z][A-Za-z0-9-]*:[^\r\n]*)[ \t]*")


def _key_run_end(text: _Text, pos: int) -> int:
    """The end of the key-like lines from ``pos``: a header with no END line (a truncated paste)."""
    end = cursor = text.line_end(pos)
    while cursor < len(text.text):
        line = cursor + (2 if text.text.startswith("\r\n", cursor) else 1)
        cursor = text.line_end(line)
        if not _KEY_LINE.fullmatch(text.text, line, cursor):
            break
        if text.text[line:cursor].strip():
            end = cursor
    return end


def _private_key_spans(text: _Text, lib: _Library) -> Iterator[_Range]:
    if "private" not in text.lowered and "putty" not in text.lowered:
        return
    starts = {m.start() for m in _PRIVATE_BEGIN.finditer(text.text)}
    # detect-secrets' headers catch what the dashed form misses (PuTTY, a header without dashes).
    starts |= {m.start() for p in lib.private_key_headers for m in p.finditer(text.text)}
    covered = -1
    for start in sorted(starts):
        if start < covered:
            continue
        begin = _PRIVATE_BEGIN.match(text.text, start)
        after = begin.end() if begin else start
        end_marker = _PRIVATE_END.search(text.text, after)
        covered = end_marker.end() if end_marker else _key_run_end(text, after)
        yield start, covered


# -- provider formats ------------------------------------------------------------------------------


def _detector_spans(text: _Text, lib: _Library, gated: bool = True) -> Iterator[Span]:
    """Provider formats; ``gated=False`` skips the literal gates (for tests: the gates change nothing)."""
    whole = [(0, len(text.text))]
    for detector in lib.detectors:
        if gated and detector.literals and not text.has_any(detector.literals):
            continue
        windows = whole
        if gated and detector.near_literals:
            windows = [w for w in text.windows(detector.literals) if text.has_long_run(*w)]
        for pattern in detector.patterns:
            for w_start, w_end in windows:
                for match in pattern.finditer(text.text, w_start, w_end):
                    span = _value_span(text.text, match)
                    value = text.text[span[0] : span[1]]
                    if value and (detector.accept is None or detector.accept(value)):
                        yield *span, detector.classify(value) if detector.classify else detector.kind


def _value_span(text: str, match: re.Match[str]) -> _Range:
    """The secret in a match: its first non-empty group, without the spaces or quotes it anchors on."""
    group = next((i for i in range(1, (match.re.groups or 0) + 1) if match.group(i)), 0)
    start, end = match.span(group)
    while start < end and (text[start].isspace() or text[start] in "\"'=:"):
        start += 1
    while end > start and (text[end - 1].isspace() or text[end - 1] in "\"'"):
        end -= 1
    return start, end


# -- assignments to secret-named keys --------------------------------------------------------------

# Every pattern of detect-secrets' keyword detector holds one of its words, and each contains one of
# these (api_key, db_pass, passwd, pwd, secret, contraseña, ...).
_KEYWORD_LITERALS = ("key", "pass", "pwd", "secret", "contrase")
# The name a value is assigned to (``config["db_password"] = ``, ``SecretsMode = ``, ``api_key: ``).
_ASSIGNED_NAME = re.compile(r"([\w.\-\[\]'\"]+?)\s*(?:[:!=]=?=?|=>)\s*[\"'`]?$")
# How a name that holds a secret itself ends (DB_PASSWORD, aws_secret_access_key, api_key_value).
_SECRET_NAME_END = re.compile(
    r"(?:key|pass|password|passwd|pwd|secret|token|contrase(?:ñ|n)a)s?(?:[_-]?(?:value|str|string))?$",
    re.IGNORECASE,
)
# A marker, a URL or a path names where a secret is, not what it is.
_NOT_A_VALUE = re.compile(r"\[REDACTED:[a-z0-9-]+\]|://|^[~/.]")
_PLACEHOLDER = re.compile(
    r"(?:your[_-]?)?(?:password|passwd|secret|token|key)|changeme|example|redacted|required|optional|"
    r"none|null|nil|true|false|undefined|empty|hidden|masked",
    re.IGNORECASE,
)


def _assigned_value_spans(text: _Text, lib: _Library, gated: bool = True) -> Iterator[_Range]:
    """Secret-named assignments, line by line as detect-secrets scans (``gated``: near its words)."""
    lines = text.windows(_KEYWORD_LITERALS) if gated else text.lines()
    for w_start, w_end in lines:
        window = text.text[w_start:w_end]
        for raw in lib.keyword.analyze_string(window, denylist_regex_to_group=lib.keyword_groups):
            value = raw.strip().strip("\"'`").rstrip(".,;!?)")
            pos = window.find(value) if value else -1
            if pos >= 0 and _plausible_assigned(value, window, pos, lib):
                yield w_start + pos, w_start + pos + len(value)


def _plausible_assigned(value: str, line: str, pos: int, lib: _Library) -> bool:
    if len(value) < 6 or any(c.isspace() for c in value) or _PLACEHOLDER.fullmatch(value):
        return False
    if _NOT_A_VALUE.search(value) or len(set(value)) < 3 or lib.is_placeholder(value):
        return False
    if lib.is_indirect_reference(line):
        return False
    assigned = _ASSIGNED_NAME.search(line[:pos])
    name = assigned.group(1).rstrip("'\"[]") if assigned else ""
    if lib.keyword_words.search(name) and not _SECRET_NAME_END.search(name):
        return _random_value(value, lib)  # secret_name = "prod-db", SecretsMode = "refuse": about a secret
    if line[:pos].rstrip(" \t\"'`").endswith(":"):  # "Password: forgotten" is prose, "Tr0ub4dor&3" not
        digit, lower, upper, _ = _shape(value)
        return digit or any(not c.isalnum() for c in value) or (lower and upper and not value[1:].islower())
    return True


# -- high-entropy strings --------------------------------------------------------------------------

_PUBLIC_BEGIN = re.compile(r"-{5}BEGIN ((?:(?!PRIVATE)[A-Z0-9 ])+)-{5}")  # a certificate, a public key
_PUBLIC_MATERIAL = re.compile(
    r"(?:ssh-(?:rsa|dss|ed25519)|ecdsa-sha2-nistp\d+|sk-(?:ssh-ed25519|ecdsa-sha2-nistp256)@openssh\.com)"
    r"\s+AAAA[A-Za-z0-9+/]+=*"
    r"|data:[\w.+-]+/[\w.+-]+(?:;[\w=.-]+)*;base64,[A-Za-z0-9+/]+=*"  # a data URI (an inline image)
    r"|Qm[1-9A-HJ-NP-Za-km-z]{44}(?![A-Za-z0-9])"  # an IPFS content id (a hash)
    r"|sha(?:256|384|512)-[A-Za-z0-9+/]+=*"  # a subresource-integrity hash
    r"|\[\[[^\]\r\n]*\]\]"  # a wikilink names a note
)
#: The Excalidraw plugin's drawing as it saves it by default: base64 of the compressed drawing, in
#: lines of 256 characters that each look like a key. What is typed into the drawing is also in the
#: note's "Text Elements" section in plain words, and scanned there.
_DRAWING = re.compile(r"^```compressed-json[ \t]*\r?\n.*?^```", re.MULTILINE | re.DOTALL)
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{0,30}://[^\s<>\"'`)\]]+")
_TOKEN = re.compile(r"[A-Za-z0-9+/_-]{16,}={0,2}")
_FILE_SUFFIX = re.compile(r"\.[A-Za-z0-9]{1,5}(?![A-Za-z0-9])")
_SECRET_WORD = re.compile(
    r"(?<![A-Za-z])(?:api[\s_-]?keys?|access[\s_-]?keys?|private[\s_-]?keys?|signing[\s_-]?keys?|"
    r"secrets?|tokens?|passw(?:or)?ds?|passphrases?|pwd|credentials?|bearer|authorization|auth)"
    r"(?![A-Za-z])",
    re.IGNORECASE,
)
_ASSIGNED_WORD = re.compile(r"(?<![A-Za-z])(?:keys?|pass|sig|signature|cookie|session)(?![A-Za-z])", re.I)
_ID_WORD = re.compile(
    r"(?<![A-Za-z])(?:ids?|identifiers?|uuids?|guids?|ulids?|hash(?:es)?|sha\d*|md5|digests?|checksums?|"
    r"commits?|revisions?|rev|fingerprints?|etags?|cids?|nonces?)(?![A-Za-z])",
    re.IGNORECASE,
)
# Between a secret word and its value: the rest of an identifier (DB_PASSWORD), separators, and up to
# five short words ("my API key for the staging box is ...").
_GAP = re.compile(r"[A-Za-z0-9_-]*[\s\"'`:=>(){}\[\],|*]*(?:[A-Za-z']{1,10}[\s\"'`:=>,]+){0,5}")
_ASSIGNMENT_GAP = re.compile(r"[A-Za-z0-9_-]*[\"'`]?\s*[:=]\s*[\"'`]?")
# A compound of words and short codes (CXCL10/interferon-gamma-inducible) is a name, not a key.
_PART = re.compile(r"[A-Za-z0-9]+")
_LOOKBACK = 64


def _shape(token: str) -> tuple[bool, bool, bool, bool]:
    """Whether ``token`` has digits, lower case, upper case, and whether it is all hex digits."""
    return (
        any(c.isdigit() for c in token),
        any(c.islower() for c in token),
        any(c.isupper() for c in token),
        all(c in string.hexdigits for c in token),
    )


def _random_enough(token: str, is_hex: bool, lib: _Library) -> bool:
    """Shannon entropy (detect-secrets' measure) near what a random string of that length reaches.

    detect-secrets' fixed limits (4.5 bits base64, 3.0 hex) suit long strings; a random 32-character
    key falls below 4.5 in 38% of draws, so the bar is 85% of the most a string of that length can
    reach (log2 of its length), capped at those limits.
    """
    ceiling = 0.85 * math.log2(len(token))
    if is_hex:
        return lib.hex_entropy(token) >= min(3.0, ceiling)
    return lib.base64_entropy(token) >= min(4.5, ceiling)


def _random_value(token: str, lib: _Library) -> bool:
    """Whether a value after a secret word looks like a key: 16 characters or more, mixing digits
    and letters (or both cases), and near the entropy of a random string of its length."""
    digit, lower, upper, is_hex = _shape(token)
    mixed = (digit and (lower or upper)) if is_hex else (digit or (lower and upper))
    return len(token) >= 16 and mixed and not lib.is_placeholder(token) and _random_enough(token, is_hex, lib)


def _is_compound_name(token: str) -> bool:
    parts = _PART.findall(token)
    return len(parts) > 1 and all(len(p) < 8 or p.isalpha() for p in parts)


def _after_secret_word(before: str) -> str | None:
    """The gap between the last secret word in ``before`` and its end, when it introduces a value."""
    words = list(_SECRET_WORD.finditer(before))
    if words and _GAP.fullmatch(gap := before[words[-1].end() :]):
        return gap
    assigned = list(_ASSIGNED_WORD.finditer(before))
    if assigned and _ASSIGNMENT_GAP.fullmatch(gap := before[assigned[-1].end() :]):
        return gap
    return None


def _public_spans(text: _Text) -> list[_Range]:
    """Public material and names: certificates and public keys (to their END line, or the end of
    their base64 when it was cut off), SSH public keys, data URIs, content hashes, wikilinks, an
    Excalidraw drawing's compressed block."""
    spans = [m.span() for m in _PUBLIC_MATERIAL.finditer(text.text)]
    if "```compressed-json" in text.text:
        spans += [m.span() for m in _DRAWING.finditer(text.text)]
    for begin in _PUBLIC_BEGIN.finditer(text.text):
        end = text.text.find(f"-----END {begin.group(1)}-----", begin.end())
        spans.append(
            (begin.start(), end + 14 + len(begin.group(1)) if end >= 0 else _key_run_end(text, begin.end()))
        )
    return spans


def _entropy_spans(text: _Text, lib: _Library, skip: Sequence[_Range], identifier: bool) -> Iterator[_Range]:
    urls: list[_Range] | None = None
    for match in _TOKEN.finditer(text.text):
        token, (start, end) = match.group(), match.span()
        if any(s <= start and end <= e for s, e in skip):
            continue
        before = text.text[max(text.line_start(start), start - _LOOKBACK) : start]
        digit, lower, upper, is_hex = _shape(token)
        gap = _after_secret_word(before)
        if gap is not None and not _ID_WORD.search(gap):
            if _random_value(token, lib):
                yield start, end
            continue
        # On its own: only what no identifier looks like, and nothing in a field that holds an id.
        if identifier or len(token) < 32 or is_hex or not (digit and lower and upper) or token[0] in "/-_":
            continue
        if _FILE_SUFFIX.match(text.text, end) or _ID_WORD.search(before[-32:]) or _is_compound_name(token):
            continue
        if urls is None:
            urls = [m.span() for m in _URL.finditer(text.text)] if "://" in text.text else []
        if any(s <= start and end <= e for s, e in urls):
            continue
        if not lib.is_uuid(token) and not lib.is_placeholder(token) and _random_enough(token, False, lib):
            yield start, end


# -- all together ----------------------------------------------------------------------------------


def secret_spans(text: str, *, identifier: bool = False) -> list[Span]:
    """Each secret in ``text`` as ``(start, end, kind)``, in order; overlapping findings merged.

    ``identifier``: the text is an id by its field (a source id), so a random-looking string in it
    counts only in a secret's known format or after a secret word.
    """
    if not text:
        return []
    lib = _library()
    scan = _Text(text)
    ranked: list[tuple[int, int, int, str]] = []  # start, rank, end, kind
    ranked += [(s, 0, e, "private-key") for s, e in _private_key_spans(scan, lib)]
    ranked += [(s, 1, e, kind) for s, e, kind in _detector_spans(scan, lib)]
    ranked += [(s, 2, e, "secret-assignment") for s, e in _assigned_value_spans(scan, lib)]
    entropy = _entropy_spans(scan, lib, _public_spans(scan), identifier)
    ranked += [(s, 3, e, "high-entropy-string") for s, e in entropy]
    ranked.sort()
    merged: list[tuple[int, int, str, int]] = []
    for start, rank, end, kind in ranked:
        if merged and start <= merged[-1][1]:  # touching findings are one secret (a JWT, its signature)
            m_start, m_end, m_kind, m_rank = merged[-1]
            keep = (m_kind, m_rank) if m_rank <= rank else (kind, rank)
            merged[-1] = (m_start, max(m_end, end), *keep)
        else:
            merged.append((start, end, kind, rank))
    return [(s, e, k) for s, e, k, _ in merged]
