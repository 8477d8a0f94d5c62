"""Credentials never reach a log, plan, lock or report."""

from __future__ import annotations

import functools
import hashlib
import re
from typing import Any, Dict, List, Mapping

# userinfo runs to the last @ of the authority: a password may hold an @ itself.  A scheme is
# at most 32 characters (git+ssh, https): unbounded, each letter of a long run of letters
# began a scan to its end, and a 1 MB build-log line of them with one @ took an hour.
_URL_USERINFO = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]{0,31}://)(?P<userinfo>[^/\s'\"]*)@")
# a name that ends in one of these words: GITHUB_TOKEN, PRIVATE-TOKEN, db_password, X-Api-Key,
# SIGNING_KEY (in text: NAME=value, NAME: value)
_ENDS_SECRET = re.compile(
    r"(?i)[A-Za-z0-9_.-]*(?:token|password|passwd|pwd|secret|api[_-]?key|access[_-]?key|[_-]key)"
)
# a variable or key NAME whose value is a secret, whatever the value looks like, by a
# part of it: *PASSWORD*, *PASSWD*, *PASSPHRASE*, *TOKEN*, *SECRET*, *CREDENTIAL*
_HOLDS_SECRET = re.compile(r"(?i)passw(?:or)?d|passphrase|token|secret|credential")
# ... or by a whole word of it (words split at _ - . and camelCase): API_KEY_ID (an AWS
# key id is half a credential), KEY_FILE, PRIVATE_KEY_PEM, NPM_AUTH, Authorization,
# DB_PASS, SESSION_COOKIE; a git host's personal access token (GH_PAT, ADO_PAT), a
# BEARER, a JWT, a NETRC; a database's DSN.  As words only: PASSTHROUGH, BYPASS, AUTHOR,
# KEYBOARD, MONKEY and PATH are no secrets.  A session id alone is not (SESSION_MANAGER).
_SECRET_WORDS = frozenset(
    {"key", "pass", "auth", "authorization", "oauth", "private", "privkey", "apikey"}
    | {"cookie", "cookies", "sessionid", "sshpass", "pat", "bearer", "jwt", "netrc", "dsn"}
)
# ... or a database's address, which carries its password (postgres://user:pass@host):
# a database word with an address word, DATABASE_URL, MONGODB_URI, SQLALCHEMY_DATABASE_URI,
# REDIS_URL, JDBC_URL, PG_CONN; and a CONNECTION_STRING (Azure's holds the AccountKey).
_DATABASES = frozenset(
    {"database", "db", "sql", "sqlalchemy", "pg", "postgres", "postgresql", "mysql", "mariadb"}
    | {"mongo", "mongodb", "redis", "jdbc", "amqp"}
)
_ADDRESSES = frozenset({"url", "uri", "conn", "connection"})
# a word of a NAME: runs of capitals (API in APIKey), capitalised or lowercase words, digits
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
# NAME: value and NAME=value in text: the NAME and its separator (a name starts where no
# name character is before it: a run of them is tried once, not from each of its
# characters), then the value, read only after a NAME that says it is a secret (a value
# read after `https:` would swallow the `?token=...` in it); a header's scheme
# (Authorization: Bearer ***) is left to the header rule
_NAMED = re.compile(r"(?<![A-Za-z0-9_.-])(?P<name>[A-Za-z0-9_.-]+)[\"']?(?P<sep>:\s*|=)")
# ... a quoted value (`PASSWORD="a b"`, JSON's `"password": "x"`) is masked to its closing
# quote, the quotes kept; with no closing quote on the line (a line cut short, a quote
# opened by mistake) to the end of the line
_QUOTED = re.compile(r"\"[^\"\n]*\"?|'[^'\n]*'?")
_VALUE = {
    # After `NAME:` the value ends at a blank, quote, comma or `}` (YAML, headers, JSON-ish text);
    # after `NAME=` at a blank, quote, `&` (the next query parameter) or `;` (the next shell
    # command).  An already masked `***` is left alone.
    ":": re.compile(r"(?!\*\*\*|(?i:bearer|basic|token)\s)[^\s'\",}]+"),
    "=": re.compile(r"(?!\*\*\*)[^\s&'\";]+"),
}
MASK = "***"
# a command line's `--password VALUE`, `--api-key VALUE`, `--token VALUE` (docker login, curl);
# the name starts with a letter: from a `--` in a long rule of dashes it is not scanned
_OPTION_SECRET = re.compile(
    r"(?i)(?<![A-Za-z0-9_.-])(?P<option>--(?=[A-Za-z])[A-Za-z0-9_-]*(?:token|password|passwd|secret|"
    r"api[_-]?key|access[_-]?key))(?P<space>\s+)(?!\*\*\*|-)(?:\"[^\"\n]*\"|'[^'\n]*'|[^\s'\"]+)"
)
# git's configuration by environment (what `cannbuild.mirrors` sets for git inside the
# builds): GIT_CONFIG_KEY_0 names a setting, `url.<mirror>.insteadOf`, not a key that is a
# secret; its value is shown with the mirror's credentials redacted, as any text is.
_GIT_CONFIG_ENV = re.compile(r"GIT_CONFIG_(?:KEY|VALUE)_\d+|GIT_CONFIG_COUNT")
_TOKENS = (
    # Authorization: Bearer x / PRIVATE-TOKEN: x / X-Api-Key: x (HTTP headers in curl lines, logs)
    re.compile(r"(?i)\b(authorization:\s*(?:bearer|basic|token)\s+)[^\s'\"]+"),
    # well-known token shapes wherever they stand
    # GitHub's token prefixes (ghp_ personal, gho_ OAuth, ghu_/ghs_ app, ghr_ refresh, github_pat_
    # fine-grained) and GitLab's (glpat- personal, gldt- deploy).
    re.compile(r"\b(ghp|gho|ghu|ghs|ghr|github_pat|glpat|gldt)[-_][A-Za-z0-9_-]{10,}"),
)


