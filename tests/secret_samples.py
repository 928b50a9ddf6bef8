"""Synthetic secrets and clean identifiers for the secret guard's tests and benchmark.

Every secret here is generated from a seeded random source in the shape of a provider's format:
none is, or was ever, a real credential. ``fragments`` are the pieces that must not survive a
redaction or appear in a refusal (for a private key block, each of its lines).
"""

from __future__ import annotations

import base64
import json
import random
import string
import uuid
from collections.abc import Callable
from dataclasses import dataclass

ALNUM = string.ascii_letters + string.digits
B64 = ALNUM + "+/"
HEX = "0123456789abcdef"
UPPER_DIGITS = string.ascii_uppercase + string.digits
LOWER_DIGITS = string.ascii_lowercase + string.digits
URLSAFE = ALNUM + "-_"


@dataclass(frozen=True)
class Sample:
    name: str
    kind: str  # the finding's kind in a note's content
    secret: str
    text: str  # a sentence or line of a note holding the secret
    #: Recognisable on its own, with no sentence around it (a tag, a source id).
    standalone: bool = True

    @property
    def fragments(self) -> list[str]:
        lines = [line.strip() for line in self.secret.splitlines()]
        return [line for line in lines if len(line) >= 12 and "PRIVATE KEY" not in line] or [self.secret]


def _r(rng: random.Random, n: int, alphabet: str = ALNUM) -> str:
    while True:  # a draw with every character class, as real keys have
        token = "".join(rng.choice(alphabet) for _ in range(n))
        if (
            alphabet != ALNUM
            or n < 12
            or (
                any(c.isdigit() for c in token)
                and any(c.islower() for c in token)
                and any(c.isupper() for c in token)
            )
        ):
            return token


def _b64url(obj: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode("utf-8")).decode("ascii").rstrip("=")


def pem_block(
    rng: random.Random, label: str = "RSA PRIVATE KEY", lines: int = 12, newline: str = "\n"
) -> str:
    body = [_r(rng, 64, B64) for _ in range(lines)] + [_r(rng, 24, B64) + "=="]
    return newline.join([f"-----BEGIN {label}-----", *body, f"-----END {label}-----"])


def _sample(name: str, kind: str, secret: str, template: str = "{}", standalone: bool = True) -> Sample:
    return Sample(name, kind, secret, template.format(secret), standalone)


Maker = Callable[[random.Random], Sample]

MAKERS: dict[str, Maker] = {
    "aws access key id": lambda r: _sample(
        "aws access key id", "aws-access-key", "AKIA" + _r(r, 16, UPPER_DIGITS), "aws_access_key_id = {}"
    ),
    "aws temporary key id": lambda r: _sample(
        "aws temporary key id",
        "aws-access-key",
        "ASIA" + _r(r, 16, UPPER_DIGITS),
        "The key {} expires at noon.",
    ),
    "aws secret key (credentials file)": lambda r: _sample(
        "aws secret key (credentials file)",
        "aws-secret-key",
        _r(r, 40, B64),
        "aws_secret_access_key = {}",
        standalone=False,
    ),
    "aws secret key (quoted)": lambda r: _sample(
        "aws secret key (quoted)",
        "aws-secret-key",
        _r(r, 40, B64),
        'AWS_SECRET_KEY: "{}"',
        standalone=False,
    ),
    "rsa private key": lambda r: _sample(
        "rsa private key", "private-key", pem_block(r), "The deploy key:\n\n{}\n\nKeep it safe.", False
    ),
    "pkcs8 private key": lambda r: _sample(
        "pkcs8 private key", "private-key", pem_block(r, "PRIVATE KEY"), "```\n{}\n```", False
    ),
    "ec private key": lambda r: _sample(
        "ec private key", "private-key", pem_block(r, "EC PRIVATE KEY", 3), "{}", False
    ),
    "openssh private key": lambda r: _sample(
        "openssh private key",
        "private-key",
        pem_block(r, "OPENSSH PRIVATE KEY", 6),
        "~/.ssh/id_ed25519:\n{}",
        False,
    ),
    "encrypted private key": lambda r: _sample(
        "encrypted private key", "private-key", pem_block(r, "ENCRYPTED PRIVATE KEY"), "{}", False
    ),
    "pgp private key": lambda r: _sample(
        "pgp private key", "private-key", pem_block(r, "PGP PRIVATE KEY BLOCK"), "{}", False
    ),
    "github classic token": lambda r: _sample(
        "github classic token", "github-token", "ghp_" + _r(r, 36), "export GITHUB_TOKEN={}"
    ),
    "github oauth token": lambda r: _sample(
        "github oauth token", "github-token", "gho_" + _r(r, 36), "the CI uses {} for now"
    ),
    "github fine-grained token": lambda r: _sample(
        "github fine-grained token",
        "github-token",
        "github_pat_" + _r(r, 22) + "_" + _r(r, 59),
        "Use {} for the release job.",
    ),
    "password in a url": lambda r: _sample(
        "password in a url",
        "url-password",
        _r(r, 14),
        "Clone with https://deploy:{}@git.example.com/team/app.git",
        standalone=False,
    ),
    "password in a database url": lambda r: _sample(
        "password in a database url",
        "url-password",
        _r(r, 18),
        "DATABASE_URL=postgres://app:{}@db.internal:5432/app",
        standalone=False,
    ),
    "gitlab token": lambda r: _sample("gitlab token", "gitlab-token", "glpat-" + _r(r, 20), "token {}"),
    "slack bot token": lambda r: _sample(
        "slack bot token",
        "slack-token",
        f"xoxb-{r.randrange(10**11, 10**12)}-{r.randrange(10**12, 10**13)}-{_r(r, 24, LOWER_DIGITS)}",
        "slack bot: {}",
    ),
    "slack webhook": lambda r: _sample(
        "slack webhook",
        "slack-token",
        f"https://hooks.slack.com/services/T{_r(r, 8, UPPER_DIGITS)}/B{_r(r, 8, UPPER_DIGITS)}/{_r(r, 24)}",
        "Alerts post to {}",
    ),
    "stripe live key": lambda r: _sample(
        "stripe live key", "stripe-key", "sk_live_" + _r(r, 24), "STRIPE={}"
    ),
    "stripe test key": lambda r: _sample(
        "stripe test key", "stripe-key", "sk_test_" + _r(r, 99), "test key {}"
    ),
    "stripe restricted key": lambda r: _sample(
        "stripe restricted key", "stripe-key", "rk_live_" + _r(r, 24), "{}"
    ),
    "json web token": lambda r: _sample(
        "json web token",
        "jwt",
        _b64url({"alg": "HS256", "typ": "JWT"})
        + "."
        + _b64url({"sub": str(r.randrange(10**6)), "name": "a user", "iat": r.randrange(10**9, 2 * 10**9)})
        + "."
        + _r(r, 43, URLSAFE),
        "Authorization header was {}",
    ),
    "openai legacy key": lambda r: _sample(
        "openai legacy key", "openai-key", "sk-" + _r(r, 20) + "T3BlbkFJ" + _r(r, 20), "OPENAI_API_KEY={}"
    ),
    "openai project key": lambda r: _sample(
        "openai project key", "openai-key", "sk-proj-" + _r(r, 156, URLSAFE), "key: {}"
    ),
    "anthropic key": lambda r: _sample(
        "anthropic key", "anthropic-key", "sk-ant-api03-" + _r(r, 93, URLSAFE) + "AA", "{}"
    ),
    "google api key": lambda r: _sample(
        "google api key", "google-api-key", "AIza" + _r(r, 35, URLSAFE), "{}"
    ),
    "sendgrid key": lambda r: _sample(
        "sendgrid key", "sendgrid-key", "SG." + _r(r, 22, URLSAFE) + "." + _r(r, 43, URLSAFE), "{}"
    ),
    "twilio key": lambda r: _sample(
        "twilio key", "twilio-key", "SK" + _r(r, 32, string.ascii_lowercase + string.digits), "twilio {}"
    ),
    "npm token": lambda r: _sample(
        "npm token", "npm-token", "npm_" + _r(r, 36), "//registry.npmjs.org/:_authToken={}"
    ),
    "pypi token": lambda r: _sample(
        "pypi token", "pypi-token", "pypi-AgEIcHlwaS5vcmc" + _r(r, 80, URLSAFE), "password = {}"
    ),
    "discord bot token": lambda r: _sample(
        "discord bot token",
        "discord-token",
        "M" + _r(r, 23, ALNUM) + "." + _r(r, 6) + "." + _r(r, 27, URLSAFE),
        "bot {}",
    ),
    "telegram bot token": lambda r: _sample(
        "telegram bot token",
        "telegram-token",
        f"{r.randrange(10**8, 10**9)}:" + _r(r, 35, URLSAFE),
        "{}",
    ),
    "azure storage key": lambda r: _sample(
        "azure storage key",
        "azure-storage-key",
        "AccountKey=" + _r(r, 86, B64) + "==",
        "DefaultEndpointsProtocol=https;AccountName=acct;{};EndpointSuffix=core.windows.net",
    ),
    "password assignment": lambda r: _sample(
        "password assignment",
        "secret-assignment",
        _r(r, 8, string.ascii_lowercase) + "!" + _r(r, 3, string.digits),
        "DB_PASSWORD={}",
        standalone=False,
    ),
    "quoted password": lambda r: _sample(
        "quoted password",
        "secret-assignment",
        "Tr0ub4dor&" + _r(r, 4, string.digits),
        'password: "{}"',
        False,
    ),
    "secret key base": lambda r: _sample(
        "secret key base", "secret-assignment", _r(r, 128, HEX), "SECRET_KEY_BASE = {}", standalone=False
    ),
    "api key of an unknown provider": lambda r: _sample(
        "api key of an unknown provider",
        "high-entropy-string",
        _r(r, 24),
        "My API key for the weather service is {}",
        standalone=False,
    ),
    "bearer token": lambda r: _sample(
        "bearer token", "high-entropy-string", _r(r, 40, URLSAFE), "Authorization: Bearer {}", False
    ),
    "hex token after a secret word": lambda r: _sample(
        "hex token after a secret word",
        "high-entropy-string",
        _r(r, 32, HEX),
        "The webhook secret is {}",
        False,
    ),
    "random key on its own": lambda r: _sample(
        "random key on its own", "high-entropy-string", _r(r, 40), "Paste this into the box: {} and save."
    ),
}