def redact(text: str) -> str:
    """`https://user:pass@host/x` -> `https://***@host/x`; secrets named token, password,
    secret, key (as NAME=value, NAME: value or a header) and known token shapes -> `***`."""
    # each pattern only where the character it cannot match without is there: most
    # strings in a report hold none of them, and every string is redacted
    if "@" in text:
        text = _URL_USERINFO.sub(lambda m: f"{m['scheme']}***@", text)
    if ":" in text or "=" in text:
        text = _TOKENS[0].sub(lambda m: f"{m.group(1)}***", text)
        text = _mask_named(text)
    if "--" in text:
        text = _OPTION_SECRET.sub(lambda m: f"{m['option']}{m['space']}{MASK}", text)
    if "gh" in text or "gl" in text or "github_pat" in text:
        text = _TOKENS[1].sub("***", text)
    return text


def _mask_named(text: str) -> str:
    """NAME: value / NAME=value (a query string, a shell line, an env dump, a header) with
    the value masked where NAME says it is a secret."""
    parts: List[str] = []
    pos = 0
    for head in _NAMED.finditer(text):
        # A name inside a value already masked is skipped.
        if head.start() < pos or not _named_secret_in_text(head["name"], head["sep"]):
            continue
        quoted = _QUOTED.match(text, head.end())
        value = quoted or _VALUE[head["sep"][0]].match(text, head.end())
        if value is not None:
            quote = value.group(0)[0] if quoted else ""
            closed = quote if len(value.group(0)) > 1 and value.group(0)[-1] == quote else ""
            parts += [text[pos : head.end()], f"{quote}{MASK}{closed}"]
            pos = value.end()
    return "".join(parts) + text[pos:] if parts else text


def _words(name: str) -> List[str]:
    return [w.lower() for w in _WORD.findall(name)]


def _secret_word(words: List[str]) -> bool:
    # PWD alone is the shell's folder; DB_PWD and MYSQL_PWD are passwords
    found = set(words)
    return bool(
        found & _SECRET_WORDS
        or ("pwd" in found and len(words) > 1)
        or (found & _DATABASES and found & _ADDRESSES)
        or {"connection", "string"} <= found
    )


@functools.lru_cache(maxsize=4096)
def secret_name(name: str) -> bool:
    """Whether a variable or key called `name` holds a secret (DB_PASSWORD, MY_API_TOKEN,
    AWS_SECRET_ACCESS_KEY, API_KEY_ID, NPM_AUTH): its value is never shown, whatever it
    looks like.  Kept per name: a run asks it of the same environment's names over and
    over (1259 times in a no-op setup)."""
    if _GIT_CONFIG_ENV.fullmatch(name):
        return False
    return bool(_HOLDS_SECRET.search(name)) or _secret_word(_words(name))


def _named_secret_in_text(name: str, sep: str) -> bool:
    """secret_name for a NAME in free text, where prose has `keys: a, b` and
    `tokenizer: fast`: a lone lowercase word before a colon is a secret only as a name
    ending in token, password, secret... (`token: x`, `password: x`)."""
    if _ENDS_SECRET.fullmatch(name):
        return True
    if sep != "=" and name.isalpha() and name.islower():
        return False
    return _secret_word(_words(name))


def _masked(name: Any, value: Any) -> bool:
    return (
        isinstance(name, str)
        and secret_name(name)
        # TOML's `password = 1234` is an int; `type(...) is int` leaves out True/False, which no
        # secret is.
        and ((isinstance(value, str) and value != "") or type(value) is int)
    )


def redact_env(env: Mapping[str, str]) -> Dict[str, str]:
    """An environment as cannbuild shows it (step log, plan, report): a secret's value by
    its name is `***`, credentials in other values are redacted.  The process that runs
    the step gets the real values."""
    return {k: MASK if _masked(k, v) else redact(v) for k, v in env.items()}


def fingerprint(name: str, text: str) -> str:
    """`text` as a stamp keeps it: itself when it holds no secret; else redacted, with a
    hash of the real text, so a changed secret still changes the step's input hash
    (and the step rebuilds) while the secret itself is stored nowhere."""
    shown = MASK if _masked(name, text) else redact(text)
    if shown == text:
        return text
    # Salted with the name, and not a bare sha256 of the secret, which a lookup table could reverse
    # for a common password.
    digest = hashlib.sha256(f"cannbuild-secret\0{name}\0{text}".encode()).hexdigest()
    return f"{shown} (sha256:{digest})"


def fingerprint_env(env: Mapping[str, str]) -> Dict[str, str]:
    """A step's own env entries as its stamp and input hash take them (see fingerprint)."""
    return {k: fingerprint(k, v) for k, v in env.items()}


def redact_data(value: Any) -> Any:
    """Redact every string inside nested dicts/lists (for JSON reports and locks), and the
    value of every key whose name says it is a secret ({"DB_PASSWORD": "x"} -> "***")."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: MASK if _masked(k, v) else redact_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_data(v) for v in value]
    return value