def samples(seed: int = 18) -> list[Sample]:
    rng = random.Random(seed)
    return [make(rng) for make in MAKERS.values()]


def clean_texts(seed: int = 18) -> dict[str, str]:
    """Writes a guard must let through: long random-looking ids, hashes, names and public material."""
    r = random.Random(seed)
    sha = _r(r, 40, HEX)
    return {
        "uuid v4": f"Ticket {uuid.UUID(int=r.getrandbits(128), version=4)} is closed.",
        "uuid v7 as an id": f"id: {uuid.UUID(int=r.getrandbits(128))}",
        "git sha": f"Fixed in {sha}; reverted by {_r(r, 40, HEX)}.",
        "short sha": f"see commit {sha[:12]} and {sha[:7]}",
        "sha256 hex": f"sha256sum: {_r(r, 64, HEX)}  vaultmem-0.1.0.tar.gz",
        "sha512 hex": f"checksum {_r(r, 128, HEX)}",
        "docker digest": f"image: ghcr.io/org/app@sha256:{_r(r, 64, HEX)}",
        "subresource integrity": f'<script integrity="sha384-{_r(r, 64, B64)}"></script>',
        "mongodb object id": f"ObjectId('{_r(r, 24, HEX)}')",
        "ulid": f"event {_r(r, 26, '0123456789ABCDEFGHJKMNPQRSTVWXYZ')} logged",
        "ksuid": f"request {_r(r, 27)} took 40 ms",
        "nanoid": f"short link id {_r(r, 21, ALNUM + '_-')}",
        "order id": f"order id: {_r(r, 32)}",
        "content hash in a file name": f"![[{_r(r, 32, ALNUM + '_-')}.png]]",
        "base64 image name": f"![diagram](attachments/{_r(r, 43, URLSAFE)}.webp)",
        "base64 image name in prose": f"The upload is saved as {_r(r, 44, URLSAFE)}.jpg on the share.",
        "google drive url": f"https://drive.google.com/file/d/{_r(r, 33, URLSAFE)}/view?usp=sharing",
        "youtube url": f"https://www.youtube.com/watch?v={_r(r, 11, URLSAFE)}&list={_r(r, 34, URLSAFE)}",
        "signed-looking path": f"/var/cache/vaultmem/{_r(r, 48)}",
        "ipfs content id": "ipfs://Qm"
        + _r(r, 44, "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"),
        "inline image data uri": f"![dot](data:image/png;base64,{_r(r, 400, B64)}==)",
        "wikilink to a random name": f"see [[{_r(r, 36)}]]",
        "ssh public key": f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{_r(r, 43, B64)} me@laptop",
        "certificate": pem_block(r, "CERTIFICATE"),
        "public key": pem_block(r, "PUBLIC KEY", 4),
        "compound name": "The chemokines CXCL10/interferon-gamma-inducible protein of 10 kDa were measured.",
        "long hyphenated words": "a state-of-the-art, easy-to-use, well-thought-out design-for-everyone",
        "prose about passwords": "Password: forgotten again. The secret: patience. My token count was 1500.",
        "environment reference": 'token = os.environ["GITHUB_TOKEN"]\npassword = "${DB_PASSWORD}"',
        "code about secrets": (
            'secrets_mode: SecretsMode = "refuse"\nsecret_name = "prod-db-credentials"\n'
            "config.api_key_prefix['ApiKeyAuth'] = 'Bearer'\n_SECRET_WORD = re.compile(\n"
            'password_policy = "strong-and-long"\ntoken_type = "bearer"\nPASSWORD_MIN_LENGTH = 12'
        ),
        "placeholders": "api_key: <YOUR_API_KEY>\npassword: ********\nsecret=changeme",
        "a marker from an earlier redaction": (
            "key [REDACTED:aws-access-key] and DB_PASSWORD=[REDACTED:secret-assignment]"
        ),
        "a password manager reference": "The staging password is in 1Password under 'staging db'.",
        "numbers": f"phone +1 555 0100, invoice {r.randrange(10**15, 10**16)}, EC 1.14.16.2",
        "camel case identifiers": "VeryLongClassNameForTheAbstractSingletonProxyFactoryBean2 extends Base",
    }
